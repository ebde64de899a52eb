//! Provider faults, end to end: the real server against fake upstreams that script
//! failures. Each test name says the rule it checks.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::{ClientFormat, ErrorCode, Part};
use switchyard_testkit::{Reply, ReplyBody, Vendor, canned};

fn chat(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": text}]})
}

fn anthropic_msg(model: &str, text: &str, stream: bool) -> Value {
    json!({"model": model, "max_tokens": 256, "stream": stream, "messages": [{"role": "user", "content": text}]})
}

fn text_of(resp: &switchyard_protocol::Response) -> String {
    resp.content
        .iter()
        .filter_map(|p| if let Part::Text(t) = p { Some(t.text.as_str()) } else { None })
        .collect()
}

#[tokio::test]
async fn fails_over_on_5xx_and_records_both_attempts() {
    let h = Harness::start().await;
    h.openai.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "hello", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    assert!(
        r.headers()["x-gateway-route"].to_str().unwrap().contains("failover:openai->anthropic")
    );
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body = r.bytes().await.unwrap();
    assert_eq!(text_of(&decode_whole(ClientFormat::OpenAiChat, &body)), "echo: hello");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.provider.as_deref(), Some("openai"), "provider is the primary");
    assert_eq!(rec.served_provider.as_deref(), Some("anthropic"));
    assert_eq!(rec.upstream_model.as_deref(), Some("up-fallback"));
    let outcomes: Vec<_> =
        rec.attempts.iter().map(|a| (a.outcome.as_str(), a.kind.as_ref())).collect();
    assert_eq!(outcomes, [("status_500", "primary"), ("ok", "failover")]);
    assert_eq!(h.anthropic.received()[0].body["model"], "up-fallback");
}

#[tokio::test]
async fn fails_over_on_429_and_on_transport_failure() {
    let h = Harness::start().await;
    // The retry budget (one retry on 429 by default) is spent, then it fails over.
    h.openai.push_n(2, Reply::status(429).retry_after(0));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "x", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let outcomes: Vec<_> =
        rec.attempts.iter().map(|a| (a.outcome.as_str(), a.kind.as_ref())).collect();
    assert_eq!(outcomes, [("status_429", "primary"), ("status_429", "retry"), ("ok", "failover")]);

    // `dead` refuses connections; gemini serves.
    let r = h.post("/v1/chat/completions", &chat("m-dead-chain", "y", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "gemini");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.attempts[0].outcome, "transport_connect");
}

#[tokio::test]
async fn request_shaped_4xx_is_terminal_and_in_the_callers_format() {
    let h = Harness::start().await;
    h.openai.push(Reply::error(400, "messages: bad shape"));
    let r = h.post("/v1/messages", &anthropic_msg("m-chain", "x", false)).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["code"], "upstream_invalid_request");
    assert!(v["error"]["message"].as_str().unwrap().contains("messages: bad shape"));
    assert_eq!(h.anthropic.request_count(), 0, "nothing more is sent after a terminal 4xx");
}

#[tokio::test]
async fn all_candidates_failing_gives_one_error_in_the_callers_format() {
    let h = Harness::start().await;
    h.openai.push_n(2, Reply::status(503).retry_after(0));
    h.anthropic.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "x", false)).await;
    assert_eq!(r.status(), 503);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "upstream_overloaded");
    assert_eq!(v["error"]["type"], "api_error");
}

#[tokio::test]
async fn stream_fails_over_invisibly_before_the_first_content_event() {
    let h = Harness::start().await;
    // The OpenAI stream's first frame is the role chunk (no content); cut right after it.
    let ReplyBody::Sse(frames) = canned::text(Vendor::OpenAi, "up-primary", "never seen", true)
    else {
        panic!("canned stream is SSE")
    };
    h.openai.push(Reply::sse(frames).break_after(1));
    for format in [ClientFormat::Anthropic, ClientFormat::OpenAiChat] {
        if format == ClientFormat::OpenAiChat {
            h.openai.push(Reply::status(502));
        }
        let body = match format {
            ClientFormat::Anthropic => anthropic_msg("m-chain", "stream me", true),
            _ => chat("m-chain", "stream me", true),
        };
        let r = h.post(path(format), &body).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-gateway-provider"], "anthropic", "{format:?}");
        let bytes = r.bytes().await.unwrap();
        let resp = decode_stream(format, &bytes);
        assert_eq!(text_of(&resp), "echo: stream me", "{format:?}: only the fallback's content");
        assert!(!String::from_utf8_lossy(&bytes).contains("never seen"));
    }
}

#[tokio::test]
async fn an_event_that_never_ends_fails_the_attempt_at_the_cap() {
    let h = Harness::start().await;
    // `data:` lines and never the blank line that ends the event: past the 16 MiB
    // event cap (each line well under the line cap) the attempt fails, and the
    // next candidate serves.
    let line = format!("data: {}\n", "x".repeat(64 * 1024));
    h.openai.push(Reply::sse(vec![line; 260]));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "endless", true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let bytes = r.bytes().await.unwrap();
    assert_eq!(text_of(&decode_stream(ClientFormat::OpenAiChat, &bytes)), "echo: endless");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let outcomes: Vec<_> =
        rec.attempts.iter().map(|a| (a.outcome.as_str(), a.kind.as_ref())).collect();
    assert_eq!(outcomes, [("malformed", "primary"), ("ok", "failover")]);
}

#[tokio::test]
async fn stream_broken_after_first_content_ends_with_an_error_event_and_no_splice() {
    let h = Harness::start().await;
    let ReplyBody::Sse(frames) =
        canned::text(Vendor::OpenAi, "up-primary", "one two three four", true)
    else {
        panic!("canned stream is SSE")
    };
    // Role chunk, then content: break after the second content frame.
    h.openai.push(Reply::sse(frames.clone()).break_after(3));
    let r = h.post("/v1/messages", &anthropic_msg("m-chain", "x", true)).await;
    assert_eq!(r.status(), 200);
    let bytes = r.bytes().await.unwrap();
    let events = sse_events(&bytes);
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("error"), "Anthropic clients get `event: error`");
    let v: Value = serde_json::from_str(&last.data).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(h.anthropic.request_count(), 0, "no other provider's content is spliced in");

    h.openai.push(Reply::sse(frames).break_after(3));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "x", true)).await;
    let bytes = r.bytes().await.unwrap();
    let events = sse_events(&bytes);
    let v: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    assert!(v["error"]["code"].is_string(), "OpenAI clients get an error object: {v}");
    assert_eq!(h.anthropic.request_count(), 0);
}

#[tokio::test]
async fn first_byte_timeout_fails_over() {
    let h = Harness::start_with(Options { first_byte_ms: 300, ..Options::default() }).await;
    h.openai.push(Reply::hang());
    let r = h.post("/v1/chat/completions", &chat("m-chain", "slow", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.attempts[0].outcome, "transport_timeout");
}

#[tokio::test]
async fn client_disconnect_cancels_the_upstream_stream() {
    let h = Harness::start().await;
    let mut frames = vec![
        "data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"first\"}}]}\n\n".to_owned(),
    ];
    for _ in 0..200 {
        frames.push("data: {\"id\":\"c\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" more\"}}]}\n\n".to_owned());
    }
    h.openai.push(Reply::sse(frames).chunk_delay(Duration::from_millis(50)));
    let mut r = h.post("/v1/chat/completions", &chat("m-openai", "x", true)).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let first = tokio::time::timeout(WAIT, r.chunk()).await.unwrap().unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("first"));
    assert_eq!(h.openai.in_flight(), 1);
    drop(r);
    tokio::time::timeout(WAIT, h.openai.wait_idle()).await.expect("upstream call cancelled");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.status, 499);
    assert_eq!(rec.error_code.as_deref(), Some("client_closed_request"));
}

#[tokio::test]
async fn upstream_secrets_echoed_in_errors_never_reach_the_client_or_the_record() {
    let h = Harness::start().await;
    h.openai.push(Reply::error(401, format!("Incorrect API key provided: {OPENAI_KEY}")));
    let r = h.post("/v1/chat/completions", &chat("m-openai", "x", false)).await;
    assert_eq!(r.status(), 502, "an upstream 401 is the gateway's problem, not the client's key");
    let headers = format!("{:?}", r.headers());
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body = r.text().await.unwrap();
    assert!(body.contains("upstream_auth_failed"), "{body}");
    assert!(body.contains("[redacted]"), "{body}");
    for secret in [OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, GATEWAY_KEY] {
        assert!(!body.contains(secret));
        assert!(!headers.contains(secret));
    }
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let rec_json = serde_json::to_string(&rec).unwrap();
    for secret in [OPENAI_KEY, GATEWAY_KEY] {
        assert!(!rec_json.contains(secret), "{rec_json}");
    }
    assert!(rec.attempts[0].credential.as_deref().unwrap().starts_with("key-"));
}

#[tokio::test]
async fn provider_without_credentials_is_skipped_with_a_clear_error() {
    // The embedded default with no keys in the environment: OpenAI is disabled.
    let raw = switchyard_core::ConfigSource::embedded().parse_with(&|_| None).unwrap();
    let catalog = switchyard_core::Catalog::compile(&raw, "<embedded default>", &|_| None).unwrap();
    let sink = std::sync::Arc::new(switchyard_store::MemorySink::new(16));
    let gw = switchyard_core::Engine::new(catalog, sink).unwrap();
    let request = switchyard_protocol::openai_chat::parse_request(
        chat("gpt-6.2-sol", "x", false).to_string().as_bytes(),
    )
    .unwrap();
    let inbound = switchyard_core::Inbound::new(
        "req_t".into(),
        ClientFormat::OpenAiChat,
        request,
        Default::default(),
    );
    let err = gw.execute(inbound).await.unwrap_err();
    assert_eq!(err.status(), 503);
    assert_eq!(err.code(), ErrorCode::ProviderUnavailable);
    assert!(err.body().message.contains("OPENAI_API_KEY"), "{}", err.body().message);
}

#[tokio::test]
async fn client_disconnect_cancels_a_non_streaming_upstream_call() {
    let h = Harness::start().await;
    h.openai.push(Reply::hang());
    let client = common::client_builder().timeout(Duration::from_millis(300)).build().unwrap();
    let r = client
        .post(format!("{}/v1/chat/completions", h.base))
        .bearer_auth(GATEWAY_KEY)
        .body(chat("m-openai", "x", false).to_string())
        .send()
        .await;
    assert!(r.is_err(), "the client gave up");
    tokio::time::timeout(WAIT, h.openai.wait_for_requests(1)).await.unwrap();
    tokio::time::timeout(WAIT, h.openai.wait_idle()).await.expect("upstream call cancelled");
    let recs = tokio::time::timeout(WAIT, h.sink.wait_len(1)).await.unwrap();
    assert_eq!(recs[0].status, 499);
    assert_eq!(recs[0].error_code.as_deref(), Some("client_closed_request"));
}

#[tokio::test]
async fn retry_after_is_honoured_and_the_same_deployment_serves_the_retry() {
    let h = Harness::start().await;
    h.openai.push(Reply::status(503).retry_after(1));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "x", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "openai");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let outcomes: Vec<_> =
        rec.attempts.iter().map(|a| (a.outcome.as_str(), a.kind.as_ref())).collect();
    assert_eq!(outcomes, [("status_503", "primary"), ("ok", "retry")]);
    assert!(rec.attempts[1].latency_ms < rec.total_ms, "the wait is not part of the attempt");
    assert_eq!(h.anthropic.request_count(), 0);
}

#[tokio::test]
async fn a_retry_after_beyond_the_cap_fails_over_instead_of_waiting() {
    let h = Harness::start().await;
    h.openai.push(Reply::status(429).retry_after(3600));
    let r = h.post("/v1/chat/completions", &chat("m-chain", "x", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let kinds: Vec<_> = rec.attempts.iter().map(|a| a.kind.as_ref()).collect();
    assert_eq!(kinds, ["primary", "failover"], "no retry was attempted");
}

#[tokio::test]
async fn cost_uses_the_answering_deployments_prices_and_the_providers_markup() {
    let providers = "  marked: { wire: anthropic, endpoint: \"{anthropic}\", credentials: { keys: [sk-marked-0123456789] }, markup: 1.5 }\n";
    let extra = "  - id: m-marked\n    deployments: [{ provider: openai, model: up-a }, { provider: marked, model: up-b, pricing: { input: 2.0, output: 4.0 } }]\n    pricing: { input: 1.0, output: 1.0 }\n";
    let h = Harness::start_with(Options {
        providers_extra: providers.into(),
        extra_models: extra.into(),
        ..Options::default()
    })
    .await;
    h.openai.push(Reply::status(500));
    let r = h.post("/v1/chat/completions", &chat("m-marked", "x", false)).await;
    assert_eq!(r.headers()["x-gateway-provider"], "marked");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    // Anthropic fake: input 11 + cache 3 + 2 = 16 total, output 7; the regional price, x1.5.
    let u = rec.usage;
    assert_eq!((u.input_tokens, u.output_tokens), (Some(16), Some(7)));
    let expected = (11.0 * 2.0 + 3.0 * 2.0 + 2.0 * 2.0 + 7.0 * 4.0) / 1e6 * 1.5;
    let cost = rec.cost_usd.unwrap();
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    assert!(!rec.estimated);
}

#[tokio::test]
async fn a_deployment_without_any_usable_credential_is_skipped_and_recorded_in_the_descriptor() {
    let providers = "  nokey: { wire: openai-chat, endpoint: \"{openai}/v1\", credentials: { env: [SY_TEST_SURELY_UNSET_VAR], optional: true } }\n";
    let extra = "  - id: m-nokey-chain\n    deployments: [{ provider: nokey, model: up-x }, { provider: anthropic, model: up-y }]\n";
    let h = Harness::start_with(Options {
        providers_extra: providers.into(),
        extra_models: extra.into(),
        ..Options::default()
    })
    .await;
    let r = h.post("/v1/chat/completions", &chat("m-nokey-chain", "x", false)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    assert!(r.headers()["x-gateway-route"].to_str().unwrap().contains("no_credential:nokey"));
    assert_eq!(h.openai.request_count(), 0, "nothing was sent without a credential");
}

#[tokio::test]
async fn a_failed_attempt_that_reported_usage_is_costed_too() {
    let extra = "  - id: m-anth-chain\n    deployments: [{ provider: anthropic, model: up-a }, { provider: openai, model: up-b }]\n    pricing: { input: 1.0, output: 2.0 }\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    // Anthropic's stream reports usage in message_start, then breaks before any content.
    let ReplyBody::Sse(frames) = canned::text(Vendor::Anthropic, "up-a", "never seen", true) else {
        panic!("canned stream is SSE")
    };
    h.anthropic.push(Reply::sse(frames).break_after(1));
    let r = h.post("/v1/chat/completions", &chat("m-anth-chain", "x", true)).await;
    assert_eq!(r.headers()["x-gateway-provider"], "openai");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let _ = r.bytes().await.unwrap();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    let failed = &rec.attempts[0];
    assert_eq!(failed.outcome, "broken_stream");
    let reported = failed.usage.expect("the failed attempt's reported usage is kept");
    assert_eq!(reported.input_tokens, Some(16), "11 + 3 cache read + 2 cache write");
    let failed_cost = failed.cost_usd.expect("and costed");
    let served = (11.0 * 1.0 + 7.0 * 2.0) / 1e6;
    assert!(
        (rec.cost_usd.unwrap() - (served + failed_cost)).abs() < 1e-12,
        "{:?} vs {served} + {failed_cost}",
        rec.cost_usd
    );
}

/// Reasoning models stay silent for long stretches: a stream that is still
/// receiving is not cut by the request's total time, and while its upstream is
/// silent the client gets keep-alives in its own format (an SSE comment; for
/// Anthropic clients a `ping` event), translated or passed through.
#[tokio::test]
async fn long_silent_streams_survive_with_keepalives() {
    let h = Harness::start_with(Options {
        request_ms: 600,
        keepalive_ms: 100,
        idle_ms: 5000,
        ..Options::default()
    })
    .await;
    for (format, vendor) in [
        (ClientFormat::OpenAiChat, Vendor::OpenAi),
        (ClientFormat::Anthropic, Vendor::Anthropic),
        (ClientFormat::Anthropic, Vendor::OpenAi),
        (ClientFormat::OpenAiChat, Vendor::Anthropic),
    ] {
        let model = if vendor == Vendor::OpenAi { "m-openai" } else { "m-anthropic" };
        let ReplyBody::Sse(frames) = canned::text(vendor, model, "slow and steady answer", true)
        else {
            panic!("canned stream is SSE")
        };
        // Each pause is longer than the keep-alive interval; all of them together
        // longer than request_ms.
        h.fake(vendor).push(Reply::sse(frames).chunk_delay(Duration::from_millis(250)));
        let body = match format {
            ClientFormat::Anthropic => anthropic_msg(model, "x", true),
            _ => chat(model, "x", true),
        };
        let r = h.post(path(format), &body).await;
        assert_eq!(r.status(), 200);
        let bytes = r.bytes().await.unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let resp = decode_stream(format, &bytes);
        assert_eq!(text_of(&resp), "slow and steady answer", "{format:?}/{vendor:?}: {text}");
        match format {
            ClientFormat::Anthropic => assert!(text.contains("event: ping"), "{text}"),
            _ => assert!(text.contains(": keep-alive"), "{text}"),
        }
        assert!(!text.contains("deadline_exceeded"), "{text}");
    }
}

#[test]
fn stream_defaults_fit_agents() {
    let t = switchyard_core::config::raw::Timeouts::default();
    assert!(t.idle_ms >= 300_000, "five minutes of silence at least");
    assert_eq!(t.keepalive_ms, 15_000);
    let g = switchyard_core::config::raw::GatewaySettings::default();
    assert_eq!(g.shutdown_grace_secs, 600, "in-flight streams get ten minutes to finish");
}
