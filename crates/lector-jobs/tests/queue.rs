//! The job queue on both backends: leases, heartbeats, fencing, the reaper, retries, and
//! exactly one notification per finished job.

mod common;
use common::on_both_backends;
use lector_core::{NotificationType, ProjectType, Scope};
use lector_jobs::prepare_document;
use lector_jobs::{Handler, JobContext, JobError, Outcome, Runner};
use lector_store::testing::{TestDatabase, owner_with_project};
use lector_store::{
    Backend, Failure, JobPayload, JobResource, JobState, LabeledDocument, Lease, NewJob, NewSession, NewTag, Store,
};
use lector_text::Language;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::{Duration, Instant};

/// A test kind of job: counts to `upto`, reporting progress.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CountPayload {
    upto: i64,
}

impl JobPayload for CountPayload {
    const KIND: &'static str = "count";
    const MAX_ATTEMPTS: i64 = 3;

    fn failure(&self) -> Failure {
        Failure::of(
            None,
            "Count failed",
            format!("Counting to {}", self.upto),
            "count again",
        )
    }
}

async fn store(backend: Backend) -> Option<(Store, TestDatabase, i64)> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 4).await.expect("store");
    let (user, _) = lector_store::testing::owner(&store).await;
    Some((store, database, user.id))
}

fn job(user_id: i64, max_attempts: i64) -> NewJob {
    NewJob {
        max_attempts,
        ..NewJob::of(&CountPayload { upto: 3 }).unwrap().owned_by(user_id)
    }
}

fn notice(lease: &Lease, title: &str) -> Option<lector_store::JobNotice> {
    lector_jobs::runner::notice_for(lease, NotificationType::Info, title, "done")
}

async fn notifications(store: &Store, user_id: i64) -> usize {
    let scope = Scope {
        user_id,
        is_superuser: false,
        workspaces: vec![],
    };
    store.notifications(&scope, user_id, 0, 100).await.unwrap().len()
}

async fn a_taken_over_lease_can_no_longer_commit(backend: Backend) {
    let Some((store, _db, user)) = store(backend).await else {
        return;
    };
    let queued = store.enqueue(job(user, 3)).await.unwrap();
    assert_eq!(queued.state, JobState::Queued);

    // Worker A claims with a lease that has already run out (as if it hung or was killed).
    let a = store.claim_job("a", -1).await.unwrap().expect("a claims");
    assert!(
        store.claim_job("b", 30).await.unwrap().is_none(),
        "a running job is not claimed twice"
    );
    assert!(store.report_progress(&a, 0.5).await.unwrap());
    assert!(store.report_progress(&a, 0.2).await.unwrap());
    assert_eq!(
        store.job_by_id(queued.id).await.unwrap().unwrap().progress,
        0.5,
        "progress never decreases"
    );

    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    assert_eq!(
        store.reap_expired_leases().await.unwrap(),
        0,
        "a lease is reclaimed once"
    );
    let statistics = store.job_statistics().await.unwrap();
    assert_eq!(statistics.lease_reclaims, vec![("count".to_owned(), 1)]);
    assert_eq!(
        statistics.jobs,
        vec![lector_store::JobCount {
            kind: "count".into(),
            state: JobState::Queued,
            jobs: 1
        }]
    );
    let (kind, waited) = &statistics.oldest_queued_secs[0];
    assert!(kind == "count" && (0.0..60.0).contains(waited), "{kind} {waited}");
    let b = store
        .claim_job("b", 30)
        .await
        .unwrap()
        .expect("b claims after the reaper");
    assert!(b.token > a.token);
    assert_eq!(b.job.attempts, 2);

    assert!(!store.heartbeat(&a, 30).await.unwrap(), "a's lease is gone");
    assert!(
        !store.finish_job(&a, json!({"by": "a"}), notice(&a, "a")).await.unwrap(),
        "a is fenced off"
    );
    assert!(store.heartbeat(&b, 30).await.unwrap());
    assert!(store.finish_job(&b, json!({"by": "b"}), notice(&b, "b")).await.unwrap());
    assert!(
        !store.finish_job(&b, json!({"by": "b"}), notice(&b, "b")).await.unwrap(),
        "a job finishes once"
    );

    let done = store.job_by_id(queued.id).await.unwrap().unwrap();
    assert_eq!(
        (done.state, done.result, done.progress),
        (JobState::Done, Some(json!({"by": "b"})), 1.0)
    );
    assert!(done.finished.is_some());
    assert_eq!(notifications(&store, user).await, 1, "exactly one notification per job");
}

async fn failures_retry_then_fail_with_one_notification(backend: Backend) {
    let Some((store, _db, user)) = store(backend).await else {
        return;
    };
    let queued = store.enqueue(job(user, 2)).await.unwrap();
    let first = store.claim_job("a", 30).await.unwrap().unwrap();
    assert!(store.fail_job(&first, "database hiccup", true).await.unwrap());
    let retried = store.job_by_id(queued.id).await.unwrap().unwrap();
    assert_eq!(retried.state, JobState::Queued);
    assert!(
        store.claim_job("a", 30).await.unwrap().is_none(),
        "a retry waits for its delay"
    );
    assert_eq!(
        notifications(&store, user).await,
        0,
        "no notification while retries remain"
    );

    let second = lector_store::Lease {
        job: lector_store::Job {
            attempts: 2,
            ..first.job.clone()
        },
        token: first.token,
        owner: "a".into(),
        unrunnable_since: None,
    };
    // The stale lease (token of the first claim) cannot fail the job again.
    assert!(!store.fail_job(&second, "late", false).await.unwrap());
    assert_eq!(notifications(&store, user).await, 0);
}

async fn the_runner_runs_handlers_and_records_outcomes(backend: Backend) {
    struct Count;
    impl Handler for Count {
        type Payload = CountPayload;
        async fn run(&self, job: JobContext<'_>, payload: CountPayload) -> Result<Outcome, JobError> {
            let JobContext { store, lease, .. } = job;
            let upto = payload.upto;
            for i in 1..=upto {
                store
                    .report_progress(lease, i as f64 / upto as f64)
                    .await
                    .map_err(|e| JobError::transient(e.detail))?;
            }
            Ok(Outcome {
                result: json!({"counted": upto}),
                notice: notice(lease, "counted"),
            })
        }
    }
    let Some((store, _db, user)) = store(backend).await else {
        return;
    };
    let runner = Runner::new().with(Count);
    let good = store.enqueue(job(user, 3)).await.unwrap();
    // A payload this version cannot read (as if written by another version of Lector).
    let bad = store
        .enqueue(NewJob {
            payload: json!({"uptoo": 3, "version": 1}),
            ..job(user, 3)
        })
        .await
        .unwrap();
    let newer = store
        .enqueue(NewJob {
            payload: json!({"upto": 3, "version": 2}),
            ..job(user, 3)
        })
        .await
        .unwrap();
    let unknown = store
        .enqueue(NewJob {
            kind: "mystery".into(),
            ..job(user, 3)
        })
        .await
        .unwrap();
    // Queued a moment ago, a payload of a newer version and a kind this runner lacks wait for a
    // worker that reads them (a rolling upgrade): the first is handed back untouched, the
    // second not claimed.
    while runner.run_one(&store, "w").await.unwrap() {}
    for waiting in [newer.id, unknown.id] {
        let job = store.job_by_id(waiting).await.unwrap().unwrap();
        assert_eq!((job.state, job.attempts), (JobState::Queued, 0), "{job:?}");
    }
    // An hour later: the newer payload, handed back an hour ago, fails; the unknown kind is
    // looked at for the first time and handed back, as the hour counts from when a worker
    // first could not run a job, not from when it was queued.
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    while runner.run_one(&store, "w").await.unwrap() {}
    assert_eq!(
        store.job_by_id(newer.id).await.unwrap().unwrap().state,
        JobState::Failed
    );
    let waiting = store.job_by_id(unknown.id).await.unwrap().unwrap();
    assert_eq!((waiting.state, waiting.attempts), (JobState::Queued, 0), "{waiting:?}");
    // An hour after that nobody took it; it fails with its trace too.
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    while runner.run_one(&store, "w").await.unwrap() {}

    let good = store.job_by_id(good.id).await.unwrap().unwrap();
    assert_eq!((good.state, good.result), (JobState::Done, Some(json!({"counted": 3}))));
    let bad = store.job_by_id(bad.id).await.unwrap().unwrap();
    assert_eq!(bad.state, JobState::Failed);
    let error = bad.error.unwrap();
    assert!(
        error.starts_with(&format!(
            "Task {} (count) failed after 1 attempt: the job's payload is unreadable: missing field `upto`",
            bad.id
        )),
        "{error}"
    );
    let newer = store.job_by_id(newer.id).await.unwrap().unwrap();
    assert!(
        newer
            .error
            .unwrap()
            .contains("version 2 where this Lector reads version 1")
    );
    let unknown = store.job_by_id(unknown.id).await.unwrap().unwrap();
    assert_eq!(
        (unknown.state, unknown.error.as_deref()),
        (
            JobState::Failed,
            Some(
                "Counting to 3 failed after 1 attempt: this installation has no handler for jobs of kind mystery; count again."
            )
        )
    );
    assert_eq!(notifications(&store, user).await, 4, "one for each job, failed or done");
}

/// A test kind of job that panics on its first `panics` attempts, then succeeds; a terminal
/// failure marks its document group FAILED.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FlakyPayload {
    group_id: i64,
    panics: i64,
}

impl JobPayload for FlakyPayload {
    const KIND: &'static str = "flaky";
    const MAX_ATTEMPTS: i64 = 2;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::DocumentGroup(self.group_id)),
            "Flaky failed",
            format!("The flaky job of group {}", self.group_id),
            "try again",
        )
    }
}

struct Flaky;

impl Handler for Flaky {
    type Payload = FlakyPayload;
    async fn run(&self, job: JobContext<'_>, payload: FlakyPayload) -> Result<Outcome, JobError> {
        let JobContext { lease, .. } = job;
        if lease.job.attempts <= payload.panics {
            panic!("flaky on attempt {}", lease.job.attempts);
        }
        Ok(Outcome {
            result: json!({"attempt": lease.job.attempts}),
            notice: notice(lease, "flaky done"),
        })
    }
}

/// A user with a project and an empty group (PROCESSING), and a flaky job on that group.
async fn flaky_setup(store: &Store, panics: i64) -> (Scope, i64, i64, i64) {
    let (scope, _, project) = owner_with_project(store, "Flaky", ProjectType::Class).await;
    let group = store.create_group(&scope, project.id, "Batch", vec![]).await.unwrap();
    lector_store::testing::group_being_filled(store, group.id).await;
    let job = NewJob::of(&FlakyPayload {
        group_id: group.id,
        panics,
    })
    .unwrap()
    .owned_by(scope.user_id)
    .in_project(project.workspace_id, project.id);
    let job = store.enqueue(job).await.unwrap();
    (scope, project.id, group.id, job.id)
}

/// Runs jobs with `runner` until `job_id` has ended (retries wait for their backoff).
async fn run_until_ended(store: &Store, runner: &Runner, job_id: i64) -> lector_store::Job {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        runner.run_one(store, "w").await.unwrap();
        let job = store.job_by_id(job_id).await.unwrap().unwrap();
        if matches!(job.state, JobState::Done | JobState::Failed) {
            return job;
        }
        assert!(Instant::now() < deadline, "the job did not end: {job:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_panic_is_a_failed_attempt_and_the_retry_succeeds(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, project_id, group_id, job_id) = flaky_setup(&store, 1).await;
    let runner = Runner::new().with(Flaky);
    assert!(runner.run_one(&store, "w").await.unwrap(), "the panic is survived");
    let failed_once = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!(failed_once.state, JobState::Queued, "a panic is retried");
    assert_eq!(
        failed_once.error.as_deref(),
        Some("the job panicked: flaky on attempt 1")
    );
    let job = run_until_ended(&store, &runner, job_id).await;
    assert_eq!((job.state, job.attempts), (JobState::Done, 2), "{job:?}");
    assert_eq!(job.result, Some(json!({"attempt": 2})));
    assert_eq!(job.error, None, "a DONE task keeps no error of an earlier attempt");
    let group = store.group(&scope, project_id, group_id).await.unwrap();
    assert_eq!(group.status, "PROCESSING", "not FAILED: the retry succeeded");
    assert_eq!(notifications(&store, scope.user_id).await, 1);
}

async fn a_job_that_always_panics_fails_with_its_trace(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, project_id, group_id, job_id) = flaky_setup(&store, i64::MAX).await;
    let job = run_until_ended(&store, &Runner::new().with(Flaky), job_id).await;
    assert_eq!((job.state, job.attempts), (JobState::Failed, 2), "{job:?}");
    let reason = format!(
        "The flaky job of group {group_id} failed after 2 attempts: the job panicked: flaky on attempt 2; try again."
    );
    assert_eq!(job.error.as_deref(), Some(reason.as_str()));
    let group = store.group(&scope, project_id, group_id).await.unwrap();
    assert_eq!(group.status, "FAILED", "the job's resource is marked FAILED");
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(notes.len(), 1, "exactly one notification: {notes:?}");
    assert_eq!(
        (notes[0].title.as_str(), notes[0].text.as_str()),
        ("Flaky failed", reason.as_str())
    );
    assert_eq!(notes[0].kind, NotificationType::Warning);
}

/// A job whose worker dies on every attempt (killed by the kernel for its memory, say) is
/// taken back by the reaper with a growing delay, and once its attempts are used its next
/// claim fails it for good, without running it: its resource FAILED, one notification.
async fn a_job_whose_worker_keeps_dying_fails_once_its_attempts_are_used(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    // The handler would succeed at once: only a worker that never ends an attempt fails it.
    let (scope, project_id, group_id, job_id) = flaky_setup(&store, 0).await;
    // Its attempts, and the claims allowed beyond them to jobs whose workers stopped.
    let claims = FlakyPayload::MAX_ATTEMPTS + lector_store::LOST_WORKER_ALLOWANCE;
    for attempt in 1..=claims {
        // Claimed with a lease that has run out, as a killed worker leaves it.
        let dying = store.claim_job("dies", -1).await.unwrap().expect("claimed");
        assert_eq!((dying.job.id, dying.job.attempts), (job_id, attempt));
        assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
        let delay = lector_store::testing::end_retry_delay(&store, job_id).await;
        assert_eq!(delay.is_zero(), attempt == 1, "attempt {attempt}: {delay:?}");
    }
    assert!(!Runner::new().with(Flaky).run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(job_id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed, "{job:?}");
    let reason = format!(
        "The flaky job of group {group_id} failed after {claims} attempts: its worker stopped before it ended on every \
         attempt (killed, out of memory, or cut off from the database); try again."
    );
    assert_eq!(job.error.as_deref(), Some(reason.as_str()));
    assert_eq!(job.result, None, "the handler did not run");
    let group = store.group(&scope, project_id, group_id).await.unwrap();
    assert_eq!(group.status, "FAILED");
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(notes.len(), 1, "exactly one notification: {notes:?}");
    assert_eq!(notes[0].kind, NotificationType::Warning);
    assert!(store.claim_job("w", 30).await.unwrap().is_none());
    assert_eq!(store.reap_expired_leases().await.unwrap(), 0);
}

async fn a_worker_goes_on_after_a_panic(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, _, _, panicking) = flaky_setup(&store, i64::MAX).await;
    let good = store
        .enqueue(NewJob::of(&CountPayload { upto: 2 }).unwrap().owned_by(scope.user_id))
        .await
        .unwrap();
    struct Count;
    impl Handler for Count {
        type Payload = CountPayload;
        async fn run(&self, _: JobContext<'_>, payload: CountPayload) -> Result<Outcome, JobError> {
            Ok(Outcome {
                result: json!({"counted": payload.upto}),
                notice: None,
            })
        }
    }
    // One worker loop: it meets the panicking job first and must live on to run the other.
    let workers = Runner::new().with(Flaky).with(Count).spawn(store.clone(), 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    let (good, panicking) = loop {
        let good = store.job_by_id(good.id).await.unwrap().unwrap();
        let panicking = store.job_by_id(panicking).await.unwrap().unwrap();
        if good.state == JobState::Done && panicking.state == JobState::Failed {
            break (good, panicking);
        }
        assert!(Instant::now() < deadline, "{good:?} {panicking:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(good.result, Some(json!({"counted": 2})));
    assert_eq!(panicking.attempts, 2);
    assert!(
        workers.stop(Duration::from_secs(60)).await,
        "the worker loop ends when told, not by a panic"
    );
}

/// A handler that says this worker lacks what the job needs (a BASE model's files) has the job
/// handed back, uncounted and unannounced, as often as it is claimed, however long it waited
/// in the queue first; once the grace has passed since a worker first handed it back, and no
/// worker of another process runs a job of its kind, it fails with the handler's reason and one
/// notification.
async fn a_job_this_worker_cannot_run_waits_then_fails_once(backend: Backend) {
    struct Lacking;
    impl Handler for Lacking {
        type Payload = CountPayload;
        async fn run(&self, _: JobContext<'_>, _: CountPayload) -> Result<Outcome, JobError> {
            Err(JobError::elsewhere("the encoder is not installed on this worker"))
        }
    }
    let Some((store, _db, user)) = store(backend).await else {
        return;
    };
    let runner = Runner::new().with(Lacking);
    let queued = store.enqueue(job(user, 3)).await.unwrap();
    // It waited its turn in a busy queue for longer than the grace: that wait is not a wait
    // for a worker that can run it, and the first worker that cannot hands it back.
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    for _ in 0..5 {
        assert!(runner.run_one(&store, "w").await.unwrap());
        let job = store.job_by_id(queued.id).await.unwrap().unwrap();
        assert_eq!((job.state, job.attempts), (JobState::Queued, 0), "{job:?}");
        assert!(
            !runner.run_one(&store, "w").await.unwrap(),
            "it waits before it is claimed again"
        );
        lector_store::testing::end_retry_delay(&store, queued.id).await;
    }
    assert_eq!(notifications(&store, user).await, 0);
    // Past the grace, while a worker of another process runs a job of the kind (one that may
    // be able to run this one, busy), it is handed back again, not failed.
    lector_store::testing::put_off_queued_jobs(&store, 600).await;
    let other = store.enqueue(job(user, 4)).await.unwrap();
    let busy = store
        .claim_job_of("elsewhere/7/9/0", 60, &[CountPayload::KIND])
        .await
        .unwrap();
    let busy = busy.expect("the other job");
    assert_eq!(busy.job.id, other.id);
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    assert!(runner.run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(queued.id).await.unwrap().unwrap();
    assert_eq!((job.state, job.attempts), (JobState::Queued, 0), "{job:?}");
    assert!(store.finish_job(&busy, serde_json::json!({}), None).await.unwrap());
    // Once none does, the next worker that cannot run it fails it.
    lector_store::testing::end_retry_delay(&store, queued.id).await;
    assert!(runner.run_one(&store, "w").await.unwrap());
    let job = store.job_by_id(queued.id).await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    // The minutes it waited since it was first handed back, as the test aged it.
    assert_eq!(
        job.error.as_deref(),
        Some(
            "Counting to 3 failed after 1 attempt: it waited 62 minutes for a worker that could run it: the \
             encoder is not installed on this worker; count again."
        )
    );
    assert_eq!(notifications(&store, user).await, 1);
    assert!(!runner.run_one(&store, "w").await.unwrap());
}

/// A job whose kind this runner cannot handle fails for good once it has waited an hour for
/// one that can: a clone's project turns FAILED and its owner hears why, once.
async fn a_clone_without_a_handler_fails_its_project(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, workspace, project) = owner_with_project(&store, "Original", ProjectType::Class).await;
    let (copy, job_id) = store.start_clone(&scope, project.id, &workspace, None).await.unwrap();
    assert_eq!(copy.status, "CLONING");
    let runner = Runner::new().with(Flaky);
    assert!(
        !runner.run_one(&store, "w").await.unwrap(),
        "the copy waits for a worker that can make it"
    );
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    assert!(
        runner.run_one(&store, "w").await.unwrap(),
        "an hour after it was queued a worker looks at it, and hands it back"
    );
    lector_store::testing::age_queued_jobs(&store, lector_store::UNHANDLED_JOB_GRACE_SECS + 120).await;
    let job = run_until_ended(&store, &runner, job_id).await;
    assert_eq!(job.state, JobState::Failed);
    let reason = format!(
        "The copy of project {} into project {} failed after 1 attempt: this installation has no handler for \
         jobs of kind clone_project; delete the incomplete copy and clone the project again.",
        project.id, copy.id
    );
    assert_eq!(job.error.as_deref(), Some(reason.as_str()));
    let (copy, _) = store
        .project_access(&scope, copy.id, lector_core::Action::Read)
        .await
        .unwrap();
    assert_eq!(copy.status, "FAILED");
    let notes = store.notifications(&scope, scope.user_id, 0, 100).await.unwrap();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(
        (notes[0].title.as_str(), notes[0].text.as_str()),
        ("Copy failed", reason.as_str())
    );
}

/// A clone job that runs again after committing its copies (a worker killed before it could
/// record the job done) copies nothing twice.
async fn a_clone_run_twice_copies_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, workspace, project) = common::absa_project_with_class(&store, "Original", "FOOD").await;
    let document = |text: &str| prepare_document(text, json!({}), Language::En, true);
    store
        .create_group(
            &scope,
            project.id,
            "Batch",
            vec![document("One. Two."), document("Three.")],
        )
        .await
        .unwrap();
    let tag = NewTag {
        class: Some("FOOD".into()),
        label: Some("positive".into()),
        part: None,
    };
    let labeled = LabeledDocument {
        document: document("Good food."),
        tags: vec![vec![tag]],
        annotated: vec![true],
    };
    store
        .create_session(
            &scope,
            project.id,
            NewSession {
                name: "S".into(),
                labeled: vec![labeled],
                ..Default::default()
            },
        )
        .await
        .unwrap();

    let (copy, _) = store.start_clone(&scope, project.id, &workspace, None).await.unwrap();
    let lease = store.claim_job("a", 30).await.unwrap().expect("the clone job");
    let first = store.fill_clone(&lease, project.id, copy.id).await.unwrap();
    let again = store.fill_clone(&lease, project.id, copy.id).await.unwrap();
    assert_eq!(first, again);
    let count = |project_id: i64| {
        let (store, scope) = (&store, &scope);
        async move {
            let (documents, _) = store
                .documents(scope, project_id, &Default::default(), 0, 100)
                .await
                .unwrap();
            let segments = store.segments_of(&documents).await.unwrap();
            let tags = store.tags_of(&segments, None).await.unwrap();
            let sessions = store.sessions(scope, project_id, &Default::default()).await.unwrap();
            let (groups, _) = store.groups(scope, project_id, 0, 1000).await.unwrap();
            (
                documents.len(),
                segments.len(),
                tags.len(),
                sessions.len(),
                groups.len(),
            )
        }
    };
    assert_eq!(count(copy.id).await, (3, 4, 1, 1, 2));
    assert_eq!(count(copy.id).await, count(project.id).await);
}

/// A count that waits: `upto` 0 waits for the stop and ends at it; any other count never ends
/// by itself.
struct Waits;

impl Handler for Waits {
    type Payload = CountPayload;
    async fn run(&self, job: JobContext<'_>, payload: CountPayload) -> Result<Outcome, JobError> {
        let JobContext { stopping, .. } = job;
        if payload.upto == 0 {
            stopping.requested_now().await;
            return Err(JobError::stopped());
        }
        std::future::pending().await
    }
}

/// Waits (a minute at most) until workers have taken each of these jobs.
async fn until_running(store: &Store, ids: &[i64]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for id in ids {
        while store.job_by_id(*id).await.unwrap().unwrap().state != JobState::Running {
            assert!(Instant::now() < deadline, "the workers did not take job {id}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Stopping workers: a handler that looks at its `Stopping` ends at its checkpoint, one that
/// does not is cut off after the grace; both jobs go back to the queue without a used attempt.
async fn stopped_workers_hand_their_jobs_back(backend: Backend) {
    let Some((store, _database, user_id)) = store(backend).await else {
        return;
    };
    let queue = |upto| NewJob::of(&CountPayload { upto }).unwrap().owned_by(user_id);
    let checkpointed = store.enqueue(queue(0)).await.unwrap().id;
    let stuck = store.enqueue(queue(1)).await.unwrap().id;
    let workers = Runner::new().with(Waits).spawn(store.clone(), 2);
    until_running(&store, &[checkpointed, stuck]).await;
    assert!(
        !workers.stop(Duration::from_secs(1)).await,
        "the stuck job outlasted the grace"
    );
    for id in [checkpointed, stuck] {
        let job = store.job_by_id(id).await.unwrap().unwrap();
        assert_eq!((job.state, job.attempts), (JobState::Queued, 0), "{job:?}");
    }
    assert_eq!(notifications(&store, user_id).await, 0);
}

/// A test mail: a job of the mail's kind that sends nothing.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct QuietMail {
    to: String,
}

impl JobPayload for QuietMail {
    const KIND: &'static str = lector_store::MAIL_JOB;
    const MAX_ATTEMPTS: i64 = 1;

    fn failure(&self) -> Failure {
        Failure::of(None, "Mail not sent", format!("A mail to {}", self.to), "send it again")
    }
}

/// A mail is sent while the runner's every loop runs a long job: the runner keeps a loop for
/// mails and webhook posts. Before, a password-reset mail waited behind the trainings running.
async fn a_mail_is_sent_while_every_worker_is_busy(backend: Backend) {
    let Some((store, _database, user_id)) = store(backend).await else {
        return;
    };
    struct Sends;
    impl Handler for Sends {
        type Payload = QuietMail;
        async fn run(&self, _: JobContext<'_>, mail: QuietMail) -> Result<Outcome, JobError> {
            Ok(Outcome {
                result: json!({"sent": mail.to}),
                notice: None,
            })
        }
    }
    // Runs until the workers stop.
    let long = NewJob::of(&CountPayload { upto: 0 }).unwrap().owned_by(user_id);
    let long = store.enqueue(long).await.unwrap().id;
    let workers = Runner::new().with(Waits).with(Sends).spawn(store.clone(), 1);
    until_running(&store, &[long]).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mail = NewJob::of(&QuietMail {
        to: "ada@example.org".into(),
    })
    .unwrap()
    .owned_by(user_id);
    let mail = store.enqueue(mail).await.unwrap().id;
    let sent = loop {
        let sent = store.job_by_id(mail).await.unwrap().unwrap();
        if sent.state == JobState::Done {
            break sent;
        }
        assert!(
            Instant::now() < deadline,
            "the mail waited behind the long job: {sent:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(sent.result, Some(json!({"sent": "ada@example.org"})));
    assert_eq!(store.job_by_id(long).await.unwrap().unwrap().state, JobState::Running);
    assert!(
        workers.stop(Duration::from_secs(60)).await,
        "the long job ends at the stop"
    );
    let long = store.job_by_id(long).await.unwrap().unwrap();
    assert_eq!((long.state, long.attempts), (JobState::Queued, 0), "handed back");
}

on_both_backends!(
    a_mail_is_sent_while_every_worker_is_busy,
    a_taken_over_lease_can_no_longer_commit,
    failures_retry_then_fail_with_one_notification,
    the_runner_runs_handlers_and_records_outcomes,
    a_clone_run_twice_copies_once,
    a_panic_is_a_failed_attempt_and_the_retry_succeeds,
    a_job_that_always_panics_fails_with_its_trace,
    a_worker_goes_on_after_a_panic,
    a_job_whose_worker_keeps_dying_fails_once_its_attempts_are_used,
    a_clone_without_a_handler_fails_its_project,
    a_job_this_worker_cannot_run_waits_then_fails_once,
    stopped_workers_hand_their_jobs_back
);
