//! The S3 backend of the blob store: plain PUT, GET and DELETE requests signed with AWS
//! Signature Version 4 (`lector_core::sigv4`) over reqwest with rustls on ring, so the default
//! build stores blobs in S3 without aws-lc (DESIGN.md section 10).
//!
//! The endpoint is chosen by the operator (`blob_url`, `AWS_ENDPOINT_URL`), so requests do not
//! go through the guard against server-side request forgery that user-given sources pass.
//! A written blob is first streamed into a temporary file (bounded, hashed on the way), then
//! sent in one PUT with its length and payload hash, its body read from that file: memory stays
//! flat whatever the size. A read lands in a temporary file the same way.

use crate::blobs::{StoredBlob, failed, io_failed};
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::{Stream, StreamExt, TryStreamExt};
use lector_core::sigv4::{EMPTY_SHA256, Signer, amz_date, hex, host_header, sha256_hex, uri_encode};
use lector_core::time::Timestamp;
use lector_core::{Error, ErrorCode, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use sha2::{Digest, Sha256};
use std::io::SeekFrom;
use std::sync::Once;
use std::time::Duration;
use tokio::io::{AsyncSeekExt, AsyncWriteExt};
use url::Url;

/// How long connecting may take, and how long a request may wait for the next bytes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Tries of one request: S3 answers a busy moment with 503 (SlowDown) or 500 and asks to be
/// asked again; each try after the first waits longer (`RETRY_PAUSE`, then four times that).
const TRIES: u32 = 3;
const RETRY_PAUSE: Duration = Duration::from_millis(250);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// Where an S3 blob store is and how it is signed for, from `s3://bucket/prefix` and the
/// `AWS_*` variables.
#[derive(Clone)]
pub(crate) struct S3 {
    client: reqwest::Client,
    /// The bucket's address, ending in `/`: path-style on a configured endpoint.
    base: Url,
    /// Key prefix inside the bucket, empty or ending in `/`.
    prefix: String,
    access_key_id: String,
    secret_access_key: String,
    region: String,
    session_token: Option<String>,
}

impl std::fmt::Debug for S3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3")
            .field("base", &self.base.as_str())
            .field("prefix", &self.prefix)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl S3 {
    /// Reads `bucket/prefix` (after `s3://`) and the variables `env` answers: AWS_ACCESS_KEY_ID
    /// and AWS_SECRET_ACCESS_KEY (required), AWS_REGION (default us-east-1), AWS_ENDPOINT_URL
    /// and AWS_SESSION_TOKEN (optional).
    pub(crate) fn open(bucket_and_prefix: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let (bucket, prefix) = bucket_and_prefix.split_once('/').unwrap_or((bucket_and_prefix, ""));
        if bucket.is_empty() || !bucket.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
            return Err(Error::bad_request(
                "blob_url: s3://bucket/prefix needs a valid bucket name",
            ));
        }
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let required =
            |name: &str| var(name).ok_or_else(|| Error::bad_request(format!("blob_url names S3: set {name}")));
        let region = var("AWS_REGION")
            .or_else(|| var("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let base = match var("AWS_ENDPOINT_URL") {
            Some(endpoint) => {
                let url = Url::parse(&endpoint)
                    .ok()
                    .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
                    .ok_or_else(|| Error::bad_request("AWS_ENDPOINT_URL must be an http(s) URL"))?;
                format!("{}/{bucket}/", url.as_str().trim_end_matches('/'))
            }
            None if bucket.contains('.') => format!("https://s3.{region}.amazonaws.com/{bucket}/"),
            None => format!("https://{bucket}.s3.{region}.amazonaws.com/"),
        };
        let base = Url::parse(&base).map_err(|_| Error::bad_request("blob_url: not a valid S3 address"))?;
        let prefix = prefix.trim_matches('/');
        install_crypto_provider();
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| {
                tracing::error!(error = %e, "cannot build the S3 client");
                Error::internal()
            })?;
        Ok(Self {
            client,
            base,
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
            access_key_id: required("AWS_ACCESS_KEY_ID")?,
            secret_access_key: required("AWS_SECRET_ACCESS_KEY")?,
            region,
            session_token: var("AWS_SESSION_TOKEN"),
        })
    }

    /// Streams `chunks` into a temporary file (413 past `max_bytes`, nothing sent), then PUTs it.
    pub(crate) async fn put_stream<S>(&self, key: &str, mut chunks: S, max_bytes: u64) -> Result<u64>
    where
        S: Stream<Item = Result<Bytes>> + Unpin + Send,
    {
        let mut file = tokio::fs::File::from_std(tempfile::tempfile().map_err(io_failed)?);
        let mut hash = Sha256::new();
        let mut written: u64 = 0;
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk?;
            written += chunk.len() as u64;
            if written > max_bytes {
                return Err(Error::new(
                    ErrorCode::PayloadTooLarge,
                    format!("the file is over the limit of {max_bytes} bytes"),
                ));
            }
            hash.update(&chunk);
            file.write_all(&chunk).await.map_err(io_failed)?;
        }
        file.flush().await.map_err(io_failed)?;
        let hash = hex(&hash.finalize());
        let file = Payload::File(file.into_std().await);
        self.send(Method::PUT, key, &hash, Some(written), file)
            .await
            .and_then(expect_success("write a blob"))?;
        Ok(written)
    }

    /// PUTs bytes held in memory.
    pub(crate) async fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let hash = sha256_hex(&bytes);
        let length = bytes.len() as u64;
        self.send(Method::PUT, key, &hash, Some(length), Payload::Bytes(bytes.into()))
            .await
            .and_then(expect_success("write a blob"))
            .map(|_| ())
    }

    /// GETs a blob into a temporary file (deleted when closed), rewound; 404 when missing.
    pub(crate) async fn open_file(&self, key: &str) -> Result<std::fs::File> {
        let mut response = self.send(Method::GET, key, EMPTY_SHA256, None, Payload::Empty).await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Err(Error::not_found("file"));
        }
        response = expect_success("read a blob")(response)?;
        let mut file = tokio::fs::File::from_std(tempfile::tempfile().map_err(io_failed)?);
        while let Some(chunk) = response.chunk().await.map_err(failed("read a blob"))? {
            file.write_all(&chunk).await.map_err(io_failed)?;
        }
        file.flush().await.map_err(io_failed)?;
        file.seek(SeekFrom::Start(0)).await.map_err(io_failed)?;
        Ok(file.into_std().await)
    }

    /// DELETEs a blob; a missing one is no error.
    pub(crate) async fn delete(&self, key: &str) -> Result<()> {
        let response = self
            .send(Method::DELETE, key, EMPTY_SHA256, None, Payload::Empty)
            .await?;
        if response.status() == StatusCode::NOT_FOUND {
            return Ok(());
        }
        expect_success("delete a blob")(response).map(|_| ())
    }

    /// Lists the blobs whose keys start with `prefix`, one ListObjectsV2 page (up to 1,000
    /// keys) per request, following continuation tokens.
    pub(crate) fn list<'a>(&'a self, prefix: &'a str) -> BoxStream<'a, Result<StoredBlob>> {
        // None: no page left; Some(token): the next page, the first without a token.
        let pages = futures_util::stream::try_unfold(Some(None), move |next: Option<Option<String>>| async move {
            let Some(token) = next else { return Ok(None) };
            let page = self.list_page(prefix, token.as_deref()).await?;
            let after = page
                .is_truncated
                .then_some(page.next_continuation_token)
                .flatten()
                .map(Some);
            let blobs = page
                .contents
                .into_iter()
                .filter_map(|c| self.stored_blob(c))
                .map(Ok)
                .collect::<Vec<Result<StoredBlob>>>();
            Ok(Some((futures_util::stream::iter(blobs), after)))
        });
        pages.try_flatten().boxed()
    }

    /// Whether the bucket answers: one listing of at most one key under the prefix, the
    /// cheapest signed request that proves the address, the credentials and the bucket.
    pub(crate) async fn ping(&self) -> Result<()> {
        let query = [
            ("list-type", "2".to_owned()),
            ("max-keys", "1".to_owned()),
            ("prefix", self.prefix.clone()),
        ];
        self.list_bucket(&query, "reach the blob store").await.map(|_| ())
    }

    /// A signed ListObjectsV2 request on the bucket with `query`; `what` names it in errors.
    async fn list_bucket(&self, query: &[(&str, String)], what: &'static str) -> Result<reqwest::Response> {
        self.send_to(
            Method::GET,
            self.base.clone(),
            query,
            EMPTY_SHA256,
            None,
            Payload::Empty,
        )
        .await
        .and_then(expect_success(what))
    }

    async fn list_page(&self, prefix: &str, token: Option<&str>) -> Result<ListBucketResult> {
        let mut query = vec![
            ("list-type", "2".to_owned()),
            ("prefix", format!("{}{prefix}", self.prefix)),
        ];
        if let Some(token) = token {
            query.push(("continuation-token", token.to_owned()));
        }
        let response = self.list_bucket(&query, "list blobs").await?;
        let text = response.text().await.map_err(failed("list blobs"))?;
        quick_xml::de::from_str(&text).map_err(|e| {
            tracing::error!(error = %e, "the S3 store's listing does not parse");
            Error::unavailable("cannot list blobs: the blob store answered something unreadable")
        })
    }

    /// A listed object as a blob of this store (its key without the prefix), if it is one.
    fn stored_blob(&self, listed: ListedObject) -> Option<StoredBlob> {
        let key = listed.key.strip_prefix(&self.prefix)?.to_owned();
        let modified = Timestamp::parse_rfc3339(&listed.last_modified)?;
        Some(StoredBlob { key, modified })
    }

    /// The address of a blob: the bucket's address, the prefix, the key (encoded as SigV4 wants).
    fn object_url(&self, key: &str) -> Result<Url> {
        self.base
            .join(&uri_encode(&format!("{}{key}", self.prefix), false))
            .map_err(|_| Error::bad_request("the blob key does not make a valid address"))
    }

    /// Signs and sends one request for `key`.
    async fn send(
        &self,
        method: Method,
        key: &str,
        payload_hash: &str,
        length: Option<u64>,
        body: Payload,
    ) -> Result<reqwest::Response> {
        let url = self.object_url(key)?;
        self.send_to(method, url, &[], payload_hash, length, body).await
    }

    /// Sends a request, signed anew each time, up to [`TRIES`] times while S3 answers that it is
    /// busy or failing, or cannot be reached; answers the last answer or error.
    async fn send_to(
        &self,
        method: Method,
        url: Url,
        query: &[(&str, String)],
        payload_hash: &str,
        length: Option<u64>,
        body: Payload,
    ) -> Result<reqwest::Response> {
        let mut pause = RETRY_PAUSE;
        for attempt in 1..=TRIES {
            let sent = self
                .send_once(method.clone(), url.clone(), query, payload_hash, length, body.body()?)
                .await;
            let again = match &sent {
                Ok(response) => worth_retrying(response.status()),
                Err(_) => true,
            };
            if !again || attempt == TRIES {
                return sent;
            }
            tracing::warn!(attempt, "the S3 store asked to be asked again");
            tokio::time::sleep(pause).await;
            pause *= 4;
        }
        unreachable!("the last try answers")
    }

    /// Signs and sends one request to `url` with `query` (its names and values as given; they
    /// are encoded and sorted here, as SigV4's canonical query wants and the request sends).
    async fn send_once(
        &self,
        method: Method,
        mut url: Url,
        query: &[(&str, String)],
        payload_hash: &str,
        length: Option<u64>,
        body: reqwest::Body,
    ) -> Result<reqwest::Response> {
        let canonical_query = canonical_query(query);
        url.set_query((!canonical_query.is_empty()).then_some(canonical_query.as_str()));
        let amz_date = amz_date(time::OffsetDateTime::now_utc());
        let mut signed = vec![
            (
                "host".to_owned(),
                host_header(url.host_str().unwrap_or_default(), url.port()),
            ),
            ("x-amz-content-sha256".to_owned(), payload_hash.to_owned()),
            ("x-amz-date".to_owned(), amz_date.clone()),
        ];
        if let Some(token) = &self.session_token {
            signed.push(("x-amz-security-token".to_owned(), token.clone()));
        }
        let signer = Signer {
            access_key_id: &self.access_key_id,
            secret_access_key: &self.secret_access_key,
            region: &self.region,
        };
        let authorization = signer.authorization(
            method.as_str(),
            url.path(),
            &canonical_query,
            &signed,
            payload_hash,
            &amz_date,
        );
        let mut headers = HeaderMap::new();
        // `host` is set by the client from the URL, the same value as signed.
        for (name, value) in signed
            .into_iter()
            .skip(1)
            .chain([("authorization".to_owned(), authorization)])
        {
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| Error::bad_request("an AWS_* variable has a value that cannot be sent"))?;
            value.set_sensitive(true);
            headers.insert(
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| Error::internal())?,
                value,
            );
        }
        if let Some(length) = length {
            headers.insert(reqwest::header::CONTENT_LENGTH, HeaderValue::from(length));
        }
        self.client
            .request(method, url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(failed("reach the blob store"))
    }
}

/// A request's body, which can be sent again when the request is tried again.
enum Payload {
    Empty,
    Bytes(Bytes),
    /// A temporary file, read from its start each time.
    File(std::fs::File),
}

impl Payload {
    fn body(&self) -> Result<reqwest::Body> {
        Ok(match self {
            Payload::Empty => reqwest::Body::default(),
            Payload::Bytes(bytes) => reqwest::Body::from(bytes.clone()),
            Payload::File(file) => {
                use std::io::Seek;
                let mut file = file.try_clone().map_err(io_failed)?;
                file.seek(SeekFrom::Start(0)).map_err(io_failed)?;
                reqwest::Body::from(tokio::fs::File::from_std(file))
            }
        })
    }
}

/// Whether an answer asks to be asked again: S3's busy and failing moments.
fn worth_retrying(status: StatusCode) -> bool {
    matches!(
        status,
        StatusCode::INTERNAL_SERVER_ERROR
            | StatusCode::BAD_GATEWAY
            | StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::GATEWAY_TIMEOUT
            | StatusCode::TOO_MANY_REQUESTS
    )
}

/// The query string SigV4 signs: names and values percent-encoded, sorted by name then value.
fn canonical_query(query: &[(&str, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(name, value)| (uri_encode(name, true), uri_encode(value, true)))
        .collect();
    pairs.sort();
    pairs
        .into_iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// One page of a ListObjectsV2 answer: the fields read of it.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListBucketResult {
    #[serde(default)]
    is_truncated: bool,
    #[serde(default)]
    next_continuation_token: Option<String>,
    #[serde(default)]
    contents: Vec<ListedObject>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListedObject {
    key: String,
    last_modified: String,
}

/// Makes rustls use ring (the project's one crypto provider) for outbound connections.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Passes a 2xx answer on; anything else is logged (status only) and answers 503.
fn expect_success(what: &'static str) -> impl Fn(reqwest::Response) -> Result<reqwest::Response> {
    move |response| {
        if response.status().is_success() {
            Ok(response)
        } else {
            let status = response.status();
            tracing::error!(%status, "cannot {what}: the S3 store refused");
            let detail = format!("cannot {what}: the blob store is unavailable");
            // A 5xx is the store's passing trouble; a 4xx (credentials, a missing bucket) waits
            // for an operator, so no retry is suggested.
            Err(if status.is_server_error() {
                Error::dependency_down(detail)
            } else {
                Error::unavailable(detail)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(url: &str, endpoint: Option<&str>) -> S3 {
        let endpoint = endpoint.map(str::to_owned);
        S3::open(url, &move |name| match name {
            "AWS_ENDPOINT_URL" => endpoint.clone(),
            "AWS_REGION" => Some("eu-central-1".into()),
            _ => Some("x".into()),
        })
        .unwrap()
    }

    #[test]
    fn blob_addresses() {
        let url = |s3: &S3, key: &str| s3.object_url(key).unwrap().to_string();
        assert_eq!(
            url(&open("data/blobs/", None), "uploads/a b.csv"),
            "https://data.s3.eu-central-1.amazonaws.com/blobs/uploads/a%20b.csv"
        );
        assert_eq!(
            url(&open("my.data", None), "k"),
            "https://s3.eu-central-1.amazonaws.com/my.data/k"
        );
        assert_eq!(
            url(&open("data/p", Some("http://127.0.0.1:9000/")), "k/ü"),
            "http://127.0.0.1:9000/data/p/k/%C3%BC"
        );
        let bad = |url: &str, endpoint: Option<&str>| {
            let endpoint = endpoint.map(str::to_owned);
            S3::open(url, &move |name| match name {
                "AWS_ENDPOINT_URL" => endpoint.clone(),
                _ => Some("x".into()),
            })
            .is_err()
        };
        assert!(bad("", None));
        assert!(bad("Bad Bucket/p", None));
        assert!(bad("data", Some("ftp://host")));
    }
}
