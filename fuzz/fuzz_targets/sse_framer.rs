//! The SSE framer on long lines and unterminated events, with small caps. The
//! first byte says how many cuts follow (up to 15), each two bytes (big-endian,
//! taken modulo the stream's length); the rest is the stream. Whatever the bytes
//! and the cuts: after every successful push the decoder holds no more than its
//! two caps; the cut stream fails exactly where one push of it fails and gives
//! the same events; and the bytes before `pending()` decode alone to the events
//! pushed so far (what the pass-through path relies on to forward whole events).
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_protocol::SseDecoder;
use switchyard_protocol::sse::SseTooLong;

/// Small, so that the fuzzer reaches both caps within short inputs.
const MAX_LINE: usize = 64;
const MAX_EVENT: usize = 256;

type Events = Vec<switchyard_protocol::SseEvent>;

/// The stream through a fresh decoder in these chunks; with `check`, the
/// `pending()` property after every push.
fn decode(chunks: &[&[u8]], check: bool) -> (Events, Option<SseTooLong>) {
    let mut d = SseDecoder::with_limits(MAX_LINE, MAX_EVENT);
    let mut events = Vec::new();
    let mut pushed = Vec::new();
    for chunk in chunks {
        if let Err(e) = d.push(chunk, &mut events) {
            return (events, Some(e));
        }
        assert!(d.held() <= MAX_LINE + MAX_EVENT, "holds {} bytes", d.held());
        pushed.extend_from_slice(chunk);
        if check {
            let complete = &pushed[..pushed.len() - d.pending()];
            let (alone, err) = decode(&[complete], false);
            assert_eq!(err, None, "complete events fail alone");
            assert_eq!(alone, events, "the bytes before pending() decode otherwise");
        }
    }
    d.finish(&mut events);
    (events, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = usize::from(n % 16);
    let Some((cuts, stream)) = rest.split_at_checked(2 * n) else { return };
    let mut at: Vec<usize> = cuts
        .chunks_exact(2)
        .map(|c| usize::from(u16::from_be_bytes([c[0], c[1]])) % (stream.len() + 1))
        .collect();
    at.sort_unstable();
    let mut chunks = Vec::with_capacity(n + 1);
    let mut prev = 0;
    for cut in at {
        chunks.push(&stream[prev..cut]);
        prev = cut;
    }
    chunks.push(&stream[prev..]);
    let whole = decode(&[stream], false);
    let split = decode(&chunks, true);
    assert_eq!(split, whole, "a split decodes otherwise than one push");
});
