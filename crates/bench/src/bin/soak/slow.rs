//! The slow-streams phase: a thousand streams open at once, each slow to start
//! and slow to finish, against the fake directly and through the gateway. What
//! an open stream costs the gateway in memory, and whether a burst of
//! connections adds a tail to the time to first content.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use switchyard_testkit::{FakeUpstream, Reply};
use tokio::sync::Barrier;

/// The model the slow fake serves (any name: the fake echoes it).
pub const MODEL: &str = "slow-model";
/// Before the fake's response headers.
const FIRST: Duration = Duration::from_millis(500);
/// Content frames per stream, and the gap between frames.
const FRAMES: usize = 16;
const GAP: Duration = Duration::from_millis(50);

/// Every answer of `fake` from now on: a slow stream of [`FRAMES`] words.
pub fn script(fake: &FakeUpstream) {
    fake.set_recording(false);
    fake.set_default(Reply::sse(frames()).first_byte_delay(FIRST).chunk_delay(GAP));
}

fn frames() -> Vec<String> {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        let v = json!({
            "id": "chatcmpl-soak",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        format!("data: {v}\n\n")
    };
    let mut out: Vec<String> = (0..FRAMES)
        .map(|i| {
            let text = format!("tok{i} ");
            let delta = if i == 0 {
                json!({"role": "assistant", "content": text})
            } else {
                json!({"content": text})
            };
            chunk(delta, serde_json::Value::Null)
        })
        .collect();
    let usage =
        json!({"prompt_tokens": 8, "completion_tokens": FRAMES, "total_tokens": 8 + FRAMES});
    let mut last = json!({
        "id": "chatcmpl-soak",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    });
    if let Some(o) = last.as_object_mut() {
        o.insert("usage".into(), usage);
    }
    out.push(format!("data: {last}\n\n"));
    out.push("data: [DONE]\n\n".to_owned());
    out
}

/// Times to first content, nanoseconds, and the streams that failed.
pub struct Samples {
    pub ttfc: Vec<u64>,
    pub failed: u64,
    pub first_failure: Option<String>,
    pub elapsed: Duration,
}

/// `total` streams from `concurrency` clients started together (a burst of
/// connections), each waiting for its whole stream before the next.
pub async fn run(
    url: &str,
    api_key: Option<&str>,
    concurrency: usize,
    total: usize,
) -> Result<Samples, String> {
    // Trusts the test CA, for the TLS fake called directly; one connection per
    // stream either way (HTTP/1.1 to the gateway, as agents mostly connect).
    let ca = reqwest::Certificate::from_pem(switchyard_testkit::tls::CA_PEM)
        .map_err(|e| format!("test CA: {e}"))?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .http1_only()
        .add_root_certificate(ca)
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let body = json!({
        "model": MODEL,
        "stream": true,
        "messages": [{"role": "user", "content": "a slow stream"}],
    })
    .to_string();
    let barrier = Arc::new(Barrier::new(concurrency));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..concurrency {
        let count = total / concurrency + usize::from(i < total % concurrency);
        let (client, url, body, barrier) =
            (client.clone(), url.to_owned(), body.clone(), Arc::clone(&barrier));
        let auth = api_key.map(|k| format!("Bearer {k}"));
        tasks.push(tokio::spawn(async move {
            let mut ttfc = Vec::with_capacity(count);
            let mut failed = 0u64;
            let mut first_failure = None;
            barrier.wait().await;
            for _ in 0..count {
                match one(&client, &url, auth.as_deref(), &body).await {
                    Ok(t) => ttfc.push(t.as_nanos() as u64),
                    Err(e) => {
                        failed += 1;
                        first_failure.get_or_insert(e);
                    }
                }
            }
            (ttfc, failed, first_failure)
        }));
    }
    let mut out =
        Samples { ttfc: Vec::new(), failed: 0, first_failure: None, elapsed: Duration::ZERO };
    for t in tasks {
        let (ttfc, failed, first) = t.await.map_err(|e| format!("stream task: {e}"))?;
        out.ttfc.extend(ttfc);
        out.failed += failed;
        if out.first_failure.is_none() {
            out.first_failure = first;
        }
    }
    out.elapsed = start.elapsed();
    Ok(out)
}

async fn one(
    client: &reqwest::Client,
    url: &str,
    auth: Option<&str>,
    body: &str,
) -> Result<Duration, String> {
    let start = Instant::now();
    let mut req = client.post(url).header("content-type", "application/json").body(body.to_owned());
    if let Some(a) = auth {
        req = req.header("authorization", a);
    }
    let mut resp = req.send().await.map_err(|e| format!("send: {e}"))?;
    if resp.status() != 200 {
        return Err(format!("status {}", resp.status()));
    }
    let mut first = None;
    let mut text = Vec::new();
    while let Some(piece) = resp.chunk().await.map_err(|e| format!("body: {e}"))? {
        if first.is_none() && crate::contains(&piece, b"tok0") {
            first = Some(start.elapsed());
        }
        text.extend_from_slice(&piece);
    }
    let last = format!("tok{} ", FRAMES - 1);
    if !crate::contains(&text, last.as_bytes()) || !crate::contains(&text, b"[DONE]") {
        return Err(format!(
            "incomplete: {}",
            String::from_utf8_lossy(&text).chars().take(200).collect::<String>()
        ));
    }
    first.ok_or_else(|| "no first content".to_owned())
}
