//! The stream decoder and encoder.

use serde_json::{Value, json};

use crate::{
    BlockKind, Delta, ErrorBody, ErrorCode, Frame, Part, ProtocolError, ResponseAccumulator,
    SseDecoder, SseEvent, StopReason, StreamDecoder, StreamEncoder, StreamEvent, TextBlock, Usage,
};

use super::{Decoder, Encoder};
use crate::Framing;
use crate::frame::test_support::event;

/// A recorded-style Anthropic stream: text, then a tool call whose JSON is split
/// mid-token, then the final usage.
const TRANSCRIPT: &str = concat!(
    "event: message_start\n",
    r#"data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":10240,"output_tokens":2,"service_tier":"standard"}}}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
    "\n\n",
    "event: ping\n",
    r#"data: {"type": "ping"}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay, let"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'s check the weather."}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":0}"#,
    "\n\n",
    "event: content_block_start\n",
    r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"locat"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ion\": \"San Fra"}}"#,
    "\n\n",
    "event: content_block_delta\n",
    r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\"}"}}"#,
    "\n\n",
    "event: content_block_stop\n",
    r#"data: {"type":"content_block_stop","index":1}"#,
    "\n\n",
    "event: message_delta\n",
    r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
    "\n\n",
    "event: message_stop\n",
    r#"data: {"type":"message_stop"}"#,
    "\n\n",
);

/// Decode SSE bytes fed in `chunk`-byte pieces; returns events and the first error.
fn decode(bytes: &[u8], chunk: usize) -> (Vec<StreamEvent>, Result<(), ProtocolError>) {
    let mut sse = SseDecoder::new();
    let mut decoder = Decoder::new();
    let mut raw = Vec::new();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        sse.push(piece, &mut raw).unwrap();
        for ev in raw.drain(..) {
            if let Err(e) = decoder.push(&ev, &mut out) {
                return (out, Err(e));
            }
        }
    }
    sse.finish(&mut raw);
    for ev in raw.drain(..) {
        if let Err(e) = decoder.push(&ev, &mut out) {
            return (out, Err(e));
        }
    }
    let result = decoder.finish(&mut out);
    (out, result)
}

fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
    Usage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        cache_read_tokens: Some(read),
        cache_write_tokens: Some(write),
        reasoning_tokens: None,
    }
}

// ---------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------

#[test]
fn decodes_a_recorded_stream() {
    let (events, result) = decode(TRANSCRIPT.as_bytes(), 7);
    result.unwrap();
    let text = |t: &str| Delta::Text { text: t.into() };
    let args = |j: &str| Delta::ToolArguments { json: j.into() };
    assert_eq!(
        events,
        vec![
            StreamEvent::Start {
                id: "msg_014p7gG3wDgGV9EUtLvnow3U".into(),
                model: "claude-sonnet-4-5-20250929".into()
            },
            StreamEvent::Usage { usage: usage(10712, 2, 10240, 0) },
            StreamEvent::BlockStart { index: 0, kind: BlockKind::Text },
            StreamEvent::Delta { index: 0, delta: text("Okay, let") },
            StreamEvent::Delta { index: 0, delta: text("'s check the weather.") },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::BlockStart {
                index: 1,
                kind: BlockKind::ToolCall {
                    id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                    name: "get_weather".into()
                }
            },
            StreamEvent::Delta { index: 1, delta: args("") },
            StreamEvent::Delta { index: 1, delta: args("{\"locat") },
            StreamEvent::Delta { index: 1, delta: args("ion\": \"San Fra") },
            StreamEvent::Delta { index: 1, delta: args("ncisco, CA\"}") },
            StreamEvent::BlockStop { index: 1 },
            StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
            StreamEvent::Usage { usage: usage(10712, 89, 10240, 0) },
        ]
    );
    let mut acc = ResponseAccumulator::default();
    events.iter().for_each(|e| acc.push(e));
    let resp = acc.finish();
    let Part::ToolCall(call) = &resp.content[1] else { panic!("expected a tool call") };
    assert_eq!(call.arguments, r#"{"location": "San Francisco, CA"}"#);
}

/// Decode `bytes` framed as `framing`, fed in `chunk`-byte pieces.
fn decode_framed(
    framing: Framing,
    bytes: &[u8],
    chunk: usize,
) -> Result<Vec<StreamEvent>, ProtocolError> {
    let mut framer = framing.framer();
    let mut decoder = Decoder::new();
    let mut frames = Vec::new();
    let mut out = Vec::new();
    for piece in bytes.chunks(chunk) {
        framer.push(piece, &mut frames)?;
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

#[test]
fn decoding_does_not_depend_on_the_framing() {
    let from_sse = decode_framed(Framing::Sse, TRANSCRIPT.as_bytes(), 7).unwrap();
    assert_eq!(from_sse, decode(TRANSCRIPT.as_bytes(), 7).0);
    let mut sse = Vec::new();
    let mut framer = Framing::Sse.framer();
    framer.push(TRANSCRIPT.as_bytes(), &mut sse).unwrap();
    framer.finish(&mut sse).unwrap();
    // The same events as JSON lines (each one's data names its `type`), and as
    // event-stream messages named by `:event-type`, their data without `type` so
    // the name is all the decoder has to go by.
    let lines: String = sse.iter().map(|f| format!("{}\n", f.data)).collect();
    let mut binary = Vec::new();
    for f in &sse {
        let mut data: Value = serde_json::from_str(&f.data).unwrap();
        data.as_object_mut().unwrap().remove("type");
        binary.extend(event(f.event.as_deref().unwrap(), &data.to_string()));
    }
    for (framing, bytes) in
        [(Framing::JsonLines, lines.as_bytes()), (Framing::AwsEventStream, &binary[..])]
    {
        for chunk in [1, 7, bytes.len()] {
            let events = decode_framed(framing, bytes, chunk).unwrap();
            assert_eq!(events, from_sse, "{framing:?} in {chunk}-byte chunks");
        }
    }
}

#[test]
fn decoder_renumbers_around_server_blocks_and_reads_thinking() {
    let lines = [
        r#"{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me search."}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
        r#"{"type":"content_block_stop","index":1}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}"#,
        r#"{"type":"content_block_stop","index":2}"#,
        r#"{"type":"content_block_start","index":3,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
        r#"{"type":"content_block_stop","index":3}"#,
        r#"{"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{}}}"#,
        r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"Found."}}"#,
        r#"{"type":"content_block_stop","index":4}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":30}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for data in lines {
        // No `event:` names: the decoder goes by the data's `type`.
        decoder.push(&Frame { data: data.into(), ..Frame::default() }, &mut out).unwrap();
    }
    decoder.finish(&mut out).unwrap();
    let starts: Vec<(usize, BlockKind)> = out
        .iter()
        .filter_map(|e| match e {
            StreamEvent::BlockStart { index, kind } => Some((*index, kind.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (0, BlockKind::Thinking),
            (1, BlockKind::RedactedThinking { data: "opaque".into() }),
            (2, BlockKind::Text)
        ]
    );
    let mut acc = ResponseAccumulator::default();
    out.iter().for_each(|e| acc.push(e));
    let resp = acc.finish();
    assert_eq!(
        resp.content,
        vec![
            Part::Thinking { text: "Let me search.".into(), signature: Some("c2ln".into()) },
            Part::RedactedThinking { data: "opaque".into() },
            Part::Text(TextBlock::new("Found.")),
        ]
    );
    assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
    assert_eq!(
        resp.usage,
        Usage {
            input_tokens: Some(12),
            output_tokens: Some(30),
            cache_read_tokens: Some(7),
            ..Usage::default()
        }
    );
}

#[test]
fn decoder_error_paths() {
    // An error event mid-stream.
    let stream = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1,"output_tokens":1}}}"#,
        "\n\n",
        "event: error\n",
        r#"data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
        "\n\n",
    );
    let (_, result) = decode(stream.as_bytes(), 5);
    assert_eq!(
        result,
        Err(ProtocolError::UpstreamError {
            kind: "overloaded_error".into(),
            message: "Overloaded".into()
        })
    );

    // Truncated: everything but message_delta / message_stop.
    let cut = TRANSCRIPT.find("event: message_delta").unwrap();
    let (events, result) = decode(&TRANSCRIPT.as_bytes()[..cut], 64);
    assert_eq!(
        result,
        Err(ProtocolError::MalformedUpstream("stream ended before message_stop".into()))
    );
    assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })));

    // Garbage data, content before message_start, delta for a block never opened.
    let mut d = Decoder::new();
    let ev = |data: &str| Frame { event: Some("x".into()), data: data.into(), id: None };
    assert!(matches!(
        d.push(&ev("not json"), &mut Vec::new()),
        Err(ProtocolError::MalformedUpstream(_))
    ));
    assert!(matches!(
        d.push(&ev(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#), &mut Vec::new()),
        Err(ProtocolError::MalformedUpstream(_))
    ));
    d.push(&ev(r#"{"type":"message_start","message":{"id":"m","model":"c"}}"#), &mut Vec::new())
        .unwrap();
    assert!(matches!(
        d.push(&ev(r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#), &mut Vec::new()),
        Err(ProtocolError::MalformedUpstream(_))
    ));
}

// ---------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------

fn encode_events(events: &[StreamEvent]) -> Vec<SseEvent> {
    let mut enc = Encoder::new();
    let mut bytes = Vec::new();
    for e in events {
        enc.push(e, &mut bytes);
    }
    enc.finish(&mut bytes);
    let mut sse = SseDecoder::new();
    let mut out = Vec::new();
    sse.push(&bytes, &mut out).unwrap();
    sse.finish(&mut out);
    out
}

fn data(ev: &SseEvent) -> Value {
    serde_json::from_str(&ev.data).unwrap()
}

#[test]
fn encoder_holds_message_start_for_early_usage() {
    let out = encode_events(&[
        StreamEvent::Start { id: "msg_1".into(), model: "claude".into() },
        StreamEvent::Usage {
            usage: Usage {
                input_tokens: Some(1500),
                output_tokens: Some(1),
                cache_read_tokens: Some(1000),
                cache_write_tokens: Some(200),
                reasoning_tokens: None,
            },
        },
        StreamEvent::BlockStart { index: 0, kind: BlockKind::Text },
        StreamEvent::Delta { index: 0, delta: Delta::Text { text: "hi".into() } },
        StreamEvent::BlockStop { index: 0 },
        StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None },
        StreamEvent::Usage { usage: Usage { output_tokens: Some(12), ..Usage::default() } },
    ]);
    let names: Vec<&str> = out.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(
        data(&out[0]),
        json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 300, "output_tokens": 1,
                      "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}}})
    );
    assert_eq!(
        data(&out[1]),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}})
    );
    assert_eq!(
        data(&out[2]),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "hi"}})
    );
    assert_eq!(
        data(&out[4]),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "end_turn", "stop_sequence": null},
               "usage": {"input_tokens": 300, "output_tokens": 12,
                         "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}})
    );
    assert_eq!(data(&out[5]), json!({"type": "message_stop"}));
}

#[test]
fn encoder_takes_usage_after_stop_and_closes_blocks() {
    // OpenAI-style upstream: usage after the finish reason, no explicit BlockStop.
    let out = encode_events(&[
        StreamEvent::Start { id: "chatcmpl-1".into(), model: "gpt".into() },
        StreamEvent::BlockStart {
            index: 0,
            kind: BlockKind::ToolCall { id: "call_1".into(), name: "f".into() },
        },
        StreamEvent::Delta { index: 0, delta: Delta::ToolArguments { json: "{\"a\":".into() } },
        StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
        StreamEvent::Usage {
            usage: Usage { input_tokens: Some(40), output_tokens: Some(9), ..Usage::default() },
        },
    ]);
    let names: Vec<&str> = out.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(data(&out[0])["message"]["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
    assert_eq!(
        data(&out[1])["content_block"],
        json!({"type": "tool_use", "id": "call_1", "name": "f", "input": {}})
    );
    assert_eq!(
        data(&out[2])["delta"],
        json!({"type": "input_json_delta", "partial_json": "{\"a\":"})
    );
    assert_eq!(
        data(&out[4]),
        json!({"type": "message_delta",
               "delta": {"stop_reason": "tool_use", "stop_sequence": null},
               "usage": {"input_tokens": 40, "output_tokens": 9}})
    );
}

#[test]
fn encoder_error_event() {
    let mut enc = Encoder::new();
    let mut bytes = Vec::new();
    enc.push(&StreamEvent::Start { id: "m".into(), model: "c".into() }, &mut bytes);
    enc.push(&StreamEvent::BlockStart { index: 0, kind: BlockKind::Text }, &mut bytes);
    bytes.clear();
    let err = ErrorBody::new(ErrorCode::UpstreamOverloaded, "try later");
    enc.error(&err, &mut bytes);
    enc.finish(&mut bytes); // nothing more after an error
    let text = String::from_utf8(bytes).unwrap();
    assert_eq!(text, format!("event: error\ndata: {}\n\n", err.to_anthropic()));
    // And our own decoder reads it back as an upstream error.
    let (_, result) = decode(
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{}}}}\n\n{text}"
        )
        .as_bytes(),
        3,
    );
    assert_eq!(
        result,
        Err(ProtocolError::UpstreamError {
            kind: "overloaded_error".into(),
            message: "try later".into()
        })
    );
}
