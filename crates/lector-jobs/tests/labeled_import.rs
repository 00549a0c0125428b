//! The labeled-file import job on both backends: a run killed after some batches and run again,
//! then run once more, stores every document, tag and mark exactly once.

mod common;
use common::on_both_backends;
use lector_extract::ExtractConfig;
use lector_extract::sandbox::Sandbox;
use lector_jobs::labeled_import::labeled_document;
use lector_jobs::{Handler, ImportLabeled};
use lector_store::testing::TestDatabase;
use lector_store::{Backend, Blobs, LabeledColumns, LabeledFile, LabeledImportPayload, NewSession, Store};
use lector_text::{LabeledSegment, LabeledTag, LabeledText, Language};

/// Documents in the file: more than two of the job's batches.
const DOCUMENTS: usize = 450;

fn text_of(i: usize) -> String {
    format!("Review {i} liked the soup.")
}

async fn a_labeled_import_run_twice_stores_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let blobs_dir = std::env::temp_dir().join(format!("lector-labeled-{}", uuid::Uuid::new_v4()));
    let blobs = Blobs::open(blobs_dir.to_str().unwrap()).expect("blobs");
    let store = Store::open(&database.url, 4).await.expect("store").with_blobs(blobs);
    let (scope, _, project) = common::absa_project_with_class(&store, "Reviews", "FOOD").await;
    let mut csv = String::from("document,text,class,label\n");
    for i in 0..DOCUMENTS {
        csv.push_str(&format!("{i},{},FOOD,positive\n", text_of(i)));
    }
    let chunks = futures_util::stream::iter(vec![Ok(bytes::Bytes::from(csv))]);
    let upload = store
        .save_upload(
            &scope,
            lector_store::UploadFor::Project(project.id),
            "reviews.csv",
            "csv",
            chunks,
            1 << 20,
        )
        .await
        .unwrap();
    let file = LabeledFile {
        language: "en".into(),
        columns: LabeledColumns {
            text: 1,
            class: Some(2),
            label: Some(3),
            document: Some(0),
            part: None,
            annotated: None,
            segment: None,
        },
        max_bytes: 1 << 20,
        max_rows: lector_core::config::DEFAULT_MAX_ROWS,
    };
    let new = NewSession {
        name: "Imported".into(),
        ..Default::default()
    };
    let (session, _) = store
        .start_labeled_import(&scope, project.id, new, &upload, file)
        .await
        .unwrap();
    assert_eq!(session.status.as_str(), "STARTED");
    assert_eq!(session.document_count, 0);

    let lease = store.claim_job("a", 30).await.unwrap().expect("the import job");
    let payload: LabeledImportPayload = lease.payload().unwrap();
    // A first run committed its first batch, then was killed.
    let first: Vec<_> = (0..200)
        .map(|i| {
            let text = LabeledText {
                segments: vec![LabeledSegment {
                    text: text_of(i),
                    tags: vec![LabeledTag {
                        class: Some("FOOD".into()),
                        label: Some("positive".into()),
                        part: None,
                    }],
                    annotated: true,
                }],
            };
            labeled_document(text, Language::En).unwrap()
        })
        .collect();
    assert_eq!(store.import_labeled(&lease, &payload, 0, &first).await.unwrap(), 200);
    // The run after it stores the rest; one more stores nothing.
    // A table never reaches the sandbox; the handler holds one for PDFs and images.
    let handler = ImportLabeled(Sandbox::new(&ExtractConfig::default()).unwrap());
    let stopping = lector_jobs::Stopping::never();
    let job = lector_jobs::JobContext {
        store: &store,
        lease: &lease,
        stopping: &stopping,
    };
    let again = handler.run(job, payload.clone()).await.expect("the run");
    assert_eq!(again.result["stored_by_this_run"], DOCUMENTS - 200);
    assert_eq!(again.result["documents"], DOCUMENTS);
    let last = handler.run(job, payload.clone()).await.expect("a last run");
    assert_eq!(last.result["stored_by_this_run"], 0);

    let session = store.session(&scope, project.id, session.id).await.unwrap();
    assert_eq!(session.document_count, DOCUMENTS as i64);
    assert_eq!(session.segment_count, DOCUMENTS as i64);
    assert_eq!(session.annotated_count, DOCUMENTS as i64);
    assert_eq!(session.status.as_str(), "FINISHED");
    let (_, documents, _) = store
        .session_documents(&scope, project.id, session.id, 0, 1000)
        .await
        .unwrap();
    assert_eq!(documents.len(), DOCUMENTS);
    let segments = store.segments_of(&documents).await.unwrap();
    let tags = store.tags_of(&segments, Some(&session)).await.unwrap();
    assert_eq!(tags.len(), DOCUMENTS, "one tag a document, none twice");
    let group = store
        .group(&scope, project.id, session.document_group_id.unwrap())
        .await
        .unwrap();
    assert_eq!(group.status, "CREATED");
    let _ = std::fs::remove_dir_all(&blobs_dir);
}

on_both_backends!(a_labeled_import_run_twice_stores_once);

/// A part in another Unicode form than its segment (a decomposed "é", as macOS writes it) is
/// found, as the stored text is normalised.
#[test]
fn a_part_is_found_in_either_unicode_form() {
    let text = LabeledText {
        segments: vec![LabeledSegment {
            text: "Le cafe\u{301} est bon.".into(),
            tags: vec![LabeledTag {
                class: Some("FOOD".into()),
                label: None,
                part: Some("cafe\u{301}".into()),
            }],
            annotated: false,
        }],
    };
    let labeled = labeled_document(text, Language::En).expect("the part is found");
    assert_eq!(labeled.document.text, "Le café est bon.");
    assert_eq!(labeled.tags[0][0].part, Some((3, 7, "café".to_owned())));
}
