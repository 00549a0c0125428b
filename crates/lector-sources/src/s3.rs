//! One object of an S3-compatible bucket: a GET signed with AWS Signature Version 4, sent
//! through the same guarded, bounded HTTP path as the http source.
//!
//! Signing is done here (HMAC-SHA256 over the canonical request) rather than with
//! object_store's `aws` feature, which brings aws-lc (no aws-lc in the server, DESIGN.md
//! section 10) and a client that cannot be pinned to the guard's checked addresses.

use crate::http::{self, Redirects};
use crate::secret::{S3Parameters, S3Secret};
use crate::{Limits, guard::NetPolicy};
use hmac::{Hmac, Mac};
use lector_core::{Error, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use sha2::{Digest, Sha256};
use url::Url;

/// SHA-256 of the empty body of a GET.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Checks an S3-compatible endpoint: http(s), a host, nothing after it.
pub(crate) fn endpoint(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|_| "must be a URL such as https://s3.example.org".to_owned())?;
    http::check_url(&url).map_err(|e| e.detail)?;
    if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
        return Err("must be scheme, host and port only".into());
    }
    Ok(url)
}

/// Fetches the object; answers its bytes and its file name (the key's last segment).
pub(crate) async fn fetch(
    policy: &NetPolicy,
    limits: &Limits,
    secret: &S3Secret,
    parameters: &S3Parameters,
) -> Result<(Vec<u8>, String)> {
    let url = object_url(secret, parameters)?;
    let now = time::OffsetDateTime::now_utc();
    let amz_date = now
        .format(time::macros::format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .map_err(|_| Error::internal())?;
    let host = match url.port() {
        Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let mut signed = vec![
        ("host".to_owned(), host),
        ("x-amz-content-sha256".to_owned(), EMPTY_SHA256.to_owned()),
        ("x-amz-date".to_owned(), amz_date.clone()),
    ];
    if let Some(token) = &secret.session_token {
        signed.push(("x-amz-security-token".to_owned(), token.clone()));
    }
    let authorization = authorization(secret, "GET", url.path(), "", &signed, EMPTY_SHA256, &amz_date);
    let mut headers = HeaderMap::new();
    for (name, value) in signed
        .iter()
        .skip(1)
        .chain([&("authorization".to_owned(), authorization)])
    {
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| Error::bad_request("the credential has a value that cannot be sent"))?;
        value.set_sensitive(true);
        headers.insert(
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| Error::internal())?,
            value,
        );
    }
    let body = http::get(policy, limits, url, headers, Redirects::Refuse).await?;
    let name = parameters
        .key
        .rsplit('/')
        .find(|s| !s.is_empty())
        .unwrap_or("object")
        .to_owned();
    Ok((body.bytes, name))
}

/// Path-style on a configured endpoint; on AWS virtual-hosted style unless the bucket name
/// has dots (which a wildcard certificate does not cover).
fn object_url(secret: &S3Secret, parameters: &S3Parameters) -> Result<Url> {
    let key = uri_encode(&parameters.key, false);
    let bucket = &parameters.bucket;
    let text = match &secret.endpoint {
        Some(endpoint) => {
            let base = self::endpoint(endpoint).map_err(Error::bad_request)?;
            format!("{}{bucket}/{key}", base.as_str().trim_end_matches('/').to_owned() + "/")
        }
        None if bucket.contains('.') => format!("https://s3.{}.amazonaws.com/{bucket}/{key}", secret.region),
        None => format!("https://{bucket}.s3.{}.amazonaws.com/{key}", secret.region),
    };
    Url::parse(&text).map_err(|_| Error::bad_request("the bucket and key do not make a valid address"))
}

/// Percent-encodes all but the unreserved characters (and `/` in paths), as SigV4 wants.
fn uri_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => out.push(byte as char),
            b'/' if !encode_slash => out.push('/'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `Authorization` header of a SigV4-signed S3 request. `headers` are the signed ones,
/// lower-case, in order.
fn authorization(
    secret: &S3Secret,
    method: &str,
    canonical_uri: &str,
    canonical_query: &str,
    headers: &[(String, String)],
    payload_hash: &str,
    amz_date: &str,
) -> String {
    let date = &amz_date[..8];
    let scope = format!("{date}/{}/s3/aws4_request", secret.region);
    let canonical_headers: String = headers.iter().map(|(n, v)| format!("{n}:{}\n", v.trim())).collect();
    let signed_headers = headers.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(";");
    let canonical_request =
        format!("{method}\n{canonical_uri}\n{canonical_query}\n{canonical_headers}\n{signed_headers}\n{payload_hash}");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{}", secret.secret_access_key).as_bytes(), date);
    for part in [secret.region.as_str(), "s3", "aws4_request"] {
        key = hmac(&key, part);
    }
    let signature = hex(&hmac(&key, &string_to_sign));
    format!(
        "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
        secret.access_key_id
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example_secret() -> S3Secret {
        S3Secret {
            access_key_id: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
            region: "us-east-1".into(),
            endpoint: None,
            session_token: None,
        }
    }

    #[test]
    fn signature_matches_the_published_get_object_example() {
        // The "GET Object" example of the AWS Signature Version 4 documentation for S3.
        let headers = [
            ("host", "examplebucket.s3.amazonaws.com"),
            ("range", "bytes=0-9"),
            ("x-amz-content-sha256", EMPTY_SHA256),
            ("x-amz-date", "20130524T000000Z"),
        ]
        .map(|(n, v)| (n.to_owned(), v.to_owned()));
        let header = authorization(
            &example_secret(),
            "GET",
            "/test.txt",
            "",
            &headers,
            EMPTY_SHA256,
            "20130524T000000Z",
        );
        assert_eq!(
            header,
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, \
             SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
    }

    #[test]
    fn object_addresses() {
        let p = |bucket: &str, key: &str| S3Parameters {
            bucket: bucket.into(),
            key: key.into(),
        };
        let aws = example_secret();
        assert_eq!(
            object_url(&aws, &p("data", "in/a b+c.csv")).unwrap().as_str(),
            "https://data.s3.us-east-1.amazonaws.com/in/a%20b%2Bc.csv"
        );
        assert_eq!(
            object_url(&aws, &p("my.data", "x.csv")).unwrap().as_str(),
            "https://s3.us-east-1.amazonaws.com/my.data/x.csv"
        );
        let minio = S3Secret {
            endpoint: Some("http://127.0.0.1:9000".into()),
            ..example_secret()
        };
        assert_eq!(
            object_url(&minio, &p("data", "ü.csv")).unwrap().as_str(),
            "http://127.0.0.1:9000/data/%C3%BC.csv"
        );
        assert!(endpoint("https://s3.example.org/prefix").is_err());
        assert!(endpoint("https://user:pw@s3.example.org").is_err());
    }
}
