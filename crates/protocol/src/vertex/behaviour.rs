//! The Vertex wires' behaviour: their publisher's, with Vertex's facts.

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{Carriage, Placement};
use crate::{
    Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, ServerTools,
    StreamDecoder, Usage, WireSpec,
};

/// A publisher's wire on Vertex AI: its behaviour, Vertex's [`WireSpec`], and
/// the body edits Vertex needs.
pub struct VertexWire {
    name: &'static str,
    spec: &'static WireSpec,
    publisher: &'static dyn WireBehaviour,
    /// Claude's body: the version field, and no `model` (it is in the URL).
    claude_body: bool,
    /// Where its publisher's models are listed.
    models: crate::listing::ModelListing,
}

impl std::fmt::Debug for VertexWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Claude on Vertex AI.
pub static VERTEX_ANTHROPIC: VertexWire = VertexWire {
    name: "vertex-anthropic",
    spec: &super::ANTHROPIC_SPEC,
    publisher: &crate::anthropic::AnthropicWire,
    claude_body: true,
    models: publisher_models("/v1beta1/publishers/anthropic/models"),
};

/// Gemini on Vertex AI.
pub static VERTEX_GEMINI: VertexWire = VertexWire {
    name: "vertex-gemini",
    spec: &super::GEMINI_SPEC,
    publisher: &crate::gemini::GeminiWire,
    claude_body: false,
    models: publisher_models("/v1beta1/publishers/google/models"),
};

/// Open models on Vertex AI's OpenAI-compatible endpoint.
pub static VERTEX_OPENAI: VertexWire = VertexWire {
    name: "vertex-openai",
    spec: &super::OPENAI_SPEC,
    publisher: &crate::openai_chat::OpenAiChatWire,
    claude_body: false,
    models: crate::listing::ModelListing::Unsupported(
        "Vertex AI's Model-as-a-Service models come from many publishers, each listed on its \
         own; which ones a provider serves is not one list",
    ),
};

/// A publisher's models on Vertex AI: Model Garden's list, on the regional
/// host but under no project (`v1beta1` only).
const fn publisher_models(path: &'static str) -> crate::listing::ModelListing {
    crate::listing::ModelListing::Host {
        path,
        paging: crate::listing::Paging::Cursor { param: "pageToken" },
    }
}

impl WireBehaviour for VertexWire {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static WireSpec {
        self.spec
    }

    fn dialect(&self) -> crate::Wire {
        self.publisher.dialect()
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        // Vertex checks the flags against a set of its own, which changes
        // apart from Anthropic's: a provider lists those its region takes.
        Some(&[])
    }

    fn model_traits(&self, family: Family, model: &str) -> ModelTraits {
        self.publisher.model_traits(family, model)
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        let mut body = self.publisher.encode_request_for(req, traits)?;
        if self.claude_body
            && let Value::Object(map) = &mut body
        {
            map.remove("model");
            map.insert("anthropic_version".into(), Value::from(super::ANTHROPIC_VERSION));
        }
        Ok(body)
    }

    fn parse_response(&self, body: &[u8]) -> Result<Response, ProtocolError> {
        self.publisher.parse_response(body)
    }

    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        self.publisher.parse_usage(body)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        self.publisher.stream_decoder()
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        // Vertex answers its own refusals (auth, quota, an unknown model) in
        // Google's shape, and passes the publisher's through in theirs.
        self.publisher.parse_error(body).or_else(|| crate::gemini::parse_error(body))
    }

    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        let mut edits = self.publisher.adapt_native(body, req, traits);
        if self.claude_body {
            // A client's own Messages body: the model is in the URL, the
            // version in the body.
            edits.push(("model", None));
            edits.push(("anthropic_version", Some(Value::from(super::ANTHROPIC_VERSION))));
        }
        edits
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        self.publisher.sampling_edits(req, traits, native)
    }

    fn may_adapt(&self, req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        self.claude_body || self.publisher.may_adapt(req, body, traits)
    }

    fn drop_hosted(
        &self,
        edits: Vec<FieldEdit>,
        body: &Map<String, Value>,
        req: &Request,
    ) -> Vec<FieldEdit> {
        self.publisher.drop_hosted(edits, body, req)
    }

    fn runnable(&self) -> ServerTools {
        self.publisher.runnable()
    }

    fn default_server_tools(&self) -> ServerTools {
        // Vertex runs a publisher's tools model by model, and not all of them
        // (Claude's code execution, say): a provider lists those it runs.
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        self.publisher.place(tool)
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        self.publisher.forces(tool)
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        // Vertex has its own provisioned throughput, not a request field.
        None
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        self.publisher.carry_settings(req, c);
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        self.publisher.carry_user(req, c);
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        self.publisher.stream_usage_option()
    }

    fn output_limit(&self) -> OutputLimit {
        self.publisher.output_limit()
    }

    fn thinking_note(&self, req: &Request, traits: ModelTraits) -> Option<&'static str> {
        self.publisher.thinking_note(req, traits)
    }

    fn needs_call_signatures(&self) -> bool {
        self.publisher.needs_call_signatures()
    }

    fn refused(&self, message: &str) -> Option<crate::Refused> {
        // Claude's flags and fields arrive on Vertex after Anthropic's API
        // takes them, and differ by region.
        if self.claude_body { crate::anthropic::refused(message) } else { None }
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        self.models
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        super::models::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        super::models::listed_id(upstream_model)
    }
}
