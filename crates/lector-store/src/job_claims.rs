//! Which job a worker takes next, and handing one back.
//!
//! A worker claims only the kinds of job it has handlers for, so that in a rolling upgrade a
//! job of a kind a newer Lector added waits for a worker of that version instead of failing on
//! an older one; a job whose payload a newer Lector wrote is handed back untouched for the same
//! reason ([`Store::hand_back_unrunnable`]), as is one whose worker lacks what it needs (a
//! BASE model's files). Neither waits for ever: a job of a kind no worker here knows is looked
//! at by any worker once it was queued [`UNHANDLED_JOB_GRACE_SECS`] ago, and a job handed back
//! fails with its trace (its resource FAILED, one notification) once that long has passed since
//! a worker first could not run it, as a misconfigured installation must hear of it. Its wait
//! for its turn in a busy queue does not count against it.
//!
//! Workers share themselves out between workspaces: jobs are taken in the order they became
//! runnable, but each job a workspace has running puts its waiting jobs
//! [`FAIR_SHARE_PATIENCE_SECS`] later in that order (a job of no workspace, such as a
//! password-reset mail, is an idle workspace's). A workspace that queued two hundred imports,
//! or whose webhook receiver hangs, lets a job of an idle workspace go before any of its own
//! that waited less than half an hour per job it runs; and no job waits without end, as many
//! workspaces taking turns would otherwise keep a busy one's. A mail or webhook post
//! ([`SHORT_JOB_KINDS`]) of a workspace with nothing running counts as queued that much
//! earlier. A runner also keeps one loop for those alone ([`Store::claim_short_job`]), where
//! only a workspace's running mails and posts count against it, so that trainings on every
//! other loop never hold up a password-reset mail. A job handed back at once keeps its place,
//! and one no worker could run counts from when the first could not.

use crate::jobs::{JOB_COLUMNS, JobState, Lease, update_leased};
use crate::records::FromAnyRow;
use crate::{Backend, Param, Store, db, numbered};
use lector_core::Result;
use lector_core::time::Timestamp;
use sqlx::Row;

/// Claims a job may have beyond its `max_attempts` when its workers stopped under it (killed by
/// a deploy or an operator, a node lost): that is rarely the job's fault, so such a job runs
/// again; but one that stops every worker it runs on (out of memory) still ends, after
/// `max_attempts` + this many claims.
pub const LOST_WORKER_ALLOWANCE: i64 = 5;

/// How long a job that no worker can run (its kind unknown to every worker, its payload written
/// by a newer Lector, what it needs installed nowhere) waits for one that can, from when a
/// worker first handed it back (a job of an unknown kind is first looked at this long after it
/// was queued): longer than a rolling upgrade takes. After that it fails for good.
pub const UNHANDLED_JOB_GRACE_SECS: i64 = 3600;

/// How long such a job waits at the most while workers of other processes run jobs of its kind
/// ([`Store::kind_runs_elsewhere`]): one may be the worker it waits for, busy with a queue of
/// long trainings, but they may as well be jobs of other models, or jobs held back for the same
/// want, so the wait ends some time.
pub const BUSY_WORKER_GRACE_SECS: i64 = 6 * 3600;

/// The kinds of job that take a moment (a mail, a webhook's post): a loop of every runner takes
/// only these, and the others take those of idle workspaces half an hour ahead, so that a
/// queue of trainings and analyses never holds up a password-reset mail or a review's event.
/// Migration 0032's index (`jobs_short_queue`) names them as the claim writes them.
pub const SHORT_JOB_KINDS: [&str; 3] = [crate::MAIL_JOB, crate::PASSWORD_RESET_JOB, crate::WEBHOOK_JOB];

/// How much later a job counts in the claim's order (from when it became runnable, or when a
/// worker first could not run it) per job its workspace has running; and how much earlier a
/// mail or webhook post of a workspace with nothing running counts.
pub const FAIR_SHARE_PATIENCE_SECS: i64 = 30 * 60;

/// Which jobs a claim may take.
#[derive(Debug, Clone, Copy)]
enum Among<'a> {
    /// Any job (tests and tools).
    Any,
    /// Jobs of these kinds, or of any kind once queued [`UNHANDLED_JOB_GRACE_SECS`] ago.
    Handled(&'a [&'a str]),
    /// Jobs of the [`SHORT_JOB_KINDS`] among these only.
    Short(&'a [&'a str]),
}

/// Why a job whose every attempt was taken back from its worker fails.
const ATTEMPTS_LOST: &str = "its worker stopped before it ended on every attempt (killed, out of memory, \
     or cut off from the database)";

impl Store {
    /// Claims the next runnable job of any kind (see the module's documentation for which),
    /// if any, for `lease_secs` (for tests and tools; workers use [`Store::claim_job_of`]).
    pub async fn claim_job(&self, owner: &str, lease_secs: i64) -> Result<Option<Lease>> {
        self.claim(owner, lease_secs, Among::Any).await
    }

    /// Claims the next runnable job (in the order of the module's documentation) of one of
    /// `kinds`, or of any kind once it has waited
    /// [`UNHANDLED_JOB_GRACE_SECS`], for `lease_secs`. A job whose attempts are all used (its
    /// workers died or were cut off on each, and the reaper put it back) is not handed out
    /// again: it fails for good here, through [`Store::fail_job`] (its resource FAILED, one
    /// notification), and the next job is claimed instead.
    pub async fn claim_job_of(&self, owner: &str, lease_secs: i64, kinds: &[&str]) -> Result<Option<Lease>> {
        self.claim(owner, lease_secs, Among::Handled(kinds)).await
    }

    /// As [`Store::claim_job_of`], but only a mail or webhook post ([`SHORT_JOB_KINDS`]) of one
    /// of `kinds`, however long a job of another kind has waited: for the loop a runner keeps
    /// for them, which polls for them while the other loops run long jobs (an index holds their
    /// queue alone, so a poll does not read a queue of thousands of imports).
    pub async fn claim_short_job(&self, owner: &str, lease_secs: i64, kinds: &[&str]) -> Result<Option<Lease>> {
        if !SHORT_JOB_KINDS.iter().any(|kind| kinds.contains(kind)) {
            return Ok(None);
        }
        self.claim(owner, lease_secs, Among::Short(kinds)).await
    }

    async fn claim(&self, owner: &str, lease_secs: i64, among: Among<'_>) -> Result<Option<Lease>> {
        loop {
            let Some(lease) = self.claim_next(owner, lease_secs, among).await? else {
                return Ok(None);
            };
            if lease.job.attempts <= lease.job.max_attempts + LOST_WORKER_ALLOWANCE {
                return Ok(Some(lease));
            }
            tracing::warn!(
                job.id = lease.job.id,
                job.kind = %lease.job.kind,
                "a job whose workers stopped on every attempt fails for good"
            );
            // This claim runs nothing: the attempts made are the claims before it.
            self.fail_attempt(&lease, ATTEMPTS_LOST, false, lease.job.attempts - 1)
                .await?;
        }
    }

    async fn claim_next(&self, owner: &str, lease_secs: i64, among: Among<'_>) -> Result<Option<Lease>> {
        let now = Timestamp::now();
        let (sql, values) = self.claim_sql(among, now);
        let query = sqlx::query(&sql)
            .bind(owner)
            .bind(self.lease_clock().plus_seconds(lease_secs).micros())
            .bind(now.micros())
            .bind(JobState::Running.as_str());
        let query = Param::bind_all(query, values);
        let Some(row) = query.fetch_optional(&self.pool).await.map_err(db)? else {
            return Ok(None);
        };
        let token: i64 = row.try_get("fencing_token").map_err(db)?;
        let unrunnable_since: Option<i64> = row.try_get("unrunnable_since").map_err(db)?;
        Ok(Some(Lease {
            job: crate::Job::decode(&row)?,
            owner: owner.to_owned(),
            token,
            unrunnable_since: unrunnable_since.map(Timestamp),
        }))
    }

    /// The claim's statement, to bind `$1` (the owner), `$2` (the lease's end), `$3` (now)
    /// and `$4` (RUNNING) to, then the values answered.
    fn claim_sql(&self, among: Among<'_>, now: Timestamp) -> (String, Vec<Param>) {
        let among_is_short = matches!(among, Among::Short(_));
        let patience = Param::Int(FAIR_SHARE_PATIENCE_SECS * 1_000_000);
        let (among, values) = match among {
            Among::Any => (String::new(), vec![patience]),
            Among::Handled([]) => (" AND j.created < $6".to_owned(), vec![patience, unhandled_since(now)]),
            Among::Handled(kinds) => {
                let names = kinds.iter().map(|k| Param::Text((*k).to_owned()));
                let sql = format!(" AND (j.created < $6 OR j.kind IN ({}))", numbered(7, kinds.len()));
                (sql, [patience, unhandled_since(now)].into_iter().chain(names).collect())
            }
            // Written out as the index of their queue names them (`jobs_short_queue`): the
            // planners use it only then (SQLite only when told to, below).
            Among::Short(kinds) => {
                let mut sql = format!(" AND j.kind IN ({})", quoted(SHORT_JOB_KINDS.into_iter()));
                if !SHORT_JOB_KINDS.iter().all(|kind| kinds.contains(kind)) {
                    let handled = SHORT_JOB_KINDS.iter().filter(|kind| kinds.contains(kind)).copied();
                    sql.push_str(&format!(" AND j.kind IN ({})", quoted(handled)));
                }
                (sql, vec![patience])
            }
        };
        let index = match (among_is_short, self.backend) {
            (true, Backend::Sqlite) => " INDEXED BY jobs_short_queue",
            _ => "",
        };
        let lock = match self.backend {
            Backend::Postgres => " FOR UPDATE OF j SKIP LOCKED",
            // SQLite has one writer at a time, so the sub-select and the update are atomic.
            Backend::Sqlite => "",
        };
        let (queued, short) = (JobState::Queued.as_str(), quoted(SHORT_JOB_KINDS.into_iter()));
        // The jobs running now, by workspace (for the short lane, its own kinds only: a
        // workspace's trainings do not hold up its mails there): each puts its workspace's
        // waiting jobs `$5` (the patience, in microseconds) later in the order, which starts
        // from when a job became runnable, or for one no worker could run, when the first
        // could not (the delays of its hand-backs do not put it behind the queue). A mail or
        // webhook post of a workspace with nothing running counts as that much earlier.
        let running_kinds = match among_is_short {
            true => format!(" AND kind IN ({short})"),
            false => String::new(),
        };
        let sql = format!(
            "UPDATE jobs SET state = $4, lease_owner = $1, lease_expires = $2, fencing_token = fencing_token + 1, \
             attempts = attempts + 1, updated = $3 WHERE id = (\
             SELECT j.id FROM jobs j{index} LEFT JOIN (SELECT workspace_id, COUNT(*) AS running FROM jobs \
             WHERE state = $4 AND workspace_id IS NOT NULL{running_kinds} GROUP BY workspace_id) busy \
             ON busy.workspace_id = j.workspace_id \
             WHERE j.state = '{queued}' AND j.run_after <= $3{among} \
             ORDER BY COALESCE(j.unrunnable_since, j.run_after) + COALESCE(busy.running, 0) * $5 \
             - CASE WHEN j.kind IN ({short}) AND busy.running IS NULL THEN $5 ELSE 0 END, \
             j.id LIMIT 1{lock}) \
             RETURNING {JOB_COLUMNS}, unrunnable_since"
        );
        (sql, values)
    }

    /// Puts a claimed job back on the queue as it was, to be claimed again in `after_secs`
    /// (with 0, at once and in its place in the queue: its `run_after` is kept):
    /// the claim does not count as an attempt. For a worker that is stopping: the job ran, so a
    /// wait for a worker that can run it starts anew. `false` when the lease is no longer
    /// current.
    pub async fn hand_back_job(&self, lease: &Lease, after_secs: i64) -> Result<bool> {
        self.hand_back(lease, after_secs, ", unrunnable_since = NULL").await
    }

    /// Puts a claimed job this worker cannot run (its kind unknown here, its payload a newer
    /// Lector's, what it needs not installed here) back on the queue as it was, for another
    /// worker, and records when the first worker could not: once that is
    /// [`UNHANDLED_JOB_GRACE_SECS`] ago ([`Lease::waited_for_a_worker`]), a worker fails it
    /// instead. It is looked at again after [`Lease::next_look_after_secs`]. `false` when the
    /// lease is no longer current.
    pub async fn hand_back_unrunnable(&self, lease: &Lease) -> Result<bool> {
        let since = ", unrunnable_since = COALESCE(unrunnable_since, $2)";
        self.hand_back(lease, lease.next_look_after_secs(), since).await
    }

    /// Whether a worker of another process runs a job of the lease's kind now. A job this
    /// worker cannot run is not failed for its wait while one does: that worker may be the one
    /// that can run it, busy (a training of an hour and a half on the only node with the
    /// encoder), and it takes the job once it is free.
    pub async fn kind_runs_elsewhere(&self, lease: &Lease) -> Result<bool> {
        // Owners are `host/pid/started/loop`: the loops of this process share all but the last.
        let process = lease
            .owner
            .rsplit_once('/')
            .map_or(lease.owner.as_str(), |(process, _)| process);
        let running: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE kind = $1 AND state = $2 AND id <> $3 AND lease_owner <> $4 \
             AND lease_owner NOT LIKE $5",
        )
        .bind(&lease.job.kind)
        .bind(JobState::Running.as_str())
        .bind(lease.job.id)
        .bind(&lease.owner)
        .bind(format!("{process}/%"))
        .fetch_one(&self.pool)
        .await
        .map_err(db)?;
        Ok(running > 0)
    }

    async fn hand_back(&self, lease: &Lease, after_secs: i64, also: &str) -> Result<bool> {
        let now = Timestamp::now();
        let mut values = vec![
            Param::Text(JobState::Queued.as_str().to_owned()),
            Param::Int(now.micros()),
        ];
        // Runnable at once, it keeps its place in the claim's order (its `run_after`, when it
        // first became runnable); a job that was put back long after it was claimed would
        // otherwise queue behind all that came meanwhile.
        let later = match after_secs {
            0 => "",
            _ => {
                values.push(Param::Int(now.plus_seconds(after_secs).micros()));
                ", run_after = $3"
            }
        };
        let set = format!(
            "state = $1, attempts = attempts - 1, lease_owner = NULL, lease_expires = NULL, \
             updated = $2{later}{also}"
        );
        update_leased(&self.pool, lease, &set, values).await
    }
}

/// `kinds` as an SQL list of strings: only for the kinds this crate names (never a caller's
/// text).
fn quoted<'a>(kinds: impl Iterator<Item = &'a str>) -> String {
    kinds.map(|kind| format!("'{kind}'")).collect::<Vec<_>>().join(", ")
}

/// Queued before this, a job of a kind no worker claims is looked at by any worker.
fn unhandled_since(now: Timestamp) -> Param {
    Param::Int(now.plus_seconds(-UNHANDLED_JOB_GRACE_SECS).micros())
}

impl Lease {
    /// How long, in seconds, a job this worker cannot run waits before any worker looks at it
    /// again: a tenth of the time it has waited since a worker first could not run it, from
    /// 10 s up to 2 minutes. A worker that has what the job needs still starts it soon, and a
    /// lone worker without it asks about forty times in the hour the job may wait, not every 10 s.
    pub fn next_look_after_secs(&self) -> i64 {
        let waited = self
            .unrunnable_since
            .map_or(0, |since| Timestamp::now().unix_seconds() - since.unix_seconds());
        (waited / 10).clamp(10, 120)
    }
}

#[cfg(test)]
mod tests {
    use crate::jobs::{Job, JobState, Lease};
    use lector_core::time::Timestamp;

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
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
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

    #[tokio::test]
    async fn mails_go_before_long_jobs_sqlite() {
        mails_go_before_long_jobs(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn mails_go_before_long_jobs_postgres() {
        mails_go_before_long_jobs(crate::Backend::Postgres).await;
    }

    /// The index of the short jobs' queue names their kinds as the claim writes them: otherwise
    /// SQLite cannot use it (`INDEXED BY` then fails every claim) and PostgreSQL does not.
    #[test]
    fn the_short_queue_index_names_the_short_kinds() {
        let kinds = format!("kind IN ({})", super::quoted(super::SHORT_JOB_KINDS.into_iter()));
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
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
        let first = queue_waited(&store, crate::ANALYSIS_JOB, None, 60).await;
        let lease = store.claim_job("worker", 60).await.unwrap().expect("the analysis");
        assert_eq!(lease.job.id, first);
        let later = queue(&store, crate::IMPORT_JOB, None).await;
        assert!(store.hand_back_job(&lease, 0).await.unwrap());
        let again = store.claim_job("worker", 60).await.unwrap().expect("a job");
        assert_eq!(again.job.id, first, "handed back, it goes before {later}");
    }

    #[tokio::test]
    async fn a_job_handed_back_keeps_its_place_sqlite() {
        a_job_handed_back_keeps_its_place(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn a_job_handed_back_keeps_its_place_postgres() {
        a_job_handed_back_keeps_its_place(crate::Backend::Postgres).await;
    }

    /// On the other loops a mail of a workspace with a job running has no head start: it goes
    /// after an import of an idle workspace queued ten minutes after it. A job no worker could
    /// run counts from when the first could not, not from its last hand-back: once its delay
    /// is over, it goes before an import queued after that first hand-back.
    async fn mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn(backend: crate::Backend) {
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
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

    #[tokio::test]
    async fn mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn_sqlite() {
        mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn_postgres() {
        mails_of_busy_workspaces_and_unrunnable_jobs_keep_their_turn(crate::Backend::Postgres).await;
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
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
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
            let lease = store.claim_short_job("short", 60, &super::SHORT_JOB_KINDS).await;
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
        let patience = super::FAIR_SHARE_PATIENCE_SECS;
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
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
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
        for kinds in [&super::SHORT_JOB_KINDS[..], &[crate::MAIL_JOB]] {
            let (sql, values) = store.claim_sql(super::Among::Short(kinds), now);
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

    #[tokio::test]
    async fn the_short_lane_reads_the_index_of_its_queue_sqlite() {
        the_short_lane_reads_the_index_of_its_queue(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn the_short_lane_reads_the_index_of_its_queue_postgres() {
        the_short_lane_reads_the_index_of_its_queue(crate::Backend::Postgres).await;
    }

    #[tokio::test]
    async fn workers_are_shared_between_workspaces_sqlite() {
        workers_are_shared_between_workspaces(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn workers_are_shared_between_workspaces_postgres() {
        workers_are_shared_between_workspaces(crate::Backend::Postgres).await;
    }

    /// The wait for a worker that can run a job starts when one first hands it back, is kept
    /// across such hand-backs, and starts anew once the job has run: handed back by a worker
    /// that stopped, or taken back by the reaper from one that died. Before, only a failed
    /// attempt cleared it, so a job that had run for an hour elsewhere failed at once.
    async fn the_wait_for_a_worker_starts_anew_after_a_run(backend: crate::Backend) {
        let Some(database) = crate::testing::TestDatabase::create(backend).await else {
            return;
        };
        let store = crate::Store::open(&database.url, 2).await.expect("store");
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

    #[tokio::test]
    async fn the_wait_for_a_worker_starts_anew_after_a_run_sqlite() {
        the_wait_for_a_worker_starts_anew_after_a_run(crate::Backend::Sqlite).await;
    }

    #[tokio::test]
    async fn the_wait_for_a_worker_starts_anew_after_a_run_postgres() {
        the_wait_for_a_worker_starts_anew_after_a_run(crate::Backend::Postgres).await;
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
}
