//! How a text becomes a document: normalised (NFC, NUL dropped) and split into sentences of
//! its language, or kept whole. Single documents (in the request) and every import share it,
//! so a document reads the same whichever way it came in. A PDF or image read page by page
//! becomes a document whose segments are its pages, each keeping its words' boxes.

use lector_core::{Error, FieldError};
use lector_extract::ReadDocument;
use lector_store::{NewDocument, NewSegment};
use lector_text::{ClientSegment, Language, Segment, check_segments, normalize, segment, whole_segment};

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
/// cut the same way ([`recut`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    Sentences,
    /// One segment holding a text of several sentences (made with `split: false`).
    Whole,
    /// A segment per page, with the page's layout (a PDF or an image).
    Pages,
}

impl Cut {
    /// The cut of a stored document of `text` and `segments`.
    pub fn of(text: &str, segments: &[NewSegment], language: Language) -> Cut {
        if segments.iter().any(|s| s.layout.is_some()) {
            return Cut::Pages;
        }
        let whole = whole_segment(text);
        if let ([only], [kept]) = (segments, whole.as_slice())
            && (only.start, only.end) == (kept.start() as i64, kept.end() as i64)
            && segment(text, language, true).len() > 1
        {
            return Cut::Whole;
        }
        Cut::Sentences
    }
}

/// The document a new text is replacing, as it was read: its text, language and segments.
#[derive(Debug, Clone)]
pub struct Stored {
    pub text: String,
    pub language: Language,
    pub segments: Vec<NewSegment>,
}

impl Stored {
    /// Whether the segments are the text's sentences, as its language splits them.
    fn is_split_in_its_language(&self) -> bool {
        let sentences = segment(&self.text, self.language, true);
        sentences.len() == self.segments.len()
            && sentences
                .iter()
                .zip(&self.segments)
                .all(|(s, kept)| (s.start() as i64, s.end() as i64) == (kept.start, kept.end))
    }

    /// Whether the segments are the text's (read in two steps, a change between them could
    /// pair the text with another one's segments).
    fn segments_fit(&self) -> bool {
        let chars: Vec<char> = self.text.chars().collect();
        self.segments.iter().all(|s| {
            let (start, end) = (s.start as usize, s.end as usize);
            start <= end && end <= chars.len() && chars[start..end].iter().copied().eq(s.text.chars())
        })
    }
}

/// A stored document's new text whose sender said nothing of how to cut it: the same text keeps
/// its segments as they are (a client's own cut in any language; sentences of the old language
/// are split again in a new one); otherwise it is
/// cut as the old one was ([`Cut`], judged in the old language): a page document into its
/// pages (at most `max_pages`; a page whose text is unchanged, at the same place, keeps its
/// layout, a changed one keeps its page's number and size without its words), a text kept
/// whole whole, others into sentences of the new language.
pub fn recut(
    text: &str,
    meta: serde_json::Value,
    language: Language,
    old: &Stored,
    max_pages: usize,
) -> lector_core::Result<NewDocument> {
    let mut document = prepare_document(text, meta, language, false);
    if !old.segments_fit() {
        document.segments = stored(segment(&document.text, language, true));
        return Ok(document);
    }
    // The same text keeps its segments, unless they are its sentences and the language changed
    // (then they are split again in the new one): a client's own cut is kept in any language.
    if document.text == old.text && (language == old.language || !old.is_split_in_its_language()) {
        document.segments = old.segments.clone();
        return Ok(document);
    }
    match Cut::of(&old.text, &old.segments, old.language) {
        Cut::Whole => {}
        Cut::Sentences => document.segments = stored(segment(&document.text, language, true)),
        Cut::Pages => {
            cut_into_pages(&mut document);
            if document.segments.len() > max_pages {
                return Err(Error::validation(vec![FieldError::new(
                    "text",
                    format!(
                        "the document is one of pages; a text of {} pages has more than {max_pages}",
                        document.segments.len()
                    ),
                )]));
            }
            for (page, kept) in document.segments.iter_mut().zip(&old.segments) {
                page.layout = if page.text == kept.text {
                    kept.layout.clone()
                } else {
                    kept.layout.as_deref().and_then(without_words)
                };
            }
        }
    }
    Ok(document)
}

/// A page's layout without its words (its number and size kept), for a page whose text
/// changed: the document stays one of pages.
fn without_words(layout: &str) -> Option<String> {
    let mut page: serde_json::Value = serde_json::from_str(layout).ok()?;
    page.as_object_mut()?
        .insert("lines".into(), serde_json::Value::Array(Vec::new()));
    Some(page.to_string())
}

/// Cuts a prepared document's text into its pages at the form feeds, blank pages too, as a
/// PDF's document is (without layouts).
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

    fn plain(start: i64, end: i64, text: &str) -> NewSegment {
        NewSegment {
            text: text.into(),
            start,
            end,
            layout: None,
        }
    }

    #[test]
    fn a_documents_cut_is_read_from_its_segments() {
        let two = "One here. Two there.\n";
        assert_eq!(Cut::of(two, &[plain(0, 20, two.trim())], Language::En), Cut::Whole);
        let sentences = [plain(0, 9, "One here."), plain(10, 20, "Two there.")];
        assert_eq!(Cut::of(two, &sentences, Language::En), Cut::Sentences);
        assert_eq!(
            Cut::of("One here.", &[plain(0, 9, "One here.")], Language::En),
            Cut::Sentences
        );
        let mut page = plain(0, 1, "A");
        page.layout = Some("{}".into());
        assert_eq!(Cut::of("A\u{c}B", &[page], Language::En), Cut::Pages);
    }

    fn stored_as(text: &str, segments: Vec<NewSegment>) -> Stored {
        Stored {
            text: text.into(),
            language: Language::En,
            segments,
        }
    }

    #[test]
    fn a_new_text_is_cut_as_the_old_one() {
        let meta = || serde_json::json!({});
        // The same text keeps a client's own cut, in any language; its sentences are split
        // again in a new language.
        let text = "Die Suppe war kalt. Der Kellner war nett. Wir gingen.";
        let own = stored_as(text, vec![plain(0, 41, &text[..41]), plain(42, 53, &text[42..])]);
        assert_eq!(recut(text, meta(), Language::En, &own, 10).unwrap().segments.len(), 2);
        assert_eq!(recut(text, meta(), Language::De, &own, 10).unwrap().segments.len(), 2);
        let sentences = prepare_document(text, meta(), Language::En, true);
        let split = stored_as(text, sentences.segments.clone());
        assert!(split.is_split_in_its_language());
        let again = recut(text, meta(), Language::De, &split, 10).unwrap();
        let spans = |segments: &[NewSegment]| segments.iter().map(|s| (s.start, s.end)).collect::<Vec<_>>();
        assert_eq!(
            spans(&again.segments),
            spans(&stored(segment(text, Language::De, true)))
        );
        // Segments that are not the text's (read across another change) are not kept.
        let stale = stored_as(text, vec![plain(0, 5, "Wir g")]);
        assert_eq!(recut(text, meta(), Language::En, &stale, 10).unwrap().segments.len(), 3);
        // Pages: an unchanged page at its place keeps its layout, a changed one its number.
        let mut first = plain(0, 9, "Page one.");
        first.layout = Some("{\"number\":1,\"lines\":[1]}".into());
        let mut third = plain(11, 22, "Page three.");
        third.layout = Some("{\"number\":3,\"lines\":[1]}".into());
        let old = stored_as("Page one.\u{c}\u{c}Page three.", vec![first, plain(10, 10, ""), third]);
        let text = "Page one.\u{c}\u{c}Page 3.";
        let pages = recut(text, meta(), Language::En, &old, 10).unwrap();
        let got: Vec<(&str, Option<&str>)> = pages
            .segments
            .iter()
            .map(|s| (s.text.as_str(), s.layout.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("Page one.", Some("{\"number\":1,\"lines\":[1]}")),
                ("", None),
                ("Page 3.", Some("{\"lines\":[],\"number\":3}"))
            ]
        );
        let refused = recut("x\u{c}y\u{c}z", meta(), Language::En, &old, 2).unwrap_err();
        assert_eq!(refused.status(), 422);
        // Whole stays whole; sentences are split again.
        let whole = stored_as("One here. Two there.", vec![plain(0, 20, "One here. Two there.")]);
        let kept = recut("One here. Two there. Three.", meta(), Language::En, &whole, 10);
        assert_eq!(kept.unwrap().segments.len(), 1);
        let split = stored_as(
            "One here. Two there.",
            vec![plain(0, 9, "One here."), plain(10, 20, "Two there.")],
        );
        let again = recut("One here. Two there. Three.", meta(), Language::En, &split, 10);
        assert_eq!(again.unwrap().segments.len(), 3);
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
