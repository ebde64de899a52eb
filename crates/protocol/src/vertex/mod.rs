//! Google Vertex AI as upstream wires: the publishers' models behind one
//! Google Cloud project, each in its publisher's own body, authorized with an
//! OAuth access token (a service account's, or Application Default
//! Credentials'), the model in the URL:
//!
//! | wire | models | path under `…/projects/{project}/locations/{region}` | body |
//! |---|---|---|---|
//! | `vertex-anthropic` | Claude | `/publishers/anthropic/models/{model}:rawPredict` (`:streamRawPredict`) | Anthropic Messages, `anthropic_version: vertex-2023-10-16`, no `model` |
//! | `vertex-gemini` | Gemini | `/publishers/google/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`) | Gemini's |
//! | `vertex-openai` | open models (Model-as-a-Service: Llama, Mistral, DeepSeek, Qwen…) | `/endpoints/openapi/chat/completions` | Chat Completions, `model` as `publisher/model` |
//!
//! Each is its publisher's wire in behaviour ([`crate::anthropic`],
//! [`crate::gemini`], [`crate::openai_chat`]: what a model takes, usage,
//! streams, errors), with Vertex's facts: its [`WireSpec`], and for Claude the
//! body's version field in place of the `anthropic-version` header and the
//! model. A client of the publisher's format takes the fast path (its own body,
//! edited: [`crate::Wire::dialect`]); a Claude client's `anthropic-beta` flags
//! go only where the provider lists them (`anthropic_betas`), and a body field
//! a left-out flag gates (`context_management`) goes with it.
//!
//! The endpoint names the project and the region: `https://{region}-aiplatform.googleapis.com/v1/projects/{project}/locations/{region}`,
//! or the global endpoint (`aiplatform.googleapis.com`, `locations/global`);
//! the provider's `project` (else its service account's) and `region` fill it in.

mod behaviour;
mod models;

pub use behaviour::{VERTEX_ANTHROPIC, VERTEX_GEMINI, VERTEX_OPENAI, VertexWire};
pub use models::{listed_id, parse_models};

use crate::spec::{Auth, Framing, ModelPlacement, Streaming, WireSpec};

/// The `anthropic_version` a Claude body on Vertex AI carries (instead of the
/// `anthropic-version` header).
pub const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Vertex's endpoint: `{region_prefix}` is `{region}-`, or nothing for the
/// global location.
const ENDPOINT: &str =
    "https://{region_prefix}aiplatform.googleapis.com/v1/projects/{project}/locations/{region}";

/// Claude on Vertex AI. Its token count is Vertex's own (`count-tokens:rawPredict`).
pub const ANTHROPIC_SPEC: WireSpec = WireSpec {
    path: "/publishers/anthropic/models/{model}:rawPredict",
    streaming: Streaming::Path("/publishers/anthropic/models/{model}:streamRawPredict"),
    model: ModelPlacement::Path,
    framing: Framing::Sse,
    auth: Auth::OAuthToken,
    headers: &[],
    // Only the flags the provider lists (`anthropic_betas`): Vertex refuses
    // those it does not take.
    passthrough_headers: &["anthropic-beta"],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    // One counting route for every Claude model: the body names it.
    compact: None,
    embeddings: None,
    images: None,
    jobs: None,
    batches: None,
    chat: true,
    count: Some(crate::spec::CountSpec {
        path: "/publishers/anthropic/models/count-tokens:rawPredict",
        body: crate::spec::CountBody::Named(COUNTED_FIELDS),
        answer: "input_tokens",
        passthrough: false,
        model: crate::spec::CountModel::Same,
    }),
};

/// What Claude's count on Vertex takes: Anthropic's `count_tokens` fields
/// ([`crate::anthropic::COUNTED_FIELDS`]) and the version field, less those a
/// beta flag gates (`mcp_servers`, `context_management`): the count takes no
/// flags.
pub(crate) const COUNTED_FIELDS: &[&str] = &[
    "anthropic_version",
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "cache_control",
    "output_config",
    "output_format",
    "speed",
];

/// Gemini on Vertex AI.
pub const GEMINI_SPEC: WireSpec = WireSpec {
    path: "/publishers/google/models/{model}:generateContent",
    streaming: Streaming::Path("/publishers/google/models/{model}:streamGenerateContent?alt=sse"),
    model: ModelPlacement::Path,
    framing: Framing::Sse,
    auth: Auth::OAuthToken,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/publishers/google/models/{model}:predict",
        body: crate::embeddings::EmbedBody::VertexPredict,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/publishers/google/models/{model}:predict",
        edit_path: None,
        body: crate::images::ImageBody::Imagen,
    }),
    jobs: None,
    batches: Some(crate::batches::native::BatchApi::Vertex),
    chat: true,
    count: Some(crate::spec::CountSpec {
        path: "/publishers/google/models/{model}:countTokens",
        // Vertex's CountTokensRequest takes these at its top level.
        body: crate::spec::CountBody::Only(&[
            "contents",
            "systemInstruction",
            "tools",
            "generationConfig",
        ]),
        answer: "totalTokens",
        passthrough: true,
        model: crate::spec::CountModel::Same,
    }),
};

/// Vertex AI's OpenAI-compatible endpoint (Model-as-a-Service open models).
pub const OPENAI_SPEC: WireSpec = WireSpec {
    path: "/endpoints/openapi/chat/completions",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: Auth::OAuthToken,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    compact: None,
    embeddings: None,
    images: None,
    jobs: None,
    batches: None,
    chat: true,
    count: None,
};

#[cfg(test)]
#[path = "vertex_tests.rs"]
mod tests;
