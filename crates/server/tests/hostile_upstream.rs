//! An upstream that misbehaves on purpose, or has been taken over: it redirects
//! the gateway elsewhere, trickles an error body, or answers with far more than
//! any answer needs. None of it reaches another host, holds a request past its
//! deadline, or grows the gateway's memory without bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use switchyard_testkit::Reply;

fn chat(model: &str) -> serde_json::Value {
    json!({"model": model, "messages": [{"role": "user", "content": "x"}]})
}

#[tokio::test]
async fn a_redirect_is_never_followed_and_fails_over() {
    let h = Harness::start().await;
    // The "other host" is the Gemini fake: a request there would carry the
    // prompt and, on a same-name header, a key.
    let elsewhere = format!("{}/v1/chat/completions", h.gemini.base_url());
    for status in [301, 302, 307, 308] {
        h.openai.push(Reply::status(status).with_header("location", elsewhere.clone()));
        let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
        assert_eq!(r.status(), 200, "served by the next deployment after a {status}");
        assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
        let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
        assert_eq!(rec.attempts[0].outcome, format!("redirect_{status}"), "the record says so");
    }
    assert!(h.gemini.received().is_empty(), "nothing went to the redirect's target");

    // With nowhere else to go, the client hears of it in its own format.
    h.openai.push(Reply::status(307).with_header("location", elsewhere));
    let r = h.post("/v1/chat/completions", &chat("m-openai")).await;
    assert_eq!(r.status(), 502);
    let body = r.text().await.unwrap();
    assert!(body.contains("redirect"), "{body}");
    assert!(h.gemini.received().is_empty());
}

#[tokio::test]
async fn an_error_body_that_trickles_is_cut_at_the_deadline() {
    let h = Harness::start_with(Options { request_ms: 1000, ..Options::default() }).await;
    // The body's two halves an hour apart: only the deadline ends the read.
    h.openai.push(Reply::status(500).chunk_delay(Duration::from_secs(3600)));
    let r = tokio::time::timeout(WAIT, h.post("/v1/chat/completions", &chat("m-openai")))
        .await
        .expect("answered at the request's deadline, not when the body ends");
    assert!(r.status().is_server_error(), "{}", r.status());
}

#[tokio::test]
async fn a_whole_answer_larger_than_the_cap_fails_the_attempt() {
    let h = Harness::start_with(Options {
        gateway_extra: "  max_response_bytes: 4096".into(),
        ..Options::default()
    })
    .await;
    let huge = "x".repeat(64 * 1024);
    let answer = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "up-primary",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": huge}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    });
    h.openai.push(Reply::json(answer));
    let r = h.post("/v1/chat/completions", &chat("m-chain")).await;
    assert_eq!(r.status(), 200, "the next deployment serves it");
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.attempts[0].outcome, "malformed");
}

/// Secrets outside `credentials.keys`: a configured credential header and the
/// endpoint's userinfo (sent as Basic credentials).
const HEADER_SECRET: &str = "hdr-secret-5b1e0c7d9a";
const USER_PASSWORD: &str = "pw-2f8a61c4e9";

fn echo_options() -> Options {
    Options {
        providers_extra: format!(
            "  echo: {{ wire: openai-chat, endpoint: \"http://svc:{USER_PASSWORD}@{{openai_authority}}/v1\", \
             headers: {{ api-key: \"{HEADER_SECRET}\" }}, credentials: {{ none: true }} }}"
        ),
        extra_models: "  - id: m-echo\n    deployments: [{ provider: echo, model: up-echo }]"
            .into(),
        ..Options::default()
    }
}

#[tokio::test]
async fn secrets_in_headers_and_userinfo_are_redacted_from_every_echo() {
    use base64::Engine as _;
    let h = Harness::start_with(echo_options()).await;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("svc:{USER_PASSWORD}"));
    let echo =
        format!("api-key {HEADER_SECRET}; authorization Basic {basic}; password {USER_PASSWORD}");
    let stream_error =
        format!("data: {}\n\n", json!({"error": {"message": echo, "type": "server_error"}}));
    let replies = [
        Reply::error(400, echo.clone()),
        Reply::error(500, echo.clone()),
        Reply::sse(vec![stream_error]),
    ];
    for (n, reply) in replies.into_iter().enumerate() {
        h.openai.push(reply);
        let stream = n == 2;
        let body = json!({"model": "m-echo", "stream": stream, "messages": [{"role": "user", "content": "x"}]});
        let r = h.post("/v1/chat/completions", &body).await;
        let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
        let text = r.text().await.unwrap();
        assert!(text.contains("[redacted]"), "case {n}: {text}");
        let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
        let rec = format!("{rec:?}");
        for secret in [HEADER_SECRET, USER_PASSWORD, basic.as_str()] {
            assert!(!text.contains(secret), "case {n}: {secret} reached the client: {text}");
            assert!(!rec.contains(secret), "case {n}: {secret} reached the record");
        }
    }
    // They were sent, so the test shows what it means to.
    let sent = &h.openai.received()[0];
    assert_eq!(sent.header("api-key"), Some(HEADER_SECRET));
    assert_eq!(sent.header("authorization"), Some(format!("Basic {basic}").as_str()));
}
