//! The OpenAI Responses API (`POST /v1/responses`) as a client-facing format and as an
//! upstream wire ([`ResponsesWire`], `wire: openai-responses`), streaming and not.
//! Codex speaks only this API (streaming, function tools, `function_call_output`
//! items), so the shapes below follow what Codex and the official SDKs send and read.
//!
//! As an upstream: a Responses client's own body goes on the same-format fast path
//! (`native.rs`); other formats are translated ([`encode_request_for`]) statelessly,
//! `store: false` with the reasoning included encrypted. A reasoning item's
//! `encrypted_content` becomes its thinking's signature tagged with [`FAMILY`]
//! ([`crate::continuity::tag_reasoning`]), and goes back only to this wire; Anthropic
//! and Bedrock leave a tagged signature out, as they do unsigned thinking.
//!
//! Mapping decisions (anything not listed maps field for field):
//! - A body reaches these translators whole: `previous_response_id` is expanded
//!   before they see it, by the gateway's stored responses (the server's
//!   `stateful` module) or a WebSocket connection's last response. Here it and
//!   `item_reference` input items are refused with [`ProtocolError::Unsupported`].
//! - `instructions` and the `system`/`developer` messages that come before any
//!   user/assistant/tool item form [`Request::system`]; later ones become
//!   [`Role::System`] messages. Consecutive items of the same role merge into one
//!   canonical message, so a `function_call` after an assistant message belongs to the
//!   same assistant turn.
//! - `reasoning` input items become [`Part::Thinking`] with the summary text (summary
//!   parts joined by a blank line; the raw `content` text when there is no summary).
//!   An `encrypted_content` this gateway sealed ([`crate::continuity`]) becomes the
//!   signed thinking or redacted thinking it stands for; another one (an OpenAI
//!   organisation's own) is not carried across providers. An item with neither
//!   summary nor content text is dropped. On the way out, signed thinking and
//!   redacted thinking get a sealed `encrypted_content` when a seal is given.
//! - `function` tools are translated as they are. `custom` (free-form) tools, such as
//!   Codex's `apply_patch`, become a function of one string argument `input` (its
//!   description carries the tool's grammar); `custom_tool_call` /
//!   `custom_tool_call_output` history items become tool calls with arguments
//!   `{"input": text}` and tool results; and the model's calls of such a tool go back
//!   to the client as `custom_tool_call` items with the text (streamed as
//!   `response.custom_tool_call_input.delta`/`.done` once the call is complete).
//!   `namespace` tools (Codex groups its sub-agent tools so) are flattened: each
//!   member becomes a tool named `<namespace>__<name>`, and calls (and history items
//!   with a `namespace`) map back to the namespace and the inner name.
//!   Hosted and special tools (`web_search`, `file_search`, `local_shell`,
//!   `computer_use`, `mcp`, …, and any type the gateway does not know) are carried as
//!   [`HostedTool`]s, never skipped: the core sends the request only where they run,
//!   and an encoder that cannot declare one refuses it by name ([`crate::carry`]).
//!   Function tools with `defer_loading` need tool search.
//! - Input items: `additional_tools` items add their tools to the request's (other
//!   wires declare every tool up front); `local_shell_call` and its output become a
//!   call of a tool `local_shell` and its result; the items of tools OpenAI runs
//!   (`web_search_call`, `mcp_call`, `computer_call`, …) are kept by name, so a
//!   translation refuses them naming the item.
//! - Compaction ([`crate::compaction`], shapes in `compaction.rs`): a final
//!   `compaction_trigger` item sets [`Request::compaction`]; a `compaction` item
//!   this gateway sealed becomes the summary it carries, as user text; one it did
//!   not seal is refused, naming it. [`parse_compact_request`] reads a
//!   `/responses/compact` body. A [`crate::Part::Compaction`] (streamed, a
//!   [`crate::BlockKind::Compaction`]) is written as the `compaction` output item;
//!   [`encode_compacted`] writes the compact endpoint's answer.
//! - `store`, `prompt_cache_key`, `prompt_cache_retention`, `safety_identifier` and
//!   `service_tier` are carried as they came ([`Extras`]); `include`, `truncation`
//!   and `text.verbosity` are accepted and ignored.
//!
//! [`HostedTool`]: crate::HostedTool
//! [`Extras`]: crate::Extras
//! - Usage: when anything is known, the object carries all the fields the SDKs and
//!   Codex require (`input_tokens`, `output_tokens`, `total_tokens` and both details
//!   objects); counts the provider did not report are written as `0`. When nothing is
//!   known, `usage` is omitted. Cache writes have no Responses field (they are part of
//!   `input_tokens`).
//! - Stop reasons: `MaxTokens` → `status: "incomplete"` with reason
//!   `max_output_tokens`; `ContentFilter`/`Refusal` → `incomplete` with
//!   `content_filter`; everything else → `completed`. On the way back a completed
//!   response that contains a `function_call` item means [`StopReason::ToolUse`].
//! - Streaming: each canonical block becomes one output item. Usage and `Stop` may come
//!   in either order, so the terminal `response.completed` / `response.incomplete`
//!   event (carrying every item and the usage) is written by `finish()`.
//!
//! [`ProtocolError::Unsupported`]: crate::ProtocolError::Unsupported
//! [`Request::system`]: crate::Request::system
//! [`Request::compaction`]: crate::Request::compaction
//! [`Role::System`]: crate::Role::System
//! [`Part::Thinking`]: crate::Part::Thinking
//! [`StopReason::ToolUse`]: crate::StopReason::ToolUse

mod behaviour;
mod compaction;
mod encode;
mod items;
mod native;
mod request;
mod response;
mod stream_decode;
mod stream_encode;
mod tools;
mod wire;

pub use behaviour::ResponsesClient;
pub use behaviour::{OPENAI_RESPONSES, ResponsesWire};
pub use compaction::{encode_compacted, parse_compact_request};
pub use encode::{ENCRYPTED_REASONING, encode_request, encode_request_for};
pub use request::{parse_request, parse_request_sealed};
pub use response::{
    encode_response, encode_response_for, encode_response_sealed, parse_error, parse_response,
    parse_response_for, parse_usage,
};
pub use stream_decode::Decoder;
pub use stream_encode::Encoder;
pub use tools::FREEFORM_INPUT;

use crate::spec::{Auth, CountBody, CountSpec, Framing, ModelPlacement, Streaming, WireSpec};

/// The name of OpenAI's Responses wire, which tags the encrypted reasoning its
/// answers carry ([`crate::continuity::tag_reasoning`]): it goes back to this
/// wire only.
pub const FAMILY: &str = "openai-responses";

/// How a Responses upstream ([`crate::Wire::Responses`]) is called: `POST
/// {endpoint}/responses` with a bearer key, the model and `stream` in the body,
/// streams as SSE.
pub const SPEC: WireSpec = WireSpec {
    path: "/responses",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: Auth::Bearer,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: "https://api.openai.com/v1",
    compact: Some("/responses/compact"),
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
    batches: None,
    chat: true,
    count: Some(CountSpec {
        path: "/responses/input_tokens",
        body: CountBody::Only(&[
            "model",
            "input",
            "instructions",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "reasoning",
            "text",
            "truncation",
            "conversation",
            "previous_response_id",
        ]),
        answer: "input_tokens",
        passthrough: true,
        model: crate::spec::CountModel::Same,
    }),
};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod test_support;
