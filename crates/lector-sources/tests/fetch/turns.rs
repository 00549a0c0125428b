//! The node's turns to fetch: past `max_fetches` a fetch waits for a turn, then is refused; a
//! database fetch keeps its turn while its thread runs, even after its caller has gone.

use crate::{WS, limits, loopback_allowed, read_head, sealed, sealed_postgres};
use lector_core::SourceKind;
use lector_sources::{Concurrency, Limits, SealKey, Sources};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::watch;

fn sources_taking_turns(limits: Limits, max_fetches: usize, wait: Duration) -> Sources {
    Sources::with_parts(
        SealKey::from_bytes([3; 32]),
        loopback_allowed(),
        limits,
        Concurrency { max_fetches, wait },
    )
}

/// An HTTP server on 127.0.0.1 that holds every request until it is released, counting the
/// requests it holds.
struct HoldingServer {
    port: u16,
    holding: Arc<AtomicUsize>,
    most_held: Arc<AtomicUsize>,
    release: watch::Sender<bool>,
}

impl HoldingServer {
    async fn start() -> HoldingServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (holding, most_held) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (release, released) = watch::channel(false);
        let (counting, most) = (holding.clone(), most_held.clone());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (counting, most, mut released) = (counting.clone(), most.clone(), released.clone());
                tokio::spawn(async move {
                    if read_head(&mut stream).await.is_none() {
                        return;
                    }
                    let now = counting.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let _ = released.wait_for(|go| *go).await;
                    counting.fetch_sub(1, Ordering::SeqCst);
                    let answer = b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\na\n1\n";
                    let _ = stream.write_all(answer).await;
                });
            }
        });
        HoldingServer {
            port,
            holding,
            most_held,
            release,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/held.csv", self.port)
    }

    fn holding(&self) -> usize {
        self.holding.load(Ordering::SeqCst)
    }

    async fn until_holding(&self, count: usize) {
        while self.holding() < count {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn get(s: Sources, secret: String, url: String) -> lector_core::Result<Vec<u8>> {
    let fetched = s.fetch(WS, SourceKind::Http, &secret, &json!({ "url": url })).await?;
    Ok(fetched.bytes)
}

#[tokio::test]
async fn fetches_past_the_node_limit_wait_for_a_turn_then_give_up() {
    let server = HoldingServer::start().await;
    let wait = Duration::from_secs(2);
    let s = sources_taking_turns(limits(), 2, wait);
    let secret = sealed(&s, SourceKind::Http, json!({}));
    let first = tokio::spawn(get(s.clone(), secret.clone(), server.url()));
    let second = tokio::spawn(get(s.clone(), secret.clone(), server.url()));
    server.until_holding(2).await;

    let started = Instant::now();
    let err = get(s.clone(), secret.clone(), server.url()).await.unwrap_err();
    assert!(started.elapsed() >= wait, "it waited for a turn");
    assert_eq!((err.status(), err.retry_after), (503, Some(5)), "{}", err.detail);
    assert!(err.detail.contains("fetching 2 sources at once"), "{}", err.detail);

    let third = tokio::spawn(get(s.clone(), secret.clone(), server.url()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(server.holding(), 2, "the third waits for its turn");
    server.release.send(true).unwrap();
    for fetch in [first, second, third] {
        assert_eq!(fetch.await.unwrap().unwrap(), b"a\n1\n");
    }
    assert_eq!(server.most_held.load(Ordering::SeqCst), 2);
}

/// A database that takes the connection and never answers.
async fn silent_database() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    port
}

/// A database query runs on a blocking thread that a caller's going away does not stop, so its
/// turn goes with the thread: the node never runs more database queries than it has turns.
#[tokio::test]
async fn a_database_fetch_keeps_its_turn_after_its_caller_has_gone() {
    let server = HoldingServer::start().await;
    server.release.send(true).unwrap();
    let timeout = Duration::from_secs(2);
    let s = sources_taking_turns(Limits { timeout, ..limits() }, 1, Duration::from_millis(300));
    let http = sealed(&s, SourceKind::Http, json!({}));
    let database = sealed_postgres(&s, &format!("postgres://ada@127.0.0.1:{}/x", silent_database().await));

    let started = Instant::now();
    let parameters = json!({ "query": "SELECT 1" });
    let query = s.fetch(WS, SourceKind::Postgres, &database, &parameters);
    assert!(
        tokio::time::timeout(Duration::from_millis(300), query).await.is_err(),
        "the caller gives up first"
    );
    let err = get(s.clone(), http.clone(), server.url()).await.unwrap_err();
    assert_eq!(
        err.status(),
        503,
        "the query's thread still has the turn: {}",
        err.detail
    );

    tokio::time::sleep((timeout + Duration::from_millis(500)).saturating_sub(started.elapsed())).await;
    assert_eq!(get(s, http, server.url()).await.unwrap(), b"a\n1\n", "its thread ended");
}
