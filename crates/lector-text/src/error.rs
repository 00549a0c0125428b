//! The one error type of this crate.
//!
//! Callers (the API and the ingest job) need two things from a failure: which HTTP answer it
//! deserves (413 for a limit, 422 for a malformed file or selection) and where in the file it
//! happened, so a person can fix the file. [`TextError::code`] gives the first, [`Location`] the
//! second. Nothing here knows about HTTP beyond the catalogue code from `lector-core`.

use std::fmt;

use lector_core::error::{Error, ErrorCode};

/// Where in an input a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The input as a whole (for example: not a zip archive).
    File,
    /// A 1-based line of a CSV, TXT or JSONL file (for CSV: the line the record starts on).
    Line(u64),
    /// A JSON path such as `$[3].meta` inside a JSON document.
    JsonPath(String),
    /// A 1-based line and column of a JSON document (syntax errors).
    JsonText { line: u64, column: u64 },
    /// A cell of a spreadsheet in A1 notation, such as `B7`.
    Cell(String),
    /// A member of a zip archive, such as `xl/worksheets/sheet1.xml`.
    ZipEntry(String),
    /// The n-th (0-based) client-given segment.
    Segment(usize),
    /// A 1-based data row of a table (the header not counted).
    Row(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => write!(f, "file"),
            Location::Line(line) => write!(f, "line {line}"),
            Location::JsonPath(path) => write!(f, "{path}"),
            Location::JsonText { line, column } => write!(f, "line {line}, column {column}"),
            Location::Cell(cell) => write!(f, "cell {cell}"),
            Location::ZipEntry(name) => write!(f, "zip entry {name}"),
            Location::Segment(index) => write!(f, "segment {index}"),
            Location::Row(row) => write!(f, "row {row}"),
        }
    }
}

/// Which bound of [`crate::Limits`] an input went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Bytes,
    Rows,
    Columns,
    Cells,
    CellLength,
    JsonDepth,
    DecompressedSize,
    CompressionRatio,
    /// Segments of one labeled document (rows sharing its `document` key).
    DocumentSegments,
    /// Characters of one labeled document.
    DocumentChars,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Bytes => "file size in bytes",
            Limit::Rows => "number of rows",
            Limit::Columns => "number of columns",
            Limit::Cells => "number of cells",
            Limit::CellLength => "cell length in characters",
            Limit::JsonDepth => "JSON nesting depth",
            Limit::DecompressedSize => "decompressed size in bytes",
            Limit::CompressionRatio => "compression ratio",
            Limit::DocumentSegments => "number of segments of one document",
            Limit::DocumentChars => "length of one document in characters",
        })
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    /// The input is over one of the [`crate::Limits`]: answered 413.
    #[error("the {limit} is over the limit of {max}{}", at_suffix(.at))]
    TooLarge {
        limit: Limit,
        max: u64,
        at: Option<Location>,
    },
    /// The input cannot be read as the format it claims: answered 422.
    #[error("malformed input at {at}: {reason}")]
    Malformed { at: Location, reason: String },
    /// A column selection names a column the file does not have: answered 422.
    #[error("the file has no column {column}")]
    MissingColumn { column: String },
    /// A language code without sentence rules: answered 422.
    #[error("unsupported language {code:?}; use en, de or ar")]
    UnknownLanguage { code: String },
    /// The underlying reader failed (not the client's fault): answered 500.
    #[error("reading the input failed: {0}")]
    Io(#[source] std::io::Error),
}

fn at_suffix(at: &Option<Location>) -> String {
    at.as_ref().map(|at| format!(" (at {at})")).unwrap_or_default()
}

impl TextError {
    pub(crate) fn malformed(at: Location, reason: impl Into<String>) -> Self {
        TextError::Malformed {
            at,
            reason: reason.into(),
        }
    }

    pub(crate) fn too_large(limit: Limit, max: u64, at: Option<Location>) -> Self {
        TextError::TooLarge { limit, max, at }
    }

    /// The catalogue code the API answers this error with.
    pub fn code(&self) -> ErrorCode {
        match self {
            TextError::TooLarge { .. } => ErrorCode::PayloadTooLarge,
            TextError::Malformed { .. } | TextError::MissingColumn { .. } | TextError::UnknownLanguage { .. } => {
                ErrorCode::ValidationFailed
            }
            TextError::Io(_) => ErrorCode::Internal,
        }
    }

    /// The HTTP status of [`TextError::code`]: 413, 422 or 500.
    pub fn status(&self) -> u16 {
        self.code().status()
    }

    /// Where the problem is, when it has a place in the input.
    pub fn location(&self) -> Option<&Location> {
        match self {
            TextError::TooLarge { at, .. } => at.as_ref(),
            TextError::Malformed { at, .. } => Some(at),
            TextError::MissingColumn { .. } | TextError::UnknownLanguage { .. } | TextError::Io(_) => None,
        }
    }
}

/// The service's error for a text error: the message as detail for 413 and 422; a bare 500 for
/// I/O failures, whose cause the caller logs before converting (5xx bodies say nothing).
impl From<TextError> for Error {
    fn from(error: TextError) -> Error {
        match error {
            TextError::Io(_) => Error::internal(),
            other => Error::new(other.code(), other.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, TextError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_map_to_413_and_malformed_to_422() {
        let big = TextError::too_large(Limit::Rows, 10, Some(Location::Line(11)));
        assert_eq!(big.status(), 413);
        assert_eq!(
            big.to_string(),
            "the number of rows is over the limit of 10 (at line 11)"
        );
        let bad = TextError::malformed(Location::Cell("B7".into()), "not a number");
        assert_eq!(bad.status(), 422);
        assert_eq!(bad.to_string(), "malformed input at cell B7: not a number");
        assert_eq!(TextError::MissingColumn { column: "name".into() }.status(), 422);
        let problem = Error::from(bad);
        assert_eq!(problem.code, ErrorCode::ValidationFailed);
        assert_eq!(problem.detail, "malformed input at cell B7: not a number");
        assert_eq!(Error::from(TextError::Io(std::io::Error::other("disk"))).status(), 500);
    }
}
