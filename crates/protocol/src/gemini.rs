//! Google Gemini `generateContent` and `streamGenerateContent?alt=sse`, both directions.
//!
//! The model goes in the URL path and the key in a header (both built elsewhere), so
//! the request body never names the model.
//!
//! Choices worth knowing:
//! - **Thought signatures.** Gemini 3 rejects a history whose function calls lack the
//!   `thoughtSignature` they came with. A call carries it in [`ToolCall::signature`]
//!   (the gateway keeps it server-side between turns: clients never see it). Call ids
//!   are `gcall_<id>` when Gemini gave the call an id (sent back as
//!   `functionCall.id` / `functionResponse.id`), else a minted
//!   `call_<responseId>_<n>` (`n` counts the response's function calls), at most 40
//!   characters either way. Ids of earlier versions, `<base>__sig_<signature>`, are
//!   still read. In a request, the first function call of each model turn without a
//!   real signature gets the documented placeholder [`SKIP_SIGNATURE`]; later
//!   unsigned calls of the same turn are left bare, as Gemini itself signs only the
//!   first of parallel calls. Signatures Gemini puts on text parts are dropped
//!   (optional to send back).
//! - Thinking parts are never sent upstream: other providers' signatures mean nothing
//!   here and Gemini does not need its own thoughts back.
//! - Leading system text (`Request::system` and leading `Role::System` messages) becomes
//!   `systemInstruction`; a system message later in the conversation is sent as user
//!   text in place, which keeps its position.
//! - Tools use `parametersJsonSchema` and structured output `responseJsonSchema`, which
//!   take JSON Schema as is (only a root `$schema` is removed).
//! - Images and documents in tool results follow the `functionResponse` as
//!   `inlineData`/`fileData` parts of the same user turn (works on every model, unlike
//!   multimodal responses). Documents go inline as `inlineData`, by URL as `fileData`.
//! - Responses: consecutive text (or thought) parts form one block, empty ones are
//!   skipped, and parts the canonical model cannot carry (inline images, code
//!   execution) are ignored, identically in the stream and whole-response paths.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::model::{
    BlockKind, DEFAULT_DOCUMENT_TYPE, Delta, Document, DocumentSource, Effort, Image, ImageSource,
    Message, ModelTraits, Part, Reasoning, ReasoningControl, Request, ResponseFormat, Role,
    StopReason, TextBlock, Tool, ToolCall, ToolChoice, ToolResult, Usage,
};
use crate::sse::write_json;
use crate::{
    ErrorBody, ErrorKind, ProtocolError, Response, SseEvent, StreamDecoder, StreamEncoder,
    StreamEvent, util,
};

/// The documented `thoughtSignature` for a function call Gemini did not produce.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";
/// Placeholders Gemini documents; never treated as real signatures.
const DUMMY_SIGNATURES: [&str; 2] = [SKIP_SIGNATURE, "context_engineering_is_the_way_to_go"];
/// Prefix of a canonical call id that carries a Gemini-issued `functionCall.id`.
const GEMINI_ID_PREFIX: &str = "gcall_";
/// Separates a canonical call id from the signature it carries, in ids of earlier
/// versions (still read; no longer written: the signature is [`ToolCall::signature`]).
const SIGNATURE_SEPARATOR: &str = "__sig_";
/// The longest call id the gateway gives clients (OpenAI's limit, the strictest).
const MAX_CALL_ID: usize = 40;
/// The response id when Gemini sends no `responseId`.
const FALLBACK_RESPONSE_ID: &str = "gemini-response";

// ---------------------------------------------------------------------------------
// Wire types
// ---------------------------------------------------------------------------------

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct WireRequest {
    contents: Vec<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<Content>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Content {
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<String>,
    parts: Vec<WirePart>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct WirePart {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<Blob>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_data: Option<FileData>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Blob {
    mime_type: String,
    data: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FileData {
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<String>,
    file_uri: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FunctionCall {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FunctionResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    name: String,
    response: Value,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct WireTool {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    function_declarations: Vec<FunctionDeclaration>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FunctionDeclaration {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    /// OpenAPI-subset schema; read, never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ToolConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    function_calling_config: Option<FunctionCallingConfig>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct FunctionCallingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    allowed_function_names: Vec<String>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct GenerationConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_k: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    stop_sequences: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
    /// OpenAPI-subset schema; read, never written.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_config: Option<ThinkingConfig>,
}

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct ThinkingConfig {
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_budget: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include_thoughts: Option<bool>,
    /// Gemini 3 and later: `minimal`, `low`, `medium`, `high` (by model).
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking_level: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct WireResponse {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage_metadata: Option<UsageMetadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_id: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct Candidate {
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<Content>,
    #[serde(skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PromptFeedback {
    #[serde(skip_serializing_if = "Option::is_none")]
    block_reason: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct UsageMetadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    candidates_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    total_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cached_content_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thoughts_token_count: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_use_prompt_token_count: Option<u64>,
}

// ---------------------------------------------------------------------------------
// Call ids and thought signatures
// ---------------------------------------------------------------------------------

fn is_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// A Gemini `functionCall.id` we can carry in a canonical id and split off again.
fn valid_gemini_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(is_id_char) && !id.contains("__")
}

fn is_dummy_signature(sig: &str) -> bool {
    DUMMY_SIGNATURES.contains(&sig)
}

/// A signature worth keeping: not empty, not one of the documented placeholders.
fn real_signature(sig: Option<&str>) -> Option<String> {
    sig.filter(|s| !s.is_empty() && !is_dummy_signature(s)).map(str::to_owned)
}

/// The id form back to standard padded base64 (what Gemini sends and expects).
fn signature_from_id(s: &str) -> Option<String> {
    if s.is_empty() || !s.chars().all(is_id_char) {
        return None;
    }
    let mut out: String = s
        .chars()
        .map(|c| match c {
            '-' => '+',
            '_' => '/',
            c => c,
        })
        .collect();
    while !out.len().is_multiple_of(4) {
        out.push('=');
    }
    Some(out)
}

/// What a canonical call id carries for Gemini.
#[derive(Debug, PartialEq)]
struct CallIdInfo<'a> {
    /// The `functionCall.id` Gemini issued, if the call came from Gemini with one.
    gemini_id: Option<&'a str>,
    /// The thought signature, standard base64.
    signature: Option<String>,
}

fn split_call_id(id: &str) -> CallIdInfo<'_> {
    let (base, signature) = match id.split_once(SIGNATURE_SEPARATOR) {
        Some((base, sig)) => (base, signature_from_id(sig)),
        None => (id, None),
    };
    let gemini_id = base.strip_prefix(GEMINI_ID_PREFIX).filter(|g| valid_gemini_id(g));
    CallIdInfo { gemini_id, signature }
}

/// `gcall_<id>` when Gemini gave a usable id (one that fits in a client's id),
/// else the fallback.
fn call_base(gemini_id: Option<&str>, fallback: impl FnOnce() -> String) -> String {
    let fits = |g: &&str| valid_gemini_id(g) && GEMINI_ID_PREFIX.len() + g.len() <= MAX_CALL_ID;
    match gemini_id.filter(fits) {
        Some(g) => format!("{GEMINI_ID_PREFIX}{g}"),
        None => fallback(),
    }
}

/// `call_<responseId>_<n>`: deterministic and unique within one response.
fn minted_call_id(response_id: &str, ordinal: usize) -> String {
    let mut clean: String =
        response_id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    if clean.is_empty() {
        clean.push_str("gemini");
    }
    let id = format!("call_{clean}_{ordinal}");
    if id.len() <= MAX_CALL_ID {
        return id;
    }
    format!("call_{:016x}_{ordinal}", util::fnv1a(response_id.as_bytes()))
}

// ---------------------------------------------------------------------------------
// Requests: canonical → wire
// ---------------------------------------------------------------------------------

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
        vec![WireTool { function_declarations: declarations }]
    };

    let wire = WireRequest {
        contents,
        system_instruction: (!system.is_empty()).then_some(Content { role: None, parts: system }),
        tools,
        tool_config: req.tool_choice.as_ref().map(tool_config),
        generation_config: generation_config(req, traits),
    };
    serde_json::to_value(&wire).map_err(ProtocolError::body)
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

fn text_part(text: &str) -> Option<WirePart> {
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
        // Thinking parts are never sent upstream (see the module docs).
        Part::Thinking { .. } | Part::RedactedThinking { .. } => {}
        Part::Untranslatable { what } => {
            return Err(crate::cannot_send(
                what,
                TARGET,
                "the gateway cannot translate it; send it to a provider of the wire it came from",
            ));
        }
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
fn call_part(call: &ToolCall, args: Value) -> WirePart {
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

fn tool_config(choice: &ToolChoice) -> ToolConfig {
    let (mode, allowed) = match choice {
        ToolChoice::Auto => ("AUTO", Vec::new()),
        ToolChoice::None => ("NONE", Vec::new()),
        ToolChoice::Required => ("ANY", Vec::new()),
        ToolChoice::Tool { name } => ("ANY", vec![name.clone()]),
    };
    ToolConfig {
        function_calling_config: Some(FunctionCallingConfig {
            mode: Some(mode.to_owned()),
            allowed_function_names: allowed,
        }),
    }
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

pub fn parse_request(body: &[u8]) -> Result<Request, ProtocolError> {
    let wire: WireRequest = util::from_slice(body)?;
    let mut req = Request::default();

    if let Some(system) = &wire.system_instruction {
        req.system =
            system.parts.iter().filter_map(|p| p.text.clone()).map(TextBlock::new).collect();
    }

    let mut ids = RequestIds::default();
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

    for tool in &wire.tools {
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
        req.reasoning = config.thinking_config.as_ref().and_then(reasoning_from_wire);
    }
    Ok(req)
}

/// Gives request function calls canonical ids and pairs function responses with them
/// (by Gemini id when there is one, else by name, oldest open call first).
#[derive(Default)]
struct RequestIds {
    open: Vec<OpenCall>,
    calls: usize,
    unmatched: usize,
}

struct OpenCall {
    gemini_id: Option<String>,
    name: String,
    id: String,
}

impl RequestIds {
    fn call(&mut self, call: &FunctionCall) -> String {
        let ordinal = self.calls;
        self.calls += 1;
        let id = call_base(call.id.as_deref(), || format!("call_{ordinal}"));
        self.open.push(OpenCall {
            gemini_id: call.id.clone().filter(|g| valid_gemini_id(g)),
            name: call.name.clone(),
            id: id.clone(),
        });
        id
    }

    fn result(&mut self, response: &FunctionResponse) -> String {
        let gemini_id = response.id.as_deref().filter(|g| valid_gemini_id(g));
        let position = match gemini_id {
            Some(g) => self.open.iter().position(|c| c.gemini_id.as_deref() == Some(g)),
            // A response without an id answers a call that had none, when there is one.
            None => self
                .open
                .iter()
                .position(|c| c.gemini_id.is_none() && c.name == response.name)
                .or_else(|| self.open.iter().position(|c| c.name == response.name)),
        };
        if let Some(position) = position {
            return self.open.remove(position).id;
        }
        call_base(gemini_id, || {
            self.unmatched += 1;
            format!("call_unmatched_{}", self.unmatched)
        })
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

// ---------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------

/// One response part, as both the whole-response and the stream paths see it.
enum Piece<'a> {
    Text(&'a str),
    Thought(&'a str),
    Call(&'a FunctionCall, Option<&'a str>),
}

fn classify(part: &WirePart) -> Option<Piece<'_>> {
    if let Some(call) = &part.function_call {
        return Some(Piece::Call(call, part.thought_signature.as_deref()));
    }
    let text = part.text.as_deref().filter(|t| !t.is_empty())?;
    Some(if part.thought == Some(true) { Piece::Thought(text) } else { Piece::Text(text) })
}

fn args_text(args: Option<&Value>) -> String {
    args.map_or_else(|| "{}".to_owned(), util::value_to_arguments)
}

fn response_call(
    call: &FunctionCall,
    signature: Option<&str>,
    response_id: &str,
    ordinal: usize,
) -> ToolCall {
    ToolCall {
        id: call_base(call.id.as_deref(), || minted_call_id(response_id, ordinal)),
        name: call.name.clone(),
        arguments: args_text(call.args.as_ref()),
        signature: real_signature(signature),
    }
}

fn response_id(id: Option<&str>) -> String {
    id.filter(|id| !id.is_empty()).unwrap_or(FALLBACK_RESPONSE_ID).to_owned()
}

/// `finishReason` → canonical; a turn that returned function calls stopped for them.
fn stop_reason(finish_reason: &str, had_calls: bool) -> StopReason {
    match StopReason::from_gemini(finish_reason) {
        StopReason::EndTurn if had_calls => StopReason::ToolUse,
        other => other,
    }
}

/// A terminal reason with no candidate: the prompt itself was blocked.
fn blocked(response: &WireResponse) -> Option<StopReason> {
    response
        .prompt_feedback
        .as_ref()
        .and_then(|f| f.block_reason.as_ref())
        .map(|_| StopReason::ContentFilter)
}

fn sum(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

fn usage_from_wire(u: &UsageMetadata) -> Usage {
    Usage {
        input_tokens: sum(u.prompt_token_count, u.tool_use_prompt_token_count),
        output_tokens: sum(u.candidates_token_count, u.thoughts_token_count),
        cache_read_tokens: u.cached_content_token_count,
        cache_write_tokens: None,
        reasoning_tokens: u.thoughts_token_count,
    }
}

fn usage_to_wire(u: &Usage) -> Option<UsageMetadata> {
    if u.is_empty() {
        return None;
    }
    let candidates = u.output_tokens.map(|o| o.saturating_sub(u.reasoning_tokens.unwrap_or(0)));
    Some(UsageMetadata {
        prompt_token_count: u.input_tokens,
        candidates_token_count: candidates,
        total_token_count: sum(u.input_tokens, sum(candidates, u.reasoning_tokens)),
        cached_content_token_count: u.cache_read_tokens,
        thoughts_token_count: u.reasoning_tokens,
        tool_use_prompt_token_count: None,
    })
}

/// Appends text to the last part when it is of the same kind, else starts a new part.
fn push_text(content: &mut Vec<Part>, text: &str, thought: bool) {
    match (content.last_mut(), thought) {
        (Some(Part::Text(t)), false) => t.text.push_str(text),
        (Some(Part::Thinking { text: t, .. }), true) => t.push_str(text),
        (_, false) => content.push(Part::Text(TextBlock::new(text))),
        (_, true) => content.push(Part::Thinking { text: text.to_owned(), signature: None }),
    }
}

/// `{"error":{...}}` (or an array wrapping it) as an upstream error.
fn upstream_error(value: &Value) -> Option<ProtocolError> {
    let object = match value {
        Value::Array(items) => items.first()?.as_object()?,
        Value::Object(map) => map,
        _ => return None,
    };
    let (kind, message) = match object.get("error")? {
        Value::Object(err) => {
            let text = |key: &str| err.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
            let code = err.get("code").filter(|c| !c.is_null()).map(|c| match c {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            let status = text("status").map(str::to_owned);
            let kind = status.clone().or_else(|| code.clone()).unwrap_or_else(|| "error".into());
            let message = text("message")
                .map(str::to_owned)
                .or(status)
                .or(code)
                .unwrap_or_else(|| "upstream error".into());
            (kind, message)
        }
        Value::String(message) => ("error".to_owned(), message.clone()),
        _ => return None,
    };
    Some(ProtocolError::UpstreamError { kind, message })
}

pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let value: Value = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    if let Some(err) = upstream_error(&value) {
        return Err(err);
    }
    let wire: WireResponse = serde_json::from_value(value).map_err(ProtocolError::upstream)?;
    let id = response_id(wire.response_id.as_deref());
    let mut content = Vec::new();
    let mut calls = 0;
    let stop = match wire.candidates.first() {
        Some(candidate) => {
            for part in candidate.content.iter().flat_map(|c| &c.parts) {
                match classify(part) {
                    Some(Piece::Text(text)) => push_text(&mut content, text, false),
                    Some(Piece::Thought(text)) => push_text(&mut content, text, true),
                    Some(Piece::Call(call, signature)) => {
                        content.push(Part::ToolCall(response_call(call, signature, &id, calls)));
                        calls += 1;
                    }
                    None => {}
                }
            }
            candidate.finish_reason.as_deref().map(|r| stop_reason(r, calls > 0))
        }
        None => blocked(&wire),
    };
    Ok(Response {
        id,
        model: wire.model_version.clone().unwrap_or_default(),
        content,
        stop_reason: stop,
        stop_sequence: None,
        usage: wire.usage_metadata.as_ref().map(usage_from_wire).unwrap_or_default(),
    })
}

pub fn encode_response(resp: &Response) -> Value {
    let mut parts = Vec::new();
    for part in &resp.content {
        match part {
            Part::Text(t) => parts.extend(text_part(&t.text)),
            Part::Thinking { text, .. } => parts.extend(thought_part(text)),
            Part::ToolCall(call) => parts.push(call_part(call, loose_args(call))),
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::RedactedThinking { .. }
            | Part::Untranslatable { .. } => {}
        }
    }
    let reason = resp.stop_reason.unwrap_or(StopReason::EndTurn).to_gemini();
    let wire =
        response_chunk(&resp.id, &resp.model, parts, Some(reason), usage_to_wire(&resp.usage));
    serde_json::to_value(&wire).unwrap_or_default()
}

fn thought_part(text: &str) -> Option<WirePart> {
    text_part(text).map(|p| WirePart { thought: Some(true), ..p })
}

/// Arguments for a wire we produce ourselves: invalid JSON travels as a string rather
/// than being lost.
fn loose_args(call: &ToolCall) -> Value {
    util::arguments_to_value(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

fn response_chunk(
    id: &str,
    model: &str,
    parts: Vec<WirePart>,
    finish_reason: Option<&str>,
    usage: Option<UsageMetadata>,
) -> WireResponse {
    WireResponse {
        candidates: vec![Candidate {
            content: (!parts.is_empty()).then(|| Content { role: Some("model".into()), parts }),
            finish_reason: finish_reason.map(str::to_owned),
            index: Some(0),
        }],
        prompt_feedback: None,
        usage_metadata: usage,
        model_version: (!model.is_empty()).then(|| model.to_owned()),
        response_id: (!id.is_empty()).then(|| id.to_owned()),
    }
}

pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    match upstream_error(&value)? {
        ProtocolError::UpstreamError { message, .. } => Some(message),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------
// Stream decoder: Gemini SSE → canonical events
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct OpenBlock {
    index: usize,
    thought: bool,
}

/// Each SSE `data` is a whole `GenerateContentResponse`; text and thought parts are
/// deltas of the open block of their kind, each `functionCall` is a whole block.
#[derive(Debug, Default)]
pub struct Decoder {
    started: bool,
    response_id: String,
    open: Option<OpenBlock>,
    next_index: usize,
    calls: usize,
    done: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn chunk(&mut self, wire: &WireResponse, out: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            self.response_id = response_id(wire.response_id.as_deref());
            out.push(StreamEvent::Start {
                id: self.response_id.clone(),
                model: wire.model_version.clone().unwrap_or_default(),
            });
        }
        let candidate = wire.candidates.first();
        // Usage before the chunk's content: the first chunk already carries the
        // prompt count, and clients that read it early (Anthropic's message_start)
        // then see it.
        if let Some(usage) = wire.usage_metadata.as_ref().map(usage_from_wire)
            && !usage.is_empty()
        {
            out.push(StreamEvent::Usage { usage });
        }
        if !self.done {
            for part in candidate.and_then(|c| c.content.as_ref()).iter().flat_map(|c| &c.parts) {
                match classify(part) {
                    Some(Piece::Text(text)) => self.text(text, false, out),
                    Some(Piece::Thought(text)) => self.text(text, true, out),
                    Some(Piece::Call(call, signature)) => self.call(call, signature, out),
                    None => {}
                }
            }
        }
        if self.done {
            return;
        }
        let reason = match candidate {
            Some(c) => c.finish_reason.as_deref().map(|r| stop_reason(r, self.calls > 0)),
            None => blocked(wire),
        };
        if let Some(reason) = reason {
            self.close(out);
            out.push(StreamEvent::Stop { reason, stop_sequence: None });
            self.done = true;
        }
    }

    fn text(&mut self, text: &str, thought: bool, out: &mut Vec<StreamEvent>) {
        let index = match self.open {
            Some(open) if open.thought == thought => open.index,
            _ => {
                self.close(out);
                let index =
                    self.begin(if thought { BlockKind::Thinking } else { BlockKind::Text }, out);
                self.open = Some(OpenBlock { index, thought });
                index
            }
        };
        let text = text.to_owned();
        let delta = if thought { Delta::Thinking { text } } else { Delta::Text { text } };
        out.push(StreamEvent::Delta { index, delta });
    }

    fn call(&mut self, call: &FunctionCall, signature: Option<&str>, out: &mut Vec<StreamEvent>) {
        self.close(out);
        let call = response_call(call, signature, &self.response_id, self.calls);
        self.calls += 1;
        let index = self.begin(BlockKind::ToolCall { id: call.id, name: call.name }, out);
        out.push(StreamEvent::Delta {
            index,
            delta: Delta::ToolArguments { json: call.arguments },
        });
        if let Some(signature) = call.signature {
            out.push(StreamEvent::Delta { index, delta: Delta::Signature { signature } });
        }
        out.push(StreamEvent::BlockStop { index });
    }

    fn begin(&mut self, kind: BlockKind, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        out.push(StreamEvent::BlockStart { index, kind });
        index
    }

    fn close(&mut self, out: &mut Vec<StreamEvent>) {
        if let Some(open) = self.open.take() {
            out.push(StreamEvent::BlockStop { index: open.index });
        }
    }
}

impl StreamDecoder for Decoder {
    fn push(&mut self, event: &SseEvent, out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let value: Value = serde_json::from_str(data).map_err(|e| {
            ProtocolError::upstream(format!("gemini stream chunk is not JSON: {e}"))
        })?;
        if let Some(err) = upstream_error(&value) {
            return Err(err);
        }
        let wire: WireResponse = serde_json::from_value(value)
            .map_err(|e| ProtocolError::upstream(format!("gemini stream chunk: {e}")))?;
        self.chunk(&wire, out);
        Ok(())
    }

    fn finish(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProtocolError> {
        if self.done {
            Ok(())
        } else {
            Err(ProtocolError::upstream("stream ended before finishReason"))
        }
    }
}

// ---------------------------------------------------------------------------------
// Stream encoder: canonical events → Gemini SSE
// ---------------------------------------------------------------------------------

#[derive(Debug)]
enum EncoderBlock {
    Other,
    Call { id: String, name: String, args: String, signature: Option<String> },
}

/// One chunk per text/thought delta and per whole function call; the chunk with
/// `finishReason` (and the usage) is held until [`StreamEncoder::finish`], since usage
/// may follow `Stop`.
#[derive(Debug, Default)]
pub struct Encoder {
    id: String,
    model: String,
    block: Option<EncoderBlock>,
    usage: Usage,
    stop: Option<StopReason>,
    done: bool,
}

impl Encoder {
    pub fn new() -> Self {
        Self::default()
    }

    fn emit(
        &self,
        parts: Vec<WirePart>,
        finish: Option<&str>,
        usage: Option<UsageMetadata>,
        out: &mut Vec<u8>,
    ) {
        let chunk = response_chunk(&self.id, &self.model, parts, finish, usage);
        write_json(out, None, &serde_json::to_value(&chunk).unwrap_or_default());
    }

    fn flush_call(&mut self, out: &mut Vec<u8>) {
        if let Some(EncoderBlock::Call { id, name, args, signature }) = self.block.take() {
            let call = ToolCall { id, name, arguments: args, signature };
            self.emit(vec![call_part(&call, loose_args(&call))], None, None, out);
        }
    }
}

impl StreamEncoder for Encoder {
    fn push(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        match event {
            StreamEvent::Start { id, model } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
            }
            StreamEvent::BlockStart { kind, .. } => {
                self.flush_call(out);
                self.block = Some(match kind {
                    BlockKind::ToolCall { id, name } => EncoderBlock::Call {
                        id: id.clone(),
                        name: name.clone(),
                        args: String::new(),
                        signature: None,
                    },
                    _ => EncoderBlock::Other,
                });
            }
            StreamEvent::Delta { delta, .. } => match delta {
                Delta::Text { text } => {
                    if let Some(part) = text_part(text) {
                        self.emit(vec![part], None, None, out);
                    }
                }
                Delta::Thinking { text } => {
                    if let Some(part) = thought_part(text) {
                        self.emit(vec![part], None, None, out);
                    }
                }
                Delta::ToolArguments { json } => {
                    if let Some(EncoderBlock::Call { args, .. }) = &mut self.block {
                        args.push_str(json);
                    }
                }
                Delta::Signature { signature: s } => {
                    if let Some(EncoderBlock::Call { signature, .. }) = &mut self.block {
                        signature.get_or_insert_with(String::new).push_str(s);
                    }
                }
            },
            StreamEvent::BlockStop { .. } => {
                self.flush_call(out);
                self.block = None;
            }
            StreamEvent::Usage { usage } => self.usage.merge(usage),
            StreamEvent::Stop { reason, .. } => {
                self.flush_call(out);
                self.stop = Some(*reason);
            }
        }
    }

    fn finish(&mut self, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.flush_call(out);
        let reason = self.stop.unwrap_or(StopReason::EndTurn).to_gemini();
        self.emit(Vec::new(), Some(reason), usage_to_wire(&self.usage), out);
        self.done = true;
    }

    fn error(&mut self, err: &ErrorBody, out: &mut Vec<u8>) {
        self.done = true;
        let body = json!({ "error": {
            "code": err.status,
            "message": err.message,
            "status": grpc_status(err.kind),
        }});
        write_json(out, None, &body);
    }
}

/// The Google API status string for an error class.
fn grpc_status(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::InvalidRequest | ErrorKind::RequestTooLarge => "INVALID_ARGUMENT",
        ErrorKind::Authentication => "UNAUTHENTICATED",
        ErrorKind::Permission => "PERMISSION_DENIED",
        ErrorKind::NotFound => "NOT_FOUND",
        ErrorKind::RateLimit => "RESOURCE_EXHAUSTED",
        ErrorKind::Overloaded => "UNAVAILABLE",
        ErrorKind::Timeout => "DEADLINE_EXCEEDED",
        ErrorKind::Upstream | ErrorKind::Internal => "INTERNAL",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::model::{ResponseAccumulator, response_to_events};
    use crate::sse::SseDecoder;

    // ------------------------------------------------------------------ helpers

    fn text(t: &str) -> Part {
        Part::Text(TextBlock::new(t))
    }

    fn call(id: &str, name: &str, arguments: &str) -> Part {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            signature: None,
        })
    }

    fn signed(id: &str, name: &str, arguments: &str, signature: &str) -> Part {
        Part::ToolCall(ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            signature: Some(signature.into()),
        })
    }

    fn result(call_id: &str, name: Option<&str>, text_: &str, is_error: bool) -> Part {
        Part::ToolResult(ToolResult {
            call_id: call_id.into(),
            name: name.map(Into::into),
            content: vec![text(text_)],
            is_error,
        })
    }

    fn msg(role: Role, content: Vec<Part>) -> Message {
        Message { role, content }
    }

    fn decode_sse(bytes: &[u8]) -> Result<Vec<StreamEvent>, ProtocolError> {
        decode_chunks(&[bytes])
    }

    fn decode_chunks(chunks: &[&[u8]]) -> Result<Vec<StreamEvent>, ProtocolError> {
        let mut sse = SseDecoder::new();
        let mut sse_events = Vec::new();
        for c in chunks {
            sse.push(c, &mut sse_events).unwrap();
        }
        sse.finish(&mut sse_events);
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        for e in &sse_events {
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
        let mut enc = Encoder::new();
        let mut out = Vec::new();
        for e in events {
            enc.push(e, &mut out);
        }
        enc.finish(&mut out);
        out
    }

    /// Start first and once; blocks opened and closed in order with gapless indices;
    /// Stop once, after the last block.
    fn assert_invariants(events: &[StreamEvent]) {
        assert!(matches!(events.first(), Some(StreamEvent::Start { .. })), "{events:?}");
        let mut open: Option<usize> = None;
        let mut next = 0;
        let mut stopped = false;
        for e in events.iter().skip(1) {
            match e {
                StreamEvent::Start { .. } => panic!("second Start"),
                StreamEvent::BlockStart { index, .. } => {
                    assert!(!stopped && open.is_none() && *index == next, "{events:?}");
                    open = Some(*index);
                    next += 1;
                }
                StreamEvent::Delta { index, .. } => assert_eq!(open, Some(*index)),
                StreamEvent::BlockStop { index } => {
                    assert_eq!(open.take(), Some(*index));
                }
                StreamEvent::Usage { .. } => {}
                StreamEvent::Stop { .. } => {
                    assert!(!stopped && open.is_none(), "{events:?}");
                    stopped = true;
                }
            }
        }
        assert!(stopped, "no Stop in {events:?}");
    }

    // ------------------------------------------------------------ request fixtures

    fn weather_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"],
            "additionalProperties": false
        })
    }

    #[test]
    fn documents_go_inline_or_by_file_uri_and_untranslatable_parts_are_refused() {
        let traits = ModelTraits::infer(crate::Wire::Gemini, "gemini-2.5-pro");
        let doc = |source| Part::Document(Document::new(source));
        let req = |part: Part| Request {
            messages: vec![Message { role: Role::User, content: vec![text("read"), part] }],
            ..Request::default()
        };
        let inline = doc(DocumentSource::Base64 {
            media_type: "application/pdf".into(),
            data: "JVBERi0=".into(),
        });
        let out = encode_request(&req(inline.clone()), traits).unwrap();
        assert_eq!(
            out["contents"][0]["parts"][1],
            json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}})
        );
        // And back: data of a type not an image's is a document.
        let back = parse_request(out.to_string().as_bytes()).unwrap();
        assert_eq!(back.messages[0].content[1], inline);
        let url = doc(DocumentSource::Url { url: "https://x.test/a.pdf".into(), media_type: None });
        let out = encode_request(&req(url), traits).unwrap();
        assert_eq!(
            out["contents"][0]["parts"][1],
            json!({"fileData": {"mimeType": "application/pdf", "fileUri": "https://x.test/a.pdf"}})
        );
        let odd =
            Part::Untranslatable { what: "messages[0].content[1]: a `search_result` block".into() };
        let err = encode_request(&req(odd), traits).unwrap_err();
        assert!(
            err.to_string().contains("`search_result` block cannot be sent to a Gemini upstream"),
            "{err}"
        );
        // A request part the canonical model has no place for is kept by name.
        let body = br#"{"contents":[{"role":"user","parts":[{"text":"run"},{"executableCode":{"code":"1"}}]}]}"#;
        let req = parse_request(body).unwrap();
        assert!(
            matches!(&req.messages[0].content[1], Part::Untranslatable { what } if what.starts_with("contents[0].parts[1]"))
        );
    }

    #[test]
    fn encodes_a_multi_turn_tool_conversation() {
        let req = Request {
            model: "gemini-2.5-pro".into(),
            stream_usage: false,
            system: vec![TextBlock::new("You are a travel assistant.")],
            messages: vec![
                Message::text(Role::System, "Answer in English."),
                msg(
                    Role::User,
                    vec![
                        text("What's the weather where this photo was taken?"),
                        Part::Image(Image {
                            source: ImageSource::Base64 {
                                media_type: "image/png".into(),
                                data: "iVBORw0KGgo=".into(),
                            },
                            detail: Some("high".into()),
                            cache_control: None,
                        }),
                        Part::Image(Image {
                            source: ImageSource::Url {
                                url: "https://example.com/photos/eiffel.PNG?size=large".into(),
                            },
                            detail: None,
                            cache_control: None,
                        }),
                    ],
                ),
                msg(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: "The photo shows Paris.".into(),
                            signature: Some("EqQBCkgIARABGAIiQL".into()),
                        },
                        text("Let me check the weather in Paris."),
                        call(
                            "toolu_01A09q90qw",
                            "get_weather",
                            r#"{"city": "Paris", "unit": "celsius"}"#,
                        ),
                    ],
                ),
                msg(Role::User, vec![result("toolu_01A09q90qw", None, "18°C, cloudy", false)]),
                Message::text(Role::System, "Keep answers short."),
                Message::text(Role::Assistant, "It is 18°C and cloudy in Paris."),
                msg(
                    Role::User,
                    vec![
                        text("And this one?"),
                        Part::Image(Image {
                            source: ImageSource::Url {
                                url: "https://cdn.example.com/img/42".into(),
                            },
                            detail: None,
                            cache_control: None,
                        }),
                    ],
                ),
            ],
            tools: vec![Tool {
                name: "get_weather".into(),
                description: Some("Current weather for a city".into()),
                parameters: weather_schema(),
                strict: Some(true),
                cache_control: None,
                freeform: None,
                namespace: None,
            }],
            tool_choice: Some(ToolChoice::Tool { name: "get_weather".into() }),
            parallel_tool_calls: Some(false),
            max_tokens: Some(2048),
            temperature: Some(0.7),
            top_p: Some(0.95),
            top_k: Some(40),
            stop: vec!["END".into()],
            stream: true,
            reasoning: Some(Reasoning {
                enabled: true,
                effort: Some(Effort::High),
                budget_tokens: None,
            }),
            response_format: None,
            user: Some("user-42".into()),
            metadata: Some(serde_json::Map::from_iter([("team".to_owned(), json!("x"))])),
        };
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        let expected = json!({
            "systemInstruction": {"parts": [
                {"text": "You are a travel assistant."},
                {"text": "Answer in English."}
            ]},
            "contents": [
                {"role": "user", "parts": [
                    {"text": "What's the weather where this photo was taken?"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/photos/eiffel.PNG?size=large"}}
                ]},
                {"role": "model", "parts": [
                    {"text": "Let me check the weather in Paris."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}},
                     "thoughtSignature": "skip_thought_signature_validator"}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"content": "18°C, cloudy"}}},
                    {"text": "Keep answers short."}
                ]},
                {"role": "model", "parts": [{"text": "It is 18°C and cloudy in Paris."}]},
                {"role": "user", "parts": [
                    {"text": "And this one?"},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://cdn.example.com/img/42"}}
                ]}
            ],
            "tools": [{"functionDeclarations": [{
                "name": "get_weather",
                "description": "Current weather for a city",
                "parametersJsonSchema": {
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "City name"},
                        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                    },
                    "required": ["city"],
                    "additionalProperties": false
                }
            }]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
            "generationConfig": {
                "maxOutputTokens": 2048,
                "temperature": 0.7,
                "topP": 0.95,
                "topK": 40,
                "stopSequences": ["END"],
                "thinkingConfig": {"thinkingBudget": 24576, "includeThoughts": true}
            }
        });
        assert_eq!(body, expected);
    }

    #[test]
    fn gemini_3_and_later_get_a_thinking_level_never_a_budget() {
        let level = ModelTraits {
            reasoning: ReasoningControl::Effort,
            sampling: true,
            takes_max_tokens: true,
        };
        let config = |reasoning| {
            let req = Request {
                messages: vec![Message::text(Role::User, "hi")],
                reasoning: Some(reasoning),
                ..Request::default()
            };
            encode_request(&req, level).unwrap()["generationConfig"]["thinkingConfig"].clone()
        };
        let on = |effort, budget_tokens| Reasoning { enabled: true, effort, budget_tokens };
        assert_eq!(
            config(on(Some(Effort::Medium), None)),
            json!({"thinkingLevel": "medium", "includeThoughts": true})
        );
        assert_eq!(config(on(None, Some(30000)))["thinkingLevel"], "high");
        assert_eq!(config(on(Some(Effort::Minimal), None))["thinkingLevel"], "low");
        // Thinking cannot be turned off there: the lowest level, thoughts not asked for.
        assert_eq!(
            config(Reasoning { enabled: false, effort: None, budget_tokens: None }),
            json!({"thinkingLevel": "low"})
        );
        // And the level reads back as the same effort.
        let req = Request {
            messages: vec![Message::text(Role::User, "hi")],
            reasoning: Some(on(Some(Effort::High), None)),
            ..Request::default()
        };
        let body = serde_json::to_vec(&encode_request(&req, level).unwrap()).unwrap();
        let back = parse_request(&body).unwrap();
        assert_eq!(back.reasoning.map(|r| r.effort()), Some(Effort::High));
    }

    #[test]
    fn encodes_structured_output_and_disabled_thinking() {
        let schema = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
            "required": ["name"]
        });
        let req = Request {
            messages: vec![Message::text(Role::User, "Extract the recipe.")],
            response_format: Some(ResponseFormat::JsonSchema {
                name: "recipe".into(),
                schema: schema.clone(),
                strict: Some(true),
                description: None,
            }),
            reasoning: Some(Reasoning { enabled: false, effort: None, budget_tokens: None }),
            tool_choice: Some(ToolChoice::Required),
            ..Request::default()
        };
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        assert_eq!(
            body,
            json!({
                "contents": [{"role": "user", "parts": [{"text": "Extract the recipe."}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
                "generationConfig": {
                    "responseMimeType": "application/json",
                    "responseJsonSchema": schema,
                    "thinkingConfig": {"thinkingBudget": 0}
                }
            })
        );

        let json_object = Request {
            messages: vec![Message::text(Role::User, "JSON please")],
            response_format: Some(ResponseFormat::JsonObject),
            tool_choice: Some(ToolChoice::None),
            reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(3000) }),
            ..Request::default()
        };
        let body = crate::Wire::Gemini.encode_request(&json_object).unwrap();
        assert_eq!(body["generationConfig"]["responseMimeType"], "application/json");
        assert!(body["generationConfig"].get("responseJsonSchema").is_none());
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"thinkingBudget": 3000, "includeThoughts": true})
        );
        assert_eq!(body["toolConfig"]["functionCallingConfig"], json!({"mode": "NONE"}));
        assert!(body.get("systemInstruction").is_none());
        assert!(body.get("tools").is_none());
    }

    #[test]
    fn tool_result_shapes() {
        let req = Request {
            messages: vec![
                Message::text(Role::User, "go"),
                msg(
                    Role::Assistant,
                    vec![
                        call("a", "lookup", "{}"),
                        call("b", "fetch", ""),
                        call("c", "search", r#"{"q":"x"}"#),
                    ],
                ),
                msg(
                    Role::User,
                    vec![
                        result("a", None, r#"{"rows": 3}"#, false),
                        result("b", Some("fetch"), "timeout", true),
                        Part::ToolResult(ToolResult {
                            call_id: "c".into(),
                            name: None,
                            content: vec![
                                text("line one"),
                                Part::Image(Image {
                                    source: ImageSource::Base64 {
                                        media_type: "image/webp".into(),
                                        data: "UklGRg==".into(),
                                    },
                                    detail: None,
                                    cache_control: None,
                                }),
                                text("line two"),
                            ],
                            is_error: false,
                        }),
                    ],
                ),
            ],
            ..Request::default()
        };
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        assert_eq!(
            body["contents"][1]["parts"],
            json!([
                {"functionCall": {"name": "lookup", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
                {"functionCall": {"name": "fetch", "args": {}}},
                {"functionCall": {"name": "search", "args": {"q": "x"}}}
            ])
        );
        assert_eq!(
            body["contents"][2]["parts"],
            json!([
                {"functionResponse": {"name": "lookup", "response": {"rows": 3}}},
                {"functionResponse": {"name": "fetch", "response": {"error": "timeout"}}},
                {"functionResponse": {"name": "search", "response": {"content": "line one\nline two"}}},
                {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}}
            ])
        );
    }

    #[test]
    fn refuses_what_gemini_cannot_express() {
        let orphan = Request {
            messages: vec![msg(Role::User, vec![result("nowhere", None, "x", false)])],
            ..Request::default()
        };
        assert!(
            matches!(crate::Wire::Gemini.encode_request(&orphan), Err(ProtocolError::InvalidBody(m)) if m.contains("nowhere"))
        );

        let bad_args = Request {
            messages: vec![msg(Role::Assistant, vec![call("a", "f", "{not json")])],
            ..Request::default()
        };
        assert!(matches!(
            crate::Wire::Gemini.encode_request(&bad_args),
            Err(ProtocolError::InvalidBody(_))
        ));

        let array_args = Request {
            messages: vec![msg(Role::Assistant, vec![call("a", "f", "[1,2]")])],
            ..Request::default()
        };
        assert!(matches!(
            crate::Wire::Gemini.encode_request(&array_args),
            Err(ProtocolError::InvalidBody(_))
        ));

        let user_call = Request {
            messages: vec![msg(Role::User, vec![call("a", "f", "{}")])],
            ..Request::default()
        };
        assert!(matches!(
            crate::Wire::Gemini.encode_request(&user_call),
            Err(ProtocolError::Unsupported(_))
        ));

        let system_image = Request {
            messages: vec![msg(
                Role::System,
                vec![Part::Image(Image {
                    source: ImageSource::Url { url: "https://x/y.png".into() },
                    detail: None,
                    cache_control: None,
                })],
            )],
            ..Request::default()
        };
        assert!(matches!(
            crate::Wire::Gemini.encode_request(&system_image),
            Err(ProtocolError::Unsupported(_))
        ));
    }

    #[test]
    fn guesses_image_mime_types() {
        assert_eq!(guess_image_mime("https://a.b/c/d.png"), "image/png");
        assert_eq!(guess_image_mime("https://a.b/c/d.GIF#frag"), "image/gif");
        assert_eq!(guess_image_mime("https://a.b/c/d.webp?x=1.png"), "image/webp");
        assert_eq!(guess_image_mime("https://a.b/c.dir/photo"), "image/jpeg");
        assert_eq!(guess_image_mime("https://a.b/c/d.jpg"), "image/jpeg");
        assert_eq!(guess_image_mime("gs://bucket/x.heic"), "image/heic");
    }

    #[test]
    fn parses_a_gemini_request() {
        let body = json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Weather in Paris and Lyon?"}]},
                {"role": "model", "parts": [
                    {"text": "thinking...", "thought": true},
                    {"functionCall": {"id": "ab12", "name": "get_weather", "args": {"city": "Paris"}},
                     "thoughtSignature": "CiQB+/x="},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
                    {"functionCall": {"name": "get_time"}, "thoughtSignature": SKIP_SIGNATURE}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"content": "rain"}}},
                    {"functionResponse": {"id": "ab12", "name": "get_weather", "response": {"error": "down"}}},
                    {"functionResponse": {"name": "get_time", "response": {"utc": "12:00"}}},
                    {"functionResponse": {"name": "ghost", "response": {"content": "?"}}}
                ]}
            ],
            "tools": [{"functionDeclarations": [
                {"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}},
                {"name": "get_time", "description": "Clock"}
            ]}, {"googleSearch": {}}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}},
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseSchema": {"type": "OBJECT"},
                "thinkingConfig": {"thinkingLevel": "LOW"}
            }
        });
        let req = parse_request(body.to_string().as_bytes()).unwrap();
        assert_eq!(req.system, vec![TextBlock::new("Be brief.")]);
        assert_eq!(
            req.messages,
            vec![
                Message::text(Role::User, "Weather in Paris and Lyon?"),
                msg(
                    Role::Assistant,
                    vec![
                        Part::Thinking { text: "thinking...".into(), signature: None },
                        signed("gcall_ab12", "get_weather", r#"{"city":"Paris"}"#, "CiQB+/x="),
                        call("call_1", "get_weather", r#"{"city":"Lyon"}"#),
                        call("call_2", "get_time", "{}"),
                    ]
                ),
                msg(
                    Role::User,
                    vec![
                        result("call_1", Some("get_weather"), "rain", false),
                        result("gcall_ab12", Some("get_weather"), "down", true),
                        result("call_2", Some("get_time"), r#"{"utc":"12:00"}"#, false),
                        result("call_unmatched_1", Some("ghost"), "?", false),
                    ]
                ),
            ]
        );
        assert_eq!(req.tools.len(), 2);
        assert_eq!(req.tools[0].parameters["properties"]["city"]["type"], "STRING");
        assert_eq!(req.tools[1].parameters, Value::Null);
        assert_eq!(req.tool_choice, Some(ToolChoice::Required));
        assert_eq!(
            req.response_format,
            Some(ResponseFormat::JsonSchema {
                name: "response".into(),
                schema: json!({"type": "OBJECT"}),
                strict: None,
                description: None
            })
        );
        assert_eq!(
            req.reasoning,
            Some(Reasoning { enabled: true, effort: Some(Effort::Low), budget_tokens: None })
        );
        assert!(matches!(
            parse_request(br#"{"contents":[{"role":"tool","parts":[]}]}"#),
            Err(ProtocolError::InvalidBody(_))
        ));
        assert!(matches!(parse_request(b"[1]"), Err(ProtocolError::InvalidBody(_))));
    }

    // ----------------------------------------------------------- response fixtures

    const GEMINI3_RESPONSE: &str = r#"{
      "candidates": [{
        "content": {"role": "model", "parts": [
          {"text": "**Planning the lookup**\nThe user wants two cities.", "thought": true},
          {"text": "I'll look up "},
          {"text": "both cities."},
          {"functionCall": {"id": "8f2kq1", "name": "get_weather", "args": {"city": "Paris"}},
           "thoughtSignature": "CiQBVKhc7+abc/defg=="},
          {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
          {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
          {"text": "", "thoughtSignature": "EjQKMg=="}
        ]},
        "finishReason": "STOP",
        "index": 0,
        "safetyRatings": []
      }],
      "usageMetadata": {
        "promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 279,
        "thoughtsTokenCount": 50, "cachedContentTokenCount": 64, "toolUsePromptTokenCount": 5,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}]
      },
      "modelVersion": "gemini-3-pro-preview",
      "responseId": "Yx3kaPq2Lf-0qtsP4bWRgA0"
    }"#;

    #[test]
    fn parses_a_gemini_3_response() {
        let resp = parse_response(GEMINI3_RESPONSE.as_bytes()).unwrap();
        assert_eq!(
            resp,
            Response {
                id: "Yx3kaPq2Lf-0qtsP4bWRgA0".into(),
                model: "gemini-3-pro-preview".into(),
                content: vec![
                    Part::Thinking {
                        text: "**Planning the lookup**\nThe user wants two cities.".into(),
                        signature: None
                    },
                    text("I'll look up both cities."),
                    signed(
                        "gcall_8f2kq1",
                        "get_weather",
                        r#"{"city":"Paris"}"#,
                        "CiQBVKhc7+abc/defg=="
                    ),
                    call("call_Yx3kaPq2Lf-0qtsP4bWRgA0_1", "get_weather", r#"{"city":"Lyon"}"#),
                ],
                stop_reason: Some(StopReason::ToolUse),
                stop_sequence: None,
                usage: Usage {
                    input_tokens: Some(125),
                    output_tokens: Some(90),
                    cache_read_tokens: Some(64),
                    cache_write_tokens: None,
                    reasoning_tokens: Some(50),
                },
            }
        );
    }

    #[test]
    fn parses_plain_blocked_and_error_responses() {
        let plain = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi!"}]},"finishReason":"MAX_TOKENS"}],
            "usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":0}}"#;
        let resp = parse_response(plain).unwrap();
        assert_eq!(resp.id, "gemini-response");
        assert_eq!(resp.model, "");
        assert_eq!(resp.content, vec![text("Hi!")]);
        assert_eq!(resp.stop_reason, Some(StopReason::MaxTokens));
        assert_eq!(
            resp.usage,
            Usage { input_tokens: Some(3), output_tokens: Some(0), ..Usage::default() }
        );

        let blocked = br#"{"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[]},
            "usageMetadata":{"promptTokenCount":7,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash","responseId":"blk1"}"#;
        let resp = parse_response(blocked).unwrap();
        assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
        assert!(resp.content.is_empty());
        assert_eq!(resp.usage.input_tokens, Some(7));
        assert_eq!(resp.usage.output_tokens, None);
        assert_eq!(resp.id, "blk1");

        let safety = br#"{"candidates":[{"finishReason":"SAFETY"}]}"#;
        assert_eq!(parse_response(safety).unwrap().stop_reason, Some(StopReason::ContentFilter));

        let err = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(
            parse_response(err),
            Err(ProtocolError::UpstreamError {
                kind: "RESOURCE_EXHAUSTED".into(),
                message: "Resource has been exhausted".into()
            })
        );
        assert!(matches!(parse_response(b"<html>"), Err(ProtocolError::MalformedUpstream(_))));
        assert!(matches!(
            parse_response(br#"{"candidates":"nope"}"#),
            Err(ProtocolError::MalformedUpstream(_))
        ));
    }

    #[test]
    fn parses_error_bodies() {
        let obj =
            br#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(parse_error(obj).as_deref(), Some("API key not valid."));
        let arr = br#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#;
        assert_eq!(parse_error(arr).as_deref(), Some("The model is overloaded."));
        let no_message = br#"{"error":{"code":500,"status":"INTERNAL"}}"#;
        assert_eq!(parse_error(no_message).as_deref(), Some("INTERNAL"));
        assert_eq!(parse_error(br#"{"candidates":[]}"#), None);
        assert_eq!(parse_error(b"Bad Gateway"), None);
        assert_eq!(parse_error(b"[]"), None);
    }

    #[test]
    fn encodes_a_response() {
        let resp = Response {
            id: "r1".into(),
            model: "gemini-2.5-flash".into(),
            content: vec![
                Part::Thinking { text: "hmm".into(), signature: Some("anthropic-sig".into()) },
                text("Calling."),
                call("gcall_x1__sig_AbC-_d", "f", r#"{"a": 1}"#),
                call("toolu_9", "g", "{}"),
            ],
            stop_reason: Some(StopReason::ToolUse),
            stop_sequence: None,
            usage: Usage {
                input_tokens: Some(10),
                output_tokens: Some(30),
                cache_read_tokens: Some(4),
                cache_write_tokens: None,
                reasoning_tokens: Some(12),
            },
        };
        assert_eq!(
            encode_response(&resp),
            json!({
                "candidates": [{
                    "content": {"role": "model", "parts": [
                        {"text": "hmm", "thought": true},
                        {"text": "Calling."},
                        {"functionCall": {"id": "x1", "name": "f", "args": {"a": 1}}, "thoughtSignature": "AbC+/d=="},
                        {"functionCall": {"name": "g", "args": {}}}
                    ]},
                    "finishReason": "STOP",
                    "index": 0
                }],
                "usageMetadata": {
                    "promptTokenCount": 10, "candidatesTokenCount": 18, "thoughtsTokenCount": 12,
                    "cachedContentTokenCount": 4, "totalTokenCount": 40
                },
                "modelVersion": "gemini-2.5-flash",
                "responseId": "r1"
            })
        );
    }

    // ------------------------------------------------------------- stream fixtures

    const TRANSCRIPT: &str = concat!(
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"**Planning**\\nI need the weather.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],",
        "\"usageMetadata\": {\"promptTokenCount\": 80,\"totalTokenCount\": 80},\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" Calling the tool.\",\"thought\": true}],\"role\": \"model\"},\"index\": 0}],",
        "\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Let me\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \" check.\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"get_weather\",\"args\": {\"city\": \"Paris\"}},",
        "\"thoughtSignature\": \"Cm8BcsjafP+x/yz=\"}],\"role\": \"model\"},\"index\": 0}],\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\"}],\"role\": \"model\"},\"finishReason\": \"STOP\",\"index\": 0}],",
        "\"usageMetadata\": {\"promptTokenCount\": 80,\"candidatesTokenCount\": 25,\"totalTokenCount\": 135,\"thoughtsTokenCount\": 30},",
        "\"modelVersion\": \"gemini-2.5-flash\",\"responseId\": \"r3sp0nse\"}\r\n\r\n",
    );

    const SIGNED_CALL_ID: &str = "call_r3sp0nse_0";
    const TRANSCRIPT_SIGNATURE: &str = "Cm8BcsjafP+x/yz=";

    fn transcript_events() -> Vec<StreamEvent> {
        use StreamEvent as E;
        vec![
            E::Start { id: "r3sp0nse".into(), model: "gemini-2.5-flash".into() },
            // A chunk's usage comes before its content.
            E::Usage { usage: Usage { input_tokens: Some(80), ..Usage::default() } },
            E::BlockStart { index: 0, kind: BlockKind::Thinking },
            E::Delta {
                index: 0,
                delta: Delta::Thinking { text: "**Planning**\nI need the weather.".into() },
            },
            E::Delta { index: 0, delta: Delta::Thinking { text: " Calling the tool.".into() } },
            E::BlockStop { index: 0 },
            E::BlockStart { index: 1, kind: BlockKind::Text },
            E::Delta { index: 1, delta: Delta::Text { text: "Let me".into() } },
            E::Delta { index: 1, delta: Delta::Text { text: " check.".into() } },
            E::BlockStop { index: 1 },
            E::BlockStart {
                index: 2,
                kind: BlockKind::ToolCall { id: SIGNED_CALL_ID.into(), name: "get_weather".into() },
            },
            E::Delta {
                index: 2,
                delta: Delta::ToolArguments { json: r#"{"city":"Paris"}"#.into() },
            },
            E::Delta {
                index: 2,
                delta: Delta::Signature { signature: TRANSCRIPT_SIGNATURE.into() },
            },
            E::BlockStop { index: 2 },
            E::Usage {
                usage: Usage {
                    input_tokens: Some(80),
                    output_tokens: Some(55),
                    reasoning_tokens: Some(30),
                    ..Usage::default()
                },
            },
            E::Stop { reason: StopReason::ToolUse, stop_sequence: None },
        ]
    }

    #[test]
    fn decodes_a_recorded_stream() {
        let events = decode_sse(TRANSCRIPT.as_bytes()).unwrap();
        assert_eq!(events, transcript_events());
        assert_invariants(&events);
    }

    #[test]
    fn decodes_a_recorded_stream_split_byte_by_byte() {
        let bytes = TRANSCRIPT.as_bytes();
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_chunks(&chunks).unwrap(), transcript_events());
    }

    #[test]
    fn decodes_a_blocked_prompt_stream() {
        let events = decode_sse(
            b"data: {\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"},\"usageMetadata\":{\"promptTokenCount\":9},\"responseId\":\"b\"}\n\n",
        )
        .unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::Start { id: "b".into(), model: String::new() },
                StreamEvent::Usage { usage: Usage { input_tokens: Some(9), ..Usage::default() } },
                StreamEvent::Stop { reason: StopReason::ContentFilter, stop_sequence: None },
            ]
        );
    }

    #[test]
    fn usage_after_the_finish_reason_is_still_reported() {
        let events = decode_sse(
            concat!(
                "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"ok\"}]},\"finishReason\":\"STOP\"}]}\n\n",
                "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"late\"}]}}],\"usageMetadata\":{\"promptTokenCount\":1,\"candidatesTokenCount\":2}}\n\n",
            )
            .as_bytes(),
        )
        .unwrap();
        let resp = accumulate(&events);
        assert_eq!(resp.content, vec![text("ok")]);
        assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(resp.usage.output_tokens, Some(2));
        assert!(matches!(events.last(), Some(StreamEvent::Usage { .. })));
    }

    #[test]
    fn stream_error_paths() {
        let malformed = decode_sse(b"data: {\"candidates\": [\n\n");
        assert!(matches!(malformed, Err(ProtocolError::MalformedUpstream(_))), "{malformed:?}");

        let not_json = decode_sse(b"data: [DONE]\n\n");
        assert!(matches!(not_json, Err(ProtocolError::MalformedUpstream(_))));

        let wrong_shape = decode_sse(b"data: {\"candidates\": {\"a\": 1}}\n\n");
        assert!(matches!(wrong_shape, Err(ProtocolError::MalformedUpstream(_))));

        let error_chunk = decode_sse(
            concat!(
                "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}]}\n\n",
                "data: {\"error\":{\"code\":503,\"message\":\"The model is overloaded. Please try again later.\",\"status\":\"UNAVAILABLE\"}}\n\n",
            )
            .as_bytes(),
        );
        assert_eq!(
            error_chunk,
            Err(ProtocolError::UpstreamError {
                kind: "UNAVAILABLE".into(),
                message: "The model is overloaded. Please try again later.".into()
            })
        );

        let truncated = decode_sse(
            b"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}]}}],\"responseId\":\"t\"}\n\n",
        );
        assert_eq!(
            truncated,
            Err(ProtocolError::MalformedUpstream("stream ended before finishReason".into()))
        );
        assert!(matches!(decode_sse(b""), Err(ProtocolError::MalformedUpstream(_))));
        assert!(matches!(
            decode_sse(b": keep-alive\n\n"),
            Err(ProtocolError::MalformedUpstream(_))
        ));
    }

    #[test]
    fn encoder_writes_chunks_and_holds_the_finish_reason() {
        use StreamEvent as E;
        let events = vec![
            E::Start { id: "r9".into(), model: "gemini-2.5-pro".into() },
            E::BlockStart { index: 0, kind: BlockKind::Thinking },
            E::Delta { index: 0, delta: Delta::Thinking { text: "think".into() } },
            E::Delta { index: 0, delta: Delta::Signature { signature: "sig".into() } },
            E::BlockStop { index: 0 },
            E::BlockStart { index: 1, kind: BlockKind::Text },
            E::Delta { index: 1, delta: Delta::Text { text: "Hi".into() } },
            E::Delta { index: 1, delta: Delta::Text { text: String::new() } },
            E::BlockStop { index: 1 },
            E::BlockStart {
                index: 2,
                kind: BlockKind::ToolCall { id: "gcall_q".into(), name: "f".into() },
            },
            E::Delta { index: 2, delta: Delta::ToolArguments { json: "{\"x\":".into() } },
            E::Delta { index: 2, delta: Delta::ToolArguments { json: "1}".into() } },
            E::Delta { index: 2, delta: Delta::Signature { signature: "AA==".into() } },
            E::BlockStop { index: 2 },
            E::Stop { reason: StopReason::ToolUse, stop_sequence: None },
            E::Usage {
                usage: Usage { input_tokens: Some(5), output_tokens: Some(7), ..Usage::default() },
            },
        ];
        let bytes = encode_events(&events);
        let expected = [
            json!({"candidates":[{"content":{"role":"model","parts":[{"text":"think","thought":true}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
            json!({"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
            json!({"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"q","name":"f","args":{"x":1}},"thoughtSignature":"AA=="}]},"index":0}],"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
            json!({"candidates":[{"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":7,"totalTokenCount":12},"modelVersion":"gemini-2.5-pro","responseId":"r9"}),
        ];
        let mut want = Vec::new();
        for v in &expected {
            crate::sse::write_json(&mut want, None, v);
        }
        assert_eq!(String::from_utf8(bytes.clone()).unwrap(), String::from_utf8(want).unwrap());

        let back = decode_sse(&bytes).unwrap();
        let resp = accumulate(&back);
        assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(resp.content[2], signed("gcall_q", "f", r#"{"x":1}"#, "AA=="));
    }

    #[test]
    fn encoder_error_ends_the_stream() {
        let mut enc = Encoder::new();
        let mut out = Vec::new();
        enc.push(&StreamEvent::Start { id: "e".into(), model: "m".into() }, &mut out);
        enc.push(&StreamEvent::BlockStart { index: 0, kind: BlockKind::Text }, &mut out);
        enc.push(
            &StreamEvent::Delta { index: 0, delta: Delta::Text { text: "partial".into() } },
            &mut out,
        );
        out.clear();
        let err =
            ErrorBody::new(503, ErrorKind::Overloaded, "upstream_unavailable", "Try again later");
        enc.error(&err, &mut out);
        enc.finish(&mut out);
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "data: {\"error\":{\"code\":503,\"message\":\"Try again later\",\"status\":\"UNAVAILABLE\"}}\n\n"
        );
        assert_eq!(
            decode_sse(&out),
            Err(ProtocolError::UpstreamError {
                kind: "UNAVAILABLE".into(),
                message: "Try again later".into()
            })
        );
    }

    // --------------------------------------------------------- thought signatures

    #[test]
    fn call_ids_carry_gemini_ids_and_fit_clients() {
        assert_eq!(
            split_call_id("gcall_ab-1__sig_CiQB-_x"),
            CallIdInfo { gemini_id: Some("ab-1"), signature: Some("CiQB+/x=".into()) }
        );
        assert_eq!(
            split_call_id("call_resp_0__sig_AbCd"),
            CallIdInfo { gemini_id: None, signature: Some("AbCd".into()) }
        );
        assert_eq!(split_call_id("toolu_01XYZ"), CallIdInfo { gemini_id: None, signature: None });
        assert_eq!(split_call_id("gcall_"), CallIdInfo { gemini_id: None, signature: None });
        assert_eq!(split_call_id("x__sig_"), CallIdInfo { gemini_id: None, signature: None });
        assert_eq!(split_call_id("x__sig_a.b"), CallIdInfo { gemini_id: None, signature: None });

        assert_eq!(call_base(Some("abc"), || "m".into()), "gcall_abc");
        assert_eq!(call_base(Some("a__b"), || "m".into()), "m");
        assert_eq!(call_base(Some("a.b"), || "m".into()), "m");
        assert_eq!(minted_call_id("a_b/c-d", 3), "call_abc-d_3");
        assert_eq!(minted_call_id("", 0), "call_gemini_0");

        // Ids the gateway gives clients fit every provider's limit.
        let long = "r".repeat(60);
        assert!(minted_call_id(&long, 12).len() <= MAX_CALL_ID);
        assert_eq!(call_base(Some(&"g".repeat(40)), || "m".into()), "m", "too long to carry");
    }

    #[test]
    fn signature_from_a_stream_survives_into_the_next_request() {
        let answer = accumulate(&decode_sse(TRANSCRIPT.as_bytes()).unwrap());
        let signed = parse_response(GEMINI3_RESPONSE.as_bytes()).unwrap();
        let ids: Vec<String> = signed
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(c.id.clone()),
                _ => None,
            })
            .collect();
        let req = Request {
            messages: vec![
                Message::text(Role::User, "Weather in Paris?"),
                msg(Role::Assistant, answer.content.clone()),
                msg(Role::User, vec![result(SIGNED_CALL_ID, None, "18C", false)]),
                msg(Role::Assistant, signed.content.clone()),
                msg(
                    Role::User,
                    vec![result(&ids[0], None, "19C", false), result(&ids[1], None, "20C", false)],
                ),
                msg(
                    Role::Assistant,
                    vec![call("toolu_01Foreign", "get_weather", r#"{"city":"Nice"}"#)],
                ),
                msg(Role::User, vec![result("toolu_01Foreign", None, "21C", false)]),
            ],
            ..Request::default()
        };
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        let contents = body["contents"].as_array().unwrap();
        // Streamed answer: thoughts dropped, the signature restored byte for byte.
        assert_eq!(
            contents[1]["parts"],
            json!([
                {"text": "Let me check."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "Cm8BcsjafP+x/yz="}
            ])
        );
        assert_eq!(
            contents[2]["parts"],
            json!([{"functionResponse": {"name": "get_weather", "response": {"content": "18C"}}}])
        );
        // Gemini 3 parallel calls: the id and signature of the first come back, the
        // second stays unsigned as Gemini sent it.
        assert_eq!(
            contents[3]["parts"][1],
            json!({"functionCall": {"id": "8f2kq1", "name": "get_weather", "args": {"city": "Paris"}},
                   "thoughtSignature": "CiQBVKhc7+abc/defg=="})
        );
        assert_eq!(
            contents[3]["parts"][2],
            json!({"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}})
        );
        assert_eq!(
            contents[4]["parts"],
            json!([
                {"functionResponse": {"id": "8f2kq1", "name": "get_weather", "response": {"content": "19C"}}},
                {"functionResponse": {"name": "get_weather", "response": {"content": "20C"}}}
            ])
        );
        // A call from another provider gets the documented placeholder.
        assert_eq!(
            contents[5]["parts"],
            json!([{"functionCall": {"name": "get_weather", "args": {"city": "Nice"}}, "thoughtSignature": SKIP_SIGNATURE}])
        );
        // Every id a client sees is acceptable to Anthropic and OpenAI.
        for id in ids.iter().map(String::as_str).chain([SIGNED_CALL_ID]) {
            assert!(id.chars().all(is_id_char), "{id}");
        }
    }

    // ------------------------------------------------------------------ proptests

    #[derive(Debug, Clone)]
    struct CallSpec {
        gemini: bool,
        sig: Option<String>,
        args: String,
        result: String,
        is_error: bool,
        named: bool,
    }

    #[derive(Debug, Clone)]
    enum Turn {
        User(Vec<Part>),
        System(String),
        Assistant { thinking: bool, text: Option<String>, calls: Vec<CallSpec> },
    }

    fn word() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9][a-zA-Z0-9 .,!?'\"\\\\\n{}éß漢😀-]{0,15}"
    }

    fn any_text() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9 .,\"\\\\\n{}é漢]{0,12}"
    }

    fn url_signature() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_-]{4,24}"
    }

    fn args_json() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            any::<i64>().prop_map(Value::from),
            word().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
            Just(Value::Null),
            prop::collection::vec(any::<i32>(), 0..3).prop_map(Value::from),
        ];
        prop::collection::btree_map("[a-z_]{1,6}", value, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
    }

    fn image_part_strategy() -> impl Strategy<Value = Part> {
        prop_oneof![
            ("image/(png|jpeg|webp)", "[A-Za-z0-9+/]{4,16}").prop_map(|(media_type, data)| {
                Part::Image(Image {
                    source: ImageSource::Base64 { media_type, data },
                    detail: Some("low".into()),
                    cache_control: None,
                })
            }),
            "https://example\\.com/[a-z]{1,8}(\\.png|\\.jpg)?".prop_map(|url| {
                Part::Image(Image {
                    source: ImageSource::Url { url },
                    detail: None,
                    cache_control: None,
                })
            }),
        ]
    }

    fn call_spec() -> impl Strategy<Value = CallSpec> {
        (
            any::<bool>(),
            prop::option::of(url_signature()),
            args_json(),
            word(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(gemini, sig, args, result, is_error, named)| CallSpec {
                gemini,
                sig,
                args,
                result,
                is_error,
                named,
            })
    }

    fn turn() -> impl Strategy<Value = Turn> {
        prop_oneof![
            3 => prop::collection::vec(
                prop_oneof![3 => word().prop_map(|w| text(&w)), 1 => image_part_strategy()],
                1..4
            )
            .prop_map(Turn::User),
            1 => word().prop_map(Turn::System),
            3 => (any::<bool>(), prop::option::of(word()), prop::collection::vec(call_spec(), 0..3))
                .prop_map(|(thinking, text, calls)| Turn::Assistant { thinking, text, calls }),
        ]
    }

    fn build_messages(turns: Vec<Turn>) -> Vec<Message> {
        let mut messages = Vec::new();
        let mut counter = 0;
        for t in turns {
            match t {
                Turn::User(parts) => messages.push(msg(Role::User, parts)),
                Turn::System(s) => messages.push(Message::text(Role::System, s)),
                Turn::Assistant { thinking, text: t, calls } => {
                    let mut content = Vec::new();
                    if thinking {
                        content.push(Part::Thinking {
                            text: "hmm".into(),
                            signature: Some("x".into()),
                        });
                    }
                    if let Some(t) = t {
                        content.push(text(&t));
                    }
                    let mut results = Vec::new();
                    for (i, c) in calls.iter().enumerate() {
                        counter += 1;
                        let base = if c.gemini {
                            format!("gcall_g{counter}")
                        } else {
                            format!("toolu_{counter}")
                        };
                        let id = base;
                        let name = format!("tool_{i}");
                        content.push(match &c.sig {
                            Some(s) => signed(&id, &name, &c.args, s),
                            None => call(&id, &name, &c.args),
                        });
                        results.push(result(
                            &id,
                            c.named.then_some(name.as_str()),
                            &c.result,
                            c.is_error,
                        ));
                    }
                    messages.push(msg(Role::Assistant, content));
                    if !results.is_empty() {
                        messages.push(msg(Role::User, results));
                    }
                }
            }
        }
        messages
    }

    fn tool_strategy() -> impl Strategy<Value = Tool> {
        ("[a-z_]{1,10}", prop::option::of(word()), args_json(), prop::option::of(any::<bool>())).prop_map(
            |(name, description, props, strict)| Tool {
                name,
                description,
                parameters: json!({"type": "object", "properties": serde_json::from_str::<Value>(&props).unwrap()}),
                strict,
                cache_control: None,
                freeform: None,
                namespace: None,
            },
        )
    }

    fn reasoning_strategy() -> impl Strategy<Value = Reasoning> {
        let effort = prop_oneof![
            Just(Effort::Minimal),
            Just(Effort::Low),
            Just(Effort::Medium),
            Just(Effort::High)
        ];
        prop_oneof![
            Just(Reasoning { enabled: false, effort: None, budget_tokens: None }),
            (prop::option::of(effort), prop::option::of(1u64..40000)).prop_map(
                |(effort, budget_tokens)| { Reasoning { enabled: true, effort, budget_tokens } }
            ),
        ]
    }

    fn response_format_strategy() -> impl Strategy<Value = ResponseFormat> {
        prop_oneof![
            Just(ResponseFormat::Text),
            Just(ResponseFormat::JsonObject),
            ("[a-z]{1,8}", args_json(), prop::option::of(word())).prop_map(|(name, props, description)| {
                ResponseFormat::JsonSchema {
                    name,
                    schema: json!({"type": "object", "properties": serde_json::from_str::<Value>(&props).unwrap()}),
                    strict: Some(true),
                    description,
                }
            }),
        ]
    }

    fn tool_choice_strategy() -> impl Strategy<Value = ToolChoice> {
        prop_oneof![
            Just(ToolChoice::Auto),
            Just(ToolChoice::None),
            Just(ToolChoice::Required),
            "[a-z_]{1,8}".prop_map(|name| ToolChoice::Tool { name }),
        ]
    }

    fn request_strategy() -> impl Strategy<Value = Request> {
        let conversation = (
            prop::collection::vec(word(), 0..3),
            prop::collection::vec(turn(), 0..7),
            prop::collection::vec(tool_strategy(), 0..3),
            prop::option::of(tool_choice_strategy()),
        );
        let params = (
            prop::option::of(1u64..100_000),
            // Two-decimal values, as clients send them: serde_json (without its
            // `float_roundtrip` feature) may re-read arbitrary floats 1 ULP off.
            prop::option::of((0u32..=200).prop_map(|n| f64::from(n) / 100.0)),
            prop::option::of((0u32..=100).prop_map(|n| f64::from(n) / 100.0)),
            prop::option::of(1u64..100),
            prop::collection::vec(word(), 0..3),
            prop::option::of(reasoning_strategy()),
            prop::option::of(response_format_strategy()),
            any::<bool>(),
            prop::option::of(any::<bool>()),
        );
        (conversation, params).prop_map(
            |(
                (system, turns, tools, tool_choice),
                (
                    max_tokens,
                    temperature,
                    top_p,
                    top_k,
                    stop,
                    reasoning,
                    response_format,
                    stream,
                    parallel,
                ),
            )| Request {
                model: "gemini-2.5-pro".into(),
                stream_usage: false,
                system: system.into_iter().map(TextBlock::new).collect(),
                messages: build_messages(turns),
                tools,
                tool_choice,
                parallel_tool_calls: parallel,
                max_tokens,
                temperature,
                top_p,
                top_k,
                stop,
                stream,
                reasoning,
                response_format,
                user: Some("u".into()),
                metadata: None,
            },
        )
    }

    /// What a request means once it has been through Gemini and back. Written from the
    /// documented mapping, independently of the implementation.
    fn gemini_meaning(req: &Request) -> Request {
        let mut out = Request {
            system: req.system.iter().map(|b| TextBlock::new(b.text.clone())).collect(),
            ..Request::default()
        };
        let leading = req.messages.iter().take_while(|m| m.role == Role::System).count();
        for m in &req.messages[..leading] {
            for p in &m.content {
                if let Part::Text(t) = p {
                    out.system.push(TextBlock::new(t.text.clone()));
                }
            }
        }
        let mut ids: HashMap<String, (String, String)> = HashMap::new();
        let mut ordinal = 0;
        for m in &req.messages[leading..] {
            let role = if m.role == Role::Assistant { Role::Assistant } else { Role::User };
            let mut parts = Vec::new();
            for p in &m.content {
                match p {
                    Part::Text(t) => parts.push(text(&t.text)),
                    Part::Image(i) => parts.push(Part::Image(Image {
                        source: i.source.clone(),
                        detail: None,
                        cache_control: None,
                    })),
                    Part::ToolCall(c) => {
                        let id = if c.id.starts_with("gcall_") {
                            c.id.clone()
                        } else {
                            format!("call_{ordinal}")
                        };
                        ordinal += 1;
                        ids.insert(c.id.clone(), (id.clone(), c.name.clone()));
                        parts.push(Part::ToolCall(ToolCall {
                            id,
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                            signature: c.signature.clone(),
                        }));
                    }
                    Part::ToolResult(r) => {
                        let (id, name) = ids[&r.call_id].clone();
                        parts.push(result(&id, Some(&name), &r.text(), r.is_error));
                    }
                    // Only the data travels: names, titles and markers have no field.
                    Part::Document(d) => {
                        parts.push(Part::Document(Document::new(d.source.clone())))
                    }
                    Part::Thinking { .. }
                    | Part::RedactedThinking { .. }
                    | Part::Untranslatable { .. } => {}
                }
            }
            if parts.is_empty() {
                continue;
            }
            match out.messages.last_mut() {
                Some(last) if last.role == role => last.content.extend(parts),
                _ => out.messages.push(msg(role, parts)),
            }
        }
        out.tools = req
            .tools
            .iter()
            .map(|t| Tool { strict: None, cache_control: None, ..t.clone() })
            .collect();
        out.tool_choice = req.tool_choice.clone();
        out.max_tokens = req.max_tokens;
        out.temperature = req.temperature;
        out.top_p = req.top_p;
        out.top_k = req.top_k;
        out.stop = req.stop.clone();
        out.reasoning = req.reasoning.as_ref().map(|r| {
            if r.enabled {
                Reasoning { enabled: true, effort: None, budget_tokens: Some(r.budget()) }
            } else {
                r.clone()
            }
        });
        out.response_format = req.response_format.as_ref().map(|f| match f {
            ResponseFormat::JsonSchema { schema, .. } => ResponseFormat::JsonSchema {
                name: "response".into(),
                schema: schema.clone(),
                strict: None,
                description: None,
            },
            other => other.clone(),
        });
        out
    }

    #[derive(Debug, Clone)]
    enum CallKind {
        Gemini,
        Minted,
        Foreign,
    }

    fn response_part() -> impl Strategy<Value = Part> {
        prop_oneof![
            3 => any_text().prop_map(|t| text(&t)),
            2 => (any_text(), prop::option::of("[a-z]{3}")).prop_map(|(t, s)| Part::Thinking { text: t, signature: s }),
            1 => "[a-z]{4}".prop_map(|data| Part::RedactedThinking { data }),
            1 => image_part_strategy(),
            3 => (
                prop_oneof![Just(CallKind::Gemini), Just(CallKind::Minted), Just(CallKind::Foreign)],
                prop::option::of(url_signature()),
                "[a-z_]{1,8}",
                args_json()
            )
                .prop_map(|(kind, sig, name, args)| {
                    // Ids are completed in `response_strategy` (they depend on the
                    // response id and the call's position).
                    let marker = match kind {
                        CallKind::Gemini => "G",
                        CallKind::Minted => "M",
                        CallKind::Foreign => "F",
                    };
                    match sig {
                        Some(s) => signed(marker, &name, &args, &s),
                        None => call(marker, &name, &args),
                    }
                }),
        ]
    }

    fn usage_strategy() -> impl Strategy<Value = Usage> {
        (
            prop::option::of(0u64..1_000_000),
            prop::option::of(0u64..1_000),
            prop::option::of(0u64..1_000_000),
            prop::option::of(0u64..1_000_000),
        )
            .prop_map(|(input, cache, reasoning, extra)| Usage {
                input_tokens: input,
                output_tokens: match reasoning {
                    Some(r) => Some(r + extra.unwrap_or(0)),
                    None => extra,
                },
                cache_read_tokens: cache,
                cache_write_tokens: None,
                reasoning_tokens: reasoning,
            })
    }

    fn stop_reason_strategy() -> impl Strategy<Value = StopReason> {
        prop_oneof![
            Just(StopReason::EndTurn),
            Just(StopReason::MaxTokens),
            Just(StopReason::StopSequence),
            Just(StopReason::ToolUse),
            Just(StopReason::ContentFilter),
            Just(StopReason::Refusal),
            Just(StopReason::PauseTurn),
            Just(StopReason::Error),
        ]
    }

    fn response_strategy() -> impl Strategy<Value = Response> {
        (
            "[A-Za-z0-9]{1,12}",
            prop_oneof![Just(String::new()), "gemini-[a-z0-9.]{1,8}"],
            prop::collection::vec(response_part(), 0..7),
            prop::option::of(stop_reason_strategy()),
            prop::option::of(word()),
            usage_strategy(),
        )
            .prop_map(|(id, model, mut content, stop_reason, stop_sequence, usage)| {
                let mut n = 0;
                for part in &mut content {
                    if let Part::ToolCall(c) = part {
                        c.id = match c.id.as_str() {
                            "G" => format!("gcall_k{n}x"),
                            "M" => format!("call_{id}_{n}"),
                            _ => format!("toolu_{n}"),
                        };
                        n += 1;
                    }
                }
                Response { id, model, content, stop_reason, stop_sequence, usage }
            })
    }

    /// What a response means once it has been through Gemini and back.
    fn gemini_response_meaning(resp: &Response) -> Response {
        let mut content: Vec<Part> = Vec::new();
        let mut calls = 0;
        for part in &resp.content {
            match part {
                Part::Text(t) if !t.text.is_empty() => match content.last_mut() {
                    Some(Part::Text(last)) => last.text.push_str(&t.text),
                    _ => content.push(text(&t.text)),
                },
                Part::Thinking { text: t, .. } if !t.is_empty() => match content.last_mut() {
                    Some(Part::Thinking { text: last, .. }) => last.push_str(t),
                    _ => content.push(Part::Thinking { text: t.clone(), signature: None }),
                },
                Part::ToolCall(c) => {
                    let id = if c.id.starts_with("gcall_") {
                        c.id.clone()
                    } else {
                        format!("call_{}_{calls}", resp.id)
                    };
                    calls += 1;
                    content.push(Part::ToolCall(ToolCall { id, ..c.clone() }));
                }
                _ => {}
            }
        }
        let stop = match resp.stop_reason.unwrap_or(StopReason::EndTurn) {
            StopReason::MaxTokens => StopReason::MaxTokens,
            StopReason::ContentFilter | StopReason::Refusal => StopReason::ContentFilter,
            StopReason::Error => StopReason::Error,
            _ if calls > 0 => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Response {
            id: resp.id.clone(),
            model: resp.model.clone(),
            content,
            stop_reason: Some(stop),
            stop_sequence: None,
            usage: resp.usage,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(192))]

        #[test]
        fn request_round_trip_preserves_meaning(req in request_strategy()) {
            let body = crate::Wire::Gemini.encode_request(&req).unwrap();
            prop_assert!(body.get("model").is_none());
            let back = parse_request(body.to_string().as_bytes()).unwrap();
            prop_assert_eq!(back, gemini_meaning(&req));
        }

        #[test]
        fn request_model_turns_always_start_signed(req in request_strategy()) {
            let body = crate::Wire::Gemini.encode_request(&req).unwrap();
            for content in body["contents"].as_array().unwrap() {
                if content["role"] == "model" {
                    let first = content["parts"].as_array().unwrap().iter().find(|p| p.get("functionCall").is_some());
                    if let Some(first) = first {
                        prop_assert!(first["thoughtSignature"].is_string(), "{}", content);
                    }
                }
            }
        }

        #[test]
        fn response_round_trip(resp in response_strategy()) {
            let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
            prop_assert_eq!(parse_response(&body).unwrap(), gemini_response_meaning(&resp));
        }

        #[test]
        fn stream_and_whole_response_agree(
            resp in response_strategy(),
            cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let bytes = encode_events(&response_to_events(&resp));
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for c in cuts {
                chunks.push(&bytes[prev..c]);
                prev = c;
            }
            chunks.push(&bytes[prev..]);
            let events = decode_chunks(&chunks).unwrap();
            assert_invariants(&events);
            let whole = parse_response(&serde_json::to_vec(&encode_response(&resp)).unwrap()).unwrap();
            prop_assert_eq!(accumulate(&events), whole);
        }
    }
}
