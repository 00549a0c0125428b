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
use crate::progress::Phase;
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use lector_core::{ErrorCode, NotificationType};
use lector_embed::BaseModels;
use lector_extract::sandbox::Sandbox;
use lector_store::{AnalysisPayload, AnalysisTag, DocumentAsRead, Lease, ModelVocabulary, PendingDocument, Store};
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
/// Passes from the start a run makes at the end of its group ([`Cursor::sweep`]); documents
/// moved into the group as fast as it reads may still be left out, as if added after the end.
const MAX_SWEEPS: u32 = 3;
/// The share of an analysis's progress that importing its texts takes, when it brings them (the
/// model's pass over them takes the rest).
const IMPORT_SHARE: f64 = 0.25;

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
            ("FINISHED", _) => return finished(store, lease, &payload, 0).await,
            (other, _) => return Err(JobError::fatal(format!("the analysis is {other}"))),
        };
        // Rows of its file left out for an empty text, said in the notice as an import says
        // them (known to the run that filled the group).
        let mut blank = 0;
        let mut model_phase = Phase::WHOLE;
        if let Some(import) = &payload.import {
            let group = store
                .group_status_for_job(lease, payload.group_id)
                .await
                .map_err(JobError::from_store)?;
            if group == "PROCESSING" {
                let phase = Phase::new(0.0, IMPORT_SHARE);
                blank = fill_group(store, lease, stopping, (import, phase), &self.sandbox)
                    .await?
                    .blank;
            }
            model_phase = Phase::new(IMPORT_SHARE, 1.0);
        }
        analyse(store, lease, stopping, (&model, model_phase), &payload).await?;
        store
            .complete_analysis(lease, payload.analysis_id)
            .await
            .map_err(JobError::from_store)?;
        finished(store, lease, &payload, blank).await
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
    (model, phase): (&Arc<lector_ml::Model>, Phase),
    payload: &AnalysisPayload,
) -> Result<(), JobError> {
    let vocabulary = store
        .model_vocabulary_for_job(lease, payload.model_id)
        .await
        .map_err(JobError::from_store)?;
    let (total, mut done) = store
        .analysis_extent(lease, payload.analysis_id, payload.group_id)
        .await
        .map_err(JobError::from_store)?;
    let mut cursor = Cursor::default();
    loop {
        if stopping.requested() {
            return Err(JobError::stopped());
        }
        let batch = store
            .pending_analysis_documents(
                lease,
                payload.analysis_id,
                payload.group_id,
                cursor.after,
                (ANALYSIS_BATCH, ANALYSIS_BATCH_CHARS),
            )
            .await
            .map_err(JobError::from_store)?;
        let Some(last) = batch.last() else {
            if cursor.sweep() {
                continue;
            }
            break;
        };
        let last = last.id;
        let read: Vec<DocumentAsRead> = batch.iter().map(PendingDocument::as_read).collect();
        let tags = {
            let model = model.clone();
            tokio::task::spawn_blocking(move || predict(&model, &batch))
                .await
                .map_err(|e| JobError::transient(format!("predicting failed: {e}")))?
        };
        let tags: Vec<(AnalysisTag, Option<i64>, Option<i64>)> =
            tags.into_iter().map(|tag| in_project(tag, &vocabulary)).collect();
        done += read.len() as i64;
        // The analysis's own progress is its documents'; its task's counts the import too.
        let progress = done as f64 / total.max(1) as f64;
        let changed = store
            .store_analysis_batch(lease, payload.analysis_id, &read, &tags, progress.min(0.99))
            .await
            .map_err(|e| JobError::transient(e.detail))?;
        cursor.written(last, &changed)?;
        done -= changed.len() as i64;
        store
            .report_progress(lease, phase.of_job(progress).min(0.99))
            .await
            .map_err(|e| JobError::transient(e.detail))?;
    }
    Ok(())
}

/// Where a run reads next in its group: the documents above a document id that the analysis
/// does not cover yet, in batches, in the order of their ids.
#[derive(Debug, Default)]
struct Cursor {
    /// The next batch reads the documents above this id.
    after: i64,
    /// Passes from the start made at the end of the group ([`Cursor::sweep`]).
    sweeps: u32,
    /// The documents found edited since their batch read them, and how often each.
    rereads: HashMap<i64, u32>,
}

impl Cursor {
    /// After a batch that read up to document `last` and found `changed` edited since: the
    /// next reads from the first of those (read again), or after `last` if none. Fails the
    /// attempt once a document has been found edited more than [`MAX_REREADS`] times.
    fn written(&mut self, last: i64, changed: &[i64]) -> Result<(), JobError> {
        for id in changed {
            let times = self.rereads.entry(*id).or_default();
            *times += 1;
            if *times > MAX_REREADS {
                return Err(JobError::transient(format!(
                    "document {id} was edited each of the {times} times the model read it; \
                     the analysis tries again later"
                )));
            }
        }
        self.after = changed.iter().min().map_or(last, |first| first - 1);
        Ok(())
    }

    /// At the end of the group: whether to read it again from the start, for documents moved
    /// into the group meanwhile whose ids are below where the run had read (at most
    /// [`MAX_SWEEPS`] times; a pass from the start that finds none ends the run).
    fn sweep(&mut self) -> bool {
        if self.after == 0 || self.sweeps >= MAX_SWEEPS {
            return false;
        }
        self.sweeps += 1;
        self.after = 0;
        true
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

/// A tag of the model as the project knows it: with the class and label it matched, named as
/// they are named now (a tag of a class the project does not have keeps the model's name).
fn in_project(mut tag: AnalysisTag, vocabulary: &ModelVocabulary) -> (AnalysisTag, Option<i64>, Option<i64>) {
    let class = tag.class.as_deref().and_then(|c| vocabulary.class(c));
    let label = tag.label.as_deref().and_then(|l| vocabulary.label(l));
    let ids = (class.map(|(id, _)| id), label.map(|(id, _)| id));
    if let Some((_, name)) = class {
        tag.class = Some(name.to_owned());
    }
    if let Some((_, name)) = label {
        tag.label = Some(name.to_owned());
    }
    (tag, ids.0, ids.1)
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

async fn finished(store: &Store, lease: &Lease, payload: &AnalysisPayload, blank: u64) -> Result<Outcome, JobError> {
    let analysis = match store.analysis_for_job(lease, payload.analysis_id).await {
        Ok(analysis) => analysis,
        Err(e) if was_deleted(&e, lease) => return Ok(deleted(lease, payload)),
        Err(e) => return Err(JobError::from_store(e)),
    };
    let analysed = format!(
        "Analysis {:?} is finished: {} documents analysed",
        analysis.name, analysis.document_count
    );
    let (kind, text) = match blank {
        0 => (NotificationType::Info, format!("{analysed}.")),
        n => (
            NotificationType::Warning,
            format!(
                "{analysed}; {} with an empty text left out.",
                crate::ingest::rows_were(n)
            ),
        ),
    };
    Ok(Outcome {
        result: serde_json::json!({"analysis_id": analysis.id, "status": analysis.status,
            "documents": analysis.document_count, "left_out": blank}),
        notice: notice_for(lease, kind, "Analysis finished", text),
    })
}

#[cfg(test)]
mod tests {
    use super::{Cursor, MAX_REREADS, MAX_SWEEPS};

    #[test]
    fn documents_edited_under_a_batch_are_read_again_a_few_times() {
        let mut cursor = Cursor::default();
        cursor.written(40, &[]).unwrap();
        assert_eq!(cursor.after, 40, "nothing edited: on after the batch");
        cursor.written(80, &[61, 47]).unwrap();
        assert_eq!(cursor.after, 46, "from the first edited");
        // Many documents edited once each (a busy group) never fail the run.
        for id in 100..200 {
            cursor.written(300, &[id]).unwrap();
            assert_eq!(cursor.after, id - 1);
        }
        for _ in 1..MAX_REREADS {
            cursor.written(80, &[47]).unwrap();
        }
        let error = cursor.written(80, &[47]).unwrap_err();
        assert!(
            error.message.contains("document 47 was edited each of the 6 times"),
            "{}",
            error.message
        );
    }

    /// At the end of the group the run reads it again from the start (documents moved in below
    /// where it had read), until a pass from the start finds none, and at most three times.
    #[test]
    fn the_end_of_the_group_is_swept_from_the_start() {
        let mut cursor = Cursor::default();
        assert!(!cursor.sweep(), "an empty group: nothing to sweep");
        cursor.written(40, &[]).unwrap();
        assert!(cursor.sweep());
        assert_eq!(cursor.after, 0);
        assert!(!cursor.sweep(), "the sweep from the start found nothing: the end");
        let mut busy = Cursor::default();
        for _ in 0..MAX_SWEEPS {
            busy.written(40, &[]).unwrap();
            assert!(busy.sweep(), "each sweep found documents moved in");
        }
        busy.written(40, &[]).unwrap();
        assert!(!busy.sweep(), "at most {MAX_SWEEPS} sweeps");
    }
}
