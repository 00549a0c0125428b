//! Correction sessions, the store's side: a session (mode CORRECTION) over documents a model
//! chose, in the order chosen (least sure first), whose segments start with the model's tags
//! (with confidence, CORRECTING) and keep what it predicted apart, so the corrections can be
//! compared with it. Tags and marks are those of labeling sessions (`tags.rs`); a correction
//! session's tags count as training data like any session's.
//!
//! Predicting is a job's (`predict_correction`, see `lector-jobs`' `correction`): a model with
//! a sentence encoder scores about a hundred segments a second, too slow for a request over
//! thousands of documents. The request creates the session PREDICTING and queues the job in
//! one transaction; the job reads the candidates through [`Store::correction_candidates`] and
//! writes what it chose in one fenced transaction ([`Store::fill_correction`]), which gives
//! the session the status its marks imply. A run after a crash predicts again from the start.

use crate::analysis_runs::PendingDocument;
use crate::jobs::{Lease, NewJob, check_fence, enqueue_in};
use crate::models::Model;
use crate::payloads::CorrectionPayload;
use crate::session_counts::{lock_session, refresh_status};
use crate::sessions::{NewSession, Session, insert_session, session_in};
use crate::tags::SegmentAt;
use crate::{ModelVocabulary, Param, Store, Vocabulary, db};
use lector_core::labeling::{SessionMode, SessionStatus};
use lector_core::time::Timestamp;
use lector_core::{Action, Error, FieldError, Result, Scope};
use sqlx::Row;
use std::collections::{BTreeSet, HashMap, HashSet};

/// A tag the model predicted on a segment of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictedSegmentTag {
    pub document_id: i64,
    pub segment_id: i64,
    pub class: Option<String>,
    pub label: Option<String>,
    pub confidence: f64,
}

/// A correction session to start: its name, and how its documents are chosen.
#[derive(Debug, Clone)]
pub struct CorrectionPlan {
    pub name: String,
    pub description: String,
    /// How many documents it holds when none are named.
    pub sample_size: usize,
    pub seed: u64,
    /// The documents to correct, in this order; `None`: the model's least sure.
    pub document_ids: Option<Vec<i64>>,
}

/// What a correction job chose: the session's documents in order, with the model's tags.
#[derive(Debug, Clone, Default)]
pub struct NewCorrection {
    pub documents: Vec<i64>,
    pub predictions: Vec<PredictedSegmentTag>,
}

/// The (class, label) of each of a segment's tags.
type TagSet = BTreeSet<(TagKey, TagKey)>;

/// A prediction as the agreement reads it: its segment, and its class and label by id (where
/// matched) and by name.
type PredictionRow = (i64, Option<i64>, Option<String>, Option<i64>, Option<String>);

/// A tag's class (or label): the project's, by id, or a name the project has no class of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum TagKey {
    None,
    Id(i64),
    Name(String),
}

impl TagKey {
    fn of(id: Option<i64>, name: Option<String>) -> Self {
        match (id, name) {
            (Some(id), _) => TagKey::Id(id),
            (None, Some(name)) => TagKey::Name(name),
            (None, None) => TagKey::None,
        }
    }
}

/// How the corrections so far compare with the model's predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorrectionAgreement {
    /// Segments marked corrected.
    pub corrected: usize,
    /// Of those, segments whose tags are exactly those the model predicted.
    pub agreeing: usize,
}

impl Store {
    /// Creates a correction session of `model` (a model of this project; USER), PREDICTING,
    /// and queues the job that fills it. The documents `plan` names must be the project's (422
    /// naming the first that is not); with none named, the project must have documents (409).
    pub async fn start_correction(
        &self,
        scope: &Scope,
        project_id: i64,
        model: &Model,
        plan: CorrectionPlan,
    ) -> Result<Session> {
        if model.project_id != Some(project_id) {
            return Err(Error::validation(vec![FieldError::new(
                "model_id",
                "corrects a model of this project; this model belongs to another",
            )]));
        }
        let new = NewSession {
            name: plan.name,
            description: plan.description,
            ..Default::default()
        };
        let (project, vocabulary) = self.session_plan(scope, project_id, &new).await?;
        let mut tx = self.begin_write().await?;
        crate::workspace_work::room_for_work(&mut tx, scope.user_id, &project).await?;
        match &plan.document_ids {
            Some(named) => {
                crate::documents::project_documents(&mut tx, project.id, Some(named)).await?;
            }
            None => {
                let any: Option<i64> = sqlx::query_scalar("SELECT id FROM documents WHERE project_id = $1 LIMIT 1")
                    .bind(project.id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db)?;
                if any.is_none() {
                    return Err(Error::conflict("the project has no documents to correct"));
                }
            }
        }
        let session_id = insert_session(&mut tx, scope, &project, &vocabulary, &new, false).await?;
        sqlx::query("UPDATE sessions SET mode = $1, model_id = $2, status = $3 WHERE id = $4")
            .bind(SessionMode::Correction.as_str())
            .bind(model.id)
            .bind(SessionStatus::Predicting.as_str())
            .bind(session_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        // After the project's rows are locked, as every writer of the project locks them.
        crate::models::model_still_there(&mut tx, model.id).await?;
        let payload = CorrectionPayload {
            project_id: project.id,
            session_id,
            model_id: model.id,
            sample_size: plan.sample_size,
            seed: plan.seed,
            document_ids: plan.document_ids,
        };
        let job = NewJob::for_project(&payload, scope, &project)?;
        enqueue_in(&mut tx, job).await?;
        let session = session_in(&mut *tx, project.id, session_id).await?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok(session)
    }

    /// The correction session a job fills (not found once deleted).
    pub async fn correction_for_job(&self, lease: &Lease, payload: &CorrectionPayload) -> Result<Session> {
        let project_id = lease
            .job
            .project_id
            .ok_or_else(|| Error::not_found("correction session"))?;
        self.session_of(project_id, payload.session_id).await
    }

    /// The documents a correction job chooses from: the ones it names that are still the
    /// project's, in their order, or else the project's first `max` documents by id.
    pub async fn correction_candidates(
        &self,
        lease: &Lease,
        payload: &CorrectionPayload,
        max: i64,
    ) -> Result<Vec<i64>> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let Some(named) = &payload.document_ids else {
            return sqlx::query_scalar(&format!(
                "SELECT id FROM documents WHERE project_id = $1 ORDER BY id LIMIT {max}"
            ))
            .bind(project_id)
            .fetch_all(&self.pool)
            .await
            .map_err(db);
        };
        let known = self.documents_of_job(lease, named).await?;
        Ok(named.iter().copied().filter(|id| known.contains(id)).collect())
    }

    /// The first of these documents of the job's project with their segments, in the order
    /// given, holding at most `max_chars` characters of text (one document at least); and how
    /// many of `ids` that covers (those not in the project, or deleted since, are passed over).
    pub async fn segments_for_job(
        &self,
        lease: &Lease,
        ids: &[i64],
        max_chars: i64,
    ) -> Result<(Vec<PendingDocument>, usize)> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let mut tx = self.pool.begin().await.map_err(db)?;
        let select = "SELECT id, CAST(LENGTH(text) AS BIGINT) AS chars FROM documents WHERE project_id = $1 AND id";
        let rows = crate::id_lists::rows_where_in(&mut tx, select, Some(project_id), ids).await?;
        let lengths = rows
            .iter()
            .map(|row| Ok((row.try_get::<i64, _>("id")?, row.try_get::<i64, _>("chars")?)))
            .collect::<std::result::Result<HashMap<i64, i64>, sqlx::Error>>()
            .map_err(db)?;
        let (mut taken, mut chars, mut covered) = (Vec::new(), 0, 0);
        for id in ids {
            if let Some(length) = lengths.get(id) {
                if !taken.is_empty() && chars + length > max_chars {
                    break;
                }
                chars += length;
                taken.push(*id);
            }
            covered += 1;
        }
        Ok((self.with_segments(taken).await?, covered))
    }

    /// Which of these documents are the job's project's.
    async fn documents_of_job(&self, lease: &Lease, ids: &[i64]) -> Result<HashSet<i64>> {
        let project_id = lease.job.project_id.unwrap_or_default();
        let mut tx = self.pool.begin().await.map_err(db)?;
        let known = crate::documents::documents_among(&mut tx, project_id, ids).await?;
        Ok(known.into_iter().collect())
    }

    /// Gives a PREDICTING correction session the documents its job chose, with the model's
    /// tags, under the job's lease, and the status its marks imply. Documents deleted since
    /// the job read them are left out. A session an earlier run filled is answered as it is.
    pub async fn fill_correction(
        &self,
        lease: &Lease,
        payload: &CorrectionPayload,
        chosen: NewCorrection,
    ) -> Result<Session> {
        let session = self.correction_for_job(lease, payload).await?;
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        lock_session(&mut tx, session.id).await?;
        let session = session_in(&mut *tx, session.project_id, session.id).await?;
        if session.status != SessionStatus::Predicting {
            return Ok(session);
        }
        // Read under the lock: the session's classes and labels do not change while it predicts.
        let offered = self.session_vocabulary(&session).await?;
        let mut vocabulary = self.model_vocabulary_for_job(lease, payload.model_id).await?;
        // Held until the commit, as the predictions' foreign keys will be: a class deleted
        // since it was read is matched by none (its deletion waits for none of them).
        let (class_ids, label_ids) = vocabulary.ids();
        let select = "SELECT id FROM classes WHERE id";
        let classes: HashSet<i64> = crate::id_lists::ids_where_in_held(&mut tx, select, &class_ids)
            .await?
            .into_iter()
            .collect();
        let select = "SELECT id FROM labels WHERE id";
        let labels: HashSet<i64> = crate::id_lists::ids_where_in_held(&mut tx, select, &label_ids)
            .await?
            .into_iter()
            .collect();
        vocabulary.keep_only((&classes, &labels));
        // Held until the commit: an edit that would replace a document's segments under the
        // predictions written for them waits (`batch_reads.rs`).
        let select = format!(
            "SELECT id FROM documents WHERE project_id = {} AND id",
            session.project_id
        );
        let known: HashSet<i64> = crate::id_lists::ids_where_in_held(&mut tx, &select, &chosen.documents)
            .await?
            .into_iter()
            .collect();
        if known.is_empty() {
            return Err(Error::conflict("every document the model chose was deleted since"));
        }
        // A document edited while the model scored it has new segments: its old ones' tags go.
        let segments = segments_of_documents(&mut tx, &known).await?;
        let documents = chosen
            .documents
            .iter()
            .filter(|id| known.contains(id))
            .enumerate()
            .map(|(position, id)| vec![Param::Int(session.id), Param::Int(*id), Param::Int(position as i64)])
            .collect();
        crate::insert_many(
            &mut tx,
            "session_documents",
            &["session_id", "document_id", "position"],
            documents,
            "",
        )
        .await?;
        let predictions: Vec<&PredictedSegmentTag> = chosen
            .predictions
            .iter()
            .filter(|p| segments.contains(&p.segment_id))
            .collect();
        write_predictions(&mut tx, session.id, (&offered, &vocabulary), &predictions).await?;
        sqlx::query("UPDATE sessions SET status = $1 WHERE id = $2")
            .bind(SessionStatus::Created.as_str())
            .bind(session.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        refresh_status(&mut tx, session.id).await?;
        let session = session_in(&mut *tx, session.project_id, session.id).await?;
        tx.commit().await.map_err(db)?;
        Ok(session)
    }

    /// A correction session the caller may act on with `action`; a labeling session, or one
    /// of another project or workspace, is not found.
    pub async fn correction(&self, scope: &Scope, project_id: i64, id: i64, action: Action) -> Result<Session> {
        let (project, _) = self.project_access(scope, project_id, action).await?;
        let session = self
            .session_of(project.id, id)
            .await
            .map_err(|_| Error::not_found("correction session"))?;
        if session.mode != SessionMode::Correction {
            return Err(Error::not_found("correction session"));
        }
        Ok(session)
    }

    /// Sets a correction tag's status: READY (a person confirmed it) or CORRECTING.
    pub async fn confirm_correction_tag(
        &self,
        scope: &Scope,
        at: SegmentAt,
        tag_id: i64,
        status: &str,
    ) -> Result<crate::SegmentTag> {
        let session = self
            .correction(scope, at.project_id, at.session_id, Action::Annotate)
            .await?;
        let tags = self.segment_tags(scope, at).await?;
        if !tags.iter().any(|t| t.id == tag_id) {
            return Err(Error::not_found("tag"));
        }
        sqlx::query("UPDATE segment_tags SET status = $1 WHERE id = $2 AND session_id = $3")
            .bind(status)
            .bind(tag_id)
            .bind(session.id)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        self.segment_tags(scope, at)
            .await?
            .into_iter()
            .find(|t| t.id == tag_id)
            .ok_or_else(|| Error::not_found("tag"))
    }

    /// How the segments corrected so far compare with what the model predicted on them; reads
    /// the predictions and tags of those segments only, not of the whole session.
    pub async fn correction_agreement(&self, session: &Session) -> Result<CorrectionAgreement> {
        let marked: Vec<i64> = sqlx::query_scalar("SELECT segment_id FROM segment_statuses WHERE session_id = $1")
            .bind(session.id)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        // A prediction written before its ids were kept (or of a class deleted since) is
        // matched by name, in the session's project.
        let mut predicted: HashMap<i64, TagSet> = HashMap::new();
        let rows: Vec<PredictionRow> = sqlx::query_as(
            "SELECT p.segment_id, COALESCE(p.class_id, c.id), p.class_name, COALESCE(p.label_id, l.id), p.label_name \
             FROM correction_predictions p \
             LEFT JOIN classes c ON p.class_id IS NULL AND c.project_id = $2 AND c.name = p.class_name \
             LEFT JOIN labels l ON p.label_id IS NULL AND l.project_id = $2 AND l.name = p.label_name \
             WHERE p.session_id = $1 AND p.segment_id IN (SELECT segment_id FROM segment_statuses WHERE session_id = $1)",
        )
        .bind(session.id)
        .bind(session.project_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (segment, class_id, class, label_id, label) in rows {
            let tag = (TagKey::of(class_id, class), TagKey::of(label_id, label));
            predicted.entry(segment).or_default().insert(tag);
        }
        let mut current: HashMap<i64, TagSet> = HashMap::new();
        let rows: Vec<(i64, Option<i64>, Option<i64>)> = sqlx::query_as(
            "SELECT t.segment_id, t.class_id, t.label_id FROM segment_tags t WHERE t.session_id = $1 \
             AND t.segment_id IN (SELECT segment_id FROM segment_statuses WHERE session_id = $1)",
        )
        .bind(session.id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (segment, class_id, label_id) in rows {
            let tag = (TagKey::of(class_id, None), TagKey::of(label_id, None));
            current.entry(segment).or_default().insert(tag);
        }
        let agreeing = marked
            .iter()
            .filter(|s| predicted.get(s).cloned().unwrap_or_default() == current.get(s).cloned().unwrap_or_default())
            .count();
        Ok(CorrectionAgreement {
            corrected: marked.len(),
            agreeing,
        })
    }
}

/// The ids of these documents' segments.
async fn segments_of_documents(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    documents: &HashSet<i64>,
) -> Result<HashSet<i64>> {
    let documents: Vec<i64> = documents.iter().copied().collect();
    let select = "SELECT id FROM segments WHERE document_id";
    let found = crate::id_lists::ids_where_in(tx, select, None, &documents).await?;
    Ok(found.into_iter().collect())
}

/// Writes the model's tags on a correction session's segments: each shown as a tag (with its
/// confidence, CORRECTING) unless it names a class or label the session does not offer, and
/// each kept apart as predicted, by the class and label it matched (named as they are now) or
/// by the model's names where it matched none.
async fn write_predictions(
    tx: &mut sqlx::Transaction<'static, sqlx::Any>,
    session_id: i64,
    (offered, vocabulary): (&Vocabulary, &ModelVocabulary),
    predicted: &[&PredictedSegmentTag],
) -> Result<()> {
    let classes: HashSet<i64> = offered.classes.iter().map(|c| c.id).collect();
    let labels: HashSet<i64> = offered.labels.iter().map(|l| l.id).collect();
    let now = Timestamp::now().micros();
    let mut tags = Vec::new();
    let mut predictions = Vec::new();
    for p in predicted {
        let class = p.class.as_deref().and_then(|c| vocabulary.class(c));
        let label = p.label.as_deref().and_then(|l| vocabulary.label(l));
        let (class_id, label_id) = (class.map(|(id, _)| id), label.map(|(id, _)| id));
        predictions.push(vec![
            Param::Int(session_id),
            Param::Int(p.segment_id),
            Param::MaybeText(class.map(|(_, name)| name.to_owned()).or_else(|| p.class.clone())),
            Param::MaybeText(label.map(|(_, name)| name.to_owned()).or_else(|| p.label.clone())),
            Param::Float(p.confidence),
            Param::MaybeInt(class_id),
            Param::MaybeInt(label_id),
        ]);
        let offered =
            |named: bool, id: Option<i64>, ids: &HashSet<i64>| !named || id.is_some_and(|id| ids.contains(&id));
        if !offered(p.class.is_some(), class_id, &classes) || !offered(p.label.is_some(), label_id, &labels) {
            continue;
        }
        tags.push(vec![
            Param::Int(session_id),
            Param::Int(p.segment_id),
            Param::MaybeInt(class_id),
            Param::MaybeInt(label_id),
            Param::Int(now),
            Param::Float(p.confidence),
            Param::Text("CORRECTING".into()),
        ]);
    }
    let tag_columns = [
        "session_id",
        "segment_id",
        "class_id",
        "label_id",
        "created",
        "confidence",
        "status",
    ];
    crate::insert_many(tx, "segment_tags", &tag_columns, tags, "").await?;
    crate::insert_many(
        tx,
        "correction_predictions",
        &[
            "session_id",
            "segment_id",
            "class_name",
            "label_name",
            "confidence",
            "class_id",
            "label_id",
        ],
        predictions,
        "",
    )
    .await?;
    Ok(())
}
