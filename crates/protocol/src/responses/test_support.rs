//! What the Responses tests share.

use serde_json::{Value, json};

use crate::{
    Part, ProtocolError, Request, Response, ResponseAccumulator, SseDecoder, SseEvent,
    StreamDecoder, StreamEncoder, StreamEvent, TextBlock, Tool, response_to_events,
};

use super::{Decoder, Encoder, parse_request};

pub(super) fn parse(body: Value) -> Result<Request, ProtocolError> {
    parse_request(body.to_string().as_bytes())
}

pub(super) fn text(t: &str) -> Part {
    Part::Text(TextBlock::new(t))
}

/// SSE bytes → decoded SSE events, the bytes cut at `cuts`.
pub(super) fn sse_split(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    let mut prev = 0;
    for cut in cuts {
        decoder.push(&bytes[prev..cut], &mut events).unwrap();
        prev = cut;
    }
    decoder.push(&bytes[prev..], &mut events).unwrap();
    decoder.finish(&mut events);
    events
}

/// The JSON payloads of an encoded stream, checking that `event:` names match `type`.
pub(super) fn payloads(bytes: &[u8]) -> Vec<Value> {
    sse_split(bytes, &[])
        .into_iter()
        .map(|e| {
            let v: Value = serde_json::from_str(&e.data).unwrap();
            assert_eq!(e.event.as_deref(), v["type"].as_str(), "event name matches type");
            v
        })
        .collect()
}

pub(super) fn decode(events: &[SseEvent]) -> Result<Vec<StreamEvent>, ProtocolError> {
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    for e in events {
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
    let mut encoder = Encoder::new();
    let mut bytes = Vec::new();
    for e in events {
        encoder.push(e, &mut bytes);
    }
    encoder.finish(&mut bytes);
    bytes
}

/// `resp` streamed by an encoder for a request with `tools`, as SSE events.
pub(super) fn streamed_for(resp: &Response, tools: &[Tool]) -> Vec<SseEvent> {
    let mut enc = Encoder::for_tools(tools);
    let mut bytes = Vec::new();
    for e in response_to_events(resp) {
        enc.push(&e, &mut bytes);
    }
    enc.finish(&mut bytes);
    let mut events = Vec::new();
    let mut sse_decoder = crate::SseDecoder::new();
    sse_decoder.push(&bytes, &mut events).unwrap();
    sse_decoder.finish(&mut events);
    events
}

pub(super) fn sse(ty: &str, data: Value) -> SseEvent {
    let mut data = data;
    data["type"] = json!(ty);
    SseEvent { event: Some(ty.to_owned()), data: data.to_string(), id: None }
}
