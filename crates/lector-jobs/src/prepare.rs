//! How a text becomes a document: normalised (NFC, NUL dropped) and split into sentences of
//! its language, or kept whole. Single documents (in the request) and every import share it,
//! so a document reads the same whichever way it came in. A PDF or image read page by page
//! becomes a document whose segments are its pages, each keeping its words' boxes.

use lector_core::{Error, FieldError};
use lector_extract::ReadDocument;
use lector_store::{NewDocument, NewSegment};
use lector_text::{ClientSegment, Language, Segment, check_segments, normalize, segment};

/// Normalises a text (NFC) and splits it into sentences of `language`, or keeps it whole.
pub fn prepare_document(text: &str, meta: serde_json::Value, language: Language, split: bool) -> NewDocument {
    let text = normalize(text);
    let segments = stored(segment(&text, language, split));
    NewDocument {
        text,
        meta,
        language: language.code().to_owned(),
        segments,
    }
}

/// Replaces a prepared document's segments by those its sender gave, each checked against
/// the document's text (422 naming `segments` when one does not fit).
pub fn use_given_segments(document: &mut NewDocument, given: &[ClientSegment<'_>]) -> lector_core::Result<()> {
    let checked = check_segments(&document.text, given)
        .map_err(|e| Error::validation(vec![FieldError::new("segments", e.to_string())]))?;
    document.segments = stored(checked);
    Ok(())
}

/// Text segments as a document stores them (no layout: they are not pages).
fn stored(segments: Vec<Segment>) -> Vec<NewSegment> {
    segments
        .into_iter()
        .map(|s| NewSegment {
            start: s.start() as i64,
            end: s.end() as i64,
            text: s.text,
            layout: None,
        })
        .collect()
}

/// What separates pages in a document's text: a form feed, as `mark_page_annotated` and
/// `lector_core::labeling::page_spans` read pages.
const PAGE_BREAK: &str = "\u{c}";

/// A document read from a file: its text the pages' texts (normalised) with a form feed
/// between them, one segment per page (blank pages too, so segment `n` is page `n`), each
/// with the page's words and boxes as its layout.
pub fn prepare_pages(mut read: ReadDocument, meta: serde_json::Value, language: Language) -> NewDocument {
    let mut text = String::new();
    let mut at = 0i64;
    let mut segments = Vec::with_capacity(read.pages.len());
    for (index, page) in read.pages.iter_mut().enumerate() {
        for word in page.lines.iter_mut().flat_map(|l| l.words.iter_mut()) {
            word.text = normalize(&word.text);
        }
        if index > 0 {
            text.push_str(PAGE_BREAK);
            at += PAGE_BREAK.chars().count() as i64;
        }
        let page_text = page.text();
        let length = page_text.chars().count() as i64;
        text.push_str(&page_text);
        segments.push(NewSegment {
            start: at,
            end: at + length,
            layout: Some(serde_json::to_string(&*page).expect("a page serialises")),
            text: page_text,
        });
        at += length;
    }
    NewDocument {
        text,
        meta,
        language: language.code().to_owned(),
        segments,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_extract::{DocumentFormat, Line, Page, Quad, TextSource, Word};

    fn page(number: u32, words: &[&str]) -> Page {
        let words = words
            .iter()
            .map(|w| Word {
                text: (*w).into(),
                quad: Quad::rect(0.1, 0.1, 0.2, 0.2),
                confidence: 0.9,
            })
            .collect();
        Page {
            number,
            width: 595.0,
            height: 842.0,
            source: TextSource::Ocr,
            lines: vec![Line { words }],
        }
    }

    #[test]
    fn pages_become_segments_at_their_place_in_the_text() {
        // "Gru\u{0308}ße": a decomposed umlaut, as some PDFs give it, is stored composed.
        let read = ReadDocument {
            format: DocumentFormat::Pdf,
            pages: vec![page(1, &["Gru\u{0308}ße", "1"]), page(2, &[]), page(3, &["Total", "9"])],
        };
        let document = prepare_pages(read, serde_json::json!({}), Language::De);
        assert_eq!(document.text, "Grüße 1\u{c}\u{c}Total 9");
        let chars: Vec<char> = document.text.chars().collect();
        for segment in &document.segments {
            let span: String = chars[segment.start as usize..segment.end as usize].iter().collect();
            assert_eq!(span, segment.text);
        }
        assert_eq!(document.segments.len(), 3);
        assert_eq!(document.segments[1].text, "");
        let pages: Vec<(i64, i64)> = document.segments.iter().map(|s| (s.start, s.end)).collect();
        assert_eq!(
            pages,
            lector_core::labeling::page_spans(&document.text),
            "segment n is page n"
        );
        let layout: Page = serde_json::from_str(document.segments[0].layout.as_deref().unwrap()).unwrap();
        assert_eq!(layout.lines[0].words[0].text, "Grüße");
    }
}
