//! The model artifact: one self-describing, versioned, checksummed file.
//!
//! Layout (all integers little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `LECTORML` |
//! | 4 | format version (3 or 4, below; versions 1 and 2 are read too) |
//! | 4 | header length `h` |
//! | h | header: [`ModelInfo`] as JSON (project type, classes, labels, features, hyper-parameters, calibration, training date, metrics) |
//! | 8 | body length `b` |
//! | b | body: the main table, the label head after a marker byte, the tuned encoder after a marker byte (below) |
//! | 8 | FNV-1a 64 of everything before it |
//!
//! The body of version 3:
//!
//! - the main table ([`Table`]: per row the IDF weight and the head's weights, as bfloat16):
//!   outputs `k` and rows `d` (4 bytes each), the `k` biases (`f32`), the IDF of rows not
//!   stored (2 bytes), a byte that is 1 where a two-output head's second column is the first
//!   negated (a two-label LABEL model: only the first is stored), the stored rows
//!   ([`rows`]: those differing from an unseen bucket's, i.e. other IDF or a non-zero weight),
//!   then for each stored row its IDF and weights (2 bytes each);
//! - a marker byte, and where it is 1 the label head of the pair types: outputs, rows, biases
//!   (`f32`), the stored rows (any non-zero weight), the width of a weight (2: bfloat16, as
//!   training leaves them; 4: `f32`, as in a model read from an older file), their weights;
//! - a marker byte, and where it is 1 the tuned encoder's weights ([`crate::Tuned::to_bytes`])
//!   after their length (8 bytes).
//!
//! Versions 1 and 2 stored the IDF table and the heads as exact `f32` (a row index of 4 bytes
//! before each non-zero row, and negative zeros counted as non-zero, so a two-label model stored
//! every row); version 1 has no tuned-encoder marker. The prediction table was bfloat16 in
//! memory already, so version 3 stores exactly the values a model predicts with: a loaded
//! model predicts bit for bit what the saved one did, at a third to a half of the size.
//!
//! Version 4 is version 3 for a model whose header turns on what a version 3 reader does not
//! know and would silently ignore, predicting from other features than the model was trained
//! on: the typed shape ([`crate::FeatureConfig::typed_shape`]). Every other model is still
//! written as version 3, so builds that read only up to 3 keep reading them, and refuse, with
//! the version named, the models they cannot read correctly.
//!
//! Reading checks the magic, the version and the checksum before parsing anything and then
//! bounds-checks every length, so a truncated, corrupted or foreign file is an
//! [`Error::Artifact`], never a panic or a huge allocation.

mod header_notes;
mod plausible;
mod reader;
mod rows;

use lector_core::ProjectType;
use std::sync::Arc;

use crate::dense::{Embedder, Encoder, TunedEncoder};
use crate::error::{Error, Result};
use crate::features::{FNV_SEED, fnv1a};
use crate::model::{Head, Model, ModelInfo, Table, from_bf16, negate_bf16};
pub use header_notes::{CHECKSUM_BYTES, Checksum, HEAD_PREFIX_BYTES, completed_head, header_len};
pub use plausible::{MAX_FIELD_MODEL_BYTES, MAX_OUTPUTS};
use reader::Reader;
use rows::put_rows;

const MAGIC: &[u8; 8] = b"LECTORML";
/// The newest format this build writes (it reads this one and every earlier version); a model
/// is written in the oldest that holds it ([`version_needed`]).
pub const FORMAT_VERSION: u32 = 4;
const MAX_HEADER: usize = 64 << 20;
/// 512 MiB of weights per table: a model the service trains has 2^18 buckets (and at most the
/// encoder's 384 dimensions beside them) for at most 1,001 outputs, 2^28 weights at the most.
const MAX_TABLE_FLOATS: usize = 1 << 28;

/// The oldest format whose readers predict as this model does.
fn version_needed(info: &ModelInfo) -> u32 {
    if info.features.typed_shape { 4 } else { 3 }
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u16s(out: &mut Vec<u8>, values: &[u16]) {
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn put_f32s(out: &mut Vec<u8>, values: &[f32]) {
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Whether a two-output table's second column is its first negated, row by row.
fn mirrored(table: &Table) -> bool {
    table.outputs == 2 && table.rows.chunks_exact(3).all(|r| r[2] == negate_bf16(r[1]))
}

/// The IDF of unseen buckets: the largest (every unseen bucket shares it).
fn default_idf(table: &Table) -> u16 {
    let s = table.outputs + 1;
    table
        .rows
        .iter()
        .step_by(s)
        .copied()
        .max_by(|&a, &b| from_bf16(a).total_cmp(&from_bf16(b)))
        .unwrap_or(0)
}

fn put_table(out: &mut Vec<u8>, table: &Table) {
    let (k, dim) = (table.outputs, table.dim());
    put_u32(out, k as u32);
    put_u32(out, dim as u32);
    put_f32s(out, &table.bias);
    let default = default_idf(table);
    out.extend_from_slice(&default.to_le_bytes());
    let mirror = mirrored(table);
    out.push(u8::from(mirror));
    let rows: Vec<&[u16]> = table.rows.chunks_exact(k + 1).collect();
    let stored: Vec<usize> = (0..dim)
        .filter(|&j| rows[j][0] != default || rows[j][1..].iter().any(|&w| w != 0))
        .collect();
    put_rows(out, &stored, dim);
    let width = if mirror { 2 } else { k + 1 };
    for j in stored {
        put_u16s(out, &rows[j][..width]);
    }
}

fn put_label_head(out: &mut Vec<u8>, head: &Head) {
    let (k, dim) = (head.outputs, head.dim());
    put_u32(out, k as u32);
    put_u32(out, dim as u32);
    put_f32s(out, &head.bias);
    let stored: Vec<usize> = (0..dim)
        .filter(|&j| head.weights[j * k..j * k + k].iter().any(|w| w.to_bits() != 0))
        .collect();
    put_rows(out, &stored, dim);
    // Trained heads hold bfloat16 values: their top halves are the exact values.
    let halves = head.is_bf16();
    out.push(if halves { 2 } else { 4 });
    for j in stored {
        let row = &head.weights[j * k..j * k + k];
        if halves {
            put_u16s(out, &row.iter().map(|w| (w.to_bits() >> 16) as u16).collect::<Vec<_>>());
        } else {
            put_f32s(out, row);
        }
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
    if !(1..=FORMAT_VERSION).contains(&version) {
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
    plausible::check_header(&info)?;
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
        put_table(&mut body, &self.main);
        body.push(u8::from(self.label_head.is_some()));
        if let Some(h) = &self.label_head {
            put_label_head(&mut body, h);
        }
        body.push(u8::from(self.tuned.is_some()));
        if let Some(t) = &self.tuned {
            let weights = t.0.to_bytes();
            body.extend_from_slice(&(weights.len() as u64).to_le_bytes());
            body.extend_from_slice(&weights);
        }
        let mut out = Vec::with_capacity(32 + header.len() + body.len());
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, version_needed(&self.info));
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
        let encoder = match (&info.dense, encoder) {
            (None, _) => None,
            (Some(d), Some(e)) if e.id() == d.encoder && e.dim() == d.dim => Some(Encoder(e)),
            (Some(d), _) => return Err(Error::MissingEncoder(d.encoder.clone())),
        };
        let (main, label_head) = read_heads(&mut r, version, &info)?;
        let pair_type = matches!(info.project_type, ProjectType::Absa | ProjectType::Classlabel);
        if pair_type != label_head.is_some() {
            // Training gives the pair types a label head and the others none; a header
            // relabelled to another type would answer tags its project cannot hold.
            return Err(Error::artifact(format!(
                "the header says {:?}, a model {} a label head",
                info.project_type,
                if label_head.is_some() { "with" } else { "without" }
            )));
        }
        let tuned = read_tuned(&mut r, version, encoder.as_ref())?;
        if info.dense.as_ref().is_some_and(|d| d.tuned || d.contrastive) != tuned.is_some() {
            return Err(Error::artifact("the header and the tuned encoder disagree"));
        }
        if r.at != content.len() {
            return Err(Error::artifact("trailing data"));
        }
        if info.project_type != ProjectType::Label
            && info.calibration.thresholds.len() != info.classes.len()
            && !info.calibration.thresholds.is_empty()
        {
            return Err(Error::artifact("thresholds do not match the classes"));
        }
        Ok(Model {
            info,
            main,
            label_head,
            encoder,
            tuned,
        })
    }
}

/// The main table and the pair types' label head, in the layout of `version`.
fn read_heads(r: &mut Reader<'_>, version: u32, info: &ModelInfo) -> Result<(Table, Option<Head>)> {
    let dim = info.features.buckets();
    let main_dim = dim.saturating_add(info.dense.as_ref().map_or(0, |d| d.dim));
    // The checksum is no signature: a crafted header could ask for any table size, so
    // refuse sizes no trained model has before allocating them.
    let outputs = info.classes.len().max(info.labels.len()) + 1;
    if main_dim.saturating_mul(outputs) > MAX_TABLE_FLOATS {
        return Err(Error::artifact("the header asks for an implausibly large model"));
    }
    let main_outputs = if info.project_type == ProjectType::Label {
        info.labels.len()
    } else {
        info.classes.len()
    };
    let label_outputs = info.labels.len().max(1);
    if version >= 3 {
        let main = r.table(main_dim, main_outputs)?;
        let label_head = match r.take(1)?[0] {
            0 => None,
            1 => Some(r.label_head(dim, label_outputs)?),
            _ => return Err(Error::artifact("bad head marker")),
        };
        return Ok((main, label_head));
    }
    let idf = r.sparse_table(main_dim)?;
    let main = r.head(main_dim, main_outputs)?;
    let label_head = match r.take(1)?[0] {
        0 => None,
        1 => Some(r.head(dim, label_outputs)?),
        _ => return Err(Error::artifact("bad head marker")),
    };
    Ok((Table::fuse(&idf, &main), label_head))
}

/// The tuned encoder's part (none in version 1).
fn read_tuned(r: &mut Reader<'_>, version: u32, encoder: Option<&Encoder>) -> Result<Option<TunedEncoder>> {
    if version == 1 {
        return Ok(None);
    }
    Ok(match (r.take(1)?[0], encoder) {
        (0, _) => None,
        (1, Some(e)) => {
            let len = usize::try_from(r.u64()?).map_err(|_| Error::artifact("a length is out of range"))?;
            Some(TunedEncoder(e.0.load_tuned(r.take(len)?)?))
        }
        (1, None) => return Err(Error::artifact("a tuned encoder without an encoder")),
        _ => return Err(Error::artifact("bad tuned-encoder marker")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::example::{Example, Tag};
    use crate::train::Options;
    use lector_core::ProjectType;
    use std::ops::ControlFlow;

    /// A small LABEL model on 1,024 buckets.
    pub(super) fn small_model() -> Model {
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

    /// Artifacts written by the version 2 format (`tests/fixtures`, made before version 3 by
    /// `Model::train` on the `label_set` and `pair_set("positive", "negative")` of
    /// `tests/model.rs` with its `options()`).
    const V2_LABEL: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v2-label.lcm"));
    const V2_ABSA: &[u8] = include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/v2-absa.lcm"));

    fn version_of(bytes: &[u8]) -> u32 {
        u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]])
    }

    /// Version 2 files load, predict as they did, and come back as version 3 (at under half the
    /// size for the LABEL model), which loads to the same model.
    #[test]
    fn version_2_artifacts_still_load_and_shrink() {
        let texts = [
            "terrible rude service",
            "lovely wine",
            "the soup was bland",
            "the chef was friendly",
            "",
        ];
        for (v2, text, expected) in [
            (V2_LABEL, texts[0], Tag::label("bad")),
            (V2_ABSA, texts[2], Tag::pair("food", "negative")),
        ] {
            assert_eq!(version_of(v2), 2);
            let old = Model::from_bytes(v2).unwrap();
            assert_eq!(old.predict(text).plain_tags(), [expected]);
            let v3 = old.to_bytes();
            assert_eq!(version_of(&v3), 3);
            // An old label head is not bfloat16 and stays exact in f32 (a new one is half:
            // `tests/model.rs`).
            let (num, den) = if old.label_head.is_some() { (3, 4) } else { (1, 2) };
            assert!(v3.len() * den <= v2.len() * num, "{} bytes from {}", v3.len(), v2.len());
            let new = Model::from_bytes(&v3).unwrap();
            assert_eq!(new, old);
            for text in texts {
                assert_eq!(new.predict(text), old.predict(text));
            }
        }
    }

    /// Version 1 files (before tuned encoders: no marker after the heads) still load.
    #[test]
    fn version_1_artifacts_still_load() {
        let content = &V2_LABEL[..V2_LABEL.len() - 8];
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
        assert_eq!(Model::from_bytes(&v1).unwrap(), Model::from_bytes(V2_LABEL).unwrap());
        let mut future = small_model().to_bytes();
        future[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        let named = format!("version {}", FORMAT_VERSION + 1);
        assert!(matches!(Model::from_bytes(&future), Err(Error::Artifact(m)) if m.contains(&named)));
    }

    /// A model with the typed shape is written as version 4, which a reader of version 3 would
    /// refuse; one without it stays version 3. Both load to the same model.
    #[test]
    fn only_a_model_with_the_typed_shape_needs_version_4() {
        let folded = small_model();
        assert!(!folded.info.features.typed_shape);
        assert_eq!(version_of(&folded.to_bytes()), 3);
        let mut shaped = small_model();
        shaped.info.features.typed_shape = true;
        let bytes = shaped.to_bytes();
        assert_eq!(version_of(&bytes), 4);
        assert_eq!(Model::from_bytes(&bytes).unwrap(), shaped);
    }

    /// A two-label model stores one column, and only the rows of seen features.
    #[test]
    fn a_two_label_model_stores_one_column_of_seen_rows() {
        let model = small_model();
        assert!(mirrored(&model.main));
        let seen = model.main.rows.chunks_exact(3).filter(|r| r[1] != 0).count();
        assert!(seen > 0 && seen < 100, "{seen}");
        let bytes = model.to_bytes();
        let header_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
        let body = bytes.len() - 8 - (16 + header_len + 8);
        // shape, biases, default IDF, mirror marker, row set (count, encoding, gaps), rows, markers
        assert!(
            body <= 8 + 8 + 2 + 1 + 5 + 2 * seen + 4 * seen + 2,
            "{body} bytes for {seen} rows"
        );
        assert_eq!(Model::from_bytes(&bytes).unwrap(), model);
    }

    /// `model`'s artifact with `header` (JSON) as its header, framed and summed as a writer would.
    pub(super) fn with_header(model: &Model, header: &[u8]) -> Vec<u8> {
        let bytes = model.to_bytes();
        let opened = open(&bytes).unwrap();
        let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let rest = &opened.content[16 + header_len..];
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, opened.version);
        put_u32(&mut out, header.len() as u32);
        out.extend_from_slice(header);
        out.extend_from_slice(rest);
        let sum = fnv1a(FNV_SEED, &out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// A model's header cannot change its project type: a CLASS model called ABSA has no label
    /// head to give its classes a sentiment, an ABSA model called CLASS would answer pairs.
    #[test]
    fn a_header_relabelled_to_another_project_type_is_refused() {
        let class_model = Model::train(
            ProjectType::Class,
            &[
                Example::new("good", vec![Tag::class("a")]),
                Example::new("bad", vec![Tag::class("b")]),
            ],
            &Options::default(),
            &mut |_| ControlFlow::Continue(()),
        )
        .unwrap();
        let absa_model = Model::from_bytes(V2_ABSA).unwrap();
        for (model, relabelled) in [
            (&class_model, ProjectType::Absa),
            (&class_model, ProjectType::Classlabel),
            (&absa_model, ProjectType::Class),
        ] {
            assert!(Model::from_bytes(&model.to_bytes()).is_ok());
            let mut info = model.info.clone();
            info.project_type = relabelled;
            let bytes = with_header(model, &serde_json::to_vec(&info).unwrap());
            let refused = Model::from_bytes(&bytes);
            assert!(
                matches!(&refused, Err(Error::Artifact(m)) if m.contains("label head")),
                "{relabelled:?}: {refused:?}"
            );
        }
    }

    /// A weight that is not a number (here the first bias, right after the table's shape) is
    /// refused when the artifact is read.
    #[test]
    fn a_weight_that_is_not_a_number_is_refused() {
        let model = small_model();
        let bytes = model.to_bytes();
        let header_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let bias = 16 + header_len + 8 + 8;
        let mut content = bytes[..bytes.len() - 8].to_vec();
        content[bias..bias + 4].copy_from_slice(&f32::NAN.to_le_bytes());
        let sum = fnv1a(FNV_SEED, &content);
        content.extend_from_slice(&sum.to_le_bytes());
        assert!(matches!(Model::from_bytes(&content), Err(Error::Artifact(m)) if m.contains("not a finite")));
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
