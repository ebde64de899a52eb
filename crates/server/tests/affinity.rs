//! Prompt-cache affinity, black box: a conversation's later turns go back to
//! the deployment that served its first, where routing alone would spread them
//! (a weighted route, even odds); a pin follows a failover; conversations are
//! named by their stable prefix or by `x-switchyard-affinity`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::{Reply, Vendor};

/// A pin holds whatever the fakes' latencies: on a loaded machine one fake's
/// estimate can run far past the other's, and the latency guard
/// (`max_score_loss`) would then move a conversation, which is not what these
/// tests are about (it made `a_pin_follows_a_failover` flaky).
fn options() -> Options {
    Options {
        routes: r#"routes:
  - name: Spread
    match: "m-chain"
    provider: openai
    weight: 1
    strategy: weighted
    fallbacks: [{ provider: anthropic, weight: 1 }]
    affinity: { ttl_ms: 60000, max_score_loss: 1000 }
"#
        .into(),
        ..Options::default()
    }
}

/// Turn `n` of the conversation that opens with `first`.
fn turn(first: &str, n: usize) -> Value {
    let mut messages = vec![json!({"role": "user", "content": first})];
    for i in 1..n {
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
        messages.push(json!({"role": "user", "content": format!("question {i}")}));
    }
    json!({"model": "m-chain", "messages": messages})
}

async fn served(h: &Harness, body: &Value, headers: &[(&str, &str)]) -> (String, String) {
    let r = h.post_with("/v1/chat/completions", body, headers).await;
    assert_eq!(r.status(), 200);
    let provider = r.headers()["x-gateway-provider"].to_str().unwrap().to_owned();
    let route = r.headers()["x-gateway-route"].to_str().unwrap().to_owned();
    (provider, route)
}

#[tokio::test]
async fn a_conversations_turns_stay_on_the_deployment_of_its_first() {
    let h = Harness::start_with(options()).await;
    let (first, route) = served(&h, &turn("plan a trip", 1), &[]).await;
    assert!(!route.contains("affinity:"), "the first turn routes normally: {route}");
    for n in 2..=12 {
        let (provider, route) = served(&h, &turn("plan a trip", n), &[]).await;
        assert_eq!(provider, first, "turn {n}");
        assert!(route.contains("affinity:"), "turn {n}: {route}");
    }
}

#[tokio::test]
async fn other_conversations_route_as_before() {
    let h = Harness::start_with(options()).await;
    let mut seen = std::collections::BTreeSet::new();
    // Even odds per conversation: 24 all on one side is a 1 in 8 million chance.
    for c in 0..24 {
        seen.insert(served(&h, &turn(&format!("conversation {c}"), 1), &[]).await.0);
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
}

#[tokio::test]
async fn a_named_conversation_is_pinned_whatever_its_text() {
    let h = Harness::start_with(options()).await;
    let named = [("x-switchyard-affinity", "session-42")];
    let (first, _) = served(&h, &turn("one", 1), &named).await;
    for c in 0..10 {
        assert_eq!(served(&h, &turn(&format!("other {c}"), 1), &named).await.0, first);
    }
}

#[tokio::test]
async fn a_pin_follows_a_failover() {
    let h = Harness::start_with(options()).await;
    let (first, _) = served(&h, &turn("debug this", 1), &[]).await;
    let (pinned, other) = match first.as_str() {
        "openai" => (Vendor::OpenAi, "anthropic"),
        _ => (Vendor::Anthropic, "openai"),
    };
    h.fake(pinned).set_default(Reply::status(500));
    assert_eq!(served(&h, &turn("debug this", 2), &[]).await.0, other);
    h.fake(pinned).set_default(Reply::auto());
    for n in 3..=6 {
        assert_eq!(served(&h, &turn("debug this", n), &[]).await.0, other, "turn {n}");
    }
}
