//! An upstream's SSE stream, cut into arbitrary chunks, through the SSE decoder,
//! the wire's stream decoder and a client format's stream encoder: the path every
//! streamed byte takes. The first byte picks the wire, the client format and the
//! chunk size. Nothing may panic, whatever the bytes or the cuts.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_protocol::{ClientFormat, ErrorBody, ErrorKind, Request, SseDecoder, Wire};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else { return };
    let wire = [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini][usize::from(pick % 3)];
    let format = [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic]
        [usize::from(pick / 3 % 3)];
    let chunk = usize::from(pick / 9 % 16) + 1;
    let mut sse = SseDecoder::with_max_line(4096);
    let mut decoder = wire.stream_decoder();
    let mut encoder = format.stream_encoder(&Request::default(), None);
    let (mut events, mut canonical, mut out) = (Vec::new(), Vec::new(), Vec::new());
    let mut failed = false;
    for piece in body.chunks(chunk) {
        if sse.push(piece, &mut events).is_err() {
            failed = true;
            break;
        }
        for event in events.drain(..) {
            if decoder.push(&event, &mut canonical).is_err() {
                failed = true;
            }
        }
        for event in canonical.drain(..) {
            encoder.push(&event, &mut out);
        }
        if failed {
            break;
        }
    }
    if !failed {
        sse.finish(&mut events);
        for event in events.drain(..) {
            failed |= decoder.push(&event, &mut canonical).is_err();
        }
        failed |= decoder.finish(&mut canonical).is_err();
        for event in canonical.drain(..) {
            encoder.push(&event, &mut out);
        }
    }
    if failed {
        let err = ErrorBody::new(502, ErrorKind::Upstream, "upstream_stream_broken", "broken");
        encoder.error(&err, &mut out);
    } else {
        encoder.finish(&mut out);
    }
});
