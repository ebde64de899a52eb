#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::time::Duration;

use super::*;
use crate::embed::{Gateway, Provider};
use crate::upstream::ProviderRuntime;

// The test PKI (crates/testkit/data/tls/gen.sh): a CA, a server certificate for
// 127.0.0.1 and a client certificate, both issued by it.
const CA: &[u8] = switchyard_testkit::tls::CA_PEM;
const SERVER_CERT: &[u8] = switchyard_testkit::tls::SERVER_CERT_PEM;
const SERVER_KEY: &[u8] = switchyard_testkit::tls::SERVER_KEY_PEM;
const CLIENT_CERT: &[u8] = switchyard_testkit::tls::CLIENT_CERT_PEM;
const CLIENT_KEY: &[u8] = switchyard_testkit::tls::CLIENT_KEY_PEM;

const WAIT: Duration = Duration::from_secs(10);

fn client_identity() -> ClientIdentity {
    ClientIdentity::from_pem(CLIENT_CERT, CLIENT_KEY)
}

#[test]
fn the_tls_config_offers_http2_then_http1() {
    // The client takes the config as it is: without these, every TLS upstream
    // would be spoken to in HTTP/1.1.
    let config = tls_config(&ClientOptions::default()).unwrap();
    assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    assert!(!config.client_auth_cert_resolver.has_certs());
    let with_identity = ClientOptions::default().ca_pem(CA).identity(client_identity());
    let config = tls_config(&with_identity).unwrap();
    assert_eq!(config.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    assert!(config.client_auth_cert_resolver.has_certs());
}

#[test]
fn roots_are_every_certificate_of_a_pem() {
    let two = [CA, SERVER_CERT].concat();
    assert_eq!(roots(&two).unwrap().len(), 2);
    assert_eq!(roots(b"hello").unwrap_err(), "no CERTIFICATE block in it");
    assert_eq!(roots(CLIENT_KEY).unwrap_err(), "no CERTIFICATE block in it");
    let broken = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
    assert!(roots(broken).unwrap_err().starts_with("not PEM"), "{:?}", roots(broken));
}

#[test]
fn an_identity_needs_a_certificate_and_the_key_that_belongs_to_it() {
    check_identity(&client_identity()).unwrap();
    let err = |cert: &[u8], key: &[u8]| {
        check_identity(&ClientIdentity::from_pem(cert, key)).unwrap_err().to_string()
    };
    assert_eq!(err(CLIENT_KEY, CLIENT_KEY), "client certificate: no CERTIFICATE block in it");
    assert_eq!(err(CLIENT_CERT, CLIENT_CERT), "client key: no PRIVATE KEY block in it");
    assert_eq!(
        err(CLIENT_CERT, SERVER_KEY),
        "client key: does not belong to the client certificate (the chain's first)"
    );
}

#[test]
fn a_proxy_is_an_http_or_https_url_with_a_host_and_nothing_after() {
    for ok in ["http://proxy:3128", "https://proxy.internal", "http://u:p%40ss@10.0.0.1:8080/"] {
        check_proxy(ok).unwrap();
    }
    let err = |url: &str| check_proxy(url).unwrap_err();
    assert!(err("socks5://proxy:1080").contains("must be http:// or https://"));
    assert!(err("proxy:3128").contains("http:// or https://"), "{}", err("proxy:3128"));
    assert!(err("http://proxy:3128/path").contains("host[:port] alone"));
    assert!(err("http://proxy:3128?x=1").contains("host[:port] alone"));
    assert!(err("not a url").contains("is not a URL"));
    // Its password never appears in a message.
    let shown = err("ftp://user:hunter2@proxy");
    assert!(!shown.contains("hunter2") && shown.contains("user:****"), "{shown}");
}

#[test]
fn debug_output_shows_neither_the_key_nor_the_proxy_password() {
    let options = ClientOptions::default()
        .ca_pem(CA)
        .identity(client_identity())
        .proxy("http://user:hunter2@proxy:3128");
    let shown = format!("{options:?}");
    let key = std::str::from_utf8(CLIENT_KEY).unwrap().lines().nth(1).unwrap();
    assert!(!shown.contains("hunter2") && !shown.contains(key), "{shown}");
    assert!(shown.contains("user:****@proxy:3128"), "{shown}");
}

/// What the test server saw of the client's handshake.
#[derive(Debug)]
struct Seen {
    alpn: Option<Vec<u8>>,
    client_cert: Option<Vec<u8>>,
}

/// A TLS server on 127.0.0.1 that requires a client certificate issued by the
/// test CA, completes one handshake, reports what it saw and closes.
async fn tls_server() -> (u16, tokio::task::JoinHandle<Result<Seen, String>>) {
    let crypto = crypto();
    let mut client_roots = rustls::RootCertStore::empty();
    client_roots.add_parsable_certificates(roots(CA).unwrap());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(client_roots),
        Arc::clone(&crypto),
    )
    .build()
    .unwrap();
    let chain = certificates(SERVER_CERT).unwrap();
    let key = PrivateKeyDer::from_pem_slice(SERVER_KEY).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(crypto)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (tcp, _) = tokio::time::timeout(WAIT, listener.accept())
            .await
            .map_err(|_| "no connection".to_owned())?
            .map_err(|e| e.to_string())?;
        let mut tcp = tcp.into_std().map_err(|e| e.to_string())?;
        tcp.set_nonblocking(false).map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(WAIT)).map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(move || {
            let mut conn =
                rustls::ServerConnection::new(Arc::new(config)).map_err(|e| e.to_string())?;
            while conn.is_handshaking() {
                conn.complete_io(&mut tcp).map_err(|e| e.to_string())?;
            }
            conn.send_close_notify();
            while conn.wants_write() {
                conn.write_tls(&mut tcp).map_err(|e| e.to_string())?;
            }
            let _ = tcp.flush();
            Ok(Seen {
                alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
                client_cert: conn.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec()),
            })
        })
        .await
        .map_err(|e| e.to_string())?
    });
    (port, server)
}

/// The runtime (its HTTP client) the gateway builds for a provider at `port`
/// shaped by `options`.
fn runtime(port: u16, options: ClientOptions) -> ProviderRuntime {
    let provider = Provider::openai_compatible(format!("https://127.0.0.1:{port}/v1"))
        .no_key()
        .client(options);
    let catalog = Gateway::builder().provider("p", provider).compile().unwrap();
    ProviderRuntime::new(&catalog.settings, catalog.provider("p").unwrap()).unwrap()
}

/// A `GET /` of the TLS server at `port`.
fn get(port: u16) -> http::Request<http_body_util::Full<bytes::Bytes>> {
    http::Request::get(format!("https://127.0.0.1:{port}/")).body(Default::default()).unwrap()
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut shown = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        shown.push_str(&format!(": {s}"));
        source = s.source();
    }
    shown
}

#[tokio::test]
async fn a_provider_client_trusts_its_ca_presents_its_certificate_and_offers_http2() {
    let (port, server) = tls_server().await;
    let rt = runtime(port, ClientOptions::default().ca_pem(CA).identity(client_identity()));
    // The server closes after the handshake: the request itself fails.
    let _ = tokio::time::timeout(WAIT, rt.client.send(get(port))).await.unwrap();
    let seen = tokio::time::timeout(WAIT, server).await.unwrap().unwrap().unwrap();
    assert_eq!(seen.alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(seen.client_cert, Some(certificates(CLIENT_CERT).unwrap()[0].to_vec()));
}

#[tokio::test]
async fn without_its_ca_a_provider_client_refuses_the_server() {
    let (port, server) = tls_server().await;
    let rt = runtime(port, ClientOptions::default().identity(client_identity()));
    let send = rt.client.send(get(port));
    let err = tokio::time::timeout(WAIT, send).await.unwrap().unwrap_err();
    assert!(chain(&err).contains("UnknownIssuer"), "{}", chain(&err));
    assert!(tokio::time::timeout(WAIT, server).await.unwrap().unwrap().is_err());
}
