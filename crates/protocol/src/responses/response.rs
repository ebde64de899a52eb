//! Whole responses: canonical → a Responses API response object
//! ([`encode_response`] and its variants), a response object → canonical
//! ([`parse_response`]), and error bodies ([`parse_error`]). The item and status
//! helpers here are shared with the stream encoder and decoder.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::{Part, ProtocolError, Response, Seal, StopReason, TextBlock, Tool, ToolCall, Usage};

use super::encode::{output_text, summary_parts};
use super::tools::{CallShapes, freeform_text};
use super::wire::{
    OutContent, OutItem, WireError, WireReasoningItem, WireResponse, WireUsage, reasoning_text,
};

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
pub(super) struct Shell<'a> {
    pub(super) id: &'a str,
    pub(super) model: &'a str,
    pub(super) created_at: u64,
    pub(super) status: &'a str,
    pub(super) incomplete_reason: Option<&'a str>,
    pub(super) error: Value,
    pub(super) output: Vec<Value>,
    pub(super) usage: Option<Value>,
}

pub(super) fn response_json(shell: Shell<'_>) -> Value {
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
            Part::Compaction { sealed } => {
                flush(&mut out, &mut texts, resp_id);
                let id = super::compaction::compaction_item_id(resp_id, out.len());
                out.push(super::compaction::compaction_item(&id, sealed));
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

pub(super) fn message_item(id: &str, status: &str, texts: &[&str]) -> Value {
    let content: Vec<Value> = texts.iter().map(|t| output_text(t)).collect();
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

pub(super) fn reasoning_item(id: &str, text: &str, encrypted_content: Option<&str>) -> Value {
    let mut item = json!({"type": "reasoning", "id": id, "summary": summary_parts(text)});
    if let Some(sealed) = encrypted_content {
        item["encrypted_content"] = json!(sealed);
    }
    item
}

/// A `function_call` item, or for a free-form tool a `custom_tool_call` whose
/// `input` is `body`; `namespace` when the tool was declared in one.
pub(super) fn call_item(
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

pub(super) fn response_id(id: &str) -> String {
    if id.starts_with("resp_") { id.to_owned() } else { format!("resp_{id}") }
}

pub(super) fn item_id(prefix: &str, resp_id: &str, output_index: usize) -> String {
    let base = resp_id.strip_prefix("resp_").unwrap_or(resp_id);
    format!("{prefix}_{base}_{output_index}")
}

/// `status` and `incomplete_details.reason` for a stop reason.
pub(super) fn status_for(stop: Option<StopReason>) -> (&'static str, Option<&'static str>) {
    match stop {
        Some(StopReason::MaxTokens) => ("incomplete", Some("max_output_tokens")),
        Some(StopReason::ContentFilter | StopReason::Refusal) => {
            ("incomplete", Some("content_filter"))
        }
        _ => ("completed", None),
    }
}

/// The stop reason for a finished response (`None` for non-terminal statuses).
pub(super) fn stop_from_status(
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

/// The wire usage object, or `None` when nothing is known (see the wire's docs in [`super`]).
pub(super) fn usage_json(usage: &Usage) -> Option<Value> {
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

pub(super) fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

// ---------------------------------------------------------------------------------
// Response: wire → canonical
// ---------------------------------------------------------------------------------

/// The canonical parts of one output item; `family` tags a reasoning item's
/// `encrypted_content`, which becomes its thinking's signature.
pub(super) fn out_item_parts(item: OutItem, family: &str) -> Vec<Part> {
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
        OutItem::Reasoning { summary, content, encrypted_content } => {
            let text =
                reasoning_text(&WireReasoningItem { summary, content, encrypted_content: None });
            let signature = encrypted_content
                .filter(|t| !t.is_empty())
                .map(|t| crate::continuity::tag_reasoning(family, &t));
            if text.is_empty() && signature.is_none() {
                Vec::new()
            } else {
                vec![Part::Thinking { text, signature }]
            }
        }
        OutItem::Other => Vec::new(),
    }
}

/// Parse a Responses API response body. A `failed` response is an upstream error.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    parse_response_for(body, super::FAMILY)
}

/// [`parse_response`] for an upstream of `family` (the tag its encrypted
/// reasoning gets).
pub fn parse_response_for(body: &[u8], family: &str) -> Result<Response, ProtocolError> {
    let resp: WireResponse = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    response_from_wire(resp, family)
}

/// The usage of a response body forwarded as it is; `None` when it reports none.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(serde::Deserialize)]
    struct UsageOnly {
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    let only: UsageOnly = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    Ok(only.usage.as_ref().map(WireUsage::to_usage))
}

fn response_from_wire(resp: WireResponse, family: &str) -> Result<Response, ProtocolError> {
    let status = resp.status.as_deref().unwrap_or("completed");
    if status == "failed" {
        return Err(resp
            .error
            .unwrap_or(WireError { code: None, message: None })
            .into_upstream("response_failed"));
    }
    let content: Vec<Part> = resp
        .output
        .unwrap_or_default()
        .into_iter()
        .flat_map(|i| out_item_parts(i, family))
        .collect();
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

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
