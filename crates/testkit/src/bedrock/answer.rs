//! Converse answers: the whole response (`output.message.content`,
//! `stopReason`, `usage`, `metrics`) and ConverseStream's events as
//! event-stream messages.

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::eventstream;
use crate::canned::{
    ANTHROPIC_THINKING_SIGNATURE, Answer, CANNED_CACHE_CREATION_INPUT_TOKENS,
    CANNED_CACHE_READ_INPUT_TOKENS, CANNED_INPUT_TOKENS, CANNED_OUTPUT_TOKENS, split_deltas,
    split_fragments,
};

/// The `toolUseId` of a canned Bedrock tool call (Bedrock's own ids look so).
pub const TOOL_USE_ID: &str = "tooluse_fake0001";
/// `metrics.latencyMs` of every canned answer.
pub const LATENCY_MS: u64 = 42;

/// `usage`: `inputTokens` excludes the cached tokens, which Bedrock reports
/// apart (`cacheReadInputTokens`, `cacheWriteInputTokens`); `totalTokens`
/// counts them all.
pub fn usage() -> Value {
    json!({
        "inputTokens": CANNED_INPUT_TOKENS,
        "outputTokens": CANNED_OUTPUT_TOKENS,
        "totalTokens": CANNED_INPUT_TOKENS
            + CANNED_OUTPUT_TOKENS
            + CANNED_CACHE_READ_INPUT_TOKENS
            + CANNED_CACHE_CREATION_INPUT_TOKENS,
        "cacheReadInputTokens": CANNED_CACHE_READ_INPUT_TOKENS,
        "cacheWriteInputTokens": CANNED_CACHE_CREATION_INPUT_TOKENS
    })
}

fn stop_reason(a: &Answer<'_>) -> &'static str {
    if a.tool.is_some() { "tool_use" } else { "end_turn" }
}

fn tool_input(args: &str) -> Value {
    serde_json::from_str::<Value>(args)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// The Converse response body.
pub(crate) fn complete(a: &Answer<'_>) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = a.thinking {
        content.push(json!({"reasoningContent": {"reasoningText": {
            "text": thinking, "signature": ANTHROPIC_THINKING_SIGNATURE
        }}}));
    }
    if let Some(text) = a.text {
        content.push(json!({ "text": text }));
    }
    if let Some((name, args)) = a.tool {
        content.push(json!({"toolUse": {
            "toolUseId": TOOL_USE_ID, "name": name, "input": tool_input(args)
        }}));
    }
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop_reason(a),
        "usage": usage(),
        "metrics": {"latencyMs": LATENCY_MS}
    })
}

/// The ConverseStream events, one event-stream message each: `messageStart`;
/// per block `contentBlockDelta`s and a `contentBlockStop` (a tool call opens
/// with a `contentBlockStart`; text and reasoning have none in Converse);
/// `messageStop`; `metadata` with the usage.
pub(crate) fn frames(a: &Answer<'_>) -> Vec<Bytes> {
    let mut out = vec![eventstream::event("messageStart", &json!({"role": "assistant"}))];
    let mut index = 0u64;
    let delta = |index: u64, delta: Value| {
        eventstream::event(
            "contentBlockDelta",
            &json!({"contentBlockIndex": index, "delta": delta}),
        )
    };
    let stop =
        |index: u64| eventstream::event("contentBlockStop", &json!({"contentBlockIndex": index}));
    if let Some(thinking) = a.thinking {
        for piece in split_deltas(thinking) {
            out.push(delta(index, json!({"reasoningContent": {"text": piece}})));
        }
        out.push(delta(
            index,
            json!({"reasoningContent": {"signature": ANTHROPIC_THINKING_SIGNATURE}}),
        ));
        out.push(stop(index));
        index += 1;
    }
    if let Some(text) = a.text {
        for piece in split_deltas(text) {
            out.push(delta(index, json!({ "text": piece })));
        }
        out.push(stop(index));
        index += 1;
    }
    if let Some((name, args)) = a.tool {
        out.push(eventstream::event(
            "contentBlockStart",
            &json!({"contentBlockIndex": index, "start": {"toolUse": {
                "toolUseId": TOOL_USE_ID, "name": name
            }}}),
        ));
        for piece in split_fragments(args) {
            out.push(delta(index, json!({"toolUse": {"input": piece}})));
        }
        out.push(stop(index));
    }
    out.push(eventstream::event("messageStop", &json!({"stopReason": stop_reason(a)})));
    out.push(eventstream::event(
        "metadata",
        &json!({"usage": usage(), "metrics": {"latencyMs": LATENCY_MS}}),
    ));
    out
}

/// The text of the last user turn that has any (its `text` blocks joined with
/// `\n`).
pub fn last_user_text(request: &Value) -> Option<String> {
    let turns = request.get("messages")?.as_array()?;
    turns.iter().rev().filter(|t| t["role"] == "user").find_map(|turn| {
        let texts: Vec<&str> = turn["content"]
            .as_array()?
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    })
}
