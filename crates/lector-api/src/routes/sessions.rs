//! Labeling sessions (`annotations` in paths): creating them from documents of the project or
//! from labeled documents, reading them with their documents, and changing or deleting them.
//! Tags and marks on their segments live in [`crate::routes::annotate`].

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, Paging, PathParams, QueryParams, WriteBody};
use crate::routes::classes::{ClassDto, LabelDto};
use crate::routes::documents::{
    Details, DocumentDto, MAX_UPLOAD_BYTES, SegmentBody, check_text, document_dtos, language, language_for,
    prepare_document_body,
};
use crate::routes::rfc3339;
use crate::routes::sources::{SourceRequest, fetch_to_upload};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::labeling::{SessionMode, SessionStatus};
use lector_core::validate::Problems;
use lector_core::{Action, Error, ErrorCode, Result};
use lector_store::{LabeledDocument, NewSession, NewTag, Session, SessionChanges, SessionFilter};
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
        .routes(routes!(upload_labeling_file))
        .routes(routes!(download_labeling_sessions))
        .routes(routes!(download_labeling_session))
}

/// Labeled documents one request may bring.
pub const MAX_LABELED_DOCUMENTS: usize = 10_000;
/// Document ids one request may name.
pub const MAX_DOCUMENT_IDS: usize = 100_000;
/// Longest session name and description, in characters.
const MAX_NAME_CHARS: usize = 200;
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
    fn new(session: Session, kind: lector_core::ProjectType) -> Self {
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
}

/// Shapes a session for an answer, with its class and label names.
pub async fn session_dto(state: &AppState, session: Session) -> Result<SessionDto> {
    let vocabulary = state.store.session_vocabulary(&session).await?;
    Ok(SessionDto {
        session: SessionCore::new(session, vocabulary.kind),
        classes: vocabulary.classes.into_iter().map(|c| c.name).collect(),
        labels: vocabulary.labels.into_iter().map(|l| l.name).collect(),
    })
}

/// A tag as a client sends it: a class and/or a label by name, optionally on a part of the
/// segment given by span or text.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TagBody {
    pub class: Option<String>,
    pub label: Option<String>,
    /// `[start, end)` in code points of the document text, inside the segment.
    pub span: Option<[i64; 2]>,
    /// The words the tag points at (an aspect term), found in the segment when `span` is absent.
    pub text: Option<String>,
}

impl TagBody {
    /// The tag with no part; parts need the segment, which only the tag routes resolve.
    fn whole(&self) -> Result<NewTag> {
        if self.span.is_some() || self.text.is_some() {
            return Err(Error::validation(vec![lector_core::FieldError::new(
                "tags",
                "a tag of a new document covers its whole segment; add parts with add_segment_tag",
            )]));
        }
        Ok(NewTag {
            class: self.class.clone(),
            label: self.label.clone(),
            part: None,
        })
    }
}

/// A segment of a labeled document: its text (and where it lies), its tags, and whether it
/// counts as annotated (it does when it has tags).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabeledSegmentBody {
    pub text: String,
    pub span: Option<[usize; 2]>,
    #[serde(default)]
    pub tags: Vec<TagBody>,
    /// ANNOTATED marks the segment annotated even without tags.
    pub status: Option<String>,
}

/// A document that arrives with its labels, as a download of a session gives them back.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LabeledDocumentBody {
    pub text: String,
    /// The client's own id for the document, kept in its meta as `external_id`.
    pub id: Option<i64>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    pub language: Option<String>,
    /// Split the text into sentences (default: the whole text is one segment, unless
    /// `segments` are given).
    pub split: Option<bool>,
    /// The document's segments with their tags.
    pub segments: Option<Vec<LabeledSegmentBody>>,
    /// Tags for every segment of the document.
    #[serde(default)]
    pub tags: Vec<TagBody>,
}

impl LabeledDocumentBody {
    fn validate(&self, problems: &mut Problems, field: &str) {
        check_text(problems, &format!("{field}.text"), &self.text);
        language(&self.language, problems);
        if let Some(segments) = &self.segments {
            for (i, segment) in segments.iter().enumerate() {
                if let Some(status) = &segment.status {
                    problems.check(
                        status == lector_core::labeling::ANNOTATED,
                        &format!("{field}.segments[{i}].status"),
                        "must be ANNOTATED",
                    );
                }
            }
        }
    }

    fn prepare(self) -> Result<LabeledDocument> {
        let mut meta = self.meta.unwrap_or_default();
        if let Some(id) = self.id {
            meta.insert("external_id".into(), id.into());
        }
        let given: Option<Vec<SegmentBody>> = self.segments.as_ref().map(|segments| {
            segments
                .iter()
                .map(|s| SegmentBody {
                    text: s.text.clone(),
                    span: s.span,
                })
                .collect()
        });
        let document = prepare_document_body(
            &self.text,
            meta,
            self.language.as_deref(),
            self.split.unwrap_or(false),
            given.as_deref(),
        )?;
        let whole: Vec<NewTag> = self.tags.iter().map(TagBody::whole).collect::<Result<_>>()?;
        let count = document.segments.len();
        let (tags, annotated) = match &self.segments {
            Some(segments) => {
                let mut tags = Vec::with_capacity(count);
                let mut annotated = Vec::with_capacity(count);
                for segment in segments {
                    let mut own: Vec<NewTag> = segment.tags.iter().map(TagBody::whole).collect::<Result<_>>()?;
                    own.extend(whole.iter().cloned());
                    annotated.push(!own.is_empty() || segment.status.is_some());
                    tags.push(own);
                }
                (tags, annotated)
            }
            None => (vec![whole.clone(); count], vec![!whole.is_empty(); count]),
        };
        Ok(LabeledDocument {
            document,
            tags,
            annotated,
        })
    }
}

fn check_labeled(problems: &mut Problems, documents: &Option<Vec<LabeledDocumentBody>>) {
    let Some(documents) = documents else { return };
    problems.check(
        documents.len() <= MAX_LABELED_DOCUMENTS,
        "documents",
        &format!("send at most {MAX_LABELED_DOCUMENTS} documents per request"),
    );
    for (i, document) in documents.iter().enumerate().take(MAX_LABELED_DOCUMENTS) {
        document.validate(problems, &format!("documents[{i}]"));
        if problems.0.len() >= 20 {
            break;
        }
    }
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

/// Prepares labeled documents; those that name no language take `language`.
fn prepare_all(documents: Option<Vec<LabeledDocumentBody>>, language: &str) -> Result<Vec<LabeledDocument>> {
    documents
        .unwrap_or_default()
        .into_iter()
        .map(|mut d| {
            d.language.get_or_insert_with(|| language.to_owned());
            d.prepare()
        })
        .collect()
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

/// A column of a file: its 0-based index or its name.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum ColumnName {
    Index(usize),
    Name(String),
}

impl From<ColumnName> for lector_text::ColumnRef {
    fn from(c: ColumnName) -> Self {
        match c {
            ColumnName::Index(i) => lector_text::ColumnRef::Index(i),
            ColumnName::Name(n) => lector_text::ColumnRef::Name(n),
        }
    }
}

/// Maps the attributes of labeled data to file columns. `text` is required unless the file
/// has a column named so; `aspect` is the class of ABSA projects. `document` (rows with the
/// same value are one document's segments), `part` (the words a tag points at) and
/// `annotated` read back what a session download writes.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnMappingBody {
    pub text: Option<ColumnName>,
    pub class: Option<ColumnName>,
    pub aspect: Option<ColumnName>,
    pub label: Option<ColumnName>,
    pub document: Option<ColumnName>,
    pub part: Option<ColumnName>,
    pub annotated: Option<ColumnName>,
}

impl ColumnMappingBody {
    /// The mapping over a file's header: the given columns, the rest by their names.
    fn resolve(self, header: &[String]) -> std::result::Result<lector_text::ColumnMapping, lector_text::TextError> {
        let implied = lector_text::ColumnMapping::from_header(header);
        let text = match (self.text, &implied) {
            (Some(text), _) => text.into(),
            (None, Ok(implied)) => implied.text.clone(),
            (None, Err(_)) => return implied,
        };
        let implied = implied.ok();
        let or_implied =
            |given: Option<ColumnName>, pick: fn(&lector_text::ColumnMapping) -> Option<lector_text::ColumnRef>| {
                given.map(Into::into).or_else(|| implied.as_ref().and_then(pick))
            };
        Ok(lector_text::ColumnMapping {
            text,
            class: or_implied(self.class.or(self.aspect), |m| m.class.clone()),
            label: or_implied(self.label, |m| m.label.clone()),
            document: or_implied(self.document, |m| m.document.clone()),
            part: or_implied(self.part, |m| m.part.clone()),
            annotated: or_implied(self.annotated, |m| m.annotated.clone()),
        })
    }
}

impl CreateSessionBody {
    fn fields(&self) -> SessionFields<'_> {
        SessionFields {
            name: &self.name,
            description: &self.description,
            document_ids: &self.document_ids,
            documents: &self.documents,
            classes: &self.classes,
            labels: &self.labels,
        }
    }
}

impl WriteBody for CreateSessionBody {
    const MAX_BYTES: usize = MAX_UPLOAD_BYTES;
    const IMMUTABLE: &'static [&'static str] = &[
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

    fn validate(&self, problems: &mut Problems) {
        check_session_fields(problems, self.fields());
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

/// Rows of a labeled-data file one session takes.
pub const MAX_LABELED_ROWS: u64 = 100_000;

/// Reads the labeled documents of an upload.
async fn labeled_from_upload(
    state: &AppState,
    upload: &lector_store::Upload,
    mapping: Option<ColumnMappingBody>,
    language: Option<&str>,
) -> Result<Vec<LabeledDocument>> {
    let limits = lector_text::Limits {
        max_rows: MAX_LABELED_ROWS,
        ..crate::routes::files::limits(state)
    };
    let texts = crate::routes::files::read_upload(state, upload, move |file, format| {
        let options = lector_text::ReadOptions { header_first: true };
        let table = lector_text::read_table(format, file, options, &limits)?;
        let mapping = match mapping {
            Some(mapping) => mapping.resolve(&table.header)?,
            None => lector_text::ColumnMapping::from_header(&table.header)?,
        };
        lector_text::labeled_documents(&table, &mapping)
    })
    .await?;
    if texts.len() > MAX_LABELED_DOCUMENTS {
        return Err(Error::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "the file holds {} documents; a session takes at most {MAX_LABELED_DOCUMENTS} at once",
                texts.len()
            ),
        ));
    }
    labeled_from_texts(texts, language)
}

/// The upload a session reads its labeled data from: a `file_id`, or a source fetched now.
async fn session_file(
    state: &AppState,
    caller: &Caller,
    project_id: i64,
    file_id: Option<uuid::Uuid>,
    source: Option<SourceRequest>,
) -> Result<Option<lector_store::Upload>> {
    let id = match (file_id, source) {
        (Some(id), _) => id,
        (None, Some(source)) => fetch_to_upload(state, caller, project_id, &source).await?.id,
        (None, None) => return Ok(None),
    };
    Ok(Some(state.store.upload(&caller.scope, project_id, id).await?))
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct SessionPath {
    project_id: i64,
    annotation_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct SessionDocumentPath {
    project_id: i64,
    annotation_id: i64,
    document_id: i64,
}

/// Creates a labeling session from documents of the project (all, chosen, or a seeded sample)
/// and from labeled documents; `auto` tags documents whose attributes name its classes.
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
    let mut labeled = prepare_all(body.documents, &language)?;
    if let Some(upload) = &file {
        labeled = labeled_from_upload(&state, upload, body.column_mapping, Some(&language)).await?;
    }
    let new = NewSession {
        name: body
            .name
            .unwrap_or_else(|| format!("Session {}", rfc3339(lector_core::time::Timestamp::now()))),
        description: body.description.unwrap_or_default(),
        classes: body.classes,
        labels: body.labels,
        document_ids: body.document_ids,
        labeled,
        sample: body.sample_size.map(|size| (size as usize, body.seed.unwrap_or(0))),
        auto: body.auto.unwrap_or(false),
    };
    let session = state.store.create_session(&caller.scope, p.project_id, new).await?;
    if let Some(upload) = &file {
        state.store.mark_upload_used(upload).await?;
    }
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

fn parse_query<T: std::str::FromStr<Err = String>>(name: &str, value: &str) -> Result<T> {
    value
        .trim()
        .parse()
        .map_err(|e| Error::new(ErrorCode::InvalidParameter, format!("{name}: {e}")))
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
    let session = state
        .store
        .session(&caller.scope, p.project_id, p.annotation_id)
        .await?;
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
    const IMMUTABLE: &'static [&'static str] = &[
        "id",
        "uuid",
        "created",
        "finished",
        "status",
        "progress",
        "mode",
        "project_id",
        "organization_id",
        "user_id",
        "document_count",
        "segment_count",
        "annotated_count",
        "document_group_id",
        "model_id",
        "type",
    ];

    fn validate(&self, problems: &mut Problems) {
        check_session_fields(
            problems,
            SessionFields {
                name: &self.name,
                description: &self.description,
                document_ids: &self.document_ids,
                documents: &self.documents,
                classes: &self.classes,
                labels: &self.labels,
            },
        );
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
        labeled: prepare_all(body.documents, &language)?,
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
    let session = state
        .store
        .session(&caller.scope, p.project_id, p.annotation_id)
        .await?;
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
    pub has_more: bool,
    pub offset: i64,
    pub limit: i64,
    pub count: usize,
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
    let paging = Paging {
        offset: q.offset,
        limit: q.limit,
    }
    .check()?;
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
        count: documents.len(),
        documents,
        has_more,
        offset: paging.offset,
        limit: paging.limit,
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

/// Most rows one download of labeled data holds.
pub const MAX_DOWNLOAD_ROWS: usize = 500_000;

/// A session's labeled data as a table of [`lector_text::LABELED_HEADER`] rows: one row per tag,
/// and one for each segment without tags; with `with_session`, a first column names the session.
pub async fn session_table(
    state: &AppState,
    scope: &lector_core::Scope,
    session: &Session,
    with_session: bool,
    table: &mut lector_text::Table,
) -> Result<()> {
    const PAGE: i64 = 500;
    let mut offset = 0;
    loop {
        let (_, documents, has_more) = state
            .store
            .session_documents(scope, session.project_id, session.id, offset, PAGE)
            .await?;
        let segments = state.store.segments_of(&documents).await?;
        let mut tags = lector_store::tags_by_segment(state.store.tags_of(&segments, Some(session)).await?);
        let marked: std::collections::HashSet<i64> = state
            .store
            .marks_of(session, &segments)
            .await?
            .into_iter()
            .map(|m| m.segment_id)
            .collect();
        for segment in segments {
            let prefix: Vec<String> = with_session.then(|| session.id.to_string()).into_iter().collect();
            let base = |class: Option<String>, label: Option<String>, part: Option<String>| {
                let mut row = prefix.clone();
                row.extend([
                    segment.document_id.to_string(),
                    segment.id.to_string(),
                    segment.text.clone(),
                    class.unwrap_or_default(),
                    label.unwrap_or_default(),
                    part.unwrap_or_default(),
                    marked.contains(&segment.id).to_string(),
                ]);
                row
            };
            match tags.remove(&segment.id) {
                Some(own) => table
                    .rows
                    .extend(own.into_iter().map(|t| base(t.class, t.label, t.text))),
                None => table.rows.push(base(None, None, None)),
            }
            if table.rows.len() > MAX_DOWNLOAD_ROWS {
                return Err(Error::validation(vec![lector_core::FieldError::new(
                    "annotation_id",
                    format!("the download would hold over {MAX_DOWNLOAD_ROWS} rows; download sessions one by one"),
                )]));
            }
        }
        if !has_more {
            return Ok(());
        }
        offset += PAGE;
    }
}

/// The header of a labeled-data download.
pub fn session_header(with_session: bool) -> Vec<String> {
    let first = with_session.then(|| "annotation".to_owned());
    first
        .into_iter()
        .chain(lector_text::LABELED_HEADER.iter().map(|h| (*h).to_owned()))
        .collect()
}

/// Turns labeled texts read from a table into documents with tagged segments: each row's
/// segment is kept as it is (not split again), and a tag's `part` is found in its segment.
pub fn labeled_from_texts(
    texts: Vec<lector_text::LabeledText>,
    language: Option<&str>,
) -> Result<Vec<LabeledDocument>> {
    texts
        .into_iter()
        .map(|mut labeled| {
            // Normalise first, so the spans computed here hold for the stored text.
            for segment in &mut labeled.segments {
                segment.text = lector_text::normalize(&segment.text);
            }
            let (text, spans) = labeled.text_and_spans();
            let given: Vec<SegmentBody> = labeled
                .segments
                .iter()
                .zip(&spans)
                .map(|(s, span)| SegmentBody {
                    text: s.text.clone(),
                    span: Some(*span),
                })
                .collect();
            let document = prepare_document_body(&text, Default::default(), language, false, Some(&given))?;
            let mut tags = Vec::with_capacity(labeled.segments.len());
            for (segment, stored) in labeled.segments.iter().zip(&document.segments) {
                let mut own = Vec::with_capacity(segment.tags.len());
                for tag in &segment.tags {
                    for (field, value) in [("class", &tag.class), ("label", &tag.label), ("part", &tag.part)] {
                        if let Some(value) = value {
                            lector_core::validate::check_chars(field, value, lector_core::validate::TextKind::Short)?;
                        }
                    }
                    let part = match &tag.part {
                        Some(part) => lector_core::labeling::locate_part(
                            &document.text,
                            (stored.start, stored.end),
                            None,
                            Some(part),
                        )
                        .map_err(|e| Error::validation(vec![e]))?,
                        None => None,
                    };
                    own.push(NewTag {
                        class: tag.class.clone(),
                        label: tag.label.clone(),
                        part,
                    });
                }
                tags.push(own);
            }
            Ok(LabeledDocument {
                annotated: labeled.segments.iter().map(|s| s.annotated).collect(),
                document,
                tags,
            })
        })
        .collect()
}

/// The multipart form of `upload_labeling_file`.
#[derive(Debug, ToSchema)]
#[allow(dead_code)]
pub struct LabelingUploadForm {
    /// Labeled data: CSV, JSON, JSONL or XLSX with a header row (`text`, `class` or `aspect`,
    /// `label`; a session download has these).
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// true: keep the file and answer its id and preview, for `create_labeling_session` with a
    /// `file_id` and a `column_mapping`. false (default): create the session now.
    show_preview: Option<bool>,
}

/// What `upload_labeling_file` answers: the file's preview, or the session made from it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum LabelingUpload {
    Preview(crate::routes::files::UploadedFileDto),
    Session(Box<SessionDto>),
}

/// Uploads labeled data: with `show_preview`, answers the file's id and preview; otherwise
/// creates a labeling session from it at once, its columns found by their names.
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
    let (upload, flags) =
        crate::routes::files::receive_upload_with(&state, &caller, p.project_id, form?, &["show_preview"]).await?;
    if flags.iter().any(|(_, on)| *on) {
        let preview = crate::routes::files::preview_upload(&state, upload).await?;
        return Ok(Json(LabelingUpload::Preview(preview)));
    }
    let language = language_for(&state, &caller, p.project_id, None).await?;
    let labeled = match labeled_from_upload(&state, &upload, None, Some(&language)).await {
        Ok(labeled) => labeled,
        Err(e) => {
            crate::routes::files::discard(&state, &upload).await;
            return Err(e.into());
        }
    };
    let name = upload
        .file_name
        .rsplit_once('.')
        .map_or(upload.file_name.as_str(), |(stem, _)| stem);
    let new = NewSession {
        name: name.chars().take(MAX_NAME_CHARS).collect(),
        labeled,
        ..NewSession::default()
    };
    let session = state.store.create_session(&caller.scope, p.project_id, new).await?;
    state.store.mark_upload_used(&upload).await?;
    Ok(Json(LabelingUpload::Session(Box::new(
        session_dto(&state, session).await?,
    ))))
}

/// A session's labeled data as a file: one row per tag (and per segment without tags) with
/// columns document, segment, text, class, label, part, annotated. It uploads again as a
/// session with the same tags.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/{annotation_id}/download", tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), crate::routes::files::DownloadQuery),
    responses((status = 200, description = "the file", content_type = "application/octet-stream")))]
pub async fn download_labeling_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
    QueryParams(q): QueryParams<crate::routes::files::DownloadQuery>,
) -> ApiResult<axum::response::Response> {
    let format = q.format()?;
    let session = state
        .store
        .session(&caller.scope, p.project_id, p.annotation_id)
        .await?;
    let mut table = lector_text::Table {
        header: session_header(false),
        rows: Vec::new(),
    };
    session_table(&state, &caller.scope, &session, false, &mut table).await?;
    let stem = format!("annotation-{}", session.id);
    Ok(crate::routes::files::file_response(table, format, &stem)?)
}

/// Every labeling session of a project as one file: the columns of a session download after
/// an `annotation` column naming the session.
#[utoipa::path(get, path = "/projects/{project_id}/annotations/download", tag = "labeling sessions",
    params(("project_id" = i64, Path), crate::routes::files::DownloadQuery),
    responses((status = 200, description = "the file", content_type = "application/octet-stream")))]
pub async fn download_labeling_sessions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<crate::routes::files::DownloadQuery>,
) -> ApiResult<axum::response::Response> {
    let format = q.format()?;
    let sessions = state
        .store
        .sessions(&caller.scope, p.project_id, &SessionFilter::default())
        .await?;
    let mut table = lector_text::Table {
        header: session_header(true),
        rows: Vec::new(),
    };
    for session in &sessions {
        session_table(&state, &caller.scope, session, true, &mut table).await?;
    }
    let stem = format!("project-{}-annotations", p.project_id);
    Ok(crate::routes::files::file_response(table, format, &stem)?)
}
