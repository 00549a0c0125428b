//! The order in which writers that meet take their rows, on PostgreSQL (SQLite has one writer
//! at a time, so two of its transactions never wait for each other's rows). Two writers that
//! take the same two rows in opposite orders deadlock: PostgreSQL then aborts one of them, a
//! failed request or a job's lost result.

use crate::batch_reads::{DocumentAsRead, reread};
use crate::testing::{TestDatabase, one_segment_document as document, owner_with_project};
use crate::{Backend, Store};
use lector_core::ProjectType;
use sqlx::Connection;
use std::time::{Duration, Instant};

/// Waits until a session of the test's database waits for a row lock (30 s at the most).
async fn until_a_lock_is_awaited(store: &Store) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&store.pool)
        .await
        .expect("sessions");
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "nothing waited for a lock within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A copy's job failing for good (it marks the copy FAILED) while the copy is deleted (which
/// holds the project's row, then its jobs'): the failure takes the project's row before its
/// job's, as the deletion does, so it waits instead of deadlocking. Before, it held its job's
/// row and then waited for the project's, and the deletion's update of its jobs was aborted.
#[tokio::test]
async fn a_copys_failure_waits_for_its_deletion() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, workspace, original) = owner_with_project(&store, "Original", ProjectType::Class).await;
    let (copy, job_id) = store
        .start_clone(&scope, original.id, &workspace, Some("Copy".into()))
        .await
        .expect("a copy");
    let lease = store
        .claim_job("worker", 60)
        .await
        .expect("a claim")
        .expect("the clone job");
    assert_eq!(lease.job.id, job_id);

    // The deletion's first two steps, on a connection of its own: the project's row, then
    // (once the failure waits) its jobs' rows.
    let mut deletion = sqlx::PgConnection::connect(&database.url).await.expect("connect");
    let mut tx = deletion.begin().await.expect("begin");
    sqlx::query("SELECT id FROM projects WHERE id = $1 FOR UPDATE")
        .bind(copy.id)
        .execute(&mut *tx)
        .await
        .expect("the project's row");
    let failing = {
        let store = store.clone();
        tokio::spawn(async move { store.fail_job(&lease, "the source is gone", false).await })
    };
    until_a_lock_is_awaited(&store).await;
    sqlx::query("UPDATE jobs SET updated = updated WHERE project_id = $1")
        .bind(copy.id)
        .execute(&mut *tx)
        .await
        .expect("the deletion takes the jobs' rows");
    tx.commit().await.expect("commit");

    let failed = failing.await.expect("no panic").expect("the failure is written");
    assert!(failed, "the lease was still current");
    let status: String = sqlx::query_scalar("SELECT status FROM projects WHERE id = $1")
        .bind(copy.id)
        .fetch_one(&store.pool)
        .await
        .expect("status");
    assert_eq!(status, "FAILED");
    store.close().await;
}

/// A job writing what it found for a document holds it (`batch_reads::reread`): an edit of
/// the document, which would replace the segments the results are written for, waits for the
/// job's commit instead of slipping in between the check and the write.
#[tokio::test]
async fn an_edit_waits_for_a_batch_holding_its_document() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Held", ProjectType::Class).await;
    let (read, segments) = store
        .create_document(&scope, project.id, document("The text a model read."))
        .await
        .expect("a document");
    let old: Vec<i64> = segments.iter().map(|s| s.id).collect();
    let as_read = DocumentAsRead {
        id: read.id,
        segment_ids: old.clone(),
    };
    let mut tx = store.begin_write().await.expect("begin");
    let held = reread(&mut tx, &[as_read]).await.expect("reread");
    assert_eq!(held.unchanged, [read.id]);
    let edit = {
        let store = store.clone();
        let scope = scope.clone();
        tokio::spawn(async move {
            store
                .update_document(&scope, project.id, read.id, document("A text written meanwhile."))
                .await
        })
    };
    until_a_lock_is_awaited(&store).await;
    assert!(!edit.is_finished(), "the edit waits for the batch");
    tx.commit().await.expect("commit");
    let (edited, segments) = edit.await.expect("no panic").expect("the edit");
    assert_eq!(edited.text, "A text written meanwhile.");
    assert!(segments.iter().all(|s| !old.contains(&s.id)), "new segments");
    store.close().await;
}

/// A document edited while its project is deleted: the edit holds the project's row first (as
/// every write to a project's rows does, `hold_project`), so it waits for the deletion, then
/// finds the project gone (404). Before, it held the document and then waited for the project
/// (the documents' foreign-key trigger), while the deletion waited for the document.
#[tokio::test]
async fn an_edit_waits_for_its_projects_deletion() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Going", ProjectType::Class).await;
    let (read, _) = store
        .create_document(&scope, project.id, document("A text about to go."))
        .await
        .expect("a document");
    let mut deletion = sqlx::PgConnection::connect(&database.url).await.expect("connect");
    let mut tx = deletion.begin().await.expect("begin");
    sqlx::query("SELECT id FROM projects WHERE id = $1 FOR UPDATE")
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .expect("the project's row");
    let edit = {
        let store = store.clone();
        let scope = scope.clone();
        tokio::spawn(async move {
            store
                .update_document(&scope, project.id, read.id, document("An edit too late."))
                .await
        })
    };
    until_a_lock_is_awaited(&store).await;
    sqlx::query("DELETE FROM projects WHERE id = $1")
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .expect("the deletion takes the project's documents");
    tx.commit().await.expect("commit");
    let refused = edit.await.expect("no panic").expect_err("the project is gone");
    assert_eq!(refused.code, lector_core::ErrorCode::NotFound, "{refused:?}");
    store.close().await;
}

/// Two writers that do take rows in opposite orders: PostgreSQL ends one of them, which
/// answers 503 with `Retry-After` (nothing was written; the same request again succeeds), not
/// a 500 that reads as a fault of the server.
#[tokio::test]
async fn a_deadlock_victim_is_told_to_send_again() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (_, workspace, project) = owner_with_project(&store, "Crossed", ProjectType::Class).await;
    let (workspace, project) = (("workspaces", workspace.id), ("projects", project.id));
    let mut first = store.begin_write().await.expect("begin");
    let mut second = store.begin_write().await.expect("begin");
    crate::lock_row(&mut first, workspace).await.expect("the workspace");
    crate::lock_row(&mut second, project).await.expect("the project");
    let crossing = tokio::spawn(async move {
        let locked = crate::lock_row(&mut first, project).await;
        (locked, first)
    });
    until_a_lock_is_awaited(&store).await;
    let other = crate::lock_row(&mut second, workspace).await;
    let (locked, _first) = crossing.await.expect("no panic");
    let ended = match (locked, other) {
        (Err(e), Ok(())) | (Ok(()), Err(e)) => e,
        both => panic!("one of the two is ended: {both:?}"),
    };
    assert_eq!(ended.code, lector_core::ErrorCode::Unavailable, "{ended:?}");
    assert_eq!(ended.retry_after, Some(1));
    drop(second);
}

/// A project's change waits for another change of the project, then writes only what it
/// changes and judges its type as it is then: a rename while the project turns from ABSA into
/// a CLASS project (its fixed labels going) keeps the new type, not the ABSA it read before.
#[tokio::test]
async fn a_projects_change_keeps_a_change_made_meanwhile() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Aspects", ProjectType::Absa).await;

    // The other change, on a connection of its own: the project's row, then its new type.
    let mut other = sqlx::PgConnection::connect(&database.url).await.expect("connect");
    let mut tx = other.begin().await.expect("begin");
    sqlx::query("SELECT id FROM projects WHERE id = $1 FOR NO KEY UPDATE")
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .expect("the project's row");
    let rename = {
        let (store, scope) = (store.clone(), scope.clone());
        tokio::spawn(async move {
            let changes = crate::ProjectChanges {
                name: Some("Renamed".into()),
                ..Default::default()
            };
            store.update_project(&scope, project.id, changes).await
        })
    };
    until_a_lock_is_awaited(&store).await;
    sqlx::query("UPDATE projects SET type = 'CLASS' WHERE id = $1")
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .expect("the new type");
    sqlx::query("DELETE FROM labels WHERE project_id = $1")
        .bind(project.id)
        .execute(&mut *tx)
        .await
        .expect("the fixed labels gone");
    tx.commit().await.expect("commit");

    let renamed = rename.await.expect("the rename ran").expect("renamed");
    assert_eq!((renamed.name.as_str(), renamed.kind), ("Renamed", ProjectType::Class));
}

/// A model's change waits for another change of the model, then writes only what it changes:
/// a new display name while another request writes the short description keeps both. Before,
/// it wrote every column from what it read first, and put the old description back.
#[tokio::test]
async fn a_models_change_keeps_a_change_made_meanwhile() {
    let Some(database) = TestDatabase::create(Backend::Postgres).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, workspace, project) = owner_with_project(&store, "Tickets", ProjectType::Class).await;
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO models (uuid, workspace_id, project_id, name, display_name, type, status, language, \
         created, updated) VALUES ('m-1', $1, $2, 'tickets', 'Tickets', 'CLASS', 'READY', 'en', 0, 0) RETURNING id",
    )
    .bind(workspace.id)
    .bind(project.id)
    .fetch_one(&store.pool)
    .await
    .expect("a model");
    let model = store
        .model_access(&scope, id, lector_core::Action::Manage)
        .await
        .expect("the model");

    // The other change, on a connection of its own: the model's row, then its description.
    let mut other = sqlx::PgConnection::connect(&database.url).await.expect("connect");
    let mut tx = other.begin().await.expect("begin");
    sqlx::query("SELECT id FROM models WHERE id = $1 FOR NO KEY UPDATE")
        .bind(id)
        .execute(&mut *tx)
        .await
        .expect("the model's row");
    let rename = {
        let (store, scope) = (store.clone(), scope.clone());
        tokio::spawn(async move {
            let changes = crate::ModelChanges {
                display_name: Some("Tickets v2".into()),
                ..Default::default()
            };
            store.update_model(&scope, &model, changes).await
        })
    };
    until_a_lock_is_awaited(&store).await;
    sqlx::query("UPDATE models SET short_description = 'routes tickets' WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await
        .expect("the description");
    tx.commit().await.expect("commit");

    let renamed = rename.await.expect("the rename ran").expect("renamed");
    assert_eq!(
        (renamed.display_name.as_str(), renamed.short_description.as_str()),
        ("Tickets v2", "routes tickets")
    );
    store.close().await;
}
