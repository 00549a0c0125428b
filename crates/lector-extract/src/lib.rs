//! Document extraction for Lector: reading PDFs and images into pages of positioned words
//! (the text layer where a PDF has one, OCR elsewhere), in a sandboxed child process.
//! Knows nothing of HTTP or SQL.

pub mod annotate;
pub mod builtin;
pub mod convert;
pub mod extraction;
#[cfg(feature = "samples")]
pub mod invoices;
pub mod layout;
pub mod learned;
pub mod ocr;
pub mod page;
pub mod pdf;
pub mod raster;
pub mod repair;
#[cfg(feature = "samples")]
pub mod samples;
pub mod sandbox;

pub use lector_core::config::ExtractConfig;
pub use page::{Line, Page, Point, Quad, ReadDocument, TextSource, Word};

use lector_core::{Error, ErrorCode, Result};

/// The document formats extraction accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocumentFormat {
    Pdf,
    Jpeg,
    Png,
    Tiff,
    Webp,
}

impl DocumentFormat {
    /// The name an upload of this format is recorded under (its usual extension).
    pub fn name(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Jpeg => "jpeg",
            Self::Png => "png",
            Self::Tiff => "tiff",
            Self::Webp => "webp",
        }
    }

    /// The format recorded under `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Pdf, Self::Jpeg, Self::Png, Self::Tiff, Self::Webp]
            .into_iter()
            .find(|f| f.name() == name)
    }
}

/// Recognises a format by its leading bytes, never by the file name a client sent.
pub fn sniff(bytes: &[u8]) -> Option<DocumentFormat> {
    match bytes {
        [b'%', b'P', b'D', b'F', b'-', ..] => Some(DocumentFormat::Pdf),
        [0xFF, 0xD8, 0xFF, ..] => Some(DocumentFormat::Jpeg),
        [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1A, b'\n', ..] => Some(DocumentFormat::Png),
        [b'I', b'I', 42, 0, ..] | [b'M', b'M', 0, 42, ..] => Some(DocumentFormat::Tiff),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some(DocumentFormat::Webp),
        _ => None,
    }
}

/// The format of `bytes`, or the answer to a file that is none of them: 422 naming `file` for
/// an empty one, 415 for any other.
pub fn sniffed(bytes: &[u8]) -> Result<DocumentFormat> {
    if bytes.is_empty() {
        return Err(Error::validation(vec![lector_core::FieldError::new(
            "file", "is empty",
        )]));
    }
    sniff(bytes).ok_or_else(|| {
        Error::new(
            ErrorCode::UnsupportedMediaType,
            "the file is not a PDF, JPEG, PNG, TIFF or WebP image",
        )
    })
}

/// The answer to a file over a limit: 413, naming the limit.
pub(crate) fn too_large(detail: String) -> Error {
    Error::new(ErrorCode::PayloadTooLarge, detail)
}

/// Reads `bytes` in this process: a PDF's text layer, OCR for scanned pages and images.
/// Untrusted files go through [`sandbox::Sandbox`], which runs this in a child process.
pub fn read_document(bytes: Vec<u8>, config: &ExtractConfig) -> Result<ReadDocument> {
    read_first_pages(bytes, config, None)
}

/// Like [`read_document`], reading only the first `pages` pages when given (a preview); the
/// page count is still checked against the limit.
pub fn read_first_pages(bytes: Vec<u8>, config: &ExtractConfig, pages: Option<usize>) -> Result<ReadDocument> {
    if bytes.len() as u64 > config.max_file_bytes {
        return Err(too_large(format!(
            "the file has {} bytes; at most {} are read",
            bytes.len(),
            config.max_file_bytes
        )));
    }
    let format = sniffed(&bytes)?;
    let scratch = tempfile::tempdir().map_err(|error| {
        tracing::error!(%error, "a scratch directory for OCR");
        Error::internal()
    })?;
    let ocr = ocr::Ocr::new(config);
    let pages = match format {
        DocumentFormat::Pdf => read_pdf(bytes, config, &ocr, scratch.path(), pages)?,
        _ => read_images(&bytes, format, config, &ocr, scratch.path(), pages)?,
    };
    Ok(ReadDocument { format, pages })
}

fn read_pdf(
    bytes: Vec<u8>,
    config: &ExtractConfig,
    ocr: &ocr::Ocr,
    scratch: &std::path::Path,
    first: Option<usize>,
) -> Result<Vec<Page>> {
    let pdf = pdf::PdfDocument::open(bytes, config)?;
    let count = first.map_or(pdf.page_count(), |n| n.min(pdf.page_count()));
    let mut pages = Vec::with_capacity(count);
    let mut scans = Vec::new();
    for index in 0..count {
        match pdf.page_text(index, config)? {
            pdf::PdfPageText::Text(page) => pages.push(page),
            pdf::PdfPageText::NeedsOcr {
                number,
                width,
                height,
                image,
                dpi,
            } => {
                pages.push(Page {
                    number,
                    width,
                    height,
                    source: TextSource::Ocr,
                    lines: Vec::new(),
                });
                scans.push((index, image, dpi));
            }
        }
    }
    let images: Vec<ocr::OcrImage<'_>> = scans
        .iter()
        .map(|(_, image, dpi)| ocr::OcrImage { image, dpi: Some(*dpi) })
        .collect();
    for ((index, _, _), lines) in scans.iter().zip(ocr.read(&images, scratch)?) {
        pages[*index].lines = lines;
    }
    let mut read: Vec<_> = pages
        .iter_mut()
        .filter(|p| p.source == TextSource::Ocr)
        .zip(&scans)
        .map(|(page, (_, image, dpi))| (page, image, Some(*dpi)))
        .collect();
    repair::second_thoughts(&mut read, ocr, scratch);
    Ok(pages)
}

fn read_images(
    bytes: &[u8],
    format: DocumentFormat,
    config: &ExtractConfig,
    ocr: &ocr::Ocr,
    scratch: &std::path::Path,
    first: Option<usize>,
) -> Result<Vec<Page>> {
    let mut images = raster::decode_pages(bytes, format, config)?;
    images.truncate(first.unwrap_or(usize::MAX));
    let inputs: Vec<ocr::OcrImage<'_>> = images.iter().map(|image| ocr::OcrImage { image, dpi: None }).collect();
    let lines = ocr.read(&inputs, scratch)?;
    let mut pages: Vec<Page> = images
        .iter()
        .zip(lines)
        .enumerate()
        .map(|(i, (image, lines))| Page {
            number: i as u32 + 1,
            width: image.width() as f32,
            height: image.height() as f32,
            source: TextSource::Ocr,
            lines,
        })
        .collect();
    let mut read: Vec<_> = pages.iter_mut().zip(&images).map(|(p, i)| (p, i, None)).collect();
    repair::second_thoughts(&mut read, ocr, scratch);
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_by_magic_bytes() {
        assert_eq!(sniff(b"%PDF-1.7\n"), Some(DocumentFormat::Pdf));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), Some(DocumentFormat::Png));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(DocumentFormat::Webp));
        assert_eq!(sniff(b"hello"), None);
    }
}
