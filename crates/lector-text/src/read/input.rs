//! Byte-level plumbing shared by the readers: the byte bound, the UTF-8 rule and line reading.
//!
//! Every reader pulls its bytes through [`Limited`], so the byte limit holds even for a stream of
//! unknown length, and decodes through [`utf8`], so a non-UTF-8 file is refused with the line it
//! broke on rather than silently turned into replacement characters.

use std::io::{self, BufRead, BufReader, Read};

use crate::error::{Limit, Location, Result, TextError};
use crate::limits::Limits;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Marks the I/O error [`Limited`] raises once the byte limit is passed.
#[derive(Debug)]
struct OverByteLimit;

impl std::fmt::Display for OverByteLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("input over the byte limit")
    }
}

impl std::error::Error for OverByteLimit {}

/// A reader that fails once more than `max` bytes have come through.
#[derive(Debug)]
pub(crate) struct Limited<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Limited<R> {
    pub(crate) fn new(inner: R, max: u64) -> Self {
        Limited { inner, left: max }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.left == 0 {
            // At the limit: the input is fine only if it ends here.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(OverByteLimit)),
            };
        }
        let cap = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..cap])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Turns an I/O error into ours: the byte limit becomes 413, anything else stays I/O.
pub(crate) fn io_error(error: io::Error, limits: &Limits) -> TextError {
    if error.get_ref().is_some_and(|inner| inner.is::<OverByteLimit>()) {
        TextError::too_large(Limit::Bytes, limits.max_bytes, None)
    } else {
        TextError::Io(error)
    }
}

/// Reads a whole input, bounded by `limits.max_bytes`.
pub(crate) fn read_all(reader: impl Read, limits: &Limits) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    Limited::new(reader, limits.max_bytes)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(e, limits))?;
    Ok(bytes)
}

/// The bytes without a leading UTF-8 byte-order mark.
pub(crate) fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// Decodes UTF-8, or says where in the file it is not UTF-8.
pub(crate) fn utf8(bytes: &[u8], at: impl FnOnce() -> Location) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|e| {
        TextError::malformed(
            at(),
            format!(
                "the text is not UTF-8 (invalid byte 0x{:02X} at byte {} of the line); save the file as UTF-8",
                bytes.get(e.valid_up_to()).copied().unwrap_or_default(),
                e.valid_up_to() + 1
            ),
        )
    })
}

/// Refuses a cell longer than `limits.max_cell_chars` code points.
pub(crate) fn check_cell(cell: &str, limits: &Limits, at: impl FnOnce() -> Location) -> Result<()> {
    // A string has at most as many code points as bytes, so most cells need no counting.
    if cell.len() > limits.max_cell_chars && cell.chars().count() > limits.max_cell_chars {
        return Err(TextError::too_large(
            Limit::CellLength,
            limits.max_cell_chars as u64,
            Some(at()),
        ));
    }
    Ok(())
}

/// Reads a text input line by line with 1-based line numbers (TXT and JSONL).
pub(crate) struct LineReader<R> {
    inner: BufReader<Limited<R>>,
    line: u64,
    buffer: Vec<u8>,
    limits: Limits,
}

impl<R: Read> LineReader<R> {
    pub(crate) fn new(reader: R, limits: &Limits) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, Limited::new(reader, limits.max_bytes)),
            line: 0,
            buffer: Vec::new(),
            limits: limits.clone(),
        }
    }

    /// The next line without its line ending, with its number; `None` at the end.
    pub(crate) fn next_line(&mut self) -> Result<Option<(u64, String)>> {
        self.buffer.clear();
        let read = self
            .inner
            .read_until(b'\n', &mut self.buffer)
            .map_err(|e| io_error(e, &self.limits))?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        let mut bytes = self.buffer.as_slice();
        if self.line == 1 {
            bytes = strip_bom(bytes);
        }
        bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let line = self.line;
        Ok(Some((line, utf8(bytes, || Location::Line(line))?.to_owned())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_allows_exactly_the_limit_and_refuses_more() {
        let limits = Limits {
            max_bytes: 4,
            ..Limits::default()
        };
        assert_eq!(read_all(&b"abcd"[..], &limits).unwrap(), b"abcd");
        let error = read_all(&b"abcde"[..], &limits).unwrap_err();
        assert_eq!(error.status(), 413);
    }

    #[test]
    fn lines_strip_bom_and_crlf_and_refuse_latin1() {
        let mut lines = LineReader::new(&b"\xEF\xBB\xBFone\r\ntwo\n\xE4pfel\n"[..], &Limits::default());
        assert_eq!(lines.next_line().unwrap(), Some((1, "one".to_string())));
        assert_eq!(lines.next_line().unwrap(), Some((2, "two".to_string())));
        let error = lines.next_line().unwrap_err();
        assert_eq!(error.location(), Some(&Location::Line(3)));
        assert!(error.to_string().contains("not UTF-8"), "{error}");
    }
}
