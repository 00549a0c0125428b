//! The job queue on both backends: leases, heartbeats, fencing, the reaper, retries, and
//! exactly one notification per finished job.

use lector_core::{NotificationType, ProjectType, Scope};
use lector_jobs::prepare_document;
use lector_jobs::{Handler, HandlerFuture, JobError, Outcome, Runner};
use lector_store::testing::{TestDatabase, owner_with_project};
use lector_store::{
    Backend, ClassFields, JobState, LabeledDocument, Lease, NewJob, NewSession, NewTag, NewUser, Store,
};
use lector_text::Language;
use serde_json::json;

async fn store(backend: Backend) -> Option<(Store, TestDatabase, i64)> {
    let database = TestDatabase::create(backend).await?;
    let store = Store::open(&database.url, 4).await.expect("store");
    let user = store
        .create_user(NewUser {
            email: "ada@example.org".into(),
            first_name: String::new(),
            last_name: String::new(),
            password_hash: None,
            is_superuser: false,
        })
        .await
        .expect("user");
    Some((store, database, user.id))
}

fn job(user_id: i64, max_attempts: i64) -> NewJob {
    NewJob {
        kind: "count".into(),
        payload: json!({"upto": 3}),
        input: None,
        workspace_id: None,
        project_id: None,
        user_id: Some(user_id),
        max_attempts,
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
    assert!(
        store
            .fail_job(&first, "database hiccup", true, notice(&first, "failed"))
            .await
            .unwrap()
    );
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
    };
    // The stale lease (token of the first claim) cannot fail the job again.
    assert!(!store.fail_job(&second, "late", false, None).await.unwrap());
}

async fn the_runner_runs_handlers_and_records_outcomes(backend: Backend) {
    struct Count;
    impl Handler for Count {
        fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease) -> HandlerFuture<'a> {
            Box::pin(async move {
                let upto = lease.job.payload["upto"]
                    .as_i64()
                    .ok_or_else(|| JobError::fatal("upto is missing", None))?;
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
            })
        }
    }
    let Some((store, _db, user)) = store(backend).await else {
        return;
    };
    let runner = Runner::new().with("count", Count);
    let good = store.enqueue(job(user, 3)).await.unwrap();
    let bad = store
        .enqueue(NewJob {
            payload: json!({}),
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
    while runner.run_one(&store, "w").await.unwrap() {}

    let good = store.job_by_id(good.id).await.unwrap().unwrap();
    assert_eq!((good.state, good.result), (JobState::Done, Some(json!({"counted": 3}))));
    let bad = store.job_by_id(bad.id).await.unwrap().unwrap();
    assert_eq!(
        (bad.state, bad.error.as_deref()),
        (JobState::Failed, Some("upto is missing"))
    );
    assert_eq!(
        store.job_by_id(unknown.id).await.unwrap().unwrap().state,
        JobState::Failed
    );
    assert_eq!(notifications(&store, user).await, 1);
}

macro_rules! on_both_backends {
    ($($name:ident),*) => {
        mod sqlite { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(lector_store::Backend::Sqlite).await }
        )* }
        mod postgres { $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(lector_store::Backend::Postgres).await }
        )* }
    };
}

/// A clone job that runs again after committing its copies (a worker killed before it could
/// record the job done) copies nothing twice.
async fn a_clone_run_twice_copies_once(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else {
        return;
    };
    let store = Store::open(&database.url, 4).await.expect("store");
    let (scope, workspace, project) = owner_with_project(&store, "Original", ProjectType::Absa).await;
    store
        .add_classes(
            &scope,
            project.id,
            vec![ClassFields {
                name: "FOOD".into(),
                ..Default::default()
            }],
        )
        .await
        .unwrap();
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
            let groups = store.groups(scope, project_id).await.unwrap();
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

on_both_backends!(
    a_taken_over_lease_can_no_longer_commit,
    failures_retry_then_fail_with_one_notification,
    the_runner_runs_handlers_and_records_outcomes,
    a_clone_run_twice_copies_once
);
