use super::*;
use proptest::prelude::*;

fn decode_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    for c in chunks {
        d.push(c, &mut out).unwrap();
    }
    d.finish(&mut out);
    out
}

/// `input` cut at `cuts` (any order, any values: taken modulo its length).
fn split_at(input: &[u8], cuts: Vec<usize>) -> Vec<&[u8]> {
    let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (input.len() + 1)).collect();
    cuts.sort_unstable();
    let mut chunks = Vec::new();
    let mut prev = 0;
    for c in cuts {
        chunks.push(&input[prev..c]);
        prev = c;
    }
    chunks.push(&input[prev..]);
    chunks
}

/// A stream made of SSE's pieces in any order: fields, comments, every line end.
fn pieces() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop::sample::select(vec![
        "data: x", "data:", "event: e", "id: 7", ": ping", "retry: 5", "\n", "\r", "\r\n", "é",
    ]);
    prop::collection::vec(piece, 0..24).prop_map(|p| p.concat().into_bytes())
}

#[test]
fn decodes_events_with_names_comments_and_multiline_data() {
    let ev = decode_all(&[b": ping\nevent: a\ndata: x\ndata: y\n\ndata: {\"k\":1}\n\n"]);
    assert_eq!(ev.len(), 2);
    assert_eq!(ev[0].event.as_deref(), Some("a"));
    assert_eq!(ev[0].data, "x\ny");
    assert_eq!(ev[1].data, "{\"k\":1}");
}

#[test]
fn handles_crlf_split_between_chunks() {
    let ev = decode_all(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
    assert_eq!(ev.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a", "b"]);
}

#[test]
fn trailing_event_without_blank_line_is_dispatched() {
    let ev = decode_all(&[b"data: [DONE]"]);
    assert_eq!(ev[0].data, "[DONE]");
}

#[test]
fn refuses_unbounded_lines() {
    let mut d = SseDecoder::with_max_line(8);
    let mut out = Vec::new();
    assert_eq!(d.push(b"data: 0123456789", &mut out), Err(SseTooLong::Line(8)));
    // Ended or not, in one push or many, a line over the cap is refused.
    let mut d = SseDecoder::with_max_line(8);
    assert_eq!(d.push(b"data: 0123456789\n\n", &mut out), Err(SseTooLong::Line(8)));
    let mut d = SseDecoder::with_max_line(8);
    let pushed: Vec<_> = b"data: 0123456789".iter().map(|b| d.push(&[*b], &mut out)).collect();
    assert_eq!(pushed.last(), Some(&Err(SseTooLong::Line(8))));
    assert!(out.is_empty());
}

#[test]
fn data_lines_without_the_blank_line_fail_past_the_event_cap() {
    // The attack: `data:` lines forever, never the blank line that ends the event.
    let mut d = SseDecoder::with_limits(64, 100);
    let mut out = Vec::new();
    let mut lines = 0;
    let err = loop {
        match d.push(b"data: x\n", &mut out) {
            Ok(()) => {
                assert!(d.held() <= 64 + 100, "holds {} bytes", d.held());
                lines += 1;
                assert!(lines < 1000, "never refused");
            }
            Err(e) => break e,
        }
    };
    assert_eq!(err, SseTooLong::Event(100));
    assert_eq!(err.to_string(), "server-sent event larger than 100 bytes");
    // "x" then "\nx" per line: 50 lines are 99 bytes, the 51st would be 101.
    assert_eq!(lines, 50);
    assert!(out.is_empty());
}

#[test]
fn the_event_cap_counts_each_field_once() {
    // `event:` and `id:` replace their values, so repeating them does not grow
    // the event; an event exactly at the cap passes.
    let mut d = SseDecoder::with_limits(64, 10);
    let mut out = Vec::new();
    for _ in 0..100 {
        d.push(b"event: abc\nid: 12\n", &mut out).unwrap();
    }
    d.push(b"data: 12345\n\n", &mut out).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(d.push(b"event: abc\nid: 12\ndata: 123456\n", &mut out), Err(SseTooLong::Event(10)));
    // Comments and unknown fields are not held at all.
    let mut d = SseDecoder::with_limits(64, 10);
    for _ in 0..100 {
        d.push(b": keep-alive\nretry: 1000\n", &mut out).unwrap();
    }
    assert_eq!(d.held(), 0);
}

#[test]
fn a_long_line_in_one_byte_pushes_is_searched_once() {
    let mut input = b"event: big\ndata: ".to_vec();
    input.extend(std::iter::repeat_n(b'x', 100_000));
    input.extend_from_slice(b"\r\n\r\ndata: after\n\n");
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    for b in &input {
        d.push(std::slice::from_ref(b), &mut out).unwrap();
    }
    d.finish(&mut out);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].event.as_deref(), Some("big"));
    assert_eq!(out[0].data.len(), 100_000);
    assert_eq!(out[1].data, "after");
    // Every byte searched once at most: linear, however the input is split.
    assert!(d.searched <= input.len(), "searched {} of {}", d.searched, input.len());
}

#[test]
fn pending_counts_the_bytes_after_the_last_blank_line() {
    let mut d = SseDecoder::new();
    let mut out = Vec::new();
    d.push(b"data: a\n\ndata: b", &mut out).unwrap();
    assert_eq!(d.pending(), "data: b".len());
    d.push(b"\n", &mut out).unwrap();
    assert_eq!(d.pending(), "data: b\n".len());
    // A comment-only block dispatches nothing but is complete all the same.
    d.push(b"\n: ping\n\n", &mut out).unwrap();
    assert_eq!(d.pending(), 0);
    // A blank line's `\r` completes the block; a `\n` that follows in the next
    // chunk is then pending until the next blank line.
    d.push(b"data: c\r\n\r", &mut out).unwrap();
    assert_eq!(d.pending(), 0);
    d.push(b"\n", &mut out).unwrap();
    assert_eq!(d.pending(), 1);
    d.push(b"data: d\n\n", &mut out).unwrap();
    assert_eq!(d.pending(), 0);
    assert_eq!(out.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a", "b", "c", "d"]);
}

#[test]
fn writer_round_trips() {
    let mut buf = Vec::new();
    write_event(&mut buf, Some("message_start"), "line1\nline2");
    let ev = decode_all(&[&buf]);
    assert_eq!(ev[0].event.as_deref(), Some("message_start"));
    assert_eq!(ev[0].data, "line1\nline2");
}

#[test]
fn data_is_serialized_as_one_line_that_decodes_back() {
    #[derive(serde::Serialize)]
    struct Chunk<'a> {
        text: &'a str,
    }
    let mut buf = b"kept".to_vec();
    write_data(&mut buf, Some("delta"), &Chunk { text: "two\nlines \u{e9}" });
    let expected = "keptevent: delta\ndata: {\"text\":\"two\\nlines \u{e9}\"}\n\n";
    assert_eq!(String::from_utf8_lossy(&buf), expected);
    let ev = decode_all(&[&buf[4..]]);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].data, "{\"text\":\"two\\nlines \u{e9}\"}");

    // What does not serialize leaves the buffer as it was.
    let bad: std::collections::HashMap<(u8, u8), u8> = [((1, 2), 3)].into();
    write_data(&mut buf, Some("delta"), &bad);
    assert_eq!(String::from_utf8_lossy(&buf), expected);
}

proptest! {
    #[test]
    fn any_split_gives_the_same_events(split in prop::collection::vec(0usize..64, 0..8)) {
        let input: &[u8] = "event: e\r\ndata: h\u{e9}llo\r\n\r\n: c\ndata: a\ndata: b\n\ndata: z\r\r".as_bytes();
        let whole = decode_all(&[input]);
        prop_assert_eq!(decode_all(&split_at(input, split)), whole);
    }

    #[test]
    fn the_bytes_before_pending_decode_to_the_events_so_far(
        input in pieces(),
        split in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut d = SseDecoder::new();
        let mut events = Vec::new();
        let mut pushed = 0;
        for chunk in split_at(&input, split) {
            d.push(chunk, &mut events).unwrap();
            pushed += chunk.len();
            let complete = &input[..pushed - d.pending()];
            prop_assert_eq!(decode_all(&[complete]), events.clone(), "after {} bytes", pushed);
        }
        d.finish(&mut events);
        prop_assert_eq!(events, decode_all(&[&input]));
    }

    #[test]
    fn caps_hold_and_fail_alike_however_the_input_is_split(
        input in pieces(),
        split in prop::collection::vec(any::<usize>(), 0..8),
        max_line in 0usize..16,
        max_event in 0usize..24,
    ) {
        let run = |chunks: &[&[u8]]| {
            let mut d = SseDecoder::with_limits(max_line, max_event);
            let mut out = Vec::new();
            for chunk in chunks {
                if let Err(e) = d.push(chunk, &mut out) {
                    return (out, Some(e));
                }
                assert!(d.held() <= max_line + max_event, "holds {}", d.held());
            }
            d.finish(&mut out);
            (out, None)
        };
        let (whole, whole_err) = run(&[&input]);
        let (split, split_err) = run(&split_at(&input, split));
        // The same error, and the same events before it, however split.
        prop_assert_eq!(split_err, whole_err);
        prop_assert_eq!(split, whole);
    }
}
