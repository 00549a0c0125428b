//! Bounded HTTP(S) GETs through the guard: every hop is resolved and checked, the connection
//! goes to the checked addresses, redirects are followed by hand (at most five, each checked
//! again), the body streams into memory only up to the byte limit, and errors name a reason,
//! never what the remote answered.

use crate::Limits;
use crate::guard::NetPolicy;
use lector_core::{Error, ErrorCode, Result};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, LOCATION};
use std::sync::Once;
use url::Url;

/// Redirects followed before a fetch gives up.
pub const MAX_REDIRECTS: usize = 5;

/// What a GET brought back.
#[derive(Debug)]
pub(crate) struct Body {
    pub bytes: Vec<u8>,
    /// The address the body came from, after redirects.
    pub url: Url,
    pub content_type: Option<String>,
}

/// Whether redirects are followed (the http source) or refused (S3, which never redirects a
/// signed request anywhere useful).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Redirects {
    Follow,
    Refuse,
}

/// Makes rustls use ring (the project's one crypto provider) for outbound connections.
fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// Checks what a URL may be before anything is resolved: http or https, a host, no user info.
pub(crate) fn check_url(url: &Url) -> Result<()> {
    match url_fault(url) {
        None => Ok(()),
        Some(fault @ UrlFault::UserInfo) => Err(Error::bad_request(format!(
            "a source URL {fault}; keep them in the credential"
        ))),
        Some(fault) => Err(Error::bad_request(format!("a source URL {fault}"))),
    }
}

/// What keeps a URL from being called at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UrlFault {
    Scheme,
    NoHost,
    UserInfo,
}

impl std::fmt::Display for UrlFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            UrlFault::Scheme => "must start with http:// or https://",
            UrlFault::NoHost => "must name a host",
            UrlFault::UserInfo => "must not carry a user name or password",
        })
    }
}

/// What keeps `url` from being called (its scheme, host or user information), if anything.
pub(crate) fn url_fault(url: &Url) -> Option<UrlFault> {
    if !matches!(url.scheme(), "http" | "https") {
        Some(UrlFault::Scheme)
    } else if url.host_str().is_none_or(str::is_empty) {
        Some(UrlFault::NoHost)
    } else if !url.username().is_empty() || url.password().is_some() {
        Some(UrlFault::UserInfo)
    } else {
        None
    }
}

/// GETs `url` with `headers`, within the policy and the limits. `headers` go to the first
/// host only: a redirect to another origin drops them.
pub(crate) async fn get(
    policy: &NetPolicy,
    limits: &Limits,
    url: Url,
    headers: HeaderMap,
    redirects: Redirects,
) -> Result<Body> {
    within(
        limits,
        "the source",
        get_unbounded_in_time(policy, limits, url, headers, redirects),
    )
    .await
}

async fn get_unbounded_in_time(
    policy: &NetPolicy,
    limits: &Limits,
    mut url: Url,
    mut headers: HeaderMap,
    redirects: Redirects,
) -> Result<Body> {
    let origin = url.origin();
    for _ in 0..=MAX_REDIRECTS {
        check_url(&url)?;
        if url.origin() != origin {
            headers.clear();
        }
        let response = send(policy, limits, &url, &headers).await?;
        let status = response.status();
        if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
            if redirects == Redirects::Refuse {
                return Err(status_error(status));
            }
            url = redirect_target(&response, &url, "the source")?;
            continue;
        }
        if !status.is_success() {
            return Err(status_error(status));
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = read_bounded(response, limits.max_bytes).await?;
        return Ok(Body {
            bytes,
            url,
            content_type,
        });
    }
    Err(Error::bad_request(format!(
        "the source redirected more than {MAX_REDIRECTS} times"
    )))
}

/// POSTs `body` to `url` with `headers` (a webhook), within the policy and the time limit:
/// each hop's addresses are checked, a 307 or 308 redirect is followed (at most five,
/// `headers` but the body's content type dropped across origins), any other redirect or a
/// non-2xx answer is an error. Answers the final status; the receiver's body is not read.
pub(crate) async fn post(
    policy: &NetPolicy,
    limits: &Limits,
    url: Url,
    body: Vec<u8>,
    headers: HeaderMap,
) -> Result<u16> {
    let headers = Headers {
        first_origin: headers,
        every_hop: HeaderMap::new(),
    };
    let posting = follow(policy, limits, reqwest::Method::POST, url, Some(body), headers);
    within(limits, "the address", async {
        Ok(posting.await.map_err(|e| e.error)?.status().as_u16())
    })
    .await
}

/// Whose fault a failed call ([`crate::Sources::call`]) is, which decides how a workflow's
/// caller is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// What the call was given cannot be sent: an address that is not an http or https URL
    /// with a host, a header value that cannot be sent (the data the call was made from).
    Unsendable,
    /// The guard refuses the address the call names: a private or reserved one, which the
    /// configuration does not allow.
    Refused,
    /// The far side: a host that does not resolve, no answer or none in time, an error status,
    /// a redirect that fails or leads to an address the guard refuses, an answer past its limit.
    Upstream,
}

/// A failed call: whose fault, and why (400, or 413 for an answer past its limit).
#[derive(Debug)]
pub struct CallError {
    pub fault: Fault,
    pub error: Error,
}

impl CallError {
    pub(crate) fn unsendable(error: Error) -> Self {
        Self {
            fault: Fault::Unsendable,
            error,
        }
    }

    fn upstream(error: Error) -> Self {
        Self {
            fault: Fault::Upstream,
            error,
        }
    }
}

/// What a call brought back.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The headers of a request that may be redirected.
#[derive(Debug, Default, Clone)]
pub(crate) struct Headers {
    /// The caller's (a step's own, which may carry a key): sent to the first origin only, but
    /// the body's content type, which goes with the body.
    pub first_origin: HeaderMap,
    /// The service's own (the workflow hop count): sent wherever a redirect leads.
    pub every_hop: HeaderMap,
}

impl Headers {
    /// What a request to `url` carries, the first request having gone to `origin`; `resent`
    /// when it sends the body again.
    fn for_hop(&self, url: &Url, origin: &url::Origin, resent: bool) -> HeaderMap {
        let mut sent = if url.origin() == *origin {
            self.first_origin.clone()
        } else {
            let mut kept = HeaderMap::new();
            if resent && let Some(content_type) = self.first_origin.get(CONTENT_TYPE) {
                kept.insert(CONTENT_TYPE, content_type.clone());
            }
            kept
        };
        for (name, value) in &self.every_hop {
            sent.insert(name.clone(), value.clone());
        }
        sent
    }
}

/// Calls `url` with any method (a workflow's outbound request), within the policy and the
/// limits, following redirects as [`follow`] does; the body is read up to the byte limit.
pub(crate) async fn call(
    policy: &NetPolicy,
    limits: &Limits,
    method: reqwest::Method,
    url: Url,
    body: Option<Vec<u8>>,
    headers: Headers,
) -> std::result::Result<Answer, CallError> {
    let calling = async {
        let response = follow(policy, limits, method, url, body, headers).await?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = read_bounded(response, limits.max_bytes)
            .await
            .map_err(CallError::upstream)?;
        Ok(Answer {
            status,
            content_type,
            body,
        })
    };
    tokio::time::timeout(limits.timeout, calling)
        .await
        .unwrap_or_else(|_| Err(CallError::upstream(late(limits, "the address"))))
}

/// Sends `method` to `url` and follows its redirects: each hop is checked, 307 and 308 are
/// followed with the same method and body, 301, 302 and 303 only for GET and HEAD (at most
/// five; across origins only the service's headers and the body's content type go on, see
/// [`Headers`]); a non-2xx answer is an error naming the status. Answers the final response,
/// its body unread.
async fn follow(
    policy: &NetPolicy,
    limits: &Limits,
    method: reqwest::Method,
    mut url: Url,
    body: Option<Vec<u8>>,
    headers: Headers,
) -> std::result::Result<reqwest::Response, CallError> {
    let origin = url.origin();
    let safe = method == reqwest::Method::GET || method == reqwest::Method::HEAD;
    for hop in 0..=MAX_REDIRECTS {
        // The first address is what the call was given; those after it, where the far side
        // redirected it.
        check_url(&url).map_err(|error| match hop {
            0 => CallError::unsendable(error),
            _ => CallError::upstream(error),
        })?;
        let headers = headers.for_hop(&url, &origin, body.is_some());
        let response = send_request(policy, limits, method.clone(), &url, &headers, body.clone())
            .await
            .map_err(|e| match (hop, e.fault) {
                (1.., Fault::Refused) => CallError::upstream(Error::bad_request(format!(
                    "the address redirected to one the guard refuses: {}",
                    e.error.detail
                ))),
                _ => e,
            })?;
        let status = response.status();
        let redirected = matches!(status, StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT)
            || (safe
                && matches!(
                    status,
                    StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND | StatusCode::SEE_OTHER
                ));
        if redirected {
            url = redirect_target(&response, &url, "the address").map_err(CallError::upstream)?;
            continue;
        }
        if !status.is_success() {
            return Err(CallError::upstream(Error::bad_request(format!(
                "the address answered HTTP {}",
                status.as_u16()
            ))));
        }
        return Ok(response);
    }
    Err(CallError::upstream(Error::bad_request(format!(
        "the address redirected more than {MAX_REDIRECTS} times"
    ))))
}

/// Runs `work` within the limits' time; `who` names the far side in the error.
async fn within<T>(limits: &Limits, who: &str, work: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    tokio::time::timeout(limits.timeout, work)
        .await
        .unwrap_or_else(|_| Err(late(limits, who)))
}

/// The error of a far side (`who`) that did not answer within the limits' time.
fn late(limits: &Limits, who: &str) -> Error {
    Error::bad_request(format!(
        "{who} did not answer within {} seconds",
        limits.timeout.as_secs()
    ))
}

/// Where a redirect of `from` points (its Location, relative to `from`); `who` names the far
/// side in the error.
fn redirect_target(response: &reqwest::Response, from: &Url, who: &str) -> Result<Url> {
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| Error::bad_request(format!("{who} redirected without a Location")))?;
    from.join(location)
        .map_err(|_| Error::bad_request(format!("{who} redirected to an invalid address")))
}

/// One GET to the checked addresses of the URL's host.
async fn send(policy: &NetPolicy, limits: &Limits, url: &Url, headers: &HeaderMap) -> Result<reqwest::Response> {
    send_request(policy, limits, reqwest::Method::GET, url, headers, None)
        .await
        .map_err(|e| e.error)
}

/// One request of `method` to the checked addresses of the URL's host; the guard's refusal
/// is told apart from the far side's failings.
async fn send_request(
    policy: &NetPolicy,
    limits: &Limits,
    method: reqwest::Method,
    url: &Url,
    headers: &HeaderMap,
    body: Option<Vec<u8>>,
) -> std::result::Result<reqwest::Response, CallError> {
    install_crypto_provider();
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs = policy.lookup(host, port).await.map_err(CallError::upstream)?;
    policy.check(host, &addrs).map_err(|error| CallError {
        fault: Fault::Refused,
        error,
    })?;
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(limits.timeout)
        .user_agent(concat!("lector/", env!("CARGO_PKG_VERSION")));
    if let Some(url::Host::Domain(domain)) = url.host() {
        builder = builder.resolve_to_addrs(domain, &addrs);
    }
    let client = builder.build().map_err(|e| {
        tracing::error!(error = %e, "cannot build an HTTP client");
        CallError::upstream(Error::internal())
    })?;
    let request = client.request(method, url.clone());
    let request = match body {
        Some(body) => request.body(body),
        None => request,
    };
    request
        .headers(headers.clone())
        .send()
        .await
        .map_err(|e| CallError::upstream(transport_error(&e)))
}

/// Reads the body, stopping as soon as it exceeds `max_bytes`.
async fn read_bounded(mut response: reqwest::Response, max_bytes: u64) -> Result<Vec<u8>> {
    if response.content_length().is_some_and(|n| n > max_bytes) {
        return Err(too_large(max_bytes));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        if (bytes.len() + chunk.len()) as u64 > max_bytes {
            return Err(too_large(max_bytes));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

pub(crate) fn too_large(max_bytes: u64) -> Error {
    Error::new(
        ErrorCode::PayloadTooLarge,
        format!("the source delivers more than {max_bytes} bytes, the most a source may deliver"),
    )
}

/// A reason for an HTTP status, without anything of the remote's body.
fn status_error(status: StatusCode) -> Error {
    let code = status.as_u16();
    let reason = match code {
        401 | 403 => "authentication failed or access was denied",
        404 => "the source does not exist",
        300..=399 => "the source redirected, which this kind of source does not follow",
        400..=499 => "the source refused the request",
        _ => "the source failed",
    };
    Error::bad_request(format!("{reason} (HTTP {code})"))
}

/// A reason for a failure to reach the source, from the error chain (never its text).
pub(crate) fn transport_error(e: &reqwest::Error) -> Error {
    // The log names the host, never the whole address: a webhook's or a step's URL may carry a
    // key in its path or query.
    let host = e.url().and_then(|url| url.host_str()).unwrap_or("-");
    let cause = causes(e).get(1).map(|cause| cause.to_string()).unwrap_or_default();
    tracing::info!(host, cause, "a source could not be fetched");
    if e.is_timeout() {
        return Error::bad_request("the source did not answer in time");
    }
    for cause in causes(e) {
        if cause.is::<rustls::Error>() {
            return Error::bad_request("the TLS handshake with the source failed (is its certificate valid?)");
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return Error::bad_request("connection refused"),
                std::io::ErrorKind::TimedOut => return Error::bad_request("the connection timed out"),
                std::io::ErrorKind::ConnectionReset => return Error::bad_request("the connection was reset"),
                _ => {}
            }
        }
    }
    if e.is_connect() {
        Error::bad_request("the source could not be reached")
    } else {
        Error::bad_request("the connection to the source failed")
    }
}

/// Every error under `e`, looking inside I/O errors too (their `source` skips the wrapped error).
fn causes<'a>(e: &'a (dyn std::error::Error + 'static)) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut found = Vec::new();
    let mut pending = vec![e];
    while let Some(cause) = pending.pop() {
        if found.len() >= 32 {
            break;
        }
        found.push(cause);
        if let Some(inner) = cause.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            pending.push(inner);
        } else if let Some(next) = cause.source() {
            pending.push(next);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{AUTHORIZATION, HeaderValue};

    #[test]
    fn across_origins_only_the_services_headers_and_the_bodys_type_go_on() {
        let mut headers = Headers::default();
        headers
            .first_origin
            .insert(AUTHORIZATION, HeaderValue::from_static("Bearer s3cret"));
        headers
            .first_origin
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers
            .every_hop
            .insert("lector-workflow-hops", HeaderValue::from_static("3"));
        let first = Url::parse("http://a.example:8080/x").unwrap();
        let origin = first.origin();
        let same = headers.for_hop(&Url::parse("http://a.example:8080/y").unwrap(), &origin, true);
        assert_eq!(same.len(), 3);
        let elsewhere = Url::parse("http://a.example:9090/y").unwrap();
        let resent = headers.for_hop(&elsewhere, &origin, true);
        assert_eq!(resent.get(AUTHORIZATION), None);
        assert_eq!(resent.get(CONTENT_TYPE).unwrap(), "application/json");
        assert_eq!(resent.get("lector-workflow-hops").unwrap(), "3");
        let without_body = headers.for_hop(&elsewhere, &origin, false);
        assert_eq!(without_body.len(), 1, "{without_body:?}");
    }
}
