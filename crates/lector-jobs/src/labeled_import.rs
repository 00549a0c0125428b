//! Filling a labeling session from an uploaded labeled-data file (`upload_labeling_file`, or
//! `create_labeling_session` with a `file_id` or a source): the `import_labeled` job.
//!
//! The file streams from the blob store through `lector-text`'s bounded readers on a blocking
//! thread; [`lector_text::LabeledRows`] turns rows into documents one at a time (a document's
//! rows are consecutive), and each document is normalised and given its segments and tags here.
//! The job stores them in fenced batches, each document at its place in the session's group,
//! so a run that starts again after a crash skips what was stored and stores nothing twice.
//! Two batches wait between the reader and the writer at most: memory holds a few batches,
//! whatever the file's size. A malformed row, a tag the session does not offer, or a part not
//! found in its segment fails the job for good: the session turns FAILED and its user is told
//! why (see `lector_store::Failure`).
//!
//! A PDF or image becomes one document whose segments are its pages (`document_file`), none
//! annotated yet.
//!
//! It does not check the file's header: the request did that before queueing the job, and the
//! payload carries the columns' places.

use crate::document_file::{document_of, read_upload};
use crate::file_import::failed;
use crate::prepare::{prepare_document, use_given_segments};
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for, panic_message};
use crate::uploaded::{Counting, gone};
use lector_core::labeling::locate_part;
use lector_core::validate::{TextKind, check_chars};
use lector_core::{Error, ErrorCode, NotificationType};
use lector_extract::DocumentFormat;
use lector_extract::sandbox::Sandbox;
use lector_store::{LabeledDocument, LabeledImportPayload, Lease, NewTag, Store};
use lector_text::{
    ClientSegment, Format, LabeledRows, LabeledText, Language, Limits, ReadOptions, TextError, normalize, open_rows,
};
use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::mpsc;

/// Documents read, prepared and written per batch at most.
pub const LABELED_BATCH: usize = 200;
/// Segments a batch holds before it is written: a batch of 200 documents of many segments each
/// is written sooner, so a transaction (and the memory between reader and writer) holds about
/// this many segments, or the one document that has more (at most
/// [`lector_text::MAX_LABELED_SEGMENTS`], which `LabeledRows` enforces).
pub const LABELED_BATCH_SEGMENTS: usize = 10_000;

/// Fills a labeling session from an uploaded labeled-data file, or with the one document a
/// PDF or image becomes (read in `sandbox`), its pages to annotate.
#[derive(Debug)]
pub struct ImportLabeled(pub Sandbox);

impl Handler for ImportLabeled {
    type Payload = LabeledImportPayload;

    async fn run(&self, job: JobContext<'_>, payload: LabeledImportPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, stopping } = job;
        import_labeled(store, lease, stopping, &payload, &self.0).await
    }
}

/// What goes wrong while reading: the file (a [`TextError`]) or a document in it.
enum ReadError {
    File(TextError),
    Document(Error),
}

async fn import_labeled(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    payload: &LabeledImportPayload,
    sandbox: &Sandbox,
) -> Result<Outcome, JobError> {
    let upload = store.upload_for_job(lease, payload.upload_id).await.map_err(gone)?;
    let (position, added) = if DocumentFormat::from_name(&upload.format).is_some() {
        let read = read_upload(store, &upload, sandbox).await?;
        let pages = read.pages.len();
        let labeled = LabeledDocument {
            document: document_of(read, &upload.file_name, &payload.language)?,
            tags: vec![Vec::new(); pages],
            annotated: vec![false; pages],
        };
        let added = store
            .import_labeled(lease, payload, 0, &[labeled])
            .await
            .map_err(refused)?;
        (1, added)
    } else {
        import_rows(store, lease, stopping, payload, &upload).await?
    };
    let session = store
        .finish_labeled_import(lease, payload)
        .await
        .map_err(JobError::from_store)?;
    let text = format!(
        "{} in labeling session {:?} ({}).",
        crate::ingest::documents_are(position.max(0) as u64),
        session.name,
        session.id
    );
    Ok(Outcome {
        result: serde_json::json!({
            "session_id": payload.session_id,
            "group_id": payload.group_id,
            "documents": position,
            "stored_by_this_run": added,
        }),
        notice: notice_for(lease, NotificationType::Info, "Import finished", text),
    })
}

/// Stores the documents of a labeled-data file's rows in batches; answers how many documents
/// the file held and how many this run stored. Each batch is a checkpoint where a worker that
/// is stopping hands the job back.
async fn import_rows(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    payload: &LabeledImportPayload,
    upload: &lector_store::Upload,
) -> Result<(i64, usize), JobError> {
    let format = Format::from_extension(&upload.format)
        .ok_or_else(|| JobError::fatal(format!("files of format {:?} cannot be read", upload.format)))?;
    let file = store.open_upload(upload).await.map_err(gone)?;
    let read = Arc::new(AtomicU64::new(0));
    let (sender, mut batches) = mpsc::channel(2);
    let reader = {
        let read = read.clone();
        let language = Language::from_code_or_default(Some(&payload.language));
        let limits = Limits {
            max_bytes: payload.max_bytes,
            max_rows: payload.max_rows,
            ..Limits::default()
        };
        let columns = payload.columns;
        tokio::task::spawn_blocking(move || {
            let file = Counting { inner: file, read };
            if let Err(e) = produce(file, format, columns, &limits, language, &sender) {
                let _ = sender.blocking_send(Err(e));
            }
        })
    };
    let size = upload.byte_size.max(1) as f64;
    let (mut position, mut added) = (0i64, 0usize);
    while let Some(batch) = batches.recv().await {
        let documents = match batch {
            Ok(documents) => documents,
            Err(e) => {
                reader.abort();
                return Err(match e {
                    ReadError::File(e) => failed(lease, e),
                    ReadError::Document(e) => JobError::fatal(format!("the file cannot be imported: {}", e.detail)),
                });
            }
        };
        if stopping.requested() {
            reader.abort();
            return Err(JobError::stopped());
        }
        added += store
            .import_labeled(lease, payload, position, &documents)
            .await
            .map_err(|e| {
                reader.abort();
                refused(e)
            })?;
        position += documents.len() as i64;
        let progress = 0.99 * read.load(Ordering::Relaxed) as f64 / size;
        store
            .report_progress(lease, progress.min(0.99))
            .await
            .map_err(|e| JobError::transient(e.detail))?;
    }
    // A reader that panicked closed its channel early: that is a failure, not the file's end.
    reader
        .await
        .map_err(|e| JobError::transient(format!("reading the file failed: {}", panic_message(e))))?;
    Ok((position, added))
}

/// A store error while writing a batch: the file's own fault (a tag the session does not offer,
/// a second label in a LABEL project, a session deleted meanwhile) is final; others are worth
/// another attempt.
fn refused(error: Error) -> JobError {
    match error.code {
        ErrorCode::ValidationFailed | ErrorCode::Conflict => {
            JobError::fatal(format!("the file cannot be imported: {}", error.detail))
        }
        _ => JobError::from_store(error),
    }
}

/// Reads the file and sends batches of prepared documents until the end, an error, or a closed
/// channel.
fn produce(
    file: impl Read + Send,
    format: Format,
    columns: lector_store::LabeledColumns,
    limits: &Limits,
    language: Language,
    sender: &mpsc::Sender<Result<Vec<LabeledDocument>, ReadError>>,
) -> Result<(), ReadError> {
    let mut rows = open_rows(format, file, ReadOptions { header_first: true }, limits).map_err(ReadError::File)?;
    let mut labeled = LabeledRows::new(columns);
    let mut batch = Vec::with_capacity(LABELED_BATCH);
    let mut segments = 0usize;
    // Answers false when the job stopped listening.
    let send = |batch: &mut Vec<LabeledDocument>| {
        let full = std::mem::replace(batch, Vec::with_capacity(LABELED_BATCH));
        sender.blocking_send(Ok(full)).is_ok()
    };
    loop {
        let chunk = rows.next_batch(1000).map_err(ReadError::File)?;
        if chunk.is_empty() {
            break;
        }
        for row in chunk {
            if let Some(text) = labeled.push(&row.cells).map_err(ReadError::File)? {
                let document = labeled_document(text, language).map_err(ReadError::Document)?;
                segments += document.document.segments.len();
                batch.push(document);
                if batch.len() >= LABELED_BATCH || segments >= LABELED_BATCH_SEGMENTS {
                    segments = 0;
                    if !send(&mut batch) {
                        return Ok(());
                    }
                }
            }
        }
    }
    if let Some(text) = labeled.finish() {
        batch.push(labeled_document(text, language).map_err(ReadError::Document)?);
    }
    if !batch.is_empty() {
        send(&mut batch);
    }
    Ok(())
}

/// Turns a labeled text read from a file into a document with tagged segments: each segment is
/// kept as it is (not split again), and a tag's `part` is found in its segment.
pub fn labeled_document(mut labeled: LabeledText, language: Language) -> lector_core::Result<LabeledDocument> {
    // Normalise first, so the spans computed here hold for the stored text.
    for segment in &mut labeled.segments {
        segment.text = normalize(&segment.text);
    }
    let (text, spans) = labeled.text_and_spans();
    let mut document = prepare_document(&text, serde_json::Value::Object(Default::default()), language, false);
    let given: Vec<ClientSegment<'_>> = labeled
        .segments
        .iter()
        .zip(&spans)
        .map(|(s, span)| ClientSegment {
            text: &s.text,
            span: Some(*span),
        })
        .collect();
    use_given_segments(&mut document, &given)?;
    let mut tags = Vec::with_capacity(labeled.segments.len());
    for (segment, stored) in labeled.segments.iter().zip(&document.segments) {
        let mut own = Vec::with_capacity(segment.tags.len());
        for tag in &segment.tags {
            for (field, value) in [("class", &tag.class), ("label", &tag.label), ("part", &tag.part)] {
                if let Some(value) = value {
                    check_chars(field, value, TextKind::Short)?;
                }
            }
            let part = match &tag.part {
                Some(part) => locate_part(&document.text, (stored.start, stored.end), None, Some(&normalize(part)))
                    .map_err(|e| Error::validation(vec![e]))?,
                None => None,
            };
            own.push(NewTag {
                class: tag.class.clone(),
                label: tag.label.clone(),
                part,
            });
        }
        tags.push(own);
    }
    Ok(LabeledDocument {
        annotated: labeled.segments.iter().map(|s| s.annotated).collect(),
        document,
        tags,
    })
}
