#![allow(clippy::unwrap_used)]
//! The encoder checked against the test kit's collector decoder, which was
//! written from the `.proto` files apart from it.
use super::*;
use crate::otel::spans::{Kind, Span, StatusCode, Value};
use switchyard_testkit::otlp::{AttrValue, decode_export};

fn span() -> Span {
    Span {
        trace_id: [0x4b; 16],
        span_id: [1, 2, 3, 4, 5, 6, 7, 8],
        parent: Some([9; 8]),
        trace_state: Some("a=b".into()),
        name: "chat gpt".into(),
        kind: Kind::Client,
        start_ns: 1_700_000_000_000_000_000,
        end_ns: 1_700_000_000_500_000_000,
        attributes: vec![
            ("s", "text \u{e9}".into()),
            ("b", Value::Bool(true)),
            ("i", Value::Int(-3)),
            ("big", Value::Int(1 << 40)),
            ("d", Value::Double(0.25)),
            ("a", Value::Strs(vec!["stop".into(), "length".into()])),
        ],
        status: Some((StatusCode::Error, "status_503".into())),
        flags: 1,
        remote_parent: Some(false),
    }
}

#[test]
fn spans_decode_as_a_collector_reads_them() {
    let resource = [("service.name", Value::from("gw"))];
    let bytes = export_request(&resource, ("switchyard", "0.1.0"), &[span()]);
    let spans = decode_export(&bytes).unwrap();
    assert_eq!(spans.len(), 1);
    let s = &spans[0];
    assert_eq!(s.trace_id, "4b".repeat(16));
    assert_eq!(s.span_id, "0102030405060708");
    assert_eq!(s.parent_span_id.as_deref(), Some("0909090909090909"));
    assert_eq!(s.trace_state, "a=b");
    assert_eq!(s.name, "chat gpt");
    assert_eq!(s.kind, 3);
    assert_eq!((s.start_ns, s.end_ns), (1_700_000_000_000_000_000, 1_700_000_000_500_000_000));
    assert_eq!(s.status_code, 2);
    assert_eq!(s.status_message, "status_503");
    assert_eq!(s.flags, 0x101);
    assert_eq!(s.scope, "switchyard");
    assert_eq!(s.resource["service.name"], AttrValue::Str("gw".into()));
    assert_eq!(s.attributes["s"], AttrValue::Str("text \u{e9}".into()));
    assert_eq!(s.attributes["b"], AttrValue::Bool(true));
    assert_eq!(s.attributes["i"], AttrValue::Int(-3));
    assert_eq!(s.attributes["big"], AttrValue::Int(1 << 40));
    assert_eq!(s.attributes["d"], AttrValue::Double(0.25));
    assert_eq!(
        s.attributes["a"],
        AttrValue::Array(vec![AttrValue::Str("stop".into()), AttrValue::Str("length".into())])
    );
}

#[test]
fn a_root_span_has_no_parent_and_no_status() {
    let root =
        Span { parent: None, status: None, remote_parent: None, trace_state: None, ..span() };
    let bytes = export_request(&[], ("s", "1"), &[root]);
    let s = &decode_export(&bytes).unwrap()[0];
    assert_eq!(s.parent_span_id, None);
    assert_eq!(s.status_code, 0);
    assert_eq!(s.flags, 1);
}

#[test]
fn grpc_frames_carry_their_length() {
    assert_eq!(grpc_frame(b"abc"), vec![0, 0, 0, 0, 3, b'a', b'b', b'c']);
    assert_eq!(grpc_frame(b""), vec![0, 0, 0, 0, 0]);
}

#[test]
fn partial_success_is_read() {
    // partial_success { rejected_spans: 2, error_message: "no" }
    let body = [0x0a, 0x06, 0x08, 0x02, 0x12, 0x02, b'n', b'o'];
    assert_eq!(rejected(&body), Some((2, "no".to_owned())));
    assert_eq!(rejected(&[]), None);
    // An empty partial_success refuses nothing.
    assert_eq!(rejected(&[0x0a, 0x00]), None);
    // Garbage is not a refusal.
    assert_eq!(rejected(&[0xff]), None);
}
