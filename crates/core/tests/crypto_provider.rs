//! A gateway leaves the process-wide TLS crypto provider alone: an application
//! that builds one, sends through it, then installs its own default provider,
//! succeeds. Its own test binary, so that no other test has installed one first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use switchyard_core::embed::{ClientIdentity, ClientOptions, Gateway, Generate, Model, Provider};
use switchyard_core::protocol::{Message, Request, Role};

const CA: &[u8] = switchyard_testkit::tls::CA_PEM;
const CLIENT_CERT: &[u8] = switchyard_testkit::tls::CLIENT_CERT_PEM;
const CLIENT_KEY: &[u8] = switchyard_testkit::tls::CLIENT_KEY_PEM;

#[tokio::test]
async fn building_a_gateway_and_sending_through_it_installs_no_crypto_provider() {
    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    // An https upstream that accepts and hangs up: the client really starts a
    // TLS handshake (with its extra roots and client certificate) before failing.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("https://{}/v1", listener.local_addr().unwrap());
    let upstream = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        drop(tcp);
    });
    let options = ClientOptions::default()
        .ca_pem(CA)
        .identity(ClientIdentity::from_pem(CLIENT_CERT, CLIENT_KEY))
        .pool_max_idle_per_host(4);
    let gateway = Gateway::builder()
        .provider("tls", Provider::openai_compatible(endpoint).no_key().client(options))
        .model(Model::new("m").deployment("tls", "up"))
        .build()
        .unwrap();
    let request = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    };
    let sent =
        tokio::time::timeout(Duration::from_secs(10), gateway.generate(Generate::new(request)));
    assert!(sent.await.unwrap().is_err(), "the upstream hung up");
    upstream.await.unwrap();

    assert!(rustls::crypto::CryptoProvider::get_default().is_none());
    // Ring stands in for the application's own choice (aws-lc-rs, say): any
    // install succeeds only if nothing was installed before it.
    let installed = rustls::crypto::ring::default_provider().install_default();
    assert!(installed.is_ok(), "the gateway installed a process-wide provider");
}
