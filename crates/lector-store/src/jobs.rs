//! The durable job queue (DESIGN.md section 5).
//!
//! A worker claims a queued job with a lease; each claim increments the job's fencing token.
//! While it works, the worker heartbeats the lease; it writes results only through functions
//! that check, inside the same transaction, that its token is still the job's token. A reaper
//! returns jobs whose lease expired to the queue, so killing any process loses nothing: the
//! job runs again and, its writes being idempotent, finishes once. A job's notification is
//! written in the same transaction as its terminal state: exactly one per job.

use crate::records::FromAnyRow;
use crate::{Backend, Store, db};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, NotificationType, Result, Scope};
use sqlx::any::AnyRow;
use sqlx::{Any, Row, Transaction};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
}

lector_core::wire_enum!(JobState { Queued => "QUEUED", Running => "RUNNING", Done => "DONE", Failed => "FAILED" });

/// A job to put on the queue.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    /// Small parameters, read with the job.
    pub payload: serde_json::Value,
    /// Bulk input (documents to import, ...), read once by the handler with [`Store::job_input`].
    pub input: Option<serde_json::Value>,
    pub workspace_id: Option<i64>,
    pub project_id: Option<i64>,
    pub user_id: Option<i64>,
    pub max_attempts: i64,
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

const JOB_COLUMNS: &str = "id, kind, payload, state, workspace_id, project_id, user_id, attempts, max_attempts, \
     progress, result, error, created, updated, finished, fencing_token";

impl FromAnyRow for Job {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let json = |text: String| serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(e.into()));
        let state: String = row.try_get("state")?;
        Ok(Self {
            id: row.try_get("id")?,
            kind: row.try_get("kind")?,
            payload: json(row.try_get("payload")?)?,
            state: crate::parse_stored(&state).map_err(|e| sqlx::Error::Decode(e.into()))?,
            workspace_id: row.try_get("workspace_id")?,
            project_id: row.try_get("project_id")?,
            user_id: row.try_get("user_id")?,
            attempts: row.try_get("attempts")?,
            max_attempts: row.try_get("max_attempts")?,
            progress: row.try_get("progress")?,
            result: row.try_get::<Option<String>, _>("result")?.map(json).transpose()?,
            error: row.try_get("error")?,
            created: Timestamp(row.try_get("created")?),
            updated: Timestamp(row.try_get("updated")?),
            finished: row.try_get::<Option<i64>, _>("finished")?.map(Timestamp),
        })
    }
}

/// A claimed job: only the holder of the current fencing token may write its results.
#[derive(Debug, Clone)]
pub struct Lease {
    pub job: Job,
    pub owner: String,
    pub token: i64,
}

/// A notification to write with a job's terminal state.
#[derive(Debug, Clone)]
pub struct JobNotice {
    pub user_id: i64,
    pub kind: NotificationType,
    pub title: String,
    pub text: String,
}

impl Store {
    /// Puts a job on the queue.
    pub async fn enqueue(&self, job: NewJob) -> Result<Job> {
        let mut tx = self.begin_write().await?;
        let job = enqueue_in(&mut tx, job).await?;
        tx.commit().await.map_err(db)?;
        Ok(job)
    }

    /// Claims the oldest runnable job, if any, for `lease_secs`.
    pub async fn claim_job(&self, owner: &str, lease_secs: i64) -> Result<Option<Lease>> {
        let now = Timestamp::now();
        let pick = match self.backend {
            Backend::Postgres => {
                "SELECT id FROM jobs WHERE state = $4 AND run_after <= $3 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
            }
            // SQLite has one writer at a time, so the sub-select and the update are atomic.
            Backend::Sqlite => "SELECT id FROM jobs WHERE state = $4 AND run_after <= $3 ORDER BY id LIMIT 1",
        };
        let sql = format!(
            "UPDATE jobs SET state = $5, lease_owner = $1, lease_expires = $2, fencing_token = fencing_token + 1, \
             attempts = attempts + 1, updated = $3 WHERE id = ({pick}) RETURNING {JOB_COLUMNS}"
        );
        let row = sqlx::query(&sql)
            .bind(owner)
            .bind(now.plus_seconds(lease_secs).micros())
            .bind(now.micros())
            .bind(JobState::Queued.as_str())
            .bind(JobState::Running.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let token: i64 = row.try_get("fencing_token").map_err(db)?;
        Ok(Some(Lease {
            job: Job::decode(&row)?,
            owner: owner.to_owned(),
            token,
        }))
    }

    /// Extends a lease; `false` means the lease is lost and the worker must stop.
    pub async fn heartbeat(&self, lease: &Lease, lease_secs: i64) -> Result<bool> {
        let now = Timestamp::now();
        let done = sqlx::query(
            "UPDATE jobs SET lease_expires = $1, updated = $2 WHERE id = $3 AND fencing_token = $4 AND state = $5",
        )
        .bind(now.plus_seconds(lease_secs).micros())
        .bind(now.micros())
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
    }

    /// Records progress in [0, 1]; progress never goes down.
    pub async fn report_progress(&self, lease: &Lease, progress: f64) -> Result<bool> {
        let progress = progress.clamp(0.0, 1.0);
        let done = sqlx::query(
            "UPDATE jobs SET progress = CASE WHEN progress < $1 THEN $1 ELSE progress END \
             WHERE id = $2 AND fencing_token = $3 AND state = $4",
        )
        .bind(progress)
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected() == 1)
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
        let done = sqlx::query(
            "UPDATE jobs SET state = $1, progress = 1, result = $2, lease_owner = NULL, lease_expires = NULL, \
             updated = $3, finished = $3 WHERE id = $4 AND fencing_token = $5 AND state = $6",
        )
        .bind(JobState::Done.as_str())
        .bind(result.to_string())
        .bind(now)
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        if let Some(notice) = notice {
            insert_notice(&mut tx, &notice).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    /// Records a failure. A retryable one goes back on the queue (with a growing delay) while
    /// attempts remain; otherwise the job fails for good, with its notification.
    pub async fn fail_job(
        &self,
        lease: &Lease,
        error: &str,
        retryable: bool,
        notice: Option<JobNotice>,
    ) -> Result<bool> {
        let mut tx = self.begin_write().await?;
        let now = Timestamp::now();
        let again = retryable && lease.job.attempts < lease.job.max_attempts;
        let (state, finished) = if again {
            (JobState::Queued, None)
        } else {
            (JobState::Failed, Some(now.micros()))
        };
        let delay = 2_i64.saturating_pow(lease.job.attempts.clamp(0, 10) as u32);
        let done = sqlx::query(
            "UPDATE jobs SET state = $1, error = $2, lease_owner = NULL, lease_expires = NULL, updated = $3, \
             finished = $4, run_after = $5 WHERE id = $6 AND fencing_token = $7 AND state = $8",
        )
        .bind(state.as_str())
        .bind(error)
        .bind(now.micros())
        .bind(finished)
        .bind(now.plus_seconds(delay).micros())
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if done.rows_affected() != 1 {
            return Ok(false);
        }
        if let (false, Some(notice)) = (again, notice) {
            insert_notice(&mut tx, &notice).await?;
        }
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    /// Returns jobs whose lease expired to the queue; answers how many.
    pub async fn reap_expired_leases(&self) -> Result<u64> {
        let now = Timestamp::now().micros();
        let done = sqlx::query(
            "UPDATE jobs SET state = $1, lease_owner = NULL, lease_expires = NULL, updated = $2 \
             WHERE state = $3 AND lease_expires < $2",
        )
        .bind(JobState::Queued.as_str())
        .bind(now)
        .bind(JobState::Running.as_str())
        .execute(&self.pool)
        .await
        .map_err(db)?;
        Ok(done.rows_affected())
    }

    /// A job of a project, as its readers may see it.
    pub async fn project_job(&self, scope: &Scope, project_id: i64, job_id: i64) -> Result<Job> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.job_of_project(project.id, job_id).await
    }

    pub(crate) async fn job_of_project(&self, project_id: i64, job_id: i64) -> Result<Job> {
        let sql = format!("SELECT {JOB_COLUMNS} FROM jobs WHERE id = $1 AND project_id = $2");
        let row = sqlx::query(&sql)
            .bind(job_id)
            .bind(project_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref()
            .map(Job::decode)
            .transpose()?
            .ok_or_else(|| Error::not_found("task"))
    }

    /// The bulk input of a claimed job (`null` when it has none).
    pub async fn job_input(&self, lease: &Lease) -> Result<serde_json::Value> {
        let text: Option<String> = sqlx::query_scalar("SELECT input FROM job_inputs WHERE job_id = $1")
            .bind(lease.job.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        text.map(|t| serde_json::from_str(&t))
            .transpose()
            .map(Option::unwrap_or_default)
            .map_err(|e| {
                tracing::error!(error = %e, job.id = lease.job.id, "corrupt job input");
                Error::internal()
            })
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

/// Fails unless `lease` is still the job's current lease; call first in a result transaction.
pub(crate) async fn check_fence(tx: &mut Transaction<'static, Any>, lease: &Lease) -> Result<()> {
    let done = sqlx::query("UPDATE jobs SET updated = $1 WHERE id = $2 AND fencing_token = $3 AND state = $4")
        .bind(Timestamp::now().micros())
        .bind(lease.job.id)
        .bind(lease.token)
        .bind(JobState::Running.as_str())
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(Error::conflict(
            "the job's lease was taken over; this worker's results are discarded",
        ))
    }
}

async fn insert_notice(tx: &mut Transaction<'static, Any>, notice: &JobNotice) -> Result<()> {
    sqlx::query("INSERT INTO notifications (user_id, type, title, text, created) VALUES ($1, $2, $3, $4, $5)")
        .bind(notice.user_id)
        .bind(notice.kind.as_str())
        .bind(&notice.title)
        .bind(&notice.text)
        .bind(Timestamp::now().micros())
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}
