//! Converse's answer types, as far as the gateway reads them: a whole
//! `ConverseResponse`, the events of a ConverseStream, usage. Unknown fields
//! (`metrics`, `trace`, the stream's `p` padding) are ignored; the content blocks
//! of a whole answer are read by hand ([`super::response`]), as Converse adds
//! kinds of blocks over time.

use serde::Deserialize;
use serde_json::Value;

use crate::Usage;

/// `ConverseResponse`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) output: Option<Output>,
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
    #[serde(default)]
    pub(super) additional_model_response_fields: Option<Value>,
    /// Set on an error body (`{"message": …}`), never on an answer.
    #[serde(default)]
    pub(super) message: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct Output {
    #[serde(default)]
    pub(super) message: Option<OutMessage>,
}

#[derive(Debug, Deserialize)]
pub(super) struct OutMessage {
    #[serde(default)]
    pub(super) content: Vec<Value>,
}

/// `TokenUsage`: `inputTokens` leaves cache reads and writes out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) output_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(super) cache_write_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Canonical counts: the input is the whole prompt, so the cached tokens
    /// Converse counts apart are added in (once: the canonical cache fields are
    /// parts of it, never added again).
    pub(super) fn to_canonical(self) -> Usage {
        let (read, write) = (self.cache_read_input_tokens, self.cache_write_input_tokens);
        Usage::with_cache_apart(self.input_tokens, read, write, self.output_tokens)
    }
}

/// `ToolUseBlock` of a whole answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolUse {
    pub(super) tool_use_id: String,
    pub(super) name: String,
    #[serde(default)]
    pub(super) input: Value,
}

/// `ReasoningContentBlock`: signed text, or redacted (base64 bytes).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Reasoning {
    #[serde(default)]
    pub(super) reasoning_text: Option<ReasoningText>,
    #[serde(default)]
    pub(super) redacted_content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ReasoningText {
    #[serde(default)]
    pub(super) text: String,
    #[serde(default)]
    pub(super) signature: Option<String>,
}

/// `CitationsContentBlock`: generated text with its sources (only the text is kept).
#[derive(Debug, Deserialize)]
pub(super) struct Citations {
    #[serde(default)]
    pub(super) content: Vec<CitationText>,
}

#[derive(Debug, Deserialize)]
pub(super) struct CitationText {
    #[serde(default)]
    pub(super) text: Option<String>,
}

/// `contentBlockStart`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlockStart {
    #[serde(default)]
    pub(super) content_block_index: u64,
    #[serde(default)]
    pub(super) start: Option<StartKind>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StartKind {
    #[serde(default)]
    pub(super) tool_use: Option<StartToolUse>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StartToolUse {
    pub(super) tool_use_id: String,
    pub(super) name: String,
}

/// `contentBlockDelta`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlockDelta {
    #[serde(default)]
    pub(super) content_block_index: u64,
    #[serde(default)]
    pub(super) delta: DeltaKind,
}

/// `ContentBlockDelta`: a union, one member set (`citation` and others ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct DeltaKind {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) tool_use: Option<ToolUseDelta>,
    #[serde(default)]
    pub(super) reasoning_content: Option<ReasoningDelta>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ToolUseDelta {
    #[serde(default)]
    pub(super) input: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ReasoningDelta {
    #[serde(default)]
    pub(super) text: Option<String>,
    #[serde(default)]
    pub(super) signature: Option<String>,
    #[serde(default)]
    pub(super) redacted_content: Option<String>,
}

/// `contentBlockStop`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct BlockStop {
    #[serde(default)]
    pub(super) content_block_index: u64,
}

/// `messageStop`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MessageStop {
    #[serde(default)]
    pub(super) stop_reason: Option<String>,
    #[serde(default)]
    pub(super) additional_model_response_fields: Option<Value>,
}

/// `metadata`: the usage (and metrics, not read).
#[derive(Debug, Deserialize)]
pub(super) struct Metadata {
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

/// An exception's payload: `{"message"}`; a `modelStreamErrorException` also
/// carries the model's own status and message.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WireException {
    #[serde(default, alias = "Message")]
    pub(super) message: Option<String>,
    #[serde(default)]
    pub(super) original_message: Option<String>,
}
