//! The `auto` models, black box: a request for `auto` goes where the class the
//! classifier gives it goes, in every client format; `auto-<class>` names its
//! class; the class and its rule lead the `x-gateway-route` header, and are
//! said apart in `x-switchyard-intent` and the record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};

fn options() -> Options {
    Options {
        gateway_extra: "  model_prefixes: [\"app/\"]\n".into(),
        top_level: "intent:\n  targets:\n    reasoning: m-gemini\n    code: m-anthropic\n    ordinary: m-openai\n    cheap: mock-echo\n".into(),
        ..Options::default()
    }
}

async fn routed(h: &Harness, path: &str, body: &Value) -> (String, String) {
    let r = h.post(path, body).await;
    let status = r.status();
    let provider = r.headers().get("x-gateway-provider").map(|v| v.to_str().unwrap().to_owned());
    let route = r.headers().get("x-gateway-route").map(|v| v.to_str().unwrap().to_owned());
    assert_eq!(status, 200, "{}", r.text().await.unwrap());
    (provider.unwrap_or_default(), route.unwrap_or_default())
}

#[tokio::test]
async fn each_class_goes_to_its_target_in_each_client_format() {
    let h = Harness::start_with(options()).await;
    let tools = json!([
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "run_shell_command", "parameters": {"type": "object"}}}]);
    let agent = json!({"model": "auto", "tools": tools, "messages": [
        {"role": "user", "content": "Why does the build fail?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "run_shell_command", "arguments": "{\"command\":\"cargo build\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "error[E0425]: cannot find value `x`"}]});
    let r = h.post("/v1/chat/completions", &agent).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    assert_eq!(r.headers()["x-switchyard-intent"], "code; rule=tool_loop");
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(route.starts_with("auto:code intent_rule:tool_loop"), "{route}");
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(record.routing.intent.as_deref(), Some("code"));
    assert_eq!(record.routing.intent_rule.as_deref(), Some("tool_loop"));

    let proof = json!({"model": "auto", "max_tokens": 512, "messages": [
        {"role": "user", "content": "Prove that there are infinitely many primes."}]});
    let (provider, route) = routed(&h, "/v1/messages", &proof).await;
    assert_eq!(provider, "gemini");
    assert!(route.starts_with("auto:reasoning intent_rule:reasoning_text"), "{route}");

    let thanks = json!({"model": "app/auto", "input": "thanks, that's all!"});
    let (provider, route) = routed(&h, "/v1/responses", &thanks).await;
    assert_eq!(provider, "mock");
    assert!(route.starts_with("auto:cheap intent_rule:small_talk"), "{route}");

    let prose = json!({"contents": [{"role": "user", "parts": [{"text":
        "Write a friendly email to my landlord asking to move the inspection to next week."}]}]});
    let (provider, route) = routed(&h, "/v1beta/models/auto:generateContent", &prose).await;
    assert_eq!(provider, "openai");
    assert!(route.starts_with("auto:ordinary intent_rule:writing"), "{route}");
}

#[tokio::test]
async fn a_named_class_needs_no_classification_and_vision_falls_back_to_ordinary() {
    let h = Harness::start_with(options()).await;
    let hello = json!({"model": "auto-reasoning", "messages": [{"role": "user", "content": "hi"}]});
    let (provider, route) = routed(&h, "/v1/chat/completions", &hello).await;
    assert_eq!(provider, "gemini");
    assert!(route.starts_with("auto:reasoning intent_rule:named"), "{route}");
    // No vision target: a class left out goes where ordinary goes.
    let png = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
    let look = json!({"model": "auto", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": png}}]}]});
    let (provider, route) = routed(&h, "/v1/chat/completions", &look).await;
    assert_eq!(provider, "openai");
    assert!(route.starts_with("auto:vision intent_rule:image"), "{route}");
    // A named model is no decision: no intent header, nothing in the record.
    let named = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let r = h.post("/v1/chat/completions", &named).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("x-switchyard-intent").is_none());
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert!(record.routing.is_empty(), "{:?}", record.routing);
}

#[tokio::test]
async fn without_intent_auto_is_an_unknown_model() {
    let h = Harness::start().await;
    let r = h
        .post(
            "/v1/chat/completions",
            &json!({"model": "auto", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(r.status(), 404, "{}", r.text().await.unwrap());
}

/// What the upstream got for `body` sent as `path`, from `fake`.
async fn upstream_got(
    h: &Harness,
    fake: &switchyard_testkit::FakeUpstream,
    path: &str,
    body: &Value,
) -> Value {
    let before = fake.request_count();
    let r = h.post(path, body).await;
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    assert_eq!(fake.request_count(), before + 1);
    fake.received().last().cloned().unwrap().body
}

#[tokio::test]
async fn effort_auto_is_settled_by_the_intent_and_never_sent() {
    let h = Harness::start().await;
    let chat = |text: &str| {
        json!({"model": "m-openai", "reasoning_effort": "auto",
            "messages": [{"role": "user", "content": text}]})
    };
    // The client's own format and wire: the body is written anew, not forwarded.
    let proof = chat("Prove that there are infinitely many primes.");
    let got = upstream_got(&h, &h.openai, "/v1/chat/completions", &proof).await;
    assert_eq!(got["reasoning_effort"], "high", "{got}");
    // The class that set the effort is said, as an auto model's is.
    let r = h.post("/v1/chat/completions", &proof).await;
    assert_eq!(r.headers()["x-switchyard-intent"], "reasoning; rule=reasoning_text");
    let code = chat("Fix this:\n```rust\nfn main() { let x = ; }\n```");
    let got = upstream_got(&h, &h.openai, "/v1/chat/completions", &code).await;
    assert_eq!(got["reasoning_effort"], "medium", "{got}");
    let thanks = chat("thanks!");
    let got = upstream_got(&h, &h.openai, "/v1/chat/completions", &thanks).await;
    assert!(got.get("reasoning_effort").is_none_or(|e| e == "minimal" || e == "none"), "{got}");

    // The Responses API's `reasoning.effort`, translated to Chat.
    let essay = json!({"model": "m-openai", "reasoning": {"effort": "auto"},
        "input": "Explain how tides work to a ten-year-old."});
    let got = upstream_got(&h, &h.openai, "/v1/responses", &essay).await;
    assert_eq!(got["reasoning_effort"], "low", "{got}");
    assert!(!got.to_string().contains("\"auto\""), "{got}");

    // Anthropic's `output_config.effort`, to Anthropic.
    let puzzle = json!({"model": "m-anthropic", "max_tokens": 4096,
        "output_config": {"effort": "auto"},
        "messages": [{"role": "user", "content": "Prove that the square root of 2 is irrational."}]});
    let got = upstream_got(&h, &h.anthropic, "/v1/messages", &puzzle).await;
    // A budget model: high effort is high's budget.
    let high = switchyard_core::protocol::Effort::High.budget_tokens();
    assert_eq!(got["thinking"], json!({"type": "enabled", "budget_tokens": high}), "{got}");
    assert!(!got.to_string().contains("\"auto\""), "{got}");

    // Gemini's `thinkingLevel: "auto"`, to Gemini: a trivial turn gets no thinking.
    let hello = json!({"contents": [{"role": "user", "parts": [{"text": "hello!"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "auto"}}});
    let got = upstream_got(&h, &h.gemini, "/v1beta/models/m-gemini:generateContent", &hello).await;
    let thinking = &got["generationConfig"]["thinkingConfig"];
    assert!(!got.to_string().to_lowercase().contains("\"auto\""), "{got}");
    assert!(thinking.is_null() || thinking["thinkingBudget"] == 0, "{got}");
    let got =
        upstream_got(&h, &h.gemini, "/v1beta/models/m-gemini:generateContent", &json!({
            "contents": [{"role": "user", "parts": [{"text": "Prove that the square root of 2 is irrational."}]}],
            "generationConfig": {"thinkingConfig": {"thinkingLevel": "auto"}}})).await;
    let thinking = &got["generationConfig"]["thinkingConfig"];
    assert!(thinking["thinkingLevel"] == "high" || thinking["thinkingBudget"] == high, "{got}");
}

/// `intent:` with a model-based classifier on the OpenAI fake: reasoning goes
/// to Gemini, ordinary to Anthropic, cheap to the mock.
fn classifier_options(classifier: &str) -> Options {
    Options {
        top_level: format!(
            "intent:\n  targets:\n    reasoning: m-gemini\n    ordinary: m-anthropic\n    cheap: mock-echo\n  classifier: {classifier}\n"
        ),
        ..Options::default()
    }
}

/// The classifier's answer, as the OpenAI fake gives it.
fn says(word: &str) -> switchyard_testkit::Reply {
    switchyard_testkit::Reply::from(switchyard_testkit::canned::text(
        switchyard_testkit::Vendor::OpenAi,
        "up-openai",
        word,
        false,
    ))
}

async fn ask_auto(h: &Harness, text: &str) -> (String, String, switchyard_core::RequestRecord) {
    let body = json!({"model": "auto", "messages": [{"role": "user", "content": text}]});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    let provider = r.headers()["x-gateway-provider"].to_str().unwrap().to_owned();
    let intent = r.headers()["x-switchyard-intent"].to_str().unwrap().to_owned();
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    (provider, intent, record)
}

#[tokio::test]
async fn the_classifier_model_decides_between_reasoning_and_direct_and_is_kept() {
    let h = Harness::start_with(classifier_options("{ model: m-openai, timeout_ms: 5000 }")).await;
    h.openai.push(says("reasoning"));
    // The rules call it ordinary; the model says it needs reasoning.
    let tides = "Explain how the tides work, in detail.";
    let (provider, intent, record) = ask_auto(&h, tides).await;
    assert_eq!((provider.as_str(), intent.as_str()), ("gemini", "reasoning; rule=model"));
    let c = record.routing.classifier.clone().unwrap();
    assert_eq!((c.model.as_str(), &*c.answer, &*c.rules), ("m-openai", "reasoning", "ordinary"));
    assert!(!c.cached && !c.shadow);
    assert!(c.cost_usd.is_some_and(|usd| usd > 0.0), "{c:?}");
    // The call is a request of its own, recorded, asked in one word.
    let call_id = c.request_id.unwrap();
    assert_eq!(call_id, format!("{}-intent", record.id));
    let call = tokio::time::timeout(WAIT, h.sink.wait_for(&call_id)).await.unwrap();
    assert!(call.descriptor.contains("intent_classifier"), "{}", call.descriptor);
    let asked = &h.openai.received()[0].body;
    assert_eq!(asked["max_completion_tokens"], 8, "{asked}");
    assert!(asked.to_string().contains("Explain how the tides work"), "{asked}");

    // Asked again: the kept answer, no call.
    let (provider, _, record) = ask_auto(&h, tides).await;
    assert_eq!(provider, "gemini");
    assert!(record.routing.classifier.unwrap().cached);
    assert_eq!(h.openai.request_count(), 1);

    // A coding agent's loop is code by the rules' evidence: the model is not asked.
    let tools = json!([
        {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "run_shell_command", "parameters": {"type": "object"}}}]);
    let agent = json!({"model": "auto", "tools": tools, "messages": [
        {"role": "user", "content": "Why does the build fail?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "run_shell_command", "arguments": "{\"command\":\"cargo build\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "error[E0425]: cannot find value `x`"}]});
    assert_eq!(h.post("/v1/chat/completions", &agent).await.status(), 200);
    assert_eq!(h.openai.request_count(), 1);
}

#[tokio::test]
async fn past_its_timeout_the_rules_decide_and_the_record_says_so() {
    let h = Harness::start_with(classifier_options("{ model: m-openai, timeout_ms: 100 }")).await;
    h.openai.push(says("reasoning").first_byte_delay(std::time::Duration::from_secs(5)));
    let (provider, intent, record) = ask_auto(&h, "Explain how the tides work, in detail.").await;
    assert_eq!((provider.as_str(), intent.as_str()), ("anthropic", "ordinary; rule=default"));
    let c = record.routing.classifier.unwrap();
    assert_eq!(&*c.answer, "timeout");
    assert!(c.latency_ms >= 100 && c.latency_ms < 5_000, "{c:?}");
}

#[tokio::test]
async fn in_shadow_mode_it_is_asked_and_recorded_but_the_rules_route() {
    let h = Harness::start_with(classifier_options("{ model: m-openai, shadow: true }")).await;
    h.openai.push(says("reasoning"));
    let (provider, intent, record) = ask_auto(&h, "Explain how the tides work, in detail.").await;
    assert_eq!((provider.as_str(), intent.as_str()), ("anthropic", "ordinary; rule=default"));
    let c = record.routing.classifier.unwrap();
    assert_eq!((&*c.answer, c.shadow), ("reasoning", true));
}

#[tokio::test]
async fn model_lists_show_the_auto_models() {
    let h = Harness::start_with(options()).await;
    let list: Value = h
        .client
        .get(format!("{}/v1/models", h.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> =
        list["data"].as_array().unwrap().iter().filter_map(|m| m["id"].as_str()).collect();
    for name in
        ["auto", "auto-reasoning", "auto-code", "auto-ordinary", "auto-cheap", "auto-vision"]
    {
        assert!(ids.contains(&name), "{name}: {ids:?}");
    }
    let code = list["data"].as_array().unwrap().iter().find(|m| m["id"] == "auto-code").unwrap();
    // Its target's facts: m-anthropic's prices.
    assert_eq!(code["switchyard"]["pricing"]["input"], 3.0, "{code}");
    let auto = list["data"].as_array().unwrap().iter().find(|m| m["id"] == "auto").unwrap();
    assert!(auto["switchyard"]["pricing"].is_null(), "no one price: {auto}");
    // One by name, in the Anthropic shape.
    let one = h
        .client
        .get(format!("{}/v1/models/auto-code", h.base))
        .bearer_auth(GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap();
    assert_eq!(one.status(), 200);
    let one: Value = one.json().await.unwrap();
    assert_eq!((&one["type"], &one["id"]), (&json!("model"), &json!("auto-code")));
    // Without `intent:` there are none.
    let plain = Harness::start().await;
    let r = plain
        .client
        .get(format!("{}/v1/models/auto", plain.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}
