//! Requests: a Messages body as Claude Code or an SDK sends it → canonical
//! ([`parse_request`]); canonical → the body for `POST /v1/messages`
//! ([`encode_request`]); and what the API refuses in a history (foreign tool ids,
//! tool loops without thinking of their own).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::carry::{self, Placement};
use crate::{
    Document, DocumentSource, Effort, Extras, Image, ImageSource, Message, ModelTraits, Part,
    ProtocolError, Reasoning, ReasoningControl, Request, ResponseFormat, Role, ServerTool,
    ServerTools, TextBlock, Tool, ToolChoice, Wire, util,
};

use super::extras;
pub(super) use super::rules::{DEFAULT_MAX_TOKENS, Samplers, anthropic_effort, budget_within};

use super::wire::{
    InBlock, InMessage, InMetadata, InOutputConfig, InOutputFormat, InSystemBlock, InThinking,
    InTool, InToolChoice, KNOWN_BLOCKS, at, block_to_part, unknown_type,
};

/// Name given to a JSON-schema response format (Anthropic's has no name).
pub(super) const SCHEMA_NAME: &str = "response";

/// Appended to `system` for [`ResponseFormat::JsonObject`], which has no native form.
const JSON_OBJECT_INSTRUCTION: &str = "Respond with a single valid JSON object and nothing \
else: no text before or after it, and no Markdown code fence around it.";

// ---------------------------------------------------------------------------------
// Request in: client body → canonical
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
    let mut history_tools = ServerTools::NONE;
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
        let content = message_content(msg.content, &format!("{path}.content"), &mut history_tools)
            .map_err(ProtocolError::InvalidBody)?;
        messages.push(Message { role, content });
    }

    let mut tools = Vec::new();
    let mut hosted_tools = Vec::new();
    let mut deferred_tools = Vec::new();
    for (i, raw) in
        take::<Vec<Value>>(&mut map, "tools")?.unwrap_or_default().into_iter().enumerate()
    {
        let path = format!("tools[{i}]");
        // Server tools (`web_search_*`, `mcp_toolset`, `bash_*`, …) have no schema:
        // carried by kind, so the request goes only where they run.
        if let Some(hosted) = extras::hosted_tool(&raw, &path) {
            hosted_tools.push(hosted);
            continue;
        }
        let tool: InTool = at(raw, &path).map_err(ProtocolError::InvalidBody)?;
        if tool.defer_loading == Some(true) {
            deferred_tools.push(tool.name.clone());
        }
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
                "tool" => {
                    let name = choice
                        .name
                        .ok_or_else(|| ProtocolError::body("tool_choice.name: missing field"))?;
                    // A server tool named so (and no client tool): the request
                    // requires that tool.
                    let server = hosted_tools.iter().find(|t| {
                        t.path.starts_with("tools[")
                            && t.config.get("name").and_then(Value::as_str) == Some(name.as_str())
                    });
                    match server {
                        Some(t) if !tools.iter().any(|f| f.name == name) => {
                            ToolChoice::Hosted { path: t.path.clone() }
                        }
                        _ => ToolChoice::Tool { name },
                    }
                }
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
    let reasoning_auto = output_config.effort.as_deref() == Some("auto");
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
    let servers: Vec<Value> = take(&mut map, "mcp_servers")?.unwrap_or_default();
    hosted_tools.extend(extras::mcp_servers(servers));
    let extras = Extras {
        hosted_tools,
        deferred_tools,
        history_tools,
        service_tier: take(&mut map, "service_tier")?,
        session_id: metadata.user_id.as_deref().and_then(extras::claude_code_session),
        reasoning_auto,
        ..Extras::default()
    };

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
        compaction: None,
        extras,
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

/// Message content: a string or an array of blocks.
/// A message's content; the server tools whose own blocks it holds are added to
/// `history_tools`.
fn message_content(
    content: Value,
    path: &str,
    history_tools: &mut ServerTools,
) -> Result<Vec<Part>, String> {
    match content {
        Value::String(s) => Ok(vec![Part::Text(TextBlock::new(s))]),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for (j, item) in items.into_iter().enumerate() {
                let item_path = format!("{path}[{j}]");
                let unknown = unknown_type(&item, &KNOWN_BLOCKS);
                if let Some(kind) = unknown.as_deref().and_then(ServerTool::of_anthropic_block) {
                    history_tools.insert(kind);
                }
                let block = at::<InBlock>(item, &item_path)?;
                parts.push(block_to_part(block, unknown, &item_path)?);
            }
            Ok(parts)
        }
        _ => Err(format!("{path}: expected a string or an array of content blocks")),
    }
}

// ---------------------------------------------------------------------------------
// What the API refuses in a history: foreign tool ids, tool loops without thinking
// ---------------------------------------------------------------------------------

/// The longest tool id the API takes.
const MAX_TOOL_ID: usize = 64;

pub(super) fn is_tool_id(id: &str) -> bool {
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
        Part::Thinking { signature, .. } => {
            signature.as_deref().is_some_and(crate::continuity::is_anthropic_signature)
        }
        _ => true,
    });
    !matches!(first, Some(Part::Thinking { .. } | Part::RedactedThinking { .. }))
}

// ---------------------------------------------------------------------------------
// Request out: canonical → body for api.anthropic.com
// ---------------------------------------------------------------------------------

/// The reasoning a translated request turns thinking on with: none when it is off,
/// or when the tool loop goes on without it ([`continues_without_thinking`]).
pub(super) fn thinking(req: &Request) -> Option<&Reasoning> {
    req.reasoning.as_ref().filter(|r| r.enabled && !continues_without_thinking(req))
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
    let thinking = thinking(req);
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

    // Server tools and MCP servers, as Anthropic declares them (or refused by name).
    let mut hosted = Vec::new();
    let mut mcp_servers = Vec::new();
    for placement in carry::placements(Wire::Anthropic, req, TARGET)? {
        match placement {
            Placement::Tool(tool) => hosted.push(tool),
            Placement::McpServer(server) => mcp_servers.push(server),
            Placement::Field(name, value) => {
                body.insert(name.into(), value);
            }
        }
    }
    if !mcp_servers.is_empty() {
        body.insert("mcp_servers".into(), Value::Array(mcp_servers));
    }
    if !req.tools.is_empty() || !hosted.is_empty() {
        let mut tools: Vec<Value> = req.tools.iter().map(encode_tool).collect();
        for (tool, value) in req.tools.iter().zip(tools.iter_mut()) {
            if req.extras.deferred_tools.contains(&tool.name) {
                value["defer_loading"] = json!(true);
            }
        }
        tools.extend(hosted);
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = encode_tool_choice(req) {
            body.insert("tool_choice".into(), choice);
        }
    } else if let Some(tools) = history_tools(req) {
        // A history with tool calls but no tools (OpenCode's title and summary
        // calls): Anthropic refuses it; the tools it names are declared, and
        // not to be called.
        body.insert("tools".into(), tools);
        body.insert("tool_choice".into(), json!({"type": "none"}));
    }
    if let Some(tier) =
        req.extras.service_tier.as_deref().and_then(|t| carry::service_tier(Wire::Anthropic, t))
    {
        body.insert("service_tier".into(), json!(tier));
    }

    let sent = Samplers::asked(req).sent(traits, thinking.is_some());
    if let Some(t) = sent.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(k) = sent.top_k {
        body.insert("top_k".into(), json!(k));
    }
    if let Some(p) = sent.top_p {
        body.insert("top_p".into(), json!(p));
    }
    if !req.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(req.stop));
    }
    // Anthropic's end-user id serves OpenAI's safety identifier's purpose too.
    if let Some(user) = req.user.as_ref().or(req.extras.safety_identifier.as_ref()) {
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
pub(super) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

pub(super) fn is_blank_block(block: &Value) -> bool {
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
        // from another provider, or another family's encrypted reasoning); such
        // blocks are only context, so they are dropped.
        Part::Thinking { text, signature: Some(signature) }
            if crate::continuity::is_anthropic_signature(signature) =>
        {
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
        Part::Compaction { .. } => return Err(crate::compaction::refused(TARGET)),
    })
}

/// The tools a history's calls name, declared as Anthropic needs them when the
/// request itself defines none (`Requests which include tool_use or tool_result
/// blocks must define tools`): each with an open schema. `None` when the history
/// calls no tool.
pub fn history_tools(req: &Request) -> Option<Value> {
    let mut names: Vec<&str> = Vec::new();
    for p in req.messages.iter().flat_map(|m| &m.content) {
        if let Part::ToolCall(c) = p
            && !names.contains(&c.name.as_str())
        {
            names.push(&c.name);
        }
    }
    let results =
        req.messages.iter().flat_map(|m| &m.content).any(|p| matches!(p, Part::ToolResult(_)));
    if names.is_empty() && !results {
        return None;
    }
    if names.is_empty() {
        // Results without their calls: a name is still needed for the declaration.
        names.push("tool");
    }
    Some(Value::Array(
        names
            .into_iter()
            .map(|name| {
                json!({"name": name, "description": "A tool this conversation used earlier.",
                    "input_schema": {"type": "object"}})
            })
            .collect(),
    ))
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
        // The server tool by the name it is declared with here.
        Some(ToolChoice::Hosted { .. }) => {
            match req.forced_hosted().map(|t| carry::place(Wire::Anthropic, t)) {
                Some(Ok(Placement::Tool(tool))) => {
                    json!({"type": "tool", "name": tool.get("name").cloned().unwrap_or_default()})
                }
                _ => json!({"type": "auto"}),
            }
        }
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

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
