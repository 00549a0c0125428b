//! Properties of every file reader (issue 12, test 13), over generated input:
//! - any bytes, in every format, give rows or an error, never a panic, and never more rows,
//!   columns or characters than the limits allow, every row as wide as the header;
//! - text shaped like the formats (their quotes, separators and brackets) likewise, so the
//!   generator reaches past the first syntax error;
//! - any table written by `write_table` reads back unchanged (CSV, JSON, JSONL, XLSX), formulas
//!   neutralised on the way out and restored on the way in.
//!
//! `scripts/fuzz` runs the same readers under libFuzzer for longer (not in CI).

use lector_text::{Format, Limits, ReadOptions, Table, preview, read_table, write_table};
use proptest::collection::vec;
use proptest::prelude::*;

const FORMATS: [Format; 5] = [Format::Csv, Format::Txt, Format::Json, Format::Jsonl, Format::Xlsx];

fn limits() -> Limits {
    Limits {
        max_bytes: 1 << 16,
        max_rows: 40,
        max_columns: 12,
        max_cells: 300,
        max_cell_chars: 120,
        max_json_depth: 6,
        ..Limits::default()
    }
}

/// Reads `bytes` in every format and checks what comes back against the limits.
fn reads_within_limits(bytes: &[u8], header_first: bool) -> Result<(), TestCaseError> {
    let limits = limits();
    let options = ReadOptions { header_first };
    for format in FORMATS {
        if let Ok(table) = read_table(format, bytes, options, &limits) {
            prop_assert!(
                table.rows.len() as u64 <= limits.max_rows,
                "{format:?}: {} rows",
                table.rows.len()
            );
            prop_assert!(
                table.header.len() <= limits.max_columns,
                "{format:?}: {} columns",
                table.header.len()
            );
            for row in &table.rows {
                prop_assert_eq!(
                    row.len(),
                    table.header.len(),
                    "{:?}: a row as wide as the header",
                    format
                );
                for cell in row {
                    prop_assert!(cell.chars().count() <= limits.max_cell_chars, "{format:?}: a long cell");
                }
            }
        }
        // The preview reads the same way, keeps three rows and counts them all.
        if let Ok(preview) = preview(format, bytes, 3, options, &limits) {
            prop_assert!(preview.rows.len() <= 4, "{format:?}: the header and 3 rows at most");
            prop_assert!(
                preview.rows.len() as u64 <= preview.data_rows + 1,
                "{format:?}: rows counted"
            );
        }
    }
    Ok(())
}

/// A cell: printable text with the characters the formats treat specially, and formula starts.
fn cell() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 ,;\"'=+@\\-\\n\\t.é€😀{}\\[\\]:]{0,12}"
}

/// A table of 1 to 4 named columns (names sorted, as JSON objects give them back) and 1 to 6
/// rows (JSON and JSONL have no header without a row), none of them wholly empty (readers
/// skip blank lines).
fn table() -> impl Strategy<Value = Table> {
    proptest::collection::btree_set("[a-z]{1,6}", 1..=4).prop_flat_map(|names| {
        let width = names.len();
        let rows = vec(vec(cell(), width), 1..6)
            .prop_map(|rows| {
                rows.into_iter()
                    .filter(|r| r.iter().any(|c| !c.trim().is_empty()))
                    .collect::<Vec<_>>()
            })
            .prop_filter("a row with text", |rows| !rows.is_empty());
        (Just(names.into_iter().collect::<Vec<_>>()), rows).prop_map(|(header, rows)| Table { header, rows })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_bytes_read_within_the_limits(bytes in vec(any::<u8>(), 0..1500), header_first: bool) {
        reads_within_limits(&bytes, header_first)?;
    }

    #[test]
    fn format_shaped_text_reads_within_the_limits(
        text in "[a-c0-9 ,;\"\\n\\r\\t{}\\[\\]:\\\\]{0,600}",
        header_first: bool,
    ) {
        reads_within_limits(text.as_bytes(), header_first)?;
    }

    #[test]
    fn a_written_table_reads_back_unchanged(table in table()) {
        for format in [Format::Csv, Format::Json, Format::Jsonl, Format::Xlsx] {
            let mut bytes = Vec::new();
            write_table(format, &table, &mut bytes).unwrap();
            let back = read_table(format, &bytes[..], ReadOptions::default(), &Limits::default()).unwrap();
            prop_assert_eq!(&back, &table, "{:?}", format);
        }
    }
}
