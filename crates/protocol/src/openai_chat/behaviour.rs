//! What an OpenAI-compatible upstream does ([`WireBehaviour`]) and what a Chat
//! Completions client gets ([`ClientBehaviour`]).

use serde_json::{Map, Value};

use crate::behaviour::{ClientBehaviour, MAX_TOKENS_FIELDS, OutputLimit, WireBehaviour};
use crate::carry::{self, Carriage, Placement, Search, WEB_SEARCH_OPTIONS};
use crate::{
    ErrorBody, Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, Seal,
    ServerTool, ServerTools, StreamDecoder, StreamEncoder, Tool, Usage, Wire, WireSpec,
};

/// OpenAI Chat Completions, and every server compatible with it.
#[derive(Debug, Clone, Copy)]
pub struct OpenAiChatWire;

impl WireBehaviour for OpenAiChatWire {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn spec(&self) -> &'static WireSpec {
        &super::SPEC
    }

    fn dialect(&self) -> Wire {
        Wire::OpenAiChat
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
    }

    fn model_traits(&self, _family: Family, model: &str) -> ModelTraits {
        // A Claude or Gemini id behind an OpenAI-compatible server is the
        // server's business: it takes Chat Completions' fields for every model.
        ModelTraits::openai_chat(model)
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        // Its models all take `reasoning_effort`; `max_tokens` is renamed on the
        // fast path only (`adapt_native`).
        let mut body = super::encode_request(req)?;
        super::sampling::strip(&mut body, traits);
        Ok(body)
    }

    fn write_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
        model: Option<&str>,
        out: &mut Vec<u8>,
    ) -> Result<(), ProtocolError> {
        let mut body = super::request_out::Body::of(req, None)?;
        if let Some(model) = model {
            body.model = model;
        }
        super::sampling::strip_typed(&mut body, traits);
        crate::util::write_json(out, &body);
        Ok(())
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
        body: &Map<String, Value>,
        _req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        super::adapt_native(body, traits)
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, _native: bool) -> Vec<String> {
        super::sampling::dropped(req, traits)
    }

    fn may_adapt(&self, _req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        super::may_adapt(body, traits)
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
        ServerTools::of([ServerTool::WebSearch])
    }

    fn default_server_tools(&self) -> ServerTools {
        // Chat Completions searches only on search models: a deployment of one
        // says so in its configuration.
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        if tool.dialect.native_wire() == Some(Wire::OpenAiChat) {
            // The client's own declaration, for the API it was written for.
            return Ok(Placement::Field(WEB_SEARCH_OPTIONS, tool.config.clone()));
        }
        match carry::kind(tool)? {
            ServerTool::WebSearch => {
                let search = Search::read(tool);
                search.no_filters("web_search_options has no domain filters")?;
                Ok(Placement::Field(WEB_SEARCH_OPTIONS, search_options(&search)))
            }
            kind => Err(format!("the wire has no {} tool", kind.as_str())),
        }
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        // A search model searches on every request.
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
        Some(("stream_options", "include_usage"))
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::TopLevel(MAX_TOKENS_FIELDS)
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
        crate::listing::ModelListing::Endpoint {
            path: "/models",
            paging: crate::listing::Paging::None,
        }
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        super::models::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}

/// A web search as Chat Completions' `web_search_options` (no domain filters).
fn search_options(search: &Search) -> Value {
    let mut options = Map::new();
    if let Some(size) = &search.context_size {
        options.insert("search_context_size".into(), size.clone());
    }
    if !search.location.is_empty() {
        options.insert(
            "user_location".into(),
            serde_json::json!({"type": "approximate", "approximate": search.location}),
        );
    }
    Value::Object(options)
}

/// A Chat Completions client.
#[derive(Debug, Clone, Copy)]
pub struct OpenAiChatClient;

impl ClientBehaviour for OpenAiChatClient {
    fn name(&self) -> &'static str {
        "openai-chat"
    }

    fn native_wire(&self) -> Option<Wire> {
        Some(Wire::OpenAiChat)
    }

    fn parse_request(
        &self,
        body: &[u8],
        _seal: Option<&dyn Seal>,
    ) -> Result<Request, ProtocolError> {
        super::parse_request(body)
    }

    fn write_response(
        &self,
        resp: &Response,
        _tools: &[Tool],
        _seal: Option<&dyn Seal>,
        out: &mut Vec<u8>,
    ) {
        crate::util::write_json(out, &super::encode_response(resp));
    }

    fn stream_encoder(
        &self,
        req: &Request,
        _seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder> {
        // The usage chunk only if the client asked for it.
        Box::new(super::Encoder::new(req.stream_usage))
    }

    fn error_json(&self, err: &ErrorBody) -> Value {
        err.to_openai()
    }

    fn keepalive(&self) -> &'static [u8] {
        crate::sse::KEEPALIVE_COMMENT
    }

    fn loses_signed_thinking(&self) -> bool {
        // No field carries signed thinking back.
        true
    }
}
