//! TXT files: one document per line.
//!
//! Blank lines are skipped (they hold no document) but still counted, so errors name the line a
//! person sees in an editor. With `header_first` the first non-blank line names the one column.

use std::io::Read;

use crate::error::{Location, Result};
use crate::limits::Limits;
use crate::read::input::{LineReader, check_cell};
use crate::read::{ReadOptions, Row, RowSource};
use crate::table::header_names;

pub(crate) struct TxtRows<R> {
    lines: LineReader<R>,
    header: Vec<String>,
    limits: Limits,
}

impl<R: Read> TxtRows<R> {
    pub(crate) fn open(reader: R, options: ReadOptions, limits: &Limits) -> Result<Self> {
        let mut rows = TxtRows {
            lines: LineReader::new(reader, limits),
            header: Vec::new(),
            limits: limits.clone(),
        };
        if options.header_first {
            let first = rows.next_row()?.map(|row| row.cells);
            rows.header = header_names(first.as_deref(), 1, true);
        } else {
            rows.header = header_names(None, 1, false);
        }
        Ok(rows)
    }

    pub(crate) fn header(&self) -> &[String] {
        &self.header
    }
}

impl<R: Read> RowSource for TxtRows<R> {
    fn next_row(&mut self) -> Result<Option<Row>> {
        while let Some((number, line)) = self.lines.next_line()? {
            if line.trim().is_empty() {
                continue;
            }
            check_cell(&line, &self.limits, || Location::Line(number))?;
            return Ok(Some(Row {
                number,
                cells: vec![line],
            }));
        }
        Ok(None)
    }
}
