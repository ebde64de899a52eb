//! The stream decoder and encoder.

use serde_json::json;

use crate::gemini::test_support::{
    SIGNED_CALL_ID, TRANSCRIPT, TRANSCRIPT_SIGNATURE, accumulate, assert_invariants, decode_chunks,
    decode_sse, encode_events, signed, text,
};
use crate::model::{BlockKind, Delta, StopReason, Usage};
use crate::{ErrorBody, ErrorCode, ProtocolError, StreamEncoder, StreamEvent};

use super::Encoder;

fn transcript_events() -> Vec<StreamEvent> {
    use StreamEvent as E;
    vec![
        E::Start { id: "r3sp0nse".into(), model: "gemini-2.5-flash".into() },
        // A chunk's usage comes before its content.
        E::Usage { usage: Usage { input_tokens: Some(80), ..Usage::default() } },
        E::BlockStart { index: 0, kind: BlockKind::Thinking },
        E::Delta {
            index: 0,
            delta: Delta::Thinking { text: "**Planning**\nI need the weather.".into() },
        },
        E::Delta { index: 0, delta: Delta::Thinking { text: " Calling the tool.".into() } },
        E::BlockStop { index: 0 },
        E::BlockStart { index: 1, kind: BlockKind::Text },
        E::Delta { index: 1, delta: Delta::Text { text: "Let me".into() } },
        E::Delta { index: 1, delta: Delta::Text { text: " check.".into() } },
        E::BlockStop { index: 1 },
        E::BlockStart {
            index: 2,
            kind: BlockKind::ToolCall { id: SIGNED_CALL_ID.into(), name: "get_weather".into() },
        },
        E::Delta { index: 2, delta: Delta::ToolArguments { json: r#"{"city":"Paris"}"#.into() } },
        E::Delta { index: 2, delta: Delta::Signature { signature: TRANSCRIPT_SIGNATURE.into() } },
        E::BlockStop { index: 2 },
        E::Usage {
            usage: Usage {
                input_tokens: Some(80),
                output_tokens: Some(55),
                reasoning_tokens: Some(30),
                ..Usage::default()
            },
        },
        E::Stop { reason: StopReason::ToolUse, stop_sequence: None },
    ]
}

#[test]
fn decodes_a_recorded_stream() {
    let events = decode_sse(TRANSCRIPT.as_bytes()).unwrap();
    assert_eq!(events, transcript_events());
    assert_invariants(&events);
}

#[test]
fn decodes_a_recorded_stream_split_byte_by_byte() {
    let bytes = TRANSCRIPT.as_bytes();
    let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(decode_chunks(&chunks).unwrap(), transcript_events());
}

#[test]
fn decodes_a_blocked_prompt_stream() {
    let events = decode_sse(
        b"data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},\"usageMetadata\":{\"promptTokenCount\":9},\"responseId\":\"b\"}\n\n",
    )
    .unwrap();
    assert_eq!(
        events,
        vec![
            StreamEvent::Start { id: "b".into(), model: String::new() },
            StreamEvent::Usage { usage: Usage { input_tokens: Some(9), ..Usage::default() } },
            StreamEvent::Stop { reason: StopReason::ContentFilter, stop_sequence: None },
        ]
    );
}

#[test]
fn usage_after_the_finish_reason_is_still_reported() {
    let events = decode_sse(
        concat!(
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\n\n",
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"late\"}]}}],\"usageMetadata\":{\"promptTokenCount\":1,\"candidatesTokenCount\":2}}\n\n",
        )
        .as_bytes(),
    )
    .unwrap();
    let resp = accumulate(&events);
    assert_eq!(resp.content, vec![text("ok")]);
    assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(resp.usage.output_tokens, Some(2));
    assert!(matches!(events.last(), Some(StreamEvent::Usage { .. })));
}

#[test]
fn stream_error_paths() {
    let malformed = decode_sse(b"data: {\"candidates\": [\n\n");
    assert!(matches!(malformed, Err(ProtocolError::MalformedUpstream(_))), "{malformed:?}");

    let not_json = decode_sse(b"data: [DONE]\n\n");
    assert!(matches!(not_json, Err(ProtocolError::MalformedUpstream(_))));

    let wrong_shape = decode_sse(b"data: {\"candidates\": {\"a\": 1}}\n\n");
    assert!(matches!(wrong_shape, Err(ProtocolError::MalformedUpstream(_))));

    let error_chunk = decode_sse(
        concat!(
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\n\n",
            "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\",\"status\":\"UNAVAILABLE\"}}\n\n",
        )
        .as_bytes(),
    );
    assert_eq!(
        error_chunk,
        Err(ProtocolError::UpstreamError {
            kind: "UNAVAILABLE".into(),
            message: "The model is overloaded. Please try again later.".into()
        })
    );

    let truncated = decode_sse(
        b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}],\"responseId\":\"t\"}\n\n",
    );
    assert_eq!(
        truncated,
        Err(ProtocolError::MalformedUpstream("stream ended before finishReason".into()))
    );
    assert!(matches!(decode_sse(b""), Err(ProtocolError::MalformedUpstream(_))));
    assert!(matches!(decode_sse(b": keep-alive\n\n"), Err(ProtocolError::MalformedUpstream(_))));
}

#[test]
fn encoder_writes_chunks_and_holds_the_finish_reason() {
    use StreamEvent as E;
    let events = vec![
        E::Start { id: "r9".into(), model: "gemini-2.5-pro".into() },
        E::BlockStart { index: 0, kind: BlockKind::Thinking },
        E::Delta { index: 0, delta: Delta::Thinking { text: "think".into() } },
        E::Delta { index: 0, delta: Delta::Signature { signature: "sig".into() } },
        E::BlockStop { index: 0 },
        E::BlockStart { index: 1, kind: BlockKind::Text },
        E::Delta { index: 1, delta: Delta::Text { text: "Hi".into() } },
        E::Delta { index: 1, delta: Delta::Text { text: String::new() } },
        E::BlockStop { index: 1 },
        E::BlockStart {
            index: 2,
            kind: BlockKind::ToolCall { id: "gcall_q".into(), name: "f".into() },
        },
        E::Delta { index: 2, delta: Delta::ToolArguments { json: "{\"x\":".into() } },
        E::Delta { index: 2, delta: Delta::ToolArguments { json: "1}".into() } },
        E::Delta { index: 2, delta: Delta::Signature { signature: "AA==".into() } },
        E::BlockStop { index: 2 },
        E::Stop { reason: StopReason::ToolUse, stop_sequence: None },
        E::Usage {
            usage: Usage { input_tokens: Some(5), output_tokens: Some(7), ..Usage::default() },
        },
    ];
    let bytes = encode_events(&events);
    let expected = [
        json!({"candidates":[{"content":{"role":"model","parts":[{"text":"think","thought":true}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
        json!({"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
        json!({"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"q","name":"f","args":{"x":1}},"thoughtSignature":"AA=="}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
        json!({"candidates":[{"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"totalTokenCount":12},"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
    ];
    assert_eq!(data_values(&bytes), expected);

    let back = decode_sse(&bytes).unwrap();
    let resp = accumulate(&back);
    assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(resp.content[2], signed("gcall_q", "f", r#"{"x":1}"#, "AA=="));
}

#[test]
fn encoder_error_ends_the_stream() {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    enc.push(&StreamEvent::Start { id: "e".into(), model: "m".into() }, &mut out);
    enc.push(&StreamEvent::BlockStart { index: 0, kind: BlockKind::Text }, &mut out);
    enc.push(
        &StreamEvent::Delta { index: 0, delta: Delta::Text { text: "partial".into() } },
        &mut out,
    );
    out.clear();
    let err = ErrorBody::new(ErrorCode::ProviderUnavailable, "Try again later");
    enc.error(&err, &mut out);
    enc.finish(&mut out);
    assert_eq!(
        String::from_utf8(out.clone()).unwrap(),
        "data: {\"error\":{\"code\":503,\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.ErrorInfo\",\"domain\":\"switchyard\",\"reason\":\"provider_unavailable\"}],\"message\":\"Try again later\",\"status\":\"UNAVAILABLE\"}}\n\n"
    );
    assert_eq!(
        decode_sse(&out),
        Err(ProtocolError::UpstreamError {
            kind: "UNAVAILABLE".into(),
            message: "Try again later".into()
        })
    );
}

#[test]
fn a_clients_encoder_gives_each_call_its_id_as_is() {
    let mut enc = Encoder::for_client();
    let mut out = Vec::new();
    enc.push(&StreamEvent::Start { id: "e".into(), model: "m".into() }, &mut out);
    let kind = BlockKind::ToolCall { id: "toolu_01".into(), name: "f".into() };
    enc.push(&StreamEvent::BlockStart { index: 0, kind }, &mut out);
    enc.push(
        &StreamEvent::Delta { index: 0, delta: Delta::ToolArguments { json: "{}".into() } },
        &mut out,
    );
    enc.push(&StreamEvent::BlockStop { index: 0 }, &mut out);
    enc.finish(&mut out);
    let chunks = data_values(&out);
    assert_eq!(
        chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"],
        json!({"id": "toolu_01", "name": "f", "args": {}}),
        "{chunks:?}"
    );
    // The same call as Gemini writes it has no id (it did not come from Gemini).
    let mut out = Vec::new();
    let mut enc = Encoder::new();
    enc.push(&StreamEvent::Start { id: "e".into(), model: "m".into() }, &mut out);
    let kind = BlockKind::ToolCall { id: "toolu_01".into(), name: "f".into() };
    enc.push(&StreamEvent::BlockStart { index: 0, kind }, &mut out);
    enc.push(&StreamEvent::BlockStop { index: 0 }, &mut out);
    assert!(!String::from_utf8(out).unwrap().contains("toolu_01"));
}

/// Each event's data, parsed: the chunks as JSON, whatever order their fields
/// are written in.
fn data_values(bytes: &[u8]) -> Vec<serde_json::Value> {
    std::str::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}
