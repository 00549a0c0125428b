//! A segment's tags are checked (the same tag twice, a second label in a LABEL project, the
//! per-segment limit) and written under a lock on the segment, so concurrent requests cannot all
//! find it free: twenty at once make one tag, on both backends. (On SQLite the write
//! transaction's lock always did this; on PostgreSQL, at READ COMMITTED, the checks alone did
//! not.)

use crate::testing::{TestDatabase, owner_with_project};
use crate::{Backend, ClassFields, NewDocument, NewSegment, NewSession, NewTag, SegmentAt, Store};
use futures_util::future::join_all;
use lector_core::{ErrorCode, ProjectType};

/// A project of `kind` with the labels or classes spam and ham.
async fn spam_and_ham(store: &Store, kind: ProjectType) -> (lector_core::Scope, i64) {
    let (scope, _, project) = owner_with_project(store, "Race", kind).await;
    let names = ["spam", "ham"];
    if kind == ProjectType::Label {
        for name in names {
            store.add_label(&scope, project.id, name).await.expect("a label");
        }
    } else {
        let classes = names.map(|name| ClassFields {
            name: name.into(),
            ..Default::default()
        });
        store
            .add_classes(&scope, project.id, classes.into())
            .await
            .expect("classes");
    }
    (scope, project.id)
}

/// The document "Buy now.", of one segment.
fn buy_now() -> NewDocument {
    let text = "Buy now.".to_owned();
    NewDocument {
        segments: vec![NewSegment {
            text: text.clone(),
            start: 0,
            end: 8,
            layout: None,
        }],
        text,
        meta: serde_json::json!({}),
        language: "en".into(),
    }
}

/// A project of `kind` with the labels or classes spam and ham, one document "Buy now." of one
/// segment, and a session of it: where that segment is tagged.
async fn one_segment(store: &Store, kind: ProjectType) -> (lector_core::Scope, SegmentAt) {
    let (scope, project_id) = spam_and_ham(store, kind).await;
    let (document, segments) = store
        .create_document(&scope, project_id, buy_now())
        .await
        .expect("a document");
    let new = NewSession {
        name: "Race".into(),
        document_ids: Some(vec![document.id]),
        ..Default::default()
    };
    let session = store.create_session(&scope, project_id, new).await.expect("a session");
    let at = SegmentAt {
        project_id,
        session_id: session.id,
        document_id: document.id,
        segment_id: segments[0].id,
    };
    (scope, at)
}

async fn twenty_tags_at_once_make_one(backend: Backend, kind: ProjectType) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 20).await.expect("store");
    let (scope, at) = one_segment(&store, kind).await;
    let names = ["spam", "ham"];
    // The pool's connections open first, so that the racers do not wait for new ones one by one
    // (which spaces them out enough to hide a race).
    let warm: Vec<_> = join_all((0..store.pool_capacity()).map(|_| store.pool.acquire())).await;
    assert!(warm.iter().all(Result::is_ok));
    drop(warm);
    // A CLASS project: the same class twenty times. A LABEL project: two labels in turn.
    let racers = (0..20).map(|i| {
        let name = Some(names[if kind == ProjectType::Label { i % 2 } else { 0 }].to_owned());
        let tag = match kind {
            ProjectType::Label => NewTag {
                label: name,
                ..Default::default()
            },
            _ => NewTag {
                class: name,
                ..Default::default()
            },
        };
        store.add_segment_tag(&scope, at, tag)
    });
    let results = join_all(racers).await;
    let created = results.iter().filter(|r| r.is_ok()).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Err(e) if e.code == ErrorCode::Conflict))
        .count();
    assert_eq!((created, refused), (1, 19), "{results:?}");
    let stored = store.segment_tags(&scope, at).await.expect("the tags");
    assert_eq!(stored.len(), 1, "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tags_at_once_make_one_sqlite() {
    twenty_tags_at_once_make_one(Backend::Sqlite, ProjectType::Class).await;
    twenty_tags_at_once_make_one(Backend::Sqlite, ProjectType::Label).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_tags_at_once_make_one_postgres() {
    twenty_tags_at_once_make_one(Backend::Postgres, ProjectType::Class).await;
    twenty_tags_at_once_make_one(Backend::Postgres, ProjectType::Label).await;
}

/// A tag changed is held to what a new one is: in a LABEL project a label of a part turned into
/// a label of the whole segment beside another part's is refused, as is a change into a tag the
/// segment carries already. Before, only the duplicate was refused.
async fn a_changed_tag_keeps_a_label_projects_rule(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, at) = one_segment(&store, ProjectType::Label).await;
    let part = |start: i64, end: i64, text: &str| NewTag {
        label: Some("spam".into()),
        part: Some((start, end, text.into())),
        ..Default::default()
    };
    let buy = store
        .add_segment_tag(&scope, at, part(0, 3, "Buy"))
        .await
        .expect("a part");
    store
        .add_segment_tag(&scope, at, part(4, 7, "now"))
        .await
        .expect("another part");
    let whole = NewTag {
        label: Some("spam".into()),
        ..Default::default()
    };
    for refused in [whole, part(4, 7, "now")] {
        let error = store
            .update_segment_tag(&scope, at, buy.id, refused)
            .await
            .expect_err("a clash");
        assert_eq!(error.code, ErrorCode::Conflict, "{error:?}");
    }
    store
        .update_segment_tag(&scope, at, buy.id, part(0, 2, "Bu"))
        .await
        .expect("another part");
    let stored = store.segment_tags(&scope, at).await.expect("the tags");
    assert_eq!(stored.len(), 2, "{stored:?}");
}

#[tokio::test]
async fn a_changed_tag_keeps_a_label_projects_rule_sqlite() {
    a_changed_tag_keeps_a_label_projects_rule(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_changed_tag_keeps_a_label_projects_rule_postgres() {
    a_changed_tag_keeps_a_label_projects_rule(Backend::Postgres).await;
}

/// Documents that arrive labeled with a session are held to the rules of a segment's tags, as
/// one tag at a time is, though their tags are checked together and written many to a
/// statement: the same tag twice, or two labels of the whole segment in a LABEL project, is a fault
/// of the input (422 naming the document and its segment) that stores nothing; labels of parts may be many.
async fn labeled_documents_keep_the_rules_of_a_segments_tags(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, project_id) = spam_and_ham(&store, ProjectType::Label).await;
    let label = |name: &str, part: Option<(i64, i64, &str)>| NewTag {
        label: Some(name.into()),
        part: part.map(|(start, end, text)| (start, end, text.to_owned())),
        ..Default::default()
    };
    let session = |tags: Vec<NewTag>| NewSession {
        name: "Labeled".into(),
        labeled: vec![crate::LabeledDocument {
            document: buy_now(),
            tags: vec![tags],
            annotated: vec![true],
        }],
        ..Default::default()
    };
    let refused = [
        vec![label("spam", None), label("ham", None)],
        vec![label("spam", None), label("spam", None)],
        vec![label("spam", Some((0, 3, "Buy"))), label("ham", None)],
        vec![label("spam", Some((0, 3, "Buy"))), label("spam", Some((0, 3, "Buy")))],
    ];
    for tags in refused {
        let error = store
            .create_session(&scope, project_id, session(tags.clone()))
            .await
            .expect_err("a clash");
        // A fault of the input, named where it is.
        assert_eq!(error.code, ErrorCode::ValidationFailed, "{tags:?}: {error:?}");
        assert_eq!(error.errors[0].field, "documents[0]", "{error:?}");
        assert!(
            error.errors[0].message.starts_with("the tags of its segment 0"),
            "{error:?}"
        );
    }
    let tags = vec![label("spam", Some((0, 3, "Buy"))), label("ham", Some((4, 7, "now")))];
    store
        .create_session(&scope, project_id, session(tags))
        .await
        .expect("labels of parts");
    let stored: Vec<(Option<i64>, Option<i64>, Option<String>)> =
        sqlx::query_as("SELECT span_start, span_end, text FROM segment_tags ORDER BY span_start")
            .fetch_all(&store.pool)
            .await
            .expect("the tags");
    assert_eq!(
        stored,
        [
            (Some(0), Some(3), Some("Buy".into())),
            (Some(4), Some(7), Some("now".into()))
        ],
        "only the session accepted has tags"
    );
}

#[tokio::test]
async fn labeled_documents_keep_the_rules_of_a_segments_tags_sqlite() {
    labeled_documents_keep_the_rules_of_a_segments_tags(Backend::Sqlite).await;
}

#[tokio::test]
async fn labeled_documents_keep_the_rules_of_a_segments_tags_postgres() {
    labeled_documents_keep_the_rules_of_a_segments_tags(Backend::Postgres).await;
}
