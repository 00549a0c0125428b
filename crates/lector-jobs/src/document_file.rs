//! A PDF or image file imported into a group (or into a labeling session, by
//! `labeled_import`) becomes one document whose segments are its pages: each page's text, with
//! its words and their boxes kept as the segment's layout.
//!
//! The file is read in the extraction sandbox (a child process under memory and time limits),
//! so a crafted file fails its import, never the worker. A file that cannot be read fails for
//! good with the reader's reason; a reader that could not run is worth another attempt.

use crate::prepare::prepare_pages;
use crate::runner::JobError;
use crate::uploaded::{Filled, gone};
use lector_extract::ReadDocument;
use lector_extract::sandbox::Sandbox;
use lector_store::{ImportPayload, Lease, NewDocument, Store, Upload};
use lector_text::Language;
use std::io::Read;

pub(crate) async fn import_document_file(
    store: &Store,
    lease: &Lease,
    payload: &ImportPayload,
    upload: &Upload,
    sandbox: &Sandbox,
) -> Result<Filled, JobError> {
    let read = read_upload(store, upload, sandbox).await?;
    store
        .report_progress(lease, 0.9)
        .await
        .map_err(|e| JobError::transient(e.detail))?;
    let document = document_of(read, upload, &payload.language);
    let added = store
        .import_placed(lease, payload.project_id, payload.group_id, &[(0, &document)])
        .await
        .map_err(|e| JobError::transient(e.detail))?;
    store
        .set_import_status(lease, payload.group_id, "CREATED")
        .await
        .map_err(|e| JobError::transient(e.detail))?;
    Ok(Filled {
        stored: 1,
        blank: 0,
        added,
    })
}

/// An uploaded PDF or image, read in the sandbox: a file that cannot be read fails for good
/// with the reader's reason; a reader that could not run is worth another attempt.
pub(crate) async fn read_upload(store: &Store, upload: &Upload, sandbox: &Sandbox) -> Result<ReadDocument, JobError> {
    let file = store.open_upload(upload).await.map_err(gone)?;
    let max = sandbox.config().max_file_bytes;
    let bytes = tokio::task::spawn_blocking(move || {
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes).map(|_| bytes)
    })
    .await
    .map_err(|_| JobError::transient("reading the uploaded file failed"))?
    .map_err(|_| JobError::transient("reading the uploaded file failed"))?;
    sandbox.read(bytes).await.map_err(|error| {
        if error.status() >= 500 {
            JobError::transient(error.detail)
        } else {
            JobError::fatal(format!("the file cannot be imported: {}", error.detail))
        }
    })
}

/// The document a read file becomes: a segment per page, the file named in its meta.
pub(crate) fn document_of(read: ReadDocument, upload: &Upload, language: &str) -> NewDocument {
    let meta = serde_json::json!({
        "file_name": upload.file_name,
        "format": read.format.name(),
        "pages": read.pages.len(),
    });
    prepare_pages(read, meta, Language::from_code_or_default(Some(language)))
}
