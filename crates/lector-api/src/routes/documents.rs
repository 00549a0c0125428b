//! Documents of a project, single or uploaded in bulk (an import job fills a document group),
//! and the tasks (jobs) of a project.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PageInfo, Paging, PathParams, QueryParams, WriteBody};
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::Problems;
use lector_core::{Error, ErrorCode, Result};
use lector_jobs::{prepare_document, use_given_segments};
use lector_store::{
    Document, DocumentChange, DocumentFilter, Job, NewDocument, NewSegment, Segment, SegmentTag, Session,
    tags_by_segment,
};
use lector_text::{ClientSegment, Language};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_documents, create_document))
        .routes(routes!(get_document, update_document, delete_document))
        .routes(routes!(get_project_task))
}

pub use lector_core::validate::MAX_DOCUMENT_CHARS;
/// Largest upload body, in bytes.
pub const MAX_UPLOAD_BYTES: usize = 50 * 1024 * 1024;

#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentDto {
    pub id: i64,
    pub text: String,
    /// `[start, end)` in code points of the document text.
    pub span: [i64; 2],
    /// The segment's tags (with `details=tags`): of the session when read through one, else of
    /// every session of the project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<TagDto>>,
    /// ANNOTATED once marked, when read through a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// For a page of a PDF or image: the page with its words and their boxes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<crate::routes::pages::PageDto>,
}

/// A tag on a segment: a class and/or a label by name, optionally on a part of the segment.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagDto {
    pub id: i64,
    pub class: Option<String>,
    pub label: Option<String>,
    /// The part of the segment the tag points at, in code points of the document text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<[i64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The labeling session the tag belongs to.
    pub annotation_id: i64,
    pub created: String,
    /// Correction sessions: the model's confidence in a tag it predicted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Correction sessions: CORRECTING until a person confirms the tag READY.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl From<SegmentTag> for TagDto {
    fn from(t: SegmentTag) -> Self {
        Self {
            id: t.id,
            class: t.class,
            label: t.label,
            span: t.span.map(|(a, b)| [a, b]),
            text: t.text,
            annotation_id: t.session_id,
            created: rfc3339(t.created),
            confidence: t.confidence,
            status: t.status,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentDto {
    pub id: i64,
    pub text: String,
    pub group_id: Option<i64>,
    pub language: String,
    pub created: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments: Option<Vec<SegmentDto>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Value>,
}

/// Which parts of a document to return: any of `segments`, `meta`, `tags`; and the labeling
/// session it is read through, whose tags and marks it shows.
#[derive(Debug, Clone, Default)]
pub struct Details {
    pub segments: bool,
    pub meta: bool,
    pub tags: bool,
    pub session: Option<Session>,
}

impl Details {
    pub fn parse(text: Option<&str>) -> Result<Self> {
        let mut details = Details::default();
        for part in text
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            match part {
                "segments" => details.segments = true,
                "meta" => details.meta = true,
                "tags" => details.tags = true,
                other => {
                    return Err(Error::new(
                        ErrorCode::InvalidParameter,
                        format!("details takes segments, meta and tags, not {other:?}"),
                    ));
                }
            }
        }
        Ok(details)
    }
}

/// Shapes documents for an answer, fetching their segments, tags and marks when asked for.
pub async fn document_dtos(state: &AppState, documents: Vec<Document>, details: Details) -> Result<Vec<DocumentDto>> {
    let with_segments = details.segments || details.tags;
    let segments: Vec<Segment> = if with_segments {
        state.store.segments_of(&documents).await?
    } else {
        Vec::new()
    };
    let mut tags = if details.tags {
        tags_by_segment(state.store.tags_of(&segments, details.session.as_ref()).await?)
    } else {
        HashMap::new()
    };
    let marked: HashSet<i64> = match &details.session {
        Some(session) if with_segments => state
            .store
            .marks_of(session, &segments)
            .await?
            .into_iter()
            .map(|m| m.segment_id)
            .collect(),
        _ => HashSet::new(),
    };
    let mut by_document: HashMap<i64, Vec<SegmentDto>> = HashMap::new();
    for s in segments {
        by_document.entry(s.document_id).or_default().push(SegmentDto {
            id: s.id,
            page: crate::routes::pages::page_of(s.layout.as_deref()),
            text: s.text,
            span: [s.start, s.end],
            tags: details.tags.then(|| {
                tags.remove(&s.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(TagDto::from)
                    .collect()
            }),
            status: details.session.as_ref().and_then(|_| {
                marked
                    .contains(&s.id)
                    .then(|| lector_core::labeling::ANNOTATED.to_owned())
            }),
        });
    }
    Ok(documents
        .into_iter()
        .map(|d| DocumentDto {
            segments: with_segments.then(|| by_document.remove(&d.id).unwrap_or_default()),
            id: d.id,
            text: d.text,
            group_id: d.group_id,
            language: d.language,
            created: rfc3339(d.created),
            meta: details.meta.then_some(d.meta),
        })
        .collect())
}

/// The language a request's texts are split by: the one it names, else its project's. Every
/// caller writes documents, so this is also where the caller's right to edit the project is
/// checked, before anything of the body is prepared: a VIEWER or an outsider costs the server
/// no normalising, splitting or tag building (the store checks again in its transaction).
pub(crate) async fn language_for(
    state: &AppState,
    caller: &crate::auth::Caller,
    project_id: i64,
    named: Option<String>,
) -> Result<String> {
    let (project, _) = state
        .store
        .project_access(&caller.scope, project_id, lector_core::Action::Edit)
        .await?;
    Ok(named.unwrap_or(project.language))
}

/// Runs CPU-heavy preparation (normalising, sentence splitting, tag building) on a blocking
/// thread, so a large body does not hold one of the runtime's workers.
pub(crate) async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(work).await.map_err(|e| {
        tracing::error!(error = %e, "preparing documents panicked");
        Error::internal()
    })?
}

pub(crate) fn language(field: &Option<String>, problems: &mut Problems) {
    if let Some(code) = field {
        problems.check(Language::from_code(code).is_some(), "language", "must be en, de or ar");
    }
}

/// Checks a text as it will be stored (normalised: NFC, NUL dropped), so a text of NULs is
/// empty and the limit counts the characters a later change of the same text is held to.
pub(crate) fn check_text(problems: &mut Problems, field: &str, text: &str) {
    let normalized;
    let text = if lector_text::is_normalized(text) {
        text
    } else {
        normalized = lector_text::normalize(text);
        &normalized
    };
    problems.check(!text.trim().is_empty(), field, "must not be empty");
    problems.check(
        text.chars().count() <= MAX_DOCUMENT_CHARS,
        field,
        &format!("must have at most {MAX_DOCUMENT_CHARS} characters"),
    );
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SegmentBody {
    pub text: String,
    /// Where the segment lies; found after the previous segment when absent.
    pub span: Option<[usize; 2]>,
}

/// A document body's `segments`: an array of segments, or one segment as an object (SPEC 4.5:
/// "segments (object with text)", as the original client's DocumentCreate sends it). Read by
/// the JSON's shape, so a bad segment is named as a segment (an unknown field is
/// `unknown_field`), never as "no variant matched".
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum SegmentsBody {
    Many(Vec<SegmentBody>),
    One(SegmentBody),
}

impl<'de> Deserialize<'de> for SegmentsBody {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        let value = serde_json::Value::deserialize(deserializer)?;
        match value {
            serde_json::Value::Array(_) => Vec::<SegmentBody>::deserialize(value)
                .map(Self::Many)
                .map_err(D::Error::custom),
            serde_json::Value::Object(_) => SegmentBody::deserialize(value).map(Self::One).map_err(D::Error::custom),
            _ => Err(D::Error::custom(
                "segments must be an object {text, span} or an array of such objects",
            )),
        }
    }
}

impl SegmentsBody {
    fn as_slice(&self) -> &[SegmentBody] {
        match self {
            Self::Many(segments) => segments,
            Self::One(segment) => std::slice::from_ref(segment),
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DocumentBody {
    pub text: String,
    /// The client's own segments (an array, or one segment as an object); otherwise the text is
    /// split into sentences.
    pub segments: Option<SegmentsBody>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// en (default), de or ar: the sentence rules.
    pub language: Option<String>,
    /// `false` keeps the whole text as one segment. On a change, absent: the text is cut as the
    /// document's was.
    pub split: Option<bool>,
}

impl WriteBody for DocumentBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "created", "group_id"];

    fn validate(&self, problems: &mut Problems) {
        check_text(problems, "text", &self.text);
        crate::routes::body_limits::check_meta(problems, "meta", self.meta.as_ref(), 0);
        language(&self.language, problems);
        if let Some(SegmentsBody::Many(segments)) = &self.segments {
            problems.check(
                !segments.is_empty(),
                "segments",
                "must hold a segment at least; leave segments out to split the text",
            );
        }
    }
}

impl DocumentBody {
    fn prepare(self) -> Result<NewDocument> {
        prepare_document_body(
            &self.text,
            self.meta.unwrap_or_default(),
            self.language.as_deref(),
            self.split.unwrap_or(true),
            self.segments.as_ref().map(SegmentsBody::as_slice),
        )
    }
}

/// Normalises a document a client sent and segments it: with the client's own segments
/// (checked against the text), as sentences, or whole when `split` is false.
pub(crate) fn prepare_document_body(
    text: &str,
    meta: serde_json::Map<String, serde_json::Value>,
    language: Option<&str>,
    split: bool,
    given: Option<&[SegmentBody]>,
) -> Result<NewDocument> {
    let language = Language::from_code_or_default(language);
    let mut document = prepare_document(text, serde_json::Value::Object(meta), language, split);
    if let Some(given) = given {
        let given: Vec<ClientSegment<'_>> = given
            .iter()
            .map(|s| ClientSegment {
                text: &s.text,
                span: s.span,
            })
            .collect();
        use_given_segments(&mut document, &given)?;
    }
    Ok(document)
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct DocumentPath {
    project_id: i64,
    document_id: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DetailsQuery {
    /// Comma-separated: segments, meta, tags.
    pub details: Option<String>,
}

/// Creates one document, split into sentences unless it brings its own segments.
#[utoipa::path(post, path = "/projects/{project_id}/documents", tag = "documents", params(("project_id" = i64, Path)),
    request_body = DocumentBody, responses((status = 201, body = DocumentDto)))]
pub async fn create_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(mut body): Body<DocumentBody>,
) -> ApiResult<(StatusCode, Json<DocumentDto>)> {
    body.language = Some(language_for(&state, &caller, p.project_id, body.language).await?);
    let prepared = off_runtime(move || body.prepare()).await?;
    let (document, _) = state
        .store
        .create_document(&caller.scope, p.project_id, prepared)
        .await?;
    let details = Details {
        segments: true,
        meta: true,
        ..Details::default()
    };
    let mut answer = document_dtos(&state, vec![document], details).await?;
    Ok((StatusCode::CREATED, Json(answer.remove(0))))
}

/// A document with its segments.
#[utoipa::path(get, path = "/projects/{project_id}/documents/{document_id}", tag = "documents",
    params(("project_id" = i64, Path), ("document_id" = i64, Path), DetailsQuery), responses((status = 200, body = DocumentDto)))]
pub async fn get_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<DocumentPath>,
    QueryParams(q): QueryParams<DetailsQuery>,
) -> ApiResult<Json<DocumentDto>> {
    let mut details = Details::parse(q.details.as_deref())?;
    details.segments = true;
    let document = state.store.document(&caller.scope, p.project_id, p.document_id).await?;
    Ok(Json(document_dtos(&state, vec![document], details).await?.remove(0)))
}

/// Replaces a document's text and segments (and its meta and language, when given: without
/// them it keeps its own, as a client of the original API, which sends only the text,
/// expects). Without `split` or `segments` the new text is cut as the old one was: a PDF's or
/// image's into pages (a page whose text is unchanged keeps its words' boxes), a text kept
/// whole whole, others into sentences. A segment the new text keeps keeps its id, its tags
/// (their spans moved with it) and its marks in every session; the tags and marks of changed
/// ones go with them.
#[utoipa::path(put, path = "/projects/{project_id}/documents/{document_id}", tag = "documents",
    params(("project_id" = i64, Path), ("document_id" = i64, Path)), request_body = DocumentBody,
    responses((status = 200, body = DocumentDto)))]
pub async fn update_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<DocumentPath>,
    Body(mut body): Body<DocumentBody>,
) -> ApiResult<Json<DocumentDto>> {
    let current = state.store.document(&caller.scope, p.project_id, p.document_id).await?;
    // Without `split` or `segments`, cut as it was (`lector_jobs::recut`): a PDF's pages stay
    // pages with their boxes, the same text keeps its segments.
    let old = match (body.split, &body.segments) {
        (None, None) => {
            let segments = state.store.segments_of(std::slice::from_ref(&current)).await?;
            let old: Vec<NewSegment> = segments
                .into_iter()
                .map(|s| NewSegment {
                    text: s.text,
                    start: s.start,
                    end: s.end,
                    layout: s.layout,
                })
                .collect();
            let language = Language::from_code_or_default(Some(&current.language));
            Some(lector_jobs::Stored {
                text: current.text.clone(),
                language,
                segments: old,
            })
        }
        _ => None,
    };
    let language_given = body.language.is_some();
    let language = body.language.take().unwrap_or(current.language);
    body.language = Some(language_for(&state, &caller, p.project_id, Some(language)).await?);
    let meta_given = body.meta.is_some();
    let max_pages = state.config.extract.max_pages;
    let document = off_runtime(move || match old {
        Some(old) => {
            let language = Language::from_code_or_default(body.language.as_deref());
            let meta = serde_json::Value::Object(body.meta.unwrap_or_default());
            lector_jobs::recut(&body.text, meta, language, &old, max_pages)
        }
        None => body.prepare(),
    })
    .await?;
    let change = DocumentChange {
        document,
        meta_given,
        language_given,
    };
    let (document, _) = state
        .store
        .update_document(&caller.scope, p.project_id, p.document_id, change)
        .await?;
    let details = Details {
        segments: true,
        meta: true,
        ..Details::default()
    };
    Ok(Json(document_dtos(&state, vec![document], details).await?.remove(0)))
}

/// Deletes a document; answers it.
#[utoipa::path(delete, path = "/projects/{project_id}/documents/{document_id}", tag = "documents",
    params(("project_id" = i64, Path), ("document_id" = i64, Path)), responses((status = 200, body = DocumentDto)))]
pub async fn delete_document(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<DocumentPath>,
) -> ApiResult<Json<DocumentDto>> {
    let document = state
        .store
        .delete_document(&caller.scope, p.project_id, p.document_id)
        .await?;
    Ok(Json(
        document_dtos(&state, vec![document], Details::default())
            .await?
            .remove(0),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListDocumentsQuery {
    /// Comma-separated: segments, meta, tags.
    pub details: Option<String>,
    /// Case-insensitive substring of the text.
    pub search: Option<String>,
    pub group_id: Option<i64>,
    /// Only documents in a group (true) or in none (false).
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    pub grouped: Option<bool>,
    /// Only documents of this labeling session; `details=tags` then shows its tags.
    pub annotation_id: Option<i64>,
    /// Only documents this analysis covers.
    pub analysis_id: Option<i64>,
    /// Only documents some analysis covers (true) or none does (false).
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    pub analysed: Option<bool>,
    #[serde(default)]
    pub offset: i64,
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DocumentPage {
    pub documents: Vec<DocumentDto>,
    #[serde(flatten)]
    pub page: PageInfo,
}

/// A page of a project's documents, in id order (paging never drops or repeats a row).
#[utoipa::path(get, path = "/projects/{project_id}/documents", tag = "documents",
    params(("project_id" = i64, Path), ListDocumentsQuery), responses((status = 200, body = DocumentPage)))]
pub async fn list_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<ListDocumentsQuery>,
) -> ApiResult<Json<DocumentPage>> {
    let paging = Paging::checked(q.offset, q.limit)?;
    let mut details = Details::parse(q.details.as_deref())?;
    details.session = match q.annotation_id {
        Some(id) => Some(state.store.session(&caller.scope, p.project_id, id).await?),
        None => None,
    };
    let filter = DocumentFilter {
        // As the texts are stored (NFC), so a decomposed "ü" finds its composed twin.
        search: q.search.as_deref().map(lector_text::normalize),
        group_id: q.group_id,
        grouped: q.grouped,
        session_id: q.annotation_id,
        analysis_id: q.analysis_id,
        analysed: q.analysed,
        ..Default::default()
    };
    let (documents, has_more) = state
        .store
        .documents(&caller.scope, p.project_id, &filter, paging.offset, paging.limit)
        .await?;
    let documents = document_dtos(&state, documents, details).await?;
    Ok(Json(DocumentPage {
        page: paging.page(documents.len(), has_more),
        documents,
    }))
}

/// Documents to upload: a plain array, or an object with options.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum UploadBody {
    List(Vec<UploadedDocument>),
    WithOptions(UploadOptions),
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadOptions {
    pub documents: Vec<UploadedDocument>,
    /// The group's name; default: "Upload" and the time.
    pub name: Option<String>,
    pub language: Option<String>,
    pub split: Option<bool>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadedDocument {
    pub text: String,
    /// The client's own id for the document, kept in its meta as `external_id`.
    pub id: Option<i64>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
}

impl WriteBody for UploadBody {
    const MAX_BYTES: usize = MAX_UPLOAD_BYTES;

    fn validate(&self, problems: &mut Problems) {
        let (documents, language_field) = match self {
            UploadBody::List(list) => (list, None),
            UploadBody::WithOptions(o) => (&o.documents, o.language.clone()),
        };
        problems.check(!documents.is_empty(), "documents", "send at least one document");
        // Their number is checked against `uploads.max_rows` by the handler.
        for (i, document) in documents.iter().enumerate() {
            crate::routes::groups::check_document(problems, &format!("documents[{i}]"), document);
            if problems.0.len() >= 20 {
                break;
            }
        }
        language(&language_field, problems);
        if let UploadBody::WithOptions(UploadOptions { name: Some(name), .. }) = self {
            problems.name("name", name, lector_core::validate::MAX_NAME_CHARS);
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TaskDto {
    pub id: i64,
    pub project_id: Option<i64>,
    /// The kind of work, e.g. `import_documents`.
    #[serde(rename = "type")]
    pub kind: String,
    /// QUEUED, RUNNING, DONE or FAILED.
    pub status: String,
    /// In [0, 1]; never decreases.
    pub progress: f64,
    pub attempts: i64,
    pub created: String,
    pub updated: String,
    pub finished: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub result: Option<serde_json::Value>,
    pub error: Option<String>,
}

impl From<Job> for TaskDto {
    fn from(j: Job) -> Self {
        Self {
            id: j.id,
            project_id: j.project_id,
            kind: j.kind,
            status: j.state.as_str().into(),
            progress: j.progress,
            attempts: j.attempts,
            created: rfc3339(j.created),
            updated: rfc3339(j.updated),
            finished: j.finished.map(rfc3339),
            result: j.result,
            error: j.error,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct TaskPath {
    project_id: i64,
    task_id: i64,
}

/// A long-running task of a project (an import, a training, an analysis) with its progress.
#[utoipa::path(get, path = "/projects/{project_id}/tasks/{task_id}", tag = "projects",
    params(("project_id" = i64, Path), ("task_id" = i64, Path)), responses((status = 200, body = TaskDto)))]
pub async fn get_project_task(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TaskPath>,
) -> ApiResult<Json<TaskDto>> {
    let task = state.store.project_job(&caller.scope, p.project_id, p.task_id).await?;
    Ok(Json(task.into()))
}
