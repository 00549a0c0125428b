//! What reading a document gives: pages of lines of words, each word with its box as four
//! page-relative corners (SPEC's box shape) and a confidence. The PDF text layer and OCR both
//! end here, so everything after reading (documents, annotation, field matching) sees one shape.

use serde::{Deserialize, Serialize};

/// A point relative to its page: `x` from the left edge, `y` from the top, both 0..=1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub x: f32,
    pub y: f32,
}

/// A word's box: its four corners, clockwise from the top left, so turned text keeps its shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quad {
    pub tl: Point,
    pub tr: Point,
    pub br: Point,
    pub bl: Point,
}

impl Quad {
    /// The upright box from `(left, top)` to `(right, bottom)`.
    pub fn rect(left: f32, top: f32, right: f32, bottom: f32) -> Self {
        Self {
            tl: Point { x: left, y: top },
            tr: Point { x: right, y: top },
            br: Point { x: right, y: bottom },
            bl: Point { x: left, y: bottom },
        }
    }

    /// The smallest upright box holding every corner: `(left, top, right, bottom)`.
    pub fn bounds(&self) -> (f32, f32, f32, f32) {
        let xs = [self.tl.x, self.tr.x, self.br.x, self.bl.x];
        let ys = [self.tl.y, self.tr.y, self.br.y, self.bl.y];
        let min = |v: [f32; 4]| v.into_iter().fold(f32::INFINITY, f32::min);
        let max = |v: [f32; 4]| v.into_iter().fold(f32::NEG_INFINITY, f32::max);
        (min(xs), min(ys), max(xs), max(ys))
    }

    /// The smallest upright box holding both.
    pub fn union(&self, other: &Quad) -> Quad {
        let (l1, t1, r1, b1) = self.bounds();
        let (l2, t2, r2, b2) = other.bounds();
        Quad::rect(l1.min(l2), t1.min(t2), r1.max(r2), b1.max(b2))
    }

    /// The box with every coordinate clamped to the page.
    pub fn clamped(self) -> Quad {
        let c = |p: Point| Point {
            x: p.x.clamp(0.0, 1.0),
            y: p.y.clamp(0.0, 1.0),
        };
        Quad {
            tl: c(self.tl),
            tr: c(self.tr),
            br: c(self.br),
            bl: c(self.bl),
        }
    }
}

/// One word as read: its text, box and how sure the reader is (1.0 for a PDF's own text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Word {
    pub text: String,
    pub quad: Quad,
    pub confidence: f32,
}

/// Words that sit together on one line, left to right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub words: Vec<Word>,
}

impl Line {
    /// The line's words joined by single spaces.
    pub fn text(&self) -> String {
        let mut text = String::new();
        for (i, word) in self.words.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&word.text);
        }
        text
    }
}

/// Where a page's words came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextSource {
    /// The PDF's own text layer.
    TextLayer,
    /// Optical character recognition of the page's image.
    Ocr,
}

/// One page: its size (PDF points, or pixels for an image) and its lines in reading order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Page {
    /// 1 for the first page.
    pub number: u32,
    pub width: f32,
    pub height: f32,
    pub source: TextSource,
    pub lines: Vec<Line>,
}

impl Page {
    /// The page's text: its lines in reading order, one per text line.
    pub fn text(&self) -> String {
        self.lines.iter().map(Line::text).collect::<Vec<_>>().join("\n")
    }

    /// Every word with the character range it covers in [`Page::text`], in reading order.
    pub fn words_with_offsets(&self) -> Vec<(&Word, std::ops::Range<usize>)> {
        self.placed_words().into_iter().map(|p| (p.word, p.chars)).collect()
    }

    /// Every word with its line, its place on the line and the character range it covers in
    /// [`Page::text`], in reading order.
    pub(crate) fn placed_words(&self) -> Vec<PlacedWord<'_>> {
        let mut at = 0;
        let mut out = Vec::new();
        for (l, line) in self.lines.iter().enumerate() {
            if l > 0 {
                at += 1;
            }
            for (w, word) in line.words.iter().enumerate() {
                if w > 0 {
                    at += 1;
                }
                let len = word.text.chars().count();
                out.push(PlacedWord {
                    line: l,
                    index: w,
                    word,
                    chars: at..at + len,
                });
                at += len;
            }
        }
        out
    }

    /// How many words the page holds.
    pub fn word_count(&self) -> usize {
        self.lines.iter().map(|l| l.words.len()).sum()
    }
}

/// Keeps the first `most` words of `lines` in reading order, as OCR keeps at most
/// [`crate::ocr::MAX_WORDS_PER_PAGE`] of a page: the words past it are dropped, and the lines
/// they leave empty.
pub(crate) fn keep_first_words(lines: &mut Vec<Line>, most: usize) {
    let mut left = most;
    for line in lines.iter_mut() {
        line.words.truncate(left);
        left -= line.words.len();
    }
    lines.retain(|line| !line.words.is_empty());
}

/// A word of a page with where it stands ([`Page::placed_words`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PlacedWord<'a> {
    /// Its line's index on the page.
    pub(crate) line: usize,
    /// Its index on its line.
    pub(crate) index: usize,
    pub(crate) word: &'a Word,
    /// The characters it covers in [`Page::text`].
    pub(crate) chars: std::ops::Range<usize>,
}

/// A whole document as read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadDocument {
    pub format: crate::DocumentFormat,
    pub pages: Vec<Page>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str) -> Word {
        Word {
            text: text.into(),
            quad: Quad::rect(0.0, 0.0, 0.1, 0.1),
            confidence: 1.0,
        }
    }

    #[test]
    fn text_and_offsets_agree() {
        let page = Page {
            number: 1,
            width: 100.0,
            height: 100.0,
            source: TextSource::TextLayer,
            lines: vec![
                Line {
                    words: vec![word("Invoice"), word("Nr.")],
                },
                Line {
                    words: vec![word("Grüße"), word("42")],
                },
            ],
        };
        let text = page.text();
        assert_eq!(text, "Invoice Nr.\nGrüße 42");
        let chars: Vec<char> = text.chars().collect();
        for (word, range) in page.words_with_offsets() {
            assert_eq!(chars[range].iter().collect::<String>(), word.text);
        }
    }

    #[test]
    fn only_the_first_words_are_kept() {
        let line = |n: usize| Line {
            words: (0..n).map(|i| word(&i.to_string())).collect(),
        };
        let mut lines = vec![line(3), line(4), line(2)];
        keep_first_words(&mut lines, 5);
        let kept: Vec<String> = lines.iter().map(Line::text).collect();
        assert_eq!(kept, ["0 1 2", "0 1"]);
        let mut lines = vec![line(3), line(4)];
        keep_first_words(&mut lines, 7);
        assert_eq!(lines.iter().map(|l| l.words.len()).sum::<usize>(), 7);
    }

    #[test]
    fn quads_bound_and_join() {
        let a = Quad::rect(0.1, 0.2, 0.3, 0.4);
        let b = Quad::rect(0.25, 0.1, 0.5, 0.3);
        assert_eq!(a.union(&b).bounds(), (0.1, 0.1, 0.5, 0.4));
        assert_eq!(Quad::rect(-0.5, 0.0, 1.5, 1.0).clamped().bounds(), (0.0, 0.0, 1.0, 1.0));
    }
}
