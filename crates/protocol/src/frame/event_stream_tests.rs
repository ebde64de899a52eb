use super::*;
use crate::frame::test_support::{Value, event, message};

/// `{"foo": "bar"}` with no headers, as another implementation encodes it (the
/// Elixir `event_stream` package's documented example).
const FOO_BAR: [u8; 30] = [
    0, 0, 0, 30, 0, 0, 0, 0, 186, 242, 246, 138, 123, 34, 102, 111, 111, 34, 58, 32, 34, 98, 97,
    114, 34, 125, 174, 114, 88, 228,
];

fn decode_all(chunks: &[&[u8]]) -> Result<Vec<Frame>, FrameError> {
    let mut d = EventStreamDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.push(c, &mut out)?;
    }
    d.finish()?;
    Ok(out)
}

fn frame(event: Option<&str>, data: &str) -> Frame {
    Frame { event: event.map(Into::into), data: data.into(), id: None }
}

#[test]
fn crc32_is_the_ieee_one() {
    assert_eq!(crc32(b""), 0);
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn decodes_messages_another_implementation_encoded() {
    assert_eq!(decode_all(&[&FOO_BAR]).unwrap(), [frame(None, r#"{"foo": "bar"}"#)]);
    // The same with a `content-type` string header.
    let mut with_header = vec![0, 0, 0, 62, 0, 0, 0, 32, 64, 93, 249, 70, 12];
    with_header.extend_from_slice(b"content-type");
    with_header.extend_from_slice(&[7, 0, 16]);
    with_header.extend_from_slice(b"application/json");
    with_header.extend_from_slice(br#"{"foo": "bar"}"#);
    with_header.extend_from_slice(&[111, 162, 191, 59]);
    assert_eq!(decode_all(&[&with_header]).unwrap(), [frame(None, r#"{"foo": "bar"}"#)]);
    // The tests' own encoder agrees byte for byte.
    assert_eq!(message(&[], br#"{"foo": "bar"}"#), FOO_BAR);
    let encoded =
        message(&[("content-type", Value::Str("application/json"))], br#"{"foo": "bar"}"#);
    assert_eq!(encoded, with_header);
}

#[test]
fn reads_past_headers_of_every_type() {
    let uuid = [7u8; 16];
    let m = message(
        &[
            ("t", Value::True),
            ("f", Value::False),
            ("b", Value::Byte(-1)),
            ("s", Value::Short(-2)),
            ("i", Value::Int(3)),
            ("l", Value::Long(-4)),
            ("bytes", Value::Bytes(b"\x07\x00\x01:event-type")),
            (":event-type", Value::Str("contentBlockDelta")),
            ("ts", Value::Timestamp(1_700_000_000_000)),
            ("u", Value::Uuid(uuid)),
            (":message-type", Value::Str("event")),
        ],
        br#"{"delta":{"text":"hi"}}"#,
    );
    assert_eq!(
        decode_all(&[&m]).unwrap(),
        [frame(Some("contentBlockDelta"), r#"{"delta":{"text":"hi"}}"#)]
    );
}

#[test]
fn any_split_gives_the_same_frames() {
    let mut input = event("messageStart", r#"{"role":"assistant"}"#);
    input.extend(event("contentBlockDelta", r#"{"delta":{"text":"h\u00e9"}}"#));
    input.extend(message(&[(":event-type", Value::Str("messageStop"))], b""));
    let whole = decode_all(&[&input]).unwrap();
    assert_eq!(
        whole,
        [
            frame(Some("messageStart"), r#"{"role":"assistant"}"#),
            frame(Some("contentBlockDelta"), r#"{"delta":{"text":"h\u00e9"}}"#),
            frame(Some("messageStop"), ""),
        ]
    );
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(decode_all(&[a, b]).unwrap(), whole, "cut at {cut}");
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(decode_all(&bytes).unwrap(), whole);
}

#[test]
fn pending_is_the_message_not_yet_complete() {
    let first = event("messageStart", r#"{"role":"assistant"}"#);
    let mut input = first.clone();
    input.extend(event("messageStop", "{}"));
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        let mut d = EventStreamDecoder::new();
        let mut out = Vec::new();
        d.push(a, &mut out).unwrap();
        let complete = if cut < first.len() {
            0
        } else if cut < input.len() {
            first.len()
        } else {
            cut
        };
        assert_eq!(d.pending(), cut - complete, "cut at {cut}");
        assert_eq!(decode_all(&[&input[..complete]]).unwrap(), out, "cut at {cut}");
        d.push(b, &mut out).unwrap();
        assert_eq!(d.pending(), 0);
    }
}

#[test]
fn exceptions_are_frames_and_errors_end_the_stream() {
    let exception = message(
        &[
            (":message-type", Value::Str("exception")),
            (":exception-type", Value::Str("throttlingException")),
            (":content-type", Value::Str("application/json")),
        ],
        br#"{"message":"slow down"}"#,
    );
    assert_eq!(
        decode_all(&[&exception]).unwrap(),
        [frame(Some("throttlingException"), r#"{"message":"slow down"}"#)]
    );
    let error = message(
        &[
            (":message-type", Value::Str("error")),
            (":error-code", Value::Str("InternalFailure")),
            (":error-message", Value::Str("try again")),
        ],
        b"",
    );
    let err = decode_all(&[&error]).unwrap_err();
    assert_eq!(
        err,
        FrameError::Upstream { code: "InternalFailure".into(), message: "try again".into() }
    );
    assert_eq!(
        crate::ProtocolError::from(err),
        crate::ProtocolError::UpstreamError {
            kind: "InternalFailure".into(),
            message: "try again".into()
        }
    );
    // A message type this decoder does not know is skipped, not an error.
    let unknown = message(&[(":message-type", Value::Str("initial-response"))], b"{}");
    assert_eq!(decode_all(&[&unknown, &FOO_BAR]).unwrap().len(), 1);
}

#[test]
fn a_bad_crc_is_refused() {
    let mut prelude = FOO_BAR;
    prelude[11] ^= 1;
    assert_eq!(decode_all(&[&prelude]).unwrap_err(), FrameError::BadCrc("prelude"));
    let mut payload = FOO_BAR;
    payload[14] ^= 1;
    assert_eq!(decode_all(&[&payload]).unwrap_err(), FrameError::BadCrc("message"));
    // A bad prelude is caught from its 12 bytes, before the rest is waited for.
    let mut d = EventStreamDecoder::new();
    assert_eq!(d.push(&prelude[..12], &mut Vec::new()), Err(FrameError::BadCrc("prelude")));
}

#[test]
fn a_message_over_the_cap_is_refused_from_its_prelude() {
    let m = event("contentBlockDelta", &"x".repeat(100));
    let mut d = EventStreamDecoder::with_max_message(64);
    let err = d.push(&m[..12], &mut Vec::new()).unwrap_err();
    assert_eq!(err, FrameError::MessageTooLong { len: m.len(), max: 64 });
    let mut d = EventStreamDecoder::with_max_message(m.len());
    let mut out = Vec::new();
    d.push(&m, &mut out).unwrap();
    assert_eq!(out.len(), 1, "a message at the cap is taken");
}

/// A prelude with these lengths and a correct CRC.
fn prelude(total: u32, headers: u32) -> Vec<u8> {
    let mut p = total.to_be_bytes().to_vec();
    p.extend_from_slice(&headers.to_be_bytes());
    let crc = crc32(&p);
    p.extend_from_slice(&crc.to_be_bytes());
    p
}

/// A message around these raw header bytes, its CRCs right.
fn with_raw_headers(headers: &[u8]) -> Vec<u8> {
    let mut m = prelude((16 + headers.len()) as u32, headers.len() as u32);
    m.extend_from_slice(headers);
    let crc = crc32(&m);
    m.extend_from_slice(&crc.to_be_bytes());
    m
}

#[test]
fn malformed_messages_are_refused() {
    // Lengths that disagree: more headers than the message holds, or a message
    // shorter than its own overhead.
    for p in [prelude(20, 8), prelude(8, 0)] {
        let err = decode_all(&[&p]).unwrap_err();
        assert!(matches!(err, FrameError::Malformed(_)), "{err:?}");
    }
    // An unknown header type, a name cut short, a string cut short.
    for headers in [&b"\x01a\x0a"[..], b"\x05ab", b"\x01a\x07\x00\x09abc"] {
        let err = decode_all(&[&with_raw_headers(headers)]).unwrap_err();
        assert!(matches!(err, FrameError::Malformed(_)), "{headers:?}: {err:?}");
    }
}

#[test]
fn a_stream_cut_inside_a_message_is_an_error() {
    assert_eq!(decode_all(&[&FOO_BAR[..20]]).unwrap_err(), FrameError::Truncated(20));
    assert_eq!(decode_all(&[&FOO_BAR[..5]]).unwrap_err(), FrameError::Truncated(5));
    assert_eq!(decode_all(&[]).unwrap(), []);
}
