//! A model's one file: `download_model` (and its project and workspace routes) gives it,
//! `upload_model` takes it back as a model of a workspace, predicting exactly as it did where it
//! was trained.
//!
//! The form takes the original interface's fields (`file`, `display_name`, `name`, `base`,
//! `score`, `long_description`, `short_description`, `status`, `language`) and Lector's
//! `project_id` or `organization` to say where the model goes (by default the caller's default
//! workspace). The caller is a MANAGER there; PUBLISHED, which shows a model to every user, is
//! for superusers.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::PathParams;
use crate::routes::files::{bad_field, multipart_error, read_field};
use crate::routes::models::{ModelDto, ProjectModelPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartRejection};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_core::{Action, Error, ErrorCode, FieldError, ModelStatus, Result};
use lector_extract::learned::FieldModel;
use lector_store::{MODEL_LANGUAGES, Model, NewUploadedModel, UploadTarget, WorkspaceRef};
use serde::Deserialize;
use std::collections::HashMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_model))
        .routes(routes!(download_model))
        .routes(routes!(download_project_model))
        .routes(routes!(download_workspace_model))
}

/// The text fields the form takes besides `file`.
const TEXT_FIELDS: &[&str] = &[
    "display_name",
    "name",
    "base",
    "score",
    "long_description",
    "short_description",
    "status",
    "language",
    "project_id",
    "organization",
];

/// The multipart form of `upload_model`.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "describes the form in the OpenAPI document; the handler reads the fields one by one"
)]
pub struct ModelUploadForm {
    /// The artifact, as `download_model` gives it.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    display_name: String,
    /// Unique within the workspace; by default the display name.
    name: Option<String>,
    /// The name of the model it derives from, in the same workspace.
    base: Option<String>,
    /// The model's score, only for an artifact that records none: the artifact's own is kept,
    /// and a different one answers 422.
    score: Option<f64>,
    long_description: Option<String>,
    short_description: Option<String>,
    /// READY (default), ACTIVE, or PUBLISHED (superusers).
    status: Option<String>,
    /// en, de or ar: the language the artifact records (which the form may repeat, not change),
    /// else the form's, else en.
    language: Option<String>,
    /// The project the model belongs to (its type must match the artifact's).
    project_id: Option<i64>,
    /// The workspace (name or id) when no project is given; by default your default workspace.
    organization: Option<String>,
}

/// Stores an uploaded model artifact as a model (MANAGER where it goes); answers the model.
#[utoipa::path(post, path = "/models/upload", tag = "models",
    request_body(content = ModelUploadForm, content_type = "multipart/form-data"),
    responses((status = 200, body = ModelDto)))]
pub async fn upload_model(
    State(state): State<AppState>,
    caller: Caller,
    multipart: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<ModelDto>> {
    // MANAGER somewhere before the file is read; the store checks the workspace it names.
    caller.scope.may_somewhere(lector_core::Action::Manage)?;
    let (bytes, fields) = read_form(&state, multipart?).await?;
    // MANAGER where the model goes, before the artifact is decoded.
    let target = upload_target(&fields)?;
    state.store.model_destination(&caller.scope, &target).await?;
    let artifact = load_artifact(&state, bytes.clone()).await?;
    let new = new_model(&fields, target, &artifact)?;
    let model = state.store.upload_model(&caller.scope, new, bytes).await?;
    tracing::info!(model.id = model.id, user.id = caller.user.id, "model uploaded");
    Ok(Json(model.into()))
}

/// A form field's text, trimmed; `None` when absent or blank.
fn text(fields: &HashMap<String, String>, name: &str) -> Option<String> {
    fields.get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// Where the form says the model goes: `project_id`, else `organization`, else the caller's
/// default workspace.
fn upload_target(fields: &HashMap<String, String>) -> Result<UploadTarget> {
    let mut problems = Problems::default();
    let project = parse_number::<i64>(&mut problems, "project_id", text(fields, "project_id"));
    problems.finish()?;
    Ok(match (project, text(fields, "organization")) {
        (Some(id), _) => UploadTarget::Project(id),
        (None, Some(name)) => UploadTarget::Workspace(WorkspaceRef::parse(&name)),
        (None, None) => UploadTarget::Default,
    })
}

/// The form's other fields, checked all at once, with what the artifact says of itself.
fn new_model(
    fields: &HashMap<String, String>,
    target: UploadTarget,
    artifact: &lector_ml::Model,
) -> Result<NewUploadedModel> {
    let text = |name: &str| text(fields, name);
    let mut problems = Problems::default();
    let display_name = text("display_name").unwrap_or_default();
    problems.name("display_name", &display_name, MAX_NAME_CHARS);
    let name = text("name").unwrap_or_else(|| display_name.clone());
    problems.name("name", &name, MAX_NAME_CHARS);
    let language = match (text("language"), artifact.info().language.clone()) {
        (Some(given), Some(recorded)) if given != recorded => {
            problems.push(
                "language",
                format!("the model file records the language {recorded}, which an upload cannot change"),
            );
            recorded
        }
        (given, recorded) => recorded.or(given).unwrap_or_else(|| "en".into()),
    };
    problems.check(
        MODEL_LANGUAGES.contains(&language.as_str()),
        "language",
        "must be en, de or ar",
    );
    let field_model = artifact.info().field_model.clone();
    if let Some(Err(problem)) = field_model
        .as_deref()
        .map(|f| FieldModel::uploaded(f, artifact.labels()))
    {
        problems.push("file", problem);
    }
    for field in ["short_description", "long_description"] {
        problems.max_len(field, &text(field).unwrap_or_default(), MAX_DESCRIPTION_CHARS);
    }
    // The score is the artifact's, recorded when it was trained (never the client's); the
    // form's only stands in for an artifact that records none, and may repeat it, not change it.
    let metrics = artifact.info().metrics.clone();
    let recorded = metrics.as_ref().map(|m| m.score);
    let given = parse_number::<f64>(&mut problems, "score", text("score"));
    if let Some(given) = given {
        problems.check((0.0..=1.0).contains(&given), "score", "must be between 0 and 1");
        if let Some(recorded) = recorded {
            problems.check(
                (given - recorded).abs() <= 1e-9,
                "score",
                &format!("the model file records the score {recorded}, which an upload cannot change"),
            );
        }
    }
    let status = match text("status").as_deref().map(str::parse::<ModelStatus>) {
        None => ModelStatus::Ready,
        Some(Ok(s @ (ModelStatus::Ready | ModelStatus::Active | ModelStatus::Published))) => s,
        Some(_) => {
            problems.push("status", "an uploaded model is READY, ACTIVE or PUBLISHED");
            ModelStatus::Ready
        }
    };
    problems.finish()?;
    Ok(NewUploadedModel {
        target,
        name,
        display_name,
        short_description: text("short_description").unwrap_or_default(),
        long_description: text("long_description").unwrap_or_default(),
        base: text("base"),
        status,
        score: recorded.or(given),
        language,
        kind: artifact.project_type(),
        metrics: metrics.and_then(|m| serde_json::to_value(m).ok()),
        classes: artifact.classes().to_vec(),
        labels: artifact.labels().to_vec(),
        field_model,
    })
}

/// Reads the form: the file's bytes (bounded by the upload limit) and the text fields.
async fn read_form(state: &AppState, mut form: Multipart) -> Result<(Vec<u8>, HashMap<String, String>)> {
    let max = state.config.uploads.max_bytes;
    let mut file = None;
    let mut fields = HashMap::new();
    while let Some(mut field) = form
        .next_field()
        .await
        .map_err(multipart_error(state.config.max_body_bytes))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        match name.as_str() {
            "file" if file.is_none() => {
                file = Some(read_field(state, &mut field, max, "uploads.max_bytes").await?);
            }
            "file" => return Err(bad_field("file", "send one file")),
            known if TEXT_FIELDS.contains(&known) => {
                let value = field
                    .text()
                    .await
                    .map_err(multipart_error(state.config.max_body_bytes))?;
                fields.insert(name, value);
            }
            other => {
                let mut error = Error::new(ErrorCode::UnknownField, format!("the form has no field `{other}`"));
                error.errors.push(FieldError::new(other, "unknown field"));
                return Err(error);
            }
        }
    }
    let file = file.ok_or_else(|| bad_field("file", "is required"))?;
    Ok((file, fields))
}

/// Decodes an artifact on a blocking thread, with the BASE model it was trained with; bytes
/// that are no model, or a model whose sentence encoder is not installed here, answer 422.
async fn load_artifact(state: &AppState, bytes: Vec<u8>) -> Result<lector_ml::Model> {
    let base_models = state.base_models.clone();
    tokio::task::spawn_blocking(move || base_models.load_model(&bytes))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reading a model artifact panicked");
            Error::internal()
        })?
        .map_err(|e| match e {
            lector_ml::Error::MissingEncoder(_) => bad_field(
                "file",
                &format!("{e}: install it with `lector base-models install` before uploading this model"),
            ),
            e => bad_field("file", &format!("is not a Lector model file: {e}")),
        })
}

fn parse_number<T: std::str::FromStr>(problems: &mut Problems, field: &str, value: Option<String>) -> Option<T> {
    let value = value?;
    match value.parse::<T>() {
        Ok(v) => Some(v),
        Err(_) => {
            problems.push(field, format!("{value:?} is not a number"));
            None
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct OrgModelPath {
    organization: String,
    model: String,
}

/// `download_model`'s path: a model's id, or its name.
#[derive(Debug, Deserialize)]
pub struct ModelIdOrNamePath {
    model_id: String,
}

/// The model's artifact: the one file `upload_model` takes back (any reader). The model is
/// named by its id (digits) or, as the original's "download by name", by its name in the
/// caller's default workspace, the newest of that name
/// (`/organizations/{organization}/models/{model}/download` for another, or a name of digits).
#[utoipa::path(get, path = "/models/{model_id}/download", tag = "models",
    params(("model_id" = String, Path, description = "model id, or name in your default workspace")),
    responses((status = 200, description = "the artifact", content_type = "application/octet-stream")))]
pub async fn download_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ModelIdOrNamePath>,
) -> ApiResult<Response> {
    let model = match p.model_id.parse::<i64>() {
        Ok(id) => state.store.model_access(&caller.scope, id, Action::Read).await?,
        Err(_) => {
            let home = state.store.default_workspace_id(caller.user.id).await?;
            let home = home.ok_or_else(|| Error::not_found("model"))?;
            state
                .store
                .workspace_model(&caller.scope, &WorkspaceRef::Id(home), &p.model_id, Action::Read)
                .await?
        }
    };
    artifact_response(&state, &model).await
}

/// The artifact of a model of the project (any member).
#[utoipa::path(get, path = "/projects/{project_id}/models/{model_id}/download", tag = "models",
    params(("project_id" = i64, Path), ("model_id" = i64, Path)),
    responses((status = 200, description = "the artifact", content_type = "application/octet-stream")))]
pub async fn download_project_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectModelPath>,
) -> ApiResult<Response> {
    let model = p.model(&state, &caller, Action::Read).await?;
    artifact_response(&state, &model).await
}

/// The artifact of a workspace's model, addressed by id or name (any member).
#[utoipa::path(get, path = "/organizations/{organization}/models/{model}/download", tag = "models",
    params(("organization" = String, Path, description = "workspace name or id"),
        ("model" = String, Path, description = "model id or name")),
    responses((status = 200, description = "the artifact", content_type = "application/octet-stream")))]
pub async fn download_workspace_model(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<OrgModelPath>,
) -> ApiResult<Response> {
    let workspace = WorkspaceRef::parse(&p.organization);
    let model = state
        .store
        .workspace_model(&caller.scope, &workspace, &p.model, Action::Read)
        .await?;
    artifact_response(&state, &model).await
}

/// The artifact as a download, streamed from its file a piece at a time with its length, so
/// downloads of large models at once do not each hold a copy in memory.
async fn artifact_response(state: &AppState, model: &Model) -> ApiResult<Response> {
    let file = tokio::fs::File::from_std(state.store.model_artifact_file(model).await?);
    let length = file.metadata().await.map_err(|e| {
        tracing::error!(error = %e, model.id = model.id, "cannot read a model artifact");
        lector_core::Error::internal()
    })?;
    let chunks = futures_util::stream::unfold(file, |mut file| async move {
        let mut chunk = vec![0u8; 64 * 1024];
        match tokio::io::AsyncReadExt::read(&mut file, &mut chunk).await {
            Ok(0) => None,
            Ok(n) => {
                chunk.truncate(n);
                Some((Ok::<_, std::io::Error>(bytes::Bytes::from(chunk)), file))
            }
            Err(e) => Some((Err(e), file)),
        }
    });
    let mut response = axum::body::Body::from_stream(chunks).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length.len()));
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    let stem: String = model
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if let Ok(value) = HeaderValue::from_str(&format!("attachment; filename=\"{stem}.lector-model\"")) {
        headers.insert(header::CONTENT_DISPOSITION, value);
    }
    Ok(response)
}
