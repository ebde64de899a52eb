#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Bedrock through the real server, black box: requests signed with SigV4 over
//! their exact bytes (the fake recomputes the signature and refuses a wrong
//! one), and throttling failing over before the first byte. A caller's own
//! Bedrock API key: `admin.rs`; every format × scenario: `matrix.rs`.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{Reply, Vendor};

fn chat(model: &str, stream: bool) -> Value {
    let mut body = json!({
        "model": model,
        "stream": stream,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hello bedrock"}],
    });
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

#[tokio::test]
async fn a_chat_request_reaches_converse_signed_and_comes_back_in_chat_shape() {
    let h = Harness::start().await;
    for stream in [false, true] {
        let r = h.post("/v1/chat/completions", &chat("m-bedrock", stream)).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-gateway-provider"], "bedrock");
        let bytes = r.bytes().await.unwrap();
        let got = if stream {
            decode_stream(switchyard_protocol::ClientFormat::OpenAiChat, &bytes)
        } else {
            decode_whole(switchyard_protocol::ClientFormat::OpenAiChat, &bytes)
        };
        assert!(got.text().contains("hello bedrock"), "{stream}: {}", got.text());
        let usage = got.usage;
        assert!(usage.input_tokens.is_some() && usage.output_tokens.is_some(), "{usage:?}");
        let rx = h.bedrock.received().pop().unwrap();
        let action = if stream { "converse-stream" } else { "converse" };
        assert_eq!(
            rx.path,
            format!("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/{action}")
        );
        assert_eq!(rx.bedrock_model().as_deref(), Some(BEDROCK_MODEL));
        let auth = rx.header("authorization").unwrap();
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDFAKEBEDROCK/"), "{auth}");
        assert!(auth.contains("/us-east-1/bedrock/aws4_request"), "{auth}");
        assert!(rx.body.get("model").is_none(), "the model goes in the path only");
        assert_eq!(rx.body["inferenceConfig"]["maxTokens"], 64);
    }
}

#[tokio::test]
async fn a_wrong_signature_is_refused_by_the_fake_and_fails_the_request() {
    // The gateway signs with a secret the fake does not hold.
    let options = Options {
        providers_extra: r#"  bedrock-wrong:
    wire: bedrock
    endpoint: "{bedrock}"
    region: us-east-1
    credentials: { aws: { access_key_id: AKIDFAKEBEDROCK, secret_access_key: "not-the-secret" } }
"#
        .into(),
        extra_models: r#"  - id: m-bedrock-wrong
    deployments: [{ provider: bedrock-wrong, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" }]
"#
        .into(),
        ..Options::default()
    };
    let h = Harness::start_with(options).await;
    let r = h.post("/v1/chat/completions", &chat("m-bedrock-wrong", false)).await;
    assert_eq!(r.status(), 502);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "upstream_auth_failed", "{body}");
    assert!(!body.to_string().contains("not-the-secret"), "{body}");
    let rx = h.bedrock.received().pop().unwrap();
    assert!(rx.header("authorization").unwrap().starts_with("AWS4-HMAC-SHA256"));
}

#[tokio::test]
async fn bedrock_throttling_fails_over_before_the_first_byte() {
    let options = Options {
        extra_models: r#"  - id: m-bedrock-chain
    deployments: [{ provider: bedrock, model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0" }, { provider: anthropic, model: up-anthropic }]
"#
        .into(),
        ..Options::default()
    };
    let h = Harness::start_with(options).await;
    h.fake(Vendor::Bedrock).push(Reply::status(429));
    let r = h.post("/v1/chat/completions", &chat("m-bedrock-chain", true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.contains("failover:bedrock->anthropic"), "{route}");
    let _ = r.bytes().await.unwrap();
}
