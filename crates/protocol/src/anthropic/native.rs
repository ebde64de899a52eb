//! The same-format fast path: the edits an Anthropic client's own body needs before
//! it goes to an Anthropic upstream (see [`crate::Wire::adapt_native`]), decided
//! without re-encoding the body.

use serde_json::{Map, Value, json};

use crate::{Effort, FieldEdit, ModelTraits, Part, ReasoningControl, Request};

use super::request::{
    Samplers, anthropic_effort, budget_within, continues_without_thinking, is_blank,
    is_blank_block, is_tool_id, tool_id,
};

/// Whether any tool call or result in the history has an id the API refuses.
fn has_foreign_tool_ids(req: &Request) -> bool {
    req.messages.iter().flat_map(|m| &m.content).any(|p| match p {
        Part::ToolCall(c) => !is_tool_id(&c.id),
        Part::ToolResult(r) => !is_tool_id(&r.call_id),
        _ => false,
    })
}

/// `messages` (a client's own Anthropic body) with every tool id mapped by [`tool_id`].
fn map_tool_ids(messages: &Value) -> Value {
    let mut messages = messages.clone();
    for m in messages.as_array_mut().into_iter().flatten() {
        for b in m.get_mut("content").and_then(Value::as_array_mut).into_iter().flatten() {
            let field = match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => "id",
                Some("tool_result") => "tool_use_id",
                _ => continue,
            };
            if let Some(id) = b.get(field).and_then(Value::as_str)
                && let std::borrow::Cow::Owned(mapped) = tool_id(id)
                && let Some(map) = b.as_object_mut()
            {
                map.insert(field.into(), Value::String(mapped));
            }
        }
    }
    messages
}

/// See [`crate::Wire::adapt_native`]. An Anthropic client's thinking is rewritten when
/// its form is not the target's (a fallback from Claude 4.7 to 4.5, or a client that
/// assumes an older model): `enabled` + budget becomes `adaptive` + the nearest
/// effort, `adaptive` becomes `enabled` with the effort's budget (and `max_tokens`
/// raised above it). A tool loop whose continued turn has no thinking of its own
/// goes without thinking ([`continues_without_thinking`]); tool ids the API refuses
/// are mapped ([`tool_id`]); blank text blocks leave the history
/// ([`drop_blank_text`]).
pub fn adapt_native(
    body: &Map<String, Value>,
    req: &Request,
    traits: ModelTraits,
) -> Vec<FieldEdit> {
    let mut edits = Vec::new();
    let thinking = body.get("thinking");
    let kind = thinking.and_then(|t| t.get("type")).and_then(Value::as_str);
    let mut output_config = body.get("output_config").and_then(Value::as_object).cloned();
    match (kind, traits.reasoning) {
        _ if continues_without_thinking(req) => edits.push(("thinking", None)),
        (Some("enabled"), ReasoningControl::Effort) => {
            let budget = thinking.and_then(|t| t.get("budget_tokens")).and_then(Value::as_u64);
            edits.push(("thinking", Some(json!({"type": "adaptive"}))));
            let config = output_config.get_or_insert_with(Map::new);
            if !config.contains_key("effort") {
                let effort = budget.map_or(Effort::Medium, Effort::from_budget);
                config.insert("effort".into(), json!(anthropic_effort(effort)));
            }
            edits.push(("output_config", output_config.map(Value::Object)));
        }
        (Some("adaptive"), ReasoningControl::Budget) => {
            let effort = output_config
                .as_mut()
                .and_then(|c| c.remove("effort"))
                .and_then(|e| e.as_str().and_then(Effort::parse));
            let asked = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
            let (budget, max_tokens) =
                budget_within(effort.unwrap_or(Effort::Medium).budget_tokens(), asked);
            edits.push(("thinking", Some(json!({"type": "enabled", "budget_tokens": budget}))));
            if body.get("output_config").is_some() {
                let rest = output_config.filter(|c| !c.is_empty()).map(Value::Object);
                edits.push(("output_config", rest));
            }
            if max_tokens != asked {
                edits.push(("max_tokens", Some(json!(max_tokens))));
            }
        }
        _ => {}
    }
    // Read off the body: a field it has is a field it sends, whatever its value.
    // Thinking aside: the client chose its sampling for its own thinking setting.
    let number = |field: &str| body.get(field).map(|v| v.as_f64().unwrap_or_default());
    let asked = Samplers {
        temperature: number("temperature"),
        top_p: number("top_p"),
        top_k: body.get("top_k").map(|v| v.as_u64().unwrap_or_default()),
    };
    for field in asked.refused(traits, false) {
        edits.push((field, None));
    }
    // The history: foreign tool ids mapped, then blank text dropped; one edit.
    let mapped =
        has_foreign_tool_ids(req).then(|| body.get("messages").map(map_tool_ids)).flatten();
    let messages = mapped.as_ref().or(body.get("messages"));
    let cleaned = messages.and_then(Value::as_array).and_then(|m| drop_blank_text(m));
    if let Some(messages) = cleaned.map(Value::Array).or(mapped) {
        edits.push(("messages", Some(messages)));
    }
    if lacks_tools(body, req)
        && let Some(tools) = super::request::history_tools(req)
    {
        edits.push(("tools", Some(tools)));
        edits.push(("tool_choice", Some(json!({"type": "none"}))));
    }
    edits
}

/// A client's own body calls tools in its history but declares none.
fn lacks_tools(body: &Map<String, Value>, req: &Request) -> bool {
    body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty)
        && req.tools.is_empty()
        && req
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|p| matches!(p, Part::ToolCall(_) | Part::ToolResult(_)))
}

/// A thinking block whose signature is another family's encrypted reasoning
/// ([`crate::continuity::tag_reasoning`]: an Anthropic client's history continued
/// from a Responses upstream), which Anthropic would refuse as an invalid signature.
fn is_foreign_thinking(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("thinking")
        && block
            .get("signature")
            .and_then(Value::as_str)
            .is_some_and(|s| !crate::continuity::is_anthropic_signature(s))
}

/// A block [`drop_blank_text`] takes out.
fn is_dropped(block: &Value) -> bool {
    is_blank_block(block) || is_foreign_thinking(block)
}

/// A client's own `messages` without the blank text blocks Anthropic refuses
/// (`text content blocks must contain non-whitespace text`) and the thinking
/// blocks another family signed, and without the
/// messages left empty by that (Anthropic joins the turns that then meet). A final
/// message of nothing else is kept: dropping it would ask another question (or
/// none), so the upstream answers it. `None` when nothing needs dropping.
///
/// Such blocks reach a client's history from answers of other providers (a model
/// that answered only a newline), so the client is not at fault for sending them.
pub fn drop_blank_text(messages: &[Value]) -> Option<Vec<Value>> {
    let blank = |content: &Value| match content {
        Value::String(text) => is_blank(text),
        _ => false,
    };
    let has_blank = |m: &Value| match m.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().any(is_dropped),
        Some(content) => blank(content),
        None => false,
    };
    if !messages.iter().any(has_blank) {
        return None;
    }
    let last = messages.len().saturating_sub(1);
    let mut out = Vec::with_capacity(messages.len());
    let mut changed = false;
    for (i, message) in messages.iter().enumerate() {
        if !has_blank(message) {
            out.push(message.clone());
            continue;
        }
        let cleaned = match message.get("content") {
            Some(Value::Array(blocks)) => {
                blocks.iter().filter(|b| !is_dropped(b)).cloned().collect::<Vec<_>>()
            }
            _ => Vec::new(),
        };
        if cleaned.is_empty() && i == last {
            out.push(message.clone());
            continue;
        }
        changed = true;
        if cleaned.is_empty() {
            continue;
        }
        let mut message = message.clone();
        if let Value::Object(map) = &mut message {
            map.insert("content".into(), Value::Array(cleaned));
        }
        out.push(message);
    }
    changed.then_some(out)
}

/// Whether a canonical request holds text or thinking that [`drop_blank_text`]
/// would drop.
fn has_blank_text(req: &Request) -> bool {
    req.messages.iter().any(|m| {
        m.content.iter().any(|p| match p {
            Part::Text(t) => is_blank(&t.text),
            Part::Thinking { signature: Some(s), .. } => {
                !crate::continuity::is_anthropic_signature(s)
            }
            _ => false,
        })
    })
}

/// Whether [`adapt_native`] might edit a body whose parsed form is `req`, decided
/// without looking at the body, so one needing nothing keeps the byte-level fast
/// path: its thinking is not in the model's form (a budget for an effort model, none
/// for a budget model), it sets sampling parameters the model refuses, or its
/// history holds blank text.
pub fn may_adapt(req: &Request, traits: ModelTraits) -> bool {
    let tool_history = req.tools.is_empty()
        && req
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|p| matches!(p, Part::ToolCall(_) | Part::ToolResult(_)));
    if has_foreign_tool_ids(req) || continues_without_thinking(req) || tool_history {
        return true;
    }
    let thinking = req.reasoning.as_ref().is_some_and(|r| {
        r.enabled
            && match traits.reasoning {
                ReasoningControl::Effort => r.budget_tokens.is_some(),
                ReasoningControl::Budget => r.budget_tokens.is_none(),
            }
    });
    thinking || !Samplers::asked(req).refused(traits, false).is_empty() || has_blank_text(req)
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
