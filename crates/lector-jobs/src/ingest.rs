//! Bringing documents in: normalising and segmenting a text (for single documents and
//! imports alike), and the import job that fills a document group in fenced batches.

use crate::file_import::{FileSource, import_file};
use crate::runner::{Handler, HandlerFuture, JobError, Outcome, notice_for};
use lector_core::{NotificationType, Result};
use lector_store::{Lease, NewDocument, NewSegment, Store};
use lector_text::{Language, normalize, segment};
use serde::Deserialize;

/// Documents stored per transaction during an import.
pub const IMPORT_BATCH: usize = 500;

/// Normalises a text (NFC) and splits it into sentences of `language`, or keeps it whole.
pub fn prepare_document(text: &str, meta: serde_json::Value, language: Language, split: bool) -> NewDocument {
    let text = normalize(text);
    let segments = segment(&text, language, split)
        .into_iter()
        .map(|s| NewSegment {
            start: s.start() as i64,
            end: s.end() as i64,
            text: s.text,
        })
        .collect();
    NewDocument {
        text,
        meta,
        language: language.code().to_owned(),
        segments,
    }
}

/// A document as an import job carries it.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct ImportedDocument {
    pub text: String,
    #[serde(default)]
    pub meta: serde_json::Map<String, serde_json::Value>,
}

/// The parameters of an import job; the documents are its input, or an uploaded file is.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ImportPayload {
    pub(crate) project_id: i64,
    pub(crate) group_id: i64,
    pub(crate) language: String,
    pub(crate) split: bool,
    /// Set when the documents come from an uploaded file.
    #[serde(default)]
    pub(crate) file: Option<FileSource>,
}

/// Fills a document group from the documents in its job's input or from an uploaded file.
#[derive(Debug, Default)]
pub struct ImportDocuments;

impl Handler for ImportDocuments {
    fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease) -> HandlerFuture<'a> {
        Box::pin(async move {
            let payload: ImportPayload = serde_json::from_value(lease.job.payload.clone())
                .map_err(|e| JobError::fatal(format!("the import's payload is unreadable: {e}"), None))?;
            if let Some(file) = &payload.file {
                let outcome = import_file(store, lease, &payload, file).await;
                if let Err(e) = &outcome
                    && !e.retryable
                {
                    // A file that cannot be read is final: the group says so.
                    let _ = store.set_import_status(lease, payload.group_id, "FAILED").await;
                }
                return outcome;
            }
            let input = store
                .job_input(lease)
                .await
                .map_err(|e| JobError::transient(e.detail))?;
            let documents: Vec<ImportedDocument> = serde_json::from_value(input)
                .map_err(|e| JobError::fatal(format!("the import's documents are unreadable: {e}"), None))?;
            import(store, lease, &payload, &documents)
                .await
                .map_err(|e| JobError::transient(e.detail))
        })
    }
}

async fn import(store: &Store, lease: &Lease, payload: &ImportPayload, all: &[ImportedDocument]) -> Result<Outcome> {
    let language = Language::from_code_or_default(Some(&payload.language));
    let total = all.len();
    let mut added = 0;
    for (batch, documents) in all.chunks(IMPORT_BATCH).enumerate() {
        let prepared: Vec<NewDocument> = documents
            .iter()
            .map(|d| {
                prepare_document(
                    &d.text,
                    serde_json::Value::Object(d.meta.clone()),
                    language,
                    payload.split,
                )
            })
            .collect();
        let first = (batch * IMPORT_BATCH) as i64;
        added += store
            .import_batch(lease, payload.project_id, payload.group_id, first, &prepared)
            .await?;
        store
            .report_progress(lease, (first as usize + documents.len()) as f64 / total.max(1) as f64)
            .await?;
    }
    store.set_import_status(lease, payload.group_id, "CREATED").await?;
    let text = format!("{total} documents are in group {}.", payload.group_id);
    Ok(Outcome {
        result: serde_json::json!({"group_id": payload.group_id, "documents": total, "stored_by_this_run": added}),
        notice: notice_for(lease, NotificationType::Info, "Import finished", text),
    })
}
