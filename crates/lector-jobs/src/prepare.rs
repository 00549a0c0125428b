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

/// How a stored document's text was cut into segments, so that a new text its sender says
/// nothing of how to cut (no `split`, no `segments`, as the original API's clients send it) is
/// cut the same way: a PDF's pages stay pages (keeping their words' boxes where a page's text
/// is unchanged), a text kept whole stays whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    Sentences,
    /// One segment holding a text of several sentences (made with `split: false`).
    Whole,
    /// A segment per page, with the page's layout (a PDF or an image).
    Pages,
}

impl Cut {
    /// The cut of a stored document of `text` and `segments` (`(start, end, has a layout)`).
    pub fn of(text: &str, segments: &[(i64, i64, bool)], language: Language) -> Cut {
        if segments.iter().any(|&(_, _, layout)| layout) {
            return Cut::Pages;
        }
        let whole = text.chars().count() as i64;
        if let [(0, end, _)] = segments
            && *end == whole
            && segment(text, language, true).len() > 1
        {
            return Cut::Whole;
        }
        Cut::Sentences
    }
}

/// Cuts a prepared document's text into its pages at the form feeds, blank pages too, as a
/// PDF's document is (without layouts: a page whose text is unchanged keeps its stored one).
pub fn cut_into_pages(document: &mut NewDocument) {
    let chars: Vec<char> = document.text.chars().collect();
    document.segments = lector_core::labeling::page_spans(&document.text)
        .into_iter()
        .map(|(start, end)| NewSegment {
            text: chars[start as usize..end as usize].iter().collect(),
            start,
            end,
            layout: None,
        })
        .collect();
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
    fn a_documents_cut_is_read_from_its_segments() {
        let two = "One here. Two there.";
        assert_eq!(Cut::of(two, &[(0, 20, false)], Language::En), Cut::Whole);
        assert_eq!(
            Cut::of(two, &[(0, 9, false), (10, 20, false)], Language::En),
            Cut::Sentences
        );
        assert_eq!(Cut::of("One here.", &[(0, 9, false)], Language::En), Cut::Sentences);
        assert_eq!(
            Cut::of("A\u{c}B", &[(0, 1, true), (2, 3, true)], Language::En),
            Cut::Pages
        );
        let mut document = prepare_document(
            "Page one.\u{c}\u{c}Page three.",
            serde_json::json!({}),
            Language::En,
            true,
        );
        cut_into_pages(&mut document);
        let pages: Vec<(&str, i64, i64)> = document
            .segments
            .iter()
            .map(|s| (s.text.as_str(), s.start, s.end))
            .collect();
        assert_eq!(pages, [("Page one.", 0, 9), ("", 10, 10), ("Page three.", 11, 22)]);
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
