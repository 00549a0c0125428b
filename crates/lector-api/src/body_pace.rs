//! A floor under the pace at which a request body arrives.
//!
//! Without one, a client that trickles a body holds what its request holds for as long as it
//! likes: a connection, its caller's turn, and, for a body over 4 MiB or of unknown length, up
//! to `max_body_bytes` of the large-body budget (`budget.rs`), so two clients sending a byte a
//! second could hold back every other upload. Here a body must arrive at
//! `http.min_body_bytes_per_sec` on average once it has had `http.body_grace_secs`, as Kestrel's
//! minimum request body data rate does; since a body holds at most `max_body_bytes`, no body
//! then takes longer than `max_body_bytes / min_body_bytes_per_sec` plus the grace.
//!
//! Only the time the server waited for the client counts: while a handler is busy between two
//! reads, or a request waits for its turn or its share of the budget, the client is not late.
//! HTTP/2 bodies are paced too: its streams share the connection's flow-control window, and
//! `serve.rs` sizes that window to hold every stream's, so a stream whose body waits unread
//! cannot make another stream's body late.
//! A body that falls behind ends in an error (so the handler's read fails), and the request is
//! answered 408 whatever the handler made of the failed read; the body was left unread, so the
//! answer closes its HTTP/1 connection (`unread_bodies.rs`); an HTTP/2 stream is reset.

use crate::error::ApiError;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body::{Frame, SizeHint};
use lector_core::{Error, ErrorCode};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// The pace a body must keep, from `HttpConfig`.
#[derive(Debug, Clone, Copy)]
pub struct BodyPace {
    /// Bytes per second; 0 turns the check off.
    pub min_bytes_per_sec: u64,
    pub grace: Duration,
}

/// Wraps every request body in a [`PacedBody`], and answers 408 for one that fell behind.
pub async fn bodies_keep_pace(State(pace): State<BodyPace>, request: Request, next: Next) -> Response {
    if pace.min_bytes_per_sec == 0 {
        return next.run(request).await;
    }
    let late = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| Body::new(PacedBody::new(body, pace, late.clone())));
    let response = next.run(request).await;
    if !late.load(Ordering::Acquire) {
        return response;
    }
    tracing::info!("a request body arrived too slowly");
    ApiError(Error::new(
        ErrorCode::RequestTimeout,
        format!(
            "the request body arrived slower than {} bytes a second (http.min_body_bytes_per_sec)",
            pace.min_bytes_per_sec
        ),
    ))
    .into_response()
}

/// A request body that fails once it has arrived slower than its [`BodyPace`].
struct PacedBody {
    inner: Body,
    pace: BodyPace,
    /// Bytes arrived so far.
    arrived: u64,
    /// Time spent waiting for the client before the current wait.
    waited: Duration,
    /// When the current wait for the client began, and the timer that ends it.
    waiting: Option<(Instant, Pin<Box<Sleep>>)>,
    late: Arc<AtomicBool>,
}

impl PacedBody {
    fn new(inner: Body, pace: BodyPace, late: Arc<AtomicBool>) -> Self {
        Self {
            inner,
            pace,
            arrived: 0,
            waited: Duration::ZERO,
            waiting: None,
            late,
        }
    }

    /// The most waiting the bytes arrived so far allow: the grace, or the time they would take
    /// at the least pace, whichever is longer.
    fn allowed_wait(&self) -> Duration {
        let at_pace = Duration::from_secs_f64(self.arrived as f64 / self.pace.min_bytes_per_sec as f64);
        self.pace.grace.max(at_pace)
    }
}

/// The error a body that fell behind ends in.
#[derive(Debug)]
struct TooSlow;

impl std::fmt::Display for TooSlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body arrived too slowly")
    }
}

impl std::error::Error for TooSlow {}

impl http_body::Body for PacedBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.late.load(Ordering::Relaxed) {
            return Poll::Ready(Some(Err(TooSlow.into())));
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                if let Some((since, _)) = this.waiting.take() {
                    this.waited += since.elapsed();
                }
                if let Some(Ok(data)) = frame.as_ref().map(|f| f.as_ref().map(Frame::data_ref)) {
                    this.arrived += data.map_or(0, |d| d.len() as u64);
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let allowed = this.allowed_wait().saturating_sub(this.waited);
                // `sleep` clamps a deadline past what an `Instant` can hold.
                let (_, timer) = this
                    .waiting
                    .get_or_insert_with(|| (Instant::now(), Box::pin(tokio::time::sleep(allowed))));
                if timer.as_mut().poll(cx).is_ready() {
                    this.late.store(true, Ordering::Release);
                    return Poll::Ready(Some(Err(TooSlow.into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A body sent in `chunks`, each after its pause.
    fn trickled(chunks: Vec<(Duration, &'static [u8])>) -> Body {
        Body::from_stream(futures_util::stream::unfold(
            chunks.into_iter(),
            |mut chunks| async move {
                let (pause, bytes) = chunks.next()?;
                tokio::time::sleep(pause).await;
                Some((Ok::<_, std::io::Error>(Bytes::from_static(bytes)), chunks))
            },
        ))
    }

    fn paced(body: Body, late: &Arc<AtomicBool>) -> PacedBody {
        let pace = BodyPace {
            min_bytes_per_sec: 100,
            grace: Duration::from_secs(2),
        };
        PacedBody::new(body, pace, late.clone())
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_at_pace_is_read_whole() {
        let late = Arc::new(AtomicBool::new(false));
        // 150 bytes every 0.9 s: the first ones within the grace, then above the least pace.
        let chunk: &'static [u8] = &[b'x'; 150];
        let chunks = vec![(Duration::from_millis(900), chunk); 8];
        let body = paced(trickled(chunks), &late).collect().await.unwrap().to_bytes();
        assert_eq!(body.len(), 1200);
        assert!(!late.load(Ordering::Relaxed));
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_falls_behind_fails() {
        let late = Arc::new(AtomicBool::new(false));
        // 10 bytes, then nothing for longer than the grace allows.
        let chunks = vec![
            (Duration::ZERO, &b"0123456789"[..]),
            (Duration::from_secs(60), &b"late"[..]),
        ];
        let started = Instant::now();
        let error = paced(trickled(chunks), &late).collect().await.unwrap_err();
        assert_eq!(error.to_string(), "the request body arrived too slowly");
        assert!(late.load(Ordering::Relaxed));
        assert_eq!(started.elapsed().as_secs(), 2, "failed when the grace ran out");
    }

    #[tokio::test(start_paused = true)]
    async fn a_grace_beyond_any_clock_is_no_panic() {
        let late = Arc::new(AtomicBool::new(false));
        let pace = BodyPace {
            min_bytes_per_sec: 1,
            grace: Duration::from_secs(u64::MAX),
        };
        let chunks = vec![(Duration::from_secs(3600), &b"late"[..])];
        let body = PacedBody::new(trickled(chunks), pace, late.clone());
        assert_eq!(body.collect().await.unwrap().to_bytes(), "late");
        assert!(!late.load(Ordering::Relaxed));
    }

    #[tokio::test(start_paused = true)]
    async fn time_the_reader_takes_is_not_the_clients() {
        let late = Arc::new(AtomicBool::new(false));
        let chunks = vec![(Duration::ZERO, &b"first"[..]), (Duration::ZERO, &b"second"[..])];
        let mut body = paced(trickled(chunks), &late);
        assert!(body.frame().await.unwrap().is_ok());
        // The handler works a minute between two reads; the client had sent the rest at once.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(body.frame().await.unwrap().is_ok());
        assert!(!late.load(Ordering::Relaxed));
    }
}
