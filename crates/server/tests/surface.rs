//! The HTTP surface: auth, limits, model listing, health, HTTP/2,
//! graceful shutdown, the mock provider. Errors must come in the caller's format
//! and nothing may be sent upstream when a request is refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_core::{Catalog, ConfigSource, Engine};
use switchyard_protocol::{ClientFormat, Part};
use switchyard_testkit::{Reply, ReplyBody, Vendor, canned};

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

fn anthropic(model: &str) -> Value {
    json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]})
}

async fn raw_post(
    h: &Harness,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
) -> reqwest::Response {
    let mut req =
        h.client.post(format!("{}{path}", h.base)).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(body).send().await.unwrap()
}

#[tokio::test]
async fn gateway_key_is_accepted_in_all_three_headers() {
    let h = Harness::start().await;
    // The auth scheme is case-insensitive (RFC 9110 §11.1).
    let bearers = ["Bearer", "bearer", "BEARER", "bEaReR"].map(|s| format!("{s} {GATEWAY_KEY}"));
    let headers = bearers
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .chain([("x-api-key", GATEWAY_KEY), ("x-goog-api-key", GATEWAY_KEY)]);
    for (name, value) in headers {
        let r =
            raw_post(&h, "/v1/chat/completions", &[(name, value)], chat("mock").to_string()).await;
        assert_eq!(r.status(), 200, "{name}: {value}");
    }
}

#[tokio::test]
async fn bad_or_missing_key_is_401_in_the_callers_format_and_nothing_is_sent() {
    let h = Harness::start().await;
    let r = raw_post(
        &h,
        "/v1/messages",
        &[("x-api-key", "sk-wrong-key-000000")],
        anthropic("m-openai").to_string(),
    )
    .await;
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "authentication_error");
    assert_eq!(v["error"]["code"], "invalid_api_key");

    let r = raw_post(&h, "/v1/chat/completions", &[], chat("m-openai").to_string()).await;
    assert_eq!(r.status(), 401);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "authentication_error");
    assert_eq!(v["error"]["code"], "missing_api_key");

    let r =
        raw_post(&h, "/v1/responses", &[], json!({"model": "m-openai", "input": "x"}).to_string())
            .await;
    assert_eq!(r.status(), 401);
    assert_eq!(h.upstream_requests(), 0);
}

#[tokio::test]
async fn limits_refuse_in_the_callers_format_before_anything_is_sent() {
    let h = Harness::start_with(Options { max_body_bytes: 4096, ..Options::default() }).await;
    let big = json!({"model": "m-openai", "max_tokens": 8, "messages": [{"role": "user", "content": "x".repeat(5000)}]});
    let r = h.post("/v1/messages", &big).await;
    assert_eq!(r.status(), 413);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["type"], "request_too_large");

    let mut deep = String::new();
    for _ in 0..40 {
        deep.push('[');
    }
    for _ in 0..40 {
        deep.push(']');
    }
    let body = format!(
        r#"{{"model":"m-openai","messages":[{{"role":"user","content":"x"}}],"metadata":{deep}}}"#
    );
    let r = raw_post(
        &h,
        "/v1/chat/completions",
        &[("authorization", &format!("Bearer {GATEWAY_KEY}"))],
        body,
    )
    .await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "json_too_deep");

    for (model, code) in [
        ("x".repeat(300), "invalid_model"),
        ("gpt\u{7}5".to_owned(), "invalid_model"),
        ("no-such-model".to_owned(), "model_not_found"),
    ] {
        let r = h.post("/v1/chat/completions", &chat(&model)).await;
        assert!(r.status() == 400 || r.status() == 404, "{model}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], code, "{model}");
    }
    let r = h
        .post("/v1/chat/completions", &json!({"model": "m-openai", "messages": "not a list"}))
        .await;
    assert_eq!(r.status(), 400);
    assert_eq!(h.upstream_requests(), 0, "nothing was sent upstream");
}

#[tokio::test]
async fn model_list_shows_visible_models_only_in_both_shapes() {
    let h = Harness::start().await;
    let r = h
        .client
        .get(format!("{}/v1/models", h.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "list");
    let ids: Vec<&str> =
        v["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"m-openai") && ids.contains(&"mock-echo"));
    assert!(!ids.contains(&"m-hidden"), "hidden models are served but never listed");
    let m = v["data"].as_array().unwrap().iter().find(|m| m["id"] == "m-anthropic").unwrap();
    assert_eq!(m["switchyard"]["pricing"]["cache_write"], 3.75, "the prices the meter uses");

    let r = h
        .client
        .get(format!("{}/v1/models", h.base))
        .header("x-api-key", GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["data"][0]["type"], "model");
    assert_eq!(v["has_more"], false);

    let r = h.client.get(format!("{}/v1/models", h.base)).send().await.unwrap();
    assert_eq!(r.status(), 401);

    // The hidden model is still served.
    let r = h.post("/v1/chat/completions", &chat("m-hidden")).await;
    assert_eq!(r.status(), 200);
}

/// The ids `GET /v1/models` lists at `base` for `key` (none: no key sent).
async fn listed(client: &reqwest::Client, base: &str, key: Option<&str>) -> Vec<String> {
    let mut req = client.get(format!("{base}/v1/models"));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let r = tokio::time::timeout(WAIT, req.send()).await.unwrap().unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    v["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_owned()).collect()
}

/// A model whose every deployment is on a provider without a key would answer only
/// 503: it is not listed. One its route sends to a provider with a key, or one that
/// falls back to a served model, is.
#[tokio::test]
async fn model_list_leaves_out_models_no_provider_has_a_key_for() {
    let h = Harness::start_with(Options {
        providers_extra: r#"  keyless: { wire: openai-chat, endpoint: "{openai}/v1", credentials: { env: [SWITCHYARD_TEST_NEVER_SET], optional: true } }
"#
        .to_owned(),
        extra_models: r#"  - id: m-keyless
    deployments: [{ provider: keyless, model: up-keyless }]
  - id: m-keyless-routed
    deployments: [{ provider: keyless, model: up-keyless }]
  - id: m-keyless-falls-back
    deployments: [{ provider: keyless, model: up-keyless }]
    fallbacks: [m-openai]
"#
        .to_owned(),
        routes: "routes:\n  - { name: via-openai, match: m-keyless-routed, provider: openai, model: up-openai }\n"
            .to_owned(),
        ..Options::default()
    })
    .await;
    assert!(h.state.gateway.snapshot().catalog.provider("keyless").unwrap().unavailable.is_some());
    let ids = listed(&h.client, &h.base, Some(GATEWAY_KEY)).await;
    assert!(!ids.iter().any(|id| id == "m-keyless"), "{ids:?}");
    for id in [
        "m-openai",
        "m-anthropic",
        "m-gemini",
        "mock-echo",
        "m-keyless-routed",
        "m-keyless-falls-back",
    ] {
        assert!(ids.iter().any(|x| x == id), "{id} missing from {ids:?}");
    }
    // Unlisted, it is still what it was: a 503, and nothing sent upstream.
    let r = h.post("/v1/chat/completions", &chat("m-keyless")).await;
    assert_eq!(r.status(), 503);
    assert_eq!(h.upstream_requests(), 0);
}

/// The embedded default on a machine with no provider key lists the free mock
/// models only (chat, embeddings, images), not the OpenAI, Anthropic and Google
/// models it cannot serve.
#[tokio::test]
async fn embedded_default_without_keys_lists_only_the_mock() {
    let raw = ConfigSource::embedded().parse_with(&|_| None).unwrap();
    let catalog = Catalog::compile(&raw, "<embedded default>", &|_| None).unwrap();
    let sink = std::sync::Arc::new(switchyard_store::MemorySink::new(10));
    let gateway = std::sync::Arc::new(Engine::new(catalog, sink).unwrap());
    let state = switchyard_server::AppState::new(gateway);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(switchyard_server::serve(listener, state, async move {
        let _ = rx.await;
    }));
    // The embedded default without SWITCHYARD_API_KEY is an open gateway.
    assert_eq!(
        listed(&common::client(), &base, None).await,
        ["mock-echo", "mock-embed", "mock-image", "mock-video"]
    );
    let _ = tx.send(());
}

#[tokio::test]
async fn health_and_readiness() {
    let h = Harness::start().await;
    for p in ["/healthz", "/readyz"] {
        let r = h.client.get(format!("{}{p}", h.base)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{p}");
    }
    let r = h.client.get(format!("{}/v1/nope", h.base)).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "not_found");
}

#[tokio::test]
async fn serves_http2_with_prior_knowledge() {
    let h = Harness::start().await;
    let client = common::client_builder().http2_prior_knowledge().build().unwrap();
    let r = client
        .post(format!("{}/v1/chat/completions", h.base))
        .bearer_auth(GATEWAY_KEY)
        .body(chat("mock").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.version(), reqwest::Version::HTTP_2);
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn graceful_shutdown_lets_in_flight_streams_finish() {
    let mut h = Harness::start().await;
    let ReplyBody::Sse(frames) = canned::text(Vendor::OpenAi, "up-openai", "a b c d e f", true)
    else {
        panic!("canned stream is SSE")
    };
    let n = frames.len();
    h.openai.push(Reply::sse(frames).chunk_delay(Duration::from_millis(30)));
    let mut r = h.post("/v1/chat/completions", &json!({"model": "m-openai", "stream": true, "messages": [{"role": "user", "content": "x"}]})).await;
    let first = tokio::time::timeout(WAIT, r.chunk()).await.unwrap().unwrap().unwrap();
    h.shutdown();
    let mut body = first.to_vec();
    while let Some(chunk) = tokio::time::timeout(WAIT, r.chunk()).await.unwrap().unwrap() {
        body.extend_from_slice(&chunk);
    }
    let resp = decode_stream(ClientFormat::OpenAiChat, &body);
    let text: String = resp
        .content
        .iter()
        .filter_map(|p| if let Part::Text(t) = p { Some(t.text.clone()) } else { None })
        .collect();
    assert_eq!(text, "a b c d e f", "the stream of {n} frames finished after shutdown began");
    let server = h.server.take().unwrap();
    tokio::time::timeout(WAIT, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test]
async fn mock_provider_streams_in_every_client_format() {
    let h = Harness::start().await;
    for format in [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic]
    {
        let body = match format {
            // A Chat stream carries usage only when asked, as OpenAI's do.
            ClientFormat::OpenAiChat => {
                json!({"model": "mock", "stream": true, "stream_options": {"include_usage": true},
                       "messages": [{"role": "user", "content": "ping pong"}]})
            }
            ClientFormat::OpenAiResponses => {
                json!({"model": "mock", "stream": true, "input": "ping pong"})
            }
            ClientFormat::Anthropic => {
                json!({"model": "mock", "stream": true, "max_tokens": 10, "messages": [{"role": "user", "content": "ping pong"}]})
            }
            ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
        };
        let r = h.post(path(format), &body).await;
        assert_eq!(r.status(), 200, "{format:?}");
        assert_eq!(r.headers()["content-type"], "text/event-stream");
        let resp = decode_stream(format, &r.bytes().await.unwrap());
        assert!(
            matches!(&resp.content[..], [Part::Text(t)] if t.text == "echo: ping pong"),
            "{format:?}: {resp:?}"
        );
        assert!(resp.usage.input_tokens.is_some(), "{format:?}");
    }
}

#[tokio::test]
async fn images_are_never_sent_to_a_model_without_vision() {
    let extra = "  - id: m-text-only\n    deployments: [{ provider: openai, model: up-text }]\n    capabilities: [tools]\n  - id: m-text-then-vision\n    deployments: [{ provider: openai, model: up-text }]\n    capabilities: [tools]\n    fallbacks: [m-anthropic]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let image = |model: &str| {
        json!({"model": model, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
        ]}]})
    };
    let r = h.post("/v1/chat/completions", &image("m-text-only")).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "capability_missing");
    assert!(v["error"]["message"].as_str().unwrap().contains("vision"));
    assert_eq!(h.upstream_requests(), 0);

    // With a vision-capable fallback model, the image goes there instead.
    let r = h.post("/v1/chat/completions", &image("m-text-then-vision")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let seen = h.anthropic.received();
    assert_eq!(seen[0].body["messages"][0]["content"][1]["type"], "image");
    assert_eq!(h.openai.request_count(), 0);

    // Text-only requests still use the text model.
    let r = h.post("/v1/chat/completions", &chat("m-text-only")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "openai");
}

/// An error quotes what it refused, but only the start of it: a 1 MB model name
/// must not come back as a 1 MB error body.
#[tokio::test]
async fn refusals_quote_a_huge_input_only_in_part() {
    let h = Harness::start_with(Options { max_body_bytes: 4 << 20, ..Options::default() }).await;
    let huge = "m".repeat(1 << 20);
    for (path, body) in [
        ("/v1/chat/completions", chat(&huge)),
        ("/v1/messages", anthropic(&huge)),
        ("/v1/responses", json!({"model": huge, "input": "x"})),
    ] {
        let r = h.post(path, &body).await;
        assert_eq!(r.status(), 400, "{path}");
        let text = r.text().await.unwrap();
        assert!(text.len() < 2048, "{path}: a {} byte error", text.len());
        let v: Value = serde_json::from_str(&text).unwrap();
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains("mmmm\u{2026}"), "{path}: {message}");
    }
    let r = h
        .client
        .get(format!("{}/v1/models/{}", h.base, "m".repeat(8 << 10)))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.text().await.unwrap().len() < 2048);
    assert_eq!(h.upstream_requests(), 0);
}

/// A request without a key, as an open gateway serves it; `headers` added.
async fn keyless(h: &Harness, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = h.client.post(format!("{}{path}", h.base)).header("content-type", "text/plain");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.body(chat("m-openai").to_string()).send().await.unwrap()
}

/// The port the harness listens on.
fn port(h: &Harness) -> &str {
    h.base.rsplit_once(':').unwrap().1
}

/// Open mode (no key anywhere) serves local clients, but not a web page: not one
/// at a rebound DNS name (Host), nor a simple cross-origin POST (Origin). Nothing
/// refused reaches an upstream.
#[tokio::test]
async fn open_mode_serves_local_clients_and_refuses_browsers() {
    let h = Harness::start_with(Options { open: true, ..Options::default() }).await;
    let localhost = format!("localhost:{}", port(&h));
    let v6 = format!("[::1]:{}", port(&h));
    // Addressed by IP (reqwest's own Host), by localhost, by an IPv6 literal.
    for host in [None, Some(localhost.as_str()), Some(v6.as_str())] {
        let headers: Vec<(&str, &str)> = host.map(|h| ("host", h)).into_iter().collect();
        let r = keyless(&h, "/v1/chat/completions", &headers).await;
        assert_eq!(r.status(), 200, "{host:?}");
    }
    let served = h.upstream_requests();
    assert_eq!(served, 3);

    let rebound = format!("evil.example:{}", port(&h));
    for (headers, code) in [
        (vec![("host", rebound.as_str())], "host_not_allowed"),
        (vec![("origin", "https://evil.example")], "origin_not_allowed"),
        (vec![("origin", "null")], "origin_not_allowed"),
        (
            vec![("host", rebound.as_str()), ("origin", "http://evil.example:8080")],
            "host_not_allowed",
        ),
    ] {
        let r = keyless(&h, "/v1/chat/completions", &headers).await;
        assert_eq!(r.status(), 403, "{headers:?}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["error"]["code"], code, "{headers:?}");
        assert_eq!(v["error"]["type"], "permission_error", "{v}");
    }
    // In the caller's format where it says which, on every route.
    let r = keyless(
        &h,
        "/v1/messages",
        &[("anthropic-version", "2023-06-01"), ("origin", "https://evil.example")],
    )
    .await;
    assert_eq!(r.status(), 403);
    let v: Value = r.json().await.unwrap();
    assert_eq!(
        (v["type"].as_str(), v["error"]["code"].as_str()),
        (Some("error"), Some("origin_not_allowed"))
    );
    // Health probes tell a page nothing and come from load balancers under any name.
    for (path, status) in
        [("/v1/models", 403), ("/metrics", 403), ("/healthz", 200), ("/readyz", 200)]
    {
        let r = h
            .client
            .get(format!("{}{path}", h.base))
            .header("host", &rebound)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), status, "{path}");
    }
    assert_eq!(h.upstream_requests(), served, "nothing refused was sent upstream");
}

/// Hosts and origins the operator lists are served in open mode.
#[tokio::test]
async fn open_mode_serves_the_configured_hosts_and_origins() {
    let h = Harness::start_with(Options {
        open: true,
        gateway_extra: "  allowed_hosts: [gateway.internal]\n  allowed_origins: [\"https://app.example.com\"]\n".into(),
        ..Options::default()
    })
    .await;
    let named = format!("Gateway.Internal:{}", port(&h));
    for headers in [
        vec![("host", named.as_str())],
        vec![("origin", "https://app.example.com")],
        vec![("host", named.as_str()), ("origin", "https://app.example.com")],
    ] {
        let r = keyless(&h, "/v1/chat/completions", &headers).await;
        assert_eq!(r.status(), 200, "{headers:?}");
    }
    let r =
        keyless(&h, "/v1/chat/completions", &[("origin", "https://app.example.com.evil.example")])
            .await;
    assert_eq!(r.status(), 403);
}

/// With a key configured the key decides: any Host, and an Origin on a plain
/// request, are the caller's business.
#[tokio::test]
async fn a_keyed_gateway_leaves_hosts_and_origins_to_the_key() {
    let h = Harness::start().await;
    let bearer = format!("Bearer {GATEWAY_KEY}");
    let headers = [
        ("authorization", bearer.as_str()),
        ("host", "gateway.example.com"),
        ("origin", "https://evil.example"),
    ];
    assert_eq!(keyless(&h, "/v1/chat/completions", &headers).await.status(), 200);
    let r = keyless(&h, "/v1/chat/completions", &headers[1..]).await;
    assert_eq!(r.status(), 401);
    assert_eq!(h.upstream_requests(), 1);
}

/// With a key configured, `/metrics` on the gateway's address needs one; the
/// metrics address serves it (and nothing else) without.
#[tokio::test]
async fn metrics_need_a_key_unless_served_on_their_own_address() {
    let h = Harness::start().await;
    let get = |base: String, key: Option<&'static str>| {
        let mut req = h.client.get(format!("{base}/metrics"));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send()
    };
    assert_eq!(get(h.base.clone(), None).await.unwrap().status(), 401);
    assert_eq!(get(h.base.clone(), Some("sk-wrong-key-000000")).await.unwrap().status(), 401);
    assert_eq!(get(h.base.clone(), Some(GATEWAY_KEY)).await.unwrap().status(), 200);

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let metrics_base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(switchyard_server::serve_metrics(listener, h.state.clone(), async {
        let _ = stopped.await;
    }));
    let r = get(metrics_base.clone(), None).await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("gateway_requests_in_flight"));
    let r = h
        .client
        .get(format!("{metrics_base}/v1/models"))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = h
        .client
        .post(format!("{metrics_base}/v1/chat/completions"))
        .bearer_auth(GATEWAY_KEY)
        .body(chat("m-openai").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Keyless, it holds browsers to what open mode allows them.
    let r = h
        .client
        .get(format!("{metrics_base}/metrics"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(h.upstream_requests(), 0);
    let _ = stop.send(());
    tokio::time::timeout(WAIT, server).await.unwrap().unwrap().unwrap();
}
