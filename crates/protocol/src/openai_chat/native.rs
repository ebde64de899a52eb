//! The same-format fast path: what a Chat client's own body needs before it goes to
//! an OpenAI-compatible upstream (see [`crate::Wire::adapt_native`]).

use std::sync::LazyLock;

use serde_json::Value;

/// Whether [`adapt_native`] might edit this body: it sets `max_tokens` and the model
/// refuses it.
pub fn may_adapt(body: &[u8], traits: crate::ModelTraits) -> bool {
    use crate::util::{RareKey, top_level_value};
    static TOOL_CHOICE: LazyLock<RareKey> = LazyLock::new(|| RareKey::new("tool_choice"));
    !traits.takes_max_tokens && top_level_value(body, "max_tokens").is_some()
        || TOOL_CHOICE.value(body).is_some() && top_level_value(body, "tools").is_none()
        || super::sampling::may_drop(body, traits)
}

/// See [`crate::Wire::adapt_native`]. A client's `max_tokens` becomes
/// `max_completion_tokens` for a model that refuses the older field (OpenAI's
/// reasoning models); `reasoning_effort` is one form for every model; a
/// `tool_choice` without `tools` is left out, and so are the sampling
/// parameters a reasoning model refuses ([`super::sampling`]).
pub fn adapt_native(
    body: &serde_json::Map<String, Value>,
    traits: crate::ModelTraits,
) -> Vec<crate::FieldEdit> {
    let mut edits = Vec::new();
    if let Some(v) = body.get("max_tokens").filter(|_| !traits.takes_max_tokens) {
        edits.push(("max_tokens", None));
        if !body.contains_key("max_completion_tokens") {
            edits.push(("max_completion_tokens", Some(v.clone())));
        }
    }
    // OpenAI refuses `tool_choice` without `tools` (Codex's local compaction sends
    // one); without tools it means nothing.
    let no_tools = body.get("tools").and_then(Value::as_array).is_none_or(Vec::is_empty);
    if no_tools && body.contains_key("tool_choice") {
        edits.push(("tool_choice", None));
    }
    edits.extend(super::sampling::edits(body, traits));
    edits
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
