//! Lector's background work: the worker loop over the durable job queue, the job handlers,
//! and mail delivery (a `send_mail` job: to an outbox folder, one `.eml` file per message, or
//! over SMTP).

pub mod analysis;
pub mod cloning;
pub mod file_import;
pub mod ingest;
pub mod labeled_import;
pub mod mail;
pub mod owner;
pub mod prepare;
pub mod runner;
pub mod training;

pub use analysis::AnalyzeDocuments;
pub use cloning::CloneProject;
pub use ingest::ImportDocuments;
pub use labeled_import::ImportLabeled;
pub use mail::{Mailer, SendMail};
pub use prepare::prepare_document;
pub use runner::{Handler, HandlerFuture, JobError, Outcome, Runner};
pub use training::TrainModel;

use lector_embed::BaseModels;
use std::sync::Arc;

/// The runner with every kind of job this installation handles, sending mail with `mailer`
/// and training and analysing with the BASE models of `base_models`.
pub fn standard_runner(mailer: Arc<Mailer>, base_models: Arc<BaseModels>) -> Runner {
    Runner::new()
        .with(ImportDocuments)
        .with(ImportLabeled)
        .with(CloneProject)
        .with(TrainModel(base_models.clone()))
        .with(AnalyzeDocuments(base_models))
        .with(SendMail(mailer))
}
