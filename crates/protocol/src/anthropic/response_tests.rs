//! Parsing and encoding whole responses and error bodies.

use serde_json::{Value, json};

use crate::anthropic::test_support::SIGNATURE;
use crate::{Part, ProtocolError, Response, StopReason, TextBlock, ToolCall, Usage};

use super::*;

fn realistic_response() -> Value {
    json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [
            {"type": "thinking", "thinking": "The user wants the weather.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
            {"type": "text", "text": "Let me check.", "citations": null},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
            {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
             "input": {"location": "San Francisco, CA", "unit": "celsius"}}
        ],
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 2000, "output_tokens": 87,
                  "service_tier": "standard"}
    })
}

#[test]
fn parses_a_realistic_response() {
    let resp = parse_response(&serde_json::to_vec(&realistic_response()).unwrap()).unwrap();
    assert_eq!(
        resp,
        Response {
            id: "msg_01XFDUDYJgAACzvnptvVoYEL".into(),
            model: "claude-sonnet-4-5-20250929".into(),
            content: vec![
                Part::Thinking {
                    text: "The user wants the weather.".into(),
                    signature: Some(SIGNATURE.into())
                },
                Part::RedactedThinking { data: "EmwKAhgBEgy3va3pzix".into() },
                Part::Text(TextBlock::new("Let me check.")),
                Part::ToolCall(ToolCall {
                    id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                    name: "get_weather".into(),
                    arguments: r#"{"location":"San Francisco, CA","unit":"celsius"}"#.into(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage {
                input_tokens: Some(2112),
                output_tokens: Some(87),
                cache_read_tokens: Some(2000),
                cache_write_tokens: Some(100),
                reasoning_tokens: None,
            },
        }
    );
}

#[test]
fn encodes_a_response() {
    let resp = Response {
        id: "msg_1".into(),
        model: "gpt-5".into(),
        content: vec![
            Part::Thinking { text: "unsigned".into(), signature: None },
            Part::Text(TextBlock::new("hi")),
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "f".into(),
                arguments: r#"{"a":1}"#.into(),
                signature: None,
            }),
            Part::ToolCall(ToolCall {
                id: "call_2".into(),
                name: "g".into(),
                arguments: r#"{"a":"#.into(),
                signature: None,
            }),
        ],
        stop_reason: Some(StopReason::StopSequence),
        stop_sequence: Some("END".into()),
        usage: Usage {
            input_tokens: Some(1000),
            output_tokens: Some(5),
            cache_read_tokens: Some(900),
            cache_write_tokens: None,
            reasoning_tokens: Some(3),
        },
    };
    assert_eq!(
        serde_json::to_value(encode_response(&resp)).unwrap(),
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "gpt-5",
            "content": [
                {"type": "thinking", "thinking": "unsigned", "signature": ""},
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
                {"type": "tool_use", "id": "call_2", "name": "g", "input": {}}
            ],
            "stop_reason": "stop_sequence", "stop_sequence": "END",
            "usage": {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 900}
        })
    );
    // Unknown counts: required fields get 0, optional ones are left out.
    let empty = Response { usage: Usage::default(), stop_reason: None, ..resp };
    let v = serde_json::to_value(encode_response(&empty)).unwrap();
    assert_eq!(v["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
    assert_eq!(v["stop_reason"], Value::Null);
    // And the unsigned thinking comes back unsigned.
    let back = parse_response(&serde_json::to_vec(&v).unwrap()).unwrap();
    assert_eq!(back.content[0], Part::Thinking { text: "unsigned".into(), signature: None });
}

#[test]
fn response_errors() {
    assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
    let err = parse_response(
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    assert_eq!(
        err,
        Err(ProtocolError::UpstreamError {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        })
    );
    let bad = parse_response(br#"{"id":"m","content":[{"type":"tool_use","id":"x"}]}"#);
    assert!(matches!(bad, Err(ProtocolError::MalformedUpstream(m)) if m.starts_with("content[0]")));
}

#[test]
fn parse_error_reads_only_anthropic_errors() {
    assert_eq!(
        parse_error(
            br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#
        ),
        Some("max_tokens: required".into())
    );
    assert_eq!(parse_error(br#"{"error":{"message":"openai style"}}"#), None);
    assert_eq!(parse_error(br#"{"type":"message"}"#), None);
    assert_eq!(parse_error(b"Bad Gateway"), None);
}
