//! Embedding bodies: a client's (OpenAI, Gemini single and batch) parsed and
//! encoded for every upstream family in batches; an upstream's answer parsed in
//! each family's shape. Nothing may panic; refusing is fine.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchyard_protocol::embeddings::{self, EmbedResponse, Encoding, bedrock, gemini, openai};

fuzz_target!(|data: &[u8]| {
    let parsed = [
        openai::parse_request(data),
        gemini::parse_embed_content(data, "e"),
        gemini::parse_batch(data, "e"),
    ];
    for req in parsed.into_iter().flatten() {
        for batch in embeddings::batches(req.inputs.len(), gemini::MAX_INPUTS) {
            let inputs = &req.inputs[batch];
            let _ = openai::encode_request(&req, inputs, "m");
            let _ = gemini::encode_batch(&req, inputs, "m");
            let _ = bedrock::encode_request(bedrock::Family::Cohere, &req, inputs);
            let _ = bedrock::encode_request(bedrock::Family::Titan { v2: true }, &req, inputs);
        }
    }
    let answers = [
        openai::parse_response(data),
        gemini::parse_batch_response(data, "m"),
        bedrock::parse_response(bedrock::Family::Cohere, data, "m"),
        bedrock::parse_response(bedrock::Family::Titan { v2: true }, data, "m"),
    ];
    let joined = EmbedResponse::join(answers.into_iter().flatten().collect());
    let _ = openai::write_response(&joined, "m", Encoding::Base64);
    let _ = gemini::write_batch(&joined);
});
