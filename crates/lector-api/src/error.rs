//! Rendering rejections as RFC 9457 `application/problem+json`.
//!
//! Handlers return [`ApiError`], a thin wrapper of [`lector_core::Error`] (the one error type).
//! Responses that axum or tower produce on their own (405, 413, a panic) are rewritten into the
//! same shape by [`problem_for_bare_errors`], so no client ever sees another error format.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use lector_core::{Error, ErrorCode, FieldError};
use serde::Serialize;
use utoipa::ToSchema;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// The body of every error answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// The stable, machine-readable code (see the catalogue in DESIGN.md section 11).
    pub code: String,
    /// Field-level problems, for 400 and 422.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<ProblemField>)]
    pub errors: Vec<FieldError>,
    /// The request's id (also in `x-request-id` and in the server's log lines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// One field-level problem.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProblemField {
    pub field: String,
    pub message: String,
}

/// What handlers return on failure.
#[derive(Debug)]
pub struct ApiError(pub Error);

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        ApiError(e)
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

pub fn problem_response(error: &Error) -> Response {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = Problem {
        kind: format!("urn:lector:problem:{}", error.code.as_str()),
        title: error.code.title().to_owned(),
        status: status.as_u16(),
        detail: error.detail.clone(),
        code: error.code.as_str().to_owned(),
        errors: error.errors.clone(),
        request_id: None,
    };
    let mut response = (status, axum::Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    if let Some(seconds) = error.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    response
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        problem_response(&self.0)
    }
}

/// 413 for a request body over the server's limit (`max_body_bytes`), naming it so that a
/// client knows what to send instead.
pub fn body_over_limit(max_body_bytes: usize) -> Error {
    Error::new(
        ErrorCode::PayloadTooLarge,
        format!("the request body is over this server's limit of {max_body_bytes} bytes (max_body_bytes)"),
    )
}

/// Marks an answer whose error status comes with a body of its route's own, documented shape
/// (a workflow's answer, the health check's 503), so that [`problem_for_bare_errors`] leaves it.
#[derive(Debug, Clone, Copy)]
pub struct OwnBody;

/// Rewrites error responses that did not come from [`ApiError`] (axum's 405, the body limit's
/// 413, a caught panic's 500) into problem+json, keeping headers such as `Allow`, and stamps
/// every problem with the request's id.
pub async fn problem_for_bare_errors(State(max_body_bytes): State<usize>, request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()))
        || response.extensions().get::<OwnBody>().is_some();
    let response = if is_problem {
        response
    } else {
        rewrite_bare(response, &method, max_body_bytes)
    };
    with_request_id(response, request_id).await
}

fn rewrite_bare(response: Response, method: &axum::http::Method, max_body_bytes: usize) -> Response {
    let status = response.status();
    let error = match status {
        StatusCode::METHOD_NOT_ALLOWED => Error::new(
            ErrorCode::MethodNotAllowed,
            format!("{method} is not allowed here; see the Allow header"),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => body_over_limit(max_body_bytes),
        StatusCode::NOT_FOUND => Error::not_found("route"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            Error::new(ErrorCode::UnsupportedMediaType, "send the body as application/json")
        }
        s if s.is_server_error() => Error::internal(),
        s => Error::bad_request(s.canonical_reason().unwrap_or("bad request").to_lowercase()),
    };
    let (mut parts, _) = response.into_parts();
    let mut rewritten = problem_response(&error);
    parts.headers.remove(header::CONTENT_LENGTH);
    for (name, value) in rewritten.headers() {
        parts.headers.insert(name.clone(), value.clone());
    }
    *rewritten.headers_mut() = parts.headers;
    *rewritten.status_mut() = status;
    rewritten
}

/// Problems are small; anything larger is passed through untouched.
const MAX_PROBLEM_BYTES: usize = 64 * 1024;

async fn with_request_id(response: Response, request_id: Option<String>) -> Response {
    let Some(request_id) = request_id else { return response };
    let (mut parts, body) = response.into_parts();
    let small = axum::body::HttpBody::size_hint(&body)
        .upper()
        .is_some_and(|n| n <= MAX_PROBLEM_BYTES as u64);
    if !small {
        return Response::from_parts(parts, body);
    }
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PROBLEM_BYTES).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let stamped = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(serde_json::Value::Object(mut problem)) => {
            problem.insert("request_id".into(), request_id.into());
            serde_json::to_vec(&problem).unwrap_or_else(|_| bytes.to_vec())
        }
        _ => bytes.to_vec(),
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(stamped))
}

/// The header that carries a request's id, set by the server when the client sent none.
pub const REQUEST_ID: &str = "x-request-id";

/// The answer to any path no route matches.
pub async fn not_found_fallback() -> ApiError {
    ApiError(Error::not_found("route"))
}
