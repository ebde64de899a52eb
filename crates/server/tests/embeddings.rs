//! Embeddings, black-box: OpenAI's `/v1/embeddings` and Gemini's
//! `:embedContent` / `:batchEmbedContents` against each upstream's embeddings
//! API (OpenAI-compatible, Gemini, Vertex AI, Bedrock Titan and Cohere), whose
//! fakes refuse what the real APIs refuse (batch caps, body shapes, sizes) and
//! answer vectors derived from each input's text, so a vector out of place
//! shows. Batching to each provider's cap, input order, base64, failover,
//! metering and records, and the kind of model each endpoint serves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::embeddings::{DEFAULT_DIMS, base64_floats, token_count};
use switchyard_testkit::{FakeUpstream, Reply, Vendor, fake_vector, vertex};

const TITAN: &str = "amazon.titan-embed-text-v2:0";
const COHERE: &str = "cohere.embed-english-v3";

/// The embedding models every test's gateway serves, one per upstream, and a
/// chain that fails over from OpenAI to Gemini.
fn models() -> String {
    format!(
        r#"  - id: e-openai
    kind: embedding
    deployments: [{{ provider: openai, model: text-embedding-3-small }}]
    pricing: {{ input: 0.02 }}
  - id: e-gemini
    kind: embedding
    deployments: [{{ provider: gemini, model: gemini-embedding-001 }}]
    pricing: {{ input: 0.15 }}
  - id: e-titan
    kind: embedding
    deployments: [{{ provider: bedrock, model: "{TITAN}" }}]
    pricing: {{ input: 0.02 }}
  - id: e-cohere
    kind: embedding
    deployments: [{{ provider: bedrock, model: "{COHERE}" }}]
    pricing: {{ input: 0.1 }}
  - id: e-chain
    kind: embedding
    deployments: [{{ provider: openai, model: text-embedding-3-small }}, {{ provider: gemini, model: gemini-embedding-001 }}]
    pricing: {{ input: 1.0 }}
  - id: e-anthropic-first
    kind: embedding
    deployments: [{{ provider: anthropic, model: no-such-thing }}, {{ provider: gemini, model: gemini-embedding-001 }}]
"#
    )
}

async fn start() -> Harness {
    Harness::start_with(Options { extra_models: models(), ..Options::default() }).await
}

struct Answer {
    status: u16,
    provider: String,
    json: Value,
    text: String,
}

async fn post(h: &Harness, path: &str, body: &Value) -> Answer {
    let r = h.post(path, body).await;
    let status = r.status().as_u16();
    let provider = r
        .headers()
        .get("x-gateway-provider")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { status, provider, json, text }
}

/// The vectors of an OpenAI-shaped answer, by `index`, checked to be in order.
fn vectors(a: &Answer) -> Vec<Vec<f32>> {
    let data = a.json["data"].as_array().unwrap_or_else(|| panic!("no data: {}", a.text));
    data.iter()
        .enumerate()
        .map(|(i, d)| {
            assert_eq!(d["index"], json!(i), "in input order: {}", a.text);
            d["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
        })
        .collect()
}

fn inputs(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("input number {i}")).collect()
}

#[tokio::test]
async fn every_upstream_answers_one_vector_per_input_in_input_order() {
    let h = start().await;
    let texts = inputs(3);
    for (model, vendor, provider) in [
        ("e-openai", Vendor::OpenAi, "openai"),
        ("e-gemini", Vendor::Gemini, "gemini"),
        ("e-titan", Vendor::Bedrock, "bedrock"),
        ("e-cohere", Vendor::Bedrock, "bedrock"),
    ] {
        let before = h.fake(vendor).request_count();
        let a = post(&h, "/v1/embeddings", &json!({"model": model, "input": texts})).await;
        assert_eq!(a.status, 200, "{model}: {}", a.text);
        assert_eq!(a.provider, provider, "{model}");
        assert_eq!(a.json["object"], "list", "{model}");
        assert_eq!(a.json["model"], model, "{model}: named as the client asked");
        let expected: Vec<Vec<f32>> = texts.iter().map(|t| fake_vector(t, DEFAULT_DIMS)).collect();
        // The OpenAI fake lists three or more in reverse: re-sorted by index.
        assert_eq!(vectors(&a), expected, "{model}");
        let calls = h.fake(vendor).request_count() - before;
        // Titan takes one text a call; the others the three at once.
        assert_eq!(calls, if model == "e-titan" { 3 } else { 1 }, "{model}");
    }
    // What each upstream was sent, in its own body.
    let openai = h.openai.received();
    let sent = &openai.last().unwrap().body;
    assert_eq!(sent["model"], "text-embedding-3-small");
    assert_eq!(sent["input"], json!(texts));
    let gemini = h.gemini.received();
    let last = gemini.last().unwrap();
    assert_eq!(last.path, "/v1beta/models/gemini-embedding-001:batchEmbedContents");
    assert_eq!(last.body["requests"][2]["content"]["parts"][0]["text"], texts[2]);
    let bedrock = h.bedrock.received();
    let cohere = bedrock.last().unwrap();
    assert_eq!(cohere.bedrock_model().as_deref(), Some(COHERE));
    assert_eq!(cohere.body, json!({"texts": texts, "input_type": "search_document"}));
}

#[tokio::test]
async fn inputs_over_a_providers_cap_are_split_and_joined_in_order() {
    let h = start().await;
    for (model, vendor, n, calls) in
        [("e-gemini", Vendor::Gemini, 150, [100, 50]), ("e-cohere", Vendor::Bedrock, 100, [96, 4])]
    {
        let texts = inputs(n);
        let before = h.fake(vendor).request_count();
        let a = post(&h, "/v1/embeddings", &json!({"model": model, "input": texts})).await;
        assert_eq!(a.status, 200, "{model}: {}", a.text);
        let got = vectors(&a);
        assert_eq!(got.len(), n, "{model}");
        for (i, v) in got.iter().enumerate() {
            assert_eq!(v, &fake_vector(&texts[i], DEFAULT_DIMS), "{model}: input {i}");
        }
        let received = h.fake(vendor).received();
        let sizes: Vec<usize> = received[before..]
            .iter()
            .map(|r| {
                let list = r.body.get("requests").or_else(|| r.body.get("texts"));
                list.and_then(Value::as_array).map_or(0, Vec::len)
            })
            .collect();
        let mut sizes = sizes;
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        assert_eq!(sizes, calls, "{model}: one call per batch, each within the cap");
    }
    // Titan: one text a call, however many there are.
    let texts = inputs(6);
    let before = h.bedrock.request_count();
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-titan", "input": texts})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(vectors(&a)[5], fake_vector(&texts[5], DEFAULT_DIMS));
    assert_eq!(h.bedrock.request_count() - before, 6);
}

#[tokio::test]
async fn dimensions_and_base64_are_honoured_or_refused_by_name() {
    let h = start().await;
    // Base64 of the little-endian f32s, as OpenAI writes it, whatever served it.
    for model in ["e-openai", "e-gemini", "e-titan"] {
        let dims = if model == "e-titan" { 256 } else { 4 };
        let body = json!({"model": model, "input": ["a", "b"], "dimensions": dims, "encoding_format": "base64"});
        let a = post(&h, "/v1/embeddings", &body).await;
        assert_eq!(a.status, 200, "{model}: {}", a.text);
        for (i, t) in ["a", "b"].iter().enumerate() {
            assert_eq!(
                a.json["data"][i]["embedding"],
                json!(base64_floats(&fake_vector(t, dims))),
                "{model}"
            );
        }
    }
    // The upstream was asked for floats and the size.
    let sent = h.openai.received().last().unwrap().body.clone();
    assert_eq!((&sent["encoding_format"], &sent["dimensions"]), (&json!("float"), &json!(4)));
    let sent = h.gemini.received().last().unwrap().body.clone();
    assert_eq!(sent["requests"][0]["outputDimensionality"], 4);

    // A size Titan does not make, and a size Cohere cannot be asked: refused
    // by name, nothing sent.
    let before = h.bedrock.request_count();
    for (model, says) in [
        ("e-titan", "Titan Text Embeddings v2 makes 256, 512 or 1024, not 300"),
        ("e-cohere", "dimensions: Cohere Embed on Bedrock"),
    ] {
        let body = json!({"model": model, "input": "a", "dimensions": 300});
        let a = post(&h, "/v1/embeddings", &body).await;
        assert_eq!(a.status, 400, "{model}: {}", a.text);
        assert_eq!(a.json["error"]["code"], "unsupported_request", "{model}");
        assert!(a.text.contains(says), "{model}: {}", a.text);
    }
    assert_eq!(h.bedrock.request_count(), before);
    // Token ids go where they can be taken (OpenAI), and are refused by name
    // where they cannot.
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-openai", "input": [[1, 2, 3]]})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(h.openai.received().last().unwrap().body["input"], json!([[1, 2, 3]]));
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-gemini", "input": [[1, 2, 3]]})).await;
    assert_eq!(a.status, 400, "{}", a.text);
    assert!(a.text.contains("input as token ids: Gemini takes text only"), "{}", a.text);
}

#[tokio::test]
async fn a_failing_provider_fails_over_and_every_attempt_is_recorded() {
    let h = start().await;
    h.openai.push(Reply::status(500));
    let body = json!({"model": "e-chain", "input": ["x", "y"]});
    let r = h.post("/v1/embeddings", &body).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    let a = Answer {
        status: r.status().as_u16(),
        provider: r.headers()["x-gateway-provider"].to_str().unwrap().to_owned(),
        text: String::new(),
        json: r.json().await.unwrap(),
    };
    assert_eq!((a.status, a.provider.as_str()), (200, "gemini"), "{}", a.json);
    assert_eq!(vectors(&a)[1], fake_vector("y", DEFAULT_DIMS));
    assert!(route.contains("failover:openai->gemini"), "{route}");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert_eq!(rec.operation.as_deref(), Some("embeddings"));
    let outcomes: Vec<&str> = rec.attempts.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes, ["status_500", "ok"]);
    assert_eq!(rec.served_provider.as_deref(), Some("gemini"));
    // Gemini counts no tokens: estimated, and priced at the model's input price.
    assert!(rec.estimated);
    let tokens = rec.usage.input_tokens.unwrap();
    assert_eq!(rec.usage.output_tokens, Some(0));
    assert!((rec.cost_usd.unwrap() - tokens as f64 / 1e6).abs() < 1e-12, "{rec:?}");

    // A wire with no embeddings (Anthropic) is passed over, never called.
    let before = h.anthropic.request_count();
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-anthropic-first", "input": "z"})).await;
    assert_eq!((a.status, a.provider.as_str()), (200, "gemini"), "{}", a.text);
    assert_eq!(h.anthropic.request_count(), before);
}

#[tokio::test]
async fn usage_is_the_upstreams_count_and_priced_from_the_catalog() {
    let h = start().await;
    let texts = ["one two three four five", "six"];
    let r = h.post("/v1/embeddings", &json!({"model": "e-openai", "input": texts})).await;
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let body: Value = r.json().await.unwrap();
    let counted: u64 = texts.iter().map(|t| token_count(t)).sum();
    assert_eq!(body["usage"], json!({"prompt_tokens": counted, "total_tokens": counted}));
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    assert!(!rec.estimated, "OpenAI counts its tokens");
    assert_eq!(rec.usage.input_tokens, Some(counted));
    assert!((rec.cost_usd.unwrap() - counted as f64 * 0.02 / 1e6).abs() < 1e-15);
    assert_eq!(rec.client_format, "openai-chat");
}

#[tokio::test]
async fn gemini_clients_embed_one_or_a_batch_on_any_upstream() {
    let h = start().await;
    let batch = json!({"requests": [
        {"model": "models/e-openai", "content": {"parts": [{"text": "alpha"}]}, "taskType": "RETRIEVAL_QUERY"},
        {"model": "models/e-openai", "content": {"parts": [{"text": "beta"}]}, "taskType": "RETRIEVAL_QUERY"},
    ]});
    let a = post(&h, "/v1beta/models/e-openai:batchEmbedContents", &batch).await;
    assert_eq!((a.status, a.provider.as_str()), (200, "openai"), "{}", a.text);
    let values = |v: &Value| -> Vec<f32> {
        v["values"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
    };
    assert_eq!(values(&a.json["embeddings"][1]), fake_vector("beta", DEFAULT_DIMS));
    // Cohere is told the purpose Gemini's task type names.
    let one = json!({"content": {"parts": [{"text": "gamma"}]}, "taskType": "RETRIEVAL_QUERY"});
    let a = post(&h, "/v1beta/models/e-cohere:embedContent", &one).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(values(&a.json["embedding"]), fake_vector("gamma", DEFAULT_DIMS));
    assert_eq!(h.bedrock.received().last().unwrap().body["input_type"], "search_query");
    // An error in Google's shape.
    let a = post(&h, "/v1beta/models/m-openai:embedContent", &one).await;
    assert_eq!(a.status, 400, "{}", a.text);
    assert_eq!(a.json["error"]["status"], "INVALID_ARGUMENT", "{}", a.text);
}

#[tokio::test]
async fn each_endpoint_serves_its_kind_of_model_only() {
    let h = start().await;
    let before = h.upstream_requests();
    let a = post(&h, "/v1/embeddings", &json!({"model": "m-openai", "input": "hi"})).await;
    assert_eq!(a.status, 400, "{}", a.text);
    assert_eq!(a.json["error"]["code"], "wrong_model_kind");
    assert!(a.text.contains("is of kind chat: it does not serve embedding requests"), "{}", a.text);
    let chat = json!({"model": "e-openai", "messages": [{"role": "user", "content": "hi"}]});
    let a = post(&h, "/v1/chat/completions", &chat).await;
    assert_eq!(a.status, 400, "{}", a.text);
    assert_eq!(a.json["error"]["code"], "wrong_model_kind");
    assert_eq!(h.upstream_requests(), before, "nothing sent");
    // Model lists say what each serves.
    let get = |path: &str| {
        h.client
            .get(format!("{}{path}", h.base))
            .header("authorization", format!("Bearer {GATEWAY_KEY}"))
            .send()
    };
    let listed: Value = get("/v1/models/e-openai").await.unwrap().json().await.unwrap();
    assert_eq!(listed["switchyard"]["kind"], "embedding", "{listed}");
    let listed: Value = get("/v1beta/models/e-openai").await.unwrap().json().await.unwrap();
    assert_eq!(listed["supportedGenerationMethods"], json!(["embedContent", "batchEmbedContents"]));
    let listed: Value = get("/v1beta/models/m-openai").await.unwrap().json().await.unwrap();
    assert_eq!(listed["supportedGenerationMethods"][0], "generateContent");
    // OpenAI's list has embedding models; Anthropic's and Codex's are of
    // models to chat with.
    let ids = |v: &Value, list: &str| -> Vec<String> {
        v[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let openai: Value = get("/v1/models").await.unwrap().json().await.unwrap();
    assert!(ids(&openai, "data").contains(&"e-openai".to_owned()), "{openai}");
    let anthropic: Value = h
        .client
        .get(format!("{}/v1/models", h.base))
        .header("x-api-key", GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = ids(&anthropic, "data");
    assert!(
        listed.contains(&"m-openai".to_owned()) && !listed.contains(&"e-openai".to_owned()),
        "{listed:?}"
    );
    let codex: Value = get("/v1/models?client_version=0.99.0").await.unwrap().json().await.unwrap();
    let slugs: Vec<&str> =
        codex["models"].as_array().unwrap().iter().filter_map(|m| m["slug"].as_str()).collect();
    assert!(slugs.contains(&"m-openai") && !slugs.contains(&"e-openai"), "{slugs:?}");
    // No key, no vectors.
    let r = h
        .client
        .post(format!("{}/v1/embeddings", h.base))
        .json(&json!({"model": "e-openai", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn vertex_predicts_one_instance_a_call_for_gemini_embedding() {
    let fake = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    let files = ConfigFile::new("");
    let sa = files.dir.join("sa.json");
    std::fs::write(&sa, vertex::service_account_json(&format!("{}/token", fake.base_url())))
        .unwrap();
    let providers_extra = format!(
        r#"  vertex:
    wire: vertex-gemini
    endpoint: "{}/v1/projects/{{project}}/locations/{{region}}"
    region: us-central1
    credentials: {{ google: {{ service_account_file: "{}" }} }}
"#,
        fake.base_url(),
        sa.display()
    );
    let extra_models = r#"  - id: e-vertex
    kind: embedding
    deployments: [{ provider: vertex, model: gemini-embedding-001 }, { provider: vertex, model: text-embedding-005 }]
    pricing: { input: 0.15 }
  - id: e-vertex-005
    kind: embedding
    deployments: [{ provider: vertex, model: text-embedding-005 }]
"#
    .to_owned();
    let h =
        Harness::start_with(Options { providers_extra, extra_models, ..Options::default() }).await;
    let texts = inputs(3);
    let predicts = |from: usize| {
        fake.received()[from..].iter().filter(|r| r.path.ends_with(":predict")).count()
    };
    let before = fake.request_count();
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-vertex", "input": texts})).await;
    assert_eq!((a.status, a.provider.as_str()), (200, "vertex"), "{}", a.text);
    let expected: Vec<Vec<f32>> = texts.iter().map(|t| fake_vector(t, DEFAULT_DIMS)).collect();
    assert_eq!(vectors(&a), expected);
    assert_eq!(predicts(before), 3, "gemini-embedding-001 takes one instance a call");
    // Vertex counts each instance's tokens: the usage is its sum.
    let counted: u64 = texts.iter().map(|t| token_count(t)).sum();
    assert_eq!(a.json["usage"]["prompt_tokens"], counted);
    let before = fake.request_count();
    let a = post(&h, "/v1/embeddings", &json!({"model": "e-vertex-005", "input": texts})).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(predicts(before), 1, "the older models take the three at once");
    let sent = fake.received().last().unwrap().body.clone();
    assert_eq!(sent["instances"][1]["content"], texts[1]);
}
