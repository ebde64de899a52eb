//! Parsers and stream state machines take untrusted input: whatever bytes arrive,
//! they return a value or an error, never panic. (Coverage-guided fuzzing needs a
//! nightly toolchain; these property tests run on stable in every CI run.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::{Value, json};
use switchyard_protocol::{
    ClientFormat, SseDecoder, SseEvent, StreamDecoder, StreamEvent, Wire, anthropic, gemini,
    openai_chat, responses,
};

/// JSON values shaped loosely like the vendor formats, so the parsers get past the
/// first field and exercise their inner branches.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z_ ]{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("user"),
            Just("assistant"),
            Just("system"),
            Just("tool"),
            Just("developer"),
            Just("text"),
            Just("image"),
            Just("image_url"),
            Just("tool_use"),
            Just("tool_result"),
            Just("thinking"),
            Just("function_call"),
            Just("function_call_output"),
            Just("message"),
            Just("input_text"),
        ]
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(
                prop_oneof![
                    Just("model"),
                    Just("messages"),
                    Just("role"),
                    Just("content"),
                    Just("type"),
                    Just("text"),
                    Just("tools"),
                    Just("input"),
                    Just("contents"),
                    Just("parts"),
                    Just("choices"),
                    Just("delta"),
                    Just("tool_calls"),
                    Just("function"),
                    Just("arguments"),
                    Just("usage"),
                    Just("stream"),
                    Just("system"),
                    Just("candidates"),
                    Just("functionCall"),
                    Just("source"),
                    Just("data"),
                ]
                .prop_map(str::to_owned),
                inner,
                0..6,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn feed(mut decoder: Box<dyn StreamDecoder>, events: &[SseEvent]) {
    let mut out: Vec<StreamEvent> = Vec::new();
    for e in events {
        if decoder.push(e, &mut out).is_err() {
            return;
        }
    }
    let _ = decoder.finish(&mut out);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn request_parsers_never_panic_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = openai_chat::parse_request(&bytes);
        let _ = anthropic::parse_request(&bytes);
        let _ = responses::parse_request(&bytes);
        let _ = gemini::parse_request(&bytes);
    }

    #[test]
    fn parsers_never_panic_on_json_shaped_input(v in json_value()) {
        let bytes = v.to_string().into_bytes();
        for f in [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic] {
            if let Ok(req) = f.parse_request(&bytes, None) {
                // Whatever parsed must also encode for every wire (or say why not).
                for w in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
                    let _ = w.encode_request(&req);
                }
            }
        }
        for w in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
            if let Ok(resp) = w.parse_response(&bytes) {
                for f in [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic] {
                    let _ = f.encode_response(&resp, &[], None);
                }
            }
            let _ = w.parse_error(&bytes);
        }
        let _ = responses::parse_response(&bytes);
        // Model lists: what a provider answers is read, never trusted.
        for w in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini, Wire::Bedrock, Wire::VertexGemini] {
            let _ = w.behaviour().parse_models(&bytes);
        }
    }

    #[test]
    fn stream_decoders_never_panic(events in proptest::collection::vec((proptest::option::of("[a-z_.]{0,24}"), json_value()), 0..12)) {
        let events: Vec<SseEvent> = events
            .into_iter()
            .map(|(event, data)| SseEvent { event, data: data.to_string(), id: None })
            .collect();
        for w in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
            feed(w.stream_decoder(), &events);
        }
        feed(Box::new(responses::Decoder::new()), &events);
    }

    #[test]
    fn sse_decoder_never_panics(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
        let mut d = SseDecoder::with_max_line(1024);
        let mut out = Vec::new();
        for c in &chunks {
            if d.push(c, &mut out).is_err() {
                break;
            }
        }
        d.finish(&mut out);
    }
}
