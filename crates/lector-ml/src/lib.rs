//! Lector's text classifiers: featurisation, training, prediction, evaluation and the
//! model artifact, for the four project types. Knows nothing of HTTP or SQL.
//!
//! - [`Model::train`] learns a LABEL, CLASS, CLASSLABEL or ABSA model from tagged
//!   [`Example`]s: hashed word and character n-grams (`features`), a linear SVM per output
//!   trained by dual coordinate descent (`svm`), the cost chosen and the probabilities
//!   calibrated on held-out data (`train`, `calibrate`). It is reproducible bit for bit from
//!   [`Options::seed`], reports progress and can be cancelled through its callback, and can
//!   start from a base model ([`Options::base`]). An optional sentence encoder
//!   ([`Options::embedder`], an [`Embedder`] such as `lector-embed`'s MiniLM) adds its dense
//!   vector to the n-grams of the main head; such a model loads only with that encoder
//!   ([`Model::from_bytes_with`]). An encoder that can be tuned ([`Embedder::tune`]) is, for
//!   the multi-label heads, also adapted to the classes, and the logits of its [`Tuned`] copy
//!   are added to the class margins ([`Options::tune_encoder`]); for a LABEL head with few
//!   examples per label it is tuned on pairs of them instead, and its vector replaces the
//!   encoder's.
//! - [`Model::predict`] gives the decided [`Tag`]s with calibrated probabilities.
//! - [`Model::evaluate`] and [`evaluate_tags`] compute the [`Metrics`] the product reports;
//!   [`split_examples`] makes the stratified, seeded train/test split.
//! - [`Model::to_bytes`] / [`Model::from_bytes`] write and read the versioned artifact.
//! - [`tsv`] reads labelled `label<TAB>text` files (the benchmark's format), naming the
//!   file, line and byte of bad input and counting what it skips, and writes them;
//!   [`jsonl`] reads the ABSA sets (SemEval-16's JSON lines) the benchmarks use.
//!
//! Performance and accuracy against TF-IDF + LinearSVC and fastText: `docs/BENCHMARKS.md`.
//!
//! ```
//! use lector_core::ProjectType;
//! use lector_ml::{Example, Model, Options, Tag};
//! use std::ops::ControlFlow;
//!
//! let examples = vec![
//!     Example::new("great food, lovely staff", vec![Tag::label("good")]),
//!     Example::new("awful food and rude staff", vec![Tag::label("bad")]),
//! ];
//! let model = Model::train(ProjectType::Label, &examples, &Options::default(), &mut |_| ControlFlow::Continue(()))?;
//! let again = Model::from_bytes(&model.to_bytes())?;
//! assert_eq!(again.predict("lovely food").tags[0].label.as_deref(), Some("good"));
//! # Ok::<(), lector_ml::Error>(())
//! ```

mod artifact;
mod calibrate;
mod dense;
mod error;
mod example;
mod features;
pub mod jsonl;
mod metrics;
mod model;
mod progress;
mod rng;
mod split;
mod svm;
mod text;
mod train;
pub mod tsv;

pub use artifact::{
    CHECKSUM_BYTES, Checksum, FORMAT_VERSION, HEAD_PREFIX_BYTES, MAX_FIELD_MODEL_BYTES, MAX_OUTPUTS, completed_head,
    header_len,
};
pub use calibrate::Platt;
pub use dense::{DenseConfig, Embedder, FEW_SHOT_MAX_PER_LABEL, TuneGoal, TuneSet, TuneTarget, Tuned};
pub use error::{Error, Result};
pub use example::{Example, Tag};
pub use features::FeatureConfig;
pub use metrics::{ConfusionMatrix, Metrics, NameScores, evaluate_tags};
pub use model::{
    Calibration, FeatureTrial, HyperParameters, Model, ModelInfo, PredictedTag, Prediction, Scored, Workspace,
};
pub use progress::ProgressFn;
pub use rng::Rng;
pub use split::{Split, split_examples, stratified_split, stratum};
pub use text::{normalize_arabic, tokenize};
pub use train::Options;
