//! Requests: canonical → a Responses body, for the round-trip tests and a client's
//! view ([`encode_request`]) and for a Responses upstream ([`encode_request_for`]).

use serde_json::{Map, Value, json};

use crate::{
    Dialect, Document, DocumentSource, Effort, Image, Message, Part, ProtocolError, Request,
    ResponseFormat, Role, ToolChoice, ToolResult,
};

use super::compaction;
use super::tools::{NAMESPACE_SEPARATOR, tool_json};

/// Render a canonical request as a Responses API request (for a Responses upstream and
/// the round-trip tests). The first system block becomes `instructions`, the others
/// leading `developer` messages. `store` and the prompt-cache, safety and tier
/// settings go as the client gave them ([`Extras`](crate::Extras)); hosted tools declared in the
/// Responses format go as they came, others are refused by name.
///
/// Lossy or refused: `top_k` and stop sequences have no Responses field and are
/// refused; `ToolResult::is_error` and tool `cache_control` have no field and are
/// dropped; [`Part::RedactedThinking`] and thinking signatures are Anthropic-only and
/// dropped. Thinking becomes a summary-only `reasoning` item: OpenAI itself may refuse
/// reasoning items it did not produce (they lack its `id`/`encrypted_content`).
pub fn encode_request(req: &Request) -> Result<Value, ProtocolError> {
    encode(req, None)
}

/// Render a canonical request for a Responses upstream of `family` (the wire's
/// name, `openai-responses`), for a model with `traits`. What differs from
/// [`encode_request`]: the gateway keeps no state, so `store` is `false` unless
/// the client asked to store, and a reasoning model is asked for its reasoning
/// encrypted (`include: ["reasoning.encrypted_content"]`), which the answer's
/// thinking then carries as its signature, tagged with `family`
/// ([`crate::continuity::tag_reasoning`]). Thinking goes back as a `reasoning`
/// item with its `encrypted_content` only when `family` issued it; any other
/// thinking (Claude's, Gemini's, text a client echoed) is context the API would
/// refuse as reasoning of its own, and is dropped, as Anthropic drops thinking
/// without its signature.
pub fn encode_request_for(
    req: &Request,
    traits: crate::ModelTraits,
    family: &str,
) -> Result<Value, ProtocolError> {
    let mut body = encode(req, Some(family))?;
    let reasons = !traits.takes_max_tokens || req.reasoning.as_ref().is_some_and(|r| r.enabled);
    if let Value::Object(map) = &mut body {
        map.insert("store".into(), json!(req.extras.store == Some(true)));
        if reasons {
            map.insert("include".into(), json!([ENCRYPTED_REASONING]));
        }
    }
    Ok(body)
}

/// What a Responses upstream is asked to include for reasoning to survive a
/// conversation without server state.
pub const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// [`encode_request`] (`upstream: None`) or [`encode_request_for`] (the
/// upstream's family).
fn encode(req: &Request, upstream: Option<&str>) -> Result<Value, ProtocolError> {
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
        encode_message(message, &mut input, &format!("messages[{i}]"), upstream)?;
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
            // OpenAI's highest level is `xhigh`.
            let effort = effort.map(|e| if e == Effort::Max { "xhigh" } else { e.as_str() });
            match effort {
                Some(effort) => json!({"effort": effort, "summary": "auto"}),
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

fn encode_message(
    msg: &Message,
    input: &mut Vec<Value>,
    path: &str,
    upstream: Option<&str>,
) -> Result<(), ProtocolError> {
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
            (Role::Assistant, Part::Thinking { text, signature }) => match upstream {
                None => {
                    flush(&mut pending, input);
                    input.push(json!({"type": "reasoning", "summary": summary_parts(text)}));
                }
                Some(family) => {
                    let token = signature
                        .as_deref()
                        .and_then(|s| crate::continuity::tagged_reasoning(s, family));
                    if let Some(token) = token {
                        flush(&mut pending, input);
                        input.push(json!({
                            "type": "reasoning",
                            "summary": summary_parts(text),
                            "encrypted_content": token,
                        }));
                    }
                }
            },
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

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
