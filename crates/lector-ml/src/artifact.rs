//! The model artifact: one self-describing, versioned, checksummed file.
//!
//! Layout (all integers little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `LECTORML` |
//! | 4 | format version (2; version 1, without the tuned encoder's part, is read too) |
//! | 4 | header length `h` |
//! | h | header: [`ModelInfo`] as JSON (project type, classes, labels, features, hyper-parameters, calibration, training date, metrics) |
//! | 8 | body length `b` |
//! | b | body: the IDF table, then each head, stored sparsely (only rows with a non-zero value); a model with a sentence encoder (`dense` in the header) has the encoder's `dim` rows after the hashed buckets in the IDF table and the main head; then a marker byte and, where it is 1, the tuned encoder's weights ([`crate::Tuned::to_bytes`]) after their length (8 bytes) |
//! | 8 | FNV-1a 64 of everything before it |
//!
//! The weights are exact `f32` bit patterns, so a loaded model predicts exactly what the saved
//! one did. Reading checks the magic, the version and the checksum before parsing anything and
//! then bounds-checks every length, so a truncated, corrupted or foreign file is an
//! [`Error::Artifact`], never a panic or a huge allocation.

use std::sync::Arc;

use crate::dense::{Embedder, Encoder, TunedEncoder};
use crate::error::{Error, Result};
use crate::features::{FNV_SEED, fnv1a};
use crate::model::{Head, Model, ModelInfo, Table};

const MAGIC: &[u8; 8] = b"LECTORML";
/// The format this build writes (it reads this one and version 1).
pub const FORMAT_VERSION: u32 = 2;
const MAX_HEADER: usize = 64 << 20;
/// 2 GiB of weights per table: far beyond any model trained with sane settings.
const MAX_TABLE_FLOATS: usize = 1 << 29;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// `values` as `(count, default, [index, value]…)`: everything not listed equals `default`.
fn put_sparse_table(out: &mut Vec<u8>, values: &[f32], default: f32) {
    let listed: Vec<(usize, f32)> = values
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, v)| v.to_bits() != default.to_bits())
        .collect();
    put_u32(out, values.len() as u32);
    out.extend_from_slice(&default.to_le_bytes());
    put_u32(out, listed.len() as u32);
    for (i, v) in listed {
        put_u32(out, i as u32);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn put_head(out: &mut Vec<u8>, head: &Head) {
    let k = head.outputs;
    put_u32(out, k as u32);
    put_u32(out, head.dim() as u32);
    for &b in &head.bias {
        out.extend_from_slice(&b.to_le_bytes());
    }
    let rows: Vec<usize> = (0..head.dim())
        .filter(|&j| head.weights[j * k..j * k + k].iter().any(|w| w.to_bits() != 0))
        .collect();
    put_u32(out, rows.len() as u32);
    for j in rows {
        put_u32(out, j as u32);
        for w in &head.weights[j * k..j * k + k] {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
}

/// A bounds-checked reader over the body.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Error::artifact("unexpected end of data"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    fn f32(&mut self) -> Result<f32> {
        Ok(f32::from_bits(self.u32()?))
    }

    /// A count of items of `item_bytes` each that must fit in what is left.
    fn count(&mut self, item_bytes: usize) -> Result<usize> {
        let n = self.u32()? as usize;
        if n.saturating_mul(item_bytes) > self.bytes.len() - self.at {
            return Err(Error::artifact("a count exceeds the data"));
        }
        Ok(n)
    }

    fn sparse_table(&mut self, expected_len: usize) -> Result<Vec<f32>> {
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

    fn head(&mut self, dim: usize, outputs: usize) -> Result<Head> {
        let k = self.u32()? as usize;
        let d = self.u32()? as usize;
        if k != outputs || d != dim {
            return Err(Error::artifact("a head does not match the header"));
        }
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

/// An artifact whose frame, checksum and header were checked: the body starts at `at`.
struct Opened<'a> {
    version: u32,
    info: ModelInfo,
    /// The file without its checksum.
    content: &'a [u8],
    at: usize,
}

fn open(bytes: &[u8]) -> Result<Opened<'_>> {
    if bytes.len() < 8 || &bytes[..8] != MAGIC {
        return Err(Error::artifact("not a Lector model (bad magic)"));
    }
    if bytes.len() < 8 + 4 + 4 + 8 + 8 {
        return Err(Error::artifact("file too short"));
    }
    let (content, sum) = bytes.split_at(bytes.len() - 8);
    let mut r = Reader { bytes: content, at: 8 };
    let version = r.u32()?;
    if version != FORMAT_VERSION && version != 1 {
        return Err(Error::artifact(format!(
            "format version {version} is not supported (this build reads {FORMAT_VERSION})"
        )));
    }
    let mut expected = [0u8; 8];
    expected.copy_from_slice(sum);
    if fnv1a(FNV_SEED, content) != u64::from_le_bytes(expected) {
        return Err(Error::artifact("checksum mismatch: the file is damaged or truncated"));
    }
    let header_len = r.u32()? as usize;
    if header_len > MAX_HEADER {
        return Err(Error::artifact("header too large"));
    }
    let header = r.take(header_len)?;
    let info: ModelInfo = serde_json::from_slice(header).map_err(|e| Error::artifact(format!("bad header: {e}")))?;
    info.features
        .validate()
        .map_err(|e| Error::artifact(format!("bad header: {e}")))?;
    let body_len = r.u64()?;
    if body_len != (content.len() - r.at) as u64 {
        return Err(Error::artifact("body length does not match the file"));
    }
    Ok(Opened {
        version,
        info,
        content,
        at: r.at,
    })
}

impl Model {
    /// The model as one artifact file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&self.info).unwrap_or_default();
        let mut body = Vec::new();
        let idf = &self.main.idf();
        // Unseen buckets all share the largest IDF: store that once.
        let default = idf.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        put_sparse_table(&mut body, idf, if default.is_finite() { default } else { 0.0 });
        put_head(&mut body, &self.main.head());
        body.push(u8::from(self.label_head.is_some()));
        if let Some(h) = &self.label_head {
            put_head(&mut body, h);
        }
        body.push(u8::from(self.tuned.is_some()));
        if let Some(t) = &self.tuned {
            let weights = t.0.to_bytes();
            body.extend_from_slice(&(weights.len() as u64).to_le_bytes());
            body.extend_from_slice(&weights);
        }
        let mut out = Vec::with_capacity(32 + header.len() + body.len());
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, FORMAT_VERSION);
        put_u32(&mut out, header.len() as u32);
        out.extend_from_slice(&header);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let sum = fnv1a(FNV_SEED, &out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// The header of an artifact (checked like [`Model::from_bytes`] checks it), without
    /// its weights: what a model is and which sentence encoder, if any, it needs to load.
    pub fn read_info(bytes: &[u8]) -> Result<ModelInfo> {
        open(bytes).map(|opened| opened.info)
    }

    /// Reads an artifact written by [`Model::to_bytes`] of a model without a sentence
    /// encoder (see [`Model::from_bytes_with`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Model> {
        Self::from_bytes_with(bytes, None)
    }

    /// Reads an artifact; a model trained with a sentence encoder needs that encoder (same
    /// [`Embedder::id`]) as `encoder`.
    pub fn from_bytes_with(bytes: &[u8], encoder: Option<Arc<dyn Embedder>>) -> Result<Model> {
        let Opened {
            version,
            info,
            content,
            at,
        } = open(bytes)?;
        let mut r = Reader { bytes: content, at };
        let dim = info.features.buckets();
        let encoder = match (&info.dense, encoder) {
            (None, _) => None,
            (Some(d), Some(e)) if e.id() == d.encoder && e.dim() == d.dim => Some(Encoder(e)),
            (Some(d), _) => return Err(Error::MissingEncoder(d.encoder.clone())),
        };
        let main_dim = dim.saturating_add(info.dense.as_ref().map_or(0, |d| d.dim));
        // The checksum is no signature: a crafted header could ask for any table size, so
        // refuse sizes no trained model has before allocating them.
        let outputs = info.classes.len().max(info.labels.len()) + 1;
        if main_dim.saturating_mul(outputs) > MAX_TABLE_FLOATS {
            return Err(Error::artifact("the header asks for an implausibly large model"));
        }
        let idf = r.sparse_table(main_dim)?;
        let main_outputs = if info.project_type == lector_core::ProjectType::Label {
            info.labels.len()
        } else {
            info.classes.len()
        };
        let main = r.head(main_dim, main_outputs)?;
        let label_head = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.head(dim, info.labels.len().max(1))?),
            _ => return Err(Error::artifact("bad head marker")),
        };
        let tuned = match (version, &encoder) {
            (1, _) => None,
            (_, encoder) => match (r.take(1)?[0], encoder) {
                (0, _) => None,
                (1, Some(e)) => {
                    let len = usize::try_from(r.u64()?).map_err(|_| Error::artifact("a length is out of range"))?;
                    Some(TunedEncoder(e.0.load_tuned(r.take(len)?)?))
                }
                (1, None) => return Err(Error::artifact("a tuned encoder without an encoder")),
                _ => return Err(Error::artifact("bad tuned-encoder marker")),
            },
        };
        if info.dense.as_ref().is_some_and(|d| d.tuned) != tuned.is_some() {
            return Err(Error::artifact("the header and the tuned encoder disagree"));
        }
        if r.at != content.len() {
            return Err(Error::artifact("trailing data"));
        }
        if info.project_type != lector_core::ProjectType::Label
            && info.calibration.thresholds.len() != info.classes.len()
            && !info.calibration.thresholds.is_empty()
        {
            return Err(Error::artifact("thresholds do not match the classes"));
        }
        let main = Table::fuse(&idf, &main);
        Ok(Model {
            info,
            main,
            label_head,
            encoder,
            tuned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::{Example, Tag};
    use crate::train::Options;
    use lector_core::ProjectType;
    use std::ops::ControlFlow;

    /// A small LABEL model on 1,024 buckets.
    fn small_model() -> Model {
        let examples = vec![
            Example::new("good", vec![Tag::label("a")]),
            Example::new("bad", vec![Tag::label("b")]),
        ];
        let mut options = Options::default();
        options.features.buckets_log2 = 10;
        Model::train(ProjectType::Label, &examples, &options, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap()
    }

    /// Version 1 files (before tuned encoders: no marker after the heads) still load.
    #[test]
    fn version_1_artifacts_still_load() {
        let model = small_model();
        let v2 = model.to_bytes();
        let content = &v2[..v2.len() - 8];
        // Drop the tuned-encoder marker (the last byte of the body), shorten the body length
        // and write version 1.
        let mut v1 = content[..content.len() - 1].to_vec();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        let header_len = u32::from_le_bytes([v1[12], v1[13], v1[14], v1[15]]) as usize;
        let at = 16 + header_len;
        let body_len = u64::from_le_bytes(v1[at..at + 8].try_into().unwrap()) - 1;
        v1[at..at + 8].copy_from_slice(&body_len.to_le_bytes());
        let sum = fnv1a(FNV_SEED, &v1);
        v1.extend_from_slice(&sum.to_le_bytes());
        let loaded = Model::from_bytes(&v1).unwrap();
        assert_eq!(loaded, model);
        assert_eq!(loaded.to_bytes(), v2);
        let mut v3 = v2.clone();
        v3[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(Model::from_bytes(&v3), Err(Error::Artifact(m)) if m.contains("version 3")));
    }

    /// A header that passes the checksum (it is no signature) but asks for a huge table is
    /// refused before anything is allocated.
    #[test]
    fn crafted_header_cannot_demand_a_huge_allocation() {
        let model = small_model();
        let mut info = model.info.clone();
        info.features.buckets_log2 = 24;
        info.labels = (0..1000).map(|i| i.to_string()).collect();
        let header = serde_json::to_vec(&info).unwrap();
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, FORMAT_VERSION);
        put_u32(&mut out, header.len() as u32);
        out.extend_from_slice(&header);
        out.extend_from_slice(&0u64.to_le_bytes());
        let sum = fnv1a(FNV_SEED, &out);
        out.extend_from_slice(&sum.to_le_bytes());
        assert!(matches!(Model::from_bytes(&out), Err(Error::Artifact(m)) if m.contains("implausibly")));
    }
}
