//! A streamed answer being read: bytes cut into frames by the wire's framing,
//! decoded into canonical events, and handed on in batches of whole frames.

use bytes::Bytes;
use switchyard_protocol::{Frame, Framer, ProtocolError, StreamDecoder, StreamEvent, Wire};
use tokio::sync::mpsc;

use super::Failure;

/// One batch of stream progress.
#[derive(Debug, Default)]
pub(crate) struct Batch {
    /// The upstream bytes of this batch (for the fast path; empty for the mock).
    pub raw: Bytes,
    /// The same bytes as the frames they completed (for a fast path that must
    /// edit events, such as renaming the model).
    pub frames: Vec<Frame>,
    pub events: Vec<StreamEvent>,
    /// The upstream finished cleanly with this batch.
    pub end: bool,
}

/// The bytes of whole frames among those held back and those just read, when
/// the last `pending` bytes of them belong to no complete frame yet: those stay
/// held. Most chunks end on a frame's end, and go on as they are, uncopied.
fn release(partial: &mut Vec<u8>, read: Bytes, pending: usize) -> Bytes {
    if partial.is_empty() && pending == 0 {
        return read;
    }
    partial.extend_from_slice(&read);
    let whole = partial.len().saturating_sub(pending);
    let rest = partial.split_off(whole);
    Bytes::from(std::mem::replace(partial, rest))
}

/// A streaming answer being read. One per stream, held in place while it is
/// read: the HTTP variant's size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Source {
    Http {
        body: crate::client::Body,
        framer: Framer,
        decoder: Box<dyn StreamDecoder>,
        /// Bytes read but not yet part of a complete frame: held back from
        /// `Batch::raw`, so what reaches a client is always whole frames, and a
        /// secret an upstream splits across two reads is scrubbed whole.
        partial: Vec<u8>,
        done: bool,
    },
    Events {
        rx: mpsc::Receiver<StreamEvent>,
        done: bool,
    },
}

impl Source {
    /// Cut into frames as the wire's spec says its streams are framed.
    pub fn http(resp: crate::client::Response, wire: Wire) -> Self {
        Source::Http {
            body: resp.into_body(),
            framer: wire.spec().framing.framer(),
            decoder: wire.stream_decoder(),
            partial: Vec::new(),
            done: false,
        }
    }

    /// The next batch; `Ok(None)` after the end.
    pub async fn next(&mut self) -> Result<Option<Batch>, Failure> {
        match self {
            Source::Http { body, framer, decoder, partial, done } => {
                if *done {
                    return Ok(None);
                }
                let mut frames: Vec<Frame> = Vec::new();
                let mut batch = Batch::default();
                // Where the stream ends short of its terminal event (or inside a
                // frame), it broke; other failures keep their class.
                let at_end = |e: ProtocolError| match e {
                    ProtocolError::MalformedUpstream(m) => Failure::BrokenStream(m),
                    other => Failure::from_protocol(other),
                };
                match super::next_data(body).await {
                    Some(Ok(bytes)) => {
                        framer
                            .push(&bytes, &mut frames)
                            .map_err(|e| Failure::from_protocol(e.into()))?;
                        batch.raw = release(partial, bytes, framer.pending());
                    }
                    Some(Err(e)) => {
                        *done = true;
                        return Err(Failure::BrokenStream(format!("upstream stream broke: {e}")));
                    }
                    None => {
                        *done = true;
                        framer.finish(&mut frames).map_err(|e| at_end(e.into()))?;
                        batch.raw = Bytes::from(std::mem::take(partial));
                        batch.end = true;
                    }
                }
                for frame in &frames {
                    decoder.push(frame, &mut batch.events).map_err(Failure::from_protocol)?;
                }
                batch.frames = frames;
                if batch.end {
                    decoder.finish(&mut batch.events).map_err(at_end)?;
                }
                Ok(Some(batch))
            }
            Source::Events { rx, done } => {
                if *done {
                    return Ok(None);
                }
                let mut batch = Batch::default();
                match rx.recv().await {
                    Some(ev) => batch.events.push(ev),
                    None => {
                        *done = true;
                        batch.end = true;
                    }
                }
                Ok(Some(batch))
            }
        }
    }
}
