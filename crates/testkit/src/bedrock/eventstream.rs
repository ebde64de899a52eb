//! AWS event-stream messages, encoded by hand: a prelude (total length,
//! headers length, their CRC32), string headers, the payload, and a CRC32 of
//! all before it. Written here rather than shared with the protocol crate, so
//! that an encoding bug on one side cannot hide one on the other.

use bytes::Bytes;

/// Header value type 7: a UTF-8 string with a 16-bit length.
const STRING: u8 = 7;

/// One message with string `headers` and `payload`. A header or payload too
/// long for the format's length fields is cut to fit (nothing here sends one).
pub fn message(headers: &[(&str, &str)], payload: &[u8]) -> Bytes {
    let mut head = Vec::new();
    for (name, value) in headers {
        let name = &name.as_bytes()[..name.len().min(usize::from(u8::MAX))];
        let value = &value.as_bytes()[..value.len().min(usize::from(u16::MAX))];
        head.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
        head.extend_from_slice(name);
        head.push(STRING);
        head.extend_from_slice(&u16::try_from(value.len()).unwrap_or(u16::MAX).to_be_bytes());
        head.extend_from_slice(value);
    }
    let total = 12 + head.len() + payload.len() + 4;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(head.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude_crc = crc32(&out);
    out.extend_from_slice(&prelude_crc.to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload);
    let message_crc = crc32(&out);
    out.extend_from_slice(&message_crc.to_be_bytes());
    Bytes::from(out)
}

/// An `event` message: `:event-type` `event_type`, a JSON payload.
pub fn event(event_type: &str, payload: &serde_json::Value) -> Bytes {
    message(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An `exception` message, as ConverseStream sends one mid-stream:
/// `:exception-type` (e.g. `throttlingException`, `modelStreamErrorException`)
/// and `{"message": …}`.
pub fn exception(exception_type: &str, message_text: &str) -> Bytes {
    message(
        &[
            (":exception-type", exception_type),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        serde_json::json!({ "message": message_text }).to_string().as_bytes(),
    )
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320), bit by bit: the
/// fake's frames are few and small, so a table buys nothing.
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_matches_the_standard_check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn a_message_without_headers_matches_aws_s_example() {
        // The event-stream spec's smallest example: no headers, no payload.
        let m = message(&[], b"");
        assert_eq!(
            &m[..],
            &[0, 0, 0, 16, 0, 0, 0, 0, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff]
        );
    }
}
