//! The TLS certificate: the configured one, or a self-signed one created on first start and
//! kept in the data directory so clients can pin it across restarts.

use lector_core::config::Config;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::PathBuf;
use std::sync::Arc;

/// The rustls configuration for the listener, with HTTP/2 and HTTP/1.1 offered by ALPN.
pub fn server_config(config: &Config) -> Result<Arc<ServerConfig>, String> {
    let (cert_path, key_path) = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        _ => ensure_self_signed(config)?,
    };
    let certs = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("certificate {}: {e}", cert_path.display()))?;
    let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| format!("key {}: {e}", key_path.display()))?;
    let mut server = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls certificate: {e}"))?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(server))
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
