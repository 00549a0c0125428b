//! How many bytes a PDF stream decodes to, counted without keeping them, so that a
//! decompression bomb is refused before hayro decodes the stream whole. A stream's filters form
//! a chain (`[/ASCIIHexDecode /FlateDecode]`: the data is hex of zlib), and Flate, LZW and
//! run-length can each multiply its size, so the whole chain is read: every filter a streaming
//! decoder feeding the next, the last one's bytes counted up to a cap. hayro's own decoders are
//! private and decode whole; these only count.

use hayro::hayro_interpret::hayro_syntax::Filter;
use std::io::{self, BufRead, BufReader, Read};

/// Whether `filters` hold one that can make its data larger than it is.
pub(super) fn expands(filters: &[Filter]) -> bool {
    filters
        .iter()
        .any(|f| matches!(f, Filter::FlateDecode | Filter::LzwDecode | Filter::RunLengthDecode))
}

/// How many bytes `raw` decodes to through `filters`, up to `cap`. The chain is followed up to
/// its first image or encryption filter (an image's size is checked when it is drawn); a damaged
/// stream counts what it gave. LZW's `EarlyChange` is not read: both ways are counted and the
/// larger kept, so a bomb cannot hide behind the setting.
pub(super) fn decoded_size(raw: &[u8], filters: &[Filter], cap: u64) -> u64 {
    let size = count(chain(raw, filters, true), cap);
    if size < cap && filters.contains(&Filter::LzwDecode) {
        return size.max(count(chain(raw, filters, false), cap));
    }
    size
}

fn count(reader: impl Read, cap: u64) -> u64 {
    let mut reader = reader.take(cap);
    let mut buffer = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        match reader.read(&mut buffer) {
            Ok(0) => return size,
            Ok(n) => size += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return size,
        }
    }
}

fn chain<'a>(raw: &'a [u8], filters: &[Filter], early_change: bool) -> Box<dyn Read + 'a> {
    let mut reader: Box<dyn Read + 'a> = Box::new(raw);
    for filter in filters {
        reader = match filter {
            Filter::FlateDecode => flate(reader),
            Filter::LzwDecode => Box::new(Decoding::new(reader, Lzw::new(early_change))),
            Filter::RunLengthDecode => Box::new(Decoding::new(reader, RunLength::default())),
            Filter::AsciiHexDecode => Box::new(Decoding::new(reader, AsciiHex::default())),
            Filter::Ascii85Decode => Box::new(Decoding::new(reader, Ascii85::default())),
            _ => break,
        };
    }
    reader
}

/// Flate as hayro reads it: zlib when the data starts with a zlib header, raw deflate otherwise.
fn flate<'a>(inner: Box<dyn Read + 'a>) -> Box<dyn Read + 'a> {
    let mut inner = BufReader::new(inner);
    let zlib = match inner.fill_buf() {
        Ok([cmf, flg, ..]) => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => true,
    };
    if zlib {
        Box::new(flate2::bufread::ZlibDecoder::new(inner))
    } else {
        Box::new(flate2::bufread::DeflateDecoder::new(inner))
    }
}

/// One filter's decoding, a few bytes at a time: it takes every byte it is given (keeping a
/// partial group in its state) and says when the data has ended.
trait Codec {
    /// Decodes `input` onto `out`; answers whether the data ended (the rest is not read).
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool;
    /// Whatever a partial group at the end of the data (or before its end marker) decodes to.
    fn finish(&mut self, _out: &mut Vec<u8>) {}
}

/// Input a codec is given at a time, which bounds what one step can write (LZW: a few MiB).
const STEP: usize = 1024;

/// A [`Codec`] reading from `inner`, as a reader of the decoded bytes.
struct Decoding<R, C> {
    inner: R,
    codec: C,
    input: Vec<u8>,
    output: Vec<u8>,
    served: usize,
    ended: bool,
}

impl<R: Read, C: Codec> Decoding<R, C> {
    fn new(inner: R, codec: C) -> Self {
        Self {
            inner,
            codec,
            input: vec![0; STEP],
            output: Vec::new(),
            served: 0,
            ended: false,
        }
    }
}

impl<R: Read, C: Codec> Read for Decoding<R, C> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.served == self.output.len() {
            if self.ended {
                return Ok(0);
            }
            self.output.clear();
            self.served = 0;
            let n = self.inner.read(&mut self.input)?;
            self.ended = n == 0 || self.codec.decode(&self.input[..n], &mut self.output);
            if self.ended {
                self.codec.finish(&mut self.output);
            }
        }
        let n = buf.len().min(self.output.len() - self.served);
        buf[..n].copy_from_slice(&self.output[self.served..self.served + n]);
        self.served += n;
        Ok(n)
    }
}

#[derive(Default)]
struct AsciiHex {
    high: Option<u8>,
}

impl Codec for AsciiHex {
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        for &byte in input {
            let digit = match byte {
                b'>' => return true,
                b if b.is_ascii_whitespace() || b == 0 => continue,
                b => match (b as char).to_digit(16) {
                    Some(d) => d as u8,
                    None => return true,
                },
            };
            match self.high.take() {
                Some(high) => out.push(high << 4 | digit),
                None => self.high = Some(digit),
            }
        }
        false
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        out.extend(self.high.take().map(|high| high << 4));
    }
}

#[derive(Default)]
struct Ascii85 {
    group: u32,
    digits: usize,
}

impl Codec for Ascii85 {
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        for &byte in input {
            match byte {
                b'z' if self.digits == 0 => out.extend_from_slice(&[0; 4]),
                b'~' => return true,
                b'!'..=b'u' => {
                    self.group = self.group.wrapping_mul(85).wrapping_add(u32::from(byte - b'!'));
                    self.digits += 1;
                    if self.digits == 5 {
                        out.extend_from_slice(&self.group.to_be_bytes());
                        (self.group, self.digits) = (0, 0);
                    }
                }
                b if b.is_ascii_whitespace() || b == 0 => {}
                _ => return true,
            }
        }
        false
    }

    /// A last group of n digits is padded with `u` and gives n − 1 bytes.
    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.digits >= 2 {
            let padded = (self.digits..5).fold(self.group, |g, _| g.wrapping_mul(85).wrapping_add(84));
            out.extend_from_slice(&padded.to_be_bytes()[..self.digits - 1]);
        }
        (self.group, self.digits) = (0, 0);
    }
}

#[derive(Default)]
enum RunLength {
    /// Expecting a length byte.
    #[default]
    Length,
    /// This many bytes to copy as they are.
    Literal(usize),
    /// The next byte, this many times.
    Repeat(usize),
}

impl Codec for RunLength {
    fn decode(&mut self, input: &[u8], out: &mut Vec<u8>) -> bool {
        let mut rest = input;
        while let Some((&byte, tail)) = rest.split_first() {
            match *self {
                RunLength::Length => {
                    *self = match byte {
                        128 => return true,
                        0..=127 => RunLength::Literal(usize::from(byte) + 1),
                        _ => RunLength::Repeat(257 - usize::from(byte)),
                    };
                    rest = tail;
                }
                RunLength::Literal(left) => {
                    let n = left.min(rest.len());
                    out.extend_from_slice(&rest[..n]);
                    rest = &rest[n..];
                    *self = if n == left {
                        RunLength::Length
                    } else {
                        RunLength::Literal(left - n)
                    };
                }
                RunLength::Repeat(times) => {
                    out.resize(out.len() + times, byte);
                    rest = tail;
                    *self = RunLength::Length;
                }
            }
        }
        false
    }
}

/// LZW with PDF's codes (8-bit symbols, codes 256 and 257 clear and end): `EarlyChange` 1 (the
/// default) widens the codes one entry early, as TIFF does.
struct Lzw(weezl::decode::Decoder);

impl Lzw {
    fn new(early_change: bool) -> Self {
        let order = weezl::BitOrder::Msb;
        Lzw(if early_change {
            weezl::decode::Decoder::with_tiff_size_switch(order, 8)
        } else {
            weezl::decode::Decoder::new(order, 8)
        })
    }
}

impl Codec for Lzw {
    fn decode(&mut self, mut input: &[u8], out: &mut Vec<u8>) -> bool {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let result = self.0.decode_bytes(input, &mut buffer);
            out.extend_from_slice(&buffer[..result.consumed_out]);
            input = &input[result.consumed_in..];
            match result.status {
                Ok(weezl::LzwStatus::Ok) => {}
                Ok(weezl::LzwStatus::NoProgress) => return false,
                Ok(weezl::LzwStatus::Done) | Err(_) => return true,
            }
            if input.is_empty() && result.consumed_out < buffer.len() {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(raw: &[u8], filters: &[Filter]) -> Vec<u8> {
        let mut out = Vec::new();
        chain(raw, filters, true).read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn ascii_hex_reads_pairs_whitespace_and_an_odd_last_digit() {
        assert_eq!(decoded(b"48 65\n6c6C6f>ignored", &[Filter::AsciiHexDecode]), b"Hello");
        assert_eq!(decoded(b"7", &[Filter::AsciiHexDecode]), [0x70]);
    }

    #[test]
    fn ascii_85_reads_groups_z_and_a_short_last_group() {
        // Python's base64.a85encode; the last group has 4 digits for 3 bytes.
        assert_eq!(decoded(b"87cURD]i,\"Ebo7~>", &[Filter::Ascii85Decode]), b"Hello World");
        assert_eq!(
            decoded(b"87cURD]i,\"Ebo80~>", &[Filter::Ascii85Decode]),
            b"Hello World!"
        );
        assert_eq!(decoded(b"z~>", &[Filter::Ascii85Decode]), [0; 4]);
    }

    #[test]
    fn run_length_copies_and_repeats() {
        let raw = [2, b'a', b'b', b'c', 254, b'x', 129, b'y', 128, 7];
        let mut expected = b"abcxxx".to_vec();
        expected.extend(std::iter::repeat_n(b'y', 128));
        assert_eq!(decoded(&raw, &[Filter::RunLengthDecode]), expected);
    }

    #[test]
    fn lzw_counts_both_early_change_settings() {
        let data = vec![b'a'; 100_000];
        for tiff in [true, false] {
            let mut encoder = if tiff {
                weezl::encode::Encoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8)
            } else {
                weezl::encode::Encoder::new(weezl::BitOrder::Msb, 8)
            };
            let raw = encoder.encode(&data).unwrap();
            assert_eq!(
                decoded_size(&raw, &[Filter::LzwDecode], u64::MAX),
                100_000,
                "tiff {tiff}"
            );
            assert_eq!(decoded_size(&raw, &[Filter::LzwDecode], 500), 500);
        }
    }

    #[test]
    fn a_chain_is_read_filter_after_filter() {
        use std::io::Write;
        let data = vec![b' '; 3 << 20];
        let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        zlib.write_all(&data).unwrap();
        let zlib = zlib.finish().unwrap();
        let hex: String = zlib.iter().map(|b| format!("{b:02x}")).collect();
        let filters = [Filter::AsciiHexDecode, Filter::FlateDecode];
        assert!(expands(&filters) && !expands(&[Filter::AsciiHexDecode, Filter::DctDecode]));
        assert_eq!(decoded_size(hex.as_bytes(), &filters, u64::MAX), 3 << 20);
        assert_eq!(decoded_size(hex.as_bytes(), &filters, 1 << 20), 1 << 20);
        // Raw deflate (no zlib header), which hayro reads too.
        let mut deflate = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
        deflate.write_all(&data).unwrap();
        let deflate = deflate.finish().unwrap();
        assert_eq!(decoded_size(&deflate, &[Filter::FlateDecode], u64::MAX), 3 << 20);
        // An image filter ends the chain: what reaches it is counted.
        assert_eq!(
            decoded_size(&zlib, &[Filter::FlateDecode, Filter::DctDecode], u64::MAX),
            3 << 20
        );
    }
}
