//! A worker process killed (SIGKILL) in the middle of an import: another worker takes the job
//! over once the lease expires, and the import finishes once, with no document lost or doubled.
//! With a lease far longer than the test may wait, the worker started after the kill on the
//! same host hands the dead worker's lease back at once (`lector_jobs::owner`).

use crate::common::{SHORT_LEASE_SECS, kill_midway, taken_over, worker};
use lector_store::testing::{TestDatabase, owner_with_project};
use lector_store::{Backend, ImportOptions, ImportedDocument, Store};

const DOCUMENTS: usize = 20_000;

/// A lease the test never waits out (its deadline is 180 s).
const LONG_LEASE_SECS: u32 = 3_600;

async fn killed_worker_loses_nothing(backend: Backend, lease_secs: u32) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.unwrap();
    let (scope, _, project) = owner_with_project(&store, "Bulk", lector_core::ProjectType::Class).await;
    let documents: Vec<_> = (0..DOCUMENTS)
        .map(|n| ImportedDocument {
            text: format!("Row {n}. It has two sentences."),
            meta: Default::default(),
        })
        .collect();
    let options = ImportOptions {
        language: "en".into(),
        split: true,
        file: None,
    };
    let group = store
        .start_import(&scope, project.id, "bulk", "upload", options, &documents)
        .await
        .unwrap();
    let job_id = group.task_id.unwrap();

    // Kill the first worker once it has committed part of the import (caught stopped, so it
    // cannot finish between the look and the kill).
    let dir = tempfile::tempdir().unwrap();
    kill_midway(worker(&database.url, dir.path(), lease_secs), &store, job_id).await;
    let halfway = store.group(&scope, project.id, group.id).await.unwrap().document_count;
    assert!(
        halfway > 0 && halfway < DOCUMENTS as i64,
        "{halfway} documents after the kill"
    );

    taken_over(&database.url, dir.path(), lease_secs, &store, job_id).await;
    let group = store.group(&scope, project.id, group.id).await.unwrap();
    assert_eq!(
        (group.document_count, group.status.as_str()),
        (DOCUMENTS as i64, "CREATED"),
        "nothing lost or doubled"
    );
    let filter = lector_store::DocumentFilter {
        group_id: Some(group.id),
        ..Default::default()
    };
    let (last, _) = store
        .documents(&scope, project.id, &filter, DOCUMENTS as i64 - 1, 1)
        .await
        .unwrap();
    assert_eq!(last[0].text, format!("Row {}. It has two sentences.", DOCUMENTS - 1));
    assert_eq!(store.segments_of(&last[..1]).await.unwrap().len(), 2);
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(
        notes.iter().filter(|n| n.title == "Import finished").count(),
        1,
        "one notification per job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_loses_nothing_on_sqlite() {
    killed_worker_loses_nothing(Backend::Sqlite, SHORT_LEASE_SECS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_worker_takes_back_the_dead_ones_lease_at_once() {
    killed_worker_loses_nothing(Backend::Sqlite, LONG_LEASE_SECS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_worker_loses_nothing_on_postgres() {
    killed_worker_loses_nothing(Backend::Postgres, SHORT_LEASE_SECS).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_worker_takes_back_the_dead_ones_lease_at_once_on_postgres() {
    killed_worker_loses_nothing(Backend::Postgres, LONG_LEASE_SECS).await;
}
