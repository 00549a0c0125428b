//! Which rows of a table an artifact stores: a strictly increasing list of row numbers, written
//! as whichever is smaller of a bitmap (dense tables: one bit a row) or LEB128 varint gaps
//! (sparse tables: one or two bytes a row). Only the encoding lives here; what a row holds is
//! the artifact's business.

use crate::error::{Error, Result};

const GAPS: u8 = 0;
const BITMAP: u8 = 1;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The row numbers `rows` (strictly increasing, each below `dim`), after their count.
pub(super) fn put_rows(out: &mut Vec<u8>, rows: &[usize], dim: usize) {
    let mut gaps = Vec::new();
    let mut next = 0;
    for &r in rows {
        put_varint(&mut gaps, (r - next) as u64);
        next = r + 1;
    }
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    if gaps.len() <= dim.div_ceil(8) {
        out.push(GAPS);
        out.extend_from_slice(&gaps);
    } else {
        let mut bits = vec![0u8; dim.div_ceil(8)];
        for &r in rows {
            bits[r / 8] |= 1 << (r % 8);
        }
        out.push(BITMAP);
        out.extend_from_slice(&bits);
    }
}

/// Reads what [`put_rows`] wrote for a table of `dim` rows; `take` hands out the next bytes.
pub(super) fn read_rows<'a>(
    count: usize,
    dim: usize,
    mut take: impl FnMut(usize) -> Result<&'a [u8]>,
) -> Result<Vec<usize>> {
    if count > dim {
        return Err(Error::artifact("more rows than the table has"));
    }
    let rows = match take(1)?[0] {
        GAPS => read_gaps(count, dim, &mut take)?,
        BITMAP => take(dim.div_ceil(8))?
            .iter()
            .enumerate()
            .flat_map(|(i, &byte)| (0..8).filter(move |b| byte >> b & 1 == 1).map(move |b| i * 8 + b))
            .collect(),
        _ => return Err(Error::artifact("bad row-set encoding")),
    };
    if rows.len() != count || rows.last().is_some_and(|&r| r >= dim) {
        return Err(Error::artifact("the row set does not match its count"));
    }
    Ok(rows)
}

fn read_gaps<'a>(count: usize, dim: usize, take: &mut impl FnMut(usize) -> Result<&'a [u8]>) -> Result<Vec<usize>> {
    let mut rows = Vec::with_capacity(count);
    let mut next = 0usize;
    for _ in 0..count {
        let gap = read_varint(take)?;
        let row = usize::try_from(gap)
            .ok()
            .and_then(|g| next.checked_add(g))
            .filter(|&r| r < dim)
            .ok_or_else(|| Error::artifact("a row is out of range"))?;
        rows.push(row);
        next = row + 1;
    }
    Ok(rows)
}

fn read_varint<'a>(take: &mut impl FnMut(usize) -> Result<&'a [u8]>) -> Result<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = take(1)?[0];
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Error::artifact("a varint is too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(rows: &[usize], dim: usize) -> (Vec<usize>, usize) {
        let mut out = Vec::new();
        put_rows(&mut out, rows, dim);
        let n = u32::from_le_bytes([out[0], out[1], out[2], out[3]]) as usize;
        let mut at = 4;
        let got = read_rows(n, dim, |len| {
            let s = out.get(at..at + len).ok_or_else(|| Error::artifact("end"))?;
            at += len;
            Ok(s)
        })
        .unwrap();
        assert_eq!(at, out.len());
        (got, out.len())
    }

    #[test]
    fn sparse_rows_are_gaps_and_dense_rows_a_bitmap() {
        let sparse = [0, 5, 300, 70_000];
        let (got, len) = round_trip(&sparse, 1 << 18);
        assert_eq!(got, sparse);
        assert_eq!(len, 4 + 1 + 1 + 1 + 2 + 3);
        let dense: Vec<usize> = (0..1000).filter(|i| i % 3 != 0).collect();
        let (got, len) = round_trip(&dense, 1000);
        assert_eq!(got, dense);
        assert_eq!(len, 4 + 1 + 125);
        assert_eq!(round_trip(&[], 1024).0, Vec::<usize>::new());
    }

    #[test]
    fn out_of_range_rows_are_refused() {
        let mut out = Vec::new();
        put_rows(&mut out, &[3, 900], 1000);
        let body = &out[4..];
        let mut at = 0;
        let err = read_rows(2, 500, |len| {
            let s = &body[at..at + len];
            at += len;
            Ok(s)
        });
        assert!(err.is_err());
        assert!(read_rows(2000, 1000, |_| Ok(&[0u8][..])).is_err());
    }
}
