//! The caller's notifications, under `/notifications` and the original's
//! `/users/{user_id}/notifications` aliases (same handlers; `user_id` must be the caller unless
//! a superuser asks).

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::{Body, Paging, PathParams, QueryParams, WriteBody};
use crate::routes::rfc3339;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use lector_core::NotificationType;
use lector_core::time::Timestamp;
use lector_core::validate::{MAX_NOTIFICATION_TEXT_CHARS, MAX_NOTIFICATION_TITLE_CHARS, Problems};
use lector_store::{Notification, NotificationChanges};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_notifications))
        .routes(routes!(get_notification, update_notification))
        .routes(routes!(list_user_notifications))
        .routes(routes!(get_user_notification, update_user_notification))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationDto {
    pub id: i64,
    pub title: String,
    pub text: String,
    pub created: String,
    /// INFO or WARNING.
    #[serde(rename = "type")]
    pub kind: String,
    /// When it was read; null while unread (the original client reads a date-time or null, and
    /// fails on an empty string).
    pub read: Option<String>,
}

impl From<Notification> for NotificationDto {
    fn from(n: Notification) -> Self {
        Self {
            id: n.id,
            title: n.title,
            text: n.text,
            created: rfc3339(n.created),
            kind: n.kind.as_str().into(),
            read: n.read.map(rfc3339),
        }
    }
}

/// SPEC's "change a notification": `title`, `text`, `created`, `type` and `read`, each
/// optional; a field left out keeps its value. `read` is a date-time (one without an offset, as
/// Python's `datetime.isoformat()` writes it, is UTC) or empty (`""` or `null`) to mark the
/// notification unread; `created` is read the same way.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateNotificationBody {
    pub title: Option<String>,
    pub text: Option<String>,
    pub created: Option<String>,
    /// INFO or WARNING.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>, nullable)]
    pub read: Option<Option<String>>,
}

impl WriteBody for UpdateNotificationBody {
    const IMMUTABLE: &'static [&'static str] = &["id"];
    const FREE_TEXT: &'static [&'static str] = &["text"];

    fn validate(&self, problems: &mut Problems) {
        if let Some(title) = &self.title {
            problems.name("title", title, MAX_NOTIFICATION_TITLE_CHARS);
        }
        if let Some(text) = &self.text {
            problems.max_len("text", text, MAX_NOTIFICATION_TEXT_CHARS);
        }
        if let Some(kind) = &self.kind {
            problems.check(
                kind.parse::<NotificationType>().is_ok(),
                "type",
                "must be INFO or WARNING",
            );
        }
        if let Some(created) = &self.created {
            problems.check(
                Timestamp::parse_lenient(created).is_some(),
                "created",
                "must be an ISO 8601 date-time (without an offset it is read as UTC)",
            );
        }
        if let Some(read) = self.read.as_ref().and_then(|r| r.as_deref()).filter(|r| !r.is_empty()) {
            problems.check(
                Timestamp::parse_lenient(read).is_some(),
                "read",
                "must be an ISO 8601 date-time (without an offset it is read as UTC) or empty",
            );
        }
    }
}

impl UpdateNotificationBody {
    /// The checked body as the store's changes.
    fn changes(self) -> NotificationChanges {
        NotificationChanges {
            title: self.title.map(|t| t.trim().to_owned()),
            text: self.text,
            kind: self.kind.and_then(|k| k.parse().ok()),
            created: self.created.as_deref().and_then(Timestamp::parse_lenient),
            read: self.read.map(|r| {
                r.as_deref()
                    .filter(|r| !r.is_empty())
                    .and_then(Timestamp::parse_lenient)
            }),
        }
    }
}

/// `offset`, `limit` and, if given, whether to list only the read or only the unread ones.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct NotificationsQuery {
    /// Records to skip (>= 0, default 0).
    #[serde(default)]
    pub offset: i64,
    /// Records to return (1..=1000, default 100).
    #[serde(default = "crate::extract::default_limit")]
    pub limit: i64,
    /// Only the notifications read (true) or not read yet (false).
    #[serde(default, deserialize_with = "crate::extract::optional_query_flag")]
    pub read: Option<bool>,
}

async fn list(
    state: &AppState,
    caller: &Caller,
    user_id: i64,
    query: NotificationsQuery,
) -> ApiResult<Json<Vec<NotificationDto>>> {
    let paging = Paging::checked(query.offset, query.limit)?;
    let found = state
        .store
        .notifications_read(&caller.scope, user_id, query.read, paging.offset, paging.limit)
        .await?;
    Ok(Json(found.into_iter().map(NotificationDto::from).collect()))
}

async fn update(
    state: &AppState,
    caller: &Caller,
    user_id: i64,
    id: i64,
    body: UpdateNotificationBody,
) -> ApiResult<Json<NotificationDto>> {
    let notification = state
        .store
        .change_notification(&caller.scope, user_id, id, body.changes())
        .await?;
    Ok(Json(notification.into()))
}

#[derive(Debug, Deserialize)]
pub struct NotificationPath {
    notification_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct UserPath {
    user_id: i64,
}

#[derive(Debug, Deserialize)]
pub struct UserNotificationPath {
    user_id: i64,
    notification_id: i64,
}

/// The caller's notifications, newest first; `read=false` lists only those not read yet.
#[utoipa::path(get, path = "/notifications", tag = "notifications", params(NotificationsQuery),
    responses((status = 200, body = Vec<NotificationDto>)))]
pub async fn list_notifications(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<NotificationsQuery>,
) -> ApiResult<Json<Vec<NotificationDto>>> {
    list(&state, &caller, caller.user.id, query).await
}

/// One of the caller's notifications.
#[utoipa::path(get, path = "/notifications/{notification_id}", tag = "notifications",
    params(("notification_id" = i64, Path)), responses((status = 200, body = NotificationDto)))]
pub async fn get_notification(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<NotificationPath>,
) -> ApiResult<Json<NotificationDto>> {
    let notification = state
        .store
        .notification(&caller.scope, caller.user.id, p.notification_id)
        .await?;
    Ok(Json(notification.into()))
}

/// Changes a notification: marks it read or unread, and sets its title, text, type or
/// creation time when given.
#[utoipa::path(put, path = "/notifications/{notification_id}", tag = "notifications",
    params(("notification_id" = i64, Path)), request_body = UpdateNotificationBody,
    responses((status = 200, body = NotificationDto)))]
pub async fn update_notification(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<NotificationPath>,
    Body(body): Body<UpdateNotificationBody>,
) -> ApiResult<Json<NotificationDto>> {
    update(&state, &caller, caller.user.id, p.notification_id, body).await
}

/// Alias of list_notifications for a given user.
#[utoipa::path(get, path = "/users/{user_id}/notifications", tag = "notifications",
    params(("user_id" = i64, Path), NotificationsQuery), responses((status = 200, body = Vec<NotificationDto>)))]
pub async fn list_user_notifications(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserPath>,
    QueryParams(query): QueryParams<NotificationsQuery>,
) -> ApiResult<Json<Vec<NotificationDto>>> {
    list(&state, &caller, p.user_id, query).await
}

/// Alias of get_notification for a given user.
#[utoipa::path(get, path = "/users/{user_id}/notifications/{notification_id}", tag = "notifications",
    params(("user_id" = i64, Path), ("notification_id" = i64, Path)), responses((status = 200, body = NotificationDto)))]
pub async fn get_user_notification(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserNotificationPath>,
) -> ApiResult<Json<NotificationDto>> {
    let notification = state
        .store
        .notification(&caller.scope, p.user_id, p.notification_id)
        .await?;
    Ok(Json(notification.into()))
}

/// Alias of update_notification for a given user.
#[utoipa::path(put, path = "/users/{user_id}/notifications/{notification_id}", tag = "notifications",
    params(("user_id" = i64, Path), ("notification_id" = i64, Path)), request_body = UpdateNotificationBody,
    responses((status = 200, body = NotificationDto)))]
pub async fn update_user_notification(
    State(state): State<AppState>,
    caller: Caller,
    PathParams(p): PathParams<UserNotificationPath>,
    Body(body): Body<UpdateNotificationBody>,
) -> ApiResult<Json<NotificationDto>> {
    update(&state, &caller, p.user_id, p.notification_id, body).await
}
