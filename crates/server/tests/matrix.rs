#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The translation matrix, black box: the real server in front of a fake of every
//! upstream wire (OpenAI Chat, Anthropic Messages, Gemini, Bedrock Converse; Claude,
//! Gemini and open models on Vertex AI; Azure OpenAI's two APIs; OpenAI's Responses
//! API: see `matrix/upstreams.rs`), driven through every ingress format × upstream
//! wire × {whole, stream} for each scenario (text, system, multi-turn, tools,
//! images, reasoning).
//!
//! Each case checks both sides:
//! - what the upstream received, read in *that wire's* shape (path, credential,
//!   model, streaming flags, system, turns, tools, images, reasoning config);
//! - what the client got back, read in *its format's* shape (status, gateway headers,
//!   content, stop reason, usage as that format expresses it, stream framing).
//!
//! Every case of a scenario runs (nothing stops at the first failure); the test then
//! fails with the list of every broken case and what is wrong with it.

mod common;
#[path = "matrix/converse.rs"]
mod converse;
#[path = "matrix/responses_view.rs"]
mod responses_view;
#[path = "matrix/upstreams.rs"]
mod upstreams;

use std::fmt::Debug;
use std::panic::{AssertUnwindSafe, catch_unwind};

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::{ClientFormat, Effort, Part, Response, SseEvent, StopReason};
use switchyard_testkit::canned::{
    self, ANTHROPIC_THINKING_SIGNATURE, ANTHROPIC_TOOL_USE_ID, CANNED_CACHE_CREATION_INPUT_TOKENS,
    CANNED_CACHE_READ_INPUT_TOKENS, CANNED_INPUT_TOKENS, CANNED_OUTPUT_TOKENS, ECHO_PREFIX,
    OPENAI_TOOL_CALL_ID,
};
use switchyard_testkit::responses::{self as fake_responses, Turn};
use switchyard_testkit::{Received, Reply, Vendor, azure, bedrock};
use upstreams::{Matrix, UPSTREAMS, Upstream};

const FORMATS: [ClientFormat; 3] =
    [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic];

const SYSTEM_TEXT: &str = "You are a terse assistant.";
/// A valid 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
const PNG_MEDIA: &str = "image/png";
const IMAGE_URL: &str = "https://example.com/images/cat.png";
const TOOL_NAME: &str = "get_weather";
const TOOL_DESCRIPTION: &str = "Current weather in a city";
const CALL_ID: &str = "call_1";
const HISTORY_ARGS: &str = r#"{"city":"Paris"}"#;
const ANSWER_ARGS: &str = r#"{"city":"Berlin"}"#;
const TOOL_OUTPUT: &str = "18C";
const THINKING: &str = "thinking it over";
const FINAL: &str = "final answer";
/// The thinking budget the Anthropic-format reasoning request asks for.
const ANTHROPIC_CLIENT_BUDGET: u64 = 2048;

fn weather_schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

fn data_uri() -> String {
    format!("data:{PNG_MEDIA};base64,{PNG_B64}")
}

// ---------------------------------------------------------------------------------
// Scenarios, vendors
// ---------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Text,
    System,
    MultiTurn,
    Tools,
    Images,
    Reasoning,
}

impl Scenario {
    /// The text of the (last, or only) user question.
    fn user_text(self) -> &'static str {
        match self {
            Scenario::Text => "hello world",
            Scenario::System => "hello under a system prompt",
            Scenario::MultiTurn => "second question",
            Scenario::Tools => "what is the weather in Paris?",
            Scenario::Images => "describe this image",
            Scenario::Reasoning => "is 1013 prime?",
        }
    }
}

/// The vendors' secrets (the clouds' too: [`upstreams::secrets`]): none but the one
/// of the upstream called ([`Upstream::key`]; for Bedrock the access key ID that a
/// SigV4 `authorization` header names, never the secret it signs with) may reach it.
const SECRETS: [&str; 6] =
    [GATEWAY_KEY, OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, BEDROCK_ACCESS_KEY_ID, BEDROCK_SECRET];

/// Claude's signed thinking as a wire that takes it back writes it (Anthropic's
/// `thinking` block, Converse's `reasoningContent`); `None` for a wire that takes
/// no Anthropic signature.
fn signed_thinking_block(v: Vendor, text: &str, signature: &str) -> Option<Value> {
    match v {
        Vendor::Anthropic => {
            Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
        }
        Vendor::Bedrock => Some(json!({"reasoningContent": {"reasoningText":
            {"text": text, "signature": signature}}})),
        Vendor::OpenAi | Vendor::Gemini => None,
    }
}

/// Whether a Claude wire's request turns thinking on.
fn thinking_on(v: Vendor, body: &Value) -> bool {
    match v {
        Vendor::Anthropic => body["thinking"].is_object(),
        Vendor::Bedrock => body["additionalModelRequestFields"]["thinking"].is_object(),
        Vendor::OpenAi => body["reasoning_effort"].is_string(),
        Vendor::Gemini => body["generationConfig"]["thinkingConfig"].is_object(),
    }
}

/// The id the vendor's fake gives the tool call it answers with (`None`: none, the
/// gateway mints one).
fn answer_call_id(v: Vendor) -> Option<&'static str> {
    match v {
        Vendor::OpenAi => Some(OPENAI_TOOL_CALL_ID),
        Vendor::Anthropic => Some(ANTHROPIC_TOOL_USE_ID),
        Vendor::Gemini => None,
        Vendor::Bedrock => Some(bedrock::answer::TOOL_USE_ID),
    }
}

/// Bedrock's path for the deployment's model: the id as the AWS SDKs encode it
/// (the inference profile's `:` percent-encoded), then the action.
fn bedrock_path(stream: bool) -> String {
    let action = if stream { "converse-stream" } else { "converse" };
    format!("/model/{}/{action}", BEDROCK_MODEL.replace(':', "%3A"))
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy)]
struct Case {
    s: Scenario,
    format: ClientFormat,
    upstream: Upstream,
    stream: bool,
}

/// The output ceiling a client request names (only the Anthropic format requires one,
/// and thinking needs room above its budget).
fn client_max_tokens(format: ClientFormat, s: Scenario) -> Option<u64> {
    match (format, s) {
        (ClientFormat::Anthropic, Scenario::Reasoning) => Some(8192),
        (ClientFormat::Anthropic, _) => Some(1024),
        _ => None,
    }
}

/// What the fake answers, when not its default echo.
fn scripted_reply(s: Scenario, u: Upstream, stream: bool) -> Option<Reply> {
    match s {
        Scenario::Tools => Some(answer(u, None, None, Some((TOOL_NAME, ANSWER_ARGS)), stream)),
        Scenario::Reasoning => Some(answer(u, Some(THINKING), Some(FINAL), None, stream)),
        _ => None,
    }
}

/// An answer of `u`'s model in its wire's shape: thinking, then text or a call of
/// a tool (name, arguments JSON).
fn answer(
    u: Upstream,
    thinking: Option<&str>,
    text: Option<&str>,
    call: Option<(&str, &str)>,
    stream: bool,
) -> Reply {
    let model = u.upstream_model();
    if u.speaks_responses() {
        let turn = Turn {
            model: model.to_owned(),
            reasoning: thinking.map(str::to_owned),
            text: text.map(str::to_owned),
            call: call.map(|(n, a)| (n.to_owned(), a.to_owned())),
            compaction: None,
        };
        return fake_responses::reply(&turn, stream).into();
    }
    let v = u.family();
    let body = match (thinking, text, call) {
        (None, None, Some((name, args))) => canned::tool_call(v, model, name, args, stream),
        (Some(thinking), None, Some((name, args))) => {
            canned::reasoning_then_tool_call(v, model, thinking, name, args, stream)
        }
        (Some(thinking), Some(text), None) => {
            canned::reasoning_then_text(v, model, thinking, text, stream)
        }
        (None, Some(text), None) => canned::text(v, model, text, stream),
        other => unreachable!("no canned answer for {other:?}"),
    };
    // Azure's answers carry its content filter's results, as its fake's echo does.
    let azure = matches!(u, Upstream::Azure | Upstream::AzureV1);
    if azure { azure::dress(body) } else { body }.into()
}

// ---------------------------------------------------------------------------------
// Client requests, written by hand in each format's own JSON
// ---------------------------------------------------------------------------------

fn client_request(format: ClientFormat, s: Scenario, model: &str, stream: bool) -> Value {
    let mut body = match format {
        ClientFormat::OpenAiChat => chat_request(s, stream),
        ClientFormat::OpenAiResponses => responses_request(s),
        ClientFormat::Anthropic => anthropic_request(s, stream),
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    };
    body["model"] = json!(model);
    if stream {
        body["stream"] = json!(true);
        // The matrix reads a Chat stream's usage from its usage chunk, which OpenAI
        // sends only when asked (`chat_usage_chunk_only_when_asked` covers the rest).
        if format == ClientFormat::OpenAiChat {
            body["stream_options"] = json!({"include_usage": true});
        }
    }
    body
}

fn chat_request(s: Scenario, stream: bool) -> Value {
    let user = |content: Value| json!({"role": "user", "content": content});
    match s {
        Scenario::Text => json!({"messages": [user(json!(s.user_text()))]}),
        // Both OpenAI names for the instructions role.
        Scenario::System => json!({"messages": [
            {"role": if stream { "developer" } else { "system" }, "content": SYSTEM_TEXT},
            user(json!(s.user_text())),
        ]}),
        Scenario::MultiTurn => json!({"messages": [
            user(json!("first question")),
            {"role": "assistant", "content": "first answer"},
            user(json!(s.user_text())),
        ]}),
        Scenario::Tools => json!({
            "tools": [{"type": "function", "function": {
                "name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": weather_schema()
            }}],
            "messages": [
                user(json!(s.user_text())),
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": CALL_ID, "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": HISTORY_ARGS}
                }]},
                {"role": "tool", "tool_call_id": CALL_ID, "content": TOOL_OUTPUT},
            ]
        }),
        Scenario::Images => json!({"messages": [user(json!([
            {"type": "text", "text": s.user_text()},
            {"type": "image_url", "image_url": {"url": data_uri()}},
        ]))]}),
        Scenario::Reasoning => {
            json!({"reasoning_effort": "high", "messages": [user(json!(s.user_text()))]})
        }
    }
}

fn responses_request(s: Scenario) -> Value {
    match s {
        Scenario::Text => json!({"input": s.user_text()}),
        Scenario::System => json!({
            "instructions": SYSTEM_TEXT,
            "input": [{"role": "user", "content": s.user_text()}]
        }),
        Scenario::MultiTurn => json!({"input": [
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "first question"}]},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "first answer"}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": s.user_text()}]},
        ]}),
        Scenario::Tools => json!({
            "tools": [{"type": "function", "name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                       "parameters": weather_schema()}],
            "input": [
                {"role": "user", "content": s.user_text()},
                {"type": "function_call", "call_id": CALL_ID, "name": TOOL_NAME,
                 "arguments": HISTORY_ARGS},
                {"type": "function_call_output", "call_id": CALL_ID, "output": TOOL_OUTPUT},
            ]
        }),
        Scenario::Images => json!({"input": [{"role": "user", "content": [
            {"type": "input_text", "text": s.user_text()},
            {"type": "input_image", "image_url": data_uri()},
        ]}]}),
        Scenario::Reasoning => json!({"reasoning": {"effort": "high"}, "input": s.user_text()}),
    }
}

fn anthropic_request(s: Scenario, stream: bool) -> Value {
    let user = |content: Value| json!({"role": "user", "content": content});
    let mut body = match s {
        Scenario::Text => json!({"messages": [user(json!(s.user_text()))]}),
        // Both forms of `system`: an array of blocks, and a plain string.
        Scenario::System => json!({
            "system": if stream { json!(SYSTEM_TEXT) } else { json!([{"type": "text", "text": SYSTEM_TEXT}]) },
            "messages": [user(json!(s.user_text()))]
        }),
        Scenario::MultiTurn => json!({"messages": [
            user(json!("first question")),
            {"role": "assistant", "content": "first answer"},
            user(json!(s.user_text())),
        ]}),
        Scenario::Tools => json!({
            "tools": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                       "input_schema": weather_schema()}],
            "messages": [
                user(json!(s.user_text())),
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": CALL_ID, "name": TOOL_NAME,
                     "input": serde_json::from_str::<Value>(HISTORY_ARGS).unwrap()}
                ]},
                user(json!([{"type": "tool_result", "tool_use_id": CALL_ID, "content": TOOL_OUTPUT}])),
            ]
        }),
        Scenario::Images => json!({"messages": [user(json!([
            {"type": "text", "text": s.user_text()},
            {"type": "image", "source": {"type": "base64", "media_type": PNG_MEDIA, "data": PNG_B64}},
        ]))]}),
        Scenario::Reasoning => json!({
            "thinking": {"type": "enabled", "budget_tokens": ANTHROPIC_CLIENT_BUDGET},
            "messages": [user(json!(s.user_text()))]
        }),
    };
    body["max_tokens"] = json!(client_max_tokens(ClientFormat::Anthropic, s));
    body
}

// ---------------------------------------------------------------------------------
// Problems of one case
// ---------------------------------------------------------------------------------

#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    fn eq<A: PartialEq<B> + Debug, B: Debug>(&mut self, what: &str, got: A, want: B) {
        if got != want {
            self.0.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }

    fn push(&mut self, what: impl Into<String>) {
        self.0.push(what.into());
    }
}

/// Run every case of the matrix for one scenario; fail with all broken cases.
async fn run_matrix(s: Scenario) {
    let m = Matrix::start().await;
    let mut failures = Vec::new();
    let mut total = 0;
    for format in FORMATS {
        for upstream in UPSTREAMS {
            for stream in [false, true] {
                total += 1;
                let problems = run_case(&m, Case { s, format, upstream, stream }).await;
                if !problems.is_empty() {
                    let mode = if stream { "stream" } else { "whole" };
                    failures.push(format!(
                        "{s:?}: {format:?} client -> {upstream:?} upstream ({mode}):\n    - {}",
                        problems.join("\n    - ")
                    ));
                }
            }
        }
    }
    // Each Vertex service account's token, and the Entra app's, granted once and
    // reused until it nears its expiry: not one grant per request.
    for u in
        [Upstream::VertexClaude, Upstream::VertexGemini, Upstream::VertexOpen, Upstream::AzureV1]
    {
        let granted = u.fake(&m).tokens_granted();
        if granted != 1 {
            failures
                .push(format!("{s:?}: {u:?} granted {granted} tokens for the scenario, want 1"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total} {s:?} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

async fn run_case(m: &Matrix, case: Case) -> Vec<String> {
    let Case { s, format, upstream, stream } = case;
    let h = &m.h;
    let mut p = Problems::default();
    for f in m.fakes() {
        f.clear_received();
        f.clear_script();
    }
    let fake = upstream.fake(m);
    let before = fake.request_count();
    if let Some(reply) = scripted_reply(s, upstream, stream) {
        fake.push(reply);
    }

    let request = client_request(format, s, upstream.catalog_model(), stream);
    let resp = h.post(path(format), &request).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = match resp.bytes().await {
        Ok(b) => b.to_vec(),
        Err(e) => {
            p.push(format!("client body did not arrive whole: {e}"));
            Vec::new()
        }
    };

    // The upstream side. A 200 means the upstream was called (and its fake had
    // recorded the call before it answered); anything else may have been refused
    // before it, so do not wait for a request that never comes.
    if status == 200
        && tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1)).await.is_err()
    {
        p.push("the upstream received nothing within WAIT");
    }
    // Its calls, token grants aside (and the other API that shares a fake).
    let calls = |u: Upstream| -> Vec<Received> {
        u.fake(m).received().into_iter().filter(|rx| u.owns(rx)).collect()
    };
    for u in UPSTREAMS {
        let sent = calls(u).len();
        // Exactly one call to the catalog's upstream (none elsewhere, no retries); a
        // refused request (reported below) may have stopped before it.
        let ok = if u != upstream {
            sent == 0
        } else if status == 200 {
            sent == 1
        } else {
            sent <= 1
        };
        p.check(ok, || format!("{u:?} upstream got {sent} request(s)"));
    }
    if let Some(rx) = calls(upstream).last() {
        check_upstream(&mut p, rx, case);
    } else {
        p.push("no upstream request to inspect");
    }

    check_client(&mut p, case, status, &headers, &body);
    for f in m.fakes() {
        f.clear_script();
    }
    p.0
}

// ---------------------------------------------------------------------------------
// Upstream side: each wire read in its own shape
// ---------------------------------------------------------------------------------

/// One piece of conversation content, wire-neutral.
#[derive(Debug, Clone, PartialEq)]
enum Item {
    Text(String),
    /// `media_type` is `"url"` for an image by URL (then `data` is the URL).
    Image {
        media_type: String,
        data: String,
    },
    /// A document: `media_type` is `"url"` for one by URL and `"file_id"` for an
    /// uploaded file (then `data` is the URL or the id).
    Document {
        media_type: String,
        data: String,
    },
    /// `id` is `None` on Gemini (it has no ids for calls the gateway did not get from it).
    Call {
        id: Option<String>,
        name: String,
        args: Value,
    },
    /// `name` only on Gemini (which needs it); `id` not on Gemini.
    Result {
        id: Option<String>,
        name: Option<String>,
        output: String,
    },
    Thinking {
        text: String,
        signature: Option<String>,
    },
}

/// A tool definition: name, description, JSON schema of the arguments.
type ToolDef = (String, Option<String>, Value);

/// What an upstream request says, read in its wire's shape.
#[derive(Debug, Default)]
struct View {
    system: Vec<String>,
    /// (role, content): `user`, `assistant`, `tool` (OpenAI tool messages) or `system`
    /// (a system message after the conversation started).
    turns: Vec<(String, Vec<Item>)>,
    tools: Vec<ToolDef>,
    /// Shape errors met while reading.
    problems: Vec<String>,
}

fn str_of(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn text_parts(
    content: &Value,
    part_type: &str,
    problems: &mut Vec<String>,
    at: &str,
) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| {
                if p["type"] == part_type {
                    str_of(&p["text"])
                } else {
                    problems.push(format!("{at}: unexpected part {p}"));
                    None
                }
            })
            .collect(),
        other => {
            problems.push(format!("{at}: content is {other}"));
            Vec::new()
        }
    }
}

fn parse_args(text: &Value, problems: &mut Vec<String>, at: &str) -> Value {
    match text.as_str().map(serde_json::from_str::<Value>) {
        Some(Ok(v)) => v,
        _ => {
            problems.push(format!("{at}: arguments are not JSON text: {text}"));
            Value::Null
        }
    }
}

fn openai_view(body: &Value) -> View {
    let mut view = View::default();
    let p = &mut view.problems;
    let mut started = false;
    for (i, m) in body["messages"].as_array().into_iter().flatten().enumerate() {
        let at = format!("messages[{i}]");
        let role = m["role"].as_str().unwrap_or("(none)");
        let mut items = Vec::new();
        match role {
            "system" | "developer" if !started => {
                view.system.extend(text_parts(&m["content"], "text", p, &at));
                continue;
            }
            "system" | "developer" => {
                items.extend(text_parts(&m["content"], "text", p, &at).into_iter().map(Item::Text));
            }
            "user" => match &m["content"] {
                Value::String(s) => items.push(Item::Text(s.clone())),
                Value::Array(parts) => {
                    for part in parts {
                        match part["type"].as_str() {
                            Some("text") => {
                                items.push(Item::Text(str_of(&part["text"]).unwrap_or_default()))
                            }
                            Some("image_url") => {
                                items.push(openai_image(&part["image_url"]["url"]))
                            }
                            Some("file") => items.push(openai_file(&part["file"])),
                            _ => p.push(format!("{at}: unexpected part {part}")),
                        }
                    }
                }
                other => p.push(format!("{at}: content is {other}")),
            },
            "assistant" => {
                if let Some(r) = m["reasoning_content"].as_str() {
                    items.push(Item::Thinking { text: r.to_owned(), signature: None });
                }
                if !matches!(&m["content"], Value::Null) && m["content"] != "" {
                    items.extend(
                        text_parts(&m["content"], "text", p, &at).into_iter().map(Item::Text),
                    );
                }
                for (j, c) in m["tool_calls"].as_array().into_iter().flatten().enumerate() {
                    if c["type"] != "function" {
                        p.push(format!("{at}.tool_calls[{j}].type is {}", c["type"]));
                    }
                    items.push(Item::Call {
                        id: str_of(&c["id"]),
                        name: str_of(&c["function"]["name"]).unwrap_or_default(),
                        args: parse_args(&c["function"]["arguments"], p, &at),
                    });
                }
            }
            "tool" => {
                // Text, and (sent as is by the fast path) any image parts after it.
                let mut output = String::new();
                let mut images = Vec::new();
                match &m["content"] {
                    Value::String(s) => output.push_str(s),
                    Value::Array(parts) => {
                        for part in parts {
                            match part["type"].as_str() {
                                Some("text") => {
                                    output.push_str(part["text"].as_str().unwrap_or_default())
                                }
                                Some("image_url") => {
                                    images.push(openai_image(&part["image_url"]["url"]))
                                }
                                _ => p.push(format!("{at}: unexpected part {part}")),
                            }
                        }
                    }
                    other => p.push(format!("{at}: content is {other}")),
                }
                items.push(Item::Result { id: str_of(&m["tool_call_id"]), name: None, output });
                items.extend(images);
            }
            other => p.push(format!("{at}: unknown role {other:?}")),
        }
        started = true;
        view.turns.push((role.to_owned(), items));
    }
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if t["type"] != "function" {
            view.problems.push(format!("tools[{i}].type is {}", t["type"]));
        }
        let f = &t["function"];
        view.tools.push((
            str_of(&f["name"]).unwrap_or_default(),
            str_of(&f["description"]),
            f["parameters"].clone(),
        ));
    }
    view
}

fn openai_image(url: &Value) -> Item {
    let url = url.as_str().unwrap_or_default();
    if let Some((meta, data)) = url.strip_prefix("data:").and_then(|r| r.split_once(','))
        && let Some(media_type) = meta.strip_suffix(";base64")
    {
        return Item::Image { media_type: media_type.to_owned(), data: data.to_owned() };
    }
    Item::Image { media_type: "url".into(), data: url.to_owned() }
}

/// A Chat `file` part's file: `file_data` as a `data:` URI, or an uploaded file's id.
fn openai_file(file: &Value) -> Item {
    if let Some(id) = file["file_id"].as_str() {
        return Item::Document { media_type: "file_id".into(), data: id.to_owned() };
    }
    match openai_image(&file["file_data"]) {
        Item::Image { media_type, data } => Item::Document { media_type, data },
        other => other,
    }
}

fn anthropic_view(body: &Value) -> View {
    let mut view = View::default();
    let p = &mut view.problems;
    match &body["system"] {
        Value::Null => {}
        system => view.system = text_parts(system, "text", p, "system"),
    }
    for (i, m) in body["messages"].as_array().into_iter().flatten().enumerate() {
        let at = format!("messages[{i}]");
        let role = m["role"].as_str().unwrap_or("(none)");
        if role != "user" && role != "assistant" {
            p.push(format!("{at}: role {role:?}"));
        }
        let mut items = Vec::new();
        match &m["content"] {
            Value::String(s) => items.push(Item::Text(s.clone())),
            Value::Array(blocks) => {
                for b in blocks {
                    anthropic_block(b, &mut items, p, &at);
                }
            }
            other => p.push(format!("{at}: content is {other}")),
        }
        view.turns.push((role.to_owned(), items));
    }
    for t in body["tools"].as_array().into_iter().flatten() {
        view.tools.push((
            str_of(&t["name"]).unwrap_or_default(),
            str_of(&t["description"]),
            t["input_schema"].clone(),
        ));
    }
    view
}

fn anthropic_image(source: &Value) -> Item {
    match source["type"].as_str() {
        Some("base64") => Item::Image {
            media_type: str_of(&source["media_type"]).unwrap_or_default(),
            data: str_of(&source["data"]).unwrap_or_default(),
        },
        _ => Item::Image {
            media_type: "url".into(),
            data: str_of(&source["url"]).unwrap_or_default(),
        },
    }
}

fn anthropic_document(source: &Value) -> Item {
    match source["type"].as_str() {
        Some("file") => Item::Document {
            media_type: "file_id".into(),
            data: str_of(&source["file_id"]).unwrap_or_default(),
        },
        _ => match anthropic_image(source) {
            Item::Image { media_type, data } => Item::Document { media_type, data },
            other => other,
        },
    }
}

fn anthropic_block(b: &Value, items: &mut Vec<Item>, p: &mut Vec<String>, at: &str) {
    match b["type"].as_str() {
        Some("text") => items.push(Item::Text(str_of(&b["text"]).unwrap_or_default())),
        Some("image") => items.push(anthropic_image(&b["source"])),
        Some("document") => items.push(anthropic_document(&b["source"])),
        Some("tool_use") => {
            if !b["input"].is_object() {
                p.push(format!("{at}: tool_use input is not an object: {}", b["input"]));
            }
            items.push(Item::Call {
                id: str_of(&b["id"]),
                name: str_of(&b["name"]).unwrap_or_default(),
                args: b["input"].clone(),
            });
        }
        Some("tool_result") => {
            let mut output = String::new();
            let mut images = Vec::new();
            match &b["content"] {
                Value::String(s) => output.push_str(s),
                Value::Array(inner) => {
                    for c in inner {
                        match c["type"].as_str() {
                            Some("text") => output.push_str(c["text"].as_str().unwrap_or_default()),
                            Some("image") => images.push(anthropic_image(&c["source"])),
                            Some("document") => images.push(anthropic_document(&c["source"])),
                            _ => p.push(format!("{at}: tool_result part {c}")),
                        }
                    }
                }
                Value::Null => {}
                other => p.push(format!("{at}: tool_result content {other}")),
            }
            items.push(Item::Result { id: str_of(&b["tool_use_id"]), name: None, output });
            items.extend(images);
        }
        Some("thinking") => items.push(Item::Thinking {
            text: str_of(&b["thinking"]).unwrap_or_default(),
            signature: str_of(&b["signature"]),
        }),
        _ => p.push(format!("{at}: unexpected block {b}")),
    }
}

fn gemini_view(body: &Value) -> View {
    let mut view = View::default();
    let p = &mut view.problems;
    for part in body["systemInstruction"]["parts"].as_array().into_iter().flatten() {
        match part["text"].as_str() {
            Some(t) => view.system.push(t.to_owned()),
            None => p.push(format!("systemInstruction: non-text part {part}")),
        }
    }
    for (i, c) in body["contents"].as_array().into_iter().flatten().enumerate() {
        let at = format!("contents[{i}]");
        let role = match c["role"].as_str() {
            None | Some("user") => "user",
            Some("model") => "assistant",
            Some(other) => {
                p.push(format!("{at}: role {other:?}"));
                other
            }
        };
        let mut items = Vec::new();
        for part in c["parts"].as_array().into_iter().flatten() {
            if let Some(t) = part["text"].as_str() {
                if part["thought"] == true {
                    items.push(Item::Thinking { text: t.to_owned(), signature: None });
                } else {
                    items.push(Item::Text(t.to_owned()));
                }
            } else if part["inlineData"].is_object() {
                let media_type = str_of(&part["inlineData"]["mimeType"]).unwrap_or_default();
                let data = str_of(&part["inlineData"]["data"]).unwrap_or_default();
                items.push(if media_type.starts_with("image/") {
                    Item::Image { media_type, data }
                } else {
                    Item::Document { media_type, data }
                });
            } else if part["fileData"].is_object() {
                let data = str_of(&part["fileData"]["fileUri"]).unwrap_or_default();
                let image =
                    part["fileData"]["mimeType"].as_str().is_none_or(|m| m.starts_with("image/"));
                items.push(if image {
                    Item::Image { media_type: "url".into(), data }
                } else {
                    Item::Document { media_type: "url".into(), data }
                });
            } else if part["functionCall"].is_object() {
                let call = &part["functionCall"];
                items.push(Item::Call {
                    id: None,
                    name: str_of(&call["name"]).unwrap_or_default(),
                    args: call["args"].clone(),
                });
            } else if part["functionResponse"].is_object() {
                let r = &part["functionResponse"];
                items.push(Item::Result {
                    id: None,
                    name: str_of(&r["name"]),
                    output: gemini_response_text(&r["response"]),
                });
            } else {
                p.push(format!("{at}: unexpected part {part}"));
            }
        }
        view.turns.push((role.to_owned(), items));
    }
    for t in body["tools"].as_array().into_iter().flatten() {
        for d in t["functionDeclarations"].as_array().into_iter().flatten() {
            let schema = if d["parametersJsonSchema"].is_null() {
                d["parameters"].clone()
            } else {
                d["parametersJsonSchema"].clone()
            };
            view.tools.push((
                str_of(&d["name"]).unwrap_or_default(),
                str_of(&d["description"]),
                schema,
            ));
        }
    }
    view
}

/// The text of a `functionResponse.response`: its only string field (whatever the
/// key), else the JSON.
fn gemini_response_text(response: &Value) -> String {
    match response {
        Value::String(s) => s.clone(),
        Value::Object(map) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => s.clone(),
            _ => response.to_string(),
        },
        other => other.to_string(),
    }
}

fn view_of(vendor: Vendor, body: &Value) -> View {
    match vendor {
        Vendor::OpenAi => openai_view(body),
        Vendor::Anthropic => anthropic_view(body),
        Vendor::Gemini => gemini_view(body),
        Vendor::Bedrock => converse::converse_view(body),
    }
}

/// The conversation the upstream must receive, in its wire's terms.
fn expected_turns(s: Scenario, vendor: Vendor) -> Vec<(String, Vec<Item>)> {
    let text = |t: &str| Item::Text(t.to_owned());
    let turn = |role: &str, items: Vec<Item>| (role.to_owned(), items);
    let gemini = vendor == Vendor::Gemini;
    match s {
        Scenario::Text | Scenario::System | Scenario::Reasoning => {
            vec![turn("user", vec![text(s.user_text())])]
        }
        Scenario::MultiTurn => vec![
            turn("user", vec![text("first question")]),
            turn("assistant", vec![text("first answer")]),
            turn("user", vec![text(s.user_text())]),
        ],
        Scenario::Tools => vec![
            turn("user", vec![text(s.user_text())]),
            turn(
                "assistant",
                vec![Item::Call {
                    id: (!gemini).then(|| CALL_ID.to_owned()),
                    name: TOOL_NAME.into(),
                    args: serde_json::from_str(HISTORY_ARGS).unwrap(),
                }],
            ),
            turn(
                if vendor == Vendor::OpenAi { "tool" } else { "user" },
                vec![Item::Result {
                    id: (!gemini).then(|| CALL_ID.to_owned()),
                    name: gemini.then(|| TOOL_NAME.to_owned()),
                    output: TOOL_OUTPUT.into(),
                }],
            ),
        ],
        Scenario::Images => vec![turn(
            "user",
            vec![
                text(s.user_text()),
                Item::Image { media_type: PNG_MEDIA.into(), data: PNG_B64.into() },
            ],
        )],
    }
}

/// A wire's request read in its body's shape.
fn view_of_upstream(u: Upstream, body: &Value) -> View {
    match u {
        Upstream::Responses | Upstream::AzureResponses => responses_view::responses_view(body),
        other => view_of(other.family(), body),
    }
}

fn check_upstream(p: &mut Problems, rx: &Received, case: Case) {
    let Case { s, upstream, .. } = case;
    check_envelope(p, rx, case);
    let view = view_of_upstream(upstream, &rx.body);
    for m in &view.problems {
        p.push(format!("upstream shape: {m}"));
    }
    let want_system: Vec<String> =
        if s == Scenario::System { vec![SYSTEM_TEXT.to_owned()] } else { Vec::new() };
    p.eq("upstream system", &view.system, &want_system);
    p.eq("upstream conversation", &view.turns, &expected_turns(s, upstream.family()));
    let want_tools: Vec<ToolDef> = if s == Scenario::Tools {
        vec![(TOOL_NAME.into(), Some(TOOL_DESCRIPTION.into()), weather_schema())]
    } else {
        Vec::new()
    };
    p.eq("upstream tool definitions", &view.tools, &want_tools);
    if s == Scenario::Images {
        // Never silently dropped: the image bytes must reach the upstream.
        let raw = String::from_utf8_lossy(&rx.raw);
        p.check(raw.contains(PNG_B64), || "image data missing from the upstream body".into());
    }
    check_reasoning_config(p, rx, case);
    check_output_ceiling(p, rx, case);
}

/// The client's output ceiling arrives under the wire's own name (none invented).
fn check_output_ceiling(p: &mut Problems, rx: &Received, case: Case) {
    let body = &rx.body;
    let want = client_max_tokens(case.format, case.s);
    if case.upstream.speaks_responses() {
        p.eq("upstream max_output_tokens", body["max_output_tokens"].as_u64(), want);
        return;
    }
    match case.upstream.family() {
        Vendor::OpenAi => {
            let got =
                body["max_completion_tokens"].as_u64().or_else(|| body["max_tokens"].as_u64());
            p.eq("upstream max_completion_tokens", got, want);
        }
        // Mandatory there: a default is fine when the client named none.
        Vendor::Anthropic => {
            if let Some(want) = want {
                p.eq("upstream max_tokens", body["max_tokens"].as_u64(), Some(want));
            }
        }
        Vendor::Gemini => {
            let got = body["generationConfig"]["maxOutputTokens"].as_u64();
            p.eq("upstream generationConfig.maxOutputTokens", got, want);
        }
        // Optional there, but thinking needs room above its budget: then one is
        // raised or invented (`check_reasoning_config` checks it is above the budget).
        Vendor::Bedrock => {
            let got = body["inferenceConfig"]["maxTokens"].as_u64();
            if want.is_some() || case.s != Scenario::Reasoning {
                p.eq("upstream inferenceConfig.maxTokens", got, want);
            }
        }
    }
}

/// Path, credential, model and streaming flags.
fn check_envelope(p: &mut Problems, rx: &Received, case: Case) {
    let Case { upstream, stream, .. } = case;
    let body = &rx.body;
    p.eq("upstream method", rx.method.as_str(), "POST");
    match upstream {
        Upstream::OpenAi | Upstream::Responses => {
            let path =
                if upstream == Upstream::OpenAi { "/v1/chat/completions" } else { "/v1/responses" };
            p.eq("upstream path", rx.path.as_str(), path);
            p.eq(
                "upstream authorization",
                rx.header("authorization"),
                Some(format!("Bearer {OPENAI_KEY}").as_str()),
            );
            p.eq("upstream body.model", &body["model"], &json!(upstream.upstream_model()));
            if upstream == Upstream::OpenAi {
                check_chat_stream_flags(p, body, stream);
            } else {
                check_responses_flags(p, body, case);
            }
        }
        Upstream::Anthropic => {
            p.eq("upstream path", rx.path.as_str(), "/v1/messages");
            p.eq("upstream x-api-key", rx.header("x-api-key"), Some(ANTHROPIC_KEY));
            p.check(rx.header("anthropic-version").is_some_and(|v| !v.is_empty()), || {
                "upstream anthropic-version header missing".into()
            });
            p.eq("upstream body.model", &body["model"], &json!(upstream.upstream_model()));
            check_messages_flags(p, body, stream);
        }
        Upstream::Gemini => {
            let want = upstreams::expected_path(upstream, stream);
            p.eq("upstream path", rx.path.replace("%3A", ":").as_str(), want.as_str());
            let query = rx.query.as_deref().unwrap_or("");
            let sse = query.split('&').any(|kv| kv == "alt=sse");
            p.eq("upstream query has alt=sse", sse, stream);
            p.check(
                !query.contains(GEMINI_KEY) && !query.split('&').any(|kv| kv.starts_with("key=")),
                || format!("the Gemini key is in the query: {query:?}"),
            );
            p.eq("upstream x-goog-api-key", rx.header("x-goog-api-key"), Some(GEMINI_KEY));
        }
        Upstream::Bedrock => {
            // The model in the path (none in the body), the stream by the action.
            p.eq("upstream path", rx.path.as_str(), bedrock_path(stream).as_str());
            p.eq("upstream model (decoded)", rx.bedrock_model().as_deref(), Some(BEDROCK_MODEL));
            p.check(body.get("model").is_none(), || "upstream body names a model".into());
            p.check(body.get("stream").is_none(), || "upstream body has a stream flag".into());
            // Signed with SigV4 for the provider's key pair and region (the fake
            // recomputes the signature, so a 200 says it matched), no API key.
            let auth = rx.header("authorization").unwrap_or_default();
            let scope = format!("/{}/bedrock/aws4_request", bedrock::REGION);
            p.check(
                auth.starts_with(&format!("AWS4-HMAC-SHA256 Credential={BEDROCK_ACCESS_KEY_ID}/"))
                    && auth.contains(&scope)
                    && auth.contains("SignedHeaders=")
                    && auth.contains("Signature="),
                || format!("upstream authorization is not SigV4 for the provider's key: {auth:?}"),
            );
            p.check(rx.header("x-amz-date").is_some_and(|d| !d.is_empty()), || {
                "upstream x-amz-date header missing".into()
            });
            for header in ["x-api-key", "x-goog-api-key", "anthropic-version"] {
                p.check(rx.header(header).is_none(), || format!("upstream {header} header sent"));
            }
        }
        // The clouds: their own envelope, their publisher's body.
        Upstream::VertexClaude => {
            upstreams::check_cloud_envelope(p, rx, upstream, stream);
            check_messages_flags(p, body, stream);
        }
        Upstream::VertexGemini | Upstream::BedrockClaude => {
            upstreams::check_cloud_envelope(p, rx, upstream, stream)
        }
        Upstream::AzureResponses => {
            upstreams::check_cloud_envelope(p, rx, upstream, stream);
            check_responses_flags(p, body, case);
        }
        Upstream::VertexOpen | Upstream::Azure | Upstream::AzureV1 => {
            upstreams::check_cloud_envelope(p, rx, upstream, stream);
            check_chat_stream_flags(p, body, stream);
        }
    }
    // No other secret travels: not the gateway key, not another provider's key, not
    // Bedrock's secret access key (it signs, it never travels).
    let secrets = upstreams::secrets();
    for (name, value) in &rx.headers {
        for secret in &secrets {
            if Some(*secret) != upstream.key() && value.contains(secret) {
                p.push(format!("upstream header {name} carries a foreign secret"));
            }
        }
    }
    let raw = String::from_utf8_lossy(&rx.raw);
    for secret in &secrets {
        p.check(!raw.contains(secret), || "a secret is in the upstream body".into());
    }
    p.check(!raw.contains("PRIVATE KEY"), || "a private key is in the upstream body".into());
}

/// A Chat body's streaming flags: the stream asked for with its usage chunk.
fn check_chat_stream_flags(p: &mut Problems, body: &Value, stream: bool) {
    if stream {
        p.eq("upstream body.stream", &body["stream"], &json!(true));
        p.eq(
            "upstream stream_options.include_usage",
            &body["stream_options"]["include_usage"],
            &json!(true),
        );
    } else {
        p.check(body["stream"] != true, || "upstream body.stream is true".into());
    }
}

/// A Messages body's ceiling (mandatory) and streaming flag.
fn check_messages_flags(p: &mut Problems, body: &Value, stream: bool) {
    p.check(body["max_tokens"].as_u64().is_some_and(|n| n > 0), || {
        format!("upstream max_tokens is {}", body["max_tokens"])
    });
    if stream {
        p.eq("upstream body.stream", &body["stream"], &json!(true));
    } else {
        p.check(body["stream"] != true, || "upstream body.stream is true".into());
    }
}

/// A Responses body's streaming flag, and its state: a body translated by the
/// gateway stores nothing and, where reasoning is asked for, asks for it encrypted
/// (so it can be given back without server state); a Responses client's own body
/// goes as it wrote it, neither added.
fn check_responses_flags(p: &mut Problems, body: &Value, case: Case) {
    if case.stream {
        p.eq("upstream body.stream", &body["stream"], &json!(true));
    } else {
        p.check(body["stream"] != true, || "upstream body.stream is true".into());
    }
    if case.format == ClientFormat::OpenAiResponses {
        p.eq("upstream body.store (the client's own: none)", &body["store"], &Value::Null);
        p.eq("upstream body.include (the client's own: none)", &body["include"], &Value::Null);
    } else {
        p.eq("upstream body.store", &body["store"], &json!(false));
        let want = if case.s == Scenario::Reasoning {
            json!([fake_responses::ENCRYPTED_REASONING])
        } else {
            Value::Null
        };
        p.eq("upstream body.include", &body["include"], &want);
    }
}

/// The client's reasoning request, in the upstream wire's terms (the canonical mapping
/// between efforts and budgets is `Effort`'s).
fn check_reasoning_config(p: &mut Problems, rx: &Received, case: Case) {
    let body = &rx.body;
    let wanted = case.s == Scenario::Reasoning;
    let (effort, budget) = match case.format {
        ClientFormat::Anthropic => {
            (Effort::from_budget(ANTHROPIC_CLIENT_BUDGET), ANTHROPIC_CLIENT_BUDGET)
        }
        _ => (Effort::High, Effort::High.budget_tokens()),
    };
    if case.upstream.speaks_responses() {
        let want = if wanted { json!(effort.as_str()) } else { Value::Null };
        p.eq("upstream reasoning.effort", &body["reasoning"]["effort"], &want);
        if !wanted {
            p.eq("upstream reasoning", &body["reasoning"], &Value::Null);
        }
        return;
    }
    match case.upstream.family() {
        Vendor::OpenAi => {
            let want = if wanted { json!(effort.as_str()) } else { Value::Null };
            p.eq("upstream reasoning_effort", &body["reasoning_effort"], &want);
        }
        Vendor::Anthropic => {
            let thinking = &body["thinking"];
            if wanted {
                p.eq("upstream thinking.type", &thinking["type"], &json!("enabled"));
                p.eq("upstream thinking.budget_tokens", &thinking["budget_tokens"], &json!(budget));
                let max = body["max_tokens"].as_u64().unwrap_or(0);
                p.check(max > budget, || {
                    format!("upstream max_tokens {max} is not above the thinking budget {budget}")
                });
            } else {
                p.eq("upstream thinking", thinking, &Value::Null);
            }
        }
        Vendor::Gemini => {
            let config = &body["generationConfig"]["thinkingConfig"];
            if wanted {
                p.eq(
                    "upstream thinkingConfig.includeThoughts",
                    &config["includeThoughts"],
                    &json!(true),
                );
                p.check(
                    config["thinkingBudget"] == json!(budget)
                        || config["thinkingLevel"].is_string(),
                    || format!("upstream thinkingConfig {config}: want thinkingBudget {budget}"),
                );
            } else {
                p.eq("upstream thinkingConfig", config, &Value::Null);
            }
        }
        // The deployment is Claude Sonnet 4.5: Anthropic's budget form, in Claude's
        // own fields (`additionalModelRequestFields`), the ceiling in Converse's.
        Vendor::Bedrock => {
            let thinking = &body["additionalModelRequestFields"]["thinking"];
            if wanted {
                p.eq(
                    "upstream additionalModelRequestFields.thinking",
                    thinking,
                    &json!({"type": "enabled", "budget_tokens": budget}),
                );
                let max = body["inferenceConfig"]["maxTokens"].as_u64().unwrap_or(0);
                p.check(max > budget, || {
                    format!("upstream maxTokens {max} is not above the thinking budget {budget}")
                });
                // Claude refuses sampling parameters beside thinking.
                p.eq("upstream temperature", &body["inferenceConfig"]["temperature"], &Value::Null);
            } else {
                p.eq(
                    "upstream additionalModelRequestFields",
                    &body["additionalModelRequestFields"],
                    &Value::Null,
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Client side: the answer read in the client's own format
// ---------------------------------------------------------------------------------

/// A body for a failure message: lossy UTF-8, cut to a readable length.
fn shorten(body: &[u8]) -> String {
    const MAX: usize = 600;
    let text = String::from_utf8_lossy(body);
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}… ({} bytes)", &text[..i], body.len()),
        None => text.into_owned(),
    }
}

/// The client's view of a body through the protocol crate's decoders (which panic on
/// a body that does not parse: that panic becomes this case's problem).
fn decode(format: ClientFormat, stream: bool, body: &[u8]) -> Result<Response, String> {
    catch_unwind(AssertUnwindSafe(|| {
        if stream { decode_stream(format, body) } else { decode_whole(format, body) }
    }))
    .map_err(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        let why = why.lines().next().unwrap_or_default();
        format!("client body does not decode: {why}; body: {}", shorten(body))
    })
}

/// What a client sees, wire-neutral; adjacent pieces of one kind are joined.
#[derive(Debug, Clone, PartialEq)]
enum Out {
    Text(String),
    Thinking(String),
    Call { name: String, args: Value },
}

fn summarize(resp: &Response) -> Vec<Out> {
    let mut out: Vec<Out> = Vec::new();
    for part in &resp.content {
        match part {
            Part::Text(t) if t.text.is_empty() => {}
            Part::Text(t) => match out.last_mut() {
                Some(Out::Text(prev)) => prev.push_str(&t.text),
                _ => out.push(Out::Text(t.text.clone())),
            },
            Part::Thinking { text, .. } if text.is_empty() => {}
            Part::Thinking { text, .. } => match out.last_mut() {
                Some(Out::Thinking(prev)) => prev.push_str(text),
                _ => out.push(Out::Thinking(text.clone())),
            },
            Part::ToolCall(c) => out.push(Out::Call {
                name: c.name.clone(),
                args: serde_json::from_str(&c.arguments)
                    .unwrap_or_else(|_| json!({"<not json>": c.arguments})),
            }),
            other => out.push(Out::Text(format!("<unexpected part {other:?}>"))),
        }
    }
    out
}

fn expected_output(s: Scenario) -> Vec<Out> {
    match s {
        Scenario::Tools => vec![Out::Call {
            name: TOOL_NAME.into(),
            args: serde_json::from_str(ANSWER_ARGS).unwrap(),
        }],
        Scenario::Reasoning => vec![Out::Thinking(THINKING.into()), Out::Text(FINAL.into())],
        _ => vec![Out::Text(format!("{ECHO_PREFIX}{}", s.user_text()))],
    }
}

/// Usage counts as the client format writes them.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct FormatUsage {
    input: Option<u64>,
    output: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
}

fn json_events(events: &[SseEvent]) -> Vec<Value> {
    events.iter().filter_map(|e| serde_json::from_str::<Value>(&e.data).ok()).collect()
}

/// The usage a client of `format` reads from the body.
fn format_usage(format: ClientFormat, stream: bool, body: &[u8]) -> Result<FormatUsage, String> {
    let u64_at = |v: &Value, ptr: &str| v.pointer(ptr).and_then(Value::as_u64);
    let usage_obj = if !stream {
        serde_json::from_slice::<Value>(body).map_err(|e| format!("body is not JSON: {e}"))?
    } else {
        let events = json_events(&sse_events(body));
        match format {
            ClientFormat::OpenAiChat => events.last().cloned().unwrap_or_default(),
            ClientFormat::OpenAiResponses => events
                .iter()
                .rev()
                .find(|e| e["type"] == "response.completed")
                .map(|e| e["response"].clone())
                .unwrap_or_default(),
            ClientFormat::Anthropic => {
                // message_start's usage, then message_delta's fields over it.
                let mut usage = events
                    .iter()
                    .find(|e| e["type"] == "message_start")
                    .map(|e| e["message"]["usage"].clone())
                    .unwrap_or_default();
                for e in events.iter().filter(|e| e["type"] == "message_delta") {
                    if let (Value::Object(into), Value::Object(later)) = (&mut usage, &e["usage"]) {
                        for (k, v) in later {
                            into.insert(k.clone(), v.clone());
                        }
                    }
                }
                json!({ "usage": usage })
            }
            ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
        }
    };
    let u = &usage_obj["usage"];
    if !u.is_object() {
        return Err(format!("no usage object in {usage_obj}"));
    }
    Ok(match format {
        ClientFormat::OpenAiChat => FormatUsage {
            input: u64_at(u, "/prompt_tokens"),
            output: u64_at(u, "/completion_tokens"),
            cache_read: u64_at(u, "/prompt_tokens_details/cached_tokens"),
            cache_write: None,
        },
        ClientFormat::OpenAiResponses => FormatUsage {
            input: u64_at(u, "/input_tokens"),
            output: u64_at(u, "/output_tokens"),
            cache_read: u64_at(u, "/input_tokens_details/cached_tokens"),
            cache_write: None,
        },
        ClientFormat::Anthropic => FormatUsage {
            input: u64_at(u, "/input_tokens"),
            output: u64_at(u, "/output_tokens"),
            cache_read: u64_at(u, "/cache_read_input_tokens"),
            cache_write: u64_at(u, "/cache_creation_input_tokens"),
        },
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    })
}

/// `None` expected: the field is absent or 0.
fn count_matches(got: Option<u64>, want: Option<u64>) -> bool {
    match want {
        Some(_) => got == want,
        None => got.unwrap_or(0) == 0,
    }
}

fn check_usage(p: &mut Problems, case: Case, resp: &Response, body: &[u8]) {
    let Case { format, upstream, stream, .. } = case;
    // What the fake reports, in canonical terms (input = the whole prompt): Claude
    // counts cache reads and writes apart from its input tokens, the Responses API
    // counts its cached tokens within them.
    let (read, write) = if upstream.reports_cache() {
        (Some(CANNED_CACHE_READ_INPUT_TOKENS), Some(CANNED_CACHE_CREATION_INPUT_TOKENS))
    } else if upstream.speaks_responses() {
        (Some(fake_responses::CACHED_TOKENS), None)
    } else {
        (None, None)
    };
    let total = if upstream.speaks_responses() {
        CANNED_INPUT_TOKENS
    } else {
        CANNED_INPUT_TOKENS + read.unwrap_or(0) + write.unwrap_or(0)
    };
    p.eq("decoded usage.input_tokens (total prompt)", resp.usage.input_tokens, Some(total));
    p.eq("decoded usage.output_tokens", resp.usage.output_tokens, Some(CANNED_OUTPUT_TOKENS));

    let got = match format_usage(format, stream, body) {
        Ok(u) => u,
        Err(e) => {
            p.push(format!("client usage: {e}"));
            return;
        }
    };
    p.eq("client output tokens", got.output, Some(CANNED_OUTPUT_TOKENS));
    match format {
        ClientFormat::OpenAiChat => {
            p.eq("client prompt_tokens", got.input, Some(total));
            p.check(count_matches(got.cache_read, read), || {
                format!(
                    "client prompt_tokens_details.cached_tokens: got {:?}, want {read:?}",
                    got.cache_read
                )
            });
        }
        ClientFormat::OpenAiResponses => {
            p.eq("client input_tokens", got.input, Some(total));
            p.eq(
                "client input_tokens_details.cached_tokens",
                got.cache_read,
                Some(read.unwrap_or(0)),
            );
        }
        ClientFormat::Anthropic => {
            let uncached = total - read.unwrap_or(0) - write.unwrap_or(0);
            p.eq("client input_tokens (uncached)", got.input, Some(uncached));
            p.check(count_matches(got.cache_read, read), || {
                format!("client cache_read_input_tokens: got {:?}, want {read:?}", got.cache_read)
            });
            p.check(count_matches(got.cache_write, write), || {
                format!(
                    "client cache_creation_input_tokens: got {:?}, want {write:?}",
                    got.cache_write
                )
            });
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    }
}

/// Framing facts of a client stream.
fn check_stream_framing(p: &mut Problems, format: ClientFormat, body: &[u8]) {
    let events = sse_events(body);
    let data_type =
        |e: &SseEvent| serde_json::from_str::<Value>(&e.data).ok().and_then(|v| str_of(&v["type"]));
    for e in &events {
        let ty = e.event.clone().or_else(|| data_type(e)).unwrap_or_default();
        p.check(ty != "error" && ty != "response.failed", || {
            format!("stream carries an error: {}", e.data)
        });
    }
    match format {
        ClientFormat::OpenAiChat => {
            p.eq("last chat event", events.last().map(|e| e.data.as_str()), Some("[DONE]"));
            let chunks = json_events(&events);
            match chunks.last() {
                Some(last) => {
                    p.eq("last chat chunk choices", &last["choices"], &json!([]));
                    p.check(last["usage"].is_object(), || {
                        format!("last chat chunk has no usage: {last}")
                    });
                }
                None => p.push("chat stream has no JSON chunk"),
            }
        }
        ClientFormat::Anthropic => {
            let name = |e: Option<&SseEvent>| e.and_then(|e| e.event.clone());
            p.eq("first anthropic event", name(events.first()), Some("message_start".to_owned()));
            p.eq("last anthropic event", name(events.last()), Some("message_stop".to_owned()));
        }
        ClientFormat::OpenAiResponses => {
            let last = events.last();
            p.eq(
                "last responses event type",
                last.and_then(data_type),
                Some("response.completed".to_owned()),
            );
            if let Some(e) = last.and_then(|e| e.event.as_ref()) {
                p.eq("last responses event name", e.as_str(), "response.completed");
            }
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    }
}

/// How each whole-body format spells the scenario's answer.
fn check_whole_shape(p: &mut Problems, format: ClientFormat, s: Scenario, body: &[u8]) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        p.push("client body is not JSON");
        return;
    };
    match format {
        ClientFormat::OpenAiChat => {
            let choice = &v["choices"][0];
            let finish = if s == Scenario::Tools { "tool_calls" } else { "stop" };
            p.eq("chat finish_reason", &choice["finish_reason"], &json!(finish));
            if s == Scenario::Reasoning {
                p.eq(
                    "chat message.reasoning_content",
                    &choice["message"]["reasoning_content"],
                    &json!(THINKING),
                );
            }
            if s == Scenario::Tools {
                p.eq(
                    "chat tool_calls[0].type",
                    &choice["message"]["tool_calls"][0]["type"],
                    &json!("function"),
                );
            }
        }
        ClientFormat::OpenAiResponses => {
            p.eq("responses status", &v["status"], &json!("completed"));
            let types: Vec<&str> = v["output"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["type"].as_str())
                .collect();
            let want: &[&str] = match s {
                Scenario::Tools => &["function_call"],
                Scenario::Reasoning => &["reasoning", "message"],
                _ => &["message"],
            };
            p.eq("responses output item types", types.as_slice(), want);
        }
        ClientFormat::Anthropic => {
            let stop = if s == Scenario::Tools { "tool_use" } else { "end_turn" };
            p.eq("anthropic stop_reason", &v["stop_reason"], &json!(stop));
            let types: Vec<&str> = v["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["type"].as_str())
                .collect();
            let want: &[&str] = match s {
                Scenario::Tools => &["tool_use"],
                Scenario::Reasoning => &["thinking", "text"],
                _ => &["text"],
            };
            p.eq("anthropic content block types", types.as_slice(), want);
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    }
}

fn check_client(
    p: &mut Problems,
    case: Case,
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: &[u8],
) {
    let Case { s, format, upstream, stream } = case;
    if status != 200 {
        p.push(format!("client status {status}: {}", shorten(body)));
        return;
    }
    if matches!(upstream, Upstream::Azure | Upstream::AzureV1) {
        // Azure's content filter results are its own: no client sees them.
        let text = String::from_utf8_lossy(body);
        for word in ["prompt_filter_results", "content_filter_results", "\"severity\""] {
            p.check(!text.contains(word), || format!("Azure's {word} reached the client"));
        }
    }
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    p.eq("x-gateway-provider", header("x-gateway-provider"), Some(upstream.provider()));
    p.eq("x-gateway-model", header("x-gateway-model"), Some(upstream.catalog_model()));
    p.check(header("x-request-id").is_some_and(|v| !v.is_empty()), || "no x-request-id".into());
    let content_type = header("content-type").unwrap_or_default();
    let want_type = if stream { "text/event-stream" } else { "application/json" };
    p.check(content_type.starts_with(want_type), || {
        format!("content-type {content_type:?}, want {want_type}")
    });

    let resp = match decode(format, stream, body) {
        Ok(r) => r,
        Err(e) => {
            p.push(e);
            return;
        }
    };
    p.eq("client content", summarize(&resp), expected_output(s));
    let stop = if s == Scenario::Tools { StopReason::ToolUse } else { StopReason::EndTurn };
    p.eq("client stop reason", resp.stop_reason, Some(stop));
    for part in &resp.content {
        // The client must get a call id it can answer with: the provider's own id,
        // passed through (the gateway mints one for Gemini, which gives none here).
        if let Part::ToolCall(c) = part {
            match upstream.answer_call_id() {
                Some(id) => p.eq("tool call id", c.id.as_str(), id),
                None => p.check(!c.id.is_empty(), || "tool call without an id".into()),
            }
        }
        // An Anthropic client of a Claude upstream (Anthropic's API, or Claude on
        // Bedrock or Vertex: its signatures are Anthropic's) gets the signature untouched.
        if let Part::Thinking { signature, .. } = part
            && format == ClientFormat::Anthropic
            && upstream.signs_thinking()
        {
            p.eq("thinking signature", signature.as_deref(), Some(ANTHROPIC_THINKING_SIGNATURE));
        }
    }
    check_usage(p, case, &resp, body);
    if stream {
        check_stream_framing(p, format, body);
    } else {
        check_whole_shape(p, format, s, body);
    }
}

// ---------------------------------------------------------------------------------
// The matrix: one test per scenario, 3 formats × 10 upstreams × {whole, stream} each
// ---------------------------------------------------------------------------------

#[tokio::test]
async fn matrix_text() {
    run_matrix(Scenario::Text).await;
}

#[tokio::test]
async fn matrix_system() {
    run_matrix(Scenario::System).await;
}

#[tokio::test]
async fn matrix_multi_turn() {
    run_matrix(Scenario::MultiTurn).await;
}

#[tokio::test]
async fn matrix_tools() {
    run_matrix(Scenario::Tools).await;
}

#[tokio::test]
async fn matrix_images() {
    run_matrix(Scenario::Images).await;
}

#[tokio::test]
async fn matrix_reasoning() {
    run_matrix(Scenario::Reasoning).await;
}

// ---------------------------------------------------------------------------------
// Fast path, signatures, images
// ---------------------------------------------------------------------------------

/// Send `body`; expect a 200 from `vendor`; return the one upstream request it caused.
async fn exchange(
    h: &Harness,
    format: ClientFormat,
    vendor: Vendor,
    body: &Value,
    headers: &[(&str, &str)],
) -> (u16, Vec<u8>, Option<Received>) {
    let fake = h.fake(vendor);
    let before = fake.request_count();
    let resp = h.post_with(path(format), body, headers).await;
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.map(|b| b.to_vec()).unwrap_or_default();
    let received = if status == 200 {
        tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1))
            .await
            .ok()
            .and_then(|r| r.last().cloned())
    } else {
        (fake.request_count() > before).then(|| fake.received().last().cloned()).flatten()
    };
    (status, bytes, received)
}

#[tokio::test]
async fn same_format_fast_path_keeps_unknown_fields() {
    let h = Harness::start().await;
    let mut p = Problems::default();
    for stream in [false, true] {
        let mode = if stream { "stream" } else { "whole" };

        // OpenAI chat client → OpenAI upstream.
        // Fields the gateway has no model for (the fake refuses fields OpenAI does
        // not define, as OpenAI does).
        let vendor_field =
            json!({"type": "content", "content": [{"type": "text", "text": "a \"draft\""}]});
        let logit_bias = json!({"50256": -100, "1234": 5});
        let messages = json!([{"role": "user", "content": "hello fast path"}]);
        let mut body = json!({
            "model": "m-openai", "messages": messages,
            "prediction": vendor_field, "logit_bias": logit_bias
        });
        if stream {
            body["stream"] = json!(true);
        }
        let (status, bytes, rx) =
            exchange(&h, ClientFormat::OpenAiChat, Vendor::OpenAi, &body, &[]).await;
        p.check(status == 200, || format!("chat {mode}: status {status}: {}", shorten(&bytes)));
        match rx {
            Some(rx) => {
                p.eq(
                    &format!("chat {mode}: upstream prediction"),
                    &rx.body["prediction"],
                    &vendor_field,
                );
                p.eq(
                    &format!("chat {mode}: upstream logit_bias"),
                    &rx.body["logit_bias"],
                    &logit_bias,
                );
                p.eq(
                    &format!("chat {mode}: upstream model"),
                    &rx.body["model"],
                    &json!("up-openai"),
                );
                p.eq(&format!("chat {mode}: upstream messages"), &rx.body["messages"], &messages);
                if stream {
                    p.eq(
                        &format!("chat {mode}: upstream include_usage"),
                        &rx.body["stream_options"]["include_usage"],
                        &json!(true),
                    );
                }
            }
            None => p.push(format!("chat {mode}: no upstream request")),
        }

        // Anthropic client → Anthropic upstream, with a beta header.
        let context_management = json!({"edits": [{"type": "clear_tool_uses_20250919",
                                                     "trigger": {"type": "input_tokens", "value": 30000}}]});
        let beta = "context-management-2025-06-27";
        let mut body = json!({
            "model": "m-anthropic", "max_tokens": 1024,
            "messages": [{"role": "user", "content": "hello fast path"}],
            "context_management": context_management
        });
        if stream {
            body["stream"] = json!(true);
        }
        let headers = [("anthropic-beta", beta), ("anthropic-version", "2023-06-01")];
        let (status, bytes, rx) =
            exchange(&h, ClientFormat::Anthropic, Vendor::Anthropic, &body, &headers).await;
        p.check(status == 200, || {
            format!("anthropic {mode}: status {status}: {}", shorten(&bytes))
        });
        match rx {
            Some(rx) => {
                p.eq(
                    &format!("anthropic {mode}: upstream context_management"),
                    &rx.body["context_management"],
                    &context_management,
                );
                p.eq(
                    &format!("anthropic {mode}: upstream model"),
                    &rx.body["model"],
                    &json!("up-anthropic"),
                );
                p.eq(
                    &format!("anthropic {mode}: upstream anthropic-beta"),
                    rx.header("anthropic-beta"),
                    Some(beta),
                );
                p.eq(
                    &format!("anthropic {mode}: upstream anthropic-version"),
                    rx.header("anthropic-version"),
                    Some("2023-06-01"),
                );
            }
            None => p.push(format!("anthropic {mode}: no upstream request")),
        }
        if status == 200 {
            match decode(ClientFormat::Anthropic, stream, &bytes) {
                Ok(resp) => p.eq(
                    &format!("anthropic {mode}: client content"),
                    summarize(&resp),
                    vec![Out::Text(format!("{ECHO_PREFIX}hello fast path"))],
                ),
                Err(e) => p.push(format!("anthropic {mode}: {e}")),
            }
        }
    }
    assert!(p.0.is_empty(), "fast path problems:\n  - {}", p.0.join("\n  - "));
}

/// Codex's `apply_patch` is a Responses `custom` (free-form) tool. Served by any
/// wire it must reach the model as a tool (a function of one string, `input`),
/// and the model's call must come back to Codex as a `custom_tool_call` carrying
/// the patch text, streamed or not.
#[tokio::test]
async fn codex_custom_tools_cross_every_wire() {
    let m = Matrix::start().await;
    let patch = "*** Begin Patch\n*** Add File: hello.txt\n+Hello \"world\"\n*** End Patch\n";
    let args = json!({"input": patch}).to_string();
    let mut p = Problems::default();
    for u in UPSTREAMS {
        for stream in [false, true] {
            let mode = format!("{u:?} stream={stream}");
            let fake = u.fake(&m);
            fake.clear_script();
            // (Not for Responses' own API: see below.)
            if !u.speaks_responses() {
                fake.push(answer(u, None, None, Some(("apply_patch", &args)), stream));
            }
            let body = json!({
                "model": u.catalog_model(),
                "stream": stream,
                "input": [{"type": "message", "role": "user", "content": "add hello.txt"}],
                "tools": [{"type": "custom", "name": "apply_patch", "description": "Apply a patch",
                           "format": {"type": "grammar", "syntax": "lark", "definition": "start: begin_patch"}}],
            });
            let (status, bytes, rx) =
                upstreams::exchange(&m, ClientFormat::OpenAiResponses, u, &body).await;
            if status != 200 {
                p.push(format!("{mode}: status {status}: {}", shorten(&bytes)));
                continue;
            }
            let sent = rx.map(|r| r.body).unwrap_or_default().to_string();
            p.check(sent.contains("apply_patch") && sent.contains("start: begin_patch"), || {
                format!(
                    "{mode}: upstream tools lack apply_patch with its grammar: {}",
                    shorten(sent.as_bytes())
                )
            });
            if u.speaks_responses() {
                // Its own API: the fast path sends the custom tool as declared, and
                // a model answers it with a `custom_tool_call`, which comes back as
                // sent (the testkit's Responses replies write function calls only).
                p.check(sent.contains(r#""type":"custom""#), || {
                    format!("{mode}: the custom tool did not go as declared: {sent}")
                });
                continue;
            }
            // The item the client sees: whole, or the last output_item.done.
            let item = if stream {
                sse_events(&bytes)
                    .iter()
                    .filter(|e| e.event.as_deref() == Some("response.output_item.done"))
                    .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
                    .map(|e| e["item"].clone())
                    .find(|i| i["name"] == "apply_patch")
            } else {
                serde_json::from_slice::<Value>(&bytes)
                    .ok()
                    .and_then(|r| r["output"].as_array().and_then(|o| o.first().cloned()))
            };
            match item {
                Some(item) => {
                    p.eq(&format!("{mode}: item type"), &item["type"], &json!("custom_tool_call"));
                    p.eq(&format!("{mode}: item input"), &item["input"], &json!(patch));
                }
                None => p.push(format!("{mode}: no apply_patch item: {}", shorten(&bytes))),
            }
        }
    }
    assert!(p.0.is_empty(), "custom tool problems:\n  - {}", p.0.join("\n  - "));
}

/// The fast path forwards the client's own bytes: spacing, key order, escapes and
/// a nested `model` key arrive as sent; only the top-level model changes (and an
/// OpenAI stream gains `stream_options`).
#[tokio::test]
async fn same_format_fast_path_forwards_the_clients_bytes() {
    let h = Harness::start().await;
    let cases: [(&[u8], &[u8]); 2] = [
        (
            b"{ \"messages\" : [ {\"role\":\"user\", \"content\":\"caf\\u00e9 {\\\"model\\\": 1}\", \"model\": \"inner\"} ],\n  \"model\":\"m-openai\" , \"seed\": 7 }",
            b"{ \"messages\" : [ {\"role\":\"user\", \"content\":\"caf\\u00e9 {\\\"model\\\": 1}\", \"model\": \"inner\"} ],\n  \"model\":\"up-openai\" , \"seed\": 7 }",
        ),
        (
            b"{\"model\": \"m-openai\", \"stream\": true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
            b"{\"model\": \"up-openai\", \"stream\": true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream_options\":{\"include_usage\":true}}",
        ),
    ];
    for (sent, expected) in cases {
        let fake = h.fake(Vendor::OpenAi);
        let before = fake.request_count();
        let resp = h.post_raw(path(ClientFormat::OpenAiChat), sent).await;
        assert_eq!(resp.status(), 200);
        let _ = resp.bytes().await.unwrap();
        let rx = tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1)).await.unwrap();
        let raw = &rx.last().unwrap().raw;
        assert_eq!(
            String::from_utf8_lossy(raw),
            String::from_utf8_lossy(expected),
            "upstream body differs from the client's bytes"
        );
    }
}

/// A real-looking signature: base64 with `+`, `/` and `=` padding.
const SIGNATURE: &str = "EqoBCkgIBxABGAIiQL7c4+/Kq9zs3Jtq0m3Uq1Z8h/7uQ9vZ3p5Y0dH6mQx0eF+Ql1kuJw2m0x9Y3A1bq5xZ0t3Yk8aDMu5yF0e6X1o8s2k9hIMq3Xy0C8+/pD0uBzwIjBZm0Qz==";
const PRIOR_THINKING: &str = "two plus two makes four";

fn signed_history(model: &str) -> Value {
    json!({
        "model": model,
        "max_tokens": 8192,
        "thinking": {"type": "enabled", "budget_tokens": ANTHROPIC_CLIENT_BUDGET},
        "messages": [
            {"role": "user", "content": "what is 2+2?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": PRIOR_THINKING, "signature": SIGNATURE},
                {"type": "text", "text": "4"}
            ]},
            {"role": "user", "content": "and 3+3?"}
        ]
    })
}

#[tokio::test]
async fn thinking_signature_is_byte_exact_on_anthropic_wire() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    for upstream in UPSTREAMS {
        let request = signed_history(upstream.catalog_model());
        let (status, bytes, rx) =
            upstreams::exchange(&m, ClientFormat::Anthropic, upstream, &request).await;
        p.check(status == 200, || format!("{upstream:?}: status {status}: {}", shorten(&bytes)));
        let Some(rx) = rx else {
            p.push(format!("{upstream:?}: no upstream request"));
            continue;
        };
        let raw = String::from_utf8_lossy(&rx.raw).into_owned();
        let view = view_of_upstream(upstream, &rx.body);
        let thinking: Vec<&Item> = view
            .turns
            .iter()
            .flat_map(|(_, items)| items)
            .filter(|i| matches!(i, Item::Thinking { .. }))
            .collect();
        let texts: Vec<&Item> = view
            .turns
            .iter()
            .flat_map(|(_, items)| items)
            .filter(|i| matches!(i, Item::Text(_)))
            .collect();
        p.eq(
            &format!("{upstream:?}: upstream texts"),
            texts,
            vec![
                &Item::Text("what is 2+2?".into()),
                &Item::Text("4".into()),
                &Item::Text("and 3+3?".into()),
            ],
        );
        if upstream.signs_thinking() {
            p.check(raw.contains(SIGNATURE), || {
                format!("{upstream:?}: signature bytes not in the upstream body")
            });
            // Claude's signatures hold on every platform that serves it: Vertex
            // takes Anthropic's block, Converse the same as `reasoningContent`.
            p.eq(
                &format!("{upstream:?}: upstream thinking block"),
                Some(&rx.body["messages"][1]["content"][0]),
                signed_thinking_block(upstream.family(), PRIOR_THINKING, SIGNATURE).as_ref(),
            );
            p.eq(
                &format!("{upstream:?}: upstream thinking"),
                thinking,
                vec![&Item::Thinking {
                    text: PRIOR_THINKING.into(),
                    signature: Some(SIGNATURE.into()),
                }],
            );
        } else {
            p.check(!raw.contains(SIGNATURE), || {
                format!("{upstream:?}: the Anthropic signature leaked upstream")
            });
            p.check(!raw.contains(PRIOR_THINKING), || {
                format!("{upstream:?}: the thinking block was sent upstream")
            });
            p.eq(&format!("{upstream:?}: upstream thinking"), thinking, Vec::<&Item>::new());
        }
    }
    assert!(p.0.is_empty(), "signature problems:\n  - {}", p.0.join("\n  - "));
}

/// Requests with an image where the matrix does not put one: by URL in a user turn,
/// and inside a tool result.
fn image_elsewhere_request(format: ClientFormat, model: &str, in_tool_result: bool) -> Value {
    let url = if in_tool_result { data_uri() } else { IMAGE_URL.to_owned() };
    let anthropic_source = if in_tool_result {
        json!({"type": "base64", "media_type": PNG_MEDIA, "data": PNG_B64})
    } else {
        json!({"type": "url", "url": IMAGE_URL})
    };
    let mut body = match (format, in_tool_result) {
        (ClientFormat::OpenAiChat, false) => json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": url}},
        ]}]}),
        (ClientFormat::OpenAiChat, true) => json!({
            "tools": [{"type": "function", "function": {"name": TOOL_NAME, "parameters": weather_schema()}}],
            "messages": [
                {"role": "user", "content": "show me the weather map"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": CALL_ID, "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": HISTORY_ARGS}}]},
                {"role": "tool", "tool_call_id": CALL_ID, "content": [
                    {"type": "text", "text": "map attached"},
                    {"type": "image_url", "image_url": {"url": url}},
                ]},
            ]
        }),
        (ClientFormat::OpenAiResponses, false) => json!({"input": [{"role": "user", "content": [
            {"type": "input_text", "text": "what is this?"},
            {"type": "input_image", "image_url": url},
        ]}]}),
        (ClientFormat::OpenAiResponses, true) => json!({
            "tools": [{"type": "function", "name": TOOL_NAME, "parameters": weather_schema()}],
            "input": [
                {"role": "user", "content": "show me the weather map"},
                {"type": "function_call", "call_id": CALL_ID, "name": TOOL_NAME, "arguments": HISTORY_ARGS},
                {"type": "function_call_output", "call_id": CALL_ID, "output": [
                    {"type": "input_text", "text": "map attached"},
                    {"type": "input_image", "image_url": url},
                ]},
            ]
        }),
        (ClientFormat::Anthropic, false) => {
            json!({"max_tokens": 1024, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": anthropic_source},
            ]}]})
        }
        (ClientFormat::Anthropic, true) => json!({
            "max_tokens": 1024,
            "tools": [{"name": TOOL_NAME, "input_schema": weather_schema()}],
            "messages": [
                {"role": "user", "content": "show me the weather map"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": CALL_ID, "name": TOOL_NAME,
                    "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": CALL_ID, "content": [
                    {"type": "text", "text": "map attached"},
                    {"type": "image", "source": anthropic_source},
                ]}]},
            ]
        }),
        (ClientFormat::Gemini, _) => unreachable!("Gemini clients: gemini_client.rs"),
    };
    body["model"] = json!(model);
    body
}

/// Whether a wire takes an image by an http(s) URL. Converse takes bytes or an
/// `s3://` location only, and fetches nothing: the gateway refuses such an image by
/// name rather than fetch it or drop it.
fn takes_image_urls(v: Vendor) -> bool {
    match v {
        Vendor::OpenAi | Vendor::Anthropic | Vendor::Gemini => true,
        Vendor::Bedrock => false,
    }
}

/// An image in the client request reaches the upstream, or the request is refused
/// (4xx, nothing sent): it is never dropped on a 200. The matrix's `Images` cases
/// check base64 images in user turns on every path; this adds images by URL and
/// images inside tool results.
#[tokio::test]
async fn images_are_never_silently_dropped() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    for format in FORMATS {
        for upstream in UPSTREAMS {
            for in_tool_result in [false, true] {
                let label = format!(
                    "{format:?} -> {upstream:?}, image {}",
                    if in_tool_result { "in a tool result" } else { "by URL" }
                );
                let needle = if in_tool_result { PNG_B64 } else { IMAGE_URL };
                let body =
                    image_elsewhere_request(format, upstream.catalog_model(), in_tool_result);
                let (status, bytes, rx) = upstreams::exchange(&m, format, upstream, &body).await;
                if !in_tool_result && !takes_image_urls(upstream.family()) {
                    // Refused by name, before the upstream: it would fetch nothing.
                    let sent = usize::from(rx.is_some());
                    let text = String::from_utf8_lossy(&bytes);
                    p.check(status == 400 && sent == 0, || {
                        format!("{label}: status {status}, {sent} sent, want a 400: {text}")
                    });
                    p.check(text.contains(IMAGE_URL) && text.contains("fetches no URL"), || {
                        format!("{label}: the refusal does not name the image and why: {text}")
                    });
                    continue;
                }
                match (status, rx) {
                    (200, Some(rx)) => {
                        let raw = String::from_utf8_lossy(&rx.raw);
                        p.check(raw.contains(needle), || format!("{label}: answered 200 but the image never reached the upstream: {raw}"));
                        let images = view_of_upstream(upstream, &rx.body)
                            .turns
                            .iter()
                            .flat_map(|(_, items)| items)
                            .filter(|i| matches!(i, Item::Image { .. }))
                            .count();
                        p.check(images == 1, || {
                            format!("{label}: upstream carries {images} image parts, want 1: {raw}")
                        });
                    }
                    (200, None) => p.push(format!("{label}: 200 without an upstream request")),
                    (400..=499, None) => {} // refused loudly: acceptable
                    (s, rx) => p.push(format!(
                        "{label}: status {s} (upstream called: {}): {}",
                        rx.is_some(),
                        shorten(&bytes)
                    )),
                }
            }
        }
    }
    assert!(p.0.is_empty(), "image problems:\n  - {}", p.0.join("\n  - "));
}

/// Newer models take reasoning as a level, not a budget: Claude 4.6 and later get
/// adaptive thinking with `output_config.effort` (Opus 4.7 and later also refuse
/// sampling parameters), Gemini 3 and later `thinkingLevel`. Inferred from the
/// upstream model id; the catalog can say otherwise per model.
#[tokio::test]
async fn newer_models_get_the_reasoning_form_they_accept() {
    let extra = "  - id: m-opus\n    deployments: [{ provider: anthropic, model: claude-opus-4-7 }]\n\
                 \x20 - id: m-gemini3\n    deployments: [{ provider: gemini, model: gemini-3-pro-preview }]\n\
                 \x20 - id: m-pinned\n    reasoning_control: budget\n    sampling: true\n    \
                 deployments: [{ provider: anthropic, model: claude-opus-4-7 }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let ask = |model: &str| {
        json!({"model": model, "reasoning_effort": "medium", "temperature": 0.3,
               "max_completion_tokens": 2000,
               "messages": [{"role": "user", "content": "hi"}]})
    };
    let sent =
        |fake: &switchyard_testkit::FakeUpstream| fake.received().last().unwrap().body.clone();

    let r = h.post("/v1/chat/completions", &ask("m-opus")).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let body = sent(&h.anthropic);
    assert_eq!(body["model"], "claude-opus-4-7");
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(body["output_config"], json!({"effort": "medium"}));
    assert_eq!(body["max_tokens"], 2000);
    assert!(body.get("temperature").is_none(), "Opus 4.7 refuses sampling parameters: {body}");

    let r = h.post("/v1/chat/completions", &ask("m-gemini3")).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let body = sent(&h.gemini);
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingLevel": "medium", "includeThoughts": true})
    );
    assert_eq!(body["generationConfig"]["temperature"], 0.3);

    // The catalog's word beats the inference (a proxy serving an older model under a
    // newer name, say).
    let r = h.post("/v1/chat/completions", &ask("m-pinned")).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let body = sent(&h.anthropic);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 8192}));
    assert!(body.get("output_config").is_none(), "{body}");
}

/// An Anthropic client's own body (the same-format fast path) is adapted to the
/// model it lands on: a budget becomes adaptive thinking for Claude 4.7, adaptive
/// becomes a budget for Claude 4.5 (a fallback across generations), and sampling
/// parameters go where the model refuses them. Everything else is kept; a body that
/// needs nothing is forwarded byte for byte.
#[tokio::test]
async fn anthropic_bodies_are_adapted_to_the_model_they_land_on() {
    let extra = "  - id: m-opus47\n    deployments: [{ provider: anthropic, model: claude-opus-4-7 }]\n\
                 \x20 - id: m-haiku45\n    deployments: [{ provider: anthropic, model: claude-haiku-4-5 }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let history = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "c2lnbmF0dXJl/+=="},
            {"type": "text", "text": "hello"}]},
        {"role": "user", "content": "again"}
    ]);
    let sent = || h.anthropic.received().last().unwrap().clone();

    let body = json!({"model": "m-opus47", "max_tokens": 3000, "temperature": 1,
        "thinking": {"type": "enabled", "budget_tokens": 2048}, "container": {"id": "container_1"},
        "messages": history});
    let r = h.post("/v1/messages", &body).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let up = sent().body;
    assert_eq!(up["model"], "claude-opus-4-7");
    assert_eq!(up["thinking"], json!({"type": "adaptive"}));
    assert_eq!(up["output_config"], json!({"effort": "low"}));
    assert!(up.get("temperature").is_none(), "{up}");
    assert_eq!(
        up["container"],
        json!({"id": "container_1"}),
        "a field the gateway has no model for"
    );
    assert_eq!(up["messages"], history, "history (thinking signature included) unchanged");

    let body = json!({"model": "m-haiku45", "max_tokens": 3000,
        "thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"},
        "messages": history});
    let r = h.post("/v1/messages", &body).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let up = sent().body;
    assert_eq!(up["thinking"], json!({"type": "enabled", "budget_tokens": 8192}));
    assert!(up.get("output_config").is_none(), "{up}");
    assert_eq!(up["max_tokens"], 8192 + 1024);

    // Already in the model's form: the client's bytes, only the model replaced.
    let raw = r#"{"model":"m-opus47","max_tokens":300,"thinking":{"type":"adaptive"},"messages":[{"role":"user","content":"caf\u00e9"}]}"#;
    let r = h.post_raw("/v1/messages", raw).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let expected = raw.replace("m-opus47", "claude-opus-4-7");
    assert_eq!(std::str::from_utf8(&sent().raw).unwrap(), expected);
}

/// OpenAI's reasoning models refuse `max_tokens`: an OpenAI client's own body keeps
/// its limit as `max_completion_tokens` there (clamped to the deployment's ceiling
/// like any other limit), and keeps `max_tokens` elsewhere, or where the catalog
/// says the model takes it (another vendor's server, here DeepSeek's, serving a
/// model of that name).
#[tokio::test]
async fn max_tokens_reaches_openai_reasoning_models_as_max_completion_tokens() {
    let compat = switchyard_testkit::FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    compat.set_flavour(Some(switchyard_testkit::Flavour::DeepSeek));
    let providers = format!(
        "  compat: {{ wire: openai-chat, endpoint: \"{}/v1\", credentials: {{ none: true }} }}\n",
        compat.base_url()
    );
    let extra = "  - id: m-sol\n    deployments: [{ provider: openai, model: gpt-6.2-sol }]\n\
                 \x20 - id: m-sol-capped\n    max_output_tokens: 100\n    \
                 deployments: [{ provider: openai, model: gpt-6.2-sol }]\n\
                 \x20 - id: m-sol-pinned\n    takes_max_tokens: true\n    \
                 deployments: [{ provider: compat, model: gpt-6.2-sol }]\n";
    let options =
        Options { providers_extra: providers, extra_models: extra.into(), ..Options::default() };
    let h = Harness::start_with(options).await;
    let ask = |model: &str| {
        json!({"model": model, "max_tokens": 500, "seed": 1,
               "messages": [{"role": "user", "content": "hi"}]})
    };
    let sent = || h.openai.received().last().unwrap().body.clone();
    for (model, limit) in [("m-sol", 500), ("m-sol-capped", 100)] {
        let r = h.post("/v1/chat/completions", &ask(model)).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        let up = sent();
        assert!(up.get("max_tokens").is_none(), "{up}");
        assert_eq!(up["max_completion_tokens"], limit, "{model}");
        assert_eq!(up["seed"], 1, "a field the gateway has no model for");
    }
    for (model, fake) in [("m-openai", &h.openai), ("m-sol-pinned", &compat)] {
        let r = h.post("/v1/chat/completions", &ask(model)).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        let up = fake.received().last().unwrap().body.clone();
        assert_eq!(up["max_tokens"], 500, "{model} takes max_tokens: kept");
    }
    // Nor its sampling parameters, but at their default: left out, and said so.
    let mut sampled = ask("m-sol");
    sampled["temperature"] = json!(0.2);
    sampled["top_p"] = json!(0.9);
    for path in ["/v1/chat/completions", "/v1/messages"] {
        let r = h.post(path, &sampled).await;
        assert_eq!(r.status(), 200, "{path}: {}", r.text().await.unwrap());
        let up = sent();
        assert!(up.get("temperature").is_none() && up.get("top_p").is_none(), "{path}: {up}");
    }
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(6)).await.unwrap();
    for record in &records[4..] {
        let edits = &record.field_edits;
        assert!(
            edits.contains(&"temperature: dropped (the model takes no sampling parameters)".into()),
            "{edits:?}"
        );
    }
}

/// Every model name an answer states: the top-level `model`, and the one inside a
/// top-level `message` (Anthropic `message_start`) or `response` (Responses events).
fn stated_models(v: &Value) -> Vec<String> {
    [&v["model"], &v["message"]["model"], &v["response"]["model"]]
        .into_iter()
        .filter_map(|m| m.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn the_answer_names_the_model_exactly_as_the_client_asked_for_it() {
    // An alias whose provider model has another name, as routes and catalogs do.
    let extra = "  - id: conf-claude\n    deployments: [{ provider: anthropic, model: claude-haiku-4-5 }]\n  - id: conf-gpt\n    deployments: [{ provider: openai, model: gpt-5-mini }]\n  - id: conf-gemini\n    deployments: [{ provider: gemini, model: gemini-3-flash }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let mut problems = Vec::new();
    for format in FORMATS {
        for (asked, served) in [
            ("conf-claude", "claude-haiku-4-5"),
            ("conf-gpt", "gpt-5-mini"),
            ("conf-gemini", "gemini-3-flash"),
            // Exactly as sent: another spelling of a catalog id stays as it was.
            ("M-Anthropic", "up-anthropic"),
            ("mock", "mock-echo"),
        ] {
            for stream in [false, true] {
                let body = client_request(format, Scenario::Text, asked, stream);
                let r = h.post_with(path(format), &body, &[]).await;
                let at = format!("{format:?} {asked} stream={stream}");
                if r.status() != 200 {
                    problems.push(format!("{at}: status {}", r.status()));
                    continue;
                }
                let served_header = r.headers().get("x-gateway-model").cloned();
                let bytes = r.bytes().await.unwrap();
                let values: Vec<Value> = if stream {
                    json_events(&sse_events(&bytes))
                } else {
                    vec![serde_json::from_slice(&bytes).unwrap()]
                };
                let stated: Vec<String> = values.iter().flat_map(stated_models).collect();
                if stated.is_empty() || stated.iter().any(|m| m != asked) {
                    problems.push(format!("{at}: the answer names {stated:?}"));
                }
                if stated.iter().any(|m| m == served) && served != asked {
                    problems.push(format!("{at}: the provider's model {served} leaked"));
                }
                if served_header.is_none() {
                    problems.push(format!("{at}: no x-gateway-model"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} broken:\n{}", problems.len(), problems.join("\n"));
}

/// The output items of a Responses answer: the whole body's `output`, or the items
/// of its stream's `response.output_item.done` events.
fn responses_output(bytes: &[u8], stream: bool) -> Vec<Value> {
    if stream {
        sse_events(bytes)
            .iter()
            .filter(|e| e.event.as_deref() == Some("response.output_item.done"))
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .map(|e| e["item"].clone())
            .collect()
    } else {
        serde_json::from_slice::<Value>(bytes)
            .ok()
            .and_then(|r| r["output"].as_array().cloned())
            .unwrap_or_default()
    }
}

/// Codex with reasoning on a Claude upstream: the first turn's thinking comes back
/// to the client as a reasoning item whose `encrypted_content` the gateway sealed;
/// sent back with the tool's result, it becomes the signed thinking block Anthropic
/// requires before the `tool_use` it continues (the strict fake refuses the turn
/// otherwise, as Anthropic does), or Converse's `reasoningContent` for Claude on
/// Bedrock.
#[tokio::test]
async fn thinking_survives_a_responses_tool_round_trip_on_claude() {
    let m = Matrix::start().await;
    let h = &m.h;
    let tools = json!([{"type": "function", "name": TOOL_NAME, "description": TOOL_DESCRIPTION,
        "parameters": weather_schema()}]);
    let mut p = Problems::default();
    let claudes =
        [Upstream::Anthropic, Upstream::Bedrock, Upstream::BedrockClaude, Upstream::VertexClaude];
    for (upstream, stream) in claudes.map(|u| [(u, false), (u, true)]).concat() {
        let mode = format!("{upstream:?} stream={stream}");
        let vendor = upstream.family();
        let fake = upstream.fake(&m);
        let model = upstream.catalog_model();
        fake.clear_script();
        fake.push(
            canned::reasoning_then_tool_call(
                vendor,
                upstream.upstream_model(),
                THINKING,
                TOOL_NAME,
                HISTORY_ARGS,
                stream,
            )
            .into(),
        );
        let user =
            json!({"type": "message", "role": "user", "content": Scenario::Tools.user_text()});
        let first = json!({
            "model": model, "stream": stream, "store": false,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "tools": tools, "input": [user],
        });
        let r = h.post(path(ClientFormat::OpenAiResponses), &first).await;
        let bytes = r.bytes().await.unwrap();
        let items = responses_output(&bytes, stream);
        let reasoning = items.iter().find(|i| i["type"] == "reasoning").cloned();
        let call = items.iter().find(|i| i["type"] == "function_call").cloned();
        let (Some(reasoning), Some(call)) = (reasoning, call) else {
            p.push(format!("{mode}: no reasoning and call items: {}", shorten(&bytes)));
            continue;
        };
        let sealed = reasoning["encrypted_content"].as_str().unwrap_or_default();
        p.check(
            sealed.starts_with("sy1.") && !sealed.contains(ANTHROPIC_THINKING_SIGNATURE),
            || format!("{mode}: encrypted_content is not a sealed token: {reasoning}"),
        );
        p.eq(&format!("{mode}: summary"), &reasoning["summary"][0]["text"], &json!(THINKING));

        // The next turn, as Codex sends it: the items back, then the tool's output.
        let before = fake.request_count();
        let second = json!({
            "model": model, "stream": stream, "store": false,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
            "tools": tools,
            "input": [user, reasoning, call,
                {"type": "function_call_output", "call_id": call["call_id"], "output": TOOL_OUTPUT}],
        });
        let r = h.post(path(ClientFormat::OpenAiResponses), &second).await;
        let status = r.status().as_u16();
        let bytes = r.bytes().await.unwrap();
        p.check(status == 200, || format!("{mode}: second turn {status}: {}", shorten(&bytes)));
        let seen = tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1)).await;
        let Some(sent) = seen.ok().and_then(|r| r.into_iter().rfind(|rx| upstream.owns(rx))) else {
            p.push(format!("{mode}: the second turn never reached the upstream"));
            continue;
        };
        p.check(thinking_on(vendor, &sent.body), || format!("{mode}: thinking not sent"));
        let turns = view_of(vendor, &sent.body).turns;
        let assistant = turns.get(1).cloned().unwrap_or_default();
        p.eq(
            &format!("{mode}: restored block"),
            Some(&sent.body["messages"][1]["content"][0]),
            signed_thinking_block(vendor, THINKING, ANTHROPIC_THINKING_SIGNATURE).as_ref(),
        );
        p.check(matches!(assistant.1.get(1), Some(Item::Call { .. })), || {
            format!("{mode}: the call does not follow the thinking: {assistant:?}")
        });
    }
    // A token that does not open (altered, or another gateway's) is not trusted.
    let forged = json!({
        "model": "m-anthropic", "input": [
            {"type": "message", "role": "user", "content": "x"},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "s"}],
             "encrypted_content": "sy1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
            {"type": "message", "role": "user", "content": "y"}],
    });
    let before = h.anthropic.request_count();
    let r = h.post(path(ClientFormat::OpenAiResponses), &forged).await;
    p.check(r.status() == 200, || format!("forged token: status {}", r.status()));
    let sent = h.anthropic.received().into_iter().nth(before).map(|r| r.body).unwrap_or_default();
    p.check(!sent.to_string().contains("sy1."), || format!("a forged token went upstream: {sent}"));
    assert!(p.0.is_empty(), "thinking round trip problems:\n  - {}", p.0.join("\n  - "));
}

/// A tool round trip's history in `format`: the call `id` (with `reasoning`, an
/// OpenAI-style reasoning trace before it that is no Anthropic thinking block) and
/// its result.
fn tool_history(format: ClientFormat, id: &str, stream: bool, reasoning: bool) -> Value {
    let user = Scenario::Tools.user_text();
    let tools_chat = json!([{"type": "function", "function": {"name": TOOL_NAME,
        "description": TOOL_DESCRIPTION, "parameters": weather_schema()}}]);
    match format {
        ClientFormat::OpenAiChat => {
            let mut assistant = json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": TOOL_NAME, "arguments": HISTORY_ARGS}}]});
            let mut body = json!({"model": "m-anthropic", "stream": stream, "tools": tools_chat,
                "messages": [{"role": "user", "content": user}]});
            if reasoning {
                assistant["reasoning_content"] = json!(THINKING);
                body["reasoning_effort"] = json!("medium");
            }
            let messages = body["messages"].as_array_mut().unwrap();
            messages.push(assistant);
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": TOOL_OUTPUT}));
            body
        }
        ClientFormat::OpenAiResponses => {
            let mut input = vec![json!({"type": "message", "role": "user", "content": user})];
            if reasoning {
                input.push(json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": THINKING}],
                    "encrypted_content": "gAAAAABopaque-openai-reasoning"}));
            }
            input.push(json!({"type": "function_call", "call_id": id, "name": TOOL_NAME, "arguments": HISTORY_ARGS}));
            input.push(
                json!({"type": "function_call_output", "call_id": id, "output": TOOL_OUTPUT}),
            );
            let mut body = json!({"model": "m-anthropic", "stream": stream, "input": input,
                "tools": [{"type": "function", "name": TOOL_NAME, "description": TOOL_DESCRIPTION,
                    "parameters": weather_schema()}]});
            if reasoning {
                body["reasoning"] = json!({"effort": "medium"});
            }
            body
        }
        ClientFormat::Anthropic => {
            let mut body = json!({"model": "m-anthropic", "stream": stream, "max_tokens": 4096,
                "tools": [{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": weather_schema()}],
                "messages": [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": [
                        {"type": "tool_use", "id": id, "name": TOOL_NAME, "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": TOOL_OUTPUT}]}]});
            if reasoning {
                body["thinking"] =
                    json!({"type": "enabled", "budget_tokens": ANTHROPIC_CLIENT_BUDGET});
            }
            body
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    }
}

/// Ids other providers and agents make (`functions.get_weather:0`, longer than 64)
/// reach Anthropic, and Claude on Bedrock, in their pattern (`[a-zA-Z0-9_-]{1,64}`),
/// the call and its result mapped alike, from every client format, translated or
/// on the fast path (the strict fakes refuse both an id outside the pattern and a
/// result that answers no call).
#[tokio::test]
async fn foreign_tool_ids_reach_claude_in_its_pattern_and_still_pair() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    let long = format!("call_{}", "x".repeat(70));
    for upstream in
        [Upstream::Anthropic, Upstream::Bedrock, Upstream::BedrockClaude, Upstream::VertexClaude]
    {
        for format in FORMATS {
            for id in ["functions.get_weather:0", long.as_str()] {
                for stream in [false, true] {
                    let mode = format!("{upstream:?} {format:?} id={id} stream={stream}");
                    let mut body = tool_history(format, id, stream, false);
                    body["model"] = json!(upstream.catalog_model());
                    let (status, bytes, rx) =
                        upstreams::exchange(&m, format, upstream, &body).await;
                    if status != 200 {
                        p.push(format!("{mode}: status {status}: {}", shorten(&bytes)));
                        continue;
                    }
                    let Some(rx) = rx else { continue };
                    let view = view_of_upstream(upstream, &rx.body);
                    let item = |turn: usize| view.turns.get(turn).and_then(|t| t.1.first());
                    let call = match item(1) {
                        Some(Item::Call { id, .. }) => id.clone(),
                        other => {
                            p.push(format!("{mode}: no call in turn 1: {other:?}"));
                            continue;
                        }
                    };
                    let result = match item(2) {
                        Some(Item::Result { id, .. }) => id.clone(),
                        other => {
                            p.push(format!("{mode}: no result in turn 2: {other:?}"));
                            continue;
                        }
                    };
                    p.eq(&format!("{mode}: the pair"), &call, &result);
                    p.check(
                        call.as_deref().is_some_and(|c| {
                            c != id
                                && (1..=64).contains(&c.len())
                                && c.bytes()
                                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                        }),
                        || format!("{mode}: not in the pattern: {call:?}"),
                    );
                }
            }
        }
    }
    assert!(p.0.is_empty(), "tool id problems:\n  - {}", p.0.join("\n  - "));
}

/// A tool loop whose last assistant turn came from another family (an OpenAI
/// reasoning model: `reasoning_content`, a reasoning item that is not ours) and
/// continues on Claude with thinking on: Anthropic's rule (Claude's on Bedrock
/// too) is to go without extended thinking for that request; the descriptor says so.
#[tokio::test]
async fn a_tool_loop_from_another_family_continues_on_claude_without_thinking() {
    let m = Matrix::start().await;
    let h = &m.h;
    let mut p = Problems::default();
    for (upstream, note) in [
        (Upstream::Anthropic, "thinking_off:anthropic_tool_loop"),
        (Upstream::Bedrock, "thinking_off:bedrock_tool_loop"),
        // Claude's rules, wherever it runs: the publisher's note.
        (Upstream::BedrockClaude, "thinking_off:anthropic_tool_loop"),
        (Upstream::VertexClaude, "thinking_off:anthropic_tool_loop"),
    ] {
        let vendor = upstream.family();
        for format in FORMATS {
            for stream in [false, true] {
                let mode = format!("{upstream:?} {format:?} stream={stream}");
                let mut body = tool_history(format, "call_abc123", stream, true);
                body["model"] = json!(upstream.catalog_model());
                let resp = h.post_with(path(format), &body, &[]).await;
                let status = resp.status().as_u16();
                let route =
                    resp.headers().get("x-gateway-route").map(|v| v.to_str().unwrap().to_owned());
                let bytes = resp.bytes().await.unwrap();
                p.check(status == 200, || format!("{mode}: status {status}: {}", shorten(&bytes)));
                p.check(route.as_deref().is_some_and(|r| r.contains(note)), || {
                    format!("{mode}: the descriptor does not say so: {route:?}")
                });
                let sent = upstream.fake(&m).received().into_iter().rfind(|rx| upstream.owns(rx));
                let sent = sent.map(|r| r.body).unwrap_or_default();
                p.check(sent.is_object() && !thinking_on(vendor, &sent), || {
                    format!("{mode}: thinking still sent: {sent}")
                });
            }
        }
        // With its own signed thinking the same loop keeps thinking on.
        let mut own = tool_history(ClientFormat::Anthropic, "toolu_01", false, true);
        own["model"] = json!(upstream.catalog_model());
        own["messages"][1]["content"].as_array_mut().unwrap().insert(
            0,
            json!(
            {"type": "thinking", "thinking": THINKING, "signature": ANTHROPIC_THINKING_SIGNATURE}),
        );
        let (status, bytes, rx) =
            upstreams::exchange(&m, ClientFormat::Anthropic, upstream, &own).await;
        p.check(status == 200, || {
            format!("{upstream:?} own thinking: status {status}: {}", shorten(&bytes))
        });
        p.check(rx.is_some_and(|r| thinking_on(vendor, &r.body)), || {
            format!("{upstream:?} own thinking: thinking dropped")
        });
    }
    assert!(p.0.is_empty(), "cross-family problems:\n  - {}", p.0.join("\n  - "));
}

/// Two calls of one tool (Paris, Tokyo) whose results the client sends back in the
/// other order reach Gemini in the order of the calls, each with its own result
/// (Gemini pairs them by position), from every client format.
#[tokio::test]
async fn parallel_results_reach_gemini_in_the_order_of_their_calls() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    let calls = [
        ("call_paris", r#"{"city":"Paris"}"#, "Paris: 18C"),
        ("call_tokyo", r#"{"city":"Tokyo"}"#, "Tokyo: 25C"),
    ];
    let user = "weather in Paris and Tokyo?";
    for (gemini, format) in
        FORMATS.map(|f| [(Upstream::Gemini, f), (Upstream::VertexGemini, f)]).concat()
    {
        let model = gemini.catalog_model();
        let body = match format {
            ClientFormat::OpenAiChat => {
                let tool_calls: Vec<Value> = calls.iter().map(|(id, args, _)| json!(
                    {"id": id, "type": "function", "function": {"name": TOOL_NAME, "arguments": args}})).collect();
                let mut messages = vec![
                    json!({"role": "user", "content": user}),
                    json!({"role": "assistant", "content": null, "tool_calls": tool_calls}),
                ];
                for (id, _, out) in calls.iter().rev() {
                    messages.push(json!({"role": "tool", "tool_call_id": id, "content": out}));
                }
                json!({"model": model, "messages": messages})
            }
            ClientFormat::OpenAiResponses => {
                let mut input = vec![json!({"type": "message", "role": "user", "content": user})];
                for (id, args, _) in calls {
                    input.push(json!({"type": "function_call", "call_id": id, "name": TOOL_NAME, "arguments": args}));
                }
                for (id, _, out) in calls.iter().rev() {
                    input.push(
                        json!({"type": "function_call_output", "call_id": id, "output": out}),
                    );
                }
                json!({"model": model, "input": input})
            }
            ClientFormat::Anthropic => {
                let uses: Vec<Value> = calls
                    .iter()
                    .map(|(id, args, _)| {
                        json!({"type": "tool_use", "id": id,
                    "name": TOOL_NAME, "input": serde_json::from_str::<Value>(args).unwrap()})
                    })
                    .collect();
                let results: Vec<Value> = calls
                    .iter()
                    .rev()
                    .map(|(id, _, out)| {
                        json!(
                    {"type": "tool_result", "tool_use_id": id, "content": out})
                    })
                    .collect();
                json!({"model": model, "max_tokens": 256, "messages": [
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": uses},
                    {"role": "user", "content": results}]})
            }
            ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
        };
        let (status, bytes, rx) = upstreams::exchange(&m, format, gemini, &body).await;
        if status != 200 {
            p.push(format!("{gemini:?} {format:?}: status {status}: {}", shorten(&bytes)));
            continue;
        }
        let Some(rx) = rx else { continue };
        let responses: Vec<String> = rx.body["contents"][2]["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|part| {
                part["functionResponse"]["response"]["content"].as_str().map(str::to_owned)
            })
            .collect();
        p.eq(
            &format!("{gemini:?} {format:?}: results in call order"),
            &json!(responses),
            &json!(["Paris: 18C", "Tokyo: 25C"]),
        );
    }
    assert!(p.0.is_empty(), "parallel result problems:\n  - {}", p.0.join("\n  - "));
}

/// A Chat client's tool loop with reasoning on a Claude upstream: the client can
/// only echo `reasoning_content` (text, no signature), so the gateway keeps the
/// signed thinking by tool-call id and puts it back in front of the call on the
/// next turn; thinking stays on (nothing for Anthropic to refuse, nothing dropped).
/// The same on Claude by Bedrock, in Converse's `reasoningContent`.
#[tokio::test]
async fn thinking_survives_a_chat_tool_round_trip_on_claude() {
    let m = Matrix::start().await;
    let h = &m.h;
    let tools = json!([{"type": "function", "function": {"name": TOOL_NAME,
        "description": TOOL_DESCRIPTION, "parameters": weather_schema()}}]);
    let mut p = Problems::default();
    let claudes =
        [Upstream::Anthropic, Upstream::Bedrock, Upstream::BedrockClaude, Upstream::VertexClaude];
    for (upstream, stream) in claudes.map(|u| [(u, false), (u, true)]).concat() {
        let mode = format!("{upstream:?} stream={stream}");
        let vendor = upstream.family();
        let fake = upstream.fake(&m);
        let model = upstream.catalog_model();
        fake.clear_script();
        fake.push(
            canned::reasoning_then_tool_call(
                vendor,
                upstream.upstream_model(),
                THINKING,
                TOOL_NAME,
                HISTORY_ARGS,
                stream,
            )
            .into(),
        );
        let user = json!({"role": "user", "content": Scenario::Tools.user_text()});
        let first = json!({"model": model, "stream": stream, "reasoning_effort": "medium",
            "tools": tools, "messages": [user]});
        let r = h.post(path(ClientFormat::OpenAiChat), &first).await;
        let bytes = r.bytes().await.unwrap();
        let answer = match decode(ClientFormat::OpenAiChat, stream, &bytes) {
            Ok(a) => a,
            Err(e) => {
                p.push(format!("{mode}: first turn: {e}"));
                continue;
            }
        };
        let Some(call) = answer.content.iter().find_map(|part| match part {
            Part::ToolCall(c) => Some(c.clone()),
            _ => None,
        }) else {
            p.push(format!("{mode}: no tool call: {}", shorten(&bytes)));
            continue;
        };
        // The next turn, as a Chat client sends it.
        let before = fake.request_count();
        let second = json!({"model": model, "stream": stream, "reasoning_effort": "medium",
            "tools": tools, "messages": [user,
                {"role": "assistant", "content": null, "reasoning_content": THINKING,
                 "tool_calls": [{"id": call.id, "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": call.arguments}}]},
                {"role": "tool", "tool_call_id": call.id, "content": TOOL_OUTPUT}]});
        let r = h.post(path(ClientFormat::OpenAiChat), &second).await;
        let status = r.status().as_u16();
        let route = r.headers().get("x-gateway-route").map(|v| v.to_str().unwrap().to_owned());
        let bytes = r.bytes().await.unwrap();
        p.check(status == 200, || format!("{mode}: second turn {status}: {}", shorten(&bytes)));
        p.check(!route.unwrap_or_default().contains("thinking_off"), || {
            format!("{mode}: thinking was turned off")
        });
        let seen = tokio::time::timeout(WAIT, fake.wait_for_requests(before + 1)).await;
        let Some(sent) = seen.ok().and_then(|r| r.into_iter().rfind(|rx| upstream.owns(rx))) else {
            p.push(format!("{mode}: the second turn never reached the upstream"));
            continue;
        };
        p.check(thinking_on(vendor, &sent.body), || format!("{mode}: thinking not sent"));
        p.eq(
            &format!("{mode}: restored block"),
            Some(&sent.body["messages"][1]["content"][0]),
            signed_thinking_block(vendor, THINKING, ANTHROPIC_THINKING_SIGNATURE).as_ref(),
        );
    }
    assert!(p.0.is_empty(), "chat thinking round trip problems:\n  - {}", p.0.join("\n  - "));
}

// ---------------------------------------------------------------------------------
// Documents, untranslatable parts, blank text, the Chat usage chunk
// ---------------------------------------------------------------------------------

/// A tiny PDF, base64.
const PDF_B64: &str = "JVBERi0xLjQKMSAwIG9iago8PC9UeXBlL0NhdGFsb2c+PgplbmRvYmoKdHJhaWxlcgo8PC9Sb290IDEgMCBSPj4KJSVFT0YK";
const PDF_MEDIA: &str = "application/pdf";
const PDF_URL: &str = "https://example.com/docs/report.pdf";
const FILE_ID: &str = "file-abc123";
const DOC_QUESTION: &str = "summarize this";

/// How the client hands over its document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DocForm {
    Inline,
    Url,
    /// An uploaded file by id (OpenAI `file_id`, Anthropic's Files API source).
    FileId,
    /// Inline, inside a tool result.
    InToolResult,
}

/// The client's request for a document form, `None` where its format has no such
/// form (Chat Completions has no URL for files, and its tool messages carry only text).
fn document_request(
    format: ClientFormat,
    form: DocForm,
    model: &str,
    stream: bool,
) -> Option<Value> {
    let data_uri = format!("data:{PDF_MEDIA};base64,{PDF_B64}");
    let mut body = match format {
        ClientFormat::OpenAiChat => {
            let file = match form {
                DocForm::Inline => json!({"file_data": data_uri, "filename": "report.pdf"}),
                DocForm::FileId => json!({"file_id": FILE_ID}),
                DocForm::Url | DocForm::InToolResult => return None,
            };
            json!({"messages": [{"role": "user", "content": [
                {"type": "text", "text": DOC_QUESTION},
                {"type": "file", "file": file},
            ]}]})
        }
        ClientFormat::OpenAiResponses => {
            let file = match form {
                DocForm::Inline | DocForm::InToolResult => {
                    json!({"type": "input_file", "filename": "report.pdf", "file_data": data_uri})
                }
                DocForm::Url => json!({"type": "input_file", "file_url": PDF_URL}),
                DocForm::FileId => json!({"type": "input_file", "file_id": FILE_ID}),
            };
            if form == DocForm::InToolResult {
                json!({
                    "tools": [{"type": "function", "name": TOOL_NAME, "parameters": weather_schema()}],
                    "input": [
                        {"role": "user", "content": "fetch the report"},
                        {"type": "function_call", "call_id": CALL_ID, "name": TOOL_NAME, "arguments": HISTORY_ARGS},
                        {"type": "function_call_output", "call_id": CALL_ID, "output": [
                            {"type": "input_text", "text": "report attached"}, file,
                        ]},
                        {"role": "user", "content": DOC_QUESTION},
                    ]
                })
            } else {
                json!({"input": [{"role": "user", "content": [
                    {"type": "input_text", "text": DOC_QUESTION}, file,
                ]}]})
            }
        }
        ClientFormat::Anthropic => {
            let source = match form {
                DocForm::Inline | DocForm::InToolResult => {
                    json!({"type": "base64", "media_type": PDF_MEDIA, "data": PDF_B64})
                }
                DocForm::Url => json!({"type": "url", "url": PDF_URL}),
                DocForm::FileId => json!({"type": "file", "file_id": FILE_ID}),
            };
            let document = json!({"type": "document", "source": source, "title": "report.pdf",
                                  "context": "Q3 figures", "citations": {"enabled": true},
                                  "cache_control": {"type": "ephemeral"}});
            let messages = if form == DocForm::InToolResult {
                json!([
                    {"role": "user", "content": "fetch the report"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": CALL_ID,
                        "name": TOOL_NAME, "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": CALL_ID, "content": [
                            {"type": "text", "text": "report attached"}, document]},
                        {"type": "text", "text": DOC_QUESTION},
                    ]},
                ])
            } else {
                json!([{"role": "user", "content": [
                    {"type": "text", "text": DOC_QUESTION}, document,
                ]}])
            };
            let mut body = json!({"max_tokens": 1024, "messages": messages});
            if form == DocForm::InToolResult {
                body["tools"] = json!([{"name": TOOL_NAME, "input_schema": weather_schema()}]);
            }
            body
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    };
    body["model"] = json!(model);
    if stream {
        body["stream"] = json!(true);
    }
    Some(body)
}

/// The document the upstream must receive, in the view's terms; `None`: the request
/// must be refused with a 400 naming the part (and nothing sent upstream).
fn expected_document(format: ClientFormat, form: DocForm, u: Upstream) -> Option<Item> {
    let inline = Item::Document { media_type: PDF_MEDIA.into(), data: PDF_B64.into() };
    let url = Item::Document { media_type: "url".into(), data: PDF_URL.into() };
    let file_id = Item::Document { media_type: "file_id".into(), data: FILE_ID.into() };
    match form {
        DocForm::Inline | DocForm::InToolResult => Some(inline),
        // Chat Completions takes no URL for a file, nor Converse one but `s3://`,
        // and fetching it is not the gateway's job.
        DocForm::Url => takes_document_urls(u).then_some(url),
        // An uploaded file is the business of the provider that holds it: only the
        // client's own body, forwarded as it is, may carry it.
        DocForm::FileId => forwards_own_body(format, u).then_some(file_id),
    }
}

/// Whether a wire takes a document by an http(s) URL (Claude's and Gemini's, on
/// their own APIs and on Vertex; the Responses API's `file_url`).
fn takes_document_urls(u: Upstream) -> bool {
    match u.family() {
        Vendor::Anthropic | Vendor::Gemini => true,
        Vendor::OpenAi => u.speaks_responses(),
        Vendor::Bedrock => false,
    }
}

/// Whether a client's own body goes to this wire as it wrote it (edited: the fast
/// path): its own API, or a cloud that serves that API's body. Azure's deployments
/// are a dialect of their own (their bodies name no model, their dated API refuses
/// newer fields): a Chat body is translated for them.
fn forwards_own_body(format: ClientFormat, u: Upstream) -> bool {
    match format {
        ClientFormat::OpenAiChat => matches!(u, Upstream::OpenAi | Upstream::VertexOpen),
        ClientFormat::Anthropic => {
            matches!(u, Upstream::Anthropic | Upstream::BedrockClaude | Upstream::VertexClaude)
        }
        ClientFormat::OpenAiResponses => u.speaks_responses(),
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    }
}

/// What a refusal of this form must name.
fn refusal_names(form: DocForm) -> &'static str {
    match form {
        DocForm::Url => PDF_URL,
        _ => FILE_ID,
    }
}

/// A document (a PDF) reaches every wire in that wire's own form, inline and by URL
/// where the wire takes URLs, from every client format, streamed and not; a form the
/// target cannot take is a 400 that names the part, and nothing is sent. Never
/// dropped on a 200.
#[tokio::test]
async fn documents_reach_every_wire_or_are_refused_by_name() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    for format in FORMATS {
        for upstream in UPSTREAMS {
            let vendor = upstream.family();
            for form in [DocForm::Inline, DocForm::Url, DocForm::FileId, DocForm::InToolResult] {
                for stream in [false, true] {
                    let Some(body) =
                        document_request(format, form, upstream.catalog_model(), stream)
                    else {
                        continue;
                    };
                    let label = format!("{format:?} -> {upstream:?}, {form:?}, stream={stream}");
                    let (status, bytes, rx) =
                        upstreams::exchange(&m, format, upstream, &body).await;
                    let sent = usize::from(rx.is_some());
                    match expected_document(format, form, upstream) {
                        Some(want) => {
                            if status != 200 {
                                p.push(format!("{label}: status {status}: {}", shorten(&bytes)));
                                continue;
                            }
                            let Some(rx) = rx else {
                                p.push(format!("{label}: no upstream request"));
                                continue;
                            };
                            let view = view_of_upstream(upstream, &rx.body);
                            for m in &view.problems {
                                p.push(format!("{label}: upstream shape: {m}"));
                            }
                            let docs: Vec<&Item> = view
                                .turns
                                .iter()
                                .flat_map(|(_, items)| items)
                                .filter(|i| matches!(i, Item::Document { .. }))
                                .collect();
                            p.eq(&format!("{label}: upstream documents"), docs, vec![&want]);
                            let texts: Vec<&Item> = view
                                .turns
                                .iter()
                                .flat_map(|(_, items)| items)
                                .filter(|i| matches!(i, Item::Text(_)))
                                .collect();
                            p.check(texts.contains(&&Item::Text(DOC_QUESTION.into())), || {
                                format!("{label}: the question is not upstream: {texts:?}")
                            });
                            if vendor == Vendor::Anthropic && format != ClientFormat::Anthropic {
                                p.eq(
                                    &format!("{label}: anthropic document title"),
                                    document_block(&rx.body)["title"].as_str(),
                                    (form != DocForm::Url).then_some("report.pdf"),
                                );
                            }
                            // Converse names every document: the client's file
                            // name (or title), without its extension.
                            if vendor == Vendor::Bedrock {
                                p.eq(
                                    &format!("{label}: bedrock document name"),
                                    converse_document(&rx.body)["name"].as_str(),
                                    Some("report"),
                                );
                            }
                            // The file name the client gave travels (Anthropic's
                            // documents have a title instead).
                            if vendor == Vendor::OpenAi
                                && format != ClientFormat::Anthropic
                                && form != DocForm::FileId
                            {
                                p.check(rx.raw.windows(10).any(|w| w == b"report.pdf"), || {
                                    format!("{label}: the file name is not upstream")
                                });
                            }
                            match decode(format, stream, &bytes) {
                                Ok(resp) => p.eq(
                                    &format!("{label}: client content"),
                                    summarize(&resp),
                                    vec![Out::Text(format!("{ECHO_PREFIX}{DOC_QUESTION}"))],
                                ),
                                Err(e) => p.push(format!("{label}: {e}")),
                            }
                        }
                        None => {
                            let text = String::from_utf8_lossy(&bytes);
                            p.check(status == 400, || {
                                format!("{label}: status {status}, want 400: {}", shorten(&bytes))
                            });
                            p.check(sent == 0, || format!("{label}: {sent} upstream request(s)"));
                            p.check(text.contains(refusal_names(form)), || {
                                format!("{label}: the refusal does not name the part: {text}")
                            });
                        }
                    }
                }
            }
        }
    }
    assert!(p.0.is_empty(), "document problems:\n  - {}", p.0.join("\n  - "));
}

/// The first `document` block of an Anthropic body, at any depth of a message.
fn document_block(body: &Value) -> Value {
    fn find(v: &Value) -> Option<Value> {
        match v {
            Value::Object(m) if m.get("type") == Some(&json!("document")) => Some(v.clone()),
            Value::Object(m) => m.values().find_map(find),
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(&body["messages"]).unwrap_or_default()
}

/// The first `document` block of a Converse body, in a turn or a tool result.
fn converse_document(body: &Value) -> Value {
    fn find(v: &Value) -> Option<Value> {
        match v {
            Value::Object(m) => match m.get("document") {
                Some(d) => Some(d.clone()),
                None => m.values().find_map(find),
            },
            Value::Array(a) => a.iter().find_map(find),
            _ => None,
        }
    }
    find(&body["messages"]).unwrap_or_default()
}

/// Content the gateway cannot translate (audio, Anthropic's server-tool blocks and
/// Files API sources) is refused by name when it would cross to another wire, and
/// goes as it came on the same-format fast path: never dropped without a word.
#[tokio::test]
async fn untranslatable_content_is_refused_by_name() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    let audio = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is said here?"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
    ]}]});
    let server_tools = json!({"max_tokens": 1024, "messages": [
        {"role": "user", "content": "search the web for rust"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
            {"type": "text", "text": "Rust is a language."},
        ]},
        {"role": "user", "content": "thanks"},
    ]});
    let files_image = json!({"max_tokens": 1024, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "source": {"type": "file", "file_id": FILE_ID}},
    ]}]});
    let cases = [
        (ClientFormat::OpenAiChat, &audio, "input_audio"),
        (ClientFormat::Anthropic, &server_tools, "server_tool_use"),
        (ClientFormat::Anthropic, &files_image, "`file` source"),
    ];
    for (format, body, needle) in cases {
        for upstream in UPSTREAMS {
            for stream in [false, true] {
                let mut body = body.clone();
                body["model"] = json!(upstream.catalog_model());
                if stream {
                    body["stream"] = json!(true);
                }
                let label = format!("{format:?} {needle} -> {upstream:?}, stream={stream}");
                let (status, bytes, rx) = upstreams::exchange(&m, format, upstream, &body).await;
                let sent = usize::from(rx.is_some());
                if forwards_own_body(format, upstream) {
                    // The client's own body, forwarded as it is.
                    p.check(status == 200 && sent == 1, || {
                        format!("{label}: status {status}, {sent} sent: {}", shorten(&bytes))
                    });
                    continue;
                }
                let text = String::from_utf8_lossy(&bytes);
                p.check(status == 400 && sent == 0, || {
                    format!(
                        "{label}: status {status}, {sent} sent, want a 400: {}",
                        shorten(&bytes)
                    )
                });
                p.check(text.contains(needle), || format!("{label}: not named: {text}"));
            }
        }
    }
    assert!(p.0.is_empty(), "untranslatable content:\n  - {}", p.0.join("\n  - "));
}

/// Consecutive turns of one role as one (Anthropic joins them).
fn joined(turns: Vec<(String, Vec<Item>)>) -> Vec<(String, Vec<Item>)> {
    let mut out: Vec<(String, Vec<Item>)> = Vec::new();
    for (role, items) in turns {
        match out.last_mut() {
            Some((prev, existing)) if *prev == role => existing.extend(items),
            _ => out.push((role, items)),
        }
    }
    out
}

/// A history with a blank assistant turn (a model that answered only a newline)
/// and a blank text part beside the last question.
fn blank_history(format: ClientFormat, model: &str, final_blank: bool, stream: bool) -> Value {
    let last_text = if final_blank { "  \n" } else { "third question" };
    let mut body = match format {
        ClientFormat::OpenAiChat => {
            let last = if final_blank {
                json!(last_text)
            } else {
                json!([{"type": "text", "text": last_text}, {"type": "text", "text": " "}])
            };
            json!({"messages": [
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": "second question"},
                {"role": "assistant", "content": "\n\n"},
                {"role": "user", "content": last},
            ]})
        }
        ClientFormat::OpenAiResponses => {
            let mut last = vec![json!({"type": "input_text", "text": last_text})];
            if !final_blank {
                last.push(json!({"type": "input_text", "text": " "}));
            }
            json!({"input": [
                {"role": "user", "content": "first question"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": "first answer"}]},
                {"role": "user", "content": "second question"},
                {"type": "message", "role": "assistant",
                 "content": [{"type": "output_text", "text": " \n"}]},
                {"role": "user", "content": last},
            ]})
        }
        ClientFormat::Anthropic => {
            let mut last = vec![json!({"type": "text", "text": last_text})];
            if !final_blank {
                last.push(json!({"type": "text", "text": " "}));
            }
            json!({"max_tokens": 1024, "messages": [
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": "second question"},
                {"role": "assistant", "content": [{"type": "text", "text": "\n"}]},
                {"role": "user", "content": last},
            ]})
        }
        ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
    };
    body["model"] = json!(model);
    if stream {
        body["stream"] = json!(true);
    }
    body
}

/// Anthropic refuses text blocks with nothing but whitespace (`text content blocks
/// must contain non-whitespace text`), and such blocks reach a history from other
/// providers' answers. On the way to Anthropic, or Claude on Bedrock, they are
/// dropped, and the turns left empty with them, from every client format (the fast
/// path too). A final turn of nothing but whitespace is not dropped into another
/// question: it reaches the upstream, which answers it.
#[tokio::test]
async fn blank_text_never_reaches_claude() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    let text = |t: &str| Item::Text(t.to_owned());
    let claudes =
        [Upstream::Anthropic, Upstream::Bedrock, Upstream::BedrockClaude, Upstream::VertexClaude];
    for (upstream, format) in FORMATS.map(|f| claudes.map(|u| (u, f))).concat() {
        for stream in [false, true] {
            let label = format!("{format:?} -> {upstream:?} stream={stream}");
            let body = blank_history(format, upstream.catalog_model(), false, stream);
            let (status, bytes, rx) = upstreams::exchange(&m, format, upstream, &body).await;
            if status != 200 {
                p.push(format!("{label}: status {status}: {}", shorten(&bytes)));
            }
            match rx {
                Some(rx) => {
                    let view = view_of_upstream(upstream, &rx.body);
                    for m in &view.problems {
                        p.push(format!("{label}: upstream shape: {m}"));
                    }
                    p.eq(
                        &format!("{label}: upstream conversation"),
                        joined(view.turns),
                        vec![
                            ("user".to_owned(), vec![text("first question")]),
                            ("assistant".to_owned(), vec![text("first answer")]),
                            (
                                "user".to_owned(),
                                vec![text("second question"), text("third question")],
                            ),
                        ],
                    );
                }
                None => p.push(format!("{label}: no upstream request")),
            }
            if status == 200 {
                // The echo of the last user turn (which the two questions may share
                // once the blank turn between them is gone).
                match decode(format, stream, &bytes).map(|r| summarize(&r)) {
                    Ok(out) => p.check(
                        matches!(out.as_slice(), [Out::Text(t)] if t.starts_with(ECHO_PREFIX) && t.ends_with("third question")),
                        || format!("{label}: client content {out:?}"),
                    ),
                    Err(e) => p.push(format!("{label}: {e}")),
                }
            }

            // The final question is blank: it goes as it is, and the upstream's
            // refusal is the answer.
            let body = blank_history(format, upstream.catalog_model(), true, stream);
            let (status, bytes, rx) = upstreams::exchange(&m, format, upstream, &body).await;
            p.check(status == 400, || {
                format!("{label}, blank final turn: status {status}: {}", shorten(&bytes))
            });
            match rx {
                Some(rx) => {
                    let turns = joined(view_of_upstream(upstream, &rx.body).turns);
                    let last = turns.last().and_then(|(_, items)| items.last().cloned());
                    p.eq(
                        &format!("{label}, blank final turn: last upstream block"),
                        last,
                        Some(text("  \n")),
                    );
                }
                None => p.push(format!("{label}, blank final turn: nothing reached the upstream")),
            }
        }
    }
    assert!(p.0.is_empty(), "blank text problems:\n  - {}", p.0.join("\n  - "));
}

/// OpenAI sends a stream's usage in a final chunk with `choices: []` only when the
/// request asks (`stream_options.include_usage`); clients that read `choices[0]` of
/// every chunk break on it otherwise. The gateway asks every OpenAI upstream for it
/// (to meter the stream) and passes it on only to a client that asked, whatever wire
/// served the stream; the record is metered from the upstream's usage either way.
#[tokio::test]
async fn chat_usage_chunk_only_when_asked() {
    let m = Matrix::start().await;
    let h = &m.h;
    let mut p = Problems::default();
    for u in UPSTREAMS {
        for asked in [false, true] {
            let label = format!("{u:?} include_usage={asked}");
            let fake = u.fake(&m);
            fake.clear_received();
            let mut body =
                client_request(ClientFormat::OpenAiChat, Scenario::Text, u.catalog_model(), true);
            if asked {
                body["stream_options"] = json!({"include_usage": true});
            } else if let Value::Object(map) = &mut body {
                map.remove("stream_options");
            }
            let r = h.post_with(path(ClientFormat::OpenAiChat), &body, &[]).await;
            let status = r.status().as_u16();
            let id =
                r.headers().get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let bytes = r.bytes().await.unwrap_or_default();
            if status != 200 {
                p.push(format!("{label}: status {status}: {}", shorten(&bytes)));
                continue;
            }
            let events = sse_events(&bytes);
            p.eq(
                &format!("{label}: last event"),
                events.last().map(|e| e.data.as_str()),
                Some("[DONE]"),
            );
            let chunks = json_events(&events);
            let usage_only: Vec<&Value> = chunks
                .iter()
                .filter(|c| c["choices"].as_array().is_some_and(Vec::is_empty))
                .collect();
            if asked {
                p.eq(&format!("{label}: usage-only chunks"), usage_only.len(), 1);
                p.check(
                    chunks
                        .last()
                        .is_some_and(|c| c["usage"]["completion_tokens"] == CANNED_OUTPUT_TOKENS),
                    || format!("{label}: the last chunk carries no usage: {:?}", chunks.last()),
                );
            } else {
                p.check(usage_only.is_empty(), || {
                    format!("{label}: a chunk without choices: {usage_only:?}")
                });
                p.check(chunks.iter().all(|c| c["choices"][0].is_object()), || {
                    format!("{label}: a chunk without choices[0]: {}", shorten(&bytes))
                });
            }
            // A Chat wire is asked for its usage all the same (the gateway meters it).
            if u.family() == Vendor::OpenAi && !u.speaks_responses() {
                let sent = fake.received().into_iter().rfind(|rx| u.owns(rx));
                let sent = sent.map(|r| r.body).unwrap_or_default();
                p.eq(
                    &format!("{label}: upstream include_usage"),
                    &sent["stream_options"]["include_usage"],
                    &json!(true),
                );
            }
            let Some(id) = id else {
                p.push(format!("{label}: no request id"));
                continue;
            };
            match tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await {
                Ok(rec) => {
                    p.eq(
                        &format!("{label}: metered output"),
                        rec.usage.output_tokens,
                        Some(CANNED_OUTPUT_TOKENS),
                    );
                    p.check(!rec.estimated, || format!("{label}: the record was estimated"));
                }
                Err(_) => p.push(format!("{label}: no record")),
            }
        }
    }
    assert!(p.0.is_empty(), "usage chunk problems:\n  - {}", p.0.join("\n  - "));
}

/// A call Gemini answers carries a long thought signature. Clients get an id of at
/// most 40 characters of `[A-Za-z0-9_-]` in every format, streamed or not; the
/// signature stays with the gateway and goes back with the call to Gemini on the
/// next turn; the same history fails over to OpenAI (which refuses ids over 40)
/// without a word.
#[tokio::test]
async fn gemini_calls_get_short_ids_and_their_signatures_come_back() {
    let m = Matrix::start().await;
    let signature = format!("CiQB{}==", "x7Yz".repeat(80));
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [
            {"functionCall": {"name": TOOL_NAME, "args": {"city": "Paris"}}, "thoughtSignature": signature}]},
        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "up-gemini", "responseId": "resp-gemini-0001"});
    let mut p = Problems::default();
    for (gemini, format) in
        FORMATS.map(|f| [(Upstream::Gemini, f), (Upstream::VertexGemini, f)]).concat()
    {
        let model = gemini.catalog_model();
        for stream in [false, true] {
            let mode = format!("{gemini:?} {format:?} stream={stream}");
            let fake = gemini.fake(&m);
            fake.clear_script();
            fake.push(if stream {
                Reply::sse(vec![format!("data: {answer}\r\n\r\n")])
            } else {
                Reply::json(answer.clone())
            });
            let first = tool_history(format, "unused", stream, false);
            // Only the question: the first turn.
            let first = match format {
                ClientFormat::OpenAiChat => json!({"model": model, "stream": stream,
                    "tools": first["tools"], "messages": [first["messages"][0]]}),
                ClientFormat::OpenAiResponses => json!({"model": model, "stream": stream,
                    "tools": first["tools"], "input": [first["input"][0]]}),
                ClientFormat::Anthropic => {
                    json!({"model": model, "stream": stream, "max_tokens": 256,
                    "tools": first["tools"], "messages": [first["messages"][0]]})
                }
                ClientFormat::Gemini => unreachable!("Gemini clients: gemini_client.rs"),
            };
            let r = m.h.post(path(format), &first).await;
            let bytes = r.bytes().await.unwrap();
            let Ok(resp) = decode(format, stream, &bytes) else {
                p.push(format!("{mode}: undecodable: {}", shorten(&bytes)));
                continue;
            };
            let Some(id) = resp.content.iter().find_map(|part| match part {
                Part::ToolCall(c) => Some(c.id.clone()),
                _ => None,
            }) else {
                p.push(format!("{mode}: no call: {}", shorten(&bytes)));
                continue;
            };
            p.check(
                id.len() <= 40
                    && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                || format!("{mode}: id {id:?} ({} chars)", id.len()),
            );
            p.check(!String::from_utf8_lossy(&bytes).contains("x7Yzx7Yz"), || {
                format!("{mode}: the signature reached the client")
            });
            // Next turn on Gemini: the call goes back with its signature.
            let mut next = tool_history(format, &id, stream, false);
            next["model"] = json!(model);
            let (status, bytes, rx) = upstreams::exchange(&m, format, gemini, &next).await;
            p.check(status == 200, || format!("{mode}: Gemini turn {status}: {}", shorten(&bytes)));
            let sent = rx.map(|r| r.body).unwrap_or_default();
            p.eq(
                &format!("{mode}: signature back"),
                &sent["contents"][1]["parts"][0]["thoughtSignature"],
                &json!(signature),
            );
            // The same history on OpenAI.
            next["model"] = json!("m-openai");
            let (status, bytes, _) = upstreams::exchange(&m, format, Upstream::OpenAi, &next).await;
            p.check(status == 200, || format!("{mode}: OpenAI turn {status}: {}", shorten(&bytes)));
        }
    }
    assert!(p.0.is_empty(), "gemini id problems:\n  - {}", p.0.join("\n  - "));
}

/// Claude Code's tool loop with thinking on a Claude upstream behind an alias: the
/// answer names the alias (so Claude Code keeps the turn's thinking), and the next
/// turn, carrying that thinking before its `tool_use`, is taken by Anthropic (the
/// strict fake refuses a loop whose thinking was lost), streamed as Claude Code
/// streams, on the fast path.
#[tokio::test]
async fn a_claude_code_tool_round_trip_with_thinking_through_an_alias() {
    let extra = "  - id: conf-claude\n    deployments: [{ provider: anthropic, model: claude-haiku-4-5 }]\n";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    h.anthropic.push(
        canned::reasoning_then_tool_call(
            Vendor::Anthropic,
            "claude-haiku-4-5",
            THINKING,
            TOOL_NAME,
            HISTORY_ARGS,
            true,
        )
        .into(),
    );
    let tools = json!([{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": weather_schema()}]);
    let user = json!({"role": "user", "content": Scenario::Tools.user_text()});
    let thinking = json!({"type": "enabled", "budget_tokens": ANTHROPIC_CLIENT_BUDGET});
    let first = json!({"model": "conf-claude", "stream": true, "max_tokens": 4096, "thinking": thinking,
        "tools": tools, "messages": [user]});
    let r = h.post_with("/v1/messages", &first, &[("anthropic-version", "2023-06-01")]).await;
    let bytes = r.bytes().await.unwrap();
    let events = json_events(&sse_events(&bytes));
    let start = events.iter().find(|e| e["type"] == "message_start").unwrap();
    assert_eq!(
        start["message"]["model"], "conf-claude",
        "the turn is the alias's: its thinking is kept"
    );
    let answer = decode(ClientFormat::Anthropic, true, &bytes).unwrap();
    // Claude Code sends the turn back as it received it: thinking, then the call.
    let blocks: Vec<Value> = answer
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Thinking { text, signature } => {
                Some(json!({"type": "thinking", "thinking": text, "signature": signature}))
            }
            Part::ToolCall(c) => Some(json!({"type": "tool_use", "id": c.id, "name": c.name,
                "input": serde_json::from_str::<Value>(&c.arguments).unwrap()})),
            _ => None,
        })
        .collect();
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let call_id = blocks[1]["id"].clone();
    let next = json!({"model": "conf-claude", "stream": true, "max_tokens": 4096, "thinking": thinking,
        "tools": tools, "messages": [user, {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": TOOL_OUTPUT}]}]});
    let before = h.anthropic.request_count();
    let r = h.post_with("/v1/messages", &next, &[("anthropic-version", "2023-06-01")]).await;
    assert_eq!(r.status(), 200);
    let text = String::from_utf8_lossy(&r.bytes().await.unwrap()).into_owned();
    assert!(!text.contains("event: error"), "{text}");
    let sent = tokio::time::timeout(WAIT, h.anthropic.wait_for_requests(before + 1)).await.unwrap();
    let sent = &sent.last().unwrap().body;
    assert_eq!(sent["model"], "claude-haiku-4-5");
    assert_eq!(sent["messages"][1]["content"][0]["type"], "thinking");
    assert_eq!(sent["messages"][1]["content"][0]["signature"], ANTHROPIC_THINKING_SIGNATURE);
    assert!(sent.get("thinking").is_some(), "thinking stays on");
}

/// OpenCode's title and summary calls send a history with tool calls and results
/// but no `tools`. Anthropic refuses that (`must define tools`); every client
/// format reaches it in a form it takes (the history's tools declared, not to be
/// called), translated and on the fast path. Converse refuses `toolUse` and
/// `toolResult` blocks without a `toolConfig` and has no `none` choice: the call
/// and its result reach Bedrock as text.
#[tokio::test]
async fn tool_history_without_tools_reaches_claude_in_a_form_it_takes() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    let text = |t: String| Item::Text(t);
    for upstream in
        [Upstream::Anthropic, Upstream::Bedrock, Upstream::BedrockClaude, Upstream::VertexClaude]
    {
        for format in FORMATS {
            for stream in [false, true] {
                let mode = format!("{upstream:?} {format:?} stream={stream}");
                let mut body = tool_history(format, "call_title_1", stream, false);
                body.as_object_mut().unwrap().remove("tools");
                body["model"] = json!(upstream.catalog_model());
                let (status, bytes, rx) = upstreams::exchange(&m, format, upstream, &body).await;
                p.check(status == 200, || format!("{mode}: status {status}: {}", shorten(&bytes)));
                let sent = rx.map(|r| r.body).unwrap_or_default();
                match upstream.family() {
                    Vendor::Bedrock => {
                        p.eq(&format!("{mode}: no toolConfig"), &sent["toolConfig"], &Value::Null);
                        let view = converse::converse_view(&sent);
                        for m in &view.problems {
                            p.push(format!("{mode}: upstream shape: {m}"));
                        }
                        p.eq(
                            &format!("{mode}: the history as text"),
                            view.turns,
                            vec![
                                ("user".to_owned(), vec![text(Scenario::Tools.user_text().into())]),
                                (
                                    "assistant".to_owned(),
                                    vec![text(format!(
                                        "[called tool `{TOOL_NAME}` (call call_title_1) with {HISTORY_ARGS}]"
                                    ))],
                                ),
                                (
                                    "user".to_owned(),
                                    vec![text(format!(
                                        "[result of tool call call_title_1]\n{TOOL_OUTPUT}"
                                    ))],
                                ),
                            ],
                        );
                    }
                    Vendor::Anthropic | Vendor::OpenAi | Vendor::Gemini => {
                        p.eq(
                            &format!("{mode}: declared"),
                            &sent["tools"][0]["name"],
                            &json!(TOOL_NAME),
                        );
                        p.eq(
                            &format!("{mode}: not to be called"),
                            &sent["tool_choice"],
                            &json!({"type": "none"}),
                        );
                    }
                }
            }
        }
    }
    assert!(p.0.is_empty(), "tool history problems:\n  - {}", p.0.join("\n  - "));
}

/// Codex's local compaction sends `tool_choice` without `tools`; OpenAI refuses
/// that (the strict fake does too). From every client format it reaches an
/// OpenAI-compatible upstream without it, on the fast path too.
#[tokio::test]
async fn tool_choice_without_tools_is_left_out_for_openai() {
    let m = Matrix::start().await;
    let mut p = Problems::default();
    // Chat Completions, wherever it is served.
    let chats = [Upstream::OpenAi, Upstream::VertexOpen, Upstream::Azure, Upstream::AzureV1];
    for (u, format) in FORMATS.map(|f| chats.map(|u| (u, f))).concat() {
        for stream in [false, true] {
            let mode = format!("{u:?} {format:?} stream={stream}");
            let mut body = client_request(format, Scenario::Text, u.catalog_model(), stream);
            body["tool_choice"] = match format {
                ClientFormat::Anthropic => json!({"type": "auto"}),
                _ => json!("auto"),
            };
            let (status, bytes, rx) = upstreams::exchange(&m, format, u, &body).await;
            p.check(status == 200, || format!("{mode}: status {status}: {}", shorten(&bytes)));
            let sent = rx.map(|r| r.body).unwrap_or_default();
            p.check(sent.get("tool_choice").is_none(), || {
                format!("{mode}: tool_choice sent: {sent}")
            });
        }
    }
    assert!(p.0.is_empty(), "tool_choice problems:\n  - {}", p.0.join("\n  - "));
}
