//! The public webhook addresses of workflows: `/webhook/{path}` (production, while the
//! workflow is active) and `/webhook-test/{path}` (armed by `listen_workflow_test`, one call).
//! Any method reaches them; no bearer token is asked, the trigger's own authentication is.
//! This file only reads the request (headers, query, a bounded body: JSON, form, multipart
//! files, text or raw bytes) and writes the answer; `workflow_runs` decides the rest.

use crate::error::ApiError;
use crate::state::AppState;
use crate::workflow_runs::{Address, Answer, Incoming, Received, admit_call, run_call, start_call};
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, Request, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use lector_core::{Error, ErrorCode};
use lector_workflow::{Binary, Reply};
use serde_json::{Map, Value};
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

/// The two addresses, for every method; documented as POST (the usual caller), the
/// description saying that every method the trigger names is served.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(WebhookDocs::openapi())
        .route("/webhook/{*path}", any(production))
        .route("/webhook-test/{*path}", any(test))
}

#[derive(OpenApi)]
#[openapi(paths(webhook_production, webhook_test))]
struct WebhookDocs;

/// A workflow's production address (no bearer; the trigger's authentication). Answers as the
/// workflow says: `{"message": "Workflow was started"}`, the last step's entries, the first
/// entry or one property of it (a string as plain text), or nothing; 404 naming method and
/// path when nothing listens, 405 naming the methods that do.
#[utoipa::path(post, path = "/webhook/{path}", tag = "workflows", operation_id = "webhook_production",
    params(("path" = String, Path, description = "the trigger's path; may hold slashes")),
    request_body(content = Object, description = "any body: JSON, a form, multipart files, text or bytes"),
    responses((status = 200, description = "as the workflow answers")))]
#[allow(dead_code)]
async fn webhook_production() {}

/// A workflow's test address: listens for one call within 120 seconds of
/// `listen_workflow_test`; the call's data is kept in its execution.
#[utoipa::path(post, path = "/webhook-test/{path}", tag = "workflows", operation_id = "webhook_test",
    params(("path" = String, Path, description = "the trigger's path; may hold slashes")),
    request_body(content = Object, description = "any body: JSON, a form, multipart files, text or bytes"),
    responses((status = 200, description = "as the workflow answers")))]
#[allow(dead_code)]
async fn webhook_test() {}

async fn production(state: State<AppState>, path: Path<String>, request: Request<Body>) -> Response {
    serve(state, Address::Production, path, request).await
}

async fn test(state: State<AppState>, path: Path<String>, request: Request<Body>) -> Response {
    serve(state, Address::Test, path, request).await
}

async fn serve(
    State(state): State<AppState>,
    address: Address,
    Path(path): Path<String>,
    request: Request<Body>,
) -> Response {
    let (parts, body) = request.into_parts();
    let call = Incoming {
        address,
        method: parts.method.as_str().to_owned(),
        path: path.trim_matches('/').to_owned(),
        headers: headers_of(&parts.headers),
        query: query_of(&parts.uri),
    };
    let answered = async {
        // A path no workflow may register (a NUL, say) is refused before any look-up: on
        // PostgreSQL a NUL in a query's text is an error, which answered 500.
        lector_core::validate::check_chars("path", &call.path, lector_core::validate::TextKind::Short)?;
        let admitted = admit_call(&state, &call).await?;
        let received = received(&state, &parts.headers, body).await?;
        let started = start_call(&state, &call, admitted).await?;
        run_call(&state, call, started, received).await
    }
    .await;
    match answered {
        Ok(answer) => respond(&parts.method, answer),
        Err(error) => refused(error),
    }
}

/// The call's body, read within `workflows.max_body_bytes` (413 past it).
async fn received(state: &AppState, headers: &HeaderMap, body: Body) -> Result<Received, Error> {
    let limit = state.config.workflows.max_body_bytes;
    let bytes = axum::body::to_bytes(body, limit).await.map_err(|_| {
        Error::new(
            ErrorCode::PayloadTooLarge,
            format!("a webhook takes at most {limit} bytes"),
        )
    })?;
    read_body(headers, bytes).await
}

fn headers_of(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect()
}

fn query_of(uri: &Uri) -> Map<String, Value> {
    let pairs: Vec<(String, String)> = uri
        .query()
        .and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default();
    pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect()
}

/// The body as the entry holds it: JSON parsed, a form as an object, multipart fields in the
/// body and files aside, text as a string, anything else as the file `data`.
async fn read_body(headers: &HeaderMap, bytes: bytes::Bytes) -> lector_core::Result<Received> {
    if bytes.is_empty() {
        return Ok(Received {
            body: Value::Object(Map::new()),
            files: Vec::new(),
        });
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json" || essence.ends_with("+json") {
        let body = serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(ErrorCode::InvalidJson, format!("the body is not JSON: {e}")))?;
        return Ok(Received {
            body,
            files: Vec::new(),
        });
    }
    if essence == "application/x-www-form-urlencoded" {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
            .map_err(|_| Error::bad_request("the body is not a URL-encoded form"))?;
        let body = pairs.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        return Ok(Received {
            body: Value::Object(body),
            files: Vec::new(),
        });
    }
    if essence == "multipart/form-data" {
        return read_form(&content_type, bytes).await;
    }
    if essence.starts_with("text/") {
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| Error::bad_request("the text body is not UTF-8"))?;
        return Ok(Received {
            body: Value::String(text),
            files: Vec::new(),
        });
    }
    Ok(Received {
        body: Value::Object(Map::new()),
        files: vec![(
            "data".into(),
            Binary {
                file_name: "data".into(),
                mime_type: essence,
                bytes: Arc::new(bytes.to_vec()),
            },
        )],
    })
}

/// Most parts one multipart body may have.
const MAX_FORM_PARTS: usize = 100;

/// Reads a form already read whole (bounded by `workflows.max_body_bytes`). multer is given
/// the bytes directly: axum's extractor on a request built here would hold it to its own
/// default of 2 MiB, refusing the larger forms the configured limit allows.
async fn read_form(content_type: &str, bytes: bytes::Bytes) -> lector_core::Result<Received> {
    let boundary = multer::parse_boundary(content_type)
        .map_err(|e| Error::bad_request(format!("the multipart body cannot be read: {e}")))?;
    let whole = futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(bytes) });
    let mut form = multer::Multipart::new(whole, boundary);
    let malformed = |e: multer::Error| Error::bad_request(format!("the multipart body is malformed: {e}"));
    let mut received = Received {
        body: Value::Object(Map::new()),
        files: Vec::new(),
    };
    let mut parts = 0;
    while let Some(field) = form.next_field().await.map_err(malformed)? {
        parts += 1;
        if parts > MAX_FORM_PARTS {
            return Err(Error::bad_request(format!("a form has at most {MAX_FORM_PARTS} parts")));
        }
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field
            .file_name()
            .map(|n| lector_core::validate::file_name(n).into_owned());
        let mime_type = field
            .content_type()
            .map_or_else(|| "application/octet-stream".to_owned(), |m| m.to_string());
        let data = field.bytes().await.map_err(malformed)?;
        match file_name {
            Some(file_name) => received.files.push((
                name,
                Binary {
                    file_name,
                    mime_type,
                    bytes: Arc::new(data.to_vec()),
                },
            )),
            None => {
                let text = String::from_utf8_lossy(&data).into_owned();
                if let Value::Object(body) = &mut received.body {
                    body.insert(name, Value::String(text));
                }
            }
        }
    }
    Ok(received)
}

fn respond(method: &Method, answer: Answer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = match answer.reply {
        Reply::Json(value) => (status, axum::Json(value)).into_response(),
        Reply::Text(text) => (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response(),
        Reply::Empty => status.into_response(),
    };
    // HEAD answers no body; 204 and 304 have none by definition (RFC 9110 §15.3.5, §15.4.5), so
    // neither a body nor its length is sent.
    if method == Method::HEAD {
        *response.body_mut() = Body::empty();
    } else if matches!(status, StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED) {
        *response.body_mut() = Body::empty();
        response.headers_mut().remove(header::CONTENT_TYPE);
        response.headers_mut().remove(header::CONTENT_LENGTH);
    }
    // A workflow's own answer, whatever its status: no middleware rewrites it.
    response.extensions_mut().insert(crate::error::OwnBody);
    response
}

/// A refused or failed call as problem+json; a 405 lists the methods in `Allow`.
fn refused(mut error: Error) -> Response {
    let allow = (error.code == ErrorCode::MethodNotAllowed)
        .then(|| error.errors.pop().map(|e| e.message))
        .flatten();
    let mut response = ApiError(error).into_response();
    if let Some(allow) = allow.and_then(|a| header::HeaderValue::from_str(&a).ok()) {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}
