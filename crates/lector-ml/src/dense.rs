//! Dense sentence vectors as extra features: an optional base model (a sentence encoder such
//! as the MiniLM of `lector-embed`) whose unit-length vector joins the hashed n-grams of the
//! main head. N-grams catch the words a class is named by; the encoder catches paraphrases
//! ("the waiter forgot us" is about service though no word says so). This crate only defines
//! the interface, so it stays free of the encoder's weights and code; a model trained with an
//! encoder records its [`DenseConfig`] and needs the same encoder to load and predict.
//!
//! An encoder that can be tuned ([`Embedder::can_tune`], like the MiniLM) does more for the
//! multi-label heads (CLASS, CLASSLABEL, ABSA): training also adapts a copy of it to the
//! model's classes ([`Embedder::tune`] with [`TuneTarget::Classes`]), and that copy's logits are added to the n-gram
//! head's margins ([`Tuned::embed_and_score`]): two different models of the same classes,
//! whose sum is more accurate than either. The tuned weights travel in the artifact
//! ([`Embedder::load_tuned`]).
//!
//! With a few examples per label (a LABEL head, at most
//! [`FEW_SHOT_MAX_PER_LABEL`](crate::dense::FEW_SHOT_MAX_PER_LABEL) per label on average) the
//! copy is tuned on pairs of examples instead ([`TuneTarget::Pairs`], SetFit's recipe): the
//! vectors of the same label are drawn together, and the main head reads the tuned copy's
//! vector in place of the encoder's ([`DenseConfig::contrastive`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::progress::ProgressFn;

/// A deterministic sentence encoder.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// Names the encoder and its weights (a digest), so a model is never used with another.
    fn id(&self) -> String;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// The vector of `text`: `dim()` values of length at most 1, the same on every call.
    fn embed(&self, text: &str) -> Vec<f32>;

    /// Whether [`Embedder::tune`] can adapt this encoder toward `goal` (by default it cannot).
    fn can_tune(&self, goal: TuneGoal) -> bool {
        let _ = goal;
        false
    }

    /// A copy of the encoder adapted to `set`: to predict each text's classes
    /// ([`TuneTarget::Classes`]), or with its sentence vectors drawn together for texts of a
    /// label and apart for texts of different labels ([`TuneTarget::Pairs`], contrastive
    /// tuning; its [`Tuned::embed_and_score`] gives the adapted vector and no logits). The same
    /// from the same seed; `progress` gets the fraction done and may cancel ([`Error::Cancelled`]).
    fn tune(&self, set: &TuneSet<'_>, progress: &mut ProgressFn<'_>) -> Result<Arc<dyn Tuned>> {
        let _ = (set, progress);
        Err(Error::input("this sentence encoder cannot be tuned"))
    }

    /// Reads what [`Tuned::to_bytes`] of a copy of this encoder wrote.
    fn load_tuned(&self, bytes: &[u8]) -> Result<Arc<dyn Tuned>> {
        let _ = bytes;
        Err(Error::artifact(
            "the model holds a tuned encoder, but this encoder cannot be tuned",
        ))
    }
}

/// An encoder adapted to one model's classes by [`Embedder::tune`].
pub trait Tuned: Send + Sync + fmt::Debug {
    /// The vector of `text` the main head reads (the encoder's own, what [`Embedder::embed`]
    /// answers, for a copy tuned to classes; the copy's for one tuned on pairs) and the tuned
    /// copy's logits (log-odds), one per class (none for a copy tuned on pairs): together,
    /// since both can share the layers the tuning left alone.
    fn embed_and_score(&self, text: &str) -> (Vec<f32>, Vec<f32>);
    /// The adapted weights, as [`Embedder::load_tuned`] reads them.
    fn to_bytes(&self) -> Vec<u8>;
}

/// What a copy of an encoder is tuned toward, asked before there is anything to tune on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuneGoal {
    /// Predicting each text's classes (the multi-label heads).
    Classes,
    /// Sentence vectors of the same label near each other (few examples of a LABEL head).
    Pairs,
}

/// What a tuning learns from: the texts, what each is, and the seed that makes it repeatable.
#[derive(Debug, Clone, Copy)]
pub struct TuneSet<'a> {
    pub texts: &'a [&'a str],
    pub target: TuneTarget<'a>,
    pub seed: u64,
}

/// What each text of a [`TuneSet`] is.
#[derive(Debug, Clone, Copy)]
pub enum TuneTarget<'a> {
    /// Each text's positive classes among `outputs`.
    Classes { targets: &'a [Vec<usize>], outputs: usize },
    /// Each text's label index.
    Pairs { labels: &'a [usize] },
}

impl TuneTarget<'_> {
    pub fn goal(&self) -> TuneGoal {
        match self {
            TuneTarget::Classes { .. } => TuneGoal::Classes,
            TuneTarget::Pairs { .. } => TuneGoal::Pairs,
        }
    }
}

/// The dense part of a model's features, stored in its header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseConfig {
    /// [`Embedder::id`] of the encoder the model was trained with.
    pub encoder: String,
    pub dim: usize,
    /// The vector is scaled by this before it joins the unit-length n-gram vector: the
    /// balance between the two ([`crate::Options::dense_weight`], 1 by default).
    pub weight: f32,
    /// A copy of the encoder was tuned to the classes ([`Embedder::tune`]): its logits are
    /// added to the main head's margins.
    #[serde(default)]
    pub tuned: bool,
    /// A copy of the encoder was tuned on pairs of the examples ([`TuneTarget::Pairs`]):
    /// its vector, not the encoder's, joins the n-grams.
    #[serde(default)]
    pub contrastive: bool,
}

impl DenseConfig {
    /// How the model uses its encoder, as its metrics say it: `frozen` (the encoder's own
    /// vectors), `tuned` (a copy tuned to the classes beside them) or `tuned on pairs` (the
    /// vectors of a copy tuned on pairs of the examples).
    pub fn usage(&self) -> &'static str {
        match (self.contrastive, self.tuned) {
            (true, _) => "tuned on pairs",
            (false, true) => "tuned",
            (false, false) => "frozen",
        }
    }
}

/// A LABEL model whose examples number at most this many per label on average has its
/// encoder (if it can be tuned) tuned on pairs of examples ([`TuneTarget::Pairs`]): below
/// it the tuned vector scored higher than the frozen one in the few-shot benchmark
/// (`docs/BENCHMARKS.md`), and tuning on pairs costs more the more examples there are.
pub const FEW_SHOT_MAX_PER_LABEL: usize = 64;

/// The encoder a model holds; compared by id.
#[derive(Clone)]
pub(crate) struct Encoder(pub(crate) Arc<dyn Embedder>);

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Encoder({})", self.0.id())
    }
}

impl PartialEq for Encoder {
    fn eq(&self, other: &Self) -> bool {
        self.0.id() == other.0.id()
    }
}

/// The tuned encoder a model holds; compared by its weights.
#[derive(Clone)]
pub(crate) struct TunedEncoder(pub(crate) Arc<dyn Tuned>);

impl fmt::Debug for TunedEncoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TunedEncoder")
    }
}

impl PartialEq for TunedEncoder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_bytes() == other.0.to_bytes()
    }
}

/// `v` scaled by `weight`, its length capped at `weight` (a misbehaving encoder cannot swamp
/// the n-grams), with non-finite values as 0.
pub(crate) fn scaled(v: &[f32], weight: f32) -> Vec<f32> {
    let clean: Vec<f32> = v.iter().map(|&x| if x.is_finite() { x } else { 0.0 }).collect();
    let norm = clean.iter().map(|x| x * x).sum::<f32>().sqrt();
    let s = if norm > 1.0 { weight / norm } else { weight };
    clean.iter().map(|x| x * s).collect()
}
