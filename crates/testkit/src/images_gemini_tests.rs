//! Gemini's native image models on the Gemini fake and the Vertex Gemini
//! fake, driven over HTTP as the gateway drives them: generations, edits,
//! and the `generationConfig` each refuses; and the rules themselves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use switchyard_core::clock::UnixMs;
use switchyard_core::credentials::google::GoogleCredentials;

use super::*;
use crate::images::{PNG_SIGNATURE, fake_edit_png_b64, fake_png_b64};
use crate::validate::{self, generation};
use crate::vertex::{PROJECT, service_account_json};
use crate::{FakeUpstream, Reply, Vendor, canned};

const IMAGE_MODEL: &str = "gemini-2.5-flash-image";
const TEXT_MODEL: &str = "gemini-2.5-flash";
const PROMPT: &str = "a banana in a tuxedo";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A generation (`inputs` empty) or an edit of `inputs` by [`PROMPT`].
fn body(inputs: &[Vec<u8>], config: Value) -> Value {
    let mut parts = vec![json!({"text": PROMPT})];
    parts.extend(
        inputs.iter().map(|i| json!({"inlineData": {"mimeType": "image/png", "data": b64(i)}})),
    );
    json!({"contents": [{"role": "user", "parts": parts}], "generationConfig": config})
}

fn image_only() -> Value {
    json!({"responseModalities": ["IMAGE"]})
}

// ---------------------------------------------------------------------------
// The rules

#[test]
fn image_models_are_read_by_name() {
    for model in [
        "gemini-2.5-flash-image",
        "gemini-2.5-flash-image-preview",
        "gemini-3-pro-image-preview",
        "gemini-2.0-flash-preview-image-generation",
        "models/gemini-2.5-flash-image",
        "publishers/google/models/gemini-3-pro-image-preview",
    ] {
        assert!(is_gemini_image_model(model), "{model}");
    }
    for model in ["gemini-2.5-flash", "imagen-4.0-generate-001", "fake-model", "gemini-imagery"] {
        assert!(!is_gemini_image_model(model), "{model}");
    }
}

#[test]
fn generation_config_is_checked_for_its_image_fields_only() {
    let check =
        |model: &str, config: Value| validate::check(Vendor::Gemini, model, &body(&[], config));
    for ok in [
        image_only(),
        json!({"responseModalities": ["TEXT", "IMAGE"], "imageConfig": {"aspectRatio": "16:9"}}),
        json!({"response_modalities": ["Image"], "image_config": {"aspect_ratio": "21:9",
               "image_size": "2K"}}),
        json!({"responseModalities": []}),
        json!({"temperature": 0.4, "candidateCount": 1}),
    ] {
        assert_eq!(check(IMAGE_MODEL, ok.clone()), Ok(()), "{ok}");
    }
    for ratio in generation::ASPECT_RATIOS {
        let config =
            json!({"responseModalities": ["IMAGE"], "imageConfig": {"aspectRatio": ratio}});
        assert_eq!(check("gemini-3-pro-image-preview", config), Ok(()), "{ratio}");
    }
    assert_eq!(check(TEXT_MODEL, json!({"responseModalities": ["TEXT"]})), Ok(()));
    for (model, bad, says) in [
        (IMAGE_MODEL, json!({"imageConfig": {"aspectRatio": "7:3"}}), "\"7:3\""),
        (IMAGE_MODEL, json!({"imageConfig": {"aspectRatio": 1}}), "aspect_ratio"),
        (IMAGE_MODEL, json!({"imageConfig": {"numberOfImages": 2}}), "\"numberOfImages\""),
        (IMAGE_MODEL, json!({"imageConfig": {"personGeneration": "ALLOW_ALL"}}), "personGen"),
        (IMAGE_MODEL, json!({"responseModalities": ["TEXT"]}), "modalities: text"),
        (IMAGE_MODEL, json!({"responseModalities": ["IMAGE", "AUDIO"]}), "modalities: audio"),
        (IMAGE_MODEL, json!({"responseModalities": ["VIDEO"]}), "response_modalities[0]"),
        (IMAGE_MODEL, json!({"responseModalities": "IMAGE"}), "response_modalities"),
        (TEXT_MODEL, json!({"responseModalities": ["TEXT", "IMAGE"]}), "modalities: image"),
    ] {
        let err = check(model, bad.clone()).expect_err(&format!("{model} {bad}"));
        assert!(err.contains(says), "{model} {bad}: {err}");
    }
}

#[test]
fn vertex_image_options_are_checked_then_stripped() {
    let with =
        |image: Value| body(&[], json!({"responseModalities": ["IMAGE"], "imageConfig": image}));
    assert_eq!(generation::strip_vertex(&with(json!({"aspectRatio": "1:1"}))), Ok(None));
    let stripped = generation::strip_vertex(&with(json!({
        "aspectRatio": "1:1", "personGeneration": "ALLOW_ADULT",
        "imageOutputOptions": {"mimeType": "image/jpeg", "compressionQuality": 80},
    })));
    assert_eq!(stripped, Ok(Some(with(json!({"aspectRatio": "1:1"})))));
    for bad in [
        json!({"personGeneration": "EVERYONE"}),
        json!({"imageOutputOptions": {"compressionQuality": 101}}),
        json!({"imageOutputOptions": {"quality": 1}}),
    ] {
        assert!(generation::strip_vertex(&with(bad.clone())).is_err(), "{bad}");
    }
}

#[test]
fn the_image_tells_an_edit_from_a_generation() {
    let input = fake_png("a photo", 0);
    let generated = fake_gemini_image_b64(PROMPT, &[]);
    assert_eq!(generated, fake_png_b64(PROMPT, 0), "the same as Imagen's first image");
    let edited = fake_gemini_image_b64(PROMPT, std::slice::from_ref(&input));
    assert_eq!(edited, fake_edit_png_b64(PROMPT, &[&input], 0), "the same as OpenAI's edit");
    assert_ne!(edited, generated);
    assert_ne!(edited, fake_gemini_image_b64(PROMPT, &[input.clone(), input]));
}

// ---------------------------------------------------------------------------
// Over HTTP

/// A Gemini or Vertex Gemini fake, and how to reach its generateContent.
struct Fake {
    fake: FakeUpstream,
    auth: Option<String>,
}

struct Answer {
    status: u16,
    body: Value,
    raw: String,
}

async fn gemini() -> Fake {
    let _ = rustls::crypto::ring::default_provider().install_default();
    Fake { fake: FakeUpstream::start(Vendor::Gemini).await.unwrap(), auth: None }
}

async fn vertex() -> Fake {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fake = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    let token_uri = format!("{}/token", fake.base_url());
    let creds = GoogleCredentials::from_json(&service_account_json(&token_uri), "test").unwrap();
    let GoogleCredentials::ServiceAccount(account) = creds else { panic!("not a service account") };
    let assertion = account.assertion(UnixMs::now()).unwrap();
    let form = format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={}",
        assertion.expose()
    );
    let res = reqwest::Client::new().post(&token_uri).body(form).send().await.unwrap();
    let granted: Value = serde_json::from_slice(&res.bytes().await.unwrap()).unwrap();
    let auth = format!("Bearer {}", granted["access_token"].as_str().unwrap());
    Fake { fake, auth: Some(auth) }
}

impl Fake {
    /// `action` (`generateContent`, `streamGenerateContent?alt=sse`) on `model`.
    async fn send(&self, model: &str, action: &str, body: &Value) -> Answer {
        let path = match self.auth {
            Some(_) => format!(
                "/v1/projects/{PROJECT}/locations/us-central1/publishers/google/models/\
                 {model}:{action}"
            ),
            None => format!("/v1beta/models/{model}:{action}"),
        };
        let mut req = reqwest::Client::new()
            .post(format!("{}{path}", self.fake.base_url()))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(auth) = &self.auth {
            req = req.header("authorization", auth);
        }
        let res = tokio::time::timeout(Duration::from_secs(10), req.send()).await.unwrap().unwrap();
        let status = res.status().as_u16();
        let raw = String::from_utf8(res.bytes().await.unwrap().to_vec()).unwrap();
        Answer { status, body: serde_json::from_str(&raw).unwrap_or(Value::Null), raw }
    }

    async fn generate(&self, model: &str, body: &Value) -> Answer {
        self.send(model, "generateContent", body).await
    }
}

/// A fake's image answers and refusals, the same on either fake.
async fn serves_image_models(fake: Fake) {
    // A generation: one image, no text, Gemini's usage for a 1024px image.
    let asked = body(&[], image_only());
    let generated = fake.generate(IMAGE_MODEL, &asked).await;
    assert_eq!(generated.status, 200, "{}", generated.raw);
    let candidate = &generated.body["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    let image = fake_gemini_image_b64(PROMPT, &[]);
    assert_eq!(
        candidate["content"]["parts"],
        json!([{"inlineData": {"mimeType": "image/png", "data": image}}])
    );
    let usage = &generated.body["usageMetadata"];
    assert_eq!(usage["candidatesTokenCount"], GEMINI_IMAGE_OUTPUT_TOKENS);
    assert_eq!(usage["promptTokenCount"], canned::CANNED_INPUT_TOKENS);
    assert_eq!(usage["totalTokenCount"], canned::CANNED_INPUT_TOKENS + GEMINI_IMAGE_OUTPUT_TOKENS);
    assert_eq!(generated.body["modelVersion"], IMAGE_MODEL);
    assert_eq!(Some(generated.body), gemini_image_answer(IMAGE_MODEL, &asked));

    // An edit: the image drawn from the prompt and the input's bytes.
    let input = fake_png("a photo of a banana", 0);
    let asked = body(
        std::slice::from_ref(&input),
        json!({"responseModalities": ["TEXT", "IMAGE"],
                                                          "imageConfig": {"aspectRatio": "4:5"}}),
    );
    let edited = fake.generate("gemini-3-pro-image-preview", &asked).await;
    assert_eq!(edited.status, 200, "{}", edited.raw);
    let parts = &edited.body["candidates"][0]["content"]["parts"];
    assert_eq!(parts[0]["text"], format!("{}{PROMPT}", canned::ECHO_PREFIX), "TEXT asked");
    let edit = parts[1]["inlineData"]["data"].as_str().unwrap();
    assert_eq!(edit, fake_gemini_image_b64(PROMPT, std::slice::from_ref(&input)));
    assert_ne!(edit, image, "an edit's image is not the generation's");
    let png = base64::engine::general_purpose::STANDARD.decode(edit).unwrap();
    assert_eq!(png[..8], PNG_SIGNATURE);
    let usage = &edited.body["usageMetadata"];
    let prompt = canned::CANNED_INPUT_TOKENS + GEMINI_IMAGE_INPUT_TOKENS;
    assert_eq!(usage["promptTokenCount"], prompt);
    assert_eq!(usage["totalTokenCount"], prompt + GEMINI_IMAGE_OUTPUT_TOKENS);

    // Streamed: the image in the last chunk, with the finish and the usage.
    let streamed = fake.send(IMAGE_MODEL, "streamGenerateContent?alt=sse", &asked).await;
    assert_eq!(streamed.status, 200, "{}", streamed.raw);
    let chunks: Vec<Value> = streamed
        .raw
        .split("\r\n\r\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(chunks.len(), 2, "{}", streamed.raw);
    assert!(chunks[0]["candidates"][0]["finishReason"].is_null());
    assert_eq!(chunks[1]["candidates"][0]["content"]["parts"][0]["inlineData"]["data"], edit);
    assert_eq!(chunks[1]["usageMetadata"]["candidatesTokenCount"], GEMINI_IMAGE_OUTPUT_TOKENS);

    // Refused as Gemini refuses them: 400 INVALID_ARGUMENT, nothing taken
    // from the script.
    fake.fake.push(Reply::status(503));
    for (model, config, says) in [
        (IMAGE_MODEL, json!({"imageConfig": {"aspectRatio": "7:3"}}), "\"7:3\""),
        (IMAGE_MODEL, json!({"imageConfig": {"seed": 1}}), "Unknown name \"seed\""),
        (TEXT_MODEL, json!({"responseModalities": ["IMAGE"]}), "response modalities: image"),
        (IMAGE_MODEL, json!({"responseModalities": ["TEXT"]}), "response modalities: text"),
    ] {
        let refused = fake.generate(model, &body(&[], config.clone())).await;
        assert_eq!(refused.status, 400, "{model} {config}");
        assert_eq!(refused.body["error"]["status"], "INVALID_ARGUMENT");
        let message = refused.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{model} {config}: {message}");
    }
    assert_eq!(fake.fake.script_len(), 1);
    // A scripted reply wins over the image.
    assert_eq!(fake.generate(IMAGE_MODEL, &body(&[], image_only())).await.status, 503);
    // A text model still echoes.
    let text = fake.generate(TEXT_MODEL, &body(&[], json!({"responseModalities": ["TEXT"]}))).await;
    assert_eq!(text.status, 200, "{}", text.raw);
    assert_eq!(
        text.body["candidates"][0]["content"]["parts"],
        json!([{"text": format!("{}{PROMPT}", canned::ECHO_PREFIX)}])
    );
}

#[tokio::test]
async fn the_gemini_fake_serves_image_models() {
    let fake = gemini().await;
    // Streamed without `?alt=sse`: one JSON array, the image in its last element.
    let asked = body(&[], json!({"responseModalities": ["TEXT", "IMAGE"]}));
    let streamed = fake.send(IMAGE_MODEL, "streamGenerateContent", &asked).await;
    assert_eq!(streamed.status, 200, "{}", streamed.raw);
    let parts: Vec<&Value> = streamed
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["candidates"][0]["content"]["parts"][0])
        .collect();
    assert_eq!(parts.len(), 2, "{}", streamed.raw);
    assert_eq!(parts[1]["inlineData"]["data"], fake_gemini_image_b64(PROMPT, &[]));
    serves_image_models(fake).await;
}

#[tokio::test]
async fn the_vertex_gemini_fake_serves_image_models() {
    serves_image_models(vertex().await).await;
}

#[tokio::test]
async fn vertex_takes_its_own_image_options_and_labels_gemini_does_not() {
    let config = json!({"responseModalities": ["IMAGE"],
                        "imageConfig": {"aspectRatio": "1:1", "personGeneration": "ALLOW_ALL",
                                        "imageOutputOptions": {"mimeType": "image/png"}}});
    let mut labelled = body(&[], config);
    labelled["labels"] = json!({"switchyard_line": "line-0"});
    let vertex = vertex().await;
    let answer = vertex.generate(IMAGE_MODEL, &labelled).await;
    assert_eq!(answer.status, 200, "{}", answer.raw);
    let data = &answer.body["candidates"][0]["content"]["parts"][0]["inlineData"]["data"];
    assert_eq!(data, &fake_gemini_image_b64(PROMPT, &[]));
    let refused = vertex
        .generate(IMAGE_MODEL, &body(&[], json!({"imageConfig": {"personGeneration": "ANY"}})))
        .await;
    assert_eq!(refused.status, 400, "{}", refused.raw);

    let gemini = gemini().await;
    labelled.as_object_mut().unwrap().remove("labels");
    let refused = gemini.generate(IMAGE_MODEL, &labelled).await;
    assert_eq!(refused.status, 400, "{}", refused.raw);
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(message.contains("Unknown name \"imageOutputOptions\""), "{message}");
}
