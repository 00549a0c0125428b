//! Labeling sessions (`annotations` in paths): creating them from documents of the project or
//! from labeled documents, reading them with their documents, and changing or deleting them.
//! Tags and marks on their segments live in [`crate::routes::annotate`].

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PageInfo, Paging, PathParams, QueryParams, WriteBody, also_immutable, parse_query};
use crate::routes::classes::{ClassDto, LabelDto};
use crate::routes::documents::{Details, DocumentDto, MAX_UPLOAD_BYTES, document_dtos, language, language_for};
use crate::routes::labeled::{
    ColumnMappingBody, LabeledDocumentBody, check_labeled, prepare_all, session_file, start_from_file,
};
use crate::routes::paths::ProjectPath;
use crate::routes::rfc3339;
use crate::routes::sources::SourceRequest;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::labeling::{SessionMode, SessionStatus};
use lector_core::validate::Problems;
use lector_core::{Action, Result};
use lector_store::{NewSession, Session, SessionChanges, SessionFilter};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_labeling_sessions, create_labeling_session))
        .routes(routes!(
            get_labeling_session,
            update_labeling_session,
            delete_labeling_session
        ))
        .routes(routes!(list_labeling_session_documents))
        .routes(routes!(get_labeling_session_document))
}

/// Document ids one request may name.
pub const MAX_DOCUMENT_IDS: usize = 100_000;
/// Longest session name and description, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 200;
const MAX_DESCRIPTION_CHARS: usize = 2000;

/// The fields every session answer has; the class and label lists differ by operation.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionCore {
    pub id: i64,
    pub uuid: String,
    pub name: String,
    pub description: String,
    pub created: String,
    pub finished: Option<String>,
    pub document_count: i64,
    /// All segments of the session's documents.
    pub segment_count: i64,
    /// Segments marked annotated.
    pub annotated_count: i64,
    pub document_group_id: Option<i64>,
    /// The workspace.
    pub organization_id: i64,
    pub user_id: i64,
    pub project_id: i64,
    /// Annotated segments over all segments, in [0, 1].
    pub progress: f64,
    pub model_id: Option<i64>,
    pub status: String,
    pub mode: String,
    /// The project type, which fixes the shape of tags.
    #[serde(rename = "type")]
    pub kind: String,
}

impl SessionCore {
    pub(crate) fn new(session: Session, kind: lector_core::ProjectType) -> Self {
        Self {
            progress: session.progress(),
            id: session.id,
            uuid: session.uuid,
            name: session.name,
            description: session.description,
            created: rfc3339(session.created),
            finished: session.finished.map(rfc3339),
            document_count: session.document_count,
            segment_count: session.segment_count,
            annotated_count: session.annotated_count,
            document_group_id: session.document_group_id,
            organization_id: session.workspace_id,
            user_id: session.user_id,
            project_id: session.project_id,
            model_id: session.model_id,
            status: session.status.as_str().into(),
            mode: session.mode.as_str().into(),
            kind: kind.as_str().into(),
        }
    }
}

/// A labeling session, with the names of the classes and labels it offers.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionDto {
    #[serde(flatten)]
    pub session: SessionCore,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    /// The task that fills a session created from a labeled-data file (in the answer that
    /// creates it only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<i64>,
}

/// Shapes a session for an answer, with its class and label names.
pub async fn session_dto(state: &AppState, session: Session) -> Result<SessionDto> {
    let vocabulary = state.store.session_vocabulary(&session).await?;
    Ok(SessionDto {
        session: SessionCore::new(session, vocabulary.kind),
        classes: vocabulary.classes.into_iter().map(|c| c.name).collect(),
        labels: vocabulary.labels.into_iter().map(|l| l.name).collect(),
        task_id: None,
    })
}

fn check_names(problems: &mut Problems, field: &str, names: &Option<Vec<String>>) {
    if let Some(names) = names {
        problems.check(names.len() <= 1000, field, "name at most 1000");
    }
}

/// The fields creating and updating a session share, for validation.
struct SessionFields<'a> {
    name: &'a Option<String>,
    description: &'a Option<String>,
    document_ids: &'a Option<Vec<i64>>,
    documents: &'a Option<Vec<LabeledDocumentBody>>,
    classes: &'a Option<Vec<String>>,
    labels: &'a Option<Vec<String>>,
}

/// The [`SessionFields`] of a create or an update body, which name them alike.
macro_rules! session_fields {
    ($body:expr) => {
        SessionFields {
            name: &$body.name,
            description: &$body.description,
            document_ids: &$body.document_ids,
            documents: &$body.documents,
            classes: &$body.classes,
            labels: &$body.labels,
        }
    };
}

fn check_session_fields(problems: &mut Problems, fields: SessionFields<'_>) {
    if let Some(name) = fields.name {
        problems.name("name", name, MAX_NAME_CHARS);
    }
    if let Some(description) = fields.description {
        problems.max_len("description", description, MAX_DESCRIPTION_CHARS);
    }
    if let Some(ids) = fields.document_ids {
        problems.check(
            ids.len() <= MAX_DOCUMENT_IDS,
            "document_ids",
            &format!("name at most {MAX_DOCUMENT_IDS} documents"),
        );
    }
    check_labeled(problems, fields.documents);
    check_names(problems, "classes", fields.classes);
    check_names(problems, "labels", fields.labels);
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSessionBody {
    /// Default: "Session" and the time.
    pub name: Option<String>,
    pub description: Option<String>,
    /// Tag and mark annotated the documents whose attributes (`class`, `aspect`, `label`,
    /// `sentiment`, …) name the session's classes and labels.
    pub auto: Option<bool>,
    /// Take a random sample of this many documents (seeded by `seed`, default 0).
    pub sample_size: Option<i64>,
    pub seed: Option<u64>,
    /// Existing documents of the project. With neither these nor `documents`, the session
    /// takes every document of the project.
    pub document_ids: Option<Vec<i64>>,
    /// New documents with their tags.
    pub documents: Option<Vec<LabeledDocumentBody>>,
    /// Class names the session offers (default: all of the project's).
    pub classes: Option<Vec<String>>,
    /// Label names the session offers (default: all of the project's).
    pub labels: Option<Vec<String>>,
    /// A labeled-data file from `upload_labeling_file` (with `show_preview`) or a connect
    /// operation: its rows become documents with tags.
    #[schema(value_type = Option<String>, format = "uuid")]
    pub file_id: Option<uuid::Uuid>,
    /// Which columns of the file hold what (default: the columns named so).
    pub column_mapping: Option<ColumnMappingBody>,
    /// Read the labeled data from an external source instead: a credential of the workspace,
    /// its kind (http, postgres, s3) and what to read.
    pub credential_id: Option<i64>,
    pub source: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub parameters: Option<serde_json::Value>,
    /// The language of the file's texts: en (default), de or ar.
    pub language: Option<String>,
}

/// The fields of a session the server owns: no creation or change sets them.
const SESSION_IMMUTABLE: &[&str] = &[
    "id",
    "uuid",
    "created",
    "finished",
    "status",
    "progress",
    "mode",
    "type",
    "document_count",
    "segment_count",
    "annotated_count",
];

impl WriteBody for CreateSessionBody {
    const MAX_BYTES: usize = MAX_UPLOAD_BYTES;
    const IMMUTABLE: &'static [&'static str] = SESSION_IMMUTABLE;

    fn validate(&self, problems: &mut Problems) {
        check_session_fields(problems, session_fields!(self));
        if let Some(size) = self.sample_size {
            problems.check(size >= 1, "sample_size", "must be at least 1");
            problems.check(
                self.documents.is_none(),
                "sample_size",
                "samples existing documents; it does not go with documents",
            );
        }
        language(&self.language, problems);
        let from_file = self.file_id.is_some() || self.credential_id.is_some();
        problems.check(
            !(self.file_id.is_some() && self.credential_id.is_some()),
            "file_id",
            "give a file_id or a source, not both",
        );
        problems.check(
            !from_file || self.documents.is_none(),
            "documents",
            "give documents or a file, not both",
        );
        problems.check(
            !from_file || self.sample_size.is_none(),
            "sample_size",
            "samples existing documents; it does not go with a file",
        );
        problems.check(
            from_file || self.column_mapping.is_none(),
            "column_mapping",
            "applies only with a file_id or a source",
        );
        if let Some(mapping) = &self.column_mapping {
            problems.check(
                mapping.class.is_none() || mapping.aspect.is_none(),
                "column_mapping.aspect",
                "give class or aspect, not both",
            );
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct SessionPath {
    pub(crate) project_id: i64,
    /// A correction session's routes name it `correction_id`.
    #[serde(alias = "correction_id")]
    pub(crate) annotation_id: i64,
}

impl SessionPath {
    /// The session the path names, as the caller may read it.
    pub(crate) async fn session(&self, state: &AppState, caller: &Caller) -> Result<Session> {
        state
            .store
            .session(&caller.scope, self.project_id, self.annotation_id)
            .await
    }

    /// The correction session the path names, if the caller may do `action` with it; a
    /// labeling session is not found here.
    pub(crate) async fn correction(&self, state: &AppState, caller: &Caller, action: Action) -> Result<Session> {
        state
            .store
            .correction(&caller.scope, self.project_id, self.annotation_id, action)
            .await
    }
}

#[derive(Debug, Deserialize)]
pub struct SessionDocumentPath {
    project_id: i64,
    annotation_id: i64,
    document_id: i64,
}

/// Creates a labeling session from documents of the project (all, chosen, or a seeded sample)
/// and from labeled documents; `auto` tags documents whose attributes name its classes. From a
/// labeled-data file (`file_id` or a source), the session answers STARTED with the `task_id`
/// that fills it.
#[utoipa::path(post, path = "/projects/{project_id}/annotations", tag = "labeling sessions",
    params(("project_id" = i64, Path)), request_body = CreateSessionBody,
    responses((status = 201, body = SessionDto)))]
pub async fn create_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(mut body): Body<CreateSessionBody>,
) -> ApiResult<(StatusCode, Json<SessionDto>)> {
    let language = language_for(&state, &caller, p.project_id, body.language.take()).await?;
    let source = SourceRequest::from_fields(body.credential_id, body.source, body.parameters)?;
    let file = session_file(&state, &caller, p.project_id, body.file_id, source).await?;
    // Documents given, if none (`"documents": []`), as document_ids given and empty: a session
    // of no documents, not one of all the project's (SPEC §4.6: all only when neither is given).
    let document_ids = match (&body.documents, body.document_ids) {
        (Some(documents), None) if documents.is_empty() => Some(Vec::new()),
        (_, ids) => ids,
    };
    let new = NewSession {
        name: body
            .name
            .unwrap_or_else(|| format!("Session {}", rfc3339(lector_core::time::Timestamp::now()))),
        description: body.description.unwrap_or_default(),
        classes: body.classes,
        labels: body.labels,
        document_ids,
        labeled: prepare_all(body.documents, language.clone()).await?,
        sample: body.sample_size.map(|size| (size as usize, body.seed.unwrap_or(0))),
        auto: body.auto.unwrap_or(false),
    };
    if let Some(upload) = &file {
        let (session, task_id) = start_from_file(
            &state,
            &caller,
            p.project_id,
            new,
            upload,
            body.column_mapping,
            language,
        )
        .await?;
        tracing::info!(
            project.id = p.project_id,
            session.id = session.id,
            job.id = task_id,
            "labeling session queued for its file"
        );
        let mut answer = session_dto(&state, session).await?;
        answer.task_id = Some(task_id);
        return Ok((StatusCode::CREATED, Json(answer)));
    }
    let session = state.store.create_session(&caller.scope, p.project_id, new).await?;
    tracing::info!(
        project.id = p.project_id,
        session.id = session.id,
        "labeling session created"
    );
    Ok((StatusCode::CREATED, Json(session_dto(&state, session).await?)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSessionsQuery {
    /// ANNOTATION, CORRECTION, or both separated by a comma.
    pub mode: Option<String>,
    /// One session status.
    pub status: Option<String>,
}

/// The project's labeling sessions, oldest first.
#[utoipa::path(get, path = "/projects/{project_id}/annotations", tag = "labeling sessions",
    params(("project_id" = i64, Path), ListSessionsQuery), responses((status = 200, body = Vec<SessionDto>)))]
pub async fn list_labeling_sessions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<ListSessionsQuery>,
) -> ApiResult<Json<Vec<SessionDto>>> {
    let modes = q
        .mode
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter(|m| !m.trim().is_empty())
        .map(|m| parse_query::<SessionMode>("mode", m))
        .collect::<Result<Vec<_>>>()?;
    let status = q
        .status
        .as_deref()
        .map(|s| parse_query::<SessionStatus>("status", s))
        .transpose()?;
    let sessions = state
        .store
        .sessions(&caller.scope, p.project_id, &SessionFilter { modes, status })
        .await?;
    let mut answer = Vec::with_capacity(sessions.len());
    for session in sessions {
        answer.push(session_dto(&state, session).await?);
    }
    Ok(Json(answer))
}

/// A labeling session with its progress.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/{annotation_id}", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path)), responses((status = 200, body = SessionDto)))]
pub async fn get_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
) -> ApiResult<Json<SessionDto>> {
    let session = p.session(&state, &caller).await?;
    Ok(Json(session_dto(&state, session).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSessionBody {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Documents of the project to add.
    pub document_ids: Option<Vec<i64>>,
    /// New labeled documents to add.
    pub documents: Option<Vec<LabeledDocumentBody>>,
    /// The class names the session offers from now on.
    pub classes: Option<Vec<String>>,
    pub labels: Option<Vec<String>>,
}

impl WriteBody for UpdateSessionBody {
    const MAX_BYTES: usize = MAX_UPLOAD_BYTES;
    const IMMUTABLE: &'static [&'static str] = &also_immutable::<16>(
        SESSION_IMMUTABLE,
        &[
            "project_id",
            "organization_id",
            "user_id",
            "document_group_id",
            "model_id",
        ],
    );

    fn validate(&self, problems: &mut Problems) {
        check_session_fields(problems, session_fields!(self));
    }
}

/// Renames a session, changes the classes and labels it offers, and adds documents to it.
#[utoipa::path(put, path = "/projects/{project_id}/annotations/{annotation_id}", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path)), request_body = UpdateSessionBody,
    responses((status = 200, body = SessionDto)))]
pub async fn update_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
    Body(body): Body<UpdateSessionBody>,
) -> ApiResult<Json<SessionDto>> {
    let language = language_for(&state, &caller, p.project_id, None).await?;
    let changes = SessionChanges {
        name: body.name,
        description: body.description,
        classes: body.classes,
        labels: body.labels,
        document_ids: body.document_ids.unwrap_or_default(),
        labeled: prepare_all(body.documents, language).await?,
    };
    let session = state
        .store
        .update_session(&caller.scope, p.project_id, p.annotation_id, changes)
        .await?;
    Ok(Json(session_dto(&state, session).await?))
}

/// Deletes a session with its tags and marks; its documents stay in the project.
#[utoipa::path(delete, path = "/projects/{project_id}/annotations/{annotation_id}", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path)), responses((status = 200, body = SessionDto)))]
pub async fn delete_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
) -> ApiResult<Json<SessionDto>> {
    let session = p.session(&state, &caller).await?;
    let answer = session_dto(&state, session).await?;
    state
        .store
        .delete_session(&caller.scope, p.project_id, p.annotation_id)
        .await?;
    Ok(Json(answer))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionDocumentsQuery {
    /// Comma-separated: segments, meta, tags.
    pub details: Option<String>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

/// A session with one page of its documents, and the classes and labels it offers in full.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionDocumentsDto {
    #[serde(flatten)]
    pub session: SessionCore,
    pub classes: Vec<ClassDto>,
    pub labels: Vec<LabelDto>,
    pub documents: Vec<DocumentDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

/// A session with a page of its documents in id order; `details=tags` shows the session's tags
/// and each segment's status.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/{annotation_id}/documents", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), SessionDocumentsQuery),
    responses((status = 200, body = SessionDocumentsDto)))]
pub async fn list_labeling_session_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
    QueryParams(q): QueryParams<SessionDocumentsQuery>,
) -> ApiResult<Json<SessionDocumentsDto>> {
    let paging = Paging::checked(q.offset, q.limit)?;
    let mut details = Details::parse(q.details.as_deref())?;
    let (session, documents, has_more) = state
        .store
        .session_documents(
            &caller.scope,
            p.project_id,
            p.annotation_id,
            paging.offset,
            paging.limit,
        )
        .await?;
    let vocabulary = state.store.session_vocabulary(&session).await?;
    details.session = Some(session.clone());
    let documents = document_dtos(&state, documents, details).await?;
    Ok(Json(SessionDocumentsDto {
        session: SessionCore::new(session, vocabulary.kind),
        classes: vocabulary.classes.into_iter().map(ClassDto::from).collect(),
        labels: vocabulary.labels.into_iter().map(LabelDto::from).collect(),
        page: paging.page(documents.len(), has_more),
        documents,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionDocumentQuery {
    /// Comma-separated: segments, meta, tags (segments and tags are always given).
    pub details: Option<String>,
}

/// A document of a session with its segments, the session's tags on them and their status.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path), SessionDocumentQuery),
    responses((status = 200, body = DocumentDto)))]
pub async fn get_labeling_session_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionDocumentPath>,
    QueryParams(q): QueryParams<SessionDocumentQuery>,
) -> ApiResult<Json<DocumentDto>> {
    let mut details = Details::parse(q.details.as_deref())?;
    details.segments = true;
    details.tags = true;
    let (session, document) = state
        .store
        .session_document(
            &caller.scope,
            p.project_id,
            p.annotation_id,
            p.document_id,
            Action::Read,
        )
        .await?;
    details.session = Some(session);
    Ok(Json(document_dtos(&state, vec![document], details).await?.remove(0)))
}
