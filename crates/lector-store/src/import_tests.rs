//! The import's batch writes ([`Store::import_placed`]) on both backends: what goes in comes
//! back unchanged (texts with tabs, line breaks, backslashes and characters beyond ASCII;
//! layouts and their absence), ids follow the group's places, a re-run stores only the places
//! still empty, a worker whose lease was taken over stores nothing, a late terminal failure
//! leaves a filled group as it is and tells nobody, a failed one leaves no documents (on PostgreSQL these
//! transactions commit without waiting for the disk, `Store::begin_redoable_write`, which
//! must change none of that).

use crate::testing::{TestDatabase, owner_with_project};
use crate::{Backend, DocumentFilter, ImportOptions, Lease, NewDocument, NewSegment, Store};
use lector_core::{ErrorCode, ProjectType, Scope};
use serde_json::json;

/// A document whose text has what a text format would have to escape, in two segments.
fn document(n: i64) -> NewDocument {
    let first = format!("Row {n}\twith a tab, a \\ backslash,\r\na line break and \"quotes\".");
    let second = "Café 🍲 \\N, then the end.".to_owned();
    let start = first.chars().count() as i64 + 1;
    NewDocument {
        text: format!("{first} {second}"),
        meta: json!({"n": n.to_string(), "note": "a\ttab \\ and\nmore"}),
        language: "en".into(),
        segments: vec![
            NewSegment {
                text: first,
                start: 0,
                end: start - 1,
                layout: (n % 2 == 0).then(|| format!("{{\"page\":{n},\"words\":[\"a\\tb\"]}}")),
            },
            NewSegment {
                end: start + second.chars().count() as i64,
                text: second,
                start,
                layout: None,
            },
        ],
    }
}

/// A store with a project, a group an import fills and the import's job.
async fn import_under_way(backend: Backend) -> Option<(TestDatabase, Store, Scope, i64, i64)> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Rows", ProjectType::Class).await;
    let options = ImportOptions {
        language: "en".into(),
        split: true,
        file: None,
    };
    let group = store
        .start_import(&scope, project.id, "rows", "api", options, &[])
        .await
        .expect("import");
    Some((database, store, scope, project.id, group.id))
}

async fn place(store: &Store, lease: &Lease, project: i64, group: i64, documents: &[(i64, NewDocument)]) -> usize {
    let placed: Vec<(i64, &NewDocument)> = documents.iter().map(|(p, d)| (*p, d)).collect();
    store
        .import_placed(lease, project, group, &placed)
        .await
        .expect("a batch")
}

async fn batches_store_each_place_once(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    // Places with gaps (rows left out), as an import from a file makes them.
    let all: Vec<(i64, NewDocument)> = (0..12).filter(|n| n % 5 != 4).map(|n| (n, document(n))).collect();
    assert_eq!(place(&store, &lease, project, group, &all[..5]).await, 5);
    // A re-run after a crash sends the same places again, and more.
    assert_eq!(place(&store, &lease, project, group, &all[3..]).await, all.len() - 5);
    assert_eq!(place(&store, &lease, project, group, &all).await, 0);
    assert_eq!(place(&store, &lease, project, group, &[]).await, 0);

    let filter = DocumentFilter {
        group_id: Some(group),
        ..Default::default()
    };
    let (stored, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    assert_eq!(stored.len(), all.len());
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id));
    let segments = store.segments_of(&stored).await.unwrap();
    assert_eq!(segments.len(), 2 * all.len());
    for ((n, sent), got) in all.iter().zip(&stored) {
        assert_eq!(
            (&got.text, &got.meta, &got.language),
            (&sent.text, &sent.meta, &sent.language),
            "row {n}"
        );
        assert_eq!(got.group_id, Some(group));
        let mine: Vec<_> = segments.iter().filter(|s| s.document_id == got.id).collect();
        assert_eq!(mine.len(), sent.segments.len());
        for (position, (segment, expected)) in mine.iter().zip(&sent.segments).enumerate() {
            assert_eq!(segment.position, position as i64);
            assert_eq!(
                (&segment.text, segment.start, segment.end, &segment.layout),
                (&expected.text, expected.start, expected.end, &expected.layout),
                "row {n}, segment {position}"
            );
        }
    }
    // Later writes go on from the ids the import took.
    let (later, _) = store.create_document(&scope, project, document(99)).await.unwrap();
    assert!(later.id > stored.last().unwrap().id);
}

/// A terminal failure that comes after the import filled its group (the worker died between
/// the group's last write and the job's end) leaves the group as the import made it.
async fn a_filled_group_survives_a_late_failure(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    assert_eq!(place(&store, &lease, project, group, &[(0, document(0))]).await, 1);
    store.set_import_status(&lease, group, "CREATED").await.unwrap();
    assert!(store.fail_job(&lease, "the worker was lost", false).await.unwrap());
    let filled = store.group(&scope, project, group).await.unwrap();
    assert_eq!((filled.status.as_str(), filled.document_count), ("CREATED", 1));
    let notes = store.notifications(&scope, scope.user_id, 0, 10).await.unwrap();
    assert!(
        notes.is_empty(),
        "nobody is told of a failure that failed nothing: {notes:?}"
    );
}

/// An import that fails for good leaves nothing of itself: the documents its first batches
/// stored go (uploading the file again would store them twice), and a session that took one of
/// them meanwhile is counted without it.
async fn a_failed_import_leaves_no_documents(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    let (kept, _) = store.create_document(&scope, project, document(9)).await.unwrap();
    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    assert_eq!(
        place(&store, &lease, project, group, &[(0, document(0)), (1, document(1))]).await,
        2
    );
    let filter = DocumentFilter::default();
    let (stored, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    let ids: Vec<i64> = stored.iter().map(|d| d.id).collect();
    let new = crate::NewSession {
        name: "Early".into(),
        document_ids: Some(ids),
        ..Default::default()
    };
    let session = store.create_session(&scope, project, new).await.unwrap();
    assert_eq!(session.document_count, 3);
    // Nobody adds documents of their own to the group meanwhile: they would go with it.
    let refused = store
        .update_group(&scope, project, group, None, &[kept.id], vec![])
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 409, "{}", refused.detail);

    assert!(store.fail_job(&lease, "row 3 cannot be read", false).await.unwrap());
    let failed = store.group(&scope, project, group).await.unwrap();
    assert_eq!((failed.status.as_str(), failed.document_count), ("FAILED", 0));
    let (left, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    assert_eq!(left.iter().map(|d| d.id).collect::<Vec<_>>(), [kept.id]);
    let session = store.session(&scope, project, session.id).await.unwrap();
    assert_eq!((session.document_count, session.segment_count), (1, 2));
    assert_eq!(store.miscounted_sessions().await.unwrap(), Vec::<String>::new());
}

async fn a_taken_over_lease_stores_nothing(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    // Worker A's lease runs out; the reaper hands the job to worker B.
    let a = store.claim_job("a", -1).await.unwrap().expect("a claims");
    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    let b = store.claim_job("b", 30).await.unwrap().expect("b claims");
    let rows: Vec<(i64, NewDocument)> = (0..3).map(|n| (n, document(n))).collect();
    let placed: Vec<(i64, &NewDocument)> = rows.iter().map(|(p, d)| (*p, d)).collect();
    let refused = store.import_placed(&a, project, group, &placed).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Conflict);
    assert_eq!(store.group(&scope, project, group).await.unwrap().document_count, 0);
    assert_eq!(place(&store, &b, project, group, &rows).await, 3);
    assert_eq!(store.group(&scope, project, group).await.unwrap().document_count, 3);
}

/// Batches written as [`Store::import_streams`] allows: on PostgreSQL two at once, each with
/// ids reserved before it was written, so the documents are numbered in file order whichever
/// batch commits first; on SQLite one after the other, numbered by the database.
async fn batches_written_at_once_keep_file_order(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    let rows: Vec<(i64, NewDocument)> = (0..40).map(|n| (n, document(n))).collect();
    let batches: Vec<Vec<(i64, &NewDocument)>> = rows
        .chunks(10)
        .map(|c| c.iter().map(|(p, d)| (*p, d)).collect())
        .collect();
    let mut ids = Vec::new();
    for batch in &batches {
        ids.push(store.reserve_document_ids(batch.len()).await.unwrap());
    }
    let write = |i: usize| store.import_reserved(&lease, project, group, &batches[i], &ids[i]);
    if store.import_streams() > 1 {
        assert!(ids.iter().all(|ids| ids.len() == 10), "{ids:?}");
        // The second batch commits before the first, then the last two are written at once.
        assert_eq!(write(1).await.unwrap(), 10);
        assert_eq!(write(0).await.unwrap(), 10);
        let (third, fourth) = tokio::join!(write(2), write(3));
        assert_eq!((third.unwrap(), fourth.unwrap()), (10, 10));
    } else {
        assert!(ids.iter().all(Vec::is_empty));
        for i in 0..batches.len() {
            assert_eq!(write(i).await.unwrap(), 10);
        }
    }
    let filter = DocumentFilter {
        group_id: Some(group),
        ..Default::default()
    };
    let (stored, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    let texts: Vec<&str> = stored.iter().map(|d| d.text.as_str()).collect();
    let sent: Vec<&str> = rows.iter().map(|(_, d)| d.text.as_str()).collect();
    assert_eq!(texts, sent, "documents in file order");
    assert!(stored.windows(2).all(|w| w[0].id < w[1].id), "ids in file order");
    // A re-run leaves every place as it is, its reserved ids unused.
    let again = store.reserve_document_ids(10).await.unwrap();
    assert_eq!(
        store
            .import_reserved(&lease, project, group, &batches[0], &again)
            .await
            .unwrap(),
        0
    );
}

/// A document of a group an import is filling is neither deleted nor moved (409): its place
/// would be empty again, and the import, run again after a crash, would store it once more.
async fn documents_being_imported_keep_their_places(backend: Backend) {
    let Some((_database, store, scope, project, group)) = import_under_way(backend).await else {
        return;
    };
    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    let rows: Vec<(i64, NewDocument)> = (0..3).map(|n| (n, document(n))).collect();
    assert_eq!(place(&store, &lease, project, group, &rows).await, 3);
    let filter = DocumentFilter {
        group_id: Some(group),
        ..Default::default()
    };
    let (stored, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    let deleted = store.delete_document(&scope, project, stored[1].id).await.unwrap_err();
    assert_eq!(deleted.code, ErrorCode::Conflict, "{deleted:?}");
    let moved = store
        .update_group(&scope, project, group, None, &[stored[0].id], Vec::new())
        .await
        .unwrap_err();
    assert_eq!(moved.code, ErrorCode::Conflict, "{moved:?}");
    // Named to a group of another project, the same document is not found there: the check
    // does not tell about another project's imports.
    let (other, _) = store
        .project_access(&scope, project, lector_core::Action::Read)
        .await
        .unwrap();
    let (workspace, _) = store
        .workspace_access(
            &scope,
            &crate::WorkspaceRef::Id(other.workspace_id),
            lector_core::Action::Manage,
        )
        .await
        .unwrap();
    let fields = crate::ProjectFields {
        name: "Elsewhere".into(),
        kind: ProjectType::Class,
        external_id: None,
        language: "en".into(),
    };
    let elsewhere = store.create_project(&scope, &workspace, fields).await.unwrap();
    let there = store
        .create_group(&scope, elsewhere.id, "there", Vec::new())
        .await
        .unwrap();
    let foreign = store
        .update_group(&scope, elsewhere.id, there.id, None, &[stored[0].id], Vec::new())
        .await
        .unwrap_err();
    assert_eq!(foreign.code, ErrorCode::NotFound, "{foreign:?}");
    // The import run again stores nothing twice.
    assert_eq!(place(&store, &lease, project, group, &rows).await, 0);
    let (again, _) = store.documents(&scope, project, &filter, 0, 100).await.unwrap();
    assert_eq!(again.len(), 3);
}

#[tokio::test]
async fn documents_being_imported_keep_their_places_sqlite() {
    documents_being_imported_keep_their_places(Backend::Sqlite).await;
}

#[tokio::test]
async fn documents_being_imported_keep_their_places_postgres() {
    documents_being_imported_keep_their_places(Backend::Postgres).await;
}

#[tokio::test]
async fn batches_written_at_once_keep_file_order_sqlite() {
    batches_written_at_once_keep_file_order(Backend::Sqlite).await;
}

#[tokio::test]
async fn batches_written_at_once_keep_file_order_postgres() {
    batches_written_at_once_keep_file_order(Backend::Postgres).await;
}

#[tokio::test]
async fn batches_store_each_place_once_sqlite() {
    batches_store_each_place_once(Backend::Sqlite).await;
}

#[tokio::test]
async fn batches_store_each_place_once_postgres() {
    batches_store_each_place_once(Backend::Postgres).await;
}

#[tokio::test]
async fn a_filled_group_survives_a_late_failure_sqlite() {
    a_filled_group_survives_a_late_failure(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_filled_group_survives_a_late_failure_postgres() {
    a_filled_group_survives_a_late_failure(Backend::Postgres).await;
}

#[tokio::test]
async fn a_failed_import_leaves_no_documents_sqlite() {
    a_failed_import_leaves_no_documents(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_failed_import_leaves_no_documents_postgres() {
    a_failed_import_leaves_no_documents(Backend::Postgres).await;
}

#[tokio::test]
async fn a_taken_over_lease_stores_nothing_sqlite() {
    a_taken_over_lease_stores_nothing(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_taken_over_lease_stores_nothing_postgres() {
    a_taken_over_lease_stores_nothing(Backend::Postgres).await;
}
