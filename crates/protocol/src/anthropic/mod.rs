//! Anthropic Messages API (`POST /v1/messages`), in both directions, streaming and not.
//!
//! - Ingress: what Claude Code and the Anthropic SDKs send to the gateway
//!   ([`parse_request`]), and what they expect back ([`encode_response`], [`Encoder`]).
//! - Upstream: what we send to `api.anthropic.com` ([`encode_request`]) and what it
//!   answers ([`parse_response`], [`Decoder`], [`parse_error`]).
//!
//! Content blocks the canonical model has no place for (`server_tool_use`,
//! `web_search_tool_result`, `search_result`, documents with a `text`, `content` or
//! `file` source, images from the Files API, …) are parsed as
//! [`Part::Untranslatable`], by name: when client and upstream both speak Anthropic,
//! the gateway's same-format fast path forwards the original body, so they go as they
//! came; a translation to another wire refuses them by name. Server tools such as
//! `web_search_*`, `mcp_toolset` (with `mcp_servers`) or `bash_*` (no schema) are
//! carried as [`HostedTool`]s, never skipped: the core sends the request first where
//! they run (only there when the request requires them), leaves one out only where
//! it says so, and a wire that cannot declare one refuses it by name
//! ([`crate::carry`]). `service_tier` is carried; Claude Code's session, named in
//! `metadata.user_id`, is read for the record ([`claude_code_session`]).
//!
//! [`HostedTool`]: crate::HostedTool
//!
//! Anthropic refuses text blocks that are empty or only whitespace, and messages left
//! without content: such blocks are dropped from the history on the way to it (see
//! [`drop_blank_text`]).
//!
//! Usage: Anthropic reports `input_tokens` *without* cache reads and writes; the
//! canonical model counts the total (see [`crate::model`]). Counts are added up on the
//! way in and subtracted on the way out.
//!
//! [`Part::Untranslatable`]: crate::Part::Untranslatable

mod behaviour;
mod extras;
mod models;
mod native;
mod refusal;
mod request;
mod response;
mod rules;
mod stream_decode;
mod stream_encode;
mod wire;
mod write;

pub use behaviour::{AnthropicClient, AnthropicWire};
pub use extras::claude_code_session;
pub use models::parse_models;
pub use native::{adapt_native, drop_blank_text, may_adapt};
pub use refusal::refused;
pub(crate) use request::history_tools;
pub use request::{continues_without_thinking, encode_request, parse_request, tool_id};
// What Claude takes on Bedrock too (`crate::bedrock`): one statement of its rules.
pub use response::{encode_response, parse_error, parse_response, parse_usage};
pub(crate) use rules::{DEFAULT_MAX_TOKENS, Samplers, anthropic_effort, budget_within};
pub use rules::{gated_fields, sampling_edits};
pub use stream_decode::Decoder;
pub use stream_encode::Encoder;
pub use write::Message;

use crate::spec::{
    Auth, CountBody, CountSpec, Framing, ModelPlacement, RequiredHeader, Streaming, WireSpec,
};

/// How an Anthropic upstream is called: `POST {endpoint}/v1/messages` with the key in
/// `x-api-key` and an `anthropic-version` (the client's own when it sent one), the
/// model and `stream` in the body, streams as SSE. An Anthropic client's
/// `anthropic-beta` goes along: its betas mean the same to the upstream.
pub const SPEC: WireSpec = WireSpec {
    path: "/v1/messages",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: Auth::Header("x-api-key"),
    headers: &[RequiredHeader { name: "anthropic-version", default: "2023-06-01" }],
    passthrough_headers: &["anthropic-beta"],
    headers_in_body: &[],
    default_endpoint: "https://api.anthropic.com",
    compact: None,
    embeddings: None,
    images: None,
    jobs: None,
    batches: Some(crate::batches::native::BatchApi::Anthropic),
    chat: true,
    count: Some(CountSpec {
        path: "/v1/messages/count_tokens",
        body: CountBody::Only(COUNTED_FIELDS),
        answer: "input_tokens",
        passthrough: true,
        model: crate::spec::CountModel::Same,
    }),
};

/// What `POST /v1/messages/count_tokens` takes: a Messages request without the
/// generation settings (`max_tokens`, `stream`, sampling, `stop_sequences`,
/// `metadata`, `service_tier`), which it refuses as extra inputs.
pub const COUNTED_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "mcp_servers",
    "cache_control",
    "output_config",
    "output_format",
    "context_management",
    "speed",
];

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod test_support;
