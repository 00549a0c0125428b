//! Models: the classifiers of a workspace, trained from a project's labeling sessions or
//! uploaded as an artifact. This module keeps their records, who may see them, their stars and
//! their artifacts; training (the job's side) is in `training`, uploads in `model_uploads`.
//!
//! A model is read by the members of its workspace, and by every user once it is PUBLISHED;
//! nothing else crosses a workspace. The artifact itself lives in the blob store under
//! `artifact_key`; `version` grows whenever it changes, so a node that caches loaded models
//! knows when to load one again. This module does not load or run models.

use crate::records::{FromAnyRow, fetch_records, flag};
use crate::{Param, Store, db, numbered};
use lector_core::labeling::SessionStatus;
use lector_core::policy::WorkspaceFacts;
use lector_core::time::Timestamp;
use lector_core::{Action, Error, ErrorCode, ModelStatus, ModelType, Result, Scope};
use sqlx::Row;
use sqlx::any::AnyRow;

/// A model as the store knows it, with the caller's star.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub id: i64,
    pub uuid: String,
    pub workspace_id: i64,
    pub project_id: Option<i64>,
    pub user_id: Option<i64>,
    /// The e-mail address of the user who trained or uploaded it.
    pub owner: Option<String>,
    pub name: String,
    pub display_name: String,
    pub short_description: String,
    pub long_description: String,
    pub kind: ModelType,
    pub status: ModelStatus,
    pub progress: f64,
    pub score: Option<f64>,
    /// How many segments it learnt from, where recorded (its artifact knows it too).
    pub examples: Option<i64>,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    pub base_id: Option<i64>,
    /// The name of the base model.
    pub base: Option<String>,
    pub language: String,
    pub artifact_key: Option<String>,
    pub version: i64,
    pub collection_id: Option<i64>,
    pub task_id: Option<i64>,
    /// Why training failed, in words a person can act on.
    pub failure: Option<String>,
    pub created: Timestamp,
    pub updated: Timestamp,
    pub finished: Option<Timestamp>,
    pub starred: bool,
    workspace: WorkspaceFacts,
}

/// The statuses of an analysis whose job is still to work with its model.
pub(crate) const ANALYSIS_RUNNING: [&str; 2] = ["QUEUED", "ANALYZING"];

/// Every read binds the caller's user id as `$1` (for `starred`). What training found (metrics
/// and demoset, up to megabytes of JSON) is read only where it is shown: [`Store::model_evaluation`].
pub(crate) const MODEL_SELECT: &str = "SELECT m.id, m.uuid, m.workspace_id, m.project_id, m.user_id, \
     u.email AS owner, m.name, m.display_name, m.short_description, m.long_description, m.type, m.status, \
     m.progress, m.score, m.examples, m.classes, m.labels, m.base_id, b.name AS base_name, m.language, \
     m.artifact_key, m.version, m.collection_id, m.task_id, m.failure, m.created, m.updated, m.finished, \
     (SELECT COUNT(*) FROM model_stars ms WHERE ms.model_id = m.id AND ms.user_id = $1) AS starred, \
     w.is_active, w.is_read_only \
     FROM models m JOIN workspaces w ON w.id = m.workspace_id LEFT JOIN users u ON u.id = m.user_id \
     LEFT JOIN models b ON b.id = m.base_id";

impl FromAnyRow for Model {
    fn from_row(row: &AnyRow) -> Result<Self, sqlx::Error> {
        let decode = |e: String| sqlx::Error::Decode(e.into());
        let names = |column: &str| -> Result<Vec<String>, sqlx::Error> {
            let text: String = row.try_get(column)?;
            serde_json::from_str(&text).map_err(|e| sqlx::Error::Decode(e.into()))
        };
        let kind: String = row.try_get("type")?;
        let status: String = row.try_get("status")?;
        let workspace_id: i64 = row.try_get("workspace_id")?;
        Ok(Self {
            id: row.try_get("id")?,
            uuid: row.try_get("uuid")?,
            workspace_id,
            project_id: row.try_get("project_id")?,
            user_id: row.try_get("user_id")?,
            owner: row.try_get("owner")?,
            name: row.try_get("name")?,
            display_name: row.try_get("display_name")?,
            short_description: row.try_get("short_description")?,
            long_description: row.try_get("long_description")?,
            kind: kind.parse().map_err(decode)?,
            status: status.parse().map_err(decode)?,
            progress: row.try_get("progress")?,
            score: row.try_get("score")?,
            examples: row.try_get("examples")?,
            classes: names("classes")?,
            labels: names("labels")?,
            base_id: row.try_get("base_id")?,
            base: row.try_get("base_name")?,
            language: row.try_get("language")?,
            artifact_key: row.try_get("artifact_key")?,
            version: row.try_get("version")?,
            collection_id: row.try_get("collection_id")?,
            task_id: row.try_get("task_id")?,
            failure: row.try_get("failure")?,
            created: Timestamp(row.try_get("created")?),
            updated: Timestamp(row.try_get("updated")?),
            finished: row.try_get::<Option<i64>, _>("finished")?.map(Timestamp),
            starred: row.try_get::<i64, _>("starred")? > 0,
            workspace: WorkspaceFacts {
                id: workspace_id,
                is_active: flag(row, "is_active")?,
                is_read_only: flag(row, "is_read_only")?,
            },
        })
    }
}

/// What `list_models` filters on; `None` leaves a filter out.
#[derive(Debug, Clone, Default)]
pub struct ModelFilter {
    /// Only this workspace's models (list_workspace_models).
    pub workspace_id: Option<i64>,
    pub collection_id: Option<i64>,
    /// true: only PUBLISHED models; false: only the caller's workspaces' unpublished ones.
    pub public: Option<bool>,
    /// true: only models the caller starred; false: only the others.
    pub starred: Option<bool>,
    /// A part of the name or display name, any case.
    pub search: Option<String>,
    /// One type; without it, the four project types (BASE models only when asked for).
    pub kind: Option<ModelType>,
    pub exclude_id: Option<i64>,
}

/// Model fields a MANAGER changes (`Store::update_model`, in `model_changes`); `None` leaves a
/// field as it is.
#[derive(Debug, Clone, Default)]
pub struct ModelChanges {
    pub name: Option<String>,
    pub display_name: Option<String>,
    pub short_description: Option<String>,
    pub long_description: Option<String>,
    pub language: Option<String>,
    /// `Some(None)` takes the model out of its collection.
    pub collection_id: Option<Option<i64>>,
}

/// 409 for a BASE model: its files are installed on each server (`lector base-models
/// install`), never uploaded, downloaded, changed or deleted through the API.
pub(crate) fn refuse_base(model: &Model) -> Result<()> {
    if model.kind == ModelType::Base {
        return Err(Error::conflict(format!(
            "model {} is a BASE model: its files are installed on each server with `lector base-models install`, \
             not downloaded, changed or deleted through the API",
            model.id
        )));
    }
    Ok(())
}

/// The 409 detail of a FAILED model, which never becomes READY: that it failed, why (its
/// stored `failure`), what that means (`so_it`) and what to do instead.
fn failed(model: &Model, so_it: &str) -> String {
    format!(
        "model {} failed to train ({}), so it {so_it}: train a new model",
        model.id,
        model.failure.as_deref().unwrap_or("no reason was recorded")
    )
}

/// The blob key of a model artifact written by `origin` (a job id, or `upload`).
pub(crate) fn artifact_key(uuid: &str, origin: &str) -> String {
    format!("models/{uuid}/{origin}.lector-model")
}

impl Store {
    /// A model with the caller's star, or `None`; no access check (callers check).
    pub(crate) async fn model_row(&self, user_id: i64, model_id: i64) -> Result<Option<Model>> {
        let sql = format!("{MODEL_SELECT} WHERE m.id = $2");
        let row = sqlx::query(&sql)
            .bind(user_id)
            .bind(model_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.as_ref().map(Model::decode).transpose()
    }

    /// Resolves a model and checks the caller may perform `action` on it. Anyone reads a
    /// PUBLISHED model; otherwise the policy of its workspace decides, and a model the caller
    /// cannot see answers 404.
    pub async fn model_access(&self, scope: &Scope, model_id: i64, action: Action) -> Result<Model> {
        let model = self
            .model_row(scope.user_id, model_id)
            .await?
            .ok_or_else(|| Error::not_found("model"))?;
        if action == Action::Read && model.status == ModelStatus::Published {
            return Ok(model);
        }
        if model.status == ModelStatus::Published && !scope.can_see(model.workspace) {
            return Err(Error::forbidden(
                "a published model is changed only in its own workspace",
            ));
        }
        scope.authorize(model.workspace, action).map_err(|e| match e.code {
            ErrorCode::NotFound => Error::not_found("model"),
            _ => e,
        })?;
        Ok(model)
    }

    /// A model the caller may analyse with in a write (a batch analysis, a correction session,
    /// an extraction): one of a workspace where the caller is a USER or more, or a PUBLISHED one
    /// for a caller who is a USER somewhere. A model without a usable artifact answers 409
    /// naming its status (and, for a FAILED one, why it failed).
    pub async fn model_for_analysis(&self, scope: &Scope, model_id: i64) -> Result<Model> {
        self.model_to_use(scope, model_id, Action::Edit).await
    }

    /// [`Store::model_for_analysis`] for an analysis that stores nothing (`analyze`): a USER
    /// of a read-only workspace uses its models too (`Action::Use`).
    pub async fn model_for_ad_hoc_analysis(&self, scope: &Scope, model_id: i64) -> Result<Model> {
        self.model_to_use(scope, model_id, Action::Use).await
    }

    async fn model_to_use(&self, scope: &Scope, model_id: i64, action: Action) -> Result<Model> {
        let model = self.model_access(scope, model_id, Action::Read).await?;
        // A PUBLISHED model is every USER's, its own workspace's VIEWERs' too.
        if scope.can_see(model.workspace) && model.status != ModelStatus::Published {
            scope.authorize(model.workspace, action)?;
        } else {
            scope.may_somewhere(action)?;
        }
        if model.kind == ModelType::Base {
            return Err(Error::conflict(format!(
                "model {} is a BASE model, a sentence encoder that tags nothing: train a model with \
                 base_id {} and analyse with that",
                model.id, model.id
            )));
        }
        if model.status == ModelStatus::Failed {
            return Err(Error::conflict(failed(&model, "analyses nothing")));
        }
        if !model.status.predicts() || model.artifact_key.is_none() {
            return Err(Error::conflict(format!(
                "model {} is {}; it analyses once it is READY",
                model.id, model.status
            )));
        }
        Ok(model)
    }

    /// What `model` (read through the caller's scope) learnt of its fields from pages, if it
    /// learnt any (JSON, `lector_extract::learned::FieldModel`).
    pub async fn field_model(&self, model: &Model) -> Result<Option<String>> {
        let row = sqlx::query("SELECT field_model FROM models WHERE id = $1")
            .bind(model.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        match row {
            Some(row) => row.try_get("field_model").map_err(db),
            None => Ok(None),
        }
    }

    /// What training found for `model` (read through the caller's scope): its test metrics and
    /// its demoset, as stored (JSON; `None`, or JSON null, when it had nothing to score on).
    pub async fn model_evaluation(
        &self,
        model: &Model,
    ) -> Result<(Option<serde_json::Value>, Option<serde_json::Value>)> {
        let row = sqlx::query("SELECT metrics, demoset FROM models WHERE id = $1")
            .bind(model.id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::not_found("model"))?;
        let json = |column: &str| -> Result<Option<serde_json::Value>> {
            let text: Option<String> = row.try_get(column).map_err(db)?;
            text.map(|t| serde_json::from_str(&t).map_err(|e| db(sqlx::Error::Decode(e.into()))))
                .transpose()
        };
        Ok((json("metrics")?, json("demoset")?))
    }

    /// A model of a project, checked like [`Store::model_access`]; another project's answers 404.
    pub async fn project_model(&self, scope: &Scope, project_id: i64, model_id: i64, action: Action) -> Result<Model> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        let model = self.model_access(scope, model_id, action).await?;
        if model.project_id != Some(project.id) {
            return Err(Error::not_found("model"));
        }
        Ok(model)
    }

    /// A model of a workspace by id or name (download_workspace_model): a number is an id when
    /// the workspace has a model of that id, else a name, so a model named "2024" is found too.
    /// Of several models of one name, the newest.
    pub async fn workspace_model(
        &self,
        scope: &Scope,
        workspace: &crate::WorkspaceRef,
        model: &str,
        action: Action,
    ) -> Result<Model> {
        let (workspace, _) = self.workspace_access(scope, workspace, Action::Read).await?;
        let by_id: Option<i64> = match model.parse::<i64>() {
            Ok(id) => sqlx::query_scalar("SELECT id FROM models WHERE workspace_id = $1 AND id = $2")
                .bind(workspace.id)
                .bind(id)
                .fetch_optional(&self.pool)
                .await
                .map_err(db)?,
            Err(_) => None,
        };
        let id = match by_id {
            Some(id) => Some(id),
            None => sqlx::query_scalar(
                "SELECT id FROM models WHERE workspace_id = $1 AND name = $2 ORDER BY id DESC LIMIT 1",
            )
            .bind(workspace.id)
            .bind(model)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?,
        };
        self.model_access(scope, id.ok_or_else(|| Error::not_found("model"))?, action)
            .await
    }

    /// A page of the models the caller may see (its workspaces' and every PUBLISHED one), newest
    /// first; answers the page and whether more follow.
    pub async fn models(
        &self,
        scope: &Scope,
        filter: &ModelFilter,
        offset: i64,
        limit: i64,
    ) -> Result<(Vec<Model>, bool)> {
        let mut params = vec![Param::Int(scope.user_id)];
        let mut conditions = Vec::new();
        let mine = |params: &mut Vec<Param>| -> String {
            if scope.is_superuser {
                return "1 = 1".into();
            }
            let ids: Vec<i64> = scope.workspaces.iter().map(|w| w.workspace_id).collect();
            if ids.is_empty() {
                return "1 = 0".into();
            }
            let places = numbered(params.len() + 1, ids.len());
            params.extend(ids.into_iter().map(Param::Int));
            format!("(m.workspace_id IN ({places}) AND w.is_active = TRUE)")
        };
        let published = format!("m.status = '{}'", ModelStatus::Published.as_str());
        match filter.public {
            Some(true) => conditions.push(published),
            Some(false) => {
                let mine = mine(&mut params);
                conditions.push(format!("{mine} AND m.status <> '{}'", ModelStatus::Published.as_str()));
            }
            None => {
                let mine = mine(&mut params);
                conditions.push(format!("({published} OR {mine})"));
            }
        }
        let mut int = |params: &mut Vec<Param>, sql: &str, value: i64| {
            params.push(Param::Int(value));
            conditions.push(sql.replace('?', &format!("${}", params.len())));
        };
        if let Some(id) = filter.workspace_id {
            int(&mut params, "m.workspace_id = ?", id);
        }
        if let Some(id) = filter.collection_id {
            int(&mut params, "m.collection_id = ?", id);
        }
        if let Some(id) = filter.exclude_id {
            int(&mut params, "m.id <> ?", id);
        }
        match filter.starred {
            Some(true) => conditions
                .push("EXISTS (SELECT 1 FROM model_stars s WHERE s.model_id = m.id AND s.user_id = $1)".into()),
            Some(false) => conditions
                .push("NOT EXISTS (SELECT 1 FROM model_stars s WHERE s.model_id = m.id AND s.user_id = $1)".into()),
            None => {}
        }
        match filter.kind {
            Some(kind) => {
                params.push(Param::Text(kind.as_str().into()));
                conditions.push(format!("m.type = ${}", params.len()));
            }
            None => conditions.push(format!("m.type <> '{}'", ModelType::Base.as_str())),
        }
        if let Some(search) = filter.search.as_deref().filter(|s| !s.trim().is_empty()) {
            conditions.push(crate::document_listing::contains_any_case(
                self.backend,
                &["m.name", "m.display_name"],
                search.trim(),
                &mut params,
            ));
        }
        let sql = format!(
            "{MODEL_SELECT} WHERE {} ORDER BY m.id DESC LIMIT {} OFFSET {offset}",
            conditions.join(" AND "),
            limit + 1
        );
        let rows = Param::bind_all(sqlx::query(&sql), params)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
        let mut models = rows.iter().map(Model::decode).collect::<Result<Vec<_>>>()?;
        let has_more = models.len() as i64 > limit;
        models.truncate(limit as usize);
        Ok((models, has_more))
    }

    /// The models of a project, oldest first.
    pub async fn project_models(&self, scope: &Scope, project_id: i64) -> Result<Vec<Model>> {
        let (project, _) = self.project_access(scope, project_id, Action::Read).await?;
        self.models_of(scope, &project).await
    }

    /// The models of a project read through a scoped call, oldest first, with the caller's stars.
    pub async fn models_of(&self, scope: &Scope, project: &crate::Project) -> Result<Vec<Model>> {
        let sql = format!("{MODEL_SELECT} WHERE m.project_id = $2 ORDER BY m.id");
        fetch_records(sqlx::query(&sql).bind(scope.user_id).bind(project.id), &self.pool).await
    }

    /// Deletes a model (MANAGER of its workspace) and then its artifact; answers what was
    /// deleted. 409 while something works with it: its own training (QUEUED or TRAINING), an
    /// analysis with it (QUEUED or ANALYZING), the training of a model that starts from it
    /// (its `base_id`, which the deletion would clear, silently training that model afresh),
    /// a correction session it is filling (PREDICTING), or a live HITL configuration whose
    /// extractions it makes (its `model_id`, which the deletion would clear, silently ending
    /// the reviews).
    /// The same conditions hold in the DELETE itself, behind a lock on the model's row that
    /// the writers of analyses, warm starts and live configurations take too
    /// ([`model_still_there`]), so one that begins meanwhile keeps it on both backends.
    pub async fn delete_model(&self, scope: &Scope, model: &Model) -> Result<Model> {
        let model = self.model_access(scope, model.id, Action::Manage).await?;
        refuse_base(&model)?;
        if let Some(busy) = self.model_in_use(model.id).await? {
            return Err(busy);
        }
        let mut tx = self.begin_write().await?;
        // Locked first, so that the DELETE's checks (a statement of their own, on PostgreSQL a
        // snapshot of their own) see every analysis or training committed before the lock.
        crate::lock_row(&mut tx, ("models", model.id)).await?;
        let deleted = sqlx::query(
            "DELETE FROM models WHERE id = $1 AND status NOT IN ($2, $3) \
             AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.model_id = $1 AND a.status IN ($4, $5)) \
             AND NOT EXISTS (SELECT 1 FROM models t WHERE t.base_id = $1 AND t.status IN ($2, $3)) \
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.model_id = $1 AND s.status = $6) \
             AND NOT EXISTS (SELECT 1 FROM hitls h WHERE h.model_id = $1 AND h.is_live = $7)",
        )
        .bind(model.id)
        .bind(ModelStatus::Queued.as_str())
        .bind(ModelStatus::Training.as_str())
        .bind(ANALYSIS_RUNNING[0])
        .bind(ANALYSIS_RUNNING[1])
        .bind(SessionStatus::Predicting.as_str())
        .bind(true)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        if deleted.rows_affected() == 0 {
            let busy = self.model_in_use(model.id).await?;
            return Err(busy.unwrap_or_else(|| Error::not_found("model")));
        }
        if let Some(key) = &model.artifact_key {
            // The row is gone, so nothing refers to the blob; a failure leaves an orphan only.
            if let Err(e) = self.blobs()?.delete(key).await {
                tracing::warn!(model.id = model.id, error = %e.detail, "cannot delete a model artifact");
            }
        }
        Ok(model)
    }

    /// Why model `id` cannot be deleted now (409 naming what works with it), if it cannot.
    async fn model_in_use(&self, id: i64) -> Result<Option<Error>> {
        let row = sqlx::query(
            "SELECT m.status, \
             (SELECT MIN(a.id) FROM analyses a WHERE a.model_id = m.id AND a.status IN ($4, $5)) AS analysis, \
             (SELECT MIN(t.id) FROM models t WHERE t.base_id = m.id AND t.status IN ($2, $3)) AS trainee, \
             (SELECT MIN(s.id) FROM sessions s WHERE s.model_id = m.id AND s.status = $6) AS correction, \
             (SELECT MIN(h.id) FROM hitls h WHERE h.model_id = m.id AND h.is_live = $7) AS hitl \
             FROM models m WHERE m.id = $1",
        )
        .bind(id)
        .bind(ModelStatus::Queued.as_str())
        .bind(ModelStatus::Training.as_str())
        .bind(ANALYSIS_RUNNING[0])
        .bind(ANALYSIS_RUNNING[1])
        .bind(SessionStatus::Predicting.as_str())
        .bind(true)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        let Some(row) = row else { return Ok(None) };
        let status: String = row.try_get("status").map_err(db)?;
        let analysis: Option<i64> = row.try_get("analysis").map_err(db)?;
        let trainee: Option<i64> = row.try_get("trainee").map_err(db)?;
        let correction: Option<i64> = row.try_get("correction").map_err(db)?;
        let hitl: Option<i64> = row.try_get("hitl").map_err(db)?;
        let hitl = match hitl {
            Some(hitl) => {
                sqlx::query_as::<_, (i64, i64, String)>("SELECT id, project_id, name FROM hitls WHERE id = $1")
                    .bind(hitl)
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(db)?
            }
            None => None,
        };
        let training = [ModelStatus::Queued.as_str(), ModelStatus::Training.as_str()];
        Ok(if training.contains(&status.as_str()) {
            Some(format!(
                "model {id} is being trained; delete it once its training has finished or failed"
            ))
        } else if let Some(analysis) = analysis {
            Some(format!(
                "model {id} is analysing documents (analysis {analysis}); delete it once the analysis \
                 has finished or failed"
            ))
        } else if let Some(trainee) = trainee {
            Some(format!(
                "model {trainee} is being trained from model {id} (its base); delete model {id} once \
                 that training has finished or failed"
            ))
        } else if let Some(session) = correction {
            Some(format!(
                "model {id} is tagging the documents of correction session {session}; delete it once \
                 the session is ready or failed"
            ))
        } else {
            hitl.map(|(hitl, project, name)| {
                format!(
                    "model {id} makes the extractions of the live HITL configuration {hitl} ({name:?}) of \
                     project {project}; turn the configuration off first (is_live: false) or give it another \
                     model, then delete the model"
                )
            })
        }
        .map(Error::conflict))
    }

    /// Stars (or unstars) a model for the caller; any reader may.
    pub async fn star_model(&self, scope: &Scope, model_id: i64, starred: bool) -> Result<Model> {
        let model = self.model_access(scope, model_id, Action::Read).await?;
        let query = if starred {
            sqlx::query(
                "INSERT INTO model_stars (model_id, user_id, created) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(model.id)
            .bind(scope.user_id)
            .bind(Timestamp::now().micros())
        } else {
            sqlx::query("DELETE FROM model_stars WHERE model_id = $1 AND user_id = $2")
                .bind(model.id)
                .bind(scope.user_id)
        };
        query.execute(&self.pool).await.map_err(db)?;
        self.model_again(scope, model.id).await
    }

    /// Records how many segments a model learnt from, read from its artifact (`version`), for
    /// a model stored before the count was kept; a count already there stays.
    pub async fn note_examples(&self, model: &Model, examples: usize) -> Result<()> {
        sqlx::query("UPDATE models SET examples = $1 WHERE id = $2 AND version = $3 AND examples IS NULL")
            .bind(i64::try_from(examples).unwrap_or(i64::MAX))
            .bind(model.id)
            .bind(model.version)
            .execute(&self.pool)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// The artifact of a model the caller may read (409 while it has none).
    pub async fn model_artifact(&self, model: &Model) -> Result<Vec<u8>> {
        let file = self.model_artifact_file(model).await?;
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let mut bytes = Vec::new();
            let mut file = file;
            file.read_to_end(&mut bytes).map(|_| bytes)
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reading a model artifact panicked");
            Error::internal()
        })?
        .map_err(|e| {
            tracing::error!(error = %e, model.id = model.id, "cannot read a model artifact");
            Error::internal()
        })
    }

    /// The artifact of a model the caller may read, opened to be read a piece at a time (a
    /// download streams it: an artifact can hold hundreds of megabytes); 409 while it has none.
    pub async fn model_artifact_file(&self, model: &Model) -> Result<std::fs::File> {
        refuse_base(model)?;
        let key = model.artifact_key.as_deref().ok_or_else(|| match model.status {
            ModelStatus::Failed => Error::conflict(failed(model, "has no file")),
            status => Error::conflict(format!("model {} has no artifact yet (status {status})", model.id)),
        })?;
        match self.blobs()?.open_file(key).await {
            Err(e) if e.code == ErrorCode::NotFound => Err(self.artifact_gone(model, key).await),
            opened => opened,
        }
    }

    /// Why the artifact `key` of `model` (read before) is not in the blob store: the model was
    /// deleted meanwhile (an analysis or a download racing `delete_model`), which is 404
    /// naming the model; a model still there lost its file, which is the server's fault.
    async fn artifact_gone(&self, model: &Model, key: &str) -> Error {
        let found = sqlx::query_scalar::<_, i64>("SELECT id FROM models WHERE id = $1")
            .bind(model.id)
            .fetch_optional(&self.pool)
            .await;
        match found {
            Ok(None) => Error::not_found("model"),
            Ok(Some(_)) => {
                tracing::error!(
                    model.id = model.id,
                    blob = key,
                    "a model's artifact is missing from the blob store"
                );
                Error::internal()
            }
            Err(e) => db(e),
        }
    }

    /// 409 when the workspace has a model of this name.
    pub(crate) async fn name_is_free(&self, workspace_id: i64, name: &str) -> Result<()> {
        let taken: Option<i64> = sqlx::query_scalar("SELECT id FROM models WHERE workspace_id = $1 AND name = $2")
            .bind(workspace_id)
            .bind(name)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        match taken {
            Some(id) => Err(Error::conflict(format!(
                "the workspace has a model named {name:?} already (id {id})"
            ))),
            None => Ok(()),
        }
    }

    /// A model just written by the caller, read back.
    pub(crate) async fn model_again(&self, scope: &Scope, model_id: i64) -> Result<Model> {
        self.model_row(scope.user_id, model_id)
            .await?
            .ok_or_else(|| Error::not_found("model"))
    }
}

/// Checks, inside a write that refers to model `id` (an analysis with it, a correction session
/// it fills), that the model is still there, and keeps it there until the write ends: on
/// PostgreSQL a key-share lock on its row, which `delete_model` (locking the row before its
/// checks) waits for, and a model deleted meanwhile is no longer found; SQLite's write
/// transactions hold the one write lock. Called after the write has locked its project's rows,
/// in the order every writer of a project takes them (project, then model), never before.
pub(crate) async fn model_still_there(tx: &mut sqlx::Transaction<'static, sqlx::Any>, id: i64) -> Result<()> {
    let sql = if tx.backend_name() == "PostgreSQL" {
        "SELECT id FROM models WHERE id = $1 FOR KEY SHARE"
    } else {
        "SELECT id FROM models WHERE id = $1"
    };
    let found: Option<i64> = sqlx::query_scalar(sql)
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    found.map(|_| ()).ok_or_else(|| Error::not_found("model"))
}
