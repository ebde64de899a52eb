//! OpenAI Chat Completions (`POST /v1/chat/completions`): the client format most SDKs
//! speak, and the upstream wire of OpenAI and every OpenAI-compatible server (vLLM,
//! Ollama, DeepSeek, Groq, Together…).
//!
//! Reasoning: Chat Completions has no standard reasoning output field; compatible
//! servers use `reasoning_content` (DeepSeek, vLLM) or `reasoning` (OpenRouter, Ollama).
//! Both are read; `reasoning_content` is written.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::sse::{self, SseEvent};
use crate::util::from_slice;
use crate::{
    BlockKind, Delta, Document, DocumentSource, Effort, ErrorBody, Image, ImageSource, Message,
    Part, ProtocolError, Reasoning, Request, Response, ResponseFormat, Role, StopReason,
    StreamDecoder, StreamEncoder, StreamEvent, TextBlock, Tool, ToolCall, ToolChoice, ToolResult,
    Usage,
};

// ---------------------------------------------------------------------------------
// Wire types (only what we read; writing uses json!).
// ---------------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireRequest {
    #[serde(default)]
    model: String,
    messages: Vec<WireMessage>,
    #[serde(default)]
    tools: Vec<WireTool>,
    #[serde(default)]
    functions: Vec<WireFunction>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    parallel_tool_calls: Option<bool>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    max_completion_tokens: Option<u64>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    top_k: Option<u64>,
    #[serde(default)]
    stop: Option<Value>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<WireStreamOptions>,
    #[serde(default)]
    reasoning_effort: Option<String>,
    #[serde(default)]
    response_format: Option<WireResponseFormat>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
struct WireMessage {
    role: String,
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default)]
    tool_calls: Vec<WireToolCall>,
    #[serde(default)]
    tool_call_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireContent {
    Text(String),
    Parts(Vec<WirePart>),
}

/// One content part. Read as one struct with the fields of every known type (not
/// an enum tagged by `type`), so an unknown type keeps its name for the refusal.
#[derive(Deserialize)]
struct WirePart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image_url: Option<WireImageUrl>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    file: Option<WireFile>,
}

/// A `file` part's file: inline data (a `data:` URI) or an uploaded file's id.
#[derive(Deserialize)]
struct WireFile {
    #[serde(default)]
    file_data: Option<String>,
    #[serde(default)]
    file_id: Option<String>,
    #[serde(default)]
    filename: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireStreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

#[derive(Deserialize)]
struct WireImageUrl {
    url: String,
    #[serde(default)]
    detail: Option<String>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: String,
    function: WireFunctionCall,
}

#[derive(Deserialize)]
struct WireFunctionCall {
    #[serde(default)]
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Deserialize)]
struct WireTool {
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireResponseFormat {
    Text,
    JsonObject,
    JsonSchema { json_schema: WireJsonSchema },
}

#[derive(Deserialize)]
struct WireJsonSchema {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    schema: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<WirePromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<WireCompletionDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WirePromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct WireCompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn canonical(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: self.completion_tokens,
            cache_read_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .or(self.prompt_cache_hit_tokens),
            cache_write_tokens: None,
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens),
        }
    }
}

fn usage_json(u: &Usage) -> Value {
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    let mut v = json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
    });
    if let Some(cached) = u.cache_read_tokens {
        v["prompt_tokens_details"] = json!({ "cached_tokens": cached });
    }
    if let Some(reasoning) = u.reasoning_tokens {
        v["completion_tokens_details"] = json!({ "reasoning_tokens": reasoning });
    }
    v
}

// ---------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------

pub fn parse_request(body: &[u8]) -> Result<Request, ProtocolError> {
    let w: WireRequest = from_slice(body)?;
    let mut req = Request {
        model: w.model,
        max_tokens: w.max_completion_tokens.or(w.max_tokens),
        temperature: w.temperature,
        top_p: w.top_p,
        top_k: w.top_k,
        stream: w.stream.unwrap_or(false),
        stream_usage: w.stream == Some(true)
            && w.stream_options.and_then(|o| o.include_usage) == Some(true),
        parallel_tool_calls: w.parallel_tool_calls,
        user: w.user,
        metadata: w.metadata,
        ..Request::default()
    };
    req.stop = match w.stop {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s],
        Some(Value::Array(items)) => {
            items.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
        }
        Some(_) => return Err(ProtocolError::body("stop: expected a string or an array")),
    };
    req.reasoning = w.reasoning_effort.as_deref().map(|e| Reasoning {
        enabled: e != "none",
        effort: Effort::parse(e),
        budget_tokens: None,
    });
    req.response_format = w.response_format.map(|f| match f {
        WireResponseFormat::Text => ResponseFormat::Text,
        WireResponseFormat::JsonObject => ResponseFormat::JsonObject,
        WireResponseFormat::JsonSchema { json_schema } => ResponseFormat::JsonSchema {
            name: json_schema.name.unwrap_or_else(|| "response".to_owned()),
            schema: json_schema.schema.unwrap_or_else(|| json!({})),
            strict: json_schema.strict,
            description: json_schema.description,
        },
    });
    let functions = w.tools.into_iter().map(|t| t.function).chain(w.functions);
    req.tools = functions
        .map(|f| Tool {
            name: f.name,
            description: f.description,
            parameters: f.parameters.unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            strict: f.strict,
            cache_control: None,
            freeform: None,
            namespace: None,
        })
        .collect();
    req.tool_choice = match w.tool_choice {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match s.as_str() {
            "auto" => Some(ToolChoice::Auto),
            "none" => Some(ToolChoice::None),
            "required" => Some(ToolChoice::Required),
            other => {
                return Err(ProtocolError::body(format!("tool_choice: unknown value {other:?}")));
            }
        },
        Some(v) => match v.pointer("/function/name").and_then(Value::as_str) {
            Some(name) => Some(ToolChoice::Tool { name: name.to_owned() }),
            None => return Err(ProtocolError::body("tool_choice: expected function.name")),
        },
    };

    let mut leading = true;
    for (i, m) in w.messages.into_iter().enumerate() {
        let role = m.role.as_str();
        // Formatted only when a message names the place: not on every parse.
        let path = || format!("messages[{i}]");
        if (role == "system" || role == "developer") && leading {
            req.system.extend(text_blocks(m.content, &path)?);
            continue;
        }
        leading = false;
        let message = match role {
            "system" | "developer" => Message {
                role: Role::System,
                content: text_blocks(m.content, &path)?.into_iter().map(Part::Text).collect(),
            },
            "user" => Message { role: Role::User, content: content_parts(m.content, &path)? },
            "assistant" => {
                let mut content = Vec::new();
                if let Some(r) = m.reasoning_content.filter(|r| !r.is_empty()) {
                    content.push(Part::Thinking { text: r, signature: None });
                }
                content.extend(content_parts(m.content, &path)?);
                if let Some(refusal) = m.refusal.filter(|r| !r.is_empty()) {
                    content.push(Part::Text(TextBlock::new(refusal)));
                }
                content.extend(m.tool_calls.into_iter().map(|c| {
                    Part::ToolCall(ToolCall {
                        id: c.id,
                        name: c.function.name,
                        arguments: c.function.arguments,
                        signature: None,
                    })
                }));
                Message { role: Role::Assistant, content }
            }
            "tool" | "function" => {
                let call_id = m.tool_call_id.or(m.name.clone()).ok_or_else(|| {
                    ProtocolError::body(format!("messages[{i}].tool_call_id: missing"))
                })?;
                Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id,
                        name: m.name,
                        content: content_parts(m.content, &path)?,
                        is_error: false,
                    })],
                }
            }
            other => {
                return Err(ProtocolError::body(format!(
                    "messages[{i}].role: unknown role {other:?}"
                )));
            }
        };
        push_merged(&mut req.messages, message);
    }
    Ok(req)
}

/// Append a message, merging it into the previous one when the roles match (tool
/// results followed by a user turn become one canonical user message).
pub(crate) fn push_merged(messages: &mut Vec<Message>, message: Message) {
    if let Some(last) = messages.last_mut()
        && last.role == message.role
        && message.role != Role::System
    {
        last.content.extend(message.content);
        return;
    }
    messages.push(message);
}

/// A system or developer message's text. OpenAI takes only text parts there, so
/// anything else is refused by name (a translation could not place it either).
fn text_blocks(
    content: Option<WireContent>,
    path: &dyn Fn() -> String,
) -> Result<Vec<TextBlock>, ProtocolError> {
    let mut blocks = Vec::new();
    for part in content_parts(content, path)? {
        match part {
            Part::Text(t) => blocks.push(t),
            other => {
                return Err(ProtocolError::Unsupported(format!(
                    "{}: {} in a system message (it takes only text)",
                    path(),
                    other.describe()
                )));
            }
        }
    }
    Ok(blocks)
}

/// A message's content; `path` names the message (for errors and refusals).
fn content_parts(
    content: Option<WireContent>,
    path: &dyn Fn() -> String,
) -> Result<Vec<Part>, ProtocolError> {
    match content {
        None => Ok(Vec::new()),
        Some(WireContent::Text(t)) if t.is_empty() => Ok(Vec::new()),
        Some(WireContent::Text(t)) => Ok(vec![Part::Text(TextBlock::new(t))]),
        Some(WireContent::Parts(parts)) => parts
            .into_iter()
            .enumerate()
            .map(|(j, p)| content_part(p, &|| format!("{}.content[{j}]", path())))
            .collect(),
    }
}

fn content_part(p: WirePart, path: &dyn Fn() -> String) -> Result<Part, ProtocolError> {
    let missing = |field: &str| ProtocolError::body(format!("{}.{field}: missing field", path()));
    Ok(match p.kind.as_str() {
        "text" => Part::Text(TextBlock::new(p.text.ok_or_else(|| missing("text"))?)),
        "refusal" => Part::Text(TextBlock::new(p.refusal.ok_or_else(|| missing("refusal"))?)),
        "image_url" => {
            let image_url = p.image_url.ok_or_else(|| missing("image_url"))?;
            Part::Image(Image {
                source: ImageSource::from_openai_url(&image_url.url),
                detail: image_url.detail,
                cache_control: None,
            })
        }
        "file" => {
            let file = p.file.ok_or_else(|| missing("file"))?;
            match (file.file_data, file.file_id) {
                (Some(data), _) => {
                    let source =
                        DocumentSource::from_openai_file_data(&data, file.filename.as_deref());
                    Part::Document(Document { filename: file.filename, ..Document::new(source) })
                }
                // An uploaded file means something only to the OpenAI organisation
                // that holds it: forwarded as it is on the fast path, refused on any
                // translation.
                (None, Some(id)) => {
                    Part::Untranslatable { what: format!("{}: a file by file_id ({id})", path()) }
                }
                (None, None) => {
                    return Err(ProtocolError::body(format!(
                        "{}.file: expected file_data or file_id",
                        path()
                    )));
                }
            }
        }
        other => Part::Untranslatable { what: format!("{}: a `{other}` content part", path()) },
    })
}

/// Whether [`adapt_native`] might edit this body: it sets `max_tokens` and the model
/// refuses it.
pub fn may_adapt(body: &[u8], traits: crate::ModelTraits) -> bool {
    !traits.takes_max_tokens && crate::util::top_level_value(body, "max_tokens").is_some()
}

/// See [`crate::Wire::adapt_native`]. A client's `max_tokens` becomes
/// `max_completion_tokens` for a model that refuses the older field (OpenAI's
/// reasoning models); `reasoning_effort` is one form for every model.
pub fn adapt_native(
    body: &serde_json::Map<String, Value>,
    traits: crate::ModelTraits,
) -> Vec<crate::FieldEdit> {
    match body.get("max_tokens") {
        Some(v) if !traits.takes_max_tokens => {
            let mut edits = vec![("max_tokens", None)];
            if !body.contains_key("max_completion_tokens") {
                edits.push(("max_completion_tokens", Some(v.clone())));
            }
            edits
        }
        _ => Vec::new(),
    }
}

/// Canonical request → Chat Completions body for an upstream.
pub fn encode_request(req: &Request) -> Result<Value, ProtocolError> {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": join_text(&req.system)}));
    }
    for m in &req.messages {
        match m.role {
            Role::System => {
                let mut text = Vec::new();
                for part in &m.content {
                    match part {
                        Part::Text(t) => text.push(t.clone()),
                        Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
                        other => {
                            return Err(crate::cannot_send(
                                &other.describe(),
                                TARGET,
                                "a system message carries only text",
                            ));
                        }
                    }
                }
                messages.push(json!({"role": "system", "content": join_text(&text)}));
            }
            Role::User => encode_user(&m.content, &mut messages)?,
            Role::Assistant => messages.push(encode_assistant(&m.content)?),
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("messages".into(), Value::Array(messages));
    if let Some(max) = req.max_tokens {
        body.insert("max_completion_tokens".into(), json!(max));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(p) = req.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        body.insert("stop".into(), json!(req.stop));
    }
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({"name": t.name, "parameters": t.parameters});
                if let Some(d) = &t.description {
                    f["description"] = json!(d);
                }
                if let Some(s) = t.strict {
                    f["strict"] = json!(s);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        body.insert(
            "tool_choice".into(),
            match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool { name } => {
                    json!({"type": "function", "function": {"name": name}})
                }
            },
        );
    }
    if let Some(p) = req.parallel_tool_calls
        && !req.tools.is_empty()
    {
        body.insert("parallel_tool_calls".into(), json!(p));
    }
    if let Some(r) = &req.reasoning
        && r.enabled
    {
        body.insert("reasoning_effort".into(), json!(r.effort().as_str()));
    }
    if let Some(f) = &req.response_format {
        body.insert(
            "response_format".into(),
            match f {
                ResponseFormat::Text => json!({"type": "text"}),
                ResponseFormat::JsonObject => json!({"type": "json_object"}),
                ResponseFormat::JsonSchema { name, schema, strict, description } => {
                    let mut s = json!({"name": name, "schema": schema});
                    if let Some(strict) = strict {
                        s["strict"] = json!(strict);
                    }
                    if let Some(d) = description {
                        s["description"] = json!(d);
                    }
                    json!({"type": "json_schema", "json_schema": s})
                }
            },
        );
    }
    if let Some(u) = &req.user {
        body.insert("user".into(), json!(u));
    }
    if let Some(m) = &req.metadata {
        body.insert("metadata".into(), Value::Object(m.clone()));
    }
    if req.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Ok(Value::Object(body))
}

fn join_text(blocks: &[TextBlock]) -> String {
    let mut out = String::new();
    for (i, b) in blocks.iter().enumerate() {
        if i > 0 {
            out.push_str("\n\n");
        }
        out.push_str(&b.text);
    }
    out
}

fn image_part(img: &Image) -> Value {
    let mut url = json!({"url": img.source.to_openai_url()});
    if let Some(d) = &img.detail {
        url["detail"] = json!(d);
    }
    json!({"type": "image_url", "image_url": url})
}

/// What refusals call this wire.
const TARGET: &str = "an OpenAI Chat upstream";

/// A document as a `file` part: inline only. Chat Completions has no URL form for
/// files, and fetching one is not the gateway's job.
fn file_part(doc: &Document) -> Result<Value, ProtocolError> {
    match &doc.source {
        DocumentSource::Base64 { media_type, data } => Ok(json!({"type": "file", "file": {
            "file_data": format!("data:{media_type};base64,{data}"),
            "filename": doc.filename_or_default(),
        }})),
        DocumentSource::Url { .. } => Err(crate::cannot_send(
            &crate::describe_document(doc),
            TARGET,
            "Chat Completions takes files inline only (file_data), and the gateway does not \
             fetch URLs; send the file's data",
        )),
    }
}

/// A canonical user turn becomes: one `tool` message per tool result (they must follow
/// the assistant's tool calls directly), then one `user` message with the rest.
/// Images and documents inside a tool result (which `tool` messages cannot carry) go
/// into that user message, so nothing is dropped; what no user message can carry is
/// refused by name.
fn encode_user(content: &[Part], out: &mut Vec<Value>) -> Result<(), ProtocolError> {
    let mut user_parts = Vec::new();
    for part in content {
        if let Part::ToolResult(r) = part {
            let mut text = r.text();
            if r.is_error {
                text = format!("[tool error] {text}");
            }
            out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": text}));
            for p in &r.content {
                match p {
                    Part::Text(_) => {}
                    Part::Image(img) => user_parts.push(image_part(img)),
                    Part::Document(doc) => user_parts.push(file_part(doc)?),
                    other => {
                        return Err(crate::cannot_send(
                            &other.describe(),
                            TARGET,
                            "a tool result carries only text, images and files",
                        ));
                    }
                }
            }
        }
    }
    for part in content {
        match part {
            Part::Text(t) => user_parts.push(json!({"type": "text", "text": t.text})),
            Part::Image(img) => user_parts.push(image_part(img)),
            Part::Document(doc) => user_parts.push(file_part(doc)?),
            Part::ToolResult(_) => {}
            // Reasoning is context only: it is never sent back to another provider.
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other @ (Part::ToolCall(_) | Part::Untranslatable { .. }) => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "a user message carries only text, images, files and tool results",
                ));
            }
        }
    }
    if user_parts.is_empty() {
        return Ok(());
    }
    // A single text part is sent as a plain string: the most widely accepted shape.
    let content = match user_parts.as_slice() {
        [one] if one["type"] == "text" => one["text"].clone(),
        _ => Value::Array(user_parts),
    };
    out.push(json!({"role": "user", "content": content}));
    Ok(())
}

fn encode_assistant(content: &[Part]) -> Result<Value, ProtocolError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for part in content {
        match part {
            Part::Text(t) => text.push_str(&t.text),
            Part::ToolCall(c) => calls.push(json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })),
            // Reasoning from any provider is not sent back: OpenAI-compatible servers
            // either ignore it or refuse it.
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other @ (Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. }) => {
                return Err(crate::cannot_send(
                    &other.describe(),
                    TARGET,
                    "an assistant message carries only text and tool calls",
                ));
            }
        }
    }
    let mut m = json!({"role": "assistant"});
    m["content"] = if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) };
    if !calls.is_empty() {
        m["tool_calls"] = Value::Array(calls);
    }
    Ok(m)
}

// ---------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: Option<WireMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let w: WireResponse =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    let mut content = Vec::new();
    let mut stop_reason = None;
    if let Some(choice) = w.choices.into_iter().next() {
        stop_reason = choice.finish_reason.as_deref().map(StopReason::from_openai);
        if let Some(m) = choice.message {
            let reasoning = m.reasoning_content.filter(|r| !r.is_empty());
            if let Some(r) = reasoning {
                content.push(Part::Thinking { text: r, signature: None });
            }
            let parts = content_parts(m.content, &|| "choices[0].message".to_owned())
                .map_err(|e| ProtocolError::upstream(e.to_string()))?;
            // Only model output belongs in a response.
            content.extend(parts.into_iter().filter(|p| matches!(p, Part::Text(_))));
            if let Some(refusal) = m.refusal.filter(|r| !r.is_empty()) {
                content.push(Part::Text(TextBlock::new(refusal)));
                stop_reason = Some(StopReason::Refusal);
            }
            for c in m.tool_calls {
                content.push(Part::ToolCall(ToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                    signature: None,
                }));
            }
        }
    }
    Ok(Response {
        id: w.id,
        model: w.model,
        content,
        stop_reason,
        stop_sequence: None,
        usage: w.usage.map(|u| u.canonical()).unwrap_or_default(),
    })
}

/// Only the usage of a chat completion, for a body forwarded unchanged. The body
/// was produced by the upstream and is passed on as it is; its structure is
/// scanned (strings closed, brackets balanced) but only the usage is parsed.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    // Usually found by a scan, and only the usage object parsed.
    if let Some(usage) = crate::util::top_level_value(body, "usage").and_then(|r| body.get(r)) {
        let u: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(|e| ProtocolError::upstream(e.to_string()))?;
        return Ok(u.map(|u| u.canonical()));
    }
    let w: UsageOnly =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    Ok(w.usage.map(|u| u.canonical()))
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

pub fn encode_response(resp: &Response) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for part in &resp.content {
        match part {
            Part::Text(t) => text.push_str(&t.text),
            Part::Thinking { text: t, .. } => reasoning.push_str(t),
            Part::ToolCall(c) => calls.push(json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })),
            _ => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let mut v = json!({
        "id": resp.id,
        "object": "chat.completion",
        "created": now_secs(),
        "model": resp.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": resp.stop_reason.unwrap_or(StopReason::EndTurn).to_openai(),
            "logprobs": null,
        }],
    });
    if !resp.usage.is_empty() {
        v["usage"] = usage_json(&resp.usage);
    }
    v
}

pub fn parse_error(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let msg = match v.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e) => e.get("message").and_then(Value::as_str).map(str::to_owned),
        None => v.get("message").and_then(Value::as_str).map(str::to_owned),
    };
    msg.filter(|m| !m.is_empty())
}

// ---------------------------------------------------------------------------------
// Stream decoder: upstream chunks → canonical events
// ---------------------------------------------------------------------------------

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    id: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    choices: Vec<WireChunkChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChunkChoice {
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireToolCallDelta>,
}

#[derive(Deserialize)]
struct WireToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    /// A tool call, with the upstream's tool index.
    Tool(usize),
}

/// Upstream Chat Completions stream → canonical events.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    open: Option<(Open, usize)>,
    next_index: usize,
    stopped: bool,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn open(&mut self, kind: Open, block: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        if let Some((current, index)) = self.open {
            if current == kind {
                return index;
            }
            out.push(StreamEvent::BlockStop { index });
        }
        let index = self.next_index;
        self.next_index += 1;
        self.open = Some((kind, index));
        out.push(StreamEvent::BlockStart { index, kind: block });
        index
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some((_, index)) = self.open.take() {
            out.push(StreamEvent::BlockStop { index });
        }
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: WireChunk = serde_json::from_str(data)
            .map_err(|e| ProtocolError::upstream(format!("chat completion chunk: {e}")))?;
        if let Some(err) = chunk.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("upstream reported an error")
                .to_owned();
            let kind = err
                .get("type")
                .or_else(|| err.get("code"))
                .and_then(Value::as_str)
                .unwrap_or("api_error")
                .to_owned();
            return Err(ProtocolError::UpstreamError { kind, message });
        }
        if !self.started {
            self.started = true;
            out.push(StreamEvent::Start { id: chunk.id, model: chunk.model });
        }
        for choice in chunk.choices.into_iter().take(1) {
            if let Some(delta) = choice.delta {
                let reasoning = delta.reasoning_content.or(delta.reasoning);
                if let Some(text) = reasoning.filter(|t| !t.is_empty()) {
                    let index = self.open(Open::Thinking, BlockKind::Thinking, out);
                    out.push(StreamEvent::Delta { index, delta: Delta::Thinking { text } });
                }
                let text = match (delta.content, delta.refusal) {
                    (Some(c), _) if !c.is_empty() => Some(c),
                    (_, Some(r)) if !r.is_empty() => Some(r),
                    _ => None,
                };
                if let Some(text) = text {
                    let index = self.open(Open::Text, BlockKind::Text, out);
                    out.push(StreamEvent::Delta { index, delta: Delta::Text { text } });
                }
                for call in delta.tool_calls {
                    let tool_index = call.index.unwrap_or(0);
                    let (name, args) = match call.function {
                        Some(f) => (f.name, f.arguments),
                        None => (None, None),
                    };
                    let is_new = !matches!(self.open, Some((Open::Tool(i), _)) if i == tool_index);
                    let index = if is_new {
                        let kind = BlockKind::ToolCall {
                            id: call.id.unwrap_or_default(),
                            name: name.unwrap_or_default(),
                        };
                        self.open(Open::Tool(tool_index), kind, out)
                    } else {
                        self.next_index - 1
                    };
                    if let Some(json) = args.filter(|a| !a.is_empty()) {
                        out.push(StreamEvent::Delta {
                            index,
                            delta: Delta::ToolArguments { json },
                        });
                    }
                }
            }
            if let Some(reason) = choice.finish_reason
                && !self.stopped
            {
                self.close(out);
                self.stopped = true;
                out.push(StreamEvent::Stop {
                    reason: StopReason::from_openai(&reason),
                    stop_sequence: None,
                });
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamEvent::Usage { usage: usage.canonical() });
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if !self.stopped {
            if !self.done {
                return Err(ProtocolError::upstream("stream ended before a finish_reason"));
            }
            self.close(out);
            self.stopped = true;
            out.push(StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None });
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------
// Stream encoder: canonical events → chunks for an OpenAI client
// ---------------------------------------------------------------------------------

/// Canonical events → Chat Completions chunks, then `[DONE]`. Usage is sent in a
/// final chunk with `choices: []` only when the client asked for it
/// (`stream_options.include_usage`), as OpenAI does: clients that read
/// `choices[0]` of every chunk break on that chunk otherwise.
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    created: u64,
    /// Canonical block index → OpenAI tool_calls index.
    tool_index: Vec<(usize, usize)>,
    usage: Usage,
    include_usage: bool,
    finished: bool,
}

impl Encoder {
    /// `include_usage`: the client's `stream_options.include_usage`.
    pub fn new(include_usage: bool) -> Self {
        Self { created: now_secs(), include_usage, ..Self::default() }
    }

    fn chunk(&self, delta: Value, finish_reason: Option<&str>, out: &mut Vec<u8>) {
        let v = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": null}],
        });
        sse::write_json(out, None, &v);
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        match event {
            StreamEvent::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
                self.chunk(json!({"role": "assistant", "content": ""}), None, out);
            }
            StreamEvent::BlockStart { index, kind: BlockKind::ToolCall { id, name } } => {
                let tool = self.tool_index.len();
                self.tool_index.push((*index, tool));
                let call = json!({"index": tool, "id": id, "type": "function", "function": {"name": name, "arguments": ""}});
                self.chunk(json!({"tool_calls": [call]}), None, out);
            }
            StreamEvent::BlockStart { .. } | StreamEvent::BlockStop { .. } => {}
            StreamEvent::Delta { index, delta } => match delta {
                Delta::Text { text } => self.chunk(json!({"content": text}), None, out),
                Delta::Thinking { text } => {
                    self.chunk(json!({"reasoning_content": text}), None, out)
                }
                Delta::Signature { .. } => {}
                Delta::ToolArguments { json: args } => {
                    let tool = self
                        .tool_index
                        .iter()
                        .find(|(block, _)| block == index)
                        .map(|(_, t)| *t)
                        .unwrap_or(0);
                    let call = json!({"index": tool, "function": {"arguments": args}});
                    self.chunk(json!({"tool_calls": [call]}), None, out);
                }
            },
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => {
                self.chunk(json!({}), Some(reason.to_openai()), out)
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if std::mem::replace(&mut self.finished, true) {
            return;
        }
        if self.include_usage && !self.usage.is_empty() {
            let v = json!({
                "id": self.id,
                "object": "chat.completion.chunk",
                "created": self.created,
                "model": self.model,
                "choices": [],
                "usage": usage_json(&self.usage),
            });
            sse::write_json(out, None, &v);
        }
        sse::write_event(out, None, "[DONE]");
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        self.finished = true;
        sse::write_json(out, None, &err.to_openai());
    }
}

/// Whether one stream event's data is the chunk that carries only the usage
/// (`choices: []` and a `usage` object), which OpenAI sends when the request has
/// `stream_options.include_usage`. The gateway asks for it to meter a stream; a
/// client that did not is passed the stream without it. Found by scanning the
/// bytes (the data has already been decoded, so it is known to be JSON).
pub fn is_usage_only_chunk(data: &[u8]) -> bool {
    let field = |key| crate::util::top_level_value(data, key).and_then(|r| data.get(r));
    let no_choices = field("choices")
        .is_some_and(|c| c.iter().filter(|b| !b.is_ascii_whitespace()).eq(b"[]".iter()));
    no_choices && field("usage").is_some_and(|u| u.first() == Some(&b'{'))
}

/// Same-format fast path: the client's own body, with the model rewritten and, for a
/// stream, usage requested. Every other field, known or not, is kept.
pub fn fast_path(body: &mut Map<String, Value>, model: &str) {
    body.insert("model".into(), Value::String(model.to_owned()));
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        let opts = body.entry("stream_options").or_insert_with(|| json!({}));
        if let Value::Object(o) = opts {
            o.insert("include_usage".into(), Value::Bool(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ResponseAccumulator, SseDecoder, model::response_to_events, util};
    use proptest::prelude::*;

    #[test]
    fn parses_system_developer_tools_and_tool_results() {
        let body = br#"{
          "model": "gpt-5",
          "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": [{"type":"text","text":"Weather in Paris?"},
               {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA","detail":"low"}}]},
            {"role": "assistant", "content": null, "tool_calls": [
               {"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
               {"id":"call_2","type":"function","function":{"name":"time","arguments":"{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
            {"role": "system", "content": "mid-conversation note"}
          ],
          "tools": [{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}],
          "tool_choice": {"type":"function","function":{"name":"weather"}},
          "max_completion_tokens": 100, "stop": "END", "reasoning_effort": "high",
          "response_format": {"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}},
          "stream": true, "user": "u1"
        }"#;
        let req = parse_request(body).unwrap();
        assert_eq!(req.system, vec![TextBlock::new("Be brief.")]);
        assert_eq!(req.messages.len(), 4);
        assert!(matches!(&req.messages[1].content[1], Part::ToolCall(c) if c.name == "time"));
        // the two tool messages merge into one canonical user turn
        assert_eq!(req.messages[2].role, Role::User);
        assert_eq!(req.messages[2].content.len(), 2);
        assert_eq!(req.messages[3].role, Role::System);
        assert!(
            matches!(&req.messages[0].content[1], Part::Image(Image { source: ImageSource::Base64 { media_type, .. }, .. }) if media_type == "image/png")
        );
        assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "weather".into() }));
        assert_eq!(req.max_tokens, Some(100));
        assert_eq!(req.stop, vec!["END"]);
        assert_eq!(req.reasoning.as_ref().map(|r| r.effort()), Some(Effort::High));
        assert!(
            matches!(req.response_format, Some(ResponseFormat::JsonSchema { ref name, .. }) if name == "w")
        );
        assert!(req.stream);
        assert_eq!(req.user.as_deref(), Some("u1"));
    }

    #[test]
    fn rejects_unknown_roles_naming_the_field() {
        let err = parse_request(br#"{"model":"m","messages":[{"role":"wizard","content":"x"}]}"#)
            .unwrap_err();
        assert!(err.to_string().contains("messages[0].role"), "{err}");
    }

    #[test]
    fn encodes_tool_results_as_tool_messages_before_user_text() {
        let req = Request {
            model: "m".into(),
            messages: vec![Message {
                role: Role::User,
                content: vec![
                    Part::Text(TextBlock::new("and now?")),
                    Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: None,
                        content: vec![Part::Text(TextBlock::new("boom"))],
                        is_error: true,
                    }),
                ],
            }],
            stream: true,
            ..Request::default()
        };
        let v = encode_request(&req).unwrap();
        assert_eq!(v["messages"][0]["role"], "tool");
        assert_eq!(v["messages"][0]["content"], "[tool error] boom");
        assert_eq!(v["messages"][1]["content"], "and now?");
        assert_eq!(v["stream_options"]["include_usage"], true);
    }

    #[test]
    fn decodes_a_recorded_stream_with_parallel_tool_calls_and_usage() {
        let transcript = concat!(
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me\"}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"ci\"}}]}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Paris\\\"}\"}}]}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"time\",\"arguments\":\"{}\"}}]}}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":4},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n",
            "data: [DONE]\n\n",
        );
        let resp = decode_stream(&[transcript.as_bytes()]).unwrap();
        assert_eq!(resp.id, "chatcmpl-1");
        assert_eq!(resp.content.len(), 3);
        assert!(
            matches!(&resp.content[1], Part::ToolCall(c) if c.id == "call_a" && c.arguments == r#"{"city":"Paris"}"#)
        );
        assert!(matches!(&resp.content[2], Part::ToolCall(c) if c.name == "time"));
        assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(resp.usage.input_tokens, Some(20));
        assert_eq!(resp.usage.cache_read_tokens, Some(4));
        assert_eq!(resp.usage.reasoning_tokens, Some(0), "reported zeros stay zeros");
    }

    #[test]
    fn truncated_stream_is_an_error_and_error_chunks_surface() {
        let cut = "data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
        assert!(matches!(
            decode_stream(&[cut.as_bytes()]),
            Err(ProtocolError::MalformedUpstream(_))
        ));
        let err = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n";
        assert!(matches!(
            decode_stream(&[err.as_bytes()]),
            Err(ProtocolError::UpstreamError { ref message, .. }) if message == "overloaded"
        ));
        assert!(decode_stream(&[b"data: {not json\n\n"]).is_err());
    }

    #[test]
    fn encoder_sends_usage_in_a_final_chunk_with_empty_choices() {
        let resp = Response {
            id: "r".into(),
            model: "m".into(),
            content: vec![Part::Text(TextBlock::new("hi"))],
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
            usage: Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() },
        };
        let mut enc = Encoder::new(true);
        let mut out = Vec::new();
        for e in response_to_events(&resp) {
            enc.push(&e, &mut out);
        }
        enc.finish(&mut out);
        let mut events = Vec::new();
        let mut sse = SseDecoder::new();
        sse.push(&out, &mut events).unwrap();
        let n = events.len();
        assert_eq!(events[n - 1].data, "[DONE]");
        let usage: Value = serde_json::from_str(&events[n - 2].data).unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["prompt_tokens"], 3);
    }

    #[test]
    fn file_parts_are_documents_and_file_ids_are_kept_by_name() {
        let body = br#"{"model":"m","messages":[{"role":"user","content":[
            {"type":"text","text":"read these"},
            {"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"a.pdf"}},
            {"type":"file","file":{"file_data":"SGVsbG8=","filename":"notes.txt"}},
            {"type":"file","file":{"file_id":"file-123"}},
            {"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}
        ]}]}"#;
        let req = parse_request(body).unwrap();
        let content = &req.messages[0].content;
        let pdf = DocumentSource::Base64 {
            media_type: "application/pdf".into(),
            data: "JVBERi0=".into(),
        };
        assert_eq!(
            content[1],
            Part::Document(Document { filename: Some("a.pdf".into()), ..Document::new(pdf) })
        );
        // Bare base64: the name's extension tells the type.
        assert!(matches!(&content[2], Part::Document(d) if d.media_type() == Some("text/plain")));
        assert_eq!(
            content[3],
            Part::Untranslatable {
                what: "messages[0].content[3]: a file by file_id (file-123)".into()
            }
        );
        assert_eq!(
            content[4],
            Part::Untranslatable {
                what: "messages[0].content[4]: a `input_audio` content part".into()
            }
        );
        // Refused by name on the way out, never dropped.
        let err = encode_request(&req).unwrap_err();
        assert!(err.to_string().contains("file_id (file-123)"), "{err}");
    }

    #[test]
    fn documents_go_inline_as_file_parts_and_never_by_url() {
        let doc = |source| Part::Document(Document { filename: None, ..Document::new(source) });
        let req = |part: Part| Request {
            model: "m".into(),
            messages: vec![Message {
                role: Role::User,
                content: vec![Part::Text(TextBlock::new("summarize")), part],
            }],
            ..Request::default()
        };
        let inline = doc(DocumentSource::Base64 {
            media_type: "application/pdf".into(),
            data: "JVBERi0=".into(),
        });
        let v = encode_request(&req(inline)).unwrap();
        assert_eq!(
            v["messages"][0]["content"][1],
            json!({"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "document.pdf"}})
        );
        let url = doc(DocumentSource::Url { url: "https://x.test/a.pdf".into(), media_type: None });
        match encode_request(&req(url)) {
            Err(ProtocolError::Unsupported(m)) => {
                assert!(m.contains("https://x.test/a.pdf") && m.contains("OpenAI Chat"), "{m}")
            }
            other => panic!("want a refusal, got {other:?}"),
        }
        // A document inside a tool result goes to the user message after the tool's.
        let result = Part::ToolResult(ToolResult {
            call_id: "c1".into(),
            name: None,
            content: vec![
                Part::Text(TextBlock::new("attached")),
                doc(DocumentSource::Base64 {
                    media_type: "application/pdf".into(),
                    data: "JVBERi0=".into(),
                }),
            ],
            is_error: false,
        });
        let v = encode_request(&req(result)).unwrap();
        assert_eq!(v["messages"][0]["role"], "tool");
        assert_eq!(v["messages"][1]["content"][0]["type"], "file");
    }

    #[test]
    fn non_text_in_system_messages_and_assistant_turns_is_refused_by_name() {
        let body = br#"{"model":"m","messages":[{"role":"system","content":[
            {"type":"text","text":"rules"},{"type":"image_url","image_url":{"url":"https://x.test/i.png"}}]},
            {"role":"user","content":"hi"}]}"#;
        let err = parse_request(body).unwrap_err();
        assert!(
            err.to_string().contains("messages[0]: an image by URL (https://x.test/i.png)"),
            "{err}"
        );
        let req = Request {
            model: "m".into(),
            messages: vec![Message {
                role: Role::Assistant,
                content: vec![Part::Image(Image {
                    source: ImageSource::Url { url: "https://x.test/i.png".into() },
                    detail: None,
                    cache_control: None,
                })],
            }],
            ..Request::default()
        };
        assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
    }

    #[test]
    fn usage_chunk_only_when_the_client_asked_for_it() {
        let resp = Response {
            id: "r".into(),
            model: "m".into(),
            content: vec![Part::Text(TextBlock::new("hi"))],
            stop_reason: Some(StopReason::EndTurn),
            stop_sequence: None,
            usage: Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() },
        };
        let mut enc = Encoder::new(false);
        let mut out = Vec::new();
        for e in response_to_events(&resp) {
            enc.push(&e, &mut out);
        }
        enc.finish(&mut out);
        let mut events = Vec::new();
        SseDecoder::new().push(&out, &mut events).unwrap();
        assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
        for e in &events[..events.len() - 1] {
            let chunk: Value = serde_json::from_str(&e.data).unwrap();
            assert!(chunk["choices"][0].is_object(), "a chunk without choices[0]: {chunk}");
        }
        let asked = |body: &[u8]| parse_request(body).unwrap().stream_usage;
        assert!(asked(
            br#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}"#
        ));
        assert!(!asked(br#"{"model":"m","messages":[],"stream":true}"#));
        assert!(!asked(br#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":false}}"#));
        assert!(!asked(br#"{"model":"m","messages":[],"stream_options":{"include_usage":true}}"#));
    }

    #[test]
    fn finds_the_usage_only_chunk_by_its_bytes() {
        assert!(is_usage_only_chunk(br#"{"id":"c","choices":[],"usage":{"prompt_tokens":1}}"#));
        assert!(is_usage_only_chunk(br#"{"choices": [ ], "usage" : {}}"#));
        assert!(!is_usage_only_chunk(
            br#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":1}}"#
        ));
        assert!(!is_usage_only_chunk(br#"{"choices":[{"index":0,"delta":{}}],"usage":null}"#));
        // Azure's prompt-filter chunk has no choices and no usage: not ours to drop.
        assert!(!is_usage_only_chunk(br#"{"choices":[],"prompt_filter_results":[]}"#));
        assert!(!is_usage_only_chunk(br#"{"choices":[],"usage":null}"#));
        assert!(!is_usage_only_chunk(b"[DONE]"));
    }

    #[test]
    fn fast_path_keeps_unknown_fields_and_requests_usage() {
        let mut body = util::parse_object(
            br#"{"model":"alias","stream":true,"logit_bias":{"1":2},"x_custom":[1]}"#,
        )
        .unwrap();
        fast_path(&mut body, "gpt-5");
        assert_eq!(body["model"], "gpt-5");
        assert_eq!(body["logit_bias"], json!({"1": 2}));
        assert_eq!(body["x_custom"], json!([1]));
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    fn decode_stream(chunks: &[&[u8]]) -> Result<Response, ProtocolError> {
        let mut sse = SseDecoder::new();
        let mut dec = Decoder::new();
        let mut acc = ResponseAccumulator::default();
        let mut raw = Vec::new();
        let mut events = Vec::new();
        for c in chunks {
            sse.push(c, &mut raw).unwrap();
        }
        sse.finish(&mut raw);
        for e in &raw {
            dec.push(e, &mut events)?;
        }
        dec.finish(&mut events)?;
        for e in &events {
            acc.push(e);
        }
        Ok(acc.finish())
    }

    // --- property tests -------------------------------------------------------

    fn text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 .,!?\u{e9}\u{4e2d}]{1,24}"
    }

    fn arguments() -> impl Strategy<Value = String> {
        proptest::collection::btree_map("[a-z]{1,6}", 0i64..1000, 0..3)
            .prop_map(|m| serde_json::to_string(&m).unwrap())
    }

    fn response() -> impl Strategy<Value = Response> {
        let part = prop_oneof![
            text().prop_map(|t| Part::Text(TextBlock::new(t))),
            ("call_[a-z0-9]{4}", "[a-z_]{1,8}", arguments()).prop_map(|(id, name, arguments)| {
                Part::ToolCall(ToolCall { id, name, arguments, signature: None })
            }),
        ];
        (
            proptest::option::of(text()),
            proptest::collection::vec(part, 0..4),
            // The wire always carries both counts, so generate both or neither.
            proptest::option::of((0u64..10_000, 0u64..10_000)),
        )
            .prop_map(|(thinking, parts, counts)| {
                // OpenAI carries one text, then tool calls: normalise to that shape.
                let mut text = String::new();
                let mut calls = Vec::new();
                for p in parts {
                    match p {
                        Part::Text(t) => text.push_str(&t.text),
                        other => calls.push(other),
                    }
                }
                let mut content = Vec::new();
                if let Some(t) = thinking {
                    content.push(Part::Thinking { text: t, signature: None });
                }
                if !text.is_empty() {
                    content.push(Part::Text(TextBlock::new(text)));
                }
                let stop = if calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
                content.extend(calls);
                Response {
                    id: "chatcmpl-x".into(),
                    model: "m".into(),
                    content,
                    stop_reason: Some(stop),
                    stop_sequence: None,
                    usage: Usage {
                        input_tokens: counts.map(|c| c.0),
                        output_tokens: counts.map(|c| c.1),
                        ..Usage::default()
                    },
                }
            })
    }

    fn request() -> impl Strategy<Value = Request> {
        let user = proptest::collection::vec(text(), 1..3).prop_map(|ts| Message {
            role: Role::User,
            content: ts.into_iter().map(|t| Part::Text(TextBlock::new(t))).collect(),
        });
        let assistant =
            (text(), "call_[a-z0-9]{4}", arguments()).prop_map(|(t, id, args)| Message {
                role: Role::Assistant,
                content: vec![
                    Part::Text(TextBlock::new(t)),
                    Part::ToolCall(ToolCall {
                        id,
                        name: "f".into(),
                        arguments: args,
                        signature: None,
                    }),
                ],
            });
        (
            proptest::option::of(text()),
            user,
            proptest::option::of(assistant),
            proptest::option::of(1u64..100_000),
            proptest::option::of((0u32..200).prop_map(|t| f64::from(t) / 100.0)),
            any::<bool>(),
        )
            .prop_map(|(system, user, assistant, max_tokens, temperature, stream)| {
                let mut messages = vec![user];
                if let Some(a) = assistant {
                    let call_id = a
                        .content
                        .iter()
                        .find_map(
                            |p| if let Part::ToolCall(c) = p { Some(c.id.clone()) } else { None },
                        )
                        .unwrap_or_default();
                    messages.push(a);
                    messages.push(Message {
                        role: Role::User,
                        content: vec![Part::ToolResult(ToolResult {
                            call_id,
                            name: None,
                            content: vec![Part::Text(TextBlock::new("ok"))],
                            is_error: false,
                        })],
                    });
                }
                Request {
                    model: "m".into(),
                    system: system.map(|s| vec![TextBlock::new(s)]).unwrap_or_default(),
                    messages,
                    max_tokens,
                    temperature,
                    stream,
                    // The wire always asks for a stream's usage (to meter it).
                    stream_usage: stream,
                    ..Request::default()
                }
            })
    }

    // A single user text goes out as a plain string and several as a parts array;
    // both parse back to the same canonical message.
    proptest! {
        #[test]
        fn request_round_trips(req in request()) {
            let wire = encode_request(&req).unwrap();
            let back = parse_request(wire.to_string().as_bytes()).unwrap();
            prop_assert_eq!(back, req);
        }

        #[test]
        fn response_round_trips(resp in response()) {
            let wire = encode_response(&resp);
            let back = parse_response(wire.to_string().as_bytes()).unwrap();
            prop_assert_eq!(back, resp);
        }

        #[test]
        fn usage_only_parse_agrees_with_the_whole_parse(resp in response()) {
            let body = encode_response(&resp).to_string();
            let whole = parse_response(body.as_bytes()).unwrap();
            prop_assert_eq!(parse_usage(body.as_bytes()).unwrap().unwrap_or_default(), whole.usage);
        }

        #[test]
        fn stream_matches_non_stream_under_any_split(resp in response(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6)) {
            let mut enc = Encoder::new(true);
            let mut bytes = Vec::new();
            for e in response_to_events(&resp) {
                enc.push(&e, &mut bytes);
            }
            enc.finish(&mut bytes);
            let mut offsets: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            offsets.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for o in offsets { chunks.push(&bytes[prev..o]); prev = o; }
            chunks.push(&bytes[prev..]);
            let streamed = decode_stream(&chunks).unwrap();
            prop_assert_eq!(streamed, resp);
        }
    }

    #[test]
    fn max_tokens_becomes_max_completion_tokens_for_models_that_refuse_it() {
        let strict = crate::ModelTraits::infer(crate::Wire::OpenAiChat, "gpt-6.2-sol");
        let lenient = crate::ModelTraits::infer(crate::Wire::OpenAiChat, "gpt-4o");
        let obj = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            adapt_native(&obj(json!({"max_tokens": 50, "n": 1})), strict),
            vec![("max_tokens", None), ("max_completion_tokens", Some(json!(50)))]
        );
        // Both given: the newer field wins, the older one goes.
        assert_eq!(
            adapt_native(&obj(json!({"max_tokens": 50, "max_completion_tokens": 70})), strict),
            vec![("max_tokens", None)]
        );
        assert!(adapt_native(&obj(json!({"max_tokens": 50})), lenient).is_empty());
        assert!(adapt_native(&obj(json!({"max_completion_tokens": 50})), strict).is_empty());
    }
}
