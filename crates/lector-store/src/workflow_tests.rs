//! The execution log's batches ([`Store::record_executions`]) on both backends: a batch that
//! holds a record of a workflow deleted since its call still writes every other record, and
//! drops that one, instead of failing whole on its foreign key.

use crate::testing::{TestDatabase, owner};
use crate::{Backend, ExecutionEnd, FinishedExecution, NewWorkflow, Store};
use lector_core::time::Timestamp;

fn finished(workflow_id: i64) -> FinishedExecution {
    FinishedExecution {
        workflow_id,
        mode: "production",
        method: "POST".into(),
        started: Timestamp::now(),
        finished: None,
        end: ExecutionEnd {
            status: "success",
            error: None,
            data: None,
        },
    }
}

async fn a_deleted_workflow_does_not_lose_the_batch(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (user, scope) = owner(&store).await;
    let workspace = user.personal_workspace_id.expect("a personal workspace");
    let workflow = |name: &str| NewWorkflow {
        name: name.into(),
        definition: "{}".into(),
        auth_digest: None,
        keep_data: false,
        routes: Vec::new(),
    };
    let kept = store
        .create_workflow(&scope, workspace, &workflow("kept"))
        .await
        .expect("a workflow");
    let gone = store
        .create_workflow(&scope, workspace, &workflow("gone"))
        .await
        .expect("a workflow");
    store.delete_workflow(&scope, gone.id).await.expect("deleted");

    let batch = [finished(kept.id), finished(gone.id), finished(kept.id)];
    store
        .record_executions(&batch, &[kept.id, gone.id])
        .await
        .expect("the batch is written");
    let (executions, _) = store
        .workflow_executions(&scope, kept.id, 0, 10)
        .await
        .expect("the executions");
    assert_eq!(executions.len(), 2, "{executions:?}");
    let stray: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM workflow_executions WHERE workflow_id = $1")
        .bind(gone.id)
        .fetch_one(&store.pool)
        .await
        .expect("a count");
    assert_eq!(stray, 0);
}

#[tokio::test]
async fn a_deleted_workflow_does_not_lose_the_batch_sqlite() {
    a_deleted_workflow_does_not_lose_the_batch(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_deleted_workflow_does_not_lose_the_batch_postgres() {
    a_deleted_workflow_does_not_lose_the_batch(Backend::Postgres).await;
}
