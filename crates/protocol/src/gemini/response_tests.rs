//! Parsing and encoding whole responses and error bodies.

use serde_json::json;

use crate::gemini::test_support::{GEMINI3_RESPONSE, call, signed, text};
use crate::model::{Part, StopReason, Usage};
use crate::{ProtocolError, Response};

use super::*;

#[test]
fn parses_a_gemini_3_response() {
    let resp = parse_response(GEMINI3_RESPONSE.as_bytes()).unwrap();
    assert_eq!(
        resp,
        Response {
            id: "Yx3kaPq2Lf-0qtsP4bWRgA0".into(),
            model: "gemini-3-pro-preview".into(),
            content: vec![
                Part::Thinking {
                    text: "**Planning the lookup**\nThe user wants two cities.".into(),
                    signature: None
                },
                text("I'll look up both cities."),
                signed(
                    "gcall_8f2kq1",
                    "get_weather",
                    r#"{"city":"Paris"}"#,
                    "CiQBVKhc7+abc/defg=="
                ),
                call("call_Yx3kaPq2Lf-0qtsP4bWRgA0_1", "get_weather", r#"{"city":"Lyon"}"#),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage {
                input_tokens: Some(125),
                output_tokens: Some(90),
                cache_read_tokens: Some(64),
                cache_write_tokens: None,
                reasoning_tokens: Some(50),
            },
        }
    );
}

#[test]
fn parses_plain_blocked_and_error_responses() {
    let plain = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi!"}]},"finishReason":"MAX_TOKENS"}],
        "usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":0}}"#;
    let resp = parse_response(plain).unwrap();
    assert_eq!(resp.id, "gemini-response");
    assert_eq!(resp.model, "");
    assert_eq!(resp.content, vec![text("Hi!")]);
    assert_eq!(resp.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(
        resp.usage,
        Usage { input_tokens: Some(3), output_tokens: Some(0), ..Usage::default() }
    );

    let blocked = br#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},
        "usageMetadata":{"promptTokenCount":7,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"blk1"}"#;
    let resp = parse_response(blocked).unwrap();
    assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
    assert!(resp.content.is_empty());
    assert_eq!(resp.usage.input_tokens, Some(7));
    assert_eq!(resp.usage.output_tokens, None);
    assert_eq!(resp.id, "blk1");

    let safety = br#"{"candidates":[{"finishReason":"SAFETY"}]}"#;
    assert_eq!(parse_response(safety).unwrap().stop_reason, Some(StopReason::ContentFilter));

    let err = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#;
    assert_eq!(
        parse_response(err),
        Err(ProtocolError::UpstreamError {
            kind: "RESOURCE_EXHAUSTED".into(),
            message: "Resource has been exhausted".into()
        })
    );
    assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
    assert!(matches!(
        parse_response(br#"{"candidates":"nope"}"#),
        Err(ProtocolError::MalformedUpstream(_))
    ));
}

#[test]
fn parses_error_bodies() {
    let obj =
        br#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}"#;
    assert_eq!(parse_error(obj).as_deref(), Some("API key not valid."));
    let arr =
        br#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#;
    assert_eq!(parse_error(arr).as_deref(), Some("The model is overloaded."));
    let no_message = br#"{"error":{"code":500,"status":"INTERNAL"}}"#;
    assert_eq!(parse_error(no_message).as_deref(), Some("INTERNAL"));
    assert_eq!(parse_error(br#"{"candidates":[]}"#), None);
    assert_eq!(parse_error(b"Bad Gateway"), None);
    assert_eq!(parse_error(b"[]"), None);
}

#[test]
fn encodes_a_response() {
    let resp = Response {
        id: "r1".into(),
        model: "gemini-2.5-flash".into(),
        content: vec![
            Part::Thinking { text: "hmm".into(), signature: Some("anthropic-sig".into()) },
            text("Calling."),
            call("gcall_x1__sig_AbC-_d", "f", r#"{"a": 1}"#),
            call("toolu_9", "g", "{}"),
        ],
        stop_reason: Some(StopReason::ToolUse),
        stop_sequence: None,
        usage: Usage {
            input_tokens: Some(10),
            output_tokens: Some(30),
            cache_read_tokens: Some(4),
            cache_write_tokens: None,
            reasoning_tokens: Some(12),
        },
    };
    assert_eq!(
        encode_response(&resp),
        json!({
            "candidates": [{
                "content": {"role": "model", "parts": [
                    {"text": "hmm", "thought": true},
                    {"text": "Calling."},
                    {"functionCall": {"id": "x1", "name": "f", "args": {"a": 1}}, "thoughtSignature": "AbC+/d=="},
                    {"functionCall": {"name": "g", "args": {}}}
                ]},
                "finishReason": "STOP",
                "index": 0
            }],
            "usageMetadata": {
                "promptTokenCount": 10, "candidatesTokenCount": 18, "thoughtsTokenCount": 12,
                "cachedContentTokenCount": 4, "totalTokenCount": 40
            },
            "modelVersion": "gemini-2.5-flash",
            "responseId": "r1"
        })
    );
}

#[test]
fn a_clients_answer_gives_each_call_its_id_as_is() {
    let resp = Response {
        id: "r1".into(),
        model: "m".into(),
        content: vec![call("toolu_9", "g", "{}"), signed("gcall_x1", "f", "{}", "CiQB")],
        stop_reason: Some(StopReason::ToolUse),
        stop_sequence: None,
        usage: Usage::default(),
    };
    let parts = &encode_client_response(&resp)["candidates"][0]["content"]["parts"];
    assert_eq!(
        parts,
        &json!([
            {"functionCall": {"id": "toolu_9", "name": "g", "args": {}}},
            {"functionCall": {"id": "gcall_x1", "name": "f", "args": {}}, "thoughtSignature": "CiQB"}
        ])
    );
}
