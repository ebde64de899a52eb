//! What the Bedrock tests share: part builders, a Converse writer for answers
//! (whole and streamed, as Bedrock writes them, event-stream framed), the
//! stream helpers and the invariants every decoder keeps.

use serde_json::{Map, Value, json};

use crate::frame::test_support::{self as frames, event};
use crate::model::{Message, Part, ResponseAccumulator, Role, TextBlock, ToolCall, ToolResult};
use crate::{
    Framing, ModelTraits, ProtocolError, Request, Response, StopReason, StreamDecoder, StreamEvent,
    Usage, Wire,
};

use super::{Decoder, encode_request};

pub(super) const CLAUDE: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
pub(super) const CLAUDE_ADAPTIVE: &str = "global.anthropic.claude-opus-4-6-v1";
pub(super) const NOVA: &str = "us.amazon.nova-pro-v1:0";
pub(super) const LLAMA: &str = "meta.llama3-3-70b-instruct-v1:0";

pub(super) fn text(t: &str) -> Part {
    Part::Text(TextBlock::new(t))
}

pub(super) fn call(id: &str, name: &str, arguments: &str) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        signature: None,
    })
}

pub(super) fn result(call_id: &str, text_: &str, is_error: bool) -> Part {
    Part::ToolResult(ToolResult {
        call_id: call_id.into(),
        name: None,
        content: vec![text(text_)],
        is_error,
    })
}

pub(super) fn msg(role: Role, content: Vec<Part>) -> Message {
    Message { role, content }
}

/// The body for `req` with the traits its model's id gives (Claude ids are read
/// as Anthropic's, which is how the catalog infers them).
pub(super) fn encode(req: &Request) -> Result<Value, ProtocolError> {
    encode_request(req, ModelTraits::infer(Wire::Anthropic, &req.model))
}

/// Converse's name for a stop reason (`Refusal` and `PauseTurn` have none).
pub(super) fn wire_stop(reason: StopReason) -> &'static str {
    match reason {
        StopReason::EndTurn | StopReason::Refusal | StopReason::PauseTurn => "end_turn",
        StopReason::MaxTokens => "max_tokens",
        StopReason::StopSequence => "stop_sequence",
        StopReason::ToolUse => "tool_use",
        StopReason::ContentFilter => "content_filtered",
        StopReason::Error => "malformed_model_output",
    }
}

/// Usage as Converse reports it: `inputTokens` without the cached tokens.
pub(super) fn wire_usage(usage: &Usage) -> Value {
    let mut map = Map::new();
    let input = usage.uncached_input().unwrap_or(0);
    let output = usage.output_tokens.unwrap_or(0);
    let read = usage.cache_read_tokens.unwrap_or(0);
    let write = usage.cache_write_tokens.unwrap_or(0);
    map.insert("inputTokens".into(), json!(input));
    map.insert("outputTokens".into(), json!(output));
    map.insert("totalTokens".into(), json!(input + output + read + write));
    if let Some(read) = usage.cache_read_tokens {
        map.insert("cacheReadInputTokens".into(), json!(read));
    }
    if let Some(write) = usage.cache_write_tokens {
        map.insert("cacheWriteInputTokens".into(), json!(write));
    }
    Value::Object(map)
}

/// A whole `ConverseResponse` for `resp`, as Bedrock writes it.
pub(super) fn converse_response(resp: &Response) -> Value {
    let content: Vec<Value> = resp
        .content
        .iter()
        .filter_map(|part| match part {
            Part::Text(t) => Some(json!({"text": t.text})),
            Part::Thinking { text, signature } => {
                let mut r = json!({"text": text});
                if let Some(signature) = signature {
                    r["signature"] = json!(signature);
                }
                Some(json!({"reasoningContent": {"reasoningText": r}}))
            }
            Part::RedactedThinking { data } => {
                Some(json!({"reasoningContent": {"redactedContent": data}}))
            }
            Part::ToolCall(c) => Some(json!({"toolUse": {
                "toolUseId": c.id,
                "name": c.name,
                "input": serde_json::from_str::<Value>(&c.arguments).unwrap(),
            }})),
            _ => None,
        })
        .collect();
    let mut body = json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": wire_stop(resp.stop_reason.unwrap_or(StopReason::EndTurn)),
        "usage": wire_usage(&resp.usage),
        "metrics": {"latencyMs": 812},
    });
    if let Some(seq) = &resp.stop_sequence {
        body["additionalModelResponseFields"] = json!({"stop_sequence": seq});
    }
    body
}

/// The ConverseStream events for `resp` (name, payload), as Bedrock writes them:
/// no start for text and reasoning, text and arguments cut in two, the `p`
/// padding Bedrock adds to every event.
pub(super) fn converse_events(resp: &Response) -> Vec<(&'static str, Value)> {
    let pad = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0";
    let mut events = vec![("messageStart", json!({"role": "assistant", "p": pad}))];
    let halves = |s: &str| -> Vec<String> {
        let cut = s.char_indices().nth(s.chars().count() / 2).map_or(s.len(), |(i, _)| i);
        [&s[..cut], &s[cut..]].into_iter().filter(|h| !h.is_empty()).map(str::to_owned).collect()
    };
    let delta = |i: usize, delta: Value| {
        ("contentBlockDelta", json!({"contentBlockIndex": i, "delta": delta, "p": pad}))
    };
    for (i, part) in resp.content.iter().enumerate() {
        match part {
            Part::Text(t) => {
                for h in halves(&t.text) {
                    events.push(delta(i, json!({"text": h})));
                }
            }
            Part::Thinking { text, signature } => {
                for h in halves(text) {
                    events.push(delta(i, json!({"reasoningContent": {"text": h}})));
                }
                if let Some(s) = signature {
                    events.push(delta(i, json!({"reasoningContent": {"signature": s}})));
                }
            }
            Part::RedactedThinking { data } => {
                events.push(delta(i, json!({"reasoningContent": {"redactedContent": data}})));
            }
            Part::ToolCall(c) => {
                events.push((
                    "contentBlockStart",
                    json!({"contentBlockIndex": i, "start": {"toolUse": {"toolUseId": c.id, "name": c.name}}, "p": pad}),
                ));
                for h in halves(&c.arguments) {
                    events.push(delta(i, json!({"toolUse": {"input": h}})));
                }
            }
            _ => continue,
        }
        events.push(("contentBlockStop", json!({"contentBlockIndex": i, "p": pad})));
    }
    let mut stop =
        json!({"stopReason": wire_stop(resp.stop_reason.unwrap_or(StopReason::EndTurn))});
    if let Some(seq) = &resp.stop_sequence {
        stop["additionalModelResponseFields"] = json!({"stop_sequence": seq});
    }
    events.push(("messageStop", stop));
    events.push((
        "metadata",
        json!({"usage": wire_usage(&resp.usage), "metrics": {"latencyMs": 640}, "p": pad}),
    ));
    events
}

/// Events as the event-stream bytes Bedrock sends.
pub(super) fn framed(events: &[(&str, Value)]) -> Vec<u8> {
    events.iter().flat_map(|(name, payload)| event(name, &payload.to_string())).collect()
}

/// An `exception` message, as ConverseStream ends a stream that failed.
pub(super) fn exception(kind: &str, payload: &str) -> Vec<u8> {
    frames::message(
        &[
            (":exception-type", frames::Value::Str(kind)),
            (":content-type", frames::Value::Str("application/json")),
            (":message-type", frames::Value::Str("exception")),
        ],
        payload.as_bytes(),
    )
}

/// Decode event-stream bytes cut at `cuts` (ascending offsets): the events, or
/// the first error.
pub(super) fn decode_at(bytes: &[u8], cuts: &[usize]) -> Result<Vec<StreamEvent>, ProtocolError> {
    let mut framer = Framing::AwsEventStream.framer();
    let mut decoder = Decoder::new();
    let mut frames = Vec::new();
    let mut out = Vec::new();
    let mut prev = 0;
    for cut in cuts.iter().copied().chain([bytes.len()]) {
        framer.push(&bytes[prev..cut], &mut frames)?;
        prev = cut;
        for frame in frames.drain(..) {
            decoder.push(&frame, &mut out)?;
        }
    }
    framer.finish(&mut frames)?;
    for frame in frames.drain(..) {
        decoder.push(&frame, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

pub(super) fn decode(bytes: &[u8]) -> Result<Vec<StreamEvent>, ProtocolError> {
    decode_at(bytes, &[])
}

pub(super) fn accumulate(events: &[StreamEvent]) -> Response {
    let mut acc = ResponseAccumulator::default();
    for e in events {
        acc.push(e);
    }
    acc.finish()
}

/// Start first and once; blocks opened and closed in order with gapless indices;
/// Stop once, after the last block.
pub(super) fn assert_invariants(events: &[StreamEvent]) {
    assert!(matches!(events.first(), Some(StreamEvent::Start { .. })), "{events:?}");
    let mut open: Option<usize> = None;
    let mut next = 0;
    let mut stopped = false;
    for e in events.iter().skip(1) {
        match e {
            StreamEvent::Start { .. } => panic!("second Start"),
            StreamEvent::BlockStart { index, .. } => {
                assert!(!stopped && open.is_none() && *index == next, "{events:?}");
                open = Some(*index);
                next += 1;
            }
            StreamEvent::Delta { index, .. } => assert_eq!(open, Some(*index)),
            StreamEvent::BlockStop { index } => assert_eq!(open.take(), Some(*index)),
            StreamEvent::Usage { .. } => {}
            StreamEvent::Stop { .. } => {
                assert!(!stopped && open.is_none(), "{events:?}");
                stopped = true;
            }
        }
    }
    assert!(stopped, "no Stop in {events:?}");
}
