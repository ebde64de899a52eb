//! W3C Trace Context (`traceparent`, `tracestate`): what a client's headers say
//! about the trace a request belongs to, and what an upstream is told.
//!
//! <https://www.w3.org/TR/trace-context/>: `traceparent` is
//! `version-traceid-parentid-flags` in lowercase hex (`00-` + 32 + `-` + 16 +
//! `-` + 2); an all-zero trace or parent id is invalid, as is version `ff`. A
//! later version may append fields after the flags (`-…`), which a reader of
//! version 00 ignores. An invalid header is ignored as a whole (the request
//! then starts a trace of its own), and `tracestate` with it.

use std::fmt::Write;

/// The longest `tracestate` passed on (the spec's 32 members of at most 256
/// characters make 8 KiB; a longer one is dropped, not cut).
const MAX_TRACESTATE: usize = 8192;

/// A 16-byte trace id, never all zero.
pub type TraceId = [u8; 16];

/// An 8-byte span id, never all zero.
pub type SpanId = [u8; 8];

/// The W3C `sampled` flag.
pub const SAMPLED: u8 = 0x01;

/// The trace context a client sent, as far as it was valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Incoming {
    /// The client's `traceparent`, when valid.
    pub parent: Option<TraceParent>,
    /// The client's `tracestate`, kept only with a valid `traceparent` (the
    /// spec: without one it means nothing).
    pub state: Option<String>,
}

/// A parsed `traceparent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace.
    pub trace_id: TraceId,
    /// The caller's span (the parent of whatever this side starts).
    pub span_id: SpanId,
    /// Trace flags (bit 0: sampled).
    pub flags: u8,
}

impl Incoming {
    /// The context in a client's `traceparent` and `tracestate` headers; an
    /// invalid `traceparent` is ignored, and the `tracestate` with it.
    pub fn from_headers(traceparent: Option<&str>, tracestate: Option<&str>) -> Self {
        let Some(parent) = traceparent.and_then(TraceParent::parse) else {
            return Incoming::default();
        };
        let state = tracestate
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.len() <= MAX_TRACESTATE && s.is_ascii())
            .map(str::to_owned);
        Incoming { parent: Some(parent), state }
    }

    /// The `traceparent` to pass on when the gateway exports no spans: the
    /// client's own, as a transparent proxy passes it (the upstream's span is
    /// then the client's child).
    pub fn passthrough(&self) -> Option<String> {
        self.parent.map(|p| p.header())
    }
}

impl TraceParent {
    /// Parse a `traceparent` header; `None` when it is not valid.
    pub fn parse(header: &str) -> Option<Self> {
        let h = header.trim().as_bytes();
        // version(2) - trace(32) - parent(16) - flags(2)
        if h.len() < 55 || h.get(2) != Some(&b'-') || h.get(35) != Some(&b'-') {
            return None;
        }
        if h.get(52) != Some(&b'-') {
            return None;
        }
        let version = hex_byte(h.get(0..2)?)?;
        if version == 0xff {
            return None;
        }
        // Version 00 is exactly 55 characters; a later version may carry more
        // after another dash.
        if (version == 0 && h.len() != 55) || (h.len() > 55 && h.get(55) != Some(&b'-')) {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, b) in trace_id.iter_mut().enumerate() {
            *b = hex_byte(h.get(3 + 2 * i..5 + 2 * i)?)?;
        }
        let mut span_id = [0u8; 8];
        for (i, b) in span_id.iter_mut().enumerate() {
            *b = hex_byte(h.get(36 + 2 * i..38 + 2 * i)?)?;
        }
        let flags = hex_byte(h.get(53..55)?)?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent { trace_id, span_id, flags })
    }

    /// The header's value (version 00).
    pub fn header(&self) -> String {
        let mut s = String::with_capacity(55);
        s.push_str("00-");
        s.push_str(&hex(&self.trace_id));
        s.push('-');
        s.push_str(&hex(&self.span_id));
        let _ = write!(s, "-{:02x}", self.flags);
        s
    }
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Two lowercase hex digits (the spec allows no uppercase).
fn hex_byte(two: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    match two {
        [hi, lo] => Some(digit(*hi)? << 4 | digit(*lo)?),
        _ => None,
    }
}

/// A fresh random trace id (never zero).
pub fn new_trace_id() -> TraceId {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&crate::clock::unique().to_be_bytes());
    id[8..].copy_from_slice(&crate::clock::unique().to_be_bytes());
    if id == [0; 16] {
        id[15] = 1;
    }
    id
}

/// A fresh random span id (never zero).
pub fn new_span_id() -> SpanId {
    let id = crate::clock::unique();
    if id == 0 { 1u64.to_be_bytes() } else { id.to_be_bytes() }
}

#[cfg(test)]
#[path = "propagation_tests.rs"]
mod tests;
