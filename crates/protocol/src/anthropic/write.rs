//! What this folder writes to an Anthropic client: a message and its stream's
//! events as borrowing structs, serialized straight into the output buffer (no
//! `Value` tree built, filled and dropped per event). Fields are in the order
//! Anthropic writes them.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::{Part, Response, StopReason, Usage};

/// A stream's event; `type` is the variant's name.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Event<'a> {
    MessageStart { message: Message<'a> },
    ContentBlockStart { index: usize, content_block: Block<'a> },
    ContentBlockDelta { index: usize, delta: BlockDelta<'a> },
    ContentBlockStop { index: usize },
    MessageDelta { delta: StopDelta<'a>, usage: UsageOut },
    MessageStop,
}

impl Event<'_> {
    /// The SSE event's name: the same as `type`.
    pub(super) fn name(&self) -> &'static str {
        match self {
            Event::MessageStart { .. } => "message_start",
            Event::ContentBlockStart { .. } => "content_block_start",
            Event::ContentBlockDelta { .. } => "content_block_delta",
            Event::ContentBlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
        }
    }
}

/// A message: a whole answer, or (empty) in `message_start`.
#[derive(Serialize)]
pub struct Message<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: Vec<Block<'a>>,
    stop_reason: Option<&'static str>,
    stop_sequence: Option<&'a str>,
    usage: UsageOut,
}

impl<'a> Message<'a> {
    /// The message `message_start` opens a stream with: no content, no stop.
    pub(super) fn start(id: &'a str, model: &'a str, usage: &Usage) -> Self {
        Message {
            id,
            kind: "message",
            role: "assistant",
            model,
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: UsageOut::of(usage, true),
        }
    }

    /// A whole answer.
    pub(super) fn of(resp: &'a Response) -> Self {
        Message {
            content: resp.content.iter().filter_map(Block::of).collect(),
            stop_reason: resp.stop_reason.map(StopReason::to_anthropic),
            stop_sequence: resp.stop_sequence.as_deref(),
            ..Message::start(&resp.id, &resp.model, &resp.usage)
        }
    }
}

/// A content block, whole or (in `content_block_start`) opened empty.
#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block<'a> {
    Text {
        text: &'a str,
    },
    Thinking {
        thinking: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        signature: Option<&'a str>,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a RawValue,
    },
}

/// `{}`: a tool call's input before its arguments stream, or in place of
/// arguments that are not JSON.
fn empty_input() -> &'static RawValue {
    // `{}` always parses (`NULL` keeps the lint against `expect` content).
    serde_json::from_str("{}").unwrap_or(RawValue::NULL)
}

impl<'a> Block<'a> {
    fn of(part: &'a Part) -> Option<Self> {
        Some(match part {
            Part::Text(t) => Block::Text { text: &t.text },
            // SDKs type `signature` as a string; `""` marks thinking that has none
            // (from a non-Anthropic upstream) and is dropped if the client sends it back.
            Part::Thinking { text, signature } => Block::Thinking {
                thinking: text,
                signature: Some(signature.as_deref().unwrap_or("")),
            },
            Part::RedactedThinking { data } => Block::RedactedThinking { data },
            // `input` must be an object. Arguments that are not JSON (a model cut off
            // mid-call) cannot be rendered as one, so the client gets `{}` and its tool
            // validation reports the missing arguments.
            Part::ToolCall(call) => {
                Block::ToolUse { id: &call.id, name: &call.name, input: arguments(&call.arguments) }
            }
            Part::Image(_)
            | Part::Document(_)
            | Part::ToolResult(_)
            | Part::Untranslatable { .. }
            | Part::Compaction { .. } => return None,
        })
    }

    /// A block as `content_block_start` opens it: empty, its deltas to follow.
    pub(super) fn opened(kind: &'a crate::BlockKind) -> Option<Self> {
        use crate::BlockKind;
        Some(match kind {
            BlockKind::Text => Block::Text { text: "" },
            BlockKind::Thinking => Block::Thinking { thinking: "", signature: None },
            BlockKind::RedactedThinking { data } => Block::RedactedThinking { data },
            BlockKind::ToolCall { id, name } => Block::ToolUse { id, name, input: empty_input() },
            // Compaction is answered in the Responses API only.
            BlockKind::Compaction { .. } => return None,
        })
    }
}

/// Argument text as the JSON it holds, written as it is (empty text and text
/// that is not JSON: `{}`).
fn arguments(text: &str) -> &RawValue {
    let text = text.trim();
    if text.is_empty() {
        return empty_input();
    }
    serde_json::from_str::<&RawValue>(text).unwrap_or_else(|_| empty_input())
}

/// A `content_block_delta`'s piece; `type` is the variant's name with `_delta`.
#[derive(Serialize)]
#[serde(tag = "type")]
pub(super) enum BlockDelta<'a> {
    #[serde(rename = "text_delta")]
    Text { text: &'a str },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: &'a str },
    #[serde(rename = "signature_delta")]
    Signature { signature: &'a str },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: &'a str },
}

/// `message_delta`'s `delta`.
#[derive(Serialize)]
pub(super) struct StopDelta<'a> {
    pub stop_reason: &'static str,
    pub stop_sequence: Option<&'a str>,
}

/// Usage as Anthropic reports it. `input_tokens` and `output_tokens` are
/// required by the SDKs' types, so a full report (response, `message_start`)
/// gives `0` for an unknown count; `message_delta` (`full == false`) requires
/// only `output_tokens` and leaves out unknown input counts. Unknown cache
/// counts are always left out.
#[derive(Serialize)]
pub(super) struct UsageOut {
    #[serde(skip_serializing_if = "Option::is_none")]
    input_tokens: Option<u64>,
    output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_read_input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_creation_input_tokens: Option<u64>,
}

impl UsageOut {
    pub(super) fn of(usage: &Usage, full: bool) -> Self {
        UsageOut {
            input_tokens: usage.uncached_input().or(full.then_some(0)),
            output_tokens: usage.output_tokens.unwrap_or(0),
            cache_read_input_tokens: usage.cache_read_tokens,
            cache_creation_input_tokens: usage.cache_write_tokens,
        }
    }
}
