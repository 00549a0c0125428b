//! A worker process killed (SIGKILL) while it trains a model: another worker takes the job
//! over once the lease expires, and the model turns READY once, with one artifact version and
//! one notification.

use crate::common::{SHORT_LEASE_SECS, ended, stop_when, worker};
use lector_core::{ModelStatus, ProjectType};
use lector_store::testing::{TestDatabase, owner_with_project};
use lector_store::{Backend, ClassFields, JobState, LabeledDocument, NewSession, NewTraining, Store};

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
    crate::common::labeled(text, class)
}

async fn killed_training_finishes_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 2).await.unwrap();
    let (scope, _, project) = owner_with_project(&store, "Tickets", ProjectType::Class).await;
    let classes = CLASSES
        .iter()
        .map(|c| ClassFields {
            name: (*c).into(),
            ..Default::default()
        })
        .collect();
    store.add_classes(&scope, project.id, classes).await.unwrap();
    let session = NewSession {
        name: "Tickets".into(),
        labeled: (0..SEGMENTS).map(ticket).collect(),
        ..Default::default()
    };
    store.create_session(&scope, project.id, session).await.unwrap();
    let (model, job) = store
        .start_training(&scope, project.id, NewTraining::default())
        .await
        .unwrap();

    // Kill the first worker once it reports training progress: it runs in slices and is
    // looked at only while stopped, so it cannot finish unseen however slow the machine is.
    let dir = tempfile::tempdir().unwrap();
    let mut first = worker(&database.url, dir.path(), SHORT_LEASE_SECS);
    let seen = stop_when(&first, &store, job.id, |job| job.progress > 0.0).await;
    assert_eq!(
        seen.state,
        JobState::Running,
        "training finished before the worker could be killed"
    );
    first.kill().unwrap();
    first.wait().unwrap();

    let second = worker(&database.url, dir.path(), SHORT_LEASE_SECS);
    let job = ended(&store, job.id).await;
    drop(second);

    assert_eq!(job.state, JobState::Done, "{:?}", job.error);
    assert_eq!(job.attempts, 2, "the second worker ran the job again");
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
