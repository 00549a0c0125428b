//! A worker process killed (SIGKILL) while it trains a model: another worker takes the job
//! over once the lease expires, and the model turns READY once, with one artifact version and
//! one notification.

use crate::common::{SHORT_LEASE_SECS, kill_midway, labeled_project, taken_over, worker};
use lector_core::ModelStatus;
use lector_store::testing::TestDatabase;
use lector_store::{Backend, LabeledDocument, NewTraining, Store};

/// Enough annotated segments that training takes longer than a few progress reports.
const SEGMENTS: usize = 30_000;
const CLASSES: [&str; 3] = ["billing", "login", "shipping"];

/// A ticket of one of the classes: words shared by every class, words of the class, and a
/// number, so the model has work.
fn ticket(n: usize) -> LabeledDocument {
    let class = CLASSES[n % CLASSES.len()];
    let text = format!(
        "ticket {n} about {class} issue {} with words {} and {}",
        n % 97,
        n % 89,
        n % 83
    );
    lector_store::testing::labeled(&text, class)
}

async fn killed_training_finishes_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.unwrap();
    let (scope, project) = labeled_project(&store, &CLASSES, (0..SEGMENTS).map(ticket).collect()).await;
    let (model, job) = store
        .start_training(&scope, project.id, NewTraining::default())
        .await
        .unwrap();

    // Kill the first worker once it reports training progress: it runs in slices and is
    // looked at only while stopped, so it cannot finish unseen however slow the machine is.
    let dir = tempfile::tempdir().unwrap();
    kill_midway(worker(&database.url, dir.path(), SHORT_LEASE_SECS), &store, job.id).await;
    taken_over(&database.url, dir.path(), SHORT_LEASE_SECS, &store, job.id).await;
    let model = store
        .model_access(&scope, model.id, lector_core::Action::Read)
        .await
        .unwrap();
    assert_eq!(model.status, ModelStatus::Ready);
    assert_eq!(model.version, 1, "one artifact written once");
    assert_eq!(model.progress, 1.0);
    assert!(model.score.is_some_and(|s| s > 0.9), "{:?}", model.score);
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(
        notes.iter().filter(|n| n.title == "Model ready").count(),
        1,
        "one notification per job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_training_finishes_once_on_sqlite() {
    killed_training_finishes_once(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_training_finishes_once_on_postgres() {
    killed_training_finishes_once(Backend::Postgres).await;
}
