//! Presets for OpenAI-compatible vendors, black box: the real server in front of
//! the OpenAI fake, told to refuse what Mistral or DeepSeek refuse
//! ([`Flavour`]). A provider with the vendor's `preset:` gets bodies the vendor
//! takes, from a client's own body and from a translation; the same history to a
//! provider without the preset is refused, so the fake's rules are what the
//! preset is tested against.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{Flavour, Received, Reply, canned};

/// The OpenAI fake as `flavour`'s vendor, behind a provider with its preset
/// (`m-preset`) and one without (`m-plain`).
async fn harness(flavour: Flavour, preset: &str, upstream_model: &str) -> Harness {
    let provider = format!(
        "  vendor: {{ wire: openai-chat, preset: {preset}, endpoint: \"{{openai}}/v1\", credentials: {{ keys: [\"sk-vendor\"] }} }}"
    );
    let h = Harness::start_with(Options {
        providers_extra: provider,
        extra_models: format!(
            "  - id: m-preset\n    deployments: [{{ provider: vendor, model: {upstream_model} }}]\n\
             \x20 - id: m-plain\n    deployments: [{{ provider: openai, model: {upstream_model} }}]\n"
        ),
        ..Options::default()
    })
    .await;
    h.openai.set_flavour(Some(flavour));
    h
}

/// Post `body` to `path`; the status, the answer, and what the fake got last.
async fn send(h: &Harness, path: &str, body: &Value) -> (u16, Value, Option<Received>) {
    h.openai.clear_received();
    let r = h.post(path, body).await;
    let status = r.status().as_u16();
    let answer = r.json().await.unwrap_or(Value::Null);
    (status, answer, h.openai.received().pop())
}

fn is_mistral_id(id: &str) -> bool {
    id.len() == 9 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// A Chat client's history calling a tool with OpenAI's id form, the tool's
/// result, and, optionally, a later call with `second` (an id Mistral gave).
fn chat_history(model: &str, second: Option<&str>) -> Value {
    let call = |id: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "weather", "arguments": "{}"}}]})
    };
    let mut messages = vec![
        json!({"role": "user", "content": "Weather in Paris?"}),
        call("call_abc123XYZ"),
        json!({"role": "tool", "tool_call_id": "call_abc123XYZ", "content": "18C"}),
    ];
    if let Some(id) = second {
        messages.push(call(id));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": "noon"}));
    }
    json!({"model": model, "max_completion_tokens": 200, "messages": messages,
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]})
}

/// The ids of the calls and results the fake received, in order.
fn ids(received: &Received) -> Vec<String> {
    let mut out = Vec::new();
    for m in received.body["messages"].as_array().unwrap() {
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            out.push(c["id"].as_str().unwrap().to_owned());
        }
        if let Some(id) = m["tool_call_id"].as_str() {
            out.push(id.to_owned());
        }
    }
    out
}

#[tokio::test]
async fn mistral_gets_nine_character_ids_that_pair_and_the_client_keeps_its_own() {
    let h = harness(Flavour::Mistral, "mistral", "mistral-large-latest").await;
    // Without the preset, Mistral refuses the client's OpenAI-style ids.
    let (status, _, _) = send(&h, "/v1/chat/completions", &chat_history("m-plain", None)).await;
    assert_ne!(status, 200, "the fake refuses as Mistral does");

    // Mistral answers with its own id.
    let mistral_call = json!({"id": "cmpl-1", "object": "chat.completion", "created": 1,
        "model": "mistral-large-latest", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": "", "tool_calls": [
            {"id": "Xy7Zq2Lm9", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}});
    h.openai.push(Reply::json(mistral_call));
    let (status, answer, got) =
        send(&h, "/v1/chat/completions", &chat_history("m-preset", None)).await;
    assert_eq!(status, 200, "{answer}");
    let got = got.unwrap();
    let first = ids(&got);
    assert!(first.iter().all(|id| is_mistral_id(id)), "{first:?}");
    assert_eq!(first[0], first[1], "the result still names its call");
    assert_eq!(got.body["max_tokens"], 200);
    assert!(got.body.get("max_completion_tokens").is_none());
    // The client sees Mistral's id as Mistral gave it.
    assert_eq!(answer["choices"][0]["message"]["tool_calls"][0]["id"], "Xy7Zq2Lm9");

    // Next turn: the client's history has its own old id and Mistral's; the old
    // one maps as before, Mistral's goes back unchanged.
    let (status, answer, got) =
        send(&h, "/v1/chat/completions", &chat_history("m-preset", Some("Xy7Zq2Lm9"))).await;
    assert_eq!(status, 200, "{answer}");
    let second = ids(&got.unwrap());
    assert_eq!(second, [first[0].as_str(), &first[1], "Xy7Zq2Lm9", "Xy7Zq2Lm9"]);

    // An Anthropic client's history, translated: its `toolu_` ids map too.
    let body = json!({"model": "m-preset", "max_tokens": 100, "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "18C"}]}],
        "tools": [{"name": "weather", "input_schema": {"type": "object"}}]});
    let (status, answer, got) = send(&h, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{answer}");
    let translated = ids(&got.unwrap());
    assert!(translated.iter().all(|id| is_mistral_id(id)) && translated[0] == translated[1]);
}

#[tokio::test]
async fn mistral_streams_without_stream_options_and_its_usage_is_still_read() {
    let h = harness(Flavour::Mistral, "mistral", "mistral-large-latest").await;
    // Mistral's stream: usage rides on the last chunk, unasked.
    let chunk = |delta: Value, finish: Value, usage: Value| {
        canned::sse_frame(
            switchyard_testkit::Vendor::OpenAi,
            "",
            &json!({"id": "cmpl-2", "object": "chat.completion.chunk", "created": 1,
                "model": "mistral-large-latest",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                "usage": usage})
            .to_string(),
        )
    };
    h.openai.push(Reply::sse(vec![
        chunk(json!({"role": "assistant", "content": "Bonjour"}), Value::Null, Value::Null),
        chunk(
            json!({"content": ""}),
            json!("stop"),
            json!({"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}),
        ),
        "data: [DONE]\n\n".to_owned(),
    ]));
    let body = json!({"model": "m-preset", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}]});
    h.openai.clear_received();
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let text = r.text().await.unwrap();
    assert!(text.contains("Bonjour"), "{text}");
    assert!(text.contains(r#""prompt_tokens":7"#), "the client asked for usage: {text}");
    let got = h.openai.received().pop().unwrap();
    assert_eq!(got.body["stream"], true);
    assert!(got.body.get("stream_options").is_none(), "{}", got.body);
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!((record.usage.input_tokens, record.usage.output_tokens), (Some(7), Some(2)));
    assert!(!record.estimated, "the usage Mistral sent, not an estimate");
}

#[tokio::test]
async fn a_deepseek_tool_loop_carries_its_reasoning_back() {
    let h = harness(Flavour::DeepSeek, "deepseek", "deepseek-reasoner").await;
    let tools = json!([{"name": "weather", "input_schema": {"type": "object"}}]);
    let question = json!({"role": "user", "content": "Weather in Paris?"});
    // Turn 1: DeepSeek thinks, then calls the tool.
    h.openai.push(Reply::from(canned::reasoning_then_tool_call(
        switchyard_testkit::Vendor::OpenAi,
        "deepseek-reasoner",
        "I need the weather first.",
        "weather",
        "{}",
        false,
    )));
    let body =
        json!({"model": "m-preset", "max_tokens": 100, "messages": [question], "tools": tools});
    let (status, answer, _) = send(&h, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{answer}");
    let content = answer["content"].as_array().unwrap().clone();
    assert_eq!(content[0]["type"], "thinking", "{answer}");
    let call_id = content.iter().find(|b| b["type"] == "tool_use").unwrap()["id"].clone();

    // Turn 2: the Anthropic client sends the turn back as it got it; DeepSeek
    // gets the reasoning as `reasoning_content` on the tool-calling turn.
    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "18C"}]});
    let body = json!({"model": "m-preset", "max_tokens": 100, "tools": tools,
        "messages": [question, {"role": "assistant", "content": content}, result]});
    let (status, answer, got) = send(&h, "/v1/messages", &body).await;
    assert_eq!(status, 200, "{answer}");
    let sent = &got.unwrap().body["messages"];
    let turn = sent.as_array().unwrap().iter().find(|m| m["tool_calls"].is_array()).unwrap();
    assert_eq!(turn["reasoning_content"], "I need the weather first.", "{sent}");

    // A Chat client that kept none (most SDKs drop the field): the turn still
    // carries it, empty, which DeepSeek takes; without the preset it is refused.
    let chat = json!({"model": "m-preset", "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"}]});
    let (status, answer, got) = send(&h, "/v1/chat/completions", &chat).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(got.unwrap().body["messages"][1]["reasoning_content"], "");
    let mut plain = chat;
    plain["model"] = json!("m-plain");
    let (status, _, _) = send(&h, "/v1/chat/completions", &plain).await;
    assert_ne!(status, 200, "the fake refuses as DeepSeek does");
}
