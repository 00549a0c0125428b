//! Labelled text files, `label<TAB>text` one example a line: the format of the benchmark
//! (`examples/bench.rs`, `scripts/ml-bench`) and of anyone who brings a set of their own.
//!
//! Reading is strict where silence would mislead: bytes that are not UTF-8 stop the read with
//! the file, line and byte where they start, and the lines that are skipped (blank, without a
//! TAB, with an empty label) are counted and their first line number kept, so a caller can say
//! what was left out. [`check_trainable`] says in words why a split cannot make a benchmark
//! before anything is written. This module does not split, shuffle or clean text: the bytes
//! after the first TAB are the text.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::example::{Example, Tag};

/// Why a labelled file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TsvError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `line` counts from 1; `column` is the byte within the line (from 1), `offset` the byte
    /// within the file (from 0).
    #[error(
        "{}: line {line}, byte {column} (file offset {offset}): invalid UTF-8 (bytes {bytes}); \
         convert the file to UTF-8 first",
        path.display()
    )]
    Utf8 {
        path: PathBuf,
        line: usize,
        column: usize,
        offset: usize,
        /// The offending bytes in hex, e.g. `e9 20`.
        bytes: String,
    },
}

/// Lines a read left out, by reason, each with the number of the first such line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skipped {
    pub blank: Counted,
    pub without_tab: Counted,
    pub empty_label: Counted,
}

/// How many lines, and the first of them (from 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    pub count: usize,
    pub first_line: Option<usize>,
}

impl Counted {
    fn add(&mut self, line: usize) {
        self.count += 1;
        self.first_line.get_or_insert(line);
    }
}

impl Skipped {
    /// Lines skipped for a reason that is likely a mistake (a blank line is not).
    pub fn suspicious(&self) -> usize {
        self.without_tab.count + self.empty_label.count
    }
}

impl fmt::Display for Skipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("without a TAB", self.without_tab),
            ("with an empty label", self.empty_label),
            ("blank", self.blank),
        ]
        .iter()
        .filter(|(_, c)| c.count > 0)
        .map(|(why, c)| format!("{} {why} (first: line {})", c.count, c.first_line.unwrap_or(0)))
        .collect();
        if parts.is_empty() {
            f.write_str("no lines skipped")
        } else {
            write!(f, "skipped {}", parts.join(", "))
        }
    }
}

/// The examples of a labelled file (each with one label tag) and what was skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TsvSet {
    pub examples: Vec<Example>,
    pub skipped: Skipped,
}

/// Reads a labelled file (see the module documentation).
pub fn read_tsv(path: &Path) -> Result<TsvSet, TsvError> {
    let bytes = std::fs::read(path).map_err(|source| TsvError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_tsv(&bytes, path)
}

/// Writes `examples` as a labelled file, each as its first tag's label (empty where it has
/// none), a TAB and its text: the rows a benchmark used, for the baselines to read.
pub fn write_tsv(path: &Path, examples: &[&Example]) -> std::io::Result<()> {
    let mut out = String::new();
    for e in examples {
        out.push_str(e.tags.first().and_then(|t| t.label.as_deref()).unwrap_or(""));
        out.push('\t');
        out.push_str(&e.text);
        out.push('\n');
    }
    std::fs::write(path, out)
}

/// [`read_tsv`] of bytes already read; `path` names them in errors.
pub fn parse_tsv(bytes: &[u8], path: &Path) -> Result<TsvSet, TsvError> {
    let mut set = TsvSet::default();
    let mut offset = 0;
    for (i, raw) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        let line = decode_line(raw, path, i + 1, offset)?;
        offset += raw.len();
        let line = line.trim_end_matches('\n').trim_end_matches('\r');
        match line.split_once('\t') {
            _ if line.trim().is_empty() => set.skipped.blank.add(i + 1),
            None => set.skipped.without_tab.add(i + 1),
            Some((label, _)) if label.trim().is_empty() => set.skipped.empty_label.add(i + 1),
            Some((label, text)) => set.examples.push(Example::new(text, vec![Tag::label(label)])),
        }
    }
    Ok(set)
}

fn decode_line<'a>(raw: &'a [u8], path: &Path, line: usize, offset: usize) -> Result<&'a str, TsvError> {
    std::str::from_utf8(raw).map_err(|e| {
        let at = e.valid_up_to();
        let len = e.error_len().unwrap_or(raw.len() - at).max(1);
        let bytes = raw[at..(at + len).min(raw.len())]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        TsvError::Utf8 {
            path: path.to_path_buf(),
            line,
            column: at + 1,
            offset: offset + at,
            bytes,
        }
    })
}

/// The label of an example read by [`read_tsv`].
fn label_of(example: &Example) -> &str {
    example.tags.first().and_then(|t| t.label.as_deref()).unwrap_or("")
}

/// Examples per label, by label name.
pub fn label_counts<'a>(examples: impl IntoIterator<Item = &'a Example>) -> BTreeMap<&'a str, usize> {
    let mut counts = BTreeMap::new();
    for e in examples {
        *counts.entry(label_of(e)).or_insert(0) += 1;
    }
    counts
}

/// Whether a train and a test side can make a benchmark: at least two labels to learn from,
/// something to score on, and no label to score that training never saw. The error says why
/// not in words a person can act on.
pub fn check_trainable<'a>(
    train: impl IntoIterator<Item = &'a Example>,
    test: impl IntoIterator<Item = &'a Example>,
) -> Result<(), String> {
    let seen = label_counts(train);
    let scored = label_counts(test);
    match seen.len() {
        0 => return Err("there are no examples to train on".into()),
        1 => {
            let (label, n) = seen.iter().next().map(|(l, n)| (*l, *n)).unwrap_or_default();
            return Err(format!(
                "every training example ({n}) has the label \"{label}\": a classifier needs at least two labels"
            ));
        }
        _ => {}
    }
    if scored.is_empty() {
        return Err(format!(
            "the test side is empty: with a 20 % test side a label needs at least 3 examples to be \
             scored, and here the labels have {}",
            describe(&seen)
        ));
    }
    if let Some(label) = scored.keys().find(|l| !seen.contains_key(*l)) {
        return Err(format!(
            "the test side has the label \"{label}\", which no training example has"
        ));
    }
    Ok(())
}

fn describe(counts: &BTreeMap<&str, usize>) -> String {
    counts
        .iter()
        .map(|(l, n)| format!("\"{l}\": {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> Result<TsvSet, TsvError> {
        parse_tsv(bytes, Path::new("set.tsv"))
    }

    #[test]
    fn invalid_utf8_names_file_line_and_byte() {
        let bytes = b"good\tfine text\nbad\tcaf\xe9 au lait\n";
        let err = parse(bytes).unwrap_err();
        match &err {
            TsvError::Utf8 {
                line,
                column,
                offset,
                bytes,
                ..
            } => {
                assert_eq!((*line, *column, *offset), (2, 8, 22));
                assert_eq!(bytes, "e9");
            }
            other => panic!("{other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.starts_with("set.tsv: line 2, byte 8 (file offset 22)"),
            "{message}"
        );
    }

    #[test]
    fn a_truncated_sequence_at_the_end_is_reported_too() {
        let err = parse("a\tx\nb\tend \u{e9}".as_bytes().split_last().unwrap().1).unwrap_err();
        assert!(matches!(err, TsvError::Utf8 { line: 2, column: 7, .. }), "{err:?}");
    }

    #[test]
    fn skipped_lines_are_counted_by_reason() {
        let set = parse(b"pos\tgood\nno tab here\n\n\tno label\nneg\tbad\r\nalso no tab").unwrap();
        assert_eq!(set.examples.len(), 2);
        assert_eq!(set.examples[1].text, "bad");
        assert_eq!(
            set.skipped.without_tab,
            Counted {
                count: 2,
                first_line: Some(2)
            }
        );
        assert_eq!(
            set.skipped.blank,
            Counted {
                count: 1,
                first_line: Some(3)
            }
        );
        assert_eq!(
            set.skipped.empty_label,
            Counted {
                count: 1,
                first_line: Some(4)
            }
        );
        assert_eq!(set.skipped.suspicious(), 3);
        assert_eq!(
            set.skipped.to_string(),
            "skipped 2 without a TAB (first: line 2), 1 with an empty label (first: line 4), 1 blank (first: line 3)"
        );
    }

    #[test]
    fn labels_keep_their_spaces_and_text_its_tabs() {
        let set = parse(b"very positive\tloved it\tall\n").unwrap();
        assert_eq!(set.examples[0].tags[0].label.as_deref(), Some("very positive"));
        assert_eq!(set.examples[0].text, "loved it\tall");
        assert_eq!(set.skipped, Skipped::default());
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = read_tsv(Path::new("/nonexistent/set.tsv")).unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/set.tsv: "), "{err}");
    }

    #[test]
    fn untrainable_sets_are_explained() {
        let ex = |label: &str| Example::new("text", vec![Tag::label(label)]);
        let one = vec![ex("spam"), ex("spam")];
        let err = check_trainable(&one, &[ex("spam")]).unwrap_err();
        assert!(err.contains("\"spam\"") && err.contains("at least two labels"), "{err}");
        let two = vec![ex("a"), ex("b")];
        assert!(check_trainable(&two, &[]).unwrap_err().contains("test side is empty"));
        assert!(check_trainable(&two, &[ex("c")]).unwrap_err().contains("\"c\""));
        assert!(check_trainable(&[], &[ex("a")]).is_err());
        assert_eq!(check_trainable(&two, &[ex("a")]), Ok(()));
    }
}
