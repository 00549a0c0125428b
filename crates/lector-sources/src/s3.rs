//! One object of an S3-compatible bucket: a GET signed with AWS Signature Version 4, sent
//! through the same guarded, bounded HTTP path as the http source.
//!
//! Signing is `lector_core::sigv4` (shared with the blob store) rather than object_store's `aws`
//! feature, which brings aws-lc (no aws-lc in the server, DESIGN.md section 10) and a client
//! that cannot be pinned to the guard's checked addresses.

use crate::http::{self, Redirects};
use crate::secret::{S3Parameters, S3Secret, endpoint_url};
use crate::{Limits, guard::NetPolicy};
use lector_core::sigv4::{EMPTY_SHA256, Signer, amz_date, host_header, uri_encode};
use lector_core::{Error, Result};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use url::Url;

/// Fetches the object; answers its bytes and its file name (the key's last segment).
pub(crate) async fn fetch(
    policy: &NetPolicy,
    limits: &Limits,
    secret: &S3Secret,
    parameters: &S3Parameters,
) -> Result<(Vec<u8>, String)> {
    let url = object_url(secret, parameters)?;
    let amz_date = amz_date(time::OffsetDateTime::now_utc());
    let host = host_header(url.host_str().unwrap_or_default(), url.port());
    let mut signed = vec![
        ("host".to_owned(), host),
        ("x-amz-content-sha256".to_owned(), EMPTY_SHA256.to_owned()),
        ("x-amz-date".to_owned(), amz_date.clone()),
    ];
    if let Some(token) = &secret.session_token {
        signed.push(("x-amz-security-token".to_owned(), token.clone()));
    }
    let authorization = signer(secret).authorization("GET", url.path(), "", &signed, EMPTY_SHA256, &amz_date);
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
            let base = endpoint_url(endpoint).map_err(Error::bad_request)?;
            format!("{}{bucket}/{key}", base.as_str().trim_end_matches('/').to_owned() + "/")
        }
        None if bucket.contains('.') => format!("https://s3.{}.amazonaws.com/{bucket}/{key}", secret.region),
        None => format!("https://{bucket}.s3.{}.amazonaws.com/{key}", secret.region),
    };
    Url::parse(&text).map_err(|_| Error::bad_request("the bucket and key do not make a valid address"))
}

/// What signs requests with the secret's credential.
fn signer(secret: &S3Secret) -> Signer<'_> {
    Signer {
        access_key_id: &secret.access_key_id,
        secret_access_key: &secret.secret_access_key,
        region: &secret.region,
    }
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
        assert!(endpoint_url("https://s3.example.org/prefix").is_err());
        assert!(endpoint_url("https://user:pw@s3.example.org").is_err());
    }
}
