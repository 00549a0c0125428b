//! Loaded models, cached per node: analysing with a model reads and decodes its artifact once,
//! then reuses it. Entries are keyed by model id and artifact version, so a model whose
//! artifact changed is loaded again; the cache holds a bounded number of models, and a bounded
//! number of bytes (a 1,000-class model's table is half a GiB), and drops the least recently
//! used. Requests that want a model being loaded wait for that load instead of starting their
//! own, so many analyses at once of a model not yet loaded decode it once, not once each. It
//! does not check who may use a model: callers resolve the model through the store's scoped
//! functions first.

use lector_core::{Error, Result};
use lector_embed::BaseModels;
use lector_store::{Model, Store};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Models one node keeps loaded unless configured otherwise.
pub const DEFAULT_CAPACITY: usize = 16;
/// Bytes of loaded models one node keeps (the most recently used model is kept whatever its size).
pub const DEFAULT_BUDGET_BYTES: usize = 2 << 30;

#[derive(Debug)]
pub struct ModelCache {
    capacity: usize,
    budget_bytes: usize,
    inner: Mutex<Entries>,
    /// One lock per model being loaded: who wants it waits for the load under way.
    loading: Mutex<HashMap<(i64, i64), LoadTurn>>,
    /// Gives a model trained with a sentence encoder its encoder.
    base_models: Arc<BaseModels>,
}

/// Held while a model is loaded; the callers that want it queue on it.
type LoadTurn = Arc<tokio::sync::Mutex<()>>;

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
    bytes: usize,
}

impl ModelCache {
    pub fn new(capacity: usize, base_models: Arc<BaseModels>) -> Self {
        Self::with_budget(capacity, DEFAULT_BUDGET_BYTES, base_models)
    }

    pub fn with_budget(capacity: usize, budget_bytes: usize, base_models: Arc<BaseModels>) -> Self {
        Self {
            capacity: capacity.max(1),
            budget_bytes,
            inner: Mutex::new(Entries::default()),
            loading: Mutex::new(HashMap::new()),
            base_models,
        }
    }

    /// The loaded model for this record, from the cache or from its artifact.
    pub async fn get(&self, store: &Store, model: &Model) -> Result<Arc<lector_ml::Model>> {
        self.get_or_load(model.id, model.version, || self.load(store, model))
            .await
    }

    /// The cached model `id` at `version`, or the one `load` gives (answering its size in
    /// bytes), which is then cached; concurrent callers for the same model wait for one load.
    async fn get_or_load<F, L>(&self, id: i64, version: i64, load: L) -> Result<Arc<lector_ml::Model>>
    where
        L: FnOnce() -> F,
        F: std::future::Future<Output = Result<(lector_ml::Model, usize)>>,
    {
        if let Some(found) = self.lookup(id, version) {
            return Ok(found);
        }
        let lock = {
            let mut loading = self.loading.lock().unwrap_or_else(|p| p.into_inner());
            loading.entry((id, version)).or_default().clone()
        };
        let loaded = {
            let _turn = lock.lock().await;
            match self.lookup(id, version) {
                Some(found) => Ok(found),
                None => load().await.map(|(model, bytes)| {
                    let model = Arc::new(model);
                    self.insert(id, version, model.clone(), bytes);
                    model
                }),
            }
        };
        let mut loading = self.loading.lock().unwrap_or_else(|p| p.into_inner());
        if loading
            .get(&(id, version))
            .is_some_and(|l| Arc::ptr_eq(l, &lock) && Arc::strong_count(l) <= 2)
        {
            loading.remove(&(id, version));
        }
        loaded
    }

    /// Reads and decodes a model's artifact; its size is its tables' and the artifact's.
    async fn load(&self, store: &Store, model: &Model) -> Result<(lector_ml::Model, usize)> {
        let bytes = store.model_artifact(model).await?;
        let artifact_bytes = bytes.len();
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
        let size = loaded.table_bytes() + artifact_bytes;
        Ok((loaded, size))
    }

    fn lookup(&self, id: i64, version: i64) -> Option<Arc<lector_ml::Model>> {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let clock = entries.clock;
        let entry = entries.by_id.get_mut(&id).filter(|e| e.version == version)?;
        entry.used = clock;
        Some(entry.model.clone())
    }

    fn insert(&self, id: i64, version: i64, model: Arc<lector_ml::Model>, bytes: usize) {
        let mut entries = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        entries.clock += 1;
        let used = entries.clock;
        entries.by_id.insert(
            id,
            Entry {
                version,
                model,
                used,
                bytes,
            },
        );
        let held = |entries: &Entries| entries.by_id.values().map(|e| e.bytes).sum::<usize>();
        while entries.by_id.len() > self.capacity || (entries.by_id.len() > 1 && held(&entries) > self.budget_bytes) {
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
        cache.insert(1, 1, model.clone(), 10);
        cache.insert(2, 1, model.clone(), 10);
        assert!(cache.lookup(1, 1).is_some());
        cache.insert(3, 1, model.clone(), 10);
        assert_eq!(cache.len(), 2);
        assert!(cache.lookup(2, 1).is_none(), "the least recently used goes");
        assert!(cache.lookup(1, 2).is_none(), "another version loads again");
        assert!(cache.lookup(1, 1).is_some());
    }

    #[test]
    fn keeps_within_its_bytes_but_always_the_newest() {
        let cache = ModelCache::with_budget(16, 100, Arc::new(BaseModels::none()));
        let model = tiny();
        cache.insert(1, 1, model.clone(), 60);
        cache.insert(2, 1, model.clone(), 30);
        assert_eq!(cache.len(), 2);
        cache.insert(3, 1, model.clone(), 30);
        assert!(
            cache.lookup(1, 1).is_none(),
            "over 100 bytes: the least recently used goes"
        );
        assert_eq!(cache.len(), 2);
        cache.insert(4, 1, model.clone(), 500);
        assert_eq!(cache.len(), 1, "a model larger than the budget is kept alone");
        assert!(cache.lookup(4, 1).is_some());
    }

    /// Many requests for a model not yet loaded decode it once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_requests_load_a_model_once() {
        let cache = Arc::new(ModelCache::new(4, Arc::new(BaseModels::none())));
        let loads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let requests = (0..8).map(|_| {
            let (cache, loads) = (cache.clone(), loads.clone());
            tokio::spawn(async move {
                cache
                    .get_or_load(7, 1, || async {
                        loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                        Ok(((*tiny()).clone(), 10))
                    })
                    .await
                    .unwrap()
            })
        });
        for request in requests.collect::<Vec<_>>() {
            request.await.unwrap();
        }
        assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(cache.loading.lock().unwrap().is_empty(), "no lock is left behind");
    }
}
