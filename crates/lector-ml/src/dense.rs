//! Dense sentence vectors as extra features: an optional base model (a sentence encoder such
//! as the MiniLM of `lector-embed`) whose unit-length vector joins the hashed n-grams of the
//! main head. N-grams catch the words a class is named by; the encoder catches paraphrases
//! ("the waiter forgot us" is about service though no word says so). This crate only defines
//! the interface, so it stays free of the encoder's weights and code; a model trained with an
//! encoder records its [`DenseConfig`] and needs the same encoder to load and predict.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A deterministic sentence encoder.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// Names the encoder and its weights (a digest), so a model is never used with another.
    fn id(&self) -> String;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// The vector of `text`: `dim()` values of length at most 1, the same on every call.
    fn embed(&self, text: &str) -> Vec<f32>;
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
}

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

/// `v` scaled by `weight`, its length capped at `weight` (a misbehaving encoder cannot swamp
/// the n-grams), with non-finite values as 0.
pub(crate) fn scaled(v: &[f32], weight: f32) -> Vec<f32> {
    let clean: Vec<f32> = v.iter().map(|&x| if x.is_finite() { x } else { 0.0 }).collect();
    let norm = clean.iter().map(|x| x * x).sum::<f32>().sqrt();
    let s = if norm > 1.0 { weight / norm } else { weight };
    clean.iter().map(|x| x * s).collect()
}
