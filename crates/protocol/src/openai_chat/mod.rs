//! OpenAI Chat Completions (`POST /v1/chat/completions`): the client format most SDKs
//! speak, and the upstream wire of OpenAI and every OpenAI-compatible server (vLLM,
//! Ollama, DeepSeek, Groq, Together…).
//!
//! Reasoning: Chat Completions has no standard reasoning output field; compatible
//! servers use `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama).
//! Both are read; `reasoning_content` is written.

mod behaviour;
mod compat;
mod models;
mod native;
mod request;
mod request_out;
mod response;
pub mod sampling;
mod stream_decode;
mod stream_encode;
mod wire;
mod write;

pub use behaviour::{OpenAiChatClient, OpenAiChatWire};
pub use compat::{
    Compat, OutputField, compat_edits, encode_request_as, is_tool_id, may_edit, tool_id,
};
pub use models::parse_models;
pub use native::{adapt_native, may_adapt};
pub use request::{encode_request, parse_request};
pub use response::{encode_response, parse_error, parse_response, parse_usage};
pub use stream_decode::Decoder;
pub use stream_encode::{Encoder, is_usage_only_chunk};
pub use write::Completion;

use crate::spec::{Auth, Framing, ModelPlacement, Streaming, WireSpec};

/// How an OpenAI-compatible upstream is called: `POST {endpoint}/chat/completions`
/// with a bearer key, the model and `stream` in the body, streams as SSE.
pub const SPEC: WireSpec = WireSpec {
    path: "/chat/completions",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: Auth::Bearer,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: "https://api.openai.com/v1",
    // Chat Completions has no counting endpoint (OpenAI's counts Responses bodies).
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/embeddings",
        body: crate::embeddings::EmbedBody::OpenAi,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/images/generations",
        edit_path: Some("/images/edits"),
        body: crate::images::ImageBody::OpenAi,
    }),
    jobs: None,
    batches: Some(crate::batches::native::BatchApi::OpenAi),
    chat: true,
    count: None,
};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod test_support;
