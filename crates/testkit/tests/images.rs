//! The fakes' image generation routes over real HTTP: each vendor's answer,
//! refusals in its error shape (recorded, the script untouched), scripted
//! faults, and what was received.

// Test helpers outside `#[test]` functions count as non-test code to clippy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use switchyard_core::clock::UnixMs;
use switchyard_core::credentials::google::GoogleCredentials;
use switchyard_testkit::images::fake_image_url;
use switchyard_testkit::{FakeUpstream, Reply, Vendor, azure, fake_png, fake_png_b64, vertex};

const LIMIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

fn client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

/// POSTs `body` with `headers`: the status and the body as JSON.
async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let mut request =
        client().post(url).header("content-type", "application/json").body(body.to_string());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let bytes = within(response.bytes()).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn decoded(v: &Value) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn openai_images_answer_refuse_and_follow_the_script() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/images/generations", fake.base_url());
    let body = json!({"model": "gpt-image-1", "prompt": "a red fox", "n": 2});

    fake.push(Reply::status(429).retry_after(2));
    let (status, err) = post(&url, &[], &body).await;
    assert_eq!(status, 429);
    assert_eq!(err["error"]["code"], "rate_limit_exceeded");

    let (status, answer) = post(&url, &[], &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(decoded(&answer["data"][0]["b64_json"]), fake_png("a red fox", 0));
    assert_eq!(answer["data"][1]["b64_json"], fake_png_b64("a red fox", 1));
    assert_eq!(answer["usage"]["output_tokens"], 2112);

    // A refusal takes nothing from the script, and is recorded.
    fake.push(Reply::status(500));
    let refused = json!({"model": "gpt-image-1", "prompt": "p", "response_format": "b64_json"});
    let (status, err) = post(&url, &[], &refused).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["message"], "Unknown parameter: 'response_format'.");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert_eq!(fake.script_len(), 1);
    assert_eq!(post(&url, &[], &body).await.0, 500);

    // dall-e-2 by default, URLs by default; a delay holds the answer back.
    fake.push(Reply::auto().first_byte_delay(Duration::from_millis(200)));
    let start = Instant::now();
    let short = format!("{}/images/generations", fake.base_url());
    let (status, answer) = post(&short, &[], &json!({"prompt": "x", "size": "256x256"})).await;
    assert_eq!(status, 200, "{answer}");
    assert!(start.elapsed() >= Duration::from_millis(200));
    assert_eq!(answer["data"][0]["url"], fake_image_url("x", 0));

    let seen = within(fake.wait_for_requests(5)).await;
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[1].path, "/v1/images/generations");
    assert_eq!(seen[1].body["prompt"], "a red fox");
    assert_eq!(seen[2].body["response_format"], "b64_json");
    assert_eq!(fake.in_flight(), 0);
}

#[tokio::test]
async fn openai_image_hang_lasts_until_the_client_goes() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    fake.push(Reply::hang());
    let url = format!("{}/v1/images/generations", fake.base_url());
    let request = client()
        .post(&url)
        .timeout(Duration::from_millis(300))
        .body(json!({"prompt": "p"}).to_string())
        .send();
    assert!(within(request).await.is_err(), "a hang never answers");
    within(fake.wait_idle()).await;
}

#[tokio::test]
async fn gemini_imagen_predicts_and_refuses_in_googles_shape() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let key = [("x-goog-api-key", "k")];
    let url = format!("{}/v1beta/models/imagen-4.0-generate-001:predict", fake.base_url());
    let body = json!({"instances": [{"prompt": "a robot"}], "parameters": {"sampleCount": 2}});
    let (status, answer) = post(&url, &key, &body).await;
    assert_eq!(status, 200, "{answer}");
    let predictions = answer["predictions"].as_array().unwrap();
    assert_eq!(predictions.len(), 2);
    assert_eq!(decoded(&predictions[1]["bytesBase64Encoded"]), fake_png("a robot", 1));
    assert_eq!(predictions[1]["mimeType"], "image/png");

    let (status, err) =
        post(&url, &key, &json!({"instances": [{"prompt": "a"}, {"prompt": "b"}]})).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["status"], "INVALID_ARGUMENT");
    let bad = json!({"instances": [{"prompt": "a"}], "parameters": {"seed": 1}});
    let (status, err) = post(&url, &key, &bad).await;
    assert_eq!(status, 400);
    assert!(err["error"]["message"].as_str().unwrap().contains("Unknown name \"seed\""), "{err}");

    // Another model's `:predict` is no route on Gemini's API.
    let other = format!("{}/v1beta/models/gemini-2.5-flash:predict", fake.base_url());
    assert_eq!(post(&other, &key, &body).await.0, 404);
    fake.push(Reply::status(503));
    assert_eq!(post(&url, &key, &body).await.0, 503);
    assert_eq!(fake.received().len(), 5);
}

/// A token from the Vertex fake's own endpoint, for its service account.
async fn vertex_token(fake: &FakeUpstream) -> String {
    let token_uri = format!("{}/token", fake.base_url());
    let creds =
        GoogleCredentials::from_json(&vertex::service_account_json(&token_uri), "test").unwrap();
    let GoogleCredentials::ServiceAccount(account) = creds else { panic!("not a service account") };
    let assertion = account.assertion(UnixMs::now()).unwrap();
    let form = format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion={}",
        assertion.expose()
    );
    let response = within(client().post(&token_uri).body(form).send()).await.unwrap();
    let granted: Value = serde_json::from_slice(&within(response.bytes()).await.unwrap()).unwrap();
    granted["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn vertex_predict_is_imagen_for_imagen_models_and_embeddings_else() {
    let fake = FakeUpstream::start_vertex(Vendor::Gemini).await.unwrap();
    let token = format!("Bearer {}", vertex_token(&fake).await);
    let auth = [("authorization", token.as_str())];
    let url = |model: &str| {
        format!(
            "{}/v1/projects/{}/locations/us-central1/publishers/google/models/{model}:predict",
            fake.base_url(),
            vertex::PROJECT
        )
    };
    let body = json!({"instances": [{"prompt": "a boat"}],
        "parameters": {"sampleCount": 1, "addWatermark": false, "seed": 7}});
    let (status, answer) = post(&url("imagen-3.0-generate-002"), &auth, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({"predictions": [{"bytesBase64Encoded": fake_png_b64("a boat", 0),
        "mimeType": "image/png"}]})
    );

    // The embeddings route is still there for the other models.
    let embed = json!({"instances": [{"content": "one"}]});
    let (status, answer) = post(&url("text-embedding-005"), &auth, &embed).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer["predictions"][0]["embeddings"]["values"].is_array());
    // An image body to an embedding model, and the other way round: refused.
    assert_eq!(post(&url("text-embedding-005"), &auth, &body).await.0, 400);
    assert_eq!(post(&url("imagen-3.0-generate-002"), &auth, &embed).await.0, 400);
    assert_eq!(post(&url("imagen-3.0-generate-002"), &[], &body).await.0, 401);
}

#[tokio::test]
async fn azure_generates_images_on_deployments_and_the_v1_api() {
    let fake = FakeUpstream::start_azure().await.unwrap();
    let key = [("api-key", azure::API_KEY)];
    let deployment = format!(
        "{}/openai/deployments/my-dall-e-3/images/generations?api-version=2024-10-21",
        fake.base_url()
    );
    let (status, answer) = post(&deployment, &key, &json!({"prompt": "a cat"})).await;
    assert_eq!(status, 200, "{answer}");
    let item = &answer["data"][0];
    assert_eq!(item["url"], fake_image_url("a cat", 0));
    assert!(item["revised_prompt"].is_string());
    assert_eq!(item["content_filter_results"]["hate"]["filtered"], false);
    assert_eq!(item["prompt_filter_results"]["jailbreak"]["detected"], false);

    let v1 = format!("{}/openai/v1/images/generations", fake.base_url());
    let body = json!({"model": "gpt-image-1", "prompt": "a dog", "quality": "low"});
    let (status, answer) = post(&v1, &key, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["data"][0]["b64_json"], fake_png_b64("a dog", 0));
    assert_eq!(answer["usage"]["output_tokens"], 272);

    // A scripted body is sent as it is.
    fake.push(Reply::json(json!({"created": 1, "data": []})));
    assert_eq!(post(&v1, &key, &body).await.1, json!({"created": 1, "data": []}));
    let (status, _) =
        post(&v1, &key, &json!({"model": "gpt-image-1", "prompt": "p", "n": 11})).await;
    assert_eq!(status, 400);
    let no_version =
        format!("{}/openai/deployments/my-dall-e-3/images/generations", fake.base_url());
    assert_eq!(post(&no_version, &key, &json!({"prompt": "a"})).await.0, 400);
    assert_eq!(post(&v1, &[], &body).await.0, 401);
}
