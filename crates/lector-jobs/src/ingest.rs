//! The import job that fills a document group in fenced batches, from the documents in its
//! input or from an uploaded file (`file_import`).

use crate::file_import::import_file;
use crate::prepare::prepare_document;
use crate::runner::{Handler, HandlerFuture, JobError, Outcome, notice_for};
use lector_core::{NotificationType, Result};
pub use lector_store::ImportedDocument;
use lector_store::{ImportPayload, Lease, NewDocument, Store};
use lector_text::Language;

/// Documents stored per transaction during an import.
pub const IMPORT_BATCH: usize = 500;

/// Fills a document group from the documents in its job's input or from an uploaded file.
#[derive(Debug, Default)]
pub struct ImportDocuments;

impl Handler for ImportDocuments {
    type Payload = ImportPayload;

    fn run<'a>(&'a self, store: &'a Store, lease: &'a Lease, payload: ImportPayload) -> HandlerFuture<'a> {
        Box::pin(async move {
            if let Some(file) = &payload.file {
                return import_file(store, lease, &payload, file).await;
            }
            let documents: Vec<ImportedDocument> = store.job_input(lease).await.map_err(JobError::from_store)?;
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
