//! How a page read from a PDF or image is served: its number, size and where its text came
//! from, and its words as SPEC's box objects (four page-relative corners, text, confidence).
//! Documents, downloads and extraction results share these shapes.

use lector_extract::{Page, Quad, TextSource, Word};
use serde::Serialize;
use utoipa::ToSchema;

/// A page of a document read from a file.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageDto {
    /// 1 for the first page.
    pub number: u32,
    /// In PDF points, or pixels for an image.
    pub width: f32,
    pub height: f32,
    /// TEXT_LAYER (the PDF's own text) or OCR.
    pub source: String,
    /// The page's words in reading order.
    pub words: Vec<BoxDto>,
}

/// A box on a page: its four corners relative to the page (0..1, y from the top).
#[derive(Debug, Serialize, ToSchema)]
#[allow(non_snake_case)]
pub struct BoxDto {
    pub TLx: f32,
    pub TLy: f32,
    pub TRx: f32,
    pub TRy: f32,
    pub BRx: f32,
    pub BRy: f32,
    pub BLx: f32,
    pub BLy: f32,
    pub text: String,
    /// The field the box was matched to, in extraction results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// How sure the reader is of the text, 0..1 (1 for a PDF's own text).
    pub confidence: f32,
    /// The line of the page the word is on, from 0, in reading order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl BoxDto {
    pub fn of_word(word: &Word, line: Option<usize>) -> Self {
        Self {
            line,
            ..Self::of_quad(&word.quad, &word.text, word.confidence)
        }
    }

    /// A box of `text` read with `confidence`, unlabelled.
    pub fn of_quad(q: &Quad, text: &str, confidence: f32) -> Self {
        Self {
            TLx: q.tl.x,
            TLy: q.tl.y,
            TRx: q.tr.x,
            TRy: q.tr.y,
            BRx: q.br.x,
            BRy: q.br.y,
            BLx: q.bl.x,
            BLy: q.bl.y,
            text: text.to_owned(),
            label: None,
            confidence,
            line: None,
        }
    }
}

impl From<&Page> for PageDto {
    fn from(page: &Page) -> Self {
        let words = page
            .lines
            .iter()
            .enumerate()
            .flat_map(|(n, line)| line.words.iter().map(move |w| BoxDto::of_word(w, Some(n))))
            .collect();
        Self {
            number: page.number,
            width: page.width,
            height: page.height,
            source: match page.source {
                TextSource::TextLayer => "TEXT_LAYER",
                TextSource::Ocr => "OCR",
            }
            .to_owned(),
            words,
        }
    }
}

/// The boxes of the words a part of a page's text covers (`[start, end)` in code points of
/// [`Page::text`]), labelled with `label`.
pub fn boxes_of_part(page: &Page, (start, end): (usize, usize), label: Option<&str>) -> Vec<BoxDto> {
    page.words_with_offsets()
        .into_iter()
        .filter(|(_, range)| range.start < end && start < range.end)
        .map(|(word, _)| {
            let mut found = BoxDto::of_word(word, None);
            found.label = label.map(str::to_owned);
            found
        })
        .collect()
}

/// The page a segment's stored layout describes; `None` for a segment of text, or a layout
/// this version cannot read (logged).
pub fn page_of(layout: Option<&str>) -> Option<PageDto> {
    let layout = layout?;
    match serde_json::from_str::<Page>(layout) {
        Ok(page) => Some(PageDto::from(&page)),
        Err(error) => {
            tracing::error!(%error, "a segment's layout cannot be read");
            None
        }
    }
}
