//! Requests: a Responses body → canonical ([`parse_request`],
//! [`parse_request_sealed`]), and canonical → a Responses body ([`encode_request`]).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{
    Compaction, Dialect, Document, DocumentSource, Effort, Extras, HostedTool, Image, ImageSource,
    Message, Part, ProtocolError, Reasoning, Request, ResponseFormat, Role, Seal, ServerTool,
    ServerTools, TextBlock, ToolCall, ToolChoice, ToolResult, util,
};

use super::compaction;
use super::items;
use super::tools::{Declared, NAMESPACE_SEPARATOR, freeform_arguments, qualified, tool_json};
use super::wire::{
    InCustomToolCall, InFunctionCall, InFunctionCallOutput, WireReasoningItem, WireReasoningParam,
    WireText, WireTextFormat, reasoning_text,
};

const STATELESS: &str = "the gateway is stateless: previous_response_id/item_reference are not supported; send the full conversation";

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
        reasoning: parse_reasoning(field(map, "reasoning")?)?,
        response_format: parse_text_format(field(map, "text")?)?,
        user: field(map, "user")?,
        metadata: field(map, "metadata")?,
        stream_usage: false,
        compaction: trigger.then_some(Compaction::Trigger),
        extras: Extras {
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
        "compaction" | "compaction_summary" => {
            let summary = compaction::open_item(obj, path, seal)?;
            conv.push(Role::User, vec![text_part(&crate::compaction::summary_text(&summary))]);
        }
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
// Request: canonical → wire
// ---------------------------------------------------------------------------------

/// Render a canonical request as a Responses API request (for a Responses upstream and
/// the round-trip tests). The first system block becomes `instructions`, the others
/// leading `developer` messages. `store` and the prompt-cache, safety and tier
/// settings go as the client gave them ([`Extras`]); hosted tools declared in the
/// Responses format go as they came, others are refused by name.
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
    if req.compaction.is_some() {
        input.push(json!({"type": compaction::TRIGGER}));
    }
    body.insert("input".into(), Value::Array(input));

    if !req.tools.is_empty() || !req.extras.hosted_tools.is_empty() {
        let declare = |t: &crate::Tool, name: &str| {
            let mut v = tool_json(t, name);
            if req.extras.deferred_tools.contains(&t.name) {
                v["defer_loading"] = json!(true);
            }
            v
        };
        // Namespaced tools are grouped back under their namespace, by inner name.
        let mut tools: Vec<Value> = Vec::new();
        for t in &req.tools {
            let inner = t
                .namespace
                .as_deref()
                .and_then(|ns| t.name.strip_prefix(ns))
                .and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR));
            let Some((ns, inner)) = t.namespace.as_deref().zip(inner) else {
                tools.push(declare(t, &t.name));
                continue;
            };
            let group = tools.iter_mut().find(|v| v["type"] == "namespace" && v["name"] == ns);
            match group.and_then(|g| g.get_mut("tools")).and_then(Value::as_array_mut) {
                Some(members) => members.push(declare(t, inner)),
                None => tools.push(json!({
                    "type": "namespace", "name": ns, "tools": [declare(t, inner)],
                })),
            }
        }
        for hosted in &req.extras.hosted_tools {
            if hosted.dialect != Dialect::OpenAiResponses {
                return Err(crate::cannot_send(
                    &hosted.describe(),
                    "the Responses API",
                    "it is another API's tool",
                ));
            }
            tools.push(hosted.config.clone());
        }
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        let choice = match choice {
            ToolChoice::Auto => Some(json!("auto")),
            ToolChoice::None => Some(json!("none")),
            ToolChoice::Required => Some(json!("required")),
            ToolChoice::Tool { name } => Some(json!({"type": "function", "name": name})),
            // Only a Responses tool was declared here (others are refused above).
            ToolChoice::Hosted { .. } => req.forced_hosted().map(|t| json!({"type": t.tool_type})),
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
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
    let x = &req.extras;
    if let Some(store) = x.store {
        body.insert("store".into(), json!(store));
    }
    for (field, value) in [
        ("prompt_cache_key", &x.prompt_cache_key),
        ("prompt_cache_retention", &x.prompt_cache_retention),
        ("safety_identifier", &x.safety_identifier),
    ] {
        if let Some(value) = value {
            body.insert(field.into(), json!(value));
        }
    }
    // OpenAI's tiers, on both of its APIs.
    if let Some(tier) = x.service_tier.as_deref() {
        let tier = crate::carry::service_tier(crate::Wire::OpenAiChat, tier).unwrap_or(tier);
        body.insert("service_tier".into(), json!(tier));
    }
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
            (_, Part::Compaction { .. }) => {
                return Err(crate::compaction::refused("the Responses API"));
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

pub(super) fn output_text(text: &str) -> Value {
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

pub(super) fn summary_parts(text: &str) -> Value {
    if text.is_empty() { json!([]) } else { json!([{"type": "summary_text", "text": text}]) }
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
