//! Dev-only test kit: scriptable **fake upstream providers** for the gateway's
//! end-to-end tests and benchmark, and a **headless-Chromium harness**
//! ([`browser`]) for tests of the pages it serves.
//!
//! A [`FakeUpstream`] is a real HTTP server on `127.0.0.1:0` that speaks one
//! vendor's wire ([`Vendor::OpenAi`], [`Vendor::Anthropic`], [`Vendor::Gemini`],
//! [`Vendor::Bedrock`]).
//! Each request on a generation route takes the next [`Reply`] from a FIFO
//! script, or the default reply when the script is empty (initially
//! [`Reply::auto`]: a canned answer echoing the last user text, or a step of the
//! scripted [`tool_loop`] when the prompt holds [`tool_loop::TRIGGER`], so real
//! agent CLIs can go through a tool round trip). Everything received is recorded
//! ([`FakeUpstream::received`]).
//!
//! The JSON is written by hand per vendor in [`canned`], on purpose: this crate
//! shares no code with `switchyard-protocol`, so a translator bug cannot hide
//! behind a shared type.
//!
//! # Routes
//!
//! | Vendor | Route (POST) | Streams when |
//! |---|---|---|
//! | OpenAi | `/v1/chat/completions`, `/chat/completions` | body `"stream": true` |
//! | OpenAi | `/v1/responses`, `/responses` (the Responses API, [`responses`]) | body `"stream": true` |
//! | OpenAi | `/v1/responses/input_tokens`, `/responses/input_tokens` | never |
//! | Anthropic | `/v1/messages` | body `"stream": true` |
//! | Anthropic | `/v1/messages/count_tokens` | never |
//! | Gemini | `/v1beta/models/{model}:generateContent`, `…:streamGenerateContent` (`/v1/models/…` too) | `streamGenerateContent`; SSE with `?alt=sse`, else one JSON array |
//! | Gemini | `/v1beta/models/{model}:countTokens` | never |
//! | Bedrock | `/model/{modelId}/converse` | never |
//! | Bedrock | `/model/{modelId}/converse-stream` | always; AWS event-stream binary frames |
//! | OpenAi | `/v1/embeddings`, `/embeddings` ([`embeddings`]) | never |
//! | Gemini | `/v1beta/models/{model}:embedContent`, `…:batchEmbedContents` | never |
//! | Bedrock | `/model/{modelId}/invoke` for `amazon.titan-embed-text-…`, `cohere.embed-…` | never |
//! | OpenAi | `/v1/images/generations`, `/images/generations` ([`images`]) | never |
//! | OpenAi | `/v1/images/edits`, `/images/edits` (multipart/form-data, [`images`]) | never |
//! | Gemini | `/v1beta/models/{model}:predict` for `imagen-…` | never |
//! | Gemini, Vertex Gemini | `…:generateContent` for Gemini's image models (`gemini-2.5-flash-image`, …: an image answer, see [`images::gemini_image_answer`]) | `streamGenerateContent` |
//! | OpenAi | `/v1/files`, `/v1/batches`, `/v1/batches/{id}/cancel` (its own batch API; GETs of files and batches too; `batch_api.rs`) | never |
//! | Anthropic | `/v1/messages/batches`, `…/{id}/cancel` (Message Batches; GETs of a batch and its results too) | never |
//! | Gemini (Vertex) | `…/batchPredictionJobs`, `…/{id}:cancel`; Cloud Storage's `/upload/storage/v1/b/{bucket}/o`, `/storage/v1/b/{bucket}/o…` (`batch_api_vertex.rs`, `batch_api_gcs.rs`) | never |
//! | Bedrock | `/model-invocation-job`, `…/{id}/stop`; S3's `PUT`/`GET /{bucket}/{key}`, signed for `s3` (`batch_api_bedrock.rs`, `batch_api_s3.rs`) | never |
//!
//! Embeddings ([`embeddings`], Vertex's `:predict` and Azure's routes too) are
//! checked as the real APIs check them and take replies from the script like
//! generations; [`Reply::auto`] answers vectors from [`fake_vector`]. So is
//! image generation ([`images`], Vertex's `:predict` for `imagen-…` and
//! Azure's routes too), whose [`Reply::auto`] answers PNGs from [`fake_png`];
//! and image edits, a multipart form whose PNGs come from [`fake_edit_png`]
//! (the prompt's and the input images').
//!
//! Each also lists its models (`GET`, answered outside the script, with the
//! vendor's credential required and pages cut as the real API cuts them;
//! [`FakeUpstream::set_models`]): OpenAi `/v1/models` (`/models`), Anthropic
//! `/v1/models` (`limit`, `after_id`), Gemini `/v1beta/models` (`pageSize`,
//! `pageToken`), Bedrock `/foundation-models` (a [`FakeModel`] retiring is
//! `LEGACY`); an Azure fake `/openai/v1/models` (retiring: `lifecycle_status:
//! deprecating`), a Vertex fake `/v1beta1/publishers/{anthropic|google}/models`.
//!
//! An Azure OpenAI fake ([`FakeUpstream::start_azure`], [`azure`]) serves a
//! resource's deployment and v1 Chat Completions routes in Azure's shape, and
//! its tenant's Entra token endpoint; a Vertex AI fake
//! ([`FakeUpstream::start_vertex`], [`vertex`]) its publishers' routes and a
//! Google token endpoint. Both take only the credentials they know.
//!
//! A fake OpenID Connect provider ([`oidc::FakeIdp`]) serves the console's
//! sign-in tests: discovery, authorization, token endpoint and JWKS, strict
//! about clients, redirect URIs, codes and PKCE, its ID tokens spoiled on
//! demand ([`oidc::Fault`]).
//!
//! A Bedrock fake also authenticates every request as AWS does (see
//! [`bedrock::authenticate`]): start it with [`FakeUpstream::start_bedrock`]
//! and the credentials it accepts, or with [`FakeUpstream::start`] and the
//! defaults of [`BedrockAuth`]. A refused request answers 403 in Bedrock's
//! shape (`{"message"}` and `x-amzn-ErrorType`), is recorded, and takes
//! nothing from the script; so does a body Converse refuses (400
//! `ValidationException`, see [`bedrock::validate`]).
//!
//! The counting routes take replies from the script like the others; their
//! [`Reply::auto`] is the vendor's count answer with a deterministic count derived
//! from the body ([`canned::counted_tokens`]), and their bodies are checked as the
//! real counting endpoints check them ([`validate::count`]).
//!
//! Other paths answer 404 and other methods 405, both in the vendor's error
//! shape; they are recorded but take nothing from the script. A routed body the
//! real API would refuse (any: a top-level field the API does not define;
//! Anthropic: a text block that is empty or only
//! whitespace, a message without content, a malformed `document`; OpenAI: an
//! unknown content part type, a `file` without data or id; Gemini: `inlineData`
//! without its type or data) answers 400 in the vendor's shape, recorded, taking
//! nothing from the script (see [`validate`]). The model of a
//! canned answer is the body's `model` (Gemini: the path's), or
//! [`canned::DEFAULT_MODEL`].
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use switchyard_testkit::{FakeUpstream, Reply, Vendor, canned};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let fake = FakeUpstream::start(Vendor::OpenAi).await?;
//! // First call: rate limited; second: the canned echo (the default).
//! fake.push(Reply::status(429).retry_after(1));
//!
//! # // reqwest is built with `rustls-no-provider`: install one, even for http.
//! # let _ = rustls::crypto::ring::default_provider().install_default();
//! let client = reqwest::Client::new();
//! let url = format!("{}/v1/chat/completions", fake.base_url());
//! let body = r#"{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}"#;
//! let first = client.post(&url).body(body).send().await?;
//! assert_eq!(first.status(), 429);
//! assert_eq!(first.headers()["retry-after"], "1");
//! let second: serde_json::Value =
//!     serde_json::from_slice(&client.post(&url).body(body).send().await?.bytes().await?)?;
//! assert_eq!(second["choices"][0]["message"]["content"], "echo: hi");
//! assert_eq!(second["model"], "gpt-test");
//! assert_eq!(second["usage"]["prompt_tokens"], canned::CANNED_INPUT_TOKENS);
//!
//! // What the upstream saw (wait with a timeout: never sleep to synchronise).
//! let seen = tokio::time::timeout(Duration::from_secs(5), fake.wait_for_requests(2)).await?;
//! assert_eq!(seen[1].path, "/v1/chat/completions");
//! assert_eq!(seen[1].body["messages"][0]["content"], "hi");
//! # Ok(())
//! # }
//! ```
//!
//! Faults are modifiers on a reply: [`Reply::first_byte_delay`],
//! [`Reply::chunk_delay`], [`Reply::break_after`] (abort the connection
//! mid-body), [`Reply::hang`] (never answer), and a scripted body can be any
//! JSON, raw bytes or SSE frames, e.g. `canned::tool_call(…)` or
//! `canned::malformed_frame()`.

mod fake;
mod script;

pub mod azure;
pub mod bedrock;
pub mod browser;
pub mod canned;
pub mod embeddings;
pub mod fal;
pub mod images;
pub mod oidc;
pub mod otlp;
pub mod proxy;
pub mod responses;
pub mod sigv4;
pub mod tls;
pub mod tool_loop;
pub mod validate;
pub mod vertex;

pub use bedrock::BedrockAuth;
pub use embeddings::fake_vector;
pub use fake::models::FakeModel;
pub use fake::{Chooser, FakeUpstream, Received};
pub use fal::FakeFal;
pub use images::{fake_edit_png, fake_edit_png_b64, fake_gemini_image_b64, fake_png, fake_png_b64};
pub use script::{Reply, ReplyBody};
pub use validate::flavour::Flavour;

/// The wire a [`FakeUpstream`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Vendor {
    /// OpenAI Chat Completions (and OpenAI-compatible servers).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
    /// AWS Bedrock Converse / ConverseStream, authenticated like AWS (SigV4 or
    /// a Bedrock API key; see [`BedrockAuth`]).
    Bedrock,
}
