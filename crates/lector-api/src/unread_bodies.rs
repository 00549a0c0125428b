//! An answer to a request whose body was not read to its end says `Connection: close`.
//!
//! Such a connection cannot carry another request: hyper closes an HTTP/1 connection after the
//! answer when the rest of the body is not already in its buffer. It did so without saying, and
//! a client that keeps connections open (urllib3, under the original platform's Python client)
//! sent its next request into a connection about to close: after a 401, 404 or 405 to a request
//! with a body (refused before the body was read), the next request failed a third to a half of
//! the time. Said in the answer, the client opens a new connection instead.
//!
//! The header is also sent when hyper could have drained a small body already in its buffer
//! and kept the connection: such refusals (401, 404, 405, 413, 429, 503 before the body) then
//! cost the client a new connection, which is the price of never breaking one.
//!
//! The close itself lingers ([`crate::lingering_close`]), so that a client still sending the
//! body gets the answer rather than a reset.
//!
//! HTTP/2 needs none of this (a stream ends on its own, and the header is not allowed there).

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, Version, header};
use axum::middleware::Next;
use axum::response::Response;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

/// Marks the answer `Connection: close` when its HTTP/1 request brought a body that the
/// handler left unread.
pub async fn close_after_unread_bodies(request: Request, next: Next) -> Response {
    if request.version() >= Version::HTTP_2 || !brings_body(&request) {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(Watched {
            inner: body,
            read: read.clone(),
        })
    });
    let mut response = next.run(request).await;
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Whether the request's head announces a body (a length above zero, or chunks).
fn brings_body(request: &Request) -> bool {
    let headers = request.headers();
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0)
}

/// A request body that notes when it has been read to its end.
struct Watched {
    inner: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
