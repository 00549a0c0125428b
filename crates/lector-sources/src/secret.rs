//! What a credential holds for each kind of source, and what a fetch takes as `parameters`.
//! Both arrive as JSON from clients: shapes are strict (unknown fields refused) and bounded,
//! and problems are named per field (`secret.url`, `parameters.query`).

use lector_core::validate::Problems;
use lector_core::{Error, ErrorCode, Result, SourceKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use url::Url;

/// Longest URL, endpoint or database URL accepted.
pub const MAX_URL_CHARS: usize = 2048;
/// Longest query accepted.
pub const MAX_QUERY_CHARS: usize = 64 * 1024;
/// Most headers an http credential sends.
pub const MAX_HEADERS: usize = 32;
/// Longest header value, key or token in a credential.
pub const MAX_VALUE_CHARS: usize = 8 * 1024;

/// An http credential: headers sent with the request, as `Authorization: Bearer …`, bound to
/// one origin (`base_url`: scheme, host and port), so that whoever may use the credential
/// cannot send its headers to a host of their choosing. A credential with headers must name
/// its origin; one stored before origins were named has none and sends its headers nowhere.
#[derive(Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct HttpSecret {
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `https://host[:port]`: the only origin the credential fetches from. `http://` is taken
    /// too, for a server inside the network without TLS; its headers then travel unencrypted,
    /// which whoever creates the credential (a MANAGER) decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

impl HttpSecret {
    /// Checks that `url` may be fetched with this credential: on its origin when it names one;
    /// anywhere when it names none and has no headers to send. 422 otherwise, saying why.
    pub(crate) fn check_target(&self, url: &Url) -> Result<()> {
        let refuse = |message: String| Error::validation(vec![lector_core::FieldError::new("parameters.url", message)]);
        match &self.base_url {
            Some(base) => {
                let origin = endpoint_url(base)
                    .map_err(|_| {
                        tracing::error!("a stored http credential has an invalid base_url");
                        Error::internal()
                    })?
                    .origin();
                if url.origin() != origin {
                    return Err(refuse(format!(
                        "must be on {}, the origin the credential is bound to",
                        origin.ascii_serialization()
                    )));
                }
                Ok(())
            }
            None if self.headers.is_empty() => Ok(()),
            None => Err(refuse(
                "the credential sends headers but names no origin (it was created before credentials \
                 named one); create it again with secret.base_url, the origin its headers may go to"
                    .into(),
            )),
        }
    }
}

/// A postgres credential: the connection URL, user and password included.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresSecret {
    pub url: String,
}

/// An s3 credential: keys, region and (for S3-compatible stores) the endpoint.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Secret {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub region: String,
    /// `https://host[:port]` of an S3-compatible store; default AWS in `region`.
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub session_token: Option<String>,
}

/// The secret of a credential, by kind. Never printed.
#[derive(Clone)]
pub enum CredentialSecret {
    Http(HttpSecret),
    Postgres(PostgresSecret),
    S3(S3Secret),
}

impl fmt::Debug for CredentialSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CredentialSecret::{}([redacted])", self.kind())
    }
}

impl CredentialSecret {
    pub fn kind(&self) -> SourceKind {
        match self {
            CredentialSecret::Http(_) => SourceKind::Http,
            CredentialSecret::Postgres(_) => SourceKind::Postgres,
            CredentialSecret::S3(_) => SourceKind::S3,
        }
    }

    /// Parses and checks a client's `secret` for a kind of source; 422 naming each field.
    pub fn parse(kind: SourceKind, value: &serde_json::Value) -> Result<Self> {
        let mut problems = Problems::default();
        let secret = match kind {
            SourceKind::Http => strict::<HttpSecret>("secret", value).map(CredentialSecret::Http),
            SourceKind::Postgres => strict::<PostgresSecret>("secret", value).map(CredentialSecret::Postgres),
            SourceKind::S3 => strict::<S3Secret>("secret", value).map(CredentialSecret::S3),
        }?;
        secret.validate(&mut problems);
        problems.finish()?;
        Ok(secret)
    }

    fn validate(&self, problems: &mut Problems) {
        match self {
            CredentialSecret::Http(s) => {
                problems.check(s.headers.len() <= MAX_HEADERS, "secret.headers", "has too many headers");
                if let Err(message) = header_map(&s.headers) {
                    problems.push("secret.headers", message);
                }
                match &s.base_url {
                    Some(base) => {
                        problems.max_len("secret.base_url", base, MAX_URL_CHARS);
                        if let Err(message) = endpoint_url(base) {
                            problems.push("secret.base_url", message);
                        }
                    }
                    None => problems.check(
                        s.headers.is_empty(),
                        "secret.base_url",
                        "is required with headers: the origin they may be sent to, such as https://api.example.org",
                    ),
                }
            }
            CredentialSecret::Postgres(s) => {
                problems.max_len("secret.url", &s.url, MAX_URL_CHARS);
                if let Err(message) = crate::postgres::connect_options(&s.url) {
                    problems.push("secret.url", message);
                }
            }
            CredentialSecret::S3(s) => {
                problems.name("secret.access_key_id", &s.access_key_id, MAX_VALUE_CHARS);
                problems.name("secret.secret_access_key", &s.secret_access_key, MAX_VALUE_CHARS);
                problems.check(
                    !s.region.is_empty()
                        && s.region.len() <= 64
                        && s.region
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                    "secret.region",
                    "must be a region name such as eu-central-1",
                );
                if let Some(endpoint) = &s.endpoint
                    && let Err(message) = endpoint_url(endpoint)
                {
                    problems.push("secret.endpoint", message);
                }
                if let Some(token) = &s.session_token {
                    problems.max_len("secret.session_token", token, MAX_VALUE_CHARS);
                }
            }
        }
    }

    pub(crate) fn to_json(&self) -> Vec<u8> {
        match self {
            CredentialSecret::Http(s) => serde_json::to_vec(s),
            CredentialSecret::Postgres(s) => serde_json::to_vec(s),
            CredentialSecret::S3(s) => serde_json::to_vec(s),
        }
        .expect("plain structs serialise")
    }

    /// Reads an opened secret back; a stored one that does not fit is a server fault.
    pub(crate) fn from_json(kind: SourceKind, bytes: &[u8]) -> Result<Self> {
        let fail = |e: serde_json::Error| {
            tracing::error!(error = %e, "a stored credential secret does not parse");
            Error::internal()
        };
        Ok(match kind {
            SourceKind::Http => CredentialSecret::Http(serde_json::from_slice(bytes).map_err(fail)?),
            SourceKind::Postgres => CredentialSecret::Postgres(serde_json::from_slice(bytes).map_err(fail)?),
            SourceKind::S3 => CredentialSecret::S3(serde_json::from_slice(bytes).map_err(fail)?),
        })
    }
}

/// The headers of an http credential, checked.
pub(crate) fn header_map(headers: &BTreeMap<String, String>) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let header = HeaderName::from_str(name).map_err(|_| format!("{name:?} is not a header name"))?;
        if matches!(
            header.as_str(),
            "host" | "content-length" | "transfer-encoding" | "connection" | "upgrade" | "te" | "trailer"
        ) {
            return Err(format!("the header {name} is set by the server"));
        }
        if value.len() > MAX_VALUE_CHARS {
            return Err(format!("the header {name} is too long"));
        }
        let mut value = HeaderValue::from_str(value).map_err(|_| format!("the header {name} has an invalid value"))?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

/// Parameters of an http fetch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpParameters {
    pub url: String,
}

/// Parameters of a postgres fetch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresParameters {
    pub query: String,
}

/// Parameters of an s3 fetch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct S3Parameters {
    pub bucket: String,
    pub key: String,
}

impl HttpParameters {
    pub(crate) fn parse(value: &serde_json::Value) -> Result<Self> {
        let p: Self = strict("parameters", value)?;
        let mut problems = Problems::default();
        problems.name("parameters.url", &p.url, MAX_URL_CHARS);
        problems.finish()?;
        Ok(p)
    }
}

impl PostgresParameters {
    pub(crate) fn parse(value: &serde_json::Value) -> Result<Self> {
        let p: Self = strict("parameters", value)?;
        let mut problems = Problems::default();
        problems.name("parameters.query", &p.query, MAX_QUERY_CHARS);
        problems.finish()?;
        Ok(p)
    }
}

impl S3Parameters {
    pub(crate) fn parse(value: &serde_json::Value) -> Result<Self> {
        let p: Self = strict("parameters", value)?;
        let mut problems = Problems::default();
        problems.check(
            (3..=63).contains(&p.bucket.len())
                && p.bucket
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'),
            "parameters.bucket",
            "must be a bucket name (3 to 63 lower-case letters, digits, dots and hyphens)",
        );
        problems.check(
            !p.key.is_empty() && p.key.len() <= 1024 && !p.key.chars().any(char::is_control),
            "parameters.key",
            "must be an object key of 1 to 1024 bytes",
        );
        // An address's `.` and `..` segments are resolved away (RFC 3986, and the WHATWG URL
        // rules even when percent-encoded): `../other-bucket/x` would reach another bucket.
        problems.check(
            !p.key.split('/').any(|segment| segment == "." || segment == ".."),
            "parameters.key",
            "must not have . or .. as a part between slashes (no address reaches such an object)",
        );
        problems.finish()?;
        Ok(p)
    }
}

/// Deserialises a JSON object strictly; a wrong shape is 422 naming the field.
fn strict<T: DeserializeOwned>(field: &str, value: &serde_json::Value) -> Result<T> {
    if !value.is_object() {
        return Err(Error::validation(vec![lector_core::FieldError::new(
            field,
            "must be an object",
        )]));
    }
    serde_json::from_value(value.clone()).map_err(|e| {
        let mut error = Error::validation(vec![lector_core::FieldError::new(field, e.to_string())]);
        error.code = ErrorCode::ValidationFailed;
        error
    })
}

/// Checks an S3-compatible endpoint: http(s), a host, nothing after it.
pub(crate) fn endpoint_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|_| "must be a URL such as https://s3.example.org".to_owned())?;
    crate::http::check_url(&url).map_err(|e| e.detail)?;
    if !matches!(url.path(), "" | "/") || url.query().is_some() || url.fragment().is_some() {
        return Err("must be scheme, host and port only".into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_strict_per_kind() {
        assert!(
            CredentialSecret::parse(SourceKind::Postgres, &json!({"url": "postgres://u:p@db.example.org/x"})).is_ok()
        );
        let err = CredentialSecret::parse(SourceKind::Postgres, &json!({"url": "mysql://db/x"})).unwrap_err();
        assert_eq!((err.status(), err.errors[0].field.as_str()), (422, "secret.url"));
        let err =
            CredentialSecret::parse(SourceKind::Postgres, &json!({"url": "postgres://u@db/x?sslmode=on"})).unwrap_err();
        assert_eq!((err.status(), err.errors[0].field.as_str()), (422, "secret.url"));
        assert!(err.errors[0].message.contains("sslmode"), "{:?}", err.errors);
        let err =
            CredentialSecret::parse(SourceKind::Postgres, &json!({"url": "postgres://db/x", "extra": 1})).unwrap_err();
        assert!(err.detail.contains("unknown field"), "{}", err.detail);
        assert!(CredentialSecret::parse(SourceKind::Http, &json!({})).is_ok());
        let err = CredentialSecret::parse(SourceKind::Http, &json!({"headers": {"X-A": "a"}})).unwrap_err();
        assert_eq!(err.errors[0].field, "secret.base_url");
        let bound = json!({"headers": {"X-A": "a"}, "base_url": "https://api.example.org"});
        assert!(CredentialSecret::parse(SourceKind::Http, &bound).is_ok());
        for base in [
            "https://api.example.org/exports",
            "ftp://api.example.org",
            "api.example.org",
        ] {
            let err = CredentialSecret::parse(SourceKind::Http, &json!({"base_url": base})).unwrap_err();
            assert_eq!(err.errors[0].field, "secret.base_url", "{base}");
        }
        let err = CredentialSecret::parse(SourceKind::Http, &json!({"headers": {"Host": "x"}})).unwrap_err();
        assert_eq!(err.errors[0].field, "secret.headers");
        let err = CredentialSecret::parse(SourceKind::Http, &json!({"headers": {"X-A": "a\nb"}})).unwrap_err();
        assert_eq!(err.errors[0].field, "secret.headers");
        let s3 = json!({"access_key_id": "AK", "secret_access_key": "SK", "region": "eu-central-1"});
        assert!(CredentialSecret::parse(SourceKind::S3, &s3).is_ok());
        let bad = json!({"access_key_id": "", "secret_access_key": "SK", "region": "EU", "endpoint": "ftp://x"});
        let err = CredentialSecret::parse(SourceKind::S3, &bad).unwrap_err();
        let fields: Vec<_> = err.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["secret.access_key_id", "secret.region", "secret.endpoint"]);
        assert!(CredentialSecret::parse(SourceKind::S3, &json!("text")).is_err());
    }

    #[test]
    fn secrets_never_print() {
        let s = CredentialSecret::parse(SourceKind::Postgres, &json!({"url": "postgres://u:hunter2@db/x"})).unwrap();
        assert!(!format!("{s:?}").contains("hunter2"));
        let again = CredentialSecret::from_json(SourceKind::Postgres, &s.to_json()).unwrap();
        assert!(matches!(again, CredentialSecret::Postgres(p) if p.url.contains("hunter2")));
    }

    #[test]
    fn an_http_credential_fetches_from_its_origin_only() {
        let url = |s: &str| Url::parse(s).unwrap();
        let bound = HttpSecret {
            headers: BTreeMap::from([("Authorization".into(), "Bearer t".into())]),
            base_url: Some("https://api.example.org".into()),
        };
        assert!(bound.check_target(&url("https://api.example.org/a.csv?x=1")).is_ok());
        assert!(bound.check_target(&url("https://api.example.org:443/b")).is_ok());
        for other in [
            "https://evil.example.org/a.csv",
            "http://api.example.org/a.csv",
            "https://api.example.org:8443/a.csv",
        ] {
            let err = bound.check_target(&url(other)).unwrap_err();
            assert_eq!(
                (err.status(), err.errors[0].field.as_str()),
                (422, "parameters.url"),
                "{other}"
            );
            assert!(err.detail.contains("https://api.example.org"), "{}", err.detail);
        }
        let old = HttpSecret {
            base_url: None,
            ..bound.clone()
        };
        let err = old.check_target(&url("https://api.example.org/a.csv")).unwrap_err();
        assert!(err.detail.contains("create it again"), "{}", err.detail);
        let anonymous = HttpSecret::default();
        assert!(anonymous.check_target(&url("https://anywhere.example.org/")).is_ok());
        // An old row (no base_url in its JSON) still reads.
        let read = CredentialSecret::from_json(SourceKind::Http, br#"{"headers":{"X-A":"a"}}"#).unwrap();
        assert!(matches!(read, CredentialSecret::Http(s) if s.base_url.is_none()));
    }

    #[test]
    fn parameters_are_checked() {
        assert!(HttpParameters::parse(&json!({"url": "https://example.org/a.csv"})).is_ok());
        assert_eq!(HttpParameters::parse(&json!({})).unwrap_err().status(), 422);
        assert_eq!(
            PostgresParameters::parse(&json!({"query": " "})).unwrap_err().errors[0].field,
            "parameters.query"
        );
        let err = S3Parameters::parse(&json!({"bucket": "A_B", "key": ""})).unwrap_err();
        assert_eq!(err.errors.len(), 2);
        assert!(S3Parameters::parse(&json!({"bucket": "my-bucket", "key": "data/2024/a.csv"})).is_ok());
        for key in ["../secret/x.csv", "dir/../data.csv", "./a.csv", "a/."] {
            let err = S3Parameters::parse(&json!({"bucket": "my-bucket", "key": key})).unwrap_err();
            assert_eq!(err.errors[0].field, "parameters.key", "{key}");
        }
        assert!(S3Parameters::parse(&json!({"bucket": "my-bucket", "key": "a..b/.hidden"})).is_ok());
    }
}
