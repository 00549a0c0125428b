//! The keys and secrets of authentication: access tokens (JWT, HS256) signed and checked,
//! passwords hashed with argon2id, and the random tokens the service hands out once (product
//! keys, one-time tokens), stored only as SHA-256 hashes.
//!
//! Tokens carry the user's token version: a password change or reset bumps it, which refuses
//! every token issued before. Logout revokes one token by its `jti`.
//!
//! Hashes run a few at a time ([`AuthKeys::hashing_slots`]): each takes `memory_kib` (19 MiB by
//! default), and a flood of log-ins from many addresses would otherwise run as many at once as
//! the runtime has blocking threads (512), gigabytes. A stored hash made with other parameters
//! than the configured ones is made again at the next log-in ([`AuthKeys::needs_rehash`]), so a
//! wrong password for a known e-mail costs what the unknown e-mail's decoy costs.

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
use std::sync::Arc;
use tokio::sync::Semaphore;

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
    /// Hashes (made or checked) that may run at once: one per core, two at least.
    hashing_slots: Arc<Semaphore>,
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
            hashing_slots: Arc::new(Semaphore::new(hashing_slots())),
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
        self.in_hashing_slot(move || hash_password_now(hashing, &password))
            .await?
    }

    /// Checks a password against a stored hash; `None` (no such user, or no password set)
    /// costs the same as a real check and fails.
    pub async fn verify_password(&self, password: &str, stored: Option<&str>) -> bool {
        let matches_real = stored.is_some();
        let hash = stored.unwrap_or(&self.decoy_hash).to_owned();
        let password = password.to_owned();
        let verified = self
            .in_hashing_slot(move || {
                Argon2::default()
                    .verify_password(password.as_bytes(), hash.as_str())
                    .is_ok()
            })
            .await
            .unwrap_or(false);
        verified && matches_real
    }

    /// Whether a stored hash was made with other parameters than the configured ones (or is
    /// not one we read), so the password should be hashed again once it is known.
    pub fn needs_rehash(&self, stored: &str) -> bool {
        let Ok(hash) = argon2::password_hash::phc::PasswordHash::new(stored) else {
            return true;
        };
        let Ok(params) = Params::try_from(&hash) else {
            return true;
        };
        hash.algorithm != Algorithm::Argon2id.ident()
            || params.m_cost() != self.hashing.memory_kib
            || params.t_cost() != self.hashing.iterations
            || params.p_cost() != 1
    }

    /// Runs a hash on a blocking thread once one of the hashing slots is free.
    async fn in_hashing_slot<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        // Held by the hash itself: a request dropped meanwhile (its client gone) does not free
        // the slot while its hash still runs.
        let slot = self
            .hashing_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::internal())?;
        let work = move || {
            let done = work();
            drop(slot);
            done
        };
        tokio::task::spawn_blocking(work).await.map_err(|e| {
            tracing::error!(error = %e, "password hashing task failed");
            Error::internal()
        })
    }
}

/// How many hashes run at once: one per core, two at least.
fn hashing_slots() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn keys(memory_kib: u32, iterations: u32) -> AuthKeys {
        let mut config = Config::default();
        config.jwt_secret = Some(lector_core::config::Secret::new("k".repeat(32)));
        config.password_hashing = PasswordHashing { memory_kib, iterations };
        AuthKeys::load(&config).expect("keys")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hashes_run_a_few_at_a_time() {
        let keys = Arc::new(keys(64, 1));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let calls = (0..24).map(|_| {
            let (keys, running, most) = (keys.clone(), running.clone(), most.clone());
            tokio::spawn(async move {
                keys.in_hashing_slot(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            })
        });
        for call in futures_util::future::join_all(calls).await {
            call.expect("the call").expect("a slot");
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=hashing_slots()).contains(&most), "{most} at once");
    }

    #[tokio::test]
    async fn a_hash_of_other_parameters_is_made_again() {
        let (old, new) = (keys(64, 1), keys(128, 1));
        let stored = old.hash_password("password-123").await.expect("a hash");
        assert!(!old.needs_rehash(&stored));
        assert!(new.needs_rehash(&stored));
        assert!(
            new.verify_password("password-123", Some(&stored)).await,
            "still verifies"
        );
        assert!(new.needs_rehash("not a hash"));
    }
}
