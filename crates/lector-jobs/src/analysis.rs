//! The batch-analysis job: when the analysis came with its own texts (sent with the request or
//! in a file) it first fills the analysis's group as an import does, then runs the model over
//! every segment of the group's documents in batches, storing each segment's tags with their
//! confidence. The analysis goes QUEUED → ANALYZING → FINISHED (one notification, written with
//! the job's end), or FAILED through the queue's one failure path.
//!
//! A worker without the sentence encoder the model was trained with (installed per node) hands
//! the job back for one that has it (`Retry::Elsewhere`), before the analysis turns ANALYZING.
//!
//! Each batch is written in one fenced transaction that also marks its documents covered, so a
//! run after a crash goes on with the documents not covered yet and nothing is stored twice.
//! The same makes each batch a checkpoint: a worker that is stopping hands the job back there.

use crate::base_models::missing_here;
use crate::ingest::fill_group;
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use lector_core::{ErrorCode, NotificationType};
use lector_embed::BaseModels;
use lector_extract::sandbox::Sandbox;
use lector_store::{AnalysisPayload, AnalysisTag, DocumentAsRead, Lease, PendingDocument, Store};
use std::collections::HashMap;
use std::sync::Arc;

/// Documents read, predicted and written per transaction, at the most ...
pub const ANALYSIS_BATCH: i64 = 500;
/// ... and characters of their text (one document at least): 500 documents of a million
/// characters made one batch of half a billion characters and millions of tags in memory.
pub const ANALYSIS_BATCH_CHARS: i64 = 4 << 20;
/// Times one document may be found edited since a batch read it (it is read again) before the
/// attempt fails, to be retried later: someone edits it as fast as the model reads.
const MAX_REREADS: u32 = 5;

/// Runs a batch analysis, loading models with the BASE models they were trained with and
/// reading document files (PDFs, images) in `sandbox`.
#[derive(Debug)]
pub struct AnalyzeDocuments {
    pub base_models: Arc<BaseModels>,
    pub sandbox: Sandbox,
}

impl Handler for AnalyzeDocuments {
    type Payload = AnalysisPayload;

    async fn run(&self, job: JobContext<'_>, payload: AnalysisPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, stopping } = job;
        // Deleting an analysis waits until it is FINISHED or FAILED (a failed one's job has
        // ended): one gone was finished by an earlier run that died before the job ended.
        let analysis = match store.analysis_for_job(lease, payload.analysis_id).await {
            Ok(analysis) => analysis,
            Err(e) if was_deleted(&e, lease) => return Ok(deleted(lease, &payload)),
            Err(e) => return Err(JobError::from_store(e)),
        };
        // The model comes first: a worker without the sentence encoder it was trained with
        // hands the job back while the analysis is still QUEUED.
        let model = match analysis.status.as_str() {
            "QUEUED" | "ANALYZING" => Some(load_model(store, lease, &self.base_models, payload.model_id).await?),
            _ => None,
        };
        let status = store
            .begin_analysis(lease, payload.analysis_id)
            .await
            .map_err(JobError::from_store)?;
        let model = match (status.as_str(), model) {
            ("ANALYZING", Some(model)) => model,
            // An earlier run finished it and died before the job ended.
            ("FINISHED", _) => return finished(store, lease, &payload).await,
            (other, _) => return Err(JobError::fatal(format!("the analysis is {other}"))),
        };
        if let Some(import) = &payload.import {
            let group = store
                .group_status_for_job(lease, payload.group_id)
                .await
                .map_err(JobError::from_store)?;
            if group == "PROCESSING" {
                fill_group(store, lease, stopping, import, &self.sandbox).await?;
            }
        }
        analyse(store, lease, stopping, &model, &payload).await?;
        store
            .complete_analysis(lease, payload.analysis_id)
            .await
            .map_err(JobError::from_store)?;
        finished(store, lease, &payload).await
    }
}

/// Loads a model a job names, from its stored artifact (a worker without the sentence
/// encoder it was trained with hands the job back for one that has it).
pub(crate) async fn load_model(
    store: &Store,
    lease: &Lease,
    base_models: &Arc<BaseModels>,
    model_id: i64,
) -> Result<Arc<lector_ml::Model>, JobError> {
    let model = store
        .model_for_job(lease, model_id)
        .await
        .map_err(JobError::from_store)?;
    let bytes = store.model_artifact(&model).await.map_err(JobError::from_store)?;
    let base_models = base_models.clone();
    let loaded = tokio::task::spawn_blocking(move || base_models.load_model(&bytes))
        .await
        .map_err(|e| JobError::transient(format!("loading the model failed: {e}")))?
        .map_err(|e| match e {
            lector_ml::Error::MissingEncoder(_) => missing_here(format!("model {}: {e}", model.id)),
            e => JobError::fatal(format!("the model's file cannot be read: {e}")),
        })?;
    Ok(Arc::new(loaded))
}

async fn analyse(
    store: &Store,
    lease: &Lease,
    stopping: &crate::Stopping,
    model: &Arc<lector_ml::Model>,
    payload: &AnalysisPayload,
) -> Result<(), JobError> {
    let (classes, labels) = store.vocabulary_for_job(lease).await.map_err(JobError::from_store)?;
    let (total, mut done) = store
        .analysis_extent(lease, payload.analysis_id, payload.group_id)
        .await
        .map_err(JobError::from_store)?;
    let mut after = 0;
    let mut rereads = Rereads::default();
    loop {
        if stopping.requested() {
            return Err(JobError::stopped());
        }
        let batch = store
            .pending_analysis_documents(
                lease,
                payload.analysis_id,
                payload.group_id,
                after,
                (ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS),
            )
            .await
            .map_err(JobError::from_store)?;
        let Some(last) = batch.last() else { break };
        after = last.id;
        let read: Vec<DocumentAsRead> = batch.iter().map(PendingDocument::as_read).collect();
        let tags = {
            let model = model.clone();
            tokio::task::spawn_blocking(move || predict(&model, &batch))
                .await
                .map_err(|e| JobError::transient(format!("predicting failed: {e}")))?
        };
        let tags: Vec<(AnalysisTag, Option<i64>, Option<i64>)> = tags
            .into_iter()
            .map(|tag| {
                let class_id = tag.class.as_ref().and_then(|c| classes.get(c)).copied();
                let label_id = tag.label.as_ref().and_then(|l| labels.get(l)).copied();
                (tag, class_id, label_id)
            })
            .collect();
        done += read.len() as i64;
        let progress = done as f64 / total.max(1) as f64;
        let changed = store
            .store_analysis_batch(lease, payload.analysis_id, &read, &tags, progress.min(0.99))
            .await
            .map_err(|e| JobError::transient(e.detail))?;
        after = rereads.next_after(after, &changed)?;
        done -= changed.len() as i64;
        store
            .report_progress(lease, progress.min(0.99))
            .await
            .map_err(|e| JobError::transient(e.detail))?;
    }
    Ok(())
}

/// The documents a run found edited since their batch read them, and how often each.
#[derive(Debug, Default)]
struct Rereads(HashMap<i64, u32>);

impl Rereads {
    /// Where the next batch starts, once a batch that read up to `last` found `changed` edited
    /// since: at the first of them, which are read again; after `last` if none. Fails the
    /// attempt once a document has been found edited more than [`MAX_REREADS`] times.
    fn next_after(&mut self, last: i64, changed: &[i64]) -> Result<i64, JobError> {
        for id in changed {
            let times = self.0.entry(*id).or_default();
            *times += 1;
            if *times > MAX_REREADS {
                return Err(JobError::transient(format!(
                    "document {id} changed each of the {MAX_REREADS} times the model read it; \
                     the analysis tries again later"
                )));
            }
        }
        Ok(changed.iter().min().map_or(last, |first| first - 1))
    }
}

/// The model's tags of every segment of these documents.
fn predict(model: &lector_ml::Model, documents: &[PendingDocument]) -> Vec<AnalysisTag> {
    let mut workspace = lector_ml::Workspace::default();
    let mut tags = Vec::new();
    for document in documents {
        for (segment_id, text) in &document.segments {
            for tag in model.predict_with(text, &mut workspace).tags {
                tags.push(AnalysisTag {
                    document_id: document.id,
                    segment_id: *segment_id,
                    class: tag.class,
                    label: tag.label,
                    confidence: f64::from(tag.confidence),
                });
            }
        }
    }
    tags
}

/// Whether `error` says the job's analysis is gone (not that the job names no project).
fn was_deleted(error: &lector_core::Error, lease: &Lease) -> bool {
    error.code == ErrorCode::NotFound && lease.job.project_id.is_some()
}

/// The end of a job whose analysis finished and was deleted before the job ended (its worker
/// died in between): told once, as every job's end is.
fn deleted(lease: &Lease, payload: &AnalysisPayload) -> Outcome {
    Outcome {
        result: serde_json::json!({"analysis_id": payload.analysis_id, "deleted": true}),
        notice: notice_for(
            lease,
            NotificationType::Info,
            "Analysis finished",
            format!(
                "Analysis {:?} is finished; it has been deleted since.",
                payload.analysis_name
            ),
        ),
    }
}

async fn finished(store: &Store, lease: &Lease, payload: &AnalysisPayload) -> Result<Outcome, JobError> {
    let analysis = match store.analysis_for_job(lease, payload.analysis_id).await {
        Ok(analysis) => analysis,
        Err(e) if was_deleted(&e, lease) => return Ok(deleted(lease, payload)),
        Err(e) => return Err(JobError::from_store(e)),
    };
    Ok(Outcome {
        result: serde_json::json!({"analysis_id": analysis.id, "status": analysis.status, "documents": analysis.document_count}),
        notice: notice_for(
            lease,
            NotificationType::Info,
            "Analysis finished",
            format!(
                "Analysis {:?} is finished: {} documents analysed.",
                analysis.name, analysis.document_count
            ),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::{MAX_REREADS, Rereads};

    #[test]
    fn documents_edited_under_a_batch_are_read_again_a_few_times() {
        let mut rereads = Rereads::default();
        assert_eq!(
            rereads.next_after(40, &[]).unwrap(),
            40,
            "nothing edited: on after the batch"
        );
        assert_eq!(rereads.next_after(40, &[31, 17]).unwrap(), 16, "from the first edited");
        // Many documents edited once each (a busy group) never fail the run.
        for id in 100..200 {
            assert_eq!(rereads.next_after(300, &[id]).unwrap(), id - 1);
        }
        for _ in 1..MAX_REREADS {
            rereads.next_after(40, &[17]).unwrap();
        }
        let error = rereads.next_after(40, &[17]).unwrap_err();
        assert!(
            error.message.contains("document 17 changed each of the 5 times"),
            "{}",
            error.message
        );
    }
}
