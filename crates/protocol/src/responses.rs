//! The OpenAI Responses API (`POST /v1/responses`) as a client-facing format, streaming
//! and not. Codex speaks only this API (streaming, function tools, `function_call_output`
//! items), so the shapes below follow what Codex and the official SDKs send and read.
//!
//! Mapping decisions (anything not listed maps field for field):
//! - The gateway is stateless: `previous_response_id` and `item_reference` input items
//!   are refused with [`ProtocolError::Unsupported`]; clients must send the whole
//!   conversation (Codex does with `store: false`).
//! - `instructions` and the `system`/`developer` messages that come before any
//!   user/assistant/tool item form [`Request::system`]; later ones become
//!   [`Role::System`] messages. Consecutive items of the same role merge into one
//!   canonical message, so a `function_call` after an assistant message belongs to the
//!   same assistant turn.
//! - `reasoning` input items become [`Part::Thinking`] with the summary text (summary
//!   parts joined by a blank line; the raw `content` text when there is no summary).
//!   An `encrypted_content` this gateway sealed ([`crate::continuity`]) becomes the
//!   signed thinking or redacted thinking it stands for; another one (an OpenAI
//!   organisation's own) is not carried across providers. An item with neither
//!   summary nor content text is dropped. On the way out, signed thinking and
//!   redacted thinking get a sealed `encrypted_content` when a seal is given.
//! - `function` tools are translated as they are. `custom` (free-form) tools, such as
//!   Codex's `apply_patch`, become a function of one string argument `input` (its
//!   description carries the tool's grammar); `custom_tool_call` /
//!   `custom_tool_call_output` history items become tool calls with arguments
//!   `{"input": text}` and tool results; and the model's calls of such a tool go back
//!   to the client as `custom_tool_call` items with the text (streamed as
//!   `response.custom_tool_call_input.delta`/`.done` once the call is complete).
//!   `namespace` tools (Codex groups its sub-agent tools so) are flattened: each
//!   member becomes a tool named `<namespace>__<name>`, and calls (and history items
//!   with a `namespace`) map back to the namespace and the inner name.
//!   Hosted and special tools (`web_search`, `file_search`, `local_shell`,
//!   `computer_use`, `mcp`, …) cannot be run by another provider and are skipped, so
//!   the model never sees them.
//! - `store`, `include`, `prompt_cache_key`, `service_tier`, `truncation` and
//!   `text.verbosity` are accepted and ignored.
//! - Usage: when anything is known, the object carries all the fields the SDKs and
//!   Codex require (`input_tokens`, `output_tokens`, `total_tokens` and both details
//!   objects); counts the provider did not report are written as `0`. When nothing is
//!   known, `usage` is omitted. Cache writes have no Responses field (they are part of
//!   `input_tokens`).
//! - Stop reasons: `MaxTokens` → `status: "incomplete"` with reason
//!   `max_output_tokens`; `ContentFilter`/`Refusal` → `incomplete` with
//!   `content_filter`; everything else → `completed`. On the way back a completed
//!   response that contains a `function_call` item means [`StopReason::ToolUse`].
//! - Streaming: each canonical block becomes one output item. Usage and `Stop` may come
//!   in either order, so the terminal `response.completed` / `response.incomplete`
//!   event (carrying every item and the usage) is written by `finish()`.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{
    BlockKind, Delta, Document, DocumentSource, Effort, ErrorBody, Image, ImageSource, Message,
    Part, ProtocolError, Reasoning, Request, Response, ResponseFormat, Role, Seal, SseEvent,
    StopReason, StreamDecoder, StreamEncoder, StreamEvent, TextBlock, Tool, ToolCall, ToolChoice,
    ToolResult, Usage, sse, util,
};

const STATELESS: &str = "the gateway is stateless: previous_response_id/item_reference are not supported; send the full conversation";

/// Separator between reasoning summary parts when they are joined into one text.
const SUMMARY_SEPARATOR: &str = "\n\n";

/// Response id used when a stream fails or ends before the canonical `Start`.
const FALLBACK_ID: &str = "resp_switchyard";

// ---------------------------------------------------------------------------------
// Request: wire → canonical
// ---------------------------------------------------------------------------------

/// Parse a Responses API request body.
pub fn parse_request(body: &[u8]) -> Result<Request, ProtocolError> {
    parse_request_sealed(body, None)
}

/// [`parse_request`], opening the `encrypted_content` of reasoning items that
/// `seal` sealed (see [`crate::continuity`]): they become the thinking (with its
/// signature) or redacted thinking they stand for.
pub fn parse_request_sealed(
    body: &[u8],
    seal: Option<&dyn Seal>,
) -> Result<Request, ProtocolError> {
    let map = util::parse_object(body)?;
    if !matches!(map.get("previous_response_id"), None | Some(Value::Null)) {
        return Err(ProtocolError::Unsupported(STATELESS.into()));
    }
    let model: String =
        field(&map, "model")?.ok_or_else(|| ProtocolError::body("`model` is required"))?;

    let mut conv = Conversation::default();
    if let Some(instructions) = field::<String>(&map, "instructions")?
        && !instructions.is_empty()
    {
        conv.system.push(TextBlock::new(instructions));
    }
    match map.get("input") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => conv.push(Role::User, vec![text_part(text)]),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                parse_input_item(&mut conv, item, &format!("input[{i}]"), seal)?;
            }
        }
        Some(_) => {
            return Err(ProtocolError::body("input: expected a string or an array of items"));
        }
    }

    let user = match field::<String>(&map, "user")? {
        Some(user) => Some(user),
        None => field(&map, "safety_identifier")?,
    };
    Ok(Request {
        model,
        system: conv.system,
        messages: conv.messages,
        tools: parse_tools(map.get("tools"))?,
        tool_choice: parse_tool_choice(map.get("tool_choice"))?,
        parallel_tool_calls: field(&map, "parallel_tool_calls")?,
        max_tokens: field(&map, "max_output_tokens")?,
        temperature: field(&map, "temperature")?,
        top_p: field(&map, "top_p")?,
        top_k: None,
        stop: Vec::new(),
        stream: field(&map, "stream")?.unwrap_or(false),
        reasoning: parse_reasoning(field(&map, "reasoning")?)?,
        response_format: parse_text_format(field(&map, "text")?)?,
        user,
        metadata: field(&map, "metadata")?,
        stream_usage: false,
    })
}

/// The canonical messages being built from input items.
#[derive(Default)]
struct Conversation {
    system: Vec<TextBlock>,
    messages: Vec<Message>,
    /// A user, assistant or tool item has been seen: system items are now mid-conversation.
    started: bool,
}

impl Conversation {
    /// Append parts to the conversation, merging with the previous message of the same role.
    fn push(&mut self, role: Role, parts: Vec<Part>) {
        if parts.is_empty() {
            return;
        }
        if role != Role::System {
            self.started = true;
        }
        match self.messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(parts),
            _ => self.messages.push(Message { role, content: parts }),
        }
    }

    fn push_system(&mut self, parts: Vec<Part>, path: &str) -> Result<(), ProtocolError> {
        if self.started {
            self.push(Role::System, parts);
            return Ok(());
        }
        for part in parts {
            match part {
                Part::Text(block) => self.system.push(block),
                _ => {
                    return Err(ProtocolError::Unsupported(format!(
                        "{path}: only text is supported in leading system/developer messages"
                    )));
                }
            }
        }
        Ok(())
    }
}

#[derive(Deserialize)]
struct InFunctionCall {
    call_id: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct InCustomToolCall {
    call_id: String,
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
struct InFunctionCallOutput {
    call_id: String,
    #[serde(default)]
    output: Value,
}

/// A reasoning item, in a request or a response.
#[derive(Deserialize)]
struct WireReasoningItem {
    #[serde(default)]
    summary: Option<Vec<TextOnly>>,
    #[serde(default)]
    content: Option<Vec<TextOnly>>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

/// Any `{type, text}` piece where only the text matters (summary and reasoning parts).
#[derive(Deserialize)]
struct TextOnly {
    #[serde(default)]
    text: Option<String>,
}

fn parse_input_item(
    conv: &mut Conversation,
    item: &Value,
    path: &str,
    seal: Option<&dyn Seal>,
) -> Result<(), ProtocolError> {
    let obj = item
        .as_object()
        .ok_or_else(|| ProtocolError::body(format!("{path}: expected an object")))?;
    let ty = match obj.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        None | Some(Value::Null) if obj.contains_key("role") => "message",
        _ => return Err(ProtocolError::body(format!("{path}.type: expected a string"))),
    };
    match ty {
        "message" => {
            let role = obj
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| ProtocolError::body(format!("{path}.role: expected a string")))?;
            let content = obj
                .get("content")
                .ok_or_else(|| ProtocolError::body(format!("{path}.content is required")))?;
            let parts = parse_content(content, &format!("{path}.content"))?;
            match role {
                "user" => conv.push(Role::User, parts),
                "assistant" => conv.push(Role::Assistant, parts),
                "system" | "developer" => conv.push_system(parts, path)?,
                other => {
                    return Err(ProtocolError::body(format!(
                        "{path}.role: unknown role `{other}`"
                    )));
                }
            }
        }
        "function_call" => {
            let call: InFunctionCall = from_value(item, path)?;
            let arguments = match call.arguments {
                Value::String(text) => text,
                Value::Null => String::new(),
                other => other.to_string(),
            };
            let name = match &call.namespace {
                Some(ns) => qualified(ns, &call.name),
                None => call.name,
            };
            conv.push(
                Role::Assistant,
                vec![Part::ToolCall(ToolCall {
                    id: call.call_id,
                    name,
                    arguments,
                    signature: None,
                })],
            );
        }
        "custom_tool_call" => {
            let call: InCustomToolCall = from_value(item, path)?;
            conv.push(
                Role::Assistant,
                vec![Part::ToolCall(ToolCall {
                    id: call.call_id,
                    name: match &call.namespace {
                        Some(ns) => qualified(ns, &call.name),
                        None => call.name,
                    },
                    arguments: freeform_arguments(&call.input),
                    signature: None,
                })],
            );
        }
        "function_call_output" | "custom_tool_call_output" => {
            let result: InFunctionCallOutput = from_value(item, path)?;
            let content = match &result.output {
                Value::String(text) => vec![text_part(text)],
                Value::Array(parts) => parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| parse_content_part(p, &format!("{path}.output[{i}]")))
                    .collect::<Result<_, _>>()?,
                Value::Null => Vec::new(),
                _ => {
                    return Err(ProtocolError::body(format!(
                        "{path}.output: expected a string or an array of content parts"
                    )));
                }
            };
            conv.push(
                Role::User,
                vec![Part::ToolResult(ToolResult {
                    call_id: result.call_id,
                    name: None,
                    content,
                    is_error: false,
                })],
            );
        }
        "reasoning" => {
            let reasoning: WireReasoningItem = from_value(item, path)?;
            // Sealed by this gateway: exactly what the upstream needs to continue.
            let opened = seal
                .zip(reasoning.encrypted_content.as_deref())
                .and_then(|(seal, token)| crate::continuity::open_part(seal, token));
            if let Some(part) = opened {
                conv.push(Role::Assistant, vec![part]);
                return Ok(());
            }
            let text = reasoning_text(&reasoning);
            if !text.is_empty() {
                conv.push(Role::Assistant, vec![Part::Thinking { text, signature: None }]);
            }
        }
        "item_reference" => return Err(ProtocolError::Unsupported(STATELESS.into())),
        other => {
            return Err(ProtocolError::body(format!(
                "{path}: unsupported input item type `{other}`"
            )));
        }
    }
    Ok(())
}

fn parse_content(content: &Value, path: &str) -> Result<Vec<Part>, ProtocolError> {
    match content {
        Value::String(text) => Ok(vec![text_part(text)]),
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(i, p)| parse_content_part(p, &format!("{path}[{i}]")))
            .collect(),
        Value::Null => Ok(Vec::new()),
        _ => Err(ProtocolError::body(format!(
            "{path}: expected a string or an array of content parts"
        ))),
    }
}

fn parse_content_part(part: &Value, path: &str) -> Result<Part, ProtocolError> {
    let obj = part
        .as_object()
        .ok_or_else(|| ProtocolError::body(format!("{path}: expected an object")))?;
    let ty = obj
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| ProtocolError::body(format!("{path}.type: expected a string")))?;
    let string = |key: &str| {
        obj.get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| ProtocolError::body(format!("{path}.{key}: expected a string")))
    };
    match ty {
        "input_text" | "output_text" | "text" => Ok(text_part(string("text")?)),
        "refusal" => Ok(text_part(string("refusal")?)),
        "input_image" => {
            let url = match obj.get("image_url") {
                Some(Value::String(url)) => url.as_str(),
                // Tolerate the Chat Completions shape `{"url": …}`.
                Some(Value::Object(inner)) => {
                    inner.get("url").and_then(Value::as_str).ok_or_else(|| {
                        ProtocolError::body(format!("{path}.image_url.url: expected a string"))
                    })?
                }
                _ if obj.get("file_id").is_some_and(|v| !v.is_null()) => {
                    return Err(ProtocolError::Unsupported(format!(
                        "{path}: images by file_id are not supported; send image_url"
                    )));
                }
                _ => {
                    return Err(ProtocolError::body(format!(
                        "{path}.image_url: expected a string"
                    )));
                }
            };
            let detail = match obj.get("detail") {
                None | Some(Value::Null) => None,
                Some(Value::String(detail)) => Some(detail.clone()),
                Some(_) => {
                    return Err(ProtocolError::body(format!("{path}.detail: expected a string")));
                }
            };
            Ok(Part::Image(Image {
                source: ImageSource::from_openai_url(url),
                detail,
                cache_control: None,
            }))
        }
        "input_file" => input_file(obj, path),
        "input_audio" => {
            Err(ProtocolError::Unsupported(format!("{path}: `{ty}` content is not supported")))
        }
        other => Err(ProtocolError::body(format!("{path}: unknown content part type `{other}`"))),
    }
}

/// An `input_file` part: inline (`file_data`, a `data:` URI or bare base64, with its
/// `filename`) or by URL (`file_url`). A `file_id` names a file stored with one
/// OpenAI organisation, which no other provider (and no other key) can read.
fn input_file(obj: &Map<String, Value>, path: &str) -> Result<Part, ProtocolError> {
    let string = |key: &str| match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ProtocolError::body(format!("{path}.{key}: expected a string"))),
    };
    let filename = string("filename")?;
    let source = match (string("file_data")?, string("file_url")?) {
        (Some(data), _) => DocumentSource::from_openai_file_data(&data, filename.as_deref()),
        (None, Some(url)) => DocumentSource::Url { url, media_type: None },
        (None, None) => {
            return Err(match string("file_id")? {
                Some(id) => ProtocolError::Unsupported(format!(
                    "{path}: a file by file_id ({id}) cannot be translated: file ids belong to \
                     the OpenAI organisation that stored the file; send file_data or file_url"
                )),
                None => ProtocolError::body(format!(
                    "{path}: input_file needs file_data, file_url or file_id"
                )),
            });
        }
    };
    Ok(Part::Document(Document { filename, ..Document::new(source) }))
}

#[derive(Deserialize)]
struct InFunctionTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
}

#[derive(Deserialize)]
struct InCustomTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    format: Option<Value>,
}

/// The argument object a free-form tool's text travels in on other wires.
pub const FREEFORM_INPUT: &str = "input";

/// The JSON Schema other wires see for a free-form tool: one string, `input`,
/// described with the tool's grammar when it has one.
fn freeform_parameters(format: &Value) -> Value {
    let mut about = "The tool's input, as plain text (not JSON).".to_owned();
    if format.get("type").and_then(Value::as_str) == Some("grammar")
        && let Some(definition) = format.get("definition").and_then(Value::as_str)
    {
        let syntax = format.get("syntax").and_then(Value::as_str).unwrap_or("grammar");
        about.push_str(&format!(" It must match this {syntax} grammar:\n{definition}"));
    }
    json!({
        "type": "object",
        "properties": {FREEFORM_INPUT: {"type": "string", "description": about}},
        "required": [FREEFORM_INPUT],
        "additionalProperties": false,
    })
}

/// A free-form call's text as canonical arguments: `{"input": text}`.
fn freeform_arguments(text: &str) -> String {
    json!({ FREEFORM_INPUT: text }).to_string()
}

/// The text of a free-form call from canonical arguments; arguments that are not
/// `{"input": "..."}` (a model that ignored the schema) are passed on as they are.
fn freeform_text(arguments: &str) -> String {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(mut map)) => match map.remove(FREEFORM_INPUT) {
            Some(Value::String(text)) => text,
            _ => arguments.to_owned(),
        },
        _ => arguments.to_owned(),
    }
}

#[derive(Deserialize)]
struct InNamespace {
    name: String,
    #[serde(default)]
    tools: Vec<Value>,
}

/// Between a namespace and a tool's name in the qualified name other wires see
/// (`multi_agent_v1__spawn_agent`): function names allow letters, digits, `_`, `-`.
const NAMESPACE_SEPARATOR: &str = "__";

fn qualified(namespace: &str, name: &str) -> String {
    format!("{namespace}{NAMESPACE_SEPARATOR}{name}")
}

/// A function or custom tool as a Responses request declares it, named `name`.
fn tool_json(t: &Tool, name: &str) -> Value {
    let mut tool = Map::new();
    if let Some(format) = &t.freeform {
        tool.insert("type".into(), json!("custom"));
        tool.insert("name".into(), json!(name));
        if let Some(description) = &t.description {
            tool.insert("description".into(), json!(description));
        }
        if !format.is_null() {
            tool.insert("format".into(), format.clone());
        }
        return Value::Object(tool);
    }
    tool.insert("type".into(), json!("function"));
    tool.insert("name".into(), json!(name));
    if let Some(description) = &t.description {
        tool.insert("description".into(), json!(description));
    }
    tool.insert("parameters".into(), t.parameters.clone());
    // Responses defaults `strict` to true; canonical "unset" means not strict.
    tool.insert("strict".into(), json!(t.strict.unwrap_or(false)));
    Value::Object(tool)
}

/// How the calls of each of a request's tools go back to a Responses client:
/// (qualified name, namespace, free-form).
#[derive(Debug, Default, Clone)]
struct CallShapes(Vec<(String, Option<String>, bool)>);

impl CallShapes {
    fn of(tools: &[Tool]) -> Self {
        Self(
            tools
                .iter()
                .filter(|t| t.namespace.is_some() || t.freeform.is_some())
                .map(|t| (t.name.clone(), t.namespace.clone(), t.freeform.is_some()))
                .collect(),
        )
    }

    /// The namespace, inner name and free-form flag of a call of `name`.
    fn shape<'a>(&'a self, name: &'a str) -> (Option<&'a str>, &'a str, bool) {
        let Some((_, ns, freeform)) = self.0.iter().find(|(n, _, _)| n == name) else {
            return (None, name, false);
        };
        let inner = ns.as_deref().and_then(|ns| {
            name.strip_prefix(ns).and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR))
        });
        match inner {
            Some(inner) => (ns.as_deref(), inner, *freeform),
            None => (None, name, *freeform),
        }
    }
}

/// One `function` or `custom` tool; `None` for the hosted ones (skipped).
fn parse_tool(tool: &Value, path: &str) -> Result<Option<Tool>, ProtocolError> {
    let ty = tool
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| ProtocolError::body(format!("{path}.type: expected a string")))?;
    match ty {
        "custom" => {
            let c: InCustomTool = from_value(tool, path)?;
            let format = c.format.unwrap_or(Value::Null);
            Ok(Some(Tool {
                name: c.name,
                description: c.description,
                parameters: freeform_parameters(&format),
                strict: None,
                cache_control: None,
                freeform: Some(format),
                namespace: None,
            }))
        }
        "function" => {
            let f: InFunctionTool = from_value(tool, path)?;
            Ok(Some(Tool {
                name: f.name,
                description: f.description,
                parameters: f
                    .parameters
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
                strict: f.strict,
                cache_control: None,
                freeform: None,
                namespace: None,
            }))
        }
        // Hosted/special tools only OpenAI can run: skipped (see the module docs).
        _ => Ok(None),
    }
}

fn parse_tools(tools: Option<&Value>) -> Result<Vec<Tool>, ProtocolError> {
    let tools = match tools {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(tools)) => tools,
        Some(_) => return Err(ProtocolError::body("tools: expected an array")),
    };
    let mut out = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = format!("tools[{i}]");
        let ty = tool
            .get("type")
            .and_then(Value::as_str)
            .ok_or_else(|| ProtocolError::body(format!("{path}.type: expected a string")))?;
        if ty == "namespace" {
            let ns: InNamespace = from_value(tool, &path)?;
            for (j, inner) in ns.tools.iter().enumerate() {
                if let Some(mut t) = parse_tool(inner, &format!("{path}.tools[{j}]"))? {
                    t.name = qualified(&ns.name, &t.name);
                    t.namespace = Some(ns.name.clone());
                    out.push(t);
                }
            }
            continue;
        }
        out.extend(parse_tool(tool, &path)?);
    }
    Ok(out)
}

fn parse_tool_choice(choice: Option<&Value>) -> Result<Option<ToolChoice>, ProtocolError> {
    match choice {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(mode)) => match mode.as_str() {
            "auto" => Ok(Some(ToolChoice::Auto)),
            "none" => Ok(Some(ToolChoice::None)),
            "required" => Ok(Some(ToolChoice::Required)),
            other => Err(ProtocolError::body(format!("tool_choice: unknown mode `{other}`"))),
        },
        Some(Value::Object(obj)) => match obj.get("type").and_then(Value::as_str) {
            Some("function" | "custom") => {
                let name = obj
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ProtocolError::body("tool_choice.name: expected a string"))?;
                Ok(Some(ToolChoice::Tool { name: name.to_owned() }))
            }
            Some(other) => Err(ProtocolError::Unsupported(format!(
                "tool_choice of type `{other}`: only function tools are supported"
            ))),
            None => Err(ProtocolError::body("tool_choice.type: expected a string")),
        },
        Some(_) => Err(ProtocolError::body("tool_choice: expected a string or an object")),
    }
}

#[derive(Deserialize)]
struct WireReasoningParam {
    #[serde(default)]
    effort: Option<String>,
}

fn parse_reasoning(param: Option<WireReasoningParam>) -> Result<Option<Reasoning>, ProtocolError> {
    let Some(param) = param else { return Ok(None) };
    let reasoning = match param.effort.as_deref() {
        Some("none") => Reasoning { enabled: false, effort: None, budget_tokens: None },
        Some(effort) => Reasoning {
            enabled: true,
            effort: Some(Effort::parse(effort).ok_or_else(|| {
                ProtocolError::body(format!("reasoning.effort: unknown effort `{effort}`"))
            })?),
            budget_tokens: None,
        },
        None => Reasoning { enabled: true, effort: None, budget_tokens: None },
    };
    Ok(Some(reasoning))
}

#[derive(Deserialize)]
struct WireText {
    #[serde(default)]
    format: Option<WireTextFormat>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireTextFormat {
    Text,
    JsonObject,
    JsonSchema {
        #[serde(default)]
        name: Option<String>,
        schema: Value,
        #[serde(default)]
        strict: Option<bool>,
        #[serde(default)]
        description: Option<String>,
    },
}

fn parse_text_format(text: Option<WireText>) -> Result<Option<ResponseFormat>, ProtocolError> {
    Ok(text.and_then(|t| t.format).map(|format| match format {
        WireTextFormat::Text => ResponseFormat::Text,
        WireTextFormat::JsonObject => ResponseFormat::JsonObject,
        WireTextFormat::JsonSchema { name, schema, strict, description } => {
            ResponseFormat::JsonSchema {
                name: name.unwrap_or_else(|| "response".to_owned()),
                schema,
                strict,
                description,
            }
        }
    }))
}

// ---------------------------------------------------------------------------------
// Request: canonical → wire
// ---------------------------------------------------------------------------------

/// Render a canonical request as a Responses API request (for a Responses upstream and
/// the round-trip tests). The first system block becomes `instructions`, the others
/// leading `developer` messages. `store` is always `false` (the gateway is stateless).
///
/// Lossy or refused: `top_k` and stop sequences have no Responses field and are
/// refused; `ToolResult::is_error` and tool `cache_control` have no field and are
/// dropped; [`Part::RedactedThinking`] and thinking signatures are Anthropic-only and
/// dropped. Thinking becomes a summary-only `reasoning` item: OpenAI itself may refuse
/// reasoning items it did not produce (they lack its `id`/`encrypted_content`).
pub fn encode_request(req: &Request) -> Result<Value, ProtocolError> {
    if req.top_k.is_some() {
        return Err(ProtocolError::Unsupported("top_k: the Responses API has no top_k".into()));
    }
    if !req.stop.is_empty() {
        return Err(ProtocolError::Unsupported(
            "stop sequences: the Responses API has no stop parameter".into(),
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));

    let mut input = Vec::new();
    let mut system = req.system.iter();
    if let Some(first) = system.next() {
        body.insert("instructions".into(), json!(first.text));
    }
    for block in system {
        input.push(message_input("developer", vec![input_text(&block.text)]));
    }
    for (i, message) in req.messages.iter().enumerate() {
        encode_message(message, &mut input, &format!("messages[{i}]"))?;
    }
    body.insert("input".into(), Value::Array(input));

    if !req.tools.is_empty() {
        // Namespaced tools are grouped back under their namespace, by inner name.
        let mut tools: Vec<Value> = Vec::new();
        for t in &req.tools {
            let inner = t
                .namespace
                .as_deref()
                .and_then(|ns| t.name.strip_prefix(ns))
                .and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR));
            let Some((ns, inner)) = t.namespace.as_deref().zip(inner) else {
                tools.push(tool_json(t, &t.name));
                continue;
            };
            let group = tools.iter_mut().find(|v| v["type"] == "namespace" && v["name"] == ns);
            match group.and_then(|g| g.get_mut("tools")).and_then(Value::as_array_mut) {
                Some(members) => members.push(tool_json(t, inner)),
                None => tools.push(json!({
                    "type": "namespace", "name": ns, "tools": [tool_json(t, inner)],
                })),
            }
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool { name } => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(parallel) = req.parallel_tool_calls {
        body.insert("parallel_tool_calls".into(), json!(parallel));
    }
    if let Some(max) = req.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(temperature) = req.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = req.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if let Some(reasoning) = &req.reasoning {
        let param = if reasoning.enabled {
            let effort =
                reasoning.effort.or_else(|| reasoning.budget_tokens.map(Effort::from_budget));
            match effort {
                Some(effort) => json!({"effort": effort.as_str(), "summary": "auto"}),
                None => json!({"summary": "auto"}),
            }
        } else {
            json!({"effort": "none"})
        };
        body.insert("reasoning".into(), param);
    }
    if let Some(format) = &req.response_format {
        let format = match format {
            ResponseFormat::Text => json!({"type": "text"}),
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { name, schema, strict, description } => {
                let mut f = Map::new();
                f.insert("type".into(), json!("json_schema"));
                f.insert("name".into(), json!(name));
                f.insert("schema".into(), schema.clone());
                if let Some(strict) = strict {
                    f.insert("strict".into(), json!(strict));
                }
                if let Some(description) = description {
                    f.insert("description".into(), json!(description));
                }
                Value::Object(f)
            }
        };
        body.insert("text".into(), json!({"format": format}));
    }
    body.insert("stream".into(), json!(req.stream));
    body.insert("store".into(), json!(false));
    if let Some(user) = &req.user {
        body.insert("user".into(), json!(user));
    }
    if let Some(metadata) = &req.metadata {
        body.insert("metadata".into(), Value::Object(metadata.clone()));
    }
    Ok(Value::Object(body))
}

fn encode_message(msg: &Message, input: &mut Vec<Value>, path: &str) -> Result<(), ProtocolError> {
    let role = match msg.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => "developer",
    };
    // Content parts waiting to become one `message` item.
    let mut pending: Vec<Value> = Vec::new();
    let flush = |pending: &mut Vec<Value>, input: &mut Vec<Value>| {
        if !pending.is_empty() {
            input.push(message_input(role, std::mem::take(pending)));
        }
    };
    for (i, part) in msg.content.iter().enumerate() {
        let unsupported = |what: &str| {
            ProtocolError::Unsupported(format!("{path}.content[{i}]: {what} in a {role} message"))
        };
        match (msg.role, part) {
            (Role::Assistant, Part::Text(t)) => pending.push(output_text(&t.text)),
            (_, Part::Text(t)) => pending.push(input_text(&t.text)),
            (Role::User | Role::System, Part::Image(image)) => pending.push(input_image(image)),
            (Role::User | Role::System, Part::Document(doc)) => pending.push(input_file_json(doc)),
            (Role::User, Part::ToolResult(result)) => {
                flush(&mut pending, input);
                input.push(json!({
                    "type": "function_call_output",
                    "call_id": result.call_id,
                    "output": tool_output(result, &format!("{path}.content[{i}]"))?,
                }));
            }
            (Role::Assistant, Part::ToolCall(call)) => {
                flush(&mut pending, input);
                input.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
            (Role::Assistant, Part::Thinking { text, .. }) => {
                flush(&mut pending, input);
                input.push(json!({"type": "reasoning", "summary": summary_parts(text)}));
            }
            (Role::Assistant, Part::RedactedThinking { .. }) => {}
            (_, Part::Image(_)) => return Err(unsupported("an image")),
            (_, Part::Document(_)) => return Err(unsupported("a document")),
            (_, Part::Untranslatable { what }) => {
                return Err(crate::cannot_send(
                    what,
                    "the Responses API",
                    "the gateway cannot translate it",
                ));
            }
            (_, Part::ToolResult(_)) => return Err(unsupported("a tool result")),
            (_, Part::ToolCall(_)) => return Err(unsupported("a tool call")),
            (_, Part::Thinking { .. } | Part::RedactedThinking { .. }) => {
                return Err(unsupported("reasoning"));
            }
        }
    }
    flush(&mut pending, input);
    Ok(())
}

/// A tool result's `output`: a string for one text part, an array otherwise.
fn tool_output(result: &ToolResult, path: &str) -> Result<Value, ProtocolError> {
    if let [Part::Text(t)] = result.content.as_slice() {
        return Ok(json!(t.text));
    }
    let parts = result
        .content
        .iter()
        .map(|part| match part {
            Part::Text(t) => Ok(input_text(&t.text)),
            Part::Image(image) => Ok(input_image(image)),
            Part::Document(doc) => Ok(input_file_json(doc)),
            _ => Err(ProtocolError::Unsupported(format!(
                "{path}: tool results may only hold text, images and files"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Value::Array(parts))
}

fn message_input(role: &str, content: Vec<Value>) -> Value {
    json!({"type": "message", "role": role, "content": content})
}

fn input_text(text: &str) -> Value {
    json!({"type": "input_text", "text": text})
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

fn input_image(image: &Image) -> Value {
    let mut part = Map::new();
    part.insert("type".into(), json!("input_image"));
    part.insert("image_url".into(), json!(image.source.to_openai_url()));
    if let Some(detail) = &image.detail {
        part.insert("detail".into(), json!(detail));
    }
    Value::Object(part)
}

fn input_file_json(doc: &Document) -> Value {
    match &doc.source {
        DocumentSource::Base64 { media_type, data } => json!({
            "type": "input_file",
            "filename": doc.filename_or_default(),
            "file_data": format!("data:{media_type};base64,{data}"),
        }),
        DocumentSource::Url { url, .. } => json!({"type": "input_file", "file_url": url}),
    }
}

fn summary_parts(text: &str) -> Value {
    if text.is_empty() { json!([]) } else { json!([{"type": "summary_text", "text": text}]) }
}

// ---------------------------------------------------------------------------------
// Response: canonical → wire
// ---------------------------------------------------------------------------------

/// Render a canonical response as a Responses API response object. Item ids are
/// derived from the response id and the item's position, so they are stable.
pub fn encode_response(resp: &Response) -> Value {
    encode_response_for(resp, &[])
}

/// [`encode_response`] for a request that defined `tools`: calls of its free-form
/// tools become `custom_tool_call` items carrying the text.
pub fn encode_response_for(resp: &Response, tools: &[Tool]) -> Value {
    encode_response_sealed(resp, tools, None)
}

/// [`encode_response_for`], with signed thinking and redacted thinking sealed into
/// their reasoning items' `encrypted_content` by `seal`, so the next turn can give
/// them back to the upstream that wrote them.
pub fn encode_response_sealed(resp: &Response, tools: &[Tool], seal: Option<&dyn Seal>) -> Value {
    let shapes = CallShapes::of(tools);
    let id = response_id(&resp.id);
    let (status, reason) = status_for(resp.stop_reason);
    response_json(Shell {
        id: &id,
        model: &resp.model,
        created_at: now_secs(),
        status,
        incomplete_reason: reason,
        error: Value::Null,
        output: output_items(&id, &resp.content, &shapes, seal),
        usage: usage_json(&resp.usage),
    })
}

/// The response-object fields that vary; the rest are fixed echoes.
struct Shell<'a> {
    id: &'a str,
    model: &'a str,
    created_at: u64,
    status: &'a str,
    incomplete_reason: Option<&'a str>,
    error: Value,
    output: Vec<Value>,
    usage: Option<Value>,
}

fn response_json(shell: Shell<'_>) -> Value {
    let mut obj = Map::new();
    obj.insert("id".into(), json!(shell.id));
    obj.insert("object".into(), json!("response"));
    obj.insert("created_at".into(), json!(shell.created_at));
    obj.insert("status".into(), json!(shell.status));
    obj.insert("error".into(), shell.error);
    obj.insert(
        "incomplete_details".into(),
        shell.incomplete_reason.map_or(Value::Null, |reason| json!({"reason": reason})),
    );
    obj.insert("instructions".into(), Value::Null);
    obj.insert("metadata".into(), json!({}));
    obj.insert("model".into(), json!(shell.model));
    obj.insert("output".into(), Value::Array(shell.output));
    obj.insert("parallel_tool_calls".into(), json!(true));
    obj.insert("temperature".into(), Value::Null);
    obj.insert("tool_choice".into(), json!("auto"));
    obj.insert("tools".into(), json!([]));
    obj.insert("top_p".into(), Value::Null);
    if let Some(usage) = shell.usage {
        obj.insert("usage".into(), usage);
    }
    Value::Object(obj)
}

/// The output items for canonical content: consecutive text parts share one message.
fn output_items(
    resp_id: &str,
    content: &[Part],
    shapes: &CallShapes,
    seal: Option<&dyn Seal>,
) -> Vec<Value> {
    let mut out = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    fn flush(out: &mut Vec<Value>, texts: &mut Vec<&str>, resp_id: &str) {
        if !texts.is_empty() {
            let id = item_id("msg", resp_id, out.len());
            out.push(message_item(&id, "completed", texts));
            texts.clear();
        }
    }
    for part in content {
        match part {
            Part::Text(t) => texts.push(&t.text),
            Part::Thinking { text, .. } => {
                flush(&mut out, &mut texts, resp_id);
                let id = item_id("rs", resp_id, out.len());
                let sealed = seal.and_then(|s| crate::continuity::seal_part(s, part));
                out.push(reasoning_item(&id, text, sealed.as_deref()));
            }
            Part::RedactedThinking { .. } => {
                // Nothing to show, but the next turn needs it back.
                if let Some(sealed) = seal.and_then(|s| crate::continuity::seal_part(s, part)) {
                    flush(&mut out, &mut texts, resp_id);
                    let id = item_id("rs", resp_id, out.len());
                    out.push(reasoning_item(&id, "", Some(&sealed)));
                }
            }
            Part::ToolCall(call) => {
                flush(&mut out, &mut texts, resp_id);
                let (ns, name, freeform) = shapes.shape(&call.name);
                out.push(if freeform {
                    let id = item_id("ctc", resp_id, out.len());
                    let text = freeform_text(&call.arguments);
                    call_item(true, &id, &call.id, ns, name, &text, "completed")
                } else {
                    let id = item_id("fc", resp_id, out.len());
                    call_item(false, &id, &call.id, ns, name, &call.arguments, "completed")
                });
            }
            // Not expressible as Responses output.
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. } => {}
        }
    }
    flush(&mut out, &mut texts, resp_id);
    out
}

fn message_item(id: &str, status: &str, texts: &[&str]) -> Value {
    let content: Vec<Value> = texts.iter().map(|t| output_text(t)).collect();
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

fn reasoning_item(id: &str, text: &str, encrypted_content: Option<&str>) -> Value {
    let mut item = json!({"type": "reasoning", "id": id, "summary": summary_parts(text)});
    if let Some(sealed) = encrypted_content {
        item["encrypted_content"] = json!(sealed);
    }
    item
}

/// A `function_call` item, or for a free-form tool a `custom_tool_call` whose
/// `input` is `body`; `namespace` when the tool was declared in one.
fn call_item(
    freeform: bool,
    id: &str,
    call_id: &str,
    namespace: Option<&str>,
    name: &str,
    body: &str,
    status: &str,
) -> Value {
    let (ty, field) =
        if freeform { ("custom_tool_call", "input") } else { ("function_call", "arguments") };
    let mut item =
        json!({"type": ty, "id": id, "call_id": call_id, "name": name, "status": status});
    item[field] = json!(body);
    if let Some(ns) = namespace {
        item["namespace"] = json!(ns);
    }
    item
}

fn response_id(id: &str) -> String {
    if id.starts_with("resp_") { id.to_owned() } else { format!("resp_{id}") }
}

fn item_id(prefix: &str, resp_id: &str, output_index: usize) -> String {
    let base = resp_id.strip_prefix("resp_").unwrap_or(resp_id);
    format!("{prefix}_{base}_{output_index}")
}

/// `status` and `incomplete_details.reason` for a stop reason.
fn status_for(stop: Option<StopReason>) -> (&'static str, Option<&'static str>) {
    match stop {
        Some(StopReason::MaxTokens) => ("incomplete", Some("max_output_tokens")),
        Some(StopReason::ContentFilter | StopReason::Refusal) => {
            ("incomplete", Some("content_filter"))
        }
        _ => ("completed", None),
    }
}

/// The stop reason for a finished response (`None` for non-terminal statuses).
fn stop_from_status(
    status: &str,
    incomplete_reason: Option<&str>,
    has_tool_call: bool,
) -> Option<StopReason> {
    match status {
        "incomplete" => Some(match incomplete_reason {
            Some("content_filter") => StopReason::ContentFilter,
            _ => StopReason::MaxTokens,
        }),
        "completed" if has_tool_call => Some(StopReason::ToolUse),
        "completed" => Some(StopReason::EndTurn),
        _ => None,
    }
}

/// The wire usage object, or `None` when nothing is known (see the module docs).
fn usage_json(usage: &Usage) -> Option<Value> {
    if usage.input_tokens.is_none()
        && usage.output_tokens.is_none()
        && usage.cache_read_tokens.is_none()
        && usage.reasoning_tokens.is_none()
    {
        return None;
    }
    let input = usage.input_tokens.unwrap_or(0);
    let output = usage.output_tokens.unwrap_or(0);
    Some(json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens.unwrap_or(0)},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens.unwrap_or(0)},
        "total_tokens": input.saturating_add(output),
    }))
}

fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

// ---------------------------------------------------------------------------------
// Response: wire → canonical
// ---------------------------------------------------------------------------------

#[derive(Deserialize, Default)]
struct WireResponse {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Option<Vec<OutItem>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<WireIncomplete>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireIncomplete {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
}

impl WireError {
    fn into_upstream(self, default_kind: &str) -> ProtocolError {
        let kind = match self.code {
            Some(Value::String(code)) => code,
            Some(Value::Null) | None => default_kind.to_owned(),
            Some(other) => other.to_string(),
        };
        ProtocolError::UpstreamError {
            kind,
            message: self.message.unwrap_or_else(|| "the upstream response failed".to_owned()),
        }
    }
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<WireInputDetails>,
    #[serde(default)]
    output_tokens_details: Option<WireOutputDetails>,
}

#[derive(Deserialize)]
struct WireInputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct WireOutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.input_tokens_details.as_ref().and_then(|d| d.cached_tokens),
            cache_write_tokens: None,
            reasoning_tokens: self.output_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
        }
    }
}

/// An output item. Types the gateway never asks for (hosted tool calls) are `Other`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutItem {
    Message {
        #[serde(default)]
        content: Option<Vec<OutContent>>,
    },
    FunctionCall(OutCall),
    CustomToolCall(OutCall),
    Reasoning {
        #[serde(default)]
        summary: Option<Vec<TextOnly>>,
        #[serde(default)]
        content: Option<Vec<TextOnly>>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutContent {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// A `function_call` or `custom_tool_call` output item.
#[derive(Deserialize)]
struct OutCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    call_id: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    /// A function call's argument JSON.
    #[serde(default)]
    arguments: Option<String>,
    /// A custom tool call's free-form input.
    #[serde(default)]
    input: Option<String>,
}

impl OutCall {
    /// The call's canonical id and name (qualified when it names a namespace).
    fn id_and_name(&self) -> (String, String) {
        let name = self.name.clone().unwrap_or_default();
        let name = match &self.namespace {
            Some(ns) => qualified(ns, &name),
            None => name,
        };
        (self.call_id.clone().or_else(|| self.id.clone()).unwrap_or_default(), name)
    }

    fn block(&self) -> BlockKind {
        let (id, name) = self.id_and_name();
        BlockKind::ToolCall { id, name }
    }

    /// The canonical arguments: a function's JSON as it is, a custom tool's input
    /// as `{"input": text}`; empty when the item carries neither.
    fn arguments(&self) -> String {
        match (&self.arguments, &self.input) {
            (Some(json), _) => json.clone(),
            (None, Some(input)) => freeform_arguments(input),
            (None, None) => String::new(),
        }
    }
}

/// The canonical parts of one output item.
fn out_item_parts(item: OutItem) -> Vec<Part> {
    match item {
        OutItem::Message { content } => content
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| match c {
                OutContent::OutputText { text } | OutContent::Refusal { refusal: text } => {
                    Some(Part::Text(TextBlock::new(text)))
                }
                OutContent::Other => None,
            })
            .collect(),
        OutItem::FunctionCall(call) | OutItem::CustomToolCall(call) => {
            let (id, name) = call.id_and_name();
            vec![Part::ToolCall(ToolCall {
                id,
                name,
                arguments: call.arguments(),
                signature: None,
            })]
        }
        OutItem::Reasoning { summary, content } => {
            let text =
                reasoning_text(&WireReasoningItem { summary, content, encrypted_content: None });
            if text.is_empty() {
                Vec::new()
            } else {
                vec![Part::Thinking { text, signature: None }]
            }
        }
        OutItem::Other => Vec::new(),
    }
}

/// The non-empty summary texts joined; the raw reasoning content when there is no summary.
fn reasoning_text(item: &WireReasoningItem) -> String {
    let join = |parts: &Option<Vec<TextOnly>>| {
        parts
            .iter()
            .flatten()
            .filter_map(|p| p.text.as_deref())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(SUMMARY_SEPARATOR)
    };
    let summary = join(&item.summary);
    if summary.is_empty() { join(&item.content) } else { summary }
}

/// Parse a Responses API response body. A `failed` response is an upstream error.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let resp: WireResponse = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    response_from_wire(resp)
}

fn response_from_wire(resp: WireResponse) -> Result<Response, ProtocolError> {
    let status = resp.status.as_deref().unwrap_or("completed");
    if status == "failed" {
        return Err(resp
            .error
            .unwrap_or(WireError { code: None, message: None })
            .into_upstream("response_failed"));
    }
    let content: Vec<Part> =
        resp.output.unwrap_or_default().into_iter().flat_map(out_item_parts).collect();
    let has_tool_call = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let reason = resp.incomplete_details.as_ref().and_then(|d| d.reason.as_deref());
    Ok(Response {
        id: resp.id.unwrap_or_default(),
        model: resp.model.unwrap_or_default(),
        stop_reason: stop_from_status(status, reason, has_tool_call),
        content,
        stop_sequence: None,
        usage: resp.usage.as_ref().map(WireUsage::to_usage).unwrap_or_default(),
    })
}

/// The message of an OpenAI error body `{"error":{"message":…}}`.
pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    match value.get("error")? {
        Value::Object(error) => error.get("message")?.as_str().map(str::to_owned),
        Value::String(message) => Some(message.clone()),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------
// Stream decoding: Responses SSE → canonical events
// ---------------------------------------------------------------------------------

/// Turns a Responses API event stream into canonical events. Items are assumed to be
/// sequential (as OpenAI sends them). Items whose content never streamed (an upstream
/// that only sends `output_item.done`, or only `response.completed`) are rebuilt from
/// the finished item, so nothing is lost.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    terminal: bool,
    blocks: Blocks,
    item: Option<DecItem>,
}

/// Canonical block numbering.
#[derive(Debug, Default)]
struct Blocks {
    next: usize,
    any: bool,
    saw_tool_call: bool,
}

impl Blocks {
    fn start(&mut self, kind: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next;
        self.next += 1;
        self.any = true;
        if matches!(kind, BlockKind::ToolCall { .. }) {
            self.saw_tool_call = true;
        }
        out.push(StreamEvent::BlockStart { index, kind });
        index
    }

    /// Emit whole parts as complete blocks.
    fn emit_parts(&mut self, parts: Vec<Part>, out: &mut Vec<StreamEvent>) {
        for part in parts {
            let (kind, delta) = match part {
                Part::Text(t) => (BlockKind::Text, Delta::Text { text: t.text }),
                Part::Thinking { text, .. } => (BlockKind::Thinking, Delta::Thinking { text }),
                Part::ToolCall(c) => (
                    BlockKind::ToolCall { id: c.id, name: c.name },
                    Delta::ToolArguments { json: c.arguments },
                ),
                _ => continue,
            };
            let index = self.start(kind, out);
            out.push(StreamEvent::Delta { index, delta });
            out.push(StreamEvent::BlockStop { index });
        }
    }
}

/// The output item being streamed.
#[derive(Debug)]
enum DecItem {
    Message {
        /// The open text block (one per content part).
        open: Option<usize>,
        emitted: bool,
    },
    FunctionCall {
        index: usize,
        got_arguments: bool,
    },
    Reasoning {
        open: Option<usize>,
        /// A new summary part began after text was streamed: a separator is due.
        new_part: bool,
    },
    Other,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn ensure_started(&mut self, resp: Option<&WireResponse>, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Start {
                id: resp.and_then(|r| r.id.clone()).unwrap_or_default(),
                model: resp.and_then(|r| r.model.clone()).unwrap_or_default(),
            });
        }
    }

    /// Close the current item; `done` is the finished item when the wire sent it.
    fn close_item(&mut self, done: Option<OutItem>, out: &mut Vec<StreamEvent>) {
        match (self.item.take(), done) {
            (Some(DecItem::Message { open, emitted }), done) => {
                if let Some(index) = open {
                    out.push(StreamEvent::BlockStop { index });
                }
                if !emitted && let Some(done) = done {
                    self.blocks.emit_parts(out_item_parts(done), out);
                }
            }
            (Some(DecItem::FunctionCall { index, got_arguments }), done) => {
                let json = match done {
                    Some(OutItem::FunctionCall(call) | OutItem::CustomToolCall(call)) => {
                        call.arguments()
                    }
                    _ => String::new(),
                };
                if !got_arguments && !json.is_empty() {
                    out.push(StreamEvent::Delta { index, delta: Delta::ToolArguments { json } });
                }
                out.push(StreamEvent::BlockStop { index });
            }
            (Some(DecItem::Reasoning { open, .. }), done) => match open {
                Some(index) => out.push(StreamEvent::BlockStop { index }),
                None => {
                    if let Some(done) = done {
                        self.blocks.emit_parts(out_item_parts(done), out);
                    }
                }
            },
            (Some(DecItem::Other), _) => {}
            (None, Some(done)) => self.blocks.emit_parts(out_item_parts(done), out),
            (None, None) => {}
        }
    }

    fn text_delta(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if let Some(DecItem::Message { open, emitted }) = &mut self.item {
            let index = match open {
                Some(index) => *index,
                None => {
                    *emitted = true;
                    *open.insert(self.blocks.start(BlockKind::Text, out))
                }
            };
            out.push(StreamEvent::Delta { index, delta: Delta::Text { text } });
        }
    }

    fn thinking_delta(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if let Some(DecItem::Reasoning { open, new_part }) = &mut self.item {
            let index = match open {
                Some(index) => {
                    if std::mem::take(new_part) {
                        out.push(StreamEvent::Delta {
                            index: *index,
                            delta: Delta::Thinking { text: SUMMARY_SEPARATOR.to_owned() },
                        });
                    }
                    *index
                }
                None => {
                    *new_part = false;
                    *open.insert(self.blocks.start(BlockKind::Thinking, out))
                }
            };
            out.push(StreamEvent::Delta { index, delta: Delta::Thinking { text } });
        }
    }

    fn terminal_event(
        &mut self,
        ty: &str,
        value: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), ProtocolError> {
        let resp = wire_response(value)?;
        self.ensure_started(Some(&resp), out);
        self.close_item(None, out);
        let output = resp.output.unwrap_or_default();
        let has_tool_call = output
            .iter()
            .any(|i| matches!(i, OutItem::FunctionCall(_) | OutItem::CustomToolCall(_)));
        if !self.blocks.any {
            // Nothing streamed: take the content from the final response.
            for item in output {
                self.blocks.emit_parts(out_item_parts(item), out);
            }
        }
        let usage = resp.usage.as_ref().map(WireUsage::to_usage).unwrap_or_default();
        if !usage.is_empty() {
            out.push(StreamEvent::Usage { usage });
        }
        let status = if ty == "response.incomplete" { "incomplete" } else { "completed" };
        let reason = resp.incomplete_details.as_ref().and_then(|d| d.reason.as_deref());
        let reason = stop_from_status(status, reason, has_tool_call || self.blocks.saw_tool_call)
            .unwrap_or(StopReason::EndTurn);
        out.push(StreamEvent::Stop { reason, stop_sequence: None });
        self.terminal = true;
        Ok(())
    }
}

fn wire_response(event: &Value) -> Result<WireResponse, ProtocolError> {
    match event.get("response") {
        None | Some(Value::Null) => Ok(WireResponse::default()),
        Some(resp) => WireResponse::deserialize(resp).map_err(ProtocolError::upstream),
    }
}

fn wire_item(event: &Value) -> Result<Option<OutItem>, ProtocolError> {
    match event.get("item") {
        None | Some(Value::Null) => Ok(None),
        Some(item) => OutItem::deserialize(item).map(Some).map_err(ProtocolError::upstream),
    }
}

fn str_field(event: &Value, key: &str) -> String {
    event.get(key).and_then(Value::as_str).unwrap_or_default().to_owned()
}

impl StreamDecoder for Decoder {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        if self.terminal || data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(ProtocolError::upstream)?;
        if !value.is_object() {
            return Err(ProtocolError::upstream("stream event is not a JSON object"));
        }
        let ty = match value.get("type").and_then(Value::as_str) {
            Some(ty) => ty.to_owned(),
            None => event.event.clone().unwrap_or_default(),
        };
        match ty.as_str() {
            "response.created" | "response.in_progress" | "response.queued" => {
                let resp = wire_response(&value)?;
                self.ensure_started(Some(&resp), out);
            }
            "response.output_item.added" => {
                self.ensure_started(None, out);
                self.close_item(None, out);
                self.item = match wire_item(&value)? {
                    Some(OutItem::Message { .. }) => {
                        Some(DecItem::Message { open: None, emitted: false })
                    }
                    Some(OutItem::FunctionCall(call)) => {
                        let index = self.blocks.start(call.block(), out);
                        let json = call.arguments();
                        let got_arguments = !json.is_empty();
                        if got_arguments {
                            out.push(StreamEvent::Delta {
                                index,
                                delta: Delta::ToolArguments { json },
                            });
                        }
                        Some(DecItem::FunctionCall { index, got_arguments })
                    }
                    // Its input arrives whole with the finished item (the deltas are
                    // raw text, not argument JSON).
                    Some(OutItem::CustomToolCall(call)) => {
                        let index = self.blocks.start(call.block(), out);
                        Some(DecItem::FunctionCall { index, got_arguments: false })
                    }
                    Some(OutItem::Reasoning { .. }) => {
                        Some(DecItem::Reasoning { open: None, new_part: false })
                    }
                    Some(OutItem::Other) | None => Some(DecItem::Other),
                };
            }
            "response.content_part.added" => {
                let ty = value.get("part").and_then(|p| p.get("type")).and_then(Value::as_str);
                if let Some(DecItem::Message { open, emitted }) = &mut self.item
                    && matches!(ty, Some("output_text" | "refusal"))
                {
                    if let Some(index) = open.take() {
                        out.push(StreamEvent::BlockStop { index });
                    }
                    *emitted = true;
                    *open = Some(self.blocks.start(BlockKind::Text, out));
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                self.text_delta(str_field(&value, "delta"), out);
            }
            "response.content_part.done" => {
                if let Some(DecItem::Message { open, .. }) = &mut self.item
                    && let Some(index) = open.take()
                {
                    out.push(StreamEvent::BlockStop { index });
                }
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let done = ty.ends_with(".done");
                let json = str_field(&value, if done { "arguments" } else { "delta" });
                if let Some(DecItem::FunctionCall { index, got_arguments }) = &mut self.item
                    && !json.is_empty()
                    && !(done && *got_arguments)
                {
                    *got_arguments = true;
                    out.push(StreamEvent::Delta {
                        index: *index,
                        delta: Delta::ToolArguments { json },
                    });
                }
            }
            "response.reasoning_summary_part.added" => {
                if let Some(DecItem::Reasoning { open: Some(_), new_part }) = &mut self.item {
                    *new_part = true;
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.thinking_delta(str_field(&value, "delta"), out);
            }
            "response.output_item.done" => {
                let item = wire_item(&value)?;
                self.close_item(item, out);
            }
            "response.completed" | "response.incomplete" => {
                self.terminal_event(&ty, &value, out)?;
            }
            "response.failed" => {
                let resp = wire_response(&value)?;
                let error = resp.error.unwrap_or(WireError { code: None, message: None });
                return Err(error.into_upstream("response_failed"));
            }
            "error" => {
                // `{type:"error", code, message, param}`; tolerate a nested `error` object.
                let error = value.get("error").filter(|e| e.is_object()).unwrap_or(&value);
                let error = WireError::deserialize(error).map_err(ProtocolError::upstream)?;
                return Err(error.into_upstream("error"));
            }
            // Everything else (done markers, annotations, hosted-tool progress, …) carries
            // nothing the canonical stream needs.
            _ => {}
        }
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.terminal {
            Ok(())
        } else {
            Err(ProtocolError::upstream("the stream ended before response.completed"))
        }
    }
}

// ---------------------------------------------------------------------------------
// Stream encoding: canonical events → Responses SSE
// ---------------------------------------------------------------------------------

/// Writes canonical events as a Responses API event stream. Every event carries its
/// `type` (also the SSE `event:` name) and an increasing `sequence_number` from 0.
#[derive(Debug, Default)]
pub struct Encoder {
    seq: u64,
    started: bool,
    done: bool,
    id: String,
    model: String,
    created_at: u64,
    /// Finished output items, for the terminal response object.
    output: Vec<Value>,
    open: Option<OpenItem>,
    stop: Option<StopReason>,
    usage: Usage,
    /// How calls go back: free-form tools as `custom_tool_call`, namespaced ones
    /// with their namespace.
    shapes: CallShapes,
    /// Seals thinking signatures and redacted thinking into `encrypted_content`.
    seal: Option<std::sync::Arc<dyn Seal>>,
}

#[derive(Debug)]
struct OpenItem {
    /// The canonical block index.
    index: usize,
    output_index: usize,
    item_id: String,
    kind: OpenKind,
}

#[derive(Debug)]
enum OpenKind {
    Text {
        text: String,
    },
    ToolCall {
        call_id: String,
        namespace: Option<String>,
        name: String,
        arguments: String,
    },
    /// A free-form tool's call: the arguments (`{"input": ...}`) are held until the
    /// call is complete, then sent as the input text.
    CustomCall {
        call_id: String,
        namespace: Option<String>,
        name: String,
        arguments: String,
    },
    Thinking {
        text: String,
        part_open: bool,
        signature: Option<String>,
    },
    /// Redacted thinking: shown as an empty reasoning item whose sealed
    /// `encrypted_content` gives it back on the next turn.
    Redacted {
        data: String,
    },
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// An encoder for a request that defined `tools` (see [`encode_response_for`]).
    pub fn for_tools(tools: &[Tool]) -> Self {
        Self { shapes: CallShapes::of(tools), ..Self::default() }
    }

    /// Seal what the upstream needs to continue into the reasoning items
    /// (see [`encode_response_sealed`]).
    #[must_use]
    pub fn with_seal(mut self, seal: Option<std::sync::Arc<dyn Seal>>) -> Self {
        self.seal = seal;
        self
    }

    fn emit(&mut self, out: &mut Vec<u8>, ty: &str, payload: Value) {
        let mut event = match payload {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        event.insert("type".into(), json!(ty));
        event.insert("sequence_number".into(), json!(self.seq));
        self.seq += 1;
        sse::write_json(out, Some(ty), &Value::Object(event));
    }

    fn snapshot(&self, status: &str, incomplete_reason: Option<&str>, error: Value) -> Value {
        let id = if self.id.is_empty() { FALLBACK_ID } else { &self.id };
        let terminal = status != "in_progress";
        response_json(Shell {
            id,
            model: &self.model,
            created_at: self.created_at,
            status,
            incomplete_reason,
            error,
            output: if terminal { self.output.clone() } else { Vec::new() },
            usage: if terminal { usage_json(&self.usage) } else { None },
        })
    }

    fn start(&mut self, id: &str, model: &str, out: &mut Vec<u8>) {
        self.started = true;
        self.id = response_id(id);
        self.model = model.to_owned();
        self.created_at = now_secs();
        let response = self.snapshot("in_progress", None, Value::Null);
        self.emit(out, "response.created", json!({"response": response.clone()}));
        self.emit(out, "response.in_progress", json!({"response": response}));
    }

    fn ensure_started(&mut self, out: &mut Vec<u8>) {
        if !self.started {
            self.start("", "", out);
        }
    }

    fn open_block(&mut self, index: usize, kind: &BlockKind, out: &mut Vec<u8>) {
        let output_index = self.output.len();
        let (prefix, kind) = match kind {
            BlockKind::Text => ("msg", OpenKind::Text { text: String::new() }),
            BlockKind::Thinking => (
                "rs",
                OpenKind::Thinking { text: String::new(), part_open: false, signature: None },
            ),
            BlockKind::ToolCall { id, name } => {
                let (ns, inner, freeform) = self.shapes.shape(name);
                let (call_id, namespace, name, arguments) =
                    (id.clone(), ns.map(str::to_owned), inner.to_owned(), String::new());
                if freeform {
                    ("ctc", OpenKind::CustomCall { call_id, namespace, name, arguments })
                } else {
                    ("fc", OpenKind::ToolCall { call_id, namespace, name, arguments })
                }
            }
            // Nothing to show; kept only when it can be sealed for the next turn.
            BlockKind::RedactedThinking { data } if self.seal.is_some() => {
                ("rs", OpenKind::Redacted { data: data.clone() })
            }
            BlockKind::RedactedThinking { .. } => return,
        };
        let item_id = item_id(prefix, &self.id, output_index);
        let item = match &kind {
            OpenKind::Text { .. } => message_item(&item_id, "in_progress", &[]),
            OpenKind::Thinking { .. } | OpenKind::Redacted { .. } => {
                reasoning_item(&item_id, "", None)
            }
            OpenKind::ToolCall { call_id, namespace, name, .. } => {
                call_item(false, &item_id, call_id, namespace.as_deref(), name, "", "in_progress")
            }
            OpenKind::CustomCall { call_id, namespace, name, .. } => {
                call_item(true, &item_id, call_id, namespace.as_deref(), name, "", "in_progress")
            }
        };
        self.emit(
            out,
            "response.output_item.added",
            json!({"output_index": output_index, "item": item}),
        );
        if matches!(kind, OpenKind::Text { .. }) {
            self.emit(
                out,
                "response.content_part.added",
                json!({
                    "item_id": item_id,
                    "output_index": output_index,
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }),
            );
        }
        self.open = Some(OpenItem { index, output_index, item_id, kind });
    }

    fn delta(&mut self, index: usize, delta: &Delta, out: &mut Vec<u8>) {
        let Some(open) = &mut self.open else { return };
        if open.index != index {
            return;
        }
        let (item_id, output_index) = (open.item_id.as_str(), open.output_index);
        let mut events: Vec<(&str, Value)> = Vec::new();
        match (&mut open.kind, delta) {
            (OpenKind::Text { text }, Delta::Text { text: d }) if !d.is_empty() => {
                text.push_str(d);
                events.push((
                    "response.output_text.delta",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "content_index": 0,
                        "delta": d,
                        "logprobs": [],
                    }),
                ));
            }
            (OpenKind::ToolCall { arguments, .. }, Delta::ToolArguments { json: d })
                if !d.is_empty() =>
            {
                arguments.push_str(d);
                events.push((
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": output_index, "delta": d}),
                ));
            }
            (OpenKind::CustomCall { arguments, .. }, Delta::ToolArguments { json: d }) => {
                arguments.push_str(d);
            }
            (OpenKind::Thinking { signature, .. }, Delta::Signature { signature: s }) => {
                signature.get_or_insert_with(String::new).push_str(s);
            }
            (OpenKind::Thinking { text, part_open, .. }, Delta::Thinking { text: d })
                if !d.is_empty() =>
            {
                text.push_str(d);
                if !std::mem::replace(part_open, true) {
                    events.push((
                        "response.reasoning_summary_part.added",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "part": {"type": "summary_text", "text": ""},
                        }),
                    ));
                }
                events.push((
                    "response.reasoning_summary_text.delta",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "summary_index": 0,
                        "delta": d,
                    }),
                ));
            }
            // Signatures are Anthropic-only; mismatched or empty deltas carry nothing.
            _ => {}
        }
        for (ty, payload) in events {
            self.emit(out, ty, payload);
        }
    }

    fn close_block(&mut self, out: &mut Vec<u8>) {
        let Some(OpenItem { output_index, item_id, kind, .. }) = self.open.take() else { return };
        let item = match kind {
            OpenKind::Text { text } => {
                self.emit(
                    out,
                    "response.output_text.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "content_index": 0,
                        "text": text,
                        "logprobs": [],
                    }),
                );
                self.emit(
                    out,
                    "response.content_part.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "content_index": 0,
                        "part": output_text(&text),
                    }),
                );
                message_item(&item_id, "completed", &[&text])
            }
            OpenKind::ToolCall { call_id, namespace, name, arguments } => {
                self.emit(
                    out,
                    "response.function_call_arguments.done",
                    json!({
                        "item_id": item_id,
                        "output_index": output_index,
                        "name": name,
                        "arguments": arguments,
                    }),
                );
                let ns = namespace.as_deref();
                call_item(false, &item_id, &call_id, ns, &name, &arguments, "completed")
            }
            OpenKind::CustomCall { call_id, namespace, name, arguments } => {
                let input = freeform_text(&arguments);
                if !input.is_empty() {
                    self.emit(
                        out,
                        "response.custom_tool_call_input.delta",
                        json!({"item_id": item_id, "output_index": output_index, "delta": input}),
                    );
                }
                self.emit(
                    out,
                    "response.custom_tool_call_input.done",
                    json!({"item_id": item_id, "output_index": output_index, "input": input}),
                );
                call_item(
                    true,
                    &item_id,
                    &call_id,
                    namespace.as_deref(),
                    &name,
                    &input,
                    "completed",
                )
            }
            OpenKind::Redacted { data } => {
                let part = Part::RedactedThinking { data };
                let sealed =
                    self.seal.as_deref().and_then(|s| crate::continuity::seal_part(s, &part));
                reasoning_item(&item_id, "", sealed.as_deref())
            }
            OpenKind::Thinking { text, part_open, signature } => {
                if part_open {
                    self.emit(
                        out,
                        "response.reasoning_summary_text.done",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "text": text,
                        }),
                    );
                    self.emit(
                        out,
                        "response.reasoning_summary_part.done",
                        json!({
                            "item_id": item_id,
                            "output_index": output_index,
                            "summary_index": 0,
                            "part": {"type": "summary_text", "text": text},
                        }),
                    );
                }
                let sealed = match (self.seal.as_deref(), signature) {
                    (Some(seal), Some(signature)) => {
                        let part =
                            Part::Thinking { text: text.clone(), signature: Some(signature) };
                        crate::continuity::seal_part(seal, &part)
                    }
                    _ => None,
                };
                reasoning_item(&item_id, &text, sealed.as_deref())
            }
        };
        self.emit(
            out,
            "response.output_item.done",
            json!({"output_index": output_index, "item": item}),
        );
        self.output.push(item);
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                if !self.started {
                    self.start(id, model, out);
                }
            }
            StreamEvent::BlockStart { index, kind } => {
                self.ensure_started(out);
                self.close_block(out);
                self.open_block(*index, kind, out);
            }
            StreamEvent::Delta { index, delta } => self.delta(*index, delta, out),
            StreamEvent::BlockStop { index } => {
                if self.open.as_ref().is_some_and(|o| o.index == *index) {
                    self.close_block(out);
                }
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => self.stop = Some(*reason),
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.ensure_started(out);
        self.close_block(out);
        self.done = true;
        let (status, reason) = status_for(self.stop);
        let response = self.snapshot(status, reason, Value::Null);
        let ty = if status == "incomplete" { "response.incomplete" } else { "response.completed" };
        self.emit(out, ty, json!({"response": response}));
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.done = true;
        if !self.started {
            self.created_at = now_secs();
        }
        self.emit(
            out,
            "error",
            json!({"code": err.code, "message": err.message, "param": err.param}),
        );
        let error = json!({"code": err.code, "message": err.message});
        let response = self.snapshot("failed", None, error);
        self.emit(out, "response.failed", json!({"response": response}));
    }
}

// ---------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------

fn text_part(text: &str) -> Part {
    Part::Text(TextBlock::new(text))
}

/// An optional top-level field (`null` counts as absent), errors naming the field.
fn field<T: DeserializeOwned>(
    map: &Map<String, Value>,
    key: &str,
) -> Result<Option<T>, ProtocolError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => from_value(value, key).map(Some),
    }
}

fn from_value<T: DeserializeOwned>(value: &Value, path: &str) -> Result<T, ProtocolError> {
    T::deserialize(value).map_err(|e| ProtocolError::body(format!("{path}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorKind, ResponseAccumulator, SseDecoder, response_to_events};
    use proptest::prelude::*;

    fn parse(body: Value) -> Result<Request, ProtocolError> {
        parse_request(body.to_string().as_bytes())
    }

    fn text(t: &str) -> Part {
        Part::Text(TextBlock::new(t))
    }

    /// SSE bytes → decoded SSE events, the bytes cut at `cuts`.
    fn sse_split(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        let mut prev = 0;
        for cut in cuts {
            decoder.push(&bytes[prev..cut], &mut events).unwrap();
            prev = cut;
        }
        decoder.push(&bytes[prev..], &mut events).unwrap();
        decoder.finish(&mut events);
        events
    }

    /// The JSON payloads of an encoded stream, checking that `event:` names match `type`.
    fn payloads(bytes: &[u8]) -> Vec<Value> {
        sse_split(bytes, &[])
            .into_iter()
            .map(|e| {
                let v: Value = serde_json::from_str(&e.data).unwrap();
                assert_eq!(e.event.as_deref(), v["type"].as_str(), "event name matches type");
                v
            })
            .collect()
    }

    fn decode(events: &[SseEvent]) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for e in events {
            decoder.push(e, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn accumulate(events: &[StreamEvent]) -> Response {
        let mut acc = ResponseAccumulator::default();
        for e in events {
            acc.push(e);
        }
        acc.finish()
    }

    fn encode_events(events: &[StreamEvent]) -> Vec<u8> {
        let mut encoder = Encoder::new();
        let mut bytes = Vec::new();
        for e in events {
            encoder.push(e, &mut bytes);
        }
        encoder.finish(&mut bytes);
        bytes
    }

    /// `resp` streamed by an encoder for a request with `tools`, as SSE events.
    fn streamed_for(resp: &Response, tools: &[Tool]) -> Vec<SseEvent> {
        let mut enc = Encoder::for_tools(tools);
        let mut bytes = Vec::new();
        for e in response_to_events(resp) {
            enc.push(&e, &mut bytes);
        }
        enc.finish(&mut bytes);
        let mut events = Vec::new();
        let mut sse_decoder = crate::SseDecoder::new();
        sse_decoder.push(&bytes, &mut events).unwrap();
        sse_decoder.finish(&mut events);
        events
    }

    fn sse(ty: &str, data: Value) -> SseEvent {
        let mut data = data;
        data["type"] = json!(ty);
        SseEvent { event: Some(ty.to_owned()), data: data.to_string(), id: None }
    }

    // ----- recorded requests -------------------------------------------------------

    /// A Codex turn: instructions, developer and environment messages, a shell call
    /// with its output, hosted tools that must be skipped, a custom (free-form) tool
    /// that becomes a function of one string, reasoning effort.
    #[test]
    fn parses_a_codex_request() {
        let body = json!({
            "model": "gpt-5-codex",
            "instructions": "You are Codex, based on GPT-5. You are running as a coding agent.",
            "input": [
                {"type": "message", "role": "developer", "content": [
                    {"type": "input_text", "text": "<permissions instructions>sandbox: workspace-write</permissions instructions>"}
                ]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}
                ]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "list the files"}
                ]},
                {"type": "reasoning", "summary": [
                    {"type": "summary_text", "text": "**Listing files**"},
                    {"type": "summary_text", "text": "Running ls."}
                ], "content": null, "encrypted_content": "gAAAAABo-opaque"},
                {"type": "function_call", "name": "shell",
                 "arguments": "{\"command\":[\"ls\",\"-a\"],\"workdir\":\"/repo\"}",
                 "call_id": "call_Xa1"},
                {"type": "function_call_output", "call_id": "call_Xa1",
                 "output": "Cargo.toml\nsrc\n"},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "output_text", "text": "The repo has `Cargo.toml` and `src`."}
                ]},
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "thanks"}
                ]}
            ],
            "tools": [
                {"type": "function", "name": "shell", "description": "Runs a shell command and returns its output.",
                 "strict": false,
                 "parameters": {"type": "object", "properties": {
                     "command": {"type": "array", "items": {"type": "string"}},
                     "workdir": {"type": "string"}
                 }, "required": ["command"], "additionalProperties": false}},
                {"type": "web_search"},
                {"type": "custom", "name": "apply_patch", "description": "Apply a patch",
                 "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
                {"type": "local_shell"}
            ],
            "tool_choice": "auto",
            "parallel_tool_calls": false,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "store": false,
            "stream": true,
            "include": ["reasoning.encrypted_content"],
            "prompt_cache_key": "0199a7f2-5c1e-7a40-b3c1-6f2f0e7f8a9b",
            "text": {"verbosity": "low"}
        });
        let expected = Request {
            model: "gpt-5-codex".into(),
            system: vec![
                TextBlock::new("You are Codex, based on GPT-5. You are running as a coding agent."),
                TextBlock::new(
                    "<permissions instructions>sandbox: workspace-write</permissions instructions>",
                ),
            ],
            messages: vec![
                Message {
                    role: Role::User,
                    content: vec![
                        text("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
                        text("list the files"),
                    ],
                },
                Message {
                    role: Role::Assistant,
                    content: vec![
                        Part::Thinking {
                            text: "**Listing files**\n\nRunning ls.".into(),
                            signature: None,
                        },
                        Part::ToolCall(ToolCall {
                            id: "call_Xa1".into(),
                            name: "shell".into(),
                            arguments: "{\"command\":[\"ls\",\"-a\"],\"workdir\":\"/repo\"}".into(),
                            signature: None,
                        }),
                    ],
                },
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "call_Xa1".into(),
                        name: None,
                        content: vec![text("Cargo.toml\nsrc\n")],
                        is_error: false,
                    })],
                },
                Message::text(Role::Assistant, "The repo has `Cargo.toml` and `src`."),
                Message::text(Role::User, "thanks"),
            ],
            tools: vec![
                Tool {
                    name: "shell".into(),
                    description: Some("Runs a shell command and returns its output.".into()),
                    parameters: json!({"type": "object", "properties": {
                    "command": {"type": "array", "items": {"type": "string"}},
                    "workdir": {"type": "string"}
                }, "required": ["command"], "additionalProperties": false}),
                    strict: Some(false),
                    cache_control: None,
                    freeform: None,
                    namespace: None,
                },
                Tool {
                    name: "apply_patch".into(),
                    description: Some("Apply a patch".into()),
                    parameters: json!({"type": "object", "properties": {"input": {
                    "type": "string",
                    "description": "The tool's input, as plain text (not JSON). It must match this lark grammar:\nstart: x",
                }}, "required": ["input"], "additionalProperties": false}),
                    strict: None,
                    cache_control: None,
                    freeform: Some(
                        json!({"type": "grammar", "syntax": "lark", "definition": "start: x"}),
                    ),
                    namespace: None,
                },
            ],
            tool_choice: Some(ToolChoice::Auto),
            parallel_tool_calls: Some(false),
            stream: true,
            reasoning: Some(Reasoning {
                enabled: true,
                effort: Some(Effort::Medium),
                budget_tokens: None,
            }),
            ..Request::default()
        };
        assert_eq!(parse(body).unwrap(), expected);
    }

    /// Codex's `apply_patch` as a free-form tool: its calls and outputs in the
    /// history, its choice, and the way back (whole and streamed).
    #[test]
    fn custom_tools_travel_as_one_string_argument() {
        let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi \"there\"\n*** End Patch\n";
        let body = json!({
            "model": "m",
            "input": [
                {"type": "message", "role": "user", "content": "add a file"},
                {"type": "custom_tool_call", "call_id": "call_p1", "name": "apply_patch", "input": patch},
                {"type": "custom_tool_call_output", "call_id": "call_p1", "output": "Done!"}
            ],
            "tools": [{"type": "custom", "name": "apply_patch", "description": "Apply a patch"}],
            "tool_choice": {"type": "custom", "name": "apply_patch"}
        });
        let req = parse(body).unwrap();
        let args = json!({"input": patch}).to_string();
        assert_eq!(
            req.messages[1].content,
            vec![Part::ToolCall(ToolCall {
                id: "call_p1".into(),
                name: "apply_patch".into(),
                arguments: args.clone(),
                signature: None,
            })]
        );
        assert!(
            matches!(&req.messages[2].content[0], Part::ToolResult(r) if r.call_id == "call_p1")
        );
        assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "apply_patch".into() }));
        let tool = &req.tools[0];
        assert_eq!(tool.freeform, Some(Value::Null));
        assert_eq!(tool.parameters["required"], json!(["input"]));

        // Back to the client: the call is a custom_tool_call carrying the text; a
        // function tool's call stays a function_call.
        let resp = Response {
            id: "r1".into(),
            model: "m".into(),
            content: vec![
                Part::ToolCall(ToolCall {
                    id: "call_p2".into(),
                    name: "apply_patch".into(),
                    arguments: args.clone(),
                    signature: None,
                }),
                Part::ToolCall(ToolCall {
                    id: "call_s".into(),
                    name: "shell".into(),
                    arguments: "{}".into(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage::default(),
        };
        let whole = encode_response_for(&resp, &req.tools);
        assert_eq!(whole["output"][0]["type"], "custom_tool_call");
        assert_eq!(whole["output"][0]["input"], patch);
        assert_eq!(whole["output"][0]["call_id"], "call_p2");
        assert_eq!(whole["output"][1]["type"], "function_call");
        let back = parse_response(whole.to_string().as_bytes()).unwrap();
        assert_eq!(back.content, resp.content);

        let events = streamed_for(&resp, &req.tools);
        let types: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
        assert!(types.contains(&"response.custom_tool_call_input.done"), "{types:?}");
        let done: Value = events
            .iter()
            .find(|e| e.event.as_deref() == Some("response.custom_tool_call_input.done"))
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .unwrap();
        assert_eq!(done["input"], patch);
        assert_eq!(accumulate(&decode(&events).unwrap()).content, resp.content);
    }

    /// Codex declares its sub-agent tools in a `namespace`. Other wires see them
    /// as qualified functions; calls go back with the namespace and inner name.
    #[test]
    fn namespaced_tools_are_qualified_and_come_back() {
        let body = json!({
            "model": "m",
            "input": [
                {"type": "message", "role": "user", "content": "spawn one"},
                {"type": "function_call", "call_id": "c1", "namespace": "multi_agent_v1",
                 "name": "spawn_agent", "arguments": "{\"task\":\"a\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "agent-1"}
            ],
            "tools": [
                {"type": "function", "name": "exec_command", "parameters": {"type": "object"}, "strict": false},
                {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [
                    {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}, "strict": false},
                    {"type": "custom", "name": "notes"}
                ]},
                {"type": "web_search"}
            ]
        });
        let req = parse(body).unwrap();
        let names: Vec<(&str, Option<&str>)> =
            req.tools.iter().map(|t| (t.name.as_str(), t.namespace.as_deref())).collect();
        assert_eq!(
            names,
            [
                ("exec_command", None),
                ("multi_agent_v1__spawn_agent", Some("multi_agent_v1")),
                ("multi_agent_v1__notes", Some("multi_agent_v1")),
            ]
        );
        assert!(req.tools[2].freeform.is_some());
        assert!(matches!(&req.messages[1].content[0],
            Part::ToolCall(c) if c.name == "multi_agent_v1__spawn_agent"));

        // The request round-trips through the wire form (namespaces regrouped).
        let wire = encode_request(&req).unwrap();
        assert_eq!(wire["tools"][1]["type"], "namespace");
        assert_eq!(wire["tools"][1]["tools"][0]["name"], "spawn_agent");
        let back = parse_request(wire.to_string().as_bytes()).unwrap();
        assert_eq!(back.tools, req.tools);

        let resp = Response {
            id: "r1".into(),
            model: "m".into(),
            content: vec![
                Part::ToolCall(ToolCall {
                    id: "c2".into(),
                    name: "multi_agent_v1__spawn_agent".into(),
                    arguments: "{}".into(),
                    signature: None,
                }),
                Part::ToolCall(ToolCall {
                    id: "c3".into(),
                    name: "multi_agent_v1__notes".into(),
                    arguments: json!({"input": "x"}).to_string(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage::default(),
        };
        let whole = encode_response_for(&resp, &req.tools);
        assert_eq!(whole["output"][0]["namespace"], "multi_agent_v1");
        assert_eq!(whole["output"][0]["name"], "spawn_agent");
        assert_eq!(whole["output"][1]["type"], "custom_tool_call");
        assert_eq!(whole["output"][1]["name"], "notes");
        assert_eq!(whole["output"][1]["namespace"], "multi_agent_v1");
        assert_eq!(parse_response(whole.to_string().as_bytes()).unwrap().content, resp.content);

        let events = streamed_for(&resp, &req.tools);
        let added: Value = events
            .iter()
            .find(|e| e.event.as_deref() == Some("response.output_item.added"))
            .map(|e| serde_json::from_str(&e.data).unwrap())
            .unwrap();
        assert_eq!(added["item"]["namespace"], "multi_agent_v1");
        assert_eq!(accumulate(&decode(&events).unwrap()).content, resp.content);
    }

    /// The Python SDK's `client.responses.create(model=…, input="…")`.
    #[test]
    fn parses_the_sdk_string_input_form() {
        let body = json!({
            "model": "gpt-4.1",
            "input": "Tell me a three sentence bedtime story about a unicorn."
        });
        let expected = Request {
            model: "gpt-4.1".into(),
            messages: vec![Message::text(
                Role::User,
                "Tell me a three sentence bedtime story about a unicorn.",
            )],
            ..Request::default()
        };
        assert_eq!(parse(body).unwrap(), expected);
    }

    /// Structured outputs (`text.format` json_schema) with role-only messages, plus the
    /// sampling fields, `safety_identifier` and metadata.
    #[test]
    fn parses_a_json_schema_text_format() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "date": {"type": "string"},
                "participants": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["name", "date", "participants"],
            "additionalProperties": false
        });
        let body = json!({
            "model": "gpt-4o-2024-08-06",
            "input": [
                {"role": "system", "content": "Extract the event information."},
                {"role": "user", "content": "Alice and Bob are going to a science fair on Friday."}
            ],
            "text": {"format": {"type": "json_schema", "name": "calendar_event",
                                "schema": schema, "strict": true}},
            "max_output_tokens": 512,
            "temperature": 0.2,
            "top_p": 0.9,
            "safety_identifier": "user-1234",
            "metadata": {"team": "events"},
            "previous_response_id": null,
            "store": true,
            "service_tier": "auto",
            "truncation": "disabled"
        });
        let expected = Request {
            model: "gpt-4o-2024-08-06".into(),
            system: vec![TextBlock::new("Extract the event information.")],
            messages: vec![Message::text(
                Role::User,
                "Alice and Bob are going to a science fair on Friday.",
            )],
            max_tokens: Some(512),
            temperature: Some(0.2),
            top_p: Some(0.9),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "calendar_event".into(),
                schema,
                strict: Some(true),
                description: None,
            }),
            user: Some("user-1234".into()),
            metadata: json!({"team": "events"}).as_object().cloned(),
            ..Request::default()
        };
        assert_eq!(parse(body).unwrap(), expected);
    }

    #[test]
    fn parses_images_rich_tool_output_and_mid_conversation_system() {
        let body = json!({
            "model": "m",
            "input": [
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "what is this?"},
                    {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
                ]},
                {"type": "message", "role": "assistant", "content": [
                    {"type": "refusal", "refusal": "I can't help with that."}
                ]},
                {"type": "message", "role": "developer", "content": "Be nicer."},
                {"type": "function_call_output", "call_id": "c1", "output": [
                    {"type": "input_text", "text": "screenshot:"},
                    {"type": "input_image", "image_url": "https://example.com/s.png"}
                ]}
            ],
            "tool_choice": {"type": "function", "name": "shell"},
            "reasoning": {"effort": "none"}
        });
        let req = parse(body).unwrap();
        assert!(req.system.is_empty());
        assert_eq!(
            req.messages,
            vec![
                Message {
                    role: Role::User,
                    content: vec![
                        text("what is this?"),
                        Part::Image(Image {
                            source: ImageSource::Url { url: "https://example.com/a.png".into() },
                            detail: Some("high".into()),
                            cache_control: None,
                        }),
                        Part::Image(Image {
                            source: ImageSource::Base64 {
                                media_type: "image/png".into(),
                                data: "iVBORw0KGgo=".into(),
                            },
                            detail: None,
                            cache_control: None,
                        }),
                    ],
                },
                Message::text(Role::Assistant, "I can't help with that."),
                Message::text(Role::System, "Be nicer."),
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: None,
                        content: vec![
                            text("screenshot:"),
                            Part::Image(Image {
                                source: ImageSource::Url {
                                    url: "https://example.com/s.png".into(),
                                },
                                detail: None,
                                cache_control: None,
                            }),
                        ],
                        is_error: false,
                    })],
                },
            ]
        );
        assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "shell".into() }));
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: false, effort: None, budget_tokens: None })
        );
    }

    // ----- request errors ----------------------------------------------------------

    #[test]
    fn input_files_are_documents_inline_or_by_url() {
        let body = json!({"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "read"},
            {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
            {"type": "input_file", "filename": "b.pdf", "file_data": "JVBERi0="},
            {"type": "input_file", "file_url": "https://x.test/c.pdf"},
        ]}]});
        let req = parse(body).unwrap();
        let pdf = DocumentSource::Base64 {
            media_type: "application/pdf".into(),
            data: "JVBERi0=".into(),
        };
        let content = &req.messages[0].content;
        assert_eq!(
            content[1],
            Part::Document(Document {
                filename: Some("a.pdf".into()),
                ..Document::new(pdf.clone())
            })
        );
        assert_eq!(
            content[2],
            Part::Document(Document { filename: Some("b.pdf".into()), ..Document::new(pdf) })
        );
        assert_eq!(
            content[3],
            Part::Document(Document::new(DocumentSource::Url {
                url: "https://x.test/c.pdf".into(),
                media_type: None
            }))
        );
        // And out again, as the same parts.
        let out = encode_request(&req).unwrap();
        let parts = &out["input"][0]["content"];
        assert_eq!(
            parts[1],
            json!({"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="})
        );
        assert_eq!(parts[3], json!({"type": "input_file", "file_url": "https://x.test/c.pdf"}));

        let by_id = json!({"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_id": "file-77"}]}]});
        match parse(by_id) {
            Err(ProtocolError::Unsupported(m)) => {
                assert!(m.contains("input[0].content[0]") && m.contains("file_id (file-77)"), "{m}")
            }
            other => panic!("want a refusal naming the file, got {other:?}"),
        }
        let empty =
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_file"}]}]});
        assert!(matches!(parse(empty), Err(ProtocolError::InvalidBody(_))));
    }

    #[test]
    fn refuses_previous_response_id_and_item_reference() {
        let stateless = ProtocolError::Unsupported(STATELESS.into());
        let body = json!({"model": "m", "previous_response_id": "resp_123", "input": "hi"});
        assert_eq!(parse(body).unwrap_err(), stateless);
        let body = json!({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]});
        assert_eq!(parse(body).unwrap_err(), stateless);
    }

    #[test]
    fn unknown_input_item_type_is_named() {
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": "computer_call", "call_id": "c", "action": {}}
        ]});
        match parse(body).unwrap_err() {
            ProtocolError::InvalidBody(msg) => {
                assert!(msg.contains("computer_call") && msg.contains("input[1]"), "{msg}")
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn malformed_bodies_are_invalid() {
        assert!(matches!(
            parse_request(b"{\"model\": \"m\", "),
            Err(ProtocolError::InvalidBody(_))
        ));
        assert!(matches!(parse_request(b"[1,2]"), Err(ProtocolError::InvalidBody(_))));
        for bad in [
            json!({"input": "hi"}),
            json!({"model": "m", "input": 3}),
            json!({"model": "m", "input": [{"type": "message", "role": "robot", "content": "x"}]}),
            json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_video"}]}]}),
            json!({"model": "m", "input": [{"type": "function_call", "name": "f"}]}),
            json!({"model": "m", "input": "x", "max_output_tokens": "lots"}),
            json!({"model": "m", "input": "x", "reasoning": {"effort": "extreme"}}),
            json!({"model": "m", "input": "x", "tool_choice": "sometimes"}),
        ] {
            let err = parse(bad.clone()).unwrap_err();
            assert!(matches!(err, ProtocolError::InvalidBody(_)), "{bad} gave {err:?}");
        }
        let file = json!({"model": "m", "input": [{"role": "user", "content": [
            {"type": "input_file", "file_id": "file-1"}
        ]}]});
        assert!(matches!(parse(file), Err(ProtocolError::Unsupported(_))));
    }

    #[test]
    fn encode_request_refuses_what_responses_cannot_express() {
        let req = Request { model: "m".into(), top_k: Some(5), ..Request::default() };
        assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
        let req = Request { model: "m".into(), stop: vec!["END".into()], ..Request::default() };
        assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
        let req = Request {
            model: "m".into(),
            messages: vec![Message {
                role: Role::User,
                content: vec![Part::ToolCall(ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                    signature: None,
                })],
            }],
            ..Request::default()
        };
        assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
    }

    #[test]
    fn parse_error_reads_the_openai_shape() {
        let body = br#"{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}"#;
        assert_eq!(parse_error(body).as_deref(), Some("Rate limit reached"));
        assert_eq!(parse_error(b"{\"detail\":\"x\"}"), None);
        assert_eq!(parse_error(b"not json"), None);
    }

    // ----- responses ---------------------------------------------------------------

    fn sample_response() -> Response {
        Response {
            id: "abc123".into(),
            model: "gpt-5".into(),
            content: vec![
                Part::Thinking { text: "Considering.".into(), signature: Some("sig".into()) },
                text("Hello"),
                text(" world"),
                Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "shell".into(),
                    arguments: "{\"command\":[\"ls\"]}".into(),
                    signature: None,
                }),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage {
                input_tokens: Some(100),
                output_tokens: Some(20),
                cache_read_tokens: Some(64),
                cache_write_tokens: None,
                reasoning_tokens: Some(8),
            },
        }
    }

    #[test]
    fn encodes_a_response_object() {
        let v = encode_response(&sample_response());
        assert_eq!(v["id"], "resp_abc123");
        assert_eq!(v["object"], "response");
        assert_eq!(v["status"], "completed");
        assert!(v["created_at"].as_u64().unwrap() > 1_700_000_000);
        assert_eq!(v["error"], Value::Null);
        assert_eq!(v["incomplete_details"], Value::Null);
        assert_eq!(
            v["output"],
            json!([
                {"type": "reasoning", "id": "rs_abc123_0",
                 "summary": [{"type": "summary_text", "text": "Considering."}]},
                {"type": "message", "id": "msg_abc123_1", "status": "completed", "role": "assistant",
                 "content": [
                     {"type": "output_text", "text": "Hello", "annotations": []},
                     {"type": "output_text", "text": " world", "annotations": []}
                 ]},
                {"type": "function_call", "id": "fc_abc123_2", "call_id": "call_1", "name": "shell",
                 "arguments": "{\"command\":[\"ls\"]}", "status": "completed"}
            ])
        );
        assert_eq!(
            v["usage"],
            json!({"input_tokens": 100, "input_tokens_details": {"cached_tokens": 64},
                   "output_tokens": 20, "output_tokens_details": {"reasoning_tokens": 8},
                   "total_tokens": 120})
        );

        let mut truncated = sample_response();
        truncated.id = "resp_x".into();
        truncated.stop_reason = Some(StopReason::MaxTokens);
        truncated.usage = Usage::default();
        let v = encode_response(&truncated);
        assert_eq!(v["id"], "resp_x");
        assert_eq!(v["status"], "incomplete");
        assert_eq!(v["incomplete_details"], json!({"reason": "max_output_tokens"}));
        assert!(v.get("usage").is_none());
        let back = parse_response(v.to_string().as_bytes()).unwrap();
        assert_eq!(back.stop_reason, Some(StopReason::MaxTokens));
    }

    #[test]
    fn failed_response_bodies_are_upstream_errors() {
        let body = json!({"id": "resp_1", "status": "failed", "output": [],
            "error": {"code": "server_error", "message": "The model crashed."}});
        assert_eq!(
            parse_response(body.to_string().as_bytes()).unwrap_err(),
            ProtocolError::UpstreamError {
                kind: "server_error".into(),
                message: "The model crashed.".into()
            }
        );
        assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
    }

    // ----- streaming ---------------------------------------------------------------

    /// Reasoning, text and a tool call, with usage arriving after the stop reason.
    fn transcript_events() -> Vec<StreamEvent> {
        vec![
            StreamEvent::Start { id: "abc".into(), model: "gpt-5-codex".into() },
            StreamEvent::BlockStart { index: 0, kind: BlockKind::Thinking },
            StreamEvent::Delta { index: 0, delta: Delta::Thinking { text: "Need to ".into() } },
            StreamEvent::Delta { index: 0, delta: Delta::Thinking { text: "list.".into() } },
            StreamEvent::Delta { index: 0, delta: Delta::Signature { signature: "sig".into() } },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::BlockStart { index: 1, kind: BlockKind::Text },
            StreamEvent::Delta { index: 1, delta: Delta::Text { text: "Listing ".into() } },
            StreamEvent::Delta { index: 1, delta: Delta::Text { text: "files.".into() } },
            StreamEvent::BlockStop { index: 1 },
            StreamEvent::BlockStart {
                index: 2,
                kind: BlockKind::ToolCall { id: "call_9".into(), name: "shell".into() },
            },
            StreamEvent::Delta {
                index: 2,
                delta: Delta::ToolArguments { json: "{\"command\":".into() },
            },
            StreamEvent::Delta {
                index: 2,
                delta: Delta::ToolArguments { json: "[\"ls\"]}".into() },
            },
            StreamEvent::BlockStop { index: 2 },
            StreamEvent::Stop { reason: StopReason::ToolUse, stop_sequence: None },
            StreamEvent::Usage {
                usage: Usage {
                    input_tokens: Some(1200),
                    output_tokens: Some(40),
                    cache_read_tokens: Some(1024),
                    cache_write_tokens: None,
                    reasoning_tokens: Some(16),
                },
            },
        ]
    }

    #[test]
    fn encoder_transcript() {
        let bytes = encode_events(&transcript_events());
        let events = payloads(&bytes);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "response.created",
                "response.in_progress",
                "response.output_item.added",
                "response.reasoning_summary_part.added",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.delta",
                "response.reasoning_summary_text.done",
                "response.reasoning_summary_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.content_part.added",
                "response.output_text.delta",
                "response.output_text.delta",
                "response.output_text.done",
                "response.content_part.done",
                "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done",
                "response.completed",
            ]
        );
        for (i, e) in events.iter().enumerate() {
            assert_eq!(e["sequence_number"].as_u64(), Some(i as u64), "sequence of {e}");
        }

        // Every item-scoped event names the item most recently added, at its index.
        let mut current: Option<(Value, Value)> = None;
        let mut done_items = Vec::new();
        for e in &events {
            if e["type"] == "response.output_item.added" {
                current = Some((e["item"]["id"].clone(), e["output_index"].clone()));
                assert!(
                    e["item"]["id"]
                        .as_str()
                        .unwrap()
                        .ends_with(&format!("_abc_{}", e["output_index"]))
                );
            } else if let Some(item_id) = e.get("item_id") {
                let (id, index) = current.clone().unwrap();
                assert_eq!((item_id, &e["output_index"]), (&id, &index), "{e}");
            }
            if e["type"] == "response.output_item.done" {
                let (id, index) = current.clone().unwrap();
                assert_eq!((&e["item"]["id"], &e["output_index"]), (&id, &index));
                done_items.push(e["item"].clone());
            }
        }
        assert_eq!(events[0]["response"]["status"], "in_progress");
        assert_eq!(events[0]["response"]["id"], "resp_abc");
        assert_eq!(events[0]["response"]["output"], json!([]));
        assert_eq!(events[4]["delta"], "Need to ");
        assert_eq!(events[6]["text"], "Need to list.");
        assert_eq!(events[13]["text"], "Listing files.");
        assert_eq!(events[19]["arguments"], "{\"command\":[\"ls\"]}");
        assert_eq!(
            done_items,
            vec![
                json!({"type": "reasoning", "id": "rs_abc_0",
                       "summary": [{"type": "summary_text", "text": "Need to list."}]}),
                json!({"type": "message", "id": "msg_abc_1", "status": "completed",
                       "role": "assistant", "content": [
                           {"type": "output_text", "text": "Listing files.", "annotations": []}]}),
                json!({"type": "function_call", "id": "fc_abc_2", "call_id": "call_9",
                       "name": "shell", "arguments": "{\"command\":[\"ls\"]}",
                       "status": "completed"}),
            ]
        );

        let completed = &events[21]["response"];
        assert_eq!(completed["status"], "completed");
        assert_eq!(completed["id"], "resp_abc");
        assert_eq!(completed["model"], "gpt-5-codex");
        assert_eq!(completed["output"], Value::Array(done_items));
        assert_eq!(
            completed["usage"],
            json!({"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1024},
                   "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 16},
                   "total_tokens": 1240})
        );

        // And the decoder reads it back.
        let back = accumulate(&decode(&sse_split(&bytes, &[])).unwrap());
        assert_eq!(
            back.content,
            vec![
                Part::Thinking { text: "Need to list.".into(), signature: None },
                text("Listing files."),
                Part::ToolCall(ToolCall {
                    id: "call_9".into(),
                    name: "shell".into(),
                    arguments: "{\"command\":[\"ls\"]}".into(),
                    signature: None,
                }),
            ]
        );
        assert_eq!(back.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(back.usage.cache_read_tokens, Some(1024));
    }

    #[test]
    fn encoder_incomplete_redacted_and_error() {
        let events = vec![
            StreamEvent::Start { id: "resp_q".into(), model: "m".into() },
            StreamEvent::BlockStart {
                index: 0,
                kind: BlockKind::RedactedThinking { data: "opaque".into() },
            },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::BlockStart { index: 1, kind: BlockKind::Text },
            StreamEvent::Delta { index: 1, delta: Delta::Text { text: "cut".into() } },
            StreamEvent::BlockStop { index: 1 },
            StreamEvent::Stop { reason: StopReason::MaxTokens, stop_sequence: None },
        ];
        let events = payloads(&encode_events(&events));
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types[2], "response.output_item.added");
        assert_eq!(events[2]["output_index"], 0, "redacted thinking produced no item");
        let last = events.last().unwrap();
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(last["response"]["status"], "incomplete");
        assert_eq!(last["response"]["incomplete_details"], json!({"reason": "max_output_tokens"}));
        assert!(last["response"].get("usage").is_none());

        let mut encoder = Encoder::new();
        let mut bytes = Vec::new();
        encoder.push(&StreamEvent::Start { id: "e1".into(), model: "m".into() }, &mut bytes);
        let err = ErrorBody::new(502, ErrorKind::Upstream, "upstream_unavailable", "boom");
        encoder.error(&err, &mut bytes);
        encoder.finish(&mut bytes);
        let events = payloads(&bytes);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["response.created", "response.in_progress", "error", "response.failed"]);
        assert_eq!(events[2]["code"], "upstream_unavailable");
        assert_eq!(events[2]["message"], "boom");
        assert_eq!(events[2]["sequence_number"], 2);
        assert_eq!(events[3]["response"]["status"], "failed");
        assert_eq!(
            events[3]["response"]["error"],
            json!({"code": "upstream_unavailable", "message": "boom"})
        );
        // The decoder turns the failure back into an upstream error.
        assert_eq!(
            decode(&sse_split(&bytes, &[])).unwrap_err(),
            ProtocolError::UpstreamError {
                kind: "upstream_unavailable".into(),
                message: "boom".into()
            }
        );
    }

    #[test]
    fn decoder_errors() {
        let created = sse("response.created", json!({"response": {"id": "resp_1", "model": "m"}}));
        let error = sse(
            "error",
            json!({"code": "rate_limit_exceeded", "message": "slow down", "param": null}),
        );
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        decoder.push(&created, &mut out).unwrap();
        assert_eq!(out, vec![StreamEvent::Start { id: "resp_1".into(), model: "m".into() }]);
        assert_eq!(
            decoder.push(&error, &mut out).unwrap_err(),
            ProtocolError::UpstreamError {
                kind: "rate_limit_exceeded".into(),
                message: "slow down".into()
            }
        );
        // Cut short: no terminal event.
        assert!(matches!(
            decode(std::slice::from_ref(&created)),
            Err(ProtocolError::MalformedUpstream(_))
        ));
        let garbage = SseEvent { event: None, data: "{not json".into(), id: None };
        assert!(matches!(decode(&[created, garbage]), Err(ProtocolError::MalformedUpstream(_))));
    }

    /// An upstream that sends finished items without deltas, plus hosted-tool noise.
    #[test]
    fn decoder_rebuilds_items_that_did_not_stream() {
        let stream = [
            sse(
                "response.created",
                json!({"response": {"id": "resp_2", "model": "m", "status": "in_progress"}}),
            ),
            sse(
                "response.output_item.added",
                json!({"output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": [
                    {"type": "summary_text", "text": "a"}, {"type": "summary_text", "text": "b"}]}}),
            ),
            sse(
                "response.output_item.added",
                json!({"output_index": 1,
                "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 1,
                "item": {"type": "web_search_call", "id": "ws_1", "status": "completed"}}),
            ),
            sse(
                "response.output_item.added",
                json!({"output_index": 2,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 2,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                    {"type": "output_text", "text": "hi", "annotations": []}]}}),
            ),
            sse(
                "response.output_item.added",
                json!({"output_index": 3,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": ""}}),
            ),
            sse(
                "response.function_call_arguments.done",
                json!({"item_id": "fc_1", "output_index": 3, "arguments": "{}"}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 3,
                "item": {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": "{}"}}),
            ),
            sse(
                "response.completed",
                json!({"response": {"id": "resp_2", "model": "m", "status": "completed",
                "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}),
            ),
        ];
        let resp = accumulate(&decode(&stream).unwrap());
        assert_eq!(
            resp,
            Response {
                id: "resp_2".into(),
                model: "m".into(),
                content: vec![
                    Part::Thinking { text: "a\n\nb".into(), signature: None },
                    text("hi"),
                    Part::ToolCall(ToolCall {
                        id: "c".into(),
                        name: "f".into(),
                        arguments: "{}".into(),
                        signature: None,
                    }),
                ],
                stop_reason: Some(StopReason::ToolUse),
                stop_sequence: None,
                usage: Usage { input_tokens: Some(5), output_tokens: Some(2), ..Usage::default() },
            }
        );
    }

    /// Streamed reasoning with two summary parts, then a refusal and a content filter.
    #[test]
    fn decoder_joins_summary_parts_and_maps_incomplete() {
        let item = |ty: &str, extra: Value| {
            let mut v = json!({"item_id": "rs_1", "output_index": 0});
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            sse(ty, v)
        };
        let stream = [
            sse("response.created", json!({"response": {"id": "resp_3", "model": "m"}})),
            sse(
                "response.output_item.added",
                json!({"output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            ),
            item(
                "response.reasoning_summary_part.added",
                json!({"summary_index": 0,
                "part": {"type": "summary_text", "text": ""}}),
            ),
            item(
                "response.reasoning_summary_text.delta",
                json!({"summary_index": 0, "delta": "one"}),
            ),
            item("response.reasoning_summary_part.done", json!({"summary_index": 0})),
            item(
                "response.reasoning_summary_part.added",
                json!({"summary_index": 1,
                "part": {"type": "summary_text", "text": ""}}),
            ),
            item(
                "response.reasoning_summary_text.delta",
                json!({"summary_index": 1, "delta": "two"}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": [
                    {"type": "summary_text", "text": "one"}, {"type": "summary_text", "text": "two"}]}}),
            ),
            sse(
                "response.output_item.added",
                json!({"output_index": 1,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            ),
            sse(
                "response.content_part.added",
                json!({"item_id": "msg_1", "output_index": 1,
                "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
            ),
            sse(
                "response.refusal.delta",
                json!({"item_id": "msg_1", "output_index": 1,
                "content_index": 0, "delta": "No."}),
            ),
            sse(
                "response.content_part.done",
                json!({"item_id": "msg_1", "output_index": 1, "content_index": 0}),
            ),
            sse(
                "response.output_item.done",
                json!({"output_index": 1,
                "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": [
                    {"type": "refusal", "refusal": "No."}]}}),
            ),
            sse(
                "response.incomplete",
                json!({"response": {"id": "resp_3", "status": "incomplete",
                "incomplete_details": {"reason": "content_filter"}}}),
            ),
        ];
        let resp = accumulate(&decode(&stream).unwrap());
        assert_eq!(
            resp.content,
            vec![Part::Thinking { text: "one\n\ntwo".into(), signature: None }, text("No.")]
        );
        assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
        assert!(resp.usage.is_empty());
    }

    /// An upstream that only reports the finished response.
    #[test]
    fn decoder_takes_content_from_a_bare_completion() {
        let stream = [
            sse("response.created", json!({"response": {"id": "resp_4", "model": "m"}})),
            sse(
                "response.completed",
                json!({"response": {"id": "resp_4", "model": "m",
                "status": "completed", "output": [
                    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "done", "annotations": []}]}
                ]}}),
            ),
            // Anything after the terminal event is ignored.
            sse("error", json!({"code": "late", "message": "after the end"})),
        ];
        let resp = accumulate(&decode(&stream).unwrap());
        assert_eq!(resp.content, vec![text("done")]);
        assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
    }

    // ----- property tests ----------------------------------------------------------

    fn any_text() -> impl Strategy<Value = String> {
        "\\PC{0,12}"
    }

    fn nonempty_text() -> impl Strategy<Value = String> {
        "\\PC{1,12}"
    }

    fn ident() -> impl Strategy<Value = String> {
        "[a-z_][a-z0-9_]{0,8}"
    }

    fn text_part_s() -> impl Strategy<Value = Part> {
        any_text().prop_map(|t| Part::Text(TextBlock::new(t)))
    }

    fn image_part() -> impl Strategy<Value = Part> {
        let source = prop_oneof![
            "[a-z]{1,8}"
                .prop_map(|p| ImageSource::Url { url: format!("https://example.com/{p}.png") }),
            (prop::sample::select(vec!["image/png", "image/jpeg"]), "[A-Za-z0-9+/]{0,12}")
                .prop_map(|(m, d)| ImageSource::Base64 { media_type: m.into(), data: d }),
        ];
        let detail = prop::option::of(prop::sample::select(vec!["low", "high", "auto"]));
        (source, detail).prop_map(|(source, detail)| {
            Part::Image(Image { source, detail: detail.map(str::to_owned), cache_control: None })
        })
    }

    fn tool_call_part() -> impl Strategy<Value = Part> {
        (ident(), ident(), any_text()).prop_map(|(id, name, arguments)| {
            Part::ToolCall(ToolCall { id, name, arguments, signature: None })
        })
    }

    fn user_part() -> impl Strategy<Value = Part> {
        let result =
            (ident(), prop::collection::vec(prop_oneof![text_part_s(), image_part()], 0..3))
                .prop_map(|(call_id, content)| {
                    Part::ToolResult(ToolResult { call_id, name: None, content, is_error: false })
                });
        prop_oneof![text_part_s(), image_part(), result]
    }

    fn assistant_part() -> impl Strategy<Value = Part> {
        prop_oneof![
            text_part_s(),
            nonempty_text().prop_map(|text| Part::Thinking { text, signature: None }),
            tool_call_part(),
        ]
    }

    fn message() -> impl Strategy<Value = Message> {
        prop_oneof![
            prop::collection::vec(user_part(), 1..4)
                .prop_map(|content| Message { role: Role::User, content }),
            prop::collection::vec(assistant_part(), 1..4)
                .prop_map(|content| Message { role: Role::Assistant, content }),
            prop::collection::vec(text_part_s(), 1..3)
                .prop_map(|content| Message { role: Role::System, content }),
        ]
    }

    fn effort() -> impl Strategy<Value = Effort> {
        prop::sample::select(vec![Effort::Minimal, Effort::Low, Effort::Medium, Effort::High])
    }

    fn request() -> impl Strategy<Value = Request> {
        let tool = (
            ident(),
            prop::option::of(any_text()),
            prop::option::of(any::<bool>()),
            ident(),
        )
            .prop_map(|(name, description, strict, field)| Tool {
                name,
                description,
                parameters: json!({"type": "object", "properties": {field: {"type": "string"}}}),
                strict,
                cache_control: None,
                freeform: None,
                namespace: None,
            });
        let tool_choice = prop::option::of(prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            ident().prop_map(|name| ToolChoice::Tool { name }),
        ]);
        let reasoning = prop::option::of(
            (any::<bool>(), prop::option::of(effort()), prop::option::of(0u64..40_000)).prop_map(
                |(enabled, effort, budget_tokens)| Reasoning { enabled, effort, budget_tokens },
            ),
        );
        let format = prop::option::of(prop_oneof![
            Just(ResponseFormat::Text),
            Just(ResponseFormat::JsonObject),
            (ident(), prop::option::of(any::<bool>()), prop::option::of(any_text())).prop_map(
                |(name, strict, description)| ResponseFormat::JsonSchema {
                    name,
                    schema: json!({"type": "object"}),
                    strict,
                    description,
                }
            ),
        ]);
        let sampling = (
            prop::option::of(any::<bool>()),
            prop::option::of(0u64..1_000_000),
            prop::option::of((0u32..=16).prop_map(|k| f64::from(k) / 8.0)),
            prop::option::of((0u32..=16).prop_map(|k| f64::from(k) / 16.0)),
            any::<bool>(),
        );
        let ids = (
            prop::option::of(ident()),
            prop::option::of(prop::collection::btree_map(ident(), any_text(), 0..3)),
        );
        (
            ident(),
            prop::collection::vec(nonempty_text().prop_map(TextBlock::new), 0..3),
            prop::collection::vec(message(), 0..6),
            prop::collection::vec(tool, 0..3),
            tool_choice,
            reasoning,
            format,
            sampling,
            ids,
        )
            .prop_map(
                |(
                    model,
                    system,
                    messages,
                    tools,
                    tool_choice,
                    reasoning,
                    format,
                    sampling,
                    ids,
                )| {
                    let (parallel_tool_calls, max_tokens, temperature, top_p, stream) = sampling;
                    let (user, metadata) = ids;
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
                        top_k: None,
                        stop: Vec::new(),
                        stream,
                        reasoning,
                        response_format: format,
                        user,
                        metadata: metadata
                            .map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()),
                    }
                },
            )
    }

    /// What a request means once expressed in the Responses API.
    fn request_meaning(mut req: Request) -> Request {
        for tool in &mut req.tools {
            tool.strict = Some(tool.strict.unwrap_or(false));
        }
        if let Some(r) = &mut req.reasoning {
            r.effort = if r.enabled {
                r.effort.or(r.budget_tokens.map(Effort::from_budget))
            } else {
                None
            };
            r.budget_tokens = None;
        }
        // Consecutive messages of one role are one turn.
        let mut merged: Vec<Message> = Vec::new();
        for msg in req.messages {
            match merged.last_mut() {
                Some(last) if last.role == msg.role => last.content.extend(msg.content),
                _ => merged.push(msg),
            }
        }
        // System messages before the conversation starts are system instructions.
        let mut messages = merged.into_iter().peekable();
        while let Some(msg) = messages.next_if(|m| m.role == Role::System) {
            for part in msg.content {
                if let Part::Text(block) = part {
                    req.system.push(block);
                }
            }
        }
        req.messages = messages.collect();
        req
    }

    fn response() -> impl Strategy<Value = Response> {
        let part = prop_oneof![
            4 => text_part_s(),
            2 => (any_text(), prop::option::of(ident()))
                .prop_map(|(text, signature)| Part::Thinking { text, signature }),
            2 => tool_call_part(),
            1 => ident().prop_map(|data| Part::RedactedThinking { data }),
            1 => image_part(),
        ];
        let stop = prop::option::of(prop::sample::select(vec![
            StopReason::EndTurn,
            StopReason::MaxTokens,
            StopReason::StopSequence,
            StopReason::ToolUse,
            StopReason::ContentFilter,
            StopReason::Refusal,
            StopReason::PauseTurn,
            StopReason::Error,
        ]));
        let count = || prop::option::of(0u64..1_000_000);
        let usage =
            (count(), count(), count(), count(), count()).prop_map(|(i, o, r, w, t)| Usage {
                input_tokens: i,
                output_tokens: o,
                cache_read_tokens: r,
                cache_write_tokens: w,
                reasoning_tokens: t,
            });
        (
            prop_oneof!["resp_[a-z0-9]{1,8}", "[a-zA-Z0-9-]{0,10}"],
            ident(),
            prop::collection::vec(part, 0..6),
            stop,
            prop::option::of(any_text()),
            usage,
        )
            .prop_map(|(id, model, content, stop_reason, stop_sequence, usage)| Response {
                id,
                model,
                content,
                stop_reason,
                stop_sequence,
                usage,
            })
    }

    /// What a response means once expressed in the Responses API.
    fn response_meaning(resp: &Response) -> Response {
        let content: Vec<Part> = resp
            .content
            .iter()
            .filter_map(|p| match p {
                Part::Text(_) | Part::ToolCall(_) => Some(p.clone()),
                Part::Thinking { text, .. } if !text.is_empty() => {
                    Some(Part::Thinking { text: text.clone(), signature: None })
                }
                _ => None,
            })
            .collect();
        let has_tool_call = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
        let stop_reason = Some(match resp.stop_reason {
            Some(StopReason::MaxTokens) => StopReason::MaxTokens,
            Some(StopReason::ContentFilter | StopReason::Refusal) => StopReason::ContentFilter,
            _ if has_tool_call => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        });
        let u = resp.usage;
        let known = u.input_tokens.is_some()
            || u.output_tokens.is_some()
            || u.cache_read_tokens.is_some()
            || u.reasoning_tokens.is_some();
        let usage = if known {
            Usage {
                input_tokens: Some(u.input_tokens.unwrap_or(0)),
                output_tokens: Some(u.output_tokens.unwrap_or(0)),
                cache_read_tokens: Some(u.cache_read_tokens.unwrap_or(0)),
                cache_write_tokens: None,
                reasoning_tokens: Some(u.reasoning_tokens.unwrap_or(0)),
            }
        } else {
            Usage::default()
        };
        Response {
            id: response_id(&resp.id),
            model: resp.model.clone(),
            content,
            stop_reason,
            stop_sequence: None,
            usage,
        }
    }

    proptest! {
        #[test]
        fn request_round_trips(req in request()) {
            let wire = encode_request(&req).unwrap();
            let back = parse_request(wire.to_string().as_bytes()).unwrap();
            prop_assert_eq!(back, request_meaning(req));
        }

        #[test]
        fn response_round_trips(resp in response()) {
            let wire = encode_response(&resp);
            let back = parse_response(wire.to_string().as_bytes()).unwrap();
            prop_assert_eq!(back, response_meaning(&resp));
        }

        #[test]
        fn stream_agrees_with_non_stream(
            resp in response(),
            cuts in prop::collection::vec(any::<usize>(), 0..12),
        ) {
            let bytes = encode_events(&response_to_events(&resp));
            let streamed = accumulate(&decode(&sse_split(&bytes, &cuts)).unwrap());
            let whole = parse_response(encode_response(&resp).to_string().as_bytes()).unwrap();
            prop_assert_eq!(&streamed, &whole);
            prop_assert_eq!(streamed, response_meaning(&resp));
        }
    }
}
