//! Lector's storage: one [`Store`] over SQLite (embedded, the default) and PostgreSQL.
//!
//! Both backends run the same SQL through sqlx's `Any` driver; only the migrations differ, one
//! folder per backend, listed once in [`migrations`] so neither can miss a step. Every function
//! that reads or writes tenant data takes the caller's [`Scope`](lector_core::Scope); there is no
//! unscoped read of tenant data. Failures come back as [`lector_core::Error`]: unique violations
//! as 409, an unreachable database as 503, anything else as a logged 500.

mod accounts;
mod analyses;
mod analysis_runs;
mod base_models;
mod batch_reads;
mod blobs;
mod bulk;
mod cloning;
#[cfg(test)]
mod correction_tests;
mod corrections;
mod credentials;
mod document_guards;
mod document_listing;
mod documents;
#[cfg(test)]
mod foreign_key_tests;
mod hitl_reviews;
mod hitls;
mod import_rollback;
#[cfg(test)]
mod import_tests;
mod invitations;
#[cfg(test)]
mod job_claim_tests;
mod job_claims;
mod job_failures;
mod job_reclaims;
mod job_retention;
mod jobs;
mod labeled_imports;
#[cfg(test)]
mod limit_tests;
#[cfg(test)]
mod lock_order_tests;
mod model_uploads;
mod model_vocabulary;
mod models;
mod new_text;
#[cfg(test)]
mod training_tests;
pub use accounts::{NewUser, UserChanges};
pub use analyses::{Analysis, NewAnalysis};
pub use analysis_runs::{AnalysisSource, AnalysisTag, NewBatchAnalysis, PendingDocument, StoredAnalysisTag, TagCounts};
pub use base_models::InstalledBaseModel;
pub use batch_reads::DocumentAsRead;
pub use blobs::{Blobs, StoredBlob};
pub use cloning::CloneCounts;
pub use corrections::{CorrectionAgreement, CorrectionPlan, NewCorrection, PredictedSegmentTag};
pub use credentials::{Credential, MAX_CREDENTIALS_PER_WORKSPACE, NewCredential};
pub use document_listing::DocumentFilter;
pub use document_pages::MAX_LISTED_CHARS;
pub use documents::{Document, DocumentGroup, NewDocument, NewSegment, Segment};
pub use hitl_reviews::{HitlReview, NewReview};
pub use hitls::{Hitl, HitlChange, MAX_HITLS_PER_PROJECT, NewHitl};
pub use invitations::{Invitee, MAX_PENDING_INVITATIONS};
pub use job_claims::{
    BUSY_WORKER_GRACE_SECS, FAIR_SHARE_PATIENCE_SECS, LOST_WORKER_ALLOWANCE, SHORT_JOB_KINDS, UNHANDLED_JOB_GRACE_SECS,
};
pub use job_reclaims::{JobCount, JobStatistics};
pub use jobs::{Failure, Job, JobNotice, JobPayload, JobResource, JobState, Lease, NewJob};
pub use labeled_imports::LabeledFile;
pub use migrations::SchemaStatus;
pub use model_uploads::{NewUploadedModel, UploadTarget};
pub use model_vocabulary::{LearntFrom, ModelVocabulary, NamesRead};
pub use models::{Model, ModelChanges, ModelFilter};
pub use new_text::DocumentChange;
pub use notifications::NotificationChanges;
pub use payloads::{
    ANALYSIS_JOB, AnalysisPayload, CLONE_JOB, CORRECTION_JOB, ClonePayload, CorrectionPayload, FileSource, IMPORT_JOB,
    ImportOptions, ImportPayload, ImportedDocument, LABELED_IMPORT_JOB, LabeledColumns, LabeledImportPayload, MAIL_JOB,
    MailPayload, PASSWORD_RESET_JOB, PasswordResetMail, PasswordResetPayload, TRAINING_JOB, TrainingPayload,
    WEBHOOK_JOB, WebhookPayload,
};
pub use projects::{
    ClassChanges, ClassFields, MAX_CLASSES_PER_PROJECT, MAX_LABELS_PER_PROJECT, ProjectChanges, ProjectFields,
};
pub use security::{MAX_PRODUCT_KEYS, TokenPurpose};
pub use sessions::{
    LabeledDocument, MAX_TAGS_PER_SEGMENT, MarkTarget, NewSession, Session, SessionChanges, SessionFilter, Vocabulary,
};
pub use tags::{NewTag, SegmentAt, SegmentMark, SegmentTag, tags_by_segment};
pub use training::{MODEL_LANGUAGES, NewTraining, TrainedModel, TrainingSegment};
pub use training_pages::{MAX_TRAINING_LAYOUT_CHARS, MAX_TRAINING_PAGES, PageBudget, ReviewedPages, TrainingPage};
pub use uploads::{UPLOAD_PREFIX, Upload, UploadFor};
pub use workflow_executions::{
    ABANDONED_EXECUTION, EXECUTION_ALIVE_SECS, Execution, ExecutionEnd, FinishedExecution, MAX_EXECUTIONS_PER_WORKFLOW,
};
pub use workflows::{MAX_WORKFLOWS_PER_WORKSPACE, NewWorkflow, WebhookTarget, Workflow};
pub use workspace_work::{MAX_WORK_PER_USER, MAX_WORK_PER_WORKSPACE};
pub use workspaces::{MAX_MEMBERS_PER_WORKSPACE, MAX_WORKSPACES_PER_USER, WorkspaceChanges};
mod document_pages;
mod id_lists;
mod migrations;
mod model_changes;
mod notifications;
mod orphans;
mod payloads;
mod project_labels;
pub use project_labels::LabelKey;
mod projects;
mod records;
mod s3;
#[cfg(test)]
mod schema_tests;
mod security;
#[cfg(test)]
mod session_count_tests;
mod session_counts;
mod sessions;
#[cfg(test)]
mod tag_tests;
mod tags;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod training;
mod training_pages;
mod uploads;
mod workflow_executions;
#[cfg(test)]
mod workflow_tests;
mod workflows;
mod workspace_work;
mod workspaces;

pub use records::*;
pub use workspaces::WorkspaceRef;

use lector_core::{Error, Result};
use sqlx::AnyPool;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use std::str::FromStr;
use std::time::Duration;

/// Which database a store talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// The database a URL names, by its scheme.
    pub fn of_url(url: &str) -> Option<Self> {
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Some(Backend::Postgres)
        } else if url.starts_with("sqlite:") {
            Some(Backend::Sqlite)
        } else {
            None
        }
    }
}

/// Which of the service's dependencies answered ([`Store::check_dependencies`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependencies {
    pub database: bool,
    pub blob_store: bool,
}

/// The handle every part of Lector stores and reads through. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    /// Where uploaded files live; set by [`Store::with_blobs`].
    blobs: Option<Blobs>,
    /// Rung after a transaction that queued jobs commits, so this process's idle workers claim
    /// them at once instead of at their next poll.
    jobs_queued: std::sync::Arc<tokio::sync::Notify>,
    /// The database's clock less this process's, in microseconds, as last read
    /// ([`Store::reap_expired_leases`]): leases are written and judged by it.
    clock_offset: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl Store {
    /// Connects (creating an SQLite file if needed) without migrating. On PostgreSQL the server
    /// ends a session that sits idle inside a transaction for longer than `idle_in_transaction`,
    /// freeing the rows it locked: a process paused in the middle of a write (SIGSTOP, a frozen
    /// machine) would otherwise keep its job's row, and its lease, from every other node.
    pub async fn connect(url: &str, max_connections: u32, idle_in_transaction: Duration) -> Result<Self> {
        install_default_drivers();
        let Some(backend) = Backend::of_url(url) else {
            return Err(Error::bad_request(
                "the database URL must start with sqlite: or postgres:",
            ));
        };
        let mut options = AnyPoolOptions::new().acquire_timeout(Duration::from_secs(10));
        if backend == Backend::Sqlite {
            // SQLite allows one writer; WAL lets readers go on beside it, and the busy timeout
            // makes concurrent writers wait instead of failing.
            options = options
                .max_connections(max_connections.min(4))
                .after_connect(|conn, _| {
                    Box::pin(async move {
                        sqlx::query("PRAGMA journal_mode = WAL").execute(&mut *conn).await?;
                        sqlx::query("PRAGMA busy_timeout = 10000").execute(&mut *conn).await?;
                        sqlx::query("PRAGMA foreign_keys = ON").execute(&mut *conn).await?;
                        sqlx::query("PRAGMA synchronous = NORMAL").execute(&mut *conn).await?;
                        Ok(())
                    })
                });
        } else {
            let set = format!(
                "SET idle_in_transaction_session_timeout = {}",
                idle_in_transaction.as_millis().max(1)
            );
            options = options.max_connections(max_connections).after_connect(move |conn, _| {
                let set = set.clone();
                Box::pin(async move {
                    sqlx::query(&set).execute(&mut *conn).await?;
                    Ok(())
                })
            });
        }
        // Only start-up connects, so the operator gets the cause whole ("password authentication
        // failed", "database does not exist"), not just that it failed.
        let pool = options.connect(url).await.map_err(|e| {
            tracing::error!(error = %e, "cannot connect to the database");
            Error::dependency_down(format!("cannot connect to the database: {e}"))
        })?;
        let store = Self {
            pool,
            backend,
            blobs: None,
            jobs_queued: Default::default(),
            clock_offset: Default::default(),
        };
        // Before any lease is written by it (`Store::lease_clock`); its failure told whole, as
        // the connection's.
        store.read_lease_clock().await.map_err(|e| {
            tracing::error!(error = %e.detail, "cannot read the database's clock");
            Error::dependency_down(format!("cannot read the database's clock: {}", e.detail))
        })?;
        Ok(store)
    }

    /// Connects and brings the schema up to date, with the default configuration's limit on
    /// idle transactions (twice its job lease; the service passes its own configuration's).
    pub async fn open(url: &str, max_connections: u32) -> Result<Self> {
        let idle = lector_core::config::Config::default().idle_in_transaction();
        Self::open_with(url, max_connections, idle).await
    }

    /// Connects with that limit on idle transactions (see [`Store::connect`]) and brings the
    /// schema up to date.
    pub async fn open_with(url: &str, max_connections: u32, idle_in_transaction: Duration) -> Result<Self> {
        let store = Self::connect(url, max_connections, idle_in_transaction).await?;
        store.migrate().await?;
        Ok(store)
    }

    /// Applies the migrations this binary knows and the database has not seen.
    pub async fn migrate(&self) -> Result<()> {
        // Only start-up and `lector migrate` migrate, so the cause goes to the operator whole.
        migrations::migrator(self.backend).run(&self.pool).await.map_err(|e| {
            tracing::error!(error = %e, "migration failed");
            Error::new(lector_core::ErrorCode::Internal, format!("migrating the schema: {e}"))
        })
    }

    /// Starts a transaction that will write. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`, waiting up to the busy timeout), so a transaction that reads first
    /// never fails when another connection commits between its read and its first write.
    pub(crate) async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => self.pool.begin().await,
        }
        .map_err(db)
    }

    /// Starts a write transaction for work that a crash may lose without harm because the job
    /// doing it runs again and redoes it: an import's batches (a re-run fills the places still
    /// empty), a job's progress. On PostgreSQL its commit does not wait for the write-ahead log
    /// to reach the disk (`synchronous_commit = off` for this transaction only): after a crash
    /// of the database server the last few such commits may be gone, never half of one, and
    /// the database stays consistent. The commit that ends a job (`finish_job`, or the import's
    /// final status) waits as usual, and flushing it flushes every commit before it, so a job
    /// that ended lost nothing. SQLite, in WAL mode with `synchronous = NORMAL`, never waits
    /// for the disk at commit, so there this is [`Store::begin_write`].
    pub(crate) async fn begin_redoable_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>> {
        let mut tx = self.begin_write().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SET LOCAL synchronous_commit = off")
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        Ok(tx)
    }

    /// Wakes this process's idle workers: a committed transaction queued jobs.
    pub(crate) fn wake_workers(&self) {
        self.jobs_queued.notify_waiters();
    }

    /// Completes when this process queues jobs (see [`Store::wake_workers`]); idle workers wait
    /// on it beside their poll.
    pub async fn jobs_queued(&self) {
        self.jobs_queued.notified().await;
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Whether the database answers within `within` (for `/health`, which must answer
    /// promptly even while the pool waits for a connection).
    pub async fn ping(&self, within: Duration) -> Result<()> {
        match tokio::time::timeout(within, sqlx::query("SELECT 1").execute(&self.pool)).await {
            Ok(done) => done.map(|_| ()).map_err(db),
            Err(_) => Err(Error::dependency_down("the database did not answer in time")),
        }
    }

    /// Asks the database and the blob store at once whether they answer, each within
    /// `within`; a store without blobs (a tool that never set them) has nothing to check there.
    pub async fn check_dependencies(&self, within: Duration) -> Dependencies {
        let blobs = async {
            match &self.blobs {
                None => Ok(()),
                Some(blobs) => match tokio::time::timeout(within, blobs.ping()).await {
                    Ok(answer) => answer,
                    Err(_) => Err(Error::dependency_down("the blob store did not answer in time")),
                },
            }
        };
        let (database, blob_store) = tokio::join!(self.ping(within), blobs);
        Dependencies {
            database: database.is_ok(),
            blob_store: blob_store.is_ok(),
        }
    }

    /// The connection pool as it is now: (connections open, of which idle). For `/metrics`.
    pub fn pool_usage(&self) -> (u32, usize) {
        (self.pool.size(), self.pool.num_idle())
    }

    /// The most connections the pool opens.
    pub fn pool_capacity(&self) -> u32 {
        self.pool.options().get_max_connections()
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A value for a query whose parameters are decided at run time.
pub(crate) enum Param {
    Int(i64),
    Text(String),
    Float(f64),
    MaybeInt(Option<i64>),
    MaybeText(Option<String>),
}

impl Param {
    /// Binds the parameters in order, `$1` first.
    pub(crate) fn bind_all<'q>(
        mut query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
        params: Vec<Param>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        for param in params {
            query = match param {
                Param::Int(v) => query.bind(v),
                Param::Text(v) => query.bind(v),
                Param::Float(v) => query.bind(v),
                Param::MaybeInt(v) => query.bind(v),
                Param::MaybeText(v) => query.bind(v),
            };
        }
        query
    }
}

/// Most parameters one statement binds (SQLite allows 32,766; PostgreSQL 65,535).
const MAX_STATEMENT_PARAMS: usize = 30_000;

/// Inserts rows with as few multi-row statements as the parameter limit allows. `tail` follows
/// the VALUES list (an `ON CONFLICT` clause, say) and binds nothing. Answers how many rows were
/// written (a conflict that does nothing writes none).
pub(crate) async fn insert_many(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    table: &str,
    columns: &[&str],
    rows: Vec<Vec<Param>>,
    tail: &str,
) -> Result<u64> {
    let backend = match tx.backend_name() {
        "PostgreSQL" => Backend::Postgres,
        _ => Backend::Sqlite,
    };
    let per_statement = (MAX_STATEMENT_PARAMS / columns.len()).max(1);
    let mut written = 0;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<Vec<Param>> = rows.by_ref().take(per_statement).collect();
        let sql = format!(
            "INSERT INTO {table} ({}) VALUES {} {tail}",
            columns.join(", "),
            placeholders(chunk.len(), columns.len(), backend)
        );
        written += Param::bind_all(sqlx::query(&sql), chunk.into_iter().flatten().collect())
            .execute(&mut **tx)
            .await
            .map_err(db)?
            .rows_affected();
    }
    Ok(written)
}

/// `(…), (…)`: `rows` tuples of `width` placeholders. SQLite gets anonymous `?` placeholders:
/// it looks a numbered one up by name with a linear scan for every parameter bound, which
/// makes binding a statement of thousands of parameters quadratic (it took 70 % of an import's
/// time). PostgreSQL needs `$1, $2, …` and binds them by position.
pub(crate) fn placeholders(rows: usize, width: usize, backend: Backend) -> String {
    let mut sql = String::with_capacity(rows * width * 5);
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..width {
            if column > 0 {
                sql.push_str(", ");
            }
            match backend {
                Backend::Sqlite => sql.push('?'),
                Backend::Postgres => {
                    sql.push('$');
                    sql.push_str(&(row * width + column + 1).to_string());
                }
            }
        }
        sql.push(')');
    }
    sql
}

/// Counts what a limit covers inside the transaction that will write, after locking the row
/// the limit belongs to (`owner`: table and id), so that concurrent writers at the edge of the
/// limit queue behind each other instead of all counting the same number and all passing.
/// The lock is [`lock_row_for_no_key_update`]: the counters queue behind each other, but a
/// transaction only inserting a row that refers to the owner (a foreign key's key-share
/// check: an invitation naming its sender, a project its workspace) does not wait for them,
/// which could close a cycle (a user's acceptance of an invitation holding the user and
/// waiting for the workspace, while an invitation that user sent held the workspace and
/// waited for the user). SQLite's write transactions (`BEGIN IMMEDIATE`) already hold the one
/// write lock.
pub(crate) async fn count_under_lock(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    owner: (&str, i64),
    count_sql: &str,
) -> Result<i64> {
    lock_row_for_no_key_update(tx, owner).await?;
    sqlx::query_scalar(count_sql)
        .bind(owner.1)
        .fetch_one(&mut **tx)
        .await
        .map_err(db)
}

/// Locks one row (`owner`: table and id) until the transaction ends, so that writers that
/// check what hangs from it before they add to it queue behind each other. On PostgreSQL this is
/// `SELECT ... FOR UPDATE`; SQLite's write transactions (`BEGIN IMMEDIATE`) already hold the one
/// write lock.
pub(crate) async fn lock_row(tx: &mut sqlx::Transaction<'static, sqlx::Any>, owner: (&str, i64)) -> Result<()> {
    lock_row_as(tx, owner, "FOR UPDATE").await
}

/// [`lock_row`] that other writers of the row queue behind but rows that only refer to it do
/// not: on PostgreSQL `FOR NO KEY UPDATE`, which a foreign key's check (key share) does not
/// conflict with, for a row whose dependants are written in the same transactions.
pub(crate) async fn lock_row_for_no_key_update(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    owner: (&str, i64),
) -> Result<()> {
    lock_row_as(tx, owner, "FOR NO KEY UPDATE").await
}

/// Holds a project's row as its rows' foreign keys do (`FOR KEY SHARE` on PostgreSQL), first in
/// a transaction that changes rows of the project: a deletion of the project, which holds its
/// row and then takes its rows, is waited for whole (after which the project is not found)
/// rather than each waiting for a row the other holds.
pub(crate) async fn hold_project(tx: &mut sqlx::Transaction<'static, sqlx::Any>, project_id: i64) -> Result<()> {
    let lock = if tx.backend_name() == "PostgreSQL" {
        " FOR KEY SHARE"
    } else {
        ""
    };
    let found: Option<i64> = sqlx::query_scalar(&format!("SELECT id FROM projects WHERE id = $1{lock}"))
        .bind(project_id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    found.map(|_| ()).ok_or_else(|| Error::not_found("project"))
}

/// [`lock_row`] as a foreign key's check takes it (`FOR KEY SHARE`): the row's deletion and
/// key updates wait, other writers of it do not.
pub(crate) async fn lock_row_for_key_share(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    owner: (&str, i64),
) -> Result<()> {
    lock_row_as(tx, owner, "FOR KEY SHARE").await
}

async fn lock_row_as(tx: &mut sqlx::Transaction<'static, sqlx::Any>, owner: (&str, i64), lock: &str) -> Result<()> {
    let (table, id) = owner;
    if tx.backend_name() == "PostgreSQL" {
        sqlx::query(&format!("SELECT id FROM {table} WHERE id = $1 {lock}"))
            .bind(id)
            .execute(&mut **tx)
            .await
            .map_err(db)?;
    }
    Ok(())
}

/// `$first, $first+1, …`: `count` numbered placeholders, for an `IN (…)` list.
pub(crate) fn numbered(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error of a request the database did not answer (503 with `Retry-After`): what a
/// connection refused or cut becomes, and what a caller that stopped waiting answers.
pub fn database_unreachable() -> Error {
    Error::dependency_down("the database is unreachable")
}

/// Maps a database failure into the error catalogue, logging what the client must not see.
pub(crate) fn db(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::RowNotFound => Error::not_found("object"),
        e if is_unreachable(e) => {
            tracing::error!(error = %e, "database unavailable");
            database_unreachable()
        }
        sqlx::Error::Database(d) if d.is_unique_violation() => Error::conflict("the object exists already"),
        // PostgreSQL ended this transaction to let another go on (a deadlock, 40P01, or a
        // serialisation failure, 40001): nothing was written, and the same request sent again
        // meets no such race (a job's attempt counts as a transient failure and runs again).
        sqlx::Error::Database(d) if matches!(d.code().as_deref(), Some("40P01" | "40001")) => {
            tracing::warn!(error = %e, "transaction ended by the database to resolve a conflict");
            Error {
                retry_after: Some(1),
                ..Error::unavailable("the request met a concurrent change to the same data; send it again")
            }
        }
        // Rows are checked before they are written to; a row they refer to can still be deleted
        // in between (a tag on a segment whose document got a new text meanwhile).
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => {
            Error::conflict("something this refers to was deleted meanwhile; read it again")
        }
        _ => {
            tracing::error!(error = %e, "database error");
            Error::internal()
        }
    }
}

/// Whether an error says the database cannot be reached now (as opposed to a bad query): no
/// connection to be had in time, a connection cut or refused (mid-query, or mid-handshake,
/// where sqlx reports the cut as a protocol error), or PostgreSQL saying it is shutting down,
/// starting up or out of connections (SQLSTATE class 08, 57P01-57P03, 53300).
fn is_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(d) => d
            .code()
            .is_some_and(|code| code.starts_with("08") || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300")),
        _ => false,
    }
}

/// Like [`db`], but names what already exists on a unique violation.
pub(crate) fn db_unique(what: &'static str) -> impl Fn(sqlx::Error) -> Error {
    move |e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => Error::conflict(what),
        _ => db(e),
    }
}

/// Parses a role or enum stored as text; a bad value is a corrupt row, logged as such.
pub(crate) fn parse_stored<T: FromStr<Err = String>>(text: &str) -> Result<T> {
    text.parse().map_err(|e: String| {
        tracing::error!(error = %e, "corrupt stored value");
        Error::internal()
    })
}
