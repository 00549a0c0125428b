//! The `predict_correction` job: fills a correction session (PREDICTING) with the documents
//! its model is least sure of, or the ones the request named, each segment with the model's
//! tags and their confidence.
//!
//! The model scores the candidates (the project's first [`MAX_CANDIDATES`] documents by id, or
//! the ones named) in batches on a blocking thread, since a model with a sentence encoder
//! scores about a hundred segments a second; the job reports its progress after each batch,
//! and a worker that is stopping hands it back there. Nothing is written until the choice is
//! made, in one fenced transaction, so a run after a crash scores again from the start. A
//! session deleted meanwhile ends the job quietly (looked for before each batch); documents
//! deleted or edited meanwhile lose their tags (`Store::fill_correction`).

use crate::analysis::load_model;
use crate::runner::{Handler, JobContext, JobError, Outcome, notice_for};
use lector_core::corrections::least_sure_first;
use lector_core::labeling::SessionStatus;
use lector_core::{ErrorCode, NotificationType};
use lector_embed::BaseModels;
use lector_store::{CorrectionPayload, Lease, NewCorrection, PendingDocument, PredictedSegmentTag, Session};
use std::collections::HashSet;
use std::sync::Arc;

/// Most documents scored to find the least sure ones: the project's first documents by id
/// when it has more.
pub const MAX_CANDIDATES: i64 = 5000;
/// Documents read and scored per batch, at the most ...
const BATCH: usize = 250;
/// ... and characters of their text (one document at least).
const BATCH_CHARS: i64 = 4 << 20;

/// Fills correction sessions, loading models with the BASE models they were trained with.
#[derive(Debug)]
pub struct PredictCorrection(pub Arc<BaseModels>);

impl Handler for PredictCorrection {
    type Payload = CorrectionPayload;

    async fn run(&self, job: JobContext<'_>, payload: CorrectionPayload) -> Result<Outcome, JobError> {
        let JobContext { store, lease, stopping } = job;
        let session = match store.correction_for_job(lease, &payload).await {
            Err(e) if e.code == ErrorCode::NotFound => return Ok(deleted(&payload)),
            found => found.map_err(JobError::from_store)?,
        };
        if session.status != SessionStatus::Predicting {
            // An earlier run filled it and died before the job ended.
            return Ok(filled(lease, &session));
        }
        let model = load_model(store, lease, &self.0, payload.model_id).await?;
        let candidates = store
            .correction_candidates(lease, &payload, MAX_CANDIDATES)
            .await
            .map_err(JobError::from_store)?;
        let mut scored = Scored::default();
        let mut done = 0;
        while done < candidates.len() {
            if stopping.requested() {
                return Err(JobError::stopped());
            }
            // A session deleted meanwhile is not scored to the end.
            match store.correction_for_job(lease, &payload).await {
                Err(e) if e.code == ErrorCode::NotFound => return Ok(deleted(&payload)),
                found => found.map_err(JobError::from_store)?,
            };
            let next = &candidates[done..candidates.len().min(done + BATCH)];
            let (batch, covered) = store
                .segments_for_job(lease, next, BATCH_CHARS)
                .await
                .map_err(JobError::from_store)?;
            done += covered;
            let model = model.clone();
            let sample = payload.document_ids.is_none().then_some(payload.sample_size);
            scored = tokio::task::spawn_blocking(move || scored.add(&model, &batch).within(sample))
                .await
                .map_err(|e| JobError::transient(format!("predicting failed: {e}")))?;
            let progress = done as f64 / candidates.len() as f64;
            store
                .report_progress(lease, progress.min(0.99))
                .await
                .map_err(|e| JobError::transient(e.detail))?;
        }
        if scored.least.is_empty() {
            return Err(JobError::fatal("the project has no documents to correct"));
        }
        match store.fill_correction(lease, &payload, scored.choose(&payload)).await {
            Err(e) if e.code == ErrorCode::NotFound => Ok(deleted(&payload)),
            filled_now => Ok(filled(lease, &filled_now.map_err(JobError::from_store)?)),
        }
    }
}

/// What the model made of the candidates so far: each document with its least sure
/// segment's confidence (1 for a document without segments), and every tag it predicted.
#[derive(Debug, Default)]
struct Scored {
    least: Vec<(i64, f32)>,
    predictions: Vec<PredictedSegmentTag>,
}

impl Scored {
    fn add(mut self, model: &lector_ml::Model, documents: &[PendingDocument]) -> Self {
        let mut workspace = lector_ml::Workspace::default();
        for document in documents {
            let mut least = 1.0f32;
            for (segment_id, text) in &document.segments {
                let prediction = model.predict_with(text, &mut workspace);
                least = least.min(prediction.confidence);
                for tag in prediction.tags {
                    self.predictions.push(PredictedSegmentTag {
                        document_id: document.id,
                        segment_id: *segment_id,
                        class: tag.class,
                        label: tag.label,
                        confidence: lector_core::decimal(tag.confidence),
                    });
                }
            }
            self.least.push((document.id, least));
        }
        self
    }

    /// Drops the tags of the documents that can no longer be among the `sample` least sure
    /// (`None`: the documents are named, and all are kept): those surer than the sample's
    /// surest so far. Ties stay, so [`Scored::choose`] chooses as with every tag kept, and the
    /// tags held stay near the sample's however many candidates are scored.
    fn within(mut self, sample: Option<usize>) -> Self {
        let Some(sample) = sample.filter(|&s| s > 0 && s < self.least.len()) else {
            return self;
        };
        let mut confidences: Vec<f32> = self.least.iter().map(|&(_, c)| c).collect();
        let (_, &mut bound, _) = confidences.select_nth_unstable_by(sample - 1, f32::total_cmp);
        let surer: HashSet<i64> = self
            .least
            .iter()
            .filter(|&&(_, c)| c.total_cmp(&bound).is_gt())
            .map(|&(id, _)| id)
            .collect();
        self.predictions.retain(|p| !surer.contains(&p.document_id));
        self
    }

    /// The session's documents (the ones named, in their order, or the least sure first)
    /// with the model's tags on them.
    fn choose(self, payload: &CorrectionPayload) -> NewCorrection {
        let documents = match payload.document_ids {
            Some(_) => self.least.into_iter().map(|(id, _)| id).collect(),
            None => least_sure_first(self.least, payload.seed, payload.sample_size),
        };
        let kept: HashSet<i64> = documents.iter().copied().collect();
        let predictions = self
            .predictions
            .into_iter()
            .filter(|p| kept.contains(&p.document_id))
            .collect();
        NewCorrection { documents, predictions }
    }
}

fn filled(lease: &Lease, session: &Session) -> Outcome {
    Outcome {
        result: serde_json::json!({"session_id": session.id, "status": session.status.as_str(), "documents": session.document_count}),
        notice: notice_for(
            lease,
            NotificationType::Info,
            "Correction session ready",
            format!(
                "Correction session {:?} is ready: {}.",
                session.name,
                documents(session.document_count)
            ),
        ),
    }
}

/// "1 document", "20 documents".
fn documents(count: i64) -> String {
    format!("{count} document{}", if count == 1 { "" } else { "s" })
}

fn deleted(payload: &CorrectionPayload) -> Outcome {
    Outcome {
        result: serde_json::json!({"session_id": payload.session_id, "deleted": true}),
        notice: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored() -> Scored {
        let tag = |document_id, segment_id| PredictedSegmentTag {
            document_id,
            segment_id,
            class: Some("billing".into()),
            label: None,
            confidence: 0.5,
        };
        Scored {
            least: vec![(1, 0.9), (2, 0.2), (3, 0.6)],
            predictions: vec![tag(1, 10), tag(2, 20), tag(2, 21), tag(3, 30)],
        }
    }

    fn payload(sample_size: usize, document_ids: Option<Vec<i64>>) -> CorrectionPayload {
        CorrectionPayload {
            project_id: 1,
            session_id: 1,
            model_id: 1,
            sample_size,
            seed: 0,
            document_ids,
        }
    }

    #[test]
    fn the_least_sure_are_chosen_with_their_tags_only() {
        let chosen = scored().choose(&payload(2, None));
        assert_eq!(chosen.documents, vec![2, 3]);
        let segments: Vec<i64> = chosen.predictions.iter().map(|p| p.segment_id).collect();
        assert_eq!(segments, vec![20, 21, 30]);
    }

    /// Scoring drops the tags of documents too sure to be chosen, and chooses the same.
    #[test]
    fn only_the_tags_of_possible_choices_are_kept() {
        let kept = scored().within(Some(2));
        let segments: Vec<i64> = kept.predictions.iter().map(|p| p.segment_id).collect();
        assert_eq!(segments, vec![20, 21, 30]);
        assert_eq!(kept.choose(&payload(2, None)).documents, vec![2, 3]);
        // A tie with the sample's surest is kept; named documents keep everything.
        let mut tied = scored();
        tied.least[0].1 = 0.6;
        assert_eq!(tied.within(Some(2)).predictions.len(), 4);
        assert_eq!(scored().within(None).predictions.len(), 4);
        assert_eq!(scored().within(Some(5)).predictions.len(), 4);
    }

    #[test]
    fn named_documents_keep_their_order_whatever_the_sample() {
        let chosen = scored().choose(&payload(1, Some(vec![1, 2, 3])));
        assert_eq!(chosen.documents, vec![1, 2, 3]);
        assert_eq!(chosen.predictions.len(), 4);
    }
}
