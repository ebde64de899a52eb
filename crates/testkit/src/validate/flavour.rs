//! What some OpenAI-compatible vendors refuse besides OpenAI's rules, enforced by
//! an OpenAI fake only when a test asks for it ([`crate::FakeUpstream::set_flavour`]):
//! a plain OpenAI fake stays as lenient as OpenAI.

use serde_json::Value;

/// An OpenAI-compatible vendor whose own rules a [`crate::Vendor::OpenAi`] fake
/// enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Mistral: refuses fields it does not define (422: `max_completion_tokens`,
    /// `stream_options`) and any tool id but 9 letters and digits (400).
    Mistral,
    /// DeepSeek in thinking mode (its default): refuses (400) an assistant turn
    /// that calls tools without its `reasoning_content`.
    DeepSeek,
}

/// The fields Mistral's Chat Completions refuses that OpenAI's takes (its
/// request model forbids extra inputs).
const MISTRAL_REFUSED: [&str; 2] = ["max_completion_tokens", "stream_options"];

/// `Err((status, message))`: the vendor would refuse `body` so.
pub fn check(flavour: Flavour, body: &Value) -> Result<(), (u16, String)> {
    let messages = body.get("messages").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    match flavour {
        Flavour::Mistral => {
            if let Some(field) = MISTRAL_REFUSED.iter().find(|f| body.get(**f).is_some()) {
                return Err((422, format!("body.{field}: Extra inputs are not permitted")));
            }
            let ids = messages.iter().flat_map(|m| {
                let calls = m.get("tool_calls").and_then(Value::as_array);
                let call_ids = calls.into_iter().flatten().map(|c| c.get("id"));
                call_ids.chain(std::iter::once(m.get("tool_call_id")).filter(Option::is_some))
            });
            for id in ids {
                let id = id.and_then(Value::as_str).unwrap_or_default();
                if id.len() != 9 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err((
                        400,
                        format!(
                            "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."
                        ),
                    ));
                }
            }
        }
        Flavour::DeepSeek => {
            let thinking_off =
                body.pointer("/thinking/type").and_then(Value::as_str) == Some("disabled");
            for (i, m) in messages.iter().enumerate() {
                let calls =
                    m.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
                if !thinking_off
                    && calls
                    && m.get("role").and_then(Value::as_str) == Some("assistant")
                    && m.get("reasoning_content").and_then(Value::as_str).is_none()
                {
                    return Err((
                        400,
                        format!(
                            "Missing `reasoning_content` field in the assistant message at message index {i}."
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "flavour_tests.rs"]
mod tests;
