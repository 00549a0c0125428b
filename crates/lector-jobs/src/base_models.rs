//! The BASE models (sentence encoders) a node has, as the jobs and the store see them:
//! [`publish_base_models`] tells the store what this node's base-models directory holds, at
//! the start of a serving node and of a worker (the node that trains is the one whose files
//! matter), and [`missing_here`] is how a handler says that a job needs an encoder this worker
//! lacks, so the runner hands the job back for a worker that has it.
//!
//! Publishing is additive (lector-store's `base_models`): a node lacking an encoder never marks
//! it unavailable for the others. It reads no weights: that is `lector-embed`'s business, and
//! the handlers load an encoder only when a job needs it.

use crate::runner::JobError;
use lector_embed::BaseModels;
use lector_store::{InstalledBaseModel, Store};

/// Publishes the BASE models installed on this node (those it lacks are left as they are).
pub async fn publish_base_models(store: &Store, base_models: &BaseModels) -> lector_core::Result<()> {
    let installed: Vec<InstalledBaseModel> = base_models
        .installed()
        .into_iter()
        .map(|base| InstalledBaseModel {
            name: base.name,
            display_name: base.description.display_name,
            short_description: base.description.short_description,
            long_description: base.description.long_description,
            language: base.description.language,
        })
        .collect();
    if !installed.is_empty() {
        let names: Vec<&str> = installed.iter().map(|b| b.name.as_str()).collect();
        tracing::info!(base_models = ?names, "publishing the BASE models installed here");
    }
    store.sync_base_models(&installed).await
}

/// The failure of a job that needs a sentence encoder this worker cannot use (`what` says
/// which and why): handed back for another worker, and failed with this reason if none that
/// can run it takes the job in time.
pub(crate) fn missing_here(what: impl std::fmt::Display) -> JobError {
    JobError::elsewhere(format!(
        "{what}; install it with `lector base-models install` on the workers"
    ))
}
