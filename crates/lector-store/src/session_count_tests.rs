//! The counts kept on a session's row (documents, segments, marks) follow every write that
//! changes them, and so does the status they imply: marks, added and labeled documents, a
//! document's new text, a deleted document, a document in two sessions, and twenty marks at
//! once, on both backends; an import's status is kept; concurrent writers do not deadlock, and
//! two that add a session's first labeled documents at once make it one group.

use crate::testing::{TestDatabase, labeled, owner_with_project};
use crate::{
    Backend, ClassFields, MarkTarget, NewDocument, NewSegment, NewSession, Project, Session, SessionChanges, Store,
};
use futures_util::future::join_all;
use lector_core::labeling::SessionStatus;
use lector_core::{ProjectType, Scope};

/// A document of `sentences`, one segment each.
fn document(sentences: &[&str]) -> NewDocument {
    let mut text = String::new();
    let mut segments = Vec::new();
    for sentence in sentences {
        if !text.is_empty() {
            text.push(' ');
        }
        let start = text.chars().count() as i64;
        text.push_str(sentence);
        segments.push(NewSegment {
            text: (*sentence).into(),
            start,
            end: text.chars().count() as i64,
            layout: None,
        });
    }
    NewDocument {
        text,
        segments,
        meta: serde_json::json!({}),
        language: "en".into(),
    }
}

/// A CLASS project of one class, `spam`, and its owner.
async fn spam_project(store: &Store, name: &str) -> (Scope, Project) {
    let (scope, _, project) = owner_with_project(store, name, ProjectType::Class).await;
    let class = ClassFields {
        name: "spam".into(),
        ..Default::default()
    };
    store
        .add_classes(&scope, project.id, vec![class])
        .await
        .expect("a class");
    (scope, project)
}

/// The session as the store reads it, checked against its rows; answers its three counts.
async fn counts(store: &Store, scope: &Scope, session: &Session) -> (i64, i64, i64, SessionStatus) {
    assert_eq!(store.miscounted_sessions().await.expect("counts"), Vec::<String>::new());
    let now = store
        .session(scope, session.project_id, session.id)
        .await
        .expect("the session");
    (now.document_count, now.segment_count, now.annotated_count, now.status)
}

async fn counts_follow_every_write(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, project) = spam_project(&store, "Counts").await;
    let mut documents = Vec::new();
    for sentences in [&["One.", "Two."][..], &["Three."], &["Four.", "Five.", "Six."]] {
        let (document, _) = store
            .create_document(&scope, project.id, document(sentences))
            .await
            .expect("a document");
        documents.push(document.id);
    }
    let new = NewSession {
        name: "All".into(),
        ..Default::default()
    };
    let all = store.create_session(&scope, project.id, new).await.expect("a session");
    let new = NewSession {
        name: "First".into(),
        document_ids: Some(vec![documents[0]]),
        ..Default::default()
    };
    let first = store.create_session(&scope, project.id, new).await.expect("a session");
    assert_eq!(counts(&store, &scope, &all).await, (3, 6, 0, SessionStatus::Created));
    assert_eq!(counts(&store, &scope, &first).await, (1, 2, 0, SessionStatus::Created));

    let mark =
        |session: i64, document: i64| store.mark_annotated(&scope, project.id, session, document, MarkTarget::Document);
    mark(all.id, documents[0]).await.expect("marked");
    mark(all.id, documents[0]).await.expect("marked again");
    assert_eq!(counts(&store, &scope, &all).await, (3, 6, 2, SessionStatus::Annotating));
    mark(all.id, documents[1]).await.expect("marked");
    mark(all.id, documents[2]).await.expect("marked");
    assert_eq!(counts(&store, &scope, &all).await, (3, 6, 6, SessionStatus::Finished));
    mark(first.id, documents[0]).await.expect("marked");
    assert_eq!(counts(&store, &scope, &first).await, (1, 2, 2, SessionStatus::Finished));

    // New text for a marked document in both sessions: its three segments are unmarked.
    store
        .update_document(&scope, project.id, documents[0], document(&["Uno.", "Dos.", "Tres."]))
        .await
        .expect("new text");
    assert_eq!(counts(&store, &scope, &all).await, (3, 7, 4, SessionStatus::Annotating));
    assert_eq!(counts(&store, &scope, &first).await, (1, 3, 0, SessionStatus::Created));

    // Deleting that document finishes the one session and empties the other.
    store
        .delete_document(&scope, project.id, documents[0])
        .await
        .expect("deleted");
    assert_eq!(counts(&store, &scope, &all).await, (2, 4, 4, SessionStatus::Finished));
    assert_eq!(counts(&store, &scope, &first).await, (0, 0, 0, SessionStatus::Created));

    // A labeled document (marked) and an existing one (not).
    let (extra, _) = store
        .create_document(&scope, project.id, document(&["Seven.", "Eight."]))
        .await
        .expect("a document");
    let changes = SessionChanges {
        document_ids: vec![extra.id],
        labeled: vec![labeled("Buy now.", "spam")],
        ..Default::default()
    };
    store
        .update_session(&scope, project.id, first.id, changes)
        .await
        .expect("documents added");
    assert_eq!(
        counts(&store, &scope, &first).await,
        (2, 3, 1, SessionStatus::Annotating)
    );
}

/// Twenty requests marking twenty segments at once count twenty marks.
async fn marks_at_once_are_all_counted(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 20).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Race", ProjectType::Class).await;
    let sentences: Vec<String> = (0..20).map(|i| format!("Sentence {i}.")).collect();
    let sentences: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let (document, segments) = store
        .create_document(&scope, project.id, document(&sentences))
        .await
        .expect("a document");
    let new = NewSession {
        name: "Race".into(),
        ..Default::default()
    };
    let session = store.create_session(&scope, project.id, new).await.expect("a session");
    let racers = segments.iter().map(|segment| {
        store.mark_annotated(
            &scope,
            project.id,
            session.id,
            document.id,
            MarkTarget::Segment(segment.id),
        )
    });
    for result in join_all(racers).await {
        result.expect("marked");
    }
    assert_eq!(
        counts(&store, &scope, &session).await,
        (1, 20, 20, SessionStatus::Finished)
    );
}

/// A session filled by an import (STARTED) or whose import failed (FAILED) keeps its status
/// when its segments are marked or its documents edited: only the import's end changes it (a
/// STARTED session cannot be deleted meanwhile).
async fn an_import_status_is_kept(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, _, project) = owner_with_project(&store, "Imports", ProjectType::Class).await;
    let (doc, _) = store
        .create_document(&scope, project.id, document(&["One.", "Two."]))
        .await
        .expect("a document");
    let new = NewSession {
        name: "Imported".into(),
        ..Default::default()
    };
    let session = store.create_session(&scope, project.id, new).await.expect("a session");
    for status in [SessionStatus::Started, SessionStatus::Failed] {
        sqlx::query("UPDATE sessions SET status = $1 WHERE id = $2")
            .bind(status.as_str())
            .bind(session.id)
            .execute(&store.pool)
            .await
            .expect("status set");
        let first = store.segments_by_document(&[doc.id]).await.expect("segments")[0].id;
        let target = MarkTarget::Segment(first);
        store
            .mark_annotated(&scope, project.id, session.id, doc.id, target)
            .await
            .expect("marked");
        store
            .update_document(&scope, project.id, doc.id, document(&["Uno.", "Dos.", "Tres."]))
            .await
            .expect("new text");
        let (_, _, _, now) = counts(&store, &scope, &session).await;
        assert_eq!(now, status);
    }
}

/// On PostgreSQL, writers of a session's counts and the foreign key checks of rows that refer
/// to the session do not deadlock: two requests adding documents to one session at once, and a
/// tag written while its document gets a new text (with `FOR UPDATE` on the session, both
/// deadlocked). Whatever fails, fails readably, never as a server error.
async fn concurrent_writers_do_not_deadlock(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 8).await.expect("store");
    let (scope, project) = spam_project(&store, "Together").await;
    let (first, _) = store
        .create_document(&scope, project.id, document(&["First."]))
        .await
        .expect("a document");
    let new = NewSession {
        name: "Together".into(),
        document_ids: Some(vec![first.id]),
        ..Default::default()
    };
    let session = store.create_session(&scope, project.id, new).await.expect("a session");
    for round in 0..10 {
        let changes = |text: String| SessionChanges {
            labeled: vec![labeled(&text, "spam")],
            ..Default::default()
        };
        let (a, b) = tokio::join!(
            store.update_session(&scope, project.id, session.id, changes(format!("A {round}."))),
            store.update_session(&scope, project.id, session.id, changes(format!("B {round}."))),
        );
        a.expect("documents added");
        b.expect("documents added at once");

        let segment = store.segments_by_document(&[first.id]).await.expect("segments")[0].id;
        let at = crate::SegmentAt {
            project_id: project.id,
            session_id: session.id,
            document_id: first.id,
            segment_id: segment,
        };
        let tag = crate::NewTag {
            class: Some("spam".into()),
            ..Default::default()
        };
        let (tagged, edited) = tokio::join!(
            store.add_segment_tag(&scope, at, tag),
            store.update_document(&scope, project.id, first.id, document(&[&format!("Round {round}.")])),
        );
        edited.expect("new text");
        if let Err(e) = tagged {
            // A deadlock's victim would answer Unavailable (send again): neither may happen.
            let failed = matches!(
                e.code,
                lector_core::ErrorCode::Internal | lector_core::ErrorCode::Unavailable
            );
            assert!(!failed, "{e:?}");
        }
    }
    assert_eq!(counts(&store, &scope, &session).await.0, 21);
    // The first of two concurrent additions gave the session its group; the other used it.
    let groups = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM document_groups WHERE project_id = $1",
        project.id,
    );
    assert_eq!(groups.await, 1, "one group for the session's added documents");
    let grouped = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM documents WHERE group_id IS NOT NULL AND project_id = $1",
        project.id,
    );
    assert_eq!(grouped.await, 20);
}

#[tokio::test]
async fn an_import_status_is_kept_sqlite() {
    an_import_status_is_kept(Backend::Sqlite).await;
}

#[tokio::test]
async fn an_import_status_is_kept_postgres() {
    an_import_status_is_kept(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_do_not_deadlock_sqlite() {
    concurrent_writers_do_not_deadlock(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_do_not_deadlock_postgres() {
    concurrent_writers_do_not_deadlock(Backend::Postgres).await;
}

#[tokio::test]
async fn counts_follow_every_write_sqlite() {
    counts_follow_every_write(Backend::Sqlite).await;
}

#[tokio::test]
async fn counts_follow_every_write_postgres() {
    counts_follow_every_write(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_at_once_are_all_counted_sqlite() {
    marks_at_once_are_all_counted(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn marks_at_once_are_all_counted_postgres() {
    marks_at_once_are_all_counted(Backend::Postgres).await;
}
