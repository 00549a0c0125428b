//! Training a model, the store's side: `train_model` checks its request and queues the model
//! with its job in one transaction; the job reads the annotated segments of its sessions and
//! writes the model's way through TRAINING to READY or FAILED.
//!
//! Every write of the job is fenced by its lease and idempotent: a second run of a job whose
//! model is already READY changes nothing. A terminal failure marks the model FAILED through the
//! job queue's one failure path (`TrainingPayload::failure`). Learning itself is `lector-ml`'s, run by
//! the job in `lector-jobs`; this module never loads a model.

use crate::jobs::{Job, Lease, NewJob, check_fence, enqueue_in, set_task};
use crate::model_changes::{Encoder, encoder_of};
use crate::models::{MODEL_SELECT, Model, artifact_key};
use crate::records::{FromAnyRow, fetch_record};
use crate::{LearntFrom, NamesRead, SessionFilter, Store, TrainingPayload, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::validate::Problems;
use lector_core::{Action, Error, ErrorCode, ModelStatus, ProjectType, Result, Scope};
use sqlx::Row;

/// The languages a model may be trained for.
pub const MODEL_LANGUAGES: [&str; 3] = ["en", "de", "ar"];

/// A `train_model` request, as the client sent it.
#[derive(Debug, Clone, Default)]
pub struct NewTraining {
    pub name: Option<String>,
    pub display_name: Option<String>,
    pub language: Option<String>,
    pub base_id: Option<i64>,
    pub kind: Option<ProjectType>,
    pub annotation_ids: Option<Vec<i64>>,
    pub trainset_annotation_ids: Option<Vec<i64>>,
    pub testset_annotation_ids: Option<Vec<i64>>,
}

/// An annotated segment of a session with that session's tags on it (class, label).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainingSegment {
    pub segment_id: i64,
    pub text: String,
    pub tags: Vec<(Option<String>, Option<String>)>,
    /// The labels tagged on parts of the segment, with each part's text (the fields of a page).
    pub labelled_parts: Vec<(String, String)>,
}

/// What a finished training writes.
#[derive(Debug, Clone)]
pub struct TrainedModel {
    /// What a LABEL model learnt of its fields from pages (JSON), if it had pages to learn from.
    pub field_model: Option<String>,
    pub artifact: Vec<u8>,
    pub score: Option<f64>,
    pub metrics: serde_json::Value,
    pub demoset: serde_json::Value,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    /// How many segments it learnt from.
    pub examples: i64,
    /// The ids of the project's classes and labels the names were read from.
    pub learnt_from: LearntFrom,
}

/// Why `base` cannot be started from by a model of `kind` in `language`, if it cannot: a BASE
/// model (a sentence encoder) must be PUBLISHED (some node has installed it; a row FAILED by an
/// older version is not) and read the language; a classifier must be of the project's type and
/// have an artifact, and the encoder it reads with (`encoder`, the start of its chain of bases,
/// which a warm start keeps) must read the language too.
fn base_problem(base: &Model, encoder: Option<&Encoder>, kind: ProjectType, language: &str) -> Option<String> {
    let id = base.id;
    match base.kind.project_type() {
        None if base.status != ModelStatus::Published => Some(format!(
            "base model {id} is not published by any server ({})",
            base.failure.as_deref().unwrap_or("its files are missing")
        )),
        None if base.language != language => Some(format!(
            "base model {id} reads {}; this model is trained for {language}",
            base.language
        )),
        None => None,
        Some(base_kind) if base_kind != kind => {
            Some(format!("model {id} is a {base_kind} model; this project trains {kind}"))
        }
        Some(_) if !base.status.predicts() || base.artifact_key.is_none() => {
            Some(format!("model {id} is {}, not ready to start from", base.status))
        }
        Some(_) => encoder.filter(|e| e.language != language).map(|e| {
            format!(
                "model {id} reads texts with base model {} (id {}), a sentence encoder for {} only, \
                 which a model started from it keeps; this model is trained for {language}",
                e.name, e.id, e.language
            )
        }),
    }
}

/// A model's name when the request gives none: the project's name and eight random hex digits,
/// the project's name shortened so that the whole is a name the request could have given.
fn default_model_name(project: &str) -> String {
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let room = lector_core::validate::MAX_NAME_CHARS - suffix.len() - 1;
    let stem: String = project.chars().take(room).collect();
    format!("{}-{suffix}", stem.trim_end())
}

/// Seed of the 80/20 split when the client names no test sessions.
const SPLIT_SEED: u64 = 20_240_601;

impl Store {
    /// Checks a training request all at once (one 422 listing every bad field; 409 for a taken
    /// name) and queues the model (QUEUED) with its job. The caller is a USER of the project's
    /// workspace.
    pub async fn start_training(&self, scope: &Scope, project_id: i64, new: NewTraining) -> Result<(Model, Job)> {
        let (project, _) = self.project_access(scope, project_id, Action::Edit).await?;
        let mut problems = Problems::default();
        let language = new.language.clone().unwrap_or_else(|| project.language.clone());
        if !MODEL_LANGUAGES.contains(&language.as_str()) {
            problems.push("language", format!("must be en, de or ar, not {language:?}"));
        }
        if let Some(kind) = new.kind.filter(|k| *k != project.kind) {
            problems.push(
                "type",
                format!("the project trains {} models, not {kind}", project.kind),
            );
        }
        let (train, test) = self.training_sessions(scope, project.id, &new, &mut problems).await?;
        if !train.is_empty() && problems.is_empty() {
            let field = match new.trainset_annotation_ids {
                Some(_) if new.annotation_ids.is_none() => "trainset_annotation_ids",
                _ => "annotation_ids",
            };
            if let Some(why) = self.too_few_to_learn(project.kind, &train).await? {
                problems.push(field, why);
            }
        }
        let mut encoder = None;
        let base = match new.base_id {
            None => None,
            Some(id) => match self.model_access(scope, id, Action::Read).await {
                Ok(base) => {
                    encoder = encoder_of(&self.pool, base.id).await?;
                    match base_problem(&base, encoder.as_ref(), project.kind, &language) {
                        Some(problem) => {
                            problems.push("base_id", problem);
                            None
                        }
                        None => Some(base),
                    }
                }
                Err(e) if e.code == ErrorCode::NotFound => {
                    problems.push("base_id", format!("no model {id} that you may read"));
                    None
                }
                Err(e) => return Err(e),
            },
        };
        let name = new
            .name
            .clone()
            .or_else(|| new.display_name.clone())
            .map(|n| n.trim().to_owned())
            .unwrap_or_else(|| default_model_name(&project.name));
        problems.name("name", &name, lector_core::validate::MAX_NAME_CHARS);
        problems.finish()?;
        self.name_is_free(project.workspace_id, &name).await?;
        let display_name = new.display_name.unwrap_or_else(|| name.clone());
        let uuid = uuid::Uuid::new_v4().to_string();
        let now = Timestamp::now().micros();
        let mut tx = self.begin_write().await?;
        crate::workspace_work::room_for_work(&mut tx, scope.user_id, &project).await?;
        // `base_id`'s foreign key holds the base model's row (key share) until the commit, so
        // `delete_model`, which locks that row before its checks, sees this training.
        let model_id: i64 = sqlx::query_scalar(
            "INSERT INTO models (uuid, workspace_id, project_id, user_id, name, display_name, type, status, \
             base_id, language, created, updated, encoder_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
             $11, $12) RETURNING id",
        )
        .bind(&uuid)
        .bind(project.workspace_id)
        .bind(project.id)
        .bind(scope.user_id)
        .bind(&name)
        .bind(&display_name)
        .bind(project.kind.as_str())
        .bind(ModelStatus::Queued.as_str())
        .bind(base.as_ref().map(|b| b.id))
        .bind(&language)
        .bind(now)
        .bind(encoder.as_ref().map(|e| e.id))
        .fetch_one(&mut *tx)
        .await
        .map_err(db_unique("a model of this name exists in the workspace"))?;
        let payload = TrainingPayload {
            model_id,
            model_name: display_name.clone(),
            train_session_ids: train,
            test_session_ids: test,
            seed: SPLIT_SEED,
        };
        let job = NewJob::for_project(&payload, scope, &project)?;
        let job = enqueue_in(&mut tx, job).await?;
        set_task(&mut tx, "models", model_id, job.id).await?;
        // Read back before the commit: once committed, a worker may claim the job and move the
        // model on, and the answer is the model as this request queued it.
        let sql = format!("{MODEL_SELECT} WHERE m.id = $2");
        let row = sqlx::query(&sql)
            .bind(scope.user_id)
            .bind(model_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        let model = Model::decode(&row)?;
        tx.commit().await.map_err(db)?;
        self.wake_workers();
        Ok((model, job))
    }

    /// The training and test sessions of a request, each checked to be of the project and to
    /// have annotated segments. Without any list: every session with annotated segments, split.
    async fn training_sessions(
        &self,
        scope: &Scope,
        project_id: i64,
        new: &NewTraining,
        problems: &mut Problems,
    ) -> Result<(Vec<i64>, Vec<i64>)> {
        let (train, test) = match (
            &new.annotation_ids,
            &new.trainset_annotation_ids,
            &new.testset_annotation_ids,
        ) {
            (Some(all), _, _) => (("annotation_ids", all.clone()), None),
            (None, Some(train), Some(test)) => (
                ("trainset_annotation_ids", train.clone()),
                Some(("testset_annotation_ids", test.clone())),
            ),
            (None, Some(_), None) => {
                problems.push(
                    "testset_annotation_ids",
                    "give it with trainset_annotation_ids, or give annotation_ids alone",
                );
                return Ok((Vec::new(), Vec::new()));
            }
            (None, None, Some(_)) => {
                problems.push(
                    "trainset_annotation_ids",
                    "give it with testset_annotation_ids, or give annotation_ids alone",
                );
                return Ok((Vec::new(), Vec::new()));
            }
            (None, None, None) => {
                let sessions = self.sessions(scope, project_id, &SessionFilter::default()).await?;
                let ids: Vec<i64> = sessions
                    .iter()
                    .filter(|s| s.annotated_count > 0)
                    .map(|s| s.id)
                    .collect();
                if ids.is_empty() {
                    problems.push(
                        "annotation_ids",
                        "the project has no labeling session with annotated segments to train on",
                    );
                }
                return Ok((ids, Vec::new()));
            }
        };
        let mut checked = Vec::new();
        for (field, ids) in std::iter::once(train).chain(test) {
            if ids.is_empty() {
                problems.push(field, "must name at least one labeling session");
            }
            for id in &ids {
                match self.session_of(project_id, *id).await {
                    Ok(session) if session.annotated_count == 0 => {
                        problems.push(field, format!("labeling session {id} has no annotated segments"))
                    }
                    Ok(_) => {}
                    Err(e) if e.code == ErrorCode::NotFound => {
                        problems.push(field, format!("the project has no labeling session {id}"))
                    }
                    Err(e) => return Err(e),
                }
            }
            checked.push(ids);
        }
        let test = if checked.len() > 1 {
            checked.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        let train = checked.pop().unwrap_or_default();
        // A model scored on what it learnt from scores as if it knew what it had only seen.
        if let Some(both) = test.iter().find(|id| train.contains(id)) {
            problems.push(
                "testset_annotation_ids",
                format!(
                    "labeling session {both} is in trainset_annotation_ids too: a model is tested on \
                     sessions it does not learn from"
                ),
            );
        }
        Ok((train, test))
    }

    /// The model a training job trains (system read for the job's project).
    pub async fn model_for_job(&self, lease: &Lease, model_id: i64) -> Result<Model> {
        let sql = format!("{MODEL_SELECT} WHERE m.id = $2 AND m.project_id = $3");
        let query = sqlx::query(&sql).bind(0_i64).bind(model_id).bind(lease.job.project_id);
        fetch_record(query, &self.pool, "model").await
    }

    /// The base model a training job starts from (the request checked that its caller may
    /// read it); a BASE model that is not PUBLISHED (FAILED by an older version) is refused as
    /// gone. Whether this worker has its files is the job's question, not the store's.
    pub async fn base_model_for_job(&self, lease: &Lease, base_id: i64) -> Result<Model> {
        let model = self
            .model_row(lease.job.user_id.unwrap_or_default(), base_id)
            .await?
            .ok_or_else(|| Error::not_found("model"))?;
        if model.kind == lector_core::ModelType::Base && model.status != ModelStatus::Published {
            return Err(Error::new(
                ErrorCode::NotFound,
                format!(
                    "base model {} is not published: run `lector base-models install` on a worker",
                    model.name
                ),
            ));
        }
        Ok(model)
    }

    /// Why the annotated segments of `sessions` cannot train a model of `kind`, if they cannot
    /// (`lector_core::labeling::too_few_to_learn`, the rule the training job holds too): checked
    /// here, a request the job would fail is refused at once.
    async fn too_few_to_learn(&self, kind: ProjectType, sessions: &[i64]) -> Result<Option<String>> {
        let sql = format!(
            "SELECT COUNT(DISTINCT t.class_id) AS classes, COUNT(DISTINCT t.label_id) AS labels \
             FROM segment_tags t JOIN segment_statuses st ON st.session_id = t.session_id AND st.segment_id = t.segment_id \
             WHERE t.session_id IN ({})",
            crate::numbered(1, sessions.len())
        );
        let row = sessions
            .iter()
            .fold(sqlx::query(&sql), |query, id| query.bind(*id))
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        let classes: i64 = row.try_get("classes").map_err(db)?;
        let labels: i64 = row.try_get("labels").map_err(db)?;
        Ok(lector_core::labeling::too_few_to_learn(
            kind,
            classes as usize,
            labels as usize,
        ))
    }

    /// Not found (the training's failure, in words its user reads) when a session a training
    /// was started from has been deleted since: the model would learn or be scored on less
    /// than was asked, without a word.
    async fn session_still_there(&self, lease: &Lease, session_id: i64) -> Result<()> {
        let found: Option<i64> = sqlx::query_scalar("SELECT id FROM sessions WHERE id = $1 AND project_id = $2")
            .bind(session_id)
            .bind(lease.job.project_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        found.map(|_| ()).ok_or_else(|| {
            Error::new(
                ErrorCode::NotFound,
                format!("labeling session {session_id} was deleted after the training was started"),
            )
        })
    }

    /// The annotated segments of a session of the job's project, with that session's tags;
    /// not found when the session was deleted. Notes in `learnt_from` the class and label ids
    /// the tags' names were read from.
    pub async fn training_segments(
        &self,
        lease: &Lease,
        session_id: i64,
        learnt_from: &mut LearntFrom,
    ) -> Result<Vec<TrainingSegment>> {
        let rows = sqlx::query(
            "SELECT st.segment_id, g.text FROM segment_statuses st JOIN segments g ON g.id = st.segment_id \
             JOIN sessions s ON s.id = st.session_id WHERE st.session_id = $1 AND s.project_id = $2 \
             ORDER BY st.segment_id",
        )
        .bind(session_id)
        .bind(lease.job.project_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        if rows.is_empty() {
            self.session_still_there(lease, session_id).await?;
        }
        let mut segments = Vec::with_capacity(rows.len());
        for row in &rows {
            segments.push(TrainingSegment {
                segment_id: row.try_get("segment_id").map_err(db)?,
                text: row.try_get("text").map_err(db)?,
                tags: Vec::new(),
                labelled_parts: Vec::new(),
            });
        }
        // The session's tags in one pass (not by chunks of segment ids), in segment order.
        let rows = sqlx::query(
            "SELECT t.segment_id, c.id AS class_id, c.name AS class_name, l.id AS label_id, l.name AS label_name, \
             t.span_start, t.text FROM segment_tags t \
             LEFT JOIN classes c ON c.id = t.class_id LEFT JOIN labels l ON l.id = t.label_id \
             WHERE t.session_id = $1 ORDER BY t.segment_id, t.id",
        )
        .bind(session_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        let mut at = 0;
        for row in &rows {
            let segment_id: i64 = row.try_get("segment_id").map_err(db)?;
            // Both lists are in segment order: walk them together.
            while at < segments.len() && segments[at].segment_id < segment_id {
                at += 1;
            }
            if let Some(segment) = segments.get_mut(at).filter(|s| s.segment_id == segment_id) {
                let class = learnt_name(row, ("class_id", "class_name"), &mut learnt_from.classes)?;
                let label = learnt_name(row, ("label_id", "label_name"), &mut learnt_from.labels)?;
                let part: Option<i64> = row.try_get("span_start").map_err(db)?;
                let text: Option<String> = row.try_get("text").map_err(db)?;
                if let (Some(label), Some(_), Some(text)) = (&label, part, text) {
                    segment.labelled_parts.push((label.clone(), text));
                }
                segment.tags.push((class, label));
            }
        }
        Ok(segments)
    }

    /// QUEUED → TRAINING (fenced); answers the model's status afterwards, so a job that runs
    /// again sees a model it already finished.
    pub async fn begin_training(&self, lease: &Lease, model_id: i64) -> Result<ModelStatus> {
        let mut tx = self.begin_write().await?;
        check_fence(&mut tx, lease).await?;
        sqlx::query("UPDATE models SET status = $1, updated = $2 WHERE id = $3 AND status = $4")
            .bind(ModelStatus::Training.as_str())
            .bind(Timestamp::now().micros())
            .bind(model_id)
            .bind(ModelStatus::Queued.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let status: String = sqlx::query_scalar("SELECT status FROM models WHERE id = $1")
            .bind(model_id)
            .fetch_one(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        crate::parse_stored(&status)
    }

    /// Records training progress in [0, 1] on the model and its job; it never decreases.
    pub async fn training_progress(&self, lease: &Lease, model_id: i64, progress: f64) -> Result<bool> {
        let progress = progress.clamp(0.0, 1.0);
        let mut tx = self.begin_write().await?;
        if check_fence(&mut tx, lease).await.is_err() {
            return Ok(false);
        }
        sqlx::query(
            "UPDATE models SET progress = CASE WHEN progress < $1 THEN $1 ELSE progress END \
             WHERE id = $2 AND status = $3",
        )
        .bind(progress)
        .bind(model_id)
        .bind(ModelStatus::Training.as_str())
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        sqlx::query("UPDATE jobs SET progress = CASE WHEN progress < $1 THEN $1 ELSE progress END WHERE id = $2")
            .bind(progress)
            .bind(lease.job.id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    /// Stores the artifact and turns the model READY with its results (fenced). A model that is
    /// no longer there and TRAINING (its project was deleted meanwhile) is 404, and the file
    /// just written is deleted again.
    pub async fn complete_training(&self, lease: &Lease, model: &Model, trained: TrainedModel) -> Result<()> {
        // The key names the job and the claim (its fencing token): the file is written before the
        // fence is checked, so a worker that lost its lease writes a file of its own, which no
        // row names and the orphan sweeper takes, never the one the model reads.
        let key = artifact_key(&model.uuid, &format!("job-{}-{}", lease.job.id, lease.token));
        self.blobs()?.put_bytes(&key, trained.artifact).await?;
        let now = Timestamp::now().micros();
        let mut tx = self.begin_write().await?;
        if let Err(lost) = check_fence(&mut tx, lease).await {
            drop(tx);
            self.discard_artifact(model, &key).await;
            return Err(lost);
        }
        let updated = sqlx::query(
            "UPDATE models SET status = $1, progress = 1, score = $2, metrics = $3, demoset = $4, classes = $5, \
             labels = $6, artifact_key = $7, version = version + 1, failure = NULL, updated = $8, finished = $8, \
             field_model = $11, examples = $12 WHERE id = $9 AND status = $10",
        )
        .bind(ModelStatus::Ready.as_str())
        .bind(trained.score)
        .bind(trained.metrics.to_string())
        .bind(trained.demoset.to_string())
        .bind(serde_json::to_string(&trained.classes).unwrap_or_default())
        .bind(serde_json::to_string(&trained.labels).unwrap_or_default())
        .bind(&key)
        .bind(now)
        .bind(model.id)
        .bind(ModelStatus::Training.as_str())
        .bind(&trained.field_model)
        .bind(trained.examples)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if updated.rows_affected() == 0 {
            drop(tx);
            self.discard_artifact(model, &key).await;
            return Err(Error::not_found("model"));
        }
        let names = (trained.classes.as_slice(), trained.labels.as_slice());
        crate::model_vocabulary::record(&mut tx, model.id, names, &trained.learnt_from).await?;
        tx.commit().await.map_err(db)
    }

    /// Deletes an artifact this claim wrote that no row will name (the model is gone, or the
    /// claim's lease was lost); a failure leaves it to the orphan sweeper.
    async fn discard_artifact(&self, model: &Model, key: &str) {
        let deleted = match self.blobs() {
            Ok(blobs) => blobs.delete(key).await,
            Err(e) => Err(e),
        };
        if let Err(e) = deleted {
            tracing::warn!(model.id = model.id, error = %e.detail, "cannot delete an artifact nothing names");
        }
    }
}

/// The name a tag's class (or label) is learnt under: the first its id was read with.
fn learnt_name(row: &sqlx::any::AnyRow, (id, name): (&str, &str), read: &mut NamesRead) -> Result<Option<String>> {
    let id: Option<i64> = row.try_get(id).map_err(db)?;
    let name: Option<String> = row.try_get(name).map_err(db)?;
    Ok(match (id, name) {
        (Some(id), Some(name)) => Some(read.learn(id, name)),
        (_, name) => name,
    })
}

#[cfg(test)]
mod tests {
    use super::default_model_name;
    use lector_core::validate::MAX_NAME_CHARS;

    /// A project named with as many characters as a name may have still trains without a name
    /// given: before, the default name was nine characters too long (422 on a field the client
    /// never sent).
    #[test]
    fn a_default_name_fits_however_long_the_project_name() {
        let longest = "é".repeat(MAX_NAME_CHARS);
        let name = default_model_name(&longest);
        assert_eq!(name.chars().count(), MAX_NAME_CHARS, "{name}");
        assert!(name.starts_with("éé"), "{name}");
        let short = default_model_name("Tickets");
        assert!(
            short.starts_with("Tickets-") && short.len() == "Tickets-".len() + 8,
            "{short}"
        );
    }
}
