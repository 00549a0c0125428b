//! The stored form of tuned layers: a header (magic, first tuned layer, layer count, sizes) and
//! every weight as little-endian `f32`, read back only for the encoder it was tuned from.
//!
//! Apart from the tuning so a change of format is one file's; the model artifact of `lector-ml`
//! carries these bytes as they are. A copy tuned on pairs has no head: 0 outputs.

use super::{MAX_OUTPUTS, TunedTop};
use crate::bert::{Bert, Linear};
use crate::error::{Error, Result};

const MAGIC: &[u8; 8] = b"LECTUNE1";

impl TunedTop {
    /// The stored form: a header (magic, first tuned layer, layer count, sizes) and every
    /// weight as little-endian `f32`, each tensor after its length.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut copy = self.clone();
        let mut out = MAGIC.to_vec();
        let sizes = [
            self.first,
            self.layers.len(),
            self.head.input,
            self.layers.first().map_or(0, |l| l.intermediate.output),
            self.head.output,
            self.max_tokens,
        ];
        for v in sizes {
            out.extend_from_slice(&(v as u32).to_le_bytes());
        }
        for t in copy.tensors_mut() {
            out.extend_from_slice(&(t.len() as u32).to_le_bytes());
            for v in t.iter() {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// Reads what [`TunedTop::to_bytes`] wrote for this encoder; anything else is an error.
    pub fn from_bytes(bert: &Bert, bytes: &[u8]) -> Result<Self> {
        let bad = |what: &str| Error::Format(format!("tuned layers: {what}"));
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u8]> {
            let end = at
                .checked_add(n)
                .filter(|&e| e <= bytes.len())
                .ok_or_else(|| bad("truncated"))?;
            let s = &bytes[at..end];
            at = end;
            Ok(s)
        };
        if take(8)? != MAGIC {
            return Err(bad("not tuned encoder layers"));
        }
        let mut u32s = [0usize; 6];
        for v in &mut u32s {
            let b = take(4)?;
            *v = u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize;
        }
        let [first, layers, hidden, inner, outputs, max_tokens] = u32s;
        let config = bert.config();
        if first.checked_add(layers) != Some(config.layers)
            || layers == 0
            || hidden != config.hidden
            || inner != config.intermediate
            || outputs > MAX_OUTPUTS
            || max_tokens < 2
        {
            return Err(bad("they do not fit this encoder"));
        }
        let mut top = Self {
            first,
            max_tokens,
            layers: bert.layers_from(first).to_vec(),
            head: Linear::zeros(hidden, outputs),
        };
        for t in top.tensors_mut() {
            let b = take(4)?;
            if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize != t.len() {
                return Err(bad("a tensor has the wrong size"));
            }
            let len = t.len();
            for (v, b) in t.iter_mut().zip(take(4 * len)?.chunks_exact(4)) {
                *v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        if at != bytes.len() {
            return Err(bad("trailing data"));
        }
        Ok(top)
    }
}
