//! Requests: canonical → the body for `generateContent` ([`encode_request`]), and a
//! Gemini body → canonical ([`parse_request`]).

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::model::{
    DEFAULT_DOCUMENT_TYPE, Document, DocumentSource, Effort, Image, ImageSource, Message,
    ModelTraits, Part, Reasoning, ReasoningControl, Request, ResponseFormat, Role, TextBlock, Tool,
    ToolCall, ToolChoice, ToolResult,
};
use crate::{Dialect, HostedTool, ProtocolError, ServerTool, util};

use super::ids::{
    SKIP_SIGNATURE, call_base, client_id, real_signature, split_call_id, valid_gemini_id,
};
use super::response::args_text;
use super::wire::{
    Blob, Content, FileData, FunctionCall, FunctionCallingConfig, FunctionDeclaration,
    FunctionResponse, GenerationConfig, ThinkingConfig, ToolConfig, WirePart, WireRequest,
    WireTool,
};

// ---------------------------------------------------------------------------------
// Requests: canonical → wire
// ---------------------------------------------------------------------------------

/// Build the `generateContent` body for a model with `traits`: no model in it (it
/// goes in the URL path), reasoning as `thinkingBudget` or `thinkingLevel` as
/// `traits.reasoning` says. `Unsupported` for what Gemini cannot take.
pub fn encode_request(req: &Request, traits: ModelTraits) -> Result<Value, ProtocolError> {
    let names = call_names(&req.messages);
    let leading = req.messages.iter().take_while(|m| m.role == Role::System).count();

    let mut system: Vec<WirePart> = req.system.iter().filter_map(|b| text_part(&b.text)).collect();
    for message in req.messages.iter().take(leading) {
        for part in &message.content {
            match part {
                Part::Text(t) => system.extend(text_part(&t.text)),
                Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
                other => {
                    return Err(crate::cannot_send(
                        &other.describe(),
                        TARGET,
                        "a leading system message becomes systemInstruction, which takes only text",
                    ));
                }
            }
        }
    }

    // The turns as Gemini sees them: consecutive messages of one side merged.
    let mut turns: Vec<(&str, Vec<(Role, &Part)>)> = Vec::new();
    for message in req.messages.iter().skip(leading) {
        let role = if message.role == Role::Assistant { "model" } else { "user" };
        let parts = message.content.iter().map(|p| (message.role, p));
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(parts),
            _ => turns.push((role, parts.collect())),
        }
    }
    let mut contents: Vec<Content> = Vec::new();
    let mut calls: Vec<&str> = Vec::new();
    for (role, mut turn) in turns {
        let encodes = turn
            .iter()
            .any(|(_, p)| !matches!(p, Part::Thinking { .. } | Part::RedactedThinking { .. }));
        if role == "model" && encodes {
            calls = turn
                .iter()
                .filter_map(
                    |(_, p)| if let Part::ToolCall(c) = p { Some(c.id.as_str()) } else { None },
                )
                .collect();
        } else {
            in_call_order(&mut turn, &calls);
        }
        let mut parts = Vec::new();
        for (role, part) in turn {
            encode_part(part, role, &names, &mut parts)?;
        }
        if parts.is_empty() {
            continue;
        }
        // A turn that encodes to nothing (only thinking, say) leaves its neighbours
        // adjacent: they are one turn too.
        match contents.last_mut() {
            Some(last) if last.role.as_deref() == Some(role) => last.parts.extend(parts),
            _ => contents.push(Content { role: Some(role.into()), parts }),
        }
    }
    for content in &mut contents {
        if content.role.as_deref() == Some("model") {
            fill_signatures(&mut content.parts);
        }
    }

    let declarations: Vec<FunctionDeclaration> = req
        .tools
        .iter()
        .map(|tool| FunctionDeclaration {
            name: tool.name.clone(),
            description: tool.description.clone(),
            parameters: None,
            parameters_json_schema: schema_for_gemini(&tool.parameters),
        })
        .collect();
    let tools = if declarations.is_empty() {
        Vec::new()
    } else {
        vec![WireTool { function_declarations: declarations, hosted: Map::new() }]
    };

    let wire = WireRequest {
        contents,
        system_instruction: (!system.is_empty()).then_some(Content { role: None, parts: system }),
        tools,
        tool_config: req.tool_choice.as_ref().and_then(tool_config),
        generation_config: generation_config(req, traits),
    };
    let mut body = serde_json::to_value(&wire).map_err(ProtocolError::body)?;
    // Google's own tools (search, code execution, URL context), each a `tools`
    // entry of its own, after the function declarations.
    let hosted: Vec<Value> = crate::carry::placements(crate::Wire::Gemini, req, TARGET)?
        .into_iter()
        // `place` gives Gemini `tools` entries only.
        .filter_map(|p| match p {
            crate::carry::Placement::Tool(tool) => Some(tool),
            _ => None,
        })
        .collect();
    if !hosted.is_empty()
        && let Value::Object(map) = &mut body
    {
        let tools = map.entry("tools").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(tools) = tools {
            tools.extend(hosted);
        }
    }
    Ok(body)
}

/// Gemini pairs function responses with the calls of the turn before by position
/// (and by `id` only where a call carried one): the results go first, in the order
/// of the calls they answer, whatever order the client sent them in; results that
/// answer none of them follow, then the turn's other parts, each kind in its own
/// order.
fn in_call_order(turn: &mut Vec<(Role, &Part)>, calls: &[&str]) {
    let position = |p: &Part| match p {
        Part::ToolResult(r) => {
            Some(calls.iter().position(|c| *c == r.call_id).unwrap_or(calls.len()))
        }
        _ => None,
    };
    // A stable sort keeps the order within each rank.
    turn.sort_by_key(|(_, p)| position(p).unwrap_or(usize::MAX));
}

/// Every tool call's id → name, for naming tool results that do not carry a name.
fn call_names(messages: &[Message]) -> HashMap<&str, &str> {
    let mut names = HashMap::new();
    for message in messages {
        for part in &message.content {
            if let Part::ToolCall(call) = part {
                names.insert(call.id.as_str(), call.name.as_str());
            }
        }
    }
    names
}

pub(super) fn text_part(text: &str) -> Option<WirePart> {
    // Gemini rejects empty text parts.
    (!text.is_empty()).then(|| WirePart { text: Some(text.to_owned()), ..WirePart::default() })
}

/// What refusals call this wire.
const TARGET: &str = "a Gemini upstream";

fn encode_part(
    part: &Part,
    role: Role,
    names: &HashMap<&str, &str>,
    out: &mut Vec<WirePart>,
) -> Result<(), ProtocolError> {
    match part {
        Part::Text(t) => out.extend(text_part(&t.text)),
        Part::Image(image) => out.push(image_part(&image.source)),
        Part::Document(doc) => out.push(document_part(doc)),
        Part::ToolCall(call) => {
            if role != Role::Assistant {
                return Err(ProtocolError::Unsupported(format!(
                    "tool call {} outside an assistant message",
                    call.id
                )));
            }
            let args = util::arguments_to_value(&call.arguments)?;
            if !args.is_object() {
                return Err(ProtocolError::body(format!(
                    "tool call {} arguments must be a JSON object for gemini",
                    call.id
                )));
            }
            out.push(call_part(call, args));
        }
        Part::ToolResult(result) => {
            if role == Role::Assistant {
                return Err(ProtocolError::Unsupported(format!(
                    "tool result {} inside an assistant message",
                    result.call_id
                )));
            }
            out.push(function_response_part(result, names)?);
            // A functionResponse carries text; what else the result holds follows it
            // in the same turn.
            for inner in &result.content {
                match inner {
                    Part::Text(_) => {}
                    Part::Image(image) => out.push(image_part(&image.source)),
                    Part::Document(doc) => out.push(document_part(doc)),
                    other => {
                        return Err(crate::cannot_send(
                            &other.describe(),
                            TARGET,
                            "a tool result holds only text, images and documents",
                        ));
                    }
                }
            }
        }
        // Thinking parts are never sent upstream (see the wire's docs in `mod.rs`).
        Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
        Part::Untranslatable { what } => {
            return Err(crate::cannot_send(
                what,
                TARGET,
                "the gateway cannot translate it; send it to a provider of the wire it came from",
            ));
        }
        Part::Compaction { .. } => return Err(crate::compaction::refused(TARGET)),
    }
    Ok(())
}

/// A document as `inlineData`, or by URL as `fileData` (Gemini fetches it). A URL
/// of unknown type is taken to be a PDF, the type the other wires send by URL.
fn document_part(doc: &Document) -> WirePart {
    match &doc.source {
        DocumentSource::Base64 { media_type, data } => WirePart {
            inline_data: Some(Blob { mime_type: media_type.clone(), data: data.clone() }),
            ..WirePart::default()
        },
        DocumentSource::Url { url, media_type } => WirePart {
            file_data: Some(FileData {
                mime_type: Some(
                    media_type.clone().unwrap_or_else(|| DEFAULT_DOCUMENT_TYPE.to_owned()),
                ),
                file_uri: url.clone(),
            }),
            ..WirePart::default()
        },
    }
}

fn image_part(source: &ImageSource) -> WirePart {
    match source {
        ImageSource::Base64 { media_type, data } => WirePart {
            inline_data: Some(Blob { mime_type: media_type.clone(), data: data.clone() }),
            ..WirePart::default()
        },
        ImageSource::Url { url } => WirePart {
            file_data: Some(FileData {
                mime_type: Some(guess_image_mime(url).to_owned()),
                file_uri: url.clone(),
            }),
            ..WirePart::default()
        },
    }
}

/// The MIME type an image URL's extension suggests; `image/jpeg` when unsure.
fn guess_image_mime(url: &str) -> &'static str {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let ext = match path.rsplit_once('.') {
        Some((_, ext)) if !ext.contains('/') => ext.to_ascii_lowercase(),
        _ => return "image/jpeg",
    };
    match ext.as_str() {
        "png" => "image/png",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "heic" => "image/heic",
        "heif" => "image/heif",
        _ => "image/jpeg",
    }
}

/// A `functionCall` part: Gemini's id from the call id, its signature from the
/// call (or, in an id of an earlier version, from the id).
pub(super) fn call_part(call: &ToolCall, args: Value) -> WirePart {
    let (id, name) = (call.id.as_str(), call.name.as_str());
    let info = split_call_id(id);
    WirePart {
        thought_signature: real_signature(call.signature.as_deref()).or(info.signature),
        function_call: Some(FunctionCall {
            id: info.gemini_id.map(str::to_owned),
            name: name.to_owned(),
            args: Some(args),
        }),
        ..WirePart::default()
    }
}

fn function_response_part(
    result: &ToolResult,
    names: &HashMap<&str, &str>,
) -> Result<WirePart, ProtocolError> {
    let name =
        result.name.as_deref().or_else(|| names.get(result.call_id.as_str()).copied()).ok_or_else(
            || {
                ProtocolError::body(format!(
                    "tool result {} has no name and matches no tool call (gemini needs the name)",
                    result.call_id
                ))
            },
        )?;
    let text = result.text();
    let object = match serde_json::from_str::<Value>(&text) {
        Ok(value @ Value::Object(_)) => Some(value),
        _ => None,
    };
    let response = match (result.is_error, object) {
        (false, Some(object)) => object,
        (false, None) => json!({ "content": text }),
        (true, Some(object)) => json!({ "error": object }),
        (true, None) => json!({ "error": text }),
    };
    Ok(WirePart {
        function_response: Some(FunctionResponse {
            id: split_call_id(&result.call_id).gemini_id.map(str::to_owned),
            name: name.to_owned(),
            response,
        }),
        ..WirePart::default()
    })
}

/// Gemini 3 validates the first `functionCall` of each model turn: a call without a
/// real signature there gets the documented placeholder. Later calls of the turn are
/// left as they are (Gemini signs only the first of parallel calls).
fn fill_signatures(parts: &mut [WirePart]) {
    if let Some(first) = parts.iter_mut().find(|p| p.function_call.is_some())
        && first.thought_signature.is_none()
    {
        first.thought_signature = Some(SKIP_SIGNATURE.to_owned());
    }
}

/// JSON Schema for `parametersJsonSchema` / `responseJsonSchema`: taken as is, less a
/// root `$schema` (meaningless to Gemini). `None` for an absent schema.
fn schema_for_gemini(schema: &Value) -> Option<Value> {
    match schema {
        Value::Null => None,
        Value::Object(map) => {
            let mut map = map.clone();
            map.remove("$schema");
            Some(Value::Object(map))
        }
        other => Some(other.clone()),
    }
}

fn tool_config(choice: &ToolChoice) -> Option<ToolConfig> {
    let (mode, allowed) = match choice {
        ToolChoice::Auto => ("AUTO", Vec::new()),
        ToolChoice::None => ("NONE", Vec::new()),
        ToolChoice::Required => ("ANY", Vec::new()),
        ToolChoice::Tool { name } => ("ANY", vec![name.clone()]),
        // Gemini's calling modes are about functions: its own tools cannot be
        // forced (`carry::forces`), so the core sends no such request here.
        ToolChoice::Hosted { .. } => return None,
    };
    Some(ToolConfig {
        function_calling_config: Some(FunctionCallingConfig {
            mode: Some(mode.to_owned()),
            allowed_function_names: allowed,
        }),
    })
}

/// The `thinkingLevel` for an effort. `minimal` is refused by several Gemini 3+
/// models, so it is sent as `low`; above `high` only some Gemini 4 models go, so
/// `xhigh` and `max` are sent as `high`.
fn gemini_level(effort: Effort) -> &'static str {
    match effort {
        Effort::Minimal | Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High | Effort::XHigh | Effort::Max => "high",
    }
}

fn generation_config(req: &Request, traits: ModelTraits) -> Option<GenerationConfig> {
    let mut config = GenerationConfig {
        max_output_tokens: req.max_tokens,
        temperature: req.temperature,
        top_p: req.top_p,
        top_k: req.top_k,
        stop_sequences: req.stop.clone(),
        ..GenerationConfig::default()
    };
    match &req.response_format {
        None => {}
        Some(ResponseFormat::Text) => config.response_mime_type = Some("text/plain".into()),
        Some(ResponseFormat::JsonObject) => {
            config.response_mime_type = Some("application/json".into());
        }
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            config.response_mime_type = Some("application/json".into());
            config.response_json_schema = schema_for_gemini(schema);
        }
    }
    // Gemini 2.x takes a budget (0 turns thinking off); Gemini 3 and later take a
    // level, refuse a budget sent with it, and cannot turn thinking off (the lowest
    // level every one of them accepts stands in for off).
    config.thinking_config = req.reasoning.as_ref().map(|reasoning| match traits.reasoning {
        ReasoningControl::Budget if reasoning.enabled => ThinkingConfig {
            thinking_budget: Some(i64::try_from(reasoning.budget()).unwrap_or(i64::MAX)),
            include_thoughts: Some(true),
            thinking_level: None,
        },
        ReasoningControl::Budget => {
            ThinkingConfig { thinking_budget: Some(0), ..ThinkingConfig::default() }
        }
        ReasoningControl::Effort => ThinkingConfig {
            thinking_budget: None,
            include_thoughts: reasoning.enabled.then_some(true),
            thinking_level: Some(
                if reasoning.enabled { gemini_level(reasoning.effort()) } else { "low" }.to_owned(),
            ),
        },
    });
    (config != GenerationConfig::default()).then_some(config)
}

// ---------------------------------------------------------------------------------
// Requests: wire → canonical
// ---------------------------------------------------------------------------------

/// A `generateContent` body as Gemini reads it: call ids as Gemini issues them
/// (`gcall_<id>`, or minted where a call has none).
pub fn parse_request(body: &[u8]) -> Result<Request, ProtocolError> {
    parse(body, RequestIds::default())
}

/// What a Gemini `tools` member the API runs itself does, as the gateway
/// names it; `None` for members it does not carry to other wires (they go only
/// to Gemini, as the client wrote them). Both spellings the API reads.
fn hosted_kind(member: &str) -> Option<ServerTool> {
    match member {
        "googleSearch" | "google_search" | "googleSearchRetrieval" | "google_search_retrieval" => {
            Some(ServerTool::WebSearch)
        }
        "urlContext" | "url_context" => Some(ServerTool::WebFetch),
        "codeExecution" | "code_execution" => Some(ServerTool::CodeExecution),
        _ => None,
    }
}

/// A Gemini client's own body (the model and streaming are in its URL: the caller
/// sets them). A call's `id` is taken as it is where every upstream takes it, since
/// the gateway gave it (answers to Gemini clients carry each call's id as is, see
/// [`encode_client_response`](super::encode_client_response)): a call is then known
/// by one id on every turn, which is what the state kept between turns is keyed by.
/// A `functionResponse` answers the call with its id, else the oldest open call of
/// its name (Gemini CLI makes up an id for a call that came without one).
pub fn parse_client_request(body: &[u8]) -> Result<Request, ProtocolError> {
    parse(body, RequestIds { client: true, ..RequestIds::default() })
}

fn parse(body: &[u8], mut ids: RequestIds) -> Result<Request, ProtocolError> {
    let wire: WireRequest = util::from_slice(body)?;
    let mut req = Request::default();

    if let Some(system) = &wire.system_instruction {
        req.system =
            system.parts.iter().filter_map(|p| p.text.clone()).map(TextBlock::new).collect();
    }

    for (i, content) in wire.contents.iter().enumerate() {
        let role = match content.role.as_deref() {
            Some("model") => Role::Assistant,
            None | Some("user") | Some("function") => Role::User,
            Some(other) => {
                return Err(ProtocolError::body(format!("contents: unknown role {other:?}")));
            }
        };
        let parts = content
            .parts
            .iter()
            .enumerate()
            .map(|(j, p)| request_part(p, &mut ids, &format!("contents[{i}].parts[{j}]")))
            .collect();
        req.messages.push(Message { role, content: parts });
    }

    for (i, tool) in wire.tools.iter().enumerate() {
        // An entry of a tool Gemini runs itself, apart from the functions (an
        // entry mixing both stays as it is: dropping it would drop functions).
        if tool.function_declarations.is_empty() {
            for (member, config) in &tool.hosted {
                let Some(kind) = hosted_kind(member) else { continue };
                req.extras.hosted_tools.push(HostedTool {
                    kind: Some(kind),
                    dialect: Dialect::Gemini,
                    tool_type: member.clone(),
                    path: format!("tools[{i}]"),
                    config: json!({ member.as_str(): config }),
                });
            }
        }
        for decl in &tool.function_declarations {
            req.tools.push(Tool {
                name: decl.name.clone(),
                description: decl.description.clone(),
                parameters: decl
                    .parameters_json_schema
                    .clone()
                    .or_else(|| decl.parameters.clone())
                    .unwrap_or(Value::Null),
                strict: None,
                cache_control: None,
                freeform: None,
                namespace: None,
            });
        }
    }

    if let Some(config) = wire.tool_config.as_ref().and_then(|t| t.function_calling_config.as_ref())
    {
        req.tool_choice = match config.mode.as_deref() {
            None | Some("AUTO" | "VALIDATED" | "MODE_UNSPECIFIED") => Some(ToolChoice::Auto),
            Some("NONE") => Some(ToolChoice::None),
            Some("ANY") => match config.allowed_function_names.as_slice() {
                [name] => Some(ToolChoice::Tool { name: name.clone() }),
                _ => Some(ToolChoice::Required),
            },
            Some(other) => {
                return Err(ProtocolError::body(format!(
                    "toolConfig.functionCallingConfig.mode: unknown mode {other:?}"
                )));
            }
        };
    }

    if let Some(config) = &wire.generation_config {
        req.max_tokens = config.max_output_tokens;
        req.temperature = config.temperature;
        req.top_p = config.top_p;
        req.top_k = config.top_k;
        req.stop.clone_from(&config.stop_sequences);
        req.response_format = match config.response_mime_type.as_deref() {
            Some("application/json") => {
                match config.response_json_schema.clone().or_else(|| config.response_schema.clone())
                {
                    Some(schema) => Some(ResponseFormat::JsonSchema {
                        name: "response".into(),
                        schema,
                        strict: None,
                        description: None,
                    }),
                    None => Some(ResponseFormat::JsonObject),
                }
            }
            Some("text/plain") => Some(ResponseFormat::Text),
            _ => None,
        };
        // `thinkingLevel: "auto"` is the gateway's, as `reasoning_effort: "auto"`
        // is in the other formats: the request's intent settles it.
        req.extras.reasoning_auto = config
            .thinking_config
            .as_ref()
            .and_then(|c| c.thinking_level.as_deref())
            .is_some_and(|l| l.eq_ignore_ascii_case("auto"));
        if !req.extras.reasoning_auto {
            req.reasoning = config.thinking_config.as_ref().and_then(reasoning_from_wire);
        }
    }
    Ok(req)
}

/// Gives request function calls canonical ids and pairs function responses with them
/// (by id when there is one that matches, else by name, oldest open call first).
#[derive(Default)]
struct RequestIds {
    /// A Gemini client's body: ids every upstream takes are kept as they are.
    client: bool,
    open: Vec<OpenCall>,
    calls: usize,
    unmatched: usize,
}

struct OpenCall {
    /// The `functionCall.id` as sent.
    sent_id: Option<String>,
    name: String,
    id: String,
}

impl RequestIds {
    fn call(&mut self, call: &FunctionCall) -> String {
        let ordinal = self.calls;
        self.calls += 1;
        let sent = call.id.as_deref().filter(|g| !g.is_empty());
        let id = match sent {
            Some(g) if self.client && client_id(g) => g.to_owned(),
            _ if self.client => format!("call_{ordinal}"),
            _ => call_base(sent, || format!("call_{ordinal}")),
        };
        self.open.push(OpenCall {
            sent_id: sent.map(str::to_owned),
            name: call.name.clone(),
            id: id.clone(),
        });
        id
    }

    fn result(&mut self, response: &FunctionResponse) -> String {
        let sent = response.id.as_deref().filter(|g| !g.is_empty());
        let by_id =
            sent.and_then(|g| self.open.iter().position(|c| c.sent_id.as_deref() == Some(g)));
        // Else a call without an id of the same name, else any of that name.
        let position = by_id.or_else(|| {
            self.open
                .iter()
                .position(|c| c.sent_id.is_none() && c.name == response.name)
                .or_else(|| self.open.iter().position(|c| c.name == response.name))
        });
        if let Some(position) = position {
            return self.open.remove(position).id;
        }
        let mut unmatched = || {
            self.unmatched += 1;
            format!("call_unmatched_{}", self.unmatched)
        };
        match sent {
            Some(g) if self.client && client_id(g) => g.to_owned(),
            _ if self.client => unmatched(),
            _ => call_base(sent.filter(|g| valid_gemini_id(g)), unmatched),
        }
    }
}

/// One request part. A part of a kind the canonical model has no place for
/// (`executableCode`, `videoMetadata`, …) is kept by name, so a translation
/// refuses it instead of dropping it.
fn request_part(part: &WirePart, ids: &mut RequestIds, path: &str) -> Part {
    request_part_known(part, ids).unwrap_or_else(|| Part::Untranslatable {
        what: format!("{path}: a part of a kind the gateway does not translate"),
    })
}

fn request_part_known(part: &WirePart, ids: &mut RequestIds) -> Option<Part> {
    if let Some(call) = &part.function_call {
        return Some(Part::ToolCall(ToolCall {
            id: ids.call(call),
            name: call.name.clone(),
            arguments: args_text(call.args.as_ref()),
            signature: real_signature(part.thought_signature.as_deref()),
        }));
    }
    if let Some(response) = &part.function_response {
        let (text, is_error) = tool_result_text(&response.response);
        return Some(Part::ToolResult(ToolResult {
            call_id: ids.result(response),
            name: Some(response.name.clone()),
            content: vec![Part::Text(TextBlock::new(text))],
            is_error,
        }));
    }
    // Data of any type but an image's is a document (a PDF, usually).
    let is_image = |mime: Option<&str>| mime.is_none_or(|m| m.starts_with("image/"));
    if let Some(blob) = &part.inline_data {
        if !is_image(Some(&blob.mime_type)) {
            return Some(Part::Document(Document::new(DocumentSource::Base64 {
                media_type: blob.mime_type.clone(),
                data: blob.data.clone(),
            })));
        }
        return Some(image(ImageSource::Base64 {
            media_type: blob.mime_type.clone(),
            data: blob.data.clone(),
        }));
    }
    if let Some(file) = &part.file_data {
        if !is_image(file.mime_type.as_deref()) {
            return Some(Part::Document(Document::new(DocumentSource::Url {
                url: file.file_uri.clone(),
                media_type: file.mime_type.clone(),
            })));
        }
        return Some(image(ImageSource::Url { url: file.file_uri.clone() }));
    }
    let text = part.text.clone()?;
    Some(if part.thought == Some(true) {
        Part::Thinking { text, signature: None }
    } else {
        Part::Text(TextBlock::new(text))
    })
}

fn image(source: ImageSource) -> Part {
    Part::Image(Image { source, detail: None, cache_control: None })
}

/// A `functionResponse.response` back to result text: the inverse of
/// [`function_response_part`].
fn tool_result_text(response: &Value) -> (String, bool) {
    let single = response.as_object().filter(|m| m.len() == 1).and_then(|m| m.iter().next());
    match single {
        Some((key, Value::String(s))) if key == "content" => (s.clone(), false),
        Some((key, Value::String(s))) if key == "error" => (s.clone(), true),
        Some((key, value)) if key == "error" => (value.to_string(), true),
        _ => (response.to_string(), false),
    }
}

fn reasoning_from_wire(config: &ThinkingConfig) -> Option<Reasoning> {
    let on = |effort, budget_tokens| Reasoning { enabled: true, effort, budget_tokens };
    if let Some(level) = &config.thinking_level {
        return Some(on(Effort::parse(&level.to_ascii_lowercase()), None));
    }
    match config.thinking_budget {
        Some(0) => Some(Reasoning { enabled: false, effort: None, budget_tokens: None }),
        Some(budget) => Some(on(None, u64::try_from(budget).ok())), // -1: dynamic
        None => config.include_thoughts.filter(|include| *include).map(|_| on(None, None)),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
