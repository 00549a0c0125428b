//! The S3 backend of the blob store against a local stand-in: an HTTP/1.1 server on 127.0.0.1
//! that keeps objects in memory and answers only requests whose SigV4 signature it can
//! recompute with the expected key (and whose payload hash matches the body).

use bytes::Bytes;
use lector_core::sigv4::{Signer, sha256_hex};
use lector_core::{ErrorCode, Result};
use lector_store::Blobs;
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const ACCESS_KEY: &str = "AKIDBLOBS";
const SECRET_KEY: &str = "blob-secret-key";
const REGION: &str = "eu-west-3";

/// Objects by path (`/bucket/key`), and how many requests came in.
#[derive(Default)]
struct Bucket {
    objects: HashMap<String, Vec<u8>>,
    requests: usize,
}

type Shared = Arc<Mutex<Bucket>>;

async fn stand_in() -> (u16, Shared) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let bucket = Shared::default();
    let shared = bucket.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve_one(stream, shared.clone()));
        }
    });
    (port, bucket)
}

async fn serve_one(mut stream: TcpStream, bucket: Shared) {
    let mut data = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_string();
    let mut lines = head.lines();
    let mut request_line = lines.next().unwrap_or_default().split_whitespace();
    let (method, path) = (
        request_line.next().unwrap_or_default().to_owned(),
        request_line.next().unwrap_or_default().to_owned(),
    );
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let length: Option<usize> = header("content-length").and_then(|v| v.parse().ok());
    let mut body = data[head_end..].to_vec();
    while body.len() < length.unwrap_or(0) {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => body.extend_from_slice(&buf[..n]),
        }
    }
    let (status, answer) = respond(&method, &path, &headers, length, body, &bucket);
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        answer.len()
    );
    let _ = stream.write_all(reply.as_bytes()).await;
    let _ = stream.write_all(&answer).await;
    let _ = stream.shutdown().await;
}

fn respond(
    method: &str,
    path: &str,
    headers: &[(String, String)],
    length: Option<usize>,
    body: Vec<u8>,
    bucket: &Shared,
) -> (&'static str, Vec<u8>) {
    let mut bucket = bucket.lock().unwrap();
    bucket.requests += 1;
    if !signed_correctly(method, path, headers, &body) {
        return ("403 Forbidden", b"<Error>SignatureDoesNotMatch</Error>".to_vec());
    }
    match method {
        "PUT" if length.is_none() => ("411 Length Required", Vec::new()),
        "PUT" => {
            bucket.objects.insert(path.to_owned(), body);
            ("200 OK", Vec::new())
        }
        "GET" => match bucket.objects.get(path) {
            Some(bytes) => ("200 OK", bytes.clone()),
            None => ("404 Not Found", b"<Error>NoSuchKey</Error>".to_vec()),
        },
        "DELETE" => {
            bucket.objects.remove(path);
            ("204 No Content", Vec::new())
        }
        _ => ("405 Method Not Allowed", Vec::new()),
    }
}

/// Recomputes the request's signature from its signed headers with the expected secret key.
fn signed_correctly(method: &str, path: &str, headers: &[(String, String)], body: &[u8]) -> bool {
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
    let (Some(authorization), Some(date), Some(payload_hash)) = (
        header("authorization"),
        header("x-amz-date"),
        header("x-amz-content-sha256"),
    ) else {
        return false;
    };
    if payload_hash != sha256_hex(body) || !authorization.starts_with("AWS4-HMAC-SHA256 Credential=") {
        return false;
    }
    let Some(signed_names) = authorization
        .split(", ")
        .find_map(|part| part.strip_prefix("SignedHeaders="))
    else {
        return false;
    };
    let mut signed = Vec::new();
    for name in signed_names.split(';') {
        let Some(value) = header(name) else { return false };
        signed.push((name.to_owned(), value.to_owned()));
    }
    let signer = Signer {
        access_key_id: ACCESS_KEY,
        secret_access_key: SECRET_KEY,
        region: REGION,
    };
    signed_names.starts_with("host;")
        && authorization == signer.authorization(method, path, "", &signed, payload_hash, date)
}

fn blobs(port: u16, secret: &str) -> Blobs {
    let endpoint = format!("http://127.0.0.1:{port}");
    let secret = secret.to_owned();
    Blobs::open_with_env("s3://lector-blobs/tenant/files", &move |name| match name {
        "AWS_ACCESS_KEY_ID" => Some(ACCESS_KEY.into()),
        "AWS_SECRET_ACCESS_KEY" => Some(secret.clone()),
        "AWS_REGION" => Some(REGION.into()),
        "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
        _ => None,
    })
    .unwrap()
}

fn chunks(total: usize, size: usize) -> impl futures_util::Stream<Item = Result<Bytes>> + Unpin + Send {
    let parts: Vec<Result<Bytes>> = (0..total.div_ceil(size))
        .map(|i| {
            let len = size.min(total - i * size);
            Ok(Bytes::from(
                (0..len).map(|j| ((i * size + j) % 251) as u8).collect::<Vec<_>>(),
            ))
        })
        .collect();
    futures_util::stream::iter(parts)
}

fn read_all(mut file: std::fs::File) -> Vec<u8> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    bytes
}

#[tokio::test]
async fn blobs_round_trip_through_signed_requests() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);

    // A streamed blob of several chunks arrives whole, under the prefix, in one PUT.
    let total = 3 * 1024 * 1024 + 17;
    let written = blobs
        .put_stream("uploads/7/a b.csv", chunks(total, 64 * 1024), 10 << 20)
        .await
        .unwrap();
    assert_eq!(written, total as u64);
    let expected: Vec<u8> = (0..total).map(|j| (j % 251) as u8).collect();
    {
        let bucket = bucket.lock().unwrap();
        assert_eq!(bucket.requests, 1);
        assert_eq!(
            bucket.objects.keys().collect::<Vec<_>>(),
            ["/lector-blobs/tenant/files/uploads/7/a%20b.csv"]
        );
    }
    assert_eq!(read_all(blobs.open_file("uploads/7/a b.csv").await.unwrap()), expected);

    blobs.put_bytes("models/m1", b"weights".to_vec()).await.unwrap();
    assert_eq!(read_all(blobs.open_file("models/m1").await.unwrap()), b"weights");

    blobs.delete("uploads/7/a b.csv").await.unwrap();
    let gone = blobs.open_file("uploads/7/a b.csv").await.unwrap_err();
    assert_eq!(gone.code, ErrorCode::NotFound);
    // Deleting again is no error.
    blobs.delete("uploads/7/a b.csv").await.unwrap();
    assert_eq!(bucket.lock().unwrap().objects.len(), 1);
}

#[tokio::test]
async fn a_blob_over_the_limit_is_refused_and_nothing_is_sent() {
    let (port, bucket) = stand_in().await;
    let blobs = blobs(port, SECRET_KEY);
    let err = blobs
        .put_stream("uploads/big", chunks(100_001, 10_000), 100_000)
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::PayloadTooLarge);
    {
        let bucket = bucket.lock().unwrap();
        assert_eq!(bucket.requests, 0);
        assert!(bucket.objects.is_empty());
    }
    // Exactly at the limit is fine.
    assert_eq!(
        blobs
            .put_stream("uploads/big", chunks(100_000, 10_000), 100_000)
            .await
            .unwrap(),
        100_000
    );
}

#[tokio::test]
async fn missing_blobs_and_refused_signatures() {
    let (port, bucket) = stand_in().await;
    let err = blobs(port, SECRET_KEY).open_file("nope").await.unwrap_err();
    assert_eq!(err.code, ErrorCode::NotFound);

    // A wrong secret key is refused by the store: the write fails (503), nothing is kept.
    let wrong = blobs(port, "not-the-secret");
    let err = wrong.put_bytes("x", b"1".to_vec()).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable);
    let err = wrong.put_stream("x", chunks(10, 3), 100).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::Unavailable);
    assert!(bucket.lock().unwrap().objects.is_empty());
}

#[test]
fn s3_configuration_is_checked() {
    let no_keys = Blobs::open_with_env("s3://bucket/p", &|_| None).unwrap_err();
    assert!(no_keys.detail.contains("AWS_ACCESS_KEY_ID"), "{}", no_keys.detail);
    let env = |name: &str| {
        name.starts_with("AWS_")
            .then(|| "x".to_owned())
            .filter(|_| name != "AWS_ENDPOINT_URL")
    };
    assert!(Blobs::open_with_env("s3:///p", &env).is_err());
    let blobs = Blobs::open_with_env("s3://bucket/p", &env).unwrap();
    assert_eq!(blobs.location(), "s3://bucket/p");
}
