//! An upstream that misbehaves on purpose, or has been taken over: it redirects
//! the gateway elsewhere, trickles an error body, or answers with far more than
//! any answer needs. None of it reaches another host, holds a request past its
//! deadline, or grows the gateway's memory without bound.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::json;
use switchyard_testkit::{Reply, ReplyBody, Vendor, bedrock, canned};

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

/// A streamed text answer up to its first content, then an error event quoting
/// `key`, cut in two in the middle of the key; the halves 100 ms apart, so two
/// reads, the first forwarded before the second arrives unless the gateway holds
/// an event until it is whole.
fn split_error_stream(vendor: Vendor, model: &str, key: &str) -> Reply {
    let message = format!("invalid key {key}");
    let answer = canned::text(vendor, model, "first words of it", true);
    let delay = Duration::from_millis(100);
    if let ReplyBody::Frames(frames, content_type) = answer {
        // Bedrock's event stream: binary messages, the error an exception.
        let first = frames.iter().position(|f| contains(f, b"first")).unwrap();
        let error = bedrock::eventstream::exception("validationException", &message);
        let cut =
            error.windows(key.len()).position(|w| w == key.as_bytes()).unwrap() + key.len() / 2;
        let mut out = frames[..=first].to_vec();
        out.extend([error.slice(..cut), error.slice(cut..)]);
        return Reply::frames(out, content_type).chunk_delay(delay);
    }
    let ReplyBody::Sse(frames) = answer else { panic!("a streamed answer is SSE") };
    let first = frames.iter().position(|f| f.contains("first")).unwrap();
    let data = match vendor {
        Vendor::OpenAi => json!({"error": {"message": message, "type": "invalid_request_error"}}),
        Vendor::Anthropic => {
            json!({"type": "error", "error": {"type": "authentication_error", "message": message}})
        }
        Vendor::Gemini => {
            json!({"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED"}})
        }
        Vendor::Bedrock => unreachable!("Bedrock streams binary frames, handled above"),
    };
    let error = canned::sse_frame(vendor, "error", &data.to_string());
    let cut = error.find(key).unwrap() + key.len() / 2;
    let mut out: Vec<String> = frames[..=first].to_vec();
    out.extend([error[..cut].to_owned(), error[cut..].to_owned()]);
    Reply::sse(out).chunk_delay(delay)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn a_key_split_across_two_reads_is_redacted_on_every_pass_through_stream() {
    // Each model served under its own name, and OpenAI's usage asked for by the
    // client: the stream is forwarded byte for byte, not re-encoded by event. (No
    // client speaks Converse: Bedrock's streams are re-encoded, see below.)
    let h = Harness::start_with(Options {
        extra_models: ["openai", "anthropic", "gemini"]
            .map(|p| {
                format!(
                    "  - id: same-{p}\n    deployments: [{{ provider: {p}, model: same-{p} }}]\n"
                )
            })
            .concat(),
        ..Options::default()
    })
    .await;
    let chat = json!({"model": "same-openai", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "x"}]});
    let messages = json!({"model": "same-anthropic", "stream": true, "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]});
    let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]});
    let cases = [
        (Vendor::OpenAi, "same-openai", OPENAI_KEY, "/v1/chat/completions", chat),
        (Vendor::Anthropic, "same-anthropic", ANTHROPIC_KEY, "/v1/messages", messages),
        (
            Vendor::Gemini,
            "same-gemini",
            GEMINI_KEY,
            "/v1beta/models/same-gemini:streamGenerateContent?alt=sse",
            gemini,
        ),
    ];
    for (vendor, model, key, path, body) in cases {
        h.fake(vendor).push(split_error_stream(vendor, model, key));
        let r = h.post(path, &body).await;
        assert_eq!(r.status(), 200, "{vendor:?}");
        let text = r.text().await.unwrap();
        assert!(text.contains("first"), "{vendor:?}: the content before the error arrived: {text}");
        assert!(text.contains("[redacted]"), "{vendor:?}: the error reached the client: {text}");
        for part in [key, &key[..key.len() / 2], &key[key.len() / 2..]] {
            assert!(!text.contains(part), "{vendor:?}: {part} reached the client: {text}");
        }
    }
}

#[tokio::test]
async fn invalid_utf8_from_an_upstream_is_replaced_on_the_pass_through_path() {
    let h = Harness::start().await;
    let chunk = |content: &[u8]| {
        let mut out = br#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"up-openai","choices":[{"index":0,"delta":{"role":"assistant","content":""#.to_vec();
        out.extend_from_slice(content);
        out.extend_from_slice(b"\"},\"finish_reason\":null}]}\n\n");
        out
    };
    let mut stream = chunk(b"bad \xff\xfe byte");
    stream.extend_from_slice(br#"data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"up-openai","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#);
    stream.extend_from_slice(b"\n\ndata: [DONE]\n\n");
    h.openai.push(Reply::raw(stream, "text/event-stream"));
    let body = json!({"model": "m-openai", "stream": true, "messages": [{"role": "user", "content": "x"}]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let bytes = r.bytes().await.unwrap();
    let text = std::str::from_utf8(&bytes).expect("the client gets valid UTF-8");
    assert!(text.contains("bad \u{fffd}\u{fffd} byte"), "{text}");

    let mut whole = br#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"up-openai","choices":[{"index":0,"message":{"role":"assistant","content":"bad "#.to_vec();
    whole.extend_from_slice(b"\xff byte\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2,\"total_tokens\":3}}");
    h.openai.push(Reply::raw(whole, "application/json"));
    let body = json!({"model": "m-openai", "messages": [{"role": "user", "content": "x"}]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let v: serde_json::Value = r.json().await.expect("valid UTF-8 JSON");
    assert_eq!(v["choices"][0]["message"]["content"], "bad \u{fffd} byte");
}

/// Bedrock's stream is never passed through (no client speaks Converse): it is
/// decoded and re-encoded. An exception after the first content, its two halves
/// in two reads, reaches a client of every format as an error after that content;
/// a whole answer's error as an error status.
#[tokio::test]
async fn a_bedrock_exception_quoting_the_secret_reaches_every_format_as_an_error() {
    let h = Harness::start().await;
    let chat = json!({"model": "m-bedrock", "messages": [{"role": "user", "content": "x"}]});
    let messages = json!({"model": "m-bedrock", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]});
    let responses = json!({"model": "m-bedrock", "input": "x"});
    let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "x"}]}]});
    let cases = [
        ("/v1/chat/completions", chat.clone()),
        ("/v1/messages", messages),
        ("/v1/responses", responses),
        ("/v1beta/models/m-bedrock:streamGenerateContent?alt=sse", gemini),
    ];
    let key = BEDROCK_SECRET;
    for (path, body) in &cases {
        let mut body = body.clone();
        if !path.starts_with("/v1beta") {
            body["stream"] = json!(true);
        }
        h.bedrock.push(split_error_stream(Vendor::Bedrock, BEDROCK_MODEL, key));
        let r = h.post(path, &body).await;
        assert_eq!(r.status(), 200, "{path}");
        let text = r.text().await.unwrap();
        let first = text.find("first").unwrap_or_else(|| panic!("{path}: no content: {text}"));
        let error = text.find("validationException").unwrap_or_else(|| {
            panic!("{path}: the exception did not reach the client as an error: {text}")
        });
        assert!(first < error, "{path}: the content before the error: {text}");
        // The provider's AWS secret key is among the secrets redacted.
        assert!(text.contains("[redacted]"), "{path}: {text}");
        for part in [key, &key[..key.len() / 2], &key[key.len() / 2..]] {
            assert!(!text.contains(part), "{path}: {part} reached the client: {text}");
        }
    }
    // A whole answer: Bedrock's error body, its type in `x-amzn-ErrorType`.
    h.bedrock.push(Reply::error(400, format!("invalid key {key}")));
    let r = h.post("/v1/chat/completions", &chat).await;
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    assert!((400..600).contains(&status), "{status}: {text}");
    assert!(text.contains("invalid key"), "the upstream's word reaches the client: {text}");
    assert!(!text.contains(key), "{text}");
}
