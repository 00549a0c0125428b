//! The TLS certificate: the configured one, or a self-signed one created on first start and
//! kept in the data directory so clients can pin it across restarts.
//!
//! The pair is read again when its files change ([`CertificateFiles`]): a certificate renewed
//! in place (certbot, any ACME client, an operator's copy) is served to the next connection
//! without a restart. A renewal caught half-written is not served; the pair in use stays until
//! the files change again.

use lector_core::config::Config;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

/// The rustls configuration for the listener, with HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn server_config(config: &Config) -> Result<Arc<ServerConfig>, String> {
    let (cert_path, key_path) = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => ensure_self_signed(config)?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let files = CertificateFiles::open(cert_path, key_path, provider.clone())?;
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(files));
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(server))
}

/// The certificate and key files, and the pair last read from them.
#[derive(Debug)]
pub struct CertificateFiles {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    /// What the files looked like when last read (or found unreadable).
    seen: Option<(Stamp, Stamp)>,
    pair: Arc<CertifiedKey>,
}

/// A file's modification time and length.
type Stamp = (SystemTime, u64);

impl CertificateFiles {
    /// Reads the pair; refuses to start without a valid one.
    pub fn open(cert_path: PathBuf, key_path: PathBuf, provider: Arc<CryptoProvider>) -> Result<Self, String> {
        let seen = stamps(&cert_path, &key_path);
        let pair = Arc::new(read_pair(&cert_path, &key_path, &provider)?);
        Ok(Self {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Loaded { seen, pair }),
        })
    }

    /// The pair to serve: read again first when the files have changed since the last look
    /// (two `stat`s a handshake otherwise).
    pub fn pair(&self) -> Arc<CertifiedKey> {
        let seen = stamps(&self.cert_path, &self.key_path);
        {
            let current = self.current.read().unwrap_or_else(|e| e.into_inner());
            if current.seen == seen || seen.is_none() {
                return current.pair.clone();
            }
        }
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if current.seen != seen {
            current.seen = seen;
            match read_pair(&self.cert_path, &self.key_path, &self.provider) {
                Ok(pair) => {
                    tracing::info!(certificate = %self.cert_path.display(), "read the renewed TLS certificate");
                    current.pair = Arc::new(pair);
                }
                Err(error) => {
                    tracing::warn!(%error, "the changed TLS files do not make a pair; serving the previous one")
                }
            }
        }
        current.pair.clone()
    }
}

impl ResolvesServerCert for CertificateFiles {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.pair())
    }
}

/// Both files' stamps; `None` while either cannot be read (a renewal replacing them).
fn stamps(cert: &Path, key: &Path) -> Option<(Stamp, Stamp)> {
    let stamp = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    };
    Some((stamp(cert)?, stamp(key)?))
}

/// The certificate chain and its key, checked to belong together.
fn read_pair(cert_path: &Path, key_path: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, String> {
    let certs = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("certificate {}: {e}", cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_file(key_path).map_err(|e| format!("key {}: {e}", key_path.display()))?;
    let pair = CertifiedKey::from_der(certs, key, provider).map_err(|e| format!("tls certificate: {e}"))?;
    Ok(pair)
}

/// The paths of the self-signed pair, creating it when absent.
fn ensure_self_signed(config: &Config) -> Result<(PathBuf, PathBuf), String> {
    let dir = config.data_dir.join("tls");
    let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
    if cert_path.exists() && key_path.exists() {
        return Ok((cert_path, key_path));
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // Half a pair (a start that stopped between the two files, or a certificate removed to have
    // it made again) is made anew: a key without its certificate serves nothing.
    match std::fs::remove_file(&key_path) {
        Ok(()) => tracing::warn!(key = %key_path.display(), "the TLS key had no certificate; making a new pair"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", key_path.display())),
    }
    let mut names = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    if let Some((host, _)) = config.listen.rsplit_once(':') {
        let host = host.trim_matches(['[', ']']).to_owned();
        if !names.contains(&host) && host != "0.0.0.0" && host != "::" {
            names.push(host);
        }
    }
    let generated = rcgen::generate_simple_self_signed(names).map_err(|e| format!("self-signed certificate: {e}"))?;
    lector_sources::seal::write_private(&key_path, generated.signing_key.serialize_pem().as_bytes())?;
    // Whole or not at all: written beside, then renamed into place.
    let partial = dir.join("cert.pem.partial");
    std::fs::write(&partial, generated.cert.pem())
        .and_then(|()| std::fs::rename(&partial, &cert_path))
        .map_err(|e| format!("{}: {e}", cert_path.display()))?;
    tracing::info!(certificate = %cert_path.display(), "created a self-signed TLS certificate");
    Ok((cert_path, key_path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair missing its certificate (or its key) is made anew, and serves.
    #[test]
    fn half_a_self_signed_pair_is_made_anew() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            data_dir: dir.path().to_owned(),
            ..Config::default()
        };
        let (cert, key) = ensure_self_signed(&config).unwrap();
        let first_key = std::fs::read(&key).unwrap();
        std::fs::remove_file(&cert).unwrap();
        server_config(&config).expect("a new pair");
        assert!(cert.exists());
        assert_ne!(
            std::fs::read(&key).unwrap(),
            first_key,
            "a new key beside the new certificate"
        );
        std::fs::remove_file(&key).unwrap();
        server_config(&config).expect("a new pair again");
    }
}
