//! Correction sessions, the store's side: a session (mode CORRECTION) over documents a model
//! chose, in the order chosen (least sure first), whose segments start with the model's tags
//! (with confidence, CORRECTING) and keep what it predicted apart, so the corrections can be
//! compared with it. Tags and marks are those of labeling sessions (`tags.rs`); a correction
//! session's tags count as training data like any session's.

use crate::models::Model;
use crate::session_counts::refresh_status;
use crate::sessions::{NewSession, Session, insert_session};
use crate::tags::SegmentAt;
use crate::{Param, Store, db};
use lector_core::labeling::SessionMode;
use lector_core::time::Timestamp;
use lector_core::{Action, Error, FieldError, Result, Scope};
use std::collections::{BTreeSet, HashMap};

/// A tag the model predicted on a segment.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictedSegmentTag {
    pub segment_id: i64,
    pub class: Option<String>,
    pub label: Option<String>,
    pub confidence: f64,
}

/// A correction session to create: its documents in order, with the model's tags.
#[derive(Debug, Clone)]
pub struct NewCorrection {
    pub name: String,
    pub description: String,
    pub documents: Vec<i64>,
    pub predictions: Vec<PredictedSegmentTag>,
}

/// The (class, label) names of a segment's tags.
type TagSet = BTreeSet<(Option<String>, Option<String>)>;

/// How the corrections so far compare with the model's predictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CorrectionAgreement {
    /// Segments marked corrected.
    pub corrected: usize,
    /// Of those, segments whose tags are exactly those the model predicted.
    pub agreeing: usize,
}

impl Store {
    /// Creates a correction session of `model` (a model of this project) over documents of
    /// the project, with the model's tags on their segments (USER).
    pub async fn create_correction(
        &self,
        scope: &Scope,
        project_id: i64,
        model: &Model,
        new: NewCorrection,
    ) -> Result<Session> {
        if model.project_id != Some(project_id) {
            return Err(Error::validation(vec![FieldError::new(
                "model_id",
                "corrects a model of this project; this model belongs to another",
            )]));
        }
        let plan = NewSession {
            name: new.name.clone(),
            description: new.description.clone(),
            ..Default::default()
        };
        let (project, vocabulary) = self.session_plan(scope, project_id, &plan).await?;
        let classes: HashMap<&str, i64> = vocabulary.classes.iter().map(|c| (c.name.as_str(), c.id)).collect();
        let labels: HashMap<&str, i64> = vocabulary.labels.iter().map(|l| (l.name.as_str(), l.id)).collect();
        let mut tx = self.begin_write().await?;
        let known: std::collections::HashSet<i64> =
            crate::documents::project_documents(&mut tx, project.id, Some(&new.documents))
                .await?
                .into_iter()
                .collect();
        if let Some(missing) = new.documents.iter().find(|id| !known.contains(id)) {
            return Err(Error::validation(vec![FieldError::new(
                "document_ids",
                format!("document {missing} is not a document of this project"),
            )]));
        }
        let session_id = insert_session(&mut tx, scope, &project, &vocabulary, &plan, false).await?;
        sqlx::query("UPDATE sessions SET mode = $1, model_id = $2 WHERE id = $3")
            .bind(SessionMode::Correction.as_str())
            .bind(model.id)
            .bind(session_id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let documents = new
            .documents
            .iter()
            .enumerate()
            .map(|(position, id)| vec![Param::Int(session_id), Param::Int(*id), Param::Int(position as i64)])
            .collect();
        crate::insert_many(
            &mut tx,
            "session_documents",
            &["session_id", "document_id", "position"],
            documents,
            "",
        )
        .await?;
        let now = Timestamp::now().micros();
        let mut tags = Vec::new();
        let mut predictions = Vec::new();
        for p in &new.predictions {
            let class_id = p.class.as_deref().and_then(|c| classes.get(c)).copied();
            let label_id = p.label.as_deref().and_then(|l| labels.get(l)).copied();
            predictions.push(vec![
                Param::Int(session_id),
                Param::Int(p.segment_id),
                Param::MaybeText(p.class.clone()),
                Param::MaybeText(p.label.clone()),
                Param::Float(p.confidence),
            ]);
            // A tag naming a class or label the session does not offer is not shown.
            if (p.class.is_some() && class_id.is_none()) || (p.label.is_some() && label_id.is_none()) {
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
        crate::insert_many(
            &mut tx,
            "segment_tags",
            &[
                "session_id",
                "segment_id",
                "class_id",
                "label_id",
                "created",
                "confidence",
                "status",
            ],
            tags,
            "",
        )
        .await?;
        crate::insert_many(
            &mut tx,
            "correction_predictions",
            &["session_id", "segment_id", "class_name", "label_name", "confidence"],
            predictions,
            "",
        )
        .await?;
        refresh_status(&mut tx, session_id).await?;
        tx.commit().await.map_err(db)?;
        self.session_of(project.id, session_id).await
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

    /// How the segments corrected so far compare with what the model predicted on them.
    pub async fn correction_agreement(&self, session: &Session) -> Result<CorrectionAgreement> {
        let marked: Vec<i64> = sqlx::query_scalar("SELECT segment_id FROM segment_statuses WHERE session_id = $1")
            .bind(session.id)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut predicted: HashMap<i64, TagSet> = HashMap::new();
        let rows: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT segment_id, class_name, label_name FROM correction_predictions WHERE session_id = $1",
        )
        .bind(session.id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (segment, class, label) in rows {
            predicted.entry(segment).or_default().insert((class, label));
        }
        let mut current: HashMap<i64, TagSet> = HashMap::new();
        let rows: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT t.segment_id, c.name, l.name FROM segment_tags t LEFT JOIN classes c ON c.id = t.class_id \
             LEFT JOIN labels l ON l.id = t.label_id WHERE t.session_id = $1",
        )
        .bind(session.id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        for (segment, class, label) in rows {
            current.entry(segment).or_default().insert((class, label));
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
