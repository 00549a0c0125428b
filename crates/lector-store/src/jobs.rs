//! The durable job queue (DESIGN.md section 5).
//!
//! A worker claims a queued job with a lease; each claim increments the job's fencing token.
//! While it works, the worker heartbeats the lease; it writes results only through functions
//! that check, inside the same transaction, that its token is still the job's token. A reaper
//! returns jobs whose lease expired to the queue, so killing any process loses nothing: the
//! job runs again and, its writes being idempotent, finishes once. A job's notification is
//! written in the same transaction as its terminal state: exactly one per job.
//!
//! ## Kinds of job and their payloads
//!
//! Each kind of job is one serde struct implementing [`JobPayload`] (the structs live in
//! `payloads.rs`): its `KIND` (the `jobs.kind` column), its `VERSION`, its attempt cap, and
//! [`JobPayload::failure`], what the job's terminal failure marks FAILED and tells its user.
//! The code that enqueues writes the struct with [`NewJob::of`]; the handler reads the same
//! struct back with [`Lease::payload`] (lector-jobs' runner does this, so a handler receives the
//! decoded struct and never parses JSON). Bulk input goes beside the payload
//! ([`NewJob::with_input`], read once with [`Store::job_input`]) and is deleted when the job
//! ends, so nothing it carries (documents, a mail's one-time token) outlives the job.
//!
//! ```ignore
//! #[derive(Serialize, Deserialize)]
//! pub struct TrainPayload { pub model_id: i64 }
//! impl JobPayload for TrainPayload {
//!     const KIND: &'static str = "train_model";
//!     const MAX_ATTEMPTS: i64 = 3;
//!     fn failure(&self) -> Failure {
//!         // A resource to mark FAILED is a `JobResource` variant (add one with its table).
//!         Failure::of(None, "Training failed", format!("Training model {}", self.model_id),
//!             "start the training again")
//!     }
//! }
//! let job = enqueue_in(&mut tx, NewJob::of(&TrainPayload { model_id })?.owned_by(user_id)).await?;
//! // lector-jobs: `impl Handler for Train { type Payload = TrainPayload; fn run(.., payload) }`,
//! // registered in `lector_jobs::standard_runner` with `.with(Train)`.
//! ```
//!
//! Mail is a kind like the others: [`Store::queue_mail`] enqueues a `MailPayload` with its body.
//!
//! The stored payload is the struct's fields plus `version` and `failure` (so those two names
//! are taken). The failure description is stored when the job is enqueued, so a job whose
//! payload can no longer be read, or whose kind has no handler, still fails with its trace.
//!
//! ## Terminal failure
//!
//! [`Store::fail_job`] is the one path for every error (fatal, transient with attempts
//! exhausted, a panic, an unreadable payload, a missing handler): in one transaction with the
//! job's FAILED state it marks the job's resource FAILED, writes the reason a person can act on
//! ("The import into group 7 failed after 5 attempts: ...; upload the documents again") as the
//! job's `error`, and writes exactly one WARNING notification to the job's user.

use crate::job_failures::mark_failed;
pub use crate::job_failures::{Failure, JobResource};
use crate::records::{FromAnyRow, fetch_record, fetch_records, from_row};
use crate::{Param, Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ErrorCode, NotificationType, Result, Scope};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::{Any, Transaction};

/// One kind of job: the struct its payload is, written by the enqueuer and read by the handler.
///
/// The struct must not use `deny_unknown_fields` nor fields named `version` or `failure`
/// (the stored payload carries both beside its fields).
pub trait JobPayload: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The `jobs.kind` of this kind of job; a runner finds its handler by it.
    const KIND: &'static str;
    /// Raised when the struct, or what a handler makes of it, changes: a worker of an older
    /// Lector leaves a job of a newer version to a newer worker (a rolling upgrade), and a job
    /// of a version outside `OLDEST_READ..=VERSION` fails for good.
    const VERSION: u32 = 1;
    /// The oldest version this Lector still reads: one whose stored fields the struct reads
    /// (what it lacks has a serde default), as queued by the Lector before an upgrade.
    const OLDEST_READ: u32 = Self::VERSION;
    /// Attempts before a failing job fails for good.
    const MAX_ATTEMPTS: i64;
    /// What this job's terminal failure marks FAILED and says to its user.
    fn failure(&self) -> Failure;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
}

lector_core::wire_enum!(JobState { Queued => "QUEUED", Running => "RUNNING", Done => "DONE", Failed => "FAILED" });

/// A job to put on the queue; build it with [`NewJob::of`].
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    /// Small parameters, read with the job: a [`JobPayload`] as [`NewJob::of`] stores it.
    pub payload: serde_json::Value,
    /// Bulk input (documents to import, ...), read once by the handler with [`Store::job_input`].
    pub input: Option<serde_json::Value>,
    pub workspace_id: Option<i64>,
    pub project_id: Option<i64>,
    pub user_id: Option<i64>,
    pub max_attempts: i64,
}

impl NewJob {
    /// A job of `payload`'s kind, with its version and failure trace, owned by nobody yet.
    pub fn of<P: JobPayload>(payload: &P) -> Result<Self> {
        let mut value = serde_json::to_value(payload).map_err(|e| unencodable(P::KIND, &e))?;
        let failure = serde_json::to_value(payload.failure()).map_err(|e| unencodable(P::KIND, &e))?;
        let Some(fields) = value.as_object_mut() else {
            tracing::error!(kind = P::KIND, "a job payload must be a struct");
            return Err(Error::internal());
        };
        fields.insert("version".into(), P::VERSION.into());
        fields.insert("failure".into(), failure);
        Ok(Self {
            kind: P::KIND.into(),
            payload: value,
            input: None,
            workspace_id: None,
            project_id: None,
            user_id: None,
            max_attempts: P::MAX_ATTEMPTS,
        })
    }

    /// A job of `payload`'s kind in `project`, working for the caller of `scope` (told when it
    /// ends).
    pub(crate) fn for_project<P: JobPayload>(
        payload: &P,
        scope: &Scope,
        project: &crate::records::Project,
    ) -> Result<Self> {
        Ok(Self::of(payload)?
            .owned_by(scope.user_id)
            .in_project(project.workspace_id, project.id))
    }

    /// The user the job works for: it is notified when the job ends.
    pub fn owned_by(mut self, user_id: i64) -> Self {
        self.user_id = Some(user_id);
        self
    }

    /// The project (and its workspace) the job belongs to; its readers see the task.
    pub fn in_project(mut self, workspace_id: i64, project_id: i64) -> Self {
        self.workspace_id = Some(workspace_id);
        self.project_id = Some(project_id);
        self
    }

    /// Bulk input, stored apart and deleted when the job ends.
    pub fn with_input<T: Serialize>(mut self, input: &T) -> Result<Self> {
        self.input = Some(serde_json::to_value(input).map_err(|e| unencodable(&self.kind, &e))?);
        Ok(self)
    }
}

fn unencodable(kind: &str, error: &serde_json::Error) -> Error {
    tracing::error!(kind, error = %error, "cannot encode a job");
    Error::internal()
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: i64,
    pub kind: String,
    pub payload: serde_json::Value,
    pub state: JobState,
    pub workspace_id: Option<i64>,
    pub project_id: Option<i64>,
    pub user_id: Option<i64>,
    pub attempts: i64,
    pub max_attempts: i64,
    pub progress: f64,
    pub result: Option<serde_json::Value>,
    pub error: Option<String>,
    pub created: Timestamp,
    pub updated: Timestamp,
    pub finished: Option<Timestamp>,
}

pub(crate) const JOB_COLUMNS: &str = "id, kind, payload, state, workspace_id, project_id, user_id, attempts, max_attempts, \
     progress, result, error, created, updated, finished, fencing_token";

from_row! {
    Job {
        id, kind, payload, state, workspace_id, project_id, user_id, attempts, max_attempts,
        progress, result, error, created, updated, finished,
    }
}

/// A claimed job: only the holder of the current fencing token may write its results.
#[derive(Debug, Clone)]
pub struct Lease {
    pub job: Job,
    pub owner: String,
    pub token: i64,
    /// When a worker first handed the job back because it could not run it, if one has since
    /// its last attempt ([`Store::hand_back_unrunnable`]).
    pub unrunnable_since: Option<Timestamp>,
}

impl Lease {
    /// The job's payload as the struct its kind is; refuses another kind, or a version it does
    /// not read (`P::OLDEST_READ..=P::VERSION`).
    pub fn payload<P: JobPayload>(&self) -> Result<P> {
        let job = &self.job;
        let unreadable =
            |why: String| Error::new(ErrorCode::Internal, format!("the job's payload is unreadable: {why}"));
        if job.kind != P::KIND {
            return Err(unreadable(format!("a {} job is not a {} job", job.kind, P::KIND)));
        }
        // Payloads stored before versions were recorded are version 1.
        let version = job.payload.get("version").map_or(Some(1), serde_json::Value::as_u64);
        let readable = u64::from(P::OLDEST_READ)..=u64::from(P::VERSION);
        if !version.is_some_and(|v| readable.contains(&v)) {
            let reads = match P::OLDEST_READ == P::VERSION {
                true => format!("version {}", P::VERSION),
                false => format!("versions {} to {}", P::OLDEST_READ, P::VERSION),
            };
            return Err(unreadable(format!(
                "version {} where this Lector reads {reads}",
                job.payload["version"]
            )));
        }
        serde_json::from_value(job.payload.clone()).map_err(|e| unreadable(e.to_string()))
    }

    /// Whether a newer Lector, reading `version` of this kind of payload no more, wrote the
    /// job, and it may still wait for a worker of that version.
    pub fn awaits_newer_worker(&self, version: u32) -> bool {
        let written = self.job.payload.get("version").and_then(serde_json::Value::as_u64);
        written.is_some_and(|written| written > u64::from(version)) && !self.waited_for_a_worker()
    }

    /// Whether the job has waited [`crate::UNHANDLED_JOB_GRACE_SECS`] for a worker that can run
    /// it, from when a worker first could not: past that, any worker fails it with its trace.
    /// Time spent waiting its turn in the queue does not count.
    pub fn waited_for_a_worker(&self) -> bool {
        self.unrunnable_since_over(crate::UNHANDLED_JOB_GRACE_SECS)
    }

    /// Whether the job has waited [`crate::BUSY_WORKER_GRACE_SECS`] for a worker that can run
    /// it: past that it fails even while workers run other jobs of its kind.
    pub fn waited_past_busy_workers(&self) -> bool {
        self.unrunnable_since_over(crate::BUSY_WORKER_GRACE_SECS)
    }

    /// Whole minutes since a worker first could not run the job (0 if none has).
    pub fn minutes_waited_for_a_worker(&self) -> i64 {
        self.unrunnable_since
            .map_or(0, |since| (Timestamp::now().unix_seconds() - since.unix_seconds()) / 60)
    }

    fn unrunnable_since_over(&self, secs: i64) -> bool {
        self.unrunnable_since
            .is_some_and(|since| since < Timestamp::now().plus_seconds(-secs))
    }

    /// What this job's terminal failure leaves behind, as stored with it.
    pub fn failure(&self) -> Failure {
        self.job
            .payload
            .get("failure")
            .and_then(|f| serde_json::from_value(f.clone()).ok())
            .unwrap_or_else(|| Failure::generic(&self.job))
    }
}

/// A notification to write with a job's terminal state.
#[derive(Debug, Clone)]
pub struct JobNotice {
    pub user_id: i64,
    pub kind: NotificationType,
    pub title: String,
    pub text: String,
}

/// Seconds before a job of `kind` that failed its `attempts`-th attempt runs again: 2^n
/// seconds, or for a mail or a webhook's post (the [`crate::SHORT_JOB_KINDS`]) 30 s · 2^(n-1) up to an hour, so that their
/// attempts ([`crate::MailPayload`]'s and [`crate::WebhookPayload`]'s caps) span about a day:
/// a mail server down for hours loses no reset or invitation mail, and a receiver being
/// redeployed or down for the night still gets its review events.
pub(crate) fn retry_delay_secs(kind: &str, attempts: i64) -> i64 {
    if crate::SHORT_JOB_KINDS.contains(&kind) {
        let doublings = (attempts - 1).clamp(0, 7) as u32;
        return (30 * 2_i64.pow(doublings)).min(3600);
    }
    2_i64.saturating_pow(attempts.clamp(0, 10) as u32)
}

impl Store {
    /// Puts a job on the queue.
    pub async fn enqueue(&self, job: NewJob) -> Result<Job> {
        let mut tx = self.begin_write().await?;
        let job = enqueue_in(&mut tx, job).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(job)
    }

    /// Extends a lease; `false` means the lease is lost and the worker must stop.
    pub async fn heartbeat(&self, lease: &Lease, lease_secs: i64) -> Result<bool> {
        let values = vec![
            Param::Int(self.lease_clock().plus_seconds(lease_secs).micros()),
            Param::Int(Timestamp::now().micros()),
        ];
        update_leased(&self.pool, lease, "lease_expires = $1, updated = $2", values).await
    }

    /// Records progress in [0, 1]; progress never goes down. Progress is advice: its commit
    /// does not wait for the disk ([`Store::begin_redoable_write`]).
    pub async fn report_progress(&self, lease: &Lease, progress: f64) -> Result<bool> {
        let progress = progress.clamp(0.0, 1.0);
        let mut tx = self.begin_redoable_write().await?;
        let set = "progress = CASE WHEN progress < $1 THEN $1 ELSE progress END";
        let done = update_leased(&mut *tx, lease, set, vec![Param::Float(progress)]).await?;
        tx.commit().await.map_err(db)?;
        Ok(done)
    }

    /// Marks a job done with its result and notification, if the lease is still current.
    pub async fn finish_job(
        &self,
        lease: &Lease,
        result: serde_json::Value,
        notice: Option<JobNotice>,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let now = Timestamp::now().micros();
        // An earlier attempt's error goes: a DONE task answers none.
        let set = "state = $1, progress = 1, result = $2, error = NULL, lease_owner = NULL, \
             lease_expires = NULL, updated = $3, finished = $3";
        let values = vec![
            Param::Text(JobState::Done.as_str().to_owned()),
            Param::Text(result.to_string()),
            Param::Int(now),
        ];
        if !update_leased(&mut *tx, lease, set, values).await? {
            return Ok(false);
        }
        count_ended(&mut tx, &lease.job.kind, JobState::Done, 1).await?;
        if let Some(notice) = notice {
            insert_notice(&mut tx, &notice).await?;
        }
        delete_input(&mut tx, lease.job.id).await?;
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    /// Records a failed attempt. A retryable one goes back on the queue (with a growing delay)
    /// while attempts remain; otherwise the job fails for good and, in the same transaction,
    /// its resource turns FAILED, its `error` becomes the reason a person can act on, and its
    /// user gets exactly one notification (see the module's doc). `false` when the lease is
    /// no longer current (nothing is written).
    pub async fn fail_job(&self, lease: &Lease, cause: &str, retryable: bool) -> Result<bool> {
        self.fail_attempt(lease, cause, retryable, lease.job.attempts).await
    }

    /// [`Store::fail_job`], its reason counting `made` attempts.
    pub(crate) async fn fail_attempt(&self, lease: &Lease, cause: &str, retryable: bool, made: i64) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let now = Timestamp::now();
        let job = &lease.job;
        let again = retryable && job.attempts < job.max_attempts;
        let failure = lease.failure();
        let (state, finished, error) = if again {
            (JobState::Queued, None, cause.to_owned())
        } else {
            (JobState::Failed, Some(now.micros()), failure.reason(made, cause))
        };
        if !again && let Some(project_id) = job.project_id {
            // A terminal failure writes rows of the project (a copy's own row turns FAILED):
            // its row first, as a deletion of the project takes it before its jobs' rows.
            crate::lock_row_for_key_share(&mut tx, ("projects", project_id)).await?;
        }
        let delay = retry_delay_secs(&job.kind, job.attempts);
        // An attempt made: the wait for a worker that can run it, should there be another, starts anew.
        let set = "state = $1, error = $2, lease_owner = NULL, lease_expires = NULL, updated = $3, \
             finished = $4, run_after = $5, unrunnable_since = NULL";
        let values = vec![
            Param::Text(state.as_str().to_owned()),
            Param::Text(error.clone()),
            Param::Int(now.micros()),
            Param::MaybeInt(finished),
            Param::Int(now.plus_seconds(delay).micros()),
        ];
        if !update_leased(&mut *tx, lease, set, values).await? {
            return Ok(false);
        }
        if !again {
            count_ended(&mut tx, &job.kind, JobState::Failed, 1).await?;
            // What an import stored before it failed goes with it (`import_rollback`), first:
            // its documents, then their sessions, before the resource (a labeled import's
            // session) is marked, as a document's edit takes them.
            if let Some(group_id) = crate::import_rollback::group_being_filled(&mut tx, job.id).await? {
                crate::import_rollback::remove_failed_import(&mut tx, group_id).await?;
            }
            let unfinished = match failure.resource {
                Some(resource) => mark_failed(&mut tx, resource, &error).await?,
                None => true,
            };
            if unfinished && let Some(user_id) = job.user_id {
                let notice = JobNotice {
                    user_id,
                    kind: NotificationType::Warning,
                    title: failure.title.clone(),
                    text: error,
                };
                insert_notice(&mut tx, &notice).await?;
            }
            delete_input(&mut tx, job.id).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    /// A job of a project, as its readers may see it.
    pub async fn project_job(&self, scope: &Scope, project_id: i64, job_id: i64) -> Result<Job> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.job_of_project(project.id, job_id).await
    }

    pub(crate) async fn job_of_project(&self, project_id: i64, job_id: i64) -> Result<Job> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1 AND project_id = $2");
        fetch_record(sqlx::query(&sql).bind(job_id).bind(project_id), &self.pool, "task").await
    }

    /// The bulk input of a claimed job as the type its enqueuer wrote; 404 when it has none.
    pub async fn job_input<T: DeserializeOwned>(&self, lease: &Lease) -> Result<T> {
        let text: Option<String> = sqlx::query_scalar("SELECT input FROM job_inputs WHERE job_id = $1")
            .bind(lease.job.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let text = text.ok_or_else(|| Error::new(ErrorCode::NotFound, "the job's input is gone"))?;
        serde_json::from_str(&text).map_err(|e| {
            tracing::error!(error = %e, job.id = lease.job.id, "unreadable job input");
            Error::new(ErrorCode::Internal, format!("the job's input is unreadable: {e}"))
        })
    }

    /// Jobs queued or running, oldest first: for tests (nothing left behind) and operators
    /// (system look-up, no scope).
    pub async fn unfinished_jobs(&self) -> Result<Vec<Job>> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE state = $1 OR state = $2 ORDER BY id");
        let query = sqlx::query(&sql)
            .bind(JobState::Queued.as_str())
            .bind(JobState::Running.as_str());
        fetch_records(query, &self.pool).await
    }

    /// A job by id, for tests and operators (system look-up, no scope).
    pub async fn job_by_id(&self, job_id: i64) -> Result<Option<Job>> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1");
        let row = sqlx::query(&sql)
            .bind(job_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Job::decode).transpose()
    }
}

/// Enqueues inside the caller's transaction, so a job and the rows it will fill appear together.
pub(crate) async fn enqueue_in(tx: &mut Transaction<'static, Any>, job: NewJob) -> Result<Job> {
    let now = Timestamp::now().micros();
    let sql = format!(
        "INSERT INTO jobs (kind, payload, state, workspace_id, project_id, user_id, max_attempts, run_after, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8) RETURNING {JOB_COLUMNS}"
    );
    let row = sqlx::query(&sql)
        .bind(&job.kind)
        .bind(job.payload.to_string())
        .bind(JobState::Queued.as_str())
        .bind(job.workspace_id)
        .bind(job.project_id)
        .bind(job.user_id)
        .bind(job.max_attempts.max(1))
        .bind(now)
        .fetch_one(&mut **tx)
        .await
        .map_err(db)?;
    let created = Job::decode(&row)?;
    if let Some(input) = &job.input {
        sqlx::query("INSERT INTO job_inputs (job_id, input) VALUES ($1, $2)")
            .bind(created.id)
            .bind(input.to_string())
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(created)
}

/// Records `job_id` as the job working on row `id` of `table` (its `task_id`, which
/// `get_project_task` follows): an import's group, an analysis, a model in training.
pub(crate) async fn set_task(
    tx: &mut Transaction<'static, Any>,
    table: &'static str,
    id: i64,
    job_id: i64,
) -> Result<()> {
    sqlx::query(&format!("UPDATE {table} SET task_id = $1 WHERE id = $2"))
        .bind(job_id)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

/// Counts `jobs` jobs of `kind` that ended in `state` ([`Store::job_statistics`]).
pub(crate) async fn count_ended(
    tx: &mut Transaction<'static, Any>,
    kind: &str,
    state: JobState,
    jobs: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO job_totals (kind, state, jobs) VALUES ($1, $2, $3) \
         ON CONFLICT (kind, state) DO UPDATE SET jobs = job_totals.jobs + excluded.jobs",
    )
    .bind(kind)
    .bind(state.as_str())
    .bind(jobs)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// [`check_fence`] for a write that adds rows to the job's project (documents, classes, groups):
/// first holds the project's row as those rows' foreign keys do (a key share, on PostgreSQL),
/// so that a deletion of the project, which locks its row and then its jobs' rows, is waited
/// for instead of each waiting for the other.
pub(crate) async fn check_fence_in_project(tx: &mut Transaction<'static, Any>, lease: &Lease) -> Result<()> {
    if let Some(project_id) = lease.job.project_id {
        crate::lock_row_for_key_share(tx, ("projects", project_id)).await?;
    }
    check_fence(tx, lease).await
}

/// Fails unless `lease` is still the job's current lease; call first in a result transaction.
pub(crate) async fn check_fence(tx: &mut Transaction<'static, Any>, lease: &Lease) -> Result<()> {
    let now = vec![Param::Int(Timestamp::now().micros())];
    if update_leased(&mut **tx, lease, "updated = $1", now).await? {
        Ok(())
    } else {
        Err(Error::conflict(
            "the job's lease was taken over; this worker's results are discarded",
        ))
    }
}

/// Updates the job `lease` holds with `set` (`column = $1, …`, its parameters `values`) only
/// while the lease is current: the job RUNNING under the lease's fencing token. Answers whether
/// it did (`false`: the lease is lost and nothing was written).
pub(crate) async fn update_leased<'c>(
    executor: impl sqlx::Executor<'c, Database = Any>,
    lease: &Lease,
    set: &str,
    values: Vec<Param>,
) -> Result<bool> {
    let first = values.len() + 1;
    let sql = format!(
        "UPDATE jobs SET {set} WHERE id = ${first} AND fencing_token = ${} AND state = ${}",
        first + 1,
        first + 2
    );
    let done = Param::bind_all(sqlx::query(&sql), values)
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(executor)
        .await
        .map_err(db)?;
    Ok(done.rows_affected() == 1)
}

/// Drops a job's bulk input once the job has ended: nothing it carries outlives the job.
async fn delete_input(tx: &mut Transaction<'static, Any>, job_id: i64) -> Result<()> {
    sqlx::query("DELETE FROM job_inputs WHERE job_id = $1")
        .bind(job_id)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

async fn insert_notice(tx: &mut Transaction<'static, Any>, notice: &JobNotice) -> Result<()> {
    crate::notifications::notify_in(tx, notice.user_id, notice.kind, &notice.title, &notice.text).await
}
