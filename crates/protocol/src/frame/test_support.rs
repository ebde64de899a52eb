//! What the framer tests share: an event-stream message encoder, written from
//! the format's description independently of the decoder.

use super::event_stream::crc32;

/// A header value of each type the format has.
pub(crate) enum Value<'a> {
    True,
    False,
    Byte(i8),
    Short(i16),
    Int(i32),
    Long(i64),
    Bytes(&'a [u8]),
    Str(&'a str),
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// One event-stream message with these headers and payload.
pub(crate) fn message(headers: &[(&str, Value<'_>)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        match value {
            Value::True => h.push(0),
            Value::False => h.push(1),
            Value::Byte(v) => {
                h.push(2);
                h.extend_from_slice(&v.to_be_bytes());
            }
            Value::Short(v) => {
                h.push(3);
                h.extend_from_slice(&v.to_be_bytes());
            }
            Value::Int(v) => {
                h.push(4);
                h.extend_from_slice(&v.to_be_bytes());
            }
            Value::Long(v) => {
                h.push(5);
                h.extend_from_slice(&v.to_be_bytes());
            }
            Value::Bytes(v) => {
                h.push(6);
                h.extend_from_slice(&(v.len() as u16).to_be_bytes());
                h.extend_from_slice(v);
            }
            Value::Str(v) => {
                h.push(7);
                h.extend_from_slice(&(v.len() as u16).to_be_bytes());
                h.extend_from_slice(v.as_bytes());
            }
            Value::Timestamp(v) => {
                h.push(8);
                h.extend_from_slice(&v.to_be_bytes());
            }
            Value::Uuid(v) => {
                h.push(9);
                h.extend_from_slice(v);
            }
        }
    }
    let total = (16 + h.len() + payload.len()) as u32;
    let mut m = Vec::new();
    m.extend_from_slice(&total.to_be_bytes());
    m.extend_from_slice(&(h.len() as u32).to_be_bytes());
    let prelude_crc = crc32(&m);
    m.extend_from_slice(&prelude_crc.to_be_bytes());
    m.extend_from_slice(&h);
    m.extend_from_slice(payload);
    let message_crc = crc32(&m);
    m.extend_from_slice(&message_crc.to_be_bytes());
    m
}

/// An `event` message of this type with a JSON payload, as Bedrock sends them.
pub(crate) fn event(event_type: &str, payload: &str) -> Vec<u8> {
    message(
        &[
            (":event-type", Value::Str(event_type)),
            (":content-type", Value::Str("application/json")),
            (":message-type", Value::Str("event")),
        ],
        payload.as_bytes(),
    )
}
