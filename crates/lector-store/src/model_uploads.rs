//! Uploaded models (`upload_model`): where an artifact goes and the model it becomes. The API
//! decodes the artifact and checks its header (`lector_ml`); this module checks the
//! destination, the project's names and the base, and stores the artifact and its model.

use crate::models::{Model, artifact_key};
use crate::{Store, db, db_unique};
use lector_core::time::Timestamp;
use lector_core::validate::Problems;
use lector_core::{Action, Error, ErrorCode, FieldError, ModelStatus, ProjectType, Result, Scope};

/// Where an uploaded model goes: a project (and its workspace), a workspace, or the caller's
/// default workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadTarget {
    Project(i64),
    Workspace(crate::WorkspaceRef),
    Default,
}

/// A model arriving as an artifact (upload_model): the client's fields and what the artifact
/// says of itself.
#[derive(Debug, Clone)]
pub struct NewUploadedModel {
    pub target: UploadTarget,
    pub name: String,
    pub display_name: String,
    pub short_description: String,
    pub long_description: String,
    /// The name of the model it derives from, in the same workspace.
    pub base: Option<String>,
    pub status: ModelStatus,
    pub score: Option<f64>,
    pub language: String,
    pub kind: ProjectType,
    pub metrics: Option<serde_json::Value>,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    /// How many segments it learnt from, as the artifact records it.
    pub examples: i64,
    /// What the model learnt of its fields (JSON), as the artifact carries it.
    pub field_model: Option<String>,
}

impl Store {
    /// The classes and labels of an uploaded model that its project lacks, said as a problem:
    /// an analysis would answer tags the project cannot name, filter or correct.
    async fn names_missing_from(
        &self,
        scope: &Scope,
        project_id: i64,
        new: &NewUploadedModel,
    ) -> Result<Option<String>> {
        let classes: Vec<String> = self
            .classes(scope, project_id)
            .await?
            .into_iter()
            .map(|c| c.name)
            .collect();
        let labels: Vec<String> = self
            .labels(scope, project_id)
            .await?
            .into_iter()
            .map(|l| l.name)
            .collect();
        let mut missing = Vec::new();
        for (what, names, known) in [("class", &new.classes, &classes), ("label", &new.labels, &labels)] {
            let lacking: Vec<&str> = names
                .iter()
                .filter(|n| !known.contains(n))
                .map(String::as_str)
                .collect();
            if let Some(first) = lacking.first() {
                let more = if lacking.len() > 1 {
                    format!(" and {} more", lacking.len() - 1)
                } else {
                    String::new()
                };
                missing.push(format!("the {what} {first:?}{more}"));
            }
        }
        Ok((!missing.is_empty()).then(|| {
            format!(
                "the model answers {} that project {project_id} does not have; add them to the project first",
                missing.join(" and ")
            )
        }))
    }

    /// Where an uploaded model goes, with the caller a MANAGER there: the workspace's id, and
    /// the project when one is named. Checked before the artifact is decoded.
    pub async fn model_destination(
        &self,
        scope: &Scope,
        target: &UploadTarget,
    ) -> Result<(i64, Option<crate::Project>)> {
        Ok(match target {
            UploadTarget::Project(id) => {
                let (project, _) = self.project_access(scope, *id, Action::Manage).await?;
                (project.workspace_id, Some(project))
            }
            UploadTarget::Workspace(workspace) => (
                self.workspace_access(scope, workspace, Action::Manage).await?.0.id,
                None,
            ),
            UploadTarget::Default => {
                let id = self.default_workspace_id(scope.user_id).await?.ok_or_else(|| {
                    Error::validation(vec![FieldError::new(
                        "organization",
                        "you have no default workspace; name one",
                    )])
                })?;
                let workspace = crate::WorkspaceRef::Id(id);
                (
                    self.workspace_access(scope, &workspace, Action::Manage).await?.0.id,
                    None,
                )
            }
        })
    }

    /// Stores an uploaded artifact and its model. The caller is a MANAGER where the model goes;
    /// PUBLISHED (every user reads it) is for superusers. A base that is not a model of the
    /// workspace, or a project of another type than the artifact, is 422; a taken name 409.
    pub async fn upload_model(&self, scope: &Scope, new: NewUploadedModel, artifact: Vec<u8>) -> Result<Model> {
        let (workspace_id, project) = self.model_destination(scope, &new.target).await?;
        if new.status == ModelStatus::Published && !scope.is_superuser {
            return Err(Error::forbidden("only a superuser publishes a model to every user"));
        }
        let mut problems = Problems::default();
        if let Some(project) = project.as_ref().filter(|p| p.kind != new.kind) {
            problems.push(
                "file",
                format!(
                    "the artifact is a {} model; project {} is {}",
                    new.kind, project.id, project.kind
                ),
            );
        }
        if let Some(project) = project.as_ref().filter(|p| p.kind == new.kind)
            && let Some(problem) = self.names_missing_from(scope, project.id, &new).await?
        {
            problems.push("file", problem);
        }
        let base_id = match &new.base {
            None => None,
            Some(base) => match self.base_named(scope, workspace_id, base).await? {
                Some(id) => Some(id),
                None => {
                    problems.push(
                        "base",
                        format!("no model {base:?} in the workspace, nor a published one"),
                    );
                    None
                }
            },
        };
        problems.finish()?;
        self.name_is_free(workspace_id, &new.name).await?;
        let uuid = uuid::Uuid::new_v4().to_string();
        let key = artifact_key(&uuid, "upload");
        self.blobs()?.put_bytes(&key, artifact).await?;
        let now = Timestamp::now().micros();
        let inserted = async {
            let mut tx = self.begin_write().await?;
            if let Some(project) = &project {
                crate::projects::project_stays_put(&mut tx, project).await?;
            }
            let id = sqlx::query_scalar::<_, i64>(
            "INSERT INTO models (uuid, workspace_id, project_id, user_id, name, display_name, short_description, \
             long_description, type, status, progress, score, metrics, classes, labels, base_id, language, \
             artifact_key, field_model, version, created, updated, finished, examples) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1, $11, $12, $13, $14, $15, $16, $17, $18, 1, $19, $19, $19, \
             $20) \
             RETURNING id",
        )
        .bind(&uuid)
        .bind(workspace_id)
        .bind(project.as_ref().map(|p| p.id))
        .bind(scope.user_id)
        .bind(&new.name)
        .bind(&new.display_name)
        .bind(&new.short_description)
        .bind(&new.long_description)
        .bind(new.kind.as_str())
        .bind(new.status.as_str())
        .bind(new.score)
        .bind(new.metrics.map(|m| m.to_string()))
        .bind(serde_json::to_string(&new.classes).unwrap_or_default())
        .bind(serde_json::to_string(&new.labels).unwrap_or_default())
        .bind(base_id)
        .bind(&new.language)
        .bind(&key)
        .bind(&new.field_model)
        .bind(now)
        .bind(new.examples)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_unique("a model of this name exists in the workspace"))?;
            if let Some(project) = &project {
                let names = (new.classes.as_slice(), new.labels.as_slice());
                crate::model_vocabulary::record_by_name(&mut tx, (id, project.id), names).await?;
            }
            tx.commit().await.map_err(db)?;
            Ok::<i64, Error>(id)
        }
        .await;
        let id = match inserted {
            Ok(id) => id,
            Err(e) => {
                let _ = self.blobs()?.delete(&key).await;
                return Err(e);
            }
        };
        self.model_again(scope, id).await
    }
}

impl Store {
    /// The model an uploaded model names as its base: one of the workspace's (by id or name),
    /// else the BASE encoder of that name (published to every user, in no workspace of theirs).
    async fn base_named(&self, scope: &Scope, workspace_id: i64, base: &str) -> Result<Option<i64>> {
        let workspace = crate::WorkspaceRef::Id(workspace_id);
        match self.workspace_model(scope, &workspace, base, Action::Read).await {
            Ok(model) => return Ok(Some(model.id)),
            Err(e) if e.code == ErrorCode::NotFound => {}
            Err(e) => return Err(e),
        }
        let published: Option<i64> = sqlx::query_scalar(
            "SELECT id FROM models WHERE name = $1 AND status = $2 AND type = $3 ORDER BY id DESC LIMIT 1",
        )
        .bind(base)
        .bind(ModelStatus::Published.as_str())
        .bind(lector_core::ModelType::Base.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?;
        Ok(published)
    }
}
