//! The price shown is the price billed: requests of each kind (a chat at its
//! base prices, one over a long-context threshold, an embedding) are metered,
//! and each record's cost is what the public price list (`/v1/pricing`, the
//! same lines as the `/pricing` page) says that usage costs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::{Value, json};
use switchyard_core::RequestRecord;

/// Every canned answer reports 11 prompt tokens: `m-long`'s tier (over 10)
/// applies to it, `m-short`'s (over 1000) does not.
fn models() -> String {
    r#"  - id: m-short
    deployments: [{ provider: openai, model: up-short }]
    pricing: { input: 1.0, output: 2.0, cache_read: 0.1, long_context: { threshold: 1000, input: 2.0, output: 4.0 } }
  - id: m-long
    deployments: [{ provider: openai, model: up-long }]
    pricing: { input: 1.0, output: 2.0, long_context: { threshold: 10, input: 3.0, output: 6.0, cache_read: 0.5 } }
  - id: i-priced
    kind: image
    deployments: [{ provider: mock }]
    pricing: { per_image: 0.05, per_image_size: { "1792x1024": 0.09 } }
  - id: e-priced
    kind: embedding
    deployments: [{ provider: openai, model: text-embedding-3-small }]
    pricing: { input: 0.02 }
"#
    .to_owned()
}

async fn record_of(h: &Harness, r: reqwest::Response) -> RequestRecord {
    assert_eq!(r.status(), 200);
    let id = r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let _ = r.bytes().await.unwrap();
    tokio::time::timeout(WAIT, h.sink.wait_for(&id)).await.unwrap()
}

/// What the list says `rec`'s usage costs.
fn listed_cost(list: &Value, rec: &RequestRecord) -> f64 {
    let model = rec.resolved_model.as_deref().unwrap();
    let line = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["model"] == model)
        .unwrap_or_else(|| panic!("{model} is not listed: {list}"));
    // An image model priced per image: the images the record counts.
    if let Some(each) = line["per_image"].as_f64() {
        let made: f64 = rec
            .descriptor
            .split(' ')
            .find_map(|d| d.strip_prefix("images:"))
            .and_then(|n| n.parse().ok())
            .unwrap();
        let sized = line["per_image_size"]["1792x1024"].as_f64().unwrap();
        let each = if rec.descriptor.contains("size:1792x1024") { sized } else { each };
        return made * each;
    }
    let u = &rec.usage;
    let input = u.input_tokens.unwrap();
    let prices = match &line["long_context"] {
        Value::Object(t) if input > t["threshold_tokens"].as_u64().unwrap() => {
            &line["long_context"]
        }
        _ => line,
    };
    let price = |field: &str| prices[field].as_f64().unwrap_or(0.0);
    let read = u.cache_read_tokens.unwrap_or(0);
    let write = u.cache_write_tokens.unwrap_or(0);
    let uncached = input - read - write;
    (uncached as f64 * price("input")
        + u.output_tokens.unwrap_or(0) as f64 * price("output")
        + read as f64 * price("cache_read")
        + write as f64 * price("cache_write"))
        / 1e6
}

#[tokio::test]
async fn every_kind_of_request_costs_what_the_price_list_says() {
    let h = Harness::start_with(Options { extra_models: models(), ..Options::default() }).await;
    let chat =
        |model: &str| json!({"model": model, "messages": [{"role": "user", "content": "hi"}]});
    let short = record_of(&h, h.post("/v1/chat/completions", &chat("m-short")).await).await;
    let long = record_of(&h, h.post("/v1/chat/completions", &chat("m-long")).await).await;
    let drawn = record_of(
        &h,
        h.post("/v1/images/generations", &json!({"model": "i-priced", "prompt": "x", "n": 3}))
            .await,
    )
    .await;
    let wide = record_of(
        &h,
        h.post(
            "/v1/images/generations",
            &json!({"model": "i-priced", "prompt": "x", "size": "1792x1024"}),
        )
        .await,
    )
    .await;
    let embedded = record_of(
        &h,
        h.post("/v1/embeddings", &json!({"model": "e-priced", "input": ["a b c d", "e f"]})).await,
    )
    .await;
    // The list needs no key.
    let list: Value =
        h.client.get(format!("{}/v1/pricing", h.base)).send().await.unwrap().json().await.unwrap();
    assert!((drawn.cost_usd.unwrap() - 0.15).abs() < 1e-12, "{drawn:?}");
    assert!((wide.cost_usd.unwrap() - 0.09).abs() < 1e-12, "{wide:?}");
    for rec in [&short, &long, &drawn, &wide, &embedded] {
        let billed = rec.cost_usd.unwrap();
        let shown = listed_cost(&list, rec);
        assert!(
            (billed - shown).abs() < 1e-12,
            "{:?}: billed {billed}, listed {shown}",
            rec.resolved_model
        );
    }
    // The tier applied where the prompt was over it, and the record says so.
    assert_eq!(short.usage, long.usage, "the same answer");
    assert!(long.cost_usd.unwrap() > short.cost_usd.unwrap() * 2.0);
    assert!(long.descriptor.contains("price_tier:long_context"), "{}", long.descriptor);
    assert!(!short.descriptor.contains("price_tier"), "{}", short.descriptor);
    // The lines say each model's kind and units.
    let line = |model: &str| {
        list["data"].as_array().unwrap().iter().find(|l| l["model"] == model).unwrap().clone()
    };
    assert_eq!(line("e-priced")["kind"], "embedding");
    assert_eq!(line("m-long")["kind"], "chat");
    assert_eq!(
        line("m-long")["long_context"],
        json!({"threshold_tokens": 10, "input": 3.0, "output": 6.0, "cache_read": 0.5, "cache_write": 3.0})
    );
    assert_eq!(line("m-short")["cache_write"], 1.0, "cache prices fall back to the input price");
    // The page shows the same tier.
    let page =
        h.client.get(format!("{}/pricing", h.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("over 10 prompt tokens") && page.contains("$6.00"), "{page}");
}
