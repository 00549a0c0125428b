//! Fetches through the guard against local servers: an HTTP server on loopback (reachable only
//! because the test's configuration allows 127.0.0.1 and ::1), stand-ins for PostgreSQL, and the
//! test PostgreSQL. One test binary, so the crate and its dev-dependencies link once.

mod http;
mod postgres;
mod stand_ins;
mod turns;

use lector_core::SourceKind;
use lector_core::config::SourcesConfig;
use lector_sources::{Concurrency, CredentialSecret, Limits, NetPolicy, SealKey, Sources};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

const WS: i64 = 41;

/// An HTTP request's head as a local test server reads it; `None` when the client goes first.
async fn read_head(stream: &mut tokio::net::TcpStream) -> Option<String> {
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

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

/// Turns enough for the tests that do not count them.
const TURNS: Concurrency = Concurrency {
    max_fetches: 8,
    wait: Duration::from_secs(10),
};

fn sources(policy: NetPolicy, limits: Limits) -> Sources {
    Sources::with_parts(SealKey::from_bytes([3; 32]), policy, limits, TURNS)
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

/// A TLS server configuration with a self-signed certificate for `localhost`.
fn localhost_tls() -> Arc<rustls::ServerConfig> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
    let certs = vec![CertificateDer::from(generated.cert.der().to_vec())];
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    Arc::new(config)
}

/// Runs `test` in a process of its own: this test binary again, running only the test `name`
/// (its path, as `module::test`) with `env` added. For a test that needs environment variables
/// this process does not have (the workspace forbids the `unsafe` of `set_var`), or that reads
/// the process's peak memory with nothing else running.
fn run_alone(name: &str, env: &[(&str, &str)], test: impl FnOnce()) {
    const MARK: &str = "LECTOR_SOURCES_TEST_ALONE";
    if std::env::var(MARK).is_ok_and(|running| running == name) {
        return test();
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(MARK, name)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{name} failed in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The most memory this process has held (its peak resident set), in bytes.
fn peak_memory() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kilobytes = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM in /proc/self/status");
    kilobytes * 1024
}
