//! Text handling for Lector: Unicode normalisation, sentence segmentation (en, de, ar) and bounded
//! file readers (CSV, TXT, JSON, JSONL, XLSX) with previews and column selection, and writers
//! for downloads that read back unchanged.
//!
//! Plain values in, plain values out: nothing here knows about HTTP or SQL, so the crate is
//! tested and benchmarked on its own. Errors are one [`TextError`] whose [`TextError::code`] says
//! how the API answers it (413 for a limit, 422 for a malformed file or selection).

mod error;
mod formula;
mod labeled;
mod limits;
mod read;
mod segment;
mod table;
mod write;

use unicode_normalization::UnicodeNormalization;

pub use error::{Limit, Location, Result, TextError};
pub use labeled::{
    ColumnMapping, LABELED_HEADER, LabeledColumns, LabeledRows, LabeledSegment, LabeledTag, LabeledText,
    MAX_LABELED_CHARS, MAX_LABELED_SEGMENTS, labeled_documents,
};
pub use limits::{Limits, RATIO_FLOOR};
pub use read::{Format, Preview, ReadOptions, Row, RowReader, open_rows, preview, read_table};
pub use segment::{ClientSegment, Language, Segment, check_segments, segment, split_sentences, whole_segment};
pub use table::{ColumnRef, Table};
pub use write::{RowWriter, XLSX_MAX_ROWS, write_table};

/// Documents are stored NFC-normalised so spans and searches agree on one form.
///
/// NUL (U+0000) is dropped first: PostgreSQL cannot store it in text and SQLite can, so
/// keeping it would make an installation's documents depend on its backend. Spans are code-point
/// offsets into this normalised text, so a client's segments are compared with it as well.
pub fn normalize(text: &str) -> String {
    text.chars().filter(|&c| c != '\0').nfc().collect()
}

/// Whether [`normalize`] would leave `text` as it is, found without building a copy (a quick
/// NFC check answers for most texts): a request's checks read long texts this way.
pub fn is_normalized(text: &str) -> bool {
    !text.contains('\0')
        && unicode_normalization::is_nfc_quick(text.chars()) == unicode_normalization::IsNormalized::Yes
}

#[cfg(test)]
mod tests {
    #[test]
    fn composes_to_nfc() {
        assert_eq!(super::normalize("e\u{301}"), "\u{e9}");
        assert!(super::is_normalized("Grüße"));
        assert!(!super::is_normalized("e\u{301}"));
        assert!(!super::is_normalized("a\u{0}b"));
    }

    #[test]
    fn drops_nul() {
        assert_eq!(super::normalize("a\u{0}b\u{0}e\u{0}\u{301}"), "ab\u{e9}");
    }
}
