//! TLS to a database source, negotiated by the relay rather than by sqlx: PostgreSQL's
//! SSLRequest, then a rustls handshake (ring) naming the credential's host.
//!
//! The relay must see the protocol's plain bytes to bound them, so the encryption ends in the
//! relay and sqlx speaks plain text to it over the private socket. `verify-full` checks the
//! certificate against the system's trusted roots and the host name; `require` takes any
//! certificate but still checks that the server holds its key. Nothing here reads a `PG*`
//! variable: no root file, client certificate or key of this server's own is ever used.

use super::{SslMode, Target};
use lector_core::{Error, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// PostgreSQL's SSLRequest: length 8, then the code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// Asks the server for TLS and makes the handshake `target.ssl` calls for (not `Disable`).
pub(super) async fn negotiate(mut tcp: TcpStream, target: &Target) -> Result<TlsStream<TcpStream>> {
    tcp.write_all(&SSL_REQUEST).await.map_err(|e| super::io_error(&e))?;
    match tcp.read_u8().await.map_err(|e| super::io_error(&e))? {
        b'S' => {}
        b'N' => {
            return Err(Error::bad_request(
                "the server does not offer TLS; use sslmode=disable only where plain text is acceptable",
            ));
        }
        _ => return Err(Error::bad_request("the server does not speak the PostgreSQL protocol")),
    }
    let name = ServerName::try_from(target.host.clone())
        .map_err(|_| Error::bad_request("the database's host is not a name a certificate can carry"))?;
    TlsConnector::from(client_config(target.ssl))
        .connect(name, tcp)
        .await
        .map_err(|e| handshake_error(&e))
}

fn client_config(mode: SslMode) -> Arc<ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let config = if mode == SslMode::Require {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate { provider }))
            .with_no_client_auth()
    } else {
        builder.with_root_certificates(trusted_roots()).with_no_client_auth()
    };
    Arc::new(config)
}

/// The system's trusted roots, read once per process.
fn trusted_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for e in &found.errors {
                tracing::warn!(error = %e, "a trusted root certificate could not be read");
            }
            let mut roots = RootCertStore::empty();
            roots.add_parsable_certificates(found.certs);
            Arc::new(roots)
        })
        .clone()
}

/// A failed handshake's reason, from rustls's own verdict (never the server's words).
fn handshake_error(e: &std::io::Error) -> Error {
    tracing::info!(error = %e, "the TLS handshake with a database source failed");
    match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName)) => {
            Error::bad_request("the database's certificate is not valid for its host name (sslmode=verify-full)")
        }
        Some(rustls::Error::InvalidCertificate(_)) => Error::bad_request(
            "the database's certificate is not trusted (sslmode=verify-full needs one from a trusted authority)",
        ),
        _ => Error::bad_request("the TLS handshake with the database failed"),
    }
}

/// `sslmode=require`: any certificate, as libpq takes it, but the handshake's signatures are
/// still checked, so the server must hold the key of the certificate it shows.
#[derive(Debug)]
struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
