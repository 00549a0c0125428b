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
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems, TextKind, check_chars};
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
    /// en, de or ar; by default the language the file records, else en.
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
    // Checking the file's field model (up to 16 MiB of JSON) is CPU work: off the async workers.
    let new = tokio::task::spawn_blocking(move || new_model(&fields, target, &artifact))
        .await
        .map_err(|_| Error::internal())??;
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
    // The form's language, else the one the file records (a model's language can be changed
    // later, and is written into the file it downloads as), else en.
    let language = text("language")
        .or_else(|| artifact.info().language.clone())
        .unwrap_or_else(|| "en".into());
    problems.check(
        MODEL_LANGUAGES.contains(&language.as_str()),
        "language",
        "must be en, de or ar",
    );
    // Kept as this build writes it: what the file held besides the model's fields is dropped.
    let uploaded = artifact.info().field_model.as_deref();
    let field_model = match uploaded.map(|f| FieldModel::uploaded(f, artifact.labels())) {
        Some(Ok(model)) => Some(model.to_json()),
        Some(Err(problem)) => {
            problems.push("file", problem);
            None
        }
        None => None,
    };
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
        examples: i64::try_from(artifact.info().examples).unwrap_or(i64::MAX),
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
                // As a JSON body's strings are checked: a NUL failed on PostgreSQL (500), and
                // a bidi override reached a model's name.
                let kind = if known.ends_with("_description") {
                    TextKind::Free
                } else {
                    TextKind::Short
                };
                check_chars(known, &value, kind)?;
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
/// downloads of large models at once do not each hold a copy in memory. A file from before
/// artifacts carried their model's language and field model gets them written into its header
/// (`lector_ml::completed_head`), the body following unchanged and the checksum taken anew as
/// it passes.
async fn artifact_response(state: &AppState, model: &Model) -> ApiResult<Response> {
    use tokio::io::AsyncSeekExt;
    let failed = |e: std::io::Error| {
        tracing::error!(error = %e, model.id = model.id, "cannot read a model artifact");
        lector_core::Error::internal()
    };
    let mut file = tokio::fs::File::from_std(state.store.model_artifact_file(model).await?);
    let length = file.metadata().await.map_err(failed)?.len();
    let head = artifact_head(&mut file, length).await.map_err(failed)?;
    let field_model = state.store.field_model(model).await?;
    // Reading the header (up to megabytes of JSON) is CPU work: off the async workers.
    let language = model.language.clone();
    let (head, completed) = tokio::task::spawn_blocking(move || {
        let completed = head
            .as_deref()
            .and_then(|head| lector_ml::completed_head(head, Some(&language), field_model.as_deref()));
        (head, completed)
    })
    .await
    .map_err(|_| lector_core::Error::internal())?;
    let (body, length) = match (completed, head) {
        (Some(new_head), Some(old_head)) => {
            let body_len = length - old_head.len() as u64 - lector_ml::CHECKSUM_BYTES as u64;
            let length = new_head.len() as u64 + body_len + lector_ml::CHECKSUM_BYTES as u64;
            (
                axum::body::Body::from_stream(reheaded(new_head, &old_head, file, body_len)),
                length,
            )
        }
        _ => {
            file.seek(std::io::SeekFrom::Start(0)).await.map_err(failed)?;
            (axum::body::Body::from_stream(file_chunks(file, length, None)), length)
        }
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
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

/// An artifact's prefix and header, read from the start of its file (left just after them);
/// `None` for a file too short or foreign to hold them, which is then given as it is.
async fn artifact_head(file: &mut tokio::fs::File, length: u64) -> std::io::Result<Option<Vec<u8>>> {
    use tokio::io::AsyncReadExt;
    let prefix = lector_ml::HEAD_PREFIX_BYTES;
    if length < (prefix + lector_ml::CHECKSUM_BYTES) as u64 {
        return Ok(None);
    }
    let mut head = vec![0u8; prefix];
    file.read_exact(&mut head).await?;
    let Ok(header_len) = lector_ml::header_len(&head) else {
        return Ok(None);
    };
    if (prefix + header_len + lector_ml::CHECKSUM_BYTES) as u64 > length {
        return Ok(None);
    }
    head.resize(prefix + header_len, 0);
    file.read_exact(&mut head[prefix..]).await?;
    Ok(Some(head))
}

/// `new_head`, then the next `body_len` bytes of `file` (the old body), then the checksum of
/// both; the old file's own checksum is checked as it passes, and a damaged file ends the
/// download with an error rather than with a checksum that would vouch for it.
fn reheaded(
    new_head: Vec<u8>,
    old_head: &[u8],
    file: tokio::fs::File,
    body_len: u64,
) -> impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> + use<> {
    use futures_util::StreamExt;
    let mut sums = Sums::default();
    sums.old.update(old_head);
    sums.new.update(&new_head);
    futures_util::stream::once(std::future::ready(Ok(bytes::Bytes::from(new_head)))).chain(file_chunks(
        file,
        body_len,
        Some(sums),
    ))
}

/// The checksums of the stored file and of the one being sent, taken as the bytes pass.
#[derive(Default, Clone, Copy)]
struct Sums {
    old: lector_ml::Checksum,
    new: lector_ml::Checksum,
}

/// The next `length` bytes of `file`, 64 KiB at a time; with checksums, then the stored file's
/// checksum is read and checked and the new one follows.
fn file_chunks(
    file: tokio::fs::File,
    length: u64,
    sums: Option<Sums>,
) -> impl futures_util::Stream<Item = std::io::Result<bytes::Bytes>> {
    use tokio::io::AsyncReadExt;
    futures_util::stream::unfold((file, length, sums), |(mut file, left, sums)| async move {
        if left == 0 {
            // The checksum once, after the bytes; then the end.
            let sums = sums?;
            let mut stored = [0u8; lector_ml::CHECKSUM_BYTES];
            let checked = match file.read_exact(&mut stored).await {
                Ok(_) if stored == sums.old.to_bytes() => Ok(bytes::Bytes::copy_from_slice(&sums.new.to_bytes())),
                Ok(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the stored model file is damaged (checksum mismatch)",
                )),
                Err(e) => Err(e),
            };
            if let Err(e) = &checked {
                tracing::error!(error = %e, "a model download ends early");
            }
            return Some((checked, (file, 0, None)));
        }
        let mut chunk = vec![0u8; left.min(64 * 1024) as usize];
        match file.read(&mut chunk).await {
            Ok(0) => Some((
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the artifact file ended early",
                )),
                (file, 0, None),
            )),
            Ok(n) => {
                chunk.truncate(n);
                let sums = sums.map(|mut sums| {
                    sums.old.update(&chunk);
                    sums.new.update(&chunk);
                    sums
                });
                Some((Ok(bytes::Bytes::from(chunk)), (file, left - n as u64, sums)))
            }
            Err(e) => Some((Err(e), (file, 0, None))),
        }
    })
}
