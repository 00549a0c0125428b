//! Labeled data as tables: the rows a labeling session downloads as, and how rows of an
//! uploaded table become documents with tagged segments again.
//!
//! One row is one tag on one segment (or a segment without tags). Rows that share a document
//! key (the `document` column) are the segments of one document, in order; consecutive rows
//! with the same `segment` key (a download's segment id), or without that column the same
//! segment text, are the tags of one segment: a sentence said twice stays two segments. Without
//! a `document` column every row (or run of rows with the same text) is a document of one
//! segment. With an `annotated` column a segment is annotated as it says; without one, when it
//! has tags.

use crate::error::{Limit, Location, Result, TextError};
use crate::table::{ColumnRef, Table};
pub use lector_core::labeling::LabeledColumns;

/// The columns of a labeling-session download, in order.
pub const LABELED_HEADER: [&str; 7] = ["document", "segment", "text", "class", "label", "part", "annotated"];

/// Which columns hold what. Only `text` is required.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMapping {
    pub text: ColumnRef,
    /// The class (the aspect in ABSA projects).
    pub class: Option<ColumnRef>,
    pub label: Option<ColumnRef>,
    /// Rows with the same value here are segments of one document.
    pub document: Option<ColumnRef>,
    /// The words of the segment a tag points at.
    pub part: Option<ColumnRef>,
    /// true, yes, 1 or ANNOTATED: the segment counts as annotated even without tags; any
    /// other value: it does not, even with tags (a model's suggestions, not yet confirmed).
    pub annotated: Option<ColumnRef>,
    /// Rows with the same value here are tags of one segment of their document.
    pub segment: Option<ColumnRef>,
}

impl ColumnMapping {
    /// The mapping a table's own header implies: `text`, `class` (or `aspect`, `category`),
    /// `label` (or `sentiment`, `polarity`), `document`, `part`, `annotated`.
    pub fn from_header(header: &[String]) -> Result<Self> {
        let find = |names: &[&str]| {
            names
                .iter()
                .map(|n| ColumnRef::Name((*n).to_owned()))
                .find(|c| c.resolve(header).is_ok())
        };
        Ok(Self {
            text: find(&["text"]).ok_or_else(|| TextError::MissingColumn {
                column: "\"text\"".into(),
            })?,
            class: find(&["class", "aspect", "category"]),
            label: find(&["label", "sentiment", "polarity"]),
            document: find(&["document"]),
            part: find(&["part"]),
            annotated: find(&["annotated"]),
            segment: find(&["segment"]),
        })
    }
}

/// A tag as a table names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabeledTag {
    pub class: Option<String>,
    pub label: Option<String>,
    pub part: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabeledSegment {
    pub text: String,
    pub tags: Vec<LabeledTag>,
    pub annotated: bool,
}

/// A document made of labeled segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabeledText {
    pub segments: Vec<LabeledSegment>,
}

impl LabeledText {
    /// The document's text: its segments joined by a space, with each segment's span in code
    /// points.
    pub fn text_and_spans(&self) -> (String, Vec<[usize; 2]>) {
        let mut text = String::new();
        let mut spans = Vec::with_capacity(self.segments.len());
        let mut at = 0;
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                text.push(' ');
                at += 1;
            }
            let length = segment.text.chars().count();
            spans.push([at, at + length]);
            text.push_str(&segment.text);
            at += length;
        }
        (text, spans)
    }
}

fn is_true(cell: &str) -> bool {
    matches!(cell.trim().to_lowercase().as_str(), "true" | "yes" | "1" | "annotated")
}

fn cell(row: &[String], at: Option<usize>) -> &str {
    at.and_then(|i| row.get(i)).map_or("", String::as_str)
}

fn non_empty(cell: &str) -> Option<String> {
    let cell = cell.trim();
    (!cell.is_empty()).then(|| cell.to_owned())
}

impl ColumnMapping {
    /// The columns' places in `header` (a named column the header lacks is an error).
    pub fn resolve(&self, header: &[String]) -> Result<LabeledColumns> {
        let column = |c: &Option<ColumnRef>| c.as_ref().map(|c| c.resolve(header)).transpose();
        Ok(LabeledColumns {
            text: self.text.resolve(header)?,
            class: column(&self.class)?,
            label: column(&self.label)?,
            document: column(&self.document)?,
            part: column(&self.part)?,
            annotated: column(&self.annotated)?,
            segment: column(&self.segment)?,
        })
    }
}

/// Segments one labeled document may have: rows sharing a `document` key would otherwise make
/// one document of the whole file, held in memory and stored in one transaction.
pub const MAX_LABELED_SEGMENTS: usize = 100_000;
/// Characters one labeled document may have, its segments joined by a space: a document's
/// limit however it arrives.
pub const MAX_LABELED_CHARS: usize = lector_core::validate::MAX_DOCUMENT_CHARS;

/// Turns rows into labeled documents one row at a time, so a file of any length is read with
/// one document in memory: [`LabeledRows::push`] answers the document a row completes (the one
/// before it, when the row starts another), [`LabeledRows::finish`] the last one. A document
/// past [`MAX_LABELED_SEGMENTS`] segments or [`MAX_LABELED_CHARS`] characters is refused at the
/// row that takes it past.
#[derive(Debug)]
pub struct LabeledRows {
    columns: LabeledColumns,
    current: Option<LabeledText>,
    /// Characters of the current document so far, its segments joined by a space.
    chars: usize,
    max_segments: usize,
    max_chars: usize,
    last_key: Option<String>,
    /// The last row's `segment` cell, when the table has one and it was not empty.
    last_segment: Option<String>,
    rows: u64,
}

impl LabeledRows {
    pub fn new(columns: LabeledColumns) -> Self {
        Self {
            columns,
            current: None,
            last_key: None,
            last_segment: None,
            rows: 0,
            chars: 0,
            max_segments: MAX_LABELED_SEGMENTS,
            max_chars: MAX_LABELED_CHARS,
        }
    }

    /// The same, with other bounds on a document (tests).
    pub fn with_bounds(columns: LabeledColumns, max_segments: usize, max_chars: usize) -> Self {
        Self {
            max_segments,
            max_chars,
            ..Self::new(columns)
        }
    }

    /// Takes the next data row; answers the document it completes, if any.
    pub fn push(&mut self, row: &[String]) -> Result<Option<LabeledText>> {
        let columns = self.columns;
        self.rows += 1;
        let Some(text) = non_empty(cell(row, Some(columns.text))) else {
            return Err(TextError::malformed(Location::Row(self.rows), "the text is empty"));
        };
        let tag = LabeledTag {
            class: non_empty(cell(row, columns.class)),
            label: non_empty(cell(row, columns.label)),
            part: non_empty(cell(row, columns.part)),
        };
        let has_tag = tag.class.is_some() || tag.label.is_some();
        let key = columns.document.map(|at| cell(row, Some(at)).trim().to_owned());
        let segment_key = columns.segment.and_then(|at| non_empty(cell(row, Some(at))));
        let same_key = segment_key.is_none() || segment_key == self.last_segment;
        let same_document = match (&key, &self.last_key) {
            (Some(key), Some(last)) => key == last,
            // Without documents, a row continues the last one's only segment or starts anew.
            (None, _) => {
                same_key
                    && self
                        .current
                        .as_ref()
                        .and_then(|d| d.segments.last())
                        .is_some_and(|s| s.text == text)
            }
            _ => false,
        };
        let done = if same_document { None } else { self.current.take() };
        self.last_key = key;
        self.last_segment = segment_key;
        if !same_document {
            self.chars = 0;
        }
        let document = self.current.get_or_insert_with(|| LabeledText { segments: Vec::new() });
        if !same_document || !same_key || document.segments.last().is_none_or(|s| s.text != text) {
            let separator = usize::from(!document.segments.is_empty());
            self.chars = self.chars.saturating_add(separator + text.chars().count());
            if document.segments.len() >= self.max_segments {
                return Err(TextError::too_large(
                    Limit::DocumentSegments,
                    self.max_segments as u64,
                    Some(Location::Row(self.rows)),
                ));
            }
            if self.chars > self.max_chars {
                return Err(TextError::too_large(
                    Limit::DocumentChars,
                    self.max_chars as u64,
                    Some(Location::Row(self.rows)),
                ));
            }
            document.segments.push(LabeledSegment {
                text,
                tags: Vec::new(),
                annotated: false,
            });
        }
        let segment = document.segments.last_mut().expect("pushed above");
        let marked = non_empty(cell(row, columns.annotated));
        segment.annotated |= marked.map_or(has_tag, |mark| is_true(&mark));
        if has_tag && !segment.tags.contains(&tag) {
            segment.tags.push(tag);
        }
        Ok(done)
    }

    /// The last document, once every row is in.
    pub fn finish(self) -> Option<LabeledText> {
        self.current
    }
}

/// Reads the labeled documents of a table.
pub fn labeled_documents(table: &Table, mapping: &ColumnMapping) -> Result<Vec<LabeledText>> {
    let mut rows = LabeledRows::new(mapping.resolve(&table.header)?);
    let mut documents = Vec::new();
    for row in &table.rows {
        documents.extend(rows.push(row)?);
    }
    documents.extend(rows.finish());
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(header: &[&str], rows: &[&[&str]]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| (*c).to_owned()).collect())
                .collect(),
        }
    }

    #[test]
    fn a_document_stops_at_its_segments_and_characters() {
        let header: Vec<String> = ["document", "text"].iter().map(|h| (*h).to_owned()).collect();
        let columns = ColumnMapping::from_header(&header).unwrap().resolve(&header).unwrap();
        let row = |d: &str, text: &str| vec![d.to_owned(), text.to_owned()];
        // Three segments pass, the fourth (data row 4) is refused, naming the limit and the row.
        let mut rows = LabeledRows::with_bounds(columns, 3, 100);
        for text in ["a", "b", "c"] {
            assert!(rows.push(&row("1", text)).unwrap().is_none());
        }
        let error = rows.push(&row("1", "d")).unwrap_err().to_string();
        assert_eq!(
            error,
            "the number of segments of one document is over the limit of 3 (at row 4)"
        );
        // Characters count the spaces that join the segments: "ab cd" is 5.
        let mut rows = LabeledRows::with_bounds(columns, 10, 5);
        rows.push(&row("1", "ab")).unwrap();
        rows.push(&row("1", "cd")).unwrap();
        let error = rows.push(&row("1", "e")).unwrap_err().to_string();
        assert!(
            error.contains("length of one document in characters is over the limit of 5 (at row 3)"),
            "{error}"
        );
        // A new document starts counting again.
        let mut rows = LabeledRows::with_bounds(columns, 1, 100);
        rows.push(&row("1", "a")).unwrap();
        assert!(rows.push(&row("2", "b")).unwrap().is_some());
        assert!(rows.push(&row("3", "c")).unwrap().is_some());
    }

    #[test]
    fn rows_become_documents_segments_and_tags() {
        let t = table(
            &LABELED_HEADER,
            &[
                &["1", "10", "Good soup.", "FOOD", "positive", "soup", "true"],
                &["1", "10", "Good soup.", "PRICE", "negative", "", "true"],
                &["1", "11", "Slow service.", "", "", "", "true"],
                &["2", "12", "Nothing.", "", "", "", "false"],
            ],
        );
        let mapping = ColumnMapping::from_header(&t.header).unwrap();
        let documents = labeled_documents(&t, &mapping).unwrap();
        assert_eq!(documents.len(), 2);
        assert_eq!(documents[0].segments.len(), 2);
        assert_eq!(documents[0].segments[0].tags.len(), 2);
        assert_eq!(documents[0].segments[0].tags[0].part.as_deref(), Some("soup"));
        assert!(documents[0].segments[1].annotated, "annotated without tags");
        assert!(!documents[1].segments[0].annotated);
        assert_eq!(
            documents[0].text_and_spans(),
            ("Good soup. Slow service.".to_owned(), vec![[0, 10], [11, 24]])
        );
    }

    /// A sentence said twice in a row is two segments when the rows name their segments, and
    /// the `annotated` column, when given, says which segments are annotated, tags or not.
    #[test]
    fn repeated_sentences_stay_apart_and_annotated_is_read_as_written() {
        let t = table(
            &LABELED_HEADER,
            &[
                &["1", "10", "I am locked out.", "login", "", "", "true"],
                &["1", "11", "I am locked out.", "login", "", "", "true"],
                &["1", "11", "I am locked out.", "account", "", "", "true"],
                &["2", "0", "Charged twice.", "billing", "", "", "false"],
                &["3", "", "Hello.", "", "", "", ""],
                &["3", "", "Hello.", "greeting", "", "", ""],
            ],
        );
        let documents = labeled_documents(&t, &ColumnMapping::from_header(&t.header).unwrap()).unwrap();
        assert_eq!(documents.len(), 3);
        let first = &documents[0].segments;
        assert_eq!(first.len(), 2, "{first:?}");
        assert_eq!((first[0].tags.len(), first[1].tags.len()), (1, 2));
        assert_eq!(documents[0].text_and_spans().0, "I am locked out. I am locked out.");
        let suggested = &documents[1].segments[0];
        assert_eq!(
            (suggested.tags.len(), suggested.annotated),
            (1, false),
            "tagged, not confirmed"
        );
        // Without segment keys or marks: the text joins rows, tags make a segment annotated.
        assert_eq!(documents[2].segments.len(), 1);
        assert!(documents[2].segments[0].annotated);
        // Without a document column, rows of two segments are two documents, however alike.
        let t = table(&["segment", "text"], &[&["1", "Hi."], &["2", "Hi."]]);
        let documents = labeled_documents(&t, &ColumnMapping::from_header(&t.header).unwrap()).unwrap();
        assert_eq!(documents.len(), 2, "{documents:?}");
    }

    #[test]
    fn without_a_document_column_each_text_is_a_document() {
        let t = table(
            &["review", "aspect", "sentiment"],
            &[
                &["Tasty.", "FOOD", "positive"],
                &["Tasty.", "FOOD", "positive"],
                &["Loud.", "AMBIENCE", ""],
            ],
        );
        let mapping = ColumnMapping {
            text: ColumnRef::Name("review".into()),
            ..ColumnMapping::from_header(&["text".into(), "aspect".into(), "sentiment".into()]).unwrap()
        };
        let documents = labeled_documents(&t, &mapping).unwrap();
        assert_eq!(documents.len(), 2);
        assert_eq!(documents[0].segments[0].tags.len(), 1, "a repeated row is one tag");
        assert_eq!(documents[1].segments[0].tags[0].label, None);
        assert!(documents[1].segments[0].annotated);
    }

    #[test]
    fn a_missing_text_column_or_cell_is_named() {
        let err = ColumnMapping::from_header(&["body".into()]).unwrap_err();
        assert_eq!(err.status(), 422);
        let t = table(&["text"], &[&["fine"], &["  "]]);
        let err = labeled_documents(&t, &ColumnMapping::from_header(&t.header).unwrap()).unwrap_err();
        assert_eq!(err.to_string(), "malformed input at row 2: the text is empty");
    }
}
