//! Reading an artifact's body: a cursor over its bytes that bounds-checks every length and
//! count before it allocates, refuses weights that are not finite numbers, and reads the
//! tables and heads of each format version (laid out in the parent module's doc).

use super::rows::read_rows;
use crate::error::{Error, Result};
use crate::model::{Head, Table, from_bf16, negate_bf16};

/// A bounds-checked reader over the body.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Error::artifact("unexpected end of data"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(super) fn u16(&mut self) -> Result<u16> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A weight: NaN and the infinities are refused (a NaN weight makes NaN confidences).
    pub(super) fn f32(&mut self) -> Result<f32> {
        finite(f32::from_bits(self.u32()?))
    }

    /// A bfloat16 weight, refused like [`Reader::f32`] when it is not a finite number.
    pub(super) fn bf16(&mut self) -> Result<u16> {
        let bits = self.u16()?;
        finite(from_bf16(bits)).map(|_| bits)
    }

    /// A count of items of `item_bytes` each that must fit in what is left.
    pub(super) fn count(&mut self, item_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(Error::artifact("a count exceeds the data"));
        }
        Ok(n)
    }

    /// The outputs and rows a table or head announces, checked against the header's.
    pub(super) fn shape(&mut self, dim: usize, outputs: usize) -> Result<()> {
        let k = self.u32()? as usize;
        let d = self.u32()? as usize;
        if k != outputs || d != dim {
            return Err(Error::artifact("a head does not match the header"));
        }
        Ok(())
    }

    pub(super) fn biases(&mut self, k: usize) -> Result<Vec<f32>> {
        (0..k).map(|_| self.f32()).collect()
    }

    pub(super) fn stored_rows(&mut self, dim: usize, row_bytes: usize) -> Result<Vec<usize>> {
        let count = self.count(row_bytes)?;
        read_rows(count, dim, |n| self.take(n))
    }

    /// A version 3 main table.
    pub(super) fn table(&mut self, dim: usize, outputs: usize) -> Result<Table> {
        self.shape(dim, outputs)?;
        let bias = self.biases(outputs)?;
        let default = self.bf16()?;
        let mirror = match self.take(1)?[0] {
            0 => false,
            1 if outputs == 2 => true,
            _ => return Err(Error::artifact("bad mirror marker")),
        };
        let width = if mirror { 2 } else { outputs + 1 };
        let stored = self.stored_rows(dim, 2 * width)?;
        let s = outputs + 1;
        let mut rows = vec![0u16; dim * s];
        for row in rows.chunks_exact_mut(s) {
            row[0] = default;
        }
        for j in stored {
            let row = &mut rows[j * s..j * s + s];
            for v in &mut row[..width] {
                *v = self.bf16()?;
            }
            if mirror {
                row[2] = negate_bf16(row[1]);
            }
        }
        Ok(Table { outputs, rows, bias })
    }

    /// A version 3 label head.
    pub(super) fn label_head(&mut self, dim: usize, outputs: usize) -> Result<Head> {
        self.shape(dim, outputs)?;
        let mut head = Head::zeros(dim, outputs);
        head.bias = self.biases(outputs)?;
        let stored = self.stored_rows(dim, 2 * outputs)?;
        let bytes = match self.take(1)?[0] {
            b @ (2 | 4) => usize::from(b),
            _ => return Err(Error::artifact("bad weight width")),
        };
        if stored.len().saturating_mul(bytes * outputs) > self.bytes.len() - self.at {
            return Err(Error::artifact("a count exceeds the data"));
        }
        for j in stored {
            for o in 0..outputs {
                head.weights[j * outputs + o] = if bytes == 2 {
                    from_bf16(self.bf16()?)
                } else {
                    self.f32()?
                };
            }
        }
        Ok(head)
    }

    pub(super) fn sparse_table(&mut self, expected_len: usize) -> Result<Vec<f32>> {
        let len = self.u32()? as usize;
        if len != expected_len {
            return Err(Error::artifact("a table does not match the header"));
        }
        let default = self.f32()?;
        let listed = self.count(8)?;
        let mut values = vec![default; len];
        for _ in 0..listed {
            let i = self.u32()? as usize;
            let v = self.f32()?;
            *values
                .get_mut(i)
                .ok_or_else(|| Error::artifact("an index is out of range"))? = v;
        }
        Ok(values)
    }

    /// A head of versions 1 and 2.
    pub(super) fn head(&mut self, dim: usize, outputs: usize) -> Result<Head> {
        self.shape(dim, outputs)?;
        let k = outputs;
        let mut head = Head::zeros(dim, k);
        for b in head.bias.iter_mut() {
            *b = self.f32()?;
        }
        let rows = self.count(4 + 4 * k)?;
        for _ in 0..rows {
            let j = self.u32()? as usize;
            if j >= dim {
                return Err(Error::artifact("a row is out of range"));
            }
            for o in 0..k {
                head.weights[j * k + o] = self.f32()?;
            }
        }
        Ok(head)
    }
}

fn finite(value: f32) -> Result<f32> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::artifact("a weight is not a finite number"))
    }
}
