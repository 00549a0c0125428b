//! The sentence encoder's part in training: which encoder a model gets (given, or kept from a
//! warm start's base), its vectors appended to the n-grams of the main head, and the tuning of
//! a copy of it to the classes (or, with few examples per label, on pairs of examples: its
//! vectors then replace the encoder's).
//!
//! Encoding and tuning dwarf the rest of training, so this module also says how much progress
//! they are worth.

use std::ops::ControlFlow;
use std::sync::Arc;

use lector_core::ProjectType;

use crate::dense::{
    DenseConfig, Embedder, FEW_SHOT_MAX_PER_LABEL, TuneGoal, TuneSet, TuneTarget, Tuned, TunedEncoder, scaled,
};
use crate::error::{Error, Result};
use crate::example::Example;
use crate::features::SparseVec;
use crate::model::Calibration;
use crate::progress::{Progress, ProgressFn};
use crate::svm::Csr;

use super::Options;
use super::targets::Targets;

/// Progress units per byte of text for encoding (against 1 for hashing n-grams, and about a
/// thousand for the SVM solves on the SemEval restaurant set, which encoding outlasts twentyfold).
const ENCODE_UNITS_PER_BYTE: f64 = 20_000.0;
/// Progress units per byte of text for tuning the encoder: about ten encodings' worth.
const TUNE_UNITS_PER_BYTE: f64 = 200_000.0;

/// A model's encoder and its configuration, or neither.
type Chosen = (Option<Arc<dyn Embedder>>, Option<DenseConfig>);

/// The encoder of the model and its configuration: the one given, else a warm start's base
/// model's (with its weight). `per_label` is the mean number of examples per label (LABEL).
/// Plans the encoding (and tuning) work it brings.
pub(super) fn choose(
    project_type: ProjectType,
    options: &Options<'_>,
    per_label: f64,
    text_units: f64,
    progress: &mut Progress<'_, '_>,
) -> Result<Chosen> {
    // A warm start keeps the base model's encoder (like its features) unless one is given.
    let (embedder, dense_weight) = match (&options.embedder, options.base) {
        (Some(e), _) => (Some(e.clone()), options.dense_weight),
        (None, Some(base)) => match (&base.encoder, &base.info.dense) {
            (Some(e), Some(d)) => (Some(e.0.clone()), d.weight),
            _ => (None, options.dense_weight),
        },
        (None, None) => (None, options.dense_weight),
    };
    let dense = match &embedder {
        Some(_) if !(dense_weight.is_finite() && dense_weight > 0.0) => {
            return Err(Error::input(format!(
                "the dense weight must be positive, not {dense_weight}"
            )));
        }
        Some(e) => {
            let tuned = options.tune_encoder && e.can_tune(TuneGoal::Classes) && project_type != ProjectType::Label;
            let contrastive = options.tune_encoder
                && e.can_tune(TuneGoal::Pairs)
                && project_type == ProjectType::Label
                && per_label <= FEW_SHOT_MAX_PER_LABEL as f64;
            // Encoding costs far more per text than hashing n-grams, and tuning more still:
            // plan them as such.
            progress.plan(ENCODE_UNITS_PER_BYTE * text_units);
            if tuned || contrastive {
                progress.plan(TUNE_UNITS_PER_BYTE * text_units);
            }
            Some(DenseConfig {
                encoder: e.id(),
                dim: e.dim(),
                weight: dense_weight,
                tuned,
                contrastive,
            })
        }
        None => None,
    };
    Ok((embedder, dense))
}

/// The IDF table of the main head: the n-grams' weights, then 0 for the encoder's rows
/// (they are no n-grams; prediction reads only their weights).
pub(super) fn dense_idf(idf: &[f32], main_dim: usize) -> Vec<f32> {
    let mut out = idf.to_vec();
    out.resize(main_dim, 0.0);
    out
}

/// What either tuning of the encoder reads: the model's encoder and its configuration, the
/// main head's targets, and the texts of the rows it learns from.
pub(super) struct Tuning<'a> {
    pub(super) embedder: Option<&'a Arc<dyn Embedder>>,
    pub(super) dense: Option<&'a DenseConfig>,
    pub(super) targets: &'a Targets,
    pub(super) examples: &'a [Example],
    pub(super) rows: &'a [usize],
    pub(super) seed: u64,
    /// The bytes of the training texts, which tuning's progress is planned by.
    pub(super) text_units: f64,
}

impl<'a> Tuning<'a> {
    fn texts(&self) -> Vec<&'a str> {
        self.rows.iter().map(|&i| self.examples[i].text.as_str()).collect()
    }

    fn set<'s>(&self, texts: &'s [&'s str], target: TuneTarget<'s>) -> TuneSet<'s> {
        TuneSet {
            texts,
            target,
            seed: self.seed,
        }
    }

    /// Where the encoder is to be tuned on pairs ([`DenseConfig::contrastive`]), the copy
    /// tuned on the rows' labels (`targets`, single-label).
    pub(super) fn tune_pairs(&self, progress: &mut Progress<'_, '_>) -> Result<Option<Arc<dyn Tuned>>> {
        Ok(match (self.embedder, self.dense, self.targets) {
            (Some(e), Some(d), Targets::Single { y, .. }) if d.contrastive => {
                let target = TuneTarget::Pairs { labels: y };
                Some(reporting_tuning(self.text_units, progress, |report| {
                    e.tune(&self.set(&self.texts(), target), report)
                })?)
            }
            _ => None,
        })
    }

    /// Where the model's encoder is to be tuned (a multi-label main head), a copy of it
    /// adapted to the classes; its logits join the class margins, so the thresholds become
    /// even odds.
    pub(super) fn tune(
        &self,
        calibration: &mut Calibration,
        progress: &mut Progress<'_, '_>,
    ) -> Result<Option<TunedEncoder>> {
        Ok(match (self.embedder, self.dense, self.targets) {
            (Some(e), Some(d), Targets::Multi { y, k }) if d.tuned => {
                let target = TuneTarget::Classes {
                    targets: y,
                    outputs: *k,
                };
                let tuned = reporting_tuning(self.text_units, progress, |report| {
                    e.tune(&self.set(&self.texts(), target), report)
                })?;
                // A class's score is its margin plus the tuned logit, decided at even odds.
                calibration.thresholds = vec![0.5; *k];
                Some(TunedEncoder(tuned))
            }
            _ => None,
        })
    }
}

/// The vector the main head reads for a text: the pair-tuned copy's if there is one, else the
/// encoder's.
pub(super) fn vector(encoder: &dyn Embedder, pairs: Option<&Arc<dyn Tuned>>, text: &str) -> Vec<f32> {
    match pairs {
        Some(t) => t.embed_and_score(text).0,
        None => encoder.embed(text),
    }
}

/// `x` with each row's encoder vector ([`vector`]) appended at columns `dim..dim + d.dim`.
#[expect(clippy::too_many_arguments, reason = "one step of train_inner, reading its locals")]
pub(super) fn with_dense(
    x: &Csr,
    dim: usize,
    encoder: &dyn Embedder,
    pairs: Option<&Arc<dyn Tuned>>,
    d: &DenseConfig,
    examples: &[Example],
    rows: &[usize],
    progress: &mut Progress<'_, '_>,
) -> Result<Csr> {
    let mut out = Csr::new();
    let mut v = SparseVec::default();
    for (r, &i) in rows.iter().enumerate() {
        let (ind, val) = x.row(r);
        v.indices.clear();
        v.values.clear();
        v.indices.extend_from_slice(ind);
        v.values.extend_from_slice(val);
        let e = scaled(&vector(encoder, pairs, &examples[i].text), d.weight);
        for (j, &value) in e.iter().take(d.dim).enumerate() {
            if value != 0.0 {
                v.indices.push((dim + j) as u32);
                v.values.push(value);
            }
        }
        out.push(&v);
        // Cancellable between texts: encoding is the slow part of training with an encoder.
        progress.advance(ENCODE_UNITS_PER_BYTE * examples[i].text.len() as f64)?;
    }
    Ok(out)
}

/// Runs one tuning of the encoder (`tune` gets the callback to report its fraction done to),
/// worth [`TUNE_UNITS_PER_BYTE`] per byte of the training texts in `progress`; a cancelled
/// training stops the tuning.
fn reporting_tuning<T>(
    text_units: f64,
    progress: &mut Progress<'_, '_>,
    tune: impl FnOnce(&mut ProgressFn<'_>) -> Result<T>,
) -> Result<T> {
    let budget = TUNE_UNITS_PER_BYTE * text_units;
    let mut reported = 0.0;
    let mut cancelled = Ok(());
    let tuned = tune(&mut |fraction| {
        let units = budget * fraction.clamp(0.0, 1.0);
        cancelled = progress.advance(units - reported);
        reported = units.max(reported);
        if cancelled.is_ok() {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    });
    cancelled?;
    tuned
}
