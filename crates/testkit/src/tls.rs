//! TLS for the fakes: the test PKI, and a fake served over TLS with HTTP/2 and
//! HTTP/1.1 offered by ALPN ([`crate::FakeUpstream::start_tls`]), as a real
//! provider's API is.
//!
//! The PKI (`data/tls`, made by its `gen.sh`): a CA, a server certificate for
//! `localhost` and `127.0.0.1`, and a client certificate (mTLS), all ECDSA
//! P-256 and valid for a hundred years. Test material only: the keys are public.

use std::sync::Arc;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The test CA's certificate, PEM: what a client trusts to reach a TLS fake.
pub const CA_PEM: &[u8] = include_bytes!("../data/tls/ca.pem");
/// The server certificate (`localhost`, `127.0.0.1`), PEM.
pub const SERVER_CERT_PEM: &[u8] = include_bytes!("../data/tls/server.pem");
/// The server certificate's key, PEM.
pub const SERVER_KEY_PEM: &[u8] = include_bytes!("../data/tls/server.key");
/// A client certificate issued by the test CA, PEM.
pub const CLIENT_CERT_PEM: &[u8] = include_bytes!("../data/tls/client.pem");
/// The client certificate's key, PEM.
pub const CLIENT_KEY_PEM: &[u8] = include_bytes!("../data/tls/client.key");

/// The fake's TLS setup: the server certificate, ring as the provider (none is
/// installed process-wide), ALPN `h2` then `http/1.1`.
fn server_config() -> Result<rustls::ServerConfig, String> {
    let chain = CertificateDer::pem_slice_iter(SERVER_CERT_PEM)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY_PEM).map_err(|e| e.to_string())?;
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(|e| e.to_string())?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Serves `app` on `listener` over TLS until `stop` fires: each connection's
/// handshake, then HTTP/2 or HTTP/1.1 as ALPN agreed.
pub(crate) fn serve(
    listener: TcpListener,
    app: Router,
    stop: watch::Receiver<()>,
) -> std::io::Result<()> {
    let config = server_config().map_err(std::io::Error::other)?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let until = stop.clone();
    accept_until(listener, stop, move |tcp| {
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        let mut stop = until.clone();
        tokio::spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::select! {
                _ = conn => {}
                _ = stop.changed() => {}
            }
        });
    });
    Ok(())
}

/// Hands each connection `listener` accepts to `serve`, in a task, until
/// `stop` fires (its sender is dropped).
pub(crate) fn accept_until(
    listener: TcpListener,
    mut stop: watch::Receiver<()>,
    serve: impl Fn(tokio::net::TcpStream) + Send + 'static,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    if let Ok((tcp, _)) = accepted {
                        serve(tcp);
                    }
                }
                _ = stop.changed() => return,
            }
        }
    });
}
