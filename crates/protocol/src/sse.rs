//! Server-sent events: an incremental decoder (bytes in any split → events) and the
//! writer. No IO: the caller feeds bytes as they arrive.
//!
//! The decoder is the SSE framer of an upstream stream ([`crate::Framer`]) and
//! also what reads the gateway's own SSE back (WebSocket relay, tests).

use crate::frame::Frame;

/// One decoded event: a [`Frame`] whose fields are SSE's own (`event:`, the
/// joined `data:` lines, `id:`), so an SSE event reaches a stream decoder as it
/// was decoded, without conversion.
pub type SseEvent = Frame;

/// The default cap on one line (16 MiB).
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The default cap on one event: its joined data, `event:` and `id:` (16 MiB).
pub const MAX_EVENT: usize = 16 * 1024 * 1024;

/// Incremental SSE decoder following the WHATWG event-stream rules: lines end in
/// `\n`, `\r\n` or `\r`; a blank line dispatches; `:` starts a comment; multiple
/// `data:` lines join with `\n`. Input may be split anywhere, including inside a
/// UTF-8 sequence or between `\r` and `\n`.
///
/// Memory and work are bounded whatever the upstream sends: a line longer than
/// the line cap and an event (its joined data, `event:` and `id:`) larger than
/// the event cap are errors, so after every successful push the decoder holds at
/// most the two caps ([`SseDecoder::held`]); and each byte is searched for a line
/// end once, however the input is split, so the work is linear in the bytes
/// received.
///
/// ```
/// use switchyard_protocol::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// let mut events = Vec::new();
/// // The bytes arrive split anywhere: nothing is dispatched before its blank line.
/// decoder.push(b"event: ping\ndata: {\"a\"", &mut events)?;
/// assert!(events.is_empty());
/// decoder.push(b":1}\n\n: a comment\r\ndata: one\r\ndata: two\r\n\r\n", &mut events)?;
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].event.as_deref(), Some("ping"));
/// assert_eq!(events[0].data, r#"{"a":1}"#);
/// // Data lines join with `\n`; comments are skipped.
/// assert_eq!((events[1].event.as_deref(), events[1].data.as_str()), (None, "one\ntwo"));
/// # Ok::<(), switchyard_protocol::sse::SseTooLong>(())
/// ```
#[derive(Debug)]
pub struct SseDecoder {
    /// The bytes of the line not yet ended.
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end, so a long line arriving in
    /// many chunks is searched once, not once per chunk.
    scanned: usize,
    /// Set when the previous chunk ended in `\r`: a leading `\n` must be skipped.
    skip_lf: bool,
    /// Bytes of whole lines (with their line ends) since the last blank line: with
    /// `buf`, what [`SseDecoder::pending`] counts.
    block: usize,
    /// The event being built from its lines.
    event: Partial,
    /// Upper bound on a single line; a longer line is an error (protects memory).
    max_line: usize,
    /// Upper bound on a single event's fields; a larger event is an error (an
    /// upstream that never sends the blank line would otherwise grow it forever).
    max_event: usize,
    /// Bytes searched for line ends, so a test can see each is searched once.
    #[cfg(test)]
    searched: usize,
}

/// The event being built: the fields its lines have set so far.
#[derive(Debug, Default)]
struct Partial {
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
}

/// The stream went past one of the decoder's limits; it is not buffered further.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseTooLong {
    /// A line longer than the line cap (the cap, in bytes).
    #[error("server-sent event line longer than {0} bytes")]
    Line(usize),
    /// An event whose joined data, `event:` and `id:` are larger than the event
    /// cap (the cap, in bytes).
    #[error("server-sent event larger than {0} bytes")]
    Event(usize),
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// A decoder with the default caps: lines of up to [`MAX_LINE`] bytes, events
    /// of up to [`MAX_EVENT`].
    pub fn new() -> Self {
        Self::with_limits(MAX_LINE, MAX_EVENT)
    }

    /// A decoder that takes lines of up to `max_line` bytes (events of up to
    /// [`MAX_EVENT`]).
    pub fn with_max_line(max_line: usize) -> Self {
        Self::with_limits(max_line, MAX_EVENT)
    }

    /// A decoder that takes lines of up to `max_line` bytes and events of up to
    /// `max_event` (an event's joined data, `event:` and `id:`).
    pub fn with_limits(max_line: usize, max_event: usize) -> Self {
        Self {
            buf: Vec::new(),
            scanned: 0,
            skip_lf: false,
            block: 0,
            event: Partial::default(),
            max_line,
            max_event,
            #[cfg(test)]
            searched: 0,
        }
    }

    /// Feed bytes; complete events are appended to `out`. A line over the line
    /// cap is an error whether or not its end has arrived, and an event over the
    /// event cap as soon as the line that takes it over arrives, so whether a
    /// stream fails does not depend on how it was split. After an error the
    /// stream cannot be read on.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseTooLong> {
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
                // The `\n` of a `\r\n` split across chunks: its line was counted
                // whole already, so it is pending until the next blank line.
                self.block += 1;
            }
        }
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', &self.buf[self.scanned..]) {
            let end = self.scanned + at;
            #[cfg(test)]
            {
                self.searched += at + 1;
            }
            let mut next = end + 1;
            if self.buf[end] == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            let line = &self.buf[start..end];
            if line.len() > self.max_line {
                return Err(SseTooLong::Line(self.max_line));
            }
            // A blank line ends the block, whether or not it dispatches an event.
            self.block = if line.is_empty() { 0 } else { self.block + (next - start) };
            self.event.line(line, self.max_event, out)?;
            start = next;
            self.scanned = next;
        }
        #[cfg(test)]
        {
            self.searched += self.buf.len() - self.scanned;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max_line {
            return Err(SseTooLong::Line(self.max_line));
        }
        Ok(())
    }

    /// The input ended. A trailing event without its blank line is still dispatched
    /// (many servers omit it on the last event). That last line is taken even
    /// where it takes the event past the event cap: its bytes are held already,
    /// within the line cap, and the event is handed on at once.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            // No cap here (see above), so this cannot fail.
            let _ = self.event.line(&rest, usize::MAX, out);
        }
        self.scanned = 0;
        self.block = 0;
        self.event.dispatch(out);
    }

    /// How many of the bytes pushed so far are not yet part of a complete event
    /// block: the trailing bytes after the last blank line (the end of a block,
    /// whether it dispatched an event or, like a `: ping` keep-alive, nothing).
    /// The bytes before them, decoded alone and finished, give exactly the events
    /// pushed so far.
    ///
    /// Where a blank line ends in `\r` and the next chunk begins with its `\n`,
    /// the block is complete through the `\r`, and that `\n` then counts as
    /// pending until the next blank line.
    pub fn pending(&self) -> usize {
        self.block + self.buf.len()
    }

    /// The bytes the decoder holds for the line and the event not yet complete:
    /// after a successful push, at most the line cap plus the event cap.
    pub fn held(&self) -> usize {
        self.buf.len() + self.event.size()
    }
}

impl Partial {
    /// The bytes the event's fields hold, as the event cap counts them.
    fn size(&self) -> usize {
        self.data.len() + len(&self.event) + len(&self.id)
    }

    fn line(
        &mut self,
        line: &[u8],
        max_event: usize,
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseTooLong> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.starts_with(b":") {
            return Ok(());
        }
        // `:` is ASCII, never inside a UTF-8 sequence: splitting the bytes first
        // and decoding the value alone reads as decoding the whole line would.
        let (field, value) = match memchr::memchr(b':', line) {
            Some(at) => {
                let value = &line[at + 1..];
                (&line[..at], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        if !matches!(field, b"data" | b"event" | b"id") {
            return Ok(());
        }
        let value = crate::util::lossy(value);
        // The size once this line is taken: data grows (with its joining `\n`),
        // `event:` and `id:` replace their old values.
        let size = match field {
            b"data" => self.size() + usize::from(self.has_data) + value.len(),
            b"event" => self.size() - len(&self.event) + value.len(),
            _ => self.size() - len(&self.id) + value.len(),
        };
        if size > max_event {
            return Err(SseTooLong::Event(max_event));
        }
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            _ => self.id = Some(value.into_owned()),
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data || self.event.is_some() {
            out.push(SseEvent {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
                id: self.id.take(),
            });
        }
        self.has_data = false;
        self.data.clear();
        self.event = None;
    }
}

fn len(field: &Option<String>) -> usize {
    field.as_ref().map_or(0, String::len)
}

/// A keep-alive as an SSE comment: every SSE reader ignores it.
pub const KEEPALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// Append one event to `out`. `data` may contain newlines (split into data lines).
pub fn write_event(out: &mut Vec<u8>, event: Option<&str>, data: &str) {
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    for line in data.split('\n') {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
}

/// Append a JSON value as one event.
pub fn write_json(out: &mut Vec<u8>, event: Option<&str>, value: &serde_json::Value) {
    write_data(out, event, value);
}

/// Append `value`, serialized straight into `out`, as one event: no string or
/// `Value` in between. Compact JSON holds no line break (one in a string is
/// escaped), so it is one `data:` line. A value that does not serialize (a map
/// with keys that are not strings) leaves `out` as it was.
pub fn write_data<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, event: Option<&str>, value: &T) {
    let start = out.len();
    if let Some(event) = event {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.truncate(start);
        return;
    }
    out.extend_from_slice(b"\n\n");
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
