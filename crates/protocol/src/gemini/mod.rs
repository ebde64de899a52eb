//! Google Gemini `generateContent` and `streamGenerateContent?alt=sse`, both directions,
//! as an upstream wire and as a client format.
//!
//! The model goes in the URL path and the key in a header (both in [`SPEC`]), so the
//! request body never names the model.
//!
//! As a client format, a call keeps one id across turns: answers give each call its
//! canonical id as `functionCall.id` ([`encode_client_response`],
//! [`Encoder::for_client`]), and [`parse_client_request`] takes ids back as they are
//! (ids as Gemini issues them, `gcall_<id>`, are for the upstream direction only).
//!
//! Choices worth knowing:
//! - **Thought signatures.** Gemini 3 rejects a history whose function calls lack the
//!   `thoughtSignature` they came with. A call carries it in [`ToolCall::signature`]
//!   (the gateway keeps it server-side between turns: clients of other formats never
//!   see it; a Gemini client gets it on the call, as Gemini gives it). Call ids
//!   are `gcall_<id>` when Gemini gave the call an id (sent back as
//!   `functionCall.id` / `functionResponse.id`), else a minted
//!   `call_<responseId>_<n>` (`n` counts the response's function calls), at most 40
//!   characters either way. Ids of earlier versions, `<base>__sig_<signature>`, are
//!   still read. In a request, the first function call of each model turn without a
//!   real signature gets the documented placeholder [`SKIP_SIGNATURE`]; later
//!   unsigned calls of the same turn are left bare, as Gemini itself signs only the
//!   first of parallel calls. Signatures Gemini puts on text parts are dropped
//!   (optional to send back).
//! - Thinking parts are never sent upstream: other providers' signatures mean nothing
//!   here and Gemini does not need its own thoughts back.
//! - Leading system text (`Request::system` and leading `Role::System` messages) becomes
//!   `systemInstruction`; a system message later in the conversation is sent as user
//!   text in place, which keeps its position.
//! - Tools use `parametersJsonSchema` and structured output `responseJsonSchema`, which
//!   take JSON Schema as is (only a root `$schema` is removed).
//! - Images and documents in tool results follow the `functionResponse` as
//!   `inlineData`/`fileData` parts of the same user turn (works on every model, unlike
//!   multimodal responses). Documents go inline as `inlineData`, by URL as `fileData`.
//! - Responses: consecutive text (or thought) parts form one block, empty ones are
//!   skipped, and parts the canonical model cannot carry (inline images, code
//!   execution) are ignored, identically in the stream and whole-response paths.
//!
//! [`ToolCall::signature`]: crate::ToolCall::signature

mod behaviour;
mod ids;
mod models;
mod request;
mod response;
mod stream_decode;
mod stream_encode;
mod wire;

pub use behaviour::{GeminiClient, GeminiWire};
pub use ids::SKIP_SIGNATURE;
pub use models::parse_models;
pub use request::{encode_request, parse_client_request, parse_request};
pub use response::{encode_client_response, encode_response, parse_error, parse_response};
pub use stream_decode::Decoder;
pub use stream_encode::Encoder;

use crate::spec::{Auth, CountBody, CountSpec, Framing, ModelPlacement, Streaming, WireSpec};

/// How a Gemini upstream is called: `POST {endpoint}/v1beta/models/{model}:generateContent`,
/// or `:streamGenerateContent?alt=sse` for a stream (SSE), with the key in
/// `x-goog-api-key`; the body never names the model.
pub const SPEC: WireSpec = WireSpec {
    path: "/v1beta/models/{model}:generateContent",
    streaming: Streaming::Path("/v1beta/models/{model}:streamGenerateContent?alt=sse"),
    model: ModelPlacement::Path,
    framing: Framing::Sse,
    auth: Auth::Header("x-goog-api-key"),
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: "https://generativelanguage.googleapis.com",
    // `{"contents": …}` alone would leave the system instruction and tools out.
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/v1beta/models/{model}:batchEmbedContents",
        body: crate::embeddings::EmbedBody::Gemini,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/v1beta/models/{model}:predict",
        edit_path: None,
        body: crate::images::ImageBody::Imagen,
    }),
    jobs: None,
    batches: None,
    chat: true,
    count: Some(CountSpec {
        path: "/v1beta/models/{model}:countTokens",
        body: CountBody::Wrapped { key: "generateContentRequest" },
        answer: "totalTokens",
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
