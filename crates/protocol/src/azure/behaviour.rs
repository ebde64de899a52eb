//! The Azure wires' behaviour: OpenAI Chat Completions', with Azure's facts.

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{Carriage, Placement};
use crate::openai_chat::OpenAiChatWire;
use crate::{
    Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, ServerTools,
    StreamDecoder, Usage, WireSpec,
};

/// Chat Completions on Azure OpenAI: OpenAI's behaviour, Azure's [`WireSpec`].
pub struct AzureWire {
    name: &'static str,
    spec: &'static WireSpec,
    /// Its identity: a client's own Chat body is not forwarded here (a
    /// deployment's body names no model, and a dated api-version refuses newer
    /// fields), so it is its own dialect.
    wire: crate::Wire,
    /// Where its models are listed, if the resource's endpoint lists them.
    models: crate::listing::ModelListing,
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
    wire: crate::Wire::AzureOpenAi,
    models: crate::listing::ModelListing::Unsupported(
        "an Azure OpenAI resource's deployments are listed by Azure Resource Manager, not by \
         the resource's endpoint",
    ),
};

/// The v1 API (`/openai/v1/chat/completions`).
pub static AZURE_OPENAI_V1: AzureWire = AzureWire {
    name: "azure-openai-v1",
    spec: &super::V1_SPEC,
    wire: crate::Wire::AzureOpenAiV1,
    // The models the resource offers (each with its lifecycle), in OpenAI's
    // shape: a deployment named after its model matches.
    models: crate::listing::ModelListing::Endpoint {
        path: "/openai/v1/models",
        paging: crate::listing::Paging::None,
    },
};

/// Whose behaviour it takes.
const OPENAI: OpenAiChatWire = OpenAiChatWire;

impl WireBehaviour for AzureWire {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static WireSpec {
        self.spec
    }

    fn dialect(&self) -> crate::Wire {
        self.wire
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        None
    }

    fn model_traits(&self, family: Family, model: &str) -> ModelTraits {
        OPENAI.model_traits(family, model)
    }

    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        let mut body = OPENAI.encode_request_for(req, traits)?;
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
        OPENAI.parse_response(body)
    }

    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        OPENAI.parse_usage(body)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        OPENAI.stream_decoder()
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        // OpenAI's shape (`{"error": {"message", "code"}}`), and the gateway's
        // in front of a resource (`{"statusCode": 401, "message": …}`).
        OPENAI.parse_error(body)
    }

    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        OPENAI.adapt_native(body, req, traits)
    }

    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        OPENAI.sampling_edits(req, traits, native)
    }

    fn may_adapt(&self, req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        OPENAI.may_adapt(req, body, traits)
    }

    fn drop_hosted(
        &self,
        edits: Vec<FieldEdit>,
        body: &Map<String, Value>,
        req: &Request,
    ) -> Vec<FieldEdit> {
        OPENAI.drop_hosted(edits, body, req)
    }

    fn runnable(&self) -> ServerTools {
        // Azure's Chat Completions takes no `web_search_options`.
        ServerTools::NONE
    }

    fn default_server_tools(&self) -> ServerTools {
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        Err(format!("Azure OpenAI's Chat Completions runs no {} tool", tool.tool_type))
    }

    fn forces(&self, _tool: &HostedTool) -> bool {
        false
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        // A deployment's type (Standard, Provisioned) is its throughput, not a
        // request field.
        None
    }

    fn carry_settings(&self, req: &Request, c: &mut Carriage) {
        OPENAI.carry_settings(req, c);
    }

    fn carry_user(&self, req: &Request, c: &mut Carriage) {
        OPENAI.carry_user(req, c);
    }

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        OPENAI.stream_usage_option()
    }

    fn output_limit(&self) -> OutputLimit {
        OPENAI.output_limit()
    }

    fn thinking_note(&self, req: &Request, traits: ModelTraits) -> Option<&'static str> {
        OPENAI.thinking_note(req, traits)
    }

    fn needs_call_signatures(&self) -> bool {
        OPENAI.needs_call_signatures()
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
