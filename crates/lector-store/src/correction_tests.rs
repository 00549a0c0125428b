//! A correction session's job on both backends: the session is PREDICTING until the job's one
//! write fills it, documents deleted while the model scored them are left out, and a second
//! write (a run after a crash) leaves the session as the first made it.

use crate::PredictedSegmentTag;
use crate::training_tests::training_queued;
use crate::{Backend, CORRECTION_JOB, CorrectionPayload, CorrectionPlan, DocumentFilter, NewCorrection};
use lector_core::labeling::SessionStatus;

async fn a_correction_job_fills_its_session_once(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let Some((_database, store, scope, model)) = training_queued(backend, dir.path()).await else {
        return;
    };
    let project = model.project_id.unwrap();
    let (documents, _) = store
        .documents(&scope, project, &DocumentFilter::default(), 0, 100)
        .await
        .unwrap();
    let named: Vec<i64> = documents.iter().rev().take(3).map(|d| d.id).collect();
    let plan = CorrectionPlan {
        name: "Check".into(),
        description: String::new(),
        sample_size: 2,
        seed: 0,
        document_ids: Some(named.clone()),
    };
    let session = store.start_correction(&scope, project, &model, plan).await.unwrap();
    assert_eq!(session.status, SessionStatus::Predicting);
    assert_eq!(session.document_count, 0);

    let lease = store
        .claim_job_of("w", 60, &[CORRECTION_JOB])
        .await
        .unwrap()
        .expect("the correction job");
    let payload: CorrectionPayload = lease.payload().unwrap();
    assert_eq!(payload.session_id, session.id);
    assert_eq!(
        store.correction_candidates(&lease, &payload, 5000).await.unwrap(),
        named
    );
    // The middle document goes while the model scores the three.
    let scored = store.segments_for_job(&lease, &named).await.unwrap();
    store.delete_document(&scope, project, named[1]).await.unwrap();
    let predictions = scored
        .iter()
        .map(|d| PredictedSegmentTag {
            document_id: d.id,
            segment_id: d.segments[0].0,
            class: Some("billing".into()),
            label: None,
            confidence: 0.25,
        })
        .collect();
    let chosen = NewCorrection {
        documents: named.clone(),
        predictions,
    };
    let filled = store.fill_correction(&lease, &payload, chosen.clone()).await.unwrap();
    assert_eq!(filled.status, SessionStatus::Created);
    assert_eq!(filled.document_count, 2, "the deleted document is left out");
    let tags = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM segment_tags WHERE session_id = $1",
        session.id,
    )
    .await;
    assert_eq!(tags, 2);
    let again = store.fill_correction(&lease, &payload, chosen).await.unwrap();
    assert_eq!(again.document_count, 2);
    let tags = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM segment_tags WHERE session_id = $1",
        session.id,
    )
    .await;
    assert_eq!(tags, 2, "a second write adds nothing");
}

#[tokio::test]
async fn a_correction_job_fills_its_session_once_sqlite() {
    a_correction_job_fills_its_session_once(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_correction_job_fills_its_session_once_postgres() {
    a_correction_job_fills_its_session_once(Backend::Postgres).await;
}
