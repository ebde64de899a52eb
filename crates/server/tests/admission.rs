//! The admission stage, black box: an [`Admission`] implementation plugged into
//! the gateway's runtime sees every request before its first attempt, can refuse
//! it (429 in the caller's format, nothing sent upstream), and is settled with
//! what the request used once it is over, streamed or not.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{Value, json};
use switchyard_core::continuity::BoxFuture;
use switchyard_core::state::{Admission, Ask, Refusal, Reservation};
use switchyard_protocol::{ErrorCode, Usage};

/// Admits `allowed` requests, then refuses; records what it saw.
#[derive(Debug, Default)]
struct Counting {
    allowed: usize,
    seen: Mutex<Vec<(String, Option<String>, u64)>>,
    settled: Mutex<Vec<(u64, Usage)>>,
}

impl Admission for Counting {
    fn reserve<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        let mut seen = self.seen.lock().unwrap();
        seen.push((ask.model.to_owned(), ask.key_id.map(str::to_owned), ask.tokens));
        let n = seen.len() as u64;
        let result = if seen.len() <= self.allowed {
            Ok(Reservation::new(n, ask.tokens, ask.cost_usd))
        } else {
            Err(Refusal {
                code: ErrorCode::RateLimited,
                message: "3 requests per minute".into(),
                retry_after_ms: Some(1500),
            })
        };
        Box::pin(std::future::ready(result))
    }

    fn settle(
        &self,
        reservation: Reservation,
        used: Usage,
        _cost: Option<f64>,
    ) -> BoxFuture<'_, ()> {
        self.settled.lock().unwrap().push((reservation.id, used));
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn admission_reserves_before_the_attempts_refuses_and_settles_with_the_usage() {
    let counting = Arc::new(Counting { allowed: 2, ..Counting::default() });
    let h =
        Harness::start_with(Options { admission: Some(counting.clone()), ..Options::default() })
            .await;
    let chat = |stream: bool| {
        json!({"model": "m-openai", "stream": stream, "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}]})
    };
    for stream in [false, true] {
        let r = h.post("/v1/chat/completions", &chat(stream)).await;
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
    }
    // The third is refused before anything is sent upstream, in the caller's format.
    let before = h.openai.request_count();
    let r = h
        .post("/v1/messages", &json!({"model": "m-openai", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}))
        .await;
    assert_eq!(r.status(), 429);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["error"]["message"].as_str().unwrap().contains("retry after 2 s"), "{v}");
    assert_eq!(h.openai.request_count(), before, "nothing reached the upstream");

    let seen = counting.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|(model, _, _)| model == "m-openai"));
    assert!(seen[0].2 > 100, "the estimate covers the input and the output asked for");
    // Settled after each answered request, with the usage the upstream reported.
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(3)).await.unwrap();
    assert_eq!(records.iter().filter(|r| r.status == 429).count(), 1);
    tokio::time::timeout(WAIT, async {
        while counting.settled.lock().unwrap().len() < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let settled = counting.settled.lock().unwrap().clone();
    assert_eq!(settled.iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![1, 2]);
    for (_, usage) in settled {
        assert_eq!(usage.output_tokens, Some(switchyard_testkit::canned::CANNED_OUTPUT_TOKENS));
    }
}
