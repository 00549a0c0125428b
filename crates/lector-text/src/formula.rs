//! CSV formula injection: the one reversible escape Lector's CSV writer and reader share.
//!
//! Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` (and some a tab or carriage
//! return before them) as a formula, so a document text like `=HYPERLINK(...)` in a download
//! could act when opened. As OWASP recommends, the writer prefixes such a cell with a single
//! quote, which spreadsheets show as text. To read Lector's own files back to the original text,
//! the reader removes exactly that prefix: a cell starting with `'` followed by one of those
//! characters or by another `'`. The writer therefore also prefixes a cell that genuinely starts
//! with `'` followed by one of them (or by `'`), so every text survives the round trip. A foreign
//! file whose cell starts that way loses one leading quote, which is also how spreadsheets
//! treat it. XLSX cells are written as inline strings, never formulas, and need no escape.

use std::borrow::Cow;

/// The characters that make a spreadsheet cell a formula (OWASP's list).
const TRIGGERS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// The cell as the CSV writer writes it.
pub(crate) fn neutralize(cell: &str) -> Cow<'_, str> {
    let needs_prefix = cell.starts_with(TRIGGERS) || restore(cell).len() != cell.len();
    if needs_prefix {
        Cow::Owned(format!("'{cell}"))
    } else {
        Cow::Borrowed(cell)
    }
}

/// The cell as the CSV reader answers it: the writer's prefix removed.
pub(crate) fn restore(cell: &str) -> &str {
    match cell.strip_prefix('\'') {
        Some(rest) if rest.starts_with(TRIGGERS) || rest.starts_with('\'') => rest,
        _ => cell,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_prefixed_and_restored() {
        for (text, written) in [
            ("=1+2", "'=1+2"),
            ("+49 30 1234", "'+49 30 1234"),
            ("-3.5", "'-3.5"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tpadded", "'\tpadded"),
            ("\r=x", "'\r=x"),
            ("'=already quoted", "''=already quoted"),
            ("''", "'''"),
            ("'quote", "'quote"),
            ("plain = text", "plain = text"),
            ("", ""),
        ] {
            assert_eq!(neutralize(text), written, "{text:?}");
            assert_eq!(restore(&neutralize(text)), text, "{text:?}");
        }
    }

    #[test]
    fn every_short_text_round_trips() {
        let alphabet = ['\'', '=', '+', '-', '@', '\t', '\r', 'a', ' '];
        let mut texts = vec![String::new()];
        for _ in 0..4 {
            texts = texts
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .chain(texts.iter().cloned())
                .collect();
        }
        for text in &texts {
            let written = neutralize(text);
            assert!(!written.starts_with(TRIGGERS), "{text:?} -> {written:?}");
            assert_eq!(restore(&written), text, "{text:?}");
        }
    }
}
