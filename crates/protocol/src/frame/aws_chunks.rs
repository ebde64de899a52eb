//! The framing of Bedrock's `InvokeModelWithResponseStream`: AWS event-stream
//! messages ([`super::event_stream`]) whose `chunk` events each carry one event
//! of the model's own stream, its JSON in base64 (`{"bytes": "…"}`).
//!
//! A frame is that inner event, as the model's own API would have sent it over
//! SSE: its JSON, named by its `type` field (Claude's `message_start`,
//! `content_block_delta`, …). The publisher's decoder then reads it unchanged,
//! and a client of the publisher's format gets it back as an SSE event.
//! Exceptions pass as the event-stream framer makes them: named by their
//! `:exception-type`, for the wire's decoder to raise.

use std::borrow::Cow;

use base64::Engine as _;
use serde::Deserialize;

use super::event_stream::EventStreamDecoder;
use super::{Frame, FrameError};

/// Incremental decoder of an `InvokeModelWithResponseStream` body.
#[derive(Debug, Default)]
pub struct ChunksDecoder {
    messages: EventStreamDecoder,
    /// The event-stream frames of one push, before they are unwrapped (kept
    /// to reuse its allocation).
    wrapped: Vec<Frame>,
}

impl ChunksDecoder {
    /// A decoder with the event-stream framer's default limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; the model events they complete are appended to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), FrameError> {
        self.messages.push(chunk, &mut self.wrapped)?;
        for frame in self.wrapped.drain(..) {
            out.push(unwrap(frame)?);
        }
        Ok(())
    }

    /// The input ended: an error if it stopped inside a message.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        self.messages.finish()
    }

    /// The bytes of the message not yet complete.
    pub fn pending(&self) -> usize {
        self.messages.pending()
    }
}

/// A `chunk` event's payload.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    bytes: Cow<'a, str>,
}

/// Just the `type` of a model event.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
}

/// The model event a `chunk` carries; any other frame (an exception) as it is.
fn unwrap(frame: Frame) -> Result<Frame, FrameError> {
    if frame.event.as_deref() != Some("chunk") {
        return Ok(frame);
    }
    let chunk: Chunk<'_> = serde_json::from_str(&frame.data)
        .map_err(|e| FrameError::Malformed(format!("a chunk's payload: {e}")))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(chunk.bytes.as_bytes())
        .map_err(|e| FrameError::Malformed(format!("a chunk's bytes are not base64: {e}")))?;
    let data = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    // A body that is not JSON, or names no type, is the decoder's to judge.
    let event =
        serde_json::from_str::<Typed<'_>>(&data).ok().and_then(|t| t.kind).map(Cow::into_owned);
    Ok(Frame { event, data, id: None })
}

#[cfg(test)]
#[path = "aws_chunks_tests.rs"]
mod tests;
