//! Every request's id: the client's `X-Request-Id` when it sent a sane one (so a proxy's or a
//! caller's id follows the request through Lector's logs), a fresh UUID otherwise. The id is
//! put on the request before anything else sees it (the request's log span, problem bodies)
//! and answered in the response's `X-Request-Id`.
//!
//! A sane id is 1 to [`MAX_ID_CHARS`] characters of letters, digits and `-._:`; anything else
//! (a long value, spaces, quotes, control characters) is replaced rather than echoed into logs
//! and headers. Ids are not checked for uniqueness: a client that reuses one confuses only its
//! own traces.

use crate::error::REQUEST_ID;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// The longest id taken from a client.
pub const MAX_ID_CHARS: usize = 128;

/// Sets the request's id (the client's, if sane) and answers it.
pub async fn assign(mut request: Request, next: Next) -> Response {
    let name = HeaderName::from_static(REQUEST_ID);
    let id = request
        .headers()
        .get(&name)
        .filter(|value| is_sane(value.as_bytes()))
        .cloned()
        .unwrap_or_else(fresh_id);
    request.headers_mut().insert(name.clone(), id.clone());
    let mut response = next.run(request).await;
    response.headers_mut().insert(name, id);
    response
}

fn is_sane(id: &[u8]) -> bool {
    (1..=MAX_ID_CHARS).contains(&id.len())
        && id
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':'))
}

fn fresh_id() -> HeaderValue {
    HeaderValue::try_from(uuid::Uuid::new_v4().to_string()).unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

#[cfg(test)]
mod tests {
    use super::is_sane;

    #[test]
    fn only_short_plain_ids_are_taken() {
        assert!(is_sane(b"3f2a9c1e-7b4d-4e0a-9c8f-1a2b3c4d5e6f"));
        assert!(is_sane(b"lb:node-2.req_00017"));
        assert!(!is_sane(b""));
        assert!(!is_sane(&[b'a'; 129]));
        assert!(is_sane(&[b'a'; 128]));
        assert!(!is_sane(b"id with spaces"));
        assert!(!is_sane(b"id\"quoted\""));
        assert!(!is_sane(b"line\nbreak"));
        assert!(!is_sane("ünïcode".as_bytes()));
    }
}
