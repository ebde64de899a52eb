//! A streamed answer being read: bytes cut into frames by the wire's framing,
//! decoded into canonical events, and handed on in batches of whole frames.
//!
//! A batch is everything that has arrived: after the first read, whatever the
//! connection has already received joins it, so frames an upstream sent
//! together leave the gateway in one write, as a proxy relays them (one write per
//! frame cost the gateway ten times nginx's CPU on a burst of small frames, most
//! of it the client side's TCP work that a loopback write runs inline).

use std::future::poll_fn;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use hyper::body::Body as _;
use switchyard_protocol::{Frame, Framer, ProtocolError, StreamDecoder, StreamEvent, Wire};
use tokio::sync::mpsc;

use super::Failure;

/// The most bytes gathered into one batch: past it, the batch goes on and the
/// rest waits for the next one.
const GATHER_CAP: usize = 64 * 1024;

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

/// What one read of the answer's body gave.
pub(crate) enum Read {
    Data(Bytes),
    End,
    Broke(String),
}

impl Read {
    fn of(polled: Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>) -> Option<Read> {
        match polled {
            None => Some(Read::End),
            Some(Err(e)) => Some(Read::Broke(format!("upstream stream broke: {e}"))),
            Some(Ok(frame)) => frame.into_data().ok().map(Read::Data), // trailers: read on
        }
    }
}

/// The next read, waiting for it.
async fn read(body: &mut crate::client::Body) -> Read {
    poll_fn(|cx| {
        loop {
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(polled) => {
                    if let Some(read) = Read::of(polled) {
                        return Poll::Ready(read);
                    }
                }
            }
        }
    })
    .await
}

/// The next read if it has arrived; None if it has not.
async fn read_now(body: &mut crate::client::Body) -> Option<Read> {
    poll_fn(|cx| {
        loop {
            match Pin::new(&mut *body).poll_frame(cx) {
                Poll::Pending => return Poll::Ready(None),
                Poll::Ready(polled) => {
                    if let Some(read) = Read::of(polled) {
                        return Poll::Ready(Some(read));
                    }
                }
            }
        }
    })
    .await
}

/// The bytes of whole frames among those held back and those just read, when
/// the last `pending` bytes of them belong to no complete frame yet: those stay
/// held. Most batches are one read that ends on a frame's end, and go on as it
/// is, uncopied.
fn release(partial: &mut Vec<u8>, mut reads: Vec<Bytes>, pending: usize) -> Bytes {
    if partial.is_empty() && pending == 0 && reads.len() == 1 {
        return reads.pop().unwrap_or_default();
    }
    for read in &reads {
        partial.extend_from_slice(read);
    }
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
        /// Bytes framed but not yet part of a complete frame: held back from
        /// `Batch::raw`, so what reaches a client is always whole frames, and a
        /// secret an upstream splits across two reads is scrubbed whole.
        partial: Vec<u8>,
        /// Reads gathered for the next batch. Kept here, not in `next`'s future,
        /// so a caller that gives up waiting (a keep-alive's timeout) loses none.
        reads: Vec<Bytes>,
        /// How the body ended, once read: handed on after what came before it.
        ended: Option<Read>,
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
            reads: Vec::new(),
            ended: None,
            done: false,
        }
    }

    /// The next batch; `Ok(None)` after the end.
    pub async fn next(&mut self) -> Result<Option<Batch>, Failure> {
        match self {
            Source::Http { body, framer, decoder, partial, reads, ended, done } => {
                if *done {
                    return Ok(None);
                }
                if reads.is_empty() && ended.is_none() {
                    match read(body).await {
                        Read::Data(bytes) => reads.push(bytes),
                        end => *ended = Some(end),
                    }
                }
                // Gather what has already arrived. One yield lets the connection's
                // task hand over the next chunk it has received (hyper's body
                // channel holds one at a time); none waiting ends the batch.
                let mut gathered: usize = reads.iter().map(Bytes::len).sum();
                while ended.is_none() && gathered < GATHER_CAP {
                    tokio::task::yield_now().await;
                    match read_now(body).await {
                        Some(Read::Data(bytes)) => {
                            gathered += bytes.len();
                            reads.push(bytes);
                        }
                        Some(end) => *ended = Some(end),
                        None => break,
                    }
                }
                let mut frames: Vec<Frame> = Vec::new();
                let mut batch = Batch::default();
                // Where the stream ends short of its terminal event (or inside a
                // frame), it broke; other failures keep their class.
                let at_end = |e: ProtocolError| match e {
                    ProtocolError::MalformedUpstream(m) => Failure::BrokenStream(m),
                    other => Failure::from_protocol(other),
                };
                let reads = std::mem::take(reads);
                match ended.take() {
                    // What came before a break goes on first; the break with the
                    // next call.
                    Some(Read::Broke(e)) if reads.is_empty() => {
                        *done = true;
                        return Err(Failure::BrokenStream(e));
                    }
                    broke @ Some(Read::Broke(_)) => *ended = broke,
                    Some(_) => batch.end = true,
                    None => {}
                }
                for read in &reads {
                    framer.push(read, &mut frames).map_err(|e| Failure::from_protocol(e.into()))?;
                }
                if batch.end {
                    *done = true;
                    framer.finish(&mut frames).map_err(|e| at_end(e.into()))?;
                    batch.raw = release(partial, reads, 0);
                } else {
                    batch.raw = release(partial, reads, framer.pending());
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

#[cfg(test)]
#[path = "source_tests.rs"]
mod tests;
