//! What an OpenAI Responses upstream does ([`WireBehaviour`]) and what an OpenAI
//! Responses client gets ([`ClientBehaviour`]).

use serde_json::{Map, Value};

use crate::behaviour::{ClientBehaviour, OutputLimit, WireBehaviour};
use crate::carry::{self, Carriage, Placement};
use crate::{
    ErrorBody, Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, Seal,
    ServerTool, ServerTools, StreamDecoder, StreamEncoder, Tool, Usage, Wire, WireSpec,
};

/// OpenAI's Responses API (`POST /v1/responses`), stateless: `store: false` and
/// the reasoning carried encrypted from turn to turn (see
/// [`super::encode_request_for`]), tagged with the family that issued it.
#[derive(Debug, Clone, Copy)]
pub struct ResponsesWire {
    /// What tags the encrypted reasoning its answers carry: it goes back to
    /// this family's deployments only (OpenAI's, an Azure resource's).
    family: &'static str,
}

impl ResponsesWire {
    /// The API as another platform serves it, its encrypted reasoning tagged
    /// `family` (Azure OpenAI's: `crate::azure`).
    pub const fn for_family(family: &'static str) -> Self {
        ResponsesWire { family }
    }
}

/// OpenAI's own.
pub static OPENAI_RESPONSES: ResponsesWire = ResponsesWire { family: super::FAMILY };

impl WireBehaviour for ResponsesWire {
    fn name(&self) -> &'static str {
        self.family
    }

    fn spec(&self) -> &'static WireSpec {
        &super::SPEC
    }

    fn dialect(&self) -> Wire {
        Wire::Responses
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        // No `anthropic-beta` goes here (the spec passes no header through).
        None
    }

    fn model_traits(&self, _family: Family, model: &str) -> ModelTraits {
        // OpenAI's models, as on Chat Completions: every one takes a reasoning
        // effort; the reasoning models are told apart by id.
        ModelTraits::openai_chat(model)
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        let mut body = super::encode_request_for(req, traits, self.family)?;
        crate::openai_chat::sampling::strip(&mut body, traits);
        Ok(body)
    }

    fn parse_response(&self, body: &[u8]) -> Result<Response, ProtocolError> {
        super::parse_response_for(body, self.family)
    }

    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        super::parse_usage(body)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(super::Decoder::for_family(self.family))
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        super::parse_error(body)
    }

    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        let mut edits = super::native::adapt_native(body, req, traits, self.family);
        edits.extend(crate::openai_chat::sampling::edits(body, traits));
        edits
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, _native: bool) -> Vec<String> {
        crate::openai_chat::sampling::dropped(req, traits)
    }

    fn may_adapt(&self, req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        super::native::may_adapt(req, body) || crate::openai_chat::sampling::may_drop(body, traits)
    }

    fn drop_hosted(
        &self,
        edits: Vec<FieldEdit>,
        _body: &Map<String, Value>,
        _req: &Request,
    ) -> Vec<FieldEdit> {
        edits
    }

    fn runnable(&self) -> ServerTools {
        use ServerTool::*;
        ServerTools::of([
            WebSearch,
            CodeExecution,
            FileSearch,
            Mcp,
            ImageGeneration,
            ToolSearch,
            ComputerUse,
            Shell,
            ApplyPatch,
        ])
    }

    fn default_server_tools(&self) -> ServerTools {
        // OpenAI's own tools, which its current models run.
        self.runnable()
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        // The encoder declares the tools a Responses client declared, as they
        // came; another API's tool has no declaration here.
        if tool.dialect.native_wire() == Some(Wire::Responses) {
            return Ok(Placement::Tool(tool.config.clone()));
        }
        let kind = carry::kind(tool)?;
        Err(format!(
            "the Responses API runs {} only as its own tool, declared by a Responses client",
            kind.as_str()
        ))
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        // `tool_choice: {"type": <the tool's type>}`.
        self.place(tool).is_ok()
    }

    fn service_tier<'a>(&self, tier: &'a str) -> Option<&'a str> {
        Some(if tier == "standard_only" { "default" } else { tier })
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        c.sent.extend(carry::plain_settings(req));
        if req.extras.safety_identifier.is_some() {
            c.sent.push("safety_identifier");
        }
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        c.sent.extend(req.user.as_ref().map(|_| "user"));
        c.sent.extend(req.metadata.as_ref().map(|_| "metadata"));
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        // `response.completed` always carries the usage.
        None
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::TopLevel(&["max_output_tokens"])
    }

    fn thinking_note(&self, _req: &Request, _traits: ModelTraits) -> Option<&'static str> {
        None
    }

    fn needs_call_signatures(&self) -> bool {
        false
    }

    fn refused(&self, _message: &str) -> Option<crate::Refused> {
        None
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        // The Responses API's provider lists its models where Chat's does.
        crate::openai_chat::OpenAiChatWire.model_listing()
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        crate::openai_chat::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}

/// An OpenAI Responses client.
#[derive(Debug, Clone, Copy)]
pub struct ResponsesClient;

impl ClientBehaviour for ResponsesClient {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn native_wire(&self) -> Option<Wire> {
        // Codex's body goes to a Responses upstream as it wrote it.
        Some(Wire::Responses)
    }

    fn parse_request(
        &self,
        body: &[u8],
        seal: Option<&dyn Seal>,
    ) -> Result<Request, ProtocolError> {
        super::parse_request_sealed(body, seal)
    }

    fn write_response(
        &self,
        resp: &Response,
        tools: &[Tool],
        seal: Option<&dyn Seal>,
        out: &mut Vec<u8>,
    ) {
        crate::util::write_json(out, &super::encode_response_sealed(resp, tools, seal));
    }

    fn stream_encoder(
        &self,
        req: &Request,
        seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder> {
        // Free-form tools' calls as `custom_tool_call` items, and with `seal`
        // what the upstream needs to continue in `encrypted_content`.
        Box::new(super::Encoder::for_tools(&req.tools).with_seal(seal))
    }

    fn error_json(&self, err: &ErrorBody) -> Value {
        err.to_openai()
    }

    fn keepalive(&self) -> &'static [u8] {
        crate::sse::KEEPALIVE_COMMENT
    }

    fn loses_signed_thinking(&self) -> bool {
        // `encrypted_content` carries it, sealed.
        false
    }
}
