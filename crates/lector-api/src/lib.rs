//! Lector's HTTPS API: the router, authentication, handlers, the OpenAPI document, and the TLS
//! listener. Handlers are thin: they extract and validate, name the caller, call one store
//! function and shape the answer. Authorisation is decided by `lector_core::policy`.

pub mod accounts;
pub mod auth;
pub mod background_runs;
mod body_pace;
pub mod budget;
mod connection_timers;
pub mod error;
pub mod execution_log;
pub mod extract;
pub mod headers;
pub mod keys;
mod lingering_close;
pub mod login_limits;
pub mod metrics;
pub mod model_cache;
pub mod openapi;
pub mod request_id;
pub mod routes;
pub mod serve;
pub mod state;
pub mod tls;
pub mod turns;
pub mod unread_bodies;
pub mod web_app;
mod workflow_effects;
pub mod workflow_refs;
pub mod workflow_runs;

pub use serve::{Server, shutdown_signal};
pub use state::AppState;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use lector_core::config::TlsMode;
use std::sync::Arc;
use tower_http::LatencyUnit;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa_swagger_ui::SwaggerUi;

/// The OpenAPI document of every route, finished.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let (_, api) = routes::router().split_for_parts();
    openapi::finish(api)
}

/// The complete application: routes, docs page, fallbacks and middleware.
pub fn app(state: AppState) -> Router {
    let (router, api) = routes::router().split_for_parts();
    let document = openapi::finish(api);
    let json = document.to_pretty_json().unwrap_or_else(|e| {
        tracing::error!(error = %e, "cannot render the OpenAPI document");
        "{}".into()
    });
    let docs = SwaggerUi::new("/docs").config(utoipa_swagger_ui::Config::new(["/openapi.json"]));
    let mut router = router
        .merge(docs)
        .fallback(web_app::serve_or_not_found)
        .layer(axum::Extension(routes::system::OpenApiJson(Arc::new(json))))
        .layer(DefaultBodyLimit::max(state.config.max_body_bytes))
        .layer(from_fn_with_state(
            budget::BodyBudget::new(state.config.http.large_bodies_mib, state.config.max_body_bytes),
            budget::large_bodies_take_turns,
        ))
        .layer(from_fn_with_state(
            body_pace::BodyPace {
                min_bytes_per_sec: state.config.http.min_body_bytes_per_sec,
                grace: std::time::Duration::from_secs(state.config.http.body_grace_secs),
            },
            body_pace::bodies_keep_pace,
        ))
        .layer(CatchPanicLayer::new())
        .layer(from_fn_with_state(state.clone(), turns::callers_take_turns))
        .layer(from_fn_with_state(state.clone(), headers::head_limits))
        .layer(from_fn_with_state(
            state.config.max_body_bytes,
            error::problem_for_bare_errors,
        ))
        .layer(from_fn_with_state(state.metrics.clone(), metrics::record));
    if state.config.tls == TlsMode::Proxy {
        router = router.layer(from_fn_with_state(state.clone(), require_forwarded_https));
    }
    router
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(|request: &Request| {
                    let id = request
                        .headers()
                        .get(error::REQUEST_ID)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    tracing::info_span!("request", method = %request.method(), uri = %request.uri().path(), request_id = %id)
                })
                // One line per answered request, in the request's span (so with its id).
                .on_response(
                    DefaultOnResponse::new()
                        .level(tracing::Level::INFO)
                        .latency_unit(LatencyUnit::Millis),
                ),
        )
        .layer(from_fn(request_id::assign))
        .layer(from_fn_with_state(state.clone(), headers::security_headers))
        .layer(from_fn(unread_bodies::close_after_unread_bodies))
        .with_state(state)
}

/// In proxy mode, serves only requests a trusted proxy forwarded from HTTPS.
async fn require_forwarded_https(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let from_trusted = request
        .extensions()
        .get::<state::PeerAddr>()
        .is_some_and(|peer| state.config.trusted_proxies.contains(&peer.0.ip()));
    let forwarded_https = request
        .headers()
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"));
    if from_trusted && forwarded_https {
        next.run(request).await
    } else {
        error::ApiError(lector_core::Error::bad_request(
            "this service is served over https only, through its trusted proxy",
        ))
        .into_response()
    }
}
