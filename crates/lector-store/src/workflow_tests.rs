//! The execution log's batches ([`Store::record_executions`]) on both backends: a batch that
//! holds a record of a workflow deleted since its call still writes every other record, and
//! drops that one, instead of failing whole on its foreign key. And the background runs left
//! running by a node that went away ([`Store::end_abandoned_executions`]), and the trimming of
//! every workflow to its newest executions.

use crate::testing::{TestDatabase, owner};
use crate::workflow_executions::EXECUTIONS_PRUNED_TOGETHER;
use crate::{
    ABANDONED_EXECUTION, Backend, ExecutionEnd, FinishedExecution, MAX_EXECUTIONS_PER_WORKFLOW, NewWorkflow, Store,
};
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

fn workflow(name: &str) -> NewWorkflow {
    NewWorkflow {
        name: name.into(),
        definition: "{}".into(),
        auth_digest: None,
        keep_data: false,
        routes: Vec::new(),
    }
}

/// A store, its owner's scope and personal workspace, and one workflow there.
struct Setup {
    _database: TestDatabase,
    store: Store,
    scope: lector_core::Scope,
    workspace: i64,
    flow: crate::Workflow,
}

/// A fresh database (none without PostgreSQL for that backend) with one workflow named `name`.
async fn with_workflow(backend: Backend, name: &str) -> Option<Setup> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 4).await.expect("store");
    let (user, scope) = owner(&store).await;
    let workspace = user.personal_workspace_id.expect("a personal workspace");
    let flow = store
        .create_workflow(&scope, workspace, &workflow(name))
        .await
        .expect("a workflow");
    Some(Setup {
        _database: database,
        store,
        scope,
        workspace,
        flow,
    })
}

async fn a_deleted_workflow_does_not_lose_the_batch(backend: Backend) {
    let Some(Setup {
        _database,
        store,
        scope,
        workspace,
        flow: kept,
    }) = with_workflow(backend, "kept").await
    else {
        return;
    };
    let gone = store
        .create_workflow(&scope, workspace, &workflow("gone"))
        .await
        .expect("a workflow");
    store.delete_workflow(&scope, gone.id).await.expect("deleted");

    let batch = [finished(kept.id), finished(gone.id), finished(kept.id)];
    store.record_executions(&batch).await.expect("the batch is written");
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

/// Runs whose node stopped renewing them turn to errors; a run a live node renews stays
/// running, whoever sweeps; a run from before renewals is given its start plus an hour; a run
/// that ends late records its end over the sweep's.
async fn abandoned_runs_end_as_errors(backend: Backend) {
    let Some(Setup {
        _database,
        store,
        scope: _,
        workspace: _,
        flow,
    }) = with_workflow(backend, "runs").await
    else {
        return;
    };
    let start = || store.start_execution(flow.id, "production", "POST");
    let (gone, live, old, fresh_old) = (
        start().await.unwrap(),
        start().await.unwrap(),
        start().await.unwrap(),
        start().await.unwrap(),
    );
    let hour = 3_600_000_000_i64;
    let set = |id: i64, started_ago: i64, alive_until_ago: Option<i64>| {
        let pool = store.pool.clone();
        async move {
            let now = lector_core::time::Timestamp::now().micros();
            sqlx::query("UPDATE workflow_executions SET started = $1, alive_until = $2 WHERE id = $3")
                .bind(now - started_ago)
                .bind(alive_until_ago.map(|ago| now - ago))
                .bind(id)
                .execute(&pool)
                .await
                .expect("the execution set");
        }
    };
    // Its node renewed it last two minutes ago, and is gone.
    set(gone, 2 * hour, Some(120_000_000)).await;
    // Written by a Lector that did not renew: alive for an hour after its start.
    set(old, 2 * hour, None).await;
    set(fresh_old, hour / 2, None).await;
    store.keep_executions_alive(&[live]).await.unwrap();

    assert_eq!(store.end_abandoned_executions(&[]).await.unwrap(), 2);
    let status = |id: i64| {
        let pool = store.pool.clone();
        async move {
            sqlx::query_as::<_, (String, Option<String>, Option<i64>)>(
                "SELECT status, error, finished FROM workflow_executions WHERE id = $1",
            )
            .bind(id)
            .fetch_one(&pool)
            .await
            .expect("the execution")
        }
    };
    for id in [gone, old] {
        let (state, error, finished) = status(id).await;
        assert_eq!(state, "error");
        assert_eq!(error.as_deref(), Some(ABANDONED_EXECUTION));
        assert!(finished.is_some());
    }
    assert_eq!(status(live).await.0, "running", "a live node's run is left alone");
    assert_eq!(status(fresh_old).await.0, "running");

    // A node that stops gives up its own runs at once.
    assert_eq!(store.end_abandoned_executions(&[live]).await.unwrap(), 1);
    assert_eq!(status(live).await.0, "error");

    // A paused node's run that ends after all records its end.
    let end = ExecutionEnd {
        status: "success",
        error: None,
        data: None,
    };
    store.finish_execution(gone, &end).await.unwrap();
    assert_eq!(status(gone).await, ("success".to_owned(), None, status(gone).await.2));
}

#[tokio::test]
async fn abandoned_runs_end_as_errors_sqlite() {
    abandoned_runs_end_as_errors(Backend::Sqlite).await;
}

#[tokio::test]
async fn abandoned_runs_end_as_errors_postgres() {
    abandoned_runs_end_as_errors(Backend::Postgres).await;
}

/// A workflow lists its newest 1,000 executions and no more, though trimming, done in batches,
/// may not yet have deleted the older ones.
async fn only_the_newest_thousand_executions_are_listed(backend: Backend) {
    let Some(Setup {
        _database,
        store,
        scope,
        workspace: _,
        flow: busy,
    }) = with_workflow(backend, "busy").await
    else {
        return;
    };
    // Fewer past the kept 1,000 than trimming waits for.
    let batch: Vec<FinishedExecution> = (0..1040).map(|_| finished(busy.id)).collect();
    store.record_executions(&batch).await.expect("written, not trimmed");
    let held = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM workflow_executions WHERE workflow_id = $1",
        busy.id,
    )
    .await;
    assert_eq!(held, 1040);
    let listed = |offset, limit| store.workflow_executions(&scope, busy.id, offset, limit);
    let (last, more) = listed(900, 1000).await.expect("a page");
    assert_eq!((last.len(), more), (100, false));
    let (page, more) = listed(950, 20).await.expect("a page");
    assert_eq!((page.len(), more), (20, true));
    let (past, more) = listed(1000, 10).await.expect("a page");
    assert_eq!((past.len(), more), (0, false));
    let (first, _) = listed(0, 1).await.expect("a page");
    let newest: i64 = sqlx::query_scalar("SELECT MAX(id) FROM workflow_executions WHERE workflow_id = $1")
        .bind(busy.id)
        .fetch_one(&store.pool)
        .await
        .expect("the newest");
    assert_eq!(first[0].id, newest, "newest first");
}

#[tokio::test]
async fn only_the_newest_thousand_executions_are_listed_sqlite() {
    only_the_newest_thousand_executions_are_listed(Backend::Sqlite).await;
}

#[tokio::test]
async fn only_the_newest_thousand_executions_are_listed_postgres() {
    only_the_newest_thousand_executions_are_listed(Backend::Postgres).await;
}

/// Activating (or arming the test address) with routes worked out from a definition that a
/// `PUT` has replaced meanwhile answers 409 and registers nothing: the old path would
/// otherwise listen with the new definition behind it.
async fn routes_from_a_replaced_definition_are_refused(backend: Backend) {
    let Some(Setup {
        _database,
        store,
        scope,
        workspace: _,
        flow: seen,
    }) = with_workflow(backend, "hook").await
    else {
        return;
    };
    let old_routes = vec![("POST".to_owned(), "old".to_owned())];
    let replaced = NewWorkflow {
        definition: r#"{"trigger": {"path": "new"}}"#.into(),
        ..workflow("hook")
    };
    store
        .update_workflow(&scope, seen.id, &replaced)
        .await
        .expect("updated");
    let until = Timestamp::now().plus_seconds(60);
    let armed = store.arm_workflow_test(&scope, &seen, &old_routes, until).await;
    assert_eq!(armed.expect_err("a stale test").status(), 409);
    let activated = store.activate_workflow(&scope, &seen, &old_routes).await;
    assert_eq!(activated.expect_err("a stale activation").status(), 409);
    let now = store
        .workflow(&scope, seen.id, lector_core::Action::Read)
        .await
        .unwrap();
    assert!(!now.active);
    // Read again, it activates.
    store
        .activate_workflow(&scope, &now, &old_routes)
        .await
        .expect("activated");
}

#[tokio::test]
async fn routes_from_a_replaced_definition_are_refused_sqlite() {
    routes_from_a_replaced_definition_are_refused(Backend::Sqlite).await;
}

#[tokio::test]
async fn routes_from_a_replaced_definition_are_refused_postgres() {
    routes_from_a_replaced_definition_are_refused(Backend::Postgres).await;
}

/// Every workflow is trimmed to its newest executions whichever ids its rows get: two
/// workflows recorded in turn (one calling the other) both are, and so are the records a call
/// writes itself when the execution log is full. Before, a workflow was trimmed when its new
/// row's id, shared by every workflow, was a multiple of 50, which one of two workflows taking
/// turns never had; and a call's own record trimmed nothing.
async fn every_workflow_keeps_its_newest_executions(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (user, scope) = owner(&store).await;
    let workspace = user.personal_workspace_id.expect("a personal workspace");
    let mut flows = Vec::new();
    for name in ["caller", "called", "logged"] {
        let flow = store
            .create_workflow(&scope, workspace, &workflow(name))
            .await
            .expect("a workflow");
        flows.push(flow.id);
    }
    let held = |id: i64| {
        crate::testing::count(
            &store,
            "SELECT COUNT(*) FROM workflow_executions WHERE workflow_id = $1",
            id,
        )
    };
    let most = MAX_EXECUTIONS_PER_WORKFLOW + EXECUTIONS_PRUNED_TOGETHER;
    // Two workflows taking turns: their rows' ids alternate, so only one of them ever got a
    // multiple of 50.
    for _ in 0..most + 20 {
        for &flow in &flows[..2] {
            store.start_execution(flow, "production", "POST").await.unwrap();
        }
    }
    for _ in 0..most + 20 {
        store.record_executions(&[finished(flows[2])]).await.unwrap();
    }
    for flow in flows {
        let held = held(flow).await;
        assert!(
            (MAX_EXECUTIONS_PER_WORKFLOW..most).contains(&held),
            "workflow {flow} holds {held} executions"
        );
    }
}

#[tokio::test]
async fn every_workflow_keeps_its_newest_executions_sqlite() {
    every_workflow_keeps_its_newest_executions(Backend::Sqlite).await;
}

#[tokio::test]
async fn every_workflow_keeps_its_newest_executions_postgres() {
    every_workflow_keeps_its_newest_executions(Backend::Postgres).await;
}

/// A page of executions carries their kept data up to its bound, the first's always: the
/// later ones say theirs was left out, and a page starting at one of them carries it.
async fn a_page_of_executions_carries_bounded_data(backend: Backend) {
    let Some(Setup {
        _database,
        store,
        scope,
        workspace: _,
        flow: kept,
    }) = with_workflow(backend, "kept").await
    else {
        return;
    };
    // Three of these (with their JSON's four bytes) fit the bound; with 204 more, not. Counted
    // in bytes: "é" is two (as characters, all five would fit).
    let third = (crate::workflow_executions::MAX_EXECUTION_PAGE_DATA_BYTES / 6) as usize - 5;
    let with_data = |n: usize| {
        let mut execution = finished(kept.id);
        execution.end.data = Some(format!("[\"{}\"]", "é".repeat(n)));
        execution
    };
    // Oldest first: a small one, then three of a third of the bound, then a bare one.
    let batch = [
        with_data(100),
        with_data(third),
        with_data(third),
        with_data(third),
        finished(kept.id),
    ];
    store.record_executions(&batch).await.expect("recorded");
    let (page, more) = store.workflow_executions(&scope, kept.id, 0, 10).await.expect("a page");
    assert!(!more);
    let carried: Vec<(bool, bool)> = page.iter().map(|e| (e.data.is_some(), e.data_left_out)).collect();
    // Newest first: bare, three thirds (the third of them past the bound), the small one.
    assert_eq!(
        carried,
        vec![
            (false, false),
            (true, false),
            (true, false),
            (true, false),
            (false, true)
        ],
        "{carried:?}"
    );
    let (page, _) = store.workflow_executions(&scope, kept.id, 1, 10).await.expect("a page");
    let carried: Vec<(bool, bool)> = page.iter().map(|e| (e.data.is_some(), e.data_left_out)).collect();
    assert_eq!(
        carried,
        vec![(true, false), (true, false), (true, false), (false, true)]
    );
    let huge = with_data(2 * crate::workflow_executions::MAX_EXECUTION_PAGE_DATA_BYTES as usize);
    store.record_executions(&[huge]).await.expect("recorded");
    let (page, _) = store.workflow_executions(&scope, kept.id, 0, 3).await.expect("a page");
    assert!(page[0].data.is_some(), "the first execution's data always comes");
    assert!(page[1].data.is_none() && !page[1].data_left_out, "the bare one");
    assert!(page[2].data_left_out);
}

#[tokio::test]
async fn a_page_of_executions_carries_bounded_data_sqlite() {
    a_page_of_executions_carries_bounded_data(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_page_of_executions_carries_bounded_data_postgres() {
    a_page_of_executions_carries_bounded_data(Backend::Postgres).await;
}
