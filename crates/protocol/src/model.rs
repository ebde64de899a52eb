//! The canonical internal model: every ingress format is parsed into it and every
//! upstream wire is produced from it (hub and spoke). It is deliberately close to the
//! union of the three vendor formats, so translation is a field mapping, not a rewrite.
//!
//! Conventions that every translator relies on:
//! - `Usage::input_tokens` is the *total* prompt size, cached reads and cache writes
//!   included (OpenAI's `prompt_tokens` semantics). Anthropic reports them apart; its
//!   translator adds them up on the way in and subtracts them on the way out.
//! - `Usage::output_tokens` includes reasoning tokens (OpenAI semantics); Gemini's
//!   `thoughtsTokenCount` is added to `candidatesTokenCount`.
//! - Every count is an `Option`: a provider that reports `0` gives `Some(0)`, one that
//!   reports nothing gives `None` (the meter estimates and marks the record).
//! - Tool-call arguments are kept as JSON *text*, exactly as produced, so that nothing
//!   is reformatted on the way through.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

mod assemble;
mod document;
mod extras;
mod traits;

pub use assemble::*;
pub use document::*;
pub use extras::*;
pub use traits::*;

/// A generation request, whatever format it arrived in.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The model as the client named it (resolution happens in core).
    pub model: String,
    /// Leading system instructions (Anthropic `system`, OpenAI leading system/developer
    /// messages, Responses `instructions`, Gemini `systemInstruction`).
    pub system: Vec<TextBlock>,
    /// The conversation, oldest first, after the leading system instructions.
    pub messages: Vec<Message>,
    /// Function tools the model may call (hosted tools are in [`Extras::hosted_tools`]).
    pub tools: Vec<Tool>,
    /// Whether and which tool the model must call; `None`: the client did not say.
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one turn; `None`: not said
    /// (the upstream's default).
    pub parallel_tool_calls: Option<bool>,
    /// The output ceiling the client asked for, whichever field it used.
    pub max_tokens: Option<u64>,
    /// Sampling temperature; `None`: not sent (the upstream's default).
    pub temperature: Option<f64>,
    /// Nucleus sampling mass; `None`: not sent.
    pub top_p: Option<f64>,
    /// Top-k sampling; `None`: not sent.
    pub top_k: Option<u64>,
    /// Stop sequences; empty: none.
    pub stop: Vec<String>,
    /// The client asked for a streamed answer. For Gemini the URL says, and the
    /// edge sets it after parsing.
    pub stream: bool,
    /// What the client asked of the model's reasoning; `None`: it said nothing.
    pub reasoning: Option<Reasoning>,
    /// The shape the answer must take (JSON object or schema); `None`: free text.
    pub response_format: Option<ResponseFormat>,
    /// End-user identifier (OpenAI `user`, Anthropic `metadata.user_id`).
    pub user: Option<String>,
    /// Free-form metadata the client attached (OpenAI `metadata`).
    pub metadata: Option<Map<String, Value>>,
    /// The client asked for a stream's usage in a final chunk of its own (OpenAI
    /// Chat `stream_options.include_usage`). OpenAI sends that chunk, whose
    /// `choices` is empty, only when asked, and clients that read `choices[0]` of
    /// every chunk break on it; the other formats always carry usage in place.
    #[serde(default)]
    pub stream_usage: bool,
    /// The client asked for the conversation to be compacted, not continued (see
    /// [`crate::compaction`]). The pipeline answers it with a summary and never
    /// sends it upstream as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<crate::Compaction>,
    /// Hosted tools, prompt-cache, safety, tier and storage settings, the client's
    /// session: see [`Extras`].
    #[serde(default)]
    pub extras: Extras,
}

impl Request {
    /// The hosted tool `tool_choice` forces ([`ToolChoice::Hosted`]), if any.
    pub fn forced_hosted(&self) -> Option<&HostedTool> {
        match &self.tool_choice {
            Some(ToolChoice::Hosted { path }) => {
                self.extras.hosted_tools.iter().find(|t| t.path == *path)
            }
            _ => None,
        }
    }
}

/// A run of text: system instructions or message text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextBlock {
    /// The text, as written.
    pub text: String,
    /// Anthropic prompt-caching marker, carried opaquely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
}

impl TextBlock {
    /// Text without a cache marker.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into(), cache_control: None }
    }
}

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A system message in the middle of a conversation (OpenAI system/developer after
    /// the first turn, Anthropic's mid-conversation system messages).
    System,
    /// The end user, and tool results sent back by the client.
    User,
    /// The model: earlier answers, including their tool calls.
    Assistant,
}

/// One turn of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its parts, in order.
    pub content: Vec<Part>,
}

impl Message {
    /// A message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Self { role, content: vec![Part::Text(TextBlock::new(text))] }
    }

    /// A user message of one text part.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant message of one text part.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// The user's message carrying a tool's text result back to the model.
    ///
    /// ```
    /// use switchyard_protocol::{Message, Part, Role};
    ///
    /// let m = Message::tool_result("call_1", "42 degrees");
    /// assert_eq!(m.role, Role::User);
    /// let Part::ToolResult(r) = &m.content[0] else { unreachable!() };
    /// assert_eq!((r.call_id.as_str(), r.text().as_str(), r.is_error), ("call_1", "42 degrees", false));
    /// ```
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![Part::ToolResult(ToolResult::from_text(call_id, text))],
        }
    }
}

/// One piece of message content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Text.
    Text(TextBlock),
    /// An image, inline or by URL.
    Image(Image),
    /// A document (a PDF, usually): OpenAI Chat `file`, Responses `input_file`,
    /// Anthropic `document`, Gemini `inlineData`/`fileData` of a non-image type.
    Document(Document),
    /// An assistant's request to run a tool.
    ToolCall(ToolCall),
    /// The result of a tool call, sent back by the client (user side).
    ToolResult(ToolResult),
    /// Model reasoning. `signature` is Anthropic's opaque signature, kept byte-exact;
    /// it is only meaningful to an Anthropic wire and is dropped elsewhere.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Anthropic's signature over the thinking; `None` when the upstream sent none.
        signature: Option<String>,
    },
    /// Anthropic redacted thinking (opaque, Anthropic-only).
    RedactedThinking {
        /// The encrypted thinking, byte-exact.
        data: String,
    },
    /// Content the canonical model has no place for (an OpenAI file by id, audio,
    /// Anthropic server-tool blocks, …). It is kept, by name, so that translating it
    /// to another wire is refused with that name instead of dropping it without a
    /// word; the same-format fast path forwards the client's own body, where it
    /// goes as it came. `what` names it as the client sent it, with its path.
    Untranslatable {
        /// Where it was and what it is, for the refusal
        /// (``messages[1].content[0]: a `input_audio` content part``).
        what: String,
    },
    /// The gateway's compaction of the conversation before it: the summary sealed
    /// with the gateway's seal (see [`crate::compaction`]). Only the gateway writes
    /// it, as the answer to a request that asked for compaction, and only the
    /// Responses API shows it (as a `compaction` item); when a client sends it
    /// back, the parser opens it into the summary's text, so no upstream sees it.
    Compaction {
        /// The summary, sealed: opaque to clients.
        sealed: String,
    },
}

impl Part {
    /// How a refusal names this part.
    pub fn describe(&self) -> String {
        match self {
            Part::Text(_) => "text".to_owned(),
            Part::Image(image) => match &image.source {
                ImageSource::Url { url } => format!("an image by URL ({url})"),
                ImageSource::Base64 { media_type, .. } => format!("a {media_type} image"),
            },
            Part::Document(doc) => describe_document(doc),
            Part::ToolCall(call) => format!("tool call {}", call.id),
            Part::ToolResult(result) => format!("the result of tool call {}", result.call_id),
            Part::Thinking { .. } => "reasoning".to_owned(),
            Part::RedactedThinking { .. } => "redacted thinking".to_owned(),
            Part::Untranslatable { what } => what.clone(),
            Part::Compaction { .. } => "a compaction item".to_owned(),
        }
    }
}

/// An image part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// The image's bytes or where to fetch them.
    pub source: ImageSource,
    /// OpenAI `detail` hint (`low`, `high`, `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Anthropic prompt-caching marker, carried opaquely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
}

/// Where an image's bytes are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline.
    Base64 {
        /// `image/png`, `image/jpeg`, …
        media_type: String,
        /// The bytes, base64 (no `data:` prefix).
        data: String,
    },
    /// By URL, for the provider to fetch.
    Url {
        /// The URL, as the client sent it.
        url: String,
    },
}

impl ImageSource {
    /// Parse an OpenAI `image_url.url`, which is either a URL or a `data:` URI.
    pub fn from_openai_url(url: &str) -> Self {
        if let Some(rest) = url.strip_prefix("data:")
            && let Some((meta, data)) = rest.split_once(',')
            && let Some(media_type) = meta.strip_suffix(";base64")
        {
            return ImageSource::Base64 {
                media_type: media_type.to_owned(),
                data: data.to_owned(),
            };
        }
        ImageSource::Url { url: url.to_owned() }
    }

    /// Render as an OpenAI `image_url.url` (URL, or `data:` URI for inline data).
    pub fn to_openai_url(&self) -> String {
        match self {
            ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            ImageSource::Url { url } => url.clone(),
        }
    }
}

/// A model's call of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id; the [`ToolResult`] answering it carries it as `call_id`.
    pub id: String,
    /// The tool's name (qualified `<namespace>__<name>` for a namespaced tool; see
    /// [`Tool::namespace`]).
    pub name: String,
    /// JSON text of the arguments object, as produced by the model.
    pub arguments: String,
    /// An opaque token the upstream that made the call needs back with it (Gemini's
    /// `thoughtSignature`). Clients never see it: the gateway keeps it, keyed by
    /// the call's id, and gives it back when the call returns in a history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// What a tool call returned, as the client sends it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// The tool's name when the format carries it (Gemini needs it; others do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Text, image and document parts.
    pub content: Vec<Part>,
    /// The tool failed (Anthropic `is_error`, a Gemini `error` response); false
    /// where the format cannot say.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result of one text part, answering the call `call_id`.
    pub fn from_text(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            name: None,
            content: vec![Part::Text(TextBlock::new(text))],
            is_error: false,
        }
    }

    /// All text of the result joined, for wires that take a plain string.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for part in &self.content {
            if let Part::Text(t) = part {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&t.text);
            }
        }
        out
    }
}

/// A function tool the client defines (and runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name calls use.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments object.
    pub parameters: Value,
    /// OpenAI `strict`: the arguments must follow the schema exactly; `None`: not said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// Anthropic prompt-caching marker, carried opaquely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<Value>,
    /// Set for a tool that takes free-form text instead of JSON arguments (OpenAI
    /// Responses `custom` tools, such as Codex's `apply_patch`): the tool's
    /// `format` as the client sent it (`null` when it sent none). `parameters` then
    /// describe one string argument, `input`, which is how every other wire sees
    /// the tool; a call's `arguments` are `{"input": "<the text>"}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub freeform: Option<Value>,
    /// The OpenAI Responses `namespace` the tool was declared in (Codex groups its
    /// sub-agent tools so). `name` is then qualified, `<namespace>__<name>`, which
    /// is how other wires see it; calls go back to a Responses client with the
    /// namespace and the inner name again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Tool {
    /// A function tool taking JSON arguments described by `parameters` (a JSON
    /// Schema object); every optional field unset.
    ///
    /// ```
    /// use switchyard_protocol::Tool;
    /// use serde_json::json;
    ///
    /// let weather = Tool::function("weather", json!({"type": "object", "properties": {"city": {"type": "string"}}}))
    ///     .with_description("Current weather in a city");
    /// assert_eq!(weather.name, "weather");
    /// assert_eq!(weather.strict, None);
    /// ```
    pub fn function(name: impl Into<String>, parameters: Value) -> Self {
        Self {
            name: name.into(),
            description: None,
            parameters,
            strict: None,
            cache_control: None,
            freeform: None,
            namespace: None,
        }
    }

    /// The same tool, described for the model.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Whether the model must call a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must not call any tool.
    None,
    /// The model must call some tool (OpenAI `required`, Anthropic `any`, Gemini `ANY`).
    Required,
    /// The model must call this tool.
    Tool {
        /// The [`Tool::name`].
        name: String,
    },
    /// The model must use this hosted tool (Responses `{"type": "web_search"}`, an
    /// Anthropic `{"type": "tool"}` naming a server tool): the request requires
    /// it, so it is never left out where it cannot run.
    Hosted {
        /// The [`HostedTool::path`] of one of [`Extras::hosted_tools`].
        path: String,
    },
}

/// What the client asked of the model's reasoning. `enabled: false` means the client
/// explicitly turned it off; `None` on the request means it said nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// Reasoning on (false: the client turned it off).
    pub enabled: bool,
    /// The level the client named, if it named one (an effort-based wire's form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// The token budget the client gave, if it gave one (a budget-based wire's form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

impl Reasoning {
    /// The budget to send to a budget-based wire: the client's, else its effort's
    /// ([`Effort::budget_tokens`]), else medium's.
    pub fn budget(&self) -> u64 {
        self.budget_tokens
            .or_else(|| self.effort.map(Effort::budget_tokens))
            .unwrap_or(Effort::Medium.budget_tokens())
    }

    /// The effort to send to an effort-based wire: the client's, else the one its
    /// budget matches ([`Effort::from_budget`]), else medium.
    pub fn effort(&self) -> Effort {
        self.effort
            .or_else(|| self.budget_tokens.map(Effort::from_budget))
            .unwrap_or(Effort::Medium)
    }
}

/// The shape the answer must take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text (what no format at all means too).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON following a schema (structured output).
    JsonSchema {
        /// The schema's name (OpenAI requires one).
        name: String,
        /// The JSON Schema.
        schema: Value,
        /// OpenAI `strict`: follow the schema exactly; `None`: not said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
        /// What the answer is, for the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
}

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The output ceiling was reached (or, on Anthropic, the context window).
    MaxTokens,
    /// A stop sequence matched ([`Response::stop_sequence`] says which, when known).
    StopSequence,
    /// The model called tools and waits for their results.
    ToolUse,
    /// The provider's safety filter cut the answer.
    ContentFilter,
    /// The model refused (Anthropic `refusal`).
    Refusal,
    /// Anthropic paused a long server-tool turn; sending the answer back continues it.
    PauseTurn,
    /// The provider ended the answer abnormally (Gemini `MALFORMED_FUNCTION_CALL`,
    /// `OTHER`, `LANGUAGE`).
    Error,
}

impl StopReason {
    /// OpenAI chat `finish_reason`.
    pub fn to_openai(self) -> &'static str {
        match self {
            StopReason::EndTurn | StopReason::StopSequence | StopReason::PauseTurn => "stop",
            StopReason::MaxTokens => "length",
            StopReason::ToolUse => "tool_calls",
            StopReason::ContentFilter | StopReason::Refusal => "content_filter",
            StopReason::Error => "stop",
        }
    }

    /// From an OpenAI Chat `finish_reason`; unknown values read as `EndTurn`.
    pub fn from_openai(s: &str) -> Self {
        match s {
            "length" => StopReason::MaxTokens,
            "tool_calls" | "function_call" => StopReason::ToolUse,
            "content_filter" => StopReason::ContentFilter,
            _ => StopReason::EndTurn,
        }
    }

    /// Anthropic `stop_reason`.
    pub fn to_anthropic(self) -> &'static str {
        match self {
            StopReason::EndTurn | StopReason::Error => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::ToolUse => "tool_use",
            StopReason::ContentFilter | StopReason::Refusal => "refusal",
            StopReason::PauseTurn => "pause_turn",
        }
    }

    /// From an Anthropic `stop_reason`; unknown values read as `EndTurn`.
    pub fn from_anthropic(s: &str) -> Self {
        match s {
            "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "tool_use" => StopReason::ToolUse,
            "refusal" => StopReason::Refusal,
            "pause_turn" => StopReason::PauseTurn,
            _ => StopReason::EndTurn,
        }
    }

    /// Gemini `finishReason` (tool use is inferred from the content, not the reason).
    pub fn from_gemini(s: &str) -> Self {
        match s {
            "MAX_TOKENS" => StopReason::MaxTokens,
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
            | "IMAGE_SAFETY" => StopReason::ContentFilter,
            "MALFORMED_FUNCTION_CALL" | "OTHER" | "LANGUAGE" => StopReason::Error,
            _ => StopReason::EndTurn,
        }
    }

    /// Gemini `finishReason`.
    pub fn to_gemini(self) -> &'static str {
        match self {
            StopReason::MaxTokens => "MAX_TOKENS",
            StopReason::ContentFilter | StopReason::Refusal => "SAFETY",
            StopReason::Error => "OTHER",
            _ => "STOP",
        }
    }
}

/// Token counts. See the module docs for the exact semantics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// The whole prompt, cache reads and writes included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The whole answer, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Prompt tokens read from the provider's cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache (part of `input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Reasoning tokens (part of `output_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// The usage of a wire that counts its input without the cached part
    /// (Anthropic, Bedrock): `uncached` input plus cache `read` and `write`
    /// make the whole prompt, counted once.
    pub fn with_cache_apart(
        uncached: Option<u64>,
        read: Option<u64>,
        write: Option<u64>,
        output: Option<u64>,
    ) -> Usage {
        Usage {
            input_tokens: uncached
                .map(|n| n.saturating_add(read.unwrap_or(0)).saturating_add(write.unwrap_or(0))),
            output_tokens: output,
            cache_read_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: None,
        }
    }

    /// Fold a later report into this one: fields the later report carries win.
    pub fn merge(&mut self, later: &Usage) {
        fn pick(a: &mut Option<u64>, b: Option<u64>) {
            if b.is_some() {
                *a = b;
            }
        }
        pick(&mut self.input_tokens, later.input_tokens);
        pick(&mut self.output_tokens, later.output_tokens);
        pick(&mut self.cache_read_tokens, later.cache_read_tokens);
        pick(&mut self.cache_write_tokens, later.cache_write_tokens);
        pick(&mut self.reasoning_tokens, later.reasoning_tokens);
    }

    /// Nothing was reported (every count `None`).
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }

    /// Input tokens that were neither read from nor written to a cache.
    pub fn uncached_input(&self) -> Option<u64> {
        self.input_tokens.map(|t| {
            t.saturating_sub(self.cache_read_tokens.unwrap_or(0))
                .saturating_sub(self.cache_write_tokens.unwrap_or(0))
        })
    }
}

/// A complete (non-streamed) generation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The provider's response id (or one the gateway minted when it had none).
    pub id: String,
    /// The model that answered, as the provider named it.
    pub model: String,
    /// The answer's parts, in order (text, thinking, tool calls, …).
    pub content: Vec<Part>,
    /// Why it stopped; `None` when the provider did not say.
    pub stop_reason: Option<StopReason>,
    /// The stop sequence that matched, when the provider says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// What the provider reported (counts it did not report are `None`).
    pub usage: Usage,
}

impl Response {
    /// The answer's text parts joined (no thinking, no tool calls); empty when
    /// it has none.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| if let Part::Text(t) = p { Some(t.text.as_str()) } else { None })
            .collect()
    }

    /// The tool calls the answer makes, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|p| if let Part::ToolCall(c) = p { Some(c) } else { None })
    }
}

/// The kind of a streamed content block, announced when it starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockKind {
    /// Text ([`Delta::Text`] follows).
    Text,
    /// Reasoning ([`Delta::Thinking`], then maybe [`Delta::Signature`]).
    Thinking,
    /// Redacted thinking: whole when it starts, no deltas.
    RedactedThinking {
        /// The encrypted thinking, byte-exact.
        data: String,
    },
    /// A tool call ([`Delta::ToolArguments`] follow).
    ToolCall {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A compaction ([`Part::Compaction`]): whole when it starts, no deltas.
    Compaction {
        /// The summary, sealed.
        sealed: String,
    },
}

/// A piece of the open block's content; appended to what came before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Delta {
    /// More text of a text block.
    Text {
        /// The fragment.
        text: String,
    },
    /// More reasoning text of a thinking block.
    Thinking {
        /// The fragment.
        text: String,
    },
    /// The signature of a thinking block (Anthropic: once, at the end of the block)
    /// or of a tool call (Gemini's `thoughtSignature`).
    Signature {
        /// The signature, or a fragment of it.
        signature: String,
    },
    /// A fragment of a tool call's JSON arguments.
    ToolArguments {
        /// JSON text; the fragments together are the arguments object.
        json: String,
    },
}

/// One canonical stream event. Upstream decoders produce these; client encoders
/// consume them.
///
/// Invariants every decoder upholds, so encoders can stay simple:
/// - `Start` comes first, exactly once.
/// - Blocks are sequential: `BlockStart{index}`, its deltas, `BlockStop{index}`, then
///   the next block. Indices count up from 0 without gaps.
/// - `Usage` may come any number of times; later reports are merged over earlier ones.
/// - `Stop` comes once, after the last block; `Usage` may still follow it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum StreamEvent {
    /// The answer begins.
    Start {
        /// The provider's response id.
        id: String,
        /// The model that answers, as the provider names it.
        model: String,
    },
    /// Block `index` begins.
    BlockStart {
        /// Its position in the answer's content, from 0.
        index: usize,
        /// What it holds.
        kind: BlockKind,
    },
    /// More content for the open block `index`.
    Delta {
        /// The open block.
        index: usize,
        /// The content.
        delta: Delta,
    },
    /// Block `index` is complete.
    BlockStop {
        /// The block that closed.
        index: usize,
    },
    /// Token counts so far; merge each over the last ([`Usage::merge`]).
    Usage {
        /// The counts this report carries.
        usage: Usage,
    },
    /// The answer is complete.
    Stop {
        /// Why it stopped.
        reason: StopReason,
        /// The stop sequence that matched, when the provider says.
        stop_sequence: Option<String>,
    },
}

impl StreamEvent {
    /// True for events that carry content the client will see (the commit point: a
    /// stream can fail over invisibly until the first of these).
    pub fn is_content(&self) -> bool {
        matches!(self, StreamEvent::BlockStart { .. } | StreamEvent::Delta { .. })
    }
}

#[cfg(test)]
mod tests {
    use crate::{ModelTraits, ReasoningControl::*, Wire};
    use proptest::prelude::*;

    proptest! {
        /// A document crosses every wire that takes its form and comes back as it
        /// went (its data, type and URL; its name where the wire has a field for it);
        /// a form a wire cannot take is refused, naming it.
        #[test]
        fn documents_cross_every_wire_that_takes_them(
            data in "[A-Za-z0-9+/]{4,40}={0,2}",
            url in "https://[a-z]{1,8}\\.test/[a-z]{1,8}\\.pdf",
            by_url in any::<bool>(),
            filename in proptest::option::of("[a-z]{1,8}\\.pdf"),
        ) {
            use crate::{Document, DocumentSource, Message, Part, Request, Role, TextBlock};
            let source = if by_url {
                DocumentSource::Url { url: url.clone(), media_type: None }
            } else {
                DocumentSource::Base64 { media_type: "application/pdf".into(), data }
            };
            let doc = Document { filename: filename.clone(), ..Document::new(source.clone()) };
            let req = Request {
                model: "m".into(),
                messages: vec![Message {
                    role: Role::User,
                    content: vec![Part::Text(TextBlock::new("read")), Part::Document(doc)],
                }],
                ..Request::default()
            };
            for wire in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
                let out = wire.encode_request(&req);
                if by_url && wire == Wire::OpenAiChat {
                    prop_assert!(matches!(&out, Err(crate::ProtocolError::Unsupported(m)) if m.contains(&url)));
                    continue;
                }
                let body = out.unwrap().to_string();
                let back = match wire {
                    Wire::OpenAiChat => crate::openai_chat::parse_request(body.as_bytes()),
                    Wire::Anthropic => crate::anthropic::parse_request(body.as_bytes()),
                    Wire::Gemini => crate::gemini::parse_request(body.as_bytes()),
                    Wire::Bedrock
                    | Wire::BedrockAnthropic
                    | Wire::VertexAnthropic
                    | Wire::VertexGemini
                    | Wire::VertexOpenAi
                    | Wire::AzureOpenAi
                    | Wire::AzureOpenAiV1
                    | Wire::Responses
                    | Wire::AzureOpenAiResponses
                    | Wire::Fal => {
                        unreachable!("not in the list: see their folders")
                    }
                }
                .unwrap();
                let docs: Vec<&Document> = back.messages[0]
                    .content
                    .iter()
                    .filter_map(|p| if let Part::Document(d) = p { Some(d) } else { None })
                    .collect();
                prop_assert_eq!(docs.len(), 1, "{:?}: {}", wire, body);
                let got = docs[0];
                match (&got.source, &source) {
                    (DocumentSource::Url { url: a, .. }, DocumentSource::Url { url: b, .. }) => {
                        prop_assert_eq!(a, b)
                    }
                    (a, b) => prop_assert_eq!(a, b),
                }
                match wire {
                    Wire::OpenAiChat => prop_assert_eq!(
                        got.filename.clone(),
                        Some(filename.clone().unwrap_or_else(|| "document.pdf".into()))
                    ),
                    Wire::Anthropic => prop_assert_eq!(&got.title, &filename),
                    Wire::Gemini
                    | Wire::Bedrock
                    | Wire::BedrockAnthropic
                    | Wire::VertexAnthropic
                    | Wire::VertexGemini
                    | Wire::VertexOpenAi
                    | Wire::AzureOpenAi
                    | Wire::AzureOpenAiV1
                    | Wire::Responses
                    | Wire::AzureOpenAiResponses
                    | Wire::Fal => {}
                }
            }
        }
    }

    #[test]
    fn model_traits_follow_the_model_generation() {
        // (wire, model, reasoning, sampling, one_sampler)
        let cases = [
            (Wire::Anthropic, "claude-opus-4-7", Effort, false, true),
            (Wire::Anthropic, "claude-fable-5-2", Effort, false, true),
            (Wire::Anthropic, "claude-sonnet-4-6", Effort, true, true),
            (Wire::Anthropic, "us.anthropic.claude-sonnet-4-6-v1:0", Effort, true, true),
            (Wire::Anthropic, "claude-opus-4-5-20251101", Budget, true, true),
            (Wire::Anthropic, "claude-opus-4-5@20251101", Budget, true, true),
            (Wire::Anthropic, "anthropic.claude-sonnet-4-5-20250929-v1:0", Budget, true, true),
            (Wire::Anthropic, "claude-sonnet-4-5@20250929", Budget, true, true),
            (Wire::Anthropic, "claude-haiku-4-5", Budget, true, true),
            (Wire::Anthropic, "claude-opus-4-1-20250805", Budget, true, true),
            (Wire::Anthropic, "claude-opus-4-1@20250805", Budget, true, true),
            (Wire::Anthropic, "claude-opus-4-20250514", Budget, true, false),
            (Wire::Anthropic, "claude-sonnet-4-0", Budget, true, false),
            (Wire::Anthropic, "anthropic.claude-sonnet-4-20250514-v1:0", Budget, true, false),
            (Wire::Anthropic, "claude-3-7-sonnet-latest", Budget, true, false),
            (Wire::Anthropic, "my-finetune", Budget, true, false),
            (Wire::Gemini, "gemini-2.5-flash", Budget, true, false),
            (Wire::Gemini, "gemini-3-pro-preview", Effort, true, false),
            (Wire::Gemini, "models/gemini-3.1-pro-preview", Effort, true, false),
            (Wire::Gemini, "gemini-4-neon", Effort, true, false),
            (Wire::Gemini, "gemini-exp-1206", Budget, true, false),
            (Wire::OpenAiChat, "gpt-4o-mini", Effort, true, false),
            // The rule is Anthropic's API's: a Claude id behind an OpenAI-compatible
            // endpoint is that endpoint's business.
            (Wire::OpenAiChat, "claude-sonnet-4-5", Effort, true, false),
        ];
        for (wire, model, reasoning, sampling, one_sampler) in cases {
            let family = crate::Family::of(model);
            let want =
                ModelTraits { family, reasoning, sampling, one_sampler, takes_max_tokens: true };
            assert_eq!(ModelTraits::infer(wire, model), want, "{model}");
        }
    }

    #[test]
    fn efforts_above_high_survive_the_wires_that_have_them() {
        use crate::{Effort, Message, Reasoning, Request, Role};
        for (name, effort) in [("xhigh", Effort::XHigh), ("max", Effort::Max)] {
            assert_eq!(Effort::parse(name), Some(effort));
            assert_eq!(effort.as_str(), name);
            assert_eq!(serde_json::to_value(effort).unwrap(), name, "serialized as named");
            assert_eq!(Effort::from_budget(effort.budget_tokens()), Effort::High);
            let req = Request {
                messages: vec![Message::text(Role::User, "hi")],
                reasoning: Some(Reasoning {
                    enabled: true,
                    effort: Some(effort),
                    budget_tokens: None,
                }),
                ..Request::default()
            };
            let openai = Wire::OpenAiChat.encode_request(&req).unwrap();
            assert_eq!(openai["reasoning_effort"], name);
            let adaptive = ModelTraits {
                family: crate::Family::Other,
                reasoning: Effort,
                sampling: true,
                one_sampler: false,
                takes_max_tokens: true,
            };
            let anthropic = Wire::Anthropic.encode_request_for(&req, adaptive).unwrap();
            assert_eq!(anthropic["output_config"]["effort"], name);
            let gemini = Wire::Gemini.encode_request_for(&req, adaptive).unwrap();
            assert_eq!(gemini["generationConfig"]["thinkingConfig"]["thinkingLevel"], "high");
        }
        for effort in [Effort::Low, Effort::Medium, Effort::High] {
            assert_eq!(Effort::from_budget(effort.budget_tokens()), effort);
        }
        assert_eq!(Effort::from_budget(Effort::Minimal.budget_tokens()), Effort::Low);
    }

    #[test]
    fn openai_reasoning_models_take_only_max_completion_tokens() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5.1",
            "gpt-6.2-sol",
            "openai/gpt-5-mini",
        ] {
            assert!(!ModelTraits::infer(Wire::OpenAiChat, model).takes_max_tokens, "{model}");
        }
        for model in
            ["gpt-4o", "gpt-4.1-mini", "gpt-oss-120b", "llama-3.3-70b", "omni-moderation", "o"]
        {
            assert!(ModelTraits::infer(Wire::OpenAiChat, model).takes_max_tokens, "{model}");
        }
        assert!(ModelTraits::infer(Wire::Anthropic, "o1").takes_max_tokens);
    }
}
