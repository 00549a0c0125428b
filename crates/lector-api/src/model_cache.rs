//! Loaded models, cached per node: analysing with a model reads and decodes its artifact once,
//! then reuses it. Entries are keyed by model id and artifact version, so a model whose
//! artifact changed is loaded again; the cache holds a bounded number of models and drops the
//! least recently used. It does not check who may use a model: callers resolve the model
//! through the store's scoped functions first.

use lector_core::{Error, Result};
use lector_embed::BaseModels;
use lector_store::{Model, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Models one node keeps loaded unless configured otherwise.
pub const DEFAULT_CAPACITY: usize = 16;

#[derive(Debug)]
pub struct ModelCache {
    capacity: usize,
    inner: Mutex<Entries>,
    /// Gives a model trained with a sentence encoder its encoder.
    base_models: Arc<BaseModels>,
}

#[derive(Debug, Default)]
struct Entries {
    clock: u64,
    by_id: HashMap<i64, Entry>,
}

#[derive(Debug)]
struct Entry {
    version: i64,
    model: Arc<lector_ml::Model>,
    used: u64,
}

impl ModelCache {
    pub fn new(capacity: usize, base_models: Arc<BaseModels>) -> Self {
        Self {
            capacity: capacity.max(1),
            inner: Mutex::new(Entries::default()),
            base_models,
        }
    }

    /// The loaded model for this record, from the cache or from its artifact.
    pub async fn get(&self, store: &Store, model: &Model) -> Result<Arc<lector_ml::Model>> {
        if let Some(found) = self.lookup(model.id, model.version) {
            return Ok(found);
        }
        let bytes = store.model_artifact(model).await?;
        let base_models = self.base_models.clone();
        let loaded = tokio::task::spawn_blocking(move || base_models.load_model(&bytes))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "loading a model panicked");
                Error::internal()
            })?
            .map_err(|e| match e {
                lector_ml::Error::MissingEncoder(_) => Error::conflict(format!(
                    "model {}: {e}; install it with `lector base-models install`",
                    model.id
                )),
                e => {
                    tracing::error!(model.id = model.id, error = %e, "a stored model artifact does not load");
                    Error::internal()
                }
            })?;
        let loaded = Arc::new(loaded);
        self.insert(model.id, model.version, loaded.clone());
        Ok(loaded)
    }

    fn lookup(&self, id: i64, version: i64) -> Option<Arc<lector_ml::Model>> {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let clock = entries.clock;
        let entry = entries.by_id.get_mut(&id).filter(|e| e.version == version)?;
        entry.used = clock;
        Some(entry.model.clone())
    }

    fn insert(&self, id: i64, version: i64, model: Arc<lector_ml::Model>) {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let used = entries.clock;
        entries.by_id.insert(id, Entry { version, model, used });
        while entries.by_id.len() > self.capacity {
            let oldest = entries.by_id.iter().min_by_key(|(_, e)| e.used).map(|(id, _)| *id);
            match oldest {
                Some(oldest) => entries.by_id.remove(&oldest),
                None => break,
            };
        }
    }

    /// How many models are loaded (for tests and metrics).
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_core::ProjectType;
    use lector_ml::{Example, Options, Tag};

    fn tiny() -> Arc<lector_ml::Model> {
        let examples = vec![
            Example::new("good", vec![Tag::label("a")]),
            Example::new("bad", vec![Tag::label("b")]),
        ];
        let model = lector_ml::Model::train(ProjectType::Label, &examples, &Options::default(), &mut |_| {
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        Arc::new(model)
    }

    #[test]
    fn keeps_the_most_recently_used_and_knows_versions() {
        let cache = ModelCache::new(2, Arc::new(BaseModels::none()));
        let model = tiny();
        cache.insert(1, 1, model.clone());
        cache.insert(2, 1, model.clone());
        assert!(cache.lookup(1, 1).is_some());
        cache.insert(3, 1, model.clone());
        assert_eq!(cache.len(), 2);
        assert!(cache.lookup(2, 1).is_none(), "the least recently used goes");
        assert!(cache.lookup(1, 2).is_none(), "another version loads again");
        assert!(cache.lookup(1, 1).is_some());
    }
}
