//! Anthropic Messages API (`POST /v1/messages`), in both directions, streaming and not.
//!
//! - Ingress: what Claude Code and the Anthropic SDKs send to the gateway
//!   ([`parse_request`]), and what they expect back ([`encode_response`], [`Encoder`]).
//! - Upstream: what we send to `api.anthropic.com` ([`encode_request`]) and what it
//!   answers ([`parse_response`], [`Decoder`], [`parse_error`]).
//!
//! Content blocks the canonical model has no place for (`server_tool_use`,
//! `web_search_tool_result`, `search_result`, documents with a `text`, `content` or
//! `file` source, images from the Files API, …) are parsed as
//! [`Part::Untranslatable`], by name: when client and upstream both speak Anthropic,
//! the gateway's same-format fast path forwards the original body, so they go as they
//! came; a translation to another wire refuses them by name. Server tools such as
//! `web_search_*` / `bash_*` (no schema) are skipped: Anthropic runs them itself, and
//! no other wire can.
//!
//! Anthropic refuses text blocks that are empty or only whitespace, and messages left
//! without content: such blocks are dropped from the history on the way to it (see
//! [`drop_blank_text`]).
//!
//! Usage: Anthropic reports `input_tokens` *without* cache reads and writes; the
//! canonical model counts the total (see [`crate::model`]). Counts are added up on the
//! way in and subtracted on the way out.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{
    BlockKind, Delta, Document, DocumentSource, Effort, ErrorBody, FieldEdit, Image, ImageSource,
    Message, ModelTraits, Part, ProtocolError, Reasoning, ReasoningControl, Request, Response,
    ResponseFormat, Role, SseEvent, StopReason, StreamDecoder, StreamEncoder, StreamEvent,
    TextBlock, Tool, ToolCall, ToolChoice, ToolResult, Usage, sse, util,
};

/// `max_tokens` is mandatory on the Anthropic wire; used when the client gave none.
const DEFAULT_MAX_TOKENS: u64 = 4096;
/// The smallest thinking budget the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;
/// With thinking on, the API only accepts `top_p` in `[0.95, 1]`.
const MIN_TOP_P_WITH_THINKING: f64 = 0.95;
/// Name given to a JSON-schema response format (Anthropic's has no name).
const SCHEMA_NAME: &str = "response";
/// Appended to `system` for [`ResponseFormat::JsonObject`], which has no native form.
const JSON_OBJECT_INSTRUCTION: &str = "Respond with a single valid JSON object and nothing \
else: no text before or after it, and no Markdown code fence around it.";

// ---------------------------------------------------------------------------------
// Wire types (what we read; what we write is built with `json!`)
// ---------------------------------------------------------------------------------

/// A content block as it appears in requests, responses and `content_block_start`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InBlock {
    Text {
        text: String,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Image {
        source: Value,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Document {
        source: Value,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        context: Option<String>,
        #[serde(default)]
        citations: Option<Value>,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        tool_use_id: String,
        /// A string, or an array of text/image blocks.
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
        #[serde(default)]
        cache_control: Option<Value>,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    /// Server-tool blocks, search results, …: untranslatable (see module docs).
    #[serde(other)]
    Other,
}

/// The block types [`InBlock`] reads; any other is named in its refusal.
const KNOWN_BLOCKS: [&str; 7] =
    ["text", "image", "document", "tool_use", "tool_result", "thinking", "redacted_thinking"];

/// An image's or a document's `source`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum InSource {
    Base64 {
        media_type: String,
        data: String,
    },
    Url {
        url: String,
    },
    /// Files API (`file`), a document's `text` and `content`, future sources: the
    /// canonical model cannot carry them.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct InMessage {
    role: String,
    content: Value,
}

#[derive(Debug, Deserialize)]
struct InSystemBlock {
    text: String,
    #[serde(default)]
    cache_control: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct InTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    input_schema: Value,
    #[serde(default)]
    strict: Option<bool>,
    #[serde(default)]
    cache_control: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct InToolChoice {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    disable_parallel_tool_use: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct InThinking {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    budget_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
struct InOutputConfig {
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    format: Option<InOutputFormat>,
}

/// `output_config.format` (GA) and the older beta `output_format`.
#[derive(Debug, Deserialize)]
struct InOutputFormat {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    schema: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct InMetadata {
    #[serde(default)]
    user_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct InResponse {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    content: Vec<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_sequence: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// Anthropic's usage object: `input_tokens` excludes cache reads and writes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Fields the later report carries win (stream reports are cumulative).
    fn merge(&mut self, later: &WireUsage) {
        fn pick(a: &mut Option<u64>, b: Option<u64>) {
            if b.is_some() {
                *a = b;
            }
        }
        pick(&mut self.input_tokens, later.input_tokens);
        pick(&mut self.output_tokens, later.output_tokens);
        pick(&mut self.cache_read_input_tokens, later.cache_read_input_tokens);
        pick(&mut self.cache_creation_input_tokens, later.cache_creation_input_tokens);
    }

    fn to_canonical(self) -> Usage {
        let read = self.cache_read_input_tokens;
        let write = self.cache_creation_input_tokens;
        Usage {
            input_tokens: self.input_tokens.map(|uncached| {
                uncached.saturating_add(read.unwrap_or(0)).saturating_add(write.unwrap_or(0))
            }),
            output_tokens: self.output_tokens,
            cache_read_tokens: read,
            cache_write_tokens: write,
            reasoning_tokens: None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// One streamed event, tagged by its `type` (which always equals the SSE event name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: WireError,
    },
    /// Event types added after this was written.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct StartMessage {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Default, Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_sequence: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// `citations_delta` and future delta types.
    #[serde(other)]
    Other,
}

// ---------------------------------------------------------------------------------
// Shared parsing helpers
// ---------------------------------------------------------------------------------

/// Remove `key` from a request object and deserialize it; absent or `null` is `None`.
/// Errors name the field.
fn take<T: DeserializeOwned>(
    map: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<T>, ProtocolError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| ProtocolError::body(format!("{key}: {e}"))),
    }
}

/// Deserialize one nested value, prefixing errors with its path (`messages[2].content[0]`).
fn at<T: DeserializeOwned>(value: Value, path: &str) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("{path}: {e}"))
}

/// An empty signature is no signature (Anthropic never sends one; clients echo `""`
/// back for thinking we produced from a non-Anthropic upstream).
fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

/// The type of a block (or source) that is not one of `known`, for its refusal;
/// `None` for a known one. Read before the value is moved into its parse.
fn unknown_type(value: &Value, known: &[&str]) -> Option<String> {
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("(none)");
    (!known.contains(&kind)).then(|| kind.to_owned())
}

/// A `source`: the known forms, or (`Err`) how a refusal names the one it is
/// instead (a Files API source with its file's id).
fn source(value: Value, path: &str) -> Result<Result<InSource, String>, String> {
    if let Some(kind) = unknown_type(&value, &["base64", "url"]) {
        return Ok(Err(match value.get("file_id").and_then(Value::as_str) {
            Some(id) => format!("a `{kind}` source ({id})"),
            None => format!("a `{kind}` source"),
        }));
    }
    at::<InSource>(value, path).map(Ok)
}

fn image_part(
    source_value: Value,
    cache_control: Option<Value>,
    path: &str,
) -> Result<Part, String> {
    let source = match source(source_value, &format!("{path}.source"))? {
        Ok(InSource::Base64 { media_type, data }) => ImageSource::Base64 { media_type, data },
        Ok(InSource::Url { url }) => ImageSource::Url { url },
        Ok(InSource::Other) => return Ok(untranslatable(path, "an image with an unknown source")),
        Err(what) => return Ok(untranslatable(path, &format!("an image with {what}"))),
    };
    Ok(Part::Image(Image { source, detail: None, cache_control }))
}

fn untranslatable(path: &str, what: &str) -> Part {
    Part::Untranslatable { what: format!("{path}: {what}") }
}

fn document_part(
    source_value: Value,
    title: Option<String>,
    context: Option<String>,
    citations: Option<Value>,
    cache_control: Option<Value>,
    path: &str,
) -> Result<Part, String> {
    let source = match source(source_value, &format!("{path}.source"))? {
        Ok(InSource::Base64 { media_type, data }) => DocumentSource::Base64 { media_type, data },
        Ok(InSource::Url { url }) => DocumentSource::Url { url, media_type: None },
        Ok(InSource::Other) => {
            return Ok(untranslatable(path, "a document with an unknown source"));
        }
        Err(what) => return Ok(untranslatable(path, &format!("a document with {what}"))),
    };
    Ok(Part::Document(Document {
        source,
        filename: None,
        title,
        context,
        citations,
        cache_control,
    }))
}

/// One content block of a request as a canonical part. `unknown` is the block's
/// type when [`InBlock`] does not read it.
fn block_to_part(block: InBlock, unknown: Option<String>, path: &str) -> Result<Part, String> {
    Ok(match block {
        InBlock::Text { text, cache_control } => Part::Text(TextBlock { text, cache_control }),
        InBlock::Image { source, cache_control } => image_part(source, cache_control, path)?,
        InBlock::Document { source, title, context, citations, cache_control } => {
            document_part(source, title, context, citations, cache_control, path)?
        }
        InBlock::ToolUse { id, name, input } => {
            let arguments = match input {
                Value::Null => "{}".to_owned(),
                input => util::value_to_arguments(&input),
            };
            Part::ToolCall(ToolCall { id, name, arguments, signature: None })
        }
        InBlock::ToolResult { tool_use_id, content, is_error, cache_control } => {
            let mut content = tool_result_content(content, &format!("{path}.content"))?;
            // The canonical tool result has no cache marker of its own. Moving it onto
            // the result's last block keeps the breakpoint where the client put it
            // (the cached prefix ends at the same place, give or take the wrapper).
            if let Some(cc) = cache_control {
                match content.last_mut() {
                    Some(Part::Text(t)) if t.cache_control.is_none() => t.cache_control = Some(cc),
                    Some(Part::Image(i)) if i.cache_control.is_none() => i.cache_control = Some(cc),
                    Some(Part::Document(d)) if d.cache_control.is_none() => {
                        d.cache_control = Some(cc)
                    }
                    _ => {}
                }
            }
            Part::ToolResult(ToolResult {
                call_id: tool_use_id,
                name: None,
                content,
                is_error: is_error.unwrap_or(false),
            })
        }
        InBlock::Thinking { thinking, signature } => {
            Part::Thinking { text: thinking, signature: non_empty(signature) }
        }
        InBlock::RedactedThinking { data } => Part::RedactedThinking { data },
        InBlock::Other => {
            let kind = unknown.unwrap_or_else(|| "(unknown)".to_owned());
            untranslatable(path, &format!("a `{kind}` block"))
        }
    })
}

/// `tool_result.content`: absent, a string, or an array of text, image and
/// document blocks (search results and the like are untranslatable).
fn tool_result_content(content: Value, path: &str) -> Result<Vec<Part>, String> {
    match content {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![Part::Text(TextBlock::new(s))]),
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (j, item) in items.into_iter().enumerate() {
                let item_path = format!("{path}[{j}]");
                let unknown = unknown_type(&item, &KNOWN_BLOCKS);
                parts.push(match at::<InBlock>(item, &item_path)? {
                    block @ (InBlock::Text { .. }
                    | InBlock::Image { .. }
                    | InBlock::Document { .. }
                    | InBlock::Other) => block_to_part(block, unknown, &item_path)?,
                    _ => untranslatable(&item_path, "a block a tool result cannot hold"),
                });
            }
            Ok(parts)
        }
        _ => Err(format!("{path}: expected a string or an array of content blocks")),
    }
}

/// Message content: a string or an array of blocks.
fn message_content(content: Value, path: &str) -> Result<Vec<Part>, String> {
    match content {
        Value::String(s) => Ok(vec![Part::Text(TextBlock::new(s))]),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for (j, item) in items.into_iter().enumerate() {
                let item_path = format!("{path}[{j}]");
                let unknown = unknown_type(&item, &KNOWN_BLOCKS);
                let block = at::<InBlock>(item, &item_path)?;
                parts.push(block_to_part(block, unknown, &item_path)?);
            }
            Ok(parts)
        }
        _ => Err(format!("{path}: expected a string or an array of content blocks")),
    }
}

// ---------------------------------------------------------------------------------
// Request in: client body → canonical
// ---------------------------------------------------------------------------------

/// Parse a Messages API request body (as Claude Code or an Anthropic SDK sends it).
pub fn parse_request(body: &[u8]) -> Result<Request, ProtocolError> {
    let mut map = util::parse_object(body)?;

    let model: String =
        take(&mut map, "model")?.ok_or_else(|| ProtocolError::body("model: missing field"))?;
    let raw_messages: Vec<Value> = take(&mut map, "messages")?
        .ok_or_else(|| ProtocolError::body("messages: missing field"))?;

    let system = match take::<Value>(&mut map, "system")? {
        None => Vec::new(),
        Some(value) => parse_system(value).map_err(ProtocolError::InvalidBody)?,
    };

    let mut messages = Vec::with_capacity(raw_messages.len());
    for (i, raw) in raw_messages.into_iter().enumerate() {
        let path = format!("messages[{i}]");
        let msg: InMessage = at(raw, &path).map_err(ProtocolError::InvalidBody)?;
        let role = match msg.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            // Claude Code sends mid-conversation system messages under a beta.
            "system" => Role::System,
            other => {
                return Err(ProtocolError::body(format!("{path}.role: unknown role `{other}`")));
            }
        };
        let content = message_content(msg.content, &format!("{path}.content"))
            .map_err(ProtocolError::InvalidBody)?;
        messages.push(Message { role, content });
    }

    let mut tools = Vec::new();
    for (i, raw) in
        take::<Vec<Value>>(&mut map, "tools")?.unwrap_or_default().into_iter().enumerate()
    {
        // Server tools (`web_search_*`, `bash_*`, `text_editor_*`, …) have no schema:
        // Anthropic runs them itself, and no other wire can.
        if raw.get("input_schema").is_none_or(Value::is_null) {
            continue;
        }
        let tool: InTool = at(raw, &format!("tools[{i}]")).map_err(ProtocolError::InvalidBody)?;
        tools.push(Tool {
            name: tool.name,
            description: tool.description,
            parameters: tool.input_schema,
            strict: tool.strict,
            cache_control: tool.cache_control,
            freeform: None,
            namespace: None,
        });
    }

    let mut parallel_tool_calls = None;
    let tool_choice = match take::<InToolChoice>(&mut map, "tool_choice")? {
        None => None,
        Some(choice) => {
            if let Some(disable) = choice.disable_parallel_tool_use {
                parallel_tool_calls = Some(!disable);
            }
            Some(match choice.kind.as_str() {
                "auto" => ToolChoice::Auto,
                "any" => ToolChoice::Required,
                "none" => ToolChoice::None,
                "tool" => ToolChoice::Tool {
                    name: choice
                        .name
                        .ok_or_else(|| ProtocolError::body("tool_choice.name: missing field"))?,
                },
                other => {
                    return Err(ProtocolError::body(format!(
                        "tool_choice.type: unknown type `{other}`"
                    )));
                }
            })
        }
    };

    let output_config: InOutputConfig = take(&mut map, "output_config")?.unwrap_or_default();
    let effort = output_config.effort.as_deref().and_then(Effort::parse);
    let reasoning = match take::<InThinking>(&mut map, "thinking")? {
        Some(t) if t.kind == "enabled" => {
            Some(Reasoning { enabled: true, effort, budget_tokens: t.budget_tokens })
        }
        Some(t) if t.kind == "adaptive" => {
            Some(Reasoning { enabled: true, effort, budget_tokens: None })
        }
        Some(t) if t.kind == "disabled" => {
            Some(Reasoning { enabled: false, effort, budget_tokens: None })
        }
        // No (or an unknown) thinking setting: effort alone still asks for a level of
        // reasoning spend, which is what other wires' effort settings mean.
        _ => effort.map(|effort| Reasoning {
            enabled: true,
            effort: Some(effort),
            budget_tokens: None,
        }),
    };

    // GA `output_config.format` wins over the older beta `output_format`.
    let beta_format: Option<InOutputFormat> = take(&mut map, "output_format")?;
    let (format, format_path) = match output_config.format {
        Some(f) => (Some(f), "output_config.format"),
        None => (beta_format, "output_format"),
    };
    let response_format = match format {
        Some(f) if f.kind == "json_schema" => Some(ResponseFormat::JsonSchema {
            name: SCHEMA_NAME.to_owned(),
            schema: f.schema.ok_or_else(|| {
                ProtocolError::body(format!("{format_path}.schema: missing field"))
            })?,
            strict: None,
            description: None,
        }),
        _ => None,
    };

    let metadata: InMetadata = take(&mut map, "metadata")?.unwrap_or_default();

    Ok(Request {
        model,
        system,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        max_tokens: take(&mut map, "max_tokens")?,
        temperature: take(&mut map, "temperature")?,
        top_p: take(&mut map, "top_p")?,
        top_k: take(&mut map, "top_k")?,
        stop: take(&mut map, "stop_sequences")?.unwrap_or_default(),
        stream: take(&mut map, "stream")?.unwrap_or(false),
        reasoning,
        response_format,
        user: metadata.user_id,
        metadata: None,
        stream_usage: false,
    })
}

/// `system`: a string or an array of text blocks.
fn parse_system(value: Value) -> Result<Vec<TextBlock>, String> {
    match value {
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![TextBlock::new(s)]),
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| {
                let block: InSystemBlock = at(item, &format!("system[{i}]"))?;
                Ok(TextBlock { text: block.text, cache_control: block.cache_control })
            })
            .collect(),
        _ => Err("system: expected a string or an array of text blocks".to_owned()),
    }
}

// ---------------------------------------------------------------------------------
// Request out: canonical → body for api.anthropic.com
// ---------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------
// What the API refuses in a history: foreign tool ids, tool loops without thinking
// ---------------------------------------------------------------------------------

/// The longest tool id the API takes.
const MAX_TOOL_ID: usize = 64;

fn is_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TOOL_ID
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool-call id as the API takes it (`^[a-zA-Z0-9_-]+$`, at most 64 characters).
/// Other providers' and agents' ids (`functions.get_weather:0`, long ones) are mapped
/// deterministically, so a call and its result, translated apart, still pair: the
/// id's own characters where allowed, `_` elsewhere, cut to 47, then `_` and a hash
/// of the whole id (so two ids never meet in one). Only history goes upstream this
/// way: the ids in answers are the upstream's, as the client gets them.
pub fn tool_id(id: &str) -> std::borrow::Cow<'_, str> {
    if is_tool_id(id) {
        return std::borrow::Cow::Borrowed(id);
    }
    let mut out: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(47)
        .collect();
    out.push_str(&format!("_{:016x}", util::fnv1a(id.as_bytes())));
    std::borrow::Cow::Owned(out)
}

/// Whether any tool call or result in the history has an id the API refuses.
fn has_foreign_tool_ids(req: &Request) -> bool {
    req.messages.iter().flat_map(|m| &m.content).any(|p| match p {
        Part::ToolCall(c) => !is_tool_id(&c.id),
        Part::ToolResult(r) => !is_tool_id(&r.call_id),
        _ => false,
    })
}

/// Whether a request with thinking on must be sent without it. With thinking on,
/// the API requires the assistant turn a tool loop continues (the last one, when
/// the last user turn carries tool results) to open with a signed thinking or
/// redacted thinking block *of its own*; a turn that came from another family (an
/// OpenAI reasoning model, Gemini) or lost its thinking has none, and the request
/// would be refused (`Expected thinking or redacted_thinking, but found tool_use`).
/// Anthropic's rule for that case is to continue the loop without extended
/// thinking, which is what the gateway does (and says so in the record).
pub fn continues_without_thinking(req: &Request) -> bool {
    if !req.reasoning.as_ref().is_some_and(|r| r.enabled) {
        return false;
    }
    // The turns as the API sees them: consecutive messages of one role merge, and
    // mid-conversation system messages are user turns.
    let role = |m: &Message| if m.role == Role::Assistant { Role::Assistant } else { Role::User };
    let Some(last) = req.messages.last() else { return false };
    if role(last) != Role::User {
        return false;
    }
    let tail_user = req.messages.iter().rev().take_while(|m| role(m) == Role::User);
    if !tail_user.flat_map(|m| &m.content).any(|p| matches!(p, Part::ToolResult(_))) {
        return false;
    }
    let users = req.messages.iter().rev().take_while(|m| role(m) == Role::User).count();
    let assistant: Vec<&Part> = req
        .messages
        .iter()
        .rev()
        .skip(users)
        .take_while(|m| role(m) == Role::Assistant)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .flat_map(|m| &m.content)
        .collect();
    if !assistant.iter().any(|p| matches!(p, Part::ToolCall(_))) {
        return false; // not a tool loop the API would judge so
    }
    // The first block the turn will have once encoded (empty text and unsigned
    // thinking are dropped).
    let first = assistant.into_iter().find(|p| match p {
        Part::Text(t) => !t.text.is_empty(),
        Part::Thinking { signature, .. } => signature.as_deref().is_some_and(|s| !s.is_empty()),
        _ => true,
    });
    !matches!(first, Some(Part::Thinking { .. } | Part::RedactedThinking { .. }))
}

/// `messages` (a client's own Anthropic body) with every tool id mapped by [`tool_id`].
fn map_tool_ids(messages: &Value) -> Value {
    let mut messages = messages.clone();
    for m in messages.as_array_mut().into_iter().flatten() {
        for b in m.get_mut("content").and_then(Value::as_array_mut).into_iter().flatten() {
            let field = match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => "id",
                Some("tool_result") => "tool_use_id",
                _ => continue,
            };
            if let Some(id) = b.get(field).and_then(Value::as_str)
                && let std::borrow::Cow::Owned(mapped) = tool_id(id)
                && let Some(map) = b.as_object_mut()
            {
                map.insert(field.into(), Value::String(mapped));
            }
        }
    }
    messages
}

/// See [`crate::Wire::adapt_native`]. An Anthropic client's thinking is rewritten when
/// its form is not the target's (a fallback from Claude 4.7 to 4.5, or a client that
/// assumes an older model): `enabled` + budget becomes `adaptive` + the nearest
/// effort, `adaptive` becomes `enabled` with the effort's budget (and `max_tokens`
/// raised above it). A tool loop whose continued turn has no thinking of its own
/// goes without thinking ([`continues_without_thinking`]); tool ids the API refuses
/// are mapped ([`tool_id`]); blank text blocks leave the history
/// ([`drop_blank_text`]).
pub fn adapt_native(
    body: &Map<String, Value>,
    req: &Request,
    traits: ModelTraits,
) -> Vec<FieldEdit> {
    let mut edits = Vec::new();
    let thinking = body.get("thinking");
    let kind = thinking.and_then(|t| t.get("type")).and_then(Value::as_str);
    let mut output_config = body.get("output_config").and_then(Value::as_object).cloned();
    match (kind, traits.reasoning) {
        _ if continues_without_thinking(req) => edits.push(("thinking", None)),
        (Some("enabled"), ReasoningControl::Effort) => {
            let budget = thinking.and_then(|t| t.get("budget_tokens")).and_then(Value::as_u64);
            edits.push(("thinking", Some(json!({"type": "adaptive"}))));
            let config = output_config.get_or_insert_with(Map::new);
            if !config.contains_key("effort") {
                let effort = budget.map_or(Effort::Medium, Effort::from_budget);
                config.insert("effort".into(), json!(anthropic_effort(effort)));
            }
            edits.push(("output_config", output_config.map(Value::Object)));
        }
        (Some("adaptive"), ReasoningControl::Budget) => {
            let effort = output_config
                .as_mut()
                .and_then(|c| c.remove("effort"))
                .and_then(|e| e.as_str().and_then(Effort::parse));
            let asked = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
            let (budget, max_tokens) =
                budget_within(effort.unwrap_or(Effort::Medium).budget_tokens(), asked);
            edits.push(("thinking", Some(json!({"type": "enabled", "budget_tokens": budget}))));
            if body.get("output_config").is_some() {
                let rest = output_config.filter(|c| !c.is_empty()).map(Value::Object);
                edits.push(("output_config", rest));
            }
            if max_tokens != asked {
                edits.push(("max_tokens", Some(json!(max_tokens))));
            }
        }
        _ => {}
    }
    if !traits.sampling {
        for field in ["temperature", "top_p", "top_k"] {
            if body.contains_key(field) {
                edits.push((field, None));
            }
        }
    }
    // The history: foreign tool ids mapped, then blank text dropped; one edit.
    let mapped =
        has_foreign_tool_ids(req).then(|| body.get("messages").map(map_tool_ids)).flatten();
    let messages = mapped.as_ref().or(body.get("messages"));
    let cleaned = messages.and_then(Value::as_array).and_then(|m| drop_blank_text(m));
    if let Some(messages) = cleaned.map(Value::Array).or(mapped) {
        edits.push(("messages", Some(messages)));
    }
    edits
}

/// A client's own `messages` without the blank text blocks Anthropic refuses
/// (`text content blocks must contain non-whitespace text`), and without the
/// messages left empty by that (Anthropic joins the turns that then meet). A final
/// message of nothing else is kept: dropping it would ask another question (or
/// none), so the upstream answers it. `None` when nothing needs dropping.
///
/// Such blocks reach a client's history from answers of other providers (a model
/// that answered only a newline), so the client is not at fault for sending them.
pub fn drop_blank_text(messages: &[Value]) -> Option<Vec<Value>> {
    let blank = |content: &Value| match content {
        Value::String(text) => is_blank(text),
        _ => false,
    };
    let has_blank = |m: &Value| match m.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().any(is_blank_block),
        Some(content) => blank(content),
        None => false,
    };
    if !messages.iter().any(has_blank) {
        return None;
    }
    let last = messages.len().saturating_sub(1);
    let mut out = Vec::with_capacity(messages.len());
    let mut changed = false;
    for (i, message) in messages.iter().enumerate() {
        if !has_blank(message) {
            out.push(message.clone());
            continue;
        }
        let cleaned = match message.get("content") {
            Some(Value::Array(blocks)) => {
                blocks.iter().filter(|b| !is_blank_block(b)).cloned().collect::<Vec<_>>()
            }
            _ => Vec::new(),
        };
        if cleaned.is_empty() && i == last {
            out.push(message.clone());
            continue;
        }
        changed = true;
        if cleaned.is_empty() {
            continue;
        }
        let mut message = message.clone();
        if let Value::Object(map) = &mut message {
            map.insert("content".into(), Value::Array(cleaned));
        }
        out.push(message);
    }
    changed.then_some(out)
}

/// Whether a canonical request holds text that [`drop_blank_text`] would drop.
fn has_blank_text(req: &Request) -> bool {
    req.messages
        .iter()
        .any(|m| m.content.iter().any(|p| matches!(p, Part::Text(t) if is_blank(&t.text))))
}

/// A thinking budget the API accepts (at least its minimum) and a `max_tokens` above
/// it (the API requires the budget to be strictly below), raised only if needed.
fn budget_within(budget: u64, max_tokens: u64) -> (u64, u64) {
    let budget = budget.max(MIN_THINKING_BUDGET);
    let max_tokens =
        if max_tokens <= budget { budget.saturating_add(MIN_THINKING_BUDGET) } else { max_tokens };
    (budget, max_tokens)
}

/// Whether [`adapt_native`] might edit a body whose parsed form is `req`, decided
/// without looking at the body, so one needing nothing keeps the byte-level fast
/// path: its thinking is not in the model's form (a budget for an effort model, none
/// for a budget model), it sets sampling parameters the model refuses, or its
/// history holds blank text.
pub fn may_adapt(req: &Request, traits: ModelTraits) -> bool {
    if has_foreign_tool_ids(req) || continues_without_thinking(req) {
        return true;
    }
    let thinking = req.reasoning.as_ref().is_some_and(|r| {
        r.enabled
            && match traits.reasoning {
                ReasoningControl::Effort => r.budget_tokens.is_some(),
                ReasoningControl::Budget => r.budget_tokens.is_none(),
            }
    });
    let sampling = !traits.sampling
        && (req.temperature.is_some() || req.top_p.is_some() || req.top_k.is_some());
    thinking || sampling || has_blank_text(req)
}

/// The `output_config.effort` level for an effort (Anthropic has no `minimal`).
fn anthropic_effort(effort: Effort) -> &'static str {
    match effort {
        Effort::Minimal | Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
        Effort::XHigh => "xhigh",
        Effort::Max => "max",
    }
}

/// Build the body we send to `POST /v1/messages` for a model with `traits`.
///
/// Reasoning: a budget-controlled model (Claude 4.5 and earlier) gets
/// `thinking: {type: enabled, budget_tokens}` with `max_tokens` raised above the
/// budget; an effort-controlled one (Claude 4.6 and later; Opus 4.7 and later refuse
/// the budget form) gets `thinking: {type: adaptive}` and `output_config.effort`.
pub fn encode_request(req: &Request, traits: ModelTraits) -> Result<Value, ProtocolError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));

    let mut max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut output_config = Map::new();
    let thinking = req.reasoning.as_ref().filter(|r| r.enabled && !continues_without_thinking(req));
    match (thinking, traits.reasoning) {
        (Some(reasoning), ReasoningControl::Budget) => {
            let (budget, raised) = budget_within(reasoning.budget(), max_tokens);
            max_tokens = raised;
            body.insert("thinking".into(), json!({"type": "enabled", "budget_tokens": budget}));
        }
        (Some(reasoning), ReasoningControl::Effort) => {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
            // No effort asked for: the model's default applies.
            let effort = reasoning.effort.or(reasoning.budget_tokens.map(Effort::from_budget));
            if let Some(effort) = effort {
                output_config.insert("effort".into(), json!(anthropic_effort(effort)));
            }
        }
        (None, _) => {}
    }
    body.insert("max_tokens".into(), json!(max_tokens));

    // Blank system blocks are refused like blank text anywhere, and say nothing.
    let mut system: Vec<Value> = req
        .system
        .iter()
        .filter(|b| !is_blank(&b.text))
        .map(|b| text_block(&b.text, b.cache_control.as_ref()))
        .collect();
    match &req.response_format {
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            output_config.insert("format".into(), json!({"type": "json_schema", "schema": schema}));
        }
        Some(ResponseFormat::JsonObject) => system.push(text_block(JSON_OBJECT_INSTRUCTION, None)),
        Some(ResponseFormat::Text) | None => {}
    }
    if !output_config.is_empty() {
        body.insert("output_config".into(), Value::Object(output_config));
    }
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }

    body.insert("messages".into(), Value::Array(encode_messages(&req.messages)?));

    if !req.tools.is_empty() {
        body.insert("tools".into(), Value::Array(req.tools.iter().map(encode_tool).collect()));
        if let Some(choice) = encode_tool_choice(req) {
            body.insert("tool_choice".into(), choice);
        }
    }

    // Thinking requires the default temperature and top_k, and top_p of at least 0.95;
    // some models take none of them at all.
    if traits.sampling {
        if thinking.is_none() {
            if let Some(t) = req.temperature {
                body.insert("temperature".into(), json!(t));
            }
            if let Some(k) = req.top_k {
                body.insert("top_k".into(), json!(k));
            }
        }
        if let Some(p) = req.top_p
            && (thinking.is_none() || p >= MIN_TOP_P_WITH_THINKING)
        {
            body.insert("top_p".into(), json!(p));
        }
    }
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    if let Some(user) = &req.user {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    if req.stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Ok(Value::Object(body))
}

fn text_block(text: &str, cache_control: Option<&Value>) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if let (Some(cc), Value::Object(map)) = (cache_control, &mut block) {
        map.insert("cache_control".into(), cc.clone());
    }
    block
}

fn image_block(image: &Image) -> Value {
    let source = match &image.source {
        ImageSource::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        ImageSource::Url { url } => json!({"type": "url", "url": url}),
    };
    let mut block = json!({"type": "image", "source": source});
    if let (Some(cc), Value::Object(map)) = (&image.cache_control, &mut block) {
        map.insert("cache_control".into(), cc.clone());
    }
    block
}

fn document_block(doc: &Document) -> Value {
    let source = match &doc.source {
        DocumentSource::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
        DocumentSource::Url { url, .. } => json!({"type": "url", "url": url}),
    };
    let mut map = Map::new();
    map.insert("type".into(), json!("document"));
    map.insert("source".into(), source);
    // A file name is the best title there is when the client gave none.
    if let Some(title) = doc.title.as_ref().or(doc.filename.as_ref()) {
        map.insert("title".into(), json!(title));
    }
    if let Some(context) = &doc.context {
        map.insert("context".into(), json!(context));
    }
    if let Some(citations) = &doc.citations {
        map.insert("citations".into(), citations.clone());
    }
    if let Some(cc) = &doc.cache_control {
        map.insert("cache_control".into(), cc.clone());
    }
    Value::Object(map)
}

/// What refusals call this wire.
const TARGET: &str = "an Anthropic upstream";

/// Text with nothing but whitespace (or nothing at all), which Anthropic refuses as
/// a text block: `text content blocks must contain non-whitespace text`.
fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn is_blank_block(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && block.get("text").and_then(Value::as_str).is_some_and(is_blank)
}

/// Anthropic wants strictly alternating user/assistant turns, so consecutive messages
/// of one role (after mid-conversation system messages become user turns) are merged;
/// in a user turn, `tool_result` blocks must come first. Blank text blocks, which
/// Anthropic refuses, are dropped, and turns left empty with them, except from a
/// final turn that holds nothing else: dropping that would send another question
/// (or none), so it goes as it is and the upstream says what it makes of it.
fn encode_messages(messages: &[Message]) -> Result<Vec<Value>, ProtocolError> {
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for msg in messages {
        let (role, as_instruction) = match msg.role {
            Role::User => ("user", false),
            Role::Assistant => ("assistant", false),
            // The non-beta API refuses `system` inside `messages`.
            Role::System => ("user", true),
        };
        let mut blocks = Vec::with_capacity(msg.content.len());
        for part in &msg.content {
            blocks.extend(encode_part(part, as_instruction)?);
        }
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let last = turns.len().saturating_sub(1);
    let mut kept: Vec<(&'static str, Vec<Value>)> = Vec::with_capacity(turns.len());
    for (i, (role, mut blocks)) in turns.into_iter().enumerate() {
        if i != last || !blocks.iter().all(is_blank_block) {
            blocks.retain(|b| !is_blank_block(b));
        }
        if blocks.is_empty() {
            continue;
        }
        // A turn dropped between two of one role leaves them side by side.
        match kept.last_mut() {
            Some((prev, existing)) if *prev == role => existing.extend(blocks),
            _ => kept.push((role, blocks)),
        }
    }
    Ok(kept
        .into_iter()
        .map(|(role, blocks)| {
            let blocks = if role == "user" {
                let (mut results, rest): (Vec<Value>, Vec<Value>) = blocks
                    .into_iter()
                    .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
                results.extend(rest);
                results
            } else {
                blocks
            };
            json!({"role": role, "content": blocks})
        })
        .collect())
}

/// One part as a content block; `None` for parts that carry nothing the API could
/// use (unsigned thinking, a blank system reminder). Blank text is left to
/// [`encode_messages`], which knows where it stands.
fn encode_part(part: &Part, as_instruction: bool) -> Result<Option<Value>, ProtocolError> {
    Ok(match part {
        Part::Text(t) if as_instruction && is_blank(&t.text) => None,
        Part::Text(t) if as_instruction => Some(text_block(
            &format!("<system-reminder>\n{}\n</system-reminder>", t.text),
            t.cache_control.as_ref(),
        )),
        Part::Text(t) => Some(text_block(&t.text, t.cache_control.as_ref())),
        Part::Image(image) => Some(image_block(image)),
        Part::Document(doc) => Some(document_block(doc)),
        Part::ToolCall(call) => Some(json!({
            "type": "tool_use",
            "id": tool_id(&call.id),
            "name": call.name,
            "input": util::arguments_to_value(&call.arguments)?,
        })),
        Part::ToolResult(result) => {
            let mut block = json!({"type": "tool_result", "tool_use_id": tool_id(&result.call_id)});
            if let Value::Object(map) = &mut block {
                if !result.content.is_empty() {
                    let mut content = Vec::with_capacity(result.content.len());
                    for part in &result.content {
                        content.push(match part {
                            Part::Text(t) => text_block(&t.text, t.cache_control.as_ref()),
                            Part::Image(image) => image_block(image),
                            Part::Document(doc) => document_block(doc),
                            other => {
                                return Err(crate::cannot_send(
                                    &other.describe(),
                                    TARGET,
                                    "a tool result holds only text, images and documents",
                                ));
                            }
                        });
                    }
                    map.insert("content".into(), Value::Array(content));
                }
                if result.is_error {
                    map.insert("is_error".into(), Value::Bool(true));
                }
            }
            Some(block)
        }
        // Anthropic rejects thinking without its signature (e.g. reasoning that came
        // from another provider); such blocks are only context, so they are dropped.
        Part::Thinking { text, signature: Some(signature) } if !signature.is_empty() => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        Part::Thinking { .. } => None,
        Part::RedactedThinking { data } => Some(json!({"type": "redacted_thinking", "data": data})),
        Part::Untranslatable { what } => {
            return Err(crate::cannot_send(
                what,
                TARGET,
                "the gateway cannot translate it; send it to a provider of the wire it came from",
            ));
        }
    })
}

fn encode_tool(tool: &Tool) -> Value {
    let schema = if tool.parameters.is_object() {
        tool.parameters.clone()
    } else {
        // Tools without parameters: the API needs an object schema regardless.
        json!({"type": "object", "properties": {}})
    };
    let mut map = Map::new();
    map.insert("name".into(), json!(tool.name));
    if let Some(d) = &tool.description {
        map.insert("description".into(), json!(d));
    }
    map.insert("input_schema".into(), schema);
    if let Some(strict) = tool.strict {
        map.insert("strict".into(), Value::Bool(strict));
    }
    if let Some(cc) = &tool.cache_control {
        map.insert("cache_control".into(), cc.clone());
    }
    Value::Object(map)
}

fn encode_tool_choice(req: &Request) -> Option<Value> {
    let disable_parallel = req.parallel_tool_calls == Some(false);
    let mut choice = match &req.tool_choice {
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Tool { name }) => json!({"type": "tool", "name": name}),
        // `none` takes no parallelism flag: no tool will be called at all.
        Some(ToolChoice::None) => return Some(json!({"type": "none"})),
        None if disable_parallel => json!({"type": "auto"}),
        None => return None,
    };
    if let (true, Value::Object(map)) = (disable_parallel, &mut choice) {
        map.insert("disable_parallel_tool_use".into(), Value::Bool(true));
    }
    Some(choice)
}

// ---------------------------------------------------------------------------------
// Response in / out
// ---------------------------------------------------------------------------------

/// Parse a complete (non-streamed) Messages API response from the upstream.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let value: Value = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        let error: WireError = value
            .get("error")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(ProtocolError::upstream)?
            .unwrap_or(WireError { kind: "error".into(), message: String::new() });
        return Err(ProtocolError::UpstreamError { kind: error.kind, message: error.message });
    }
    let resp: InResponse = serde_json::from_value(value).map_err(ProtocolError::upstream)?;
    let mut content = Vec::with_capacity(resp.content.len());
    for (i, raw) in resp.content.into_iter().enumerate() {
        let path = format!("content[{i}]");
        let block = at::<InBlock>(raw, &path).map_err(ProtocolError::MalformedUpstream)?;
        match block {
            // Only model output belongs in a response (server-tool blocks are the
            // provider's own business).
            InBlock::Image { .. }
            | InBlock::Document { .. }
            | InBlock::ToolResult { .. }
            | InBlock::Other => {}
            block => content
                .push(block_to_part(block, None, &path).map_err(ProtocolError::MalformedUpstream)?),
        }
    }
    Ok(Response {
        id: resp.id,
        model: resp.model,
        content,
        stop_reason: resp.stop_reason.as_deref().map(StopReason::from_anthropic),
        stop_sequence: resp.stop_sequence,
        usage: resp.usage.unwrap_or_default().to_canonical(),
    })
}

/// Only the usage of a Messages response, for a body forwarded unchanged (an
/// `error` body is still an error). Scanned, not parsed, but for the usage.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        error: Option<WireError>,
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    let kind = crate::util::top_level_value(body, "type").and_then(|r| body.get(r));
    if kind != Some(b"\"error\"")
        && let Some(usage) = crate::util::top_level_value(body, "usage").and_then(|r| body.get(r))
    {
        let u: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(ProtocolError::upstream)?;
        return Ok(u.map(WireUsage::to_canonical));
    }
    let w: UsageOnly = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    if w.kind.as_deref() == Some("error") {
        let error = w.error.unwrap_or(WireError { kind: "error".into(), message: String::new() });
        return Err(ProtocolError::UpstreamError { kind: error.kind, message: error.message });
    }
    Ok(w.usage.map(WireUsage::to_canonical))
}

/// Render a canonical response as a Messages API response for an Anthropic client.
pub fn encode_response(resp: &Response) -> Value {
    let content: Vec<Value> = resp
        .content
        .iter()
        .filter_map(|part| match part {
            Part::Text(t) => Some(json!({"type": "text", "text": t.text})),
            // SDKs type `signature` as a string; `""` marks thinking that has none
            // (from a non-Anthropic upstream) and is dropped if the client sends it back.
            Part::Thinking { text, signature } => Some(json!({
                "type": "thinking",
                "thinking": text,
                "signature": signature.as_deref().unwrap_or(""),
            })),
            Part::RedactedThinking { data } => {
                Some(json!({"type": "redacted_thinking", "data": data}))
            }
            // `input` must be an object. Arguments that are not JSON (a model cut off
            // mid-call) cannot be rendered as one, so the client gets `{}` and its tool
            // validation reports the missing arguments.
            Part::ToolCall(call) => Some(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": util::arguments_to_value(&call.arguments)
                    .unwrap_or_else(|_| Value::Object(Map::new())),
            })),
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. } => None,
        })
        .collect();
    json!({
        "id": resp.id,
        "type": "message",
        "role": "assistant",
        "model": resp.model,
        "content": content,
        "stop_reason": resp.stop_reason.map(StopReason::to_anthropic),
        "stop_sequence": resp.stop_sequence,
        "usage": usage_json(&resp.usage, true),
    })
}

/// Usage as Anthropic reports it. `input_tokens` and `output_tokens` are required by
/// the SDKs' types, so a full report (response, `message_start`) gives `0` for an
/// unknown count; `message_delta` (`full == false`) requires only `output_tokens` and
/// leaves out unknown input counts. Unknown cache counts are always left out.
fn usage_json(usage: &Usage, full: bool) -> Value {
    let mut map = Map::new();
    match usage.uncached_input() {
        Some(input) => {
            map.insert("input_tokens".into(), json!(input));
        }
        None if full => {
            map.insert("input_tokens".into(), json!(0));
        }
        None => {}
    }
    map.insert("output_tokens".into(), json!(usage.output_tokens.unwrap_or(0)));
    if let Some(read) = usage.cache_read_tokens {
        map.insert("cache_read_input_tokens".into(), json!(read));
    }
    if let Some(write) = usage.cache_write_tokens {
        map.insert("cache_creation_input_tokens".into(), json!(write));
    }
    Value::Object(map)
}

/// The message of an Anthropic error body (`{"type":"error","error":{"type","message"}}`).
pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if value.get("type")?.as_str()? != "error" {
        return None;
    }
    Some(value.get("error")?.get("message")?.as_str()?.to_owned())
}

// ---------------------------------------------------------------------------------
// Stream decoder: upstream SSE → canonical events
// ---------------------------------------------------------------------------------

/// The upstream block being streamed. `canonical` is `None` for a skipped block
/// (server tool use and its results), whose deltas are ignored.
#[derive(Debug, Clone, Copy)]
struct OpenBlock {
    upstream: u64,
    canonical: Option<usize>,
}

/// Decodes an Anthropic event stream. Skipped blocks are renumbered away, so canonical
/// indices count from 0 without gaps.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    open: Option<OpenBlock>,
    next_index: usize,
    /// Usage so far, in Anthropic's terms (reports are cumulative, merged per field).
    usage: WireUsage,
    stopped: bool,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn close_open(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(OpenBlock { canonical: Some(index), .. }) = self.open.take() {
            out.push(StreamEvent::BlockStop { index });
        }
    }

    fn stop(
        &mut self,
        reason: StopReason,
        stop_sequence: Option<String>,
        out: &mut Vec<StreamEvent>,
    ) {
        if !self.stopped {
            self.stopped = true;
            out.push(StreamEvent::Stop { reason, stop_sequence });
        }
    }

    fn usage(&mut self, report: &WireUsage, out: &mut Vec<StreamEvent>) {
        self.usage.merge(report);
        let usage = self.usage.to_canonical();
        if !usage.is_empty() {
            out.push(StreamEvent::Usage { usage });
        }
    }

    fn block_start(
        &mut self,
        upstream: u64,
        block: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        self.close_open(out);
        let block: InBlock = at(block, "content_block_start.content_block")
            .map_err(ProtocolError::MalformedUpstream)?;
        // The kind, and any content the start event already carries.
        let (kind, initial) = match block {
            InBlock::Text { text, .. } => (BlockKind::Text, vec![Delta::Text { text }]),
            InBlock::Thinking { thinking, signature } => (
                BlockKind::Thinking,
                [
                    Some(Delta::Thinking { text: thinking }),
                    non_empty(signature).map(|signature| Delta::Signature { signature }),
                ]
                .into_iter()
                .flatten()
                .collect(),
            ),
            InBlock::RedactedThinking { data } => (BlockKind::RedactedThinking { data }, vec![]),
            InBlock::ToolUse { id, name, input } => {
                // Real streams start with `input: {}` and send the JSON as deltas.
                let initial = match &input {
                    Value::Object(map) if !map.is_empty() => {
                        vec![Delta::ToolArguments { json: util::value_to_arguments(&input) }]
                    }
                    _ => vec![],
                };
                (BlockKind::ToolCall { id, name }, initial)
            }
            InBlock::Image { .. }
            | InBlock::Document { .. }
            | InBlock::ToolResult { .. }
            | InBlock::Other => {
                self.open = Some(OpenBlock { upstream, canonical: None });
                return Ok(());
            }
        };
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some(OpenBlock { upstream, canonical: Some(index) });
        out.push(StreamEvent::BlockStart { index, kind });
        for delta in initial {
            let empty = match &delta {
                Delta::Text { text } | Delta::Thinking { text } => text.is_empty(),
                Delta::Signature { signature } => signature.is_empty(),
                Delta::ToolArguments { json } => json.is_empty(),
            };
            if !empty {
                out.push(StreamEvent::Delta { index, delta });
            }
        }
        Ok(())
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        // Nothing after `message_stop` matters; a data-less event is a keep-alive.
        if self.done || data.is_empty() {
            return Ok(());
        }
        let name = event.event.as_deref().unwrap_or("(unnamed)");
        let mut value: Value = serde_json::from_str(data).map_err(|e| {
            ProtocolError::upstream(format!("`{name}` event data is not JSON: {e}"))
        })?;
        if let (Value::Object(map), Some(event_name)) = (&mut value, &event.event)
            && !map.contains_key("type")
        {
            map.insert("type".into(), Value::String(event_name.clone()));
        }
        let wire: WireEvent = serde_json::from_value(value)
            .map_err(|e| ProtocolError::upstream(format!("`{name}` event: {e}")))?;

        let needs_start = !matches!(
            wire,
            WireEvent::MessageStart { .. }
                | WireEvent::Ping
                | WireEvent::Error { .. }
                | WireEvent::Other
        );
        if needs_start && !self.started {
            return Err(ProtocolError::upstream(format!("`{name}` event before message_start")));
        }

        match wire {
            WireEvent::MessageStart { message } => {
                if !self.started {
                    self.started = true;
                    out.push(StreamEvent::Start { id: message.id, model: message.model });
                    if let Some(usage) = message.usage {
                        self.usage(&usage, out);
                    }
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => {
                self.block_start(index, content_block, out)?
            }
            WireEvent::ContentBlockDelta { index, delta } => {
                let open = self.open.filter(|open| open.upstream == index).ok_or_else(|| {
                    ProtocolError::upstream(format!("delta for content block {index}, not open"))
                })?;
                let Some(canonical) = open.canonical else { return Ok(()) };
                let delta = match delta {
                    WireDelta::TextDelta { text } => Delta::Text { text },
                    WireDelta::ThinkingDelta { thinking } => Delta::Thinking { text: thinking },
                    WireDelta::SignatureDelta { signature } => Delta::Signature { signature },
                    WireDelta::InputJsonDelta { partial_json } => {
                        Delta::ToolArguments { json: partial_json }
                    }
                    WireDelta::Other => return Ok(()),
                };
                out.push(StreamEvent::Delta { index: canonical, delta });
            }
            WireEvent::ContentBlockStop { index } => {
                if self.open.is_some_and(|open| open.upstream == index) {
                    self.close_open(out);
                }
            }
            WireEvent::MessageDelta { delta, usage } => {
                self.close_open(out);
                if let Some(reason) = delta.stop_reason {
                    self.stop(StopReason::from_anthropic(&reason), delta.stop_sequence, out);
                }
                if let Some(usage) = usage {
                    self.usage(&usage, out);
                }
            }
            WireEvent::MessageStop => {
                self.close_open(out);
                self.stop(StopReason::EndTurn, None, out);
                self.done = true;
            }
            WireEvent::Error { error } => {
                return Err(ProtocolError::UpstreamError {
                    kind: error.kind,
                    message: error.message,
                });
            }
            WireEvent::Ping | WireEvent::Other => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            Ok(())
        } else {
            Err(ProtocolError::upstream("stream ended before message_stop"))
        }
    }
}

// ---------------------------------------------------------------------------------
// Stream encoder: canonical events → SSE for an Anthropic client
// ---------------------------------------------------------------------------------

/// Encodes canonical events as an Anthropic event stream.
///
/// `message_start` is held until the first block (or the stop) so that usage reported
/// before it lands in `message_start.usage`. The stop and the final usage may arrive in
/// either order, so both are kept and sent as `message_delta` + `message_stop` by
/// [`StreamEncoder::finish`].
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    started: bool,
    open: Option<usize>,
    /// The open block is thinking: the only kind a signature belongs to here (a
    /// Gemini call's signature stays with the gateway).
    open_thinking: bool,
    usage: Usage,
    stop: Option<(StopReason, Option<String>)>,
    finished: bool,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": usage_json(&self.usage, true),
        });
        emit(out, "message_start", json!({"type": "message_start", "message": message}));
    }

    fn close_open(&mut self, out: &mut Vec<u8>) {
        if let Some(index) = self.open.take() {
            emit(out, "content_block_stop", json!({"type": "content_block_stop", "index": index}));
        }
    }
}

fn emit(out: &mut Vec<u8>, name: &str, data: Value) {
    sse::write_json(out, Some(name), &data);
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                if !self.started {
                    self.id.clone_from(id);
                    self.model.clone_from(model);
                }
            }
            StreamEvent::BlockStart { index, kind } => {
                self.ensure_started(out);
                self.close_open(out);
                let block = match kind {
                    BlockKind::Text => json!({"type": "text", "text": ""}),
                    BlockKind::Thinking => json!({"type": "thinking", "thinking": ""}),
                    BlockKind::RedactedThinking { data } => {
                        json!({"type": "redacted_thinking", "data": data})
                    }
                    BlockKind::ToolCall { id, name } => {
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}})
                    }
                };
                emit(
                    out,
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index, "content_block": block}),
                );
                self.open = Some(*index);
                self.open_thinking = matches!(kind, BlockKind::Thinking);
            }
            StreamEvent::Delta { delta: Delta::Signature { .. }, .. } if !self.open_thinking => {}
            StreamEvent::Delta { index, delta } => {
                self.ensure_started(out);
                let delta = match delta {
                    Delta::Text { text } => json!({"type": "text_delta", "text": text}),
                    Delta::Thinking { text } => json!({"type": "thinking_delta", "thinking": text}),
                    Delta::Signature { signature } => {
                        json!({"type": "signature_delta", "signature": signature})
                    }
                    Delta::ToolArguments { json } => {
                        json!({"type": "input_json_delta", "partial_json": json})
                    }
                };
                emit(
                    out,
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                );
            }
            StreamEvent::BlockStop { index } => {
                if self.open == Some(*index) {
                    self.close_open(out);
                }
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, stop_sequence } => {
                self.ensure_started(out);
                self.close_open(out);
                self.stop = Some((*reason, stop_sequence.clone()));
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.ensure_started(out);
        self.close_open(out);
        self.finished = true;
        let (reason, stop_sequence) = self.stop.take().unwrap_or((StopReason::EndTurn, None));
        emit(
            out,
            "message_delta",
            json!({
                "type": "message_delta",
                "delta": {"stop_reason": reason.to_anthropic(), "stop_sequence": stop_sequence},
                "usage": usage_json(&self.usage, false),
            }),
        );
        emit(out, "message_stop", json!({"type": "message_stop"}));
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        self.finished = true;
        emit(out, "error", err.to_anthropic());
    }
}

// ---------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, ResponseAccumulator, SseDecoder, response_to_events};
    use proptest::prelude::*;

    const SIGNATURE: &str = "EqoBCkgIBxABGAIiQL7c4+/Kq9zs3Jtq0m3Uq1Z8h/7uQ9vZ3p5Y0dH6mQx0eF+Ql1k\
        uJw2m0x9Y3A1bq5xZ0t3Yk8aDMu5yF0e6X1o8s2k9hIMq3Xy0C8+/pD0uBzwIjBZm0Qz==";

    /// A request as Claude Code sends it: billing/system blocks with cache_control,
    /// tools (one a server tool), a thinking + tool_use / tool_result round trip, an
    /// image, a mid-conversation system message and a server-side block to skip.
    fn claude_code_request() -> Value {
        json!({
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 32000,
            "temperature": 1,
            "stream": true,
            "metadata": {"user_id": "user_abc123_account__session_7f3e"},
            "system": [
                {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "Here is useful information about the environment...",
                 "cache_control": {"type": "ephemeral", "ttl": "1h"}}
            ],
            "tools": [
                {"name": "Bash", "description": "Executes a bash command",
                 "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                                  "required": ["command"], "additionalProperties": false,
                                  "$schema": "http://json-schema.org/draft-07/schema#"}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
                {"name": "Read", "description": "Reads a file",
                 "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
                 "cache_control": {"type": "ephemeral"}}
            ],
            "thinking": {"type": "enabled", "budget_tokens": 31999},
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>\nAs you answer...\n</system-reminder>"},
                    {"type": "text", "text": "what's in src/main.rs? also look at this",
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                  "data": "iVBORw0KGgo="}}
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "I should read the file.", "signature": SIGNATURE},
                    {"type": "text", "text": "I'll read it."},
                    {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                     "name": "Read", "input": {"file_path": "/repo/src/main.rs"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                     "content": "fn main() {}", "cache_control": {"type": "ephemeral"}}
                ]},
                {"role": "system", "content": "The user changed the file."},
                {"role": "assistant", "content": [
                    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                     "input": {"query": "rust main"}},
                    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                    {"type": "tool_use", "id": "toolu_02", "name": "Bash",
                     "input": {"command": "cat src/main.rs"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": true,
                     "content": [{"type": "text", "text": "permission denied"},
                                 {"type": "image", "source": {"type": "url",
                                                               "url": "https://example.com/x.png"}}]},
                    {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                    "data": "ignored"}}
                ]}
            ]
        })
    }

    fn parse_value(v: &Value) -> Result<Request, ProtocolError> {
        parse_request(&serde_json::to_vec(v).unwrap())
    }

    #[test]
    fn parses_a_claude_code_request() {
        let req = parse_value(&claude_code_request()).unwrap();
        assert_eq!(req.model, "claude-sonnet-4-5-20250929");
        assert_eq!(req.max_tokens, Some(32000));
        assert_eq!(req.temperature, Some(1.0));
        assert!(req.stream);
        assert_eq!(req.user.as_deref(), Some("user_abc123_account__session_7f3e"));
        assert_eq!(
            req.system,
            vec![
                TextBlock {
                    text: "You are Claude Code, Anthropic's official CLI for Claude.".into(),
                    cache_control: Some(json!({"type": "ephemeral"})),
                },
                TextBlock {
                    text: "Here is useful information about the environment...".into(),
                    cache_control: Some(json!({"type": "ephemeral", "ttl": "1h"})),
                },
            ]
        );
        // The server tool is skipped; the others keep schema and cache marker.
        assert_eq!(req.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Bash", "Read"]);
        assert_eq!(req.tools[0].parameters["required"], json!(["command"]));
        assert_eq!(req.tools[1].cache_control, Some(json!({"type": "ephemeral"})));
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(31999) })
        );

        let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::User, Role::System, Role::Assistant, Role::User]
        );
        let m0 = &req.messages[0].content;
        assert_eq!(m0.len(), 3);
        assert_eq!(
            m0[1],
            Part::Text(TextBlock {
                text: "what's in src/main.rs? also look at this".into(),
                cache_control: Some(json!({"type": "ephemeral"})),
            })
        );
        assert_eq!(
            m0[2],
            Part::Image(Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into()
                },
                detail: None,
                cache_control: None,
            })
        );
        assert_eq!(
            req.messages[1].content,
            vec![
                Part::Thinking {
                    text: "I should read the file.".into(),
                    signature: Some(SIGNATURE.into())
                },
                Part::Text(TextBlock::new("I'll read it.")),
                Part::ToolCall(ToolCall {
                    id: "toolu_01A09q90qw90lq917835lq9".into(),
                    name: "Read".into(),
                    arguments: r#"{"file_path":"/repo/src/main.rs"}"#.into(),
                    signature: None,
                }),
            ]
        );
        // The tool_result's cache marker moves onto its (only) content block.
        assert_eq!(
            req.messages[2].content,
            vec![Part::ToolResult(ToolResult {
                call_id: "toolu_01A09q90qw90lq917835lq9".into(),
                name: None,
                content: vec![Part::Text(TextBlock {
                    text: "fn main() {}".into(),
                    cache_control: Some(json!({"type": "ephemeral"})),
                })],
                is_error: false,
            })]
        );
        assert_eq!(req.messages[3], Message::text(Role::System, "The user changed the file."));
        // Server-side blocks are kept by name, for a translation to refuse.
        assert_eq!(
            req.messages[4].content,
            vec![
                Part::Untranslatable {
                    what: "messages[4].content[0]: a `server_tool_use` block".into()
                },
                Part::Untranslatable {
                    what: "messages[4].content[1]: a `web_search_tool_result` block".into()
                },
                Part::RedactedThinking { data: "EmwKAhgBEgy3va3pzix/LafPsn4a".into() },
                Part::ToolCall(ToolCall {
                    id: "toolu_02".into(),
                    name: "Bash".into(),
                    arguments: r#"{"command":"cat src/main.rs"}"#.into(),
                    signature: None,
                }),
            ]
        );
        // Tool result with blocks and is_error; a plain-text document has no
        // canonical form (only base64 and URL sources do).
        assert_eq!(
            req.messages[5].content,
            vec![
                Part::ToolResult(ToolResult {
                    call_id: "toolu_02".into(),
                    name: None,
                    content: vec![
                        Part::Text(TextBlock::new("permission denied")),
                        Part::Image(Image {
                            source: ImageSource::Url { url: "https://example.com/x.png".into() },
                            detail: None,
                            cache_control: None,
                        }),
                    ],
                    is_error: true,
                }),
                Part::Untranslatable {
                    what: "messages[5].content[1]: a document with a `text` source".into()
                },
            ]
        );
    }

    #[test]
    fn re_encodes_a_claude_code_request_for_the_upstream() {
        let mut req = parse_value(&claude_code_request()).unwrap();
        // What the canonical model cannot carry is refused by name; an Anthropic
        // client's own body takes the fast path, where it goes as it came.
        let err = crate::Wire::Anthropic.encode_request(&req).unwrap_err();
        assert!(err.to_string().contains("messages[4].content[0]: a `server_tool_use` block"));
        for m in &mut req.messages {
            m.content.retain(|p| !matches!(p, Part::Untranslatable { .. }));
        }
        let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
        assert_eq!(body["model"], "claude-sonnet-4-5-20250929");
        assert_eq!(body["max_tokens"], 32000);
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 31999}));
        assert!(body.get("temperature").is_none(), "temperature must go with thinking on");
        assert_eq!(body["stream"], true);
        assert_eq!(body["metadata"], json!({"user_id": "user_abc123_account__session_7f3e"}));
        assert_eq!(body["system"][1]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert_eq!(body["tools"].as_array().unwrap().len(), 2);
        assert!(body.get("tool_choice").is_none());

        let messages = body["messages"].as_array().unwrap();
        // user, assistant, user (tool_result + system reminder merged), assistant, user
        let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
        assert_eq!(messages[1]["content"][0]["signature"], SIGNATURE);
        assert_eq!(messages[1]["content"][2]["input"], json!({"file_path": "/repo/src/main.rs"}));
        let merged = messages[2]["content"].as_array().unwrap();
        assert_eq!(merged[0]["type"], "tool_result");
        assert_eq!(
            merged[0]["content"],
            json!([{"type": "text", "text": "fn main() {}", "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(
            merged[1],
            json!({"type": "text",
                   "text": "<system-reminder>\nThe user changed the file.\n</system-reminder>"})
        );
        assert_eq!(
            messages[3]["content"][0],
            json!({"type": "redacted_thinking",
                                                     "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})
        );
        assert_eq!(messages[4]["content"][0]["is_error"], true);
        assert_eq!(
            messages[4]["content"][0]["content"][1],
            json!({"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}})
        );
    }

    #[test]
    fn documents_parse_and_encode_with_what_they_carry() {
        let block = json!({"type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
            "title": "Q3", "context": "figures", "citations": {"enabled": true},
            "cache_control": {"type": "ephemeral"}});
        let by_url =
            json!({"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}});
        let body = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
            {"type": "text", "text": "read"}, block.clone(), by_url.clone(),
            {"type": "document", "source": {"type": "file", "file_id": "file_9"}},
        ]}]});
        let req = parse_value(&body).unwrap();
        let content = &req.messages[0].content;
        assert_eq!(
            content[1],
            Part::Document(Document {
                source: DocumentSource::Base64 {
                    media_type: "application/pdf".into(),
                    data: "JVBERi0=".into()
                },
                filename: None,
                title: Some("Q3".into()),
                context: Some("figures".into()),
                citations: Some(json!({"enabled": true})),
                cache_control: Some(json!({"type": "ephemeral"})),
            })
        );
        assert_eq!(
            content[3],
            Part::Untranslatable {
                what: "messages[0].content[3]: a document with a `file` source (file_9)".into()
            }
        );
        let mut req = req;
        req.messages[0].content.truncate(3);
        let out = encode_request(&req, ModelTraits::infer(crate::Wire::Anthropic, "m")).unwrap();
        assert_eq!(out["messages"][0]["content"][1], block);
        assert_eq!(out["messages"][0]["content"][2], by_url);
    }

    fn texts(turn: &Value) -> Vec<&str> {
        turn["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
    }

    #[test]
    fn blank_text_and_the_turns_it_leaves_empty_are_dropped() {
        let traits = ModelTraits::infer(crate::Wire::Anthropic, "m");
        let req = Request {
            model: "m".into(),
            system: vec![TextBlock::new(" "), TextBlock::new("rules")],
            messages: vec![
                Message::text(Role::User, "q1"),
                Message::text(Role::Assistant, "\n\n"),
                Message {
                    role: Role::User,
                    content: vec![Part::Text(TextBlock::new("q2")), Part::Text(TextBlock::new(""))],
                },
                Message::text(Role::System, " \t"),
            ],
            ..Request::default()
        };
        let out = encode_request(&req, traits).unwrap();
        assert_eq!(out["system"], json!([{"type": "text", "text": "rules"}]));
        let turns = out["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 1, "{out}");
        assert_eq!(texts(&turns[0]), ["q1", "q2"]);

        // A final turn of nothing else is the question: it goes as it is.
        let mut req = req;
        req.messages = vec![
            Message::text(Role::User, "q1"),
            Message::text(Role::Assistant, " "),
            Message::text(Role::User, "  "),
        ];
        let out = encode_request(&req, traits).unwrap();
        let turns = out["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 1, "{out}");
        assert_eq!(texts(&turns[0]), ["q1", "  "]);
    }

    #[test]
    fn a_clients_own_blank_text_leaves_its_body_on_the_fast_path() {
        let traits = ModelTraits::infer(crate::Wire::Anthropic, "claude-sonnet-4-5");
        let body = json!({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "q1"},
            {"role": "assistant", "content": [{"type": "text", "text": "\n"}]},
            {"role": "assistant", "content": " "},
            {"role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "text", "text": " "},
                                         {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}}]},
        ]});
        let req = parse_value(&body).unwrap();
        assert!(may_adapt(&req, traits));
        let edits = adapt_native(body.as_object().unwrap(), &req, traits);
        let messages =
            edits.iter().find(|(k, _)| *k == "messages").and_then(|(_, v)| v.clone()).unwrap();
        assert_eq!(
            messages,
            json!([
                {"role": "user", "content": "q1"},
                {"role": "user", "content": [{"type": "text", "text": "q2"},
                    {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}}]},
            ])
        );
        // Only a blank final message: nothing to drop, the upstream answers it.
        let last_only = json!([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a"},
                               {"role": "user", "content": "  "}]);
        assert_eq!(drop_blank_text(last_only.as_array().unwrap()), None);
        let clean = json!([{"role": "user", "content": "q1"}]);
        assert_eq!(drop_blank_text(clean.as_array().unwrap()), None);
        assert!(!may_adapt(
            &parse_value(&json!({"model": "m", "messages": clean})).unwrap(),
            traits
        ));
    }

    #[test]
    fn thinking_signature_survives_byte_exact() {
        // A signature with characters that JSON may escape (`/`, `+`, `=`) and an
        // escaped form in the input.
        let raw = br#"{"model":"m","max_tokens":2048,"messages":[
            {"role":"user","content":"hi"},
            {"role":"assistant","content":[{"type":"thinking","thinking":"hmm",
              "signature":"Ab+/\u002Bcd==\/x"},{"type":"text","text":"hello"}]},
            {"role":"user","content":"again"}]}"#;
        let req = parse_request(raw).unwrap();
        let Part::Thinking { signature, .. } = &req.messages[1].content[0] else {
            panic!("expected thinking")
        };
        assert_eq!(signature.as_deref(), Some("Ab+/+cd==/x"));
        let bytes =
            serde_json::to_vec(&crate::Wire::Anthropic.encode_request(&req).unwrap()).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r#""signature":"Ab+/+cd==/x""#), "{text}");
        let again = parse_request(&bytes).unwrap();
        assert_eq!(again.messages[1].content[0], req.messages[1].content[0]);
    }

    #[test]
    fn encode_request_merges_orders_and_drops_unsigned_thinking() {
        let req = Request {
            model: "claude-haiku-4-5".into(),
            messages: vec![
                Message::text(Role::User, "a"),
                // Empty text is refused by the API and carries nothing: dropped.
                Message::text(Role::User, ""),
                Message::text(Role::User, "b"),
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Part::Thinking { text: "from another provider".into(), signature: None },
                        Part::Text(TextBlock::new("calling")),
                        Part::ToolCall(ToolCall {
                            id: "c1".into(),
                            name: "f".into(),
                            arguments: String::new(),
                            signature: None,
                        }),
                    ],
                },
                Message::text(Role::User, "text before result"),
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: Some("f".into()),
                        content: vec![Part::Text(TextBlock::new("42"))],
                        is_error: false,
                    })],
                },
                // Only unsigned thinking: the message vanishes, turns still alternate.
                Message {
                    role: Role::Assistant,
                    content: vec![Part::Thinking { text: "x".into(), signature: None }],
                },
                Message::text(Role::System, "be brief"),
            ],
            ..Request::default()
        };
        let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert!(body.get("stream").is_none());
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "a"},
                                             {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "calling"},
                    {"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1",
                     "content": [{"type": "text", "text": "42"}]},
                    {"type": "text", "text": "text before result"},
                    {"type": "text", "text": "<system-reminder>\nbe brief\n</system-reminder>"}]}
            ])
        );
    }

    #[test]
    fn encode_request_options() {
        let base = Request {
            model: "m".into(),
            messages: vec![Message::text(Role::User, "hi")],
            tools: vec![Tool {
                name: "noargs".into(),
                description: None,
                parameters: Value::Null,
                strict: Some(true),
                cache_control: None,
                freeform: None,
                namespace: None,
            }],
            ..Request::default()
        };

        // Thinking: budget raised to the minimum, max_tokens raised above it, sampling
        // parameters the API refuses with thinking dropped.
        let req = Request {
            max_tokens: Some(500),
            temperature: Some(0.2),
            top_k: Some(5),
            top_p: Some(0.5),
            reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(10) }),
            parallel_tool_calls: Some(false),
            response_format: Some(ResponseFormat::JsonObject),
            ..base.clone()
        };
        let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
        assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
        assert_eq!(body["max_tokens"], 2048);
        for field in ["temperature", "top_k", "top_p"] {
            assert!(body.get(field).is_none(), "{field}");
        }
        assert_eq!(body["tool_choice"], json!({"type": "auto", "disable_parallel_tool_use": true}));
        assert_eq!(
            body["tools"][0],
            json!({"name": "noargs", "strict": true,
                   "input_schema": {"type": "object", "properties": {}}})
        );
        assert_eq!(body["system"], json!([{"type": "text", "text": JSON_OBJECT_INSTRUCTION}]));

        // The budget must be strictly below max_tokens: equal is raised too, above is kept.
        let at = |max_tokens: u64| {
            let req = Request {
                max_tokens: Some(max_tokens),
                reasoning: Some(Reasoning {
                    enabled: true,
                    effort: None,
                    budget_tokens: Some(4000),
                }),
                ..base.clone()
            };
            crate::Wire::Anthropic.encode_request(&req).unwrap()["max_tokens"].as_u64().unwrap()
        };
        assert_eq!(at(4000), 5024);
        assert_eq!(at(4001), 4001);

        // Effort only: its budget; explicit disable: no thinking, sampling kept.
        let effort = Request {
            max_tokens: Some(64000),
            reasoning: Some(Reasoning {
                enabled: true,
                effort: Some(Effort::Low),
                budget_tokens: None,
            }),
            ..base.clone()
        };
        assert_eq!(
            crate::Wire::Anthropic.encode_request(&effort).unwrap()["thinking"]["budget_tokens"],
            2048
        );
        let off = Request {
            temperature: Some(0.2),
            top_k: Some(5),
            reasoning: Some(Reasoning { enabled: false, effort: None, budget_tokens: None }),
            tool_choice: Some(ToolChoice::Required),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "person".into(),
                schema: json!({"type": "object"}),
                strict: Some(true),
                description: None,
            }),
            ..base.clone()
        };
        let body = crate::Wire::Anthropic.encode_request(&off).unwrap();
        assert!(body.get("thinking").is_none());
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["top_k"], 5);
        assert_eq!(body["tool_choice"], json!({"type": "any"}));
        assert_eq!(
            body["output_config"],
            json!({"format": {"type": "json_schema", "schema": {"type": "object"}}})
        );

        // Invalid tool arguments are an error, not a silent `{}`.
        let bad = Request {
            messages: vec![Message {
                role: Role::Assistant,
                content: vec![Part::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{not json".into(),
                    signature: None,
                })],
            }],
            ..base
        };
        assert!(matches!(
            crate::Wire::Anthropic.encode_request(&bad),
            Err(ProtocolError::InvalidBody(_))
        ));
    }

    #[test]
    fn parses_options_and_structured_output() {
        let req = parse_value(&json!({
            "model": "claude-opus-4-6", "max_tokens": 100, "top_p": 0.9, "top_k": 40,
            "stop_sequences": ["\n\nHuman:"],
            "system": "be terse",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "t", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "t", "disable_parallel_tool_use": true},
            "thinking": {"type": "adaptive"},
            "output_config": {"effort": "max",
                              "format": {"type": "json_schema", "schema": {"type": "object"}}}
        }))
        .unwrap();
        assert_eq!(req.system, vec![TextBlock::new("be terse")]);
        assert_eq!(req.top_p, Some(0.9));
        assert_eq!(req.top_k, Some(40));
        assert_eq!(req.stop, vec!["\n\nHuman:".to_owned()]);
        assert!(!req.stream);
        assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "t".into() }));
        assert_eq!(req.parallel_tool_calls, Some(false));
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: true, effort: Some(Effort::Max), budget_tokens: None })
        );
        assert_eq!(
            req.response_format,
            Some(ResponseFormat::JsonSchema {
                name: "response".into(),
                schema: json!({"type": "object"}),
                strict: None,
                description: None,
            })
        );

        // Beta `output_format`, `any`, disabled thinking.
        let req = parse_value(&json!({
            "model": "m", "max_tokens": 1, "messages": [],
            "tool_choice": {"type": "any"},
            "thinking": {"type": "disabled"},
            "output_format": {"type": "json_schema", "schema": {"type": "array"}}
        }))
        .unwrap();
        assert_eq!(req.tool_choice, Some(ToolChoice::Required));
        assert_eq!(req.parallel_tool_calls, None);
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: false, effort: None, budget_tokens: None })
        );
        assert!(matches!(
            req.response_format,
            Some(ResponseFormat::JsonSchema { ref schema, .. }) if *schema == json!({"type": "array"})
        ));

        // `none`; effort without thinking.
        let req = parse_value(&json!({
            "model": "m", "messages": [], "tool_choice": {"type": "none"},
            "output_config": {"effort": "low"}
        }))
        .unwrap();
        assert_eq!(req.tool_choice, Some(ToolChoice::None));
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: true, effort: Some(Effort::Low), budget_tokens: None })
        );
        assert_eq!(req.max_tokens, None);
    }

    #[test]
    fn malformed_requests_name_the_field() {
        let err = |v: Value| match parse_value(&v) {
            Err(ProtocolError::InvalidBody(msg)) => msg,
            other => panic!("expected InvalidBody, got {other:?}"),
        };
        assert!(matches!(parse_request(b"{not json"), Err(ProtocolError::InvalidBody(_))));
        assert!(matches!(parse_request(b"[1,2]"), Err(ProtocolError::InvalidBody(_))));
        assert!(err(json!({"messages": []})).starts_with("model"));
        assert!(err(json!({"model": "m"})).starts_with("messages"));
        assert!(
            err(json!({"model": "m", "messages": [], "max_tokens": "many"}))
                .starts_with("max_tokens:")
        );
        let msg = err(json!({"model": "m", "messages": [
            {"role": "user", "content": "ok"},
            {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]}));
        assert!(msg.starts_with("messages[1].content[0]:") && msg.contains("`id`"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [{"role": "bot", "content": "x"}]}));
        assert!(msg.starts_with("messages[0].role"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [{"role": "user", "content": 5}]}));
        assert!(msg.starts_with("messages[0].content"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "x", "content": [{"type": "text"}]}]}]}));
        assert!(msg.starts_with("messages[0].content[0].content[0]:"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [], "system": [{"type": "text"}]}));
        assert!(msg.starts_with("system[0]:"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [], "tools": [{"input_schema": {}}]}));
        assert!(msg.starts_with("tools[0]:"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [], "tool_choice": {"type": "tool"}}));
        assert!(msg.starts_with("tool_choice.name"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [], "tool_choice": {"type": "sometimes"}}));
        assert!(msg.starts_with("tool_choice.type"), "{msg}");
        let msg = err(json!({"model": "m", "messages": [],
                            "output_config": {"format": {"type": "json_schema"}}}));
        assert!(msg.starts_with("output_config.format.schema"), "{msg}");
    }

    fn realistic_response() -> Value {
        json!({
            "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [
                {"type": "thinking", "thinking": "The user wants the weather.", "signature": SIGNATURE},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "text", "text": "Let me check.", "citations": null},
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
                {"type": "tool_use", "id": "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "name": "get_weather",
                 "input": {"location": "San Francisco, CA", "unit": "celsius"}}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": null,
            "usage": {"input_tokens": 12, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 2000, "output_tokens": 87,
                      "service_tier": "standard"}
        })
    }

    #[test]
    fn parses_a_realistic_response() {
        let resp = parse_response(&serde_json::to_vec(&realistic_response()).unwrap()).unwrap();
        assert_eq!(
            resp,
            Response {
                id: "msg_01XFDUDYJgAACzvnptvVoYEL".into(),
                model: "claude-sonnet-4-5-20250929".into(),
                content: vec![
                    Part::Thinking {
                        text: "The user wants the weather.".into(),
                        signature: Some(SIGNATURE.into())
                    },
                    Part::RedactedThinking { data: "EmwKAhgBEgy3va3pzix".into() },
                    Part::Text(TextBlock::new("Let me check.")),
                    Part::ToolCall(ToolCall {
                        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                        name: "get_weather".into(),
                        arguments: r#"{"location":"San Francisco, CA","unit":"celsius"}"#.into(),
                        signature: None,
                    }),
                ],
                stop_reason: Some(StopReason::ToolUse),
                stop_sequence: None,
                usage: Usage {
                    input_tokens: Some(2112),
                    output_tokens: Some(87),
                    cache_read_tokens: Some(2000),
                    cache_write_tokens: Some(100),
                    reasoning_tokens: None,
                },
            }
        );
    }

    #[test]
    fn encodes_a_response() {
        let resp = Response {
            id: "msg_1".into(),
            model: "gpt-5".into(),
            content: vec![
                Part::Thinking { text: "unsigned".into(), signature: None },
                Part::Text(TextBlock::new("hi")),
                Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "f".into(),
                    arguments: r#"{"a":1}"#.into(),
                    signature: None,
                }),
                Part::ToolCall(ToolCall {
                    id: "call_2".into(),
                    name: "g".into(),
                    arguments: r#"{"a":"#.into(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::StopSequence),
            stop_sequence: Some("END".into()),
            usage: Usage {
                input_tokens: Some(1000),
                output_tokens: Some(5),
                cache_read_tokens: Some(900),
                cache_write_tokens: None,
                reasoning_tokens: Some(3),
            },
        };
        assert_eq!(
            encode_response(&resp),
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "gpt-5",
                "content": [
                    {"type": "thinking", "thinking": "unsigned", "signature": ""},
                    {"type": "text", "text": "hi"},
                    {"type": "tool_use", "id": "call_1", "name": "f", "input": {"a": 1}},
                    {"type": "tool_use", "id": "call_2", "name": "g", "input": {}}
                ],
                "stop_reason": "stop_sequence", "stop_sequence": "END",
                "usage": {"input_tokens": 100, "output_tokens": 5, "cache_read_input_tokens": 900}
            })
        );
        // Unknown counts: required fields get 0, optional ones are left out.
        let empty = Response { usage: Usage::default(), stop_reason: None, ..resp };
        let v = encode_response(&empty);
        assert_eq!(v["usage"], json!({"input_tokens": 0, "output_tokens": 0}));
        assert_eq!(v["stop_reason"], Value::Null);
        // And the unsigned thinking comes back unsigned.
        let back = parse_response(&serde_json::to_vec(&v).unwrap()).unwrap();
        assert_eq!(back.content[0], Part::Thinking { text: "unsigned".into(), signature: None });
    }

    #[test]
    fn response_errors() {
        assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
        let err = parse_response(
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(
            err,
            Err(ProtocolError::UpstreamError {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            })
        );
        let bad = parse_response(br#"{"id":"m","content":[{"type":"tool_use","id":"x"}]}"#);
        assert!(
            matches!(bad, Err(ProtocolError::MalformedUpstream(m)) if m.starts_with("content[0]"))
        );
    }

    #[test]
    fn parse_error_reads_only_anthropic_errors() {
        assert_eq!(
            parse_error(
                br#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: required"}}"#
            ),
            Some("max_tokens: required".into())
        );
        assert_eq!(parse_error(br#"{"error":{"message":"openai style"}}"#), None);
        assert_eq!(parse_error(br#"{"type":"message"}"#), None);
        assert_eq!(parse_error(b"Bad Gateway"), None);
    }

    // ---- stream decoding ----

    /// A recorded-style Anthropic stream: text, then a tool call whose JSON is split
    /// mid-token, then the final usage.
    const TRANSCRIPT: &str = concat!(
        "event: message_start\n",
        r#"data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":10240,"output_tokens":2,"service_tier":"standard"}}}"#,
        "\n\n",
        "event: content_block_start\n",
        r#"data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        "\n\n",
        "event: ping\n",
        r#"data: {"type": "ping"}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay, let"}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'s check the weather."}}"#,
        "\n\n",
        "event: content_block_stop\n",
        r#"data: {"type":"content_block_stop","index":0}"#,
        "\n\n",
        "event: content_block_start\n",
        r#"data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"locat"}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ion\": \"San Fra"}}"#,
        "\n\n",
        "event: content_block_delta\n",
        r#"data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ncisco, CA\"}"}}"#,
        "\n\n",
        "event: content_block_stop\n",
        r#"data: {"type":"content_block_stop","index":1}"#,
        "\n\n",
        "event: message_delta\n",
        r#"data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
        "\n\n",
        "event: message_stop\n",
        r#"data: {"type":"message_stop"}"#,
        "\n\n",
    );

    /// Decode SSE bytes fed in `chunk`-byte pieces; returns events and the first error.
    fn decode(bytes: &[u8], chunk: usize) -> (Vec<StreamEvent>, Result<(), ProtocolError>) {
        let mut sse = SseDecoder::new();
        let mut decoder = Decoder::new();
        let mut raw = Vec::new();
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk.max(1)) {
            sse.push(piece, &mut raw).unwrap();
            for ev in raw.drain(..) {
                if let Err(e) = decoder.push(&ev, &mut out) {
                    return (out, Err(e));
                }
            }
        }
        sse.finish(&mut raw);
        for ev in raw.drain(..) {
            if let Err(e) = decoder.push(&ev, &mut out) {
                return (out, Err(e));
            }
        }
        let result = decoder.finish(&mut out);
        (out, result)
    }

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_read_tokens: Some(read),
            cache_write_tokens: Some(write),
            reasoning_tokens: None,
        }
    }

    #[test]
    fn decodes_a_recorded_stream() {
        let (events, result) = decode(TRANSCRIPT.as_bytes(), 7);
        result.unwrap();
        let text = |t: &str| Delta::Text { text: t.into() };
        let args = |j: &str| Delta::ToolArguments { json: j.into() };
        assert_eq!(
            events,
            vec![
                StreamEvent::Start {
                    id: "msg_014p7gG3wDgGV9EUtLvnow3U".into(),
                    model: "claude-sonnet-4-5-20250929".into()
                },
                StreamEvent::Usage { usage: usage(10712, 2, 10240, 0) },
                StreamEvent::BlockStart { index: 0, kind: BlockKind::Text },
                StreamEvent::Delta { index: 0, delta: text("Okay, let") },
                StreamEvent::Delta { index: 0, delta: text("'s check the weather.") },
                StreamEvent::BlockStop { index: 0 },
                StreamEvent::BlockStart {
                    index: 1,
                    kind: BlockKind::ToolCall {
                        id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".into(),
                        name: "get_weather".into()
                    }
                },
                StreamEvent::Delta { index: 1, delta: args("") },
                StreamEvent::Delta { index: 1, delta: args("{\"locat") },
                StreamEvent::Delta { index: 1, delta: args("ion\": \"San Fra") },
                StreamEvent::Delta { index: 1, delta: args("ncisco, CA\"}") },
                StreamEvent::BlockStop { index: 1 },
                StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
                StreamEvent::Usage { usage: usage(10712, 89, 10240, 0) },
            ]
        );
        let mut acc = ResponseAccumulator::default();
        events.iter().for_each(|e| acc.push(e));
        let resp = acc.finish();
        let Part::ToolCall(call) = &resp.content[1] else { panic!("expected a tool call") };
        assert_eq!(call.arguments, r#"{"location": "San Francisco, CA"}"#);
    }

    #[test]
    fn decoder_renumbers_around_server_blocks_and_reads_thinking() {
        let lines = [
            r#"{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me search."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"x\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"content_block_start","index":3,"content_block":{"type":"redacted_thinking","data":"opaque"}}"#,
            r#"{"type":"content_block_stop","index":3}"#,
            r#"{"type":"content_block_start","index":4,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"citations_delta","citation":{}}}"#,
            r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"Found."}}"#,
            r#"{"type":"content_block_stop","index":4}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for data in lines {
            // No `event:` names: the decoder goes by the data's `type`.
            decoder.push(&SseEvent { data: data.into(), ..SseEvent::default() }, &mut out).unwrap();
        }
        decoder.finish(&mut out).unwrap();
        let starts: Vec<(usize, BlockKind)> = out
            .iter()
            .filter_map(|e| match e {
                StreamEvent::BlockStart { index, kind } => Some((*index, kind.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            vec![
                (0, BlockKind::Thinking),
                (1, BlockKind::RedactedThinking { data: "opaque".into() }),
                (2, BlockKind::Text)
            ]
        );
        let mut acc = ResponseAccumulator::default();
        out.iter().for_each(|e| acc.push(e));
        let resp = acc.finish();
        assert_eq!(
            resp.content,
            vec![
                Part::Thinking { text: "Let me search.".into(), signature: Some("c2ln".into()) },
                Part::RedactedThinking { data: "opaque".into() },
                Part::Text(TextBlock::new("Found.")),
            ]
        );
        assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(
            resp.usage,
            Usage {
                input_tokens: Some(12),
                output_tokens: Some(30),
                cache_read_tokens: Some(7),
                ..Usage::default()
            }
        );
    }

    #[test]
    fn decoder_error_paths() {
        // An error event mid-stream.
        let stream = concat!(
            "event: message_start\n",
            r#"data: {"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":1,"output_tokens":1}}}"#,
            "\n\n",
            "event: error\n",
            r#"data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
            "\n\n",
        );
        let (_, result) = decode(stream.as_bytes(), 5);
        assert_eq!(
            result,
            Err(ProtocolError::UpstreamError {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            })
        );

        // Truncated: everything but message_delta / message_stop.
        let cut = TRANSCRIPT.find("event: message_delta").unwrap();
        let (events, result) = decode(&TRANSCRIPT.as_bytes()[..cut], 64);
        assert_eq!(
            result,
            Err(ProtocolError::MalformedUpstream("stream ended before message_stop".into()))
        );
        assert!(!events.iter().any(|e| matches!(e, StreamEvent::Stop { .. })));

        // Garbage data, content before message_start, delta for a block never opened.
        let mut d = Decoder::new();
        let ev = |data: &str| SseEvent { event: Some("x".into()), data: data.into(), id: None };
        assert!(matches!(
            d.push(&ev("not json"), &mut Vec::new()),
            Err(ProtocolError::MalformedUpstream(_))
        ));
        assert!(matches!(
            d.push(&ev(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#), &mut Vec::new()),
            Err(ProtocolError::MalformedUpstream(_))
        ));
        d.push(
            &ev(r#"{"type":"message_start","message":{"id":"m","model":"c"}}"#),
            &mut Vec::new(),
        )
        .unwrap();
        assert!(matches!(
            d.push(&ev(r#"{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"x"}}"#), &mut Vec::new()),
            Err(ProtocolError::MalformedUpstream(_))
        ));
    }

    // ---- stream encoding ----

    fn encode_events(events: &[StreamEvent]) -> Vec<SseEvent> {
        let mut enc = Encoder::new();
        let mut bytes = Vec::new();
        for e in events {
            enc.push(e, &mut bytes);
        }
        enc.finish(&mut bytes);
        let mut sse = SseDecoder::new();
        let mut out = Vec::new();
        sse.push(&bytes, &mut out).unwrap();
        sse.finish(&mut out);
        out
    }

    fn data(ev: &SseEvent) -> Value {
        serde_json::from_str(&ev.data).unwrap()
    }

    #[test]
    fn encoder_holds_message_start_for_early_usage() {
        let out = encode_events(&[
            StreamEvent::Start { id: "msg_1".into(), model: "claude".into() },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: Some(1500),
                    output_tokens: Some(1),
                    cache_read_tokens: Some(1000),
                    cache_write_tokens: Some(200),
                    reasoning_tokens: None,
                },
            },
            StreamEvent::BlockStart { index: 0, kind: BlockKind::Text },
            StreamEvent::Delta { index: 0, delta: Delta::Text { text: "hi".into() } },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None },
            StreamEvent::Usage { usage: Usage { output_tokens: Some(12), ..Usage::default() } },
        ]);
        let names: Vec<&str> = out.iter().map(|e| e.event.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            data(&out[0]),
            json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": 300, "output_tokens": 1,
                          "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}}})
        );
        assert_eq!(
            data(&out[1]),
            json!({"type": "content_block_start", "index": 0,
                   "content_block": {"type": "text", "text": ""}})
        );
        assert_eq!(
            data(&out[2]),
            json!({"type": "content_block_delta", "index": 0,
                   "delta": {"type": "text_delta", "text": "hi"}})
        );
        assert_eq!(
            data(&out[4]),
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"input_tokens": 300, "output_tokens": 12,
                             "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}})
        );
        assert_eq!(data(&out[5]), json!({"type": "message_stop"}));
    }

    #[test]
    fn encoder_takes_usage_after_stop_and_closes_blocks() {
        // OpenAI-style upstream: usage after the finish reason, no explicit BlockStop.
        let out = encode_events(&[
            StreamEvent::Start { id: "chatcmpl-1".into(), model: "gpt".into() },
            StreamEvent::BlockStart {
                index: 0,
                kind: BlockKind::ToolCall { id: "call_1".into(), name: "f".into() },
            },
            StreamEvent::Delta { index: 0, delta: Delta::ToolArguments { json: "{\"a\":".into() } },
            StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
            StreamEvent::Usage {
                usage: Usage { input_tokens: Some(40), output_tokens: Some(9), ..Usage::default() },
            },
        ]);
        let names: Vec<&str> = out.iter().map(|e| e.event.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            data(&out[0])["message"]["usage"],
            json!({"input_tokens": 0, "output_tokens": 0})
        );
        assert_eq!(
            data(&out[1])["content_block"],
            json!({"type": "tool_use", "id": "call_1", "name": "f", "input": {}})
        );
        assert_eq!(
            data(&out[2])["delta"],
            json!({"type": "input_json_delta", "partial_json": "{\"a\":"})
        );
        assert_eq!(
            data(&out[4]),
            json!({"type": "message_delta",
                   "delta": {"stop_reason": "tool_use", "stop_sequence": null},
                   "usage": {"input_tokens": 40, "output_tokens": 9}})
        );
    }

    #[test]
    fn encoder_error_event() {
        let mut enc = Encoder::new();
        let mut bytes = Vec::new();
        enc.push(&StreamEvent::Start { id: "m".into(), model: "c".into() }, &mut bytes);
        enc.push(&StreamEvent::BlockStart { index: 0, kind: BlockKind::Text }, &mut bytes);
        bytes.clear();
        let err = ErrorBody::new(529, ErrorKind::Overloaded, "upstream_overloaded", "try later");
        enc.error(&err, &mut bytes);
        enc.finish(&mut bytes); // nothing more after an error
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, format!("event: error\ndata: {}\n\n", err.to_anthropic()));
        // And our own decoder reads it back as an upstream error.
        let (_, result) = decode(
            format!("event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{}}}}\n\n{text}")
                .as_bytes(),
            3,
        );
        assert_eq!(
            result,
            Err(ProtocolError::UpstreamError {
                kind: "overloaded_error".into(),
                message: "try later".into()
            })
        );
    }

    // ---- property tests ----

    /// Text with something in it: blank text is dropped on the way to Anthropic,
    /// which refuses it (tested on its own), so it does not round-trip.
    fn text_strategy() -> impl Strategy<Value = String> {
        "\\PC{0,8}[a-zA-Z0-9\u{e9}\u{4e2d}]\\PC{0,8}"
    }

    fn cache_control() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![Just(None), Just(Some(json!({"type": "ephemeral"})))]
    }

    fn text_part() -> impl Strategy<Value = Part> {
        (text_strategy(), cache_control())
            .prop_map(|(text, cache_control)| Part::Text(TextBlock { text, cache_control }))
    }

    fn image_part_strategy() -> impl Strategy<Value = Part> {
        let source = prop_oneof![
            (
                prop::sample::select(vec!["image/png", "image/jpeg", "image/webp"]),
                "[A-Za-z0-9+/]{4,24}"
            )
                .prop_map(|(m, data)| ImageSource::Base64 { media_type: m.into(), data }),
            "[a-z]{1,8}"
                .prop_map(|p| ImageSource::Url { url: format!("https://example.com/{p}.png") }),
        ];
        (source, cache_control()).prop_map(|(source, cache_control)| {
            Part::Image(Image { source, detail: None, cache_control })
        })
    }

    fn json_leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "\\PC{0,8}".prop_map(Value::String),
        ]
    }

    fn arguments() -> impl Strategy<Value = String> {
        let value = json_leaf().prop_recursive(2, 12, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        });
        prop::collection::btree_map("[a-z_]{1,6}", value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
    }

    fn tool_call() -> impl Strategy<Value = Part> {
        ("toolu_[A-Za-z0-9]{1,10}", "[a-z_]{1,10}", arguments()).prop_map(
            |(id, name, arguments)| {
                Part::ToolCall(ToolCall { id, name, arguments, signature: None })
            },
        )
    }

    fn signed_thinking() -> impl Strategy<Value = Part> {
        ("\\PC{0,16}", "[A-Za-z0-9+/]{8,40}={0,2}")
            .prop_map(|(text, sig)| Part::Thinking { text, signature: Some(sig) })
    }

    fn tool_result() -> impl Strategy<Value = Part> {
        (
            "toolu_[A-Za-z0-9]{1,10}",
            prop::collection::vec(prop_oneof![text_part(), image_part_strategy()], 0..3),
            any::<bool>(),
        )
            .prop_map(|(call_id, content, is_error)| {
                Part::ToolResult(ToolResult { call_id, name: None, content, is_error })
            })
    }

    fn user_content() -> impl Strategy<Value = Vec<Part>> {
        (
            prop::collection::vec(tool_result(), 0..3),
            prop::collection::vec(prop_oneof![3 => text_part(), 1 => image_part_strategy()], 0..3),
        )
            .prop_filter("non-empty", |(a, b)| !a.is_empty() || !b.is_empty())
            .prop_map(|(mut results, rest)| {
                results.extend(rest);
                results
            })
    }

    fn assistant_content() -> impl Strategy<Value = Vec<Part>> {
        (
            prop::option::of(signed_thinking()),
            prop::option::of(
                "[A-Za-z0-9+/]{4,20}".prop_map(|data| Part::RedactedThinking { data }),
            ),
            prop::collection::vec(prop_oneof![text_part(), tool_call()], 1..4),
        )
            .prop_map(|(thinking, redacted, rest)| {
                thinking.into_iter().chain(redacted).chain(rest).collect()
            })
    }

    fn messages() -> impl Strategy<Value = Vec<Message>> {
        prop::collection::vec((user_content(), assistant_content()), 1..4)
            .prop_flat_map(|pairs| {
                let n = pairs.len() * 2;
                (Just(pairs), (n - 1)..=n)
            })
            .prop_map(|(pairs, len)| {
                pairs
                    .into_iter()
                    .flat_map(|(u, a)| {
                        [
                            Message { role: Role::User, content: u },
                            Message { role: Role::Assistant, content: a },
                        ]
                    })
                    .take(len)
                    .collect()
            })
    }

    fn tools() -> impl Strategy<Value = Vec<Tool>> {
        prop::collection::vec(
            (
                "[a-z_]{1,10}",
                prop::option::of("\\PC{1,20}"),
                prop::collection::btree_set("[a-z]{1,6}", 0..3),
                prop::option::of(any::<bool>()),
                cache_control(),
            )
                .prop_map(|(name, description, props, strict, cache_control)| {
                    let properties: Map<String, Value> =
                        props.into_iter().map(|p| (p, json!({"type": "string"}))).collect();
                    Tool {
                        name,
                        description,
                        parameters: json!({"type": "object", "properties": properties}),
                        strict,
                        cache_control,
                        freeform: None,
                        namespace: None,
                    }
                }),
            0..3,
        )
    }

    prop_compose! {
        fn request()(
            model in "[a-z0-9.-]{1,20}",
            system in prop::collection::vec(
                (text_strategy(), cache_control())
                    .prop_map(|(text, cache_control)| TextBlock { text, cache_control }),
                0..3),
            messages in messages(),
            tools in tools(),
            choice in 0usize..5,
            disable_parallel in any::<bool>(),
            thinking in prop::option::of(1024u64..40000),
            extra_tokens in 1u64..20000,
            max_tokens in prop::option::of(1u64..100000),
            temperature in prop::option::of((0u32..=100).prop_map(|n| f64::from(n) / 100.0)),
            top_p in prop::option::of((95u32..=100).prop_map(|n| f64::from(n) / 100.0)),
            top_k in prop::option::of(1u64..500),
            stop in prop::collection::vec("\\PC{1,8}", 0..3),
            stream in any::<bool>(),
            schema in prop::option::of(Just(json!({"type": "object", "properties": {"a": {"type": "integer"}}}))),
            user in prop::option::of("[a-z0-9_]{1,20}"),
        ) -> Request {
            let tool_choice = match (tools.first(), choice) {
                (None, _) | (_, 0) => None,
                (Some(_), 1) => Some(ToolChoice::Auto),
                (Some(_), 2) => Some(ToolChoice::None),
                (Some(_), 3) => Some(ToolChoice::Required),
                (Some(t), _) => Some(ToolChoice::Tool { name: t.name.clone() }),
            };
            // `disable_parallel_tool_use` lives on a tool_choice other than `none`.
            let parallel_tool_calls = match &tool_choice {
                Some(ToolChoice::None) | None => None,
                Some(_) => disable_parallel.then_some(false),
            };
            // Representable thinking: a budget strictly below max_tokens, and no
            // sampling parameters the API refuses with it.
            let (reasoning, max_tokens, temperature, top_k) = match thinking {
                Some(budget) => (
                    Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(budget) }),
                    Some(budget + extra_tokens),
                    None,
                    None,
                ),
                None => (None, Some(max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)), temperature, top_k),
            };
            Request {
                model,
                stream_usage: false,
                system,
                messages,
                tools,
                tool_choice,
                parallel_tool_calls,
                max_tokens,
                temperature,
                top_p,
                top_k,
                stop,
                stream,
                reasoning,
                response_format: schema.map(|schema| ResponseFormat::JsonSchema {
                    name: SCHEMA_NAME.into(),
                    schema,
                    strict: None,
                    description: None,
                }),
                user,
                metadata: None,
            }
        }
    }

    fn stop_reason() -> impl Strategy<Value = StopReason> {
        // The reasons Anthropic can express one-to-one.
        prop::sample::select(vec![
            StopReason::EndTurn,
            StopReason::MaxTokens,
            StopReason::StopSequence,
            StopReason::ToolUse,
            StopReason::Refusal,
            StopReason::PauseTurn,
        ])
    }

    prop_compose! {
        fn response()(
            id in "msg_[A-Za-z0-9]{1,24}",
            model in "[a-z0-9.-]{1,20}",
            content in prop::collection::vec(prop_oneof![
                "\\PC{0,24}".prop_map(|t| Part::Text(TextBlock::new(t))),
                ("\\PC{0,24}", prop::option::of("[A-Za-z0-9+/]{8,40}={0,2}"))
                    .prop_map(|(text, signature)| Part::Thinking { text, signature }),
                "[A-Za-z0-9+/]{4,20}".prop_map(|data| Part::RedactedThinking { data }),
                ("toolu_[A-Za-z0-9]{1,10}", "[a-z_]{1,10}", arguments())
                    .prop_map(|(id, name, arguments)| Part::ToolCall(ToolCall { id, name, arguments, signature: None })),
            ], 0..5),
            stop_reason in stop_reason(),
            stop_sequence in prop::option::of("\\PC{1,8}"),
            // Input and output are always reported for a finished answer; the cache
            // counts are optional.
            uncached in 0u64..100_000,
            output in 0u64..100_000,
            read in prop::option::of(0u64..100_000),
            write in prop::option::of(0u64..100_000),
        ) -> Response {
            Response {
                id,
                model,
                content,
                stop_reason: Some(stop_reason),
                stop_sequence,
                usage: Usage {
                    input_tokens: Some(uncached + read.unwrap_or(0) + write.unwrap_or(0)),
                    output_tokens: Some(output),
                    cache_read_tokens: read,
                    cache_write_tokens: write,
                    reasoning_tokens: None,
                },
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn request_round_trips(mut req in request()) {
            let body = serde_json::to_vec(&crate::Wire::Anthropic.encode_request(&req).unwrap()).unwrap();
            let back = parse_request(&body).unwrap();
            // A tool loop without thinking of its own goes without thinking.
            if continues_without_thinking(&req) {
                req.reasoning = None;
            }
            prop_assert_eq!(back, req);
        }

        #[test]
        fn response_round_trips(resp in response()) {
            let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
            let back = parse_response(&body).unwrap();
            prop_assert_eq!(back, resp);
        }

        #[test]
        fn usage_only_parse_agrees_with_the_whole_parse(resp in response()) {
            let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
            let whole = parse_response(&body).unwrap();
            prop_assert_eq!(parse_usage(&body).unwrap().unwrap_or_default(), whole.usage);
        }

        #[test]
        fn stream_round_trips_through_any_chunking(
            resp in response(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
        ) {
            let mut enc = Encoder::new();
            let mut bytes = Vec::new();
            for event in response_to_events(&resp) {
                enc.push(&event, &mut bytes);
            }
            enc.finish(&mut bytes);

            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut sse = SseDecoder::new();
            let mut decoder = Decoder::new();
            let mut raw = Vec::new();
            let mut events = Vec::new();
            let mut prev = 0;
            for cut in cuts.into_iter().chain([bytes.len()]) {
                sse.push(&bytes[prev..cut], &mut raw).unwrap();
                prev = cut;
                for ev in raw.drain(..) {
                    decoder.push(&ev, &mut events).unwrap();
                }
            }
            sse.finish(&mut raw);
            for ev in raw.drain(..) {
                decoder.push(&ev, &mut events).unwrap();
            }
            decoder.finish(&mut events).unwrap();

            let mut acc = ResponseAccumulator::default();
            events.iter().for_each(|e| acc.push(e));
            prop_assert_eq!(acc.finish(), resp);
        }
    }

    #[test]
    fn effort_controlled_models_get_adaptive_thinking_and_no_refused_sampling() {
        let adaptive = ModelTraits {
            reasoning: ReasoningControl::Effort,
            sampling: true,
            takes_max_tokens: true,
        };
        let strict = ModelTraits {
            reasoning: ReasoningControl::Effort,
            sampling: false,
            takes_max_tokens: true,
        };
        let base = Request {
            model: "claude-opus-4-7".into(),
            messages: vec![Message::text(Role::User, "hi")],
            max_tokens: Some(500),
            temperature: Some(0.2),
            top_p: Some(0.97),
            top_k: Some(5),
            ..Request::default()
        };
        let with = |reasoning, format| Request {
            reasoning: Some(reasoning),
            response_format: format,
            ..base.clone()
        };
        let high = Reasoning { enabled: true, effort: Some(Effort::High), budget_tokens: None };

        // Effort: adaptive + effort beside the structured-output format; max_tokens as
        // asked (no budget to fit); sampling as with any thinking (top_p ≥ 0.95 kept).
        let schema = ResponseFormat::JsonSchema {
            name: "r".into(),
            schema: json!({"type": "object"}),
            strict: None,
            description: None,
        };
        let body = encode_request(&with(high.clone(), Some(schema)), adaptive).unwrap();
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(
            body["output_config"],
            json!({"effort": "high",
                   "format": {"type": "json_schema", "schema": {"type": "object"}}})
        );
        assert_eq!(body["max_tokens"], 500);
        assert_eq!(body["top_p"], 0.97);
        assert!(body.get("temperature").is_none() && body.get("top_k").is_none());

        // A budget maps to the nearest effort; minimal becomes low (Anthropic has none);
        // adaptive without an effort leaves the model's default.
        let budget = Reasoning { enabled: true, effort: None, budget_tokens: Some(8000) };
        let body = encode_request(&with(budget, None), adaptive).unwrap();
        assert_eq!(body["output_config"], json!({"effort": "medium"}));
        let minimal =
            Reasoning { enabled: true, effort: Some(Effort::Minimal), budget_tokens: None };
        let body = encode_request(&with(minimal, None), adaptive).unwrap();
        assert_eq!(body["output_config"]["effort"], "low");
        let default = Reasoning { enabled: true, effort: None, budget_tokens: None };
        let body = encode_request(&with(default, None), adaptive).unwrap();
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert!(body.get("output_config").is_none());

        // Models that refuse sampling parameters never get them, thinking or not.
        let off = Reasoning { enabled: false, effort: None, budget_tokens: None };
        for body in [
            encode_request(&with(off, None), strict).unwrap(),
            encode_request(&base, strict).unwrap(),
            encode_request(&with(high, None), strict).unwrap(),
        ] {
            for field in ["temperature", "top_p", "top_k"] {
                assert!(body.get(field).is_none(), "{field} in {body}");
            }
        }
        let body = encode_request(&base, adaptive).unwrap();
        assert_eq!((body["temperature"].clone(), body["top_k"].clone()), (json!(0.2), json!(5)));

        // The wire's default path infers the traits from the model name.
        let body = crate::Wire::Anthropic.encode_request(&base).unwrap();
        assert!(body.get("temperature").is_none(), "claude-opus-4-7 refuses sampling");
    }

    #[test]
    fn native_bodies_get_the_thinking_form_of_the_target_model() {
        let effort = ModelTraits {
            reasoning: ReasoningControl::Effort,
            sampling: false,
            takes_max_tokens: true,
        };
        let budget = ModelTraits {
            reasoning: ReasoningControl::Budget,
            sampling: true,
            takes_max_tokens: true,
        };
        let obj = |v: Value| v.as_object().cloned().unwrap();

        // enabled + budget to an effort model: adaptive + the nearest effort, beside an
        // existing output format; sampling parameters removed.
        let body = obj(json!({"max_tokens": 4000, "temperature": 1, "top_k": 3,
            "thinking": {"type": "enabled", "budget_tokens": 2000},
            "output_config": {"format": {"type": "json_schema", "schema": {}}}}));
        let edits = adapt_native(&body, &Request::default(), effort);
        assert_eq!(
            edits,
            vec![
                ("thinking", Some(json!({"type": "adaptive"}))),
                (
                    "output_config",
                    Some(json!({"format": {"type": "json_schema", "schema": {}}, "effort": "low"}))
                ),
                ("temperature", None),
                ("top_k", None),
            ]
        );
        // An effort the client already gave is kept.
        let body = obj(json!({"thinking": {"type": "enabled", "budget_tokens": 30000},
            "output_config": {"effort": "max"}}));
        assert_eq!(
            adapt_native(&body, &Request::default(), effort)[1].1,
            Some(json!({"effort": "max"}))
        );

        // adaptive to a budget model: enabled with the effort's budget, the effort
        // removed (and an output_config left empty removed), max_tokens above it.
        let body = obj(json!({"max_tokens": 1000, "thinking": {"type": "adaptive"},
            "output_config": {"effort": "high"}}));
        assert_eq!(
            adapt_native(&body, &Request::default(), budget),
            vec![
                ("thinking", Some(json!({"type": "enabled", "budget_tokens": 24576}))),
                ("output_config", None),
                ("max_tokens", Some(json!(24576 + 1024))),
            ]
        );

        // Forms that match (and disabled thinking) need nothing.
        for (body, traits) in [
            (json!({"thinking": {"type": "adaptive"}, "temperature": 1}), budget_free(effort)),
            (json!({"thinking": {"type": "enabled", "budget_tokens": 2000}}), budget),
            (json!({"thinking": {"type": "disabled"}, "temperature": 0.5}), budget),
        ] {
            assert!(
                adapt_native(&obj(body.clone()), &Request::default(), traits).is_empty(),
                "{body}"
            );
        }
    }

    #[test]
    fn foreign_tool_ids_map_deterministically_into_the_apis_pattern() {
        assert_eq!(tool_id("toolu_01A09q90qw90lq917835lq9"), "toolu_01A09q90qw90lq917835lq9");
        let mapped = tool_id("functions.get_weather:0");
        assert!(mapped.starts_with("functions_get_weather_0_") && is_tool_id(&mapped), "{mapped}");
        assert_eq!(mapped, tool_id("functions.get_weather:0"), "a call and its result pair");
        assert_ne!(mapped, tool_id("functions.get_weather_0"));
        let long = "c".repeat(65);
        assert!(is_tool_id(&tool_id(&long)) && tool_id(&long) != long);
        assert!(is_tool_id(&tool_id("")));
    }

    #[test]
    fn a_tool_loop_continues_without_thinking_when_its_turn_has_none_of_its_own() {
        let req = |assistant: Vec<Part>| Request {
            reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(2048) }),
            messages: vec![
                Message { role: Role::User, content: vec![Part::Text(TextBlock::new("go"))] },
                Message { role: Role::Assistant, content: assistant },
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: None,
                        content: vec![],
                        is_error: false,
                    })],
                },
            ],
            ..Request::default()
        };
        let call = Part::ToolCall(ToolCall {
            id: "c1".into(),
            name: "f".into(),
            arguments: "{}".into(),
            signature: None,
        });
        let foreign = Part::Thinking { text: "openai reasoning".into(), signature: None };
        let signed = Part::Thinking { text: "mine".into(), signature: Some("c2ln".into()) };
        assert!(continues_without_thinking(&req(vec![call.clone()])));
        assert!(continues_without_thinking(&req(vec![foreign, call.clone()])));
        assert!(!continues_without_thinking(&req(vec![signed, call.clone()])));
        let mut off = req(vec![call.clone()]);
        off.reasoning = None;
        assert!(!continues_without_thinking(&off));
        let traits = ModelTraits::infer(crate::Wire::Anthropic, "claude-sonnet-4-5");
        let body =
            encode_request(&req(vec![Part::Text(TextBlock::new("x")), call]), traits).unwrap();
        assert!(body.get("thinking").is_none(), "{body}");
    }

    /// `traits` with sampling parameters allowed.
    fn budget_free(traits: ModelTraits) -> ModelTraits {
        ModelTraits { sampling: true, ..traits }
    }
}
