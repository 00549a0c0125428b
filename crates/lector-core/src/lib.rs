//! Lector's domain vocabulary: the types every other crate speaks (project types, roles,
//! statuses), the role policy, input validation and the error catalogue.
//!
//! Nothing here knows about HTTP, SQL or files: the API renders [`Error`] as problem+json,
//! the store maps its failures into it, and the policy is plain functions over [`Role`].

pub mod body;
pub mod config;
pub mod corrections;
pub mod error;
pub mod labeling;
pub mod policy;
pub mod sigv4;
pub mod time;
pub mod types;
pub mod validate;
pub mod webhook;

pub use error::{Error, ErrorCode, FieldError, Result};
pub use policy::{Action, Role, Scope};
pub use types::{ModelStatus, ModelType, NotificationType, ProjectType, ReviewStatus, SourceKind};

/// An f32 as the f64 of its shortest decimal: 0.9, as a configuration says, not the
/// 0.8999999761581421 `f64::from` gives (a model's confidences are f32, answers f64).
pub fn decimal(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}
