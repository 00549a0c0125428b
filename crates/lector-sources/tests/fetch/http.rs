//! HTTP(S) and S3 sources against a small server on loopback.

use crate::{WS, closed_port, limits, localhost_tls, loopback_allowed, read_head, sealed, sources};
use lector_core::SourceKind;
use lector_sources::{CredentialSecret, Fault, Limits, NetPolicy, Sources};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

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
                let Some(head) = read_head(&mut stream).await else {
                    return;
                };
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let authorized = head
                    .lines()
                    .any(|l| l.eq_ignore_ascii_case("authorization: Bearer t0k3n"));
                let answer = if path.starts_with("/data-bucket/") {
                    respond_s3(&path, &head)
                } else if path == "/note" {
                    // Answers the X-Note header as it arrived.
                    let note = head
                        .lines()
                        .filter_map(|l| l.split_once(':'))
                        .find_map(|(name, value)| name.eq_ignore_ascii_case("x-note").then(|| value.trim()))
                        .unwrap_or_default();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        note.len()
                    );
                    [head.as_bytes(), note.as_bytes()].concat()
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
        let called = s
            .call("POST", &url, &[], &[], Some(b"{}".to_vec()), u64::MAX)
            .await
            .unwrap_err();
        assert_eq!(called.fault, Fault::Upstream, "{path}");
        assert_eq!(called.error.status(), 413, "{path}: {}", called.error.detail);
    }
}

/// A call reads no more than its caller allows, below the sources' own limit.
#[tokio::test]
async fn a_call_keeps_to_the_callers_limit() {
    let port = serve().await;
    let s = sources(loopback_allowed(), limits());
    let url = format!("http://127.0.0.1:{port}/export");
    let answered = s.call("GET", &url, &[], &[], None, 9).await.unwrap();
    assert_eq!(answered.body, b"[{\"a\":1}]");
    let refused = s.call("GET", &url, &[], &[], None, 8).await.unwrap_err();
    assert_eq!(refused.error.status(), 413, "{}", refused.error.detail);
}

/// A failed call says whose fault it is, which decides how a workflow's caller is answered:
/// what it was given cannot be sent, the guard refuses the address it names, or the far side
/// failed (a redirect to an address the guard refuses among them).
#[tokio::test]
async fn a_failed_call_says_whose_fault_it_is() {
    let port = serve().await;
    let closed = closed_port().await;
    let s = sources(loopback_allowed(), limits());
    let fault = |url: String, headers: Vec<(String, String)>, sources: Sources| async move {
        let failed = sources
            .call("GET", &url, &headers, &[], None, u64::MAX)
            .await
            .unwrap_err();
        (failed.fault, failed.error.detail)
    };
    let base = format!("http://127.0.0.1:{port}");
    let refused = fault(
        format!("{base}/export"),
        vec![],
        sources(NetPolicy::public_only(), limits()),
    )
    .await;
    assert_eq!(refused.0, Fault::Refused, "{}", refused.1);
    for url in [
        "not a url".to_owned(),
        "ftp://example.org/x".to_owned(),
        format!("http://user:pw@127.0.0.1:{port}/"),
    ] {
        assert_eq!(
            fault(url.clone(), vec![], s.clone()).await.0,
            Fault::Unsendable,
            "{url}"
        );
    }
    let header = vec![("X-Note".to_owned(), "a\nb".to_owned())];
    assert_eq!(
        fault(format!("{base}/export"), header, s.clone()).await.0,
        Fault::Unsendable
    );
    // A value beyond ASCII is not: it goes out as its UTF-8 bytes.
    let city = vec![("X-Note".to_owned(), "Zürich".to_owned())];
    let sent = s.call("GET", &format!("{base}/note"), &city, &[], None, u64::MAX).await;
    assert_eq!(sent.expect("a UTF-8 value is sent").body, "Zürich".as_bytes());
    for url in [
        format!("{base}/to-other-loopback"),
        format!("{base}/to-file"),
        format!("{base}/fails"),
        format!("http://127.0.0.1:{closed}/x"),
    ] {
        let (found, detail) = fault(url.clone(), vec![], s.clone()).await;
        assert_eq!(found, Fault::Upstream, "{url}: {detail}");
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
    let acceptor = tokio_rustls::TlsAcceptor::from(localhost_tls());
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
