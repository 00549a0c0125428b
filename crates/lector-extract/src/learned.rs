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
mod tests {
    use super::*;
    use crate::page::{Line, TextSource};

    /// A page of rows of words, each word a tenth of the page wide at its column.
    fn page(rows: &[&[(usize, &str)]]) -> Page {
        let lines = rows
            .iter()
            .enumerate()
            .map(|(r, words)| Line {
                words: words
                    .iter()
                    .map(|(column, text)| Word {
                        text: (*text).into(),
                        quad: Quad::rect(
                            *column as f32 * 0.1,
                            r as f32 * 0.03,
                            *column as f32 * 0.1 + 0.09,
                            r as f32 * 0.03 + 0.02,
                        ),
                        confidence: 1.0,
                    })
                    .collect(),
            })
            .collect();
        text_page(lines)
    }

    /// A 600×800 page of `lines` read from a PDF's text layer (the neighbours' tests use it too).
    pub(super) fn text_page(lines: Vec<Line>) -> Page {
        Page {
            number: 1,
            width: 600.0,
            height: 800.0,
            source: TextSource::TextLayer,
            lines,
        }
    }

    fn annotate(page: &Page, label: &str, value: &str) -> Annotation {
        let text = page.text();
        let at = text.find(value).expect("the value is on the page");
        let start = text[..at].chars().count();
        Annotation {
            label: label.into(),
            start,
            end: start + value.chars().count(),
        }
    }

    #[test]
    fn shapes_match_word_by_word() {
        assert_eq!(shape_match("A-9", "A-9"), 1.0);
        assert!((shape_match("Aa Aa A", "Aa Aa AaA") - 0.8 * 2.0 / 3.0).abs() < 1e-6);
        assert_eq!(shape_match("9.9", "Aa"), 0.0);
    }

    #[test]
    fn shapes_write_each_run_once() {
        assert_eq!(shape("INV-2024-0042"), "A-9-9");
        assert_eq!(shape("12.03.2025"), "9.9.9");
        assert_eq!(shape("Muster GmbH"), "Aa AaA");
        assert_eq!(shape("1.234,56 €"), "9.9,9 €");
    }

    #[test]
    fn a_field_is_found_by_its_announcing_words_and_shape() {
        let labels = vec!["order".to_owned(), "customer".to_owned()];
        let first = page(&[
            &[(0, "Acme"), (1, "Ltd")],
            &[(0, "Order"), (1, "ref:"), (2, "PO-7731")],
            &[(0, "Customer"), (3, "K-100")],
            &[(0, "Total"), (3, "12.00")],
        ]);
        let second = page(&[
            &[(0, "Blue"), (1, "River"), (2, "Inc.")],
            &[(0, "Order"), (1, "ref:"), (2, "PO-1204")],
            &[(0, "Customer"), (3, "K-733")],
        ]);
        let annotations = [
            vec![
                annotate(&first, "order", "PO-7731"),
                annotate(&first, "customer", "K-100"),
            ],
            vec![
                annotate(&second, "order", "PO-1204"),
                annotate(&second, "customer", "K-733"),
            ],
        ];
        let model = FieldModel::train([(&first, &annotations[0][..]), (&second, &annotations[1][..])], &labels);
        let model = FieldModel::from_json(&model.to_json()).expect("the model reads back");

        // A new page with the rows moved down and another customer line: found by its words.
        let new = page(&[
            &[(0, "Harbour"), (1, "&"), (2, "Finch")],
            &[(0, "Note:"), (1, "thanks")],
            &[(0, "Customer"), (3, "K-9")],
            &[(0, "Order"), (1, "ref:"), (2, "PO-5555")],
            &[(0, "Total"), (3, "99.00")],
        ]);
        let order = model
            .field("order")
            .unwrap()
            .find(std::slice::from_ref(&new), DataType::Id)
            .unwrap();
        assert_eq!(order.text, "PO-5555");
        assert!(order.confidence > 0.8, "{}", order.confidence);
        let customer = model.field("customer").unwrap().find(&[new], DataType::Text).unwrap();
        assert_eq!(customer.text, "K-9");
        assert!(model.field("total").is_none());
    }

    #[test]
    fn an_uploaded_field_model_is_held_to_what_training_makes() {
        let labels = vec!["order".to_owned()];
        let first = page(&[&[(0, "Order"), (1, "ref:"), (2, "PO-7731")]]);
        let annotations = [annotate(&first, "order", "PO-7731")];
        let trained = FieldModel::train([(&first, &annotations[..])], &labels);
        assert_eq!(FieldModel::uploaded(&trained.to_json(), &labels), Ok(trained.clone()));

        let refused = |edit: &dyn Fn(&mut FieldModel), labels: &[String]| {
            let mut model = trained.clone();
            edit(&mut model);
            FieldModel::uploaded(&model.to_json(), labels).unwrap_err()
        };
        let said = refused(&|_| {}, &["total".to_owned()]);
        assert!(said.contains("\"order\" is not one of the model's labels"), "{said}");
        let said = refused(&|m| m.fields.push(m.fields[0].clone()), &labels);
        assert!(said.contains("labels, once"), "{said}");
        let said = refused(
            &|m| m.fields[0].examples = vec![m.fields[0].examples[0].clone(); MAX_EXAMPLES + 1],
            &labels,
        );
        assert!(said.contains("more than 400 examples"), "{said}");
        let said = refused(
            &|m| m.fields[0].examples[0].context = (0..8).map(|i| format!("l:w{i}")).collect(),
            &labels,
        );
        assert!(said.contains("more announcing words"), "{said}");
        // What training would not keep is left out: a long word, a word of no side, an example
        // of a long shape.
        let mut long = trained.clone();
        let example = &mut long.fields[0].examples[0];
        example
            .context
            .extend([format!("l:{}", "w".repeat(99)), "x:total".to_owned()]);
        let mut long_shape = example.clone();
        long_shape.shape = "A9".repeat(51);
        long.fields[0].examples.push(long_shape);
        assert_eq!(FieldModel::uploaded(&long.to_json(), &labels), Ok(trained.clone()));
        let said = FieldModel::uploaded("[1, 2]", &labels).unwrap_err();
        assert!(said.contains("cannot be read"), "{said}");
    }

    #[test]
    fn words_above_announce_values_in_header_tables() {
        let labels = vec!["number".to_owned()];
        let pages: Vec<Page> = ["A-1", "A-22", "A-333"]
            .iter()
            .map(|n| page(&[&[(0, "Number"), (4, "Date")], &[(0, n), (4, "2025-01-02")]]))
            .collect();
        let annotations: Vec<Vec<Annotation>> = pages
            .iter()
            .zip(["A-1", "A-22", "A-333"])
            .map(|(p, n)| vec![annotate(p, "number", n)])
            .collect();
        let model = FieldModel::train(pages.iter().zip(&annotations).map(|(p, a)| (p, &a[..])), &labels);
        let new = page(&[&[(0, "Number"), (4, "Date")], &[(0, "B-4444"), (4, "2026-03-04")]]);
        let found = model.field("number").unwrap().find(&[new], DataType::Text).unwrap();
        assert_eq!(found.text, "B-4444");
    }

    #[test]
    fn corrected_values_are_located_as_written_or_as_converted() {
        let page = page(&[
            &[(0, "Rechnung"), (1, "R-77")],
            &[(0, "Datum:"), (1, "02.01.2025")],
            &[(0, "Summe"), (1, "1.234,50"), (2, "EUR")],
        ]);
        let text: Vec<char> = page.text().chars().collect();
        let read = |(s, e): (usize, usize)| text[s..e].iter().collect::<String>();
        assert_eq!(locate(&page, "R-77").map(read).as_deref(), Some("R-77"));
        assert_eq!(locate(&page, "2025-01-02").map(read).as_deref(), Some("02.01.2025"));
        assert_eq!(locate(&page, "1234.50").map(read).as_deref(), Some("1.234,50"));
        assert_eq!(locate(&page, "nowhere"), None);
        assert_eq!(locate(&page, "  "), None);
    }

    #[test]
    fn nothing_like_the_examples_is_not_found() {
        let labels = vec!["iban".to_owned()];
        let first = page(&[&[(0, "IBAN:"), (1, "DE89"), (2, "3704"), (3, "0044")]]);
        let annotations = [annotate(&first, "iban", "DE89 3704 0044")];
        let model = FieldModel::train([(&first, &annotations[..])], &labels);
        let other = page(&[&[(0, "Dear"), (1, "customer,")], &[(0, "thank"), (1, "you")]]);
        assert!(model.field("iban").unwrap().find(&[other], DataType::Text).is_none());
    }

    #[test]
    fn ranges_outside_the_words_and_unknown_labels_teach_nothing() {
        let first = page(&[&[(0, "Total"), (1, "5.00")]]);
        let annotations = [
            Annotation {
                label: "total".into(),
                start: 500,
                end: 510,
            },
            annotate(&first, "other", "5.00"),
        ];
        let model = FieldModel::train([(&first, &annotations[..])], &["total".to_owned()]);
        assert!(model.fields.is_empty());
    }
}
