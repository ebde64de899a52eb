//! Azure OpenAI (and Azure AI Foundry's OpenAI endpoints) as upstream wires:
//! OpenAI's Chat Completions behind an Azure resource
//! (`https://{resource}.openai.azure.com`, or a Foundry resource's
//! `https://{resource}.services.ai.azure.com`), authorized with the resource's
//! key in an `api-key` header, or a Microsoft Entra ID access token as a
//! bearer token (`credentials.azure`):
//!
//! | wire | path under the resource | model | `api-version` |
//! |---|---|---|---|
//! | `azure-openai` | `/openai/deployments/{model}/chat/completions` | the deployment's name, in the path | a dated one, in the query: [`API_VERSION`] unless the provider's `query` names another |
//! | `azure-openai-v1` | `/openai/v1/chat/completions` | the deployment's name, in the body's `model` | none (the v1 API is versionless) |
//!
//! Two wires, not one with a setting: they differ in what a [`WireSpec`] holds
//! (the path, where the model goes, and so whether every request goes to one
//! URL), and a spec is static. The v1 path is OpenAI-compatible in its body, but
//! not `openai-chat` with another endpoint: it takes the key as `api-key`, not
//! as a bearer token, and the Entra token as a bearer token, which only a wire
//! whose [`Auth`] is [`Auth::Entra`] knows how to mint.
//!
//! `azure-openai-responses` is OpenAI's Responses API on the v1 API
//! (`/openai/v1/responses`, the deployment in `model`), as [`crate::responses`]
//! behaves, stateless (`store: false`, encrypted reasoning carried by the
//! client), its reasoning tagged as Azure's ([`RESPONSES_FAMILY`]), Codex's own
//! body taken as it came (the fast path), and the hosted tools Azure runs of
//! OpenAI's (code interpreter, file search, MCP, image generation).
//!
//! Each is OpenAI Chat Completions in behaviour ([`crate::openai_chat`]: what a
//! model takes, usage, streams, errors), with Azure's facts: its [`WireSpec`],
//! no `model` in the body where it is in the path, no service tier (an Azure
//! deployment's type, Standard or Provisioned, is its throughput), and no server
//! tools unless a provider lists them. What Azure adds to OpenAI's answers is
//! read past: `prompt_filter_results` and each choice's `content_filter_results`,
//! a stream's first chunk with empty `choices` (its prompt's filter results,
//! with an empty `id` and `model`, which the Chat decoder does not take for the
//! stream's start), and a `finish_reason` of `content_filter` (the answer
//! stopped by the filter, [`crate::StopReason::ContentFilter`]). A prompt the
//! filter refuses is a 400 whose OpenAI-shaped error (`code: content_filter`)
//! reaches the client as an error, like any other refusal.
//!
//! A dated `api-version` refuses fields newer than itself (`Unrecognized request
//! argument supplied`): a provider whose clients send `reasoning_effort`,
//! `store` or `prompt_cache_key` names a newer one (`query: { api-version:
//! 2025-04-01-preview }`) or uses the v1 wire.

mod behaviour;

pub use behaviour::{AZURE_OPENAI, AZURE_OPENAI_RESPONSES, AZURE_OPENAI_V1, AzureWire};

use crate::spec::{Auth, Framing, ModelPlacement, Streaming, WireSpec};

/// The `api-version` the deployments wire sends unless the provider's `query`
/// names another: the newest generally available version of Azure OpenAI's
/// dated inference API.
pub const API_VERSION: &str = "2024-10-21";

/// The header a key goes in.
pub const KEY_HEADER: &str = "api-key";

/// An Azure OpenAI resource: no default, `{resource}` is the provider's to
/// write (its whole `endpoint`).
const ENDPOINT: &str = "https://{resource}.openai.azure.com";

const AUTH: Auth = Auth::Entra { key_header: KEY_HEADER };

/// A deployment of the dated API: the deployment in the path, the version in
/// the query.
pub const DEPLOYMENTS_SPEC: WireSpec = WireSpec {
    path: "/openai/deployments/{model}/chat/completions?api-version=2024-10-21",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Path,
    framing: Framing::Sse,
    auth: AUTH,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/openai/deployments/{model}/embeddings?api-version=2024-10-21",
        body: crate::embeddings::EmbedBody::OpenAi,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/openai/deployments/{model}/images/generations?api-version=2024-10-21",
        edit_path: Some("/openai/deployments/{model}/images/edits?api-version=2025-04-01-preview"),
        body: crate::images::ImageBody::OpenAi,
    }),
    jobs: None,
    batches: None,
    chat: true,
    count: None,
};

/// The v1 API: OpenAI's path and body, the deployment named in `model`.
pub const V1_SPEC: WireSpec = WireSpec {
    path: "/openai/v1/chat/completions",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: AUTH,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    compact: None,
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/openai/v1/embeddings",
        body: crate::embeddings::EmbedBody::OpenAi,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/openai/v1/images/generations",
        edit_path: Some("/openai/v1/images/edits"),
        body: crate::images::ImageBody::OpenAi,
    }),
    jobs: None,
    batches: None,
    chat: true,
    count: None,
};

/// The Responses API on the v1 API: OpenAI's path and body under
/// `/openai/v1`, the deployment named in `model`.
pub const RESPONSES_SPEC: WireSpec = WireSpec {
    path: "/openai/v1/responses",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Body,
    framing: Framing::Sse,
    auth: AUTH,
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: ENDPOINT,
    compact: Some("/openai/v1/responses/compact"),
    embeddings: Some(crate::embeddings::EmbedSpec {
        path: "/openai/v1/embeddings",
        body: crate::embeddings::EmbedBody::OpenAi,
    }),
    images: Some(crate::images::ImageSpec {
        path: "/openai/v1/images/generations",
        edit_path: Some("/openai/v1/images/edits"),
        body: crate::images::ImageBody::OpenAi,
    }),
    jobs: None,
    batches: None,
    chat: true,
    count: None,
};

/// What tags the encrypted reasoning of Azure's Responses API: it goes back to
/// an Azure resource's Responses deployments only, never to OpenAI's (another
/// organisation's keys) nor to another family.
pub const RESPONSES_FAMILY: &str = "azure-openai-responses";

#[cfg(test)]
#[path = "azure_tests.rs"]
mod tests;
