//! A model name cannot steer the upstream URL, black box: with unlisted models
//! allowed and a `gemini-*` route to the Gemini fake, names that would climb the
//! path, add a query string or smuggle an encoded slash are refused with 400
//! `invalid_model` in the caller's format, and nothing reaches the fake; legitimate
//! unlisted names go through, their model percent-encoded in the path.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};

/// The attacks of the report, as an OpenAI or Anthropic client writes them in the
/// body (a Gemini client's path form is below).
const HOSTILE: [&str; 4] = [
    "gemini-x/../../../v1beta/files#",
    "gemini-x?key=injected&",
    "gemini-x%2F..%2F..%2Fv1beta%2Fcachedcontents",
    "gemini-x/../cachedcontents",
];

async fn harness() -> Harness {
    Harness::start_with(Options {
        gateway_extra: "  allow_unlisted_models: true".into(),
        routes:
            "routes:\n  - name: gemini unlisted\n    match: \"gemini-*\"\n    provider: gemini\n"
                .into(),
        ..Options::default()
    })
    .await
}

fn chat(model: &str, stream: bool) -> Value {
    json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

fn gemini_body() -> Value {
    json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
}

/// `POST /v1beta/models/{path}` with the gateway key, `path` written as given
/// (already percent-encoded where the test means it to be).
async fn gemini_post(h: &Harness, path: &str) -> (u16, Value) {
    let r = h
        .client
        .post(format!("{}/v1beta/models/{path}", h.base))
        .header("x-goog-api-key", GATEWAY_KEY)
        .header("content-type", "application/json")
        .body(gemini_body().to_string())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn hostile_model_names_in_a_body_are_refused_before_any_upstream_call() {
    let h = harness().await;
    for model in HOSTILE {
        for stream in [false, true] {
            let r = h.post("/v1/chat/completions", &chat(model, stream)).await;
            assert_eq!(r.status(), 400, "{model}");
            let v: Value = r.json().await.unwrap();
            assert_eq!(v["error"]["code"], "invalid_model", "{model}: {v}");
        }
        let body = json!({"model": model, "max_tokens": 16,
            "messages": [{"role": "user", "content": "hi"}]});
        let r = h.post("/v1/messages", &body).await;
        assert_eq!(r.status(), 400, "{model}");
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["type"], "error", "Anthropic's shape: {v}");
    }
    assert_eq!(h.upstream_requests(), 0, "nothing reached an upstream");
}

#[tokio::test]
async fn hostile_model_names_in_a_gemini_path_are_refused_before_any_upstream_call() {
    let h = harness().await;
    // axum decodes the path: `%2F` arrives as `/`, `%3F` as `?`, `%23` as `#`.
    for path in [
        "gemini-x%2F..%2F..%2F..%2Fv1beta%2Ffiles%23:generateContent",
        "gemini-x%3Fkey=injected&:generateContent",
        "gemini-x%2F..%2F..%2Fv1beta%2Fcachedcontents:generateContent",
        "models/gemini-x%2F..%2Fcachedcontents:streamGenerateContent?alt=sse",
        "gemini-x%2F..%2F..%2Fv1beta%2Fcachedcontents:countTokens",
        "gemini-x%252F..%252Fcachedcontents:generateContent",
    ] {
        let (status, v) = gemini_post(&h, path).await;
        assert_eq!(status, 400, "{path}: {v}");
        assert_eq!(v["error"]["status"], "INVALID_ARGUMENT", "Google's shape: {path}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("not a valid model name"), "{v}");
    }
    assert_eq!(h.gemini.request_count(), 0, "nothing reached the Gemini fake");
    assert_eq!(h.upstream_requests(), 0);
}

#[tokio::test]
async fn legitimate_unlisted_models_still_go_through() {
    let h = harness().await;
    let r = h.post("/v1/chat/completions", &chat("gemini-x", false)).await;
    assert_eq!(r.status(), 200);
    let (status, _) = gemini_post(&h, "gemini-x:generateContent").await;
    assert_eq!(status, 200);
    // A `/` the rule allows is still encoded where the model sits in the path.
    let r = h.post("/v1/chat/completions", &chat("gemini-x/y", false)).await;
    assert_eq!(r.status(), 200);
    let paths: Vec<String> = h.gemini.received().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v1beta/models/gemini-x:generateContent",
            "/v1beta/models/gemini-x:generateContent",
            "/v1beta/models/gemini-x%2Fy:generateContent",
        ]
    );
}
