//! Operational routes: health, build information, the OpenAPI document and metrics.

use crate::auth::MetricsReader;
use crate::error::ApiResult;
use crate::extract::QueryParams;
use crate::state::AppState;
use axum::Extension;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};
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
    /// `ok`, or `unavailable` when a dependency the check requires does not answer.
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

/// Which dependencies must answer for a health check to answer 200.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Required {
    /// The database and the blob store (the default).
    #[default]
    All,
    /// The database only: for a balancer in front of nodes that share one blob store, which an
    /// outage of that store would otherwise take out all at once, though they still serve
    /// everything but files.
    Database,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HealthQuery {
    /// `all` (the default) or `database`: which dependencies must answer for a 200. The body
    /// reports both either way.
    #[serde(default)]
    #[param(inline)]
    pub require: Required,
}

/// Whether the service, its database and its blob store answer; 503 names the one that does not.
#[utoipa::path(get, path = "/health", tag = "system", params(HealthQuery),
    responses((status = 200, body = Health), (status = 503, body = Health)))]
pub async fn health(State(state): State<AppState>, QueryParams(query): QueryParams<HealthQuery>) -> Response {
    let answered = state.store.check_dependencies(HEALTH_CHECK_WITHIN).await;
    let word = |ok: bool| if ok { "ok" } else { "unreachable" }.to_owned();
    let failing: Vec<String> = [("database", answered.database), ("blob_store", answered.blob_store)]
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| name.to_owned())
        .collect();
    let needed_ok = match query.require {
        Required::All => failing.is_empty(),
        Required::Database => answered.database,
    };
    let status = if needed_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Health {
        status: if needed_ok { "ok" } else { "unavailable" }.into(),
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

/// Prometheus metrics (superusers only; while the database is down, the superuser's token that
/// last read them on this node).
#[utoipa::path(get, path = "/metrics", tag = "system",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>, _reader: MetricsReader) -> ApiResult<Response> {
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        crate::metrics::scrape(&state).await?,
    )
        .into_response())
}
