//! A client's request body in each ingress format: parsed, then encoded for every
//! upstream wire, and (same format) checked for the fast path's adaptations.
//! Nothing may panic; refusing is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_protocol::{ClientFormat, ModelTraits, Wire};

const FORMATS: [ClientFormat; 3] =
    [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic];
const WIRES: [Wire; 3] = [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini];

fuzz_target!(|data: &[u8]| {
    for format in FORMATS {
        let Ok(req) = format.parse_request(data, None) else { continue };
        for wire in WIRES {
            let _ = wire.encode_request(&req);
            let traits = ModelTraits::infer(wire, &req.model);
            let _ = wire.encode_request_for(&req, traits);
        }
        if let Some(wire) = format.native_wire() {
            for model in ["claude-opus-4-7", "claude-sonnet-4-5", "gpt-6.2-sol", "gpt-4o"] {
                let traits = ModelTraits::infer(wire, model);
                if wire.may_adapt(&req, data, traits)
                    && let Ok(serde_json::Value::Object(body)) = serde_json::from_slice(data)
                {
                    let _ = wire.adapt_native(&body, traits);
                }
            }
        }
    }
});
