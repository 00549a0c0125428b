//! What the kill tests share: a `lector worker` process with a short lease, run in slices so
//! that a test can catch it in the middle of a job however fast or slow the machine is, and
//! the labelled documents they train on. Each test binary uses a part of it.
#![allow(dead_code)]

use lector_core::{ProjectType, Scope};
use lector_store::testing::owner_with_project;
use lector_store::{ClassFields, Job, JobState, LabeledDocument, NewSession, Project, Store};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a worker may take to reach a state, on the slowest machine we expect.
pub const DEADLINE: Duration = Duration::from_secs(180);

/// A worker process, killed when dropped: a test that fails leaves no worker behind (not even
/// a stopped one).
pub struct Worker(Child);

impl std::ops::Deref for Worker {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Worker {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lease most kill tests give their workers: a job of a killed worker another takes
/// over after it.
pub const SHORT_LEASE_SECS: u32 = 2;

/// Starts `lector worker` with one worker and a lease of `lease_secs` on `url`, quiet.
pub fn worker(url: &str, dir: &std::path::Path, lease_secs: u32) -> Worker {
    let child = Command::new(env!("CARGO_BIN_EXE_lector"))
        .args(["worker", "--workers", "1", "--data-dir"])
        .arg(dir)
        .env("LECTOR_DATABASE_URL", url)
        .env("LECTOR_JOB_LEASE_SECS", lease_secs.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start a worker");
    Worker(child)
}

fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill {signal} failed");
}

/// Lets `child` run in short slices (continued, a few milliseconds, stopped) and looks at the
/// job only while the child is stopped, until `reached` holds or the job has ended. Answers
/// the job as seen with the child stopped: however slowly this test is scheduled, the worker
/// can never run past the wanted state unobserved by more than one slice.
pub async fn stop_when(child: &Child, store: &Store, job_id: i64, reached: impl Fn(&Job) -> bool) -> Job {
    let started = Instant::now();
    loop {
        signal(child, "-STOP");
        let job = store.job_by_id(job_id).await.unwrap().expect("the job");
        if reached(&job) || matches!(job.state, JobState::Done | JobState::Failed) {
            return job;
        }
        assert!(started.elapsed() < DEADLINE, "the worker did not get there: {job:?}");
        signal(child, "-CONT");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the job has ended (DONE or FAILED), checking again whenever it changes.
pub async fn ended(store: &Store, job_id: i64) -> Job {
    let started = Instant::now();
    loop {
        let job = store.job_by_id(job_id).await.unwrap().expect("the job");
        if matches!(job.state, JobState::Done | JobState::Failed) {
            return job;
        }
        assert!(started.elapsed() < DEADLINE, "the job did not end: {job:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kills `worker` in the middle of the job: once the job reports progress, caught stopped so
/// that it cannot finish unseen. Answers the job as it was at the kill, still running.
pub async fn kill_midway(mut worker: Worker, store: &Store, job_id: i64) -> Job {
    let job = stop_when(&worker, store, job_id, |j| j.progress > 0.0).await;
    assert_eq!(
        job.state,
        JobState::Running,
        "the job finished before the worker could be killed: {job:?}"
    );
    worker.kill().unwrap();
    worker.wait().unwrap();
    job
}

/// How long a stopped process may take to exit: the workers' grace (60 s) with room to spare,
/// less than systemd's `TimeoutStopSec`.
pub const STOP_BOUND: Duration = Duration::from_secs(90);

/// Sends SIGTERM to `worker` in the middle of the job (once it reports progress, caught stopped
/// as in [`kill_midway`]) and waits for the process to end; answers how it ended.
pub async fn terminate_midway(mut worker: Worker, store: &Store, job_id: i64) -> std::process::ExitStatus {
    let job = stop_when(&worker, store, job_id, |j| j.progress > 0.0).await;
    assert_eq!(
        job.state,
        JobState::Running,
        "the job finished before the worker could be stopped: {job:?}"
    );
    signal(&worker, "-TERM");
    signal(&worker, "-CONT");
    let started = Instant::now();
    loop {
        if let Some(status) = worker.try_wait().unwrap() {
            return status;
        }
        assert!(
            started.elapsed() < STOP_BOUND,
            "the worker did not exit within {STOP_BOUND:?} of SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A second worker takes the job over and finishes it: answers the job once it has ended,
/// done on its second attempt.
pub async fn taken_over(url: &str, dir: &std::path::Path, lease_secs: u32, store: &Store, job_id: i64) -> Job {
    let second = worker(url, dir, lease_secs);
    let job = ended(store, job_id).await;
    drop(second);
    assert_eq!(job.state, JobState::Done, "{:?}", job.error);
    assert_eq!(job.attempts, 2, "the second worker ran the job again");
    job
}

/// A CLASS project "Tickets" of its owner with `classes` and one labeling session of `labeled`.
pub async fn labeled_project(store: &Store, classes: &[&str], labeled: Vec<LabeledDocument>) -> (Scope, Project) {
    let (scope, _, project) = owner_with_project(store, "Tickets", ProjectType::Class).await;
    let classes = classes
        .iter()
        .map(|c| ClassFields {
            name: (*c).into(),
            ..Default::default()
        })
        .collect();
    store.add_classes(&scope, project.id, classes).await.unwrap();
    let session = NewSession {
        name: "Tickets".into(),
        labeled,
        ..Default::default()
    };
    store.create_session(&scope, project.id, session).await.unwrap();
    (scope, project)
}
