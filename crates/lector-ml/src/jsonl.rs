//! ABSA sets as JSON lines, one sentence a line: `{"text": …, "labels": [{"category": …,
//! "polarity": …}, …]}`, the shape of the SemEval-16 sets (`../shared/data/absa-rest16-en`).
//! Both benchmarks that read them (`examples/bench.rs` here, `lector-embed`'s `absa` example)
//! read them through this module, so they learn from and score on the same examples.
//!
//! A label without a category or a polarity is left out; a line without labels is a sentence
//! with no aspect. Blank lines are skipped.

use std::path::{Path, PathBuf};

use crate::example::{Example, Tag};

/// Why an ABSA set could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `line` counts from 1.
    #[error("{}: line {line}: {source}", path.display())]
    Json {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// The examples of an ABSA set (see the module documentation), each tagged with its
/// (category, polarity) pairs.
pub fn read_absa(path: &Path) -> Result<Vec<Example>, JsonlError> {
    let text = std::fs::read_to_string(path).map_err(|source| JsonlError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|source| JsonlError::Json {
            path: path.to_path_buf(),
            line: i + 1,
            source,
        })?;
        out.push(Example::new(v["text"].as_str().unwrap_or_default(), absa_tags(&v)));
    }
    Ok(out)
}

/// The (category, polarity) tags of one sentence's `labels`.
fn absa_tags(sentence: &serde_json::Value) -> Vec<Tag> {
    sentence["labels"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|l| Some(Tag::pair(l["category"].as_str()?, l["polarity"].as_str()?)))
                .collect()
        })
        .unwrap_or_default()
}
