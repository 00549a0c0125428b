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
    /// `ok`, or `unavailable` when the database does not answer.
    pub status: String,
    pub database: String,
}

/// Whether the service and its database answer.
#[utoipa::path(get, path = "/health", tag = "system",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn health(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => (
            StatusCode::OK,
            axum::Json(Health {
                status: "ok".into(),
                database: "ok".into(),
            }),
        )
            .into_response(),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(Health {
                status: "unavailable".into(),
                database: "unreachable".into(),
            }),
        )
            .into_response(),
    }
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
        state.metrics.render(),
    )
        .into_response())
}
