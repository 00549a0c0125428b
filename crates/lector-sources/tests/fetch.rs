//! Fetches through the guard against local servers: an HTTP server on loopback (reachable only
//! because the test's configuration allows 127.0.0.1 and ::1) and the test PostgreSQL.

use lector_core::SourceKind;
use lector_core::config::SourcesConfig;
use lector_sources::{CredentialSecret, Limits, NetPolicy, SealKey, Sources};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// A small HTTP/1.1 server on 127.0.0.1 that answers by path.
async fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let authorized = head
                    .lines()
                    .any(|l| l.eq_ignore_ascii_case("authorization: Bearer t0k3n"));
                let answer = if path.starts_with("/data-bucket/") {
                    respond_s3(&path, &head)
                } else {
                    respond(&path, port, authorized)
                };
                let _ = stream.write_all(&answer).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    port
}

fn respond(path: &str, port: u16, authorized: bool) -> Vec<u8> {
    let plain = |status: &str, headers: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match path {
        "/data.csv" => plain("200 OK", "Content-Type: text/csv\r\n", "a,b\n1,2\n"),
        "/export" => plain("200 OK", "Content-Type: application/json\r\n", "[{\"a\":1}]"),
        "/redirect" => plain("302 Found", "Location: /data.csv\r\n", ""),
        "/to-other-loopback" => plain(
            "302 Found",
            &format!("Location: http://127.0.0.2:{port}/data.csv\r\n"),
            "",
        ),
        "/to-mapped" => plain(
            "301 Moved Permanently",
            &format!("Location: http://[::ffff:127.0.0.3]:{port}/data.csv\r\n"),
            "",
        ),
        "/to-file" => plain("302 Found", "Location: file:///etc/passwd\r\n", ""),
        "/loop" => plain("302 Found", "Location: /loop\r\n", ""),
        "/private" if authorized => plain("200 OK", "", "granted"),
        "/private" => plain("401 Unauthorized", "", "SECRET-REMOTE-BODY"),
        "/elsewhere" => plain(
            "302 Found",
            &format!("Location: http://localhost:{port}/private\r\n"),
            "",
        ),
        "/fails" => plain("500 Internal Server Error", "", "SECRET-REMOTE-BODY stack trace"),
        "/declared-big" => b"HTTP/1.1 200 OK\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\nabc".to_vec(),
        "/streamed-big" => {
            // Chunked, no length announced: the limit must stop the read.
            let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
            let chunk = "x".repeat(16 * 1024);
            for _ in 0..8 {
                out.extend_from_slice(format!("{:x}\r\n{chunk}\r\n", chunk.len()).as_bytes());
            }
            out.extend_from_slice(b"0\r\n\r\n");
            out
        }
        _ => plain("404 Not Found", "", "SECRET-REMOTE-BODY"),
    }
}

/// A stand-in for an S3-compatible store: path-style addresses, SigV4 headers required.
fn respond_s3(path: &str, head: &str) -> Vec<u8> {
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                l.split_once(':')
                    .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_default()
    };
    let date = header("x-amz-date");
    let signed = date.len() == 16
        && header("x-amz-content-sha256") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        && header("authorization").starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential=AKIDTEST/{}/eu-central-1/s3/aws4_request, \
             SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=",
            &date[..8]
        ));
    let answer = |status: &str, extra: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match path {
        _ if !signed => answer("403 Forbidden", "", "<Error>SECRET-REMOTE-BODY</Error>"),
        "/data-bucket/in/a%20b.csv" => answer("200 OK", "", "x,y\n1,2\n"),
        "/data-bucket/moved.csv" => answer("301 Moved Permanently", "Location: http://127.0.0.1:1/\r\n", ""),
        _ => answer("404 Not Found", "", "<Error>SECRET-REMOTE-BODY</Error>"),
    }
}

async fn get(sources: &Sources, secret: &str, url: &str) -> lector_core::Result<lector_sources::Fetched> {
    sources
        .fetch(WS, SourceKind::Http, secret, &json!({ "url": url }))
        .await
}

#[tokio::test]
async fn http_fetches_follow_checked_redirects() {
    let port = serve().await;
    let s = sources(loopback_allowed(), limits());
    let secret = sealed(&s, SourceKind::Http, json!({}));
    let base = format!("http://127.0.0.1:{port}");

    let file = get(&s, &secret, &format!("{base}/data.csv")).await.unwrap();
    assert_eq!(
        (file.bytes.as_slice(), file.file_name.as_str()),
        (&b"a,b\n1,2\n"[..], "data.csv")
    );
    let file = get(&s, &secret, &format!("{base}/export")).await.unwrap();
    assert_eq!(file.file_name, "export.json");
    let file = get(&s, &secret, &format!("{base}/redirect")).await.unwrap();
    assert_eq!(file.file_name, "data.csv", "the name comes from where the redirect led");

    for path in ["/to-other-loopback", "/to-mapped"] {
        let err = get(&s, &secret, &format!("{base}{path}")).await.unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(
            err.detail.contains("private or reserved address"),
            "{path}: {}",
            err.detail
        );
    }
    let err = get(&s, &secret, &format!("{base}/to-file")).await.unwrap_err();
    assert!(err.detail.contains("http:// or https://"), "{}", err.detail);
    let err = get(&s, &secret, &format!("{base}/loop")).await.unwrap_err();
    assert!(err.detail.contains("more than 5 times"), "{}", err.detail);
}

#[tokio::test]
async fn private_addresses_are_refused_by_default() {
    let port = serve().await;
    let s = sources(NetPolicy::public_only(), limits());
    let secret = sealed(&s, SourceKind::Http, json!({}));
    for url in [
        format!("http://127.0.0.1:{port}/data.csv"),
        format!("http://localhost:{port}/data.csv"),
        format!("http://[::1]:{port}/data.csv"),
        format!("http://[::ffff:127.0.0.1]:{port}/data.csv"),
        format!("http://2130706433:{port}/data.csv"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/".to_owned(),
    ] {
        let err = get(&s, &secret, &url).await.unwrap_err();
        assert_eq!(err.status(), 400, "{url}");
        assert!(
            err.detail.contains("private or reserved address"),
            "{url}: {}",
            err.detail
        );
    }
    for url in [
        "ftp://example.org/a.csv",
        "file:///etc/passwd",
        "http://user:pw@example.org/",
        "not a url",
    ] {
        assert_eq!(get(&s, &secret, url).await.unwrap_err().status(), 400, "{url}");
    }
}

#[tokio::test]
async fn remote_bodies_never_reach_errors_and_headers_stay_with_their_origin() {
    let port = serve().await;
    let s = sources(loopback_allowed(), limits());
    let base = format!("http://127.0.0.1:{port}");
    let anonymous = sealed(&s, SourceKind::Http, json!({}));
    let with_token = sealed(
        &s,
        SourceKind::Http,
        json!({"headers": {"Authorization": "Bearer t0k3n"}, "base_url": base}),
    );

    let err = get(&s, &anonymous, &format!("{base}/private")).await.unwrap_err();
    assert_eq!(err.detail, "authentication failed or access was denied (HTTP 401)");
    let file = get(&s, &with_token, &format!("{base}/private")).await.unwrap();
    assert_eq!(file.bytes, b"granted");
    let err = get(&s, &with_token, &format!("{base}/elsewhere")).await.unwrap_err();
    assert!(
        err.detail.contains("HTTP 401"),
        "a redirect to another origin drops the credential's headers"
    );
    let err = get(&s, &with_token, &format!("http://localhost:{port}/private"))
        .await
        .unwrap_err();
    assert_eq!(
        (err.status(), err.errors[0].field.as_str()),
        (422, "parameters.url"),
        "a credential asked for another origin than its own sends nothing: {}",
        err.detail
    );
    for path in ["/fails", "/missing"] {
        let err = get(&s, &anonymous, &format!("{base}{path}")).await.unwrap_err();
        assert!(!format!("{err:?}").contains("SECRET"), "{err:?}");
    }
    let closed = closed_port().await;
    let err = get(&s, &anonymous, &format!("http://127.0.0.1:{closed}/x"))
        .await
        .unwrap_err();
    assert_eq!(err.detail, "connection refused");
}

#[tokio::test]
async fn size_limits_stop_the_read() {
    let port = serve().await;
    let s = sources(
        loopback_allowed(),
        Limits {
            max_bytes: 100 * 1024,
            ..limits()
        },
    );
    let secret = sealed(&s, SourceKind::Http, json!({}));
    for path in ["/declared-big", "/streamed-big"] {
        let err = get(&s, &secret, &format!("http://127.0.0.1:{port}{path}"))
            .await
            .unwrap_err();
        assert_eq!(err.status(), 413, "{path}: {}", err.detail);
    }
}

/// A webhook needs the receiver's status only: its answer's body, however large, is not read
/// (a call, which answers the body, keeps to the limit).
#[tokio::test]
async fn a_webhook_reads_the_status_not_the_body() {
    let port = serve().await;
    let s = sources(loopback_allowed(), limits());
    for path in ["/declared-big", "/streamed-big"] {
        let url = format!("http://127.0.0.1:{port}{path}");
        let status = s.post_webhook(&url, b"{}".to_vec(), &[]).await;
        assert_eq!(status.map_err(|e| e.detail), Ok(200), "{path}");
        let called = s.call("POST", &url, &[], Some(b"{}".to_vec())).await.unwrap_err();
        assert_eq!(called.status(), 413, "{path}: {}", called.detail);
    }
}

#[tokio::test]
async fn secrets_open_only_in_their_workspace_and_kind() {
    let s = sources(loopback_allowed(), limits());
    let secret = sealed(&s, SourceKind::Http, json!({}));
    let params = json!({"url": "http://127.0.0.1:9/x"});
    assert!(
        s.fetch(WS + 1, SourceKind::Http, &secret, &params)
            .await
            .unwrap_err()
            .detail
            .contains("cannot be opened")
    );
    assert!(
        s.fetch(WS, SourceKind::S3, &secret, &params)
            .await
            .unwrap_err()
            .detail
            .contains("cannot be opened")
    );
    let err = s
        .fetch(WS, SourceKind::Http, &secret, &json!({"query": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 422);
}

#[tokio::test]
async fn s3_objects_are_fetched_with_signed_requests() {
    let port = serve().await;
    let s = sources(loopback_allowed(), limits());
    let secret = |key: &str| {
        sealed(
            &s,
            SourceKind::S3,
            json!({"access_key_id": "AKIDTEST", "secret_access_key": key, "region": "eu-central-1",
                "endpoint": format!("http://127.0.0.1:{port}")}),
        )
    };
    let good = secret("s3-secret");
    let object = |key: &str| json!({"bucket": "data-bucket", "key": key});
    let file = s.fetch(WS, SourceKind::S3, &good, &object("in/a b.csv")).await.unwrap();
    assert_eq!(
        (file.bytes.as_slice(), file.file_name.as_str()),
        (&b"x,y\n1,2\n"[..], "a b.csv")
    );
    let err = s
        .fetch(WS, SourceKind::S3, &good, &object("missing.csv"))
        .await
        .unwrap_err();
    assert_eq!(err.detail, "the source does not exist (HTTP 404)");
    let err = s
        .fetch(WS, SourceKind::S3, &good, &object("moved.csv"))
        .await
        .unwrap_err();
    assert!(err.detail.contains("does not follow"), "{}", err.detail);
    assert!(!format!("{err:?}").contains("SECRET"));
    let err = s
        .fetch(WS, SourceKind::S3, &good, &json!({"bucket": "Bad_Bucket", "key": "x"}))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 422);

    let guarded = sources(NetPolicy::public_only(), limits());
    let sealed_private = guarded.seal(
        WS,
        &CredentialSecret::parse(
            SourceKind::S3,
            &json!({"access_key_id": "AKIDTEST", "secret_access_key": "k", "region": "eu-central-1",
                "endpoint": format!("http://127.0.0.1:{port}")}),
        )
        .unwrap(),
    );
    let err = guarded
        .fetch(WS, SourceKind::S3, &sealed_private, &object("in/a b.csv"))
        .await
        .unwrap_err();
    assert!(err.detail.contains("private or reserved address"), "{}", err.detail);
}

/// A TLS server on 127.0.0.1 with a self-signed certificate, answering one fixed file.
async fn serve_tls() -> u16 {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
    let certs = vec![CertificateDer::from(generated.cert.der().to_vec())];
    let config =
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(stream).await {
                    let mut buf = [0u8; 4096];
                    let _ = tls.read(&mut buf).await;
                    let _ = tls.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    port
}

#[tokio::test]
async fn https_checks_certificates() {
    let port = serve_tls().await;
    let s = sources(loopback_allowed(), limits());
    let secret = sealed(&s, SourceKind::Http, json!({}));
    let err = get(&s, &secret, &format!("https://localhost:{port}/data.csv"))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.detail.contains("TLS handshake"), "{}", err.detail);
}

/// A fresh PostgreSQL database with a small table, and a source allowed to reach it.
async fn database() -> Option<(lector_store::testing::TestDatabase, Value)> {
    let db = lector_store::testing::TestDatabase::create(lector_store::Backend::Postgres).await?;
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    sqlx::raw_sql(
        "CREATE TABLE items (id INT, name TEXT, price NUMERIC, seen TIMESTAMP); \
         INSERT INTO items VALUES (1, 'plain', 1.5, '2024-05-01 10:00:00'), (2, 'with, comma', NULL, NULL), \
         (3, 'say \"hi\"', 3, NULL); CREATE SEQUENCE counter;",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let secret = json!({ "url": db.url });
    Some((db, secret))
}

async fn query(s: &Sources, secret: &str, sql: &str) -> lector_core::Result<String> {
    let fetched = s
        .fetch(WS, SourceKind::Postgres, secret, &json!({ "query": sql }))
        .await?;
    assert_eq!(fetched.file_name, "query.csv");
    Ok(String::from_utf8(fetched.bytes).unwrap())
}

#[tokio::test]
async fn postgres_rows_become_csv() {
    let Some((_db, secret)) = database().await else { return };
    let s = sources(loopback_allowed(), limits());
    let secret = sealed(&s, SourceKind::Postgres, secret);
    let csv = query(&s, &secret, "SELECT id, name, price, seen FROM items ORDER BY id;")
        .await
        .unwrap();
    assert_eq!(
        csv,
        "id,name,price,seen\r\n1,plain,1.5,2024-05-01T10:00:00\r\n2,\"with, comma\",,\r\n3,\"say \"\"hi\"\"\",3,\r\n"
    );
    let csv = query(
        &s,
        &secret,
        "-- count\nWITH n AS (SELECT count(*) AS c FROM items) SELECT c, c AS c FROM n",
    )
    .await
    .unwrap();
    assert_eq!(csv, "c,c\r\n3,3\r\n", "duplicate column names keep their places");
    let csv = query(&s, &secret, "SELECT id FROM items WHERE id > 10").await.unwrap();
    assert_eq!(csv, "id\r\n", "no rows still give the header");
}

#[tokio::test]
async fn postgres_sources_only_read() {
    let Some((db, secret)) = database().await else { return };
    let s = sources(loopback_allowed(), limits());
    let secret = sealed(&s, SourceKind::Postgres, secret);
    for sql in [
        "DELETE FROM items",
        "INSERT INTO items (id) VALUES (9)",
        "UPDATE items SET name = 'x'",
        "SELECT 1; DROP TABLE items",
        "SELECT 1) AS q; DROP TABLE items; SELECT * FROM (SELECT 1",
        "SELECT 1) AS q; COMMIT; DROP TABLE items; SELECT * FROM (SELECT 1",
        "WITH gone AS (DELETE FROM items RETURNING *) SELECT * FROM gone",
        "SELECT * FROM items FOR UPDATE",
        "SELECT nextval('no_such_sequence')",
        "SELECT * INTO copy_of_items FROM items",
        "SELECT set_config('transaction_read_only', 'off', true), nextval('counter')",
        "SELECT nextval('counter')",
    ] {
        let err = query(&s, &secret, sql).await.unwrap_err();
        assert_eq!(err.status(), 400, "{sql}: {}", err.detail);
    }
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM items")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(left, 3, "nothing was written");
    let copies: Option<String> = sqlx::query_scalar("SELECT to_regclass('copy_of_items')::text")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(copies, None);
    let counted: bool = sqlx::query_scalar("SELECT is_called FROM counter")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(!counted, "the sequence never moved");
}

#[tokio::test]
async fn postgres_limits_and_reasons() {
    let Some((db, secret)) = database().await else { return };
    let s = sources(
        loopback_allowed(),
        Limits {
            max_rows: 2,
            timeout: Duration::from_secs(2),
            ..limits()
        },
    );
    let sealed_ok = sealed(&s, SourceKind::Postgres, secret.clone());
    assert_eq!(
        query(&s, &sealed_ok, "SELECT * FROM items").await.unwrap_err().status(),
        413
    );
    assert!(query(&s, &sealed_ok, "SELECT * FROM items LIMIT 2").await.is_ok());
    let err = query(&s, &sealed_ok, "SELECT pg_sleep(30)").await.unwrap_err();
    assert!(err.detail.contains("2 seconds"), "{}", err.detail);
    let err = query(&s, &sealed_ok, "SELECT nope FROM items").await.unwrap_err();
    assert_eq!(err.detail, "the query names a column that does not exist");

    let url = db.url.clone();
    let with_user = |user: &str| url.replacen("postgres://postgres@", &format!("postgres://{user}@"), 1);
    let unknown_role = sealed_postgres(&s, &with_user("no_such_role_x"));
    assert_eq!(
        query(&s, &unknown_role, "SELECT 1").await.unwrap_err().detail,
        "authentication failed"
    );
    let missing_db = sealed_postgres(&s, &format!("{url}_missing"));
    assert_eq!(
        query(&s, &missing_db, "SELECT 1").await.unwrap_err().detail,
        "the database does not exist"
    );
    let closed = closed_port().await;
    let refused = sealed_postgres(&s, &format!("postgres://u@127.0.0.1:{closed}/x"));
    assert_eq!(
        query(&s, &refused, "SELECT 1").await.unwrap_err().detail,
        "connection refused"
    );

    let guarded = sources(NetPolicy::public_only(), limits());
    let sealed_private = sealed(&guarded, SourceKind::Postgres, secret);
    let err = query(&guarded, &sealed_private, "SELECT 1").await.unwrap_err();
    assert!(err.detail.contains("private or reserved address"), "{}", err.detail);
}

/// The database URL with `sslmode` set.
fn with_sslmode(url: &str, mode: &str) -> String {
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}sslmode={mode}")
}

#[tokio::test]
async fn postgres_sslmode_decides_whether_the_session_is_encrypted() {
    let Some((db, _)) = database().await else { return };
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&db.url)
        .await
        .unwrap();
    let server_tls: String = sqlx::query_scalar("SHOW ssl").fetch_one(&mut conn).await.unwrap();
    let s = sources(loopback_allowed(), limits());
    let encrypted = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()";
    let secret = sealed_postgres(&s, &with_sslmode(&db.url, "disable"));
    assert_eq!(query(&s, &secret, encrypted).await.unwrap(), "ssl\r\nfalse\r\n");
    let secret = sealed_postgres(&s, &with_sslmode(&db.url, "require"));
    if server_tls == "on" {
        assert_eq!(query(&s, &secret, encrypted).await.unwrap(), "ssl\r\ntrue\r\n");
        // Its certificate is its own (or names no 127.0.0.1): verify-full refuses it.
        let secret = sealed_postgres(&s, &with_sslmode(&db.url, "verify-full"));
        let err = query(&s, &secret, "SELECT 1").await.unwrap_err();
        assert!(err.detail.contains("certificate"), "{}", err.detail);
    } else {
        let err = query(&s, &secret, "SELECT 1").await.unwrap_err();
        assert!(
            err.detail.starts_with("the server does not offer TLS"),
            "{}",
            err.detail
        );
    }
}

#[tokio::test]
async fn postgres_tls_is_never_given_up_for_plain_text() {
    let (port, _) = serve_postgres(false).await;
    let s = sources(loopback_allowed(), limits());
    for mode in ["require", "verify-full"] {
        let secret = sealed_postgres(&s, &format!("postgres://u@127.0.0.1:{port}/x?sslmode={mode}"));
        let err = query(&s, &secret, "SELECT 1").await.unwrap_err();
        assert_eq!(err.status(), 400);
        assert!(
            err.detail.starts_with("the server does not offer TLS"),
            "{mode}: {}",
            err.detail
        );
    }
}

/// A stand-in PostgreSQL on 127.0.0.1 that answers the TLS request: with `tls`, yes, with a
/// self-signed certificate for `localhost`; else no, and hangs up. Answers the port and a
/// channel of the names clients asked for in their handshakes.
async fn serve_postgres(tls: bool) -> (u16, tokio::sync::mpsc::UnboundedReceiver<Option<String>>) {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der()));
    let certs = vec![CertificateDer::from(generated.cert.der().to_vec())];
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (names, received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (config, names) = (config.clone(), names.clone());
            tokio::spawn(async move {
                let mut request = [0u8; 8];
                if stream.read_exact(&mut request).await.is_err() || request != [0, 0, 0, 8, 4, 210, 22, 47] {
                    return;
                }
                if !tls {
                    let _ = stream.write_all(b"N").await;
                    return;
                }
                stream.write_all(b"S").await.unwrap();
                let acceptor = tokio_rustls::LazyConfigAcceptor::new(rustls::server::Acceptor::default(), stream);
                if let Ok(start) = acceptor.await {
                    let _ = names.send(start.client_hello().server_name().map(str::to_owned));
                    let _ = start.into_stream(config).await;
                }
            });
        }
    });
    (port, received)
}

#[tokio::test]
async fn postgres_tls_checks_the_certificate_against_the_host_name() {
    let (port, mut names) = serve_postgres(true).await;
    let s = sources(loopback_allowed(), limits());
    // verify-full: the connection goes to the checked 127.0.0.1, the handshake names localhost,
    // and a self-signed certificate is refused.
    let secret = sealed_postgres(&s, &format!("postgres://u@localhost:{port}/x?sslmode=verify-full"));
    let err = query(&s, &secret, "SELECT 1").await.unwrap_err();
    assert_eq!(err.status(), 400);
    assert!(err.detail.contains("certificate is not trusted"), "{}", err.detail);
    assert_eq!(names.recv().await.unwrap().as_deref(), Some("localhost"));
    // The guard still decides on the address: the same URL without loopback allowed never dials.
    let guarded = sources(NetPolicy::public_only(), limits());
    let secret = sealed_postgres(
        &guarded,
        &format!("postgres://u@localhost:{port}/x?sslmode=verify-full"),
    );
    let err = query(&guarded, &secret, "SELECT 1").await.unwrap_err();
    assert!(err.detail.contains("private or reserved address"), "{}", err.detail);
    assert!(names.try_recv().is_err(), "nothing reached the server");
}
