//! `strategy: adaptive`, black box: a route's chain ordered by what its
//! deployments did lately (fakes scripted with errors and with latency), the
//! decision recorded whole, and a policy that excludes every candidate refused
//! by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Reply;

fn route(adaptive: &str) -> Options {
    Options {
        routes: format!(
            "routes:\n  - name: Chat\n    match: m-openai\n    provider: openai\n    fallbacks: [{{ provider: anthropic, model: m-anthropic }}]\n    strategy: adaptive\n    adaptive: {adaptive}\n"
        ),
        ..Options::default()
    }
}

fn ask(hints: Value) -> Value {
    json!({"model": "m-openai", "switchyard": hints,
        "messages": [{"role": "user", "content": "hello"}]})
}

/// The provider that answered, and the request's record.
async fn served(h: &Harness, body: &Value) -> (String, switchyard_core::RequestRecord) {
    let r = h.post("/v1/chat/completions", body).await;
    assert_eq!(r.status(), 200);
    let provider = r.headers()["x-gateway-provider"].to_str().unwrap().to_owned();
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let record = tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap();
    (provider, record)
}

#[tokio::test]
async fn a_deployment_that_keeps_failing_goes_last() {
    let h = Harness::start_with(route(
        "{ version: errors-1, weights: { errors: 1 }, min_samples: 2, explore_every: 0 }",
    ))
    .await;
    h.openai.set_default(Reply::status(500));
    // Both cold: chain order, and each failure fails over.
    for _ in 0..2 {
        assert_eq!(served(&h, &ask(json!({}))).await.0, "anthropic");
    }
    assert_eq!(h.openai.request_count(), 2);
    // Warm now: openai failed every attempt, anthropic none.
    let (provider, record) = served(&h, &ask(json!({}))).await;
    assert_eq!(provider, "anthropic");
    assert_eq!(h.openai.request_count(), 2, "not tried first any more");
    assert_eq!(record.attempts.len(), 1);
    let decision = record.routing.adaptive.unwrap();
    assert_eq!(decision.policy, "errors-1");
    let rows: Vec<(&str, Option<f64>, Option<f64>)> = decision
        .candidates
        .iter()
        .map(|c| (c.deployment.as_str(), c.error_rate, c.score))
        .collect();
    assert_eq!(
        rows,
        [
            ("anthropic/up-anthropic", Some(0.0), Some(0.0)),
            ("openai/up-openai", Some(1.0), Some(-1.0))
        ]
    );
    assert!(record.descriptor.contains("strategy:adaptive"), "{}", record.descriptor);
}

#[tokio::test]
async fn the_faster_deployment_goes_first_once_both_are_measured() {
    let h = Harness::start_with(route(
        "{ version: latency-1, weights: { latency: 1 }, latency_metric: total, latency_scale_ms: 10000, min_samples: 1, explore_every: 0 }",
    ))
    .await;
    h.openai.set_default(Reply::auto().first_byte_delay(Duration::from_millis(300)));
    // Measured one each, through hints that leave one candidate.
    assert_eq!(served(&h, &ask(json!({"only": ["openai"]}))).await.0, "openai");
    assert_eq!(served(&h, &ask(json!({"only": ["anthropic"]}))).await.0, "anthropic");
    let (provider, record) = served(&h, &ask(json!({}))).await;
    assert_eq!(provider, "anthropic");
    let decision = record.routing.adaptive.unwrap();
    let slow = decision.candidates.iter().find(|c| c.deployment == "openai/up-openai").unwrap();
    assert!(slow.latency_ms.unwrap() >= 300.0, "{slow:?}");
    assert!(slow.missing.is_empty(), "{slow:?}");
}

#[tokio::test]
async fn a_policy_that_excludes_every_candidate_is_refused_by_name() {
    let h = Harness::start_with(route(
        "{ version: picky-1, weights: { quality: 1 }, missing_quality: reject, quality: { profiles: [{ target: m-gemini, score: 1 }] } }",
    ))
    .await;
    let r = h.post("/v1/chat/completions", &ask(json!({}))).await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!((status.as_u16(), &body["error"]["code"]), (400, &json!("no_candidate")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("adaptive policy picky-1 excluded every candidate"), "{message}");
    assert!(message.contains("openai/up-openai (missing_quality)"), "{message}");
    assert_eq!(h.upstream_requests(), 0);
}
