//! What a Bedrock (Converse) upstream does ([`WireBehaviour`]). No client
//! speaks Converse, so there is no client behaviour and no fast path: every
//! request is translated.

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{self, Carriage, Placement};
use crate::{
    Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, ServerTools,
    StreamDecoder, Usage, WireSpec,
};

/// Amazon Bedrock's Converse API.
#[derive(Debug, Clone, Copy)]
pub struct BedrockWire;

impl WireBehaviour for BedrockWire {
    fn name(&self) -> &'static str {
        "bedrock"
    }

    fn spec(&self) -> &'static WireSpec {
        &super::SPEC
    }

    fn dialect(&self) -> crate::Wire {
        crate::Wire::Bedrock
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
    }

    fn model_traits(&self, family: Family, model: &str) -> ModelTraits {
        // Claude on Bedrock is Claude: Anthropic's rules, read from Bedrock's
        // spelling of its id. The other families take a budget where they
        // reason at all (the encoder sends reasoning to Claude only).
        match family {
            Family::Claude => ModelTraits::claude(model),
            _ => ModelTraits::BUDGET,
        }
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        super::encode_request(req, traits)
    }

    fn parse_response(&self, body: &[u8]) -> Result<Response, ProtocolError> {
        super::parse_response(body)
    }

    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        super::parse_usage(body)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(super::Decoder::new())
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        super::parse_error(body)
    }

    fn adapt_native(
        &self,
        _body: &Map<String, Value>,
        _req: &Request,
        _traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        // No client sends a Converse body: nothing is forwarded as it came.
        Vec::new()
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        // The encoder applies Claude's sampling rules to Claude alone.
        match traits.family {
            Family::Claude => crate::anthropic::sampling_edits(req, traits, native),
            _ => Vec::new(),
        }
    }

    fn may_adapt(&self, _req: &Request, _body: &[u8], _traits: ModelTraits) -> bool {
        false
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
        // Converse runs no hosted tools.
        ServerTools::NONE
    }

    fn default_server_tools(&self) -> ServerTools {
        ServerTools::NONE
    }

    fn place(&self, _tool: &HostedTool) -> Result<Placement, String> {
        Err("Converse runs no hosted tools".into())
    }

    fn forces(&self, _tool: &HostedTool) -> bool {
        false
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        None
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        for field in carry::plain_settings(req) {
            c.drop(field);
        }
        if req.extras.safety_identifier.is_some() {
            c.drop("safety_identifier");
        }
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        // Converse's `requestMetadata` labels invocation logs; a caller's
        // `user` and `metadata` are not sent there unasked.
        if req.user.is_some() {
            c.drop("user");
        }
        if req.metadata.is_some() {
            c.drop("metadata");
        }
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        // ConverseStream always ends with its `metadata` event's usage.
        None
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::Nested { object: "inferenceConfig", field: "maxTokens" }
    }

    fn thinking_note(&self, req: &Request, traits: ModelTraits) -> Option<&'static str> {
        // As on Anthropic's API: Claude refuses thinking in a tool loop whose
        // continued turn has none of its own.
        (traits.family == Family::Claude && crate::anthropic::continues_without_thinking(req))
            .then_some("thinking_off:bedrock_tool_loop")
    }

    fn needs_call_signatures(&self) -> bool {
        false
    }

    fn refused(&self, _message: &str) -> Option<crate::Refused> {
        // Converse bodies are the gateway's own, not a client's.
        None
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        // The runtime lists nothing: the control plane does.
        crate::listing::ModelListing::ControlPlane {
            from: "bedrock-runtime",
            to: "bedrock",
            path: "/foundation-models",
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
