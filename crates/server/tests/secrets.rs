//! Secrets never leak: no gateway key, provider key or access token the gateway
//! minted appears in the gateway's own logs (at trace level), error bodies,
//! response headers or request records — even when an upstream echoes the key
//! or token back in an error body.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply, Vendor};

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_secret_appears_in_logs_errors_headers_or_records() {
    let logs = Buffer::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_env_filter(
            "switchyard=trace,switchyard_core=trace,switchyard_server=trace,switchyard_store=trace",
        )
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    // Claude on Vertex AI, whose access token the gateway fetches at run time.
    let claude = FakeUpstream::start_vertex(Vendor::Anthropic).await.unwrap();
    let (options, _files) = vertex_claude("vertex", &claude, "claude-sonnet-4-5", "");
    let h = Harness::start_with(options).await;
    // The fake's first token, which it quotes back.
    let token = "ya29.fake-vertex-1";
    claude.push(Reply::error(401, format!("token {token} is not valid for this project")));
    let mut seen = String::new();
    // An upstream that echoes the platform key, in an error body and in a 400.
    h.openai
        .push(Reply::error(401, format!("bad key {OPENAI_KEY} at https://x/?key={OPENAI_KEY}")));
    h.anthropic.push(Reply::error(400, format!("invalid x-api-key {ANTHROPIC_KEY}")));
    h.gemini.push(Reply::error(500, format!("key={GEMINI_KEY} rejected")));
    for (path, body) in [
        (
            "/v1/chat/completions",
            json!({"model": "m-openai", "messages": [{"role": "user", "content": "x"}]}),
        ),
        (
            "/v1/messages",
            json!({"model": "m-anthropic", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}),
        ),
        ("/v1/responses", json!({"model": "m-gemini", "input": "x"})),
        (
            "/v1/chat/completions",
            json!({"model": "m-chain", "stream": true, "messages": [{"role": "user", "content": "x"}]}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "m-vertex", "messages": [{"role": "user", "content": "x"}]}),
        ),
    ] {
        let r = h.post(path, &body).await;
        seen.push_str(&format!("{:?}", r.headers()));
        seen.push_str(&r.text().await.unwrap());
    }
    // A wrong gateway key is not echoed either.
    let r = h
        .client
        .post(format!("{}/v1/chat/completions", h.base))
        .bearer_auth("sk-wrong-gateway-key-123456")
        .body("{}")
        .send()
        .await
        .unwrap();
    seen.push_str(&r.text().await.unwrap());
    assert_eq!(claude.tokens_granted(), 1, "the token was fetched and used");
    let records = tokio::time::timeout(WAIT, h.sink.wait_len(5)).await.unwrap();
    seen.push_str(&serde_json::to_string(&records).unwrap());
    seen.push_str(&String::from_utf8_lossy(&logs.0.lock().unwrap()));
    assert!(seen.contains("[redacted]"), "the echoed keys were replaced");
    for secret in
        [GATEWAY_KEY, OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY, "sk-wrong-gateway-key-123456", token]
    {
        assert!(!seen.contains(secret), "{secret} leaked:\n{seen}");
    }
    assert!(!logs.0.lock().unwrap().is_empty(), "the gateway did log (the check is not vacuous)");
}
