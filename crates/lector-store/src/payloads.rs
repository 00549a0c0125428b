//! The payload of every kind of job, one struct per kind (see `jobs.rs` for the trait and how
//! a payload is stored).
//!
//! They live here, in the crate both sides see: the store code (or a route) that enqueues a
//! job builds the struct, and the handler in `lector-jobs` receives the same struct decoded.
//! Nothing here runs a job; a struct only says what its job needs and what its failure leaves.

use crate::Store;
use crate::jobs::{Failure, JobPayload, JobResource, NewJob};
use lector_core::Result;
pub use lector_core::labeling::LabeledColumns;
use serde::{Deserialize, Serialize};

/// The kind of job that imports documents into a group.
pub const IMPORT_JOB: &str = ImportPayload::KIND;
/// The kind of job that fills a clone.
pub const CLONE_JOB: &str = ClonePayload::KIND;
/// The kind of job that trains a model.
pub const TRAINING_JOB: &str = TrainingPayload::KIND;
/// The kind of job that sends one mail.
pub const MAIL_JOB: &str = MailPayload::KIND;
/// The kind of job that mails a password reset, if the address has an account.
pub const PASSWORD_RESET_JOB: &str = PasswordResetPayload::KIND;
/// The kind of job that runs a batch analysis.
pub const ANALYSIS_JOB: &str = AnalysisPayload::KIND;
/// The kind of job that fills a labeling session from a labeled-data file.
pub const LABELED_IMPORT_JOB: &str = LabeledImportPayload::KIND;
/// The kind of job that posts one HITL review event to its configuration's webhook.
pub const WEBHOOK_JOB: &str = WebhookPayload::KIND;
/// The kind of job that fills a correction session with a model's predictions.
pub const CORRECTION_JOB: &str = CorrectionPayload::KIND;

/// Fills a document group (PROCESSING until done) from the documents in the job's input (a
/// `Vec<ImportedDocument>`), or from an uploaded file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportPayload {
    pub project_id: i64,
    pub group_id: i64,
    /// The language code the texts are segmented in.
    pub language: String,
    /// Whether texts are split into sentences.
    pub split: bool,
    /// Set when the documents come from an uploaded file.
    #[serde(default)]
    pub file: Option<FileSource>,
}

impl JobPayload for ImportPayload {
    const KIND: &'static str = "import_documents";
    const MAX_ATTEMPTS: i64 = 5;

    fn failure(&self) -> Failure {
        let advice = if self.file.is_some() {
            "upload the file again"
        } else {
            "upload the documents again"
        };
        Failure::of(
            Some(JobResource::DocumentGroup(self.group_id)),
            "Import failed",
            format!("The import into group {}", self.group_id),
            advice,
        )
    }
}

/// The import options a caller chooses; the store adds the project and group it creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    pub language: String,
    pub split: bool,
    pub file: Option<FileSource>,
}

/// A document as an import job carries it in its input.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ImportedDocument {
    pub text: String,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// Which uploaded file and column an import reads.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct FileSource {
    pub upload_id: uuid::Uuid,
    /// The text column by 0-based index …
    pub column_index: Option<usize>,
    /// … or by name (the default is column 0).
    pub column_name: Option<String>,
    /// Whether the first row is a header (CSV, TXT, XLSX).
    pub header_first: bool,
    /// The reader's byte limit (the configured upload limit).
    pub max_bytes: u64,
    /// The reader's row limit (`uploads.max_rows`); jobs queued before it existed get the default.
    #[serde(default = "default_max_rows")]
    pub max_rows: u64,
}

fn default_max_rows() -> u64 {
    lector_core::config::DEFAULT_MAX_ROWS
}

/// Fills a cloned project (CLONING until done) with copies of the original's contents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClonePayload {
    pub source_project_id: i64,
    pub project_id: i64,
}

impl JobPayload for ClonePayload {
    const KIND: &'static str = "clone_project";
    const MAX_ATTEMPTS: i64 = 5;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::Project(self.project_id)),
            "Copy failed",
            format!(
                "The copy of project {} into project {}",
                self.source_project_id, self.project_id
            ),
            "delete the incomplete copy and clone the project again",
        )
    }
}

/// Trains a model (QUEUED until the job starts). `test_session_ids` empty: the training
/// sessions' annotated segments are split 80/20 (stratified) by `seed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainingPayload {
    pub model_id: i64,
    /// The model's display name, for the failure notice.
    pub model_name: String,
    pub train_session_ids: Vec<i64>,
    pub test_session_ids: Vec<i64>,
    pub seed: u64,
}

impl JobPayload for TrainingPayload {
    const KIND: &'static str = "train_model";
    const MAX_ATTEMPTS: i64 = 3;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::Model(self.model_id)),
            "Model training failed",
            format!("Training model {:?}", self.model_name),
            "train a new model once the cause is mended",
        )
    }
}

/// Runs a model over the documents of a group (a batch analysis, QUEUED until the job starts):
/// with `import`, first fills the analysis's own group from the texts it came with (the job's
/// input, or an uploaded file), as an import would.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalysisPayload {
    pub analysis_id: i64,
    /// The analysis's name, for the failure notice.
    pub analysis_name: String,
    pub model_id: i64,
    pub project_id: i64,
    pub group_id: i64,
    #[serde(default)]
    pub import: Option<ImportPayload>,
}

impl JobPayload for AnalysisPayload {
    const KIND: &'static str = "analyze_documents";
    const MAX_ATTEMPTS: i64 = 3;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::Analysis(self.analysis_id)),
            "Analysis failed",
            format!("The analysis {:?}", self.analysis_name),
            "start a new analysis once the cause is mended",
        )
    }
}

/// Fills a labeling session (STARTED until done) and its document group (PROCESSING) from an
/// uploaded labeled-data file: its rows become documents with tagged segments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabeledImportPayload {
    pub project_id: i64,
    pub session_id: i64,
    pub group_id: i64,
    /// Who the tags and marks are by.
    pub user_id: i64,
    pub upload_id: uuid::Uuid,
    /// The language code the texts are stored in.
    pub language: String,
    /// The columns, by 0-based index in the file's header (checked when the job was queued).
    pub columns: LabeledColumns,
    /// The reader's byte limit (the configured upload limit).
    pub max_bytes: u64,
    /// The reader's row limit (`uploads.max_rows`); jobs queued before it existed get the default.
    #[serde(default = "default_max_rows")]
    pub max_rows: u64,
}

impl JobPayload for LabeledImportPayload {
    const KIND: &'static str = "import_labeled";
    /// 2: `columns.segment` keeps a sentence said twice as two segments, and an `annotated`
    /// column is read as written. A worker of version 1 would ignore both, so it leaves these
    /// imports to a newer worker; a newer worker reads version 1 (without `segment`) as it was.
    const VERSION: u32 = 2;
    const OLDEST_READ: u32 = 1;
    const MAX_ATTEMPTS: i64 = 5;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::Session(self.session_id)),
            "Import failed",
            format!("The import of labeled data into session {}", self.session_id),
            "correct the file and upload it again",
        )
    }
}

/// Sends one plain-text mail. The body (it may carry a one-time token) is the job's input, a
/// `String`, deleted when the job ends; the payload keeps only the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailPayload {
    pub to: String,
    pub subject: String,
    /// What a person can do when the mail cannot be sent, e.g. "resend the invitation".
    pub advice: String,
}

impl JobPayload for MailPayload {
    const KIND: &'static str = "send_mail";
    /// With mail's retry delays (`jobs::retry_delay_secs`), about 24 hours of attempts.
    const MAX_ATTEMPTS: i64 = 31;

    fn failure(&self) -> Failure {
        Failure::of(
            None,
            "Mail not sent",
            format!("The mail \"{}\" to {}", self.subject, self.to),
            self.advice.clone(),
        )
    }
}

/// Mails a password-reset token to `email` if it is an active account's address, and does
/// nothing otherwise. The request that asks for it only queues this job, the same one whatever
/// the address, so neither its answer nor its time tells whether the address is registered.
/// The job's input is a [`PasswordResetMail`]; the token is recorded when the job finds the
/// account, and the mail is retried like any other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordResetPayload {
    pub email: String,
}

impl JobPayload for PasswordResetPayload {
    const KIND: &'static str = "send_password_reset";
    /// With mail's retry delays, about an hour: the token's default lifetime.
    const MAX_ATTEMPTS: i64 = 8;

    /// Nobody is told: the asker is not signed in, and the address may not be anyone's.
    fn failure(&self) -> Failure {
        Failure::of(
            None,
            "Mail not sent",
            "A password-reset mail",
            "ask for a new reset mail",
        )
    }
}

/// The secret half of a password-reset job, kept as its input (deleted when the job ends):
/// the token's hash and expiry, and the mail that carries the token itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasswordResetMail {
    pub token_hash: String,
    /// Microseconds since the epoch.
    pub expires: i64,
    pub subject: String,
    pub text: String,
}

/// Posts one review event to a HITL configuration's `webhook_url`: JSON `{id, type, created,
/// data}` signed with the configuration's secret when it is sent (so the signature's time is
/// the delivery's). Retried with backoff; a receiver that never takes it costs nothing else.
///
/// The payload names the configuration, not its address or secret: both are read when the
/// event is sent, so a changed `webhook_url` gets the events still queued, a removed one (or a
/// deleted configuration) gets none, and no secret is kept in the jobs table. The event's
/// `data` (the review's values) is the job's input, deleted when the job ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookPayload {
    pub hitl_id: i64,
    /// The event's id (a UUID), the same on every attempt so a receiver can drop repeats.
    pub event_id: String,
    /// `review.created` or `review.submitted`.
    pub event_type: String,
    /// RFC 3339.
    pub created: String,
}

impl JobPayload for WebhookPayload {
    const KIND: &'static str = "deliver_webhook";
    /// 2: the address, secret and data left the payload.
    const VERSION: u32 = 2;
    /// As many as a mail's: retried over about a day (`retry_delay_secs`).
    const MAX_ATTEMPTS: i64 = 31;

    fn failure(&self) -> Failure {
        Failure::of(
            None,
            "Webhook not delivered",
            format!(
                "The {} event {} to the webhook of review configuration {}",
                self.event_type, self.event_id, self.hitl_id
            ),
            "check that the receiver answers 2xx, then submit or create the review again",
        )
    }
}

/// Fills a correction session (PREDICTING until done): the model tags the documents named, or
/// the project's first documents, and the least sure of those become the session's, each
/// segment with the model's tags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrectionPayload {
    pub project_id: i64,
    pub session_id: i64,
    pub model_id: i64,
    /// How many documents the session holds when none are named.
    pub sample_size: usize,
    /// Breaks ties between equally sure documents: the same seed picks the same sample.
    pub seed: u64,
    /// The documents to correct, in this order; `None`: the least sure are chosen.
    pub document_ids: Option<Vec<i64>>,
}

impl JobPayload for CorrectionPayload {
    const KIND: &'static str = "predict_correction";
    const MAX_ATTEMPTS: i64 = 3;

    fn failure(&self) -> Failure {
        Failure::of(
            Some(JobResource::Session(self.session_id)),
            "Correction session failed",
            format!("Predicting the documents of correction session {}", self.session_id),
            "delete the session and create it again once the cause is mended",
        )
    }
}

impl Store {
    /// Queues one mail (a `send_mail` job): the caller never waits on the mail server, and a
    /// server that hiccups only delays the message. `notify` is the user told, once, when the
    /// mail cannot be sent after every attempt; answers the job's id.
    pub async fn queue_mail(&self, mail: &MailPayload, body: &str, notify: Option<i64>) -> Result<i64> {
        let mut job = NewJob::of(mail)?.with_input(&body)?;
        if let Some(user_id) = notify {
            job = job.owned_by(user_id);
        }
        let job = self.enqueue(job).await?;
        tracing::info!(job.id = job.id, "mail queued");
        Ok(job.id)
    }

    /// Queues a password-reset mail to `email` (see [`PasswordResetPayload`]): one insert,
    /// whatever the address.
    pub async fn queue_password_reset(&self, email: &str, mail: &PasswordResetMail) -> Result<()> {
        let payload = PasswordResetPayload {
            email: email.to_owned(),
        };
        self.enqueue(NewJob::of(&payload)?.with_input(mail)?).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::retry_delay_secs;

    /// The delays before each retry, after attempts 1 to `cap - 1` (the last attempt is not
    /// retried).
    fn schedule(kind: &str, cap: i64) -> Vec<i64> {
        (1..cap).map(|attempt| retry_delay_secs(kind, attempt)).collect()
    }

    #[test]
    fn mail_is_retried_for_about_a_day() {
        let reset = schedule(PASSWORD_RESET_JOB, PasswordResetPayload::MAX_ATTEMPTS);
        let reset_total: i64 = reset.iter().sum();
        assert!((3600..=2 * 3600).contains(&reset_total), "{reset:?}");
        let mail = schedule(MAIL_JOB, MailPayload::MAX_ATTEMPTS);
        assert_eq!(mail[..9], [30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
        assert!(mail.iter().all(|&d| d <= 3600), "{mail:?}");
        let total: i64 = mail.iter().sum();
        assert!((23 * 3600..=26 * 3600).contains(&total), "{total} s");
        // An outage of a few minutes is outlived by several attempts.
        let first_five: i64 = mail[..5].iter().sum();
        assert!(first_five >= 15 * 60, "{first_five} s");
    }

    /// A lease on a job of `kind` whose stored payload is `payload`.
    fn lease(kind: &str, payload: serde_json::Value) -> crate::Lease {
        let now = lector_core::time::Timestamp::now();
        crate::Lease {
            job: crate::Job {
                id: 1,
                kind: kind.into(),
                payload,
                state: crate::JobState::Running,
                workspace_id: None,
                project_id: None,
                user_id: None,
                attempts: 1,
                max_attempts: 5,
                progress: 0.0,
                result: None,
                error: None,
                created: now,
                updated: now,
                finished: None,
            },
            owner: "w".into(),
            token: 1,
            unrunnable_since: None,
        }
    }

    #[test]
    fn a_labeled_import_of_the_version_before_still_reads() {
        let columns = serde_json::json!({"text": 0, "class": 1, "label": null, "document": null,
            "part": null, "annotated": null});
        let payload = |version: u32| {
            serde_json::json!({"project_id": 1, "session_id": 2, "group_id": 3, "user_id": 4,
                "upload_id": "00000000-0000-4000-8000-000000000000", "language": "en", "columns": columns,
                "max_bytes": 1000, "max_rows": 10, "version": version})
        };
        let read = lease(LabeledImportPayload::KIND, payload(1)).payload::<LabeledImportPayload>();
        assert_eq!(read.unwrap().columns.segment, None);
        let written = NewJob::of(&LabeledImportPayload {
            columns: serde_json::from_value(columns.clone()).unwrap(),
            ..lease(LabeledImportPayload::KIND, payload(2)).payload().unwrap()
        })
        .unwrap();
        assert_eq!(written.payload["version"], 2);
        let future = lease(LabeledImportPayload::KIND, payload(3)).payload::<LabeledImportPayload>();
        let error = future.unwrap_err().detail;
        assert!(
            error.contains("version 3 where this Lector reads versions 1 to 2"),
            "{error}"
        );
        // An older worker leaves a version-2 import to a newer one.
        assert!(lease(LabeledImportPayload::KIND, payload(2)).awaits_newer_worker(1));
    }

    #[test]
    fn other_jobs_keep_their_backoff() {
        assert_eq!(
            schedule(ImportPayload::KIND, ImportPayload::MAX_ATTEMPTS),
            [2, 4, 8, 16]
        );
    }

    /// A receiver down for a redeploy or a night still gets the event; before, the retries
    /// ended four minutes after the first attempt.
    #[test]
    fn webhook_posts_are_retried_for_about_a_day() {
        let posts = schedule(WebhookPayload::KIND, WebhookPayload::MAX_ATTEMPTS);
        assert_eq!(posts[..4], [30, 60, 120, 240]);
        assert!(posts.iter().all(|&d| d <= 3600), "{posts:?}");
        let total: i64 = posts.iter().sum();
        assert!((23 * 3600..=26 * 3600).contains(&total), "{total} s");
    }
}
