//! XLSX: the first sheet of a workbook, read with calamine behind a zip-bomb guard.
//!
//! Before anything is decompressed, the zip central directory is read and the archive refused if
//! the declared sizes add up to more than the limit or a large member compresses suspiciously well;
//! the zip reader then holds every member to its declared size, so a lying header cannot get past.
//! Cells are streamed (calamine's cell reader) rather than loaded as a dense range, so a sheet with
//! one cell at XFD1048576 costs one cell, and the row, column and cell-length limits are checked
//! as each cell arrives. The sheet is read twice: a first pass checks it and finds its header and
//! width, a second, on its own thread, hands the rows out through a bounded channel, so a large
//! sheet never sits in memory as rows. Rows are counted from the first non-empty one; columns from A, so column 0
//! is A. Fully empty rows are skipped, short rows padded to the widest.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use calamine::{DataRef, Reader, Xlsx};

use crate::error::{Limit, Location, Result, TextError};
use crate::limits::{Limits, RATIO_FLOOR};
use crate::read::input::check_cell;
use crate::read::{ReadOptions, Row, RowSource};
use crate::table::header_names;

/// Rows of the first sheet waiting between the thread that reads them and the consumer.
const STREAMED_ROWS: usize = 256;

/// Opens the first sheet for streaming: a first pass over its cells checks every limit and
/// finds the header and the widest row; a second pass on its own thread hands the rows out,
/// padded to that width, through a bounded channel. Memory holds the file and a few hundred
/// rows, however many the sheet has; errors of the file come from the first pass, here.
pub(crate) fn stream_xlsx(bytes: Vec<u8>, options: ReadOptions, limits: &Limits) -> Result<(Vec<String>, XlsxRows)> {
    let (header, first, width) = survey(&bytes, options, limits)?;
    let (sender, receiver) = std::sync::mpsc::sync_channel(STREAMED_ROWS);
    let limits = limits.clone();
    let spawned = std::thread::Builder::new().name("xlsx-rows".into()).spawn(move || {
        let outcome = guarded(|| {
            scan_sheet(&bytes, &limits, |mut row| {
                if options.header_first && Some(row.number) == first {
                    return Ok(true);
                }
                row.cells.resize(width, String::new());
                // A closed channel means the reader was dropped: stop reading.
                Ok(sender.send(Ok(row)).is_ok())
            })
        });
        if let Err(error) = outcome {
            let _ = sender.send(Err(error));
        }
    });
    spawned.map_err(TextError::Io)?;
    Ok((header, XlsxRows(receiver)))
}

/// The rows a [`stream_xlsx`] thread sends.
pub(crate) struct XlsxRows(std::sync::mpsc::Receiver<Result<Row>>);

impl RowSource for XlsxRows {
    fn next_row(&mut self) -> Result<Option<Row>> {
        match self.0.recv() {
            Ok(row) => row.map(Some),
            Err(_) => Ok(None),
        }
    }
}

/// The first pass: the header, the sheet row number of the header row (if any) and the width,
/// with every limit checked.
fn survey(bytes: &[u8], options: ReadOptions, limits: &Limits) -> Result<(Vec<String>, Option<u64>, usize)> {
    check_archive(bytes, limits)?;
    let mut first: Option<Row> = None;
    let mut count: u64 = 0;
    let width = guarded(|| {
        scan_sheet(bytes, limits, |row| {
            count += 1;
            if first.is_none() {
                first = Some(row);
            }
            Ok(true)
        })
    })?;
    if count.saturating_mul(width as u64) > limits.max_cells {
        return Err(TextError::too_large(Limit::Cells, limits.max_cells, None));
    }
    let mut first_cells = first.as_ref().map(|r| r.cells.clone()).unwrap_or_default();
    first_cells.resize(width, String::new());
    let header = header_names(
        first.as_ref().map(|_| first_cells.as_slice()),
        width,
        options.header_first,
    );
    Ok((header, first.map(|r| r.number), width))
}

/// Runs a pass over calamine, a large parser fed untrusted bytes: a bug in it must fail this
/// file, not the job.
fn guarded<T>(pass: impl FnOnce() -> Result<T>) -> Result<T> {
    catch_unwind(AssertUnwindSafe(pass))
        .unwrap_or_else(|_| Err(TextError::malformed(Location::File, "the workbook could not be parsed")))
}

/// Refuses zip bombs from the central directory alone.
fn check_archive(bytes: &[u8], limits: &Limits) -> Result<()> {
    let archive = zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| TextError::malformed(Location::File, format!("not an XLSX file (not a zip archive: {e})")))?;
    let mut total: u64 = 0;
    for index in 0..archive.len() {
        let entry = archive
            .by_index_data(index)
            .map_err(|e| TextError::malformed(Location::File, format!("broken zip directory: {e}")))?;
        let name = || Location::ZipEntry(entry.name().map(|n| n.into_owned()).unwrap_or_default());
        let size = entry.size();
        total = total.saturating_add(size);
        if total > limits.max_decompressed_bytes {
            return Err(TextError::too_large(
                Limit::DecompressedSize,
                limits.max_decompressed_bytes,
                Some(name()),
            ));
        }
        if size > RATIO_FLOOR && size / entry.compressed_size().max(1) > limits.max_compression_ratio {
            return Err(TextError::too_large(
                Limit::CompressionRatio,
                limits.max_compression_ratio,
                Some(name()),
            ));
        }
    }
    Ok(())
}

/// Streams the first sheet's non-empty rows (unpadded) to `on_row`, which answers whether to go
/// on; checks the row, column and cell-length limits as cells arrive. Answers the widest row.
fn scan_sheet(bytes: &[u8], limits: &Limits, mut on_row: impl FnMut(Row) -> Result<bool>) -> Result<usize> {
    let broken =
        |e: calamine::XlsxError| TextError::malformed(Location::File, format!("not a readable XLSX file: {e}"));
    let mut workbook: Xlsx<_> = Xlsx::new(Cursor::new(bytes)).map_err(broken)?;
    let Some(first) = workbook.sheet_names().first().cloned() else {
        return Err(TextError::malformed(Location::File, "the workbook has no sheet"));
    };
    let mut cells = workbook.worksheet_cells_reader(&first).map_err(broken)?;

    let mut emitted: u64 = 0;
    let mut current: Option<Row> = None;
    let mut width = 0usize;
    let mut last = (0u32, 0u32);
    loop {
        let cell = match cells.next_cell() {
            Ok(Some(cell)) => cell,
            Ok(None) => break,
            Err(e) => {
                let at = Location::Cell(cell_name(last.0, last.1));
                return Err(TextError::malformed(
                    at,
                    format!("the sheet cannot be read after this cell: {e}"),
                ));
            }
        };
        let (row, column) = cell.get_position();
        last = (row, column);
        let at = || Location::Cell(cell_name(row, column));
        let text = cell_text(cell.get_value());
        if text.is_empty() {
            continue;
        }
        check_cell(&text, limits, at)?;
        let column = column as usize;
        if column >= limits.max_columns {
            return Err(TextError::too_large(
                Limit::Columns,
                limits.max_columns as u64,
                Some(at()),
            ));
        }
        let number = u64::from(row) + 1;
        if current.as_ref().is_none_or(|r| r.number != number) {
            if let Some(done) = current.take() {
                emitted += 1;
                if !on_row(done)? {
                    return Ok(width);
                }
            }
            // One more than the data rows allowed: the header may be among them.
            if emitted > limits.max_rows {
                return Err(TextError::too_large(Limit::Rows, limits.max_rows, Some(at())));
            }
            current = Some(Row {
                number,
                cells: Vec::new(),
            });
        }
        if let Some(current) = current.as_mut() {
            if current.cells.len() <= column {
                current.cells.resize(column + 1, String::new());
            }
            current.cells[column] = text;
        }
        width = width.max(column + 1);
    }
    if let Some(done) = current.take() {
        on_row(done)?;
    }
    Ok(width)
}

/// A cell's value as text: numbers as written, dates as ISO 8601, errors as Excel shows them.
fn cell_text(value: &DataRef<'_>) -> String {
    match value {
        DataRef::Empty => String::new(),
        DataRef::String(text) | DataRef::DateTimeIso(text) | DataRef::DurationIso(text) => text.clone(),
        DataRef::SharedString(text) => (*text).to_owned(),
        DataRef::Int(number) => number.to_string(),
        DataRef::Float(number) => number.to_string(),
        DataRef::Bool(flag) => flag.to_string(),
        DataRef::DateTime(date) if date.is_datetime() => {
            let (year, month, day, hour, minute, second, _) = date.to_ymd_hms_milli();
            if (hour, minute, second) == (0, 0, 0) {
                format!("{year:04}-{month:02}-{day:02}")
            } else {
                format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}")
            }
        }
        DataRef::DateTime(duration) => duration.as_f64().to_string(),
        DataRef::Error(error) => error.to_string(),
    }
}

/// A1 notation of a 0-based row and column ("B7" for row 6, column 1).
pub(crate) fn cell_name(row: u32, column: u32) -> String {
    let mut letters = Vec::new();
    let mut n = column as u64 + 1;
    while n > 0 {
        let rest = (n - 1) % 26;
        letters.push(b'A' + rest as u8);
        n = (n - 1) / 26;
    }
    letters.reverse();
    format!("{}{}", String::from_utf8_lossy(&letters), u64::from(row) + 1)
}

#[cfg(test)]
mod tests {
    use super::cell_name;

    #[test]
    fn cells_are_named_in_a1_notation() {
        assert_eq!(cell_name(6, 1), "B7");
        assert_eq!(cell_name(0, 25), "Z1");
        assert_eq!(cell_name(0, 26), "AA1");
        assert_eq!(cell_name(1_048_575, 16_383), "XFD1048576");
    }
}
