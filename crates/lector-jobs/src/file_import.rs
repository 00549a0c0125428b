//! Filling a document group from an uploaded table (`create_group` with a `file_id`); a PDF or
//! image goes to `document_file`.
//!
//! The file streams from the blob store through `lector-text`'s bounded readers on a blocking
//! thread, which also normalises and segments each row's text; the job writes the documents in
//! fenced batches, each at its row's place in the group, so a re-run after a crash skips what
//! was stored, as many at once as the store allows (`writes`). Two batches wait between the
//! reader and the writer at most: memory holds a few batches, whatever the file's size (CSV,
//! TXT, JSONL and XLSX stream their rows; JSON is loaded whole within the reader's limits). A
//! malformed row stops the import with the line or cell named.

use crate::document_file::import_document_file;
use crate::prepare::prepare_document;
use crate::progress::Phase;
use crate::runner::{JobError, panic_message};
use crate::uploaded::{Counting, Filled, gone};
use crate::writes::{Writes, transient};
use lector_extract::sandbox::Sandbox;
use lector_store::{FileSource, ImportPayload, Lease, NewDocument, Store};
use lector_text::{ColumnRef, Format, Language, Limits, ReadOptions, TextError, open_rows};
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// Rows read, prepared and written per batch (one fenced transaction each). 4,000 rather than
/// 1,000: on PostgreSQL the import ran 6–10 % faster, with a peak 20–35 MiB higher
/// (docs/BENCHMARKS.md, "Ingest through the API").
pub const FILE_BATCH: usize = 4000;

fn column(source: &FileSource) -> ColumnRef {
    ColumnRef::chosen(source.column_index, source.column_name.as_deref())
}

/// One batch from the reader: documents at their row's place, and rows left out (blank text).
struct Batch {
    documents: Vec<(i64, NewDocument)>,
    blank: u64,
}

pub(crate) async fn import_file(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    (payload, phase): (&ImportPayload, Phase),
    source: &FileSource,
    sandbox: &Sandbox,
) -> Result<Filled, JobError> {
    let upload = store.upload_for_job(lease, source.upload_id).await.map_err(gone)?;
    if lector_extract::DocumentFormat::from_name(&upload.format).is_some() {
        return import_document_file(store, lease, (payload, phase), &upload, sandbox).await;
    }
    let format = Format::from_extension(&upload.format)
        .ok_or_else(|| JobError::fatal(format!("files of format {:?} cannot be read", upload.format)))?;
    let file = store.open_upload(&upload).await.map_err(gone)?;
    let read = Arc::new(AtomicU64::new(0));
    let (sender, mut batches) = mpsc::channel(2);
    let reader = {
        let (source, read) = (source.clone(), read.clone());
        let language = Language::from_code_or_default(Some(&payload.language));
        let split = payload.split;
        tokio::task::spawn_blocking(move || {
            let file = Counting { inner: file, read };
            if let Err(e) = produce(file, format, &source, language, split, &sender) {
                let _ = sender.blocking_send(Err(e));
            }
        })
    };
    let size = upload.byte_size.max(1) as f64;
    let (mut stored, mut blank, mut added) = (0u64, 0u64, 0usize);
    let mut writes = Writes::default();
    let read = &*read;
    let report = |added| async move {
        let progress = 0.99 * read.load(Ordering::Relaxed) as f64 / size;
        store
            .report_progress(lease, phase.of_job(progress.min(0.99)))
            .await
            .map_err(transient)?;
        Ok::<usize, JobError>(added)
    };
    while let Some(batch) = batches.recv().await {
        let batch = match batch {
            Ok(batch) => batch,
            Err(e) => {
                reader.abort();
                return Err(failed(lease, e));
            }
        };
        if stopping.requested() {
            // The reader stops at its next batch: the channel closes with this function.
            writes.settle().await;
            return Err(JobError::stopped());
        }
        stored += batch.documents.len() as u64;
        blank += batch.blank;
        writes.start(store, lease, payload, batch.documents).await?;
        while writes.full(store) {
            added += report(writes.finish_oldest().await?).await?;
        }
    }
    while !writes.is_empty() {
        added += report(writes.finish_oldest().await?).await?;
    }
    // A reader that panicked closed its channel early: that is a failure, not the file's end.
    reader
        .await
        .map_err(|e| JobError::transient(format!("reading the file failed: {}", panic_message(e))))?;
    store
        .set_import_status(lease, payload.group_id, "CREATED")
        .await
        .map_err(transient)?;
    Ok(Filled { stored, blank, added })
}

/// Reads the file and sends prepared batches until the end, an error, or a closed channel.
fn produce(
    file: impl Read + Send,
    format: Format,
    source: &FileSource,
    language: Language,
    split: bool,
    sender: &mpsc::Sender<Result<Batch, TextError>>,
) -> Result<(), TextError> {
    let options = ReadOptions {
        header_first: source.header_first,
    };
    // A cell becomes a document's text (or a meta value): held to the length a document sent
    // through the API is held to, so what an import stores can be sent back unchanged.
    let limits = Limits {
        max_bytes: source.max_bytes,
        max_rows: source.max_rows,
        max_cell_chars: lector_core::validate::MAX_DOCUMENT_CHARS,
        ..Limits::default()
    };
    let mut rows = open_rows(format, file, options, &limits)?;
    let header = rows.header().to_vec();
    let column = column(source).resolve(&header)?;
    let mut position: i64 = 0;
    loop {
        let chunk = rows.next_batch(FILE_BATCH)?;
        if chunk.is_empty() {
            return Ok(());
        }
        let mut batch = Batch {
            documents: Vec::with_capacity(chunk.len()),
            blank: 0,
        };
        for row in chunk {
            let place = position;
            position += 1;
            let text = row.cells.get(column).map_or("", String::as_str);
            // Blank as it would be stored: NULs are dropped, and NFC never turns a visible
            // character into a space or back.
            if text.chars().all(|c| c == '\0' || c.is_whitespace()) {
                batch.blank += 1;
                continue;
            }
            let meta: serde_json::Map<String, serde_json::Value> = header
                .iter()
                .zip(&row.cells)
                .enumerate()
                .filter(|(index, (_, cell))| *index != column && !cell.is_empty())
                .map(|(_, (name, cell))| (name.clone(), serde_json::Value::String(cell.clone())))
                .collect();
            let document = prepare_document(text, serde_json::Value::Object(meta), language, split);
            batch.documents.push((place, document));
        }
        if sender.blocking_send(Ok(batch)).is_err() {
            return Ok(());
        }
    }
}

/// A file that cannot be imported fails for good (the group turns FAILED and the user hears
/// why, see `lector_store::Failure`); a read error is worth another attempt.
pub(crate) fn failed(lease: &Lease, error: TextError) -> JobError {
    if let TextError::Io(e) = &error {
        tracing::warn!(job.id = lease.job.id, error = %e, "reading an uploaded file failed");
        return JobError::transient("reading the uploaded file failed");
    }
    JobError::fatal(format!("the file cannot be imported: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table whose text cell is longer than a document may be stops the import, naming the
    /// limit; the reader's own limit (2^20 characters) let 48,576 more through, which a change
    /// of the document or a labeled upload of its download then refused.
    #[test]
    fn a_cell_longer_than_a_document_stops_the_import() {
        let source = FileSource {
            upload_id: uuid::Uuid::nil(),
            column_index: None,
            column_name: None,
            header_first: true,
            max_bytes: 8 << 20,
            max_rows: 10,
        };
        let long = "a".repeat(lector_core::validate::MAX_DOCUMENT_CHARS + 1);
        let file = format!("text\nshort\n{long}\n");
        let (sender, _batches) = mpsc::channel(4);
        let ended = produce(file.as_bytes(), Format::Csv, &source, Language::En, false, &sender);
        let error = ended.expect_err("the long cell is refused");
        assert!(error.to_string().contains("1000000"), "{error}");
    }
}
