//! fal (`wire: fal`): media models on fal's queue, `https://queue.fal.run`,
//! authorized with `Authorization: Key <key>`.
//!
//! fal serves media jobs only: a model there is `kind: media`, reached through
//! `POST /v1/jobs`, and the catalog refuses a chat model deployed on it. The
//! queue's protocol (submit, status, result, cancel) is
//! [`crate::jobs::fal`]; this folder states the wire's facts, and its
//! behaviour refuses every generation by name (no request of another kind is
//! planned here, so those rules are never reached).

use serde_json::{Map, Value};

use crate::behaviour::{OutputLimit, WireBehaviour};
use crate::carry::{Carriage, Placement};
use crate::spec::{Auth, Framing, ModelPlacement, Streaming, WireSpec};
use crate::{
    Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, ServerTools,
    StreamDecoder, StreamEvent, Usage,
};

/// How fal is called: jobs only, submitted to `POST {endpoint}/{model}`.
pub const SPEC: WireSpec = WireSpec {
    path: "/{model}",
    streaming: Streaming::BodyField,
    model: ModelPlacement::Path,
    framing: Framing::Sse,
    auth: Auth::Prefixed { header: "authorization", prefix: "Key " },
    headers: &[],
    passthrough_headers: &[],
    headers_in_body: &[],
    default_endpoint: crate::jobs::fal::ENDPOINT,
    compact: None,
    embeddings: None,
    images: None,
    jobs: Some(crate::jobs::JobSpec { queue: crate::jobs::Queue::Fal }),
    batches: None,
    chat: false,
    count: None,
};

/// fal's behaviour: a queue of media jobs, no generations.
#[derive(Debug)]
pub struct FalWire;

/// Why a generation never goes to fal.
fn no_chat() -> ProtocolError {
    ProtocolError::Unsupported("fal runs media jobs (POST /v1/jobs), not generations".to_owned())
}

/// A stream from fal: there is none, so any frame is refused.
struct NoStream;

impl StreamDecoder for NoStream {
    fn push(
        &mut self,
        _frame: &crate::frame::Frame,
        _out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        Err(no_chat())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        Err(no_chat())
    }
}

impl WireBehaviour for FalWire {
    fn name(&self) -> &'static str {
        "fal"
    }

    fn spec(&self) -> &'static WireSpec {
        &SPEC
    }

    fn dialect(&self) -> crate::Wire {
        crate::Wire::Fal
    }

    fn default_betas(&self) -> Option<&'static [&'static str]> {
        Some(&[])
    }

    fn model_traits(&self, _family: Family, _model: &str) -> ModelTraits {
        ModelTraits::BUDGET
    }

    fn encode_request_for(
        &self,
        _req: &Request,
        _traits: ModelTraits,
    ) -> Result<Value, ProtocolError> {
        Err(no_chat())
    }

    fn parse_response(&self, _body: &[u8]) -> Result<Response, ProtocolError> {
        Err(no_chat())
    }

    fn parse_usage(&self, _body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        Ok(None)
    }

    fn stream_decoder(&self) -> Box<dyn StreamDecoder> {
        Box::new(NoStream)
    }

    fn parse_error(&self, body: &[u8]) -> Option<String> {
        crate::jobs::fal::parse_error(body)
    }

    fn adapt_native(
        &self,
        _body: &Map<String, Value>,
        _req: &Request,
        _traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        Vec::new()
    }

    fn sampling_edits(&self, _req: &Request, _traits: ModelTraits, _native: bool) -> Vec<String> {
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
        ServerTools::NONE
    }

    fn default_server_tools(&self) -> ServerTools {
        ServerTools::NONE
    }

    fn place(&self, tool: &HostedTool) -> Result<Placement, String> {
        Err(format!("fal runs no {} tool", tool.tool_type))
    }

    fn forces(&self, _tool: &HostedTool) -> bool {
        false
    }

    fn service_tier<'a>(&self, _tier: &'a str) -> Option<&'a str> {
        None
    }

    fn carry_settings(&self, _req: &Request, _c: &mut Carriage) {}

    fn carry_user(&self, _req: &Request, _c: &mut Carriage) {}

    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)> {
        None
    }

    fn output_limit(&self) -> OutputLimit {
        OutputLimit::TopLevel(&[])
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
        crate::listing::ModelListing::Unsupported(
            "fal's queue has no model list: its models are listed on fal.ai",
        )
    }

    fn parse_models(&self, _body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError> {
        Err(ProtocolError::upstream("fal's queue has no model list"))
    }

    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str {
        upstream_model
    }
}
