//! `GET /admin/destinations`, black box: each deployment's window counts what
//! its attempts did (an error and its retry, whole answers, a stream with its
//! time to first token), and a client that goes away mid-stream is a
//! cancellation, not an error. Admin only.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_testkit::Reply;

async fn destinations(h: &Harness, key: &str) -> (u16, Value) {
    let r = h
        .client
        .get(format!("{}/admin/destinations", h.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// The row of `provider`'s deployment of `model`.
fn row<'a>(body: &'a Value, model: &str, provider: &str) -> &'a Value {
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["model"] == model && r["provider"] == provider)
        .unwrap_or_else(|| panic!("no {model} on {provider}: {body}"))
}

#[tokio::test]
async fn a_deployments_window_counts_outcomes_and_cancellations_apart() {
    let h = Harness::start_with(Options { admin: true, ..Options::default() }).await;
    let ask = |stream: bool| {
        json!({"model": "m-openai", "stream": stream,
            "messages": [{"role": "user", "content": "hello"}]})
    };
    // An error, then its retry answers.
    h.openai.push(Reply::status(503).retry_after(0));
    assert_eq!(h.post("/v1/chat/completions", &ask(false)).await.status(), 200);
    assert_eq!(h.post("/v1/chat/completions", &ask(false)).await.status(), 200);
    let r = h.post("/v1/chat/completions", &ask(true)).await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("[DONE]"));

    // Nothing cancelled yet: every attempt is in the window.
    let (status, body) = destinations(&h, ADMIN_KEY).await;
    assert_eq!(status, 200, "{body}");
    let openai = row(&body, "m-openai", "openai");
    assert_eq!(
        (&openai["successes"], &openai["errors"], &openai["cancellations"]),
        (&json!(3), &json!(1), &json!(0)),
        "{openai}"
    );
    assert_eq!(openai["error_rate"], json!(0.25));
    assert!(openai["p50_ms"].is_number() && openai["p95_ms"].is_number(), "{openai}");
    // Only the stream has a first token.
    assert!(openai["ttft_p95_ms"].is_number(), "{openai}");
    assert_eq!(openai["in_flight"], 0);
    // A deployment nothing was sent to is listed, empty.
    let idle = row(&body, "m-anthropic", "anthropic");
    assert_eq!((&idle["successes"], &idle["p95_ms"]), (&json!(0), &Value::Null), "{idle}");

    // A client that reads the first chunk of a slow stream and goes away.
    h.openai.push(Reply::auto().chunk_delay(Duration::from_millis(200)));
    let mut r = h.post("/v1/chat/completions", &ask(true)).await;
    assert_eq!(r.status(), 200);
    assert!(r.chunk().await.unwrap().is_some());
    drop(r);
    let deadline = tokio::time::Instant::now() + WAIT;
    let openai = loop {
        let (_, body) = destinations(&h, ADMIN_KEY).await;
        let openai = row(&body, "m-openai", "openai").clone();
        if openai["cancellations"] == 1 || tokio::time::Instant::now() > deadline {
            break openai;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        (&openai["successes"], &openai["errors"], &openai["cancellations"]),
        (&json!(3), &json!(1), &json!(1)),
        "a cancellation is no error: {openai}"
    );

    // A member key is refused.
    let (status, body) = destinations(&h, GATEWAY_KEY).await;
    assert_eq!(status, 403, "{body}");
}
