//! The one error type of Lector and its catalogue of stable codes.
//!
//! Every rejection the service makes is an [`Error`] with an [`ErrorCode`]; the code fixes the
//! HTTP status and the title, so clients can rely on `code` rather than on message text.
//! 5xx errors carry no detail for the client: the cause is logged where it happens.

use serde::{Deserialize, Serialize};

/// A stable, machine-readable reason for a rejection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    BadRequest,
    InvalidJson,
    UnknownField,
    ImmutableField,
    InvalidParameter,
    ValidationFailed,
    InvalidCharacters,
    Unauthorized,
    InvalidCredentials,
    Forbidden,
    WorkspaceReadOnly,
    NotFound,
    MethodNotAllowed,
    /// A request body arrived slower than `http.min_body_bytes_per_sec` (408).
    RequestTimeout,
    Conflict,
    PayloadTooLarge,
    UriTooLong,
    UnsupportedMediaType,
    HeadersTooLarge,
    RateLimited,
    Internal,
    /// A workflow's outbound call failed (502).
    UpstreamFailed,
    Unavailable,
}

impl ErrorCode {
    /// The HTTP status this code is answered with.
    pub fn status(self) -> u16 {
        use ErrorCode::*;
        match self {
            BadRequest | InvalidJson | UnknownField | ImmutableField | InvalidParameter | InvalidCharacters => 400,
            Unauthorized | InvalidCredentials => 401,
            Forbidden | WorkspaceReadOnly => 403,
            NotFound => 404,
            MethodNotAllowed => 405,
            RequestTimeout => 408,
            Conflict => 409,
            PayloadTooLarge => 413,
            UriTooLong => 414,
            HeadersTooLarge => 431,
            UnsupportedMediaType => 415,
            ValidationFailed => 422,
            RateLimited => 429,
            Internal => 500,
            UpstreamFailed => 502,
            Unavailable => 503,
        }
    }

    /// A short, human-readable summary that does not change between occurrences.
    pub fn title(self) -> &'static str {
        use ErrorCode::*;
        match self {
            BadRequest => "Bad request",
            InvalidJson => "The body is not valid JSON",
            UnknownField => "The body has a field this operation does not take",
            ImmutableField => "The body sets a field the server owns",
            InvalidParameter => "A path or query parameter is invalid",
            ValidationFailed => "The request is well-formed but its values are invalid",
            InvalidCharacters => "A text holds characters this field does not take",
            Unauthorized => "Authentication required",
            InvalidCredentials => "Invalid credentials",
            Forbidden => "Forbidden",
            WorkspaceReadOnly => "The workspace is read-only",
            NotFound => "Not found",
            MethodNotAllowed => "Method not allowed",
            RequestTimeout => "The request body arrived too slowly",
            Conflict => "Conflict",
            PayloadTooLarge => "Payload too large",
            UriTooLong => "URI too long",
            HeadersTooLarge => "Request header fields too large",
            UnsupportedMediaType => "Unsupported media type",
            RateLimited => "Too many requests",
            Internal => "Internal server error",
            UpstreamFailed => "An address the workflow called failed",
            Unavailable => "Service unavailable",
        }
    }

    /// The snake_case name clients see in the `code` member.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            BadRequest => "bad_request",
            InvalidJson => "invalid_json",
            UnknownField => "unknown_field",
            ImmutableField => "immutable_field",
            InvalidParameter => "invalid_parameter",
            ValidationFailed => "validation_failed",
            InvalidCharacters => "invalid_characters",
            Unauthorized => "unauthorized",
            InvalidCredentials => "invalid_credentials",
            Forbidden => "forbidden",
            WorkspaceReadOnly => "workspace_read_only",
            NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            RequestTimeout => "request_timeout",
            Conflict => "conflict",
            PayloadTooLarge => "payload_too_large",
            UriTooLong => "uri_too_long",
            HeadersTooLarge => "headers_too_large",
            UnsupportedMediaType => "unsupported_media_type",
            RateLimited => "rate_limited",
            Internal => "internal",
            UpstreamFailed => "upstream_failed",
            Unavailable => "unavailable",
        }
    }
}

/// One problem with one field of a request, listed in a problem's `errors`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

/// Most field errors one problem lists; the rest are counted in a last entry.
pub const MAX_FIELD_ERRORS: usize = 50;
/// Longest field name and message of a field error, and detail of a problem, in characters:
/// messages may quote what the client sent, and a problem stays small however large the body.
const MAX_FIELD_CHARS: usize = 200;
const MAX_MESSAGE_CHARS: usize = 500;
const MAX_DETAIL_CHARS: usize = 2_000;

/// `text` cut to `max` characters, with an ellipsis where it was cut.
fn clip(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text,
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: clip(field.into(), MAX_FIELD_CHARS),
            message: clip(message.into(), MAX_MESSAGE_CHARS),
        }
    }
}

/// Seconds a client is asked to wait when the database or the blob store does not answer.
pub const DEPENDENCY_RETRY_SECS: u64 = 5;

/// A rejection: a catalogue code, a detail for the client and optional field errors.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code:?}: {detail}")]
pub struct Error {
    pub code: ErrorCode,
    pub detail: String,
    pub errors: Vec<FieldError>,
    /// Seconds a client should wait before retrying (429 and 503).
    pub retry_after: Option<u64>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self {
            code,
            detail: clip(detail.into(), MAX_DETAIL_CHARS),
            errors: Vec::new(),
            retry_after: None,
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, detail)
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, detail)
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, detail)
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, detail)
    }

    /// A server fault. The cause must already be logged; clients see only the title.
    pub fn internal() -> Self {
        Self::new(ErrorCode::Internal, "the server could not complete the request")
    }

    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, detail)
    }

    /// A dependency (the database, the blob store) that does not answer now but should soon:
    /// 503 with `Retry-After`, so clients and load balancers wait instead of giving up.
    pub fn dependency_down(detail: impl Into<String>) -> Self {
        Self {
            retry_after: Some(DEPENDENCY_RETRY_SECS),
            ..Self::new(ErrorCode::Unavailable, detail)
        }
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after.max(1)),
            ..Self::new(ErrorCode::RateLimited, "too many attempts; retry later")
        }
    }

    /// 422 with one problem per field.
    /// A validation failure listing at most [`MAX_FIELD_ERRORS`] field errors.
    pub fn validation(mut errors: Vec<FieldError>) -> Self {
        if errors.len() > MAX_FIELD_ERRORS {
            let more = errors.len() - (MAX_FIELD_ERRORS - 1);
            errors.truncate(MAX_FIELD_ERRORS - 1);
            errors.push(FieldError::new("…", format!("{more} more problems not listed")));
        }
        let detail = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect::<Vec<_>>()
            .join("; ");
        Self {
            errors,
            ..Self::new(ErrorCode::ValidationFailed, detail)
        }
    }

    pub fn status(&self) -> u16 {
        self.code.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_stays_small_however_much_is_wrong() {
        let errors = (0..10_000)
            .map(|i| FieldError::new(format!("documents[{i}].{}", "x".repeat(5_000)), "é".repeat(5_000)))
            .collect();
        let error = Error::validation(errors);
        assert_eq!(error.errors.len(), MAX_FIELD_ERRORS);
        assert_eq!(error.errors.last().unwrap().message, "9951 more problems not listed");
        assert_eq!(error.errors[0].message.chars().count(), MAX_MESSAGE_CHARS + 1);
        assert!(error.errors[0].field.ends_with('…'));
        assert_eq!(error.detail.chars().count(), MAX_DETAIL_CHARS + 1);
        let size = serde_json::to_vec(&error.errors).unwrap().len() + error.detail.len();
        assert!(size < 64 * 1024, "{size} bytes");
    }

    #[test]
    fn short_texts_are_kept_whole() {
        assert_eq!(clip("abc".into(), 3), "abc");
        assert_eq!(clip("abcd".into(), 3), "abc…");
        assert_eq!(FieldError::new("name", "is required").message, "is required");
    }
}
