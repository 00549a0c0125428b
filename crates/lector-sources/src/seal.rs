//! Sealing credential secrets at rest: ChaCha20-Poly1305 under one key from the configuration,
//! or a key generated once and kept in the data directory, readable by its owner only.
//!
//! A sealed secret is `v1.` followed by base64url(nonce ‖ ciphertext ‖ tag). The workspace and
//! the kind of source are bound in as associated data, so a sealed secret copied into another
//! workspace's row, or relabelled as another kind, no longer opens.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use lector_core::config::Config;
use lector_core::{Error, Result, SourceKind};
use rand::RngCore;
use sha2::{Digest, Sha256};
use std::fmt;
use std::path::Path;

const VERSION: &str = "v1.";
const NONCE_BYTES: usize = 12;
/// Name of the generated key file in the data directory.
pub const KEY_FILE: &str = "credential.key";

/// The key credential secrets are sealed with. Never printed.
#[derive(Clone)]
pub struct SealKey(Key);

impl fmt::Debug for SealKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealKey([redacted])")
    }
}

impl SealKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(Key::from(bytes))
    }

    /// The configured `credential_key` (hashed to 256 bits), or the key kept in the data
    /// directory, created with 256 random bits on first use.
    pub fn load(config: &Config) -> Result<Self, String> {
        if let Some(secret) = &config.credential_key {
            return Ok(Self::from_bytes(Sha256::digest(secret.expose().as_bytes()).into()));
        }
        load_or_create(&config.data_dir.join(KEY_FILE))
    }

    /// Encrypts a secret for one workspace and kind of source.
    pub fn seal(&self, workspace_id: i64, kind: SourceKind, plaintext: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rng().fill_bytes(&mut nonce);
        let aad = associated_data(workspace_id, kind);
        let sealed = ChaCha20Poly1305::new(&self.0)
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: plaintext,
                    aad: &aad,
                },
            )
            .expect("ChaCha20-Poly1305 encrypts any message below 256 GiB");
        let mut bytes = nonce.to_vec();
        bytes.extend_from_slice(&sealed);
        format!("{VERSION}{}", URL_SAFE_NO_PAD.encode(bytes))
    }

    /// Decrypts a sealed secret; anything altered, or sealed under another key, workspace or
    /// kind, is refused.
    pub fn open(&self, workspace_id: i64, kind: SourceKind, sealed: &str) -> Result<Vec<u8>> {
        let refused = || {
            tracing::warn!(workspace.id = workspace_id, "a credential secret does not open");
            Error::bad_request(
                "the credential cannot be opened with this server's key (was the key changed?); create it again",
            )
        };
        let bytes = sealed
            .strip_prefix(VERSION)
            .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
            .filter(|b| b.len() > NONCE_BYTES)
            .ok_or_else(refused)?;
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let nonce: [u8; NONCE_BYTES] = nonce.try_into().map_err(|_| refused())?;
        let aad = associated_data(workspace_id, kind);
        ChaCha20Poly1305::new(&self.0)
            .decrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map_err(|_| refused())
    }
}

fn associated_data(workspace_id: i64, kind: SourceKind) -> Vec<u8> {
    format!("lector credential; workspace {workspace_id}; {kind}").into_bytes()
}

fn load_or_create(path: &Path) -> Result<SealKey, String> {
    if let Ok(text) = std::fs::read_to_string(path) {
        let bytes: [u8; 32] = URL_SAFE_NO_PAD
            .decode(text.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| format!("{} does not hold a 256-bit key in base64url", path.display()))?;
        return Ok(SealKey::from_bytes(bytes));
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    write_private(path, URL_SAFE_NO_PAD.encode(bytes).as_bytes())?;
    tracing::info!(key = %path.display(), "created the key that seals credential secrets");
    Ok(SealKey::from_bytes(bytes))
}

/// Writes a secret file readable by its owner only (mode 0600); never overwrites one. The
/// service's other secrets at rest (its TLS key, its signing keys) are written through it too.
pub fn write_private(path: &Path, contents: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    file.write_all(contents).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lector_core::config::Secret;

    fn key() -> SealKey {
        SealKey::from_bytes([7; 32])
    }

    #[test]
    fn round_trip_and_fresh_nonces() {
        let secret = br#"{"url":"postgres://u:pw@db/x"}"#;
        let a = key().seal(3, SourceKind::Postgres, secret);
        let b = key().seal(3, SourceKind::Postgres, secret);
        assert_ne!(a, b, "every seal takes a fresh nonce");
        assert!(!a.contains("pw@db"));
        assert_eq!(key().open(3, SourceKind::Postgres, &a).unwrap(), secret);
    }

    #[test]
    fn tampering_and_misuse_are_refused() {
        let sealed = key().seal(3, SourceKind::S3, b"secret");
        assert!(key().open(4, SourceKind::S3, &sealed).is_err(), "another workspace");
        assert!(key().open(3, SourceKind::Http, &sealed).is_err(), "another kind");
        assert!(
            SealKey::from_bytes([8; 32]).open(3, SourceKind::S3, &sealed).is_err(),
            "another key"
        );
        let body = sealed.strip_prefix(VERSION).unwrap();
        for i in 0..body.len() {
            let mut flipped: Vec<char> = body.chars().collect();
            flipped[i] = if flipped[i] == 'A' { 'B' } else { 'A' };
            let altered = format!("{VERSION}{}", flipped.into_iter().collect::<String>());
            assert!(key().open(3, SourceKind::S3, &altered).is_err(), "byte {i} altered");
        }
        for bad in ["", "v1.", "v2.AAAA", &sealed[..sealed.len() - 4]] {
            let err = key().open(3, SourceKind::S3, bad).unwrap_err();
            assert_eq!(err.status(), 400);
        }
    }

    #[test]
    fn keys_come_from_the_config_or_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let first = SealKey::load(&config).unwrap();
        let sealed = first.seal(1, SourceKind::Http, b"x");
        let again = SealKey::load(&config).unwrap();
        assert_eq!(again.open(1, SourceKind::Http, &sealed).unwrap(), b"x");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let configured = Config {
            credential_key: Some(Secret::new("k".repeat(40))),
            ..config
        };
        let other = SealKey::load(&configured).unwrap();
        assert!(other.open(1, SourceKind::Http, &sealed).is_err());
        assert_eq!(format!("{other:?}"), "SealKey([redacted])");
    }
}
