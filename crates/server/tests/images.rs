//! Image generation, black-box: OpenAI's `/v1/images/generations` against
//! OpenAI's image API (GPT image and DALL·E models) and Imagen (Gemini API
//! and Vertex AI), whose fakes refuse what the real APIs refuse (per-model
//! fields, counts, sizes) and draw a PNG derived from the prompt and its
//! index. Calls split to each provider's most images, links served by the
//! gateway, what Imagen cannot make refused by name or failed over, and each
//! image metered at the catalog's price.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use base64::Engine as _;
use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Vendor, fake_png, fake_png_b64, vertex};

fn models() -> String {
    r#"  - id: i-gpt
    kind: image
    deployments: [{ provider: openai, model: gpt-image-1 }]
    pricing: { input: 5.0, output: 40.0 }
  - id: i-dalle
    kind: image
    deployments: [{ provider: openai, model: dall-e-3 }]
    pricing: { per_image: 0.04, per_image_size: { "1792x1024": 0.08 } }
  - id: i-imagen
    kind: image
    deployments: [{ provider: gemini, model: imagen-4.0-generate-001 }]
    pricing: { per_image: 0.04 }
  - id: i-imagen-then-gpt
    kind: image
    deployments: [{ provider: gemini, model: imagen-4.0-generate-001 }, { provider: openai, model: gpt-image-1 }]
    pricing: { per_image: 0.04 }
"#
    .to_owned()
}

async fn start() -> Harness {
    Harness::start_with(Options { extra_models: models(), ..Options::default() }).await
}

struct Answer {
    status: u16,
    provider: String,
    id: String,
    json: Value,
    text: String,
}

async fn generate(h: &Harness, body: &Value) -> Answer {
    let r = h.post("/v1/images/generations", body).await;
    let header =
        |n: &str| r.headers().get(n).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let (status, provider, id) =
        (r.status().as_u16(), header("x-gateway-provider"), header("x-request-id"));
    let text = r.text().await.unwrap();
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Answer { status, provider, id, json, text }
}

#[tokio::test]
async fn gpt_image_answers_base64_and_is_metered_by_its_tokens() {
    let h = start().await;
    let a = generate(
        &h,
        &json!({"model": "i-gpt", "prompt": "a red kite", "n": 2, "size": "1024x1024"}),
    )
    .await;
    assert_eq!((a.status, a.provider.as_str()), (200, "openai"), "{}", a.text);
    for i in 0..2 {
        assert_eq!(a.json["data"][i]["b64_json"], fake_png_b64("a red kite", i), "{}", a.text);
    }
    let sent = h.openai.received().last().unwrap().body.clone();
    assert_eq!((&sent["model"], &sent["n"]), (&json!("gpt-image-1"), &json!(2)));
    assert!(sent.get("response_format").is_none(), "GPT image models refuse it: {sent}");
    let usage = &a.json["usage"];
    let (input, output) =
        (usage["input_tokens"].as_u64().unwrap(), usage["output_tokens"].as_u64().unwrap());
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&a.id)).await.unwrap();
    assert_eq!(rec.operation.as_deref(), Some("images"));
    assert_eq!((rec.usage.input_tokens, rec.usage.output_tokens), (Some(input), Some(output)));
    let want = (input as f64 * 5.0 + output as f64 * 40.0) / 1e6;
    assert!((rec.cost_usd.unwrap() - want).abs() < 1e-12, "{rec:?}");
    assert!(rec.descriptor.contains("images:2"), "{}", rec.descriptor);
}

#[tokio::test]
async fn dalle_makes_one_a_call_and_links_are_served_by_the_gateway() {
    let h = start().await;
    let before = h.openai.request_count();
    let body = json!({"model": "i-dalle", "prompt": "a lighthouse", "n": 2, "size": "1792x1024"});
    let a = generate(&h, &body).await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(h.openai.request_count() - before, 2, "DALL·E 3 makes one image a call");
    let sent = h.openai.received().last().unwrap().body.clone();
    assert_eq!((&sent["n"], &sent["response_format"]), (&json!(1), &json!("b64_json")));
    // DALL·E's default is a link: to the gateway's copy, fetched with no key.
    let url = a.json["data"][0]["url"].as_str().unwrap_or_else(|| panic!("{}", a.text));
    assert!(url.starts_with(&format!("{}/v1/images/files/", h.base)), "{url}");
    let r = h.client.get(url).send().await.unwrap();
    assert_eq!(r.headers()["content-type"], "image/png");
    assert_eq!(r.bytes().await.unwrap().as_ref(), fake_png("a lighthouse", 0).as_slice());
    let gone =
        h.client.get(format!("{}/v1/images/files/0123abcd.png", h.base)).send().await.unwrap();
    assert_eq!(gone.status(), 404);
    // Priced per image of its size.
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&a.id)).await.unwrap();
    assert!((rec.cost_usd.unwrap() - 0.16).abs() < 1e-12, "{rec:?}");
    // Asked for the images, they come in the answer.
    let mut inline = body.clone();
    inline["response_format"] = json!("b64_json");
    inline["n"] = json!(1);
    let a = generate(&h, &inline).await;
    assert_eq!(a.json["data"][0]["b64_json"], fake_png_b64("a lighthouse", 0), "{}", a.text);
}

#[tokio::test]
async fn imagen_makes_four_a_call_and_refuses_what_it_cannot_make() {
    let h = start().await;
    let before = h.gemini.request_count();
    let body = json!({"model": "i-imagen", "prompt": "a fox", "n": 6, "size": "1792x1024", "response_format": "b64_json"});
    let a = generate(&h, &body).await;
    assert_eq!((a.status, a.provider.as_str()), (200, "gemini"), "{}", a.text);
    let data = a.json["data"].as_array().unwrap();
    assert_eq!(data.len(), 6);
    // Two calls, four then two, each drawing its own in order.
    let calls: Vec<Value> =
        h.gemini.received()[before..].iter().map(|r| r.body["parameters"].clone()).collect();
    assert_eq!(calls.len(), 2);
    assert_eq!((&calls[0]["sampleCount"], &calls[1]["sampleCount"]), (&json!(4), &json!(2)));
    assert_eq!(calls[0]["aspectRatio"], "16:9");
    assert_eq!(data[3]["b64_json"], fake_png_b64("a fox", 3));
    assert_eq!(data[4]["b64_json"], fake_png_b64("a fox", 0), "the second call's first");
    let rec = tokio::time::timeout(WAIT, h.sink.wait_for(&a.id)).await.unwrap();
    assert!((rec.cost_usd.unwrap() - 6.0 * 0.04).abs() < 1e-12, "{rec:?}");
    // A size Imagen has no ratio for: refused by name, nothing sent ...
    let before = h.gemini.request_count();
    let odd = json!({"model": "i-imagen", "prompt": "a fox", "size": "1536x1024"});
    let a = generate(&h, &odd).await;
    assert_eq!(
        (a.status, &a.json["error"]["code"]),
        (400, &json!("unsupported_request")),
        "{}",
        a.text
    );
    assert!(a.text.contains("size 1536x1024: Imagen makes the aspect ratios"), "{}", a.text);
    assert_eq!(h.gemini.request_count(), before);
    // ... or made by the next deployment that can.
    let mut chained = odd.clone();
    chained["model"] = json!("i-imagen-then-gpt");
    let a = generate(&h, &chained).await;
    assert_eq!((a.status, a.provider.as_str()), (200, "openai"), "{}", a.text);
}

#[tokio::test]
async fn image_models_serve_images_only() {
    let h = start().await;
    let a = generate(&h, &json!({"model": "m-openai", "prompt": "x"})).await;
    assert_eq!(
        (a.status, &a.json["error"]["code"]),
        (400, &json!("wrong_model_kind")),
        "{}",
        a.text
    );
    let chat = json!({"model": "i-gpt", "messages": [{"role": "user", "content": "hi"}]});
    let r = h.post("/v1/chat/completions", &chat).await;
    assert_eq!(r.status(), 400);
    let a = generate(&h, &json!({"model": "i-gpt", "prompt": ""})).await;
    assert_eq!(a.status, 400, "{}", a.text);
    let r = h
        .client
        .post(format!("{}/v1/images/generations", h.base))
        .json(&json!({"model": "i-gpt", "prompt": "x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
}

#[tokio::test]
async fn vertex_imagen_predicts_on_its_publisher_path() {
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
    let extra_models = r#"  - id: i-vertex
    kind: image
    deployments: [{ provider: vertex, model: imagen-4.0-generate-001 }]
    pricing: { per_image: 0.04 }
  - id: i-vertex-gemini
    kind: image
    deployments: [{ provider: vertex, model: gemini-2.5-flash-image }]
    pricing: { per_image: 0.039 }
"#
    .to_owned();
    let h =
        Harness::start_with(Options { providers_extra, extra_models, ..Options::default() }).await;
    let a = generate(
        &h,
        &json!({"model": "i-vertex", "prompt": "a heron", "response_format": "b64_json"}),
    )
    .await;
    assert_eq!((a.status, a.provider.as_str()), (200, "vertex"), "{}", a.text);
    let png = base64::engine::general_purpose::STANDARD
        .decode(a.json["data"][0]["b64_json"].as_str().unwrap())
        .unwrap();
    assert_eq!(png, fake_png("a heron", 0));
    let seen = fake.received().into_iter().rev().find(|r| r.path.ends_with(":predict")).unwrap();
    assert!(
        seen.path.ends_with("/publishers/google/models/imagen-4.0-generate-001:predict"),
        "{}",
        seen.path
    );
    // Gemini's own image model: on the publisher's generateContent instead.
    let a = generate(
        &h,
        &json!({"model": "i-vertex-gemini", "prompt": "a heron", "response_format": "b64_json"}),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(
        a.json["data"][0]["b64_json"],
        switchyard_testkit::fake_gemini_image_b64("a heron", &[])
    );
    let seen = fake.received().into_iter().last().unwrap();
    assert!(
        seen.path.ends_with("/publishers/google/models/gemini-2.5-flash-image:generateContent"),
        "{}",
        seen.path
    );
}
