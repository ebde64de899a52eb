//! JSON lines (NDJSON): one JSON value per line, as Ollama's native API streams.
//! Each non-blank line is a [`Frame`] with no event name; whether it is JSON is
//! for the wire's decoder to judge, as with SSE data.

use super::{Frame, FrameError};

/// The default cap on one line, the same as SSE's.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Incremental JSON-lines decoder: lines end in `\n` (a `\r` before it is
/// dropped, with any other whitespace at either end); blank lines are skipped.
/// Input may be split anywhere, including inside a UTF-8 sequence.
#[derive(Debug)]
pub struct JsonLinesDecoder {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no `\n`, so a long line arriving in
    /// many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// Upper bound on a single line; a longer line is an error (protects memory).
    max_line: usize,
}

impl Default for JsonLinesDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonLinesDecoder {
    /// A decoder that takes lines of up to [`MAX_LINE`] bytes.
    pub fn new() -> Self {
        Self::with_max_line(MAX_LINE)
    }

    /// A decoder that takes lines of up to `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        Self { buf: Vec::new(), scanned: 0, max_line }
    }

    /// Feed bytes; the lines they complete are appended to `out`. A line over the
    /// cap is an error whether or not its end has arrived, so the outcome does not
    /// depend on how the input was split.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), FrameError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(at) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
            let end = self.scanned + at;
            line(&self.buf[start..end], self.max_line, out)?;
            start = end + 1;
            self.scanned = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() > self.max_line {
            return Err(FrameError::JsonLineTooLong(self.max_line));
        }
        Ok(())
    }

    /// The bytes after the last `\n`: those of the line not yet ended.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The input ended: a last line without its `\n` is still a frame.
    pub fn finish(&mut self, out: &mut Vec<Frame>) -> Result<(), FrameError> {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        line(&rest, self.max_line, out)
    }
}

fn line(bytes: &[u8], max_line: usize, out: &mut Vec<Frame>) -> Result<(), FrameError> {
    if bytes.len() > max_line {
        return Err(FrameError::JsonLineTooLong(max_line));
    }
    let bytes = bytes.trim_ascii();
    if !bytes.is_empty() {
        let data = crate::util::lossy(bytes).into_owned();
        out.push(Frame { event: None, data, id: None });
    }
    Ok(())
}

#[cfg(test)]
#[path = "json_lines_tests.rs"]
mod tests;
