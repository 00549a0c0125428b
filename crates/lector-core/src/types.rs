//! Enumerations of the domain that travel as upper-case strings on the wire.

use serde::{Deserialize, Serialize};

/// Generates `as_str`, `Display` and `FromStr` for a unit enum spelled in upper case.
#[macro_export]
macro_rules! wire_enum {
    ($name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = ::std::string::String;

            fn from_str(s: &str) -> ::std::result::Result<Self, Self::Err> {
                match s {
                    $($text => ::std::result::Result::Ok($name::$variant),)+
                    _ => ::std::result::Result::Err(::std::format!(
                        "unknown {}: {s:?} (expected one of {})",
                        stringify!($name),
                        [$($text),+].join(", ")
                    )),
                }
            }
        }
    };
}

/// The kind of model a project trains; it fixes what a tag means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ProjectType {
    /// Aspects (classes) per segment, each with a sentiment (label).
    Absa,
    /// Zero or more classes per segment.
    Class,
    /// Exactly one label per segment.
    Label,
    /// Class and label pairs per segment.
    Classlabel,
}

crate::wire_enum!(ProjectType { Absa => "ABSA", Class => "CLASS", Label => "LABEL", Classlabel => "CLASSLABEL" });

impl ProjectType {
    /// The numeric mapping of the original interface (1 is BASE, which is no project type).
    pub fn number(self) -> u8 {
        match self {
            ProjectType::Absa => 2,
            ProjectType::Label => 3,
            ProjectType::Class => 4,
            ProjectType::Classlabel => 5,
        }
    }

    /// What a tag of this type says, in a sentence (`list_types`).
    pub fn description(self) -> &'static str {
        match self {
            ProjectType::Absa => {
                "Aspect-based sentiment: each segment's aspects (classes), each with its sentiment (positive, negative or neutral)"
            }
            ProjectType::Label => "Exactly one label per segment",
            ProjectType::Class => "Zero or more classes per segment",
            ProjectType::Classlabel => "Pairs of a class and a label per segment",
        }
    }

    /// The labels an ABSA project always has, and only has.
    pub const ABSA_LABELS: [&'static str; 3] = ["positive", "negative", "neutral"];
}

/// What a model is: a classifier of one of the four project types, or a BASE model (a
/// sentence encoder that ships with the service and that classifiers are trained with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ModelType {
    Base,
    Absa,
    Class,
    Label,
    Classlabel,
}

crate::wire_enum!(ModelType { Base => "BASE", Absa => "ABSA", Class => "CLASS", Label => "LABEL", Classlabel => "CLASSLABEL" });

impl ModelType {
    /// The project type of a classifier; `None` for a BASE model.
    pub fn project_type(self) -> Option<ProjectType> {
        match self {
            ModelType::Base => None,
            ModelType::Absa => Some(ProjectType::Absa),
            ModelType::Class => Some(ProjectType::Class),
            ModelType::Label => Some(ProjectType::Label),
            ModelType::Classlabel => Some(ProjectType::Classlabel),
        }
    }

    /// The numeric mapping of the original interface.
    pub fn number(self) -> u8 {
        self.project_type().map_or(1, ProjectType::number)
    }
}

impl From<ProjectType> for ModelType {
    fn from(kind: ProjectType) -> Self {
        match kind {
            ProjectType::Absa => ModelType::Absa,
            ProjectType::Class => ModelType::Class,
            ProjectType::Label => ModelType::Label,
            ProjectType::Classlabel => ModelType::Classlabel,
        }
    }
}

/// Where a model is in its life: trained by a job (QUEUED, TRAINING, then READY or FAILED),
/// or PUBLISHED for every user to read. CREATED and ACTIVE are the original interface's values
/// for models it made outside training; Lector accepts them on upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ModelStatus {
    Created,
    Queued,
    Training,
    Failed,
    Ready,
    Active,
    Published,
}

crate::wire_enum!(ModelStatus {
    Created => "CREATED", Queued => "QUEUED", Training => "TRAINING", Failed => "FAILED",
    Ready => "READY", Active => "ACTIVE", Published => "PUBLISHED"
});

impl ModelStatus {
    /// Whether a model in this status has an artifact that predicts.
    pub fn predicts(self) -> bool {
        matches!(self, ModelStatus::Ready | ModelStatus::Active | ModelStatus::Published)
    }
}

/// How urgent a notification is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum NotificationType {
    Info,
    Warning,
}

crate::wire_enum!(NotificationType { Info => "INFO", Warning => "WARNING" });

/// Where a HITL review stands: it waits for its reviewer, who approves or rejects it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ReviewStatus {
    Pending,
    Approved,
    Rejected,
}

crate::wire_enum!(ReviewStatus { Pending => "PENDING", Approved => "APPROVED", Rejected => "REJECTED" });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_types_round_trip_through_their_wire_names() {
        for t in ProjectType::ALL {
            assert_eq!(t.as_str().parse::<ProjectType>().unwrap(), *t);
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert!("class".parse::<ProjectType>().is_err());
    }
}

/// Where an external source's data comes from; a credential opens one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// One file fetched by HTTP(S) GET from a URL.
    Http,
    /// The rows of one read-only query on a PostgreSQL database, as CSV.
    Postgres,
    /// One object of an S3-compatible bucket.
    S3,
}

crate::wire_enum!(SourceKind { Http => "http", Postgres => "postgres", S3 => "s3" });
