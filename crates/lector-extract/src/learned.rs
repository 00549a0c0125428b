//! Extraction models: what annotated pages teach about each field, and finding the field on a
//! new page by it. Each annotated value is remembered as an example of its field: the words
//! that announce it (to its left on its row, or just above it), the shape of the value
//! (`INV-2024-0042` is `A-9-9`), where on the page it sits, and whether it fills its line. A
//! candidate on a new page (a run of words on one line) is scored against the closest example;
//! the best candidate above [`MIN_SCORE`] is the field's value, its score the confidence.
//!
//! Trained by the training job from a LABEL project's annotated pages and from corrected HITL
//! reviews; used by `extraction` beside the built-in recognisers. No HTTP and no SQL here.

use crate::builtin::Found;
use crate::convert::{Converted, DataType, convert};
use crate::page::{Page, PlacedWord, Quad, Word};
use serde::{Deserialize, Serialize};
use std::cell::OnceCell;
use std::collections::BTreeSet;

mod neighbours;

/// Examples kept per field (the first ones seen); past this, more pages teach nothing new.
pub const MAX_EXAMPLES: usize = 400;
/// Fields a model learns (a project's labels are bounded far below this).
pub const MAX_FIELDS: usize = 200;
/// Most words a value spans on its line.
pub const MAX_VALUE_WORDS: usize = 12;
/// Announcing words kept per side of a value.
const CONTEXT_WORDS: usize = 3;
/// Longest shape and announcing word an example keeps, in characters: a value's shape and the
/// words that announce it are far shorter, and every extraction compares them with each
/// candidate's.
const MAX_EXAMPLE_TEXT_CHARS: usize = 100;
/// Least score a candidate needs to be taken as the field's value.
pub const MIN_SCORE: f32 = 0.5;
/// How far a row may climb or fall (in page heights) per page width: a scan turned by up to
/// about 1.5°.
const TILT: f32 = 0.02;
/// How far right of a value (in page widths) the word that follows it may stand.
const RIGHT_REACH: f32 = 0.05;
/// How far above a value (in page heights) its announcing words may stand.
const ABOVE_REACH: f32 = 0.08;

const WEIGHT_CONTEXT: f32 = 0.45;
const WEIGHT_SHAPE: f32 = 0.2;
const WEIGHT_POSITION: f32 = 0.15;
const WEIGHT_EDGES: f32 = 0.2;
/// Distance (in page widths) at which a position counts half.
const POSITION_SCALE: f32 = 0.12;

/// One annotated value: a label over a character range of the page's text ([`Page::text`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotation {
    pub label: String,
    pub start: usize,
    pub end: usize,
}

/// What a model learnt: its fields' examples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FieldModel {
    pub fields: Vec<LearnedField>,
}

/// The examples of one field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedField {
    pub label: String,
    pub examples: Vec<Example>,
    /// The most words a value had.
    pub max_words: usize,
}

/// One value as annotated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// Announcing words, `l:` (left on its row) or `a:` (above), lower case and bare, and the
    /// word following the value closely, `r:`.
    pub context: BTreeSet<String>,
    pub shape: String,
    /// The value's centre on the page.
    pub x: f32,
    pub y: f32,
    /// Whether the value starts and ends its line.
    pub starts_line: bool,
    pub ends_line: bool,
}

impl FieldModel {
    /// Learns from annotated pages; annotations of labels outside `labels` are ignored, and so
    /// are ranges that cover no word.
    pub fn train<'a>(pages: impl IntoIterator<Item = (&'a Page, &'a [Annotation])>, labels: &[String]) -> Self {
        let mut model = FieldModel::default();
        for (page, annotations) in pages {
            let index = PageIndex::new(page);
            for annotation in annotations {
                if !labels.contains(&annotation.label) {
                    continue;
                }
                let Some(span) = index.span_of(annotation.start, annotation.end) else {
                    continue;
                };
                model.learn(&annotation.label, index.example(span));
            }
        }
        model
    }

    fn learn(&mut self, label: &str, (example, words): (Example, usize)) {
        let Some(example) = example.kept() else {
            return;
        };
        let field = match self.fields.iter().position(|f| f.label == label) {
            Some(at) => &mut self.fields[at],
            None if self.fields.len() < MAX_FIELDS => {
                self.fields.push(LearnedField {
                    label: label.to_owned(),
                    examples: Vec::new(),
                    max_words: 0,
                });
                self.fields.last_mut().expect("just pushed")
            }
            None => return,
        };
        field.max_words = field.max_words.max(words);
        if field.examples.len() < MAX_EXAMPLES {
            field.examples.push(example);
        }
    }

    /// The learnt field of `label`, if any page taught one.
    pub fn field(&self, label: &str) -> Option<&LearnedField> {
        self.fields.iter().find(|f| f.label == label && !f.examples.is_empty())
    }

    /// The model as stored with a trained model.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a field model serialises")
    }

    /// A stored model, or `None` when it cannot be read.
    pub fn from_json(json: &str) -> Option<Self> {
        serde_json::from_str(json).ok()
    }

    /// A model that came in an uploaded file, held to what training makes of the fields
    /// `labels` (every extraction with it looks at each example): or why it is not one.
    pub fn uploaded(json: &str, labels: &[String]) -> Result<Self, String> {
        let mut model: Self = serde_json::from_str(json).map_err(|e| format!("the field model cannot be read: {e}"))?;
        if model.fields.len() > MAX_FIELDS {
            return Err(format!("the field model has more than {MAX_FIELDS} fields"));
        }
        let mut seen = BTreeSet::new();
        for field in &mut model.fields {
            if !labels.contains(&field.label) || !seen.insert(field.label.clone()) {
                return Err(format!(
                    "the field model's field {:?} is not one of the model's labels, once",
                    field.label
                ));
            }
            if field.examples.len() > MAX_EXAMPLES || field.max_words > MAX_VALUE_WORDS {
                return Err(format!(
                    "the field {:?} has more than {MAX_EXAMPLES} examples or values of more than {MAX_VALUE_WORDS} words",
                    field.label
                ));
            }
            // As training keeps them (a file from before it did may hold more).
            let examples = std::mem::take(&mut field.examples);
            field.examples = examples.into_iter().filter_map(Example::kept).collect();
            if field.examples.iter().any(|e| e.context.len() > 2 * CONTEXT_WORDS + 1) {
                return Err(format!(
                    "an example of the field {:?} has more announcing words than training keeps",
                    field.label
                ));
            }
        }
        Ok(model)
    }
}

impl Example {
    /// The example as training keeps it: its announcing words (`l:`, `a:` or `r:` and the word)
    /// of at most [`MAX_EXAMPLE_TEXT_CHARS`] characters, the longer ones left out (a long run of
    /// text announces no field); none when its shape is longer than that.
    fn kept(mut self) -> Option<Self> {
        let short = |text: &str| text.chars().nth(MAX_EXAMPLE_TEXT_CHARS).is_none();
        if !short(&self.shape) {
            return None;
        }
        self.context
            .retain(|word| ["l:", "a:", "r:"].iter().any(|side| word.starts_with(side)) && short(word));
        Some(self)
    }
}

impl LearnedField {
    /// The best value of this field in `pages`, held to `data_type`: a candidate that does not
    /// convert counts half.
    pub fn find(&self, pages: &[Page], data_type: DataType) -> Option<Found> {
        let mut best: Option<(f32, Found)> = None;
        for page in pages {
            let index = PageIndex::new(page);
            for span in index.spans(self.max_words.clamp(1, MAX_VALUE_WORDS)) {
                // The announcing words cost a look at the words near it: a candidate that could
                // not win even with the best of them is passed over without it.
                let mut candidate = index.outline(span);
                let ceiling = self.best_possible(&candidate);
                if best.as_ref().is_some_and(|(b, _)| ceiling <= *b) || ceiling < MIN_SCORE {
                    continue;
                }
                candidate.context = index.context(span);
                let mut score = self.score(&candidate);
                if best.as_ref().is_some_and(|(b, _)| score <= *b) || score < MIN_SCORE {
                    continue;
                }
                let text = index.text(span);
                let converted = match convert(data_type, &text) {
                    Ok(converted) => converted,
                    Err(_) => {
                        score *= 0.5;
                        Converted {
                            value: text.clone(),
                            currency: None,
                        }
                    }
                };
                if score >= MIN_SCORE && best.as_ref().is_none_or(|(b, _)| score > *b) {
                    let found = Found {
                        text,
                        converted,
                        page: page.number,
                        quad: index.quad(span),
                        confidence: score,
                    };
                    best = Some((score, found));
                }
            }
        }
        best.map(|(_, found)| found)
    }

    /// How much `candidate` looks like the closest example, 0..=1.
    fn score(&self, candidate: &Example) -> f32 {
        self.examples
            .iter()
            .map(|example| {
                WEIGHT_CONTEXT * jaccard(&candidate.context, &example.context) + outline_score(candidate, example)
            })
            .fold(0.0, f32::max)
    }

    /// The most [`LearnedField::score`] can give a candidate of this outline (shape, place,
    /// edges), whatever words announce it.
    fn best_possible(&self, outline: &Example) -> f32 {
        self.examples
            .iter()
            .map(|example| WEIGHT_CONTEXT + outline_score(outline, example))
            .fold(0.0, f32::max)
    }
}

/// The part of a candidate's score its context plays no part in: shape, place and edges.
fn outline_score(candidate: &Example, example: &Example) -> f32 {
    let shape = shape_match(&candidate.shape, &example.shape);
    let distance = ((candidate.x - example.x).powi(2) + (candidate.y - example.y).powi(2)).sqrt();
    let position = 1.0 / (1.0 + (distance / POSITION_SCALE).powi(2));
    let edges = f32::from(u8::from(candidate.starts_line == example.starts_line)) * 0.5
        + f32::from(u8::from(candidate.ends_line == example.ends_line)) * 0.5;
    WEIGHT_SHAPE * shape + WEIGHT_POSITION * position + WEIGHT_EDGES * edges
}

/// Where `value` stands on `page`, as a character range of [`Page::text`]: the first run of
/// words that reads `value` (spaces aside), or else that converts to it (a corrected date
/// `2025-01-02` printed `02.01.2025`). This is how a reviewer's corrected value, which names
/// no place, becomes an annotation.
pub fn locate(page: &Page, value: &str) -> Option<(usize, usize)> {
    locate_all(page, value).into_iter().next()
}

/// Every place `value` stands on `page`, as [`locate`] finds the first, in reading order.
pub fn locate_all(page: &Page, value: &str) -> Vec<(usize, usize)> {
    let wanted: Vec<&str> = value.split_whitespace().collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let index = PageIndex::new(page);
    let spans: Vec<Span> = index.spans(MAX_VALUE_WORDS).collect();
    let reads = |span: &&Span| {
        index
            .words(**span)
            .iter()
            .map(|w| w.text.as_str())
            .eq(wanted.iter().copied())
    };
    let converts = |span: &&Span| {
        let text = index.text(**span);
        [
            DataType::Date,
            DataType::Amount,
            DataType::Iban,
            DataType::Number,
            DataType::Phone,
        ]
        .into_iter()
        .any(|kind| convert(kind, &text).is_ok_and(|c| c.value == value.trim()))
    };
    let mut found: Vec<&Span> = spans.iter().filter(reads).collect();
    if found.is_empty() {
        found = spans.iter().filter(converts).collect();
    }
    found.into_iter().map(|span| index.char_range(*span)).collect()
}

/// Shared over union; two empty contexts (a value nothing announces) agree fully.
fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let shared = a.intersection(b).count();
    shared as f32 / (a.len() + b.len() - shared) as f32
}

/// How alike two shapes are: 1 when equal, else the share of words (in order) of the same
/// shape, counted against the longer (`Aa Aa A` and `Aa Aa AaA` agree on two words of three).
fn shape_match(a: &str, b: &str) -> f32 {
    if a == b {
        return 1.0;
    }
    let (a, b): (Vec<&str>, Vec<&str>) = (a.split(' ').collect(), b.split(' ').collect());
    let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
    0.8 * same as f32 / a.len().max(b.len()) as f32
}

/// A value's shape: digits become `9`, capitals `A`, other letters `a`, each run of one kind
/// written once; punctuation and spaces stay.
pub fn shape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        let kind = if c.is_numeric() {
            '9'
        } else if c.is_uppercase() {
            'A'
        } else if c.is_alphabetic() {
            'a'
        } else {
            c
        };
        if out.ends_with(kind) && matches!(kind, '9' | 'A' | 'a') {
            continue;
        }
        out.push(kind);
    }
    out
}

/// A word as an announcing word: lower case without the punctuation around it; `None` for
/// words that carry digits (values, not labels) or nothing.
fn keyword(word: &str) -> Option<String> {
    let bare = word.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    (!bare.is_empty() && !bare.chars().any(|c| c.is_numeric())).then_some(bare)
}

/// Words on one line, `line`, from `start` (inclusive) to `end` (exclusive).
#[derive(Debug, Clone, Copy)]
struct Span {
    line: usize,
    start: usize,
    end: usize,
}

/// A page's words with what scoring asks of them, worked out once per page.
struct PageIndex<'a> {
    page: &'a Page,
    /// Each word's bounds, by line.
    bounds: Vec<Vec<(f32, f32, f32, f32)>>,
    /// Every word with its place in [`Page::text`], in reading order.
    placed: Vec<PlacedWord<'a>>,
    /// Where each line's first word is in `placed`.
    line_starts: Vec<usize>,
    /// The words filed for finding a span's context, when one is asked for.
    neighbours: OnceCell<neighbours::Neighbours<'a>>,
}

impl<'a> PageIndex<'a> {
    fn new(page: &'a Page) -> Self {
        let bounds = page
            .lines
            .iter()
            .map(|line| line.words.iter().map(|w| w.quad.bounds()).collect())
            .collect();
        let line_starts = page
            .lines
            .iter()
            .scan(0, |at, line| {
                let start = *at;
                *at += line.words.len();
                Some(start)
            })
            .collect();
        Self {
            page,
            bounds,
            placed: page.placed_words(),
            line_starts,
            neighbours: OnceCell::new(),
        }
    }

    fn words(&self, span: Span) -> &'a [Word] {
        &self.page.lines[span.line].words[span.start..span.end]
    }

    fn text(&self, span: Span) -> String {
        let words: Vec<&str> = self.words(span).iter().map(|w| w.text.as_str()).collect();
        words.join(" ")
    }

    fn quad(&self, span: Span) -> Quad {
        let words = self.words(span);
        words[1..].iter().fold(words[0].quad, |q, w| q.union(&w.quad))
    }

    /// The character range of `span` in [`Page::text`].
    fn char_range(&self, span: Span) -> (usize, usize) {
        let chars = |index: usize| {
            self.placed
                .get(self.line_starts[span.line] + index)
                .map_or(0..0, |p| p.chars.clone())
        };
        (chars(span.start).start, chars(span.end - 1).end)
    }

    /// Every run of up to `most` words on a line.
    fn spans(&self, most: usize) -> impl Iterator<Item = Span> + '_ {
        self.page.lines.iter().enumerate().flat_map(move |(line, l)| {
            let n = l.words.len();
            (0..n).flat_map(move |start| (start + 1..=n.min(start + most)).map(move |end| Span { line, start, end }))
        })
    }

    /// The words a character range of [`Page::text`] covers, on the line of its first word.
    fn span_of(&self, start: usize, end: usize) -> Option<Span> {
        let mut found: Option<Span> = None;
        for placed in &self.placed {
            let covered = placed.chars.start < end && start < placed.chars.end;
            let (line, w) = (placed.line, placed.index);
            match (&mut found, covered) {
                (None, true) => {
                    found = Some(Span {
                        line,
                        start: w,
                        end: w + 1,
                    })
                }
                (Some(span), true) if span.line == line => span.end = w + 1,
                _ => {}
            }
        }
        found.filter(|s| s.end - s.start <= MAX_VALUE_WORDS)
    }

    /// A span as an example (and how many words it has).
    fn example(&self, span: Span) -> (Example, usize) {
        let mut example = self.outline(span);
        example.context = self.context(span);
        (example, span.end - span.start)
    }

    /// A span as an example without its context: its shape, place and edges.
    fn outline(&self, span: Span) -> Example {
        let (left, top, right, bottom) = self.quad(span).bounds();
        Example {
            context: BTreeSet::new(),
            shape: shape(&self.text(span)),
            x: (left + right) / 2.0,
            y: (top + bottom) / 2.0,
            starts_line: span.start == 0,
            ends_line: span.end == self.page.lines[span.line].words.len(),
        }
    }

    /// The words that announce a span (left on its row, above it) and the one that follows it.
    fn context(&self, span: Span) -> BTreeSet<String> {
        let neighbours = self
            .neighbours
            .get_or_init(|| neighbours::Neighbours::new(self.page, &self.bounds));
        neighbours.context(span, self.quad(span).bounds())
    }
}

#[cfg(test)]
mod tests;
