//! Whole responses: a chat completion → canonical ([`parse_response`],
//! [`parse_usage`]) and back ([`encode_response`]), usage, and error bodies
//! ([`parse_error`]).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::{Part, ProtocolError, Response, StopReason, TextBlock, ToolCall, Usage};

use super::request::content_parts;
use super::wire::{WireResponse, WireUsage};

/// Parse a complete (non-streamed) Chat Completions response from the upstream.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let w: WireResponse =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    let mut content = Vec::new();
    let mut stop_reason = None;
    if let Some(choice) = w.choices.into_iter().next() {
        stop_reason = choice.finish_reason.as_deref().map(StopReason::from_openai);
        if let Some(m) = choice.message {
            let reasoning = m.reasoning_content.filter(|r| !r.is_empty());
            if let Some(r) = reasoning {
                content.push(Part::Thinking { text: r, signature: None });
            }
            let parts = content_parts(m.content, &|| "choices[0].message".to_owned())
                .map_err(|e| ProtocolError::upstream(e.to_string()))?;
            // Only model output belongs in a response.
            content.extend(parts.into_iter().filter(|p| matches!(p, Part::Text(_))));
            if let Some(refusal) = m.refusal.filter(|r| !r.is_empty()) {
                content.push(Part::Text(TextBlock::new(refusal)));
                stop_reason = Some(StopReason::Refusal);
            }
            for c in m.tool_calls {
                content.push(Part::ToolCall(ToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                    signature: None,
                }));
            }
        }
    }
    Ok(Response {
        id: w.id,
        model: w.model,
        content,
        stop_reason,
        stop_sequence: None,
        usage: w.usage.map(|u| u.canonical()).unwrap_or_default(),
    })
}

/// Only the usage of a chat completion, for a body forwarded unchanged. The body
/// was produced by the upstream and is passed on as it is; its structure is
/// scanned (strings closed, brackets balanced) but only the usage is parsed.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    // Usually found by a scan, and only the usage object parsed.
    if let Some(usage) = crate::util::top_level_value(body, "usage").and_then(|r| body.get(r)) {
        let u: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(|e| ProtocolError::upstream(e.to_string()))?;
        return Ok(u.map(|u| u.canonical()));
    }
    let w: UsageOnly =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    Ok(w.usage.map(|u| u.canonical()))
}

pub(super) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Render a canonical response as a Chat Completions response for an OpenAI client.
pub fn encode_response(resp: &Response) -> Value {
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut calls = Vec::new();
    for part in &resp.content {
        match part {
            Part::Text(t) => text.push_str(&t.text),
            Part::Thinking { text: t, .. } => reasoning.push_str(t),
            Part::ToolCall(c) => calls.push(json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })),
            _ => {}
        }
    }
    let mut message = json!({"role": "assistant", "content": if text.is_empty() && !calls.is_empty() { Value::Null } else { json!(text) }});
    if !reasoning.is_empty() {
        message["reasoning_content"] = json!(reasoning);
    }
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    let mut v = json!({
        "id": resp.id,
        "object": "chat.completion",
        "created": now_secs(),
        "model": resp.model,
        "choices": [{
            "index": 0,
            "message": message,
            "finish_reason": resp.stop_reason.unwrap_or(StopReason::EndTurn).to_openai(),
            "logprobs": null,
        }],
    });
    if !resp.usage.is_empty() {
        v["usage"] = usage_json(&resp.usage);
    }
    v
}

pub(super) fn usage_json(u: &Usage) -> Value {
    let input = u.input_tokens.unwrap_or(0);
    let output = u.output_tokens.unwrap_or(0);
    let mut v = json!({
        "prompt_tokens": input,
        "completion_tokens": output,
        "total_tokens": input + output,
    });
    if let Some(cached) = u.cache_read_tokens {
        v["prompt_tokens_details"] = json!({ "cached_tokens": cached });
    }
    if let Some(reasoning) = u.reasoning_tokens {
        v["completion_tokens_details"] = json!({ "reasoning_tokens": reasoning });
    }
    v
}

/// The message of an OpenAI-style error body (`{"error":{"message"}}`, `{"error":
/// "…"}` or `{"message"}`, as compatible servers vary); `None` when it has none.
pub fn parse_error(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let msg = match v.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e) => e.get("message").and_then(Value::as_str).map(str::to_owned),
        None => v.get("message").and_then(Value::as_str).map(str::to_owned),
    };
    msg.filter(|m| !m.is_empty())
}
