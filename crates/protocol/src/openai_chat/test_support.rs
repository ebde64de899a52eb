//! What the Chat Completions tests share.

use crate::{ProtocolError, Response, ResponseAccumulator, SseDecoder, StreamDecoder};

use super::Decoder;

pub(super) fn decode_stream(chunks: &[&[u8]]) -> Result<Response, ProtocolError> {
    let mut sse = SseDecoder::new();
    let mut dec = Decoder::new();
    let mut acc = ResponseAccumulator::default();
    let mut raw = Vec::new();
    let mut events = Vec::new();
    for c in chunks {
        sse.push(c, &mut raw).unwrap();
    }
    sse.finish(&mut raw);
    for e in &raw {
        dec.push(e, &mut events)?;
    }
    dec.finish(&mut events)?;
    for e in &events {
        acc.push(e);
    }
    Ok(acc.finish())
}
