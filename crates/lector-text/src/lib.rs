//! Text handling for Lector: Unicode normalisation now; sentence segmentation and bounded
//! file readers (CSV, TXT, JSON, JSONL, XLSX) belong here too. Knows nothing of HTTP or SQL.

use unicode_normalization::UnicodeNormalization;

/// Documents are stored NFC-normalised so spans and searches agree on one form.
pub fn normalize(text: &str) -> String {
    text.nfc().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn composes_to_nfc() {
        assert_eq!(super::normalize("e\u{301}"), "\u{e9}");
    }
}
