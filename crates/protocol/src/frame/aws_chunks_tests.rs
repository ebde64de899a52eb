use base64::Engine as _;

use super::*;
use crate::frame::test_support::{Value, event, message};

fn chunk(json: &str) -> Vec<u8> {
    let bytes = base64::engine::general_purpose::STANDARD.encode(json);
    event("chunk", &format!(r#"{{"bytes":"{bytes}"}}"#))
}

#[test]
fn a_chunk_becomes_the_model_event_it_carries_named_by_its_type() {
    let start = r#"{"type":"message_start","message":{"id":"msg_bdrk_1"}}"#;
    let stop =
        r#"{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":3}}"#;
    let mut bytes = chunk(start);
    bytes.extend(chunk(stop));
    let mut d = ChunksDecoder::new();
    let mut out = Vec::new();
    // Split anywhere: one byte at a time.
    for b in &bytes {
        d.push(std::slice::from_ref(b), &mut out).unwrap();
    }
    d.finish().unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0], Frame { event: Some("message_start".into()), data: start.into(), id: None });
    assert_eq!(out[1].event.as_deref(), Some("message_stop"));
    assert_eq!(out[1].data, stop);
}

#[test]
fn an_exception_passes_as_the_event_stream_names_it() {
    let bytes = message(
        &[
            (":message-type", Value::Str("exception")),
            (":exception-type", Value::Str("throttlingException")),
        ],
        br#"{"message":"Too many requests"}"#,
    );
    let mut out = Vec::new();
    ChunksDecoder::new().push(&bytes, &mut out).unwrap();
    assert_eq!(out[0].event.as_deref(), Some("throttlingException"));
    assert_eq!(out[0].data, r#"{"message":"Too many requests"}"#);
}

#[test]
fn a_chunk_that_is_not_base64_json_is_refused() {
    for payload in [r#"{"bytes":"%%%"}"#, r#"{"nothing":1}"#, "not json"] {
        let mut out = Vec::new();
        let err = ChunksDecoder::new().push(&event("chunk", payload), &mut out).unwrap_err();
        assert!(matches!(err, FrameError::Malformed(_)), "{payload}: {err}");
    }
}

#[test]
fn an_inner_event_without_a_type_is_left_unnamed_for_the_decoder() {
    let mut out = Vec::new();
    ChunksDecoder::new().push(&chunk("[1,2]"), &mut out).unwrap();
    assert_eq!((out[0].event.as_deref(), out[0].data.as_str()), (None, "[1,2]"));
}

#[test]
fn pending_counts_the_message_not_yet_complete() {
    let bytes = chunk(r#"{"type":"ping"}"#);
    let mut d = ChunksDecoder::new();
    let mut out = Vec::new();
    d.push(&bytes[..10], &mut out).unwrap();
    assert_eq!((d.pending(), out.len()), (10, 0));
    d.push(&bytes[10..], &mut out).unwrap();
    assert_eq!((d.pending(), out.len()), (0, 1));
    // A stream that ends inside a message broke.
    let mut cut = ChunksDecoder::new();
    cut.push(&bytes[..20], &mut out).unwrap();
    assert_eq!(cut.finish(), Err(FrameError::Truncated(20)));
}
