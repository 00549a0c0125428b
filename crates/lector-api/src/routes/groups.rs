//! Document groups: created from documents given whole (or filled by an upload's import),
//! listed, renamed, extended, deleted, and read with their documents.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, QueryParams, WholeList, WriteBody};
use crate::routes::body_limits::check_meta;
use crate::routes::documents::{
    Details, DocumentDto, UploadBody, UploadOptions, UploadedDocument, check_text, document_dtos, language_for,
    off_runtime,
};
use crate::routes::paths::{GroupPath, ProjectPath};
use crate::routes::rfc3339;
use crate::routes::sources::{SourceRequest, fetch_to_upload};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use lector_core::validate::{MAX_NAME_CHARS, Problems};
use lector_core::{Error, ErrorCode, FieldError, Result};
use lector_jobs::prepare_document;
use lector_store::{DocumentFilter, DocumentGroup, FileSource, ImportOptions, ImportedDocument, NewDocument, Upload};
use lector_text::{ColumnRef, Language};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_documents))
        .routes(routes!(list_groups, create_group))
        .routes(routes!(get_group, update_group, delete_group))
        .routes(routes!(list_group_documents))
        .routes(routes!(get_group_document))
}

/// Most documents a group takes in one synchronous call; larger sets go through upload_documents.
pub const MAX_GROUP_DOCUMENTS: usize = 10_000;

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupDto {
    pub id: i64,
    pub name: String,
    pub created: String,
    pub document_count: i64,
    pub project_id: i64,
    /// Where the documents came from, in the original interface's values: UPLOAD (given through
    /// the API or a file), ANNOTATIONS (with a labeling session) or ANALYSIS.
    pub source: String,
    /// PROCESSING while an import fills it, then CREATED.
    pub status: String,
    /// The task filling the group, for get_project_task.
    pub task_id: Option<i64>,
}

/// The original client accepts only ANALYSIS, UPLOAD and ANNOTATIONS; the store keeps finer
/// origins (`api`, `file`, `upload`, `session`, `analysis`), served as the value they belong to.
fn wire_source(stored: &str) -> &'static str {
    match stored {
        "session" | "ANNOTATIONS" => "ANNOTATIONS",
        "analysis" | "ANALYSIS" => "ANALYSIS",
        _ => "UPLOAD",
    }
}

impl From<DocumentGroup> for GroupDto {
    fn from(g: DocumentGroup) -> Self {
        Self {
            id: g.id,
            name: g.name,
            created: rfc3339(g.created),
            document_count: g.document_count,
            project_id: g.project_id,
            source: wire_source(&g.source).into(),
            status: g.status,
            task_id: g.task_id,
        }
    }
}

/// Normalises and splits documents on a blocking thread; the caller has checked that the caller
/// may edit the project (`language_for`).
async fn prepare_all(
    documents: Vec<UploadedDocument>,
    language: Option<&str>,
    split: Option<bool>,
) -> Result<Vec<NewDocument>> {
    if documents.is_empty() {
        return Ok(Vec::new());
    }
    let language = Language::from_code_or_default(language);
    off_runtime(move || {
        Ok(documents
            .into_iter()
            .map(|d| {
                let mut meta = d.meta.unwrap_or_default();
                if let Some(id) = d.id {
                    meta.insert("external_id".into(), id.into());
                }
                prepare_document(
                    &d.text,
                    serde_json::Value::Object(meta),
                    language,
                    split.unwrap_or(true),
                )
            })
            .collect())
    })
    .await
}

/// The fields of a group the server owns, refused in a group's creation and its change.
const GROUP_OWNED: &[&str] = &["id", "created", "status", "document_count", "project_id"];

/// What a group's creation and its change both check: the name (when given) and the new
/// documents.
fn check_name_and_documents(problems: &mut Problems, name: Option<&str>, documents: &[UploadedDocument]) {
    if let Some(name) = name {
        problems.name("name", name, MAX_NAME_CHARS);
    }
    problems.check(
        documents.len() <= MAX_GROUP_DOCUMENTS,
        "documents",
        &format!("at most {MAX_GROUP_DOCUMENTS} documents per call; upload larger sets with upload_documents"),
    );
    for (i, d) in documents.iter().enumerate().take(MAX_GROUP_DOCUMENTS) {
        check_document(problems, &format!("documents[{i}]"), d);
        if problems.0.len() >= 20 {
            break;
        }
    }
}

/// Checks an uploaded document's text (`check_text`: not empty, at most `MAX_DOCUMENT_CHARS`)
/// and meta (`check_meta`), as every route that takes documents does.
pub(crate) fn check_document(problems: &mut Problems, field: &str, d: &UploadedDocument) {
    check_text(problems, &format!("{field}.text"), &d.text);
    check_meta(
        problems,
        &format!("{field}.meta"),
        d.meta.as_ref(),
        usize::from(d.id.is_some()),
    );
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGroupBody {
    /// Default: "Group" and the time (as upload_documents names its group "Upload" and the time).
    pub name: Option<String>,
    #[serde(default)]
    pub documents: Vec<UploadedDocument>,
    pub language: Option<String>,
    /// `false` keeps each document whole as one segment.
    pub split: Option<bool>,
    /// A file from `upload_group_file` to fill the group from, as an import task (the group
    /// answers PROCESSING with its `task_id`).
    #[schema(value_type = Option<String>, format = "uuid")]
    pub file_id: Option<uuid::Uuid>,
    /// The 0-based index of the file's text column (deprecated: use `column_name`).
    #[schema(deprecated)]
    pub column: Option<i64>,
    /// The name of the file's text column; the other columns go into each document's meta.
    /// Without it or `column`: the column named `text` where there is one, else the first.
    pub column_name: Option<String>,
    /// Whether the file's first row is a header (default: true, but false for TXT).
    pub header_first: Option<bool>,
    /// Read the documents from an external source instead of a `file_id`: a credential of the
    /// workspace, its kind (http, postgres, s3) and what to read (as `connect_group_source`).
    pub credential_id: Option<i64>,
    pub source: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<serde_json::Value>,
}

impl CreateGroupBody {
    /// The name given, trimmed, or "Group" and the time.
    fn group_name(&self) -> String {
        match &self.name {
            Some(name) => name.trim().to_owned(),
            None => format!("Group {}", rfc3339(lector_core::time::Timestamp::now())),
        }
    }
}

impl WriteBody for CreateGroupBody {
    const IMMUTABLE: &'static [&'static str] = GROUP_OWNED;
    const MAX_BYTES: usize = crate::routes::documents::MAX_UPLOAD_BYTES;

    fn validate(&self, problems: &mut Problems) {
        check_name_and_documents(problems, self.name.as_deref(), &self.documents);
        crate::routes::documents::language(&self.language, problems);
        let from_file = self.file_id.is_some() || self.credential_id.is_some();
        problems.check(
            !from_file || self.documents.is_empty(),
            "file_id",
            "give documents, a file_id or a source, not two of them",
        );
        problems.check(
            !(self.file_id.is_some() && self.credential_id.is_some()),
            "credential_id",
            "give a file_id or a source, not both",
        );
        for (field, given) in [
            ("column", self.column.is_some()),
            ("column_name", self.column_name.is_some()),
            ("header_first", self.header_first.is_some()),
        ] {
            problems.check(from_file || !given, field, "applies only with a file_id or a source");
        }
        problems.check(
            self.column.is_none() || self.column_name.is_none(),
            "column",
            "give column or column_name, not both",
        );
        problems.check(self.column.is_none_or(|c| c >= 0), "column", "must be 0 or more");
    }
}

#[derive(Debug, Deserialize)]
pub struct GroupDocumentPath {
    project_id: i64,
    group_id: i64,
    document_id: i64,
}

/// Creates a group from documents given whole, in one step, or from an uploaded file, as an
/// import task (answered at once with the group in PROCESSING, its `task_id` and a `Location`).
/// Without a `name` the group is called "Group" and the time.
#[utoipa::path(post, path = "/projects/{project_id}/groups", tag = "groups", params(("project_id" = i64, Path)),
    request_body = CreateGroupBody, responses((status = 201, body = GroupDto)))]
pub async fn create_group(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(mut body): Body<CreateGroupBody>,
) -> ApiResult<Response> {
    body.language = Some(language_for(&state, &caller, p.project_id, body.language).await?);
    let source = SourceRequest::from_fields(body.credential_id, body.source.take(), body.parameters.take())?;
    let file_id = match (body.file_id, source) {
        (Some(id), _) => Some(id),
        (None, Some(source)) => Some(fetch_to_upload(&state, &caller, p.project_id, &source).await?.id),
        (None, None) => None,
    };
    if let Some(file_id) = file_id {
        return Ok(create_group_from_file(&state, &caller, p.project_id, file_id, body).await?);
    }
    let name = body.group_name();
    let documents = prepare_all(body.documents, body.language.as_deref(), body.split).await?;
    let group = state
        .store
        .create_group(&caller.scope, p.project_id, &name, documents)
        .await?;
    Ok((StatusCode::CREATED, Json(GroupDto::from(group))).into_response())
}

/// Refuses, now rather than in the job, an import its file cannot give, by what the upload's
/// preview recorded: a text column the file lacks (without a name, the column is `index`,
/// default 0), or more rows than `max_rows` when the first row is read as data too.
pub(crate) fn check_import(
    upload: &Upload,
    index: Option<usize>,
    name: Option<&str>,
    header_first: bool,
    max_rows: u64,
) -> Result<()> {
    let column = ColumnRef::chosen(index, name);
    let keyed = matches!(upload.format.as_str(), "json" | "jsonl");
    if let Some(first) = &upload.columns {
        let header: Vec<String> = if header_first || keyed {
            first.clone()
        } else {
            (0..first.len()).map(|i| i.to_string()).collect()
        };
        column.resolve(&header).map_err(Error::from)?;
    }
    let first_row_is_data = !header_first && !keyed;
    if let Some(rows) = upload.data_rows.filter(|_| first_row_is_data) {
        let rows = rows.saturating_add(1) as u64;
        if rows > max_rows {
            let mut error = Error::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "with its first row as data the file has {rows} rows, over the limit of {max_rows} per import (uploads.max_rows)"
                ),
            );
            error.errors.push(FieldError::new(
                "header_first",
                "the first row would be one row too many",
            ));
            return Err(error);
        }
    }
    Ok(())
}

async fn create_group_from_file(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    file_id: uuid::Uuid,
    body: CreateGroupBody,
) -> Result<Response> {
    let name = body.group_name();
    let upload = state.store.upload(&caller.scope, project_id, file_id).await?;
    let header_first = body.header_first.unwrap_or(upload.format != "txt");
    check_import(
        &upload,
        body.column.map(|c| c as usize),
        body.column_name.as_deref(),
        header_first,
        state.config.uploads.max_rows,
    )?;
    let source = FileSource {
        upload_id: upload.id,
        column_index: body.column.map(|c| c as usize),
        column_name: body.column_name,
        header_first,
        max_bytes: state.config.uploads.max_bytes,
        max_rows: state.config.uploads.max_rows,
    };
    let options = ImportOptions {
        language: Language::from_code_or_default(body.language.as_deref())
            .code()
            .to_owned(),
        split: body.split.unwrap_or(true),
        file: Some(source),
    };
    let group = state
        .store
        .start_file_import(&caller.scope, project_id, &name, &upload, options)
        .await?;
    tracing::info!(project.id = project_id, group.id = group.id, job.id = ?group.task_id, upload.id = %upload.id, "file import queued");
    let location = format!("/projects/{project_id}/groups/{}", group.id);
    let mut response = (StatusCode::CREATED, Json(GroupDto::from(group))).into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}

/// The document groups of a project, oldest first: the first thousand unless `offset` and
/// `limit` ask for another page. The answer is the original interface's bare array; when more
/// groups follow the page, a `Link` header (RFC 8288) names the next page with `rel="next"`.
#[utoipa::path(get, path = "/projects/{project_id}/groups", tag = "groups",
    params(("project_id" = i64, Path), WholeList),
    responses((status = 200, body = Vec<GroupDto>,
        headers(("Link" = String, description = "the next page, `<…?offset=…&limit=…>; rel=\"next\"`, when more groups follow")))))]
pub async fn list_groups(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<WholeList>,
) -> ApiResult<Response> {
    let paging = q.paging()?;
    let (groups, has_more) = state
        .store
        .groups(&caller.scope, p.project_id, paging.offset, paging.limit)
        .await?;
    let mut response = Json(groups.into_iter().map(GroupDto::from).collect::<Vec<_>>()).into_response();
    if has_more {
        let next = format!(
            "</projects/{}/groups?offset={}&limit={}>; rel=\"next\"",
            p.project_id,
            paging.offset + paging.limit,
            paging.limit
        );
        if let Ok(value) = HeaderValue::from_str(&next) {
            response.headers_mut().insert(header::LINK, value);
        }
    }
    Ok(response)
}

/// A document group.
#[utoipa::path(get, path = "/projects/{project_id}/groups/{group_id}", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path)), responses((status = 200, body = GroupDto)))]
pub async fn get_group(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupPath>,
) -> ApiResult<Json<GroupDto>> {
    let group = state.store.group(&caller.scope, p.project_id, p.group_id).await?;
    Ok(Json(group.into()))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateGroupBody {
    pub name: Option<String>,
    /// Documents of the project to move into the group.
    #[serde(default)]
    pub document_ids: Vec<i64>,
    /// New documents to add to the group.
    #[serde(default)]
    pub documents: Vec<UploadedDocument>,
    pub language: Option<String>,
    pub split: Option<bool>,
}

impl WriteBody for UpdateGroupBody {
    const IMMUTABLE: &'static [&'static str] = GROUP_OWNED;
    const MAX_BYTES: usize = crate::routes::documents::MAX_UPLOAD_BYTES;

    fn validate(&self, problems: &mut Problems) {
        check_name_and_documents(problems, self.name.as_deref(), &self.documents);
        crate::routes::documents::language(&self.language, problems);
        problems.check(
            self.document_ids.len() <= MAX_GROUP_DOCUMENTS,
            "document_ids",
            "too many ids",
        );
    }
}

/// Renames a group and adds documents to it; adds none while an import fills it (409).
#[utoipa::path(put, path = "/projects/{project_id}/groups/{group_id}", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path)), request_body = UpdateGroupBody,
    responses((status = 200, body = GroupDto), (status = 409, description = "an import is filling the group")))]
pub async fn update_group(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupPath>,
    Body(mut body): Body<UpdateGroupBody>,
) -> ApiResult<Json<GroupDto>> {
    let language = language_for(&state, &caller, p.project_id, body.language.take()).await?;
    let documents = prepare_all(body.documents, Some(&language), body.split).await?;
    let name = body.name.as_deref().map(str::trim);
    let group = state
        .store
        .update_group(
            &caller.scope,
            p.project_id,
            p.group_id,
            name,
            &body.document_ids,
            documents,
        )
        .await?;
    Ok(Json(group.into()))
}

/// Deletes a group; its documents stay in the project, ungrouped.
#[utoipa::path(delete, path = "/projects/{project_id}/groups/{group_id}", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path)), responses((status = 200, body = GroupDto)))]
pub async fn delete_group(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupPath>,
) -> ApiResult<Json<GroupDto>> {
    let group = state
        .store
        .delete_group(&caller.scope, p.project_id, p.group_id)
        .await?;
    Ok(Json(group.into()))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GroupDocumentsQuery {
    pub details: Option<String>,
    pub search: Option<String>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

async fn group_documents(
    state: &AppState,
    caller: &Caller,
    p: &GroupPath,
    q: GroupDocumentsQuery,
) -> Result<Vec<DocumentDto>> {
    let paging = crate::extract::Paging::checked(q.offset, q.limit)?;
    let group = state.store.group(&caller.scope, p.project_id, p.group_id).await?;
    let filter = DocumentFilter {
        search: q.search.as_deref().map(lector_text::normalize),
        group_id: Some(group.id),
        ..DocumentFilter::default()
    };
    let (documents, _) = state
        .store
        .documents(&caller.scope, p.project_id, &filter, paging.offset, paging.limit)
        .await?;
    document_dtos(state, documents, Details::parse(q.details.as_deref())?).await
}

/// The documents of a group, in id order.
#[utoipa::path(get, path = "/projects/{project_id}/groups/{group_id}/documents", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path), GroupDocumentsQuery),
    responses((status = 200, body = Vec<DocumentDto>)))]
pub async fn list_group_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupPath>,
    QueryParams(q): QueryParams<GroupDocumentsQuery>,
) -> ApiResult<Json<Vec<DocumentDto>>> {
    Ok(Json(group_documents(&state, &caller, &p, q).await?))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GroupDocumentQuery {
    pub details: Option<String>,
}

/// A document of a group.
#[utoipa::path(get, path = "/projects/{project_id}/groups/{group_id}/documents/{document_id}", tag = "groups",
    params(("project_id" = i64, Path), ("group_id" = i64, Path), ("document_id" = i64, Path), GroupDocumentQuery),
    responses((status = 200, body = DocumentDto)))]
pub async fn get_group_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<GroupDocumentPath>,
    QueryParams(q): QueryParams<GroupDocumentQuery>,
) -> ApiResult<Json<DocumentDto>> {
    let document = state.store.document(&caller.scope, p.project_id, p.document_id).await?;
    if document.group_id != Some(p.group_id) {
        return Err(Error::not_found("document").into());
    }
    let mut details = Details::parse(q.details.as_deref())?;
    details.segments = true;
    Ok(Json(document_dtos(&state, vec![document], details).await?.remove(0)))
}

/// Uploads documents: answers 202 with the group they will fill (PROCESSING) and the task
/// that fills it; the group turns CREATED when every document is stored and segmented.
#[utoipa::path(post, path = "/projects/{project_id}/upload-documents", tag = "documents", params(("project_id" = i64, Path)),
    request_body = Vec<UploadedDocument>, responses((status = 202, body = GroupDto)))]
pub async fn upload_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<UploadBody>,
) -> ApiResult<Response> {
    let options = match body {
        UploadBody::List(documents) => UploadOptions {
            documents,
            name: None,
            language: None,
            split: None,
        },
        UploadBody::WithOptions(options) => options,
    };
    crate::routes::files::check_rows(&state, "documents", options.documents.len())?;
    let documents: Vec<ImportedDocument> = options
        .documents
        .into_iter()
        .map(|d| {
            let mut meta = d.meta.unwrap_or_default();
            if let Some(id) = d.id {
                meta.insert("external_id".into(), id.into());
            }
            ImportedDocument { text: d.text, meta }
        })
        .collect();
    let name = options.name.map_or_else(
        || format!("Upload {}", rfc3339(lector_core::time::Timestamp::now())),
        |name| name.trim().to_owned(),
    );
    let language = language_for(&state, &caller, p.project_id, options.language).await?;
    let language = Language::from_code_or_default(Some(&language));
    let import = ImportOptions {
        language: language.code().to_owned(),
        split: options.split.unwrap_or(true),
        file: None,
    };
    let group = state
        .store
        .start_import(&caller.scope, p.project_id, &name, "upload", import, &documents)
        .await?;
    tracing::info!(project.id = p.project_id, group.id = group.id, job.id = ?group.task_id, "import queued");
    let location = format!("/projects/{}/groups/{}", p.project_id, group.id);
    let mut response = (StatusCode::ACCEPTED, Json(GroupDto::from(group))).into_response();
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    Ok(response)
}
