#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Remote compaction for Codex, black box: the real server in front of each fake
//! upstream wire. A Responses request ending in `compaction_trigger` (streamed or
//! not) and `POST /v1/responses/compact` are summarised by the model they name; the
//! client gets exactly one `compaction` item; sent back, it reaches the upstream as
//! the summary it stands for; one this gateway did not seal is refused, naming it.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::compaction::INSTRUCTION;
use switchyard_testkit::{Received, Reply, Vendor, canned};

const VENDORS: [Vendor; 4] = [Vendor::OpenAi, Vendor::Anthropic, Vendor::Gemini, Vendor::Bedrock];
const ASK: &str = "fix the failing test";
const TOOL_OUTPUT: &str = "test parse_dates ... FAILED";
const NEXT: &str = "go on with the fix";

fn summary(v: Vendor) -> String {
    format!("## Task\n{ASK} (SUMMARY-{v:?})\n## Next\nedit src/dates.rs")
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn developer() -> Value {
    json!({"type": "message", "role": "developer",
           "content": [{"type": "input_text", "text": "<permissions instructions/>"}]})
}

/// Codex's history before it compacts: context, the ask, a shell call and its
/// output, the model's note.
fn history() -> Vec<Value> {
    vec![
        developer(),
        user(ASK),
        json!({"type": "function_call", "name": "shell", "call_id": "call_1",
               "arguments": "{\"command\":[\"cargo\",\"test\"]}"}),
        json!({"type": "function_call_output", "call_id": "call_1", "output": TOOL_OUTPUT}),
        json!({"type": "message", "role": "assistant",
               "content": [{"type": "output_text", "text": "The date parser fails."}]}),
    ]
}

fn tools() -> Value {
    json!([{"type": "function", "name": "shell", "description": "Runs a command",
            "strict": false, "parameters": {"type": "object",
            "properties": {"command": {"type": "array", "items": {"type": "string"}}},
            "required": ["command"]}}])
}

/// A Codex turn (as 0.171 sends to compact when `stream` and the trigger are set).
fn codex_body(v: Vendor, input: Vec<Value>, stream: bool) -> Value {
    json!({
        "model": catalog_model(v),
        "instructions": "You are Codex, a coding agent.",
        "input": input,
        "tools": tools(),
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": false,
        "stream": stream,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "session-1",
    })
}

fn trigger_body(v: Vendor, stream: bool) -> Value {
    let mut input = history();
    input.push(json!({"type": "compaction_trigger"}));
    codex_body(v, input, stream)
}

/// The one request a fake received for a compaction, checked as a summarisation
/// request: the conversation and the instruction, no tool calls allowed (Converse
/// has no `none` choice: no tools go, and the history's call and result go as
/// text), and no compaction items or triggers (they never go upstream).
async fn summarisation_request(h: &Harness, v: Vendor) -> Received {
    let got = tokio::time::timeout(WAIT, h.fake(v).wait_for_requests(1)).await.unwrap();
    assert_eq!(got.len(), 1, "{v:?}: one upstream call");
    let req = got.into_iter().next().unwrap();
    let raw = String::from_utf8_lossy(&req.raw).to_string();
    for absent in ["compaction_trigger", "\"compaction\"", "encrypted_content"] {
        assert!(!raw.contains(absent), "{v:?}: {absent} went upstream: {raw}");
    }
    for present in [ASK, TOOL_OUTPUT, "You are Codex"] {
        assert!(raw.contains(present), "{v:?}: the conversation is summarised: {present}");
    }
    let last = canned::last_user_text(v, &req.body).unwrap_or_default();
    assert!(last.ends_with(INSTRUCTION), "{v:?}: the instruction comes last: {last}");
    let (choice, none) = match v {
        Vendor::OpenAi => (req.body["tool_choice"].clone(), json!("none")),
        Vendor::Anthropic => (req.body["tool_choice"]["type"].clone(), json!("none")),
        Vendor::Gemini => {
            (req.body["toolConfig"]["functionCallingConfig"]["mode"].clone(), json!("NONE"))
        }
        Vendor::Bedrock => {
            let turns = req.body["messages"].to_string();
            assert!(turns.contains("[called tool `shell` (call call_1)"), "{v:?}: {turns}");
            assert!(turns.contains("[result of tool call call_1]"), "{v:?}: {turns}");
            assert!(!turns.contains("toolUse"), "{v:?}: a tool block without tools: {turns}");
            (req.body["toolConfig"].clone(), Value::Null)
        }
    };
    assert_eq!(choice, none, "{v:?}: the tools are not to be called");
    req
}

/// The one request a fake received for the turn after a compaction: the summary
/// where the item was, the new ask after it.
async fn follow_up_request(h: &Harness, v: Vendor) -> Received {
    let got = tokio::time::timeout(WAIT, h.fake(v).wait_for_requests(1)).await.unwrap();
    let req = got.into_iter().next().unwrap();
    let raw = String::from_utf8_lossy(&req.raw).to_string();
    assert!(raw.contains(&format!("(SUMMARY-{v:?})")), "{v:?}: the summary is there: {raw}");
    assert!(raw.contains("compacted into the summary below"), "{v:?}: said to be a summary");
    for absent in ["\"compaction\"", "encrypted_content", "sy1."] {
        assert!(!raw.contains(absent), "{v:?}: {absent} went upstream: {raw}");
    }
    let last = canned::last_user_text(v, &req.body).unwrap();
    assert!(last.ends_with(NEXT), "{v:?}: {last}");
    req
}

/// The payloads of a Responses stream, and its one compaction item.
fn compaction_stream(v: Vendor, body: &[u8]) -> (Vec<Value>, Value) {
    let events: Vec<Value> =
        sse_events(body).iter().map(|e| serde_json::from_str(&e.data).unwrap()).collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"response.created"), "{v:?}: {types:?}");
    assert_eq!(types.last(), Some(&"response.completed"), "{v:?}: {types:?}");
    assert!(!types.iter().any(|t| t.contains("output_text")), "{v:?}: the summary is not shown");
    let done: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| &e["item"])
        .collect();
    assert_eq!(done.len(), 1, "{v:?}: exactly one output item: {types:?}");
    let item = done[0].clone();
    check_item(v, &item);
    let completed = &events.last().unwrap()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!([item]), "{v:?}");
    assert!(completed["usage"]["input_tokens"].as_u64().unwrap() > 0, "{v:?}: usage reported");
    (events, item)
}

fn check_item(v: Vendor, item: &Value) {
    assert_eq!(item["type"], "compaction", "{v:?}: {item}");
    assert!(item["id"].as_str().unwrap().starts_with("cmp_"), "{v:?}: {item}");
    let token = item["encrypted_content"].as_str().unwrap();
    assert!(token.starts_with("sy1."), "{v:?}: sealed by the gateway: {token}");
    assert!(!token.contains("SUMMARY"), "{v:?}: the summary travels sealed");
}

/// The record of a compaction call: kept, marked, metered.
async fn compaction_record(
    h: &Harness,
    resp: &reqwest::Response,
) -> switchyard_core::RequestRecord {
    let id = resp.headers()[switchyard_server::HEADER_REQUEST_ID].to_str().unwrap().to_owned();
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.status, 200);
    assert_eq!(rec.client_format, "openai-responses");
    assert!(rec.descriptor.split(' ').any(|d| d == "compaction"), "{}", rec.descriptor);
    assert!(rec.usage.input_tokens.unwrap() > 0 && rec.usage.output_tokens.unwrap() > 0);
    assert!(rec.cost_usd.unwrap() > 0.0, "priced like any request");
    rec
}

#[tokio::test]
async fn a_streamed_trigger_compacts_on_every_wire_and_the_item_expands_next_turn() {
    let h = Harness::start().await;
    for v in VENDORS {
        h.fake(v).push(canned::text(v, upstream_model(v), &summary(v), true).into());
        let resp = h.post("/v1/responses", &trigger_body(v, true)).await;
        assert_eq!(resp.status(), 200, "{v:?}");
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        let rec = compaction_record(&h, &resp).await;
        assert!(rec.stream);
        let body = resp.bytes().await.unwrap();
        let (_, item) = compaction_stream(v, &body);
        summarisation_request(&h, v).await;
        h.fake(v).clear_received();

        // Codex's next turn: the user's messages, the item, its context, the new ask.
        let input = vec![user(ASK), item, developer(), user(NEXT)];
        let resp = h.post("/v1/responses", &codex_body(v, input, true)).await;
        assert_eq!(resp.status(), 200, "{v:?}: {}", resp.text().await.unwrap());
        let answer = decode_stream(
            switchyard_protocol::ClientFormat::OpenAiResponses,
            &resp.bytes().await.unwrap(),
        );
        assert!(!answer.content.is_empty(), "{v:?}: an ordinary turn");
        follow_up_request(&h, v).await;
        h.fake(v).clear_received();
    }
}

#[tokio::test]
async fn a_whole_trigger_request_answers_one_item() {
    let h = Harness::start().await;
    for v in VENDORS {
        h.fake(v).push(canned::text(v, upstream_model(v), &summary(v), false).into());
        let resp = h.post("/v1/responses", &trigger_body(v, false)).await;
        assert_eq!(resp.status(), 200, "{v:?}");
        compaction_record(&h, &resp).await;
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["object"], "response");
        assert_eq!(body["status"], "completed");
        assert_eq!(body["model"], catalog_model(v), "named as the client asked");
        let output = body["output"].as_array().unwrap();
        assert_eq!(output.len(), 1, "{v:?}: exactly one item: {body}");
        check_item(v, &output[0]);
        summarisation_request(&h, v).await;
        h.fake(v).clear_received();
    }
}

#[tokio::test]
async fn the_compact_endpoint_answers_the_compacted_history() {
    let h = Harness::start().await;
    for v in VENDORS {
        // What older Codex posts: no `stream`, no trigger.
        let body = json!({
            "model": catalog_model(v),
            "instructions": "You are Codex, a coding agent.",
            "input": history(),
            "tools": tools(),
            "parallel_tool_calls": true,
        });
        for path in ["/v1/responses/compact", "/responses/compact"] {
            h.fake(v).push(canned::text(v, upstream_model(v), &summary(v), false).into());
            let resp = h.post(path, &body).await;
            assert_eq!(resp.status(), 200, "{v:?} {path}");
            compaction_record(&h, &resp).await;
            let answer: Value = resp.json().await.unwrap();
            assert_eq!(answer["object"], "response.compaction", "{v:?}: {answer}");
            let output = answer["output"].as_array().unwrap();
            // The developer context and the user's ask, as sent, then the item.
            assert_eq!(output.len(), 3, "{v:?}: {answer}");
            assert_eq!(&output[..2], &[developer(), user(ASK)], "{v:?}: {answer}");
            check_item(v, &output[2]);
            assert!(answer["usage"]["input_tokens"].as_u64().unwrap() > 0);
            let req = summarisation_request(&h, v).await;
            assert_ne!(req.body["stream"], true, "{v:?}: answered whole");
            // Gemini and Bedrock say a stream in the path.
            assert!(!req.path.contains("stream"), "{v:?}: answered whole: {}", req.path);
            h.fake(v).clear_received();

            // The client replaces its history with the output and goes on.
            let mut input = output.clone();
            input.push(user(NEXT));
            let resp = h.post("/v1/responses", &codex_body(v, input, false)).await;
            assert_eq!(resp.status(), 200, "{v:?}");
            follow_up_request(&h, v).await;
            h.fake(v).clear_received();
        }
    }
}

#[tokio::test]
async fn a_compaction_item_this_gateway_cannot_open_is_refused_naming_it() {
    let h = Harness::start().await;
    let other = Harness::start().await;
    let v = Vendor::Anthropic;
    // A real item from another gateway (another secret).
    other.fake(v).push(canned::text(v, upstream_model(v), &summary(v), false).into());
    let resp = other.post("/v1/responses", &trigger_body(v, false)).await;
    let theirs: Value = resp.json().await.unwrap();
    let theirs = theirs["output"][0].clone();
    check_item(v, &theirs);
    // One of ours, altered.
    h.fake(v).push(canned::text(v, upstream_model(v), &summary(v), false).into());
    let resp = h.post("/v1/responses", &trigger_body(v, false)).await;
    let ours: Value = resp.json().await.unwrap();
    let mut tampered = ours["output"][0].clone();
    let mut token = tampered["encrypted_content"].as_str().unwrap().to_owned();
    let flipped = if token.as_bytes()[20] == b'A' { "B" } else { "A" };
    token.replace_range(20..21, flipped);
    tampered["encrypted_content"] = json!(token);
    h.fake(v).clear_received();
    let openai_own = json!({"type": "compaction", "id": "cmp_openai_1",
                            "encrypted_content": "gAAAAABoOpenAIsOwnCompaction"});

    for item in [theirs, tampered, openai_own] {
        let id = item["id"].as_str().unwrap().to_owned();
        for stream in [false, true] {
            let input = vec![user(ASK), item.clone(), user(NEXT)];
            let resp = h.post("/v1/responses", &codex_body(v, input, stream)).await;
            assert_eq!(resp.status(), 400, "{id}");
            let err: Value = resp.json().await.unwrap();
            // Only the Responses API that issued it reads it: a translation
            // refuses it, naming it.
            assert_eq!(err["error"]["code"], "unsupported_request", "{err}");
            let message = err["error"]["message"].as_str().unwrap();
            let want = format!("input[1]: compaction item {id} (this gateway cannot open it");
            assert!(message.contains(&want) && message.contains("cannot be sent to"), "{message}");
        }
    }
    assert!(h.fake(v).received().is_empty(), "nothing is sent without what the item stood for");
}

#[tokio::test]
async fn a_compaction_fails_over_before_its_first_content_like_any_request() {
    let h = Harness::start().await;
    // m-chain: openai (up-primary) first, anthropic (up-fallback) after it.
    h.openai.push(Reply::status(500));
    h.anthropic.push(canned::text(Vendor::Anthropic, "up-fallback", "## Task\nchain", true).into());
    let mut body = trigger_body(Vendor::OpenAi, true);
    body["model"] = json!("m-chain");
    let resp = h.post("/v1/responses", &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()[switchyard_server::HEADER_PROVIDER], "anthropic");
    let rec = compaction_record(&h, &resp).await;
    assert_eq!(rec.attempts.len(), 2, "{:?}", rec.attempts);
    assert!(rec.descriptor.contains("failover:openai->anthropic"), "{}", rec.descriptor);
    let body = resp.bytes().await.unwrap();
    compaction_stream(Vendor::Anthropic, &body);
    let got = tokio::time::timeout(WAIT, h.anthropic.wait_for_requests(1)).await.unwrap();
    assert!(
        canned::last_user_text(Vendor::Anthropic, &got[0].body).unwrap().ends_with(INSTRUCTION)
    );
}

#[tokio::test]
async fn an_answer_without_a_summary_fails_the_compaction() {
    let h = Harness::start().await;
    let v = Vendor::Anthropic;
    // The model calls a tool anyway and writes nothing.
    h.fake(v).push(canned::tool_call(v, upstream_model(v), "shell", "{}", true).into());
    let resp = h.post("/v1/responses", &trigger_body(v, true)).await;
    assert_eq!(resp.status(), 200, "committed at the upstream's first content");
    let events: Vec<Value> = sse_events(&resp.bytes().await.unwrap())
        .iter()
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "response.failed", "{events:?}");
    assert_eq!(last["response"]["error"]["code"], "compaction_failed");
    assert!(!events.iter().any(|e| e["type"] == "response.output_item.done"));

    h.fake(v).push(canned::tool_call(v, upstream_model(v), "shell", "{}", false).into());
    let resp = h.post("/v1/responses", &trigger_body(v, false)).await;
    assert_eq!(resp.status(), 502);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "compaction_failed");
}

/// Codex on its built-in OpenAI provider speaks the Responses WebSocket: the
/// compaction and the turn after it go over one connection.
#[tokio::test]
async fn a_compaction_over_the_websocket_and_the_turn_after_it() {
    let h = Harness::start().await;
    let v = Vendor::Gemini;
    let mut socket = common::ws::open(&h.base).await;
    h.fake(v).push(canned::text(v, upstream_model(v), &summary(v), true).into());
    let events = common::ws::turn(&mut socket, trigger_body(v, true)).await;
    let (_, item) = compaction_stream(v, &common::ws::as_sse(&events));
    summarisation_request(&h, v).await;
    h.fake(v).clear_received();

    let input = vec![user(ASK), item, developer(), user(NEXT)];
    let events = common::ws::turn(&mut socket, codex_body(v, input, true)).await;
    assert_eq!(events.last().unwrap()["type"], "response.completed", "{events:?}");
    follow_up_request(&h, v).await;
}
