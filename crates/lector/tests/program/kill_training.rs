//! A worker process killed (SIGKILL) while it trains a model: another worker takes the job
//! over once the lease expires, and the model turns READY once, with one artifact version and
//! one notification. One stopped with SIGTERM instead exits 0 at once, its job back in the
//! queue without a used attempt.

use crate::common::{SHORT_LEASE_SECS, ended, kill_midway, labeled_project, taken_over, terminate_midway, worker};
use lector_core::{ModelStatus, Scope};
use lector_store::testing::TestDatabase;
use lector_store::{Backend, Job, JobState, LabeledDocument, Model, NewTraining, Store};

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

/// A fresh database with a project of `SEGMENTS` labelled tickets and its model's training
/// queued; `None` where the backend is not available here.
async fn training_queued(backend: Backend) -> Option<(TestDatabase, Store, Scope, Model, Job)> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 2).await.unwrap();
    let (scope, project) = labeled_project(&store, &CLASSES, (0..SEGMENTS).map(ticket).collect()).await;
    let (model, job) = store
        .start_training(&scope, project.id, NewTraining::default())
        .await
        .unwrap();
    Some((database, store, scope, model, job))
}

/// The model as it is now, checked READY with one artifact, written once.
async fn ready_once(store: &Store, scope: &Scope, model: &Model) -> Model {
    let model = store
        .model_access(scope, model.id, lector_core::Action::Read)
        .await
        .unwrap();
    assert_eq!(model.status, ModelStatus::Ready);
    assert_eq!(model.version, 1, "one artifact written once");
    model
}

async fn killed_training_finishes_once(backend: Backend) {
    let Some((database, store, scope, model, job)) = training_queued(backend).await else {
        return;
    };

    // Kill the first worker once it reports training progress: it runs in slices and is
    // looked at only while stopped, so it cannot finish unseen however slow the machine is.
    let dir = tempfile::tempdir().unwrap();
    kill_midway(worker(&database.url, dir.path(), SHORT_LEASE_SECS), &store, job.id).await;
    taken_over(&database.url, dir.path(), SHORT_LEASE_SECS, &store, job.id).await;
    let model = ready_once(&store, &scope, &model).await;
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

/// A lease long enough that a job can come back to the queue within the test only by being
/// handed back, not by its lease running out.
const LONG_LEASE_SECS: u32 = 600;

async fn stopped_training_goes_back_to_the_queue(backend: Backend) {
    let Some((database, store, scope, model, job)) = training_queued(backend).await else {
        return;
    };

    let dir = tempfile::tempdir().unwrap();
    let status = terminate_midway(worker(&database.url, dir.path(), LONG_LEASE_SECS), &store, job.id).await;
    assert!(status.success(), "a stop on SIGTERM exits 0: {status}");
    let job = store.job_by_id(job.id).await.unwrap().unwrap();
    assert_eq!(
        job.state,
        JobState::Queued,
        "handed back, not left to its lease: {job:?}"
    );
    assert_eq!(job.attempts, 0, "a job cut short by a stop uses no attempt");

    let second = worker(&database.url, dir.path(), LONG_LEASE_SECS);
    let job = ended(&store, job.id).await;
    drop(second);
    assert_eq!(job.state, JobState::Done, "{:?}", job.error);
    assert_eq!(job.attempts, 1, "the run that finished is the job's first attempt");
    ready_once(&store, &scope, &model).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_training_goes_back_to_the_queue_on_sqlite() {
    stopped_training_goes_back_to_the_queue(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_training_goes_back_to_the_queue_on_postgres() {
    stopped_training_goes_back_to_the_queue(Backend::Postgres).await;
}
