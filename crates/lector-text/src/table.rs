//! Tables: what every file reader produces, and how columns are chosen from them.
//!
//! A table is a header (column names) and data rows of cell strings, all rows as wide as the
//! header. Files without a header row get columns named "0", "1", …; a blank header cell is named
//! by its index the same way, so every column can be chosen by name as well as by 0-based index.

use crate::error::{Result, TextError};
use std::collections::{HashMap, HashSet};

/// A whole file read into memory (bounded by [`crate::Limits`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// The header followed by at most `rows` data rows: the preview clients choose columns from.
    pub fn preview(&self, rows: usize) -> Vec<Vec<String>> {
        std::iter::once(self.header.clone())
            .chain(self.rows.iter().take(rows).cloned())
            .collect()
    }

    /// The 0-based index of a column.
    pub fn column_index(&self, column: &ColumnRef) -> Result<usize> {
        column.resolve(&self.header)
    }

    /// The cells of one column, in row order.
    pub fn column(&self, column: &ColumnRef) -> Result<Vec<&str>> {
        let index = self.column_index(column)?;
        Ok(self
            .rows
            .iter()
            .map(|row| row.get(index).map_or("", String::as_str))
            .collect())
    }
}

/// A column chosen by the client: by 0-based index (`column`) or by name (`column_name`), or
/// neither ([`ColumnRef::TextOrFirst`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnRef {
    Index(usize),
    Name(String),
    /// The column named `text` where there is one (as in the files the service writes, and in
    /// JSON records), else the first: a CSV of `id,text` read by its first column would
    /// analyse its ids.
    TextOrFirst,
}

impl ColumnRef {
    /// The column a request names by `index` or `name` (the name wins), or the default.
    pub fn chosen(index: Option<usize>, name: Option<&str>) -> Self {
        match (name, index) {
            (Some(name), _) => Self::Name(name.to_owned()),
            (None, Some(index)) => Self::Index(index),
            (None, None) => Self::TextOrFirst,
        }
    }

    /// The 0-based index of this column in `header`; names match exactly, then ignoring case and
    /// surrounding whitespace.
    pub fn resolve(&self, header: &[String]) -> Result<usize> {
        let found = match self {
            ColumnRef::Index(index) => (*index < header.len()).then_some(*index),
            ColumnRef::Name(name) => named(header, name),
            ColumnRef::TextOrFirst => named(header, "text").or((!header.is_empty()).then_some(0)),
        };
        found.ok_or_else(|| TextError::MissingColumn {
            column: self.to_string(),
        })
    }
}

/// The position of the column called `name` in `header`: exactly, then ignoring case and
/// surrounding whitespace.
fn named(header: &[String], name: &str) -> Option<usize> {
    header.iter().position(|h| h == name).or_else(|| {
        let wanted = name.trim().to_lowercase();
        header.iter().position(|h| h.trim().to_lowercase() == wanted)
    })
}

impl std::fmt::Display for ColumnRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColumnRef::Index(index) => write!(f, "{index}"),
            ColumnRef::Name(name) => write!(f, "{name:?}"),
            ColumnRef::TextOrFirst => write!(f, "\"text\" or 0"),
        }
    }
}

/// Column names for a file: its first row when `header_first`, else "0", "1", … Each name is
/// one column's, and a name the row gives is that column's: a name given again (or a blank
/// cell's number, when a column is named so) is followed by `_2`, `_3`, … skipping every name
/// the row gives, so no column's cells are lost in a document's meta under another's name.
pub(crate) fn header_names(first_row: Option<&[String]>, width: usize, header_first: bool) -> Vec<String> {
    let given: Vec<Option<&String>> = (0..width)
        .map(|index| {
            first_row
                .and_then(|row| row.get(index))
                .filter(|name| header_first && !name.trim().is_empty())
        })
        .collect();
    let reserved: HashSet<&str> = given.iter().flatten().map(|name| name.as_str()).collect();
    let mut taken: HashSet<String> = HashSet::new();
    let mut next_suffix: HashMap<String, usize> = HashMap::new();
    given
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let base = name.map_or_else(|| index.to_string(), |name| name.to_string());
            let free = |candidate: &str, taken: &HashSet<String>| {
                !taken.contains(candidate) && ((name.is_some() && candidate == base) || !reserved.contains(candidate))
            };
            let chosen = if free(&base, &taken) {
                base
            } else {
                let n = next_suffix.entry(base.clone()).or_insert(2);
                loop {
                    let candidate = format!("{base}_{n}");
                    *n += 1;
                    if !taken.contains(&candidate) && !reserved.contains(candidate.as_str()) {
                        break candidate;
                    }
                }
            };
            taken.insert(chosen.clone());
            chosen
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            header: vec!["text".into(), "Label ".into()],
            rows: vec![
                vec!["a".into(), "x".into()],
                vec!["b".into(), "y".into()],
                vec!["c".into(), "z".into()],
            ],
        }
    }

    #[test]
    fn preview_puts_the_header_first() {
        let preview = table().preview(2);
        assert_eq!(preview, [vec!["text", "Label "], vec!["a", "x"], vec!["b", "y"]]);
        assert_eq!(table().preview(0).len(), 1);
    }

    #[test]
    fn columns_by_index_and_by_name() {
        let table = table();
        assert_eq!(table.column(&ColumnRef::Index(1)).unwrap(), ["x", "y", "z"]);
        assert_eq!(table.column(&ColumnRef::Name("text".into())).unwrap(), ["a", "b", "c"]);
        assert_eq!(table.column_index(&ColumnRef::Name("label".into())).unwrap(), 1);
    }

    #[test]
    fn a_missing_column_is_named_in_the_error() {
        let error = table().column(&ColumnRef::Name("aspect".into())).unwrap_err();
        assert_eq!(error.status(), 422);
        assert_eq!(error.to_string(), "the file has no column \"aspect\"");
        assert_eq!(
            table().column(&ColumnRef::Index(2)).unwrap_err().to_string(),
            "the file has no column 2"
        );
    }

    #[test]
    fn headers_are_named_by_index_without_a_header_row() {
        let first = ["a".to_string(), " ".to_string()];
        assert_eq!(header_names(Some(&first), 3, true), ["a", "1", "2"]);
        assert_eq!(header_names(Some(&first), 2, false), ["0", "1"]);
    }

    #[test]
    fn a_name_given_twice_names_two_columns() {
        let row: Vec<String> = ["text", "tag", "tag", "tag_2", " ", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // The row's own `tag_2` keeps its name; the second `tag` takes the next free one.
        assert_eq!(
            header_names(Some(&row), 6, true),
            ["text", "tag", "tag_3", "tag_2", "4", "1"]
        );
        // A blank cell's number gives way to a column named so, wherever it stands.
        let blank: Vec<String> = [" ", "0"].iter().map(|s| s.to_string()).collect();
        assert_eq!(header_names(Some(&blank), 2, true), ["0_2", "0"]);
        // A thousand columns of one name are named in one pass (no search from _2 each time).
        let same: Vec<String> = (0..1000).map(|_| "x".to_string()).collect();
        let named = header_names(Some(&same), 1000, true);
        assert_eq!((named[0].as_str(), named[999].as_str()), ("x", "x_1000"));
    }
}
