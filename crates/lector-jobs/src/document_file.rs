//! A PDF or image file imported into a group (or into a labeling session, by
//! `labeled_import`) becomes one document whose segments are its pages: each page's text, with
//! its words and their boxes kept as the segment's layout.
//!
//! The file is read in the extraction sandbox (a child process under memory and time limits),
//! so a crafted file fails its import, never the worker. A file that cannot be read fails for
//! good with the reader's reason; a reader that could not run is worth another attempt.

use crate::prepare::prepare_pages;
use crate::progress::Phase;
use crate::runner::JobError;
use crate::uploaded::{Filled, gone};
use lector_core::validate::MAX_DOCUMENT_CHARS;
use lector_extract::ReadDocument;
use lector_extract::sandbox::Sandbox;
use lector_store::{ImportPayload, Lease, NewDocument, Store, Upload};
use lector_text::Language;
use std::io::Read;

pub(crate) async fn import_document_file(
    store: &Store,
    lease: &Lease,
    (payload, phase): (&ImportPayload, Phase),
    upload: &Upload,
    sandbox: &Sandbox,
) -> Result<Filled, JobError> {
    let read = read_upload(store, upload, sandbox).await?;
    store
        .report_progress(lease, phase.of_job(0.9))
        .await
        .map_err(|e| JobError::transient(e.detail))?;
    let document = document_of(read, &upload.file_name, &payload.language)?;
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

/// The document a read file becomes: a segment per page, the file named in its meta. A file
/// whose pages hold more text than a document may (`MAX_DOCUMENT_CHARS`, as a document sent
/// through the API) fails for good, saying so: stored, it could not be edited or labeled.
pub(crate) fn document_of(read: ReadDocument, file_name: &str, language: &str) -> Result<NewDocument, JobError> {
    let meta = serde_json::json!({
        "file_name": file_name,
        "format": read.format.name(),
        "pages": read.pages.len(),
    });
    let document = prepare_pages(read, meta, Language::from_code_or_default(Some(language)));
    let chars = document.text.chars().count();
    if chars > MAX_DOCUMENT_CHARS {
        return Err(JobError::fatal(format!(
            "the file cannot be imported: its pages hold {chars} characters of text, and a document \
             holds at most {MAX_DOCUMENT_CHARS}"
        )));
    }
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_extract::{DocumentFormat, Line, Page, Quad, TextSource, Word};

    /// A read PDF of `pages` pages, each one word of `chars` letters.
    fn read_pdf(pages: u32, chars: usize) -> ReadDocument {
        let page = |number| Page {
            number,
            width: 595.0,
            height: 842.0,
            source: TextSource::TextLayer,
            lines: vec![Line {
                words: vec![Word {
                    text: "a".repeat(chars),
                    quad: Quad::rect(0.1, 0.1, 0.2, 0.2),
                    confidence: 1.0,
                }],
            }],
        };
        ReadDocument {
            format: DocumentFormat::Pdf,
            pages: (1..=pages).map(page).collect(),
        }
    }

    #[test]
    fn a_file_is_a_document_within_a_documents_length() {
        let document = document_of(read_pdf(1, MAX_DOCUMENT_CHARS), "scan.pdf", "en").expect("within the limit");
        assert_eq!(document.text.chars().count(), MAX_DOCUMENT_CHARS);
        assert_eq!(document.meta["file_name"], "scan.pdf");
        assert_eq!(document.meta["pages"], 1);

        // Two pages of half the limit, and the form feed between them.
        let refused = document_of(read_pdf(2, MAX_DOCUMENT_CHARS / 2), "long.pdf", "en").unwrap_err();
        assert!(refused.message.contains("1000001 characters"), "{}", refused.message);
        assert!(refused.message.contains("at most 1000000"), "{}", refused.message);
    }
}
