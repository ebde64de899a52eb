#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Bedrock through the real server, black box: requests signed with SigV4 over
//! their exact bytes (the fake recomputes the signature and refuses a wrong
//! one), and throttling failing over before the first byte; Claude's own body
//! through InvokeModel (`bedrock-anthropic`). A caller's own Bedrock API key:
//! `admin.rs`; every format × scenario: `matrix.rs`.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::bedrock::{eventstream, invoke};
use switchyard_testkit::{Reply, Vendor, canned, vertex};

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

/// A `bedrock-anthropic` provider on the harness's Bedrock fake, its model
/// `m-invoke` (and `m-invoke-chain`, failing over to Anthropic), with `extra`
/// provider lines.
fn invoke_options(extra: &str) -> Options {
    Options {
        providers_extra: format!(
            "  bedrock-claude:\n    wire: bedrock-anthropic\n    endpoint: \"{{bedrock}}\"\n    \
             region: us-east-1\n{extra}    credentials: {{ aws: {{ access_key_id: \
             {BEDROCK_ACCESS_KEY_ID}, secret_access_key: \"{BEDROCK_SECRET}\" }} }}\n"
        ),
        extra_models: format!(
            "  - id: m-invoke\n    deployments: [{{ provider: bedrock-claude, model: \
             \"{BEDROCK_MODEL}\" }}]\n  - id: m-invoke-chain\n    deployments: [{{ provider: \
             bedrock-claude, model: \"{BEDROCK_MODEL}\" }}, {{ provider: anthropic, model: \
             up-anthropic }}]\n  - id: \"{BEDROCK_MODEL}\"\n    deployments: [{{ provider: \
             bedrock-claude, model: \"{BEDROCK_MODEL}\" }}]\n"
        ),
        ..Options::default()
    }
}

fn invoke_path(action: &str) -> String {
    format!("/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/{action}")
}

#[tokio::test]
async fn a_claude_clients_own_body_goes_through_invoke_model_with_its_flags_in_the_body() {
    let h = Harness::start_with(invoke_options("")).await;
    for stream in [false, true] {
        let body = json!({
            "model": "m-invoke",
            "max_tokens": 64,
            "stream": stream,
            "messages": [{"role": "user", "content": "my own body"}],
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        });
        let betas = "context-management-2025-06-27,claude-code-20250219";
        let r = h.post_with("/v1/messages", &body, &[("anthropic-beta", betas)]).await;
        let status = r.status();
        let bytes = r.bytes().await.unwrap();
        assert_eq!(status, 200, "{stream}: {}", String::from_utf8_lossy(&bytes));
        // Claude's own SSE, whatever Bedrock framed it in.
        let got = if stream {
            assert!(
                bytes.starts_with(b"event: message_start"),
                "{}",
                String::from_utf8_lossy(&bytes)
            );
            decode_stream(ClientFormat::Anthropic, &bytes)
        } else {
            decode_whole(ClientFormat::Anthropic, &bytes)
        };
        assert!(got.text().contains("my own body"), "{stream}: {}", got.text());
        assert!(got.usage.input_tokens.is_some() && got.usage.output_tokens.is_some());
        let rx = h.bedrock.received().pop().unwrap();
        let action = if stream { "invoke-with-response-stream" } else { "invoke" };
        assert_eq!(rx.path, invoke_path(action));
        assert!(rx.header("authorization").unwrap().starts_with("AWS4-HMAC-SHA256 "));
        // The client's body, with Bedrock's facts: no model, no stream, the
        // version, the flags Bedrock takes in the body and not as a header.
        assert!(rx.body.get("model").is_none() && rx.body.get("stream").is_none(), "{}", rx.body);
        assert_eq!(rx.body["anthropic_version"], invoke::ANTHROPIC_VERSION);
        assert_eq!(rx.body["anthropic_beta"], json!(["context-management-2025-06-27"]));
        assert!(rx.body.get("context_management").is_some(), "{}", rx.body);
        assert_eq!(rx.header("anthropic-beta"), None);
    }
    // Asked by the upstream's own name, nothing is renamed: Claude's events
    // still reach the client as SSE, never the event-stream's bytes.
    let body = json!({"model": BEDROCK_MODEL, "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "by its own name"}]});
    let r = h.post_with("/v1/messages", &body, &[("anthropic-beta", "claude-code-20250219")]).await;
    let bytes = r.bytes().await.unwrap();
    assert!(bytes.starts_with(b"event: message_start"), "{}", String::from_utf8_lossy(&bytes));
    let got = decode_stream(ClientFormat::Anthropic, &bytes);
    assert!(got.text().contains("by its own name"), "{}", got.text());
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(3)).await.unwrap();
    for record in &records {
        let edits = &record.field_edits;
        assert!(
            edits.iter().any(|e| e == "anthropic-beta: dropped claude-code-20250219"),
            "{edits:?}"
        );
    }
}

#[tokio::test]
async fn every_client_format_reaches_claude_through_invoke_model() {
    let h = Harness::start_with(invoke_options("")).await;
    for format in [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Gemini] {
        for stream in [false, true] {
            let text = format!("hello invoke from {format:?} stream={stream}");
            let (path, body) = match format {
                ClientFormat::OpenAiChat => (
                    "/v1/chat/completions".to_owned(),
                    json!({
                    "model": "m-invoke", "stream": stream,
                    "messages": [{"role": "user", "content": text}]}),
                ),
                ClientFormat::OpenAiResponses => (
                    "/v1/responses".to_owned(),
                    json!({"model": "m-invoke", "stream": stream, "input": text}),
                ),
                _ => {
                    let action =
                        if stream { "streamGenerateContent?alt=sse" } else { "generateContent" };
                    (
                        format!("/v1beta/models/m-invoke:{action}"),
                        json!({"contents": [{"role": "user", "parts": [{"text": text}]}]}),
                    )
                }
            };
            let r = h.post(&path, &body).await;
            let status = r.status();
            let bytes = r.bytes().await.unwrap();
            assert_eq!(status, 200, "{format:?} {stream}: {}", String::from_utf8_lossy(&bytes));
            let got =
                if stream { decode_stream(format, &bytes) } else { decode_whole(format, &bytes) };
            assert!(got.text().contains(&text), "{format:?} {stream}: {}", got.text());
            let rx = h.bedrock.received().pop().unwrap();
            assert!(rx.path.ends_with(if stream {
                "/invoke-with-response-stream"
            } else {
                "/invoke"
            }));
            assert_eq!(rx.body["anthropic_version"], invoke::ANTHROPIC_VERSION);
        }
    }
}

#[tokio::test]
async fn an_exception_before_the_first_content_fails_over() {
    let h = Harness::start_with(invoke_options("")).await;
    let throttled = eventstream::exception("throttlingException", "Too many requests");
    h.bedrock.push(Reply::frames(vec![throttled], canned::EVENT_STREAM));
    let body = json!({"model": "m-invoke-chain", "max_tokens": 64, "stream": true,
        "messages": [{"role": "user", "content": "fail me over"}]});
    let r = h.post("/v1/messages", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.contains("failover:bedrock-claude->anthropic"), "{route}");
    let got = decode_stream(ClientFormat::Anthropic, &r.bytes().await.unwrap());
    assert!(got.text().contains("fail me over"), "{}", got.text());
}

#[tokio::test]
async fn claude_on_invoke_model_counts_the_invoke_body_for_the_foundation_model() {
    let h = Harness::start_with(invoke_options("")).await;
    let count = json!({"model": "m-invoke", "messages": [{"role": "user", "content": "count me"}]});
    let r = h.post("/v1/messages/count_tokens", &count).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let got: Value = r.json().await.unwrap();
    assert!(got["input_tokens"].as_u64().unwrap() > canned::COUNT_BASE, "{got}");
    let rx = h.bedrock.received().pop().unwrap();
    // A profile id cannot be counted: its foundation model is.
    assert_eq!(rx.path, "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens");
    let invoked = invoke::counted_body(&rx.body).unwrap().unwrap();
    assert_eq!(invoked["anthropic_version"], invoke::ANTHROPIC_VERSION);
    assert_eq!(invoked["messages"][0]["content"], "count me");
}

#[tokio::test]
async fn what_bedrock_refuses_of_claudes_body_is_learned_and_sent_again_without() {
    let extra = "    anthropic_betas: [context-management-2025-06-27]\n";
    let h = Harness::start_with(invoke_options(extra)).await;
    // This region does not take context management yet.
    h.bedrock.set_bedrock_claude(vertex::ClaudeRules {
        refused_fields: vec!["context_management".into()],
        ..invoke::default_rules()
    });
    let body = json!({"model": "m-invoke", "max_tokens": 64,
        "messages": [{"role": "user", "content": "lagging region"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}});
    let betas = [("anthropic-beta", "context-management-2025-06-27")];
    let r = h.post_with("/v1/messages", &body, &betas).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let calls = h.bedrock.received();
    assert_eq!(calls.len(), 2, "refused once, then sent again without");
    assert!(calls[0].body.get("context_management").is_some());
    assert!(calls[1].body.get("context_management").is_none(), "{}", calls[1].body);
    // Learned: the next request goes without it at once.
    let r = h.post_with("/v1/messages", &body, &betas).await;
    assert_eq!(r.status(), 200);
    assert_eq!(h.bedrock.received().len(), 3);
}
