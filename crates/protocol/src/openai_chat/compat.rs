//! How an OpenAI-compatible server departs from OpenAI's own Chat Completions
//! ([`Compat`]), and the edits that make a body fit it: on the fast path
//! ([`compat_edits`], decided without re-encoding when [`may_edit`] says nothing
//! applies) and on a translation ([`encode_request_as`]).
//!
//! Only history is rewritten. Tool ids in an answer are the server's own, as the
//! client gets them: they fit the server already, so they go back unchanged, and
//! a client's ids from elsewhere are mapped afresh on every request
//! ([`tool_id`] is deterministic), so a call and its result still pair.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::util::top_level_value;
use crate::{FieldEdit, Part, ProtocolError, Request};

/// The field a server takes the output limit in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputField {
    /// `max_tokens`: what most compatible servers take (Mistral refuses the other).
    MaxTokens,
    /// `max_completion_tokens`: OpenAI's current name.
    MaxCompletionTokens,
}

impl OutputField {
    /// The field's name in a body.
    pub fn name(self) -> &'static str {
        match self {
            OutputField::MaxTokens => "max_tokens",
            OutputField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// The name the server does not take.
    fn other(self) -> &'static str {
        match self {
            OutputField::MaxTokens => "max_completion_tokens",
            OutputField::MaxCompletionTokens => "max_tokens",
        }
    }
}

/// What an OpenAI-compatible server takes differently. The default is OpenAI's
/// own behaviour: nothing is rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compat {
    /// The output limit's field (`None`: as the client wrote it on the fast path,
    /// `max_completion_tokens` on a translation, renamed for models that refuse
    /// `max_tokens`).
    pub output_field: Option<OutputField>,
    /// Whether it takes `stream_options` (`include_usage`). One that refuses it
    /// gets none; its usage is read wherever it sends it.
    pub stream_options: bool,
    /// The only tool-id form it takes: exactly this many ASCII letters and digits
    /// (Mistral: 9). Other ids in the history are mapped by [`tool_id`].
    pub tool_id_len: Option<usize>,
    /// The assistant-message field its reasoning goes back in on a turn that
    /// calls tools (DeepSeek's thinking mode refuses such a turn without
    /// `reasoning_content`; vLLM reads `reasoning`). `None`: reasoning is not
    /// sent back.
    pub reasoning_echo: Option<&'static str>,
}

impl Compat {
    /// OpenAI's own behaviour.
    pub const OPENAI: Compat = Compat {
        output_field: None,
        stream_options: true,
        tool_id_len: None,
        reasoning_echo: None,
    };

    /// Whether nothing is rewritten.
    pub fn is_openai(&self) -> bool {
        *self == Compat::OPENAI
    }
}

impl Default for Compat {
    fn default() -> Self {
        Compat::OPENAI
    }
}

/// The names compatible servers give reasoning on a message.
const REASONING_FIELDS: [&str; 2] = ["reasoning_content", "reasoning"];

/// Whether `id` is in the form a server taking only `len` letters and digits
/// accepts.
pub fn is_tool_id(id: &str, len: usize) -> bool {
    id.len() == len && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A tool id as a server taking exactly `len` ASCII letters and digits takes it
/// (Mistral: `^[a-zA-Z0-9]{9}$`). An id already in that form is kept (the
/// server's own, sent back); any other is replaced by base-62 digits of a hash of
/// the whole id. Deterministic, so a call and its result, mapped apart, still
/// pair; 62^9 values make two ids of one conversation meeting negligible.
pub fn tool_id(id: &str, len: usize) -> Cow<'_, str> {
    if is_tool_id(id, len) {
        return Cow::Borrowed(id);
    }
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(len);
    let mut h = 0u64;
    for i in 0..len {
        // Ten base-62 digits fit a 64-bit hash; a longer id salts a fresh one.
        if i % 10 == 0 {
            let mut salted = id.as_bytes().to_vec();
            salted.extend_from_slice(&i.to_le_bytes());
            h = crate::util::fnv1a(&salted);
        }
        let d = usize::try_from(h % 62).unwrap_or_default();
        out.push(char::from(DIGITS[d]));
        h /= 62;
    }
    Cow::Owned(out)
}

/// Whether [`compat_edits`] may edit a client's own body (`body`, parsed as `req`)
/// for a server with `compat`: the fast path edits the bytes otherwise.
pub fn may_edit(compat: &Compat, body: &[u8], req: &Request) -> bool {
    if compat.is_openai() {
        return false;
    }
    let parts = || req.messages.iter().flat_map(|m| &m.content);
    compat.output_field.is_some_and(|f| top_level_value(body, f.other()).is_some())
        || !compat.stream_options && top_level_value(body, "stream_options").is_some()
        || compat.tool_id_len.is_some_and(|len| {
            parts().any(|p| match p {
                Part::ToolCall(c) => !is_tool_id(&c.id, len),
                Part::ToolResult(r) => !is_tool_id(&r.call_id, len),
                _ => false,
            })
        })
        || compat.reasoning_echo.is_some() && parts().any(|p| matches!(p, Part::ToolCall(_)))
}

/// The edits a Chat Completions body (a client's own, or one encoded for the
/// server) needs to fit `compat`: the output limit in the field it takes,
/// `stream_options` left out where refused, tool ids mapped ([`tool_id`]), and
/// every assistant turn that calls tools carrying its reasoning in the field the
/// server reads (an empty one when the turn has none: a turn from another model,
/// or a client that kept none; DeepSeek refuses the turn without the field).
pub fn compat_edits(body: &Map<String, Value>, compat: &Compat) -> Vec<FieldEdit> {
    let mut edits = Vec::new();
    if let Some(field) = compat.output_field
        && let Some(v) = body.get(field.other())
    {
        edits.push((field.other(), None));
        if !body.contains_key(field.name()) {
            edits.push((field.name(), Some(v.clone())));
        }
    }
    if !compat.stream_options && body.contains_key("stream_options") {
        edits.push(("stream_options", None));
    }
    if let Some(messages) = body.get("messages").and_then(Value::as_array)
        && let Some(fitted) = fit_messages(messages, compat)
    {
        edits.push(("messages", Some(Value::Array(fitted))));
    }
    edits
}

/// `messages` with the changes `compat` needs; `None` when there are none.
fn fit_messages(messages: &[Value], compat: &Compat) -> Option<Vec<Value>> {
    let mut out: Option<Vec<Value>> = None;
    for (i, m) in messages.iter().enumerate() {
        if let Some(fitted) = m.as_object().and_then(|m| fit_message(m, compat)) {
            out.get_or_insert_with(|| messages.to_vec())[i] = Value::Object(fitted);
        }
    }
    out
}

fn fit_message(m: &Map<String, Value>, compat: &Compat) -> Option<Map<String, Value>> {
    let mut fitted: Option<Map<String, Value>> = None;
    let calls = m.get("tool_calls").and_then(Value::as_array).filter(|c| !c.is_empty());
    if let Some(len) = compat.tool_id_len {
        let id = |c: &Value| c.get("id").and_then(Value::as_str).map(str::to_owned);
        if let Some(calls) = calls
            && calls.iter().filter_map(id).any(|id| !is_tool_id(&id, len))
        {
            let mut calls = calls.clone();
            for call in &mut calls {
                if let Some(id) = id(call)
                    && let Some(call) = call.as_object_mut()
                {
                    call.insert("id".into(), Value::String(tool_id(&id, len).into_owned()));
                }
            }
            fitted.get_or_insert_with(|| m.clone()).insert("tool_calls".into(), calls.into());
        }
        if let Some(id) = m.get("tool_call_id").and_then(Value::as_str)
            && let Cow::Owned(mapped) = tool_id(id, len)
        {
            fitted.get_or_insert_with(|| m.clone()).insert("tool_call_id".into(), mapped.into());
        }
    }
    if let Some(field) = compat.reasoning_echo
        && calls.is_some()
        && m.get("role").and_then(Value::as_str) == Some("assistant")
        && !m.contains_key(field)
    {
        // The client's reasoning under the other name (a gateway answer names it
        // `reasoning_content`, vLLM `reasoning`), moved to the server's.
        let text = REASONING_FIELDS.iter().find_map(|f| m.get(*f).filter(|v| v.is_string()));
        let text = text.cloned().unwrap_or_else(|| Value::String(String::new()));
        let m = fitted.get_or_insert_with(|| m.clone());
        m.retain(|k, _| !REASONING_FIELDS.contains(&k.as_str()));
        m.insert(field.into(), text);
    }
    fitted
}

/// Canonical request → the body for a server with `compat`: [`super::encode_request`]'s,
/// with each tool-calling assistant turn's reasoning written back where `compat`
/// says, then [`compat_edits`] applied.
pub fn encode_request_as(req: &Request, compat: &Compat) -> Result<Value, ProtocolError> {
    let mut body = super::request::encode_with(req, compat.reasoning_echo)?;
    if let Value::Object(map) = &mut body {
        for (field, edit) in compat_edits(map, compat) {
            match edit {
                Some(v) => map.insert(field.into(), v),
                None => map.remove(field),
            };
        }
    }
    Ok(body)
}

/// The reasoning text of an assistant turn's parts, joined (empty when none).
pub(super) fn reasoning_text(content: &[Part]) -> String {
    content
        .iter()
        .filter_map(|p| match p {
            Part::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
#[path = "compat_tests.rs"]
mod tests;
