//! What this folder writes to an OpenAI client: a completion and its stream's
//! chunks as borrowing structs, serialized straight into the output buffer
//! (no `Value` tree built, filled and dropped per chunk). Fields are in the
//! order OpenAI writes them.

use std::borrow::Cow;

use serde::Serialize;

use crate::{Part, Response, StopReason, ToolCall, Usage};

/// A whole chat completion (`object: chat.completion`).
#[derive(Serialize)]
pub struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [CompletionChoice<'a>; 1],
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<UsageOut>,
}

#[derive(Serialize)]
struct CompletionChoice<'a> {
    index: u32,
    message: MessageOut<'a>,
    finish_reason: &'static str,
    logprobs: Option<()>,
}

#[derive(Serialize)]
struct MessageOut<'a> {
    role: &'static str,
    /// `null` when the answer is only tool calls.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CallOut<'a>>,
}

/// A whole tool call, in an answer or in a request's assistant turn.
#[derive(Serialize)]
pub(super) struct CallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: FunctionOut<'a>,
}

#[derive(Serialize)]
struct FunctionOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

impl<'a> CallOut<'a> {
    pub(super) fn of(call: &'a ToolCall) -> Self {
        CallOut {
            id: &call.id,
            kind: "function",
            function: FunctionOut { name: &call.name, arguments: &call.arguments },
        }
    }
}

/// Usage as OpenAI reports it.
#[derive(Serialize)]
pub(super) struct UsageOut {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(skip_serializing_if = "Option::is_none")]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u64,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u64,
}

impl UsageOut {
    pub(super) fn of(u: &Usage) -> Self {
        let input = u.input_tokens.unwrap_or(0);
        let output = u.output_tokens.unwrap_or(0);
        UsageOut {
            prompt_tokens: input,
            completion_tokens: output,
            total_tokens: input + output,
            prompt_tokens_details: u
                .cache_read_tokens
                .map(|cached_tokens| PromptDetails { cached_tokens }),
            completion_tokens_details: u
                .reasoning_tokens
                .map(|reasoning_tokens| CompletionDetails { reasoning_tokens }),
        }
    }
}

/// Text parts joined: borrowed when there is one.
fn joined<'a>(parts: impl Iterator<Item = &'a str>) -> Option<Cow<'a, str>> {
    let mut out: Option<Cow<'a, str>> = None;
    for text in parts {
        match &mut out {
            None => out = Some(Cow::Borrowed(text)),
            Some(acc) => acc.to_mut().push_str(text),
        }
    }
    out
}

impl<'a> Completion<'a> {
    pub(super) fn of(resp: &'a Response, created: u64) -> Self {
        let text = joined(resp.content.iter().filter_map(|p| match p {
            Part::Text(t) => Some(t.text.as_str()),
            _ => None,
        }));
        let reasoning = joined(resp.content.iter().filter_map(|p| match p {
            Part::Thinking { text, .. } => Some(text.as_str()),
            _ => None,
        }))
        .filter(|r| !r.is_empty());
        let tool_calls: Vec<CallOut<'a>> = resp
            .content
            .iter()
            .filter_map(|p| match p {
                Part::ToolCall(c) => Some(CallOut::of(c)),
                _ => None,
            })
            .collect();
        let content = match text {
            Some(t) if !t.is_empty() => Some(t),
            _ if !tool_calls.is_empty() => None,
            _ => Some(Cow::Borrowed("")),
        };
        Completion {
            id: &resp.id,
            object: "chat.completion",
            created,
            model: &resp.model,
            choices: [CompletionChoice {
                index: 0,
                message: MessageOut {
                    role: "assistant",
                    content,
                    reasoning_content: reasoning,
                    tool_calls,
                },
                finish_reason: resp.stop_reason.unwrap_or(StopReason::EndTurn).to_openai(),
                logprobs: None,
            }],
            usage: (!resp.usage.is_empty()).then(|| UsageOut::of(&resp.usage)),
        }
    }
}

/// One stream chunk (`object: chat.completion.chunk`): a delta, or (`choices:
/// []`) the usage.
#[derive(Serialize)]
pub(super) struct Chunk<'a> {
    pub id: &'a str,
    pub object: &'static str,
    pub created: u64,
    pub model: &'a str,
    pub choices: &'a [ChunkChoice<'a>],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageOut>,
}

#[derive(Serialize)]
pub(super) struct ChunkChoice<'a> {
    pub index: u32,
    pub delta: ChunkDelta<'a>,
    pub finish_reason: Option<&'static str>,
    pub logprobs: Option<()>,
}

/// A chunk's delta: only the fields it carries are written (`{}` for none).
#[derive(Serialize, Default)]
pub(super) struct ChunkDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<[CallDelta<'a>; 1]>,
}

/// A tool call's piece: its start (id, type, name) or more of its arguments.
#[derive(Serialize)]
pub(super) struct CallDelta<'a> {
    pub index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a str>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    pub function: FunctionDelta<'a>,
}

#[derive(Serialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub arguments: &'a str,
}
