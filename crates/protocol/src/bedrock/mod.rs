//! Amazon Bedrock's Converse API (`POST /model/{modelId}/converse`) and
//! ConverseStream (`/converse-stream`, AWS event-stream framing), as an upstream
//! wire (and Claude's own body through `InvokeModel`, the wire `bedrock-anthropic`:
//! [`BedrockInvokeWire`]): canonical → a Converse body ([`encode_request`]), and Converse's answers
//! → canonical ([`parse_response`], [`parse_usage`], [`Decoder`], [`parse_error`]).
//! Pure translation: the model goes in the URL path, and signing (SigV4) and the
//! region's endpoint are the caller's ([`SPEC`]).
//!
//! Choices worth knowing:
//! - **The model family is the traits'** ([`ModelTraits::family`]: read from
//!   the upstream id, `anthropic.` / `claude` in it for Claude, unless the
//!   catalog says): Converse is one API over many families, and what only Claude
//!   takes is sent only to Claude: its reasoning (`reasoningContent`, signed, or
//!   redacted), thinking and `top_k` in `additionalModelRequestFields` (budget or
//!   adaptive, as [`ModelTraits`] says, with Anthropic's own rules for sampling
//!   and `max_tokens`), a tool result's `status`, `strict` tools, and the matched
//!   stop sequence asked back through `additionalModelResponseFieldPaths`. Cache
//!   points go to Claude and Amazon Nova, the families with prompt caching. An
//!   application inference profile's ARN names no family: the catalog's
//!   `family:` says which it serves.
//! - Thinking is sent back only with its signature, and only to Claude, as
//!   [`crate::anthropic`] does; a Claude tool loop that has no thinking of its own
//!   goes on without thinking ([`crate::anthropic::continues_without_thinking`]).
//! - **Turns.** Converse wants user and assistant turns alternating, the first a
//!   user's: consecutive messages of one side are merged (a mid-conversation
//!   system message is user text, in `<system-reminder>` tags), tool results go
//!   first in their user turn, blank text is dropped (but from a last turn of
//!   nothing else), and a conversation that opens with the assistant gets a
//!   one-character user turn (`.`) before it.
//! - **Tool ids** are mapped into Converse's `[a-zA-Z0-9_-]{1,64}` by
//!   [`crate::anthropic::tool_id`] (valid ids unchanged, others deterministically),
//!   so a call and its result, translated apart, still pair.
//! - **No `none` tool choice** in Converse: with `tool_choice: none`, or no tools at
//!   all, no `toolConfig` goes, and since Converse refuses `toolUse` and
//!   `toolResult` blocks without one, a history's calls and results are written as
//!   text (images and documents of results kept as blocks).
//! - Images and documents go as bytes, or from S3 by an `s3://` URL; any other URL
//!   is refused (Converse fetches nothing). A document's name is made to fit
//!   Converse's rule (letters, digits, single spaces, `-()[]`, at most 200
//!   characters) and unique within the request.
//! - Hosted tools (web search, code execution, …) are refused by name: Converse
//!   runs none. `user`, `metadata`, `service_tier` and `parallel_tool_calls` have
//!   no Converse field and are left out.
//! - **Usage**: Converse's `inputTokens` leaves cache reads and writes out, like
//!   Anthropic's; the canonical count adds them in.
//! - Converse answers name neither a response id nor the model: the id is
//!   `bedrock-response` (the caller may use the `x-amzn-RequestId` header's) and
//!   the model is empty (the caller knows which it asked).
//! - **Errors**: an error body is `{"message"}` with its type in the
//!   `x-amzn-ErrorType` header, a stream's error an `exception` message named by
//!   its `:exception-type`; [`error_kind`] gives either the class the gateway
//!   reads (`overloaded_error`, `rate_limit_error`, …).
//!
//! [`ModelTraits`]: crate::ModelTraits
//! [`ModelTraits::family`]: crate::ModelTraits::family

mod behaviour;
mod invoke;
mod models;
mod request;
mod response;
mod stream_decode;
mod wire;

pub use behaviour::BedrockWire;
pub use invoke::{ANTHROPIC_VERSION, BETAS, BedrockInvokeWire, INVOKE_SPEC};
pub use models::{listed_id, parse_models};
pub use request::encode_request;
pub use response::{error_kind, parse_error, parse_response, parse_usage};
pub use stream_decode::Decoder;

use crate::spec::{Auth, Framing, ModelPlacement, Streaming, WireSpec};

/// How a Bedrock upstream is called: `POST {endpoint}/model/{modelId}/converse`,
/// or `/converse-stream` for a stream (AWS event-stream), the model id encoded as
/// the AWS SDKs encode it ([`crate::spec::aws_path_label`]: an inference
/// profile's `:` and an ARN's `/` too), the request signed with SigV4 (signing
/// name `bedrock`, the endpoint's region).
///
/// The endpoint depends on the region, `https://bedrock-runtime.{region}.amazonaws.com`
/// (`us-east-1`, `eu-west-3`, …; a VPC endpoint or a FIPS one otherwise):
/// there is no default that fits every account, so `default_endpoint` keeps the
/// `{region}` placeholder as written, and a provider must name its endpoint (or
/// the core fill the region in). Tokens are counted by `CountTokens`
/// (`/model/{modelId}/count-tokens`), on the Converse body's conversation
/// nested under `input.converse`, for the foundation model (it refuses
/// inference-profile ids).
pub const SPEC: WireSpec = WireSpec {
    path: "/model/{model}/converse",
    streaming: Streaming::Path("/model/{model}/converse-stream"),
    model: ModelPlacement::Path,
    framing: Framing::AwsEventStream,
    auth: Auth::SigV4 { service: "bedrock" },
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: "https://bedrock-runtime.{region}.amazonaws.com",
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/model/{model}/invoke",
        body: crate::embeddings::EmbedBody::BedrockInvoke,
    }),
    images: None,
    jobs: None,
    batches: None,
    chat: true,
    count: Some(crate::spec::CountSpec {
        path: "/model/{model}/count-tokens",
        // What `ConverseTokensRequest` takes of a Converse body.
        body: crate::spec::CountBody::Nested {
            under: &["input", "converse"],
            fields: &["messages", "system", "toolConfig", "additionalModelRequestFields"],
        },
        answer: "inputTokens",
        passthrough: false,
        model: crate::spec::CountModel::Foundation,
    }),
};

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod test_support;
