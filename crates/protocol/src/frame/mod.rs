//! Frames: the decoded units of an upstream stream, whatever its framing, and the
//! framers that cut a stream's bytes into them.
//!
//! A wire's decoder ([`crate::StreamDecoder`]) reads [`Frame`]s, not the bytes of
//! one framing, so a wire framed otherwise than SSE plugs in with its own decoder
//! and no change to the others. The framer comes from the wire's
//! [`Framing`] ([`Framing::framer`]):
//!
//! | framing | framer | a frame is |
//! |---|---|---|
//! | [`Framing::Sse`] | [`SseDecoder`] | one event: `event:`, the joined `data:` lines, `id:` |
//! | [`Framing::JsonLines`] | [`json_lines::JsonLinesDecoder`] | one non-blank line |
//! | [`Framing::AwsEventStream`] | [`event_stream::EventStreamDecoder`] | one message: its `:event-type` (or `:exception-type`) and payload |
//! | [`Framing::AwsChunks`] | [`aws_chunks::ChunksDecoder`] | the model event a `chunk` message carries, named by its `type` |
//!
//! No IO: the caller feeds bytes as they arrive, split anywhere.

pub mod aws_chunks;
pub mod event_stream;
pub mod json_lines;

use crate::sse::{SseDecoder, SseTooLong};
use crate::{Framing, ProtocolError};

use aws_chunks::ChunksDecoder;
use event_stream::EventStreamDecoder;
use json_lines::JsonLinesDecoder;

/// One decoded unit of an upstream stream, independent of its framing.
///
/// Owned rather than borrowed from the framer's buffer: a framer builds each
/// frame once (SSE joins data lines, an event-stream payload is checked before it
/// is handed on), and the frame then moves, never copied, from the framer to the
/// decoder and on to the fast path, which may hold it past the next read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frame {
    /// The event's name: SSE's `event:` field, an event-stream message's
    /// `:event-type` header (`:exception-type` for an exception); `None` for a
    /// JSON line, or where the stream names none.
    pub event: Option<String>,
    /// The payload as text: SSE's data lines joined with `\n`, the JSON line, the
    /// event-stream message's payload. Invalid UTF-8 becomes U+FFFD in every
    /// framing; the decoder's JSON parse judges the rest.
    pub data: String,
    /// SSE's `id:` field; the other framings have none.
    pub id: Option<String>,
}

/// Cuts one upstream stream's bytes into [`Frame`]s, by the stream's framing.
///
/// An enum underneath, not a boxed trait object: the framings are few and known,
/// and a stream then costs no allocation and no dynamic call per chunk.
#[derive(Debug)]
pub struct Framer(Inner);

#[derive(Debug)]
enum Inner {
    Sse(SseDecoder),
    JsonLines(JsonLinesDecoder),
    AwsEventStream(EventStreamDecoder),
    AwsChunks(ChunksDecoder),
}

impl Framing {
    /// A framer for a stream so framed, with the default limits.
    ///
    /// ```
    /// use switchyard_protocol::{Framing, Wire};
    ///
    /// // An Anthropic stream is SSE; JSON lines are cut at each newline.
    /// let mut framer = Wire::Anthropic.spec().framing.framer();
    /// let mut frames = Vec::new();
    /// framer.push(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", &mut frames)?;
    /// assert_eq!(frames[0].event.as_deref(), Some("message_stop"));
    ///
    /// let mut lines = Framing::JsonLines.framer();
    /// let mut frames = Vec::new();
    /// lines.push(b"{\"done\":false}\n{\"done\":", &mut frames)?;
    /// lines.push(b"true}", &mut frames)?;
    /// lines.finish(&mut frames)?; // the last line needs no newline
    /// let data: Vec<&str> = frames.iter().map(|f| f.data.as_str()).collect();
    /// assert_eq!(data, [r#"{"done":false}"#, r#"{"done":true}"#]);
    /// assert_eq!(frames[0].event, None);
    /// # Ok::<(), switchyard_protocol::FrameError>(())
    /// ```
    pub fn framer(self) -> Framer {
        Framer(match self {
            Framing::Sse => Inner::Sse(SseDecoder::new()),
            Framing::JsonLines => Inner::JsonLines(JsonLinesDecoder::new()),
            Framing::AwsEventStream => Inner::AwsEventStream(EventStreamDecoder::new()),
            Framing::AwsChunks => Inner::AwsChunks(ChunksDecoder::new()),
        })
    }
}

impl From<SseDecoder> for Framer {
    fn from(d: SseDecoder) -> Self {
        Framer(Inner::Sse(d))
    }
}

impl From<JsonLinesDecoder> for Framer {
    fn from(d: JsonLinesDecoder) -> Self {
        Framer(Inner::JsonLines(d))
    }
}

impl From<EventStreamDecoder> for Framer {
    fn from(d: EventStreamDecoder) -> Self {
        Framer(Inner::AwsEventStream(d))
    }
}

impl Framer {
    /// Feed bytes; the frames they complete are appended to `out`. After an error
    /// the stream cannot be read on.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), FrameError> {
        match &mut self.0 {
            Inner::Sse(d) => d.push(chunk, out).map_err(FrameError::from),
            Inner::JsonLines(d) => d.push(chunk, out),
            Inner::AwsEventStream(d) => d.push(chunk, out),
            Inner::AwsChunks(d) => d.push(chunk, out),
        }
    }

    /// The input ended: appends what its last bytes complete (SSE and JSON lines
    /// take a last event or line without its terminator); an error if the stream
    /// stopped inside a binary frame.
    pub fn finish(&mut self, out: &mut Vec<Frame>) -> Result<(), FrameError> {
        match &mut self.0 {
            Inner::Sse(d) => {
                d.finish(out);
                Ok(())
            }
            Inner::JsonLines(d) => d.finish(out),
            Inner::AwsEventStream(d) => d.finish(),
            Inner::AwsChunks(d) => d.finish(),
        }
    }

    /// How many of the bytes pushed so far are not yet part of a complete frame:
    /// the trailing bytes after the end of the last one. The bytes before them,
    /// framed alone and finished, give exactly the frames pushed so far.
    ///
    /// The pass-through path forwards only bytes up to complete frames so that a
    /// secret split across two reads is redacted whole; at the end of the input
    /// what is left is forwarded too.
    ///
    /// - SSE: the bytes after the last blank line, the end of an event block
    ///   whether it dispatched an event or nothing (a `: ping` keep-alive). A
    ///   blank line ending in `\r` is complete through the `\r`; where the next
    ///   chunk begins with its `\n`, that `\n` is pending until the next blank
    ///   line.
    /// - JSON lines: the bytes after the last `\n`.
    /// - AWS event-stream (and its chunks): the bytes of the message not yet
    ///   complete.
    ///
    /// After an error the count means nothing.
    ///
    /// ```
    /// use switchyard_protocol::Framing;
    ///
    /// let mut framer = Framing::Sse.framer();
    /// let mut frames = Vec::new();
    /// framer.push(b"data: a\n\n: ping\n\ndata: sec", &mut frames)?;
    /// assert_eq!(framer.pending(), b"data: sec".len());
    /// framer.push(b"ret\n\n", &mut frames)?;
    /// assert_eq!((framer.pending(), frames.len()), (0, 2));
    /// # Ok::<(), switchyard_protocol::FrameError>(())
    /// ```
    pub fn pending(&self) -> usize {
        match &self.0 {
            Inner::Sse(d) => d.pending(),
            Inner::JsonLines(d) => d.pending(),
            Inner::AwsEventStream(d) => d.pending(),
            Inner::AwsChunks(d) => d.pending(),
        }
    }
}

/// A stream's bytes could not be cut into frames.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    /// An SSE line or event larger than the decoder buffers (which, it says).
    #[error(transparent)]
    SseTooLong(#[from] SseTooLong),
    /// A JSON line longer than the decoder takes (the limit).
    #[error("JSON line longer than {0} bytes")]
    JsonLineTooLong(usize),
    /// An event-stream message whose prelude states more bytes than the decoder
    /// takes.
    #[error("event-stream message of {len} bytes, more than {max}")]
    MessageTooLong {
        /// The length the prelude states, in bytes.
        len: usize,
        /// The most the decoder takes, in bytes.
        max: usize,
    },
    /// An event-stream checksum did not match: `"prelude"` or `"message"`.
    #[error("event-stream {0} CRC does not match")]
    BadCrc(&'static str),
    /// An event-stream message that breaks the format (lengths that disagree, a
    /// header cut short, an unknown header type).
    #[error("malformed event-stream message: {0}")]
    Malformed(String),
    /// The stream ended inside an event-stream message.
    #[error("the stream ended inside an event-stream message ({0} bytes of it)")]
    Truncated(usize),
    /// The upstream ended the stream with an event-stream `error` message
    /// (`:error-code`, `:error-message`): not a frame for the wire to decode.
    #[error("upstream error ({code}): {message}")]
    Upstream {
        /// Its `:error-code` header.
        code: String,
        /// Its `:error-message` header.
        message: String,
    },
}

impl From<FrameError> for ProtocolError {
    /// An upstream's own error stays one (its code as the kind); anything else is
    /// a malformed upstream stream, with the framing's message.
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::Upstream { code, message } => {
                ProtocolError::UpstreamError { kind: code, message }
            }
            other => ProtocolError::MalformedUpstream(other.to_string()),
        }
    }
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
