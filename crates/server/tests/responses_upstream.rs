#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! OpenAI's Responses API as an upstream wire (`wire: openai-responses`), through
//! the real server, black box: Chat, Anthropic, Responses and Gemini clients,
//! whole and streamed, translated to it; Codex's stateless tool loop (`store:
//! false`) carrying the upstream's encrypted reasoning across turns; Chat and
//! Anthropic clients' tool loops doing the same through the gateway's memory and
//! the thinking signature; and that reasoning never reaching another family's
//! upstream. The testkit's OpenAI fake serves `/v1/responses` as strictly as
//! OpenAI: it refuses unknown fields, a tool output without its call and any
//! reasoning token it did not issue.

mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::responses::{self as fake_responses, Turn};
use switchyard_testkit::{Received, Reply};

const MODEL: &str = "m-responses";
const UPSTREAM_MODEL: &str = "gpt-5";

async fn start() -> Harness {
    let providers_extra = format!(
        r#"  oai-responses: {{ wire: openai-responses, endpoint: "{{openai}}/v1", credentials: {{ keys: ["{OPENAI_KEY}"] }} }}
"#
    );
    let extra_models = format!(
        r#"  - id: {MODEL}
    deployments: [{{ provider: oai-responses, model: {UPSTREAM_MODEL} }}]
    capabilities: [vision, tools, structured_output, reasoning]
  - id: m-responses-then-anthropic
    deployments: [{{ provider: oai-responses, model: {UPSTREAM_MODEL} }}, {{ provider: anthropic, model: up-anthropic }}]
    capabilities: [vision, tools, structured_output, reasoning]
"#
    );
    Harness::start_with(Options { providers_extra, extra_models, ..Options::default() }).await
}

fn body(format: ClientFormat, model: &str, text: &str, stream: bool) -> Value {
    let messages = json!([{"role": "user", "content": text}]);
    match format {
        ClientFormat::OpenAiChat => json!({"model": model, "stream": stream,
            "stream_options": {"include_usage": true}, "messages": messages}),
        ClientFormat::Anthropic => {
            json!({"model": model, "stream": stream, "max_tokens": 128, "messages": messages})
        }
        ClientFormat::OpenAiResponses => json!({"model": model, "stream": stream, "input": text}),
        ClientFormat::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": text}]}]}),
    }
}

fn gemini_path(model: &str, stream: bool) -> String {
    if stream {
        format!("/v1beta/models/{model}:streamGenerateContent?alt=sse")
    } else {
        format!("/v1beta/models/{model}:generateContent")
    }
}

async fn post(h: &Harness, format: ClientFormat, body: &Value, stream: bool) -> (u16, Vec<u8>) {
    let path = match format {
        ClientFormat::Gemini => gemini_path(MODEL, stream),
        other => path(other).to_owned(),
    };
    let r = h.post(&path, body).await;
    (r.status().as_u16(), r.bytes().await.unwrap().to_vec())
}

fn last(h: &Harness) -> Received {
    h.openai.received().pop().unwrap()
}

/// The output items of a Responses answer, whole or streamed (from its
/// `response.completed`).
fn output_items(bytes: &[u8], stream: bool) -> Vec<Value> {
    let whole: Value = if stream {
        sse_events(bytes)
            .iter()
            .filter_map(|e| serde_json::from_str::<Value>(&e.data).ok())
            .find(|v| v["type"] == "response.completed")
            .map(|v| v["response"].clone())
            .unwrap_or_default()
    } else {
        serde_json::from_slice(bytes).unwrap()
    };
    whole["output"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn every_client_format_reaches_a_responses_upstream() {
    let h = start().await;
    let formats = [
        ClientFormat::OpenAiChat,
        ClientFormat::Anthropic,
        ClientFormat::OpenAiResponses,
        ClientFormat::Gemini,
    ];
    for format in formats {
        for stream in [false, true] {
            let text = format!("hello from {format:?} stream={stream}");
            let (status, bytes) =
                post(&h, format, &body(format, MODEL, &text, stream), stream).await;
            assert_eq!(status, 200, "{format:?} {stream}: {}", String::from_utf8_lossy(&bytes));
            let got =
                if stream { decode_stream(format, &bytes) } else { decode_whole(format, &bytes) };
            assert!(got.text().contains(&text), "{format:?} {stream}: {}", got.text());
            // The upstream's usage, cached and reasoning tokens included, reaches
            // every client format that has fields for them.
            assert_eq!(
                got.usage.input_tokens,
                Some(switchyard_testkit::canned::CANNED_INPUT_TOKENS)
            );
            let rx = last(&h);
            assert_eq!(rx.path, "/v1/responses");
            assert_eq!(rx.header("authorization"), Some(format!("Bearer {OPENAI_KEY}").as_str()));
            assert_eq!(rx.body["model"], UPSTREAM_MODEL);
            assert_eq!(rx.body["stream"], stream, "{format:?}");
            if format == ClientFormat::OpenAiResponses {
                // Its own body (the fast path): `store` and `include` are its choice.
                assert_eq!(rx.body["input"], json!(text));
                assert!(rx.body.get("store").is_none(), "{}", rx.body);
                continue;
            }
            // Translated, stateless: nothing stored, the reasoning asked for encrypted.
            assert_eq!(rx.body["store"], false, "{format:?}: {}", rx.body);
            assert_eq!(rx.body["include"], json!(["reasoning.encrypted_content"]));
            assert_eq!(rx.body["input"][0]["role"], "user");
        }
    }
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(8)).await.unwrap();
    for record in records.iter() {
        assert_eq!(record.usage.cache_read_tokens, Some(fake_responses::CACHED_TOKENS));
        // The Responses client's own body did not ask for reasoning.
        let reasoned = record.client_format != "openai-responses";
        let expected = if reasoned { fake_responses::REASONING_TOKENS } else { 0 };
        assert_eq!(record.usage.reasoning_tokens, Some(expected), "{}", record.client_format);
    }
}

/// Codex's loop, `store: false`: the first turn's reasoning comes back to the
/// client as a reasoning item (sealed by the gateway), and the next turn gives
/// the upstream its own encrypted reasoning back before the call it led to,
/// paired with the call's output; the fake refuses any token it did not issue.
#[tokio::test]
async fn a_codex_tool_loop_carries_encrypted_reasoning_without_server_state() {
    let h = start().await;
    let tools = json!([{"type": "function", "name": "shell", "description": "Run a command",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]);
    for stream in [false, true] {
        h.openai.clear_received();
        let turn = Turn {
            model: UPSTREAM_MODEL.into(),
            reasoning: Some("Plan: list the files".into()),
            text: None,
            call: Some(("shell".into(), r#"{"cmd":"ls"}"#.into())),
            compaction: None,
        };
        h.openai.push(Reply::from(fake_responses::reply(&turn, stream)));
        let user = json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "list the files"}]});
        let first = json!({"model": MODEL, "stream": stream, "store": false,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"], "tools": tools, "input": [user]});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &first, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        let items = output_items(&bytes, stream);
        let reasoning = items.iter().find(|i| i["type"] == "reasoning").cloned().unwrap();
        let call = items.iter().find(|i| i["type"] == "function_call").cloned().unwrap();
        assert_eq!(reasoning["summary"][0]["text"], "Plan: list the files");
        assert!(reasoning["encrypted_content"].as_str().is_some_and(|t| !t.is_empty()));
        assert_eq!(call["call_id"], fake_responses::CALL_ID);

        let second = json!({"model": MODEL, "stream": stream, "store": false,
            "reasoning": {"effort": "medium", "summary": "auto"},
            "include": ["reasoning.encrypted_content"], "tools": tools,
            "input": [user, reasoning, call,
                {"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"}]});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &second, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        let rx = last(&h);
        let input = rx.body["input"].as_array().unwrap();
        let types: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["message", "reasoning", "function_call", "function_call_output"]);
        let token = input[1]["encrypted_content"].as_str().unwrap();
        assert_eq!(
            fake_responses::open_reasoning(token).as_deref(),
            Some("Plan: list the files"),
            "the upstream's own token, not the gateway's seal"
        );
        assert_eq!(input[2]["call_id"], input[3]["call_id"]);
    }
}

/// A Chat client has no field for the reasoning: the gateway remembers it under
/// the call's id and gives it back with the call. An Anthropic client carries it
/// in its thinking block's signature; the same history sent to Claude does not
/// give Claude the OpenAI token.
#[tokio::test]
async fn chat_and_anthropic_tool_loops_give_the_reasoning_back_to_its_family_only() {
    let h = start().await;
    let turn = Turn {
        model: UPSTREAM_MODEL.into(),
        reasoning: Some("Think first".into()),
        text: None,
        call: Some(("shell".into(), r#"{"cmd":"ls"}"#.into())),
        compaction: None,
    };
    let chat_tools = json!([{"type": "function", "function": {"name": "shell",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]);

    // Chat.
    h.openai.push(Reply::from(fake_responses::reply(&turn, false)));
    let user = json!({"role": "user", "content": "list the files"});
    let first = json!({"model": MODEL, "reasoning_effort": "medium", "tools": chat_tools, "messages": [user]});
    let (status, bytes) = post(&h, ClientFormat::OpenAiChat, &first, false).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let answer: Value = serde_json::from_slice(&bytes).unwrap();
    let message = answer["choices"][0]["message"].clone();
    let call_id = message["tool_calls"][0]["id"].clone();
    let second = json!({"model": MODEL, "reasoning_effort": "medium", "tools": chat_tools,
        "messages": [user, message, {"role": "tool", "tool_call_id": call_id, "content": "a.txt"}]});
    let (status, bytes) = post(&h, ClientFormat::OpenAiChat, &second, false).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let input = last(&h).body["input"].clone();
    let reasoning: Vec<&Value> =
        input.as_array().unwrap().iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "{input:#}");
    let token = reasoning[0]["encrypted_content"].as_str().unwrap();
    assert_eq!(fake_responses::open_reasoning(token).as_deref(), Some("Think first"));

    // Anthropic, streamed.
    h.openai.push(Reply::from(fake_responses::reply(&turn, true)));
    let tools = json!([{"name": "shell", "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]);
    let user = json!({"role": "user", "content": "list the files"});
    let first = json!({"model": MODEL, "stream": true, "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": tools, "messages": [user]});
    let (status, bytes) = post(&h, ClientFormat::Anthropic, &first, true).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    let got = decode_stream(ClientFormat::Anthropic, &bytes);
    let content: Vec<Value> =
        got.content.iter().map(|p| serde_json::to_value(p).unwrap()).collect();
    let thinking = content.iter().find(|p| p["type"] == "thinking").unwrap();
    let signature = thinking["signature"].as_str().unwrap().to_owned();
    let call = content.iter().find(|p| p["type"] == "tool_call").unwrap();
    let assistant = json!({"role": "assistant", "content": [
        {"type": "thinking", "thinking": thinking["text"], "signature": signature},
        {"type": "tool_use", "id": call["id"], "name": "shell", "input": {"cmd": "ls"}}]});
    let result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call["id"], "content": "a.txt"}]});
    for model in [MODEL, "m-anthropic"] {
        let second = json!({"model": model, "max_tokens": 2048,
            "thinking": {"type": "enabled", "budget_tokens": 1024}, "tools": tools,
            "messages": [user, assistant, result]});
        let (status, bytes) = post(&h, ClientFormat::Anthropic, &second, false).await;
        assert_eq!(status, 200, "{model}: {}", String::from_utf8_lossy(&bytes));
    }
    let input = h.openai.received().pop().unwrap().body["input"].clone();
    let token = input[1]["encrypted_content"].as_str().unwrap();
    assert_eq!(fake_responses::open_reasoning(token).as_deref(), Some("Think first"));
    // Claude got the turn without the OpenAI token (and so without thinking).
    let claude = h.anthropic.received().pop().unwrap().body;
    assert!(!claude.to_string().contains(token), "{claude:#}");
    assert!(!claude.to_string().contains("openai-responses:"), "{claude:#}");
}

/// The fake refuses what OpenAI refuses, and the client hears it as an error of
/// its own format (a 400 is not retried elsewhere).
#[tokio::test]
async fn an_upstream_refusal_reaches_the_client_in_its_format() {
    let h = start().await;
    let orphan = json!({"model": MODEL, "input": [
        {"type": "message", "role": "user", "content": "x"},
        {"type": "function_call_output", "call_id": "call_nowhere", "output": "?"}]});
    let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &orphan, false).await;
    // The gateway itself, or the upstream, refuses the orphaned output.
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&bytes));
    let error: Value = serde_json::from_slice(&bytes).unwrap();
    assert!(error["error"]["message"].is_string(), "{error}");
}

/// A Responses client's own body goes to a Responses upstream as it wrote it
/// (the model aside), fields the canonical request does not keep included, and
/// the upstream's answer comes back as it sent it: the reasoning token is the
/// upstream's own, which the client gives back on the next turn.
#[tokio::test]
async fn the_fast_path_forwards_a_responses_clients_own_body() {
    let h = start().await;
    for stream in [false, true] {
        let own = json!({"model": MODEL, "stream": stream, "store": false,
            "include": ["reasoning.encrypted_content"], "truncation": "auto",
            "text": {"verbosity": "low"}, "prompt_cache_key": "codex-session-1",
            "reasoning": {"effort": "low", "summary": "detailed"},
            "input": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "fast path?"}]}]});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &own, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        let rx = last(&h);
        let mut expected = own.clone();
        expected["model"] = json!(UPSTREAM_MODEL);
        assert_eq!(rx.body, expected, "the client's own fields, the model replaced");
        let items = output_items(&bytes, stream);
        assert_eq!(items[0]["id"], fake_responses::REASONING_ID, "passed through: {items:?}");
        let token = items[0]["encrypted_content"].as_str().unwrap();
        assert!(fake_responses::open_reasoning(token).is_some(), "the upstream's own token");
        // Given back as it came.
        let next = json!({"model": MODEL, "stream": stream, "store": false,
            "include": ["reasoning.encrypted_content"],
            "input": [own["input"][0], items[0], items[1],
                {"type": "message", "role": "user", "content": "and now?"}]});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &next, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(last(&h).body["input"][1]["encrypted_content"], token);
    }
}

/// A count for a Responses deployment is the upstream's own
/// (`/responses/input_tokens`, a body of only the fields it takes), from the
/// Anthropic and Responses clients' counting endpoints.
#[tokio::test]
async fn counts_come_from_the_upstreams_input_tokens_endpoint() {
    let h = start().await;
    let cases = [
        (
            "/v1/messages/count_tokens",
            json!({"model": MODEL, "messages": [{"role": "user", "content": "count me"}]}),
        ),
        ("/v1/responses/input_tokens", json!({"model": MODEL, "input": "count me"})),
    ];
    for (path, body) in cases {
        let r = h.post(path, &body).await;
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        assert_eq!(status, 200, "{path}: {answer}");
        let seen = last(&h);
        assert_eq!(seen.path, "/v1/responses/input_tokens", "{path}");
        assert_eq!(seen.body["model"], UPSTREAM_MODEL);
        assert_eq!(
            answer["input_tokens"],
            switchyard_testkit::canned::counted_tokens(&seen.body),
            "{path}"
        );
    }
}

#[tokio::test]
async fn codex_compacts_on_a_responses_upstream_natively_and_its_item_goes_back_to_it() {
    let h = start().await;
    let user = |text: &str| json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]});
    for stream in [false, true] {
        // Every deployment of the model speaks the Responses API: the trigger
        // goes as Codex sent it, and the upstream compacts.
        h.openai.clear_received();
        let input = json!([user("fix the failing test"), {"type": "compaction_trigger"}]);
        // As Codex 0.171 writes it: `client_metadata`, which only OpenAI's own
        // backend takes (the fake refuses it, as the public API does).
        let body = json!({"model": MODEL, "stream": stream, "store": false, "input": input,
            "client_metadata": {"x-codex-installation-id": "install-1"}});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &body, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        let sent = last(&h);
        assert_eq!(sent.body["input"][1]["type"], "compaction_trigger", "{}", sent.body);
        assert!(sent.body.get("client_metadata").is_none(), "{}", sent.body);
        let items = output_items(&bytes, stream);
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0]["type"], "compaction");
        let token = items[0]["encrypted_content"].as_str().unwrap().to_owned();
        assert_eq!(
            fake_responses::open_compaction(&token).as_deref(),
            Some("compacted: fix the failing test"),
            "the upstream's own item, as it issued it"
        );

        // The next turn carries it: back to the upstream as it is (the fake
        // refuses a compaction item it did not issue).
        h.openai.clear_received();
        let next = json!([items[0].clone(), user("go on")]);
        let body = json!({"model": MODEL, "stream": stream, "store": false, "input": next});
        let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &body, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
        assert_eq!(last(&h).body["input"][0]["encrypted_content"], token.as_str());
    }
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(4)).await.unwrap();
    assert!(
        records[0].descriptor.split(' ').any(|d| d == "compaction:upstream"),
        "{}",
        records[0].descriptor
    );

    // A chain that may fail over to another wire: the gateway compacts, and
    // the upstream never sees a trigger.
    h.openai.clear_received();
    let input = json!([user("fix the failing test"), {"type": "compaction_trigger"}]);
    let body = json!({"model": "m-responses-then-anthropic", "store": false, "input": input});
    let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &body, false).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert!(!last(&h).raw.windows(18).any(|w| w == b"compaction_trigger"));

    // The upstream's item cannot go to another family: refused, naming it.
    let item = json!({"type": "compaction", "id": fake_responses::COMPACTION_ID,
        "encrypted_content": fake_responses::encrypted_compaction("s")});
    let body = json!({"model": "m-anthropic", "max_output_tokens": 64,
        "input": [item, user("go on")]});
    let (status, bytes) = post(&h, ClientFormat::OpenAiResponses, &body, false).await;
    let text = String::from_utf8_lossy(&bytes);
    assert!((400..500).contains(&status), "{status} {text}");
    assert!(text.contains("compaction item cmp_fake0001"), "{text}");
}

#[tokio::test]
async fn the_compact_endpoint_goes_to_a_responses_upstreams_own() {
    let h = start().await;
    let user = json!({"type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "fix the failing test"}]});
    let body = json!({"model": MODEL, "input": [user.clone()], "instructions": "be brief"});
    let r = h.post("/v1/responses/compact", &body).await;
    let status = r.status();
    let answer: Value = r.json().await.unwrap();
    assert_eq!(status, 200, "{answer}");
    let sent = last(&h);
    assert_eq!(sent.path, "/v1/responses/compact");
    assert_eq!(sent.body["model"], UPSTREAM_MODEL);
    // The upstream's own object, its own item.
    assert_eq!(answer["object"], "response.compaction", "{answer}");
    let output = answer["output"].as_array().unwrap();
    assert_eq!(output[0], user);
    let token = output.last().unwrap()["encrypted_content"].as_str().unwrap();
    assert_eq!(
        fake_responses::open_compaction(token).as_deref(),
        Some("compacted: fix the failing test")
    );

    // A chain that may fail over to another wire: the gateway compacts, with
    // a generation on the Responses upstream.
    let body = json!({"model": "m-responses-then-anthropic", "input": [user]});
    let r = h.post("/v1/responses/compact", &body).await;
    assert_eq!(r.status(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(last(&h).path, "/v1/responses", "a summarisation request");
    let token = answer["output"].as_array().unwrap().last().unwrap()["encrypted_content"].clone();
    assert!(
        fake_responses::open_compaction(token.as_str().unwrap()).is_none(),
        "the gateway's own"
    );
}
