//! Lector's background work: the worker loop over the durable job queue, the job handlers,
//! and mail delivery (a `send_mail` job: to an outbox folder, one `.eml` file per message, or
//! over SMTP).

pub mod analysis;
pub mod base_models;
pub mod cloning;
pub mod correction;
mod document_file;
pub mod file_import;
pub mod ingest;
pub mod labeled_import;
pub mod mail;
pub mod owner;
pub mod prepare;
mod progress;
pub mod runner;
pub mod shutdown;
pub mod training;
mod uploaded;
pub mod webhook;
mod writes;

pub use analysis::{ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS, AnalyzeDocuments};
pub use base_models::publish_base_models;
pub use cloning::CloneProject;
pub use correction::PredictCorrection;
pub use ingest::ImportDocuments;
pub use labeled_import::ImportLabeled;
pub use mail::{Mailer, SendMail, SendPasswordReset};
pub use prepare::{Cut, Stored, prepare_document, recut, use_given_segments};
pub use progress::Phase;
pub use runner::{Handler, JobContext, JobError, Outcome, Retry, Runner, Workers};
pub use shutdown::Stopping;
pub use training::TrainModel;
pub use webhook::DeliverWebhook;

use lector_embed::BaseModels;
use lector_extract::sandbox::Sandbox;
use std::sync::Arc;

/// The runner with every kind of job this installation handles, sending mail with `mailer`,
/// training and analysing with the BASE models of `base_models`, and reading document files
/// (PDFs, images) in `sandbox`, posting webhooks through `sources`' guard.
pub fn standard_runner(
    mailer: Arc<Mailer>,
    base_models: Arc<BaseModels>,
    sandbox: Sandbox,
    sources: Arc<lector_sources::Sources>,
) -> Runner {
    Runner::new()
        .with(ImportDocuments(sandbox.clone()))
        .with(ImportLabeled(sandbox.clone()))
        .with(CloneProject)
        .with(TrainModel(base_models.clone()))
        .with(PredictCorrection(base_models.clone()))
        .with(AnalyzeDocuments { base_models, sandbox })
        .with(SendMail(mailer.clone()))
        .with(SendPasswordReset(mailer))
        .with(DeliverWebhook(sources))
}
