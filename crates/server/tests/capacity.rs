//! A deployment's capacity (`limits:` on a deployment), black box: a request
//! over it moves on to the next candidate without marking the deployment
//! unhealthy; with no candidate left, the client gets 429 in its own format with
//! `Retry-After`, naming the limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Reply;

fn options() -> Options {
    Options {
        extra_models: r#"
  - id: m-capped
    deployments:
      - { provider: openai, model: up-capped, limits: { rpm: 2 } }
      - { provider: anthropic, model: up-fallback }
  - id: m-capped-only
    deployments: [{ provider: openai, model: up-only, limits: { rpm: 1 } }]
  - id: m-one-at-once
    deployments: [{ provider: openai, model: up-one, limits: { concurrent: 1 } }]
"#
        .into(),
        ..Options::default()
    }
}

/// Send a request to `m-one-at-once` in the background (the fake's next reply
/// decides how long it holds the one slot), once it reached the upstream.
async fn hold_the_slot(
    h: &Harness,
) -> tokio::task::JoinHandle<Result<reqwest::Response, reqwest::Error>> {
    let (client, url) = (h.client.clone(), format!("{}/v1/chat/completions", h.base));
    let first = tokio::spawn(async move {
        client.post(url).bearer_auth(GATEWAY_KEY).json(&chat("m-one-at-once")).send().await
    });
    tokio::time::timeout(WAIT, h.openai.wait_for_requests(1)).await.unwrap();
    first
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn over_capacity_fails_over_without_marking_the_deployment_unhealthy() {
    let h = Harness::start_with(options()).await;
    for _ in 0..2 {
        let r = h.post("/v1/chat/completions", &chat("m-capped")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-gateway-provider"], "openai");
    }
    let r = h.post("/v1/chat/completions", &chat("m-capped")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "anthropic");
    let descriptor = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    assert!(descriptor.contains("capacity:openai/up-capped"), "{descriptor}");
    assert_eq!(h.openai.request_count(), 2, "the third never reached the capped deployment");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(3)).await.unwrap();
    let third = &records[2];
    let outcomes: Vec<&str> = third.attempts.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes, ["capacity", "ok"]);
    // Its credential is as healthy as before: the breaker saw nothing.
    let health = h.state.gateway.runtime.health.snapshot(switchyard_core::clock::UnixMs::now());
    assert!(health.iter().all(|(_, state)| state.is_available()), "{health:?}");
}

#[tokio::test]
async fn no_capacity_anywhere_is_a_429_in_the_callers_format_with_retry_after() {
    let h = Harness::start_with(options()).await;
    let messages = |model: &str| json!({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]});
    assert_eq!(h.post("/v1/messages", &messages("m-capped-only")).await.status(), 200);
    let r = h.post("/v1/messages", &messages("m-capped-only")).await;
    assert_eq!(r.status(), 429);
    let retry: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "one request per minute frees within a minute: {retry}");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("openai/up-only is at capacity"), "{message}");
    assert!(message.contains("1 requests per minute"), "{message}");
    assert_eq!(h.openai.request_count(), 1);
}

#[tokio::test]
async fn a_concurrency_slot_is_held_until_the_request_ends() {
    let h = Harness::start_with(options()).await;
    h.openai.push(Reply::hang());
    let first = hold_the_slot(&h).await;
    let r = h.post("/v1/chat/completions", &chat("m-one-at-once")).await;
    assert_eq!(r.status(), 429, "the one slot is taken");
    let v: Value = r.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("1 requests at once"), "{v}");
    // The first caller leaves: its slot comes back.
    first.abort();
    tokio::time::timeout(WAIT, h.openai.wait_idle()).await.unwrap();
    let freed = async {
        loop {
            let r = h.post("/v1/chat/completions", &chat("m-one-at-once")).await;
            if r.status() == 200 {
                break;
            }
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(WAIT, freed).await.expect("the slot is released");
}

fn queued(max_wait_ms: u64) -> Options {
    Options {
        top_level: format!("limits: {{ queue: {{ max_wait_ms: {max_wait_ms} }} }}\n"),
        ..options()
    }
}

#[tokio::test]
async fn with_a_queue_a_request_waits_for_a_slot_instead_of_being_refused() {
    let h = Harness::start_with(queued(10_000)).await;
    h.openai.push(Reply::auto().first_byte_delay(std::time::Duration::from_millis(300)));
    let first = hold_the_slot(&h).await;
    // The one slot is taken: this one waits in the queue, then is served.
    let r = h.post("/v1/chat/completions", &chat("m-one-at-once")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(h.openai.peak_in_flight(), 1, "never two at once upstream");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(2)).await.unwrap();
    let waited = records.iter().find(|r| r.attempts.len() == 2).expect("the queued one");
    let outcomes: Vec<&str> = waited.attempts.iter().map(|a| a.outcome.as_str()).collect();
    assert_eq!(outcomes, ["capacity", "ok"], "one capacity refusal recorded, not one per poll");
}

#[tokio::test]
async fn a_queued_request_is_refused_when_its_wait_runs_out() {
    let h = Harness::start_with(queued(150)).await;
    h.openai.push(Reply::hang());
    let first = hold_the_slot(&h).await;
    let r = h.post("/v1/chat/completions", &chat("m-one-at-once")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(h.openai.request_count(), 1);
    assert_eq!(h.state.gateway.runtime.queued.load(std::sync::atomic::Ordering::SeqCst), 0);
    first.abort();
}
