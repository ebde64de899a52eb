//! What an upstream wire does, as one object per wire ([`WireBehaviour`]): each
//! wire's folder implements it (`openai_chat::OpenAiChatWire`, …) and
//! [`crate::Wire::behaviour`] is the one place that maps the [`crate::Wire`]
//! identity to it. Every method is required, so a new wire cannot be added
//! without the compiler asking for each of its rules; nothing falls through to a
//! default that was written for another wire. A client format is the same
//! ([`ClientBehaviour`], [`crate::ClientFormat::behaviour`]).

use serde_json::{Map, Value};

use crate::carry::{Carriage, Placement};
use crate::{
    ErrorBody, Family, FieldEdit, HostedTool, ModelTraits, ProtocolError, Request, Response, Seal,
    ServerTools, StreamDecoder, StreamEncoder, Tool, Usage, Wire, WireSpec,
};

/// One upstream wire's behaviour: translation, the fast path's edits of a
/// client's own body, what it carries of a request's settings, and the few
/// rules the core applies per wire. [`crate::Wire`]'s methods of the same names
/// delegate here; their docs describe the contract.
pub trait WireBehaviour: Sync {
    /// The configuration's name for the wire (`openai-chat`, `anthropic`, `gemini`).
    fn name(&self) -> &'static str;

    /// How an upstream of this wire is called (the folder's `SPEC`).
    fn spec(&self) -> &'static WireSpec;

    /// The wire whose bodies this one exchanges: itself, or the publisher's
    /// whose API it serves under other facts (Claude on Vertex AI takes
    /// Anthropic's). A client of that wire's format takes the fast path here.
    fn dialect(&self) -> Wire;

    /// The `anthropic-beta` flags a client's request keeps here when the
    /// provider lists none (`anthropic_betas`): `None`, every flag (Anthropic's
    /// own API); `Some(list)`, only those (a platform that refuses flags it
    /// does not know).
    fn default_betas(&self) -> Option<&'static [&'static str]>;

    /// The traits a model of `family` (`model`, its id) has on this wire when the
    /// catalog does not say ([`ModelTraits::infer`]): the family's rules where the
    /// wire's API enforces its vendor's, the wire's own otherwise.
    fn model_traits(&self, family: Family, model: &str) -> ModelTraits;

    /// See [`crate::Wire::encode_request_for`].
    fn encode_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<Value, ProtocolError>;

    /// See [`crate::Wire::write_request_for`]. By default [`Self::encode_request_for`]'s
    /// value, written out; a wire with typed bodies writes them with none.
    fn write_request_for(
        &self,
        req: &Request,
        traits: ModelTraits,
        model: Option<&str>,
        out: &mut Vec<u8>,
    ) -> Result<(), ProtocolError> {
        let mut body = self.encode_request_for(req, traits)?;
        if let (Some(model), Value::Object(map)) = (model, &mut body) {
            map.insert("model".into(), Value::String(model.to_owned()));
        }
        crate::util::write_json(out, &body);
        Ok(())
    }

    /// See [`crate::Wire::parse_response`].
    fn parse_response(&self, body: &[u8]) -> Result<Response, ProtocolError>;

    /// See [`crate::Wire::parse_usage`].
    fn parse_usage(&self, body: &[u8]) -> Result<Option<Usage>, ProtocolError>;

    /// See [`crate::Wire::stream_decoder`].
    fn stream_decoder(&self) -> Box<dyn StreamDecoder>;

    /// See [`crate::Wire::parse_error`].
    fn parse_error(&self, body: &[u8]) -> Option<String>;

    /// See [`crate::Wire::adapt_native`].
    fn adapt_native(
        &self,
        body: &Map<String, Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit>;

    /// See [`crate::Wire::sampling_edits`].
    fn sampling_edits(&self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String>;

    /// See [`crate::Wire::may_adapt`].
    fn may_adapt(&self, req: &Request, body: &[u8], traits: ModelTraits) -> bool;

    /// See [`crate::Wire::drop_hosted`]: `edits` are the shared ones
    /// (`carry::without`); a wire adds what its API needs beyond them.
    fn drop_hosted(
        &self,
        edits: Vec<FieldEdit>,
        body: &Map<String, Value>,
        req: &Request,
    ) -> Vec<FieldEdit>;

    /// See [`crate::carry::runnable`].
    fn runnable(&self) -> ServerTools;

    /// What a provider of this wire runs when its configuration names no server
    /// tools: what the API runs on its current models.
    fn default_server_tools(&self) -> ServerTools;

    /// See [`crate::carry::place`].
    fn place(&self, tool: &HostedTool) -> Result<Placement, String>;

    /// See [`crate::carry::forces`].
    fn forces(&self, tool: &HostedTool) -> bool;

    /// See [`crate::carry::service_tier`].
    fn service_tier<'a>(&self, tier: &'a str) -> Option<&'a str>;

    /// What the wire's body carries of the settings OpenAI defined
    /// (`prompt_cache_key`, `prompt_cache_retention`, `store`,
    /// `safety_identifier`), recorded in `c` ([`crate::carry::carriage`]).
    fn carry_settings(&self, req: &Request, c: &mut Carriage);

    /// What the wire's body carries of the request's `user` and `metadata`,
    /// recorded in `c` ([`crate::carry::carriage`]).
    fn carry_user(&self, req: &Request, c: &mut Carriage);

    /// Where a client's own body asks for a stream's usage, when the wire reports
    /// it only if asked: `(field, key)`, the gateway setting `body[field][key]` to
    /// `true` on a stream it forwards, and taking the usage back out of what it
    /// passes through when the client did not ask. `None`: the wire always reports
    /// it.
    fn stream_usage_option(&self) -> Option<(&'static str, &'static str)>;

    /// Where a client's own body states its output limit, for the deployment's
    /// ceiling to be written there (`max_tokens_cap`).
    fn output_limit(&self) -> OutputLimit;

    /// A note for the request's descriptor when this wire sends `req` to a
    /// model with `traits` without the thinking the client asked for (Claude in
    /// a tool loop continued from another family); `None` otherwise.
    fn thinking_note(&self, req: &Request, traits: ModelTraits) -> Option<&'static str>;

    /// The wire needs each tool call's signature back, which clients have no
    /// field for: the gateway restores them before sending (Gemini).
    fn needs_call_signatures(&self) -> bool;

    /// What a refusal's `message` (a 400's, as [`Self::parse_error`] reads it)
    /// names of the request that the gateway learns to leave out for this
    /// provider and sends again without: `anthropic-beta` flags and top-level
    /// fields a platform does not take (Claude on Vertex AI, whose set lags
    /// Anthropic's). `None`: the wire learns nothing (an API that refuses what
    /// its own clients send is the client's to fix).
    fn refused(&self, message: &str) -> Option<Refused>;

    /// Where the wire's provider lists the models it serves, relative to its
    /// endpoint, or why it has no list the gateway can ask
    /// ([`crate::listing`]).
    fn model_listing(&self) -> crate::listing::ModelListing;

    /// One page of that list's answer: the models a deployment of this wire
    /// could name, and the next page's cursor.
    fn parse_models(&self, body: &[u8]) -> Result<crate::listing::ModelPage, ProtocolError>;

    /// The id the list gives the model a deployment names `upstream_model`
    /// (Bedrock's inference profile without its geography, a Vertex model
    /// without its `@version`).
    fn listed_id<'a>(&self, upstream_model: &'a str) -> &'a str;
}

/// What an upstream refused of a request ([`WireBehaviour::refused`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refused {
    /// `anthropic-beta` flags.
    pub betas: Vec<String>,
    /// Top-level body fields.
    pub fields: Vec<String>,
}

/// Where a client's own body states its output limit ([`WireBehaviour::output_limit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputLimit {
    /// Top-level fields: each one the body has takes the ceiling.
    TopLevel(&'static [&'static str]),
    /// A field of a top-level object (`generationConfig.maxOutputTokens`), set
    /// whether the body had it or not.
    Nested {
        /// The top-level object.
        object: &'static str,
        /// The field in it.
        field: &'static str,
    },
}

impl OutputLimit {
    /// Whether a top-level `field` holds the limit.
    pub fn is_top_level(self, field: &str) -> bool {
        matches!(self, OutputLimit::TopLevel(fields) if fields.contains(&field))
    }
}

/// The output limits of the wires that speak OpenAI's or Anthropic's names: a
/// client's body may have either.
pub(crate) const MAX_TOKENS_FIELDS: &[&str] = &["max_tokens", "max_completion_tokens"];

/// One client format's behaviour: how the gateway reads its requests and writes
/// its answers. [`crate::ClientFormat`]'s methods of the same names delegate
/// here; their docs describe the contract.
pub trait ClientBehaviour: Sync {
    /// The name records, metrics and logs use (`openai-chat`, …).
    fn name(&self) -> &'static str;

    /// See [`crate::ClientFormat::native_wire`].
    fn native_wire(&self) -> Option<Wire>;

    /// See [`crate::ClientFormat::parse_request`].
    fn parse_request(&self, body: &[u8], seal: Option<&dyn Seal>)
    -> Result<Request, ProtocolError>;

    /// See [`crate::ClientFormat::encode_response`]: the body, appended to `out`.
    fn write_response(
        &self,
        resp: &Response,
        tools: &[Tool],
        seal: Option<&dyn Seal>,
        out: &mut Vec<u8>,
    );

    /// See [`crate::ClientFormat::stream_encoder`].
    fn stream_encoder(
        &self,
        req: &Request,
        seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder>;

    /// See [`crate::ClientFormat::error_json`].
    fn error_json(&self, err: &ErrorBody) -> Value;

    /// See [`crate::ClientFormat::keepalive`].
    fn keepalive(&self) -> &'static [u8];

    /// See [`crate::ClientFormat::loses_signed_thinking`].
    fn loses_signed_thinking(&self) -> bool;
}

#[cfg(test)]
mod tests {
    use super::OutputLimit;
    use crate::{ClientFormat, ServerTools, Wire, sse};

    #[test]
    fn each_wire_states_the_rules_the_core_applies() {
        let chat = Wire::OpenAiChat.behaviour();
        let anthropic = Wire::Anthropic.behaviour();
        let gemini = Wire::Gemini.behaviour();
        // Only Chat Completions reports a stream's usage when asked, and only there
        // does the gateway ask (and take it back out for a client that did not).
        assert_eq!(chat.stream_usage_option(), Some(("stream_options", "include_usage")));
        assert_eq!(anthropic.stream_usage_option(), None);
        assert_eq!(gemini.stream_usage_option(), None);
        for wire in [chat, anthropic] {
            assert!(wire.output_limit().is_top_level("max_tokens"));
            assert!(wire.output_limit().is_top_level("max_completion_tokens"));
        }
        assert_eq!(
            gemini.output_limit(),
            OutputLimit::Nested { object: "generationConfig", field: "maxOutputTokens" }
        );
        assert!(!gemini.output_limit().is_top_level("max_tokens"));
        // The Responses API reports a stream's usage in `response.completed`, and
        // takes its own output limit's name.
        let responses = Wire::Responses.behaviour();
        assert_eq!(responses.stream_usage_option(), None);
        assert!(responses.output_limit().is_top_level("max_output_tokens"));
        assert!(!responses.output_limit().is_top_level("max_tokens"));
        assert_eq!(ClientFormat::OpenAiResponses.native_wire(), Some(Wire::Responses));
        assert_eq!(Wire::Responses.as_str(), "openai-responses");
        assert!(gemini.needs_call_signatures());
        assert!(!chat.needs_call_signatures() && !anthropic.needs_call_signatures());
        assert_eq!(chat.default_server_tools(), ServerTools::NONE);
        assert_eq!(anthropic.default_server_tools(), anthropic.runnable());
        assert_eq!(gemini.default_server_tools(), gemini.runnable());
        let names: Vec<&str> =
            [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini].map(Wire::as_str).into();
        assert_eq!(names, ["openai-chat", "anthropic", "gemini"]);
        let formats = [
            ClientFormat::OpenAiChat,
            ClientFormat::OpenAiResponses,
            ClientFormat::Anthropic,
            ClientFormat::Gemini,
        ];
        let names: Vec<&str> = formats.map(ClientFormat::as_str).into();
        assert_eq!(names, ["openai-chat", "openai-responses", "anthropic", "gemini"]);
        let stored: Vec<bool> = formats.map(ClientFormat::loses_signed_thinking).into();
        assert_eq!(stored, [true, false, false, true]);
    }

    #[test]
    fn anthropic_keepalive_is_its_ping_event() {
        let mut ping = Vec::new();
        sse::write_event(&mut ping, Some("ping"), r#"{"type": "ping"}"#);
        assert_eq!(ClientFormat::Anthropic.keepalive(), ping.as_slice());
        assert_eq!(ClientFormat::Gemini.keepalive(), b"\n");
        for format in [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses] {
            assert_eq!(format.keepalive(), b": keep-alive\n\n");
        }
    }
}
