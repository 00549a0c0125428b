//! The one error type of `lector-ml`.
//!
//! Every fallible entry point (training, loading an artifact, evaluating) answers with [`Error`];
//! nothing in this crate panics on user input. The service maps these into its own catalogue.

/// Why an operation of this crate failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The training data or options cannot produce a model (no examples, a single label, …).
    #[error("invalid training input: {0}")]
    InvalidInput(String),
    /// The progress callback asked to stop.
    #[error("training was cancelled")]
    Cancelled,
    /// The base model given for a warm start shares nothing with this project.
    #[error("the base model cannot seed this model: {0}")]
    IncompatibleBase(String),
    /// The model was trained with a sentence encoder (named by its id) that was not given.
    #[error("the model reads the sentence encoder {0}, which is not installed here")]
    MissingEncoder(String),
    /// The bytes are not a model artifact this version can read.
    #[error("not a valid model artifact: {0}")]
    Artifact(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn input(detail: impl Into<String>) -> Self {
        Error::InvalidInput(detail.into())
    }

    pub(crate) fn artifact(detail: impl Into<String>) -> Self {
        Error::Artifact(detail.into())
    }
}
