//! Canned answers in each vendor's exact wire shape, written by hand (this
//! crate deliberately does not share types with `switchyard-protocol`).
//!
//! Everything here is deterministic (fixed ids, a fixed `created` time), so a
//! test can compute the exact bytes a fake will send.
//!
//! Framing: OpenAI frames are `data: <json>\n\n` and end with
//! `data: [DONE]\n\n`; Anthropic frames are `event: <type>\ndata: <json>\n\n`;
//! Gemini frames (`?alt=sse`) are `data: <json>\r\n\r\n`, CRLF as Google sends
//! them.

use serde_json::{Map, Value, json};

use crate::Vendor;
use crate::script::ReplyBody;

/// Prompt tokens every canned answer reports (OpenAI `prompt_tokens`, Anthropic
/// `input_tokens`, Gemini `promptTokenCount`).
pub const CANNED_INPUT_TOKENS: u64 = 11;
/// Output tokens every canned answer reports (OpenAI `completion_tokens`,
/// Anthropic `output_tokens`, Gemini `candidatesTokenCount`).
pub const CANNED_OUTPUT_TOKENS: u64 = 7;
/// Anthropic only: `cache_read_input_tokens` (not included in `input_tokens`).
pub const CANNED_CACHE_READ_INPUT_TOKENS: u64 = 3;
/// Anthropic only: `cache_creation_input_tokens` (not included in `input_tokens`).
pub const CANNED_CACHE_CREATION_INPUT_TOKENS: u64 = 2;

/// OpenAI `created` (Unix seconds) of every canned answer.
pub const CREATED: u64 = 1_700_000_000;
/// OpenAI completion id.
pub const OPENAI_ID: &str = "chatcmpl-fake0001";
/// OpenAI `system_fingerprint`.
pub const OPENAI_FINGERPRINT: &str = "fp_fake0001";
/// OpenAI tool call id.
pub const OPENAI_TOOL_CALL_ID: &str = "call_fake0001";
/// Anthropic message id.
pub const ANTHROPIC_ID: &str = "msg_fake0001";
/// Anthropic `tool_use` block id.
pub const ANTHROPIC_TOOL_USE_ID: &str = "toolu_fake0001";
/// Anthropic thinking-block `signature`.
pub const ANTHROPIC_THINKING_SIGNATURE: &str = "c2lnbmF0dXJlLWZha2UtMDAwMQ==";
/// Gemini `responseId`.
pub const GEMINI_RESPONSE_ID: &str = "fake-response-0001";
/// The model name used when a request names none (or has no JSON body).
pub const DEFAULT_MODEL: &str = "fake-model";
/// What [`ReplyBody::Auto`] puts before the last user text.
pub const ECHO_PREFIX: &str = "echo: ";

/// A complete answer with `text`, finish reason `stop` / `end_turn` / `STOP`.
///
/// Not streamed: [`ReplyBody::Json`]. Streamed: [`ReplyBody::Sse`] with the
/// text split into word deltas ([`split_deltas`]); for Bedrock,
/// [`ReplyBody::Frames`] of event-stream messages (the same deltas).
pub fn text(vendor: Vendor, model: &str, text: &str, stream: bool) -> ReplyBody {
    render(
        vendor,
        &Answer { model, thinking: None, text: Some(text), tool: None, signature: None },
        stream,
    )
}

/// The model calls one tool `name` with `arguments_json` (JSON text), finish
/// reason `tool_calls` / `tool_use` / `STOP`.
///
/// OpenAI streams the arguments string in 2+ fragments ([`split_fragments`]),
/// Anthropic as `input_json_delta` fragments; Gemini sends the whole
/// `functionCall` part in one chunk. Anthropic `input` and Gemini `args` are
/// the parsed arguments (an empty object if `arguments_json` is not JSON).
pub fn tool_call(
    vendor: Vendor,
    model: &str,
    name: &str,
    arguments_json: &str,
    stream: bool,
) -> ReplyBody {
    render(
        vendor,
        &Answer {
            model,
            thinking: None,
            text: None,
            tool: Some((name, arguments_json)),
            signature: None,
        },
        stream,
    )
}

/// Reasoning, then a text answer. OpenAI-compatible: `reasoning_content` in
/// the message / deltas; Anthropic: a `thinking` block with `signature`
/// ([`ANTHROPIC_THINKING_SIGNATURE`], sent as a `signature_delta` in streams);
/// Gemini: a part with `"thought": true`.
pub fn reasoning_then_text(
    vendor: Vendor,
    model: &str,
    thinking: &str,
    text: &str,
    stream: bool,
) -> ReplyBody {
    render(
        vendor,
        &Answer { model, thinking: Some(thinking), text: Some(text), tool: None, signature: None },
        stream,
    )
}

/// Reasoning, then a call of tool `name` (an agent's tool loop with thinking on):
/// the reasoning as in [`reasoning_then_text`], the call as in [`tool_call`].
pub fn reasoning_then_tool_call(
    vendor: Vendor,
    model: &str,
    thinking: &str,
    name: &str,
    arguments_json: &str,
    stream: bool,
) -> ReplyBody {
    render(
        vendor,
        &Answer {
            model,
            thinking: Some(thinking),
            text: None,
            tool: Some((name, arguments_json)),
            signature: None,
        },
        stream,
    )
}

/// An SSE frame whose data is not valid JSON.
pub fn malformed_frame() -> String {
    "data: {not json\n\n".to_owned()
}

/// The content type of Bedrock's event streams.
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// An SSE frame as `vendor` writes it: Anthropic names the event, Gemini ends
/// lines with CRLF. Bedrock streams no SSE: its frame here is OpenAI's.
pub fn sse_frame(vendor: Vendor, event: &str, data: &str) -> String {
    match vendor {
        Vendor::OpenAi | Vendor::Bedrock => format!("data: {data}\n\n"),
        Vendor::Anthropic => format!("event: {event}\ndata: {data}\n\n"),
        Vendor::Gemini => format!("data: {data}\r\n\r\n"),
    }
}

/// What a fake's counting endpoint adds to every count ([`counted_tokens`]): no
/// estimate of the gateway's comes near it, so a test can tell them apart.
pub const COUNT_BASE: u64 = 10_000;

/// The tokens a fake's counting endpoint answers for `body` (the counting body as
/// received): [`COUNT_BASE`] plus a token per four bytes of the body as compact
/// JSON. Deterministic, so a test can compute it from what the fake received, and
/// larger for a body with more in it (tools, images).
pub fn counted_tokens(body: &Value) -> u64 {
    COUNT_BASE + (body.to_string().len() as u64).div_ceil(4)
}

/// A counting endpoint's answer for `body`: Anthropic `{"input_tokens": n}`,
/// Gemini `{"totalTokens": n}` (OpenAI Chat has no counting endpoint; the
/// Responses API's shape is given for completeness).
pub fn count_answer(vendor: Vendor, body: &Value) -> Value {
    let n = counted_tokens(body);
    match vendor {
        Vendor::OpenAi => json!({"object": "response.input_tokens", "input_tokens": n}),
        Vendor::Anthropic => json!({"input_tokens": n}),
        Vendor::Gemini => json!({"totalTokens": n}),
        Vendor::Bedrock => json!({"inputTokens": n}),
    }
}

/// The vendor's error body for `status`:
/// OpenAI `{"error":{"message","type","param","code"}}`,
/// Anthropic `{"type":"error","error":{"type","message"}}`,
/// Gemini `{"error":{"code","message","status"}}`,
/// Bedrock `{"message"}` (its type is a header, see [`crate::bedrock::error_type`]).
pub fn error_body(vendor: Vendor, status: u16, message: &str) -> Value {
    match vendor {
        Vendor::Bedrock => crate::bedrock::error_body(message),
        Vendor::OpenAi => {
            let (kind, code) = match status {
                401 => ("invalid_request_error", Value::from("invalid_api_key")),
                403 => ("permission_error", Value::Null),
                404 => ("invalid_request_error", Value::from("model_not_found")),
                429 => ("requests", Value::from("rate_limit_exceeded")),
                500..=599 => ("server_error", Value::Null),
                _ => ("invalid_request_error", Value::Null),
            };
            json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
        }
        Vendor::Anthropic => {
            let kind = match status {
                401 => "authentication_error",
                402 => "billing_error",
                403 => "permission_error",
                404 => "not_found_error",
                413 => "request_too_large",
                429 => "rate_limit_error",
                504 => "timeout_error",
                529 | 503 => "overloaded_error",
                500..=599 => "api_error",
                _ => "invalid_request_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Vendor::Gemini => {
            let status_name = match status {
                400 => "INVALID_ARGUMENT",
                401 => "UNAUTHENTICATED",
                403 => "PERMISSION_DENIED",
                404 => "NOT_FOUND",
                405 => "METHOD_NOT_ALLOWED",
                409 => "ABORTED",
                429 => "RESOURCE_EXHAUSTED",
                499 => "CANCELLED",
                501 => "UNIMPLEMENTED",
                503 => "UNAVAILABLE",
                504 => "DEADLINE_EXCEEDED",
                500..=599 => "INTERNAL",
                _ => "FAILED_PRECONDITION",
            };
            json!({"error": {"code": status, "message": message, "status": status_name}})
        }
    }
}

/// The text of the last user turn that has any, in the vendor's request shape:
/// OpenAI `messages[].content` (a string, or `text` parts), Anthropic
/// `messages[].content` (a string, or `text` blocks), Gemini
/// `contents[].parts[].text` (role `user` or no role; thought parts skipped),
/// Bedrock `messages[].content[].text`.
/// Several text parts are joined with `\n`.
pub fn last_user_text(vendor: Vendor, request: &Value) -> Option<String> {
    let (list, content_key) = match vendor {
        Vendor::OpenAi | Vendor::Anthropic => ("messages", "content"),
        Vendor::Gemini => ("contents", "parts"),
        // Blocks keyed by kind, no `type`: read apart.
        Vendor::Bedrock => return crate::bedrock::answer::last_user_text(request),
    };
    let turns = request.get(list)?.as_array()?;
    turns.iter().rev().find_map(|turn| {
        let role = turn.get("role").and_then(Value::as_str);
        let is_user = match vendor {
            Vendor::Gemini => role.is_none_or(|r| r == "user"),
            _ => role == Some("user"),
        };
        if !is_user {
            return None;
        }
        match turn.get(content_key)? {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter(|p| match vendor {
                        Vendor::Gemini => p.get("thought").and_then(Value::as_bool) != Some(true),
                        _ => p.get("type").and_then(Value::as_str) == Some("text"),
                    })
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect();
                (!texts.is_empty()).then(|| texts.join("\n"))
            }
            _ => None,
        }
    })
}

/// The text [`ReplyBody::Auto`] answers: `"echo: <last user text>"` (just
/// `"echo: "` if there is none).
pub fn echo_text(vendor: Vendor, request: &Value) -> String {
    format!("{ECHO_PREFIX}{}", last_user_text(vendor, request).unwrap_or_default())
}

/// How streamed text is split into deltas: word by word, each word keeping its
/// trailing space, so the deltas concatenate back to `text`. An empty text is
/// one empty delta.
pub fn split_deltas(text: &str) -> Vec<String> {
    let pieces: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
    if pieces.is_empty() { vec![String::new()] } else { pieces }
}

/// How streamed tool arguments are split: in up to three fragments at
/// character boundaries (two or more whenever the text has two or more
/// characters), concatenating back to `s`. An empty `s` is one empty fragment.
pub fn split_fragments(s: &str) -> Vec<String> {
    let n = s.chars().count();
    let cut = |k: usize| s.char_indices().nth(k).map_or(s.len(), |(i, _)| i);
    let (a, b) = (cut(n / 3), cut(2 * n / 3));
    let pieces: Vec<String> = [&s[..a], &s[a..b], &s[b..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    if pieces.is_empty() { vec![String::new()] } else { pieces }
}

// ---------------------------------------------------------------------------
// Rendering

/// One answer, independent of the vendor.
#[derive(Default)]
pub(crate) struct Answer<'a> {
    pub(crate) model: &'a str,
    pub(crate) thinking: Option<&'a str>,
    pub(crate) text: Option<&'a str>,
    /// (name, arguments JSON text)
    pub(crate) tool: Option<(&'a str, &'a str)>,
    /// Gemini only: the `thoughtSignature` on the `functionCall` part, as thinking
    /// models sign their calls.
    pub(crate) signature: Option<&'a str>,
}

impl Answer<'_> {
    fn tool_args(&self) -> Option<(&str, Value)> {
        self.tool.map(|(name, args)| {
            let parsed = serde_json::from_str::<Value>(args)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| Value::Object(Map::new()));
            (name, parsed)
        })
    }
}

/// One stream event: the SSE event name (used by Anthropic) and its data.
struct Event {
    name: &'static str,
    data: String,
}

impl Event {
    fn json(name: &'static str, v: Value) -> Event {
        Event { name, data: v.to_string() }
    }
}

fn render(vendor: Vendor, a: &Answer<'_>, stream: bool) -> ReplyBody {
    if stream && vendor == Vendor::Bedrock {
        ReplyBody::Frames(crate::bedrock::answer::frames(a), EVENT_STREAM)
    } else if stream {
        ReplyBody::Sse(sse_frames(vendor, a))
    } else {
        ReplyBody::Json(complete(vendor, a))
    }
}

/// The whole non-streamed response body.
pub(crate) fn complete(vendor: Vendor, a: &Answer<'_>) -> Value {
    match vendor {
        Vendor::OpenAi => openai_complete(a),
        Vendor::Anthropic => anthropic_complete(a),
        Vendor::Gemini => gemini_complete(a),
        Vendor::Bedrock => crate::bedrock::answer::complete(a),
    }
}

/// The streamed response as SSE frames (Bedrock streams binary frames, see
/// [`crate::bedrock::answer`]: OpenAI's here).
pub(crate) fn sse_frames(vendor: Vendor, a: &Answer<'_>) -> Vec<String> {
    let events = match vendor {
        Vendor::OpenAi | Vendor::Bedrock => openai_events(a),
        Vendor::Anthropic => anthropic_events(a),
        Vendor::Gemini => gemini_events(a),
    };
    events.iter().map(|e| sse_frame(vendor, e.name, &e.data)).collect()
}

/// Gemini's `streamGenerateContent` without `?alt=sse`: one JSON array,
/// written element by element (one frame each).
pub(crate) fn gemini_json_array_frames(a: &Answer<'_>) -> Vec<String> {
    json_array(gemini_events(a).into_iter().map(|e| e.data))
}

/// Gemini's JSON-array stream of `datas` (each a response's JSON), a frame
/// each: `[` before the first, `,\r\n` between, `]` after the last.
pub(crate) fn json_array(datas: impl ExactSizeIterator<Item = String>) -> Vec<String> {
    let last = datas.len().saturating_sub(1);
    datas
        .enumerate()
        .map(|(i, data)| {
            let open = if i == 0 { "[" } else { ",\r\n" };
            let close = if i == last { "]" } else { "" };
            format!("{open}{data}{close}")
        })
        .collect()
}

// --- OpenAI ----------------------------------------------------------------

fn openai_usage() -> Value {
    json!({
        "prompt_tokens": CANNED_INPUT_TOKENS,
        "completion_tokens": CANNED_OUTPUT_TOKENS,
        "total_tokens": CANNED_INPUT_TOKENS + CANNED_OUTPUT_TOKENS,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0
        }
    })
}

fn openai_finish(a: &Answer<'_>) -> &'static str {
    if a.tool.is_some() { "tool_calls" } else { "stop" }
}

fn openai_complete(a: &Answer<'_>) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert("content".into(), a.text.map_or(Value::Null, Value::from));
    if let Some(thinking) = a.thinking {
        message.insert("reasoning_content".into(), thinking.into());
    }
    if let Some((name, args)) = a.tool {
        message.insert(
            "tool_calls".into(),
            json!([{
                "id": OPENAI_TOOL_CALL_ID,
                "type": "function",
                "function": {"name": name, "arguments": args}
            }]),
        );
    }
    message.insert("refusal".into(), Value::Null);
    message.insert("annotations".into(), json!([]));
    json!({
        "id": OPENAI_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": a.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": openai_finish(a)
        }],
        "usage": openai_usage(),
        "service_tier": "default",
        "system_fingerprint": OPENAI_FINGERPRINT
    })
}

fn openai_chunk(a: &Answer<'_>, delta: Value, finish: Option<&str>) -> Event {
    Event::json(
        "",
        json!({
            "id": OPENAI_ID,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": a.model,
            "system_fingerprint": OPENAI_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
            "usage": null
        }),
    )
}

fn openai_events(a: &Answer<'_>) -> Vec<Event> {
    let mut out = Vec::new();
    let tool_header = a.tool.map(|(name, _)| {
        json!({
            "index": 0,
            "id": OPENAI_TOOL_CALL_ID,
            "type": "function",
            "function": {"name": name, "arguments": ""}
        })
    });
    let has_prose = a.thinking.is_some() || a.text.is_some();
    // The role chunk; a tool-only answer names its tool in it, as OpenAI does.
    let first = match (&tool_header, has_prose) {
        (Some(h), false) => {
            json!({"role": "assistant", "content": null, "tool_calls": [h], "refusal": null})
        }
        _ => json!({"role": "assistant", "content": "", "refusal": null}),
    };
    out.push(openai_chunk(a, first, None));
    if let Some(thinking) = a.thinking {
        for piece in split_deltas(thinking) {
            out.push(openai_chunk(a, json!({"content": null, "reasoning_content": piece}), None));
        }
    }
    if let Some(text) = a.text {
        for piece in split_deltas(text) {
            out.push(openai_chunk(a, json!({"content": piece}), None));
        }
    }
    if let Some((_, args)) = a.tool {
        if let (Some(h), true) = (&tool_header, has_prose) {
            out.push(openai_chunk(a, json!({"tool_calls": [h]}), None));
        }
        for frag in split_fragments(args) {
            out.push(openai_chunk(
                a,
                json!({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]}),
                None,
            ));
        }
    }
    out.push(openai_chunk(a, json!({}), Some(openai_finish(a))));
    out.push(Event::json(
        "",
        json!({
            "id": OPENAI_ID,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": a.model,
            "system_fingerprint": OPENAI_FINGERPRINT,
            "choices": [],
            "usage": openai_usage()
        }),
    ));
    out.push(Event { name: "", data: "[DONE]".to_owned() });
    out
}

// --- Anthropic -------------------------------------------------------------

fn anthropic_stop(a: &Answer<'_>) -> &'static str {
    if a.tool.is_some() { "tool_use" } else { "end_turn" }
}

fn anthropic_usage(output_tokens: u64) -> Value {
    json!({
        "input_tokens": CANNED_INPUT_TOKENS,
        "cache_creation_input_tokens": CANNED_CACHE_CREATION_INPUT_TOKENS,
        "cache_read_input_tokens": CANNED_CACHE_READ_INPUT_TOKENS,
        "output_tokens": output_tokens,
        "service_tier": "standard"
    })
}

fn anthropic_complete(a: &Answer<'_>) -> Value {
    let mut content = Vec::new();
    if let Some(thinking) = a.thinking {
        content.push(json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": ANTHROPIC_THINKING_SIGNATURE
        }));
    }
    if let Some(text) = a.text {
        content.push(json!({"type": "text", "text": text}));
    }
    if let Some((name, input)) = a.tool_args() {
        content.push(json!({
            "type": "tool_use",
            "id": ANTHROPIC_TOOL_USE_ID,
            "name": name,
            "input": input
        }));
    }
    json!({
        "id": ANTHROPIC_ID,
        "type": "message",
        "role": "assistant",
        "model": a.model,
        "content": content,
        "stop_reason": anthropic_stop(a),
        "stop_sequence": null,
        "usage": anthropic_usage(CANNED_OUTPUT_TOKENS)
    })
}

fn anthropic_events(a: &Answer<'_>) -> Vec<Event> {
    let mut out = vec![Event::json(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": ANTHROPIC_ID,
                "type": "message",
                "role": "assistant",
                "model": a.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": anthropic_usage(1)
            }
        }),
    )];
    let mut index = 0usize;
    let start = |index: usize, block: Value| {
        Event::json(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        )
    };
    let delta = |index: usize, delta: Value| {
        Event::json(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let stop = |index: usize| {
        Event::json("content_block_stop", json!({"type": "content_block_stop", "index": index}))
    };
    if let Some(thinking) = a.thinking {
        out.push(start(index, json!({"type": "thinking", "thinking": "", "signature": ""})));
        for piece in split_deltas(thinking) {
            out.push(delta(index, json!({"type": "thinking_delta", "thinking": piece})));
        }
        out.push(delta(
            index,
            json!({"type": "signature_delta", "signature": ANTHROPIC_THINKING_SIGNATURE}),
        ));
        out.push(stop(index));
        index += 1;
    }
    if let Some(text) = a.text {
        out.push(start(index, json!({"type": "text", "text": ""})));
        if index == 0 {
            out.push(Event::json("ping", json!({"type": "ping"})));
        }
        for piece in split_deltas(text) {
            out.push(delta(index, json!({"type": "text_delta", "text": piece})));
        }
        out.push(stop(index));
        index += 1;
    }
    if let Some((name, args)) = a.tool {
        out.push(start(
            index,
            json!({"type": "tool_use", "id": ANTHROPIC_TOOL_USE_ID, "name": name, "input": {}}),
        ));
        for frag in split_fragments(args) {
            out.push(delta(index, json!({"type": "input_json_delta", "partial_json": frag})));
        }
        out.push(stop(index));
    }
    out.push(Event::json(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": anthropic_stop(a), "stop_sequence": null},
            "usage": {"output_tokens": CANNED_OUTPUT_TOKENS}
        }),
    ));
    out.push(Event::json("message_stop", json!({"type": "message_stop"})));
    out
}

// --- Gemini ----------------------------------------------------------------

fn gemini_usage_final() -> Value {
    json!({
        "promptTokenCount": CANNED_INPUT_TOKENS,
        "candidatesTokenCount": CANNED_OUTPUT_TOKENS,
        "totalTokenCount": CANNED_INPUT_TOKENS + CANNED_OUTPUT_TOKENS,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": CANNED_INPUT_TOKENS}]
    })
}

/// What Gemini reports on chunks before the last one: the prompt only.
fn gemini_usage_partial() -> Value {
    json!({
        "promptTokenCount": CANNED_INPUT_TOKENS,
        "totalTokenCount": CANNED_INPUT_TOKENS,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": CANNED_INPUT_TOKENS}]
    })
}

fn gemini_response(a: &Answer<'_>, parts: Vec<Value>, last: bool) -> Value {
    let mut candidate = Map::new();
    candidate.insert("content".into(), json!({"parts": parts, "role": "model"}));
    if last {
        candidate.insert("finishReason".into(), "STOP".into());
    }
    candidate.insert("index".into(), 0.into());
    json!({
        "candidates": [candidate],
        "usageMetadata": if last { gemini_usage_final() } else { gemini_usage_partial() },
        "modelVersion": a.model,
        "responseId": GEMINI_RESPONSE_ID
    })
}

fn gemini_function_call(a: &Answer<'_>) -> Option<Value> {
    a.tool_args().map(|(name, args)| {
        let mut part = json!({"functionCall": {"name": name, "args": args}});
        if let Some(signature) = a.signature {
            part["thoughtSignature"] = signature.into();
        }
        part
    })
}

fn gemini_complete(a: &Answer<'_>) -> Value {
    let mut parts = Vec::new();
    if let Some(thinking) = a.thinking {
        parts.push(json!({"text": thinking, "thought": true}));
    }
    if let Some(text) = a.text {
        parts.push(json!({"text": text}));
    }
    parts.extend(gemini_function_call(a));
    gemini_response(a, parts, true)
}

fn gemini_events(a: &Answer<'_>) -> Vec<Event> {
    // One part per chunk: thought pieces, text pieces, then the whole call.
    let mut chunks: Vec<Value> = Vec::new();
    if let Some(thinking) = a.thinking {
        chunks.extend(
            split_deltas(thinking).into_iter().map(|p| json!({"text": p, "thought": true})),
        );
    }
    if let Some(text) = a.text {
        chunks.extend(split_deltas(text).into_iter().map(|p| json!({"text": p})));
    }
    chunks.extend(gemini_function_call(a));
    if chunks.is_empty() {
        chunks.push(json!({"text": ""}));
    }
    let last = chunks.len() - 1;
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, part)| Event::json("", gemini_response(a, vec![part], i == last)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a stream into (event name, data) pairs, accepting LF or CRLF.
    fn parse(frames: &[String]) -> Vec<(Option<String>, String)> {
        frames
            .iter()
            .map(|f| {
                let f = f.replace("\r\n", "\n");
                assert!(f.ends_with("\n\n"), "frame not terminated: {f:?}");
                let mut name = None;
                let mut data = None;
                for line in f.trim_end().lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = Some(n.to_owned());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = Some(d.to_owned());
                    } else {
                        panic!("unexpected line {line:?}");
                    }
                }
                (name, data.unwrap())
            })
            .collect()
    }

    fn frames(b: ReplyBody) -> Vec<String> {
        match b {
            ReplyBody::Sse(f) => f,
            other => panic!("not sse: {other:?}"),
        }
    }

    fn json_of(b: ReplyBody) -> Value {
        match b {
            ReplyBody::Json(v) => v,
            other => panic!("not json: {other:?}"),
        }
    }

    fn datas(b: ReplyBody) -> Vec<Value> {
        parse(&frames(b))
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).unwrap())
            .collect()
    }

    const ARGS: &str = r#"{"city":"Paris","days":3}"#;

    #[test]
    fn splitting_round_trips() {
        for s in ["", "a", "ab", "hello world", "é ü ö", ARGS] {
            assert_eq!(split_deltas(s).concat(), s);
            assert_eq!(split_fragments(s).concat(), s);
        }
        assert!(split_fragments(ARGS).len() >= 2);
        assert!(split_fragments("ab").len() >= 2);
        assert_eq!(split_deltas("a b c"), ["a ", "b ", "c"]);
    }

    #[test]
    fn openai_text_stream_and_whole() {
        let v = json_of(text(Vendor::OpenAi, "m", "hi there", false));
        assert_eq!(v["choices"][0]["message"]["content"], "hi there");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["usage"]["prompt_tokens"], CANNED_INPUT_TOKENS);
        assert_eq!(v["usage"]["completion_tokens"], CANNED_OUTPUT_TOKENS);

        let f = frames(text(Vendor::OpenAi, "m", "hi there you", true));
        assert_eq!(f.last().unwrap(), "data: [DONE]\n\n");
        let chunks = datas(text(Vendor::OpenAi, "m", "hi there you", true));
        let content: String =
            chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
        assert_eq!(content, "hi there you");
        let usage = chunks.last().unwrap();
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 18);
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        assert!(chunks.iter().all(|c| c["model"] == "m"));
    }

    #[test]
    fn openai_tool_call() {
        let v = json_of(tool_call(Vendor::OpenAi, "m", "weather", ARGS, false));
        let call = &v["choices"][0]["message"]["tool_calls"][0];
        assert_eq!(call["function"]["arguments"], ARGS);
        assert_eq!(call["id"], OPENAI_TOOL_CALL_ID);
        assert_eq!(v["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");

        let chunks = datas(tool_call(Vendor::OpenAi, "m", "weather", ARGS, true));
        let frags: Vec<&str> = chunks
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .filter(|a| !a.is_empty())
            .collect();
        assert!(frags.len() >= 2);
        assert_eq!(frags.concat(), ARGS);
        assert_eq!(
            chunks[0]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "weather"
        );
        assert_eq!(chunks[chunks.len() - 2]["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn openai_reasoning() {
        let v = json_of(reasoning_then_text(Vendor::OpenAi, "m", "let me think", "42", false));
        assert_eq!(v["choices"][0]["message"]["reasoning_content"], "let me think");
        assert_eq!(v["choices"][0]["message"]["content"], "42");
        let chunks = datas(reasoning_then_text(Vendor::OpenAi, "m", "let me think", "42", true));
        let r: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
            .collect();
        let t: String =
            chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
        assert_eq!((r.as_str(), t.as_str()), ("let me think", "42"));
    }

    #[test]
    fn anthropic_shapes() {
        let v = json_of(text(Vendor::Anthropic, "c", "hi", false));
        assert_eq!(v["content"][0], json!({"type": "text", "text": "hi"}));
        assert_eq!(v["stop_reason"], "end_turn");
        assert_eq!(v["usage"]["cache_read_input_tokens"], CANNED_CACHE_READ_INPUT_TOKENS);
        assert_eq!(v["usage"]["cache_creation_input_tokens"], CANNED_CACHE_CREATION_INPUT_TOKENS);

        let parsed = parse(&frames(text(Vendor::Anthropic, "c", "a b", true)));
        let names: Vec<&str> = parsed.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        for (name, data) in &parsed {
            let v: Value = serde_json::from_str(data).unwrap();
            assert_eq!(v["type"], name.as_deref().unwrap());
        }

        let v = json_of(tool_call(Vendor::Anthropic, "c", "weather", ARGS, false));
        assert_eq!(v["content"][0]["input"], json!({"city": "Paris", "days": 3}));
        assert_eq!(v["stop_reason"], "tool_use");
        let events = datas(tool_call(Vendor::Anthropic, "c", "weather", ARGS, true));
        let partial: Vec<&str> =
            events.iter().filter_map(|e| e["delta"]["partial_json"].as_str()).collect();
        assert!(partial.len() >= 2);
        assert_eq!(partial.concat(), ARGS);
        assert!(events.iter().any(|e| e["delta"]["stop_reason"] == "tool_use"));

        let v = json_of(reasoning_then_text(Vendor::Anthropic, "c", "hmm", "ok", false));
        assert_eq!(v["content"][0]["type"], "thinking");
        assert_eq!(v["content"][0]["signature"], ANTHROPIC_THINKING_SIGNATURE);
        assert_eq!(v["content"][1]["text"], "ok");
        let events = datas(reasoning_then_text(Vendor::Anthropic, "c", "hmm", "ok", true));
        assert!(events.iter().any(|e| e["delta"]["type"] == "signature_delta"
            && e["delta"]["signature"] == ANTHROPIC_THINKING_SIGNATURE));
        assert!(events.iter().any(|e| e["index"] == 1 && e["delta"]["text"] == "ok"));
    }

    #[test]
    fn gemini_shapes() {
        let v = json_of(text(Vendor::Gemini, "g", "hi", false));
        assert_eq!(v["candidates"][0]["content"]["parts"][0]["text"], "hi");
        assert_eq!(v["candidates"][0]["finishReason"], "STOP");
        assert_eq!(v["usageMetadata"]["candidatesTokenCount"], CANNED_OUTPUT_TOKENS);

        let f = frames(text(Vendor::Gemini, "g", "one two three", true));
        assert!(f.iter().all(|f| f.ends_with("\r\n\r\n")));
        let chunks = datas(text(Vendor::Gemini, "g", "one two three", true));
        assert_eq!(chunks.len(), 3);
        let t: String = chunks
            .iter()
            .filter_map(|c| c["candidates"][0]["content"]["parts"][0]["text"].as_str())
            .collect();
        assert_eq!(t, "one two three");
        let last = chunks.last().unwrap();
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 18);
        assert!(chunks[0]["candidates"][0].get("finishReason").is_none());

        let chunks = datas(tool_call(Vendor::Gemini, "g", "weather", ARGS, true));
        assert_eq!(chunks.len(), 1);
        assert_eq!(
            chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"],
            json!({"name": "weather", "args": {"city": "Paris", "days": 3}})
        );

        let v = json_of(reasoning_then_text(Vendor::Gemini, "g", "hmm", "ok", false));
        assert_eq!(
            v["candidates"][0]["content"]["parts"],
            json!([{"text": "hmm", "thought": true}, {"text": "ok"}])
        );

        let arr = gemini_json_array_frames(&Answer {
            model: "g",
            thinking: None,
            text: Some("a b"),
            ..Answer::default()
        })
        .concat();
        let v: Value = serde_json::from_str(&arr).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
    }

    #[test]
    fn last_user_text_per_vendor() {
        let oa = json!({"messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "x"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "b"}]},
            {"role": "tool", "content": "result"}
        ]});
        assert_eq!(last_user_text(Vendor::OpenAi, &oa).as_deref(), Some("a\nb"));
        let an = json!({"messages": [
            {"role": "user", "content": "question"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}
        ]});
        assert_eq!(last_user_text(Vendor::Anthropic, &an).as_deref(), Some("question"));
        let ge = json!({"contents": [{"parts": [{"text": "hey"}]}, {"role": "model", "parts": [{"text": "no"}]}]});
        assert_eq!(last_user_text(Vendor::Gemini, &ge).as_deref(), Some("hey"));
        assert_eq!(echo_text(Vendor::Gemini, &Value::Null), "echo: ");
    }

    #[test]
    fn error_shapes() {
        let v = error_body(Vendor::OpenAi, 429, "slow");
        assert_eq!(v["error"]["message"], "slow");
        assert_eq!(v["error"]["code"], "rate_limit_exceeded");
        let v = error_body(Vendor::Anthropic, 529, "busy");
        assert_eq!(v["type"], "error");
        assert_eq!(v["error"]["type"], "overloaded_error");
        let v = error_body(Vendor::Gemini, 429, "slow");
        assert_eq!(v["error"]["status"], "RESOURCE_EXHAUSTED");
        assert_eq!(v["error"]["code"], 429);
    }
}
