//! The bearer-token forgery matrix: every way of bending an access token answers 401 in our
//! problem shape, while the honest token beside it answers 200, on both backends.
//!
//! Tokens are forged by hand (header, claims and signature built here), so the test does not
//! trust the library it checks.

use crate::common::TestApp;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const SECRET: &str = "a-test-signing-key-of-forty-bytes-0123456";

backend_tests!(adjust: with_known_key; forged_tokens_are_refused);

/// A signing key the test knows.
fn with_known_key(config: &mut lector_core::config::Config) {
    config.jwt_secret = Some(lector_core::config::Secret::new(SECRET.to_owned()));
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// HMAC-SHA256 (RFC 2104), written out so the signature does not come from the code under test.
fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| block.iter().map(|b| b ^ byte).collect::<Vec<u8>>();
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .to_vec()
}

/// A token with this header and these claims, signed HS256-style with `key` (or unsigned).
fn token(header: Value, claims: &Value, key: Option<&[u8]>) -> String {
    let signing_input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = key
        .map(|k| b64(&hmac_sha256(k, signing_input.as_bytes())))
        .unwrap_or_default();
    format!("{signing_input}.{signature}")
}

fn hs256() -> Value {
    json!({"alg": "HS256", "typ": "JWT"})
}

/// The claims the service itself would issue for `user_id` now.
fn honest_claims(user_id: i64) -> Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    json!({
        "sub": user_id.to_string(), "iss": "lector", "aud": "lector-api",
        "exp": now + 3600, "iat": now, "jti": format!("forged-{user_id}-{now}"), "typ": "access", "ver": 0,
    })
}

fn with(claims: &Value, key: &str, value: Value) -> Value {
    let mut claims = claims.clone();
    claims[key] = value;
    claims
}

fn without(claims: &Value, key: &str) -> Value {
    let mut claims = claims.clone();
    claims.as_object_mut().unwrap().remove(key);
    claims
}

async fn forged_tokens_are_refused(app: TestApp) {
    let ada = app.register("ada@example.org").await;
    let bob = app.register("bob@example.org").await;
    let key = SECRET.as_bytes();
    let claims = honest_claims(ada.user_id);
    let honest = token(hs256(), &claims, Some(key));
    let status = app.get("/auth/status", &honest).await.expect(200);
    assert_eq!(
        status["user"]["id"], ada.user_id,
        "the hand-made honest token is accepted"
    );

    // A token of Ada's with Bob's id put in, keeping Ada's signature.
    let tampered = {
        let mut parts: Vec<String> = honest.split('.').map(str::to_owned).collect();
        parts[1] = b64(with(&claims, "sub", json!(bob.user_id.to_string()))
            .to_string()
            .as_bytes());
        parts.join(".")
    };
    app.post_signed_out("/password/email", json!({"email": "ada@example.org"}))
        .await
        .expect(200);
    let now = claims["iat"].as_i64().unwrap();
    let forged: Vec<(&str, String)> = vec![
        (
            "alg none, no signature",
            token(json!({"alg": "none", "typ": "JWT"}), &claims, None),
        ),
        (
            "alg none, signed anyway",
            token(json!({"alg": "none", "typ": "JWT"}), &claims, Some(key)),
        ),
        (
            "RS256 header with an HMAC signature",
            token(json!({"alg": "RS256", "typ": "JWT"}), &claims, Some(key)),
        ),
        (
            "HS512 header",
            token(json!({"alg": "HS512", "typ": "JWT"}), &claims, Some(key)),
        ),
        (
            "wrong key",
            token(hs256(), &claims, Some(b"another-key-of-forty-bytes-abcdefghijklm")),
        ),
        ("empty key", token(hs256(), &claims, Some(b""))),
        ("tampered subject", tampered),
        (
            "expired",
            token(hs256(), &with(&claims, "exp", json!(now - 120)), Some(key)),
        ),
        ("no exp", token(hs256(), &without(&claims, "exp"), Some(key))),
        (
            "not valid before an hour from now",
            token(hs256(), &with(&claims, "nbf", json!(now + 3600)), Some(key)),
        ),
        (
            "wrong iss",
            token(hs256(), &with(&claims, "iss", json!("someone-else")), Some(key)),
        ),
        (
            "wrong aud",
            token(hs256(), &with(&claims, "aud", json!("another-api")), Some(key)),
        ),
        ("no aud", token(hs256(), &without(&claims, "aud"), Some(key))),
        (
            "typ refresh",
            token(hs256(), &with(&claims, "typ", json!("refresh")), Some(key)),
        ),
        (
            "unknown user",
            token(hs256(), &with(&claims, "sub", json!("987654")), Some(key)),
        ),
        (
            "non-numeric subject",
            token(hs256(), &with(&claims, "sub", json!("ada")), Some(key)),
        ),
        (
            "old token version",
            token(hs256(), &with(&claims, "ver", json!(-1)), Some(key)),
        ),
        ("password reset token", app.token_from_mail("ada@example.org").await),
        (
            "product key guessed",
            "lk_0000000000000000000000000000000000000000".to_owned(),
        ),
        ("two parts", honest.rsplit_once('.').unwrap().0.to_owned()),
        ("garbage", "not.a.token".to_owned()),
    ];
    for (what, forged) in forged {
        let answer = app.call(Method::GET, "/auth/status", Some(&forged), None).await;
        assert_eq!(answer.status, 401, "{what}: {}", answer.text);
        assert_eq!(answer.body["code"], "unauthorized", "{what}: {}", answer.text);
    }
}
