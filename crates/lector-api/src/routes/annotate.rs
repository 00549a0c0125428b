//! The annotator's work inside a labeling session: tags on segments, and marking a segment, a
//! page or a whole document annotated, which moves the session's progress and status.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, WriteBody};
use crate::routes::documents::TagDto;
use crate::routes::labeled::TagBody;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::labeling::{self, ANNOTATED};
use lector_core::validate::Problems;
use lector_core::{Action, Error, Result, Scope};
use lector_store::{MarkTarget, NewTag, SegmentAt, SegmentMark, Session};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mark_segment_annotated))
        .routes(routes!(mark_page_annotated))
        .routes(routes!(mark_document_annotated))
        .routes(routes!(list_segment_tags, add_segment_tag))
        .routes(routes!(update_segment_tag, delete_segment_tag))
}

/// The body of every mark: `{name: "ANNOTATED"}`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusBody {
    /// ANNOTATED.
    pub name: String,
}

impl WriteBody for StatusBody {
    fn validate(&self, problems: &mut Problems) {
        problems.check(self.name == ANNOTATED, "name", "must be ANNOTATED");
    }
}

/// An annotation status record: what was marked, when, and where the session now stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct MarkDto {
    /// ANNOTATED.
    pub name: String,
    pub created: String,
    pub document_id: i64,
    /// Absent when a page or a whole document was marked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment_id: Option<i64>,
    /// The page marked, from 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<i64>,
    /// The segments this mark covers.
    pub segment_ids: Vec<i64>,
    pub annotation_id: i64,
    /// The session's progress after the mark.
    pub progress: f64,
    /// The session's status after the mark.
    pub status: String,
}

impl MarkDto {
    pub(crate) fn new(marks: Vec<SegmentMark>, session: Session, document_id: i64, target: MarkTarget) -> Self {
        let created = marks
            .iter()
            .map(|m| m.created)
            .max()
            .unwrap_or_else(lector_core::time::Timestamp::now);
        Self {
            name: ANNOTATED.into(),
            created: rfc3339(created),
            document_id,
            segment_id: match target {
                MarkTarget::Segment(id) => Some(id),
                _ => None,
            },
            page: match target {
                MarkTarget::Page(page) => Some(page),
                _ => None,
            },
            segment_ids: marks.iter().map(|m| m.segment_id).collect(),
            annotation_id: session.id,
            progress: session.progress(),
            status: session.status.as_str().into(),
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct DocumentAt {
    project_id: i64,
    /// A correction session's routes name it `correction_id`.
    #[serde(alias = "correction_id")]
    annotation_id: i64,
    document_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct SegmentPath {
    project_id: i64,
    /// A correction session's routes name it `correction_id`.
    #[serde(alias = "correction_id")]
    annotation_id: i64,
    document_id: i64,
    segment_id: i64,
}

impl SegmentPath {
    pub(crate) fn at(&self) -> SegmentAt {
        SegmentAt {
            project_id: self.project_id,
            session_id: self.annotation_id,
            document_id: self.document_id,
            segment_id: self.segment_id,
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct PagePath {
    project_id: i64,
    annotation_id: i64,
    document_id: i64,
    page: i64,
}

#[derive(Debug, Deserialize)]
pub struct TagPath {
    project_id: i64,
    /// A correction session's routes name it `correction_id`.
    #[serde(alias = "correction_id")]
    annotation_id: i64,
    document_id: i64,
    segment_id: i64,
    tag_id: i64,
}

async fn mark(state: &AppState, scope: &Scope, at: (i64, i64, i64), target: MarkTarget) -> Result<MarkDto> {
    let (project_id, session_id, document_id) = at;
    let (marks, session) = state
        .store
        .mark_annotated(scope, project_id, session_id, document_id, target)
        .await?;
    Ok(MarkDto::new(marks, session, document_id, target))
}

/// Marks a segment annotated (again: keeps the first mark).
#[utoipa::path(post,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/statuses",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path), ("segment_id" = i64, Path)),
    request_body = StatusBody, responses((status = 200, body = MarkDto)))]
pub async fn mark_segment_annotated(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SegmentPath>,
    Body(_): Body<StatusBody>,
) -> ApiResult<Json<MarkDto>> {
    let at = (p.project_id, p.annotation_id, p.document_id);
    Ok(Json(
        mark(&state, &caller.scope, at, MarkTarget::Segment(p.segment_id)).await?,
    ))
}

/// Marks every segment of a page annotated; pages (from 0) are separated by form feeds.
#[utoipa::path(post,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/pages/{page}/statuses",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path), ("page" = i64, Path)),
    request_body = StatusBody, responses((status = 200, body = MarkDto)))]
pub async fn mark_page_annotated(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<PagePath>,
    Body(_): Body<StatusBody>,
) -> ApiResult<Json<MarkDto>> {
    let at = (p.project_id, p.annotation_id, p.document_id);
    Ok(Json(mark(&state, &caller.scope, at, MarkTarget::Page(p.page)).await?))
}

/// Marks every segment of a document annotated.
#[utoipa::path(post, path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/statuses",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path)),
    request_body = StatusBody, responses((status = 200, body = MarkDto)))]
pub async fn mark_document_annotated(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<DocumentAt>,
    Body(_): Body<StatusBody>,
) -> ApiResult<Json<MarkDto>> {
    let at = (p.project_id, p.annotation_id, p.document_id);
    Ok(Json(mark(&state, &caller.scope, at, MarkTarget::Document).await?))
}

impl WriteBody for TagBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "annotation_id", "created"];

    fn validate(&self, problems: &mut Problems) {
        for (field, value) in [("class", &self.class), ("label", &self.label)] {
            if let Some(value) = value {
                problems.max_len(field, value, 200);
            }
        }
        if let Some(text) = &self.text {
            problems.max_len("text", text, 10_000);
        }
    }
}

/// Turns a tag body into a tag, finding the part of the segment it points at.
async fn new_tag(state: &AppState, scope: &Scope, p: &SegmentPath, body: TagBody) -> Result<NewTag> {
    let part = if body.span.is_some() || body.text.is_some() {
        let (_, document) = state
            .store
            .session_document(scope, p.project_id, p.annotation_id, p.document_id, Action::Annotate)
            .await?;
        let segment = state
            .store
            .segments_of(std::slice::from_ref(&document))
            .await?
            .into_iter()
            .find(|s| s.id == p.segment_id)
            .ok_or_else(|| Error::not_found("segment"))?;
        // The part's text as the document's was stored (NFC), so a decomposed "é" finds it.
        let text = body.text.as_deref().map(lector_text::normalize);
        labeling::locate_part(&document.text, (segment.start, segment.end), body.span, text.as_deref())
            .map_err(|e| Error::validation(vec![e]))?
    } else {
        None
    };
    Ok(NewTag {
        class: body.class,
        label: body.label,
        part,
    })
}

/// The session's tags on a segment.
#[utoipa::path(get,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path), ("segment_id" = i64, Path)),
    responses((status = 200, body = Vec<TagDto>)))]
pub async fn list_segment_tags(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SegmentPath>,
) -> ApiResult<Json<Vec<TagDto>>> {
    let tags = state.store.segment_tags(&caller.scope, p.at()).await?;
    Ok(Json(tags.into_iter().map(TagDto::from).collect()))
}

/// Puts a tag on a segment: a class and/or a label (as the project type needs), optionally on
/// a part of the segment given by `span` or `text`.
#[utoipa::path(post,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path), ("segment_id" = i64, Path)),
    request_body = TagBody, responses((status = 201, body = TagDto)))]
pub async fn add_segment_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SegmentPath>,
    Body(body): Body<TagBody>,
) -> ApiResult<(StatusCode, Json<TagDto>)> {
    let tag = new_tag(&state, &caller.scope, &p, body).await?;
    let tag = state.store.add_segment_tag(&caller.scope, p.at(), tag).await?;
    Ok((StatusCode::CREATED, Json(tag.into())))
}

impl TagPath {
    pub(crate) fn tag_id(&self) -> i64 {
        self.tag_id
    }

    pub(crate) fn segment(&self) -> SegmentPath {
        SegmentPath {
            project_id: self.project_id,
            annotation_id: self.annotation_id,
            document_id: self.document_id,
            segment_id: self.segment_id,
        }
    }
}

/// Changes a tag's class, label or part.
#[utoipa::path(put,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path),
        ("segment_id" = i64, Path), ("tag_id" = i64, Path)),
    request_body = TagBody, responses((status = 200, body = TagDto)))]
pub async fn update_segment_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TagPath>,
    Body(body): Body<TagBody>,
) -> ApiResult<Json<TagDto>> {
    let segment = p.segment();
    let tag = new_tag(&state, &caller.scope, &segment, body).await?;
    let tag = state
        .store
        .update_segment_tag(&caller.scope, segment.at(), p.tag_id, tag)
        .await?;
    Ok(Json(tag.into()))
}

/// Removes a tag; answers it.
#[utoipa::path(delete,
    path = "/projects/{project_id}/annotations/{annotation_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    tag = "labeling sessions",
    params(("project_id" = i64, Path), ("annotation_id" = i64, Path), ("document_id" = i64, Path),
        ("segment_id" = i64, Path), ("tag_id" = i64, Path)),
    responses((status = 200, body = TagDto)))]
pub async fn delete_segment_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TagPath>,
) -> ApiResult<Json<TagDto>> {
    let tag = state
        .store
        .delete_segment_tag(&caller.scope, p.segment().at(), p.tag_id)
        .await?;
    Ok(Json(tag.into()))
}
