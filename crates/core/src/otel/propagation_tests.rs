#![allow(clippy::unwrap_used)]
use super::*;

const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

#[test]
fn a_valid_traceparent_round_trips() {
    let p = TraceParent::parse(VALID).unwrap();
    assert_eq!(hex(&p.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(hex(&p.span_id), "00f067aa0ba902b7");
    assert_eq!(p.flags, 1);
    assert_eq!(p.header(), VALID);
    // Surrounding whitespace is optional whitespace in a header.
    assert_eq!(TraceParent::parse(&format!(" {VALID} ")), Some(p));
}

#[test]
fn invalid_traceparents_are_refused() {
    let cases = [
        "",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        // Uppercase hex.
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        // Zero ids.
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        // Version ff, and version 00 with more after it.
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        // Wrong separators, non-hex.
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",
    ];
    for c in cases {
        assert_eq!(TraceParent::parse(c), None, "{c:?}");
    }
}

#[test]
fn a_later_version_is_read_as_00_with_its_extra_fields_ignored() {
    let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-whatever";
    let p = TraceParent::parse(later).unwrap();
    assert_eq!(p.header(), VALID);
    assert_eq!(
        TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"),
        None
    );
}

#[test]
fn tracestate_goes_only_with_a_valid_traceparent() {
    let ok = Incoming::from_headers(Some(VALID), Some("congo=t61rcWkgMzE"));
    assert_eq!(ok.state.as_deref(), Some("congo=t61rcWkgMzE"));
    assert_eq!(ok.passthrough().as_deref(), Some(VALID));
    let bad = Incoming::from_headers(Some("nonsense"), Some("congo=t61rcWkgMzE"));
    assert_eq!(bad, Incoming::default());
    assert_eq!(bad.passthrough(), None);
    let huge = "a=".to_owned() + &"b".repeat(9000);
    assert_eq!(Incoming::from_headers(Some(VALID), Some(&huge)).state, None);
}

#[test]
fn fresh_ids_are_never_zero_and_differ() {
    let (a, b) = (new_trace_id(), new_trace_id());
    assert_ne!(a, [0; 16]);
    assert_ne!(a, b);
    assert_ne!(new_span_id(), [0; 8]);
    assert_ne!(new_span_id(), new_span_id());
}
