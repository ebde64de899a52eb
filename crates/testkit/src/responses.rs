//! The OpenAI fake's Responses API (`POST /v1/responses`, `/responses`): what it
//! refuses ([`check`]) and what it answers ([`complete`], [`sse_frames`]), written
//! by hand like the rest of this crate.
//!
//! It is a route of [`crate::Vendor::OpenAi`], not a vendor of its own: it is
//! OpenAI's API (same host, key and error shape), and a new `Vendor` would need an
//! arm in every test that matches on one.
//!
//! Reasoning: an answer carries a reasoning item only when the request asks for
//! it encrypted (`include: ["reasoning.encrypted_content"]`), as OpenAI's does
//! without stored state. Its `encrypted_content` is the fake's own token
//! ([`encrypted_reasoning`]: the summary and an HMAC over it), and a reasoning
//! item given back is accepted only with a token that verifies, so a gateway that
//! hands this upstream another provider's reasoning (or its own sealed token)
//! gets the 400 OpenAI would answer.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::canned::{
    CANNED_INPUT_TOKENS, CANNED_OUTPUT_TOKENS, CREATED, ECHO_PREFIX, split_deltas,
};
use crate::script::ReplyBody;

/// The response id of every answer.
pub const RESPONSE_ID: &str = "resp_fake0001";
/// The id of an answer's message item.
pub const MESSAGE_ID: &str = "msg_fake0001";
/// The id of an answer's reasoning item.
pub const REASONING_ID: &str = "rs_fake0001";
/// The id of an answer's `function_call` item.
pub const CALL_ITEM_ID: &str = "fc_fake0001";
/// The `call_id` of an answer's function call.
pub const CALL_ID: &str = "call_fake0001";
/// `input_tokens_details.cached_tokens` of every answer.
pub const CACHED_TOKENS: u64 = 4;
/// `output_tokens_details.reasoning_tokens` of an answer that reasons.
pub const REASONING_TOKENS: u64 = 3;
/// The `include` value that asks for reasoning to come back encrypted.
pub const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// What the fake's tokens are signed with (a test fake's, not a secret).
const KEY: &[u8] = b"switchyard-testkit-responses-reasoning";
/// How OpenAI's tokens begin (Fernet), so a token looks like one.
const TOKEN_PREFIX: &str = "gAAAAB";

/// The request fields the Responses API defines.
const FIELDS: [&str; 28] = [
    "background",
    "conversation",
    "include",
    "input",
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "model",
    "parallel_tool_calls",
    "previous_response_id",
    "prompt",
    "prompt_cache_key",
    "prompt_cache_retention",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "text",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "truncation",
    "user",
];

const INCLUDES: [&str; 7] = [
    "code_interpreter_call.outputs",
    "computer_call_output.output.image_url",
    "file_search_call.results",
    "message.input_image.image_url",
    "message.output_text.logprobs",
    ENCRYPTED_REASONING,
    "web_search_call.action.sources",
];

fn mac(data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: this cannot fail.
    let Ok(mut m) = Hmac::<Sha256>::new_from_slice(KEY) else { return Vec::new() };
    m.update(data);
    m.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// What this fake's compaction items carry, after [`TOKEN_PREFIX`].
const COMPACTION_MARK: &str = "compaction:";

/// The fake's compaction item's `encrypted_content` for a summary (as its
/// reasoning's, marked as a compaction).
pub fn encrypted_compaction(summary: &str) -> String {
    encrypted_reasoning(&format!("{COMPACTION_MARK}{summary}"))
}

/// The summary a compaction token of this fake carries; `None` for any other.
pub fn open_compaction(token: &str) -> Option<String> {
    open_reasoning(token)?.strip_prefix(COMPACTION_MARK).map(str::to_owned)
}

/// The fake's encrypted reasoning for a summary: the summary and its HMAC, hex.
pub fn encrypted_reasoning(summary: &str) -> String {
    format!("{TOKEN_PREFIX}{}.{}", hex(summary.as_bytes()), hex(&mac(summary.as_bytes())))
}

/// The summary a token of this fake carries; `None` for any other token.
pub fn open_reasoning(token: &str) -> Option<String> {
    let (data, tag) = token.strip_prefix(TOKEN_PREFIX)?.split_once('.')?;
    let data = unhex(data)?;
    (unhex(tag)? == mac(&data)).then(|| String::from_utf8(data).ok()).flatten()
}

// ---------------------------------------------------------------------------
// What the API refuses

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn invalid(at: &str, value: &str, supported: &[&str]) -> String {
    format!(
        "Invalid value: '{value}'. Supported values are: '{}' at '{at}'.",
        supported.join("', '")
    )
}

/// `Err(message)`: OpenAI would refuse this Responses body with a 400 saying so.
pub fn check(body: &Value) -> Result<(), String> {
    let Some(map) = body.as_object() else { return Ok(()) };
    if let Some(unknown) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!("Unknown parameter: '{unknown}'."));
    }
    if str_at(body, "model").is_none() {
        return Err("Missing required parameter: 'model'.".into());
    }
    for (i, inc) in map.get("include").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let inc = inc.as_str().unwrap_or_default();
        if !INCLUDES.contains(&inc) {
            return Err(invalid(&format!("include[{i}]"), inc, &INCLUDES));
        }
    }
    if let Some(reasoning) = map.get("reasoning").and_then(Value::as_object) {
        if let Some(k) = reasoning
            .keys()
            .find(|k| !["effort", "summary", "generate_summary"].contains(&k.as_str()))
        {
            return Err(format!("Unknown parameter: 'reasoning.{k}'."));
        }
        let efforts = ["none", "minimal", "low", "medium", "high", "xhigh"];
        if let Some(effort) = reasoning.get("effort").and_then(Value::as_str)
            && !efforts.contains(&effort)
        {
            return Err(invalid("reasoning.effort", effort, &efforts));
        }
    }
    if let Some(format) = map.get("text").and_then(|t| t.get("format")) {
        let kinds = ["text", "json_object", "json_schema"];
        let kind = str_at(format, "type").unwrap_or_default();
        if !kinds.contains(&kind) {
            return Err(invalid("text.format.type", kind, &kinds));
        }
        if kind == "json_schema" && (format.get("name").is_none() || format.get("schema").is_none())
        {
            return Err("Missing required parameter: 'text.format.name'.".into());
        }
    }
    for (i, tool) in map.get("tools").and_then(Value::as_array).into_iter().flatten().enumerate() {
        match str_at(tool, "type") {
            Some("function") if str_at(tool, "name").is_none() => {
                return Err(format!("Missing required parameter: 'tools[{i}].name'."));
            }
            Some(
                "function"
                | "custom"
                | "namespace"
                | "web_search"
                | "web_search_preview"
                | "file_search"
                | "code_interpreter"
                | "mcp"
                | "image_generation"
                | "local_shell"
                | "shell"
                | "apply_patch"
                | "computer_use_preview"
                | "tool_search",
            ) => {}
            other => {
                return Err(invalid(
                    &format!("tools[{i}].type"),
                    other.unwrap_or_default(),
                    &["function", "custom"],
                ));
            }
        }
    }
    if map.get("previous_response_id").is_some_and(|v| !v.is_null()) {
        return Err("Previous response with id not found (nothing is stored).".into());
    }
    let stored = map.get("store").and_then(Value::as_bool).unwrap_or(true);
    match map.get("input") {
        None | Some(Value::Null | Value::String(_)) => Ok(()),
        Some(Value::Array(items)) => input(items, stored),
        Some(_) => Err("Invalid type for 'input': expected a string or an array.".into()),
    }
}

/// The input items: known types, content parts by role, every tool output
/// answering an earlier call, reasoning and compaction items only as this fake
/// encrypted them, the compaction trigger only last.
fn input(items: &[Value], stored: bool) -> Result<(), String> {
    let mut calls: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let ty =
            str_at(item, "type").unwrap_or(if item.get("role").is_some() { "message" } else { "" });
        match ty {
            "compaction_trigger" if i + 1 == items.len() => {}
            "compaction_trigger" => {
                return Err(format!("{at}: compaction_trigger must be the last input item."));
            }
            "compaction" => {
                if str_at(item, "encrypted_content").and_then(open_compaction).is_none() {
                    return Err(format!(
                        "The encrypted content for item {at} could not be verified."
                    ));
                }
            }
            "message" => message(item, &at)?,
            "function_call" | "custom_tool_call" => {
                let Some(id) = str_at(item, "call_id") else {
                    return Err(format!("Missing required parameter: '{at}.call_id'."));
                };
                let payload = if ty == "function_call" { "arguments" } else { "input" };
                if str_at(item, "name").is_none() || str_at(item, payload).is_none() {
                    return Err(format!("Missing required parameter: '{at}.{payload}'."));
                }
                calls.push(id);
            }
            "function_call_output" | "custom_tool_call_output" => {
                let id = str_at(item, "call_id").unwrap_or_default();
                if !calls.contains(&id) {
                    return Err(format!(
                        "No tool call found for function call output with call_id {id}."
                    ));
                }
            }
            "reasoning" => {
                if !item.get("summary").is_some_and(Value::is_array) {
                    return Err(format!("Missing required parameter: '{at}.summary'."));
                }
                match str_at(item, "encrypted_content") {
                    Some(token) if open_reasoning(token).is_none() => {
                        return Err(format!(
                            "The encrypted content for item {at} could not be verified."
                        ));
                    }
                    Some(_) => {}
                    // Without its token a reasoning item refers to stored state.
                    None if !stored || str_at(item, "id").is_none() => {
                        return Err(format!(
                            "Items are not persisted when `store` is set to false: {at} (reasoning) has no encrypted_content."
                        ));
                    }
                    None => {}
                }
            }
            "item_reference" => {
                return Err(format!(
                    "Item with id '{}' not found.",
                    str_at(item, "id").unwrap_or_default()
                ));
            }
            "additional_tools"
            | "local_shell_call"
            | "local_shell_call_output"
            | "web_search_call"
            | "file_search_call"
            | "mcp_call"
            | "computer_call"
            | "computer_call_output"
            | "image_generation_call"
            | "code_interpreter_call" => {}
            other => {
                return Err(invalid(
                    &format!("{at}.type"),
                    other,
                    &["message", "function_call", "function_call_output", "reasoning"],
                ));
            }
        }
    }
    Ok(())
}

fn message(item: &Value, at: &str) -> Result<(), String> {
    let role = str_at(item, "role").unwrap_or_default();
    let parts: &[&str] = match role {
        "user" | "system" | "developer" => &["input_text", "input_image", "input_file"],
        "assistant" => &["output_text", "refusal"],
        other => {
            return Err(invalid(
                &format!("{at}.role"),
                other,
                &["user", "assistant", "system", "developer"],
            ));
        }
    };
    match item.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(content)) => {
            for (j, part) in content.iter().enumerate() {
                let ty = str_at(part, "type").unwrap_or_default();
                if !parts.contains(&ty) {
                    return Err(invalid(&format!("{at}.content[{j}].type"), ty, parts));
                }
            }
            Ok(())
        }
        _ => Err(format!("Missing required parameter: '{at}.content'.")),
    }
}

/// The fields `POST /responses/input_tokens` takes.
const COUNT_FIELDS: [&str; 11] = [
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning",
    "text",
    "truncation",
    "conversation",
    "previous_response_id",
];

/// `Err(message)`: OpenAI's counting endpoint would refuse this body: a field
/// it does not take (`stream`, `store`, `include`, sampling, …), or what a
/// generation would be refused for.
pub fn check_count(body: &Value) -> Result<(), String> {
    let Some(map) = body.as_object() else { return Ok(()) };
    if let Some(unknown) = map.keys().find(|k| !COUNT_FIELDS.contains(&k.as_str())) {
        return Err(format!("Unknown parameter: '{unknown}'."));
    }
    check(body)
}

// ---------------------------------------------------------------------------
// What it answers

/// One answer: reasoning (its summary), text and a function call, each optional.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    /// The model it names.
    pub model: String,
    /// A reasoning item's summary; it carries [`encrypted_reasoning`] of it.
    pub reasoning: Option<String>,
    /// A message's text.
    pub text: Option<String>,
    /// A function call: name and arguments JSON.
    pub call: Option<(String, String)>,
    /// A compaction item's summary; it carries [`encrypted_compaction`] of it.
    pub compaction: Option<String>,
}

/// The last user text of a Responses body (`input` a string, or message items
/// with `input_text` parts).
pub fn last_user_text(body: &Value) -> Option<String> {
    match body.get("input")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => items.iter().rev().find_map(|item| {
            if str_at(item, "role") != Some("user") {
                return None;
            }
            match item.get("content")? {
                Value::String(s) => Some(s.clone()),
                Value::Array(parts) => {
                    let texts: Vec<&str> = parts
                        .iter()
                        .filter(|p| str_at(p, "type") == Some("input_text"))
                        .filter_map(|p| str_at(p, "text"))
                        .collect();
                    (!texts.is_empty()).then(|| texts.join("\n"))
                }
                _ => None,
            }
        }),
        _ => None,
    }
}

/// What the fake answers by default: the echo of the last user text (or the
/// step of the scripted tool loop, [`crate::tool_loop`]), after a reasoning item
/// when the body asks for reasoning encrypted; for a body ending in the
/// compaction trigger, one compaction item summarising it.
pub fn auto(body: &Value, model: &str) -> Turn {
    let echo = last_user_text(body).unwrap_or_default();
    let items = body.get("input").and_then(Value::as_array);
    if items.and_then(|i| i.last()).and_then(|i| str_at(i, "type")) == Some("compaction_trigger") {
        return Turn {
            model: model.to_owned(),
            compaction: Some(format!("compacted: {echo}")),
            ..Turn::default()
        };
    }
    let asks = body
        .get("include")
        .and_then(Value::as_array)
        .is_some_and(|inc| inc.iter().any(|v| v == ENCRYPTED_REASONING));
    let reasoning = asks.then(|| format!("Thinking about: {echo}"));
    // The scripted tool loop when the prompt asks for it, else the echo.
    if let Some(step) = crate::tool_loop::responses_step(body) {
        return Turn {
            model: model.to_owned(),
            reasoning,
            text: step.text,
            call: step.tool,
            compaction: None,
        };
    }
    Turn {
        model: model.to_owned(),
        reasoning,
        text: Some(format!("{ECHO_PREFIX}{echo}")),
        call: None,
        compaction: None,
    }
}

/// The reply for `turn`, whole or streamed.
pub fn reply(turn: &Turn, stream: bool) -> ReplyBody {
    if stream { ReplyBody::Sse(sse_frames(turn)) } else { ReplyBody::Json(complete(turn)) }
}

fn usage(turn: &Turn) -> Value {
    let reasoning = if turn.reasoning.is_some() { REASONING_TOKENS } else { 0 };
    json!({
        "input_tokens": CANNED_INPUT_TOKENS,
        "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
        "output_tokens": CANNED_OUTPUT_TOKENS,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": CANNED_INPUT_TOKENS + CANNED_OUTPUT_TOKENS,
    })
}

fn reasoning_item(summary: &str, done: bool) -> Value {
    let mut item = json!({"id": REASONING_ID, "type": "reasoning", "summary": []});
    if done {
        item["summary"] = json!([{"type": "summary_text", "text": summary}]);
        item["encrypted_content"] = json!(encrypted_reasoning(summary));
    }
    item
}

fn message_item(text: &str, done: bool) -> Value {
    let content = if done {
        json!([{"type": "output_text", "text": text, "annotations": [], "logprobs": []}])
    } else {
        json!([])
    };
    let status = if done { "completed" } else { "in_progress" };
    json!({"id": MESSAGE_ID, "type": "message", "status": status, "role": "assistant", "content": content})
}

fn call_item(name: &str, arguments: &str, done: bool) -> Value {
    json!({
        "id": CALL_ITEM_ID, "type": "function_call",
        "status": if done { "completed" } else { "in_progress" },
        "call_id": CALL_ID, "name": name, "arguments": if done { arguments } else { "" },
    })
}

/// The compact endpoint's answer (`response.compaction`): the input's user
/// messages as sent, then one compaction item summarising the last.
pub fn compacted(body: &Value) -> Value {
    let echo = last_user_text(body).unwrap_or_default();
    let mut output: Vec<Value> = match body.get("input") {
        Some(Value::Array(items)) => {
            items.iter().filter(|i| str_at(i, "role") == Some("user")).cloned().collect()
        }
        Some(Value::String(text)) => vec![json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]})],
        _ => Vec::new(),
    };
    output.push(compaction_item(&format!("compacted: {echo}")));
    json!({"id": "resp_fakecompact1", "object": "response.compaction", "created_at": CREATED,
        "output": output, "usage": usage(&Turn::default())})
}

/// The id of the fake's compaction item.
pub const COMPACTION_ID: &str = "cmp_fake0001";

fn compaction_item(summary: &str) -> Value {
    json!({"id": COMPACTION_ID, "type": "compaction", "encrypted_content": encrypted_compaction(summary)})
}

fn output(turn: &Turn) -> Vec<Value> {
    let mut out = Vec::new();
    out.extend(turn.compaction.as_deref().map(compaction_item));
    out.extend(turn.reasoning.as_deref().map(|s| reasoning_item(s, true)));
    out.extend(turn.text.as_deref().map(|t| message_item(t, true)));
    out.extend(turn.call.as_ref().map(|(n, a)| call_item(n, a, true)));
    out
}

fn response(turn: &Turn, status: &str, output: Vec<Value>, usage: Value) -> Value {
    let mut obj = Map::new();
    for (k, v) in [
        ("id", json!(RESPONSE_ID)),
        ("object", json!("response")),
        ("created_at", json!(CREATED)),
        ("status", json!(status)),
        ("error", Value::Null),
        ("incomplete_details", Value::Null),
        ("model", json!(turn.model)),
        ("output", Value::Array(output)),
        ("parallel_tool_calls", json!(true)),
        ("store", json!(false)),
        ("usage", usage),
    ] {
        obj.insert(k.into(), v);
    }
    Value::Object(obj)
}

/// The whole (non-streamed) response object.
pub fn complete(turn: &Turn) -> Value {
    response(turn, "completed", output(turn), usage(turn))
}

/// The streamed answer: `event: <type>` frames with a `sequence_number`, ending
/// with `response.completed` (no `[DONE]`).
pub fn sse_frames(turn: &Turn) -> Vec<String> {
    let mut events: Vec<Value> = vec![
        json!({"type": "response.created", "response": response(turn, "in_progress", vec![], Value::Null)}),
        json!({"type": "response.in_progress", "response": response(turn, "in_progress", vec![], Value::Null)}),
    ];
    let mut index = 0;
    if let Some(summary) = &turn.compaction {
        // The item whole, as the API streams a compaction.
        let item = compaction_item(summary);
        events.push(
            json!({"type": "response.output_item.added", "output_index": index, "item": item}),
        );
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
        index += 1;
    }
    if let Some(summary) = &turn.reasoning {
        let ids = json!({"item_id": REASONING_ID, "output_index": index, "summary_index": 0});
        let with = |ty: &str, extra: Value| {
            let mut e = ids.clone();
            e["type"] = json!(ty);
            if let (Some(e), Value::Object(extra)) = (e.as_object_mut(), extra) {
                e.extend(extra);
            }
            e
        };
        events.push(json!({"type": "response.output_item.added", "output_index": index, "item": reasoning_item(summary, false)}));
        events.push(with(
            "response.reasoning_summary_part.added",
            json!({"part": {"type": "summary_text", "text": ""}}),
        ));
        for delta in split_deltas(summary) {
            events.push(with("response.reasoning_summary_text.delta", json!({"delta": delta})));
        }
        events.push(with("response.reasoning_summary_text.done", json!({"text": summary})));
        events.push(with(
            "response.reasoning_summary_part.done",
            json!({"part": {"type": "summary_text", "text": summary}}),
        ));
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": reasoning_item(summary, true)}));
        index += 1;
    }
    if let Some(text) = &turn.text {
        let ids = json!({"item_id": MESSAGE_ID, "output_index": index, "content_index": 0});
        let with = |ty: &str, k: &str, v: Value| {
            let mut e = ids.clone();
            e["type"] = json!(ty);
            e[k] = v;
            e
        };
        events.push(json!({"type": "response.output_item.added", "output_index": index, "item": message_item(text, false)}));
        events.push(with(
            "response.content_part.added",
            "part",
            json!({"type": "output_text", "text": "", "annotations": []}),
        ));
        for delta in split_deltas(text) {
            events.push(with("response.output_text.delta", "delta", json!(delta)));
        }
        events.push(with("response.output_text.done", "text", json!(text)));
        events.push(with(
            "response.content_part.done",
            "part",
            json!({"type": "output_text", "text": text, "annotations": []}),
        ));
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": message_item(text, true)}));
        index += 1;
    }
    if let Some((name, arguments)) = &turn.call {
        let with = |ty: &str, k: &str, v: Value| json!({"type": ty, "item_id": CALL_ITEM_ID, "output_index": index, k: v});
        events.push(json!({"type": "response.output_item.added", "output_index": index, "item": call_item(name, arguments, false)}));
        for delta in crate::canned::split_fragments(arguments) {
            events.push(with("response.function_call_arguments.delta", "delta", json!(delta)));
        }
        events.push(with("response.function_call_arguments.done", "arguments", json!(arguments)));
        events.push(json!({"type": "response.output_item.done", "output_index": index, "item": call_item(name, arguments, true)}));
    }
    events.push(json!({"type": "response.completed", "response": complete(turn)}));
    events
        .into_iter()
        .enumerate()
        .map(|(n, mut e)| {
            e["sequence_number"] = json!(n);
            let ty = str_at(&e, "type").unwrap_or_default().to_owned();
            format!("event: {ty}\ndata: {e}\n\n")
        })
        .collect()
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
