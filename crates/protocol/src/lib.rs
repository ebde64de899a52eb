//! Switchyard's protocol layer: wire types, the canonical model, translators and
//! stream state machines. Pure functions and state machines only: no IO, no async.
//!
//! Every wire module (`openai_chat`, `anthropic`, `gemini`, `bedrock`,
//! `responses`) is a folder that exposes the same surface
//! (`vertex` holds Vertex AI's facts, and takes the rest from its publishers';
//! `azure` holds Azure OpenAI's, and takes the rest from `openai_chat`):
//!
//! | item | direction |
//! |---|---|
//! | `parse_request(&[u8]) -> Result<Request>` | wire request → canonical |
//! | `encode_request(&Request) -> Result<Value>` | canonical → wire request (`Unsupported` when the wire cannot express it) |
//! | `parse_response(&[u8]) -> Result<Response>` | wire response → canonical |
//! | `encode_response(&Response) -> Value` | canonical → wire response |
//! | `Decoder` ([`StreamDecoder`]) | wire stream [`Frame`]s → canonical [`StreamEvent`]s |
//! | `Encoder` ([`StreamEncoder`]) | canonical events → wire SSE bytes |
//! | `parse_error(&[u8]) -> Option<String>` | the message of a wire error body |
//! | `SPEC` ([`WireSpec`]) | paths, model placement, framing, auth, headers, default endpoint |
//! | `XxxWire` ([`WireBehaviour`]) | what the wire does: the above, the fast path's edits, the hosted tools and settings it carries, the rules the core applies per wire |
//! | `XxxClient` ([`ClientBehaviour`]) | what a client of the format gets: parsing, answers, stream encoder, errors, keep-alive |
//!
//! [`Wire`] and [`ClientFormat`] are identities: [`Wire::behaviour`] and
//! [`ClientFormat::behaviour`] are the one place each is mapped to its folder's
//! object, and their methods delegate to it. The traits have no default methods,
//! so a new wire is its folder, one line in [`Wire::behaviour`], and whatever the
//! compiler then asks for. What a model can take is its [`Family`]'s (read from
//! its id as each platform writes it), where the wire's API enforces its
//! vendor's rules ([`ModelTraits::infer`]).
//!
//! Each wire lives in its folder: `behaviour.rs` (its behaviour objects), `wire.rs`
//! (its types), `request.rs`, `response.rs`, `stream_decode.rs`,
//! `stream_encode.rs`, and its tests beside them.

#![warn(missing_docs)]

pub mod anthropic;
pub mod azure;
pub mod batches;
pub mod bedrock;
pub mod behaviour;
pub mod carry;
pub mod compaction;
pub mod continuity;
pub mod embeddings;
pub mod error;
pub mod error_code;
pub mod fal;
pub mod family;
pub mod frame;
pub mod gemini;
pub mod images;
pub mod jobs;
pub mod listing;
pub mod model;
pub mod openai_chat;
pub mod responses;
pub mod spec;
pub mod sse;
pub mod util;
pub mod vertex;

pub use behaviour::{ClientBehaviour, OutputLimit, Refused, WireBehaviour};
pub use compaction::Compaction;
pub use continuity::Seal;
pub use error::{ErrorBody, ErrorKind, ProtocolError};
pub use error_code::ErrorCode;
pub use family::Family;
pub use frame::{Frame, FrameError, Framer};
pub use model::*;
pub use spec::{
    Auth, CountBody, CountModel, CountSpec, Framing, ModelPlacement, RequiredHeader, Streaming,
    WireSpec,
};
pub use sse::{SseDecoder, SseEvent, SseTooLong};

/// The format a client speaks to the gateway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientFormat {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    OpenAiChat,
    /// The OpenAI Responses API (`/v1/responses`): forwarded as it is to a
    /// Responses upstream ([`Wire::Responses`]), translated to the others.
    OpenAiResponses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Gemini's `generateContent`: the model (and whether to stream) is in the URL,
    /// which the edge sets on the parsed request.
    Gemini,
}

impl ClientFormat {
    /// What the format does: the one place a [`ClientFormat`] is mapped to its
    /// folder's [`ClientBehaviour`].
    pub fn behaviour(self) -> &'static dyn ClientBehaviour {
        match self {
            ClientFormat::OpenAiChat => &openai_chat::OpenAiChatClient,
            ClientFormat::OpenAiResponses => &responses::ResponsesClient,
            ClientFormat::Anthropic => &anthropic::AnthropicClient,
            ClientFormat::Gemini => &gemini::GeminiClient,
        }
    }

    /// The name records, metrics and logs use (`openai-chat`, `openai-responses`,
    /// `anthropic`, `gemini`).
    pub fn as_str(self) -> &'static str {
        self.behaviour().name()
    }

    /// The upstream wire that speaks this format natively (for the fast path).
    pub fn native_wire(self) -> Option<Wire> {
        self.behaviour().native_wire()
    }

    /// Parse a client's request body of this format into the canonical request.
    /// `seal`: opens the continuation data this gateway sealed into an earlier
    /// answer ([`continuity`]; only formats with a field for it use it). A Gemini
    /// body names no model and does not say whether to stream: the caller sets
    /// [`Request::model`] and [`Request::stream`] from the URL.
    pub fn parse_request(
        self,
        body: &[u8],
        seal: Option<&dyn Seal>,
    ) -> Result<Request, ProtocolError> {
        self.behaviour().parse_request(body, seal)
    }

    /// Render a whole canonical answer as this format's response body.
    /// `tools`: the request's tools (a Responses client gets its free-form tools'
    /// calls back as `custom_tool_call` items). `seal`: seals what the upstream
    /// needs to continue into the answer, where the format has a field for it.
    pub fn encode_response(
        self,
        resp: &Response,
        tools: &[Tool],
        seal: Option<&dyn Seal>,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        self.behaviour().write_response(resp, tools, seal, &mut out);
        out
    }

    /// The encoder for a stream answering `req`: a Responses client gets its
    /// free-form tools' calls as `custom_tool_call` items (and, with `seal`, what
    /// the upstream needs to continue in `encrypted_content`), a Chat client the
    /// usage chunk only if it asked for it ([`Request::stream_usage`]).
    pub fn stream_encoder(
        self,
        req: &Request,
        seal: Option<std::sync::Arc<dyn Seal>>,
    ) -> Box<dyn StreamEncoder> {
        self.behaviour().stream_encoder(req, seal)
    }

    /// The error object this format's clients expect.
    pub fn error_json(self, err: &ErrorBody) -> serde_json::Value {
        self.behaviour().error_json(err)
    }

    /// The bytes of a keep-alive on a stream of this format, which its readers
    /// skip: Anthropic's own `ping` event, an empty line for Gemini's (Google's
    /// SDKs read `data:` lines only and would wait forever on a comment), an SSE
    /// comment otherwise.
    pub fn keepalive(self) -> &'static [u8] {
        self.behaviour().keepalive()
    }

    /// Whether answers in this format lose the upstream's signed thinking (no
    /// field carries it back), so the gateway remembers it for the next turn.
    pub fn loses_signed_thinking(self) -> bool {
        self.behaviour().loses_signed_thinking()
    }
}

/// An upstream provider's wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// OpenAI Chat Completions, and every server compatible with it.
    OpenAiChat,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini `generateContent`.
    Gemini,
    /// Amazon Bedrock's Converse.
    Bedrock,
    /// Claude on Amazon Bedrock's InvokeModel, in Anthropic's own body.
    BedrockAnthropic,
    /// Claude on Google Vertex AI.
    VertexAnthropic,
    /// Gemini on Google Vertex AI.
    VertexGemini,
    /// Open models on Google Vertex AI's OpenAI-compatible endpoint.
    VertexOpenAi,
    /// Chat Completions on an Azure OpenAI deployment (dated `api-version`).
    AzureOpenAi,
    /// Chat Completions on Azure OpenAI's v1 API.
    AzureOpenAiV1,
    /// OpenAI's Responses API.
    Responses,
    /// The Responses API on Azure OpenAI's v1 API.
    AzureOpenAiResponses,
    /// fal's queue: media jobs only.
    Fal,
}

impl Wire {
    /// What the wire does: the one place a [`Wire`] is mapped to its folder's
    /// [`WireBehaviour`]. A new wire is registered here, and the compiler then
    /// asks for each of its rules.
    pub fn behaviour(self) -> &'static dyn WireBehaviour {
        match self {
            Wire::OpenAiChat => &openai_chat::OpenAiChatWire,
            Wire::Anthropic => &anthropic::AnthropicWire,
            Wire::Gemini => &gemini::GeminiWire,
            Wire::Bedrock => &bedrock::BedrockWire,
            Wire::BedrockAnthropic => &bedrock::BedrockInvokeWire,
            Wire::VertexAnthropic => &vertex::VERTEX_ANTHROPIC,
            Wire::VertexGemini => &vertex::VERTEX_GEMINI,
            Wire::VertexOpenAi => &vertex::VERTEX_OPENAI,
            Wire::AzureOpenAi => &azure::AZURE_OPENAI,
            Wire::AzureOpenAiV1 => &azure::AZURE_OPENAI_V1,
            Wire::Responses => &responses::OPENAI_RESPONSES,
            Wire::AzureOpenAiResponses => &azure::AZURE_OPENAI_RESPONSES,
            Wire::Fal => &fal::FalWire,
        }
    }

    /// The configuration's name for it (`openai-chat`, `anthropic`, `gemini`,
    /// `bedrock`, `bedrock-anthropic`, `vertex-anthropic`, `vertex-gemini`, `vertex-openai`,
    /// `azure-openai`, `azure-openai-v1`, `openai-responses`,
    /// `azure-openai-responses`, `fal`).
    pub fn as_str(self) -> &'static str {
        self.behaviour().name()
    }

    /// The wire whose bodies this one exchanges ([`WireBehaviour::dialect`]):
    /// a client of that wire's format takes the fast path to this one.
    pub fn dialect(self) -> Wire {
        self.behaviour().dialect()
    }

    /// How an upstream of this wire is called: paths, where the model goes,
    /// framing, auth, required headers, default endpoint.
    pub fn spec(self) -> &'static WireSpec {
        self.behaviour().spec()
    }

    /// The body for this wire, for the model named in `req.model` (its traits
    /// inferred from the name).
    ///
    /// A translation is a parse into the canonical [`Request`], then an encode:
    ///
    /// ```
    /// use switchyard_protocol::{ClientFormat, Role, Wire};
    ///
    /// let chat = br#"{
    ///     "model": "claude-sonnet-4-5",
    ///     "max_tokens": 256,
    ///     "messages": [
    ///         {"role": "system", "content": "Answer briefly."},
    ///         {"role": "user", "content": "Why is the sky blue?"}
    ///     ]
    /// }"#;
    /// let request = ClientFormat::OpenAiChat.parse_request(chat, None)?;
    /// assert_eq!(request.system[0].text, "Answer briefly.");
    /// assert_eq!(request.messages[0].role, Role::User);
    ///
    /// let body = Wire::Anthropic.encode_request(&request)?;
    /// assert_eq!(body["model"], "claude-sonnet-4-5");
    /// assert_eq!(body["max_tokens"], 256);
    /// // Leading system messages become Anthropic's top-level `system`.
    /// assert_eq!(body["system"][0]["text"], "Answer briefly.");
    /// assert_eq!(body["messages"][0]["role"], "user");
    /// # Ok::<(), switchyard_protocol::ProtocolError>(())
    /// ```
    pub fn encode_request(self, req: &Request) -> Result<serde_json::Value, ProtocolError> {
        self.encode_request_for(req, ModelTraits::infer(self, &req.model))
    }

    /// Edits a client's own body (same format as this wire, forwarded on the fast
    /// path) needs for a target model with `traits`: reasoning in the form the
    /// model takes, no sampling parameters where it refuses them, no blank text
    /// blocks where the wire refuses them (Anthropic). Empty when the body can go
    /// as it is (a Gemini body: it names no model, and the client chose the
    /// thinking settings for the model it named). Everything else in the body is
    /// left alone.
    pub fn adapt_native(
        self,
        body: &serde_json::Map<String, serde_json::Value>,
        req: &Request,
        traits: ModelTraits,
    ) -> Vec<FieldEdit> {
        self.behaviour().adapt_native(body, req, traits)
    }

    /// For the record: the sampling parameters of `req` this wire's body leaves out
    /// because a target model with `traits` refuses them (`top_p: dropped (the
    /// model takes temperature or top_p, not both)`), translated or, with `native`,
    /// the client's own body on the fast path. Only Anthropic's models refuse any.
    pub fn sampling_edits(self, req: &Request, traits: ModelTraits, native: bool) -> Vec<String> {
        self.behaviour().sampling_edits(req, traits, native)
    }

    /// Edits that take `dropped` (hosted tools a request offered, which the target
    /// does not run) out of a client's own body of this wire (the fast path): see
    /// `carry::without`. An Anthropic history that calls tools, left without any
    /// tool, declares the tools it names, not to be called (as a translation does).
    pub fn drop_hosted(
        self,
        body: &serde_json::Map<String, serde_json::Value>,
        req: &Request,
        dropped: &[&HostedTool],
    ) -> Vec<FieldEdit> {
        self.behaviour().drop_hosted(carry::without(body, dropped), body, req)
    }

    /// Whether [`Wire::adapt_native`] might edit a client's body (`body`, parsed as
    /// `req`); false means it can be forwarded as it is (model aside) without being
    /// parsed as an object.
    pub fn may_adapt(self, req: &Request, body: &[u8], traits: ModelTraits) -> bool {
        self.behaviour().may_adapt(req, body, traits)
    }

    /// The body for this wire, for a model with the given traits.
    pub fn encode_request_for(
        self,
        req: &Request,
        traits: ModelTraits,
    ) -> Result<serde_json::Value, ProtocolError> {
        self.behaviour().encode_request_for(req, traits)
    }

    /// [`Wire::encode_request_for`], appended to `out` as bytes, with `model` as
    /// the body's model (for a wire that names it in the body). Wires with typed
    /// bodies serialize straight from `req`, with no `Value` in between.
    pub fn write_request_for(
        self,
        req: &Request,
        traits: ModelTraits,
        model: Option<&str>,
        out: &mut Vec<u8>,
    ) -> Result<(), ProtocolError> {
        self.behaviour().write_request_for(req, traits, model, out)
    }

    /// Parse an upstream's whole (non-streamed) response body.
    pub fn parse_response(self, body: &[u8]) -> Result<Response, ProtocolError> {
        self.behaviour().parse_response(body)
    }

    /// The usage of a response body that is forwarded as it is (same-format fast
    /// path), without building the canonical response. `Ok(None)`: the body
    /// reports no usage, or this wire has no such shortcut (parse it whole).
    pub fn parse_usage(self, body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
        self.behaviour().parse_usage(body)
    }

    /// A fresh decoder for one upstream stream of this wire.
    pub fn stream_decoder(self) -> Box<dyn StreamDecoder> {
        self.behaviour().stream_decoder()
    }

    /// The message of an upstream error body of this wire; `None` when the body
    /// is not one this wire writes.
    pub fn parse_error(self, body: &[u8]) -> Option<String> {
        self.behaviour().parse_error(body)
    }
}

/// Turns one upstream's stream frames into canonical events. It reads frames, not
/// bytes, so it is the same whatever the wire's [`Framing`]: the [`Framer`] of
/// [`Framing::framer`] cuts the bytes.
pub trait StreamDecoder: Send {
    /// Feed one frame. An upstream error event is returned as
    /// [`ProtocolError::UpstreamError`]; garbage as [`ProtocolError::MalformedUpstream`].
    fn push(&mut self, frame: &Frame, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError>;

    /// The upstream body ended. Closes any open block and emits `Stop` if the wire's
    /// terminal event was seen; returns `MalformedUpstream` if the stream was cut
    /// short (no terminal event), so the caller can treat it as a broken stream.
    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError>;
}

/// Turns canonical events into one client format's SSE bytes.
pub trait StreamEncoder: Send {
    /// Encode one event, appending whatever bytes it produces (possibly none: an
    /// encoder may hold an event until it knows how to write it).
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>);
    /// The stream completed normally (e.g. OpenAI's `data: [DONE]`).
    fn finish(&mut self, out: &mut Vec<u8>);
    /// The stream failed after it was committed: end it with an error in this format.
    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>);
}
