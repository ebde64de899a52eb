//! The stream encoder and decoder.

use serde_json::{Value, json};

use crate::responses::test_support::{
    accumulate, decode, encode_events, payloads, sse, sse_split, text,
};
use crate::{
    BlockKind, Delta, ErrorBody, ErrorCode, Frame, Part, ProtocolError, Response, StopReason,
    StreamDecoder, StreamEncoder, StreamEvent, ToolCall, Usage,
};

use super::{Decoder, Encoder};

/// Reasoning, text and a tool call, with usage arriving after the stop reason.
fn transcript_events() -> Vec<StreamEvent> {
    vec![
        StreamEvent::Start { id: "abc".into(), model: "gpt-5-codex".into() },
        StreamEvent::BlockStart { index: 0, kind: BlockKind::Thinking },
        StreamEvent::Delta { index: 0, delta: Delta::Thinking { text: "Need to ".into() } },
        StreamEvent::Delta { index: 0, delta: Delta::Thinking { text: "list.".into() } },
        StreamEvent::Delta { index: 0, delta: Delta::Signature { signature: "sig".into() } },
        StreamEvent::BlockStop { index: 0 },
        StreamEvent::BlockStart { index: 1, kind: BlockKind::Text },
        StreamEvent::Delta { index: 1, delta: Delta::Text { text: "Listing ".into() } },
        StreamEvent::Delta { index: 1, delta: Delta::Text { text: "files.".into() } },
        StreamEvent::BlockStop { index: 1 },
        StreamEvent::BlockStart {
            index: 2,
            kind: BlockKind::ToolCall { id: "call_9".into(), name: "shell".into() },
        },
        StreamEvent::Delta {
            index: 2,
            delta: Delta::ToolArguments { json: "{\"command\":".into() },
        },
        StreamEvent::Delta { index: 2, delta: Delta::ToolArguments { json: "[\"ls\"]}".into() } },
        StreamEvent::BlockStop { index: 2 },
        StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: Some(1200),
                output_tokens: Some(40),
                cache_read_tokens: Some(1024),
                cache_write_tokens: None,
                reasoning_tokens: Some(16),
            },
        },
    ]
}

#[test]
fn encoder_transcript() {
    let bytes = encode_events(&transcript_events());
    let events = payloads(&bytes);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["sequence_number"].as_u64(), Some(i as u64), "sequence of {e}");
    }

    // Every item-scoped event names the item most recently added, at its index.
    let mut current: Option<(Value, Value)> = None;
    let mut done_items = Vec::new();
    for e in &events {
        if e["type"] == "response.output_item.added" {
            current = Some((e["item"]["id"].clone(), e["output_index"].clone()));
            assert!(
                e["item"]["id"].as_str().unwrap().ends_with(&format!("_abc_{}", e["output_index"]))
            );
        } else if let Some(item_id) = e.get("item_id") {
            let (id, index) = current.clone().unwrap();
            assert_eq!((item_id, &e["output_index"]), (&id, &index), "{e}");
        }
        if e["type"] == "response.output_item.done" {
            let (id, index) = current.clone().unwrap();
            assert_eq!((&e["item"]["id"], &e["output_index"]), (&id, &index));
            done_items.push(e["item"].clone());
        }
    }
    assert_eq!(events[0]["response"]["status"], "in_progress");
    assert_eq!(events[0]["response"]["id"], "resp_abc");
    assert_eq!(events[0]["response"]["output"], json!([]));
    assert_eq!(events[4]["delta"], "Need to ");
    assert_eq!(events[6]["text"], "Need to list.");
    assert_eq!(events[13]["text"], "Listing files.");
    assert_eq!(events[19]["arguments"], "{\"command\":[\"ls\"]}");
    assert_eq!(
        done_items,
        vec![
            json!({"type": "reasoning", "id": "rs_abc_0",
                   "summary": [{"type": "summary_text", "text": "Need to list."}]}),
            json!({"type": "message", "id": "msg_abc_1", "status": "completed",
                   "role": "assistant", "content": [
                       {"type": "output_text", "text": "Listing files.", "annotations": []}]}),
            json!({"type": "function_call", "id": "fc_abc_2", "call_id": "call_9",
                   "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
                   "status": "completed"}),
        ]
    );

    let completed = &events[21]["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["id"], "resp_abc");
    assert_eq!(completed["model"], "gpt-5-codex");
    assert_eq!(completed["output"], Value::Array(done_items));
    assert_eq!(
        completed["usage"],
        json!({"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024},
               "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 16},
               "total_tokens": 1240})
    );

    // And the decoder reads it back.
    let back = accumulate(&decode(&sse_split(&bytes, &[])).unwrap());
    assert_eq!(
        back.content,
        vec![
            Part::Thinking { text: "Need to list.".into(), signature: None },
            text("Listing files."),
            Part::ToolCall(ToolCall {
                id: "call_9".into(),
                name: "shell".into(),
                arguments: "{\"command\":[\"ls\"]}".into(),
                signature: None,
            }),
        ]
    );
    assert_eq!(back.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(back.usage.cache_read_tokens, Some(1024));
}

#[test]
fn encoder_incomplete_redacted_and_error() {
    let events = vec![
        StreamEvent::Start { id: "resp_q".into(), model: "m".into() },
        StreamEvent::BlockStart {
            index: 0,
            kind: BlockKind::RedactedThinking { data: "opaque".into() },
        },
        StreamEvent::BlockStop { index: 0 },
        StreamEvent::BlockStart { index: 1, kind: BlockKind::Text },
        StreamEvent::Delta { index: 1, delta: Delta::Text { text: "cut".into() } },
        StreamEvent::BlockStop { index: 1 },
        StreamEvent::Stop { reason: StopReason::MaxTokens, stop_sequence: None },
    ];
    let events = payloads(&encode_events(&events));
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[2], "response.output_item.added");
    assert_eq!(events[2]["output_index"], 0, "redacted thinking produced no item");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.incomplete");
    assert_eq!(last["response"]["status"], "incomplete");
    assert_eq!(last["response"]["incomplete_details"], json!({"reason": "max_output_tokens"}));
    assert!(last["response"].get("usage").is_none());

    let mut encoder = Encoder::new();
    let mut bytes = Vec::new();
    encoder.push(&StreamEvent::Start { id: "e1".into(), model: "m".into() }, &mut bytes);
    let err = ErrorBody::new(ErrorCode::UpstreamUnreachable, "boom");
    encoder.error(&err, &mut bytes);
    encoder.finish(&mut bytes);
    let events = payloads(&bytes);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["response.created", "response.in_progress", "error", "response.failed"]);
    assert_eq!(events[2]["code"], "upstream_unreachable");
    assert_eq!(events[2]["message"], "boom");
    assert_eq!(events[2]["sequence_number"], 2);
    assert_eq!(events[3]["response"]["status"], "failed");
    assert_eq!(
        events[3]["response"]["error"],
        json!({"code": "upstream_unreachable", "message": "boom"})
    );
    // The decoder turns the failure back into an upstream error.
    assert_eq!(
        decode(&sse_split(&bytes, &[])).unwrap_err(),
        ProtocolError::UpstreamError {
            kind: "upstream_unreachable".into(),
            message: "boom".into()
        }
    );
}

#[test]
fn decoder_errors() {
    let created = sse("response.created", json!({"response": {"id": "resp_1", "model": "m"}}));
    let error =
        sse("error", json!({"code": "rate_limit_exceeded", "message": "slow down", "param": null}));
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    decoder.push(&created, &mut out).unwrap();
    assert_eq!(out, vec![StreamEvent::Start { id: "resp_1".into(), model: "m".into() }]);
    assert_eq!(
        decoder.push(&error, &mut out).unwrap_err(),
        ProtocolError::UpstreamError {
            kind: "rate_limit_exceeded".into(),
            message: "slow down".into()
        }
    );
    // Cut short: no terminal event.
    assert!(matches!(
        decode(std::slice::from_ref(&created)),
        Err(ProtocolError::MalformedUpstream(_))
    ));
    let garbage = Frame { event: None, data: "{not json".into(), id: None };
    assert!(matches!(decode(&[created, garbage]), Err(ProtocolError::MalformedUpstream(_))));
}

/// An upstream that sends finished items without deltas, plus hosted-tool noise.
#[test]
fn decoder_rebuilds_items_that_did_not_stream() {
    let stream = [
        sse(
            "response.created",
            json!({"response": {"id": "resp_2", "model": "m", "status": "in_progress"}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}]}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 1,
            "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 1,
            "item": {"type": "web_search_call", "id": "ws_1", "status": "completed"}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 2,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 2,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                {"type": "output_text", "text": "hi", "annotations": []}]}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 3,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""}}),
        ),
        sse(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_1", "output_index": 3, "arguments": "{}"}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 3,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": "{}"}}),
        ),
        sse(
            "response.completed",
            json!({"response": {"id": "resp_2", "model": "m", "status": "completed",
            "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}),
        ),
    ];
    let resp = accumulate(&decode(&stream).unwrap());
    assert_eq!(
        resp,
        Response {
            id: "resp_2".into(),
            model: "m".into(),
            content: vec![
                Part::Thinking { text: "a\n\nb".into(), signature: None },
                text("hi"),
                Part::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage { input_tokens: Some(5), output_tokens: Some(2), ..Usage::default() },
        }
    );
}

/// Streamed reasoning with two summary parts, then a refusal and a content filter.
#[test]
fn decoder_joins_summary_parts_and_maps_incomplete() {
    let item = |ty: &str, extra: Value| {
        let mut v = json!({"item_id": "rs_1", "output_index": 0});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        sse(ty, v)
    };
    let stream = [
        sse("response.created", json!({"response": {"id": "resp_3", "model": "m"}})),
        sse(
            "response.output_item.added",
            json!({"output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        ),
        item(
            "response.reasoning_summary_part.added",
            json!({"summary_index": 0,
            "part": {"type": "summary_text", "text": ""}}),
        ),
        item("response.reasoning_summary_text.delta", json!({"summary_index": 0, "delta": "one"})),
        item("response.reasoning_summary_part.done", json!({"summary_index": 0})),
        item(
            "response.reasoning_summary_part.added",
            json!({"summary_index": 1,
            "part": {"type": "summary_text", "text": ""}}),
        ),
        item("response.reasoning_summary_text.delta", json!({"summary_index": 1, "delta": "two"})),
        sse(
            "response.output_item.done",
            json!({"output_index": 0,
            "item": {"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}]}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 1,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
        ),
        sse(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": 1,
            "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        ),
        sse(
            "response.refusal.delta",
            json!({"item_id": "msg_1", "output_index": 1,
            "content_index": 0, "delta": "No."}),
        ),
        sse(
            "response.content_part.done",
            json!({"item_id": "msg_1", "output_index": 1, "content_index": 0}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 1,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                {"type": "refusal", "refusal": "No."}]}}),
        ),
        sse(
            "response.incomplete",
            json!({"response": {"id": "resp_3", "status": "incomplete",
            "incomplete_details": {"reason": "content_filter"}}}),
        ),
    ];
    let resp = accumulate(&decode(&stream).unwrap());
    assert_eq!(
        resp.content,
        vec![Part::Thinking { text: "one\n\ntwo".into(), signature: None }, text("No.")]
    );
    assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
    assert!(resp.usage.is_empty());
}

/// An upstream that only reports the finished response.
#[test]
fn decoder_takes_content_from_a_bare_completion() {
    let stream = [
        sse("response.created", json!({"response": {"id": "resp_4", "model": "m"}})),
        sse(
            "response.completed",
            json!({"response": {"id": "resp_4", "model": "m",
            "status": "completed", "output": [
                {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "done", "annotations": []}]}
            ]}}),
        ),
        // Anything after the terminal event is ignored.
        sse("error", json!({"code": "late", "message": "after the end"})),
    ];
    let resp = accumulate(&decode(&stream).unwrap());
    assert_eq!(resp.content, vec![text("done")]);
    assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
}

// ---------------------------------------------------------------------------------
// What a Responses upstream streams
// ---------------------------------------------------------------------------------

/// An upstream's reasoning: the summary streams, the encrypted reasoning comes
/// with the finished item and becomes the block's signature, tagged with the
/// family; the usage of `response.completed` carries cached and reasoning tokens.
#[test]
fn decoder_carries_encrypted_reasoning_as_a_tagged_signature() {
    let reasoning = |enc: &str| json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan."}], "encrypted_content": enc});
    let events = [
        sse(
            "response.created",
            json!({"response": {"id": "resp_1", "model": "gpt-5", "status": "in_progress"}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        ),
        sse(
            "response.reasoning_summary_part.added",
            json!({"item_id": "rs_1", "summary_index": 0}),
        ),
        sse("response.reasoning_summary_text.delta", json!({"item_id": "rs_1", "delta": "Plan."})),
        sse(
            "response.output_item.done",
            json!({"output_index": 0, "item": reasoning("gAAAAB-enc")}),
        ),
        // A second reasoning item with no summary at all: only its token.
        sse(
            "response.output_item.added",
            json!({"output_index": 1, "item": {"type": "reasoning", "id": "rs_2", "summary": []}}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 1, "item": {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAB-two"}}),
        ),
        sse(
            "response.output_item.added",
            json!({"output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": ""}}),
        ),
        sse(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "delta": "{\"cmd\":"}),
        ),
        sse(
            "response.function_call_arguments.delta",
            json!({"item_id": "fc_1", "delta": "\"ls\"}"}),
        ),
        sse(
            "response.function_call_arguments.done",
            json!({"item_id": "fc_1", "arguments": "{\"cmd\":\"ls\"}"}),
        ),
        sse(
            "response.output_item.done",
            json!({"output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"cmd\":\"ls\"}"}}),
        ),
        sse(
            "response.completed",
            json!({"response": {"id": "resp_1", "model": "gpt-5", "status": "completed", "output": [], "usage": {
                "input_tokens": 50, "input_tokens_details": {"cached_tokens": 32},
                "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 12}, "total_tokens": 70,
            }}}),
        ),
    ];
    let resp = accumulate(&decode(&events).unwrap());
    let tag = |t: &str| Some(crate::continuity::tag_reasoning(super::FAMILY, t));
    assert_eq!(
        resp.content,
        vec![
            Part::Thinking { text: "Plan.".into(), signature: tag("gAAAAB-enc") },
            Part::Thinking { text: String::new(), signature: tag("gAAAAB-two") },
            Part::ToolCall(ToolCall {
                id: "call_1".into(),
                name: "shell".into(),
                arguments: "{\"cmd\":\"ls\"}".into(),
                signature: None,
            }),
        ]
    );
    assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(resp.usage.input_tokens, Some(50));
    assert_eq!(resp.usage.cache_read_tokens, Some(32));
    assert_eq!(resp.usage.reasoning_tokens, Some(12));
    // The whole answer says the same.
    let whole = json!({"id": "resp_1", "model": "gpt-5", "status": "completed",
        "output": [reasoning("gAAAAB-enc")], "usage": {"input_tokens": 1, "output_tokens": 2}});
    let parsed = super::parse_response(whole.to_string().as_bytes()).unwrap();
    assert_eq!(
        parsed.content,
        vec![Part::Thinking { text: "Plan.".into(), signature: tag("gAAAAB-enc") }]
    );
    let usage = super::parse_usage(whole.to_string().as_bytes()).unwrap().unwrap();
    assert_eq!((usage.input_tokens, usage.output_tokens), (Some(1), Some(2)));
}

/// `response.failed` and `error` events are the upstream's errors, with its code.
#[test]
fn decoder_reports_failed_responses_and_error_events() {
    let started = sse("response.created", json!({"response": {"id": "resp_1", "model": "gpt-5"}}));
    let failed = sse(
        "response.failed",
        json!({"response": {"id": "resp_1", "status": "failed",
        "error": {"code": "server_error", "message": "The model failed."}}}),
    );
    match decode(&[started.clone(), failed]) {
        Err(ProtocolError::UpstreamError { kind, message }) => {
            assert_eq!((kind.as_str(), message.as_str()), ("server_error", "The model failed."));
        }
        other => panic!("{other:?}"),
    }
    let error = sse(
        "error",
        json!({"code": "rate_limit_exceeded", "message": "Slow down.", "param": null}),
    );
    match decode(&[started, error]) {
        Err(ProtocolError::UpstreamError { kind, .. }) => assert_eq!(kind, "rate_limit_exceeded"),
        other => panic!("{other:?}"),
    }
    let body =
        json!({"error": {"message": "Invalid 'input[2]'.", "type": "invalid_request_error"}});
    assert_eq!(
        super::parse_error(body.to_string().as_bytes()).as_deref(),
        Some("Invalid 'input[2]'.")
    );
}
