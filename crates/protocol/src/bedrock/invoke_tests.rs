use base64::Engine as _;
use serde_json::{Value, json};

use crate::{ClientFormat, Frame, ModelTraits, ProtocolError, ReasoningControl, StreamEvent, Wire};

const MODEL: &str = "us.anthropic.claude-opus-4-6-v1:0";

fn frame(event: &str, data: Value) -> Frame {
    Frame { event: Some(event.into()), data: data.to_string(), id: None }
}

#[test]
fn claude_on_invoke_model_names_its_version_in_the_body_and_its_model_in_the_url() {
    let chat = br#"{"model": "c", "stream": true, "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::OpenAiChat.parse_request(chat, None).unwrap();
    let traits = ModelTraits::infer(Wire::BedrockAnthropic, MODEL);
    assert_eq!(traits.reasoning, ReasoningControl::Effort, "Claude's rules, from Bedrock's id");
    let body = Wire::BedrockAnthropic.encode_request_for(&req, traits).unwrap();
    assert_eq!(body["anthropic_version"], "bedrock-2023-05-31");
    assert!(body.get("model").is_none() && body.get("stream").is_none(), "{body}");
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["max_tokens"], json!(100));
    let endpoint = "https://bedrock-runtime.us-east-1.amazonaws.com";
    let spec = Wire::BedrockAnthropic.spec();
    assert_eq!(
        spec.url(endpoint, MODEL, true),
        format!("{endpoint}/model/us.anthropic.claude-opus-4-6-v1%3A0/invoke-with-response-stream")
    );
    assert_eq!(
        spec.url(endpoint, MODEL, false),
        format!("{endpoint}/model/us.anthropic.claude-opus-4-6-v1%3A0/invoke")
    );
    assert_eq!(spec.headers_in_body, &[("anthropic-beta", "anthropic_beta")]);
}

#[test]
fn a_claude_clients_own_body_loses_its_model_and_stream_and_gains_the_version() {
    let raw = br#"{"model": "claude-opus-4-6", "stream": true, "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::Anthropic.parse_request(raw, None).unwrap();
    let Value::Object(body) = serde_json::from_slice(raw).unwrap() else { unreachable!() };
    let traits = ModelTraits::infer(Wire::BedrockAnthropic, MODEL);
    let wire = Wire::BedrockAnthropic;
    assert_eq!(wire.dialect(), Wire::Anthropic, "Claude clients take the fast path");
    assert!(wire.may_adapt(&req, raw, traits));
    let edits = wire.adapt_native(&body, &req, traits);
    for (field, edit) in [
        ("model", None),
        ("stream", None),
        ("anthropic_version", Some(Value::from("bedrock-2023-05-31"))),
    ] {
        assert!(edits.contains(&(field, edit.clone())), "{field}: {edits:?}");
    }
}

#[test]
fn claudes_refusal_inside_bedrocks_message_is_learned() {
    let wire = Wire::BedrockAnthropic.behaviour();
    let message = "The model returned the following errors: context_management: Extra inputs \
                   are not permitted";
    let refused = wire.refused(message).unwrap();
    assert_eq!(refused.fields, ["context_management"]);
    // A nested field is the client's content, not something to go without.
    let nested = "The model returned the following errors: output_config.effort: Extra inputs \
                  are not permitted";
    assert!(wire.refused(nested).is_none());
    assert_eq!(
        wire.parse_error(br#"{"message": "Too many tokens, please wait."}"#).as_deref(),
        Some("Too many tokens, please wait.")
    );
}

#[test]
fn the_stream_is_claudes_events_and_an_exception_ends_it_as_an_upstream_error() {
    let mut decoder = Wire::BedrockAnthropic.stream_decoder();
    let mut out = Vec::new();
    let start = json!({"type": "message_start", "message": {"id": "msg_bdrk_01", "type": "message",
        "role": "assistant", "model": "claude-opus-4-6", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 12, "output_tokens": 1}}});
    decoder.push(&frame("message_start", start), &mut out).unwrap();
    let delta = json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}});
    decoder.push(&frame("content_block_start", delta), &mut out).unwrap();
    assert!(out.iter().any(|e| matches!(e, StreamEvent::Start { .. })), "{out:?}");
    let err = decoder
        .push(&frame("throttlingException", json!({"message": "slow down"})), &mut out)
        .unwrap_err();
    match err {
        ProtocolError::UpstreamError { kind, message } => {
            assert_eq!(kind, "rate_limit_error");
            assert_eq!(message, "throttlingException: slow down");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn its_count_is_the_invoke_body_itself_as_a_blob() {
    let count = Wire::BedrockAnthropic.spec().count.unwrap();
    let generation = br#"{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[]}"#;
    let body: Value = serde_json::from_slice(&count.body(generation, MODEL).unwrap()).unwrap();
    let blob = body["input"]["invokeModel"]["body"].as_str().unwrap();
    let decoded = base64::engine::general_purpose::STANDARD.decode(blob).unwrap();
    assert_eq!(decoded, generation);
    assert_eq!(count.model.of(MODEL), Some("anthropic.claude-opus-4-6-v1:0"));
}
