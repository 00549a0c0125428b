//! Uploads that are documents (PDFs and images) rather than tables: telling them apart, their
//! preview (the first page read in the extraction sandbox), and the refusal an operation that
//! reads only tables gives them. The rest of an upload's life is `files`'.

use crate::state::AppState;
use lector_core::{Error, ErrorCode, Result};
use lector_store::Upload;

/// Characters of a page's text a document preview shows.
const PREVIEW_PAGE_CHARS: usize = 2000;

/// A PDF or image upload's preview: its first page read in the sandbox, as a table with the
/// page number and its text.
pub(crate) async fn preview_document(state: &AppState, upload: &Upload) -> Result<Vec<Vec<String>>> {
    let bytes = upload_bytes(state, upload).await?;
    let read = state.sandbox.read_first_pages(bytes, Some(1)).await?;
    let mut preview = vec![vec!["page".to_owned(), "text".to_owned()]];
    for page in &read.pages {
        preview.push(vec![
            page.number.to_string(),
            page.text().chars().take(PREVIEW_PAGE_CHARS).collect(),
        ]);
    }
    Ok(preview)
}

/// An upload's bytes, read whole (documents are bounded by `extract.max_file_bytes`).
async fn upload_bytes(state: &AppState, upload: &Upload) -> Result<Vec<u8>> {
    use std::io::Read;
    let file = state.store.open_upload(upload).await?;
    let max = state.config.extract.max_file_bytes;
    tokio::task::spawn_blocking(move || {
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes).map(|_| bytes)
    })
    .await
    .map_err(|_| Error::internal())?
    .map_err(|e| {
        tracing::error!(error = %e, "reading an upload");
        Error::internal()
    })
}

/// Whether an upload is a PDF or image (a document of pages) rather than a table.
pub fn is_document(upload: &Upload) -> bool {
    lector_extract::DocumentFormat::from_name(&upload.format).is_some()
}

/// 415 for a PDF or image where an operation reads tables.
pub fn refuse_document(upload: &Upload, operation: &str) -> Result<()> {
    if is_document(upload) {
        return Err(Error::new(
            ErrorCode::UnsupportedMediaType,
            format!(
                "{operation} reads tables (CSV, TXT, JSON, JSONL or XLSX); a PDF or image goes into a document group (upload_group_file)"
            ),
        ));
    }
    Ok(())
}
