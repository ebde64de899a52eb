//! What the Gemini tests share: part builders, stream helpers and fixtures.

use serde_json::{Value, json};

use crate::model::{Message, Part, ResponseAccumulator, Role, TextBlock, ToolCall, ToolResult};
use crate::sse::SseDecoder;
use crate::{ProtocolError, Response, StreamDecoder, StreamEncoder, StreamEvent};

use super::{Decoder, Encoder};

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

pub(super) fn signed(id: &str, name: &str, arguments: &str, signature: &str) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        signature: Some(signature.into()),
    })
}

pub(super) fn result(call_id: &str, name: Option<&str>, text_: &str, is_error: bool) -> Part {
    Part::ToolResult(ToolResult {
        call_id: call_id.into(),
        name: name.map(Into::into),
        content: vec![text(text_)],
        is_error,
    })
}

pub(super) fn msg(role: Role, content: Vec<Part>) -> Message {
    Message { role, content }
}

pub(super) fn decode_sse(bytes: &[u8]) -> Result<Vec<StreamEvent>, ProtocolError> {
    decode_chunks(&[bytes])
}

pub(super) fn decode_chunks(chunks: &[&[u8]]) -> Result<Vec<StreamEvent>, ProtocolError> {
    let mut sse = SseDecoder::new();
    let mut sse_events = Vec::new();
    for c in chunks {
        sse.push(c, &mut sse_events).unwrap();
    }
    sse.finish(&mut sse_events);
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for e in &sse_events {
        decoder.push(e, &mut out)?;
    }
    decoder.finish(&mut out)?;
    Ok(out)
}

pub(super) fn accumulate(events: &[StreamEvent]) -> Response {
    let mut acc = ResponseAccumulator::default();
    for e in events {
        acc.push(e);
    }
    acc.finish()
}

pub(super) fn encode_events(events: &[StreamEvent]) -> Vec<u8> {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    for e in events {
        enc.push(e, &mut out);
    }
    enc.finish(&mut out);
    out
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
            StreamEvent::BlockStop { index } => {
                assert_eq!(open.take(), Some(*index));
            }
            StreamEvent::Usage { .. } => {}
            StreamEvent::Stop { .. } => {
                assert!(!stopped && open.is_none(), "{events:?}");
                stopped = true;
            }
        }
    }
    assert!(stopped, "no Stop in {events:?}");
}

pub(super) const GEMINI3_RESPONSE: &str = r#"{
  "candidates": [{
    "content": {"role": "model", "parts": [
      {"text": "**Planning the lookup**\nThe user wants two cities.", "thought": true},
      {"text": "I'll look up "},
      {"text": "both cities."},
      {"functionCall": {"id": "8f2kq1", "name": "get_weather", "args": {"city": "Paris"}},
       "thoughtSignature": "CiQBVKhc7+abc/defg=="},
      {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
      {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
      {"text": "", "thoughtSignature": "EjQKMg=="}
    ]},
    "finishReason": "STOP",
    "index": 0,
    "safetyRatings": []
  }],
  "usageMetadata": {
    "promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 279,
    "thoughtsTokenCount": 50, "cachedContentTokenCount": 64, "toolUsePromptTokenCount": 5,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}]
  },
  "modelVersion": "gemini-3-pro-preview",
  "responseId": "Yx3kaPq2Lf-0qtsP4bWRgA0"
}"#;

pub(super) const TRANSCRIPT: &str = concat!(
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"**Planning**\\nI need the weather.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],",
    "\"usageMetadata\": {\"promptTokenCount\": 80,\"totalTokenCount\": 80},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" Calling the tool.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],",
    "\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Let me\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" check.\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"get_weather\",\"args\": {\"city\": \"Paris\"}},",
    "\"thoughtSignature\": \"Cm8BcsjafP+x/yz=\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],",
    "\"usageMetadata\": {\"promptTokenCount\": 80,\"candidatesTokenCount\": 25,\"totalTokenCount\": 135,\"thoughtsTokenCount\": 30},",
    "\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
);

pub(super) const SIGNED_CALL_ID: &str = "call_r3sp0nse_0";
pub(super) const TRANSCRIPT_SIGNATURE: &str = "Cm8BcsjafP+x/yz=";

pub(super) fn weather_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "City name"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        },
        "required": ["city"],
        "additionalProperties": false
    })
}
