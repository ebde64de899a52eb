//! The fakes' embeddings routes over real HTTP: each vendor's answer, refusals
//! in its error shape (recorded, the script untouched), scripted faults, and
//! what was received.

// Test helpers outside `#[test]` functions count as non-test code to clippy.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_core::clock::UnixMs;
use switchyard_core::credentials::google::GoogleCredentials;
use switchyard_testkit::embeddings::DEFAULT_DIMS;
use switchyard_testkit::{FakeUpstream, Reply, Vendor, azure, bedrock, fake_vector, vertex};

const LIMIT: Duration = Duration::from_secs(10);

async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

fn client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`: install one, even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(LIMIT).build().unwrap()
}

/// POSTs `body` with `headers`: the status, the headers, the body as JSON.
async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut request =
        client().post(url).header("content-type", "application/json").body(body.to_string());
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    let response = within(request.send()).await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = within(response.bytes()).await.unwrap();
    (status, headers, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

#[tokio::test]
async fn openai_embeddings_answer_refuse_and_follow_the_script() {
    let fake = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/embeddings", fake.base_url());
    let texts = ["alpha", "beta", "gamma"];
    let body = json!({"model": "text-embedding-3-small", "input": texts});

    // Scripted first: a 429 with its header, then the automatic answer.
    fake.push(Reply::status(429).retry_after(3));
    let (status, headers, err) = post(&url, &[], &body).await;
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "3");
    assert_eq!(err["error"]["code"], "rate_limit_exceeded");

    let (status, _, answer) = post(&url, &[], &body).await;
    assert_eq!(status, 200, "{answer}");
    let data = answer["data"].as_array().unwrap();
    assert_eq!(data[0]["index"], 2, "reversed: {answer}");
    for item in data {
        let i = usize::try_from(item["index"].as_u64().unwrap()).unwrap();
        assert_eq!(floats(&item["embedding"]), fake_vector(texts[i], DEFAULT_DIMS));
    }

    // A refusal takes nothing from the script, and is recorded.
    fake.push(Reply::status(500));
    let (status, _, err) =
        post(&url, &[], &json!({"model": "m", "input": "a", "extra": true})).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["message"], "Unrecognized request argument supplied: extra");
    assert_eq!(fake.script_len(), 1);
    assert_eq!(post(&url, &[], &body).await.0, 500);

    // A delay holds the answer back.
    fake.push(Reply::auto().first_byte_delay(Duration::from_millis(200)));
    let start = Instant::now();
    assert_eq!(post(&url, &[], &json!({"model": "m", "input": "x"})).await.0, 200);
    assert!(start.elapsed() >= Duration::from_millis(200));

    let seen = within(fake.wait_for_requests(5)).await;
    assert_eq!(seen.len(), 5);
    assert_eq!(seen[1].path, "/v1/embeddings");
    assert_eq!(seen[1].body["input"], json!(texts));
    assert_eq!(seen[2].body["extra"], true);
}

#[tokio::test]
async fn gemini_embeddings_answer_in_order_and_refuse_in_googles_shape() {
    let fake = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let base = format!("{}/v1beta/models/gemini-embedding-001", fake.base_url());
    let key = [("x-goog-api-key", "k")];
    let one = json!({"content": {"parts": [{"text": "solo"}]}, "outputDimensionality": 4});
    let (status, _, answer) = post(&format!("{base}:embedContent"), &key, &one).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(floats(&answer["embedding"]["values"]), fake_vector("solo", 4));

    let request = |t: &str| {
        let content = json!({"parts": [{"text": t}]});
        json!({"model": "models/gemini-embedding-001", "content": content})
    };
    let batch = json!({"requests": [request("a"), request("b"), request("c")]});
    let (status, _, answer) = post(&format!("{base}:batchEmbedContents"), &key, &batch).await;
    assert_eq!(status, 200, "{answer}");
    for (i, t) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(floats(&answer["embeddings"][i]["values"]), fake_vector(t, DEFAULT_DIMS));
    }

    let over: Vec<Value> = (0..101).map(|i| request(&i.to_string())).collect();
    let (status, _, err) =
        post(&format!("{base}:batchEmbedContents"), &key, &json!({ "requests": over })).await;
    assert_eq!(status, 400);
    assert_eq!(err["error"]["status"], "INVALID_ARGUMENT");
    assert!(err["error"]["message"].as_str().unwrap().contains("at most 100"), "{err}");

    fake.push(Reply::status(503));
    assert_eq!(post(&format!("{base}:embedContent"), &key, &one).await.0, 503);
    assert_eq!(fake.received().len(), 4);
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
async fn vertex_predict_answers_and_caps_gemini_embedding_at_one_instance() {
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
    let body = json!({"instances": [{"content": "one", "task_type": "RETRIEVAL_QUERY"},
        {"content": "two"}], "parameters": {"outputDimensionality": 4}});
    let (status, _, answer) = post(&url("text-embedding-005"), &auth, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(floats(&answer["predictions"][1]["embeddings"]["values"]), fake_vector("two", 4));
    assert_eq!(answer["metadata"]["billableCharacterCount"], 6);

    let (status, _, err) = post(&url("gemini-embedding-001"), &auth, &body).await;
    assert_eq!(status, 400);
    assert!(err["error"]["message"].as_str().unwrap().contains("1 instance"), "{err}");
    // Without a token: refused before anything else.
    assert_eq!(post(&url("text-embedding-005"), &[], &body).await.0, 401);
}

#[tokio::test]
async fn bedrock_titan_and_cohere_embed_through_invoke_model() {
    let fake = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let bearer = format!("Bearer {}", bedrock::API_KEY);
    let auth = [("authorization", bearer.as_str())];
    let titan = format!("{}/model/amazon.titan-embed-text-v2%3A0/invoke", fake.base_url());
    let (status, _, answer) =
        post(&titan, &auth, &json!({"inputText": "hello", "dimensions": 256})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(floats(&answer["embedding"]), fake_vector("hello", 256));
    assert_eq!(answer["inputTextTokenCount"], 2);

    let (status, headers, err) = post(&titan, &auth, &json!({"texts": ["a"]})).await;
    assert_eq!(status, 400);
    assert_eq!(headers["x-amzn-errortype"], "ValidationException");
    assert!(err["message"].as_str().unwrap().contains("extraneous key [texts]"), "{err}");

    let cohere = format!("{}/model/us.cohere.embed-english-v3/invoke", fake.base_url());
    let body = json!({"texts": ["x", "y"], "input_type": "search_document"});
    let (status, _, answer) = post(&cohere, &auth, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["response_type"], "embeddings_floats");
    assert_eq!(floats(&answer["embeddings"][1]), fake_vector("y", DEFAULT_DIMS));

    fake.push(Reply::status(429));
    let (status, headers, _) = post(&cohere, &auth, &body).await;
    assert_eq!(status, 429);
    assert_eq!(headers["x-amzn-errortype"], "ThrottlingException");
    // Unsigned: refused as AWS refuses it.
    assert_eq!(post(&cohere, &[], &body).await.0, 403);
    let seen = fake.received();
    assert_eq!(seen[2].bedrock_model().as_deref(), Some("us.cohere.embed-english-v3"));
}

#[tokio::test]
async fn azure_embeds_on_deployments_and_the_v1_api() {
    let fake = FakeUpstream::start_azure().await.unwrap();
    let key = [("api-key", azure::API_KEY)];
    let deployment = format!(
        "{}/openai/deployments/my-embedder/embeddings?api-version=2024-10-21",
        fake.base_url()
    );
    let (status, _, answer) = post(&deployment, &key, &json!({"input": ["a", "b"]})).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["model"], "my-embedder");
    assert_eq!(floats(&answer["data"][1]["embedding"]), fake_vector("b", DEFAULT_DIMS));
    assert!(answer.get("prompt_filter_results").is_none());

    let v1 = format!("{}/openai/v1/embeddings", fake.base_url());
    let body = json!({"model": "text-embedding-3-large", "input": "c", "dimensions": 3});
    let (status, _, answer) = post(&v1, &key, &body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(floats(&answer["data"][0]["embedding"]), fake_vector("c", 3));
    let no_version = format!("{}/openai/deployments/my-embedder/embeddings", fake.base_url());
    assert_eq!(post(&no_version, &key, &json!({"input": "a"})).await.0, 400);
    assert_eq!(post(&v1, &[], &body).await.0, 401);
}
