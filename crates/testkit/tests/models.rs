//! The fakes' model lists: the vendor's credential required, its shape, its pages.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use switchyard_testkit::{FakeModel, FakeUpstream, Vendor};

fn client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider`: a provider is needed even for http.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().timeout(std::time::Duration::from_secs(10)).build().unwrap()
}

async fn get(req: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.bytes().await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn each_list_wants_its_vendor_s_credential() {
    let c = client();
    let openai = FakeUpstream::start(Vendor::OpenAi).await.unwrap();
    let url = format!("{}/v1/models", openai.base_url());
    assert_eq!(get(c.get(&url)).await.0, 401);
    assert_eq!(get(c.get(&url).header("x-api-key", "k")).await.0, 401);
    let (status, body) = get(c.get(&url).bearer_auth("k")).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["id"], "fake-model");
    assert_eq!(get(c.post(&url).bearer_auth("k")).await.0, 405);
    // A list takes nothing from the script, and is recorded.
    assert_eq!(openai.received().len(), 4);

    let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    let url = format!("{}/v1/models", anthropic.base_url());
    assert_eq!(get(c.get(&url).bearer_auth("k")).await.0, 401);
    assert_eq!(get(c.get(&url).header("x-api-key", "k")).await.0, 400);
    let ok = c.get(&url).header("x-api-key", "k").header("anthropic-version", "2023-06-01");
    assert_eq!(get(ok).await.0, 200);

    let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    let url = format!("{}/v1beta/models", gemini.base_url());
    assert_eq!(get(c.get(&url)).await.0, 401);
    assert_eq!(get(c.get(format!("{url}?key=k"))).await.0, 200);
    let (_, body) = get(c.get(&url).header("x-goog-api-key", "k")).await;
    assert_eq!(body["models"][0]["name"], "models/fake-model");

    // Bedrock's is SigV4 like its runtime's: an unsigned request is refused.
    let bedrock = FakeUpstream::start(Vendor::Bedrock).await.unwrap();
    let url = format!("{}/foundation-models", bedrock.base_url());
    assert_eq!(get(c.get(&url)).await.0, 403);
}

#[tokio::test]
async fn pages_are_cut_as_the_real_apis_cut_them() {
    let c = client();
    let anthropic = FakeUpstream::start(Vendor::Anthropic).await.unwrap();
    anthropic.set_models((0..3).map(|i| FakeModel::new(format!("m{i}"))));
    let url = format!("{}/v1/models", anthropic.base_url());
    let ask = |q: &str| {
        c.get(format!("{url}{q}"))
            .header("x-api-key", "k")
            .header("anthropic-version", "2023-06-01")
    };
    let (_, first) = get(ask("?limit=2")).await;
    assert_eq!((first["has_more"].as_bool(), first["last_id"].as_str()), (Some(true), Some("m1")));
    let (_, second) = get(ask("?limit=2&after_id=m1")).await;
    assert_eq!(second["data"].as_array().unwrap().len(), 1);
    assert_eq!(second["has_more"], false);
    assert_eq!(get(ask("?limit=0")).await.0, 400);
    assert_eq!(get(ask("?after_id=nope")).await.0, 400);

    let gemini = FakeUpstream::start(Vendor::Gemini).await.unwrap();
    gemini.set_models((0..3).map(|i| FakeModel::new(format!("g{i}"))));
    let url = format!("{}/v1beta/models?key=k", gemini.base_url());
    let (_, first) = get(c.get(format!("{url}&pageSize=2"))).await;
    let token = first["nextPageToken"].as_str().unwrap().to_owned();
    let (_, second) = get(c.get(format!("{url}&pageSize=2&pageToken={token}"))).await;
    assert_eq!(second["models"][0]["name"], "models/g2");
    assert!(second.get("nextPageToken").is_none());
    assert_eq!(get(c.get(format!("{url}&pageToken=forged"))).await.0, 400);
}

#[tokio::test]
async fn the_clouds_lists_want_their_credentials_too() {
    let c = client();
    let az = FakeUpstream::start_azure().await.unwrap();
    let url = format!("{}/openai/v1/models", az.base_url());
    assert_eq!(get(c.get(&url)).await.0, 401);
    assert_eq!(get(c.get(&url).header("api-key", "wrong")).await.0, 401);
    let (status, body) =
        get(c.get(&url).header("api-key", switchyard_testkit::azure::API_KEY)).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"][0]["lifecycle_status"], "generally-available");

    let vx = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
    let url = format!("{}/v1beta1/publishers/anthropic/models", vx.base_url());
    assert_eq!(get(c.get(&url).bearer_auth("not-granted")).await.0, 401);
}
