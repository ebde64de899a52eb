//! How the gateway reaches its upstreams: TLS with the provider's own roots and
//! HTTP/2 by ALPN, a proxy from the configuration (a `CONNECT` tunnel to an
//! `https` upstream, an `http` one forwarded in absolute form, Basic
//! credentials) or from the environment (`HTTPS_PROXY`, `HTTP_PROXY`,
//! `NO_PROXY`). The real binary against the test kit's TLS fake and fake
//! proxy, synchronised on the gateway's log lines.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use switchyard_testkit::proxy::FakeProxy;
use switchyard_testkit::{FakeUpstream, Vendor};

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../testkit/data/tls/ca.pem");

/// A gateway with an OpenAI-compatible provider per `(name, endpoint, client
/// block)`, and a model of the same name on each.
fn config(providers: &[(&str, String, String)]) -> String {
    let mut yaml = String::from("storage: { url: none }\nproviders:\n");
    for (name, endpoint, client) in providers {
        yaml.push_str(&format!(
            "  {name}:\n    wire: openai-chat\n    endpoint: \"{endpoint}/v1\"\n    \
             credentials: {{ none: true }}\n    client: {client}\n"
        ));
    }
    yaml.push_str("models:\n");
    for (name, ..) in providers {
        yaml.push_str(&format!("  - id: {name}\n    deployments: [{{ provider: {name} }}]\n"));
    }
    yaml
}

fn listening(gw: &Gateway) -> String {
    let line = gw.wait_for("switchyard listening");
    line["fields"]["listen"].as_str().unwrap().to_owned()
}

/// A chat request for `model` through the gateway at `addr`: status and answer.
async fn chat(addr: &str, model: &str, stream: bool) -> (u16, String) {
    let body = serde_json::json!({
        "model": model,
        "stream": stream,
        "messages": [{ "role": "user", "content": "hello" }],
    })
    .to_string();
    let addr = addr.to_owned();
    tokio::task::spawn_blocking(move || post(&addr, "/v1/chat/completions", &body, &[]))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tls_upstream_is_reached_over_http2_with_the_providers_own_roots() {
    let fake = FakeUpstream::start_tls(Vendor::OpenAi).await.unwrap();
    let yaml = config(&[
        ("trusted", fake.base_url(), format!("{{ ca_file: \"{CA}\" }}")),
        ("untrusted", fake.base_url(), "{}".to_owned()),
    ]);
    let gw = Gateway::start_env("tls-h2", &[], Some(&yaml), &[]);
    let addr = listening(&gw);

    for stream in [false, true] {
        let (status, answer) = chat(&addr, "trusted", stream).await;
        assert_eq!(status, 200, "{answer}");
        if stream {
            assert!(answer.contains("data: [DONE]"), "{answer}");
        }
    }
    let received = fake.received();
    assert_eq!(received.len(), 2);
    // Both on HTTP/2, agreed by ALPN, on one pooled connection's streams.
    assert!(received.iter().all(|r| r.version == "HTTP/2.0"), "{received:?}");

    // The platform's roots alone do not know the test CA.
    let (status, answer) = chat(&addr, "untrusted", false).await;
    assert_eq!(status, 502, "{answer}");
    assert_eq!(fake.received().len(), 2, "a refused handshake sends nothing");
}

/// An HTTP/2 server takes so many streams per connection (the fake: hyper's
/// 200), and hyper-util's pool keeps one connection per origin: the requests
/// past the limit used to wait on it for a free stream. The provider's client
/// opens another connection instead (its lanes), so 300 requests held open at
/// once all reach the upstream.
#[tokio::test(flavor = "multi_thread")]
async fn requests_past_one_http2_connections_stream_limit_open_another() {
    use tokio::io::AsyncWriteExt;

    let fake = FakeUpstream::start_tls(Vendor::OpenAi).await.unwrap();
    fake.set_recording(false);
    fake.set_default(switchyard_testkit::Reply::hang());
    let yaml = config(&[("h2", fake.base_url(), format!("{{ ca_file: \"{CA}\" }}"))]);
    let gw = Gateway::start_env("h2-lanes", &[], Some(&yaml), &[]);
    let addr = listening(&gw);

    let body = r#"{"model":"h2","stream":true,"messages":[{"role":"user","content":"hold"}]}"#;
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    // Held open (never read) until the end of the test.
    let mut clients = Vec::new();
    for _ in 0..300 {
        let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
        c.write_all(request.as_bytes()).await.unwrap();
        clients.push(c);
    }
    let all = tokio::time::timeout(Duration::from_secs(60), fake.wait_for_requests(300)).await;
    assert!(all.is_ok(), "only {} of 300 requests reached the upstream", fake.request_count());
    drop(clients);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_proxy_tunnels_to_tls_and_forwards_plain_http_with_its_credentials() {
    let tls = FakeUpstream::start_tls(Vendor::OpenAi).await.unwrap();
    let plain = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let proxy = FakeProxy::start_with_auth("egress", "s3cret").await.unwrap();
    let via = proxy.url_with("egress", "s3cret");
    let wrong = proxy.url_with("egress", "guess");
    let yaml = config(&[
        ("tunnelled", tls.base_url(), format!("{{ ca_file: \"{CA}\", proxy: \"{via}\" }}")),
        ("forwarded", plain.base_url(), format!("{{ proxy: \"{via}\" }}")),
        ("refused", plain.base_url(), format!("{{ proxy: \"{wrong}\" }}")),
    ]);
    let gw = Gateway::start_env("proxy-config", &[], Some(&yaml), &[]);
    let addr = listening(&gw);

    for model in ["tunnelled", "forwarded"] {
        for stream in [false, true] {
            let (status, answer) = chat(&addr, model, stream).await;
            assert_eq!(status, 200, "{model}: {answer}");
        }
    }
    let seen = proxy.seen();
    let basic = "Basic ZWdyZXNzOnMzY3JldA==";
    let tls_host = tls.addr().to_string();
    let connects: Vec<_> = seen.iter().filter(|s| s.method == "CONNECT").collect();
    // One tunnel: the second request reuses the pooled connection through it.
    assert_eq!(connects.len(), 1, "{seen:?}");
    assert_eq!(connects[0].target, tls_host);
    assert_eq!(connects[0].authorization.as_deref(), Some(basic));
    let forwarded: Vec<_> = seen.iter().filter(|s| s.method == "POST").collect();
    assert_eq!(forwarded.len(), 2, "{seen:?}");
    for s in &forwarded {
        assert_eq!(s.target, format!("{}/v1/chat/completions", plain.base_url()));
        assert_eq!(s.authorization.as_deref(), Some(basic));
        assert!(s.allowed);
    }
    // The proxy's credentials stop at the proxy.
    for r in plain.received().iter().chain(tls.received().iter()) {
        assert_eq!(r.header("proxy-authorization"), None, "{r:?}");
    }
    assert_eq!((tls.received().len(), plain.received().len()), (2, 2));

    // Credentials the proxy refuses fail the attempt; the origin sees nothing.
    let (status, answer) = chat(&addr, "refused", false).await;
    assert_eq!(status, 502, "{answer}");
    assert!(!proxy.seen().last().unwrap().allowed);
    assert_eq!(plain.received().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_environments_proxy_variables_apply_and_no_proxy_bypasses_them() {
    let tls = FakeUpstream::start_tls(Vendor::OpenAi).await.unwrap();
    let plain = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let proxy = FakeProxy::start().await.unwrap();
    // The TLS fake by name (NO_PROXY covers it), the plain one by address.
    let direct = tls.base_url().replace("127.0.0.1", "localhost");
    let yaml = config(&[
        ("direct", direct, format!("{{ ca_file: \"{CA}\" }}")),
        ("proxied", plain.base_url(), "{}".to_owned()),
    ]);
    let vars = [
        ("HTTPS_PROXY", proxy.url()),
        ("HTTP_PROXY", proxy.url()),
        ("NO_PROXY", "localhost".to_owned()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let gw = Gateway::start_env("proxy-env", &[], Some(&yaml), &vars);
    let addr = listening(&gw);

    for model in ["direct", "proxied"] {
        let (status, answer) = chat(&addr, model, false).await;
        assert_eq!(status, 200, "{model}: {answer}");
    }
    let seen = proxy.seen();
    assert_eq!(seen.len(), 1, "only the proxied provider goes through it: {seen:?}");
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].target, format!("{}/v1/chat/completions", plain.base_url()));
    assert_eq!(tls.received().len(), 1);
}
