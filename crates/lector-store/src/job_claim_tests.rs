//! The job queue's claims (`job_claims.rs`): which job a worker takes next, on both backends,
//! the loop kept for mails and webhook posts and its index, and hand-backs.

use crate::jobs::{Job, JobState, Lease};
use lector_core::time::Timestamp;

/// Generates a test on SQLite and one on PostgreSQL for each `async fn NAME(backend: Backend)`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite { $(
            #[tokio::test]
            async fn $name() { super::$name(crate::Backend::Sqlite).await }
        )* }
        mod postgres { $(
            #[tokio::test]
            async fn $name() { super::$name(crate::Backend::Postgres).await }
        )* }
    };
}

/// A lease on a job that a worker first could not run `seconds` ago, queued an hour before.
fn unrunnable_for(seconds: i64) -> Lease {
    let since = Timestamp::now().plus_seconds(-seconds);
    let created = since.plus_seconds(-3600);
    let job = Job {
        id: 1,
        kind: "train_model".into(),
        payload: serde_json::json!({}),
        state: JobState::Running,
        workspace_id: None,
        project_id: None,
        user_id: None,
        attempts: 1,
        max_attempts: 3,
        progress: 0.0,
        result: None,
        error: None,
        created,
        updated: created,
        finished: None,
    };
    Lease {
        job,
        owner: "test".into(),
        token: 1,
        unrunnable_since: Some(since),
    }
}

/// A mail queued just behind a training (both of no workspace, as a password-reset mail is)
/// is taken first; then the training, then a later import (oldest first). Before, the
/// training went first, and a queue of them held every mail. (The loop kept for mails is
/// `lector-jobs`' `queue::a_mail_is_sent_while_every_worker_is_busy`.)
async fn mails_go_before_long_jobs(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    for kind in [crate::TRAINING_JOB, crate::MAIL_JOB, crate::IMPORT_JOB] {
        sqlx::query(
            "INSERT INTO jobs (kind, payload, state, max_attempts, run_after, created, updated) \
             VALUES ($1, '{}', 'QUEUED', 1, 0, 0, 0)",
        )
        .bind(kind)
        .execute(&store.pool)
        .await
        .expect("a queued job");
    }
    let mut taken = Vec::new();
    while let Some(lease) = store.claim_job("worker", 60).await.expect("a claim") {
        taken.push(lease.job.kind);
    }
    assert_eq!(taken, [crate::MAIL_JOB, crate::TRAINING_JOB, crate::IMPORT_JOB]);
}

/// The index of the short jobs' queue names their kinds as the claim writes them: otherwise
/// SQLite cannot use it (`INDEXED BY` then fails every claim) and PostgreSQL does not.
#[test]
fn the_short_queue_index_names_the_short_kinds() {
    let kinds = format!(
        "kind IN ({})",
        crate::job_claims::quoted(crate::job_claims::SHORT_JOB_KINDS.into_iter())
    );
    for migration in [
        include_str!("../migrations/sqlite/0032_short_jobs_queue.sql"),
        include_str!("../migrations/postgres/0032_short_jobs_queue.sql"),
    ] {
        assert!(migration.contains(&kinds), "{migration}");
    }
}

/// A job handed back by a stopping worker (or a test) keeps its place in the queue: it is
/// claimed again before the jobs queued after it. Before, the hand-back made it runnable
/// "now", behind every job queued while it ran.
async fn a_job_handed_back_keeps_its_place(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    let first = queue_waited(&store, crate::ANALYSIS_JOB, None, 60).await;
    let lease = store.claim_job("worker", 60).await.unwrap().expect("the analysis");
    assert_eq!(lease.job.id, first);
    let later = queue(&store, crate::IMPORT_JOB, None).await;
    assert!(store.hand_back_job(&lease, 0).await.unwrap());
    // Its place kept, its wait (`/metrics`) starts at the hand-back, not a minute ago: its
    // run was no wait.
    let statistics = store.job_statistics().await.unwrap();
    let waited = statistics
        .oldest_queued_secs
        .iter()
        .find(|(kind, _)| kind == crate::ANALYSIS_JOB);
    assert!(waited.is_some_and(|(_, secs)| *secs < 30.0), "{waited:?}");
    let again = store.claim_job("worker", 60).await.unwrap().expect("a job");
    assert_eq!(again.job.id, first, "handed back, it goes before {later}");
}

/// On the other loops a mail of a workspace with a job running has no head start: it goes
/// after an import of an idle workspace queued ten minutes after it. A job no worker could
/// run counts from when the first could not, not from its last hand-back: once its delay
/// is over, it goes before an import queued after that first hand-back.
async fn mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    let (user, scope) = crate::testing::owner(&store).await;
    let busy = user.personal_workspace_id.expect("a workspace");
    let (idle, _) = crate::testing::another_workspace(&store, &scope, "Idle").await;
    let claim = || async { store.claim_job("worker", 60).await.unwrap().map(|lease| lease.job.id) };
    let running = queue_waited(&store, crate::TRAINING_JOB, Some(busy), 3600).await;
    assert_eq!(claim().await, Some(running));
    let mail = queue_waited(&store, crate::MAIL_JOB, Some(busy), 20 * 60).await;
    let import = queue_waited(&store, crate::IMPORT_JOB, Some(idle.id), 10 * 60).await;
    assert_eq!(claim().await, Some(import));
    assert_eq!(claim().await, Some(mail));

    let unrunnable = queue_waited(&store, crate::ANALYSIS_JOB, None, 60).await;
    let lease = store.claim_job("worker", 60).await.unwrap().expect("the analysis");
    assert_eq!(lease.job.id, unrunnable);
    assert!(store.hand_back_unrunnable(&lease).await.unwrap());
    let later = queue(&store, crate::IMPORT_JOB, None).await;
    // Its delay over, a moment after the import was queued.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    sqlx::query("UPDATE jobs SET run_after = $1 WHERE id = $2")
        .bind(Timestamp::now().micros())
        .bind(unrunnable)
        .execute(&store.pool)
        .await
        .unwrap();
    assert_eq!(claim().await, Some(unrunnable), "before {later}");
    assert_eq!(claim().await, Some(later));
}

/// A store on a fresh database of `backend` (none where that backend is not at hand); the
/// database lives as long as the second value.
async fn store(backend: crate::Backend) -> Option<(crate::Store, crate::testing::TestDatabase)> {
    let database = crate::testing::TestDatabase::create(backend).await?;
    let store = crate::Store::open(&database.url, 2).await.expect("store");
    Some((store, database))
}

/// Queues a job of `kind` in `workspace` (none: a job of no workspace), runnable since
/// `waited` seconds.
async fn queue_waited(store: &crate::Store, kind: &str, workspace: Option<i64>, waited: i64) -> i64 {
    let since = Timestamp::now().plus_seconds(-waited).micros();
    sqlx::query_scalar(
        "INSERT INTO jobs (kind, payload, state, workspace_id, max_attempts, run_after, created, updated) \
         VALUES ($1, '{}', 'QUEUED', $2, 1, $3, $3, $3) RETURNING id",
    )
    .bind(kind)
    .bind(workspace)
    .bind(since)
    .fetch_one(&store.pool)
    .await
    .expect("a queued job")
}

/// Queues a job of `kind` in `workspace`, runnable now.
async fn queue(store: &crate::Store, kind: &str, workspace: Option<i64>) -> i64 {
    queue_waited(store, kind, workspace, 0).await
}

/// A workspace that queued many jobs first gets one worker while another workspace has
/// jobs waiting: the next claim takes the idle workspace's job, mails of a workspace with
/// jobs running go after it, and the busy workspace's other jobs come last, unless they
/// have waited half an hour per job it runs. Before, jobs were taken oldest first, and two
/// hundred imports held every worker for hours.
async fn workers_are_shared_between_workspaces(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    let (user, scope) = crate::testing::owner(&store).await;
    let busy = user.personal_workspace_id.expect("a workspace");
    let (other, scope) = crate::testing::another_workspace(&store, &scope, "Other").await;
    let (idle, _) = crate::testing::another_workspace(&store, &scope, "Idle").await;
    let mut imports = Vec::new();
    for _ in 0..3 {
        imports.push(queue(&store, crate::IMPORT_JOB, Some(busy)).await);
    }
    let invitation = queue(&store, crate::MAIL_JOB, Some(busy)).await;
    let training = queue(&store, crate::TRAINING_JOB, Some(other.id)).await;
    let reset = queue(&store, crate::PASSWORD_RESET_JOB, None).await;
    let claim = || async { store.claim_job("worker", 60).await.unwrap().map(|lease| lease.job.id) };
    let mut taken = Vec::new();
    while let Some(id) = claim().await {
        taken.push(id);
    }
    // With nothing running, the mails first (the busy workspace's invitation, then the reset
    // of no workspace); then, the busy workspace running its invitation, the other's
    // training before the busy one's older imports.
    let expected = [invitation, reset, training, imports[0], imports[1], imports[2]];
    assert_eq!(taken, expected);

    // Among short jobs only, the imports running: the mails in the order they were queued
    // (on this loop only running mails and posts count against a workspace, not its
    // imports), and never the training, though queued long before.
    for id in [invitation, reset, training] {
        sqlx::query("UPDATE jobs SET state = 'QUEUED', created = 0 WHERE id = $1")
            .bind(id)
            .execute(&store.pool)
            .await
            .unwrap();
    }
    let short = || async {
        let lease = store
            .claim_short_job("short", 60, &crate::job_claims::SHORT_JOB_KINDS)
            .await;
        lease.unwrap().map(|lease| lease.job.id)
    };
    assert_eq!(
        short().await,
        Some(invitation),
        "its workspace's imports do not count here"
    );
    assert_eq!(short().await, Some(reset));
    assert_eq!(
        short().await,
        None,
        "the training is no short job, however long it waited"
    );
    assert!(store.claim_short_job("short", 60, &[]).await.unwrap().is_none());
    let kinds = [crate::TRAINING_JOB, crate::IMPORT_JOB];
    assert!(store.claim_short_job("short", 60, &kinds).await.unwrap().is_none());
    assert_eq!(claim().await, Some(training));

    // The busy workspace runs four jobs: its import that waited two hours and a minute goes
    // before a new one of the other (one running), one that waited forty minutes after a
    // new one of a workspace with nothing running.
    let patience = crate::job_claims::FAIR_SHARE_PATIENCE_SECS;
    let long_waiting = queue_waited(&store, crate::IMPORT_JOB, Some(busy), 4 * patience + 60).await;
    let of_other = queue(&store, crate::IMPORT_JOB, Some(other.id)).await;
    assert_eq!(claim().await, Some(long_waiting));
    assert_eq!(claim().await, Some(of_other));
    let waiting = queue_waited(&store, crate::IMPORT_JOB, Some(busy), 40 * 60).await;
    let of_idle = queue(&store, crate::IMPORT_JOB, Some(idle.id)).await;
    assert_eq!(claim().await, Some(of_idle));
    assert_eq!(claim().await, Some(waiting));
}

/// The loop for mails and webhook posts reads the index of their queue, not the queue of
/// long jobs: with 20,000 imports queued and no mail, the plan of its claim goes through
/// `jobs_short_queue` (before, every poll walked the whole runnable queue), also for a
/// runner that handles only some of those kinds.
async fn the_short_lane_reads_the_index_of_its_queue(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000) \
         INSERT INTO jobs (kind, payload, state, max_attempts, run_after, created, updated) \
         SELECT $1, '{}', 'QUEUED', 1, 0, 0, 0 FROM n",
    )
    .bind(crate::IMPORT_JOB)
    .execute(&store.pool)
    .await
    .expect("queued imports");
    sqlx::query("ANALYZE jobs")
        .execute(&store.pool)
        .await
        .expect("analysed");
    let now = Timestamp::now();
    let explain = match backend {
        crate::Backend::Postgres => "EXPLAIN",
        crate::Backend::Sqlite => "EXPLAIN QUERY PLAN",
    };
    for kinds in [&crate::job_claims::SHORT_JOB_KINDS[..], &[crate::MAIL_JOB]] {
        let (sql, values) = store.claim_sql(crate::job_claims::Among::Short(kinds), now);
        let explained = format!("{explain} {sql}");
        let query = sqlx::query(&explained)
            .bind("worker")
            .bind(now.micros())
            .bind(now.micros())
            .bind(JobState::Running.as_str());
        let rows = crate::Param::bind_all(query, values)
            .fetch_all(&store.pool)
            .await
            .expect("the plan");
        let plan: Vec<String> = rows
            .iter()
            .map(|row| match backend {
                crate::Backend::Postgres => sqlx::Row::get(row, 0),
                crate::Backend::Sqlite => sqlx::Row::get(row, "detail"),
            })
            .collect();
        assert!(
            plan.iter().any(|line| line.contains("jobs_short_queue")),
            "{kinds:?}: {plan:#?}"
        );
        let claimed = store.claim_short_job("worker", 60, kinds).await.unwrap();
        assert!(claimed.is_none(), "no import is a short job");
    }
}

/// The wait for a worker that can run a job starts when one first hands it back, is kept
/// across such hand-backs, and starts anew once the job has run: handed back by a worker
/// that stopped, or taken back by the reaper from one that died. Before, only a failed
/// attempt cleared it, so a job that had run for an hour elsewhere failed at once.
async fn the_wait_for_a_worker_starts_anew_after_a_run(backend: crate::Backend) {
    let Some((store, _database)) = store(backend).await else {
        return;
    };
    sqlx::query(
        "INSERT INTO jobs (kind, payload, state, max_attempts, run_after, created, updated) \
         VALUES ('train_model', '{}', 'QUEUED', 3, 0, 0, 0)",
    )
    .execute(&store.pool)
    .await
    .expect("a queued job");
    let since = |lease: &Lease| lease.unrunnable_since;
    let claim = |lease_secs| store.claim_job("worker", lease_secs);
    let first = claim(60).await.unwrap().expect("the job");
    assert_eq!(since(&first), None);
    assert!(store.hand_back_unrunnable(&first).await.unwrap());
    crate::testing::end_retry_delay(&store, first.job.id).await;
    let second = claim(60).await.unwrap().expect("the job");
    let refused = since(&second).expect("a worker could not run it");
    assert!(store.hand_back_unrunnable(&second).await.unwrap());
    crate::testing::end_retry_delay(&store, first.job.id).await;
    let third = claim(60).await.unwrap().expect("the job");
    assert_eq!(since(&third), Some(refused), "kept from the first hand-back");
    // It runs, and its worker stops: handed back as it is.
    assert!(store.hand_back_job(&third, 0).await.unwrap());
    let fourth = claim(-1).await.unwrap().expect("the job");
    assert_eq!(since(&fourth), None, "it ran");
    assert!(store.hand_back_unrunnable(&fourth).await.unwrap());
    crate::testing::end_retry_delay(&store, first.job.id).await;
    let fifth = claim(-1).await.unwrap().expect("the job");
    assert!(since(&fifth).is_some());
    // It runs, and its worker dies: the reaper takes it back.
    assert_eq!(store.reap_expired_leases().await.unwrap(), 1);
    let sixth = claim(60).await.unwrap().expect("the job");
    assert_eq!(since(&sixth), None, "it ran");
}

#[test]
fn a_job_no_worker_can_run_is_looked_at_less_and_less_often() {
    assert_eq!(unrunnable_for(0).next_look_after_secs(), 10);
    assert_eq!(unrunnable_for(300).next_look_after_secs(), 30);
    assert_eq!(unrunnable_for(3000).next_look_after_secs(), 120);
    let first_look = Lease {
        unrunnable_since: None,
        ..unrunnable_for(0)
    };
    assert_eq!(first_look.next_look_after_secs(), 10);
    assert!(
        !first_look.waited_for_a_worker(),
        "queued an hour ago, but no worker has refused it yet"
    );
    assert!(!unrunnable_for(3500).waited_for_a_worker());
    assert!(unrunnable_for(3700).waited_for_a_worker());
}

on_both_backends!(
    mails_go_before_long_jobs,
    a_job_handed_back_keeps_its_place,
    mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn,
    the_short_lane_reads_the_index_of_its_queue,
    workers_are_shared_between_workspaces,
    the_wait_for_a_worker_starts_anew_after_a_run,
);
