//! Requests: a Responses body → canonical ([`parse_request`],
//! [`parse_request_sealed`]); the other way is `encode.rs`.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{
    Compaction, Document, DocumentSource, Effort, Extras, HostedTool, Image, ImageSource, Message,
    Part, ProtocolError, Reasoning, Request, ResponseFormat, Role, Seal, ServerTool, ServerTools,
    TextBlock, ToolCall, ToolChoice, ToolResult, util,
};

use super::compaction;
use super::items;
use super::tools::{Declared, freeform_arguments, qualified};
use super::wire::{
    InCustomToolCall, InFunctionCall, InFunctionCallOutput, WireReasoningItem, WireReasoningParam,
    WireText, WireTextFormat, reasoning_text,
};

const STATELESS: &str = "previous_response_id and item_reference name stored state this request cannot reach: send them to POST /v1/responses (an item_reference resolves within the conversation its previous_response_id continues), or send the whole conversation";

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
    parse_map_sealed(&util::parse_object(body)?, seal)
}

/// [`parse_request_sealed`] of a body already parsed as an object.
pub(super) fn parse_map_sealed(
    map: &Map<String, Value>,
    seal: Option<&dyn Seal>,
) -> Result<Request, ProtocolError> {
    if !matches!(map.get("previous_response_id"), None | Some(Value::Null)) {
        return Err(ProtocolError::Unsupported(STATELESS.into()));
    }
    let model: String =
        field(map, "model")?.ok_or_else(|| ProtocolError::body("`model` is required"))?;

    let mut conv = Conversation::default();
    let mut trigger = false;
    conv.declared.add_all(map.get("tools"), "tools")?;
    if let Some(instructions) = field::<String>(map, "instructions")?
        && !instructions.is_empty()
    {
        conv.system.push(TextBlock::new(instructions));
    }
    match map.get("input") {
        None | Some(Value::Null) => {}
        Some(Value::String(text)) => conv.push(Role::User, vec![text_part(text)]),
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                if compaction::is_trigger(item) {
                    if i + 1 != items.len() {
                        return Err(ProtocolError::body(format!(
                            "input[{i}]: `{}` must be the final input item",
                            compaction::TRIGGER
                        )));
                    }
                    trigger = true;
                    continue;
                }
                parse_input_item(&mut conv, item, &format!("input[{i}]"), seal)?;
            }
        }
        Some(_) => {
            return Err(ProtocolError::body("input: expected a string or an array of items"));
        }
    }

    let Declared { tools, hosted, deferred } = conv.declared;
    let tool_choice = parse_tool_choice(map.get("tool_choice"), &hosted)?;
    // `auto` is the gateway's to settle (from the request's intent), never an
    // upstream's.
    let reasoning_param: Option<WireReasoningParam> = field(map, "reasoning")?;
    let reasoning_auto = reasoning_param.as_ref().and_then(|p| p.effort.as_deref()) == Some("auto");
    let reasoning = if reasoning_auto { None } else { parse_reasoning(reasoning_param)? };
    Ok(Request {
        model,
        system: conv.system,
        messages: conv.messages,
        tools,
        tool_choice,
        parallel_tool_calls: field(map, "parallel_tool_calls")?,
        max_tokens: field(map, "max_output_tokens")?,
        temperature: field(map, "temperature")?,
        top_p: field(map, "top_p")?,
        top_k: None,
        stop: Vec::new(),
        stream: field(map, "stream")?.unwrap_or(false),
        reasoning,
        response_format: parse_text_format(field(map, "text")?)?,
        user: field(map, "user")?,
        metadata: field(map, "metadata")?,
        stream_usage: false,
        compaction: trigger.then_some(Compaction::Trigger),
        extras: Extras {
            reasoning_auto,
            hosted_tools: hosted,
            deferred_tools: deferred,
            history_tools: conv.history_tools,
            prompt_cache_key: field(map, "prompt_cache_key")?,
            prompt_cache_retention: field(map, "prompt_cache_retention")?,
            safety_identifier: field(map, "safety_identifier")?,
            service_tier: field(map, "service_tier")?,
            store: field(map, "store")?,
            session_id: None,
        },
    })
}

/// The canonical messages being built from input items.
#[derive(Default)]
pub(super) struct Conversation {
    system: Vec<TextBlock>,
    messages: Vec<Message>,
    /// A user, assistant or tool item has been seen: system items are now mid-conversation.
    started: bool,
    /// The request's tools and those `additional_tools` items add.
    declared: Declared,
    /// The hosted tools whose own items the input holds ([`Extras::history_tools`]).
    pub(super) history_tools: ServerTools,
}

impl Conversation {
    /// Append parts to the conversation, merging with the previous message of the same role.
    pub(super) fn push(&mut self, role: Role, parts: Vec<Part>) {
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

    pub(super) fn push_system(
        &mut self,
        parts: Vec<Part>,
        path: &str,
    ) -> Result<(), ProtocolError> {
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
        // Compacted earlier by this gateway: the summary takes the turns' place.
        // By the upstream: kept by name, for the fast path to take it back.
        "compaction" | "compaction_summary" => match compaction::open_item(obj, path, seal)? {
            compaction::Opened::Summary(summary) => {
                conv.push(Role::User, vec![text_part(&crate::compaction::summary_text(&summary))]);
            }
            compaction::Opened::Foreign(what) => {
                conv.push(Role::User, vec![Part::Untranslatable { what }]);
            }
        },
        "item_reference" => return Err(ProtocolError::Unsupported(STATELESS.into())),
        // Tools declared at a point of the history (Codex, for some models): other
        // wires declare every tool up front.
        "additional_tools" => conv.declared.add_all(obj.get("tools"), &format!("{path}.tools"))?,
        "local_shell_call" => items::local_shell_call(conv, obj, path)?,
        "local_shell_call_output" => items::local_shell_call_output(conv, obj, path)?,
        other if items::hosted_call(other).is_some() => items::hosted(conv, other, path),
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
/// OpenAI organisation, which no other provider (and no other key) can read: it is
/// kept by name ([`Part::Untranslatable`]), so the client's own body takes it to the
/// Responses API (the fast path) and any translation is refused naming it, as a
/// Chat client's `file_id` is.
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
            return match string("file_id")? {
                Some(id) => {
                    Ok(Part::Untranslatable { what: format!("{path}: a file by file_id ({id})") })
                }
                None => Err(ProtocolError::body(format!(
                    "{path}: input_file needs file_data, file_url or file_id"
                ))),
            };
        }
    };
    Ok(Part::Document(Document { filename, ..Document::new(source) }))
}

/// `tool_choice`; one naming a hosted tool's type (`{"type": "web_search"}`) forces
/// that tool, which `tools` must declare (of that type, or of its kind:
/// `web_search_preview` for `web_search`).
fn parse_tool_choice(
    choice: Option<&Value>,
    hosted: &[HostedTool],
) -> Result<Option<ToolChoice>, ProtocolError> {
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
            Some(other) => {
                let kind = ServerTool::from_responses(other);
                let forced = hosted
                    .iter()
                    .find(|t| t.tool_type == other)
                    .or_else(|| hosted.iter().find(|t| kind.is_some() && t.kind == kind));
                match forced {
                    Some(tool) => Ok(Some(ToolChoice::Hosted { path: tool.path.clone() })),
                    None => Err(ProtocolError::Unsupported(format!(
                        "tool_choice of type `{other}`: no tool of that type is declared in `tools`"
                    ))),
                }
            }
            None => Err(ProtocolError::body("tool_choice.type: expected a string")),
        },
        Some(_) => Err(ProtocolError::body("tool_choice: expected a string or an object")),
    }
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
// Helpers
// ---------------------------------------------------------------------------------

pub(super) fn text_part(text: &str) -> Part {
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

pub(super) fn from_value<T: DeserializeOwned>(
    value: &Value,
    path: &str,
) -> Result<T, ProtocolError> {
    T::deserialize(value).map_err(|e| ProtocolError::body(format!("{path}: {e}")))
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
