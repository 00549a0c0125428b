//! Why a base model could not be loaded or tuned.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Format(String),
    /// Tuning was stopped by its progress callback.
    #[error("cancelled")]
    Cancelled,
}

impl From<Error> for lector_ml::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Cancelled => lector_ml::Error::Cancelled,
            Error::Io { .. } => lector_ml::Error::InvalidInput(e.to_string()),
            Error::Format(m) => lector_ml::Error::Artifact(m),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
