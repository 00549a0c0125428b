//! Sentence segmentation and the checking of client-given segments.
//!
//! Documents are split into sentences so they can be labelled sentence by sentence. The rules
//! (abbreviations such as "Dr.", "z. B.", "e.g.", numbers, initials, ellipses, closing quotes,
//! the Arabic question mark) come from the `sentencex` crate; this module turns its answer into
//! Lector's segments: trimmed of surrounding whitespace, never empty, with `[start, end)` spans in
//! Unicode code points (what Python's `str` slicing uses), covering every non-blank character of
//! the text exactly once. It does not normalise: callers pass the NFC text they store
//! (see [`crate::normalize`]), so spans index that stored text.

use std::panic::catch_unwind;

use serde::{Deserialize, Serialize};

use crate::error::{Location, Result, TextError};

/// A language with its own sentence rules. Unknown or absent languages fall back to English.
/// Serialised as its code ("en", "de", "ar").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    #[default]
    En,
    De,
    Ar,
}

impl Language {
    /// Reads an ISO 639-1 code ("en", "de", "ar"), ignoring case and a region ("de-AT").
    pub fn from_code(code: &str) -> Option<Language> {
        let primary = code.trim().split(['-', '_']).next().unwrap_or_default();
        match primary.to_ascii_lowercase().as_str() {
            "en" => Some(Language::En),
            "de" => Some(Language::De),
            "ar" => Some(Language::Ar),
            _ => None,
        }
    }

    /// The code of an optional language field, English when absent or unknown.
    pub fn from_code_or_default(code: Option<&str>) -> Language {
        code.and_then(Language::from_code).unwrap_or_default()
    }

    /// The two-letter code.
    pub fn code(self) -> &'static str {
        match self {
            Language::En => "en",
            Language::De => "de",
            Language::Ar => "ar",
        }
    }
}

impl std::str::FromStr for Language {
    type Err = TextError;

    fn from_str(code: &str) -> Result<Language> {
        Language::from_code(code).ok_or_else(|| TextError::UnknownLanguage { code: code.to_owned() })
    }
}

/// A piece of a document with its `[start, end)` span in code points of the document text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    pub text: String,
    pub span: [usize; 2],
}

impl Segment {
    pub fn start(&self) -> usize {
        self.span[0]
    }

    pub fn end(&self) -> usize {
        self.span[1]
    }
}

/// Splits `text` into sentences, or keeps it whole when `split` is false.
pub fn segment(text: &str, language: Language, split: bool) -> Vec<Segment> {
    if split {
        split_sentences(text, language)
    } else {
        whole_segment(text)
    }
}

/// The whole text as one segment (trimmed); no segment for a blank text.
pub fn whole_segment(text: &str) -> Vec<Segment> {
    let mut builder = SpanBuilder::new(text);
    builder.push(0, text.len());
    builder.segments
}

/// Splits `text` into sentences by the rules of `language`.
pub fn split_sentences(text: &str, language: Language) -> Vec<Segment> {
    let mut builder = SpanBuilder::new(text);
    // sentencex is a rule engine fed untrusted text: should it ever panic, the document is kept
    // whole instead of failing its import.
    let boundaries = catch_unwind(|| {
        sentencex::get_sentence_boundaries(language.code(), text)
            .into_iter()
            .map(|b| (b.start_byte, b.end_byte))
            .collect::<Vec<_>>()
    })
    .unwrap_or_default();
    for (start, end) in boundaries {
        // Whatever the rules skipped becomes a segment of its own, so no text is ever lost.
        if start > builder.byte {
            builder.push(builder.byte, start);
        }
        let mut from = start;
        for cut in bracket_cuts(text.get(start..end).unwrap_or_default()) {
            builder.push(from, start + cut);
            from = start + cut;
        }
        builder.push(from, end);
    }
    builder.push(builder.byte, text.len());
    builder.segments
}

/// Byte offsets (within `sentence`) just after a sentence end closed by a bracket, such as
/// "(It was late.) Fine.", which sentencex keeps together: a full stop, question or exclamation
/// mark or ellipsis, one or more `)` or `]`, whitespace, then an upper-case letter.
fn bracket_cuts(sentence: &str) -> Vec<usize> {
    let chars: Vec<(usize, char)> = sentence.char_indices().collect();
    let mut cuts = Vec::new();
    for (i, &(_, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?' | '…' | '؟') {
            continue;
        }
        let closing = chars[i + 1..]
            .iter()
            .take_while(|(_, c)| matches!(c, ')' | ']'))
            .count();
        if closing == 0 {
            continue;
        }
        let after = i + 1 + closing;
        let spaces = chars[after..].iter().take_while(|(_, c)| c.is_whitespace()).count();
        if spaces > 0 && chars.get(after + spaces).is_some_and(|(_, c)| c.is_uppercase()) {
            cuts.push(chars[after].0);
        }
    }
    cuts
}

/// Collects trimmed segments in text order, counting code points as it goes.
struct SpanBuilder<'a> {
    text: &'a str,
    /// Byte offset up to which segments have been emitted.
    byte: usize,
    /// Code points before `byte`.
    chars: usize,
    segments: Vec<Segment>,
}

impl<'a> SpanBuilder<'a> {
    fn new(text: &'a str) -> Self {
        SpanBuilder {
            text,
            byte: 0,
            chars: 0,
            segments: Vec::new(),
        }
    }

    /// Emits `text[start..end]` trimmed, if it is not blank and lies after what was emitted.
    fn push(&mut self, start: usize, end: usize) {
        let start = start.max(self.byte);
        let Some(piece) = self.text.get(start..end) else { return };
        let trimmed = piece.trim();
        if trimmed.is_empty() {
            return;
        }
        let first = start + (piece.len() - piece.trim_start().len());
        self.chars += self.text[self.byte..first].chars().count();
        let length = trimmed.chars().count();
        self.segments.push(Segment {
            text: trimmed.to_owned(),
            span: [self.chars, self.chars + length],
        });
        self.chars += length;
        self.byte = first + trimmed.len();
    }
}

/// A segment as a client sends it: its text and, optionally, where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSegment<'a> {
    pub text: &'a str,
    pub span: Option<[usize; 2]>,
}

/// Checks client-given segments against the (NFC) document `text` and returns them with spans.
///
/// Segments must be non-blank, in text order and not overlap. A segment with a span must match the
/// text at that span; one without is looked for after the previous segment. Segment texts are
/// NFC-normalised before comparing, as the document is.
pub fn check_segments(text: &str, given: &[ClientSegment<'_>]) -> Result<Vec<Segment>> {
    let mut out = Vec::with_capacity(given.len());
    // Cursor: byte offset and code-point offset just after the previous segment.
    let (mut byte, mut chars) = (0usize, 0usize);
    for (index, client) in given.iter().enumerate() {
        let wanted = crate::normalize(client.text);
        let fail = |reason: String| TextError::malformed(Location::Segment(index), reason);
        if wanted.trim().is_empty() {
            return Err(fail("the segment text is empty".into()));
        }
        let (start_byte, start) = match client.span {
            Some([start, end]) => {
                if start >= end {
                    return Err(fail(format!("span [{start}, {end}] is empty or reversed")));
                }
                if start < chars {
                    return Err(fail(format!(
                        "span [{start}, {end}] overlaps or precedes the previous segment"
                    )));
                }
                let start_byte = advance(text, byte, start - chars)
                    .ok_or_else(|| fail(format!("span [{start}, {end}] lies outside the text")))?;
                let end_byte = advance(text, start_byte, end - start)
                    .ok_or_else(|| fail(format!("span [{start}, {end}] lies outside the text")))?;
                if text[start_byte..end_byte] != wanted {
                    return Err(fail(format!(
                        "the text at span [{start}, {end}] differs from the segment text"
                    )));
                }
                (start_byte, start)
            }
            None => {
                let found = text[byte..].find(wanted.as_str()).ok_or_else(|| {
                    fail(format!(
                        "the segment text is not in the document after position {chars}"
                    ))
                })?;
                (byte + found, chars + text[byte..byte + found].chars().count())
            }
        };
        let length = wanted.chars().count();
        byte = start_byte + wanted.len();
        chars = start + length;
        out.push(Segment {
            text: wanted,
            span: [start, chars],
        });
    }
    Ok(out)
}

/// The byte offset `count` code points after `from`, if the text is that long.
fn advance(text: &str, from: usize, count: usize) -> Option<usize> {
    if count == 0 {
        return Some(from);
    }
    let rest = text.get(from..)?;
    match rest.char_indices().nth(count) {
        Some((offset, _)) => Some(from + offset),
        None if rest.chars().count() == count => Some(text.len()),
        None => None,
    }
}

#[cfg(test)]
mod tests;
