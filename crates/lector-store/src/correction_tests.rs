//! A correction session's job on both backends: the session is PREDICTING until the job's one
//! write fills it (its documents and vocabulary cannot change meanwhile), documents deleted
//! while the model scored them are left out and edited ones lose the old segments' tags, a
//! second write (a run after a crash) leaves the session as the first made it, and a late
//! terminal failure does not mark the filled session FAILED.

use crate::PredictedSegmentTag;
use crate::training_tests::training_queued;
use crate::{
    Backend, CORRECTION_JOB, CorrectionPayload, CorrectionPlan, DocumentFilter, NewCorrection, SessionChanges,
};
use lector_core::Action;
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

    // While the model scores, the session's documents and vocabulary wait; its name does not.
    let refused = store
        .update_session(
            &scope,
            project,
            session.id,
            SessionChanges {
                document_ids: vec![named[0]],
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(refused.status(), 409, "{}", refused.detail);
    let renamed = SessionChanges {
        name: Some("Check v2".into()),
        ..Default::default()
    };
    store
        .update_session(&scope, project, session.id, renamed)
        .await
        .unwrap();

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
    // A batch ends at its characters, one document at least; an id not in the project is
    // passed over (and counted as covered).
    let (first, covered) = store
        .segments_for_job(&lease, &[i64::MAX, named[0], named[1]], 1)
        .await
        .unwrap();
    assert_eq!((first.len(), first[0].id, covered), (1, named[0], 2));
    let (scored, covered) = store.segments_for_job(&lease, &named, i64::MAX).await.unwrap();
    assert_eq!(covered, named.len());
    store.delete_document(&scope, project, named[1]).await.unwrap();
    // The last one is edited: its segments are new, the model's tags were for the old ones.
    let edited = crate::testing::one_segment_document("An entirely new text.");
    store.update_document(&scope, project, named[2], edited).await.unwrap();
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
    assert_eq!(tags, 1, "the edited document keeps no tag of its old segments");
    let again = store.fill_correction(&lease, &payload, chosen).await.unwrap();
    assert_eq!(again.document_count, 2);
    let tags = crate::testing::count(
        &store,
        "SELECT COUNT(*) FROM segment_tags WHERE session_id = $1",
        session.id,
    )
    .await;
    assert_eq!(tags, 1, "a second write adds nothing");
    // The job then fails for good (its worker died before it ended, too often): the session
    // people correct keeps its status.
    store.fail_job(&lease, "lost", false).await.unwrap();
    let kept = store
        .correction(&scope, project, session.id, Action::Read)
        .await
        .unwrap();
    assert_eq!(kept.status, SessionStatus::Created);
    assert_eq!(kept.name, "Check v2");
}

#[tokio::test]
async fn a_correction_job_fills_its_session_once_sqlite() {
    a_correction_job_fills_its_session_once(Backend::Sqlite).await;
}

#[tokio::test]
async fn a_correction_job_fills_its_session_once_postgres() {
    a_correction_job_fills_its_session_once(Backend::Postgres).await;
}
