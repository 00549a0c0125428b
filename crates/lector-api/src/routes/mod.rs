//! The HTTP routes, one module per resource, wired into one router in [`router`].
//! Handler names are the operationIds of API.md.

use crate::state::AppState;
use lector_core::time::Timestamp;
use utoipa_axum::router::OpenApiRouter;

pub mod analyses;
pub mod analysis_documents;
pub mod analyze;
pub mod annotate;
pub mod auth;
pub mod body_limits;
pub mod classes;
pub mod corrections;
pub mod credentials;
pub mod document_uploads;
pub mod documents;
pub mod extraction;
pub mod files;
pub mod group_downloads;
pub mod groups;
pub mod hitl;
pub mod labeled;
pub mod labeling_uploads;
pub mod model_files;
pub mod models;
pub mod notifications;
pub mod pages;
pub mod paths;
pub mod projects;
pub mod session_downloads;
pub mod sessions;
pub mod sources;
pub mod streaming;
pub mod system;
pub mod users;
pub mod webhooks;
pub mod workflows;
pub mod workspaces;

/// Every documented route of the service.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(system::router())
        .merge(auth::router())
        .merge(users::router())
        .merge(workspaces::router())
        .merge(credentials::router())
        .merge(notifications::router())
        .merge(projects::router())
        .merge(classes::router())
        .merge(documents::router())
        .merge(groups::router())
        .merge(sessions::router())
        .merge(labeling_uploads::router())
        .merge(session_downloads::router())
        .merge(annotate::router())
        .merge(corrections::router())
        .merge(models::router())
        .merge(model_files::router())
        .merge(analyses::router())
        .merge(analysis_documents::router())
        .merge(analyze::router())
        .merge(extraction::router())
        .merge(hitl::router())
        .merge(files::router())
        .merge(group_downloads::router())
        .merge(sources::router())
        .merge(workflows::router())
        .merge(webhooks::router())
}

/// Timestamps are served as RFC 3339 strings.
pub(crate) fn rfc3339(t: Timestamp) -> String {
    t.to_rfc3339()
}

/// `value` as JSON with the numbers an answer shows: `serde_json::to_value` widens an f32 to
/// the f64 nearest it (0.95 to 0.949999988079071), while its text is the f32's shortest decimal.
pub(crate) fn as_answered(value: &impl serde::Serialize) -> lector_core::Result<serde_json::Value> {
    let text = serde_json::to_string(value).map_err(|_| lector_core::Error::internal())?;
    serde_json::from_str(&text).map_err(|_| lector_core::Error::internal())
}

/// A plain confirmation, for operations whose answer has nothing else to say.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Message {
    pub message: String,
}

impl Message {
    pub fn new(text: impl Into<String>) -> axum::Json<Self> {
        axum::Json(Self { message: text.into() })
    }
}
