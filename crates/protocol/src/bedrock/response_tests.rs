//! Whole answers, usage and errors.

use serde_json::json;

use crate::{Part, ProtocolError, StopReason, TextBlock, ToolCall, Usage};

use super::*;

/// A Converse answer as Claude on Bedrock writes it: reasoning with its
/// signature, redacted reasoning, text and a tool call.
const ANSWER: &str = r#"{
  "output": {"message": {"role": "assistant", "content": [
    {"reasoningContent": {"reasoningText": {"text": "The user wants Paris.", "signature": "EqQBCkYIARgCIkB"}}},
    {"reasoningContent": {"redactedContent": "RW5jcnlwdGVk"}},
    {"text": "Let me check."},
    {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "get_weather", "input": {"city": "Paris"}}},
    {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}
  ]}},
  "stopReason": "tool_use",
  "usage": {"inputTokens": 32, "outputTokens": 120, "totalTokens": 2200,
            "cacheReadInputTokens": 2000, "cacheWriteInputTokens": 48},
  "metrics": {"latencyMs": 1523}
}"#;

#[test]
fn parses_an_answer_with_reasoning_text_and_a_tool_call() {
    let resp = parse_response(ANSWER.as_bytes()).unwrap();
    assert_eq!(resp.id, "bedrock-response");
    assert_eq!(resp.model, "");
    assert_eq!(
        resp.content,
        vec![
            Part::Thinking {
                text: "The user wants Paris.".into(),
                signature: Some("EqQBCkYIARgCIkB".into())
            },
            Part::RedactedThinking { data: "RW5jcnlwdGVk".into() },
            Part::Text(TextBlock::new("Let me check.")),
            Part::ToolCall(ToolCall {
                id: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q".into(),
                name: "get_weather".into(),
                arguments: r#"{"city":"Paris"}"#.into(),
                signature: None,
            }),
        ]
    );
    assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(resp.stop_sequence, None);
}

/// Converse's `inputTokens` leaves the cached tokens out; the canonical input is
/// the whole prompt, so they are added in exactly once, and taking them out
/// again (as Anthropic's client format does) gives Converse's own count back.
#[test]
fn cached_tokens_are_added_to_the_input_once() {
    let usage = parse_response(ANSWER.as_bytes()).unwrap().usage;
    assert_eq!(
        usage,
        Usage {
            input_tokens: Some(32 + 2000 + 48),
            output_tokens: Some(120),
            cache_read_tokens: Some(2000),
            cache_write_tokens: Some(48),
            reasoning_tokens: None,
        }
    );
    assert_eq!(usage.uncached_input(), Some(32));
    // Without caching the count is Converse's as it is.
    let plain = br#"{"output":{"message":{"content":[]}},"stopReason":"end_turn",
        "usage":{"inputTokens":7,"outputTokens":3,"totalTokens":10}}"#;
    let usage = parse_response(plain).unwrap().usage;
    assert_eq!(
        (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens),
        (Some(7), None, None)
    );
    // And the usage-only read agrees with the whole parse.
    assert_eq!(
        parse_usage(ANSWER.as_bytes()).unwrap(),
        Some(parse_response(ANSWER.as_bytes()).unwrap().usage)
    );
    assert_eq!(parse_usage(plain).unwrap(), Some(usage));
}

#[test]
fn stop_reasons_map_to_the_canonical_ones() {
    for (wire, want) in [
        ("end_turn", StopReason::EndTurn),
        ("tool_use", StopReason::ToolUse),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        ("guardrail_intervened", StopReason::ContentFilter),
        ("content_filtered", StopReason::ContentFilter),
        ("model_context_window_exceeded", StopReason::MaxTokens),
        ("malformed_model_output", StopReason::Error),
        ("malformed_tool_use", StopReason::Error),
        ("something_new", StopReason::EndTurn),
    ] {
        let body = json!({"output": {"message": {"content": [{"text": "x"}]}}, "stopReason": wire});
        let resp = parse_response(body.to_string().as_bytes()).unwrap();
        assert_eq!(resp.stop_reason, Some(want), "{wire}");
    }
}

#[test]
fn the_matched_stop_sequence_comes_from_claudes_own_fields() {
    let body = json!({
        "output": {"message": {"content": [{"text": "1, 2, 3"}]}},
        "stopReason": "stop_sequence",
        "additionalModelResponseFields": {"stop_sequence": "4"},
    });
    let resp = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(
        (resp.stop_reason, resp.stop_sequence.as_deref()),
        (Some(StopReason::StopSequence), Some("4"))
    );
}

#[test]
fn cited_text_is_kept_and_unknown_blocks_are_skipped() {
    let body = json!({"output": {"message": {"content": [
        {"citationsContent": {"content": [{"text": "Revenue grew "}, {"text": "12%."}],
            "citations": [{"location": {"documentPage": {"documentIndex": 0, "start": 1, "end": 1}}}]}},
        {"guardContent": {"text": {"text": "x"}}},
        {},
    ]}}, "stopReason": "end_turn"});
    let resp = parse_response(body.to_string().as_bytes()).unwrap();
    assert_eq!(resp.content, vec![Part::Text(TextBlock::new("Revenue grew 12%."))]);
}

#[test]
fn malformed_answers_and_error_bodies_are_told_apart() {
    let err =
        parse_response(br#"{"message": "The security token included in the request is invalid."}"#);
    assert_eq!(
        err,
        Err(ProtocolError::UpstreamError {
            kind: "api_error".into(),
            message: "The security token included in the request is invalid.".into()
        })
    );
    assert!(matches!(parse_response(b"{}"), Err(ProtocolError::MalformedUpstream(_))));
    assert!(matches!(parse_response(b"not json"), Err(ProtocolError::MalformedUpstream(_))));
    let bad = br#"{"output": {"message": {"content": [{"toolUse": {"name": "x"}}]}}}"#;
    match parse_response(bad) {
        Err(ProtocolError::MalformedUpstream(m)) => assert!(m.contains("content[0]"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        parse_usage(br#"{"message": "denied"}"#),
        Err(ProtocolError::UpstreamError { .. })
    ));
    assert_eq!(parse_usage(br#"{"output": {}}"#).unwrap(), None);
}

#[test]
fn error_bodies_give_their_message_and_types_their_class() {
    assert_eq!(
        parse_error(br#"{"message":"Too many requests, please wait."}"#).as_deref(),
        Some("Too many requests, please wait.")
    );
    assert_eq!(
        parse_error(br#"{"Message":"User is not authorized"}"#).as_deref(),
        Some("User is not authorized")
    );
    assert_eq!(parse_error(br#"{"error":{"message":"x"}}"#), None);
    assert_eq!(parse_error(b"<html>"), None);
    for (kind, want) in [
        ("throttlingException", "rate_limit_error"),
        ("ThrottlingException", "rate_limit_error"),
        (
            "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "invalid_request_error",
        ),
        ("serviceUnavailableException", "overloaded_error"),
        ("ModelNotReadyException", "overloaded_error"),
        ("AccessDeniedException", "permission_error"),
        ("ResourceNotFoundException", "not_found_error"),
        ("ModelTimeoutException", "timeout_error"),
        ("internalServerException", "api_error"),
        ("modelStreamErrorException", "api_error"),
        ("", "api_error"),
    ] {
        assert_eq!(error_kind(kind), want, "{kind}");
    }
}
