//! PostgreSQL sources against the test database and against stand-ins.

use crate::{WS, closed_port, limits, localhost_tls, loopback_allowed, run_alone, sealed, sealed_postgres, sources};
use lector_core::SourceKind;
use lector_sources::{Limits, NetPolicy, Sources};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
    let config = localhost_tls();
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

/// A row within the limit passes even where its protocol form is twice its CSV (every
/// backslash escaped); a row past it is cut off before sqlx reads it, where before it was read
/// whole, decoded and written out (three copies of it) before the limit was checked.
#[test]
fn postgres_rows_past_the_limit_are_refused_unread() {
    run_alone("postgres::postgres_rows_past_the_limit_are_refused_unread", &[], || {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        runtime.block_on(async {
            let Some((_db, secret)) = database().await else { return };
            let s = sources(
                loopback_allowed(),
                Limits {
                    max_bytes: 1024 * 1024,
                    ..limits()
                },
            );
            let secret = sealed(&s, SourceKind::Postgres, secret);
            let csv = query(&s, &secret, r"SELECT repeat('\', 1000000) AS v").await.unwrap();
            assert_eq!(csv.len(), "v\r\n".len() + 1_000_000 + "\r\n".len());
            let before = crate::peak_memory();
            let err = query(&s, &secret, "SELECT repeat('x', 64 * 1024 * 1024) AS v")
                .await
                .unwrap_err();
            assert_eq!(err.status(), 413, "{}", err.detail);
            assert!(err.detail.contains("1048576 bytes"), "{}", err.detail);
            let grown = crate::peak_memory().saturating_sub(before);
            assert!(grown < 32 * 1024 * 1024, "the refused row took {grown} bytes");
        });
    });
}
