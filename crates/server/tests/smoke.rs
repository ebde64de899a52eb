#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use common::*;
use serde_json::json;

#[tokio::test]
async fn mock_model_answers_openai_chat() {
    let h = Harness::start().await;
    let r = h
        .post(
            "/v1/chat/completions",
            &json!({"model": "mock", "messages": [{"role": "user", "content": "hi"}]}),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-gateway-provider"], "mock");
    let v: serde_json::Value = r.json().await.unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], "echo: hi");
}
