//! Models: trained from a project's labeling sessions (`train_model`, a job), listed, read,
//! changed, starred, deleted, downloaded as one artifact file and uploaded again.
//!
//! Reading needs VIEWER (PUBLISHED models every user reads), training USER, uploading and
//! changing MANAGER. `score`, `status` and `progress` belong to training and are refused with
//! `immutable_field`. The artifact upload lives in `model_files`.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PageInfo, Paging, PathParams, QueryParams, WriteBody};
use crate::routes::analyses::AnalysisDto;
use crate::routes::paths::{OrgPath, ProjectPath};
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_core::{Action, ModelType, ProjectType};
use lector_store::{MODEL_LANGUAGES, Model, ModelChanges, ModelFilter, NewTraining};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_models))
        .routes(routes!(list_workspace_models))
        .routes(routes!(list_project_models, train_model))
        .routes(routes!(get_project_model, update_project_model, delete_project_model))
        .routes(routes!(get_model, update_model, delete_model))
        .routes(routes!(star_model))
        .routes(routes!(unstar_model))
        .routes(routes!(list_model_analyses))
}

/// A model as the original interface lists it, with Lector's additions after `uuid`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelDto {
    pub id: i64,
    pub name: String,
    pub display_name: String,
    /// The name of the model it was derived from.
    pub base: Option<String>,
    pub created: String,
    /// en, de or ar.
    pub language: String,
    pub long_description: String,
    pub short_description: String,
    /// The e-mail address of the user who trained or uploaded it.
    pub owner: Option<String>,
    /// In [0, 1]; never decreases.
    pub progress: f64,
    pub project_id: Option<i64>,
    /// Macro F1 on the test side; set by training only.
    pub score: Option<f64>,
    /// CREATED, QUEUED, TRAINING, FAILED, READY, ACTIVE or PUBLISHED.
    pub status: String,
    /// ABSA, CLASS, LABEL or CLASSLABEL; BASE for a sentence encoder that ships with the
    /// service (listed only with `type=BASE`).
    #[serde(rename = "type")]
    pub kind: String,
    pub uuid: String,
    pub organization_id: i64,
    pub base_id: Option<i64>,
    pub collection_id: Option<i64>,
    /// Whether the caller starred it.
    pub starred: bool,
    /// The training job (`get_project_task`).
    pub task_id: Option<i64>,
    /// Grows whenever the artifact changes.
    pub version: i64,
    /// Why training failed, when it did.
    pub failure: Option<String>,
    pub finished: Option<String>,
}

impl From<Model> for ModelDto {
    fn from(m: Model) -> Self {
        Self {
            id: m.id,
            name: m.name,
            display_name: m.display_name,
            base: m.base,
            created: rfc3339(m.created),
            language: m.language,
            long_description: m.long_description,
            short_description: m.short_description,
            owner: m.owner,
            progress: m.progress,
            project_id: m.project_id,
            score: m.score,
            status: m.status.as_str().into(),
            kind: m.kind.as_str().into(),
            uuid: m.uuid,
            organization_id: m.workspace_id,
            base_id: m.base_id,
            collection_id: m.collection_id,
            starred: m.starred,
            task_id: m.task_id,
            version: m.version,
            failure: m.failure,
            finished: m.finished.map(rfc3339),
        }
    }
}

/// A model of a project with what training found: test documents with predictions, metrics
/// (per class and label precision, recall, F1, support; micro and macro F1; confusion matrix).
#[derive(Debug, Serialize, ToSchema)]
pub struct DetailedModelDto {
    #[serde(flatten)]
    pub model: ModelDto,
    #[schema(value_type = Vec<Object>)]
    pub demoset: serde_json::Value,
    /// Empty when the model had no test segments to score on (its `score` is then null).
    #[schema(value_type = Object)]
    pub metrics: serde_json::Value,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
}

impl DetailedModelDto {
    /// `m` with what training found (`Store::model_evaluation`).
    fn new(mut m: Model, metrics: Option<serde_json::Value>, demoset: Option<serde_json::Value>) -> Self {
        // A model that had no test segments to score on stored `null`: still the shapes the
        // schema gives, an empty list and an empty object.
        let present = |v: Option<serde_json::Value>| v.filter(|v| !v.is_null());
        let demoset = present(demoset).unwrap_or_else(|| serde_json::json!([]));
        let metrics = present(metrics).unwrap_or_else(|| serde_json::json!({}));
        let (classes, labels) = (std::mem::take(&mut m.classes), std::mem::take(&mut m.labels));
        Self {
            model: m.into(),
            demoset,
            metrics,
            classes,
            labels,
        }
    }
}

/// A page of models.
#[derive(Debug, Serialize, ToSchema)]
pub struct ModelPage {
    pub models: Vec<ModelDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

impl ModelPage {
    fn new(models: Vec<Model>, has_more: bool, paging: Paging) -> Self {
        Self {
            page: paging.page(models.len(), has_more),
            models: models.into_iter().map(ModelDto::from).collect(),
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListModelsQuery {
    pub collection_id: Option<i64>,
    /// true: only PUBLISHED models; false: only your workspaces' unpublished ones.
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    pub public: Option<bool>,
    /// true: only models you starred; false: only the others.
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    pub starred: Option<bool>,
    /// A part of the name or display name, any case.
    pub search: Option<String>,
    /// ABSA, CLASS, LABEL or CLASSLABEL; BASE lists the sentence encoders (base models),
    /// which a plain listing leaves out.
    #[serde(rename = "type")]
    #[param(value_type = Option<String>)]
    pub kind: Option<ModelType>,
    pub exclude_id: Option<i64>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

impl ListModelsQuery {
    fn split(self, workspace_id: Option<i64>) -> lector_core::Result<(ModelFilter, Paging)> {
        let paging = Paging::checked(self.offset, self.limit)?;
        let filter = ModelFilter {
            workspace_id,
            collection_id: self.collection_id,
            public: self.public,
            starred: self.starred,
            search: self.search,
            kind: self.kind,
            exclude_id: self.exclude_id,
        };
        Ok((filter, paging))
    }
}

/// Fields of a model that belong to the server (refused with `immutable_field`).
const SERVER_FIELDS: &[&str] = &[
    "id",
    "uuid",
    "score",
    "status",
    "progress",
    "created",
    "owner",
    "project_id",
    "metrics",
    "demoset",
    "classes",
    "labels",
    "base",
    "organization_id",
    "starred",
    "task_id",
    "version",
    "failure",
    "finished",
];

/// A training request. Without `annotation_ids` or both train and test lists, every labeling
/// session of the project with annotated segments is used, split 80/20 (stratified, seeded).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrainModelBody {
    /// Unique within the workspace; by default the display name.
    pub name: Option<String>,
    pub display_name: Option<String>,
    /// en, de or ar; by default the project's language.
    pub language: Option<String>,
    /// A model to start from (warm start), of the project's type.
    pub base_id: Option<i64>,
    /// The project's type, if given.
    #[serde(rename = "type")]
    #[schema(value_type = Option<String>)]
    pub kind: Option<ProjectType>,
    /// Labeling sessions split into train and test; the two lists below are then ignored.
    pub annotation_ids: Option<Vec<i64>>,
    pub trainset_annotation_ids: Option<Vec<i64>>,
    pub testset_annotation_ids: Option<Vec<i64>>,
}

impl WriteBody for TrainModelBody {
    const IMMUTABLE: &'static [&'static str] = SERVER_FIELDS;

    fn validate(&self, problems: &mut Problems) {
        check_model_names(problems, &self.name, &self.display_name);
        for (field, ids) in [
            ("annotation_ids", &self.annotation_ids),
            ("trainset_annotation_ids", &self.trainset_annotation_ids),
            ("testset_annotation_ids", &self.testset_annotation_ids),
        ] {
            let distinct = ids.as_ref().map_or(0, |ids| distinct(ids.clone()).len());
            problems.check(
                distinct <= MAX_TRAINING_SESSIONS,
                field,
                &format!("at most {MAX_TRAINING_SESSIONS} labeling sessions"),
            );
        }
    }
}

/// Most labeling sessions one list of a training request names (each is checked by itself).
pub const MAX_TRAINING_SESSIONS: usize = 1000;

/// The ids in their first order, each once.
fn distinct(ids: Vec<i64>) -> Vec<i64> {
    let mut seen = std::collections::HashSet::new();
    ids.into_iter().filter(|id| seen.insert(*id)).collect()
}

/// The names a training or a change may give a model, checked alike.
fn check_model_names(problems: &mut Problems, name: &Option<String>, display_name: &Option<String>) {
    for (field, value) in [("name", name), ("display_name", display_name)] {
        if let Some(value) = value {
            problems.name(field, value, MAX_NAME_CHARS);
        }
    }
}

/// Descriptive fields of a model (MANAGER).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateModelBody {
    pub name: Option<String>,
    pub display_name: Option<String>,
    pub short_description: Option<String>,
    pub long_description: Option<String>,
    /// en, de or ar; a model trained on a sentence encoder keeps the encoder's, and one being
    /// trained keeps its own until the training has ended.
    pub language: Option<String>,
    /// 1 or more; null takes the model out of its collection.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<i64>, nullable)]
    pub collection_id: Option<Option<i64>>,
}

impl WriteBody for UpdateModelBody {
    const IMMUTABLE: &'static [&'static str] = SERVER_FIELDS;
    /// Paragraphs, as an uploaded model's file may carry them.
    const FREE_TEXT: &'static [&'static str] = &["short_description", "long_description"];

    fn validate(&self, problems: &mut Problems) {
        check_model_names(problems, &self.name, &self.display_name);
        for (field, value) in [
            ("short_description", &self.short_description),
            ("long_description", &self.long_description),
        ] {
            if let Some(value) = value {
                problems.max_len(field, value, MAX_DESCRIPTION_CHARS);
            }
        }
        if let Some(language) = &self.language {
            problems.check(
                MODEL_LANGUAGES.contains(&language.as_str()),
                "language",
                "must be en, de or ar",
            );
        }
        if let Some(Some(id)) = self.collection_id {
            problems.check(
                id >= 1,
                "collection_id",
                "must be 1 or more, or null to take the model out of its collection",
            );
        }
    }
}

impl From<UpdateModelBody> for ModelChanges {
    fn from(b: UpdateModelBody) -> Self {
        Self {
            name: b.name.map(|n| n.trim().to_owned()),
            display_name: b.display_name,
            short_description: b.short_description,
            long_description: b.long_description,
            language: b.language,
            collection_id: b.collection_id,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ProjectModelPath {
    project_id: i64,
    model_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct ModelPath {
    model_id: i64,
}

impl ProjectModelPath {
    /// The model of the project the path names, if the caller may do `action` with it.
    pub(crate) async fn model(&self, state: &AppState, caller: &Caller, action: Action) -> lector_core::Result<Model> {
        state
            .store
            .project_model(&caller.scope, self.project_id, self.model_id, action)
            .await
    }
}

impl ModelPath {
    /// The model the path names, if the caller may do `action` with it.
    async fn model(&self, state: &AppState, caller: &Caller, action: Action) -> lector_core::Result<Model> {
        state.store.model_access(&caller.scope, self.model_id, action).await
    }
}

/// The models the caller may see: its workspaces' and every PUBLISHED one, newest first.
#[utoipa::path(get, path = "/models", tag = "models", params(ListModelsQuery),
    responses((status = 200, body = ModelPage)))]
pub async fn list_models(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(q): QueryParams<ListModelsQuery>,
) -> ApiResult<Json<ModelPage>> {
    let (filter, paging) = q.split(None)?;
    let (models, has_more) = state
        .store
        .models(&caller.scope, &filter, paging.offset, paging.limit)
        .await?;
    Ok(Json(ModelPage::new(models, has_more, paging)))
}

/// The models of one workspace (any member), newest first.
#[utoipa::path(get, path = "/organizations/{organization}/models", tag = "models",
    params(("organization" = String, Path, description = "workspace name or id"), ListModelsQuery),
    responses((status = 200, body = ModelPage)))]
pub async fn list_workspace_models(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgPath>,
    QueryParams(q): QueryParams<ListModelsQuery>,
) -> ApiResult<Json<ModelPage>> {
    let (workspace, _) = state
        .store
        .workspace_access(&caller.scope, &p.workspace(), Action::Read)
        .await?;
    let (filter, paging) = q.split(Some(workspace.id))?;
    let (models, has_more) = state
        .store
        .models(&caller.scope, &filter, paging.offset, paging.limit)
        .await?;
    Ok(Json(ModelPage::new(models, has_more, paging)))
}

/// The models of a project, oldest first (any member).
#[utoipa::path(get, path = "/projects/{project_id}/models", tag = "models",
    params(("project_id" = i64, Path)), responses((status = 200, body = Vec<ModelDto>)))]
pub async fn list_project_models(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<Vec<ModelDto>>> {
    let models = state.store.project_models(&caller.scope, p.project_id).await?;
    Ok(Json(models.into_iter().map(ModelDto::from).collect()))
}

/// Trains a model on the project's labeling sessions (USER): answers the model QUEUED with the
/// `task_id` of its training job; poll the model or the task. 409 while the workspace has 20
/// trainings, analyses, corrections and copies waiting or running.
#[utoipa::path(post, path = "/projects/{project_id}/models", tag = "models",
    params(("project_id" = i64, Path)), request_body = TrainModelBody,
    responses((status = 201, body = ModelDto)))]
pub async fn train_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<TrainModelBody>,
) -> ApiResult<(StatusCode, Json<ModelDto>)> {
    let request = NewTraining {
        name: body.name,
        display_name: body.display_name,
        language: body.language,
        base_id: body.base_id,
        kind: body.kind,
        annotation_ids: body.annotation_ids.map(distinct),
        trainset_annotation_ids: body.trainset_annotation_ids.map(distinct),
        testset_annotation_ids: body.testset_annotation_ids.map(distinct),
    };
    let (model, job) = state.store.start_training(&caller.scope, p.project_id, request).await?;
    tracing::info!(
        model.id = model.id,
        job.id = job.id,
        project.id = p.project_id,
        "training queued"
    );
    Ok((StatusCode::CREATED, Json(model.into())))
}

/// A model of the project with its demoset, metrics, classes and labels (any member).
#[utoipa::path(get, path = "/projects/{project_id}/models/{model_id}", tag = "models",
    params(("project_id" = i64, Path), ("model_id" = i64, Path)),
    responses((status = 200, body = DetailedModelDto)))]
pub async fn get_project_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectModelPath>,
) -> ApiResult<Json<DetailedModelDto>> {
    let model = p.model(&state, &caller, Action::Read).await?;
    let (metrics, demoset) = state.store.model_evaluation(&model).await?;
    Ok(Json(DetailedModelDto::new(model, metrics, demoset)))
}

/// Changes a model of the project (MANAGER); `score`, `status`, `progress` are refused.
#[utoipa::path(put, path = "/projects/{project_id}/models/{model_id}", tag = "models",
    params(("project_id" = i64, Path), ("model_id" = i64, Path)), request_body = UpdateModelBody,
    responses((status = 200, body = ModelDto)))]
pub async fn update_project_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectModelPath>,
    Body(body): Body<UpdateModelBody>,
) -> ApiResult<Json<ModelDto>> {
    let model = p.model(&state, &caller, Action::Manage).await?;
    update_found(&state, &caller, &model, body).await
}

/// Deletes a model of the project and its artifact (MANAGER); answers the deleted model.
#[utoipa::path(delete, path = "/projects/{project_id}/models/{model_id}", tag = "models",
    params(("project_id" = i64, Path), ("model_id" = i64, Path)), responses((status = 200, body = ModelDto)))]
pub async fn delete_project_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectModelPath>,
) -> ApiResult<Json<ModelDto>> {
    let model = p.model(&state, &caller, Action::Manage).await?;
    delete_found(&state, &caller, &model).await
}

/// One model, in the paged shape of `list_models` (any reader).
#[utoipa::path(get, path = "/models/{model_id}", tag = "models",
    params(("model_id" = i64, Path)), responses((status = 200, body = ModelPage)))]
pub async fn get_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
) -> ApiResult<Json<ModelPage>> {
    let model = p.model(&state, &caller, Action::Read).await?;
    let paging = Paging { offset: 0, limit: 1 };
    Ok(Json(ModelPage::new(vec![model], false, paging)))
}

/// Changes a model (MANAGER of its workspace); `score`, `status`, `progress` are refused.
#[utoipa::path(put, path = "/models/{model_id}", tag = "models",
    params(("model_id" = i64, Path)), request_body = UpdateModelBody, responses((status = 200, body = ModelDto)))]
pub async fn update_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
    Body(body): Body<UpdateModelBody>,
) -> ApiResult<Json<ModelDto>> {
    let model = p.model(&state, &caller, Action::Manage).await?;
    update_found(&state, &caller, &model, body).await
}

/// Deletes a model and its artifact (MANAGER of its workspace); answers the deleted model.
#[utoipa::path(delete, path = "/models/{model_id}", tag = "models",
    params(("model_id" = i64, Path)), responses((status = 200, body = ModelDto)))]
pub async fn delete_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
) -> ApiResult<Json<ModelDto>> {
    let model = p.model(&state, &caller, Action::Manage).await?;
    delete_found(&state, &caller, &model).await
}

/// Stars a model for the caller (any reader); `list_models?starred=true` lists it.
#[utoipa::path(post, path = "/models/{model_id}/star", tag = "models",
    params(("model_id" = i64, Path)), responses((status = 200, body = ModelDto)))]
pub async fn star_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
) -> ApiResult<Json<ModelDto>> {
    let model = state.store.star_model(&caller.scope, p.model_id, true).await?;
    Ok(Json(model.into()))
}

/// Takes the caller's star off a model (any reader).
#[utoipa::path(post, path = "/models/{model_id}/unstar", tag = "models",
    params(("model_id" = i64, Path)), responses((status = 200, body = ModelDto)))]
pub async fn unstar_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
) -> ApiResult<Json<ModelDto>> {
    let model = state.store.star_model(&caller.scope, p.model_id, false).await?;
    Ok(Json(model.into()))
}

/// `update_model` and `update_project_model` once the model is found: the changed model.
async fn update_found(
    state: &AppState,
    caller: &Caller,
    model: &Model,
    body: UpdateModelBody,
) -> ApiResult<Json<ModelDto>> {
    let changed = state.store.update_model(&caller.scope, model, body.into()).await?;
    Ok(Json(changed.into()))
}

/// `delete_model` and `delete_project_model` once the model is found: the deleted model.
async fn delete_found(state: &AppState, caller: &Caller, model: &Model) -> ApiResult<Json<ModelDto>> {
    crate::workflow_refs::model_not_in_use(state, &caller.scope, model).await?;
    let deleted = state.store.delete_model(&caller.scope, model).await?;
    tracing::info!(model.id = deleted.id, user.id = caller.user.id, "model deleted");
    Ok(Json(deleted.into()))
}

/// A page of analyses.
#[derive(Debug, Serialize, ToSchema)]
pub struct AnalysisPage {
    pub analyses: Vec<AnalysisDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

/// The analyses made with a model, of projects in your workspaces, oldest first (any reader).
#[utoipa::path(get, path = "/models/{model_id}/analyses", tag = "models",
    params(("model_id" = i64, Path), Paging), responses((status = 200, body = AnalysisPage)))]
pub async fn list_model_analyses(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelPath>,
    QueryParams(paging): QueryParams<Paging>,
) -> ApiResult<Json<AnalysisPage>> {
    let paging = paging.check()?;
    let (analyses, has_more) = state
        .store
        .model_analyses(&caller.scope, p.model_id, paging.offset, paging.limit)
        .await?;
    Ok(Json(AnalysisPage {
        page: paging.page(analyses.len(), has_more),
        analyses: crate::routes::analyses::with_vocabularies(&state, &caller, analyses).await?,
    }))
}
