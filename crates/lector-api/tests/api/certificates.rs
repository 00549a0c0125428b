//! A TLS certificate renewed in place (certbot, an ACME client) is served to the next
//! connection without a restart; a renewal caught half-written is not, and the node goes on
//! serving the pair it had.

use crate::common::{Backend, TestApp};
use reqwest::Method;
use rustls::pki_types::{CertificateDer, ServerName};
use std::path::Path;
use std::sync::Arc;

/// The certificate a new connection to the app is served, by a client that trusts `trusted`
/// alone (the handshake fails on any other).
async fn served_certificate(app: &TestApp, trusted: &[u8]) -> Vec<u8> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from(trusted.to_vec())).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let address = app.base.trim_start_matches("https://");
    let tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("a handshake with the trusted certificate");
    let (_, session) = tls.get_ref();
    session.peer_certificates().expect("a certificate")[0].to_vec()
}

/// Writes a new self-signed pair at the paths; answers its certificate (DER).
fn write_pair(cert: &Path, key: &Path) -> Vec<u8> {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(key, made.signing_key.serialize_pem()).unwrap();
    std::fs::write(cert, made.cert.pem()).unwrap();
    made.cert.der().to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewed_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let first = write_pair(&cert, &key);
    let paths = (cert.clone(), key.clone());
    let Some(app) = TestApp::start_with(Backend::Sqlite, move |c| {
        c.tls_cert = Some(paths.0);
        c.tls_key = Some(paths.1);
    })
    .await
    else {
        return;
    };
    assert_eq!(served_certificate(&app, &first).await, first);

    let renewed = write_pair(&cert, &key);
    assert_ne!(renewed, first);
    assert_eq!(
        served_certificate(&app, &renewed).await,
        renewed,
        "the next connection gets the renewal"
    );

    // Half a renewal: a certificate whose key is not beside it yet.
    write_pair(&cert, &dir.path().join("other-key.pem"));
    assert_eq!(
        served_certificate(&app, &renewed).await,
        renewed,
        "a pair that does not match is not served"
    );
    app.call(Method::GET, "/health", None, None).await.expect(200);
}
