//! Structured output modes end to end: a JSON-schema request goes natively to a
//! deployment whose model supports structured output, and otherwise with the
//! schema in its system prompt, the answer validated by the gateway; an invalid
//! answer fails the attempt over.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_core::record::RequestRecord;
use switchyard_testkit::{Reply, Vendor, canned};

/// Two models that declare capabilities without `structured_output`, one per
/// fake, and one capable model on the Anthropic fake.
const MODELS: &str = "  - id: m-plain-a
    deployments: [{ provider: openai, model: up-plain-a }]
    pricing: { input: 1.0, output: 2.0 }
    capabilities: [tools]
  - id: m-plain-b
    deployments: [{ provider: anthropic, model: up-plain-b }]
    pricing: { input: 3.0, output: 15.0 }
    capabilities: [tools]
  - id: m-plain-native
    deployments: [{ provider: openai, model: up-plain-native }]
    pricing: { input: 1.0, output: 2.0 }
    capabilities: [tools]
";

/// `m-plain-a` fails over to `m-plain-b`, in the default mode (`auto`);
/// `m-plain-native` is in `native` mode.
const ROUTES: &str = r#"routes:
  - name: Plain pair
    match: "m-plain-a"
    provider: openai
    fallbacks: [{ provider: anthropic, model: m-plain-b }]
  - name: Plain native
    match: "m-plain-native"
    provider: openai
    structured_output: native
"#;

const INSTRUCTION: &str = "Answer only with one JSON value";

async fn harness() -> Harness {
    Harness::start_with(Options {
        extra_models: MODELS.into(),
        routes: ROUTES.into(),
        ..Options::default()
    })
    .await
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "population": {"type": "integer", "minimum": 0}
        },
        "required": ["city", "population"],
        "additionalProperties": false
    })
}

/// An OpenAI Chat request for `model` asking for [`schema`].
fn chat(model: &str, prompt: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": prompt}
        ],
        "response_format": {"type": "json_schema",
            "json_schema": {"name": "city", "schema": schema(), "strict": true}}
    })
}

/// An Anthropic Messages request for `model` asking for [`schema`].
fn messages(model: &str, prompt: &str, stream: bool) -> Value {
    json!({
        "model": model, "max_tokens": 200, "stream": stream,
        "messages": [{"role": "user", "content": prompt}],
        "output_config": {"format": {"type": "json_schema", "schema": schema()}}
    })
}

fn answer(vendor: Vendor, model: &str, text: &str) -> Reply {
    canned::text(vendor, model, text, false).into()
}

fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers().get(name).map(|v| v.to_str().unwrap().to_owned())
}

async fn record_of(h: &Harness, r: &reqwest::Response) -> RequestRecord {
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap()
}

fn outcomes(rec: &RequestRecord) -> Vec<&str> {
    rec.attempts.iter().map(|a| a.outcome.as_str()).collect()
}

#[tokio::test]
async fn an_invalid_prompted_answer_fails_over_to_the_next_deployment() {
    let h = harness().await;
    // Prose around the JSON: not JSON. The fallback fences valid JSON.
    h.openai.push(answer(Vendor::OpenAi, "up-plain-a", "Sure! {\"city\": \"Paris\"}"));
    let fenced = "```json\n{\"city\": \"Paris\", \"population\": 2102650}\n```";
    h.anthropic.push(answer(Vendor::Anthropic, "up-plain-b", fenced));

    let r = h.post("/v1/chat/completions", &chat("m-plain-a", "the capital of France")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-gateway-provider").as_deref(), Some("anthropic"));
    assert_eq!(header(&r, "x-switchyard-structured-output").as_deref(), Some("prompted"));
    let rec = record_of(&h, &r).await;
    let body: Value = r.json().await.unwrap();
    // The bare JSON, fence taken off, as a native answer would be.
    let text = body["choices"][0]["message"]["content"].as_str().unwrap();
    assert_eq!(text, "{\"city\": \"Paris\", \"population\": 2102650}");

    assert_eq!(outcomes(&rec), ["invalid_output", "ok"]);
    assert_eq!(rec.routing.structured_output.as_deref(), Some("prompted"));
    assert_eq!(rec.error_code, None);
    // The invalid answer was paid for: metered and costed.
    let first = &rec.attempts[0];
    assert!(first.usage.is_some_and(|u| u.output_tokens.is_some()), "{first:?}");
    assert!(first.cost_usd.is_some_and(|c| c > 0.0), "{first:?}");
    assert!(
        rec.field_edits.iter().any(|e| e.contains("prompted structured output")),
        "{:?}",
        rec.field_edits
    );

    // Each upstream got the schema in its system prompt, after the client's
    // own, and no response format.
    let sent = &h.openai.received()[0].body;
    assert!(sent.get("response_format").is_none(), "{sent}");
    let system: Vec<&str> = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system" || m["role"] == "developer")
        .filter_map(|m| m["content"].as_str())
        .collect();
    let all = system.join("\n");
    assert!(all.starts_with("Be brief."), "{all}");
    assert!(all.contains(INSTRUCTION) && all.contains("\"population\""), "{all}");
    let sent = &h.anthropic.received()[0].body;
    assert!(sent["output_config"]["format"].is_null(), "{sent}");
    let system = sent["system"].to_string();
    assert!(system.contains(INSTRUCTION) && system.contains("minimum"), "{system}");
}

#[tokio::test]
async fn an_answer_that_breaks_the_schema_fails_over_too() {
    let h = harness().await;
    // JSON, but the population is a string and a property is extra.
    let wrong = "{\"city\": \"Paris\", \"population\": \"2 million\"}";
    h.openai.push(answer(Vendor::OpenAi, "up-plain-a", wrong));
    h.anthropic.push(answer(
        Vendor::Anthropic,
        "up-plain-b",
        "{\"city\":\"Paris\",\"population\":1}",
    ));
    let r = h.post("/v1/chat/completions", &chat("m-plain-a", "paris, as a record")).await;
    assert_eq!(r.status(), 200);
    let rec = record_of(&h, &r).await;
    assert_eq!(outcomes(&rec), ["invalid_output", "ok"]);
    assert_eq!(header(&r, "x-gateway-provider").as_deref(), Some("anthropic"));
}

#[tokio::test]
async fn a_capable_deployment_in_auto_mode_gets_the_schema_natively() {
    let h = harness().await;
    let r = h.post("/v1/chat/completions", &chat("m-openai", "the capital of Italy")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-switchyard-structured-output").as_deref(), Some("native"));
    let rec = record_of(&h, &r).await;
    assert_eq!(rec.routing.structured_output.as_deref(), Some("native"));
    assert_eq!(outcomes(&rec), ["ok"], "native answers are the provider's to keep to the schema");
    let sent = &h.openai.received()[0].body;
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["schema"], schema());
    assert!(!sent["messages"].to_string().contains(INSTRUCTION), "{sent}");

    // A request without a schema is neither.
    let plain = json!({"model": "m-openai", "messages": [{"role": "user", "content": "hi"}]});
    let r = h.post("/v1/chat/completions", &plain).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-switchyard-structured-output"), None);
    assert_eq!(record_of(&h, &r).await.routing.structured_output, None);
}

#[tokio::test]
async fn native_mode_refuses_models_without_the_capability_and_a_hint_overrides_the_route() {
    let h = harness().await;
    let r = h.post("/v1/chat/completions", &chat("m-plain-native", "a city")).await;
    assert_eq!(r.status(), 400);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "capability_missing");
    assert!(v["error"]["message"].as_str().unwrap().contains("structured_output"), "{v}");
    assert_eq!(h.upstream_requests(), 0);

    // The request's hint replaces the route's mode, either way.
    h.openai.push(answer(
        Vendor::OpenAi,
        "up-plain-native",
        "{\"city\":\"Oslo\",\"population\":1}",
    ));
    let mut body = chat("m-plain-native", "another city");
    body["switchyard"] = json!({"structured_output": "prompted"});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-switchyard-structured-output").as_deref(), Some("prompted"));
    assert!(h.openai.received()[0].body.get("response_format").is_none());

    let mut body = chat("m-plain-a", "a third city");
    body["switchyard"] = json!({"structured_output": "native"});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], "capability_missing");
    assert_eq!(h.upstream_requests(), 1);

    body["switchyard"] = json!({"structured_output": "sometimes"});
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(r.status(), 400, "an unknown mode is refused");
}

#[tokio::test]
async fn when_every_candidate_answers_invalid_json_the_client_gets_a_typed_error() {
    let h = harness().await;
    h.openai.push(answer(Vendor::OpenAi, "up-plain-a", "I cannot answer in JSON."));
    h.anthropic.push(answer(Vendor::Anthropic, "up-plain-b", "{\"city\": \"Rome\"}"));
    // In the client's own format: an Anthropic client here.
    let r = h.post("/v1/messages", &messages("m-plain-a", "the capital of Italy", false)).await;
    assert_eq!(r.status(), 502);
    let rec = record_of(&h, &r).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error", "{v}");
    assert_eq!(v["error"]["code"], "invalid_structured_output", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    // Both failures rank alike, so the earliest is the client's: the first
    // deployment's, naming its provider and what was wrong.
    assert!(message.starts_with("openai: the answer is not JSON"), "{message}");

    assert_eq!(outcomes(&rec), ["invalid_output", "invalid_output"]);
    assert_eq!(rec.error_code.as_deref(), Some("invalid_structured_output"));
    assert_eq!(rec.routing.structured_output.as_deref(), Some("prompted"));
    assert!(rec.attempts.iter().all(|a| a.cost_usd.is_some()), "both were paid for");
    assert!(rec.cost_usd.is_some_and(|c| c > 0.0), "{:?}", rec.cost_usd);
}

#[tokio::test]
async fn a_prompted_stream_is_forwarded_and_checked_when_it_ends() {
    let h = harness().await;
    // A valid stream: forwarded as it came (fence and all: it is never held
    // whole), no error at its end.
    let valid = "{\"city\": \"Lima\", \"population\": 10000000}";
    h.openai.push(canned::text(Vendor::OpenAi, "up-plain-a", valid, true).into());
    let r = h.post("/v1/messages", &messages("m-plain-a", "lima", true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-switchyard-structured-output").as_deref(), Some("prompted"));
    let rec_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let text = r.text().await.unwrap();
    assert!(!text.contains("event: error"), "{text}");
    let got = decode_stream(switchyard_protocol::ClientFormat::Anthropic, text.as_bytes());
    assert_eq!(got.text(), valid);
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&rec_id)).await.unwrap();
    assert_eq!((outcomes(&rec), rec.error_code.as_deref()), (vec!["ok"], None));
    assert!(h.openai.received()[0].body.get("response_format").is_none());

    // An invalid one has reached the client already: no failover, an error
    // event ends it, and the record says why.
    h.openai.push(canned::text(Vendor::OpenAi, "up-plain-a", "{\"city\": \"Lima\"}", true).into());
    let r = h.post("/v1/messages", &messages("m-plain-a", "lima again", true)).await;
    assert_eq!(r.status(), 200);
    let rec_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let text = r.text().await.unwrap();
    assert!(text.contains("event: error") && text.contains("invalid_structured_output"), "{text}");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&rec_id)).await.unwrap();
    assert_eq!(outcomes(&rec), ["invalid_output"]);
    assert_eq!(rec.error_code.as_deref(), Some("invalid_structured_output"));
    assert_eq!(h.anthropic.request_count(), 0, "nothing fails over after the first content");
}
