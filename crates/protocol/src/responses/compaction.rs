//! Compaction in the Responses API ([`crate::compaction`]): the trigger and the
//! `compaction` items in requests, the compact endpoint's body, and the answers.
//!
//! Shapes (as OpenAI and Codex use them):
//! - the trigger: `{"type": "compaction_trigger"}`, and only as the last input item;
//! - the item: `{"type": "compaction", "id": …, "encrypted_content": …}` (Codex
//!   also reads the older name `compaction_summary`), sent back as an input item;
//! - a trigger's answer: a response whose output is that one item; streamed, its
//!   `response.output_item.added`/`.done` events, then `response.completed`;
//! - `POST /v1/responses/compact` takes `model`, `input`, `instructions`, `tools`,
//!   `parallel_tool_calls`, `reasoning`, `text` (a Responses body without `stream`)
//!   and answers `{"id", "object": "response.compaction", "created_at", "output",
//!   "usage"}`, `output` being the input's user (and developer/system) messages,
//!   then the item: the client replaces its history with it.

use serde_json::{Map, Value, json};

use crate::{Compaction, ProtocolError, Request, Seal, Usage, util};

use super::request::parse_map_sealed;
use super::response::{item_id, now_secs, response_id, usage_json};

/// The input item type that asks for compaction.
pub(super) const TRIGGER: &str = "compaction_trigger";

/// Whether an input item is the compaction trigger.
pub(super) fn is_trigger(item: &Value) -> bool {
    item.get("type").and_then(Value::as_str) == Some(TRIGGER)
}

/// What a `compaction` input item stands for ([`open_item`]).
pub(super) enum Opened {
    /// The summary this gateway sealed into it.
    Summary(String),
    /// An item this gateway cannot open (a provider's own, another gateway's,
    /// or altered), named: only the Responses API that issued it can read it,
    /// so it reaches one as the client sent it (the same-format fast path) and
    /// any translation is refused naming it ([`crate::Part::Untranslatable`]).
    Foreign(String),
}

/// What a `compaction` input item stands for, opened with `seal`; an error when it
/// has no `encrypted_content` at all.
pub(super) fn open_item(
    obj: &Map<String, Value>,
    path: &str,
    seal: Option<&dyn Seal>,
) -> Result<Opened, ProtocolError> {
    let token = match obj.get("encrypted_content") {
        Some(Value::String(token)) => token,
        _ => {
            return Err(ProtocolError::body(format!(
                "{path}.encrypted_content: a compaction item needs its encrypted_content"
            )));
        }
    };
    let opened = seal.and_then(|seal| crate::continuity::open_summary(seal, token));
    Ok(opened.map_or_else(
        || {
            let id = match obj.get("id").and_then(Value::as_str) {
                Some(id) => format!(" {id}"),
                None => String::new(),
            };
            Opened::Foreign(format!(
                "{path}: compaction item{id} (this gateway cannot open it: it was not \
                 compacted here, or it was altered; only the Responses API that issued it \
                 reads it)"
            ))
        },
        Opened::Summary,
    ))
}

/// Parse a `POST /v1/responses/compact` body: a Responses request (never streamed)
/// whose answer is the compacted history ([`Compaction::Endpoint`]).
pub fn parse_compact_request(
    body: &[u8],
    seal: Option<&dyn Seal>,
) -> Result<Request, ProtocolError> {
    let map = util::parse_object(body)?;
    let retained = match map.get("input") {
        Some(Value::Array(items)) => {
            items.iter().filter(|item| is_retained(item)).cloned().collect()
        }
        Some(Value::String(text)) => vec![json!({
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}],
        })],
        _ => Vec::new(),
    };
    let mut req = parse_map_sealed(&map, seal)?;
    req.stream = false;
    req.compaction = Some(Compaction::Endpoint { retained });
    Ok(req)
}

/// The messages a compacted history keeps as they were: what the user (and the
/// developer/system) said. The model's turns and tool traffic are in the summary.
fn is_retained(item: &Value) -> bool {
    let ty = item.get("type").and_then(Value::as_str);
    let role = item.get("role").and_then(Value::as_str);
    matches!(ty, None | Some("message")) && matches!(role, Some("user" | "developer" | "system"))
}

/// The `compaction` output item carrying `token`.
pub(super) fn compaction_item(id: &str, token: &str) -> Value {
    json!({"type": "compaction", "id": id, "encrypted_content": token})
}

/// The id of a compaction item at `output_index` of response `resp_id`.
pub(super) fn compaction_item_id(resp_id: &str, output_index: usize) -> String {
    item_id("cmp", resp_id, output_index)
}

/// The answer to `POST /v1/responses/compact`: the retained messages, then the
/// compaction item carrying `token`; `usage` always present (the API requires it).
pub fn encode_compacted(id: &str, token: &str, retained: &[Value], usage: &Usage) -> Value {
    let id = response_id(id);
    let mut output = retained.to_vec();
    let item_id = compaction_item_id(&id, output.len());
    output.push(compaction_item(&item_id, token));
    let usage = usage_json(usage).unwrap_or_else(|| {
        usage_json(&Usage { input_tokens: Some(0), ..Usage::default() }).unwrap_or(Value::Null)
    });
    json!({
        "id": id,
        "object": "response.compaction",
        "created_at": now_secs(),
        "output": output,
        "usage": usage,
    })
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
