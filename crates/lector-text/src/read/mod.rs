//! File readers: CSV, TXT, JSON, JSONL and XLSX into rows of cell strings.
//!
//! Two ways in. [`open_rows`] streams rows (CSV, TXT and JSONL really stream; XLSX holds the
//! file's bytes and streams its rows after a first pass over the sheet; JSON is loaded whole
//! within the limits and then handed out row by row), so the ingest job can work in batches
//! without holding a large file twice. [`read_table`] and [`preview`] build on it for
//! uploads small enough to hold. Every path is bounded by [`Limits`]; a malformed file gives a
//! [`TextError`] naming the line, JSON position or cell.

mod csv;
mod input;
mod json;
mod lines;
mod xlsx;

use std::io::Read;

pub(crate) use xlsx::cell_name;

use crate::error::{Limit, Location, Result, TextError};
use crate::limits::Limits;
use crate::table::Table;

/// The file formats Lector reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    Csv,
    /// One document per line.
    Txt,
    /// An array of objects (keys become columns) or of strings (one column "0").
    Json,
    /// One object or string per line, like [`Format::Json`]; the first line fixes the columns.
    Jsonl,
    /// The first sheet of a workbook.
    Xlsx,
}

impl Format {
    /// The format of a file name's extension ("data.CSV" is CSV), if it is one we read.
    pub fn from_file_name(name: &str) -> Option<Format> {
        let (_, extension) = name.rsplit_once('.')?;
        Format::from_extension(extension)
    }

    /// The format of an extension without its dot ("csv", "tsv", "txt", "json", "jsonl", "xlsx").
    pub fn from_extension(extension: &str) -> Option<Format> {
        match extension.to_ascii_lowercase().as_str() {
            "csv" | "tsv" => Some(Format::Csv),
            "txt" => Some(Format::Txt),
            "json" => Some(Format::Json),
            "jsonl" | "ndjson" => Some(Format::Jsonl),
            "xlsx" => Some(Format::Xlsx),
            _ => None,
        }
    }

    /// The format's usual extension, without its dot; also its name in the API.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Txt => "txt",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Xlsx => "xlsx",
        }
    }
}

/// How to read a file beyond its format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Whether the first row is a header (CSV, TXT, XLSX). When false, the columns are named "0",
    /// "1", … and the first row is data. JSON and JSONL take their column names from object keys
    /// (or "0" for strings) and ignore this.
    pub header_first: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { header_first: true }
    }
}

/// One data row and where it came from: the 1-based line (CSV, TXT, JSONL; for CSV the line the
/// record starts on), the 1-based sheet row (XLSX) or the 0-based array index (JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub number: u64,
    pub cells: Vec<String>,
}

/// A source of rows in file order; implemented once per format.
pub(crate) trait RowSource {
    fn next_row(&mut self) -> Result<Option<Row>>;
}

/// Rows of an already loaded table (JSON).
struct Loaded(std::vec::IntoIter<Row>);

impl RowSource for Loaded {
    fn next_row(&mut self) -> Result<Option<Row>> {
        Ok(self.0.next())
    }
}

/// Streams the data rows of a file, after its header; an iterator of `Result<Row>` that stops
/// after the first error.
pub struct RowReader<'r> {
    format: Format,
    header: Vec<String>,
    source: Box<dyn RowSource + Send + 'r>,
    rows: u64,
    max_rows: u64,
    done: bool,
}

impl std::fmt::Debug for RowReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowReader")
            .field("format", &self.format)
            .field("header", &self.header)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl RowReader<'_> {
    /// The column names; every row has this many cells.
    pub fn header(&self) -> &[String] {
        &self.header
    }

    /// Data rows handed out so far.
    pub fn rows_read(&self) -> u64 {
        self.rows
    }

    /// Up to `size` further rows; an empty batch at the end.
    pub fn next_batch(&mut self, size: usize) -> Result<Vec<Row>> {
        let mut batch = Vec::with_capacity(size.min(4096));
        while batch.len() < size {
            match self.next() {
                Some(row) => batch.push(row?),
                None => break,
            }
        }
        Ok(batch)
    }
}

impl Iterator for RowReader<'_> {
    type Item = Result<Row>;

    fn next(&mut self) -> Option<Result<Row>> {
        if self.done {
            return None;
        }
        let next = self.source.next_row().and_then(|row| match row {
            Some(row) if self.rows >= self.max_rows => Err(TextError::too_large(
                Limit::Rows,
                self.max_rows,
                Some(row_location(self.format, row.number)),
            )),
            other => Ok(other),
        });
        match next {
            Ok(Some(row)) => {
                self.rows += 1;
                Some(Ok(row))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

/// Where a row is, in the terms of its format.
fn row_location(format: Format, number: u64) -> Location {
    match format {
        Format::Csv | Format::Txt | Format::Jsonl => Location::Line(number),
        Format::Json => Location::JsonPath(format!("$[{number}]")),
        Format::Xlsx => Location::Cell(format!("A{number}")),
    }
}

/// Opens a file for reading row by row; reads as far as the header (for JSON and XLSX, the whole
/// file, which for XLSX is read once more, row by row, as the rows are taken).
pub fn open_rows<'r, R: Read + Send + 'r>(
    format: Format,
    reader: R,
    options: ReadOptions,
    limits: &Limits,
) -> Result<RowReader<'r>> {
    let (header, source): (Vec<String>, Box<dyn RowSource + Send + 'r>) = match format {
        Format::Csv => {
            let rows = csv::CsvRows::open(reader, options, limits)?;
            (rows.header().to_vec(), Box::new(rows))
        }
        Format::Txt => {
            let rows = lines::TxtRows::open(reader, options, limits)?;
            (rows.header().to_vec(), Box::new(rows))
        }
        Format::Jsonl => {
            let rows = json::JsonlRows::open(reader, limits)?;
            (rows.header().to_vec(), Box::new(rows))
        }
        Format::Json => {
            let bytes = input::read_all(reader, limits)?;
            let (header, rows) = json::read_json(&bytes, limits)?;
            (header, Box::new(Loaded(rows.into_iter())))
        }
        Format::Xlsx => {
            let bytes = input::read_all(reader, limits)?;
            let (header, rows) = xlsx::stream_xlsx(bytes, options, limits)?;
            (header, Box::new(rows))
        }
    };
    Ok(RowReader {
        format,
        header,
        source,
        rows: 0,
        max_rows: limits.max_rows,
        done: false,
    })
}

/// Reads a whole file into a [`Table`], refusing more than `limits.max_cells` cells.
pub fn read_table(format: Format, reader: impl Read + Send, options: ReadOptions, limits: &Limits) -> Result<Table> {
    let mut rows = open_rows(format, reader, options, limits)?;
    let width = rows.header().len().max(1) as u64;
    let mut table = Table {
        header: rows.header().to_vec(),
        rows: Vec::new(),
    };
    for row in rows.by_ref() {
        let row = row?;
        if (table.rows.len() as u64 + 1).saturating_mul(width) > limits.max_cells {
            return Err(TextError::too_large(
                Limit::Cells,
                limits.max_cells,
                Some(row_location(format, row.number)),
            ));
        }
        table.rows.push(row.cells);
    }
    Ok(table)
}

/// The start of a file and how many data rows it has, from [`preview`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The header, then the first data rows.
    pub rows: Vec<Vec<String>>,
    /// Every data row of the file, counted below the header.
    pub data_rows: u64,
}

/// The header and the first `rows` data rows. The rest of the file is read as well, a batch at
/// a time and thrown away, so that a file over the limits (its rows counted) or with a
/// malformed row anywhere is refused when it is uploaded, not midway through its import.
pub fn preview(
    format: Format,
    reader: impl Read + Send,
    rows: usize,
    options: ReadOptions,
    limits: &Limits,
) -> Result<Preview> {
    let mut reader = open_rows(format, reader, options, limits)?;
    let mut preview = vec![reader.header().to_vec()];
    for row in reader.next_batch(rows)? {
        preview.push(row.cells);
    }
    while !reader.next_batch(PREVIEW_CHECK_BATCH)?.is_empty() {}
    Ok(Preview {
        rows: preview,
        data_rows: reader.rows_read(),
    })
}

/// Rows a [`preview`] reads at a time past the ones it keeps.
const PREVIEW_CHECK_BATCH: usize = 4096;

#[cfg(test)]
pub(crate) mod xlsx_fixture;

#[cfg(test)]
mod tests;
