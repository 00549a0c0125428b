//! The import job that fills a document group in fenced batches, from the documents in its
//! input or from an uploaded file (`file_import`).

use crate::file_import::import_file;
use crate::prepare::prepare_document;
use crate::progress::Phase;
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use crate::uploaded::Filled;
use crate::writes::{Writes, transient};
use lector_core::{NotificationType, Result};
use lector_extract::sandbox::Sandbox;
pub use lector_store::ImportedDocument;
use lector_store::{ImportPayload, Lease, NewDocument, Store};
use lector_text::Language;

/// Documents stored per transaction during an import.
pub const IMPORT_BATCH: usize = 500;

/// Fills a document group from the documents in its job's input or from an uploaded file;
/// document files (PDFs, images) are read in the sandbox.
#[derive(Debug)]
pub struct ImportDocuments(pub Sandbox);

impl Handler for ImportDocuments {
    type Payload = ImportPayload;

    async fn run(&self, job: JobContext<'_>, payload: ImportPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, stopping } = job;
        let filled = fill_group(store, lease, stopping, (&payload, Phase::WHOLE), &self.0).await?;
        Ok(finished(lease, &payload, &filled))
    }
}

/// Fills the group of `payload` from its job's input or its uploaded file, then marks the group
/// CREATED. Used by the import job and by jobs that bring their own documents (batch analyses).
/// Each batch is a checkpoint: once `stopping` is requested it answers [`JobError::stopped`],
/// and a later run skips the batches stored. Its progress is reported as `phase` of the job's.
pub async fn fill_group(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    (payload, phase): (&ImportPayload, Phase),
    sandbox: &Sandbox,
) -> Result<Filled, JobError> {
    if let Some(file) = &payload.file {
        return import_file(store, lease, stopping, (payload, phase), file, sandbox).await;
    }
    let documents: Vec<ImportedDocument> = store.job_input(lease).await.map_err(JobError::from_store)?;
    import(store, lease, stopping, (payload, phase), &documents).await
}

/// The import job's outcome: a notice of what the group holds.
fn finished(lease: &Lease, payload: &ImportPayload, filled: &Filled) -> Outcome {
    let (kind, text) = if filled.blank > 0 {
        (
            NotificationType::Warning,
            format!(
                "{} in group {}; {} with an empty text left out.",
                documents_are(filled.stored),
                payload.group_id,
                rows_were(filled.blank)
            ),
        )
    } else {
        (
            NotificationType::Info,
            format!("{} in group {}.", documents_are(filled.stored), payload.group_id),
        )
    };
    Outcome {
        result: serde_json::json!({
            "group_id": payload.group_id,
            "documents": filled.stored,
            "rejected_rows": filled.blank,
            "stored_by_this_run": filled.added,
        }),
        notice: notice_for(lease, kind, "Import finished", text),
    }
}

async fn import(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    (payload, phase): (&ImportPayload, Phase),
    all: &[ImportedDocument],
) -> Result<Filled, JobError> {
    let language = Language::from_code_or_default(Some(&payload.language));
    let total = all.len();
    let (mut added, mut finished) = (0, 0);
    let mut writes = Writes::default();
    for (batch, documents) in all.chunks(IMPORT_BATCH).enumerate() {
        if stopping.requested() {
            writes.settle().await;
            return Err(JobError::stopped());
        }
        let first = batch * IMPORT_BATCH;
        let prepared: Vec<(i64, NewDocument)> = documents
            .iter()
            .enumerate()
            .map(|(offset, d)| {
                let meta = serde_json::Value::Object(d.meta.clone());
                let document = prepare_document(&d.text, meta, language, payload.split);
                ((first + offset) as i64, document)
            })
            .collect();
        writes.start(store, lease, payload, prepared).await?;
        while writes.full(store) {
            added += finish_batch(store, lease, &mut writes, (&mut finished, total), phase).await?;
        }
    }
    while !writes.is_empty() {
        added += finish_batch(store, lease, &mut writes, (&mut finished, total), phase).await?;
    }
    store
        .set_import_status(lease, payload.group_id, "CREATED")
        .await
        .map_err(transient)?;
    Ok(Filled {
        stored: total as u64,
        blank: 0,
        added,
    })
}

/// Waits for the oldest batch being written and reports the share of the documents written
/// (as `phase` of the job's progress); answers how many documents the batch stored.
async fn finish_batch(
    store: &Store,
    lease: &Lease,
    writes: &mut Writes,
    (finished, total): (&mut usize, usize),
    phase: Phase,
) -> Result<usize, JobError> {
    let added = writes.finish_oldest().await?;
    *finished += 1;
    let written = (*finished * IMPORT_BATCH).min(total);
    store
        .report_progress(lease, phase.of_job(written as f64 / total.max(1) as f64))
        .await
        .map_err(transient)?;
    Ok(added)
}

/// "1 document is", "2 documents are": the start of a notice.
pub(crate) fn documents_are(count: u64) -> String {
    match count {
        1 => "1 document is".to_owned(),
        n => format!("{n} documents are"),
    }
}

/// "1 row was", "3 rows were".
pub(crate) fn rows_were(count: u64) -> String {
    match count {
        1 => "1 row was".to_owned(),
        n => format!("{n} rows were"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn notices_count_in_words() {
        assert_eq!(super::documents_are(1), "1 document is");
        assert_eq!(super::documents_are(0), "0 documents are");
        assert_eq!(super::rows_were(1), "1 row was");
        assert_eq!(super::rows_were(12), "12 rows were");
    }
}
