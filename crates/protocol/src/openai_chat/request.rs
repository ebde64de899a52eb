//! Requests: a Chat Completions body → canonical ([`parse_request`]), and
//! canonical → the body for an OpenAI-compatible upstream ([`encode_request`]).

use serde_json::{Value, json};

use crate::util::from_slice;
use crate::{
    Dialect, Document, DocumentSource, Effort, Extras, HostedTool, Image, ImageSource, Message,
    Part, ProtocolError, Reasoning, Request, ResponseFormat, Role, ServerTool, TextBlock, Tool,
    ToolCall, ToolChoice, ToolResult,
};

use super::request_out::Body;
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
    req.extras.reasoning_auto = w.reasoning_effort.as_deref() == Some("auto");
    req.reasoning = w.reasoning_effort.as_deref().filter(|e| *e != "auto").map(|e| Reasoning {
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
    serde_json::to_value(Body::of(req, echo)?).map_err(|e| ProtocolError::body(e.to_string()))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
