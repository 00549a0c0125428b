//! CSV rows, streamed with the `csv` crate.
//!
//! The delimiter (`,`, `;` or tab) is guessed from the first lines, a UTF-8 byte-order mark is
//! dropped, quoted fields may hold delimiters, quotes and newlines. Only UTF-8 is accepted: a
//! file in another encoding is refused naming the line, since guessing (Latin-1? Windows-1252?)
//! would store wrong text without anyone noticing. A row wider or narrower than the header is an
//! error naming its line rather than being padded or cut, so columns never shift silently.

use std::io::{Chain, Cursor, Read};

use crate::error::{Limit, Location, Result, TextError};
use crate::limits::Limits;
use crate::read::input::{Limited, check_cell, io_error, strip_bom, utf8};
use crate::read::{ReadOptions, Row, RowSource};
use crate::table::header_names;

/// How many bytes are looked at to guess the delimiter.
const SNIFF_BYTES: usize = 64 * 1024;
/// How many lines are looked at to guess the delimiter.
const SNIFF_LINES: usize = 20;
const CANDIDATES: [u8; 3] = [b',', b';', b'\t'];
/// The ASCII unit separator: the delimiter of files with a single column.
const SINGLE_COLUMN: u8 = 0x1F;

type Input<R> = Chain<Cursor<Vec<u8>>, Limited<R>>;

pub(crate) struct CsvRows<R> {
    reader: csv::Reader<Input<R>>,
    record: csv::ByteRecord,
    header: Vec<String>,
    /// The first record when it is data (`header_first` false).
    pending: Option<Row>,
    limits: Limits,
}

impl<R: Read> CsvRows<R> {
    pub(crate) fn open(reader: R, options: ReadOptions, limits: &Limits) -> Result<Self> {
        let mut limited = Limited::new(reader, limits.max_bytes);
        let mut head = Vec::with_capacity(SNIFF_BYTES);
        (&mut limited)
            .take(SNIFF_BYTES as u64)
            .read_to_end(&mut head)
            .map_err(|e| io_error(e, limits))?;
        let head = strip_bom(&head).to_vec();
        let at_end = head.len() < SNIFF_BYTES;
        let delimiter = guess_delimiter(&head, at_end);
        let reader = csv::ReaderBuilder::new()
            .delimiter(delimiter)
            .has_headers(false)
            .flexible(true)
            .from_reader(Cursor::new(head).chain(limited));
        let mut rows = CsvRows {
            reader,
            record: csv::ByteRecord::new(),
            header: Vec::new(),
            pending: None,
            limits: limits.clone(),
        };
        if let Some(first) = rows.read_record(None)? {
            rows.header = header_names(Some(&first.cells), first.cells.len(), options.header_first);
            if !options.header_first {
                rows.pending = Some(first);
            }
        }
        Ok(rows)
    }

    pub(crate) fn header(&self) -> &[String] {
        &self.header
    }

    /// The next record as strings, checked against the limits and (once known) the header width.
    fn read_record(&mut self, width: Option<usize>) -> Result<Option<Row>> {
        let more = self
            .reader
            .read_byte_record(&mut self.record)
            .map_err(|e| csv_error(e, &self.limits))?;
        if !more {
            return Ok(None);
        }
        let line = self.record.position().map_or(0, csv::Position::line);
        let at = || Location::Line(line);
        if self.record.len() > self.limits.max_columns {
            return Err(TextError::too_large(
                Limit::Columns,
                self.limits.max_columns as u64,
                Some(at()),
            ));
        }
        if let Some(width) = width
            && self.record.len() != width
        {
            return Err(TextError::malformed(
                at(),
                format!("the row has {} fields but the header has {width}", self.record.len()),
            ));
        }
        let mut cells = Vec::with_capacity(self.record.len());
        for field in &self.record {
            let cell = utf8(field, at)?;
            check_cell(cell, &self.limits, at)?;
            cells.push(crate::formula::restore(cell).to_owned());
        }
        Ok(Some(Row { number: line, cells }))
    }
}

impl<R: Read> RowSource for CsvRows<R> {
    fn next_row(&mut self) -> Result<Option<Row>> {
        if let Some(row) = self.pending.take() {
            return Ok(Some(row));
        }
        self.read_record(Some(self.header.len()))
    }
}

fn csv_error(error: csv::Error, limits: &Limits) -> TextError {
    let line = error.position().map_or(0, csv::Position::line);
    let message = error.to_string();
    match error.into_kind() {
        csv::ErrorKind::Io(io) => io_error(io, limits),
        _ => TextError::malformed(Location::Line(line), message),
    }
}

/// The candidate found the same non-zero number of times on the most lines, ties broken by the
/// larger count, then by the order of [`CANDIDATES`] (comma first).
fn guess_delimiter(head: &[u8], at_end: bool) -> u8 {
    let lines = logical_lines(head, at_end);
    // A first line without any candidate is a one-column file: a comma in a later text must not
    // split it, so the delimiter becomes a control character that text does not contain.
    if lines.first().is_some_and(|first| first.iter().all(|&count| count == 0)) {
        return SINGLE_COLUMN;
    }
    let mut best = (b',', 0usize, 0usize);
    for candidate in CANDIDATES {
        let counts: Vec<usize> = lines.iter().map(|line| line[candidate_index(candidate)]).collect();
        let Some(&first) = counts.first() else { continue };
        if first == 0 {
            continue;
        }
        let agreeing = counts.iter().filter(|&&count| count == first).count();
        if (agreeing, first) > (best.1, best.2) {
            best = (candidate, agreeing, first);
        }
    }
    best.0
}

fn candidate_index(candidate: u8) -> usize {
    CANDIDATES.iter().position(|&c| c == candidate).unwrap_or(0)
}

/// Per line of the head (newlines inside quotes do not end a line), the count of each candidate
/// outside quotes. A last line cut off by the sniff window is left out.
fn logical_lines(head: &[u8], at_end: bool) -> Vec<[usize; 3]> {
    let mut lines = Vec::new();
    let mut counts = [0usize; 3];
    let mut quoted = false;
    let mut blank = true;
    for &byte in head {
        match byte {
            b'"' => quoted = !quoted,
            b'\n' if !quoted => {
                if !blank {
                    lines.push(counts);
                }
                counts = [0; 3];
                blank = true;
                if lines.len() == SNIFF_LINES {
                    return lines;
                }
                continue;
            }
            _ if !quoted => {
                if let Some(index) = CANDIDATES.iter().position(|&c| c == byte) {
                    counts[index] += 1;
                }
            }
            _ => {}
        }
        if byte != b'\r' {
            blank = false;
        }
    }
    if at_end && !blank {
        lines.push(counts);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delimiters_are_guessed_from_consistent_counts() {
        assert_eq!(guess_delimiter(b"a,b,c\n1,2,3\n", true), b',');
        assert_eq!(guess_delimiter(b"a;b;c\n1,5;2;3\n", true), b';');
        assert_eq!(guess_delimiter(b"a\tb\n\"x;y\"\t2\n", true), b'\t');
        assert_eq!(guess_delimiter(b"\"a,\nb\";c\nd;e\n", true), b';');
        assert_eq!(guess_delimiter(b"just text\nHello, world\n", true), SINGLE_COLUMN);
        assert_eq!(guess_delimiter(b"", true), b',');
    }
}
