//! Token counting, black-box: each client format's counting endpoint against each
//! upstream wire. Where the wire has a counting endpoint the upstream's own number
//! comes back (the fakes answer a count derived from the body they received, far
//! from any estimate); where it has none the gateway's estimate comes back, marked
//! `x-gateway-estimated: true`. Counts include system, tools and images, fail over
//! like generations, obey auth and access rules, and never show a key.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_core::estimate;
use switchyard_protocol::ClientFormat;
use switchyard_testkit::{Received, Reply, Vendor, canned};

/// A valid 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// The client formats with a counting endpoint, and its path.
const ENDPOINTS: [(ClientFormat, &str); 2] = [
    (ClientFormat::Anthropic, "/v1/messages/count_tokens"),
    (ClientFormat::OpenAiResponses, "/v1/responses/input_tokens"),
];

const QUESTION: &str = "How many tokens is this question?";

fn schema() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string", "description": "the city"}}, "required": ["city"]})
}

/// A counting body in `format`: the question alone, or with a system prompt, a
/// tool and an image (`rich`).
fn body(format: ClientFormat, model: &str, rich: bool) -> Value {
    match (format, rich) {
        (ClientFormat::Anthropic, false) => {
            json!({"model": model, "messages": [{"role": "user", "content": QUESTION}]})
        }
        (ClientFormat::Anthropic, true) => json!({
            "model": model,
            "system": "You answer in one word.",
            "tools": [{"name": "get_weather", "description": "Today's weather in a city", "input_schema": schema()}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": QUESTION},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
            ]}],
        }),
        (_, false) => json!({"model": model, "input": QUESTION}),
        (_, true) => json!({
            "model": model,
            "instructions": "You answer in one word.",
            "tools": [{"type": "function", "name": "get_weather", "description": "Today's weather in a city", "parameters": schema()}],
            "input": [{"role": "user", "content": [
                {"type": "input_text", "text": QUESTION},
                {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}")},
            ]}],
        }),
    }
}

/// What the endpoint of `format` answers for a count of `n`.
fn shape(format: ClientFormat, n: u64) -> Value {
    match format {
        ClientFormat::Anthropic => json!({"input_tokens": n}),
        _ => json!({"object": "response.input_tokens", "input_tokens": n}),
    }
}

/// The gateway's own estimate of `body` in `format`.
fn estimated(format: ClientFormat, body: &Value) -> u64 {
    let req = format.parse_request(body.to_string().as_bytes(), None).unwrap();
    estimate::input_tokens(&req)
}

struct Counted {
    status: u16,
    provider: String,
    estimated: String,
    json: Value,
    text: String,
}

impl Counted {
    fn tokens(&self) -> u64 {
        self.json["input_tokens"].as_u64().unwrap_or_else(|| panic!("no count: {}", self.text))
    }
}

async fn count(h: &Harness, path: &str, body: &Value) -> Counted {
    let r = h.post(path, body).await;
    read(r).await
}

async fn read(r: reqwest::Response) -> Counted {
    let status = r.status().as_u16();
    let header = |name: &str| {
        r.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned()
    };
    let provider = header("x-gateway-provider");
    let estimated = header("x-gateway-estimated");
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Counted { status, provider, estimated, json, text }
}

/// The latest request `vendor`'s fake received, once it has received `n`.
async fn nth(h: &Harness, vendor: Vendor, n: usize) -> Received {
    let seen = tokio::time::timeout(WAIT, h.fake(vendor).wait_for_requests(n)).await.unwrap();
    seen.last().unwrap().clone()
}

#[tokio::test]
async fn every_endpoint_gets_the_upstreams_own_count_where_the_wire_has_one() {
    let h = Harness::start().await;
    for (format, path) in ENDPOINTS {
        for (model, vendor, provider, key_header, key) in [
            ("m-anthropic", Vendor::Anthropic, "anthropic", "x-api-key", ANTHROPIC_KEY),
            ("m-gemini", Vendor::Gemini, "gemini", "x-goog-api-key", GEMINI_KEY),
        ] {
            let label = format!("{format:?} -> {model}");
            let before = h.fake(vendor).request_count();
            let c = count(&h, path, &body(format, model, true)).await;
            assert_eq!(c.status, 200, "{label}: {}", c.text);
            let seen = nth(&h, vendor, before + 1).await;
            // The fake's number, derived from what it received: not an estimate.
            assert_eq!(c.json, shape(format, canned::counted_tokens(&seen.body)), "{label}");
            assert_eq!((c.provider.as_str(), c.estimated.as_str()), (provider, "false"), "{label}");
            assert_eq!(seen.header(key_header), Some(key), "{label}");
            // What a generation would send: the system prompt, the tool, the image.
            let counted = match vendor {
                Vendor::Anthropic => {
                    assert_eq!(seen.path, "/v1/messages/count_tokens", "{label}");
                    assert_eq!(seen.body["model"], "up-anthropic", "{label}");
                    assert!(seen.body.get("max_tokens").is_none(), "{label}");
                    seen.body.clone()
                }
                _ => {
                    assert_eq!(seen.path, "/v1beta/models/up-gemini:countTokens", "{label}");
                    let inner = seen.body["generateContentRequest"].clone();
                    assert_eq!(inner["model"], "models/up-gemini", "{label}");
                    assert!(inner["systemInstruction"].is_object(), "{label}: {inner}");
                    inner
                }
            };
            let text = counted.to_string();
            assert!(text.contains("You answer in one word."), "{label}: {text}");
            assert!(text.contains("get_weather") && text.contains("the city"), "{label}: {text}");
            assert!(text.contains(PNG_B64), "{label}: {text}");
        }
    }
}

#[tokio::test]
async fn bedrock_counts_with_count_tokens_on_the_foundation_model_signed() {
    let h = Harness::start().await;
    // The deployment is an inference profile; CountTokens takes the
    // foundation model's id (the fake refuses a profile's, as Bedrock does).
    let foundation = BEDROCK_MODEL.strip_prefix("us.").unwrap();
    for (format, path) in ENDPOINTS {
        let label = format!("{format:?}");
        let before = h.bedrock.request_count();
        let c = count(&h, path, &body(format, "m-bedrock", true)).await;
        assert_eq!(c.status, 200, "{label}: {}", c.text);
        let seen = nth(&h, Vendor::Bedrock, before + 1).await;
        assert_eq!(c.json, shape(format, canned::counted_tokens(&seen.body)), "{label}");
        assert_eq!((c.provider.as_str(), c.estimated.as_str()), ("bedrock", "false"), "{label}");
        assert_eq!(
            seen.path,
            format!("/model/{}/count-tokens", foundation.replace(':', "%3A")),
            "{label}"
        );
        let auth = seen.header("authorization").unwrap_or_default();
        assert!(auth.contains(BEDROCK_ACCESS_KEY_ID), "{label}: signed: {auth}");
        // The conversation a generation would send, and nothing else.
        let converse = &seen.body["input"]["converse"];
        assert!(converse.get("inferenceConfig").is_none(), "{label}: {converse}");
        let text = converse.to_string();
        assert!(text.contains("You answer in one word."), "{label}: {text}");
        assert!(text.contains("get_weather") && text.contains("the city"), "{label}: {text}");
        assert!(text.contains(PNG_B64), "{label}: {text}");
    }
}

#[tokio::test]
async fn an_anthropic_clients_own_body_is_counted_without_what_the_endpoint_refuses() {
    let h = Harness::start().await;
    // Some clients send a whole Messages request; Anthropic's count refuses
    // `max_tokens`, `stream` and sampling settings as extra inputs.
    let mut sent = body(ClientFormat::Anthropic, "m-anthropic", false);
    sent["max_tokens"] = json!(1024);
    sent["stream"] = json!(false);
    sent["temperature"] = json!(0.3);
    let r = h
        .client
        .post(format!("{}/v1/messages/count_tokens", h.base))
        .header("x-api-key", GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "token-counting-2024-11-01")
        .body(sent.to_string())
        .send()
        .await
        .unwrap();
    let c = read(r).await;
    assert_eq!((c.status, c.estimated.as_str()), (200, "false"), "{}", c.text);
    let seen = nth(&h, Vendor::Anthropic, 1).await;
    assert_eq!(c.tokens(), canned::counted_tokens(&seen.body));
    assert_eq!(
        seen.body,
        json!({"model": "up-anthropic", "messages": [{"role": "user", "content": QUESTION}]})
    );
    assert_eq!(seen.header("anthropic-beta"), Some("token-counting-2024-11-01"));
    assert_eq!(seen.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn a_wire_without_a_counting_endpoint_gets_the_estimate_marked_as_such() {
    let h = Harness::start().await;
    for (format, path) in ENDPOINTS {
        for (model, provider) in [("m-openai", "openai"), ("mock-echo", "mock")] {
            let sent = body(format, model, true);
            let c = count(&h, path, &sent).await;
            let label = format!("{format:?} -> {model}");
            assert_eq!(c.status, 200, "{label}: {}", c.text);
            assert_eq!((c.provider.as_str(), c.estimated.as_str()), (provider, "true"), "{label}");
            assert_eq!(c.json, shape(format, estimated(format, &sent)), "{label}");
        }
    }
    // OpenAI Chat has no counting endpoint: nothing was sent to it.
    assert_eq!(h.upstream_requests(), 0);
}

#[tokio::test]
async fn system_tools_and_images_count_on_every_wire() {
    let h = Harness::start().await;
    for (format, path) in ENDPOINTS {
        for model in ["m-anthropic", "m-gemini", "m-openai"] {
            let bare = count(&h, path, &body(format, model, false)).await;
            let rich = count(&h, path, &body(format, model, true)).await;
            assert_eq!((bare.status, rich.status), (200, 200), "{}{}", bare.text, rich.text);
            assert!(rich.tokens() > bare.tokens(), "{format:?} -> {model}");
            if model == "m-openai" {
                // The estimate counts the image, the tool's schema and the system prompt.
                let text = "You answer in one word.get_weatherToday's weather in a city".len()
                    + schema().to_string().len();
                // (Rounded down: the bare request's own rounding may absorb a token.)
                let added = estimate::IMAGE_TOKENS + text as u64 / 4;
                assert!(rich.tokens() - bare.tokens() >= added, "{format:?}: {added}");
            }
        }
    }
}

#[tokio::test]
async fn a_failing_counting_endpoint_fails_over_like_a_generation() {
    let extra = "  - id: m-count-chain
    deployments: [{ provider: anthropic, model: up-a }, { provider: gemini, model: up-g }]
  - id: m-count-then-openai
    deployments: [{ provider: anthropic, model: up-a }, { provider: openai, model: up-o }]
";
    let h = Harness::start_with(Options { extra_models: extra.into(), ..Options::default() }).await;
    let mut gemini_seen = 0;
    for (format, path) in ENDPOINTS {
        // A 5xx: the next candidate counts.
        h.anthropic.push(Reply::status(503));
        let c = count(&h, path, &body(format, "m-count-chain", true)).await;
        assert_eq!(c.status, 200, "{}", c.text);
        gemini_seen += 1;
        let seen = nth(&h, Vendor::Gemini, gemini_seen).await;
        assert_eq!(seen.path, "/v1beta/models/up-g:countTokens");
        assert_eq!((c.provider.as_str(), c.estimated.as_str()), ("gemini", "false"));
        assert_eq!(c.json, shape(format, canned::counted_tokens(&seen.body)));

        // The next candidate's wire has no counting endpoint: its estimate.
        h.anthropic.push(Reply::status(500));
        let sent = body(format, "m-count-then-openai", true);
        let c = count(&h, path, &sent).await;
        assert_eq!((c.status, c.provider.as_str(), c.estimated.as_str()), (200, "openai", "true"));
        assert_eq!(c.json, shape(format, estimated(format, &sent)));

        // Every count failed: the estimate, marked, for the first deployment.
        h.anthropic.push(Reply::status(502));
        let sent = body(format, "m-anthropic", false);
        let c = count(&h, path, &sent).await;
        assert_eq!(
            (c.status, c.provider.as_str(), c.estimated.as_str()),
            (200, "anthropic", "true")
        );
        assert_eq!(c.tokens(), estimated(format, &sent));

        // A request the upstream refuses (400) is answered, in the caller's format.
        h.anthropic.push(Reply::error(400, "messages.0: bad request"));
        let c = count(&h, path, &body(format, "m-count-chain", false)).await;
        assert_eq!(c.status, 400, "{}", c.text);
        assert_eq!(c.json["error"]["code"], "upstream_invalid_request");
        assert_eq!(c.json["type"] == "error", format == ClientFormat::Anthropic, "{}", c.text);
        assert_eq!(h.gemini.request_count(), gemini_seen, "no failover on a 400");
    }
    assert_eq!(h.openai.request_count(), 0);
}

#[tokio::test]
async fn auth_and_access_rules_apply_before_anything_is_sent() {
    let rules = "access_rules:\n  - name: no-anthropic\n    effect: deny\n    pattern: \"m-anthropic\"\n    reason: not approved\n";
    let h = Harness::start_with(Options { rules: rules.into(), ..Options::default() }).await;
    for (format, path) in ENDPOINTS {
        let r = h
            .client
            .post(format!("{}{path}", h.base))
            .header("content-type", "application/json")
            .body(body(format, "m-gemini", false).to_string())
            .send()
            .await
            .unwrap();
        let c = read(r).await;
        assert_eq!(c.status, 401, "{format:?}");
        assert_eq!(c.json["error"]["type"], "authentication_error", "{}", c.text);
        assert_eq!(c.json["type"] == "error", format == ClientFormat::Anthropic, "{}", c.text);

        let c = count(&h, path, &body(format, "m-anthropic", false)).await;
        assert_eq!(c.status, 403, "{format:?}: {}", c.text);
        assert_eq!(c.json["error"]["code"], "authz_denied");

        let c = count(&h, path, &body(format, "no-such-model", false)).await;
        assert_eq!(c.status, 404, "{format:?}: {}", c.text);
    }
    assert_eq!(h.upstream_requests(), 0);
}

#[tokio::test]
async fn provider_keys_never_reach_the_caller() {
    let h = Harness::start().await;
    for (format, path) in ENDPOINTS {
        for (model, vendor, key) in [
            ("m-anthropic", Vendor::Anthropic, ANTHROPIC_KEY),
            ("m-gemini", Vendor::Gemini, GEMINI_KEY),
        ] {
            // An upstream that quotes the key it was sent, in an error the caller sees.
            h.fake(vendor).push(Reply::error(400, format!("API key not valid: {key}")));
            let r = h.post(path, &body(format, model, false)).await;
            let headers = format!("{:?}", r.headers());
            let c = read(r).await;
            assert_eq!(c.status, 400, "{}", c.text);
            assert!(!c.text.contains(key) && !headers.contains(key), "{format:?}: {}", c.text);
            assert!(c.text.contains("API key not valid"), "{}", c.text);

            let r = h.post(path, &body(format, model, true)).await;
            let headers = format!("{:?}", r.headers());
            let c = read(r).await;
            assert_eq!(c.status, 200);
            assert!(!c.text.contains(key) && !headers.contains(key));
        }
    }
}
