//! Budgets in USD, black box: a request reserves before its first attempt, the
//! reservation is settled with the metered cost (or kept as uncertain spend),
//! and a spent budget answers 402 `budget_exceeded` in the caller's format,
//! with nothing sent upstream.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};

fn options(budgets: &str) -> Options {
    Options {
        // No prices: each request reserves the budget's cap and, its cost
        // unknown, keeps it as uncertain spend.
        extra_models: r#"
  - id: m-unpriced
    deployments: [{ provider: openai, model: up-unpriced }]
"#
        .into(),
        top_level: budgets.into(),
        ..Options::default()
    }
}

#[tokio::test]
async fn unpriced_requests_keep_their_reservation_and_a_spent_budget_answers_402() {
    let h = Harness::start_with(options(
        "budgets:\n  - { scope: gateway, limit_usd: 1.0, period: month, max_reservation_usd: 0.4 }\n",
    ))
    .await;
    let chat = json!({"model": "m-unpriced", "messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..2 {
        assert_eq!(h.post("/v1/chat/completions", &chat).await.status(), 200);
    }
    let before = h.openai.request_count();
    let r = h
        .post(
            "/v1/messages",
            &json!({"model": "m-unpriced", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}),
        )
        .await;
    assert_eq!(r.status(), 402);
    assert!(r.headers().get("retry-after").is_none(), "waiting does not help");
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["type"], "error");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("budget of gateway is spent: $1.00 per month"), "{message}");
    assert_eq!(h.openai.request_count(), before, "nothing was sent upstream");
    let r = h.post("/v1/chat/completions", &chat).await;
    assert_eq!(r.status(), 402);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "budget_exceeded");
    // The two answered requests' reservations, kept as uncertain spend, on the
    // scrape (settled off the request's path: wait for them).
    let want = r#"gateway_budget_usd{scope="gateway",period="month",kind="uncertain"} 0.8"#;
    let scraped = async {
        loop {
            let r = h.client.get(format!("{}/metrics", h.base)).bearer_auth(GATEWAY_KEY);
            let text = r.send().await.unwrap().text().await.unwrap();
            if text.contains(want) {
                return text;
            }
            tokio::task::yield_now().await;
        }
    };
    let text = tokio::time::timeout(WAIT, scraped).await.expect("the gauge says it");
    assert!(text.contains(r#"gateway_budget_usd{scope="gateway",period="month",kind="limit"} 1"#));
}

#[tokio::test]
async fn a_warn_mode_budget_never_refuses_and_the_record_says_it_was_passed() {
    let h = Harness::start_with(options(
        "budgets:\n  - { scope: gateway, limit_usd: 0.5, period: day, mode: warn, max_reservation_usd: 0.4 }\n",
    ))
    .await;
    let chat = json!({"model": "m-unpriced", "messages": [{"role": "user", "content": "hi"}]});
    for _ in 0..3 {
        assert_eq!(h.post("/v1/chat/completions", &chat).await.status(), 200);
    }
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(3)).await.unwrap();
    assert!(!records[0].descriptor.contains("budget_over"), "{}", records[0].descriptor);
    assert!(records[2].descriptor.contains("budget_over:gateway"), "{}", records[2].descriptor);
}

#[tokio::test]
async fn a_budget_may_lower_max_tokens_to_what_it_can_still_pay_for() {
    // $0.001 an output token, no input price: $0.25 pays for 250 tokens.
    let mut o = options(
        "budgets:\n  - { scope: gateway, limit_usd: 0.25, period: day, lower_max_tokens: true }\n",
    );
    o.extra_models.push_str(
        "  - id: m-priced\n    deployments: [{ provider: anthropic, model: up-priced }]\n    pricing: { input: 0, output: 1000 }\n",
    );
    let h = Harness::start_with(o).await;
    let ask = |n: u64| json!({"model": "m-priced", "max_tokens": n, "messages": [{"role": "user", "content": "hi"}]});
    // 100 tokens fit: sent as asked, the client's own body.
    assert_eq!(h.post("/v1/messages", &ask(100)).await.status(), 200);
    assert_eq!(h.anthropic.received()[0].body["max_tokens"], 100);
    // 1000 do not: sent with what is left of the $0.25 once the first
    // answer's cost is settled (at most 250 tokens), not refused.
    let r = h.post("/v1/messages", &ask(1000)).await;
    assert_eq!(r.status(), 200);
    let sent = h.anthropic.received()[1].body["max_tokens"].as_u64().unwrap();
    assert!((1..=250).contains(&sent), "lowered to what the budget pays for: {sent}");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(2)).await.unwrap();
    let lowered = format!("budget_lowered:gateway:{sent}");
    assert!(records[1].descriptor.contains(&lowered), "{}", records[1].descriptor);
}
