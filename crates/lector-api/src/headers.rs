//! What every answer carries and what every request head may hold.
//!
//! [`head_limits`] answers requests whose target or headers are too large with 414 or 431
//! problems (the HTTP parser's own limits are set higher, so it rarely answers first, and then
//! without a body). [`security_headers`] adds `X-Content-Type-Options: nosniff` to every answer,
//! `Strict-Transport-Security` when Lector serves TLS itself (behind a proxy, the proxy owns the
//! HTTPS promise), and `WWW-Authenticate: Bearer` to every 401. Nothing here looks at bodies.

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lector_core::config::TlsMode;
use lector_core::{Error, ErrorCode};

/// One year, the value HSTS preload lists ask for.
const HSTS: &str = "max-age=31536000";

/// Refuses request heads over the configured limits, before any handler runs.
pub async fn head_limits(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let limits = state.config.http;
    let target = request.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if target > limits.max_uri_bytes {
        let detail = format!("the request target has at most {} bytes", limits.max_uri_bytes);
        return ApiError(Error::new(ErrorCode::UriTooLong, detail)).into_response();
    }
    let headers = request.headers();
    let bytes: usize = headers.iter().map(|(n, v)| n.as_str().len() + v.len()).sum();
    if headers.len() > limits.max_headers || bytes > limits.max_header_bytes {
        let detail = format!(
            "a request has at most {} header lines of {} bytes together",
            limits.max_headers, limits.max_header_bytes
        );
        return ApiError(Error::new(ErrorCode::HeadersTooLarge, detail)).into_response();
    }
    next.run(request).await
}

/// Adds the headers every answer carries.
pub async fn security_headers(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let unauthorized = response.status() == StatusCode::UNAUTHORIZED;
    let headers = response.headers_mut();
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if state.config.tls == TlsMode::On {
        headers.insert(header::STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    }
    if unauthorized {
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"lector\""),
        );
    }
    response
}
