//! External sources: a workspace credential plus parameters (a URL, a query, an object key)
//! fetched once into an uploaded file, used afterwards like any upload: by `file_id` in
//! `create_group` and `create_labeling_session`, or inline by the same fields there;
//! `connect_labeling_source` makes the labeling session at once, as `upload_labeling_file` does.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::PathParams;
use crate::routes::files::{UploadedFileDto, bad_field, preview_upload, sniff};
use crate::routes::labeling_uploads::{LabelingUpload, session_from_upload};
use crate::routes::paths::ProjectPath;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartRejection};
use bytes::Bytes;
use lector_core::{Action, Error, ErrorCode, FieldError, Result, SourceKind};
use lector_text::Format;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(connect_group_source))
        .routes(routes!(connect_labeling_source))
}

/// Which source to read: a credential of the project's workspace, the kind of source it is
/// for, and what to read there (`{url}` for http, `{query}` for postgres, `{bucket, key}` for s3).
#[derive(Debug, Clone)]
pub struct SourceRequest {
    pub credential_id: i64,
    pub source: String,
    pub parameters: serde_json::Value,
}

impl SourceRequest {
    /// The source fields of a JSON body: all three, or none.
    pub fn from_fields(
        credential_id: Option<i64>,
        source: Option<String>,
        parameters: Option<serde_json::Value>,
    ) -> Result<Option<Self>> {
        match (credential_id, source) {
            (None, None) if parameters.is_none() => Ok(None),
            (Some(credential_id), Some(source)) => Ok(Some(Self {
                credential_id,
                source,
                parameters: parameters.unwrap_or_else(|| serde_json::json!({})),
            })),
            (None, _) => Err(Error::validation(vec![FieldError::new(
                "credential_id",
                "is required with a source",
            )])),
            (Some(_), None) => Err(Error::validation(vec![FieldError::new(
                "source",
                "is required with a credential_id",
            )])),
        }
    }
}

/// The multipart form of a connect operation.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct ConnectForm {
    /// A credential of the project's workspace.
    credential_id: i64,
    /// http, postgres or s3: the credential's kind.
    source: String,
    /// JSON: `{"url": …}` (http), `{"query": "SELECT …"}` (postgres) or `{"bucket": …, "key": …}` (s3).
    #[schema(value_type = Object)]
    parameters: Option<serde_json::Value>,
    /// `connect_labeling_source` only (the other refuses it): true keeps what was read and
    /// answers its id and preview, for `create_labeling_session` with a `file_id` and a
    /// `column_mapping`; false (default) creates the session from it.
    show_preview: Option<bool>,
}

/// A connect form: the source, and `show_preview` where `previews` allows it (else it is an
/// unknown field, as any other).
async fn read_connect_form(mut form: Multipart, previews: bool) -> Result<(SourceRequest, bool)> {
    let (mut credential_id, mut source, mut parameters, mut show_preview) = (None, None, None, false);
    while let Some(field) = form
        .next_field()
        .await
        .map_err(|e| Error::bad_request(format!("the form cannot be read: {e}")))?
    {
        let name = field.name().unwrap_or_default().to_owned();
        let value = field
            .text()
            .await
            .map_err(|e| Error::bad_request(format!("the form cannot be read: {e}")))?;
        match name.as_str() {
            "credential_id" => {
                credential_id = Some(
                    value
                        .trim()
                        .parse::<i64>()
                        .map_err(|_| bad_field("credential_id", "must be a number"))?,
                )
            }
            "source" => source = Some(value.trim().to_owned()),
            "parameters" => {
                parameters = Some(
                    serde_json::from_str(&value).map_err(|e| bad_field("parameters", &format!("is not JSON: {e}")))?,
                )
            }
            "show_preview" if previews => {
                show_preview = match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(bad_field("show_preview", "must be true or false")),
                }
            }
            other => {
                let mut error = Error::new(ErrorCode::UnknownField, format!("the form has no field `{other}`"));
                error.errors.push(FieldError::new(other, "unknown field"));
                return Err(error);
            }
        }
    }
    let request = SourceRequest::from_fields(credential_id, source, parameters)?
        .ok_or_else(|| bad_field("credential_id", "is required"))?;
    Ok((request, show_preview))
}

/// Fetches a source into an upload of the project and answers it with its preview.
pub async fn fetch_to_upload(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    request: &SourceRequest,
) -> Result<UploadedFileDto> {
    let upload = fetch_source(state, caller, project_id, request).await?;
    preview_upload(state, upload).await
}

/// Fetches a source into an upload of the project, not previewed yet.
async fn fetch_source(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    request: &SourceRequest,
) -> Result<lector_store::Upload> {
    let (project, _) = state
        .store
        .project_access(&caller.scope, project_id, Action::Edit)
        .await?;
    let kind: SourceKind = request
        .source
        .parse()
        .map_err(|_| bad_field("source", "must be http, postgres or s3"))?;
    let credential = state
        .store
        .credential_for_use(&caller.scope, project.workspace_id, request.credential_id)
        .await?;
    if credential.source != kind {
        return Err(bad_field(
            "source",
            &format!("credential {} is for {} sources", credential.id, credential.source),
        ));
    }
    let fetched = state
        .sources
        .fetch(
            project.workspace_id,
            kind,
            &credential.sealed_secret,
            &request.parameters,
        )
        .await?;
    let format = Format::from_file_name(&fetched.file_name)
        .or_else(|| sniff(&fetched.bytes))
        .ok_or_else(|| {
            Error::new(
                ErrorCode::UnsupportedMediaType,
                "the source did not deliver a CSV, TXT, JSON, JSONL or XLSX file",
            )
        })?;
    let bytes = Bytes::from(fetched.bytes);
    let chunks = futures_util::stream::once(async move { Ok::<Bytes, Error>(bytes) });
    let upload = state
        .store
        .save_upload(
            &caller.scope,
            lector_store::UploadFor::Project(project.id),
            &lector_core::validate::file_name(&fetched.file_name),
            format.extension(),
            Box::pin(chunks),
            state.config.uploads.max_bytes,
        )
        .await?;
    tracing::info!(project.id = project.id, credential.id = credential.id, source = %kind, "source fetched");
    Ok(upload)
}

/// Reads unlabeled data from an external source into an uploaded file: answers its id (for
/// `create_group`'s `file_id`) and a preview. A bad credential or an unreachable source
/// answers 400 with the reason, never the remote's answer.
#[utoipa::path(post, path = "/projects/{project_id}/groups/connect", tag = "groups",
    params(("project_id" = i64, Path)),
    request_body(content = ConnectForm, content_type = "multipart/form-data"),
    responses((status = 200, body = UploadedFileDto)))]
pub async fn connect_group_source(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    form: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<UploadedFileDto>> {
    let (request, _) = read_connect_form(form?, false).await?;
    Ok(Json(fetch_to_upload(&state, &caller, p.project_id, &request).await?))
}

/// Reads labeled data from an external source into a labeling session, as SPEC answers it: a
/// session (STARTED) that the task `task_id` fills from what was read, its columns found by
/// their names (`text`, `class` or `aspect`, `label`). With `show_preview`, answers the read
/// file's id and preview instead, for `create_labeling_session` with a `column_mapping`.
#[utoipa::path(post, path = "/projects/{project_id}/annotations/connect", tag = "labeling sessions",
    params(("project_id" = i64, Path)),
    request_body(content = ConnectForm, content_type = "multipart/form-data"),
    responses((status = 200, body = LabelingUpload)))]
pub async fn connect_labeling_source(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    form: std::result::Result<Multipart, MultipartRejection>,
) -> ApiResult<Json<LabelingUpload>> {
    let (request, show_preview) = read_connect_form(form?, true).await?;
    let upload = fetch_source(&state, &caller, p.project_id, &request).await?;
    if show_preview {
        return Ok(Json(LabelingUpload::Preview(preview_upload(&state, upload).await?)));
    }
    let session = session_from_upload(&state, &caller, p.project_id, upload).await?;
    Ok(Json(LabelingUpload::Session(Box::new(session))))
}
