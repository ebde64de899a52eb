//! The stream decoder, on event-stream bytes as Bedrock sends them.

use serde_json::{Value, json};

use crate::bedrock::test_support::{
    accumulate, assert_invariants, decode, decode_at, exception, framed,
};
use crate::frame::test_support::{self as frames, event};
use crate::{BlockKind, Delta, Part, ProtocolError, StopReason, StreamEvent, TextBlock, Usage};

const PAD: &str = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKL";

/// A ConverseStream of Claude on Bedrock: reasoning and its signature, text, a
/// tool call whose JSON is cut mid-token, the stop, then the usage.
fn transcript() -> Vec<(&'static str, Value)> {
    vec![
        ("messageStart", json!({"p": PAD, "role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "The user wants "}}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Paris weather."}}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "EqQBCkYIARgCIkB"}}, "p": PAD}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0, "p": PAD})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": "Let me"}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"text": " check."}, "p": PAD}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 1, "p": PAD})),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_kZJMlvQm", "name": "get_weather"}}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": ""}}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"ci"}}, "p": PAD}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 2, "delta": {"toolUse": {"input": "ty\": \"Paris\"}"}}, "p": PAD}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 2, "p": PAD})),
        ("messageStop", json!({"p": PAD, "stopReason": "tool_use"})),
        (
            "metadata",
            json!({"metrics": {"latencyMs": 2146}, "p": PAD, "usage": {
            "inputTokens": 18, "outputTokens": 96, "totalTokens": 2162,
            "cacheReadInputTokens": 2048, "cacheWriteInputTokens": 0}}),
        ),
    ]
}

fn transcript_events() -> Vec<StreamEvent> {
    use StreamEvent as E;
    vec![
        E::Start { id: "bedrock-response".into(), model: String::new() },
        E::BlockStart { index: 0, kind: BlockKind::Thinking },
        E::Delta { index: 0, delta: Delta::Thinking { text: "The user wants ".into() } },
        E::Delta { index: 0, delta: Delta::Thinking { text: "Paris weather.".into() } },
        E::Delta { index: 0, delta: Delta::Signature { signature: "EqQBCkYIARgCIkB".into() } },
        E::BlockStop { index: 0 },
        E::BlockStart { index: 1, kind: BlockKind::Text },
        E::Delta { index: 1, delta: Delta::Text { text: "Let me".into() } },
        E::Delta { index: 1, delta: Delta::Text { text: " check.".into() } },
        E::BlockStop { index: 1 },
        E::BlockStart {
            index: 2,
            kind: BlockKind::ToolCall { id: "tooluse_kZJMlvQm".into(), name: "get_weather".into() },
        },
        E::Delta { index: 2, delta: Delta::ToolArguments { json: "{\"ci".into() } },
        E::Delta { index: 2, delta: Delta::ToolArguments { json: "ty\": \"Paris\"}".into() } },
        E::BlockStop { index: 2 },
        // The usage, cached tokens added to the input, then the stop.
        E::Usage {
            usage: Usage {
                input_tokens: Some(18 + 2048),
                output_tokens: Some(96),
                cache_read_tokens: Some(2048),
                cache_write_tokens: Some(0),
                reasoning_tokens: None,
            },
        },
        E::Stop { reason: StopReason::ToolUse, stop_sequence: None },
    ]
}

#[test]
fn decodes_a_recorded_stream() {
    let events = decode(&framed(&transcript())).unwrap();
    assert_eq!(events, transcript_events());
    assert_invariants(&events);
}

/// The framing owes nothing to where reads end: the bytes cut in two at every
/// offset, and cut at every byte, give the same events.
#[test]
fn the_same_events_whatever_the_bytes_are_split_at() {
    let bytes = framed(&transcript());
    let want = transcript_events();
    for cut in 0..=bytes.len() {
        assert_eq!(decode_at(&bytes, &[cut]).unwrap(), want, "cut at {cut}");
    }
    let every: Vec<usize> = (1..bytes.len()).collect();
    assert_eq!(decode_at(&bytes, &every).unwrap(), want);
}

#[test]
fn stop_waits_for_the_usage_and_a_stream_without_it_still_ends() {
    let start = ("messageStart", json!({"role": "assistant"}));
    let text = ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}}));
    let stop = (
        "messageStop",
        json!({"stopReason": "stop_sequence", "additionalModelResponseFields": {"stop_sequence": "END"}}),
    );
    let metadata =
        ("metadata", json!({"usage": {"inputTokens": 3, "outputTokens": 1, "totalTokens": 4}}));
    let want_stop =
        StreamEvent::Stop { reason: StopReason::StopSequence, stop_sequence: Some("END".into()) };
    let usage = StreamEvent::Usage {
        usage: Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() },
    };

    // The usage after the stop: Stop follows the usage.
    let events =
        decode(&framed(&[start.clone(), text.clone(), stop.clone(), metadata.clone()])).unwrap();
    assert_eq!(events[events.len() - 2..], [usage.clone(), want_stop.clone()]);
    assert_invariants(&events);
    // The usage first: Stop comes with the stop.
    let events = decode(&framed(&[start.clone(), text.clone(), metadata, stop.clone()])).unwrap();
    assert_eq!(
        events[events.len() - 2..],
        [StreamEvent::BlockStop { index: 0 }, want_stop.clone()]
    );
    assert!(events.contains(&usage));
    // No usage at all: Stop at the end of the stream.
    let events = decode(&framed(&[start, text, stop])).unwrap();
    assert_eq!(events.last(), Some(&want_stop));
    assert_invariants(&events);
}

#[test]
fn a_stream_cut_before_message_stop_is_broken() {
    let mut events = transcript();
    events.truncate(events.len() - 2);
    match decode(&framed(&events)) {
        Err(ProtocolError::MalformedUpstream(m)) => assert!(m.contains("messageStop"), "{m}"),
        other => panic!("{other:?}"),
    }
    // Cut inside a message: the framer says so.
    let bytes = framed(&transcript());
    assert!(matches!(decode(&bytes[..bytes.len() - 3]), Err(ProtocolError::MalformedUpstream(_))));
}

#[test]
fn exceptions_are_upstream_errors_of_their_class() {
    for (kind, class) in [
        ("throttlingException", "rate_limit_error"),
        ("serviceUnavailableException", "overloaded_error"),
        ("modelStreamErrorException", "api_error"),
        ("internalServerException", "api_error"),
        ("validationException", "invalid_request_error"),
    ] {
        let mut bytes = framed(&transcript()[..6]);
        bytes.extend(exception(kind, r#"{"message":"Too many tokens, please wait."}"#));
        assert_eq!(
            decode(&bytes),
            Err(ProtocolError::UpstreamError {
                kind: class.into(),
                message: format!("{kind}: Too many tokens, please wait."),
            }),
            "{kind}"
        );
    }
    // A model's own failure carries its message; an empty one names the type.
    let bytes = exception(
        "modelStreamErrorException",
        r#"{"originalStatusCode":500,"originalMessage":"model crashed"}"#,
    );
    assert_eq!(
        decode(&bytes),
        Err(ProtocolError::UpstreamError {
            kind: "api_error".into(),
            message: "modelStreamErrorException: model crashed".into()
        })
    );
    assert_eq!(
        decode(&exception("internalServerException", "")),
        Err(ProtocolError::UpstreamError {
            kind: "api_error".into(),
            message: "internalServerException".into()
        })
    );
    // An event-stream `error` message ends the stream too.
    let error = frames::message(
        &[
            (":message-type", frames::Value::Str("error")),
            (":error-code", frames::Value::Str("InternalFailure")),
            (":error-message", frames::Value::Str("try again")),
        ],
        b"",
    );
    assert_eq!(
        decode(&error),
        Err(ProtocolError::UpstreamError {
            kind: "InternalFailure".into(),
            message: "try again".into()
        })
    );
}

#[test]
fn redacted_reasoning_is_whole_when_its_block_ends() {
    let events = decode(&framed(&[
        ("messageStart", json!({"role": "assistant"})),
        ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "RW5j"}}})),
        ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"redactedContent": "cnlwdGVk"}}})),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "Done."}})),
        // A delta of a kind the gateway does not show, and an event it does not know.
        ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"citation": {"title": "x"}}})),
        ("someFutureEvent", json!({"x": 1})),
        ("messageStop", json!({"stopReason": "end_turn"})),
    ]))
    .unwrap();
    assert_invariants(&events);
    let resp = accumulate(&events);
    assert_eq!(
        resp.content,
        vec![
            Part::RedactedThinking { data: "RW5jcnlwdGVk".into() },
            Part::Text(TextBlock::new("Done."))
        ]
    );
}

#[test]
fn blocks_that_follow_without_a_stop_are_still_closed_in_order() {
    // No contentBlockStop between blocks, and reasoning that is only a signature.
    let events = decode(&framed(&[
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln"}}}),
        ),
        ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": ""}})),
        ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"text": "a"}})),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
        ),
        ("messageStop", json!({"stopReason": "tool_use"})),
    ]))
    .unwrap();
    assert_invariants(&events);
    let resp = accumulate(&events);
    assert_eq!(resp.content.len(), 3);
    assert_eq!(
        resp.content[0],
        Part::Thinking { text: String::new(), signature: Some("c2ln".into()) }
    );
    assert!(
        matches!(&resp.content[2], Part::ToolCall(c) if c.id == "t1" && c.arguments.is_empty())
    );
}

#[test]
fn tool_input_outside_a_tool_call_is_malformed() {
    let bytes = framed(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}),
        ),
    ]);
    assert!(matches!(decode(&bytes), Err(ProtocolError::MalformedUpstream(_))));
    let bytes = event("contentBlockDelta", "not json");
    match decode(&bytes) {
        Err(ProtocolError::MalformedUpstream(m)) => assert!(m.contains("contentBlockDelta"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn nothing_after_the_stop_changes_the_answer() {
    let mut events = transcript();
    events.push(("contentBlockDelta", json!({"contentBlockIndex": 9, "delta": {"text": "late"}})));
    let mut bytes = framed(&events);
    bytes.extend(exception("internalServerException", r#"{"message":"late"}"#));
    assert_eq!(decode(&bytes).unwrap(), transcript_events());
}
