//! What an Anthropic upstream does ([`WireBehaviour`]) and what an Anthropic
//! client gets ([`ClientBehaviour`]).

use serde_json::{Map, Value, json};

use crate::behaviour::{ClientBehaviour, MAX_TOKENS_FIELDS, OutputLimit, WireBehaviour};
use crate::carry::{self, Carriage, Placement, Search};
use crate::{
    ErrorBody, Family, FieldEdit, HostedTool, MCP_SERVER, ModelTraits, ProtocolError, Request,
    Response, Seal, ServerTool, ServerTools, StreamDecoder, StreamEncoder, Tool, Usage, Wire,
    WireSpec,
};

/// Anthropic Messages.
#[derive(Debug, Clone, Copy)]
pub struct AnthropicWire;

impl WireBehaviour for AnthropicWire {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn spec(&self) -> &'static WireSpec {
        &super::SPEC
    }

    fn dialect(&self) -> Wire {
        Wire::Anthropic
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
    }

    fn model_traits(&self, family: Family, model: &str) -> ModelTraits {
        // Anthropic's API enforces Claude's rules; anything else it serves (a
        // compatible server's own model) is taken to want a budget.
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
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        super::adapt_native(body, req, traits)
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        super::sampling_edits(req, traits, native)
    }

    fn may_adapt(&self, req: &Request, _body: &[u8], traits: ModelTraits) -> bool {
        super::may_adapt(req, traits)
    }

    /// A history that calls tools, left without any tool, declares the tools it
    /// names, not to be called (as a translation does): Anthropic refuses
    /// `tool_use` blocks for tools the request does not declare.
    fn drop_hosted(
        &self,
        mut edits: Vec<FieldEdit>,
        _body: &Map<String, Value>,
        req: &Request,
    ) -> Vec<FieldEdit> {
        if edits.iter().any(|(field, v)| *field == "tools" && v.is_none())
            && let Some(tools) = super::history_tools(req)
        {
            edits.retain(|(field, _)| !matches!(*field, "tools" | "tool_choice"));
            edits.push(("tools", Some(tools)));
            edits.push(("tool_choice", Some(json!({"type": "none"}))));
        }
        edits
    }

    fn runnable(&self) -> ServerTools {
        use ServerTool::*;
        ServerTools::of([
            WebSearch,
            WebFetch,
            CodeExecution,
            Mcp,
            ToolSearch,
            Bash,
            TextEditor,
            ComputerUse,
            Memory,
        ])
    }

    fn default_server_tools(&self) -> ServerTools {
        // Its own tools, which its current models run.
        self.runnable()
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        if tool.dialect.native_wire() == Some(Wire::Anthropic) {
            // The client's own declaration, for the API it was written for.
            return Ok(if tool.tool_type == MCP_SERVER {
                Placement::McpServer(tool.config.clone())
            } else {
                Placement::Tool(tool.config.clone())
            });
        }
        match carry::kind(tool)? {
            ServerTool::WebSearch => Ok(Placement::Tool(web_search(&Search::read(tool)))),
            kind => Err(format!(
                "Anthropic runs {} only as its own tool, declared (with its beta) by an Anthropic client",
                kind.as_str()
            )),
        }
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        // By the name it declares the tool with.
        match self.place(tool) {
            Ok(Placement::Tool(declared)) => declared.get("name").is_some_and(Value::is_string),
            _ => false,
        }
    }

    fn service_tier<'a>(&self, tier: &'a str) -> Option<&'a str> {
        match tier {
            "auto" | "priority" | "scale" => Some("auto"),
            "standard_only" | "default" | "flex" => Some("standard_only"),
            _ => None,
        }
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        // No prompt-cache key (the cache is keyed by the prompt's own prefix),
        // retention setting or `store`.
        for field in carry::plain_settings(req) {
            c.drop(field);
        }
        if req.extras.safety_identifier.is_some() {
            if req.user.is_none() {
                c.sent.push("metadata");
                c.edits.push("safety_identifier: -> metadata.user_id".into());
            } else {
                c.drop("safety_identifier");
            }
        }
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        if req.user.is_some() {
            c.sent.push("metadata");
        }
        if req.metadata.is_some() {
            c.drop("metadata");
        }
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::TopLevel(MAX_TOKENS_FIELDS)
    }

    fn thinking_note(&self, req: &Request, _traits: ModelTraits) -> Option<&'static str> {
        // Anthropic refuses thinking in a tool loop whose continued turn has none
        // of its own (it came from another family).
        super::continues_without_thinking(req).then_some("thinking_off:anthropic_tool_loop")
    }

    fn needs_call_signatures(&self) -> bool {
        false
    }

    fn refused(&self, _message: &str) -> Option<crate::Refused> {
        // Anthropic's own API knows every flag and field of its clients.
        None
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        crate::listing::ModelListing::Endpoint {
            path: "/v1/models",
            paging: crate::listing::Paging::Cursor { param: "after_id" },
        }
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        super::models::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}

/// A web search as Anthropic's `web_search_20250305` tool.
fn web_search(search: &Search) -> Value {
    let mut tool = Map::new();
    tool.insert("type".into(), json!("web_search_20250305"));
    tool.insert("name".into(), json!("web_search"));
    if !search.allowed.is_empty() {
        tool.insert("allowed_domains".into(), Value::Array(search.allowed.clone()));
    }
    if !search.blocked.is_empty() {
        tool.insert("blocked_domains".into(), Value::Array(search.blocked.clone()));
    }
    if !search.location.is_empty() {
        let mut location = search.location.clone();
        location.insert("type".into(), json!("approximate"));
        tool.insert("user_location".into(), Value::Object(location));
    }
    if let Some(max) = &search.max_uses {
        tool.insert("max_uses".into(), max.clone());
    }
    Value::Object(tool)
}

/// An Anthropic Messages client.
#[derive(Debug, Clone, Copy)]
pub struct AnthropicClient;

impl ClientBehaviour for AnthropicClient {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn native_wire(&self) -> Option<Wire> {
        Some(Wire::Anthropic)
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
        _req: &Request,
        _seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder> {
        Box::new(super::Encoder::new())
    }

    fn error_json(&self, err: &ErrorBody) -> Value {
        err.to_anthropic()
    }

    fn keepalive(&self) -> &'static [u8] {
        // Anthropic's own keep-alive, which its SDKs expect and skip.
        b"event: ping\ndata: {\"type\": \"ping\"}\n\n"
    }

    fn loses_signed_thinking(&self) -> bool {
        // Its thinking blocks carry their signatures.
        false
    }
}
