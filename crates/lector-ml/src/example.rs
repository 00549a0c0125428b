//! What the learner reads: a segment's text with its tags.
//!
//! Its own module because training, prediction, evaluation and splitting all take these plain
//! values; with them in `model`, `metrics` and `model` would depend on each other.

use serde::{Deserialize, Serialize};

/// One tag of a segment: a class, a label, or both (see DESIGN §6).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Tag {
    pub class: Option<String>,
    pub label: Option<String>,
}

impl Tag {
    pub fn label(label: impl Into<String>) -> Self {
        Self {
            class: None,
            label: Some(label.into()),
        }
    }

    pub fn class(class: impl Into<String>) -> Self {
        Self {
            class: Some(class.into()),
            label: None,
        }
    }

    pub fn pair(class: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            class: Some(class.into()),
            label: Some(label.into()),
        }
    }
}

/// A tagged segment to learn from or to score against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    pub text: String,
    pub tags: Vec<Tag>,
}

impl Example {
    pub fn new(text: impl Into<String>, tags: Vec<Tag>) -> Self {
        Self {
            text: text.into(),
            tags,
        }
    }
}
