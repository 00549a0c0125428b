//! Every file reader over any bytes: the first byte picks the format and whether the first row
//! is a header; the rest is the file. A panic, a hang or an allocation past the limits is a find.
#![no_main]

use lector_text::{Format, Limits, ReadOptions, preview, read_table};
use libfuzzer_sys::fuzz_target;

const FORMATS: [Format; 5] = [Format::Csv, Format::Txt, Format::Json, Format::Jsonl, Format::Xlsx];

fuzz_target!(|data: &[u8]| {
    let Some((&choice, file)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(choice) % FORMATS.len()];
    let options = ReadOptions {
        header_first: choice & 0x80 != 0,
    };
    let limits = Limits {
        max_rows: 1_000,
        max_cells: 20_000,
        ..Limits::default()
    };
    if let Ok(table) = read_table(format, file, options, &limits) {
        assert!(table.rows.len() <= 1_000);
        assert!(table.rows.iter().all(|row| row.len() == table.header.len()));
    }
    let _ = preview(format, file, 5, options, &limits);
});
