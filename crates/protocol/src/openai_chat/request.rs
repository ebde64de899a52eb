//! Requests: a Chat Completions body → canonical ([`parse_request`]), and
//! canonical → the body for an OpenAI-compatible upstream ([`encode_request`]).

use serde_json::{Map, Value, json};

use crate::carry::{self, Placement};
use crate::util::from_slice;
use crate::{
    Dialect, Document, DocumentSource, Effort, Extras, HostedTool, Image, ImageSource, Message,
    Part, ProtocolError, Reasoning, Request, ResponseFormat, Role, ServerTool, TextBlock, Tool,
    ToolCall, ToolChoice, ToolResult, Wire,
};

use super::wire::{WireContent, WirePart, WireRequest, WireResponseFormat};

/// Parse a Chat Completions request body (`POST /v1/chat/completions`), as an
/// OpenAI SDK sends it.
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
        extras: Extras {
            hosted_tools: w
                .web_search_options
                .filter(|o| !o.is_null())
                .map(|config| HostedTool {
                    kind: Some(ServerTool::WebSearch),
                    dialect: Dialect::OpenAiChat,
                    tool_type: "web_search_options".to_owned(),
                    path: "web_search_options".to_owned(),
                    config,
                })
                .into_iter()
                .collect(),
            prompt_cache_key: w.prompt_cache_key,
            prompt_cache_retention: w.prompt_cache_retention,
            safety_identifier: w.safety_identifier,
            service_tier: w.service_tier,
            store: w.store,
            ..Extras::default()
        },
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
    for (i, mut m) in w.messages.into_iter().enumerate() {
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
                if let Some(r) = m.reasoning_text() {
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
fn push_merged(messages: &mut Vec<Message>, message: Message) {
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
pub(super) fn content_parts(
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

/// Canonical request → Chat Completions body for an upstream.
pub fn encode_request(req: &Request) -> Result<Value, ProtocolError> {
    encode_with(req, None)
}

/// [`encode_request`], with each tool-calling assistant turn's reasoning written
/// in the field `echo` names (a server that wants it back, see
/// [`super::Compat::reasoning_echo`]).
pub(super) fn encode_with(req: &Request, echo: Option<&str>) -> Result<Value, ProtocolError> {
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
            Role::Assistant => messages.push(encode_assistant(&m.content, echo)?),
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
    // OpenAI refuses `tool_choice` without `tools` (Codex's local compaction sends
    // one): it says nothing then, so it is left out.
    if let Some(choice) = req.tool_choice.as_ref().filter(|_| !req.tools.is_empty()) {
        let choice = match choice {
            ToolChoice::Auto => Some(json!("auto")),
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool { name } => {
                Some(json!({"type": "function", "function": {"name": name}}))
            }
            // Chat's `tool_choice` names functions only; a search model searches
            // on every request (`carry::forces`).
            ToolChoice::Hosted { .. } => None,
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
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
    // Prompt-cache routing, safety and storage go as the client set them: a lost
    // cache key costs an agent most of its cache hits.
    let x = &req.extras;
    for (field, value) in [
        ("prompt_cache_key", &x.prompt_cache_key),
        ("prompt_cache_retention", &x.prompt_cache_retention),
        ("safety_identifier", &x.safety_identifier),
    ] {
        if let Some(value) = value {
            body.insert(field.into(), json!(value));
        }
    }
    if let Some(store) = x.store {
        body.insert("store".into(), json!(store));
    }
    if let Some(tier) =
        x.service_tier.as_deref().and_then(|t| carry::service_tier(Wire::OpenAiChat, t))
    {
        body.insert("service_tier".into(), json!(tier));
    }
    for placement in carry::placements(Wire::OpenAiChat, req, TARGET)? {
        match placement {
            Placement::Field(name, value) => {
                body.insert(name.into(), value);
            }
            // `place` gives Chat Completions nothing else; refused rather than lost.
            Placement::Tool(_) | Placement::McpServer(_) => {
                return Err(ProtocolError::Unsupported(format!(
                    "{TARGET} takes hosted tools only as top-level options"
                )));
            }
        }
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
            other @ (Part::ToolCall(_) | Part::Untranslatable { .. } | Part::Compaction { .. }) => {
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

fn encode_assistant(content: &[Part], echo: Option<&str>) -> Result<Value, ProtocolError> {
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
            // either ignore it or refuse it (unless `echo` asks for it, below).
            Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
            other @ (Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. }
            | Part::Compaction { .. }) => {
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
        if let Some(field) = echo {
            m[field] = json!(super::compat::reasoning_text(content));
        }
        m["tool_calls"] = Value::Array(calls);
    }
    Ok(m)
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
