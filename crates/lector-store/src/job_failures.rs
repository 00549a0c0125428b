//! The trace a job's terminal failure leaves (`jobs.rs`, "Terminal failure"): what the job
//! worked on, marked FAILED in the transaction that ends the job, and the reason its user reads.

use crate::db;
use crate::jobs::Job;
use lector_core::time::Timestamp;
use lector_core::{ModelStatus, Result};
use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};

/// What a job works on, marked FAILED when the job fails for good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "id", rename_all = "snake_case")]
pub enum JobResource {
    /// A document group an import fills.
    DocumentGroup(i64),
    /// A project a clone fills.
    Project(i64),
    /// A model a training job trains (its `failure` column gets the reason).
    Model(i64),
    /// A labeling session a labeled-file import fills (with its document group).
    Session(i64),
    /// A batch analysis (its `failure` column gets the reason; its own group, if still
    /// PROCESSING, fails with it).
    Analysis(i64),
}

/// The trace a job's terminal failure leaves: its resource FAILED and one notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub resource: Option<JobResource>,
    /// The notification's title, e.g. "Import failed".
    pub title: String,
    /// What the job was doing, starting a sentence: "The import into group 7".
    pub subject: String,
    /// What a person can do about it: "upload the documents again".
    pub advice: String,
}

impl Failure {
    pub fn of(
        resource: Option<JobResource>,
        title: impl Into<String>,
        subject: impl Into<String>,
        advice: impl Into<String>,
    ) -> Self {
        Self {
            resource,
            title: title.into(),
            subject: subject.into(),
            advice: advice.into(),
        }
    }

    /// "The import into group 7 failed after 5 attempts: the file is gone; upload it again."
    pub fn reason(&self, attempts: i64, cause: &str) -> String {
        let times = if attempts == 1 { "attempt" } else { "attempts" };
        let cause = cause.trim_end_matches('.');
        format!(
            "{} failed after {attempts} {times}: {cause}; {}.",
            self.subject, self.advice
        )
    }

    /// The trace of a job stored without one (or whose stored payload is damaged).
    pub(crate) fn generic(job: &Job) -> Self {
        Self::of(
            None,
            "Task failed",
            format!("Task {} ({})", job.id, job.kind),
            "start the work again, or ask an administrator to look at the server's log",
        )
    }
}

/// Marks what a job worked on FAILED (a job's terminal failure); a model keeps the reason.
/// Answers whether it was still unfinished (false: its job had finished it, or it is gone, and
/// nobody needs to hear of the failure).
pub(crate) async fn mark_failed(
    tx: &mut Transaction<'static, Any>,
    resource: JobResource,
    reason: &str,
) -> Result<bool> {
    let failed = |sql: &'static str, id: i64| sqlx::query(sql).bind("FAILED").bind(id);
    let queries = match resource {
        // A group its import filled already (a late duplicate failure: the worker died after
        // the group's last write) keeps its status, as a session, a model or an analysis does.
        JobResource::DocumentGroup(id) => vec![failed(
            "UPDATE document_groups SET status = $1 WHERE id = $2 AND status = 'PROCESSING'",
            id,
        )],
        JobResource::Project(id) => vec![failed(
            "UPDATE projects SET status = $1 WHERE id = $2 AND status = 'CLONING'",
            id,
        )],
        // A session its job filled already (a late duplicate failure) keeps its status.
        JobResource::Session(id) => vec![
            failed(
                "UPDATE sessions SET status = $1 WHERE id = $2 AND status IN ('STARTED', 'PREDICTING')",
                id,
            ),
            failed(
                "UPDATE document_groups SET status = $1 WHERE status = 'PROCESSING' \
                 AND id = (SELECT document_group_id FROM sessions WHERE id = $2)",
                id,
            ),
        ],
        JobResource::Analysis(id) => vec![
            sqlx::query(
                "UPDATE analyses SET status = $1, failure = $2, finished = $3 WHERE id = $4 AND status <> 'FINISHED'",
            )
            .bind("FAILED")
            .bind(reason)
            .bind(Timestamp::now().micros())
            .bind(id),
            failed(
                "UPDATE document_groups SET status = $1 WHERE status = 'PROCESSING' \
                 AND id = (SELECT document_group_id FROM analyses WHERE id = $2)",
                id,
            ),
        ],
        // A model that is READY already (a late duplicate failure) stays READY.
        JobResource::Model(id) => vec![
            sqlx::query(
                "UPDATE models SET status = $1, failure = $2, updated = $3, finished = $3 \
                 WHERE id = $4 AND status IN ($5, $6)",
            )
            .bind(ModelStatus::Failed.as_str())
            .bind(reason)
            .bind(Timestamp::now().micros())
            .bind(id)
            .bind(ModelStatus::Queued.as_str())
            .bind(ModelStatus::Training.as_str()),
        ],
    };
    let mut unfinished = None;
    for query in queries {
        let marked = query.execute(&mut **tx).await.map_err(db)?.rows_affected() > 0;
        unfinished.get_or_insert(marked);
    }
    Ok(unfinished.unwrap_or(false))
}
