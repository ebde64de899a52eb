//! Claude on Bedrock through `InvokeModel` (`POST /model/{modelId}/invoke`)
//! and `InvokeModelWithResponseStream` (`/invoke-with-response-stream`): the
//! wire `bedrock-anthropic`.
//!
//! Converse is one API over every family, and leaves out what only Claude
//! takes: beta flags, context management, citations, Anthropic's own tool
//! types. InvokeModel takes Anthropic's Messages body itself, so a Claude
//! client's request goes as it came (the fast path), with Bedrock's facts:
//! - no `model` (it is in the URL) and no `stream` (the path says it), and
//!   `anthropic_version: "bedrock-2023-05-31"` in the body;
//! - the `anthropic-beta` flags in the body, as `anthropic_beta: [...]`
//!   ([`WireSpec::headers_in_body`]), only those Bedrock takes (the provider's
//!   `anthropic_betas`, else [`BETAS`]);
//! - a stream in AWS event-stream framing, each `chunk` one of Claude's own
//!   events in base64 ([`crate::frame::aws_chunks`]); a mid-stream exception
//!   ends it as an upstream error;
//! - errors as Bedrock's `{"message"}`, Claude's own refusals inside it
//!   ("The model returned the following errors: context_management: Extra
//!   inputs are not permitted"), which the gateway learns from
//!   ([`crate::anthropic::refused`]);
//! - SigV4 (signing name `bedrock`) or a Bedrock API key, as Converse.
//!
//! Everything else is Claude's: [`crate::anthropic`]'s translation, usage,
//! stream events and rules.

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{Carriage, Placement};
use crate::spec::{Auth, CountBody, CountModel, CountSpec, Framing, ModelPlacement, Streaming};
use crate::{
    Family, FieldEdit, Frame, HostedTool, ModelTraits, ProtocolError, Request, Response,
    ServerTools, StreamDecoder, StreamEvent, Usage, WireSpec,
};

/// The `anthropic_version` a Claude body on Bedrock carries.
pub const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// The `anthropic-beta` flags Bedrock documents for Claude's Messages body: a
/// provider's `anthropic_betas` replaces the list.
pub const BETAS: &[&str] = &[
    "computer-use-2025-01-24",
    "token-efficient-tools-2025-02-19",
    "interleaved-thinking-2025-05-14",
    "output-128k-2025-02-19",
    "dev-full-thinking-2025-05-14",
    "context-1m-2025-08-07",
    "context-management-2025-06-27",
    "effort-2025-11-24",
    "tool-search-tool-2025-10-19",
    "tool-examples-2025-10-29",
];

/// How Bedrock words a Claude refusal: the model's own message after this.
const MODEL_ERRORS: &str = "The model returned the following errors:";

/// How `bedrock-anthropic` is called: the model id in the path as the AWS SDKs
/// encode it, signed like Converse. Tokens are counted by `CountTokens` on the
/// InvokeModel body itself (base64, under `input.invokeModel.body`), for the
/// foundation model.
pub const INVOKE_SPEC: WireSpec = WireSpec {
    path: "/model/{model}/invoke",
    streaming: Streaming::Path("/model/{model}/invoke-with-response-stream"),
    model: ModelPlacement::Path,
    framing: Framing::AwsChunks,
    auth: Auth::SigV4 { service: "bedrock" },
    headers: &[],
    passthrough_headers: &["anthropic-beta"],
    headers_in_body: &[("anthropic-beta", "anthropic_beta")],
    default_endpoint: "https://bedrock-runtime.{region}.amazonaws.com",
    compact: None,
    embeddings: None,
    images: None,
    jobs: None,
    batches: Some(crate::batches::native::BatchApi::Bedrock),
    chat: true,
    count: Some(CountSpec {
        path: "/model/{model}/count-tokens",
        body: CountBody::Blob { under: &["input", "invokeModel"], field: "body" },
        answer: "inputTokens",
        passthrough: false,
        model: CountModel::Foundation,
    }),
};

/// Claude on Bedrock's InvokeModel.
#[derive(Debug, Clone, Copy)]
pub struct BedrockInvokeWire;

/// Claude's own wire, whose behaviour this one is but for Bedrock's facts.
const CLAUDE: crate::anthropic::AnthropicWire = crate::anthropic::AnthropicWire;

impl WireBehaviour for BedrockInvokeWire {
    fn name(&self) -> &'static str {
        "bedrock-anthropic"
    }

    fn spec(&self) -> &'static WireSpec {
        &INVOKE_SPEC
    }

    fn dialect(&self) -> crate::Wire {
        crate::Wire::Anthropic
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        Some(BETAS)
    }

    fn model_traits(&self, family: Family, model: &str) -> ModelTraits {
        CLAUDE.model_traits(family, model)
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        let mut body = CLAUDE.encode_request_for(req, traits)?;
        if let Value::Object(map) = &mut body {
            map.remove("model");
            map.remove("stream");
            map.insert("anthropic_version".into(), Value::from(ANTHROPIC_VERSION));
        }
        Ok(body)
    }

    fn parse_response(&self, body: &[u8]) -> Result<Response, ProtocolError> {
        CLAUDE.parse_response(body)
    }

    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        CLAUDE.parse_usage(body)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(InvokeDecoder { claude: crate::anthropic::Decoder::new() })
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        super::parse_error(body).or_else(|| CLAUDE.parse_error(body))
    }

    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        let mut edits = CLAUDE.adapt_native(body, req, traits);
        edits.push(("model", None));
        edits.push(("stream", None));
        edits.push(("anthropic_version", Some(Value::from(ANTHROPIC_VERSION))));
        edits
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        CLAUDE.sampling_edits(req, traits, native)
    }

    fn may_adapt(&self, _req: &Request, _body: &[u8], _traits: ModelTraits) -> bool {
        // The model and `stream` always leave a client's body.
        true
    }

    fn drop_hosted(
        &self,
        edits: Vec<FieldEdit>,
        body: &Map<String, Value>,
        req: &Request,
    ) -> Vec<FieldEdit> {
        CLAUDE.drop_hosted(edits, body, req)
    }

    fn runnable(&self) -> ServerTools {
        // Anthropic runs its server tools on its own API only.
        ServerTools::NONE
    }

    fn default_server_tools(&self) -> ServerTools {
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        CLAUDE.place(tool)
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        CLAUDE.forces(tool)
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        // Bedrock's tiers are a header of its own and provisioned throughput.
        None
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        CLAUDE.carry_settings(req, c);
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        CLAUDE.carry_user(req, c);
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    fn output_limit(&self) -> OutputLimit {
        CLAUDE.output_limit()
    }

    fn thinking_note(&self, req: &Request, traits: ModelTraits) -> Option<&'static str> {
        CLAUDE.thinking_note(req, traits)
    }

    fn needs_call_signatures(&self) -> bool {
        false
    }

    fn refused(&self, message: &str) -> Option<crate::Refused> {
        // Bedrock's Claude takes flags and fields later than Anthropic's API,
        // and says so in Claude's words after its own.
        let claude = message.split_once(MODEL_ERRORS).map_or(message, |(_, rest)| rest);
        crate::anthropic::refused(claude)
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        crate::listing::ModelListing::ControlPlane {
            from: "bedrock-runtime",
            to: "bedrock",
            path: "/foundation-models?byProvider=Anthropic",
            paging: crate::listing::Paging::None,
        }
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        super::models::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        super::models::listed_id(upstream_model)
    }
}

/// Claude's stream decoder, reading the events the chunks carry, with
/// Bedrock's exceptions ended as upstream errors.
struct InvokeDecoder {
    claude: crate::anthropic::Decoder,
}

impl StreamDecoder for InvokeDecoder {
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        match frame.event.as_deref() {
            // Claude's events never end so; every Bedrock exception does.
            Some(name) if name.ends_with("Exception") => {
                Err(super::stream_decode::exception(name, &frame.data))
            }
            _ => self.claude.push(frame, out),
        }
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        self.claude.finish(out)
    }
}

#[cfg(test)]
#[path = "invoke_tests.rs"]
mod tests;
