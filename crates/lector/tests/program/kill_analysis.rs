//! A worker process killed (SIGKILL) in the middle of a batch analysis: another worker takes
//! the job over once the lease expires, and the analysis finishes once: every document covered,
//! no segment's tag stored twice, one notification.

use crate::common::{SHORT_LEASE_SECS, ended, kill_midway, labeled_project, taken_over, worker};
use lector_core::Action;
use lector_store::testing::TestDatabase;
use lector_store::{
    AnalysisSource, Backend, DocumentFilter, ImportOptions, ImportedDocument, JobState, LabeledDocument,
    NewBatchAnalysis, NewTraining, Store,
};
use std::collections::HashSet;

/// Documents analysed: enough batches that the kill lands in the middle.
const DOCUMENTS: usize = 20_000;
const CLASSES: [&str; 3] = ["billing", "login", "shipping"];

fn text(n: usize) -> String {
    let class = CLASSES[n % CLASSES.len()];
    format!("ticket {n} about {class} issue {}", n % 97)
}

fn ticket(n: usize) -> LabeledDocument {
    lector_store::testing::labeled(&text(n), CLASSES[n % CLASSES.len()])
}

async fn killed_analysis_finishes_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.unwrap();
    let (scope, project) = labeled_project(&store, &CLASSES, (0..600).map(ticket).collect()).await;
    let documents: Vec<_> = (0..DOCUMENTS)
        .map(|n| ImportedDocument {
            text: text(n),
            meta: Default::default(),
        })
        .collect();
    let options = ImportOptions {
        language: "en".into(),
        split: false,
        file: None,
    };
    let group = store
        .start_import(&scope, project.id, "incoming", "upload", options, &documents)
        .await
        .unwrap();
    let (model, training) = store
        .start_training(&scope, project.id, NewTraining::default())
        .await
        .unwrap();

    // The first worker imports and trains, then is killed in the middle of the analysis: it
    // runs in slices and is looked at only while stopped.
    let dir = tempfile::tempdir().unwrap();
    let first = worker(&database.url, dir.path(), SHORT_LEASE_SECS);
    assert_eq!(ended(&store, group.task_id.unwrap()).await.state, JobState::Done);
    assert_eq!(ended(&store, training.id).await.state, JobState::Done);
    let model = store.model_access(&scope, model.id, Action::Read).await.unwrap();
    let new = NewBatchAnalysis {
        name: "Incoming".into(),
        description: String::new(),
        split: true,
        source: AnalysisSource::Group(group.id),
    };
    let analysis = store.start_analysis(&scope, &model, new).await.unwrap();
    let job_id = analysis.task_id.unwrap();
    kill_midway(first, &store, job_id).await;
    let halfway = store.analysis(&scope, analysis.id, Action::Read).await.unwrap();
    assert!(
        halfway.document_count > 0 && halfway.document_count < DOCUMENTS as i64,
        "{} documents covered at the kill",
        halfway.document_count
    );

    taken_over(&database.url, dir.path(), SHORT_LEASE_SECS, &store, job_id).await;

    let analysis = store.analysis(&scope, analysis.id, Action::Read).await.unwrap();
    assert_eq!(analysis.status, "FINISHED");
    assert_eq!(analysis.document_count, DOCUMENTS as i64, "every document covered once");
    assert_eq!(analysis.progress, 1.0);
    let filter = DocumentFilter {
        analysis_id: Some(analysis.id),
        ..Default::default()
    };
    let (documents, _) = store
        .documents(&scope, project.id, &filter, 0, DOCUMENTS as i64)
        .await
        .unwrap();
    let tags = store.analysis_tags_of(&analysis, &documents).await.unwrap();
    let distinct: HashSet<(i64, Option<String>)> = tags.iter().map(|t| (t.segment_id, t.class.clone())).collect();
    assert_eq!(distinct.len(), tags.len(), "no tag stored twice");
    let tagged: HashSet<i64> = tags.iter().map(|t| t.segment_id).collect();
    assert!(
        tagged.len() >= DOCUMENTS * 9 / 10,
        "{} of {DOCUMENTS} segments tagged",
        tagged.len()
    );
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(
        notes.iter().filter(|n| n.title == "Analysis finished").count(),
        1,
        "one notification per job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_analysis_finishes_once_on_sqlite() {
    killed_analysis_finishes_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_analysis_finishes_once_on_postgres() {
    killed_analysis_finishes_once(Backend::Postgres).await;
}
