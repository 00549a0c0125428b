//! Lector's text classifiers: featurisation, training, prediction, evaluation and the
//! model artifact, for the four project types. Knows nothing of HTTP or SQL.
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
mod error;
mod features;
mod metrics;
mod model;
mod progress;
mod rng;
mod split;
mod svm;
mod text;
mod train;

pub use artifact::FORMAT_VERSION;
pub use calibrate::Platt;
pub use error::{Error, Result};
pub use features::FeatureConfig;
pub use metrics::{ConfusionMatrix, Metrics, NameScores, evaluate_tags};
pub use model::{
    Calibration, Example, HyperParameters, Model, ModelInfo, PredictedTag, Prediction, Scored, Tag, Workspace,
};
pub use progress::ProgressFn;
pub use split::{Split, split_examples, stratified_split, stratum};
pub use text::{normalize_arabic, tokenize};
pub use train::Options;
