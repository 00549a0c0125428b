//! The two clocks of a connection, kept apart: how long it may sit idle with no request in
//! flight (`http.keep_alive_timeout_secs`), and how long a request head may take once its
//! first byte has arrived (`http.header_read_timeout_secs`, against slow-header clients).
//!
//! hyper has one timer for both (its header-read timeout also runs while a kept-alive
//! connection waits for the next request), so with it a pooled client connection was cut
//! after the short head timeout, and a client that reused it at that moment lost its request
//! (schemathesis saw "EOF occurred in violation of protocol"). Here the head clock starts only
//! when bytes arrive between requests ([`HeadWatch`] on the decrypted stream), and the idle
//! clock covers the rest.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Requests in flight on one connection, when the last one ended, and when the head of the
/// next one began to arrive.
#[derive(Clone, Default)]
pub(crate) struct Activity(Arc<ActivityState>);

#[derive(Default)]
struct ActivityState {
    in_flight: AtomicUsize,
    clocks: std::sync::Mutex<Clocks>,
    changed: Notify,
}

#[derive(Default, Clone, Copy)]
struct Clocks {
    last_end: Option<Instant>,
    head_started: Option<Instant>,
}

/// Marks a request in flight until dropped.
pub(crate) struct InFlight(Arc<ActivityState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Ok(mut clocks) = self.0.clocks.lock() {
            clocks.last_end = Some(Instant::now());
        }
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_one();
    }
}

impl Activity {
    /// A request whose head has arrived starts.
    pub(crate) fn start(&self) -> InFlight {
        self.0.in_flight.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut clocks) = self.0.clocks.lock() {
            clocks.head_started = None;
        }
        self.0.changed.notify_one();
        InFlight(self.0.clone())
    }

    /// Bytes arrived: with no request in flight they begin the next request's head.
    fn bytes_arrived(&self) {
        if self.0.in_flight.load(Ordering::SeqCst) > 0 {
            return;
        }
        if let Ok(mut clocks) = self.0.clocks.lock()
            && clocks.head_started.is_none()
        {
            clocks.head_started = Some(Instant::now());
            drop(clocks);
            self.0.changed.notify_one();
        }
    }

    /// Completes when the connection should be closed: no request in flight for `idle`
    /// (counted from the connection's start or its last request's end), or a head begun more
    /// than `head` ago and still incomplete.
    pub(crate) async fn expired(&self, idle: Duration, head: Duration) {
        let started = Instant::now();
        loop {
            let changed = self.0.changed.notified();
            let clocks = self.0.clocks.lock().map(|c| *c).unwrap_or_default();
            let now = Instant::now();
            let deadline = if self.0.in_flight.load(Ordering::SeqCst) > 0 {
                None
            } else {
                let idle_end = clocks.last_end.unwrap_or(started) + idle;
                Some(clocks.head_started.map_or(idle_end, |h| idle_end.min(h + head)))
            };
            match deadline {
                Some(deadline) if now >= deadline => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }
}

/// A connection's stream that tells its [`Activity`] when bytes arrive.
pub(crate) struct HeadWatch<S> {
    inner: S,
    activity: Activity,
    /// Its shutdown lingers ([`crate::lingering_close`]).
    linger: crate::lingering_close::Linger,
}

impl<S> HeadWatch<S> {
    pub(crate) fn new(inner: S, activity: Activity) -> Self {
        Self {
            inner,
            activity,
            linger: Default::default(),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadWatch<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for HeadWatch<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, data)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        crate::lingering_close::poll_shutdown(&mut this.inner, &mut this.linger, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(60);
    const HEAD: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_lasts_the_idle_time_not_the_head_time() {
        let activity = Activity::default();
        let started = Instant::now();
        activity.expired(IDLE, HEAD).await;
        assert_eq!(started.elapsed(), IDLE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_begun_head_must_complete_within_the_head_time() {
        let activity = Activity::default();
        let watcher = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.expired(IDLE, HEAD).await })
        };
        tokio::time::sleep(Duration::from_secs(30)).await;
        let began = Instant::now();
        activity.bytes_arrived();
        watcher.await.unwrap();
        assert_eq!(began.elapsed(), HEAD);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_in_flight_keep_it_open_and_the_idle_time_counts_from_their_end() {
        let activity = Activity::default();
        let watcher = {
            let activity = activity.clone();
            tokio::spawn(async move { activity.expired(IDLE, HEAD).await })
        };
        activity.bytes_arrived();
        let request = activity.start();
        tokio::time::sleep(Duration::from_secs(300)).await;
        assert!(!watcher.is_finished(), "closed under a running request");
        let ended = Instant::now();
        drop(request);
        watcher.await.unwrap();
        assert_eq!(ended.elapsed(), IDLE);
    }
}
