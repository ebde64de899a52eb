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

/// Incremental SSE decoder following the WHATWG event-stream rules: lines end in
/// `\n`, `\r\n` or `\r`; a blank line dispatches; `:` starts a comment; multiple
/// `data:` lines join with `\n`. Input may be split anywhere, including inside a
/// UTF-8 sequence or between `\r` and `\n`.
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
/// # Ok::<(), switchyard_protocol::sse::LineTooLong>(())
/// ```
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    /// Set when the previous chunk ended in `\r`: a leading `\n` must be skipped.
    skip_lf: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
    id: Option<String>,
    /// Upper bound on a single line; a longer line is an error (protects memory).
    max_line: usize,
}

/// The stream broke the SSE framing rules in a way we refuse to buffer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("server-sent event line longer than {0} bytes")]
pub struct LineTooLong(pub usize);

impl SseDecoder {
    /// A decoder that takes lines of up to 16 MiB.
    pub fn new() -> Self {
        Self::with_max_line(16 * 1024 * 1024)
    }

    /// A decoder that takes lines of up to `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self { max_line, ..Self::default() }
    }

    /// Feed bytes; complete events are appended to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LineTooLong> {
        if self.skip_lf && !chunk.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                let line_end = i;
                i += 1;
                if b == b'\r' {
                    if i < self.buf.len() {
                        if self.buf[i] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                let line = String::from_utf8_lossy(&self.buf[start..line_end]).into_owned();
                self.line(&line, out);
                start = i;
            } else {
                i += 1;
            }
        }
        self.buf.drain(..start);
        if self.buf.len() > self.max_line {
            return Err(LineTooLong(self.max_line));
        }
        Ok(())
    }

    /// The input ended. A trailing event without its blank line is still dispatched
    /// (many servers omit it on the last event).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let line = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" => self.id = Some(value.to_owned()),
            _ => {}
        }
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
    write_event(out, event, &value.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.push(c, &mut out).unwrap();
        }
        d.finish(&mut out);
        out
    }

    #[test]
    fn decodes_events_with_names_comments_and_multiline_data() {
        let ev = decode_all(&[b": ping\nevent: a\ndata: x\ndata: y\n\ndata: {\"k\":1}\n\n"]);
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[0].event.as_deref(), Some("a"));
        assert_eq!(ev[0].data, "x\ny");
        assert_eq!(ev[1].data, "{\"k\":1}");
    }

    #[test]
    fn handles_crlf_split_between_chunks() {
        let ev = decode_all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
        assert_eq!(ev.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn trailing_event_without_blank_line_is_dispatched() {
        let ev = decode_all(&[b"data: [DONE]"]);
        assert_eq!(ev[0].data, "[DONE]");
    }

    #[test]
    fn refuses_unbounded_lines() {
        let mut d = SseDecoder::with_max_line(8);
        let mut out = Vec::new();
        assert!(d.push(b"data: 0123456789", &mut out).is_err());
    }

    #[test]
    fn writer_round_trips() {
        let mut buf = Vec::new();
        write_event(&mut buf, Some("message_start"), "line1\nline2");
        let ev = decode_all(&[&buf]);
        assert_eq!(ev[0].event.as_deref(), Some("message_start"));
        assert_eq!(ev[0].data, "line1\nline2");
    }

    proptest::proptest! {
        #[test]
        fn any_split_gives_the_same_events(split in proptest::collection::vec(0usize..64, 0..8)) {
            let input: &[u8] = "event: e\r\ndata: h\u{e9}llo\r\n\r\n: c\ndata: a\ndata: b\n\ndata: z\r\r".as_bytes();
            let whole = decode_all(&[input]);
            let mut cuts: Vec<usize> = split.into_iter().map(|c| c % (input.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for c in cuts { chunks.push(&input[prev..c]); prev = c; }
            chunks.push(&input[prev..]);
            proptest::prop_assert_eq!(decode_all(&chunks), whole);
        }
    }
}
