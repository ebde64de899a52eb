//! Responses API wire types (what we read; what we write is built with `json!`):
//! request items and tools, response objects, output items, usage and errors.

use serde::Deserialize;
use serde_json::Value;

use crate::{BlockKind, ProtocolError, Usage};

use super::tools::{freeform_arguments, qualified};

/// Separator between reasoning summary parts when they are joined into one text.
pub(super) const SUMMARY_SEPARATOR: &str = "\n\n";

// ---------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------

#[derive(Deserialize)]
pub(super) struct InFunctionCall {
    pub(super) call_id: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) arguments: Value,
}

#[derive(Deserialize)]
pub(super) struct InCustomToolCall {
    pub(super) call_id: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) input: String,
}

#[derive(Deserialize)]
pub(super) struct InFunctionCallOutput {
    pub(super) call_id: String,
    #[serde(default)]
    pub(super) output: Value,
}

/// A reasoning item, in a request or a response.
#[derive(Deserialize)]
pub(super) struct WireReasoningItem {
    #[serde(default)]
    pub(super) summary: Option<Vec<TextOnly>>,
    #[serde(default)]
    pub(super) content: Option<Vec<TextOnly>>,
    #[serde(default)]
    pub(super) encrypted_content: Option<String>,
}

/// Any `{type, text}` piece where only the text matters (summary and reasoning parts).
#[derive(Deserialize)]
pub(super) struct TextOnly {
    #[serde(default)]
    pub(super) text: Option<String>,
}

/// The non-empty summary texts joined; the raw reasoning content when there is no summary.
pub(super) fn reasoning_text(item: &WireReasoningItem) -> String {
    let join = |parts: &Option<Vec<TextOnly>>| {
        parts
            .iter()
            .flatten()
            .filter_map(|p| p.text.as_deref())
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(SUMMARY_SEPARATOR)
    };
    let summary = join(&item.summary);
    if summary.is_empty() { join(&item.content) } else { summary }
}

#[derive(Deserialize)]
pub(super) struct InFunctionTool {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) parameters: Option<Value>,
    #[serde(default)]
    pub(super) strict: Option<bool>,
    /// Loaded only when the model searches for it (`tool_search`).
    #[serde(default)]
    pub(super) defer_loading: Option<bool>,
}

#[derive(Deserialize)]
pub(super) struct InCustomTool {
    pub(super) name: String,
    #[serde(default)]
    pub(super) description: Option<String>,
    #[serde(default)]
    pub(super) format: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct InNamespace {
    pub(super) name: String,
    #[serde(default)]
    pub(super) tools: Vec<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireReasoningParam {
    #[serde(default)]
    pub(super) effort: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireText {
    #[serde(default)]
    pub(super) format: Option<WireTextFormat>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireTextFormat {
    Text,
    JsonObject,
    JsonSchema {
        #[serde(default)]
        name: Option<String>,
        schema: Value,
        #[serde(default)]
        strict: Option<bool>,
        #[serde(default)]
        description: Option<String>,
    },
}

// ---------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------

#[derive(Deserialize, Default)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) status: Option<String>,
    #[serde(default)]
    pub(super) output: Option<Vec<OutItem>>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) incomplete_details: Option<WireIncomplete>,
    #[serde(default)]
    pub(super) error: Option<WireError>,
}

#[derive(Deserialize)]
pub(super) struct WireIncomplete {
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct WireError {
    #[serde(default)]
    pub(super) code: Option<Value>,
    #[serde(default)]
    pub(super) message: Option<String>,
}

impl WireError {
    pub(super) fn into_upstream(self, default_kind: &str) -> ProtocolError {
        let kind = match self.code {
            Some(Value::String(code)) => code,
            Some(Value::Null) | None => default_kind.to_owned(),
            Some(other) => other.to_string(),
        };
        ProtocolError::UpstreamError {
            kind,
            message: self.message.unwrap_or_else(|| "the upstream response failed".to_owned()),
        }
    }
}

#[derive(Deserialize, Default)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) input_tokens_details: Option<WireInputDetails>,
    #[serde(default)]
    pub(super) output_tokens_details: Option<WireOutputDetails>,
}

#[derive(Deserialize)]
pub(super) struct WireInputDetails {
    #[serde(default)]
    pub(super) cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
pub(super) struct WireOutputDetails {
    #[serde(default)]
    pub(super) reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn to_usage(&self) -> Usage {
        Usage {
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.input_tokens_details.as_ref().and_then(|d| d.cached_tokens),
            cache_write_tokens: None,
            reasoning_tokens: self.output_tokens_details.as_ref().and_then(|d| d.reasoning_tokens),
        }
    }
}

/// An output item. Types the gateway never asks for (hosted tool calls) are `Other`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum OutItem {
    Message {
        #[serde(default)]
        content: Option<Vec<OutContent>>,
    },
    FunctionCall(OutCall),
    CustomToolCall(OutCall),
    Reasoning {
        #[serde(default)]
        summary: Option<Vec<TextOnly>>,
        #[serde(default)]
        content: Option<Vec<TextOnly>>,
        /// The reasoning, encrypted (asked for with `include`): what the next
        /// turn gives back when nothing is stored.
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum OutContent {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// A `function_call` or `custom_tool_call` output item.
#[derive(Deserialize)]
pub(super) struct OutCall {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) call_id: Option<String>,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) name: Option<String>,
    /// A function call's argument JSON.
    #[serde(default)]
    pub(super) arguments: Option<String>,
    /// A custom tool call's free-form input.
    #[serde(default)]
    pub(super) input: Option<String>,
}

impl OutCall {
    /// The call's canonical id and name (qualified when it names a namespace).
    pub(super) fn id_and_name(&self) -> (String, String) {
        let name = self.name.clone().unwrap_or_default();
        let name = match &self.namespace {
            Some(ns) => qualified(ns, &name),
            None => name,
        };
        (self.call_id.clone().or_else(|| self.id.clone()).unwrap_or_default(), name)
    }

    pub(super) fn block(&self) -> BlockKind {
        let (id, name) = self.id_and_name();
        BlockKind::ToolCall { id, name }
    }

    /// The canonical arguments: a function's JSON as it is, a custom tool's input
    /// as `{"input": text}`; empty when the item carries neither.
    pub(super) fn arguments(&self) -> String {
        match (&self.arguments, &self.input) {
            (Some(json), _) => json.clone(),
            (None, Some(input)) => freeform_arguments(input),
            (None, None) => String::new(),
        }
    }
}
