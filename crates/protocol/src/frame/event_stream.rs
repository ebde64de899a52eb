//! AWS event-stream messages (`application/vnd.amazon.eventstream`), as Amazon
//! Bedrock's streaming APIs answer.
//!
//! A message, big-endian throughout:
//!
//! ```text
//! total length u32 | headers length u32 | prelude CRC32 (of the 8 bytes before)
//! headers (headers length bytes)
//! payload (total length - headers length - 16 bytes)
//! message CRC32 (of every byte before it)
//! ```
//!
//! and a header is `name length u8 | name | type u8 | value`, the value by type:
//! 0 true and 1 false (no bytes), 2 byte (1), 3 short (2), 4 int (4), 5 long (8),
//! 6 bytes and 7 string (u16 length, then that many bytes), 8 timestamp (8:
//! milliseconds since the epoch), 9 UUID (16). Both CRCs are CRC-32 with the IEEE
//! polynomial (zlib's, gzip's).
//!
//! A message's `:message-type` says what it is: `event` (the default here when
//! absent) becomes a frame named by `:event-type`; `exception` a frame named by
//! `:exception-type`, its payload the modelled error (a service's event and
//! exception names share one namespace, so the name alone tells the decoder
//! which it has); `error` ends the stream with [`FrameError::Upstream`] from its
//! `:error-code` and `:error-message`. Other message types are skipped.

use super::{Frame, FrameError};

/// The default cap on one message: the format's largest payload (16 MiB) and
/// largest headers (128 KiB), with the prelude and both CRCs.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024 + 128 * 1024 + OVERHEAD;

/// The prelude: the two lengths and their CRC.
const PRELUDE: usize = 12;
/// The prelude and the message CRC: the smallest message.
const OVERHEAD: usize = PRELUDE + 4;

/// Incremental event-stream decoder. Input may be split anywhere; a message's
/// prelude is checked as soon as its 12 bytes are in, so a corrupt or oversized
/// length is refused before its body is waited for or buffered.
#[derive(Debug)]
pub struct EventStreamDecoder {
    buf: Vec<u8>,
    /// Upper bound on a single message (protects memory).
    max_message: usize,
}

impl Default for EventStreamDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventStreamDecoder {
    /// A decoder that takes messages of up to [`MAX_MESSAGE`] bytes.
    pub fn new() -> Self {
        Self::with_max_message(MAX_MESSAGE)
    }

    /// A decoder that takes messages of up to `max_message` bytes in all.
    pub fn with_max_message(max_message: usize) -> Self {
        Self { buf: Vec::new(), max_message }
    }

    /// Feed bytes; the messages they complete are appended to `out` as frames.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Frame>) -> Result<(), FrameError> {
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        while let Some(len) = message_len(&self.buf[start..], self.max_message)? {
            let Some(message) = self.buf.get(start..start + len) else { break };
            decode(message, out)?;
            start += len;
        }
        self.buf.drain(..start);
        Ok(())
    }

    /// The bytes of the message not yet complete.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The input ended: an error if it stopped inside a message.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        match std::mem::take(&mut self.buf).len() {
            0 => Ok(()),
            left => Err(FrameError::Truncated(left)),
        }
    }
}

/// The length of the message at the start of `bytes`, once its prelude is in
/// and checked; `None` while the prelude is incomplete.
fn message_len(bytes: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    let Some(prelude) = bytes.get(..PRELUDE) else { return Ok(None) };
    if crc32(&prelude[..8]) != be32(prelude, 8) {
        return Err(FrameError::BadCrc("prelude"));
    }
    let len = be32(prelude, 0) as usize;
    let headers = be32(prelude, 4) as usize;
    if len > max {
        return Err(FrameError::MessageTooLong { len, max });
    }
    if len < OVERHEAD || headers > len - OVERHEAD {
        return Err(FrameError::Malformed(format!(
            "{headers} bytes of headers in a message of {len}"
        )));
    }
    Ok(Some(len))
}

/// One whole message (its prelude already checked by [`message_len`]).
fn decode(message: &[u8], out: &mut Vec<Frame>) -> Result<(), FrameError> {
    let crc_at = message.len() - 4;
    if crc32(&message[..crc_at]) != be32(message, crc_at) {
        return Err(FrameError::BadCrc("message"));
    }
    let headers_end = PRELUDE + be32(message, 4) as usize;
    let headers = Headers::parse(&message[PRELUDE..headers_end])?;
    let event = match headers.message_type {
        None | Some(b"event") => headers.event_type,
        Some(b"exception") => headers.exception_type,
        Some(b"error") => {
            return Err(FrameError::Upstream {
                code: text(headers.error_code.unwrap_or(b"error")),
                message: text(headers.error_message.unwrap_or_default()),
            });
        }
        // A kind of message this decoder does not know carries nothing for a wire.
        Some(_) => return Ok(()),
    };
    out.push(Frame { event: event.map(text), data: text(&message[headers_end..crc_at]), id: None });
    Ok(())
}

/// The string headers a frame is made from; the rest are read past.
#[derive(Debug, Default)]
struct Headers<'a> {
    message_type: Option<&'a [u8]>,
    event_type: Option<&'a [u8]>,
    exception_type: Option<&'a [u8]>,
    error_code: Option<&'a [u8]>,
    error_message: Option<&'a [u8]>,
}

impl<'a> Headers<'a> {
    fn parse(mut bytes: &'a [u8]) -> Result<Self, FrameError> {
        let cut = || FrameError::Malformed("a header is cut short".into());
        let mut headers = Headers::default();
        while let Some((&name_len, rest)) = bytes.split_first() {
            let (name, rest) = rest.split_at_checked(usize::from(name_len)).ok_or_else(cut)?;
            let (&kind, rest) = rest.split_first().ok_or_else(cut)?;
            let fixed = match kind {
                0 | 1 => Some(0),
                2 => Some(1),
                3 => Some(2),
                4 => Some(4),
                5 | 8 => Some(8),
                9 => Some(16),
                6 | 7 => None,
                other => {
                    return Err(FrameError::Malformed(format!(
                        "header `{}` has unknown type {other}",
                        String::from_utf8_lossy(name)
                    )));
                }
            };
            let (value, rest) = match fixed {
                Some(len) => rest.split_at_checked(len).ok_or_else(cut)?,
                None => {
                    let (len, rest) = rest.split_at_checked(2).ok_or_else(cut)?;
                    let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
                    rest.split_at_checked(len).ok_or_else(cut)?
                }
            };
            if kind == 7 {
                match name {
                    b":message-type" => headers.message_type = Some(value),
                    b":event-type" => headers.event_type = Some(value),
                    b":exception-type" => headers.exception_type = Some(value),
                    b":error-code" => headers.error_code = Some(value),
                    b":error-message" => headers.error_message = Some(value),
                    _ => {}
                }
            }
            bytes = rest;
        }
        Ok(headers)
    }
}

fn text(bytes: &[u8]) -> String {
    crate::util::lossy(bytes).into_owned()
}

/// The big-endian u32 at `at`; the caller has checked the length.
fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// CRC-32 with the IEEE polynomial, reflected (zlib's `crc32`), a byte at a time
/// from a table built at compile time.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |crc, &b| CRC_TABLE[usize::from(crc as u8 ^ b)] ^ (crc >> 8))
}

const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        let mut c = n as u32;
        let mut bit = 0;
        while bit < 8 {
            c = if c & 1 == 1 { 0xEDB8_8320 ^ (c >> 1) } else { c >> 1 };
            bit += 1;
        }
        table[n] = c;
        n += 1;
    }
    table
};

#[cfg(test)]
#[path = "event_stream_tests.rs"]
mod tests;
