//! The exact response cache, black box against the fake upstream: identical
//! concurrent requests make one upstream call (on the local store and on
//! Redis), later ones are answered from the cache (as a stream too, in the
//! caller's format), `x-switchyard-cache` skips or refreshes it, records mark
//! hits at no cost, and all callers leaving cancels the shared call.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use switchyard_protocol::ClientFormat;
use switchyard_testkit::Reply;

const WAIT: Duration = Duration::from_secs(10);
const K: usize = 8;

fn options(cache: Option<Arc<dyn switchyard_core::state::ResponseCache>>) -> Options {
    Options {
        extra_models: "  - id: m-cached\n    deployments: [{ provider: openai, model: up-cached }]\n    pricing: { input: 1.0, output: 2.0 }\n    cache: { ttl_ms: 60000 }\n".into(),
        cache,
        ..Options::default()
    }
}

fn chat(text: &str, stream: bool) -> Value {
    json!({"model": "m-cached", "stream": stream, "max_tokens": 50,
        "messages": [{"role": "user", "content": text}]})
}

fn cache_header(r: &reqwest::Response) -> Option<String> {
    r.headers().get("x-gateway-cache").map(|v| v.to_str().unwrap().to_owned())
}

/// K identical requests at once, the upstream held long enough for all to
/// arrive: one upstream call, one miss and K-1 coalesced, the same answer.
async fn k_identical_make_one_call(h: &Harness) {
    h.openai.push(Reply::auto().first_byte_delay(Duration::from_millis(1500)));
    let body = chat("coalesce me", false);
    let calls = (0..K).map(|_| async {
        let r = h.post("/v1/chat/completions", &body).await;
        assert_eq!(r.status(), 200);
        let header = cache_header(&r);
        let v: Value = r.json().await.unwrap();
        (header, v["choices"][0]["message"]["content"].as_str().unwrap().to_owned())
    });
    let answers = tokio::time::timeout(WAIT, futures_util::future::join_all(calls)).await.unwrap();
    assert_eq!(h.openai.request_count(), 1, "one upstream call for {K} identical requests");
    let misses = answers.iter().filter(|(c, _)| c.as_deref() == Some("miss")).count();
    let coalesced = answers.iter().filter(|(c, _)| c.as_deref() == Some("coalesced")).count();
    assert_eq!((misses, coalesced), (1, K - 1), "{answers:?}");
    assert!(answers.iter().all(|(_, text)| *text == answers[0].1));

    // Later: from the cache.
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(cache_header(&r).as_deref(), Some("hit"));
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], answers[0].1.as_str());
    assert_eq!(v["model"], "m-cached", "named as the client asked");
    assert_eq!(h.openai.request_count(), 1);
}

#[tokio::test]
async fn k_identical_concurrent_requests_make_one_upstream_call_locally() {
    let h = Harness::start_with(options(None)).await;
    k_identical_make_one_call(&h).await;
}

#[tokio::test]
async fn k_identical_concurrent_requests_make_one_upstream_call_on_redis() {
    let Some((url, prefix)) = switchyard_store::testing::redis().await else { return };
    let cache = switchyard_store::redis_cache::RedisCache::new(
        &url,
        &prefix,
        Duration::from_secs(2),
        false,
    )
    .unwrap();
    let h = Harness::start_with(options(Some(Arc::new(cache)))).await;
    k_identical_make_one_call(&h).await;
    // A second instance on the same Redis answers from the first one's call.
    let cache = switchyard_store::redis_cache::RedisCache::new(
        &url,
        &prefix,
        Duration::from_secs(2),
        false,
    )
    .unwrap();
    let mut o = options(Some(Arc::new(cache)));
    // Its own fakes: the same catalog, pointing elsewhere, so that the key
    // (which names the deployment, not its URL) is the same.
    o.request_ms = 20000;
    let other = Harness::start_with(o).await;
    let r = other.post("/v1/chat/completions", &chat("coalesce me", false)).await;
    assert_eq!(cache_header(&r).as_deref(), Some("hit"));
    assert_eq!(other.openai.request_count(), 0);
}

#[tokio::test]
async fn a_hit_is_a_well_formed_stream_in_the_callers_format() {
    let h = Harness::start_with(options(None)).await;
    for format in [ClientFormat::OpenAiChat, ClientFormat::Anthropic] {
        let body = |stream: bool| match format {
            ClientFormat::Anthropic => json!({"model": "m-cached", "stream": stream,
                "max_tokens": 50, "messages": [{"role": "user", "content": "stream me"}]}),
            _ => chat("stream me", stream),
        };
        let before = h.openai.request_count();
        let r = h.post(path(format), &body(false)).await;
        assert_eq!(cache_header(&r).as_deref(), Some("miss"));
        let whole = decode_whole(format, &r.bytes().await.unwrap());
        let r = h.post(path(format), &body(true)).await;
        assert_eq!(r.status(), 200);
        assert_eq!(cache_header(&r).as_deref(), Some("hit"), "{format:?}");
        assert!(
            r.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"),
            "{format:?}"
        );
        let streamed = decode_stream(format, &r.bytes().await.unwrap());
        assert_eq!(streamed.text(), whole.text(), "{format:?}");
        assert!(!streamed.text().is_empty());
        assert_eq!(streamed.stop_reason, whole.stop_reason);
        assert_eq!(h.openai.request_count(), before + 1, "{format:?}: the stream was a hit");
    }
}

#[tokio::test]
async fn skip_and_refresh_and_records() {
    let h = Harness::start_with(options(None)).await;
    let body = chat("records", false);
    let r = h.post("/v1/chat/completions", &body).await;
    let miss_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(cache_header(&r).as_deref(), Some("miss"));
    let r = h.post_with("/v1/chat/completions", &body, &[("x-switchyard-cache", "skip")]).await;
    assert_eq!(r.status(), 200);
    assert_eq!(cache_header(&r), None, "skipped: not cached");
    assert_eq!(h.openai.request_count(), 2);
    let r = h.post_with("/v1/chat/completions", &body, &[("x-switchyard-cache", "refresh")]).await;
    assert_eq!(cache_header(&r).as_deref(), Some("miss"));
    assert_eq!(h.openai.request_count(), 3);
    let r = h.post("/v1/chat/completions", &body).await;
    let hit_id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert_eq!(cache_header(&r).as_deref(), Some("hit"));
    assert_eq!(h.openai.request_count(), 3);
    let r = h.post_with("/v1/chat/completions", &body, &[("x-switchyard-cache", "bogus")]).await;
    assert_eq!(r.status(), 400);

    let miss = tokio::time::timeout(WAIT, h.sink.wait_for(&miss_id)).await.unwrap();
    assert_eq!(miss.cache.as_deref(), Some("miss"));
    assert!(miss.cost_usd.unwrap() > 0.0);
    let hit = tokio::time::timeout(WAIT, h.sink.wait_for(&hit_id)).await.unwrap();
    assert_eq!(hit.cache.as_deref(), Some("hit"));
    assert_eq!(hit.cost_usd, Some(0.0), "no upstream cost");
    assert_eq!(hit.usage, miss.usage, "the usage as kept");
    assert!(hit.attempts.is_empty(), "nothing was sent upstream");
    assert_eq!(hit.served_provider.as_deref(), Some("openai"));
    assert!(hit.descriptor.ends_with("cache:hit"), "{}", hit.descriptor);
}

#[tokio::test]
async fn uncached_models_and_different_requests_are_not_shared() {
    let h = Harness::start_with(options(None)).await;
    for _ in 0..2 {
        let r = h
            .post(
                "/v1/chat/completions",
                &json!({"model": "m-openai", "max_tokens": 50,
            "messages": [{"role": "user", "content": "same"}]}),
            )
            .await;
        assert_eq!(cache_header(&r), None);
    }
    assert_eq!(h.openai.request_count(), 2, "not opted in: every request goes upstream");
    let mut body = chat("vary", false);
    h.post("/v1/chat/completions", &body).await.bytes().await.unwrap();
    body["temperature"] = json!(0.2);
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(cache_header(&r).as_deref(), Some("miss"), "another temperature, another answer");
    body["max_tokens"] = json!(51);
    let r = h.post("/v1/chat/completions", &body).await;
    assert_eq!(cache_header(&r).as_deref(), Some("miss"), "another ceiling, another answer");
    // Another API kind is another answer's shape: its own entry.
    let r = h
        .post(
            "/v1/messages",
            &json!({"model": "m-cached", "max_tokens": 50,
            "messages": [{"role": "user", "content": "vary"}]}),
        )
        .await;
    assert_eq!(cache_header(&r).as_deref(), Some("miss"));
    assert_eq!(h.openai.request_count(), 6);
}

#[tokio::test]
async fn all_callers_leaving_cancels_the_shared_call() {
    let h = Harness::start_with(options(None)).await;
    h.openai.set_default(Reply::hang());
    let body = chat("abandon me", false);
    let calls: Vec<_> = (0..3)
        .map(|_| {
            let (client, url, body) =
                (h.client.clone(), format!("{}/v1/chat/completions", h.base), body.clone());
            tokio::spawn(async move {
                client.post(url).bearer_auth(GATEWAY_KEY).json(&body).send().await
            })
        })
        .collect();
    tokio::time::timeout(WAIT, h.openai.wait_for_requests(1)).await.unwrap();
    assert_eq!(h.openai.in_flight(), 1);
    for c in calls {
        c.abort();
    }
    tokio::time::timeout(WAIT, h.openai.wait_idle())
        .await
        .expect("the upstream call was cancelled");
    assert_eq!(h.openai.request_count(), 1);
}
