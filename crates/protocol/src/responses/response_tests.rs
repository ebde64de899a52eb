//! Encoding and parsing whole responses and error bodies.

use serde_json::{Value, json};

use crate::responses::test_support::text;
use crate::{Part, ProtocolError, Response, StopReason, ToolCall, Usage};

use super::*;

fn sample_response() -> Response {
    Response {
        id: "abc123".into(),
        model: "gpt-5".into(),
        content: vec![
            Part::Thinking { text: "Considering.".into(), signature: Some("sig".into()) },
            text("Hello"),
            text(" world"),
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                arguments: "{\"command\":[\"ls\"]}".into(),
                signature: None,
            }),
        ],
        stop_reason: Some(StopReason::ToolUse),
        stop_sequence: None,
        usage: Usage {
            input_tokens: Some(100),
            output_tokens: Some(20),
            cache_read_tokens: Some(64),
            cache_write_tokens: None,
            reasoning_tokens: Some(8),
        },
    }
}

#[test]
fn encodes_a_response_object() {
    let v = encode_response(&sample_response());
    assert_eq!(v["id"], "resp_abc123");
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert!(v["created_at"].as_u64().unwrap() > 1_700_000_000);
    assert_eq!(v["error"], Value::Null);
    assert_eq!(v["incomplete_details"], Value::Null);
    assert_eq!(
        v["output"],
        json!([
            {"type": "reasoning", "id": "rs_abc123_0",
             "summary": [{"type": "summary_text", "text": "Considering."}]},
            {"type": "message", "id": "msg_abc123_1", "status": "completed", "role": "assistant",
             "content": [
                 {"type": "output_text", "text": "Hello", "annotations": []},
                 {"type": "output_text", "text": " world", "annotations": []}
             ]},
            {"type": "function_call", "id": "fc_abc123_2", "call_id": "call_1", "name": "shell",
             "arguments": "{\"command\":[\"ls\"]}", "status": "completed"}
        ])
    );
    assert_eq!(
        v["usage"],
        json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
               "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 8},
               "total_tokens": 120})
    );

    let mut truncated = sample_response();
    truncated.id = "resp_x".into();
    truncated.stop_reason = Some(StopReason::MaxTokens);
    truncated.usage = Usage::default();
    let v = encode_response(&truncated);
    assert_eq!(v["id"], "resp_x");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert!(v.get("usage").is_none());
    let back = parse_response(v.to_string().as_bytes()).unwrap();
    assert_eq!(back.stop_reason, Some(StopReason::MaxTokens));
}

#[test]
fn failed_response_bodies_are_upstream_errors() {
    let body = json!({"id": "resp_1", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": "The model crashed."}});
    assert_eq!(
        parse_response(body.to_string().as_bytes()).unwrap_err(),
        ProtocolError::UpstreamError {
            kind: "server_error".into(),
            message: "The model crashed.".into()
        }
    );
    assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
}

#[test]
fn parse_error_reads_the_openai_shape() {
    let body = br#"{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}"#;
    assert_eq!(parse_error(body).as_deref(), Some("Rate limit reached"));
    assert_eq!(parse_error(b"{\"detail\":\"x\"}"), None);
    assert_eq!(parse_error(b"not json"), None);
}
