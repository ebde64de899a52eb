//! The OTLP trace messages, encoded as protobuf by hand: the handful of
//! messages an export needs do not justify a code generator and its runtime.
//! Field numbers and types are those of opentelemetry-proto's
//! `collector/trace/v1/trace_service.proto`, `trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto` (stable since
//! OTLP 1.0); the encoding rules are <https://protobuf.dev/programming-guides/encoding/>.
//!
//! ```text
//! ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
//! ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
//! Resource      { repeated KeyValue attributes = 1; }
//! ScopeSpans    { InstrumentationScope scope = 1; repeated Span spans = 2; }
//! InstrumentationScope { string name = 1; string version = 2; }
//! Span   { bytes trace_id = 1; bytes span_id = 2; string trace_state = 3;
//!          bytes parent_span_id = 4; string name = 5; SpanKind kind = 6;
//!          fixed64 start_time_unix_nano = 7; fixed64 end_time_unix_nano = 8;
//!          repeated KeyValue attributes = 9; Status status = 15; fixed32 flags = 16; }
//! Status { string message = 2; StatusCode code = 3; }
//! KeyValue { string key = 1; AnyValue value = 2; }
//! AnyValue { oneof { string string_value = 1; bool bool_value = 2;
//!            int64 int_value = 3; double double_value = 4; ArrayValue array_value = 5; } }
//! ArrayValue { repeated AnyValue values = 1; }
//! ```

use super::spans::{Span, Value};

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// OTLP span `flags`: the W3C trace flags in bits 0-7, and bit 8 (the parent's
/// is-remote bit is known) with bit 9 (it is remote) where the parent came
/// from another process.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// A protobuf writer: tags, varints, fixed-width scalars and length-delimited
/// fields (nested messages are written into their own buffer, then copied in
/// with their length).
#[derive(Default)]
pub(super) struct Writer(pub(super) Vec<u8>);

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn tag(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, LEN);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.tag(field, VARINT);
        self.varint(v);
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.tag(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn fixed32(&mut self, field: u32, v: u32) {
        self.tag(field, FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn message(&mut self, field: u32, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.0);
    }
}

/// An `ExportTraceServiceRequest` of `spans`, all of one resource (the
/// gateway, `resource` its attributes) and one instrumentation scope.
pub(super) fn export_request(
    resource: &[(&str, Value)],
    scope: (&str, &str),
    spans: &[Span],
) -> Vec<u8> {
    let mut w = Writer::default();
    w.message(1, |rs| {
        rs.message(1, |r| {
            for (k, v) in resource {
                r.message(1, |kv| key_value(kv, k, v));
            }
        });
        rs.message(2, |ss| {
            ss.message(1, |s| {
                s.string(1, scope.0);
                s.string(2, scope.1);
            });
            for span in spans {
                ss.message(2, |w| encode_span(w, span));
            }
        });
    });
    w.0
}

fn encode_span(w: &mut Writer, s: &Span) {
    w.bytes(1, &s.trace_id);
    w.bytes(2, &s.span_id);
    if let Some(state) = s.trace_state.as_deref().filter(|t| !t.is_empty()) {
        w.string(3, state);
    }
    if let Some(parent) = &s.parent {
        w.bytes(4, parent);
    }
    w.string(5, &s.name);
    w.uint(6, s.kind as u64);
    w.fixed64(7, s.start_ns);
    w.fixed64(8, s.end_ns.max(s.start_ns));
    for (k, v) in &s.attributes {
        w.message(9, |kv| key_value(kv, k, v));
    }
    if let Some((code, message)) = &s.status {
        w.message(15, |st| {
            if !message.is_empty() {
                st.string(2, message);
            }
            st.uint(3, *code as u64);
        });
    }
    let remote = match s.remote_parent {
        Some(true) => HAS_IS_REMOTE | IS_REMOTE,
        Some(false) => HAS_IS_REMOTE,
        None => 0,
    };
    w.fixed32(16, u32::from(s.flags) | remote);
}

fn key_value(w: &mut Writer, key: &str, value: &Value) {
    w.string(1, key);
    w.message(2, |v| any_value(v, value));
}

fn any_value(w: &mut Writer, value: &Value) {
    match value {
        Value::Str(s) => w.string(1, s),
        Value::Bool(b) => w.uint(2, u64::from(*b)),
        // int64 is a varint of the two's complement.
        Value::Int(i) => w.uint(3, *i as u64),
        Value::Double(d) => w.fixed64(4, d.to_bits()),
        Value::Strs(items) => w.message(5, |a| {
            for s in items {
                a.message(1, |v| v.string(1, s));
            }
        }),
    }
}

/// Wrap a message in gRPC's length-prefixed framing: a compression flag (0:
/// none) and the length as 4 big-endian bytes.
pub(super) fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 5);
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// What an `ExportTraceServiceResponse` says was refused: `partial_success`
/// (field 1) with `rejected_spans` (1) and `error_message` (2). An empty or
/// unreadable answer refuses nothing.
pub(super) fn rejected(body: &[u8]) -> Option<(i64, String)> {
    let partial = field(body, 1)?;
    let count = match read_field(partial, 1) {
        Some(Field::Varint(n)) => n as i64,
        _ => 0,
    };
    let message = match read_field(partial, 2) {
        Some(Field::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
        _ => String::new(),
    };
    (count > 0 || !message.is_empty()).then_some((count, message))
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn field(msg: &[u8], number: u64) -> Option<&[u8]> {
    match read_field(msg, number)? {
        Field::Bytes(b) => Some(b),
        Field::Varint(_) => None,
    }
}

/// The last occurrence of field `number` in `msg` (protobuf: the last wins).
fn read_field(msg: &[u8], number: u64) -> Option<Field<'_>> {
    let mut at = 0usize;
    let mut found = None;
    while at < msg.len() {
        let tag = read_varint(msg, &mut at)?;
        let value = match (tag & 7) as u8 {
            VARINT => Field::Varint(read_varint(msg, &mut at)?),
            FIXED64 => {
                at = at.checked_add(8).filter(|&e| e <= msg.len())?;
                continue;
            }
            LEN => {
                let len = usize::try_from(read_varint(msg, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|&e| e <= msg.len())?;
                let b = msg.get(at..end)?;
                at = end;
                Field::Bytes(b)
            }
            FIXED32 => {
                at = at.checked_add(4).filter(|&e| e <= msg.len())?;
                continue;
            }
            _ => return None,
        };
        if tag >> 3 == number {
            found = Some(value);
        }
    }
    found
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[cfg(test)]
#[path = "proto_tests.rs"]
mod tests;
