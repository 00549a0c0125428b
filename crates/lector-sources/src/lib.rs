//! External sources of data: a file fetched by HTTP(S), the rows of a read-only PostgreSQL
//! query, or one object of an S3-compatible bucket, each opened with a credential of its
//! workspace.
//!
//! This crate knows nothing of the HTTP API or of Lector's own database: it seals credential
//! secrets ([`seal`]), guards outbound connections against server-side request forgery
//! ([`guard`]), and turns a sealed credential plus a fetch's `parameters` into the bytes of one
//! file ([`Sources::fetch`]), bounded in bytes, rows and time, and in fetches going on at once
//! on the node ([`Concurrency`]). A failure answers 400 with a reason (private address,
//! connection refused, authentication failed), never what the remote side sent; a workflow's
//! call ([`Sources::call`]) also says whose fault it was ([`Fault`]).

pub mod guard;
mod http;
pub use http::{Answer, CallError, Fault};
mod postgres;
mod s3;
pub mod seal;
pub mod secret;

pub use guard::NetPolicy;
pub use seal::SealKey;
pub use secret::CredentialSecret;

use lector_core::config::{Config, SourcesConfig};
use lector_core::{Result, SourceKind};
use secret::{HttpParameters, PostgresParameters, S3Parameters};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bounds on one fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file delivered, in bytes.
    pub max_bytes: u64,
    /// Most rows a database query delivers.
    pub max_rows: u64,
    /// Time the whole fetch may take.
    pub timeout: Duration,
}

/// Fetches going on at once on a node, since each may hold up to `max_bytes` and a database
/// query holds a blocking thread until it ends, even when its client has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    /// Fetches going on at once; each holds a turn from when its parameters are checked.
    pub max_fetches: usize,
    /// Time a fetch waits for its turn before it is answered 503.
    pub wait: Duration,
}

impl Concurrency {
    /// `sources.max_concurrent_fetches`, each past it waiting up to 10 seconds.
    pub fn from_config(config: &SourcesConfig) -> Self {
        Self {
            max_fetches: config.max_concurrent_fetches,
            wait: Duration::from_secs(10),
        }
    }
}

/// The file a source delivered, for the blob store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// A file name whose extension tells the format (`.csv`, `.json`, `.jsonl`, `.xlsx`, `.txt`)
    /// when the source gave a hint of it.
    pub file_name: String,
}

/// Everything a fetch needs from the configuration: the sealing key, the address policy, the
/// limits and the node's turns to fetch. Built once at start-up; its clones share the turns.
#[derive(Debug, Clone)]
pub struct Sources {
    key: SealKey,
    policy: NetPolicy,
    limits: Limits,
    concurrency: Concurrency,
    turns: Arc<Semaphore>,
}

impl Sources {
    /// Loads (or creates) the sealing key and reads the `sources` settings.
    pub fn new(config: &Config) -> Result<Self, String> {
        Ok(Self::with_parts(
            SealKey::load(config)?,
            NetPolicy::from_config(&config.sources)?,
            Limits {
                max_bytes: config.sources.max_bytes,
                max_rows: config.sources.max_rows,
                timeout: Duration::from_secs(config.sources.timeout_secs),
            },
            Concurrency::from_config(&config.sources),
        ))
    }

    pub fn with_parts(key: SealKey, policy: NetPolicy, limits: Limits, concurrency: Concurrency) -> Self {
        Self {
            key,
            policy,
            limits,
            concurrency,
            turns: Arc::new(Semaphore::new(concurrency.max_fetches)),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Whether `url` names its host by an address (or as `localhost`) that the guard will
    /// never let a request reach: what a configuration can be told when it is saved, rather
    /// than by deliveries that fail later. A name that resolves is judged when it is called.
    pub fn never_reaches(&self, url: &str) -> bool {
        let Ok(url) = url::Url::parse(url) else {
            return false;
        };
        match url.host() {
            Some(url::Host::Ipv4(ip)) => !self.policy.permits(ip.into()),
            Some(url::Host::Ipv6(ip)) => !self.policy.permits(ip.into()),
            Some(url::Host::Domain(name)) if name.eq_ignore_ascii_case("localhost") => {
                !self.policy.permits(std::net::Ipv4Addr::LOCALHOST.into())
            }
            _ => false,
        }
    }

    /// What keeps `url` from ever being called, if anything: it is not a URL, or not an http
    /// or https one with a host and without a user name or password. What a configuration can
    /// be told when it is saved, as [`Sources::never_reaches`].
    pub fn unusable(url: &str) -> Option<String> {
        match url::Url::parse(url) {
            Err(_) => Some("is not a URL".into()),
            Ok(url) => http::url_fault(&url).map(|fault| fault.to_string()),
        }
    }

    /// The host an address names, for logs and messages that must not carry the whole address
    /// (a webhook's path or query may hold its key); "its address" when it names none.
    pub fn host_of(url: &str) -> String {
        url::Url::parse(url)
            .ok()
            .and_then(|url| url.host_str().map(str::to_owned))
            .unwrap_or_else(|| "its address".to_owned())
    }

    /// POSTs a webhook's `body` to `url` with `headers`, through the same guard as every source
    /// (addresses checked on every hop, 307 and 308 followed and checked again); answers the
    /// receiver's status, or why it could not be reached or refused.
    pub async fn post_webhook(&self, url: &str, body: Vec<u8>, headers: &[(&'static str, String)]) -> Result<u16> {
        let url =
            url::Url::parse(url).map_err(|_| lector_core::Error::bad_request("the webhook URL is not an address"))?;
        let mut map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| lector_core::Error::bad_request(format!("the {name} header cannot be sent")))?;
            map.insert(*name, value);
        }
        http::post(&self.policy, &self.limits, url, body, map).await
    }

    /// Calls `url` with `method` (GET, POST, PUT, PATCH, DELETE, HEAD), `headers` and an
    /// optional `body`, through the same guard as every source; answers the status, content
    /// type and body (at most `max_answer_bytes`, and never more than a fetch reads), or why
    /// the call failed and whose fault that is ([`Fault`]). `headers` (the caller's, which may carry a key) go to the first origin
    /// only, but for the body's content type; `service_headers` (the service's own, such as a
    /// workflow's hop count) go wherever a redirect leads, and win over `headers`. It takes none of the fetch turns ([`Concurrency`]): a workflow's call
    /// may lead to another workflow's call on the same node, which would wait for a turn the
    /// first holds; the runs themselves are bounded, and so is what each call reads.
    pub async fn call(
        &self,
        method: &str,
        url: &str,
        headers: &[(String, String)],
        service_headers: &[(String, String)],
        body: Option<Vec<u8>>,
        max_answer_bytes: u64,
    ) -> std::result::Result<http::Answer, CallError> {
        let unsendable = |detail: &str| CallError::unsendable(lector_core::Error::bad_request(detail));
        let method =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|_| unsendable("the method cannot be sent"))?;
        let url = url::Url::parse(url).map_err(|_| unsendable("the URL is not an address"))?;
        let mut headers = http::Headers {
            first_origin: header_map(headers).map_err(CallError::unsendable)?,
            every_hop: header_map(service_headers).map_err(CallError::unsendable)?,
        };
        if body.is_some() && !headers.first_origin.contains_key(reqwest::header::CONTENT_TYPE) {
            headers.first_origin.insert(
                reqwest::header::CONTENT_TYPE,
                reqwest::header::HeaderValue::from_static("application/json"),
            );
        }
        let limits = Limits {
            max_bytes: self.limits.max_bytes.min(max_answer_bytes),
            ..self.limits
        };
        http::call(&self.policy, &limits, method, url, body, headers).await
    }

    /// Seals a checked secret for storage in a workspace's credential.
    pub fn seal(&self, workspace_id: i64, secret: &CredentialSecret) -> String {
        self.key.seal(workspace_id, secret.kind(), &secret.to_json())
    }

    /// Fetches one file with a workspace's credential of `kind` (its sealed secret as stored)
    /// and the request's `parameters`: `{url}` for http, `{query}` for postgres, `{bucket, key}`
    /// for s3. Once they are checked, it waits for a turn ([`Concurrency`]): 503 with
    /// `Retry-After` when none comes in time.
    pub async fn fetch(
        &self,
        workspace_id: i64,
        kind: SourceKind,
        sealed_secret: &str,
        parameters: &serde_json::Value,
    ) -> Result<Fetched> {
        let opened = self.key.open(workspace_id, kind, sealed_secret)?;
        let secret = CredentialSecret::from_json(kind, &opened)?;
        match secret {
            CredentialSecret::Http(secret) => {
                let parameters = HttpParameters::parse(parameters)?;
                let _turn = self.turn().await?;
                self.fetch_http(&secret, &parameters).await
            }
            CredentialSecret::Postgres(secret) => {
                let parameters = PostgresParameters::parse(parameters)?;
                let turn = self.turn().await?;
                let bytes = self
                    .fetch_postgres(secret.url.clone(), parameters.query.clone(), turn)
                    .await?;
                Ok(Fetched {
                    bytes,
                    file_name: "query.csv".into(),
                })
            }
            CredentialSecret::S3(secret) => {
                let parameters = S3Parameters::parse(parameters)?;
                let _turn = self.turn().await?;
                let (bytes, file_name) = s3::fetch(&self.policy, &self.limits, &secret, &parameters).await?;
                Ok(Fetched { bytes, file_name })
            }
        }
    }

    /// Waits for one of the node's turns to fetch, held until the fetch ends.
    async fn turn(&self) -> Result<OwnedSemaphorePermit> {
        let waiting = self.turns.clone().acquire_owned();
        match tokio::time::timeout(self.concurrency.wait, waiting).await {
            Ok(Ok(turn)) => Ok(turn),
            // The turns are never closed: only the wait can run out.
            Ok(Err(_)) | Err(_) => Err(self.no_turn()),
        }
    }

    /// 503 with `Retry-After`: every turn was taken for as long as the fetch could wait.
    fn no_turn(&self) -> lector_core::Error {
        let most = self.concurrency.max_fetches;
        tracing::warn!(fetches.max = most, "a source fetch found no turn in time");
        lector_core::Error {
            retry_after: Some(lector_core::error::DEPENDENCY_RETRY_SECS),
            ..lector_core::Error::unavailable(format!(
                "this server is fetching {most} sources at once already, its most; try again shortly"
            ))
        }
    }

    /// Runs a postgres source on a thread of its own with a one-thread runtime: sqlx's
    /// connection futures are not `Send` for every lifetime, which a server's handler needs.
    /// The thread keeps the fetch's `turn` until it ends, which is the timeout at the latest,
    /// even when the caller has stopped waiting for it.
    async fn fetch_postgres(&self, url: String, query: String, turn: OwnedSemaphorePermit) -> Result<Vec<u8>> {
        let (policy, limits) = (self.policy.clone(), self.limits);
        tokio::task::spawn_blocking(move || {
            let _turn = turn;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    tracing::error!(error = %e, "cannot start a runtime for a postgres source");
                    lector_core::Error::internal()
                })?;
            runtime.block_on(postgres::fetch(&policy, &limits, &url, &query))
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "a postgres source panicked");
            lector_core::Error::internal()
        })?
    }

    async fn fetch_http(&self, secret: &secret::HttpSecret, parameters: &HttpParameters) -> Result<Fetched> {
        let url = url::Url::parse(parameters.url.trim())
            .map_err(|_| lector_core::Error::bad_request("parameters.url is not a URL"))?;
        secret.check_target(&url)?;
        let headers = secret::header_map(&secret.headers).map_err(lector_core::Error::bad_request)?;
        let body = http::get(&self.policy, &self.limits, url, headers, http::Redirects::Follow).await?;
        let file_name = file_name(&body.url, body.content_type.as_deref());
        Ok(Fetched {
            bytes: body.bytes,
            file_name,
        })
    }
}

/// Longest file name kept from a URL.
const MAX_FILE_NAME_CHARS: usize = 200;

/// Headers as a request sends them; a name or value that cannot be sent is a 400. A value is
/// sent as its UTF-8 bytes (`Zürich`: obs-text, which HTTP carries), not only as visible
/// ASCII; a control character (but tab) is refused, as a workflow's definition refuses it.
fn header_map(headers: &[(String, String)]) -> Result<reqwest::header::HeaderMap> {
    let mut map = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| lector_core::Error::bad_request(format!("{name} is not a header name")))?;
        let unsendable = || lector_core::Error::bad_request(format!("the {name} header cannot be sent"));
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(unsendable());
        }
        let value = reqwest::header::HeaderValue::from_bytes(value.as_bytes()).map_err(|_| unsendable())?;
        map.insert(name, value);
    }
    Ok(map)
}

/// The last segment of the URL's path, or `download`, with an extension from the content type
/// when it has none.
fn file_name(url: &url::Url, content_type: Option<&str>) -> String {
    let last = url
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = last
        .chars()
        .filter(|c| !c.is_control() && !matches!(c, '/' | '\\'))
        .take(MAX_FILE_NAME_CHARS)
        .collect();
    if name.trim_matches('.').is_empty() {
        name = "download".into();
    }
    if !name.contains('.') {
        let mime = content_type
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase());
        let extension = match mime.as_deref() {
            Some("text/csv") => ".csv",
            Some("application/json") => ".json",
            Some("application/x-ndjson" | "application/jsonl" | "application/jsonlines") => ".jsonl",
            Some("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet") => ".xlsx",
            Some("text/plain") => ".txt",
            _ => "",
        };
        name.push_str(extension);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_from_urls() {
        let url = |s: &str| url::Url::parse(s).unwrap();
        assert_eq!(file_name(&url("https://x.org/data/a%20b.csv?x=1"), None), "a b.csv");
        assert_eq!(
            file_name(&url("https://x.org/export"), Some("text/csv; charset=utf-8")),
            "export.csv"
        );
        assert_eq!(
            file_name(&url("https://x.org/"), Some("application/json")),
            "download.json"
        );
        assert_eq!(file_name(&url("https://x.org/a%2F..%2Fb"), None), "a..b");
    }

    /// A value beyond visible ASCII is sent as its UTF-8 bytes; a control character is not.
    #[test]
    fn header_values_go_out_as_utf8() {
        let one = |value: &str| header_map(&[("X-City".to_owned(), value.to_owned())]);
        for sent in ["Zürich", "São Paulo\tBR", "東京", "plain"] {
            let map = one(sent).unwrap_or_else(|e| panic!("{sent:?}: {e:?}"));
            assert_eq!(map["x-city"].as_bytes(), sent.as_bytes());
        }
        for refused in ["a\nb", "a\rb", "nul\0", "del\u{7f}", "c1\u{85}"] {
            assert!(one(refused).is_err(), "{refused:?}");
        }
    }
}
