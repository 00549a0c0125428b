//! `upload_labeling_file`: a file of labeled data uploaded for a new labeling session. With
//! `show_preview` the file is kept and previewed for a `create_labeling_session` that maps its
//! columns; otherwise the session is created at once and a task fills it from the file (the
//! rules for labeled data are in [`crate::routes::labeled`]).

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::PathParams;
use crate::routes::document_uploads::is_document;
use crate::routes::documents::language_for;
use crate::routes::files::{UploadedFileDto, discard, preview_upload, receive_upload_with};
use crate::routes::labeled::{file_columns, start_from_file};
use crate::routes::paths::ProjectPath;
use crate::routes::sessions::{MAX_NAME_CHARS, SessionDto, session_dto};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_store::NewSession;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(upload_labeling_file))
}

/// The multipart form of `upload_labeling_file`.
#[derive(Debug, ToSchema)]
#[expect(
    dead_code,
    reason = "describes the form in the OpenAPI document; the handler reads the multipart stream"
)]
pub struct LabelingUploadForm {
    /// Labeled data: CSV, JSON, JSONL or XLSX with a header row (`text`, `class` or `aspect`,
    /// `label`; a session download has these); or a PDF or image, which becomes one document
    /// of pages to annotate.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// true: keep the file and answer its id and preview, for `create_labeling_session` with a
    /// `file_id` and a `column_mapping`. false (default): create the session from it (a task).
    show_preview: Option<bool>,
}

/// What `upload_labeling_file` answers: the file's preview, or the session made from it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LabelingUpload {
    Preview(UploadedFileDto),
    Session(Box<SessionDto>),
}

/// Uploads labeled data: with `show_preview`, answers the file's id and preview; otherwise
/// answers a labeling session (STARTED) that the task `task_id` fills from the file, its
/// columns found by their names.
#[utoipa::path(post, path = "/projects/{project_id}/annotations/upload", tag = "labeling sessions",
    params(("project_id" = i64, Path)),
    request_body(content = LabelingUploadForm, content_type = "multipart/form-data"),
    responses((status = 200, body = LabelingUpload)))]
pub async fn upload_labeling_file(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    form: std::result::Result<axum::extract::Multipart, axum::extract::multipart::MultipartRejection>,
) -> ApiResult<Json<LabelingUpload>> {
    let (upload, flags) = receive_upload_with(
        &state,
        &caller,
        lector_store::UploadFor::Project(p.project_id),
        form?,
        &["show_preview"],
    )
    .await?;
    if flags.iter().any(|(_, on)| *on) {
        let preview = preview_upload(&state, upload).await?;
        return Ok(Json(LabelingUpload::Preview(preview)));
    }
    let session = session_from_upload(&state, &caller, p.project_id, upload).await?;
    Ok(Json(LabelingUpload::Session(Box::new(session))))
}

/// A labeling session (STARTED) named after the file, that a task fills from it, its columns
/// found by their names; a file whose header does not fit is refused and not kept.
pub(crate) async fn session_from_upload(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    upload: lector_store::Upload,
) -> lector_core::Result<SessionDto> {
    let language = language_for(state, caller, project_id, None).await?;
    // The file's name without its extension; a name that is only an extension (".csv") whole.
    let name = upload
        .file_name
        .rsplit_once('.')
        .map(|(stem, _)| stem.trim())
        .filter(|stem| !stem.is_empty())
        .unwrap_or(upload.file_name.as_str());
    let new = NewSession {
        name: name.chars().take(MAX_NAME_CHARS).collect(),
        ..NewSession::default()
    };
    if !is_document(&upload)
        && let Err(e) = file_columns(state, &upload, None).await
    {
        discard(state, &upload).await;
        return Err(e);
    }
    let started = start_from_file(state, caller, project_id, new, &upload, None, language).await;
    let (session, task_id) = match started {
        Ok(started) => started,
        Err(e) => {
            discard(state, &upload).await;
            return Err(e);
        }
    };
    let mut answer = session_dto(state, session).await?;
    answer.task_id = Some(task_id);
    Ok(answer)
}
