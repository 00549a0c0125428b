//! HITL (human in the loop): configurations that tie a project's extraction model to a
//! reviewer and to field settings, and the reviews a live configuration's extractions create
//! (`extract` creates them; see `routes/extraction.rs`). Configurations need MANAGER; members
//! see reviews; an ANNOTATOR or more submits them.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, PathParams, QueryParams, WriteBody};
use crate::routes::paths::ProjectPath;
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lector_core::validate::Problems;
use lector_core::{Action, ReviewStatus};
use lector_extract::extraction::SettingOverride;
use lector_store::{Hitl, HitlChange, HitlReview, NewHitl};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_hitls, create_hitl))
        .routes(routes!(get_hitl, update_hitl))
        .routes(routes!(assign_hitl))
        .routes(routes!(list_hitl_reviews))
        .routes(routes!(get_hitl_review, submit_hitl_review))
}

/// SPEC's bounds.
const MAX_NAME_CHARS: usize = 120;
const MAX_DESCRIPTION_CHARS: usize = 255;
const MAX_WEBHOOK_CHARS: usize = 255;

/// A HITL configuration.
#[derive(Debug, Serialize, ToSchema)]
pub struct HitlDto {
    pub id: i64,
    pub name: String,
    pub description: String,
    pub project_id: i64,
    pub created_at: String,
    pub updated_at: String,
    pub assigned_user_id: Option<i64>,
    pub model_id: Option<i64>,
    pub is_live: bool,
    /// Where review events go; to a member who does not manage the project, only its origin
    /// (`https://hooks.example.org/…`): its path or query may carry the receiver's key.
    pub webhook_url: Option<String>,
    /// Field settings by label name.
    #[schema(value_type = std::collections::HashMap<String, HitlFieldSetting>)]
    pub labels: serde_json::Value,
    /// What review events are signed with (`Lector-Signature`, docs/WEBHOOKS.md): answered
    /// only to the MANAGER who adds or changes the configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_secret: Option<String>,
}

impl HitlDto {
    /// The configuration as a member who does not manage the project reads it: the receiver's
    /// address cut to its origin, since its path or query may carry the receiver's key.
    fn for_reader(hitl: Hitl) -> Self {
        let shown = hitl
            .webhook_url
            .as_deref()
            .map(|address| match url::Url::parse(address) {
                Ok(parsed) => format!("{}/…", parsed.origin().ascii_serialization()),
                Err(_) => "…".to_owned(),
            });
        Self {
            webhook_url: shown,
            ..Self::from(hitl)
        }
    }

    /// The configuration with its webhook secret, for a MANAGER's change.
    fn with_secret(hitl: Hitl) -> Self {
        let secret = hitl.webhook_secret.clone();
        Self {
            webhook_secret: Some(secret),
            ..Self::from(hitl)
        }
    }
}

impl From<Hitl> for HitlDto {
    fn from(h: Hitl) -> Self {
        Self {
            id: h.id,
            name: h.name,
            description: h.description,
            project_id: h.project_id,
            created_at: rfc3339(h.created),
            updated_at: rfc3339(h.updated),
            assigned_user_id: h.assigned_user_id,
            model_id: h.model_id,
            is_live: h.is_live,
            webhook_url: h.webhook_url,
            labels: h.labels,
            webhook_secret: None,
        }
    }
}

/// What a configuration is made or changed with.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HitlBody {
    /// Default "Human review" (SPEC marks no field of a HITL required).
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub assigned_user_id: Option<i64>,
    pub model_id: Option<i64>,
    #[serde(default)]
    pub is_live: bool,
    /// Where review events go (docs/WEBHOOKS.md): an http or https address.
    pub webhook_url: Option<String>,
    /// Field settings by label name.
    #[schema(value_type = Option<std::collections::HashMap<String, HitlFieldSetting>>)]
    pub labels: Option<serde_json::Value>,
}

/// How one field (a label of the model's project) is judged and converted; what is left out
/// keeps the field's default (a built-in field's own type, not required, threshold 0.5).
/// Only documents the shape for the OpenAPI document: the settings are read by
/// `lector_extract::extraction::SettingOverride`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HitlFieldSetting {
    /// A review is created when the field is missing.
    pub required: Option<bool>,
    /// A review is created when the field's confidence is under this (0 to 1).
    pub confidence_threshold: Option<f32>,
    /// What the value is converted to: text, number, amount, date, id, email, iban or phone.
    pub data_type: Option<String>,
}

/// What `update_hitl` and `assign_hitl` change (SPEC: "body as for add", every field
/// optional): a field left out keeps its value; `null` clears `assigned_user_id`, `model_id`
/// or `webhook_url` (as an empty `webhook_url` does).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HitlChangeBody {
    pub name: Option<String>,
    pub description: Option<String>,
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<i64>, nullable)]
    pub assigned_user_id: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<i64>, nullable)]
    pub model_id: Option<Option<i64>>,
    pub is_live: Option<bool>,
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub webhook_url: Option<Option<String>>,
    /// Field settings by label name; replaces the settings as a whole.
    #[schema(value_type = Option<std::collections::HashMap<String, HitlFieldSetting>>)]
    pub labels: Option<serde_json::Value>,
}

fn default_name() -> String {
    "Human review".to_owned()
}

/// SPEC's bounds (name 120, description 255, webhook_url 255) and the settings' shape are
/// answered 400 `bad_request` with the fields named, as the HITL issue asks, rather than the
/// 422 other bodies get; see [`check_fields`].
impl WriteBody for HitlBody {
    fn validate(&self, _: &mut Problems) {}
}

impl WriteBody for HitlChangeBody {
    fn validate(&self, _: &mut Problems) {}
}

/// The fields of a configuration that are given, checked against SPEC's bounds: 400 naming them.
fn check_fields(
    name: Option<&str>,
    description: Option<&str>,
    webhook_url: Option<&str>,
    labels: Option<&serde_json::Value>,
) -> lector_core::Result<()> {
    let mut problems = Problems::default();
    if let Some(name) = name.map(str::trim) {
        problems.check(!name.is_empty(), "name", "must not be empty");
        problems.check(name.chars().count() <= MAX_NAME_CHARS, "name", "at most 120 characters");
    }
    if let Some(description) = description {
        problems.check(
            description.chars().count() <= MAX_DESCRIPTION_CHARS,
            "description",
            "at most 255 characters",
        );
    }
    if let Some(url) = webhook_url {
        problems.check(
            url.chars().count() <= MAX_WEBHOOK_CHARS,
            "webhook_url",
            "at most 255 characters",
        );
        let web_address = url::Url::parse(url)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some_and(|h| !h.is_empty()));
        problems.check(
            url.is_empty() || web_address,
            "webhook_url",
            "must be an http or https address with a host",
        );
    }
    if let Some(labels) = labels
        && let Err((place, why)) = SettingOverride::parse_all(labels)
    {
        let field = if place.is_empty() {
            "labels".to_owned()
        } else {
            format!("labels.{place}")
        };
        problems.check(false, &field, &why);
    }
    problems.finish().map_err(|mut e| {
        e.code = lector_core::ErrorCode::BadRequest;
        e
    })
}

impl HitlBody {
    fn into_new(self) -> lector_core::Result<NewHitl> {
        check_fields(
            Some(&self.name),
            Some(&self.description),
            self.webhook_url.as_deref(),
            self.labels.as_ref(),
        )?;
        Ok(NewHitl {
            name: self.name.trim().to_owned(),
            description: self.description,
            assigned_user_id: self.assigned_user_id,
            model_id: self.model_id,
            is_live: self.is_live,
            webhook_url: self.webhook_url.filter(|u| !u.is_empty()),
            labels: self.labels.unwrap_or_else(|| serde_json::json!({})),
        })
    }
}

impl HitlChangeBody {
    fn into_change(self) -> lector_core::Result<HitlChange> {
        check_fields(
            self.name.as_deref(),
            self.description.as_deref(),
            self.webhook_url.as_ref().and_then(Option::as_deref),
            self.labels.as_ref(),
        )?;
        Ok(HitlChange {
            name: self.name.map(|n| n.trim().to_owned()),
            description: self.description,
            assigned_user_id: self.assigned_user_id,
            model_id: self.model_id,
            is_live: self.is_live,
            webhook_url: self.webhook_url.map(|u| u.filter(|u| !u.is_empty())),
            labels: self.labels,
        })
    }
}

/// A review of an extraction.
#[derive(Debug, Serialize, ToSchema)]
pub struct HitlReviewDto {
    pub review_id: i64,
    /// Reviews come from requests, not jobs: always empty.
    pub task_id: Option<i64>,
    /// Extracted files are not stored: always empty; `document_name` names the file.
    pub document_id: Option<i64>,
    pub document_name: String,
    /// The page of the first field that asked for review, from 1.
    pub page_num: i64,
    /// PENDING, APPROVED or REJECTED.
    pub status: String,
    pub created: String,
    pub updated: String,
    /// The reviewer: whom a pending review waits for, who submitted a submitted one.
    pub user_id: Option<i64>,
    /// The first field that asked for review, and its threshold.
    pub label: Option<String>,
    pub confidence_threshold: Option<f64>,
    pub ls_annotation_id: Option<i64>,
    pub hitl_id: i64,
    /// With `with_full_data=true` (always for one review): what was extracted (its matches,
    /// missing fields and, per page, the boxes of the fields found) and corrected;
    /// `get_hitl_review` adds `pages`, the pages the review was made from (each page's size and
    /// its lines of words, every word with its text, its box as four page-relative corners and
    /// its confidence), for showing the page beside the values.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<serde_json::Value>,
}

impl HitlReviewDto {
    fn of(review: HitlReview, full: bool) -> Self {
        let data = full.then(|| serde_json::json!({"extracted": review.extracted, "corrected": review.corrected}));
        Self {
            review_id: review.id,
            task_id: None,
            document_id: None,
            document_name: review.document_name,
            page_num: review.page_num,
            status: review.status,
            created: rfc3339(review.created),
            updated: rfc3339(review.updated),
            user_id: review.user_id,
            label: review.label,
            confidence_threshold: review.confidence_threshold,
            ls_annotation_id: None,
            hitl_id: review.hitl_id,
            data,
        }
    }
}

/// A submitted review: its verdict and the corrected values by field.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitReviewBody {
    /// APPROVED or REJECTED (any letter case).
    pub status: String,
    /// The corrected values: `{field: value}`.
    #[serde(default)]
    pub values: std::collections::BTreeMap<String, String>,
}

impl WriteBody for SubmitReviewBody {
    fn validate(&self, problems: &mut Problems) {
        problems.check(self.verdict().is_some(), "status", "must be APPROVED or REJECTED");
        problems.check(self.values.len() <= 200, "values", "at most 200 fields");
        problems.check(
            self.values
                .iter()
                .all(|(k, v)| k.chars().count() <= 120 && v.chars().count() <= 2000),
            "values",
            "field names of at most 120 characters, values of at most 2000",
        );
    }
}

impl SubmitReviewBody {
    /// The status as a verdict, in any letter case; `None` for anything but APPROVED or REJECTED.
    fn verdict(&self) -> Option<ReviewStatus> {
        match self.status.to_ascii_uppercase().parse() {
            Ok(status @ (ReviewStatus::Approved | ReviewStatus::Rejected)) => Some(status),
            _ => None,
        }
    }
}

/// 422 naming `values.{field}` for each corrected value of an approval that names no field of
/// the project or its model, or does not read as its field's type (`correction_problems`):
/// approved corrections are training data.
async fn check_corrections(
    state: &AppState,
    hitl: &lector_store::Hitl,
    values: &std::collections::BTreeMap<String, String>,
) -> lector_core::Result<()> {
    let labels = state.store.review_fields(hitl).await?;
    let overrides = SettingOverride::parse_all(&hitl.labels).unwrap_or_default();
    let problems = lector_extract::extraction::correction_problems(&labels, &overrides, values);
    if problems.is_empty() {
        return Ok(());
    }
    Err(lector_core::Error::validation(
        problems
            .into_iter()
            .map(|(field, why)| lector_core::FieldError::new(format!("values.{field}"), why))
            .collect(),
    ))
}

#[derive(Debug, Deserialize)]
pub struct HitlPath {
    project_id: i64,
    hitl_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct ReviewPath {
    project_id: i64,
    hitl_id: i64,
    review_id: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReviewsQuery {
    /// Answer what each review's extraction found and what was corrected.
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    with_full_data: Option<bool>,
    #[serde(default)]
    offset: i64,
    /// Reviews to answer (1..=1000); 1000 when not given, as many as the list answered before
    /// it took paging, for clients that do not page.
    #[serde(default = "all_reviews")]
    limit: i64,
    /// Only the reviews of this status: PENDING, APPROVED or REJECTED (any letter case).
    status: Option<String>,
}

fn all_reviews() -> i64 {
    1000
}

/// The project's HITL configurations (any member; the receiver's address whole to a MANAGER).
#[utoipa::path(get, path = "/projects/{project_id}/hitls", tag = "hitl",
    params(("project_id" = i64, Path)), responses((status = 200, body = Vec<HitlDto>)))]
pub async fn list_hitls(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
) -> ApiResult<Json<Vec<HitlDto>>> {
    let hitls = state.store.hitls(&caller.scope, p.project_id).await?;
    let shown = shown_as(&state, &caller, p.project_id).await;
    Ok(Json(hitls.into_iter().map(shown).collect()))
}

/// Adds a HITL configuration (MANAGER).
#[utoipa::path(post, path = "/projects/{project_id}/hitls", tag = "hitl",
    params(("project_id" = i64, Path)), request_body = HitlBody, responses((status = 201, body = HitlDto)))]
pub async fn create_hitl(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ProjectPath>,
    Body(body): Body<HitlBody>,
) -> ApiResult<(StatusCode, Json<HitlDto>)> {
    reachable(&state, body.webhook_url.as_deref())?;
    let hitl = state
        .store
        .create_hitl(&caller.scope, p.project_id, &body.into_new()?)
        .await?;
    Ok((StatusCode::CREATED, Json(HitlDto::with_secret(hitl))))
}

/// One HITL configuration (any member; the receiver's address whole to a MANAGER).
#[utoipa::path(get, path = "/projects/{project_id}/hitls/{hitl_id}", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path)), responses((status = 200, body = HitlDto)))]
pub async fn get_hitl(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<HitlPath>,
) -> ApiResult<Json<HitlDto>> {
    let hitl = state
        .store
        .hitl(&caller.scope, p.project_id, p.hitl_id, Action::Read)
        .await?;
    Ok(Json(shown_as(&state, &caller, p.project_id).await(hitl)))
}

/// How the caller reads a project's configurations: whole when it manages the project, with
/// the receiver's address cut to its origin otherwise ([`HitlDto::for_reader`]).
/// (A MANAGER of a read-only workspace reads it whole too: reading is not a change.)
async fn shown_as(state: &AppState, caller: &Caller, project_id: i64) -> fn(Hitl) -> HitlDto {
    let role = state
        .store
        .project_access(&caller.scope, project_id, Action::Read)
        .await;
    let manages = role.is_ok_and(|(_, role)| role >= Action::Manage.min_role());
    if manages { HitlDto::from } else { HitlDto::for_reader }
}

/// Changes a HITL configuration (MANAGER); the body has the fields of adding one, each
/// optional: what is left out keeps its value, `null` clears a nullable field.
#[utoipa::path(put, path = "/projects/{project_id}/hitls/{hitl_id}", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path)), request_body = HitlChangeBody,
    responses((status = 200, body = HitlDto)))]
pub async fn update_hitl(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<HitlPath>,
    Body(body): Body<HitlChangeBody>,
) -> ApiResult<Json<HitlDto>> {
    Ok(Json(change(&state, &caller, &p, body).await?))
}

/// Assigns a HITL configuration to a user (MANAGER); the body is as for `update_hitl`, its
/// `assigned_user_id` a member of the workspace.
#[utoipa::path(post, path = "/projects/{project_id}/hitls/{hitl_id}/assign", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path)), request_body = HitlChangeBody,
    responses((status = 200, body = HitlDto)))]
pub async fn assign_hitl(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<HitlPath>,
    Body(body): Body<HitlChangeBody>,
) -> ApiResult<Json<HitlDto>> {
    Ok(Json(change(&state, &caller, &p, body).await?))
}

/// `update_hitl` and `assign_hitl`, which SPEC gives the same body: the changed configuration
/// with its webhook secret.
async fn change(state: &AppState, caller: &Caller, p: &HitlPath, body: HitlChangeBody) -> lector_core::Result<HitlDto> {
    reachable(state, body.webhook_url.as_ref().and_then(Option::as_deref))?;
    let hitl = state
        .store
        .update_hitl(&caller.scope, p.project_id, p.hitl_id, &body.into_change()?)
        .await?;
    Ok(HitlDto::with_secret(hitl))
}

/// 422 naming `webhook_url` when it names an address the outbound guard never reaches (a
/// private or reserved one, unless `sources.allow_private` or `sources.allowed_networks`
/// allow it): its events could never be delivered.
fn reachable(state: &AppState, webhook_url: Option<&str>) -> lector_core::Result<()> {
    match webhook_url {
        Some(url) if state.sources.never_reaches(url) => {
            Err(lector_core::Error::validation(vec![lector_core::FieldError::new(
                "webhook_url",
                "names a private or reserved address, which this server does not post to \
                 (sources.allow_private, sources.allowed_networks)",
            )]))
        }
        _ => Ok(()),
    }
}

/// A configuration's reviews, newest first (any member): a plain array, paged by offset and
/// limit, of one status if asked.
#[utoipa::path(get, path = "/projects/{project_id}/hitls/{hitl_id}/reviews", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path), ReviewsQuery),
    responses((status = 200, body = Vec<HitlReviewDto>)))]
pub async fn list_hitl_reviews(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<HitlPath>,
    QueryParams(q): QueryParams<ReviewsQuery>,
) -> ApiResult<Json<Vec<HitlReviewDto>>> {
    let paging = crate::extract::Paging::checked(q.offset, q.limit)?;
    let status = q
        .status
        .as_deref()
        .map(|s| crate::extract::parse_query::<ReviewStatus>("status", &s.to_ascii_uppercase()))
        .transpose()?;
    let reviews = state
        .store
        .hitl_reviews(
            &caller.scope,
            p.project_id,
            p.hitl_id,
            status,
            paging.offset,
            paging.limit,
        )
        .await?;
    let full = q.with_full_data.unwrap_or(false);
    Ok(Json(reviews.into_iter().map(|r| HitlReviewDto::of(r, full)).collect()))
}

/// One review with its data (any member).
#[utoipa::path(get, path = "/projects/{project_id}/hitls/{hitl_id}/reviews/{review_id}", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path), ("review_id" = i64, Path)),
    responses((status = 200, body = HitlReviewDto)))]
pub async fn get_hitl_review(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ReviewPath>,
) -> ApiResult<Json<HitlReviewDto>> {
    let (_, review) = state
        .store
        .hitl_review(&caller.scope, p.project_id, p.hitl_id, p.review_id, Action::Read)
        .await?;
    let pages = state
        .store
        .hitl_review_pages(&caller.scope, p.project_id, p.hitl_id, p.review_id)
        .await?;
    let mut answer = HitlReviewDto::of(review, true);
    if let (Some(data), Some(pages)) = (answer.data.as_mut(), pages) {
        data["pages"] = serde_json::from_str(&pages).unwrap_or(serde_json::Value::Null);
    }
    Ok(Json(answer))
}

/// Submits a review (ANNOTATOR): APPROVED or REJECTED, with the corrected values by field.
/// A review waiting for a user is theirs or a MANAGER's to submit (403 otherwise). A review is
/// submitted once (409 after).
#[utoipa::path(put, path = "/projects/{project_id}/hitls/{hitl_id}/reviews/{review_id}", tag = "hitl",
    params(("project_id" = i64, Path), ("hitl_id" = i64, Path), ("review_id" = i64, Path)),
    request_body = SubmitReviewBody, responses((status = 200, body = HitlReviewDto)))]
pub async fn submit_hitl_review(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<ReviewPath>,
    Body(body): Body<SubmitReviewBody>,
) -> ApiResult<Json<HitlReviewDto>> {
    let status = body
        .verdict()
        .ok_or_else(|| lector_core::Error::bad_request("status must be APPROVED or REJECTED"))?;
    let (hitl, _) = state
        .store
        .hitl_review(&caller.scope, p.project_id, p.hitl_id, p.review_id, Action::Annotate)
        .await?;
    if status == ReviewStatus::Approved {
        check_corrections(&state, &hitl, &body.values).await?;
    }
    let values = serde_json::to_value(&body.values).unwrap_or_default();
    let review = state
        .store
        .submit_review(&caller.scope, p.project_id, p.hitl_id, p.review_id, status, &values)
        .await?;
    Ok(Json(HitlReviewDto::of(review, true)))
}
