//! The keys and secrets of authentication: access tokens (JWT, HS256) signed and checked,
//! passwords hashed with argon2id, and the random tokens the service hands out once (product
//! keys, one-time tokens), stored only as SHA-256 hashes.
//!
//! Tokens carry the user's token version: a password change or reset bumps it, which refuses
//! every token issued before. Logout revokes one token by its `jti`.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation, decode, encode};
use lector_core::config::{Config, PasswordHashing};
use lector_core::time::Timestamp;
use lector_core::{Error, Result};
use lector_store::User;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

const ISSUER: &str = "lector";
const AUDIENCE: &str = "lector-api";
const ACCESS: &str = "access";
/// Product keys start with this, so a bearer token says which kind it is.
pub const PRODUCT_KEY_PREFIX: &str = "lk_";
/// Seconds past its `exp` (and before its `nbf`) that a token still verifies, for clocks a
/// little apart: a revoked token must stay on the list that long after it expires.
pub const TOKEN_LEEWAY_SECS: u64 = 5;

/// The claims of an access token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    pub typ: String,
    /// The user's token version when the token was issued.
    pub ver: i64,
}

/// The keys and costs of authentication, fixed at start-up.
pub struct AuthKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    lifetime_secs: i64,
    hashing: PasswordHashing,
    /// A hash of a random password, verified against when an e-mail is unknown, so that
    /// unknown e-mails and wrong passwords take the same time.
    decoy_hash: String,
}

impl std::fmt::Debug for AuthKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthKeys")
            .field("lifetime_secs", &self.lifetime_secs)
            .finish_non_exhaustive()
    }
}

impl AuthKeys {
    /// Uses the configured key, or the one kept in the data directory (created on first start).
    pub fn load(config: &Config) -> Result<Self, String> {
        let secret = match &config.jwt_secret {
            Some(secret) => secret.expose().as_bytes().to_vec(),
            None => load_or_create_key(&config.data_dir.join("jwt.key"))?,
        };
        let mut validation = Validation::new(jsonwebtoken::Algorithm::HS256);
        validation.set_issuer(&[ISSUER]);
        validation.set_audience(&[AUDIENCE]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.validate_nbf = true;
        validation.leeway = TOKEN_LEEWAY_SECS;
        let hashing = config.password_hashing;
        let decoy_hash = hash_password_now(hashing, &random_token()).map_err(|e| e.detail)?;
        Ok(Self {
            encoding: EncodingKey::from_secret(&secret),
            decoding: DecodingKey::from_secret(&secret),
            validation,
            lifetime_secs: config.token_lifetime_secs,
            hashing,
            decoy_hash,
        })
    }

    /// Issues an access token for a user.
    pub fn issue(&self, user: &User) -> Result<String> {
        let now = Timestamp::now().unix_seconds();
        let claims = Claims {
            sub: user.id.to_string(),
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            exp: now + self.lifetime_secs,
            iat: now,
            jti: uuid::Uuid::new_v4().to_string(),
            typ: ACCESS.into(),
            ver: user.token_version,
        };
        encode(&Header::new(jsonwebtoken::Algorithm::HS256), &claims, &self.encoding).map_err(|e| {
            tracing::error!(error = %e, "cannot sign a token");
            Error::internal()
        })
    }

    pub(crate) fn verify(&self, token: &str) -> Result<Claims> {
        let claims = decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|_| Error::unauthorized("the token is invalid or expired; log in again"))?
            .claims;
        if claims.typ != ACCESS {
            return Err(Error::unauthorized("not an access token"));
        }
        Ok(claims)
    }

    /// Hashes a password with argon2id off the async threads.
    pub async fn hash_password(&self, password: &str) -> Result<String> {
        let (hashing, password) = (self.hashing, password.to_owned());
        tokio::task::spawn_blocking(move || hash_password_now(hashing, &password))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "password hashing task failed");
                Error::internal()
            })?
    }

    /// Checks a password against a stored hash; `None` (no such user, or no password set)
    /// costs the same as a real check and fails.
    pub async fn verify_password(&self, password: &str, stored: Option<&str>) -> bool {
        let matches_real = stored.is_some();
        let hash = stored.unwrap_or(&self.decoy_hash).to_owned();
        let password = password.to_owned();
        let verified = tokio::task::spawn_blocking(move || {
            Argon2::default()
                .verify_password(password.as_bytes(), hash.as_str())
                .is_ok()
        })
        .await
        .unwrap_or(false);
        verified && matches_real
    }
}

fn hash_password_now(hashing: PasswordHashing, password: &str) -> Result<String> {
    let params = Params::new(hashing.memory_kib, hashing.iterations, 1, None).map_err(|e| {
        tracing::error!(error = %e, "bad password hashing parameters");
        Error::internal()
    })?;
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
        .hash_password_with_salt(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| {
            tracing::error!(error = %e, "password hashing failed");
            Error::internal()
        })
}

fn load_or_create_key(path: &Path) -> Result<Vec<u8>, String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let key = text.trim().as_bytes().to_vec();
        if key.len() < 32 {
            return Err(format!("{} holds a key shorter than 32 bytes", path.display()));
        }
        return Ok(key);
    }
    let key = random_token();
    lector_sources::seal::write_private(path, key.as_bytes())?;
    Ok(key.into_bytes())
}

/// 256 random bits, URL-safe: for one-time tokens, product keys and generated keys.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// How one-time tokens and product keys are stored: never the token itself.
pub fn token_hash(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
