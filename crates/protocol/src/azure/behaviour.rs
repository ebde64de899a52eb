//! The Azure wires' behaviour: OpenAI's (Chat Completions', or the Responses
//! API's), with Azure's facts.

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{Carriage, Placement};
use crate::openai_chat::OpenAiChatWire;
use crate::{
    Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, ServerTools,
    StreamDecoder, Usage, WireSpec,
};

/// An OpenAI API on Azure OpenAI: OpenAI's behaviour, Azure's [`WireSpec`].
pub struct AzureWire {
    name: &'static str,
    spec: &'static WireSpec,
    /// The wire whose bodies it exchanges. A Chat deployment is its own: a
    /// client's own Chat body is not forwarded there (a deployment's body
    /// names no model, and a dated api-version refuses newer fields). The
    /// Responses API takes a Responses client's own body (Codex's encrypted
    /// reasoning and compaction items go back as they came).
    dialect: crate::Wire,
    /// Where its models are listed, if the resource's endpoint lists them.
    models: crate::listing::ModelListing,
    /// Whose behaviour it takes.
    publisher: &'static dyn WireBehaviour,
    /// The hosted tools it runs (Azure's Chat Completions none, its Responses
    /// API some of OpenAI's).
    tools: &'static [crate::ServerTool],
}

impl std::fmt::Debug for AzureWire {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// A deployment of the dated API (`/openai/deployments/{model}/…`).
pub static AZURE_OPENAI: AzureWire = AzureWire {
    name: "azure-openai",
    spec: &super::DEPLOYMENTS_SPEC,
    dialect: crate::Wire::AzureOpenAi,
    models: crate::listing::ModelListing::Unsupported(
        "an Azure OpenAI resource's deployments are listed by Azure Resource Manager, not by \
         the resource's endpoint",
    ),
    publisher: &OPENAI,
    // Azure's Chat Completions takes no `web_search_options`.
    tools: &[],
};

/// The v1 API (`/openai/v1/chat/completions`).
pub static AZURE_OPENAI_V1: AzureWire = AzureWire {
    name: "azure-openai-v1",
    spec: &super::V1_SPEC,
    dialect: crate::Wire::AzureOpenAiV1,
    models: V1_MODELS,
    publisher: &OPENAI,
    tools: &[],
};

/// The Responses API on the v1 API (`/openai/v1/responses`), its encrypted
/// reasoning tagged as Azure's ([`super::RESPONSES_FAMILY`]): it goes back to
/// an Azure resource only.
pub static AZURE_OPENAI_RESPONSES: AzureWire = AzureWire {
    name: "azure-openai-responses",
    spec: &super::RESPONSES_SPEC,
    dialect: crate::Wire::Responses,
    models: V1_MODELS,
    publisher: &AZURE_RESPONSES,
    // What Azure's Responses API runs of OpenAI's hosted tools (no web search).
    tools: &[
        crate::ServerTool::CodeExecution,
        crate::ServerTool::FileSearch,
        crate::ServerTool::Mcp,
        crate::ServerTool::ImageGeneration,
    ],
};

/// The models the resource offers (each with its lifecycle), in OpenAI's
/// shape: a deployment named after its model matches.
const V1_MODELS: crate::listing::ModelListing = crate::listing::ModelListing::Endpoint {
    path: "/openai/v1/models",
    paging: crate::listing::Paging::None,
};

/// Whose behaviour the Chat wires take.
static OPENAI: OpenAiChatWire = OpenAiChatWire;

/// Whose behaviour the Responses wire takes.
static AZURE_RESPONSES: crate::responses::ResponsesWire =
    crate::responses::ResponsesWire::for_family(super::RESPONSES_FAMILY);

impl WireBehaviour for AzureWire {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static WireSpec {
        self.spec
    }

    fn dialect(&self) -> crate::Wire {
        self.dialect
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
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
        // The deployment is in the path: the body names no model (Azure
        // ignores one, but it would be the client's name, not the deployment's).
        if self.spec.model == crate::ModelPlacement::Path
            && let Value::Object(map) = &mut body
        {
            map.remove("model");
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
        // OpenAI's shape (`{"error": {"message", "code"}}`), and the gateway's
        // in front of a resource (`{"statusCode": 401, "message": …}`).
        self.publisher.parse_error(body)
    }

    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        self.publisher.adapt_native(body, req, traits)
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        self.publisher.sampling_edits(req, traits, native)
    }

    fn may_adapt(&self, req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        self.publisher.may_adapt(req, body, traits)
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
        ServerTools::of(self.tools.iter().copied())
    }

    fn default_server_tools(&self) -> ServerTools {
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        match tool.kind {
            Some(kind) if self.tools.contains(&kind) => self.publisher.place(tool),
            _ => Err(format!("Azure OpenAI's {} runs no {} tool", self.name, tool.tool_type)),
        }
    }

    fn forces(&self, tool: &HostedTool) -> bool {
        tool.kind.is_some_and(|kind| self.tools.contains(&kind)) && self.publisher.forces(tool)
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        // A deployment's type (Standard, Provisioned) is its throughput, not a
        // request field.
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

    fn refused(&self, _message: &str) -> Option<crate::Refused> {
        None
    }

    fn model_listing(&self) -> crate::listing::ModelListing {
        self.models
    }

    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        crate::openai_chat::parse_models(body)
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}
