//! Labelled-data files (text, class, label, span columns) over any CSV bytes: rows come out as
//! labelled documents or an error, never a panic.
#![no_main]

use lector_text::{Format, Limits, ReadOptions, read_table};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_rows: 1_000,
        ..Limits::default()
    };
    let Ok(table) = read_table(Format::Csv, data, ReadOptions { header_first: true }, &limits) else {
        return;
    };
    let Ok(mapping) = lector_text::ColumnMapping::from_header(&table.header) else {
        return;
    };
    let _ = lector_text::labeled_documents(&table, &mapping);
});
