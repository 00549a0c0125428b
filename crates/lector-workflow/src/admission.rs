//! Whether a request may start a workflow: the trigger's own authentication (a header's value
//! or a basic user and password), checked against a salted digest of the secret. Secrets are
//! stored only as these digests, so a leaked database does not hand out the webhooks' keys; a
//! digest is one SHA-256, cheap enough for every request of a busy webhook.

use crate::definition::{AuthKind, Authentication};
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// `salt$sha256(salt || secret)`, both in hex.
pub fn digest(secret: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = lector_core::sigv4::hex(&salt);
    format!("{salt}${}", salted(&salt, secret))
}

fn salted(salt: &str, secret: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    hasher.update(secret.as_bytes());
    lector_core::sigv4::hex(&hasher.finalize())
}

/// Whether `offered` is the secret `stored` is the digest of. The comparison looks at every
/// byte whatever differs.
pub fn matches(stored: &str, offered: &str) -> bool {
    let Some((salt, expected)) = stored.split_once('$') else {
        return false;
    };
    let actual = salted(salt, offered);
    actual.len() == expected.len()
        && actual
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// What a request's credentials come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Admitted,
    /// No credentials where the trigger wants them (401).
    Missing,
    /// Credentials that are wrong (403).
    Wrong,
}

/// Checks a request against the trigger's authentication; `header` reads a request header.
pub fn admit<'a>(auth: &Authentication, digest: Option<&str>, header: impl Fn(&str) -> Option<&'a str>) -> Verdict {
    let Some(digest) = digest else {
        return if auth.kind == AuthKind::None {
            Verdict::Admitted
        } else {
            Verdict::Wrong
        };
    };
    match auth.kind {
        AuthKind::None => Verdict::Admitted,
        AuthKind::Header => match header(auth.name.as_deref().unwrap_or_default()) {
            None => Verdict::Missing,
            Some(value) if matches(digest, value) => Verdict::Admitted,
            Some(_) => Verdict::Wrong,
        },
        AuthKind::Basic => {
            let Some(encoded) = header("authorization").and_then(|v| v.strip_prefix("Basic ")) else {
                return Verdict::Missing;
            };
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(encoded.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok());
            match decoded.as_deref().and_then(|text| text.split_once(':')) {
                Some((user, password)) if Some(user) == auth.user.as_deref() && matches(digest, password) => {
                    Verdict::Admitted
                }
                _ => Verdict::Wrong,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_salted_and_match_only_their_secret() {
        let (a, b) = (digest("s3cret"), digest("s3cret"));
        assert_ne!(a, b);
        assert!(matches(&a, "s3cret") && matches(&b, "s3cret"));
        assert!(!matches(&a, "s3cret ") && !matches(&a, "") && !matches("garbage", "s3cret"));
    }

    #[test]
    fn header_and_basic_authentication() {
        let header = Authentication {
            kind: AuthKind::Header,
            name: Some("X-Key".into()),
            ..Default::default()
        };
        let stored = digest("k1");
        assert_eq!(admit(&header, Some(&stored), |_| None), Verdict::Missing);
        assert_eq!(admit(&header, Some(&stored), |_| Some("k2")), Verdict::Wrong);
        assert_eq!(admit(&header, Some(&stored), |_| Some("k1")), Verdict::Admitted);

        let basic = Authentication {
            kind: AuthKind::Basic,
            user: Some("shop".into()),
            ..Default::default()
        };
        let stored = digest("pw");
        let ok = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("shop:pw"));
        let wrong = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("shop:px"));
        assert_eq!(admit(&basic, Some(&stored), |_| Some(ok.as_str())), Verdict::Admitted);
        assert_eq!(admit(&basic, Some(&stored), |_| Some(wrong.as_str())), Verdict::Wrong);
        assert_eq!(admit(&basic, Some(&stored), |_| Some("Bearer x")), Verdict::Missing);
        assert_eq!(admit(&basic, Some(&stored), |_| Some("Basic !!")), Verdict::Wrong);
        assert_eq!(admit(&Authentication::default(), None, |_| None), Verdict::Admitted);
    }
}
