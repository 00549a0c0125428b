//! PostgreSQL sources against stand-ins that break the protocol's promises: a length far past
//! anything a source may deliver, or a conversation that never ends.

use crate::{WS, limits, localhost_tls, loopback_allowed, peak_memory, run_alone, sealed_postgres, sources};
use lector_core::SourceKind;
use lector_sources::Limits;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// PostgreSQL's SSLRequest.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// What a stand-in answers a client's start-up message with.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// An authentication request declaring 4 GiB, then 256 MiB of zeros.
    LyingLength,
    /// Notices of 1 KiB, up to 256 MiB.
    EndlessNotices,
    /// "password authentication failed" (SQLSTATE 28P01), then it hangs up.
    AuthenticationFailed,
}

/// The parameters of a start-up message, in order.
type Parameters = Vec<(String, String)>;

/// A stand-in PostgreSQL on 127.0.0.1 that makes a TLS handshake when asked (a self-signed
/// certificate), reads the start-up message and gives `answer`. Answers the port and a channel
/// of the start-up messages' parameters.
async fn stand_in(answer: Answer) -> (u16, UnboundedReceiver<Parameters>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = tokio_rustls::TlsAcceptor::from(localhost_tls());
    let (startups, received) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (acceptor, startups) = (acceptor.clone(), startups.clone());
            tokio::spawn(async move {
                let mut first = [0u8; 8];
                if stream.read_exact(&mut first).await.is_err() {
                    return;
                }
                if first == SSL_REQUEST {
                    stream.write_all(b"S").await.unwrap();
                    if let Ok(tls) = acceptor.accept(stream).await {
                        converse(tls, &[], answer, &startups).await;
                    }
                } else {
                    converse(stream, &first, answer, &startups).await;
                }
            });
        }
    });
    (port, received)
}

/// Reads the start-up message (of which `read` came already) and answers it.
async fn converse<S>(
    mut stream: S,
    read: &[u8],
    answer: Answer,
    startups: &tokio::sync::mpsc::UnboundedSender<Parameters>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut startup = read.chain(&mut stream);
    let Ok(length) = startup.read_u32().await else { return };
    let mut body = vec![0u8; length as usize - 4];
    if startup.read_exact(&mut body).await.is_err() {
        return;
    }
    let _ = startups.send(parameters(&body[4..]));
    match answer {
        Answer::LyingLength => {
            let _ = stream.write_all(&[b'R', 0xff, 0xff, 0xff, 0xff]).await;
            send_repeatedly(&mut stream, &[0u8; 64 * 1024]).await;
        }
        Answer::EndlessNotices => {
            let mut fields = b"SNOTICE\0VNOTICE\0C00000\0M".to_vec();
            fields.extend(std::iter::repeat_n(b'x', 1000));
            fields.extend_from_slice(b"\0\0");
            send_repeatedly(&mut stream, &message(b'N', &fields)).await;
        }
        Answer::AuthenticationFailed => {
            let fields = b"SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed\0\0";
            let _ = stream.write_all(&message(b'E', fields)).await;
        }
    }
}

/// Writes `bytes` again and again, up to 256 MiB or until the client goes; then holds the
/// connection until the client goes.
async fn send_repeatedly<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S, bytes: &[u8]) {
    let mut sent = 0;
    while sent < 256 * 1024 * 1024 {
        if stream.write_all(bytes).await.is_err() {
            return;
        }
        sent += bytes.len();
    }
    let _ = stream.read(&mut [0u8; 1]).await;
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// The name and value pairs of a start-up message's body (after its protocol version).
fn parameters(body: &[u8]) -> Parameters {
    let texts: Vec<String> = body
        .split(|b| *b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    texts
        .chunks_exact(2)
        .take_while(|pair| !pair[0].is_empty())
        .map(|pair| (pair[0].clone(), pair[1].clone()))
        .collect()
}

/// Fetches `SELECT 1` from a stand-in on `port` with `sslmode`.
async fn fetch_from(port: u16, sslmode: &str, limits: Limits) -> lector_core::Result<lector_sources::Fetched> {
    let s = sources(loopback_allowed(), limits);
    let secret = sealed_postgres(
        &s,
        &format!("postgres://ada:pw@127.0.0.1:{port}/sales?sslmode={sslmode}"),
    );
    s.fetch(WS, SourceKind::Postgres, &secret, &json!({ "query": "SELECT 1" }))
        .await
}

/// A "database" answering the start-up with a message that declares 4 GiB is cut off before
/// sqlx reads its header: sqlx reserves a message's declared length before its bytes arrive
/// (and zero-fills it under TLS), which took this process 256 MiB of zeros here, or 4 GiB.
#[test]
fn a_declared_length_past_the_limit_is_refused_before_it_is_read() {
    run_alone(
        "stand_ins::a_declared_length_past_the_limit_is_refused_before_it_is_read",
        &[],
        || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                let (port, _) = stand_in(Answer::LyingLength).await;
                let before = peak_memory();
                for sslmode in ["disable", "require"] {
                    let started = Instant::now();
                    let err = fetch_from(port, sslmode, limits()).await.unwrap_err();
                    assert_eq!(err.status(), 413, "{sslmode}: {}", err.detail);
                    assert!(err.detail.contains("65536 bytes"), "{}", err.detail);
                    assert!(started.elapsed() < Duration::from_secs(5), "{sslmode}: cut at once");
                }
                let grown = peak_memory().saturating_sub(before);
                assert!(grown < 64 * 1024 * 1024, "the fetches took {grown} bytes");
            });
        },
    );
}

/// A "database" that talks on without end (notices, each a small message) is cut off once it
/// has sent more than any answer within the limit could need.
#[tokio::test]
async fn a_conversation_past_the_budget_is_cut_off() {
    let (port, _) = stand_in(Answer::EndlessNotices).await;
    for sslmode in ["disable", "require"] {
        let started = Instant::now();
        let err = fetch_from(port, sslmode, limits()).await.unwrap_err();
        assert_eq!(err.status(), 413, "{sslmode}: {}", err.detail);
        assert!(started.elapsed() < Duration::from_secs(5), "{sslmode}: cut at once");
    }
}

/// The stand-in's plain answers still read as the database's: a refused password is
/// "authentication failed", through the relay's framing, with and without TLS.
#[tokio::test]
async fn an_ordinary_answer_passes_the_relay() {
    let (port, mut startups) = stand_in(Answer::AuthenticationFailed).await;
    for sslmode in ["disable", "require"] {
        let err = fetch_from(port, sslmode, limits()).await.unwrap_err();
        assert_eq!(err.detail, "authentication failed", "{sslmode}");
        let startup = startups.recv().await.unwrap();
        assert!(
            startup.contains(&("user".into(), "ada".into())) && startup.contains(&("database".into(), "sales".into())),
            "{startup:?}"
        );
    }
}

/// This server's own PG* settings never reach a source: sqlx reads PGOPTIONS (sent in the
/// start-up message as `options`), PGSSLCERT, PGSSLKEY and PGSSLROOTCERT from the environment,
/// so the test runs in a process of its own that has them.
#[test]
fn the_servers_own_pg_settings_never_reach_a_source() {
    let environment = [
        ("PGOPTIONS", "-c search_path=from_the_environment"),
        ("PGAPPNAME", "from-the-environment"),
        ("PGUSER", "someone_else"),
        ("PGDATABASE", "elsewhere"),
        ("PGPASSWORD", "not-the-credentials"),
        ("PGSSLMODE", "verify-full"),
        ("PGSSLROOTCERT", "/nonexistent/root.crt"),
        ("PGSSLCERT", "/nonexistent/client.crt"),
        ("PGSSLKEY", "/nonexistent/client.key"),
    ];
    run_alone(
        "stand_ins::the_servers_own_pg_settings_never_reach_a_source",
        &environment,
        || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                assert_eq!(std::env::var("PGOPTIONS").ok().as_deref(), Some(environment[0].1));
                let (port, mut startups) = stand_in(Answer::AuthenticationFailed).await;
                for sslmode in ["disable", "require"] {
                    let err = fetch_from(port, sslmode, limits()).await.unwrap_err();
                    assert_eq!(err.detail, "authentication failed", "{sslmode}");
                    let startup = startups.recv().await.unwrap();
                    let names: Vec<&str> = startup.iter().map(|(name, _)| name.as_str()).collect();
                    assert_eq!(
                        names,
                        [
                            "user",
                            "database",
                            "DateStyle",
                            "client_encoding",
                            "TimeZone",
                            "extra_float_digits",
                            "application_name"
                        ],
                        "{sslmode}"
                    );
                    let value = |name: &str| startup.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
                    assert_eq!(
                        (value("user"), value("database"), value("application_name")),
                        (Some("ada"), Some("sales"), Some("lector"))
                    );
                }
            });
        },
    );
}
