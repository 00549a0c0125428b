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
pub(crate) enum Among<'a> {
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
    pub(crate) fn claim_sql(&self, among: Among<'_>, now: Timestamp) -> (String, Vec<Param>) {
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
pub(crate) fn quoted<'a>(kinds: impl Iterator<Item = &'a str>) -> String {
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
