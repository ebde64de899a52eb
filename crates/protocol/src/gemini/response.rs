//! Whole responses: Gemini's `GenerateContentResponse` → canonical
//! ([`parse_response`]) and back ([`encode_response`]), usage, and error bodies
//! ([`parse_error`]). The pieces the stream decoder and encoder share live here too.

use serde_json::Value;

use crate::model::{Part, StopReason, TextBlock, ToolCall, Usage};
use crate::{ProtocolError, Response, util};

use super::ids::{call_base, minted_call_id, real_signature};
use super::request::{call_part, text_part};
use super::wire::{Candidate, Content, FunctionCall, UsageMetadata, WirePart, WireResponse};

/// The response id when Gemini sends no `responseId`.
const FALLBACK_RESPONSE_ID: &str = "gemini-response";

/// One response part, as both the whole-response and the stream paths see it.
pub(super) enum Piece<'a> {
    Text(&'a str),
    Thought(&'a str),
    Call(&'a FunctionCall, Option<&'a str>),
}

pub(super) fn classify(part: &WirePart) -> Option<Piece<'_>> {
    if let Some(call) = &part.function_call {
        return Some(Piece::Call(call, part.thought_signature.as_deref()));
    }
    let text = part.text.as_deref().filter(|t| !t.is_empty())?;
    Some(if part.thought == Some(true) { Piece::Thought(text) } else { Piece::Text(text) })
}

pub(super) fn args_text(args: Option<&Value>) -> String {
    args.map_or_else(|| "{}".to_owned(), util::value_to_arguments)
}

pub(super) fn response_call(
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

pub(super) fn response_id(id: Option<&str>) -> String {
    id.filter(|id| !id.is_empty()).unwrap_or(FALLBACK_RESPONSE_ID).to_owned()
}

/// `finishReason` → canonical; a turn that returned function calls stopped for them.
pub(super) fn stop_reason(finish_reason: &str, had_calls: bool) -> StopReason {
    match StopReason::from_gemini(finish_reason) {
        StopReason::EndTurn if had_calls => StopReason::ToolUse,
        other => other,
    }
}

/// A terminal reason with no candidate: the prompt itself was blocked.
pub(super) fn blocked(response: &WireResponse) -> Option<StopReason> {
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

pub(super) fn usage_from_wire(u: &UsageMetadata) -> Usage {
    Usage {
        input_tokens: sum(u.prompt_token_count, u.tool_use_prompt_token_count),
        output_tokens: sum(u.candidates_token_count, u.thoughts_token_count),
        cache_read_tokens: u.cached_content_token_count,
        cache_write_tokens: None,
        reasoning_tokens: u.thoughts_token_count,
    }
}

pub(super) fn usage_to_wire(u: &Usage) -> Option<UsageMetadata> {
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
pub(super) fn upstream_error(value: &Value) -> Option<ProtocolError> {
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

/// Parse a complete `generateContent` response from the upstream. A body that is
/// an error (`{"error": …}`, even with a 200) is [`ProtocolError::UpstreamError`].
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

/// A whole response as Gemini writes it: call ids as Gemini issues them (the
/// inverse of [`parse_response`]).
pub fn encode_response(resp: &Response) -> Value {
    serde_json::to_value(encode(resp, false)).unwrap_or_default()
}

/// A whole response for a Gemini client: each call carries its canonical id as
/// `functionCall.id`, which the client sends back with the call and its
/// `functionResponse` (read by [`parse_client_request`](super::parse_client_request)).
pub fn encode_client_response(resp: &Response) -> Value {
    serde_json::to_value(encode(resp, true)).unwrap_or_default()
}

/// [`encode_client_response`], appended to `out` as it serializes (no `Value`).
pub(super) fn write_client_response(resp: &Response, out: &mut Vec<u8>) {
    crate::util::write_json(out, &encode(resp, true));
}

fn encode(resp: &Response, client: bool) -> WireResponse {
    let mut parts = Vec::new();
    for part in &resp.content {
        match part {
            Part::Text(t) => parts.extend(text_part(&t.text)),
            Part::Thinking { text, .. } => parts.extend(thought_part(text)),
            Part::ToolCall(call) => parts.push(response_call_part(call, client)),
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::RedactedThinking { .. }
            | Part::Untranslatable { .. }
            | Part::Compaction { .. } => {}
        }
    }
    let reason = resp.stop_reason.unwrap_or(StopReason::EndTurn).to_gemini();
    response_chunk(&resp.id, &resp.model, parts, Some(reason), usage_to_wire(&resp.usage))
}

pub(super) fn thought_part(text: &str) -> Option<WirePart> {
    text_part(text).map(|p| WirePart { thought: Some(true), ..p })
}

/// A call in an answer: for a Gemini client with its canonical id as is (see
/// [`encode_client_response`]), else as Gemini writes it.
pub(super) fn response_call_part(call: &ToolCall, client: bool) -> WirePart {
    let mut part = call_part(call, loose_args(call));
    if client && let Some(f) = &mut part.function_call {
        f.id = Some(call.id.clone());
    }
    part
}

/// Arguments for a wire we produce ourselves: invalid JSON travels as a string rather
/// than being lost.
pub(super) fn loose_args(call: &ToolCall) -> Value {
    util::arguments_to_value(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()))
}

pub(super) fn response_chunk(
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

/// The message of a Google error body (`{"error":{"code","message","status"}}`,
/// or an array holding one).
pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    match upstream_error(&value)? {
        ProtocolError::UpstreamError { message, .. } => Some(message),
        _ => None,
    }
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
