//! Operational routes: health, build information, the OpenAPI document and metrics.

use crate::auth::Caller;
use crate::error::ApiResult;
use crate::state::AppState;
use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::sync::Arc;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(info))
        .routes(routes!(openapi))
        .routes(routes!(metrics))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `unavailable` when a dependency does not answer.
    pub status: String,
    /// `ok`, or `unreachable` when the database does not answer.
    pub database: String,
    /// `ok`, or `unreachable` when the blob store (the directory or S3 bucket uploaded files go
    /// to) does not answer.
    pub blob_store: String,
    /// The dependencies that do not answer (`database`, `blob_store`); empty when all answer.
    pub failing: Vec<String>,
}

/// How long each dependency may take to answer a health check.
const HEALTH_CHECK_WITHIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the service, its database and its blob store answer; 503 names the one that does not.
#[utoipa::path(get, path = "/health", tag = "system",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn health(State(state): State<AppState>) -> Response {
    let answered = state.store.check_dependencies(HEALTH_CHECK_WITHIN).await;
    let word = |ok: bool| if ok { "ok" } else { "unreachable" }.to_owned();
    let failing: Vec<String> = [("database", answered.database), ("blob_store", answered.blob_store)]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.to_owned())
        .collect();
    let status = if failing.is_empty() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Health {
        status: if failing.is_empty() { "ok" } else { "unavailable" }.into(),
        database: word(answered.database),
        blob_store: word(answered.blob_store),
        failing,
    };
    let mut response = (status, axum::Json(body)).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response.headers_mut().insert(
            header::RETRY_AFTER,
            header::HeaderValue::from(lector_core::error::DEPENDENCY_RETRY_SECS),
        );
    }
    // The 503 is a Health like the 200, not a problem.
    response.extensions_mut().insert(crate::error::OwnBody);
    response
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Info {
    pub name: String,
    pub version: String,
    /// The compiler profile the binary was built with.
    pub build: String,
    /// `sqlite` or `postgres`.
    pub database: String,
}

/// Name, version and build of this installation.
#[utoipa::path(get, path = "/info", tag = "system", responses((status = 200, body = Info)))]
pub async fn info(State(state): State<AppState>) -> axum::Json<Info> {
    axum::Json(Info {
        name: "lector".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        build: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
        database: match state.store.backend() {
            lector_store::Backend::Sqlite => "sqlite",
            lector_store::Backend::Postgres => "postgres",
        }
        .into(),
    })
}

/// The served OpenAPI document, rendered once at start-up.
#[derive(Debug, Clone)]
pub struct OpenApiJson(pub Arc<String>);

/// This OpenAPI 3.1 document.
#[utoipa::path(get, path = "/openapi.json", tag = "system",
    responses((status = 200, description = "The OpenAPI document", content_type = "application/json")))]
pub async fn openapi(Extension(document): Extension<OpenApiJson>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document.0.as_str().to_owned(),
    )
        .into_response()
}

/// Prometheus metrics (superusers only).
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>, caller: Caller) -> ApiResult<Response> {
    caller.require_superuser()?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::metrics::scrape(&state).await?,
    )
        .into_response())
}
