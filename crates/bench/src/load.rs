//! The load phases: closed-loop latency runs, a fixed-duration throughput run,
//! and paced streams; plus the sample statistics.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::Barrier;

use crate::client::Conn;

/// One thing to send requests to.
#[derive(Clone)]
pub struct Target {
    /// `direct`, `nginx`, `gateway`.
    pub name: &'static str,
    pub addr: SocketAddr,
    /// A complete non-stream request (head + body).
    pub request: Arc<Vec<u8>>,
    /// A complete stream request.
    pub stream_request: Arc<Vec<u8>>,
    /// The process serving it (none for the in-process fake).
    pub pid: Option<u32>,
    /// The throughput phase sends `stream_request`, and the fake answers it with
    /// an unpaced stream: what a stream costs per request.
    pub streamed: bool,
}

/// The request bytes for a chat completion to `addr`.
pub fn build_request(addr: SocketAddr, api_key: &str, body: &Value) -> Vec<u8> {
    build_request_at(
        addr,
        "/v1/chat/completions",
        &format!("authorization: Bearer {api_key}"),
        body,
    )
}

/// The request bytes for a POST of `body` to `path` on `addr`, `auth` its
/// credential header (`name: value`).
pub fn build_request_at(addr: SocketAddr, path: &str, auth: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\n{auth}\r\ncontent-type: application/json\r\naccept: */*\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn err(t: &Target, what: impl std::fmt::Display) -> String {
    format!("{} ({}): {what}", t.name, t.addr)
}

/// One request, with the body collected; errors unless the status is 200.
async fn call(conn: &mut Conn, t: &Target, req: &[u8], body: &mut Vec<u8>) -> Result<(), String> {
    body.clear();
    let status =
        conn.exchange(req, |b, _| body.extend_from_slice(b)).await.map_err(|e| err(t, e))?;
    if status != 200 {
        let text = String::from_utf8_lossy(body);
        return Err(err(
            t,
            format!("answered {status}: {}", text.chars().take(500).collect::<String>()),
        ));
    }
    Ok(())
}

/// Checks that a non-stream answer is the canned completion (in Chat
/// Completions' shape, or in Anthropic's for a Messages request).
pub async fn verify(t: &Target, expect_text: &str) -> Result<(), String> {
    let mut conn = Conn::new(t.addr);
    let mut body = Vec::new();
    call(&mut conn, t, &t.request, &mut body).await?;
    let v: Value = serde_json::from_slice(&body).map_err(|e| {
        err(t, format!("answer is not JSON ({e}): {}", String::from_utf8_lossy(&body)))
    })?;
    let got = v
        .pointer("/choices/0/message/content")
        .or_else(|| v.pointer("/content/0/text"))
        .and_then(Value::as_str);
    if got != Some(expect_text) {
        return Err(err(t, format!("unexpected answer: {v}")));
    }
    Ok(())
}

/// `total` requests over `concurrency` keep-alive connections, each request
/// timed from before its write to the end of its body. Connections are opened
/// and used once before the clock starts. Nanoseconds.
pub async fn latency(t: &Target, concurrency: usize, total: usize) -> Result<Vec<u64>, String> {
    let concurrency = concurrency.max(1);
    let barrier = Arc::new(Barrier::new(concurrency));
    let mut tasks = Vec::new();
    for i in 0..concurrency {
        let n = total / concurrency + usize::from(i < total % concurrency);
        let t = t.clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(t.addr);
            let mut body = Vec::with_capacity(4096);
            let request = if t.streamed { &t.stream_request } else { &t.request };
            let ready = call(&mut conn, &t, request, &mut body).await;
            barrier.wait().await;
            ready?;
            let mut samples = Vec::with_capacity(n);
            for _ in 0..n {
                let start = Instant::now();
                call(&mut conn, &t, request, &mut body).await?;
                samples.push(start.elapsed().as_nanos() as u64);
            }
            Ok::<_, String>(samples)
        }));
    }
    let mut all = Vec::with_capacity(total);
    for task in tasks {
        all.extend(task.await.map_err(|e| err(t, e))??);
    }
    Ok(all)
}

/// The result of a throughput run.
pub struct Throughput {
    pub requests: u64,
    pub elapsed: Duration,
    /// CPU ticks the target process used over the run.
    pub cpu_ticks: Option<u64>,
    /// CPU ticks this process (load generator + fake upstream) used.
    pub bench_ticks: Option<u64>,
    /// `/proc/stat` per CPU at the start and the end.
    pub cpus_before: Vec<crate::procs::CpuTimes>,
    pub cpus_after: Vec<crate::procs::CpuTimes>,
    /// Per-request latencies under this load, nanoseconds.
    pub latencies: Vec<u64>,
}

/// Closed loop: `concurrency` connections each send back-to-back requests for
/// `duration`.
pub async fn throughput(
    t: &Target,
    concurrency: usize,
    duration: Duration,
) -> Result<Throughput, String> {
    let concurrency = concurrency.max(1);
    let barrier = Arc::new(Barrier::new(concurrency + 1));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let t = t.clone();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(t.addr);
            let mut body = Vec::with_capacity(4096);
            let request = if t.streamed { &t.stream_request } else { &t.request };
            let ready = call(&mut conn, &t, request, &mut body).await;
            barrier.wait().await;
            ready?;
            let deadline = Instant::now() + duration;
            let mut samples = Vec::with_capacity(4096);
            loop {
                let start = Instant::now();
                if start >= deadline {
                    break;
                }
                call(&mut conn, &t, request, &mut body).await?;
                samples.push(start.elapsed().as_nanos() as u64);
            }
            Ok::<_, String>(samples)
        }));
    }
    barrier.wait().await;
    let cpu_before = t.pid.map(crate::procs::cpu_ticks).transpose()?;
    let bench_before = crate::procs::cpu_ticks(std::process::id()).ok();
    let cpus_before = crate::procs::cpu_times();
    let t0 = Instant::now();
    let mut latencies = Vec::new();
    let mut failure = None;
    for task in tasks {
        match task.await.map_err(|e| err(t, e)) {
            Ok(Ok(s)) => latencies.extend(s),
            Ok(Err(e)) | Err(e) => failure = failure.or(Some(e)),
        }
    }
    let elapsed = t0.elapsed();
    let cpus_after = crate::procs::cpu_times();
    let bench_after = crate::procs::cpu_ticks(std::process::id()).ok();
    let cpu_after = t.pid.map(crate::procs::cpu_ticks).transpose()?;
    if let Some(e) = failure {
        return Err(e);
    }
    let cpu_ticks = cpu_before.zip(cpu_after).map(|(a, b)| b.saturating_sub(a));
    let bench_ticks = bench_before.zip(bench_after).map(|(a, b)| b.saturating_sub(a));
    Ok(Throughput {
        requests: latencies.len() as u64,
        elapsed,
        cpu_ticks,
        bench_ticks,
        cpus_before,
        cpus_after,
        latencies,
    })
}

/// The content text of frame `i` of the paced stream; unique per frame so the
/// client can time each one's arrival.
pub fn token(i: usize) -> String {
    format!("bench-tok-{i:02}")
}

/// The paced stream the fake sends: `n` content frames (the first also carries
/// the role), a finish frame with usage, then `[DONE]`.
pub fn stream_frames(model: &str, n: usize) -> Vec<String> {
    let chunk = |delta: Value, finish: Value, usage: Option<Value>| {
        let mut v = json!({
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        });
        if let (Some(u), Some(obj)) = (usage, v.as_object_mut()) {
            obj.insert("usage".into(), u);
        }
        format!("data: {v}\n\n")
    };
    let mut frames: Vec<String> = (0..n)
        .map(|i| {
            let text = format!("{} ", token(i));
            let delta = if i == 0 {
                json!({"role": "assistant", "content": text})
            } else {
                json!({"content": text})
            };
            chunk(delta, Value::Null, None)
        })
        .collect();
    frames.push(chunk(
        json!({}),
        json!("stop"),
        Some(json!({"prompt_tokens": 20, "completion_tokens": n, "total_tokens": 20 + n})),
    ));
    frames.push("data: [DONE]\n\n".to_owned());
    frames
}

/// Stream samples, nanoseconds.
#[derive(Default)]
pub struct StreamSamples {
    /// Request write to the first content frame's arrival.
    pub ttfc: Vec<u64>,
    /// Between consecutive content frames' arrivals.
    pub gaps: Vec<u64>,
}

/// `total` streams over `concurrency` connections; each must deliver all `n`
/// content frames and `[DONE]`.
pub async fn streaming(
    t: &Target,
    concurrency: usize,
    total: usize,
    n: usize,
) -> Result<StreamSamples, String> {
    let concurrency = concurrency.max(1);
    let markers: Arc<Vec<Vec<u8>>> = Arc::new((0..n).map(|i| token(i).into_bytes()).collect());
    let barrier = Arc::new(Barrier::new(concurrency));
    let mut tasks = Vec::new();
    for i in 0..concurrency {
        let count = total / concurrency + usize::from(i < total % concurrency);
        let t = t.clone();
        let barrier = Arc::clone(&barrier);
        let markers = Arc::clone(&markers);
        tasks.push(tokio::spawn(async move {
            let mut conn = Conn::new(t.addr);
            let ready = conn.connect().await.map_err(|e| err(&t, e));
            barrier.wait().await;
            ready?;
            let mut out = StreamSamples::default();
            let mut body = Vec::with_capacity(8192);
            let mut times = Vec::with_capacity(markers.len());
            for _ in 0..count {
                body.clear();
                times.clear();
                let mut from = 0;
                let start = Instant::now();
                let status = conn
                    .exchange(&t.stream_request, |piece, at| {
                        body.extend_from_slice(piece);
                        while let Some(m) = markers.get(times.len()) {
                            match crate::client::find(&body[from..], m) {
                                Some(i) => {
                                    from += i + m.len();
                                    times.push(at);
                                }
                                None => break,
                            }
                        }
                    })
                    .await
                    .map_err(|e| err(&t, e))?;
                let text = String::from_utf8_lossy(&body);
                if status != 200 || times.len() != markers.len() || !text.contains("[DONE]") {
                    return Err(err(
                        &t,
                        format!(
                            "stream: status {status}, {} of {} content frames seen: {}",
                            times.len(),
                            markers.len(),
                            text.chars().take(800).collect::<String>()
                        ),
                    ));
                }
                if let Some(first) = times.first() {
                    out.ttfc.push(first.duration_since(start).as_nanos() as u64);
                }
                out.gaps
                    .extend(times.windows(2).map(|w| w[1].duration_since(w[0]).as_nanos() as u64));
            }
            Ok::<_, String>(out)
        }));
    }
    let mut all = StreamSamples::default();
    for task in tasks {
        let s = task.await.map_err(|e| err(t, e))??;
        all.ttfc.extend(s.ttfc);
        all.gaps.extend(s.gaps);
    }
    Ok(all)
}

/// Order statistics of a sample set, in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub n: usize,
    pub p50: f64,
    pub p99: f64,
    pub mean: f64,
    pub max: f64,
}

impl Summary {
    pub fn of(samples: &[u64]) -> Summary {
        if samples.is_empty() {
            return Summary::default();
        }
        let mut s = samples.to_vec();
        s.sort_unstable();
        let at = |p: f64| {
            let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
            s.get(rank.clamp(1, s.len()) - 1).copied().unwrap_or(0) as f64 / 1000.0
        };
        let sum: u128 = s.iter().map(|&x| u128::from(x)).sum();
        Summary {
            n: s.len(),
            p50: at(50.0),
            p99: at(99.0),
            mean: sum as f64 / s.len() as f64 / 1000.0,
            max: s.last().copied().unwrap_or(0) as f64 / 1000.0,
        }
    }

    pub fn json(&self) -> Value {
        json!({"n": self.n, "p50_us": r1(self.p50), "p99_us": r1(self.p99), "mean_us": r1(self.mean), "max_us": r1(self.max)})
    }
}

/// Rounded to 0.1.
pub fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let s: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        let sum = Summary::of(&s);
        assert_eq!(sum.n, 100);
        assert!((sum.p50 - 50.0).abs() < 1e-9);
        assert!((sum.p99 - 99.0).abs() < 1e-9);
        assert!((sum.mean - 50.5).abs() < 1e-9);
        assert!((sum.max - 100.0).abs() < 1e-9);
        assert_eq!(Summary::of(&[]).n, 0);
    }

    #[test]
    fn stream_frames_carry_unique_tokens() {
        let frames = stream_frames("bench", 20);
        assert_eq!(frames.len(), 22);
        for (i, f) in frames.iter().take(20).enumerate() {
            assert_eq!(f.matches("bench-tok-").count(), 1);
            assert!(f.contains(&token(i)));
        }
        assert_eq!(frames.last().map(String::as_str), Some("data: [DONE]\n\n"));
    }
}
