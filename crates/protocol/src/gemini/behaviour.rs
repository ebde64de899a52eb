//! What a Gemini upstream does ([`WireBehaviour`]) and what a Gemini client gets
//! ([`ClientBehaviour`]).

use serde_json::{Map, Value, json};

use crate::behaviour::{ClientBehaviour, OutputLimit, WireBehaviour};
use crate::carry::{self, Carriage, Placement, Search};
use crate::{
    Dialect, Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response,
    ServerTool, ServerTools, StreamDecoder, Usage, Wire, WireSpec,
};
use crate::{ErrorBody, Seal, StreamEncoder, Tool};

/// Google Gemini `generateContent`.
#[derive(Debug, Clone, Copy)]
pub struct GeminiWire;

impl WireBehaviour for GeminiWire {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn spec(&self) -> &'static WireSpec {
        &super::SPEC
    }

    fn dialect(&self) -> Wire {
        Wire::Gemini
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
    }

    fn model_traits(&self, _family: Family, model: &str) -> ModelTraits {
        // Gemini's API serves Gemini models, tuned ones under names of their own:
        // the version is read wherever the id has it.
        ModelTraits::gemini(model)
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

    fn parse_usage(&self, _body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        // No shortcut: the body is parsed whole.
        Ok(None)
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
        // A Gemini body goes as it is: it names no model, and the client chose
        // the thinking settings for the model it named.
        Vec::new()
    }

    fn sampling_edits(&self, _req: &Request, _traits: ModelTraits, _native: bool) -> Vec<String> {
        // Its models take every sampling parameter.
        Vec::new()
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
        ServerTools::of([ServerTool::WebSearch, ServerTool::WebFetch, ServerTool::CodeExecution])
    }

    fn default_server_tools(&self) -> ServerTools {
        // Google Search, URL context and code execution run on its current models.
        self.runnable()
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        if tool.dialect.native_wire() == Some(Wire::Gemini) {
            // The client's own declaration, for the API it was written for.
            return Ok(Placement::Tool(tool.config.clone()));
        }
        match carry::kind(tool)? {
            ServerTool::WebSearch => {
                Search::read(tool).no_filters("googleSearch has no domain filters")?;
                Ok(Placement::Tool(json!({"googleSearch": {}})))
            }
            ServerTool::CodeExecution => {
                if tool.dialect == Dialect::OpenAiResponses && !carry::auto_container(&tool.config)
                {
                    return Err("its container and files are kept by OpenAI".into());
                }
                Ok(Placement::Tool(json!({"codeExecution": {}})))
            }
            ServerTool::WebFetch => {
                Search::read(tool).no_filters("urlContext has no domain filters")?;
                Ok(Placement::Tool(json!({"urlContext": {}})))
            }
            kind => Err(format!("the wire has no {} tool", kind.as_str())),
        }
    }

    fn forces(&self, _tool: &HostedTool) -> bool {
        // Its calling modes name functions only: its own tools cannot be forced.
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
        if req.user.is_some() {
            c.drop("user");
        }
        if req.metadata.is_some() {
            c.drop("metadata");
        }
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::Nested { object: "generationConfig", field: "maxOutputTokens" }
    }

    fn thinking_note(&self, _req: &Request, _traits: ModelTraits) -> Option<&'static str> {
        None
    }

    fn needs_call_signatures(&self) -> bool {
        true
    }

    fn refused(&self, _message: &str) -> Option<crate::Refused> {
        None
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        crate::listing::ModelListing::Endpoint {
            path: "/v1beta/models",
            paging: crate::listing::Paging::Cursor { param: "pageToken" },
        }
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        super::models::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}

/// A Gemini `generateContent` client.
#[derive(Debug, Clone, Copy)]
pub struct GeminiClient;

impl ClientBehaviour for GeminiClient {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn native_wire(&self) -> Option<Wire> {
        Some(Wire::Gemini)
    }

    fn parse_request(
        &self,
        body: &[u8],
        _seal: Option<&dyn Seal>,
    ) -> Result<Request, ProtocolError> {
        super::parse_client_request(body)
    }

    fn write_response(
        &self,
        resp: &Response,
        _tools: &[Tool],
        _seal: Option<&dyn Seal>,
        out: &mut Vec<u8>,
    ) {
        super::response::write_client_response(resp, out);
    }

    fn stream_encoder(
        &self,
        _req: &Request,
        _seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder> {
        Box::new(super::Encoder::for_client())
    }

    fn error_json(&self, err: &ErrorBody) -> Value {
        err.to_google()
    }

    fn keepalive(&self) -> &'static [u8] {
        // An empty line: SSE readers skip it, and Google's SDKs, which read
        // `data:` lines only and would wait forever on a comment, skip leading
        // whitespace.
        b"\n"
    }

    fn loses_signed_thinking(&self) -> bool {
        // Its thought parts carry no signature (its calls come back with the
        // ids the gateway gave them).
        true
    }
}
