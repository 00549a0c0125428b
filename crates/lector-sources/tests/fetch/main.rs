//! Fetches through the guard against local servers: an HTTP server on loopback (reachable only
//! because the test's configuration allows 127.0.0.1 and ::1), stand-ins for PostgreSQL, and the
//! test PostgreSQL. One test binary, so the crate and its dev-dependencies link once.

mod http;
mod postgres;

use lector_core::SourceKind;
use lector_core::config::SourcesConfig;
use lector_sources::{CredentialSecret, Limits, NetPolicy, SealKey, Sources};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::net::TcpListener;

const WS: i64 = 41;

fn limits() -> Limits {
    Limits {
        max_bytes: 64 * 1024,
        max_rows: 1000,
        timeout: Duration::from_secs(10),
    }
}

fn loopback_allowed() -> NetPolicy {
    NetPolicy::from_config(&SourcesConfig {
        allowed_networks: vec!["127.0.0.1".into(), "::1".into()],
        ..SourcesConfig::default()
    })
    .unwrap()
}

fn sources(policy: NetPolicy, limits: Limits) -> Sources {
    Sources::with_parts(SealKey::from_bytes([3; 32]), policy, limits)
}

fn sealed(sources: &Sources, kind: SourceKind, secret: Value) -> String {
    sources.seal(WS, &CredentialSecret::parse(kind, &secret).unwrap())
}

/// A PostgreSQL credential of `url`, sealed.
fn sealed_postgres(sources: &Sources, url: &str) -> String {
    sealed(sources, SourceKind::Postgres, json!({ "url": url }))
}

/// A port on 127.0.0.1 that nothing listens on (its listener is gone).
async fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
