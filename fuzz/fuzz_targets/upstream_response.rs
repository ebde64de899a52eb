//! An upstream's non-stream answer (or error body) on each wire: parsed, its usage
//! read the fast path's way, and the canonical response encoded for every client
//! format. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_protocol::{ClientFormat, Wire};

fuzz_target!(|data: &[u8]| {
    for wire in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
        let _ = wire.parse_usage(data);
        let _ = wire.parse_error(data);
        if let Ok(resp) = wire.parse_response(data) {
            for format in
                [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic]
            {
                let _ = format.encode_response(&resp, &[], None);
            }
        }
    }
});
