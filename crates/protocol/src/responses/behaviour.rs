//! What an OpenAI Responses client gets ([`ClientBehaviour`]); no upstream
//! speaks Responses, so there is no wire here.

use serde_json::Value;

use crate::behaviour::ClientBehaviour;
use crate::{ErrorBody, ProtocolError, Request, Response, Seal, StreamEncoder, Tool, Wire};

/// An OpenAI Responses client.
#[derive(Debug, Clone, Copy)]
pub struct ResponsesClient;

impl ClientBehaviour for ResponsesClient {
    fn name(&self) -> &'static str {
        "openai-responses"
    }

    fn native_wire(&self) -> Option<Wire> {
        // Always translated.
        None
    }

    fn parse_request(
        &self,
        body: &[u8],
        seal: Option<&dyn Seal>,
    ) -> Result<Request, ProtocolError> {
        super::parse_request_sealed(body, seal)
    }

    fn encode_response(&self, resp: &Response, tools: &[Tool], seal: Option<&dyn Seal>) -> Value {
        super::encode_response_sealed(resp, tools, seal)
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
