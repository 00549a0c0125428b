//! The trained model and prediction.
//!
//! A model is a featuriser (hash configuration and IDF weights), a main linear head (labels for
//! LABEL, classes for the others), for the pair types a second head that scores labels on the
//! features crossed with the class (so the sentiment of "service" is learnt apart from that of
//! "food" while sharing what is common), and the calibration fitted on held-out data. Training
//! lives in `train`, the file format in `artifact`.

use lector_core::ProjectType;
use serde::{Deserialize, Serialize};

use crate::calibrate::{Platt, softmax};
use crate::dense::{DenseConfig, Encoder, TunedEncoder, scaled};
use crate::example::{Example, Tag};
use crate::features::{FeatureConfig, Featurizer, Scratch, SparseVec, mix64, sublinear_tf};
use crate::metrics::{Metrics, evaluate_tags};

/// A name with its calibrated probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scored {
    pub name: String,
    pub probability: f32,
}

impl Scored {
    /// Each of `names` with its probability, the one at the same place in `probabilities`.
    fn each(names: &[String], probabilities: &[f32]) -> Vec<Scored> {
        names
            .iter()
            .zip(probabilities)
            .map(|(name, &probability)| Scored {
                name: name.clone(),
                probability,
            })
            .collect()
    }
}

/// A tag the model decided on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PredictedTag {
    pub class: Option<String>,
    pub label: Option<String>,
    /// The probability that this tag is right: of the label (LABEL), of the class (CLASS),
    /// of the class times that of the label given the class (pair types).
    pub confidence: f32,
    /// Pair types: the distribution over labels for this class (sums to 1).
    pub labels: Vec<Scored>,
}

/// What the model says about one text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub tags: Vec<PredictedTag>,
    /// LABEL: every label with its probability (they sum to 1).
    pub labels: Vec<Scored>,
    /// CLASS and pair types: every class with the probability that it applies.
    pub classes: Vec<Scored>,
    /// How sure the model is of the whole decision, in `[0, 1]`: the least certain of its
    /// choices. Correction sessions show the least sure segments first.
    pub confidence: f32,
}

impl Prediction {
    /// The decided tags without probabilities.
    pub fn plain_tags(&self) -> Vec<Tag> {
        self.tags
            .iter()
            .map(|t| Tag {
                class: t.class.clone(),
                label: t.label.clone(),
            })
            .collect()
    }
}

/// Hyper-parameters a model was trained with, chosen or given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HyperParameters {
    /// SVM cost of the main head.
    pub c: f64,
    /// SVM cost of the label head (pair types).
    pub c_labels: Option<f64>,
    /// The costs tried on held-out data (empty when `c` was given).
    pub c_grid: Vec<f64>,
    pub seed: u64,
    pub max_epochs: u32,
    /// How held-out data was made: `"5-fold"`, `"holdout-20%"` or `"none"`.
    pub validation: String,
    /// Held-out score of the chosen main-head cost (macro F1 for LABEL, micro F1 otherwise).
    pub validation_score: Option<f64>,
    /// The featurisations tried on the same held-out data, each with its best held-out score;
    /// the chosen one is [`ModelInfo::features`]. One entry where there was no choice (a warm
    /// start keeps its base model's, a sentence encoder's model the given one); empty in
    /// models from before the choice.
    #[serde(default)]
    pub features_tried: Vec<FeatureTrial>,
}

/// One featurisation tried while training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureTrial {
    /// [`FeatureConfig::name`].
    pub features: String,
    pub validation_score: Option<f64>,
}

/// The probabilities' calibration, fitted on held-out margins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// LABEL: softmax temperature of the main head.
    pub temperature: f32,
    /// Multi-label heads: the shared sigmoid (unused with a tuned encoder, whose logits are
    /// added to the margins before a plain sigmoid: they have no held-out scores to fit).
    pub platt: Platt,
    /// Multi-label heads: per-class probability thresholds (0.5 with a tuned encoder).
    pub thresholds: Vec<f32>,
    /// Pair types: softmax temperature of the label head.
    pub label_temperature: f32,
    /// Multi-label heads: when no class reaches its threshold, take the most probable one
    /// (chosen on held-out data: right where every segment has a class).
    #[serde(default)]
    pub at_least_one: bool,
}

/// Everything about a model except its weights: the artifact's header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub project_type: ProjectType,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    pub features: FeatureConfig,
    /// Set when the main head also reads a sentence encoder's vectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense: Option<DenseConfig>,
    pub hyper: HyperParameters,
    pub calibration: Calibration,
    /// Segments the model learnt from.
    pub examples: usize,
    /// Given by the caller (the library never reads the clock, so training stays reproducible).
    pub trained_at: Option<String>,
    /// Set when training started from a base model.
    pub warm_started: bool,
    /// Test metrics, set by the caller after evaluation.
    pub metrics: Option<Metrics>,
    /// The language of the texts the model was trained for, as the caller gave it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// What the caller learnt of a LABEL model's fields on its pages, kept as the caller wrote
    /// it (this crate never reads it), so that the one file carries the whole model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_model: Option<String>,
}

/// A block of linear scorers over the hashed table, stored feature-major so that scoring a
/// sparse vector reads one short contiguous row per feature.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Head {
    pub(crate) outputs: usize,
    /// `dim * outputs`.
    pub(crate) weights: Vec<f32>,
    pub(crate) bias: Vec<f32>,
}

impl Head {
    pub(crate) fn zeros(dim: usize, outputs: usize) -> Self {
        Self {
            outputs,
            weights: vec![0.0; dim * outputs],
            bias: vec![0.0; outputs],
        }
    }

    pub(crate) fn dim(&self) -> usize {
        self.weights.len().checked_div(self.outputs).unwrap_or(0)
    }

    #[inline]
    pub(crate) fn scores(&self, x: &SparseVec, out: &mut Vec<f32>) {
        out.clear();
        out.extend_from_slice(&self.bias);
        let k = self.outputs;
        for (&j, &v) in x.indices.iter().zip(&x.values) {
            let row = &self.weights[j as usize * k..j as usize * k + k];
            for (o, &w) in out.iter_mut().zip(row) {
                *o += v * w;
            }
        }
    }

    /// Column `k` as training weights (`dim` weights then the bias).
    pub(crate) fn column(&self, k: usize) -> Vec<f64> {
        let mut w: Vec<f64> = self
            .weights
            .iter()
            .skip(k)
            .step_by(self.outputs)
            .map(|&v| f64::from(v))
            .collect();
        w.push(f64::from(self.bias[k]));
        w
    }

    /// Rounds the weights (not the biases) to bfloat16 values, as the prediction table holds
    /// them: the artifact then stores them in two bytes each and still exactly.
    pub(crate) fn round_to_bf16(&mut self) {
        for w in &mut self.weights {
            *w = from_bf16(to_bf16(*w));
        }
    }

    /// Whether every weight is a bfloat16 value (see [`Head::round_to_bf16`]).
    pub(crate) fn is_bf16(&self) -> bool {
        self.weights.iter().all(|w| w.to_bits() & 0xffff == 0)
    }

    pub(crate) fn set_column(&mut self, k: usize, w: &[f64]) {
        let dim = self.dim();
        for (j, &v) in w.iter().take(dim).enumerate() {
            // No negative zeros (a mirrored zero weight): they score as zeros, and the
            // artifact stores only rows with a non-zero weight.
            self.weights[j * self.outputs + k] = v as f32 + 0.0;
        }
        self.bias[k] = w[dim] as f32;
    }
}

/// The main head fused with the IDF weights: row `j` is `[idf_j, w_j0, …, w_j(K-1)]`, so
/// prediction touches one cache line per feature and weighs, normalises and scores in one pass
/// (scores are linear, so the L2 norm is applied at the end).
///
/// Values are stored as bfloat16 (the top half of an `f32`): reading the table is what limits
/// prediction speed, and at half the size it stays in a core's L2 cache. Three significant
/// digits are plenty for weights learnt from a few thousand examples; the artifact stores
/// these rounded values, so a loaded model predicts exactly what the trained one did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Table {
    pub(crate) outputs: usize,
    pub(crate) rows: Vec<u16>,
    pub(crate) bias: Vec<f32>,
}

/// `x` rounded to the nearest bfloat16 (ties to even).
#[inline]
pub(crate) fn to_bf16(x: f32) -> u16 {
    if x.is_nan() {
        return 0x7fc0;
    }
    let b = x.to_bits();
    (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16
}

#[inline]
pub(crate) fn from_bf16(h: u16) -> f32 {
    f32::from_bits(u32::from(h) << 16)
}

/// `-x` of a bfloat16, zero staying a positive zero (tables hold no negative zeros).
#[inline]
pub(crate) fn negate_bf16(h: u16) -> u16 {
    if h & 0x7fff == 0 { 0 } else { h ^ 0x8000 }
}

impl Table {
    pub(crate) fn fuse(idf: &[f32], head: &Head) -> Self {
        let k = head.outputs;
        let mut rows = Vec::with_capacity(idf.len() * (k + 1));
        for (j, &w) in idf.iter().enumerate() {
            rows.push(to_bf16(w));
            // `+ 0.0` turns a negative zero (a mirrored zero weight) into a positive one: it
            // scores the same, and the artifact need not store it.
            rows.extend(head.weights[j * k..j * k + k].iter().map(|&w| to_bf16(w + 0.0)));
        }
        Self {
            outputs: k,
            rows,
            bias: head.bias.clone(),
        }
    }

    pub(crate) fn dim(&self) -> usize {
        self.rows.len() / (self.outputs + 1)
    }

    /// The weights alone, as a [`Head`].
    pub(crate) fn head(&self) -> Head {
        let s = self.outputs + 1;
        let mut weights = Vec::with_capacity(self.dim() * self.outputs);
        for row in self.rows.chunks_exact(s) {
            weights.extend(row[1..].iter().map(|&h| from_bf16(h)));
        }
        Head {
            outputs: self.outputs,
            weights,
            bias: self.bias.clone(),
        }
    }
}

/// The features crossed with class `class`: every feature twice, once shared and once in a
/// bucket of its own for this class, each scaled by √½ so the vector keeps unit length.
pub(crate) fn cross(x: &SparseVec, class: usize, buckets_log2: u32, out: &mut SparseVec) {
    out.clear();
    let shift = 64 - buckets_log2;
    let salt = (class as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let s = std::f32::consts::FRAC_1_SQRT_2;
    for (&j, &v) in x.indices.iter().zip(&x.values) {
        out.indices.push(j);
        out.values.push(v * s);
        out.indices.push((mix64(u64::from(j) ^ salt) >> shift) as u32);
        out.values.push(v * s);
    }
}

/// A trained classifier for one project type.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub(crate) info: ModelInfo,
    pub(crate) main: Table,
    /// Pair types only.
    pub(crate) label_head: Option<Head>,
    /// The sentence encoder of [`ModelInfo::dense`]; the main table has its `dim` rows
    /// after the hashed buckets.
    pub(crate) encoder: Option<Encoder>,
    /// The encoder tuned to the classes ([`DenseConfig::tuned`]): its logits are added to the
    /// class margins; or tuned on pairs ([`DenseConfig::contrastive`]): its vector is the one
    /// the main head reads.
    pub(crate) tuned: Option<TunedEncoder>,
}

/// Reusable buffers for [`Model::predict_with`]: one per thread avoids allocation per text.
#[derive(Debug, Default, Clone)]
pub struct Workspace {
    scratch: Scratch,
    crossed: SparseVec,
    scores: Vec<f32>,
    probs: Vec<f32>,
}

impl Model {
    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// The sentence encoder the model reads beside its n-grams, if any.
    pub fn embedder(&self) -> Option<&std::sync::Arc<dyn crate::Embedder>> {
        self.encoder.as_ref().map(|e| &e.0)
    }

    pub fn project_type(&self) -> ProjectType {
        self.info.project_type
    }

    /// The memory its weight tables hold, in bytes (a tuned encoder copy not counted: its
    /// size is about its part of the artifact). What a cache of loaded models weighs them by.
    pub fn table_bytes(&self) -> usize {
        let head = self.label_head.as_ref().map_or(0, |h| h.weights.len() + h.bias.len());
        self.main.rows.len() * 2 + (self.main.bias.len() + head) * 4
    }

    pub fn classes(&self) -> &[String] {
        &self.info.classes
    }

    pub fn labels(&self) -> &[String] {
        &self.info.labels
    }

    /// Records test metrics in the model (they travel in the artifact's header).
    pub fn set_metrics(&mut self, metrics: Option<Metrics>) {
        self.info.metrics = metrics;
    }

    pub fn set_trained_at(&mut self, trained_at: Option<String>) {
        self.info.trained_at = trained_at;
    }

    /// Records the language the model was trained for (it travels in the artifact's header).
    pub fn set_language(&mut self, language: Option<String>) {
        self.info.language = language;
    }

    /// Records what the caller learnt of the model's fields (it travels in the artifact's header).
    pub fn set_field_model(&mut self, field_model: Option<String>) {
        self.info.field_model = field_model;
    }

    /// Predicts the tags of one text.
    pub fn predict(&self, text: &str) -> Prediction {
        self.predict_with(text, &mut Workspace::default())
    }

    /// Featurises `text` and scores it with the main head into `ws.scores`; for the pair types
    /// also leaves the normalised feature vector in `ws.scratch.vec`.
    fn main_scores(&self, text: &str, ws: &mut Workspace) {
        let k = self.main.outputs;
        let stride = k + 1;
        Featurizer::count(&self.info.features, text, &mut ws.scratch);
        let Scratch { counter, vec, .. } = &mut ws.scratch;
        let keep_vector = self.label_head.is_some();
        vec.clear();
        ws.scores.clear();
        ws.scores.resize(k, 0.0);
        let mut norm = 0.0f32;
        for (b, c) in counter.iter() {
            let at = b as usize * stride;
            let row = &self.main.rows[at..at + stride];
            let v = sublinear_tf(c) * from_bf16(row[0]);
            norm += v * v;
            for (o, &w) in ws.scores.iter_mut().zip(&row[1..]) {
                *o += v * from_bf16(w);
            }
            if keep_vector {
                vec.indices.push(b);
                vec.values.push(v);
            }
        }
        let inv = if norm > 0.0 { 1.0 / norm.sqrt() } else { 0.0 };
        for (o, &b) in ws.scores.iter_mut().zip(&self.main.bias) {
            *o = *o * inv + b;
        }
        if let (Some(encoder), Some(dense)) = (&self.encoder, &self.info.dense) {
            let (vector, logits) = match &self.tuned {
                Some(tuned) => tuned.0.embed_and_score(text),
                None => (encoder.0.embed(text), Vec::new()),
            };
            let first = self.info.features.buckets();
            let v = scaled(&vector, dense.weight);
            for (i, &x) in v.iter().take(dense.dim).enumerate() {
                let at = (first + i) * stride;
                for (o, &w) in ws.scores.iter_mut().zip(&self.main.rows[at + 1..at + stride]) {
                    *o += x * from_bf16(w);
                }
            }
            for (o, &z) in ws.scores.iter_mut().zip(&logits) {
                *o += z;
            }
        }
        for v in &mut vec.values {
            *v *= inv;
        }
    }

    /// [`Model::predict`] reusing `ws` between calls.
    pub fn predict_with(&self, text: &str, ws: &mut Workspace) -> Prediction {
        self.main_scores(text, ws);
        let cal = &self.info.calibration;
        match self.info.project_type {
            ProjectType::Label => {
                softmax(&ws.scores, cal.temperature, &mut ws.probs);
                let best = argmax(&ws.probs);
                let labels = Scored::each(&self.info.labels, &ws.probs);
                let confidence = ws.probs.get(best).copied().unwrap_or(0.0);
                let tags = self
                    .info
                    .labels
                    .get(best)
                    .map(|l| PredictedTag {
                        class: None,
                        label: Some(l.clone()),
                        confidence,
                        labels: Vec::new(),
                    })
                    .into_iter()
                    .collect();
                Prediction {
                    tags,
                    labels,
                    classes: Vec::new(),
                    confidence,
                }
            }
            ProjectType::Class | ProjectType::Absa | ProjectType::Classlabel => {
                let probs: Vec<f32> = if self.info.dense.as_ref().is_some_and(|d| d.tuned) {
                    ws.scores.iter().map(|&z| 1.0 / (1.0 + (-z).exp())).collect()
                } else {
                    ws.scores.iter().map(|&s| cal.platt.probability(s)).collect()
                };
                let mut confidence = 1.0f32;
                let mut tags = Vec::new();
                for (k, &p) in probs.iter().enumerate() {
                    let threshold = cal.thresholds.get(k).copied().unwrap_or(0.5);
                    if p >= threshold {
                        confidence = confidence.min(p);
                        tags.push(k);
                    } else {
                        confidence = confidence.min(1.0 - p);
                    }
                }
                if tags.is_empty() && cal.at_least_one && !probs.is_empty() {
                    let k = argmax(&probs);
                    confidence = confidence.min(probs[k]);
                    tags.push(k);
                }
                let classes = Scored::each(&self.info.classes, &probs);
                let tags = tags
                    .into_iter()
                    .map(|k| {
                        let class = self.info.classes[k].clone();
                        match &self.label_head {
                            None => PredictedTag {
                                class: Some(class),
                                label: None,
                                confidence: probs[k],
                                labels: Vec::new(),
                            },
                            Some(head) => {
                                cross(&ws.scratch.vec, k, self.info.features.buckets_log2, &mut ws.crossed);
                                head.scores(&ws.crossed, &mut ws.scores);
                                softmax(&ws.scores, cal.label_temperature, &mut ws.probs);
                                let best = argmax(&ws.probs);
                                let p_label = ws.probs.get(best).copied().unwrap_or(0.0);
                                confidence = confidence.min(p_label);
                                PredictedTag {
                                    class: Some(class),
                                    label: self.info.labels.get(best).cloned(),
                                    confidence: probs[k] * p_label,
                                    labels: Scored::each(&self.info.labels, &ws.probs),
                                }
                            }
                        }
                    })
                    .collect();
                Prediction {
                    tags,
                    labels: Vec::new(),
                    classes,
                    confidence,
                }
            }
        }
    }

    /// The decided label of a LABEL model (index into [`Model::labels`]) without building a
    /// [`Prediction`]: the fast path for bulk scoring.
    pub fn predict_label_index(&self, text: &str, ws: &mut Workspace) -> Option<usize> {
        self.main_scores(text, ws);
        (!ws.scores.is_empty()).then(|| argmax(&ws.scores))
    }

    /// Predicts every example and scores the predictions against its tags. A LABEL model
    /// learns from the segments that have a label and is scored on those: a segment without
    /// one has no gold label to be right or wrong about.
    pub fn evaluate(&self, examples: &[Example]) -> Metrics {
        let labelled = |e: &&Example| e.tags.iter().any(|t| t.label.is_some());
        let examples: Vec<&Example> = match self.info.project_type {
            ProjectType::Label => examples.iter().filter(labelled).collect(),
            _ => examples.iter().collect(),
        };
        let mut ws = Workspace::default();
        let predicted: Vec<Vec<Tag>> = examples
            .iter()
            .map(|e| self.predict_with(&e.text, &mut ws).plain_tags())
            .collect();
        let gold: Vec<Vec<Tag>> = examples.iter().map(|e| e.tags.clone()).collect();
        let mut metrics = evaluate_tags(
            self.info.project_type,
            &self.info.classes,
            &self.info.labels,
            &gold,
            &predicted,
        );
        metrics.features = Some(self.info.features.name().to_string());
        metrics.encoder = self.info.dense.as_ref().map(|d| d.usage().to_owned());
        metrics
    }
}

/// Index of the largest value; the first on ties; 0 for an empty slice.
pub(crate) fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in values.iter().enumerate() {
        if v > values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_rounds_to_nearest_and_round_trips() {
        assert_eq!(to_bf16(1.0), 0x3f80);
        assert_eq!(from_bf16(to_bf16(-2.5)), -2.5);
        for x in [0.1f32, 3.3, -7.77e-3, 123.456] {
            let y = from_bf16(to_bf16(x));
            assert!(((y - x) / x).abs() <= 1.0 / 256.0, "{x} -> {y}");
            assert_eq!(to_bf16(y), to_bf16(x));
        }
        assert!(from_bf16(to_bf16(f32::NAN)).is_nan());
    }
}
