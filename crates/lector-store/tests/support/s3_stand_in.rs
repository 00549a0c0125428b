//! A local stand-in for an S3 bucket, shared by the blob store's tests and the API's: an
//! HTTP/1.1 server on 127.0.0.1 that keeps objects in memory and answers only requests whose
//! SigV4 signature it can recompute with the expected key (and whose payload hash matches the
//! body). Included with `#[path]`, since test support of one crate's tests is no library API.

#![allow(dead_code)]

use lector_core::sigv4::{Signer, sha256_hex};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

pub const ACCESS_KEY: &str = "AKIDBLOBS";
pub const SECRET_KEY: &str = "blob-secret-key";
pub const REGION: &str = "eu-west-3";

/// Objects by path (`/bucket/key`), and how many requests came in.
#[derive(Default)]
pub struct Bucket {
    pub objects: HashMap<String, Vec<u8>>,
    pub requests: usize,
    /// The signed `x-amz-security-token` values seen.
    pub tokens: Vec<String>,
    /// Requests still to be answered 503 SlowDown, as a busy bucket does.
    pub slow_down: usize,
}

pub type Shared = Arc<Mutex<Bucket>>;

pub async fn stand_in() -> (u16, Shared) {
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
    if bucket.slow_down > 0 {
        bucket.slow_down -= 1;
        return ("503 Slow Down", b"<Error><Code>SlowDown</Code></Error>".to_vec());
    }
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    if !signed_correctly(method, path, query, headers, &body) {
        return ("403 Forbidden", b"<Error>SignatureDoesNotMatch</Error>".to_vec());
    }
    if let Some((_, token)) = headers.iter().find(|(n, _)| n == "x-amz-security-token") {
        bucket.tokens.push(token.clone());
    }
    if method == "GET" && query.contains("list-type=2") {
        return ("200 OK", list(&bucket, path, query).into_bytes());
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

/// Keys listed per page: few, so that a listing of a handful of objects takes several pages.
pub const KEYS_PER_PAGE: usize = 2;

/// A ListObjectsV2 answer for the bucket at `bucket_path` (`/bucket/`): the objects whose keys
/// start with `prefix`, in key order, after `continuation-token` (the last key of the page
/// before), [`KEYS_PER_PAGE`] at a time.
fn list(bucket: &Bucket, bucket_path: &str, query: &str) -> String {
    let param = |name: &str| {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(n, _)| *n == name)
            .map(|(_, v)| percent_decode(v))
    };
    let prefix = param("prefix").unwrap_or_default();
    let after = param("continuation-token").unwrap_or_default();
    let mut keys: Vec<String> = bucket
        .objects
        .keys()
        .filter_map(|path| path.strip_prefix(bucket_path))
        .map(percent_decode)
        .filter(|key| key.starts_with(&prefix) && *key > after)
        .collect();
    keys.sort();
    let truncated = keys.len() > KEYS_PER_PAGE;
    keys.truncate(KEYS_PER_PAGE);
    let mut xml = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
    );
    xml.push_str(&format!("<IsTruncated>{truncated}</IsTruncated>"));
    for key in &keys {
        let escaped = key.replace('&', "&amp;").replace('<', "&lt;");
        xml.push_str(&format!(
            "<Contents><Key>{escaped}</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified><Size>1</Size></Contents>"
        ));
    }
    if truncated {
        let last = keys.last().unwrap().replace('&', "&amp;").replace('<', "&lt;");
        xml.push_str(&format!("<NextContinuationToken>{last}</NextContinuationToken>"));
    }
    xml.push_str("</ListBucketResult>");
    xml
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        if bytes[i] == b'%'
            && let Some(byte) = hex.and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Recomputes the request's signature from its signed headers with the expected secret key.
fn signed_correctly(method: &str, path: &str, query: &str, headers: &[(String, String)], body: &[u8]) -> bool {
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
        && authorization == signer.authorization(method, path, query, &signed, payload_hash, date)
}

/// The `AWS_*` variables that point the blob store at the stand-in on `port`, signing with
/// `secret`.
pub fn env(port: u16, secret: &str) -> impl Fn(&str) -> Option<String> + use<> {
    let endpoint = format!("http://127.0.0.1:{port}");
    let secret = secret.to_owned();
    move |name| match name {
        "AWS_ACCESS_KEY_ID" => Some(ACCESS_KEY.into()),
        "AWS_SECRET_ACCESS_KEY" => Some(secret.clone()),
        "AWS_REGION" => Some(REGION.into()),
        "AWS_ENDPOINT_URL" => Some(endpoint.clone()),
        _ => None,
    }
}
