//! Correction sessions: a model's tags on a sample of a project's documents, the ones it is
//! least sure of first, for people to correct. Annotators add, change, delete and confirm
//! tags and mark segments corrected; each mark and each tag change answers the model's
//! `predicted_score` and the session's `progress` (the shapes of the original's
//! AnnotateCorrectionResponse and CreateCorrectionTagResponse), the predicted score being what its
//! score is expected to become once it learns the corrections so far
//! (`lector_core::corrections::predicted_score`). The sessions count as training data.
//!
//! Tags, marks and document pages are those of labeling sessions (`annotate`, `sessions`),
//! reached here after checking that the session is a correction session. Creating needs USER,
//! correcting ANNOTATOR, reading VIEWER.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, QueryParams, WriteBody};
use crate::routes::annotate::{MarkDto, SegmentPath, StatusBody, TagPath};
use crate::routes::documents::TagDto;
use crate::routes::labeled::TagBody;
use crate::routes::sessions::{SessionCore, SessionDocumentsDto, SessionDocumentsQuery, SessionPath};
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::corrections::predicted_score;
use lector_core::labeling::{SessionMode, SessionStatus};
use lector_core::validate::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Problems};
use lector_core::{Action, Result};
use lector_store::{CorrectionPlan, MarkTarget, Session, SessionFilter};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_correction_sessions, create_correction_session))
        .routes(routes!(get_correction_session, delete_correction_session))
        .routes(routes!(list_correction_session_documents))
        .routes(routes!(mark_segment_corrected))
        .routes(routes!(add_correction_tag))
        .routes(routes!(update_correction_tag, delete_correction_tag))
        .routes(routes!(confirm_correction_tag))
}

/// Most documents a correction session holds.
pub const MAX_SAMPLE: usize = 1000;

/// The model a correction session corrects.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionModel {
    pub id: i64,
    pub display_name: String,
}

/// A correction session: a session (mode CORRECTION) with its model and the model's expected
/// score once the corrections so far are learned.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionDto {
    #[serde(flatten)]
    pub session: SessionCore,
    pub model: Option<CorrectionModel>,
    pub classes: Vec<String>,
    pub labels: Vec<String>,
    /// The model's expected macro F1 after learning the corrections so far.
    pub predicted_score: Option<f64>,
}

async fn correction_dto(state: &AppState, caller: &Caller, session: Session) -> Result<CorrectionDto> {
    let predicted = predicted(state, caller, &session).await?;
    let model = match session.model_id {
        Some(id) => state.store.model_access(&caller.scope, id, Action::Read).await.ok(),
        None => None,
    };
    let vocabulary = state.store.session_vocabulary(&session).await?;
    Ok(CorrectionDto {
        session: SessionCore::new(session, vocabulary.kind),
        model: model.map(|m| CorrectionModel {
            id: m.id,
            display_name: m.display_name,
        }),
        classes: vocabulary.classes.into_iter().map(|c| c.name).collect(),
        labels: vocabulary.labels.into_iter().map(|l| l.name).collect(),
        predicted_score: predicted,
    })
}

/// The model's expected score once it learns this session's corrections; `None` when the model
/// is gone or has no score.
async fn predicted(state: &AppState, caller: &Caller, session: &Session) -> Result<Option<f64>> {
    let Some(model_id) = session.model_id else {
        return Ok(None);
    };
    let Ok(model) = state.store.model_access(&caller.scope, model_id, Action::Read).await else {
        return Ok(None);
    };
    let Some(score) = model.score else { return Ok(None) };
    // Recorded with the model; a model stored before the record is loaded for it once.
    let trained_on = match model.examples {
        Some(examples) => usize::try_from(examples).unwrap_or(0),
        None => match state.models.get(&state.store, &model).await {
            Ok(loaded) => {
                // Best effort: a reader is answered whether or not the count is kept.
                if let Err(e) = state.store.note_examples(&model, loaded.info().examples).await {
                    tracing::warn!(model.id = model.id, error = %e.detail, "cannot keep a model's example count");
                }
                loaded.info().examples
            }
            Err(_) => return Ok(None),
        },
    };
    let agreement = state.store.correction_agreement(session).await?;
    Ok(Some(predicted_score(
        score,
        trained_on,
        agreement.corrected,
        agreement.agreeing,
    )))
}

/// A correction session to create.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCorrectionBody {
    /// The READY model of this project to correct (required).
    pub model_id: Option<i64>,
    /// Documents to correct (default 20, at most 1000); not with `document_ids` (422).
    pub sample_size: Option<i64>,
    /// Default: "Corrections of" and the model's name.
    pub name: Option<String>,
    pub description: Option<String>,
    /// Seeds the sample (default 0): the same seed picks the same documents; not with
    /// `document_ids` (422).
    pub seed: Option<u64>,
    /// Correct these documents, in this order, instead of the least sure ones.
    pub document_ids: Option<Vec<i64>>,
}

impl WriteBody for CreateCorrectionBody {
    const IMMUTABLE: &'static [&'static str] = &["id", "uuid", "status", "progress", "mode", "predicted_score"];

    fn validate(&self, problems: &mut Problems) {
        problems.check(self.model_id.is_some(), "model_id", "is required: the model to correct");
        if let Some(size) = self.sample_size {
            problems.check(
                (1..=MAX_SAMPLE as i64).contains(&size),
                "sample_size",
                &format!("must be between 1 and {MAX_SAMPLE}"),
            );
        }
        if let Some(ids) = &self.document_ids {
            problems.check(!ids.is_empty(), "document_ids", "must not be empty");
            problems.check(
                ids.len() <= MAX_SAMPLE,
                "document_ids",
                &format!("name at most {MAX_SAMPLE} documents"),
            );
            let distinct: std::collections::HashSet<&i64> = ids.iter().collect();
            problems.check(distinct.len() == ids.len(), "document_ids", "names a document twice");
            // They choose a sample; the named documents are all corrected, in their order.
            for (field, given) in [
                ("sample_size", self.sample_size.is_some()),
                ("seed", self.seed.is_some()),
            ] {
                problems.check(!given, field, "goes with a sample, not with document_ids");
            }
        }
        if let Some(name) = &self.name {
            problems.name("name", name, MAX_NAME_CHARS);
        }
        if let Some(description) = &self.description {
            problems.max_len("description", description, MAX_DESCRIPTION_CHARS);
        }
    }
}

#[derive(Debug, Deserialize)]
pub struct ProjectPath {
    project_id: i64,
}

/// Creates a correction session (USER), PREDICTING: a job has the model tag the project's
/// documents (its first 5,000) and keeps the ones it is least sure of (or the documents named,
/// in their order), each segment with the model's tags and their confidence; the session then
/// turns CREATED. Read it again (`get_correction_session`) to see it filled. 409 while the
/// workspace has 20 trainings, analyses, corrections and copies waiting or running.
#[utoipa::path(post, path = "/projects/{project_id}/corrections", tag = "correction sessions",
    params(("project_id" = i64, Path)), request_body = CreateCorrectionBody,
    responses((status = 201, body = CorrectionDto)))]
pub async fn create_correction_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<CreateCorrectionBody>,
) -> ApiResult<(StatusCode, Json<CorrectionDto>)> {
    let scope = &caller.scope;
    state.store.project_access(scope, p.project_id, Action::Edit).await?;
    let model = state
        .store
        .model_for_analysis(scope, body.model_id.unwrap_or_default())
        .await?;
    let plan = CorrectionPlan {
        name: match body.name {
            Some(name) => name.trim().to_owned(),
            None => format!("Corrections of {}", model.display_name)
                .chars()
                .take(MAX_NAME_CHARS)
                .collect(),
        },
        description: body.description.unwrap_or_default(),
        sample_size: body.sample_size.unwrap_or(20) as usize,
        seed: body.seed.unwrap_or(0),
        document_ids: body.document_ids,
    };
    let session = state.store.start_correction(scope, p.project_id, &model, plan).await?;
    tracing::info!(
        session.id = session.id,
        model.id = model.id,
        "correction session queued"
    );
    Ok((
        StatusCode::CREATED,
        Json(correction_dto(&state, &caller, session).await?),
    ))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CorrectionsQuery {
    /// Only sessions with this status.
    pub status: Option<String>,
}

/// The project's correction sessions (VIEWER).
#[utoipa::path(get, path = "/projects/{project_id}/corrections", tag = "correction sessions",
    params(("project_id" = i64, Path), CorrectionsQuery), responses((status = 200, body = Vec<CorrectionDto>)))]
pub async fn list_correction_sessions(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    QueryParams(q): QueryParams<CorrectionsQuery>,
) -> ApiResult<Json<Vec<CorrectionDto>>> {
    let status = q
        .status
        .as_deref()
        .map(|s| crate::extract::parse_query::<SessionStatus>("status", s))
        .transpose()?;
    let filter = SessionFilter {
        modes: vec![SessionMode::Correction],
        status,
    };
    let sessions = state.store.sessions(&caller.scope, p.project_id, &filter).await?;
    let mut out = Vec::with_capacity(sessions.len());
    for session in sessions {
        out.push(correction_dto(&state, &caller, session).await?);
    }
    Ok(Json(out))
}

/// A correction session (VIEWER).
#[utoipa::path(get, path = "/projects/{project_id}/corrections/{correction_id}", tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path)), responses((status = 200, body = CorrectionDto)))]
pub async fn get_correction_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
) -> ApiResult<Json<CorrectionDto>> {
    let session = p.correction(&state, &caller, Action::Read).await?;
    Ok(Json(correction_dto(&state, &caller, session).await?))
}

/// Deletes a correction session with its tags and marks (USER); its documents stay.
#[utoipa::path(delete, path = "/projects/{project_id}/corrections/{correction_id}", tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path)), responses((status = 200, body = CorrectionDto)))]
pub async fn delete_correction_session(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
) -> ApiResult<Json<CorrectionDto>> {
    let session = p.correction(&state, &caller, Action::Edit).await?;
    let answer = correction_dto(&state, &caller, session).await?;
    state
        .store
        .delete_session(&caller.scope, p.project_id, p.annotation_id)
        .await?;
    Ok(Json(answer))
}

/// The session with a page of its documents, least sure first; `details=tags` shows the tags
/// with the model's confidence and their status (VIEWER).
#[utoipa::path(get, path = "/projects/{project_id}/corrections/{correction_id}/documents", tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), SessionDocumentsQuery),
    responses((status = 200, body = SessionDocumentsDto)))]
pub async fn list_correction_session_documents(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SessionPath>,
    query: QueryParams<SessionDocumentsQuery>,
) -> ApiResult<Json<SessionDocumentsDto>> {
    p.correction(&state, &caller, Action::Read).await?;
    crate::routes::sessions::list_labeling_session_documents(State(state), caller, PathParams(p), query).await
}

/// What marking a segment corrected answers.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectedDto {
    pub segment: MarkDto,
    /// The model's expected macro F1 once it learns the corrections so far.
    pub predicted_score: Option<f64>,
    /// Corrected segments over all segments of the session, in [0, 1].
    pub progress: f64,
}

/// Marks a segment corrected (ANNOTATOR; body `{name: "ANNOTATED"}`): answers the mark, the
/// model's predicted score and the session's progress.
#[utoipa::path(post,
    path = "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/statuses",
    tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), ("document_id" = i64, Path), ("segment_id" = i64, Path)),
    request_body = StatusBody, responses((status = 200, body = CorrectedDto)))]
pub async fn mark_segment_corrected(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SegmentPath>,
    Body(_): Body<StatusBody>,
) -> ApiResult<Json<CorrectedDto>> {
    let at = p.at();
    correcting(&state, &caller, at).await?;
    let target = MarkTarget::Segment(at.segment_id);
    let (marks, session) = state
        .store
        .mark_annotated(&caller.scope, at.project_id, at.session_id, at.document_id, target)
        .await?;
    let predicted_score = predicted(&state, &caller, &session).await?;
    let progress = session.progress();
    Ok(Json(CorrectedDto {
        segment: MarkDto::new(marks, session, at.document_id, target),
        predicted_score,
        progress,
    }))
}

/// The correction session a segment path names, for an annotator's change (ANNOTATOR); a
/// labeling session's is not found here.
async fn correcting(state: &AppState, caller: &Caller, at: lector_store::SegmentAt) -> Result<Session> {
    state
        .store
        .correction(&caller.scope, at.project_id, at.session_id, Action::Annotate)
        .await
}

/// The segment a tag change touched, as the original's CreateCorrectionTagResponse shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectedSegmentDto {
    pub id: i64,
    /// When the segment was marked corrected; null while it is not.
    pub annotated: Option<String>,
}

/// What adding, changing or confirming a tag of a correction session answers: the tag, whether
/// its segment is marked corrected, the model's predicted score and the session's progress.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionTagDto {
    pub tag: TagDto,
    pub segment: CorrectedSegmentDto,
    /// The model's expected macro F1 once it learns the corrections so far.
    pub predicted_score: Option<f64>,
    /// Corrected segments over all segments of the session, in [0, 1].
    pub progress: f64,
}

/// A segment's annotation status record in a correction session; `name` (ANNOTATED) and
/// `created` are null while the segment is not marked corrected.
#[derive(Debug, Serialize, ToSchema)]
pub struct SegmentStatusDto {
    pub name: Option<String>,
    pub created: Option<String>,
    pub document_id: i64,
    pub segment_id: i64,
    pub annotation_id: i64,
}

/// What removing a tag of a correction session answers (the original's
/// AnnotateCorrectionResponse): its segment's status record, the model's predicted score and
/// the session's progress, with the tag removed.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorrectionTagRemovedDto {
    pub segment: SegmentStatusDto,
    pub predicted_score: Option<f64>,
    pub progress: f64,
    /// The tag removed.
    pub tag: TagDto,
}

/// Where a correction session stands after a tag change: the segment's mark, the model's
/// predicted score and the session's progress.
async fn standing(
    state: &AppState,
    caller: &Caller,
    at: lector_store::SegmentAt,
) -> Result<(Option<lector_store::SegmentMark>, Option<f64>, f64)> {
    let (session, mark) = state.store.segment_mark(&caller.scope, at).await?;
    let predicted_score = predicted(state, caller, &session).await?;
    Ok((mark, predicted_score, session.progress()))
}

async fn tag_answer(
    state: &AppState,
    caller: &Caller,
    at: lector_store::SegmentAt,
    tag: TagDto,
) -> Result<CorrectionTagDto> {
    let (mark, predicted_score, progress) = standing(state, caller, at).await?;
    Ok(CorrectionTagDto {
        tag,
        segment: CorrectedSegmentDto {
            id: at.segment_id,
            annotated: mark.map(|m| crate::routes::rfc3339(m.created)),
        },
        predicted_score,
        progress,
    })
}

/// Adds a tag to a segment of a correction session (ANNOTATOR); answers the tag with the
/// segment's mark, the predicted score and the progress.
#[utoipa::path(post,
    path = "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags",
    tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), ("document_id" = i64, Path), ("segment_id" = i64, Path)),
    request_body = TagBody, responses((status = 201, body = CorrectionTagDto)))]
pub async fn add_correction_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<SegmentPath>,
    body: Body<TagBody>,
) -> ApiResult<(StatusCode, Json<CorrectionTagDto>)> {
    let at = p.at();
    correcting(&state, &caller, at).await?;
    let (status, Json(tag)) =
        crate::routes::annotate::add_segment_tag(State(state.clone()), caller.clone(), PathParams(p), body).await?;
    Ok((status, Json(tag_answer(&state, &caller, at, tag).await?)))
}

/// Changes a tag of a correction session (ANNOTATOR); answers as add_correction_tag.
#[utoipa::path(put,
    path = "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), ("document_id" = i64, Path),
        ("segment_id" = i64, Path), ("tag_id" = i64, Path)),
    request_body = TagBody, responses((status = 200, body = CorrectionTagDto)))]
pub async fn update_correction_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TagPath>,
    body: Body<TagBody>,
) -> ApiResult<Json<CorrectionTagDto>> {
    let at = p.segment().at();
    correcting(&state, &caller, at).await?;
    let Json(tag) =
        crate::routes::annotate::update_segment_tag(State(state.clone()), caller.clone(), PathParams(p), body).await?;
    Ok(Json(tag_answer(&state, &caller, at, tag).await?))
}

/// Removes a tag of a correction session (ANNOTATOR); answers its segment's status record,
/// the predicted score and the progress, with the tag removed.
#[utoipa::path(delete,
    path = "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}",
    tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), ("document_id" = i64, Path),
        ("segment_id" = i64, Path), ("tag_id" = i64, Path)),
    responses((status = 200, body = CorrectionTagRemovedDto)))]
pub async fn delete_correction_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TagPath>,
) -> ApiResult<Json<CorrectionTagRemovedDto>> {
    let at = p.segment().at();
    correcting(&state, &caller, at).await?;
    let Json(tag) =
        crate::routes::annotate::delete_segment_tag(State(state.clone()), caller.clone(), PathParams(p)).await?;
    let (mark, predicted_score, progress) = standing(&state, &caller, at).await?;
    Ok(Json(CorrectionTagRemovedDto {
        segment: SegmentStatusDto {
            name: mark.as_ref().map(|m| m.name.clone()),
            created: mark.map(|m| crate::routes::rfc3339(m.created)),
            document_id: at.document_id,
            segment_id: at.segment_id,
            annotation_id: at.session_id,
        },
        predicted_score,
        progress,
        tag,
    }))
}

/// The new status of a correction tag.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ConfirmBody {
    /// READY (confirmed) or CORRECTING.
    pub status: String,
}

impl WriteBody for ConfirmBody {
    fn validate(&self, problems: &mut Problems) {
        problems.check(
            matches!(self.status.as_str(), "READY" | "CORRECTING"),
            "status",
            "must be READY or CORRECTING",
        );
    }
}

/// Confirms a tag of a correction session (READY) or reopens it (CORRECTING) (ANNOTATOR);
/// answers as add_correction_tag.
#[utoipa::path(post,
    path = "/projects/{project_id}/corrections/{correction_id}/documents/{document_id}/segments/{segment_id}/tags/{tag_id}/statuses",
    tag = "correction sessions",
    params(("project_id" = i64, Path), ("correction_id" = i64, Path), ("document_id" = i64, Path),
        ("segment_id" = i64, Path), ("tag_id" = i64, Path)),
    request_body = ConfirmBody, responses((status = 200, body = CorrectionTagDto)))]
pub async fn confirm_correction_tag(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<TagPath>,
    Body(body): Body<ConfirmBody>,
) -> ApiResult<Json<CorrectionTagDto>> {
    let at = p.segment().at();
    let tag = state
        .store
        .confirm_correction_tag(&caller.scope, at, p.tag_id(), &body.status)
        .await?;
    Ok(Json(tag_answer(&state, &caller, at, tag.into()).await?))
}
