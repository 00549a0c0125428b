//! Request extractors that reject in our problem+json format.
//!
//! [`Body`] parses JSON in two steps: first as a value, to name server-owned fields with
//! `immutable_field`, and to refuse control characters by lector-core's one character rule
//! (`invalid_characters`, before anything reaches SQL), then into the write type, whose
//! `deny_unknown_fields` names strangers with `unknown_field`; then it runs the type's own
//! [`WriteBody::validate`]. [`PathParams`] and [`QueryParams`] wrap axum's extractors so a bad
//! id or query answers 400 in the same shape; their string values are short fields. Boolean
//! query fields read through [`query_flag`], which takes `True`/`False` as the original's Python
//! client sends them.

use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use lector_core::validate::{Problems, TextKind, check_chars};
use lector_core::{Error, ErrorCode, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A request body type: which fields belong to the server, and what makes a value valid.
pub trait WriteBody: DeserializeOwned {
    /// Fields of the resource a client may read but never set in this request.
    const IMMUTABLE: &'static [&'static str] = &[];

    /// Keys whose strings (and everything below them) are free text: newline and tab allowed.
    const FREE_TEXT: &'static [&'static str] = &["description", "example", "meta", "parameters"];

    /// Keys whose strings are document text, which normalisation cleans (NUL is dropped).
    const DOCUMENT_TEXT: &'static [&'static str] = &["text"];

    /// Largest body this request takes.
    const MAX_BYTES: usize = MAX_JSON_BYTES;

    /// Checks values; push every problem found.
    fn validate(&self, _problems: &mut Problems) {}
}

/// `first` then `more`: the server-owned fields of a change, which refuses what the creation
/// refuses and what the creation fixed for good (`N`, the total, is checked when compiling).
pub const fn also_immutable<const N: usize>(first: &[&'static str], more: &[&'static str]) -> [&'static str; N] {
    assert!(first.len() + more.len() == N, "N must be the number of fields");
    let mut all = [""; N];
    let mut i = 0;
    while i < first.len() {
        all[i] = first[i];
        i += 1;
    }
    while i < N {
        all[i] = more[i - first.len()];
        i += 1;
    }
    all
}

/// A query parameter's value read as `T` (an enum's name, say); 400 naming the parameter.
pub(crate) fn parse_query<T: std::str::FromStr<Err = String>>(name: &str, value: &str) -> lector_core::Result<T> {
    value
        .trim()
        .parse()
        .map_err(|e| lector_core::Error::new(lector_core::ErrorCode::InvalidParameter, format!("{name}: {e}")))
}

/// Largest JSON body accepted by default (bulk uploads set their own, larger limit).
pub const MAX_JSON_BYTES: usize = 2 * 1024 * 1024;

/// A validated JSON request body.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S: Send + Sync, T: WriteBody> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, _state: &S) -> Result<Self, ApiError> {
        let is_json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| {
                let v = v.trim().to_ascii_lowercase();
                v == "application/json" || (v.starts_with("application/") && v.ends_with("+json"))
            });
        if !is_json {
            return Err(Error::new(ErrorCode::UnsupportedMediaType, "send the body as application/json").into());
        }
        let max = T::MAX_BYTES;
        let too_large = || Error::new(ErrorCode::PayloadTooLarge, format!("this body has at most {max} bytes"));
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        if declared.is_some_and(|n| n > max) {
            drain(request.into_body()).await;
            return Err(too_large().into());
        }
        let bytes = axum::body::to_bytes(request.into_body(), max).await.map_err(|e| {
            if std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("length limit")) {
                too_large()
            } else {
                Error::bad_request(format!("cannot read the body: {e}"))
            }
        })?;
        parse_body(&bytes).map(Body).map_err(ApiError)
    }
}

/// Reads and discards a refused body (at most [`MAX_DRAIN_BYTES`]), so that an HTTP/1.1 client
/// still writing it reads the answer instead of a broken connection.
async fn drain(body: axum::body::Body) {
    use http_body_util::BodyExt;
    let mut body = body;
    let mut seen = 0usize;
    while seen < MAX_DRAIN_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
            _ => break,
        }
    }
}

/// The most of a refused body the server reads before it gives up on the connection.
const MAX_DRAIN_BYTES: usize = 16 * 1024 * 1024;

/// The pure part of [`Body`]: bytes to a validated write type. One streaming pass checks
/// syntax, server-owned fields and characters (`lector_core::body`); then the bytes are
/// deserialised straight into the write type, never into an intermediate value tree.
pub fn parse_body<T: WriteBody>(bytes: &[u8]) -> Result<T> {
    let keys = lector_core::body::BodyKeys {
        immutable: T::IMMUTABLE,
        free: T::FREE_TEXT,
        document: T::DOCUMENT_TEXT,
    };
    lector_core::body::check_json_body(bytes, keys)?;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let body: T = serde_path_to_error::deserialize(&mut deserializer).map_err(shape_problem)?;
    deserializer
        .end()
        .map_err(|e| Error::new(ErrorCode::BadRequest, e.to_string()))?;
    let mut problems = Problems::default();
    body.validate(&mut problems);
    problems.finish()?;
    Ok(body)
}

/// A body whose shape does not fit its type: 400 (`unknown_field` for an unknown field), its
/// detail serde's message, and the field it concerns in `errors` (`documents[2].text`, or the
/// missing field's name), so that a client can point at it as it does at a validation problem.
pub(crate) fn shape_problem(error: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let text = error.inner().to_string();
    let code = if text.starts_with("unknown field") {
        ErrorCode::UnknownField
    } else {
        ErrorCode::BadRequest
    };
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    let path = error.path().to_string();
    let field = match (path.as_str(), named) {
        (".", Some(name)) => name.to_owned(),
        (".", None) => String::new(),
        (path, Some(name)) if text.starts_with("missing field") => format!("{path}.{name}"),
        (path, _) => path.to_owned(),
    };
    // The message without serde's " at line L column C", which the detail keeps.
    let message = text.split(" at line ").next().unwrap_or(&text).to_owned();
    let mut problem = Error::new(code, text);
    if !field.is_empty() {
        problem.errors.push(lector_core::FieldError::new(field, message));
    }
    problem
}

/// Path parameters; a value of the wrong type answers 400.
#[derive(Debug)]
pub struct PathParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Ok(raw) = axum::extract::RawPathParams::from_request_parts(parts, state).await {
            for (name, value) in &raw {
                check_chars(name, value, TextKind::Short).map_err(ApiError)?;
            }
        }
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| PathParams(p.0))
            .map_err(|e| ApiError(Error::new(ErrorCode::InvalidParameter, e.body_text())))
    }
}

/// Query parameters; an unknown or malformed one answers 400.
#[derive(Debug)]
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        if let Ok(axum::extract::Query(pairs)) = axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&parts.uri)
        {
            for (name, value) in &pairs {
                check_chars(&name.escape_debug().to_string(), name, TextKind::Short).map_err(ApiError)?;
                check_chars(name, value, TextKind::Short).map_err(ApiError)?;
            }
        }
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| QueryParams(q.0))
            .map_err(|e| ApiError(Error::new(ErrorCode::InvalidParameter, e.body_text())))
    }
}

/// 400 `invalid_parameter` naming the query parameter `name` and what is wrong with it.
pub fn bad_parameter(name: &str, message: &str) -> Error {
    let mut error = Error::new(ErrorCode::InvalidParameter, format!("{name} {message}"));
    error.errors.push(lector_core::FieldError::new(name, message));
    error
}

/// A boolean query value: `true`, `false`, `1` or `0` in any letter case (the original's Python
/// client sends `True` and `False`); `None` for anything else.
pub fn parse_flag(text: &str) -> Option<bool> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("true") || text == "1" {
        Some(true)
    } else if text.eq_ignore_ascii_case("false") || text == "0" {
        Some(false)
    } else {
        None
    }
}

/// Deserialises a boolean query field by [`parse_flag`]:
/// `#[serde(default, deserialize_with = "crate::extract::query_flag")]`.
pub fn query_flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse_flag(&text).ok_or_else(|| serde::de::Error::custom(format!("expected true or false, not {text:?}")))
}

/// [`query_flag`] for an optional field (absent is `None`; give it `#[serde(default)]` too).
pub fn optional_query_flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    query_flag(deserializer).map(Some)
}

/// A body field given (as a value or as `null`) is `Some`; `#[serde(default)]` leaves an absent
/// one `None`: `#[serde(default, deserialize_with = "crate::extract::nullable")]` on an
/// `Option<Option<T>>`.
pub fn nullable<'de, T: Deserialize<'de>, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `offset` and `limit` of a list the original client reads in one request: by default the
/// most a page holds ([`Paging::MAX_LIMIT`]), the whole of a list bounded by it (a workspace's
/// members) and the first thousand of one that is not (a project's groups).
#[derive(Debug, Clone, Copy, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct WholeList {
    /// Records to skip (>= 0, default 0).
    #[serde(default)]
    pub offset: i64,
    /// Records to return (1..=1000, default 1000).
    #[serde(default = "whole_list_limit")]
    pub limit: i64,
}

fn whole_list_limit() -> i64 {
    Paging::MAX_LIMIT
}

impl WholeList {
    /// The page asked for, checked as [`Paging::check`] does.
    pub fn paging(self) -> Result<Paging> {
        Paging::checked(self.offset, self.limit)
    }
}

/// `offset` and `limit` of a paged list; out-of-range values answer 400, never a silent clamp.
#[derive(Debug, Clone, Copy, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct Paging {
    /// Records to skip (>= 0, default 0).
    #[serde(default)]
    pub offset: i64,
    /// Records to return (1..=1000, default 100).
    #[serde(default = "default_limit")]
    pub limit: i64,
}

/// The page size when a list request names none.
pub fn default_limit() -> i64 {
    100
}

/// Where a page stands in its list: every paged answer carries these beside its items.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageInfo {
    /// Whether rows follow this page.
    pub has_more: bool,
    pub offset: i64,
    pub limit: i64,
    /// Items in this page.
    pub count: usize,
}

impl Paging {
    pub const MAX_LIMIT: i64 = 1000;

    /// Where a page of `count` items read with this paging stands.
    pub fn page(self, count: usize, has_more: bool) -> PageInfo {
        PageInfo {
            has_more,
            offset: self.offset,
            limit: self.limit,
            count,
        }
    }

    /// The `offset` and `limit` of a query that has other parameters too, checked as [`check`](Self::check) does.
    pub fn checked(offset: i64, limit: i64) -> Result<Self> {
        Self { offset, limit }.check()
    }

    pub fn check(self) -> Result<Self> {
        let mut problems = Problems::default();
        problems.check(self.offset >= 0, "offset", "must be at least 0");
        problems.check(
            (1..=Self::MAX_LIMIT).contains(&self.limit),
            "limit",
            "must be between 1 and 1000",
        );
        problems.finish().map_err(|e| Error {
            code: ErrorCode::InvalidParameter,
            ..e
        })?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Named {
        name: String,
    }

    impl WriteBody for Named {
        const IMMUTABLE: &'static [&'static str] = &["id", "created"];

        fn validate(&self, problems: &mut Problems) {
            problems.name("name", &self.name, 10);
        }
    }

    #[test]
    fn bodies_are_checked_in_order() {
        assert_eq!(
            parse_body::<Named>(b"{\"name\":").unwrap_err().code,
            ErrorCode::InvalidJson
        );
        assert_eq!(
            parse_body::<Named>(br#"{"name":"a","id":3}"#).unwrap_err().code,
            ErrorCode::ImmutableField
        );
        assert_eq!(
            parse_body::<Named>(br#"{"name":"a","colour":3}"#).unwrap_err().code,
            ErrorCode::UnknownField
        );
        assert_eq!(
            parse_body::<Named>(br#"{"name":""}"#).unwrap_err().code,
            ErrorCode::ValidationFailed
        );
        assert_eq!(
            parse_body::<Named>(br#"{"name":"a\u0000"}"#).unwrap_err().code,
            ErrorCode::InvalidCharacters
        );
        assert_eq!(parse_body::<Named>(br#"{"name":"ok"}"#).unwrap().name, "ok");
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Listed {
        #[allow(dead_code)]
        documents: Vec<Named>,
    }

    impl WriteBody for Listed {}

    /// A body of the wrong shape names the field it concerns, as a validation problem does.
    #[test]
    fn shape_problems_name_their_field() {
        let field = |body: &[u8]| {
            let problem = parse_body::<Listed>(body).unwrap_err();
            (problem.code, problem.errors.first().map(|e| e.field.clone()))
        };
        assert_eq!(field(b"{}"), (ErrorCode::BadRequest, Some("documents".into())));
        assert_eq!(
            field(br#"{"documents":[{"name":"a"},{}]}"#),
            (ErrorCode::BadRequest, Some("documents[1].name".into()))
        );
        assert_eq!(
            field(br#"{"documents":[{"name":7}]}"#),
            (ErrorCode::BadRequest, Some("documents[0].name".into()))
        );
        assert_eq!(
            field(br#"{"documents":[],"colour":1}"#),
            (ErrorCode::UnknownField, Some("colour".into()))
        );
        let problem = parse_body::<Listed>(b"{}").unwrap_err();
        assert_eq!(problem.errors[0].message, "missing field `documents`");
        assert!(
            problem.detail.starts_with("missing field `documents` at line 1"),
            "{problem:?}"
        );
    }

    #[test]
    fn query_flags_take_any_case() {
        for text in ["true", "True", "TRUE", "1"] {
            assert_eq!(parse_flag(text), Some(true), "{text}");
        }
        for text in ["false", "False", "FALSE", "0"] {
            assert_eq!(parse_flag(text), Some(false), "{text}");
        }
        for text in ["", "yes", "2", "truth"] {
            assert_eq!(parse_flag(text), None, "{text}");
        }
    }

    #[test]
    fn paging_is_never_clamped() {
        assert!(Paging { offset: 0, limit: 1000 }.check().is_ok());
        assert!(Paging { offset: -1, limit: 10 }.check().is_err());
        assert!(Paging { offset: 0, limit: 0 }.check().is_err());
        assert!(Paging { offset: 0, limit: 1001 }.check().is_err());
    }
}
