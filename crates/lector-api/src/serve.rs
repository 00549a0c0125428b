//! The listener: our own accept loop, so that a plain-HTTP request on the TLS port gets a short
//! 400 telling the client to use https (a TLS connection starts with the byte 0x16), so that
//! SIGTERM stops accepting and lets open requests finish, and so that slow or idle clients
//! cannot hold the server: at most `http.max_connections` connections are served at once (and
//! at most `http.max_connections_per_peer` from one address that is not a trusted proxy), a
//! request head must arrive within `http.header_read_timeout_secs` (HTTP/1), and a connection
//! with no request in flight is closed after `http.keep_alive_timeout_secs`. HTTP/2's windows
//! are sized so that one stream's unread body cannot stall another's (`HTTP2_CONNECTION_WINDOW`).

use crate::connection_timers::{Activity, HeadWatch};
use crate::state::{AppState, PeerAddr};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use lector_core::config::{HttpConfig, TlsMode};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// HTTP/2 streams a connection may have open at once.
const HTTP2_STREAMS: u32 = 16;
/// Bytes of a request body a client may send on one HTTP/2 stream before the server reads them.
const HTTP2_STREAM_WINDOW: u32 = 256 * 1024;
/// Bytes of request bodies a client may send on an HTTP/2 connection before the server reads
/// them: every stream's whole window, so that streams whose bodies wait unread (for their
/// caller's turn, or their share of the large-body budget) can never use up the window of a
/// stream being read, and a body that arrives late is late by the client's doing
/// (`body_pace.rs`). Memory: 4 MiB a connection at the most, buffered by hyper.
const HTTP2_CONNECTION_WINDOW: u32 = HTTP2_STREAMS * HTTP2_STREAM_WINDOW;

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    router: Router,
    tls: Option<TlsAcceptor>,
    state: AppState,
}

impl Server {
    /// Binds the configured address and prepares TLS (creating the certificate if needed).
    pub async fn bind(state: AppState) -> Result<Self, String> {
        let tls = match state.config.tls {
            TlsMode::On => Some(TlsAcceptor::from(crate::tls::server_config(&state.config)?)),
            TlsMode::Proxy => None,
        };
        let listener = TcpListener::bind(&state.config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", state.config.listen))?;
        Ok(Self {
            listener,
            router: crate::app(state.clone()),
            tls,
            state,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then drains open connections (at most 30 s), then
    /// waits for the workflow runs going on in the background (at most 30 s more) and records
    /// those it gives up as errors.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        // `uploads.sweep_every_secs = 0`: another node sweeps, or this one is a copy that must not.
        let sweeper =
            (self.state.config.uploads.sweep_every_secs > 0).then(|| tokio::spawn(sweep_leftovers(self.state.clone())));
        let tender = tokio::spawn(crate::background_runs::tend(self.state.clone()));
        let graceful = GracefulShutdown::new();
        let http = self.state.config.http;
        let ceiling = Arc::new(Semaphore::new(http.max_connections));
        let per_peer = PeerSlots::default();
        let trusted = self.state.config.trusted_proxies.clone();
        tokio::pin!(shutdown);
        loop {
            // A free slot first: past the ceiling, clients wait in the listen queue.
            let permit = tokio::select! {
                permit = ceiling.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
                () = &mut shutdown => break,
            };
            tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        // Trusted proxies carry everyone's connections: only the ceiling holds them.
                        let ip = peer.ip().to_canonical();
                        let slot = if trusted.contains(&ip) {
                            None
                        } else if let Some(slot) = per_peer.take(ip, http.max_connections_per_peer) {
                            Some(slot)
                        } else {
                            tracing::debug!(%ip, "connection refused: the address holds its share of connections");
                            continue;
                        };
                        let watcher = graceful.watcher();
                        let (router, tls) = (self.router.clone(), self.tls.clone());
                        tokio::spawn(async move {
                            connection(stream, peer, router, tls, watcher, http).await;
                            drop((permit, slot));
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                () = &mut shutdown => break,
            }
        }
        drop(self.listener);
        if let Some(sweeper) = sweeper {
            sweeper.abort();
        }
        tracing::info!(connections = graceful.count(), "shutting down; draining connections");
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(DRAIN_TIMEOUT) => tracing::warn!("connections still open after the drain timeout"),
        }
        // A run answered during the drain may have just started, and a last_step run may go
        // on after its caller left: wait for both kinds of runs, within one grace.
        let grace = crate::background_runs::BACKGROUND_RUNS_GRACE;
        let (given_up, unanswered) = tokio::join!(
            self.state.background_runs.wait(grace),
            self.state.answering_runs.wait(grace)
        );
        if unanswered > 0 {
            tracing::warn!(
                runs = unanswered,
                "last_step workflow runs still going at shutdown are cut short unrecorded"
            );
        }
        tender.abort();
        if !given_up.is_empty() {
            tracing::warn!(
                runs = given_up.len(),
                "workflow runs still going at shutdown are recorded as errors"
            );
            crate::background_runs::end_abandoned(&self.state, &given_up).await;
        }
        // The executions of the last calls answered are written before the process ends.
        self.state.execution_log.flush().await;
    }
}

/// The connections each client address holds.
#[derive(Debug, Clone, Default)]
struct PeerSlots(Arc<Mutex<HashMap<IpAddr, usize>>>);

/// One connection of an address, given back when dropped.
#[derive(Debug)]
struct PeerSlot {
    slots: PeerSlots,
    ip: IpAddr,
}

impl PeerSlots {
    /// A slot for `ip`: `None` when it holds `limit` connections already.
    fn take(&self, ip: IpAddr, limit: usize) -> Option<PeerSlot> {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(ip).or_insert(0);
        if *count >= limit {
            return None;
        }
        *count += 1;
        Some(PeerSlot {
            slots: self.clone(),
            ip,
        })
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut held = self.slots.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    tls: Option<TlsAcceptor>,
    watcher: hyper_util::server::graceful::Watcher,
    http: HttpConfig,
) {
    let _ = stream.set_nodelay(true);
    let activity = Activity::default();
    let tracked = activity.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(PeerAddr::of(peer));
        let guard = tracked.start();
        let answer = router.clone().oneshot(request.map(axum::body::Body::new));
        async move {
            use http_body_util::BodyExt;
            // The request stays in flight until its answer's body is sent (or dropped).
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| {
                axum::body::Body::new(body.map_frame(move |frame| {
                    let _in_flight = &guard;
                    frame
                }))
            }))
        }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The parser's limits sit above `config.http`'s, so `head_limits` answers with a problem.
    builder
        .http1()
        .timer(TokioTimer::new())
        // hyper's own head timeout would also cut idle kept-alive connections; `Activity` keeps
        // the two clocks apart.
        .header_read_timeout(None)
        .max_buf_size(lector_core::config::PARSER_MAX_HEAD_BYTES)
        .max_headers(lector_core::config::PARSER_MAX_HEADERS);
    builder
        .http2()
        .timer(TokioTimer::new())
        .adaptive_window(false)
        .max_concurrent_streams(HTTP2_STREAMS)
        .initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .initial_connection_window_size(HTTP2_CONNECTION_WINDOW);
    let keep_alive = Duration::from_secs(http.keep_alive_timeout_secs);
    let head = Duration::from_secs(http.header_read_timeout_secs);
    let Some(acceptor) = tls else {
        let served = watcher.watch(
            builder
                .serve_connection_with_upgrades(TokioIo::new(HeadWatch::new(stream, activity.clone())), service)
                .into_owned(),
        );
        tokio::select! {
            served = served => if let Err(e) = served { tracing::debug!(error = %e, %peer, "connection ended with an error") },
            () = activity.expired(keep_alive, head) => tracing::debug!(%peer, "idle or slow connection closed"),
        }
        return;
    };
    // One deadline for the first byte and the handshake together.
    let handshake_ends = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(handshake_ends, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0] == TLS_HANDSHAKE_RECORD => {}
        Ok(Ok(1)) => return refuse_plain_http(stream).await,
        _ => return,
    }
    let tls_stream = match tokio::time::timeout_at(handshake_ends, acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return tracing::debug!(error = %e, %peer, "TLS handshake failed"),
        Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
    };
    let served = watcher.watch(
        builder
            .serve_connection_with_upgrades(TokioIo::new(HeadWatch::new(tls_stream, activity.clone())), service)
            .into_owned(),
    );
    tokio::select! {
        served = served => if let Err(e) = served { tracing::debug!(error = %e, %peer, "connection ended with an error") },
        () = activity.expired(keep_alive, head) => tracing::debug!(%peer, "idle or slow connection closed"),
    }
}

/// Answers a plain-HTTP request on the TLS port, without serving it.
async fn refuse_plain_http(mut stream: TcpStream) {
    let body = r#"{"type":"urn:lector:problem:bad_request","title":"Bad request","status":400,"detail":"this port speaks HTTPS only: use https://","code":"bad_request"}"#;
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: application/problem+json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
        // Read what the client sent first, so closing does not reset the connection under it.
        let mut buf = [0u8; 4096];
        let _ = tokio::time::timeout(
            Duration::from_millis(200),
            tokio::io::AsyncReadExt::read(&mut stream, &mut buf),
        )
        .await;
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// Completes on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutdown signal received");
}

/// Deletes uploaded files nothing used, then blobs no row references (older than the same
/// `uploads.unused_ttl_secs`), then jobs that ended more than `finished_jobs_kept_secs` ago,
/// then rate-limit counters and one-time tokens that count nothing any more, every
/// `uploads.sweep_every_secs`, while the server runs. The first sweep comes at a random moment
/// within the first period, so that nodes restarted together do not all sweep at once.
async fn sweep_leftovers(state: AppState) {
    let uploads = state.config.uploads;
    let period = Duration::from_secs(uploads.sweep_every_secs);
    let first = tokio::time::Instant::now() + first_sweep_after(period);
    let mut every = tokio::time::interval_at(first, period);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match state.store.sweep_uploads(uploads.unused_ttl_secs).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(uploads = n, "swept unused uploads"),
            Err(e) => tracing::warn!(error = %e.detail, "sweeping uploads failed"),
        }
        match state.store.sweep_orphan_blobs(uploads.unused_ttl_secs).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(blobs = n, "swept blobs no row references"),
            Err(e) => tracing::warn!(error = %e.detail, "sweeping orphan blobs failed"),
        }
        match state
            .store
            .prune_finished_jobs(state.config.finished_jobs_kept_secs)
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(jobs = n, "deleted jobs that ended long ago"),
            Err(e) => tracing::warn!(error = %e.detail, "deleting old jobs failed"),
        }
        match state
            .store
            .prune_spent_counters(state.config.rate_limits.longest_window_secs())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(rows = n, "deleted spent rate-limit counters and expired tokens"),
            Err(e) => tracing::warn!(error = %e.detail, "deleting spent counters failed"),
        }
    }
}

/// When a node's first sweep comes: a random moment within the first `period`.
fn first_sweep_after(period: Duration) -> Duration {
    period.mul_f64(rand::random::<f64>())
}
