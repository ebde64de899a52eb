//! The fault phase: a two-deployment chain whose primary fails a share of its
//! calls, driven at a steady concurrency for minutes, every answer checked.
//!
//! The primary's faults are drawn from its arrival number (a hash, so a run can
//! be repeated), in equal parts: 429 with `Retry-After: 1`, 500, 503, no answer
//! (the gateway's first-byte timeout), a body broken before its first content,
//! and a body broken mid-way. The fallback always answers. So every client
//! request has a healthy fallback except a stream broken after its first
//! content: failover is invisible only until then, and such a stream must reach
//! the client as an error, not as a hang or a clean end. The pass conditions
//! follow: failed requests equal exactly the primary's mid-stream breaks, no
//! stream stalls, every request has one record.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use switchyard_testkit::{FakeUpstream, Received, Reply};

/// The chain's model id.
pub const MODEL: &str = "soak-model";
/// Words in each prompt: the fake echoes them one delta each.
const PROMPT_WORDS: usize = 12;
/// Between a healthy stream's frames.
const FRAME_GAP: Duration = Duration::from_millis(10);
/// A gap between two pieces of a stream after its first content longer than
/// this is a stall (the fake sends one every 10 ms).
pub const STALL: Duration = Duration::from_secs(2);

/// What the primary does with one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    TooMany,
    Internal,
    Unavailable,
    NoAnswer,
    BrokenBeforeContent,
    BrokenMidway,
}

impl Fault {
    const ALL: [Fault; 6] = [
        Fault::TooMany,
        Fault::Internal,
        Fault::Unavailable,
        Fault::NoAnswer,
        Fault::BrokenBeforeContent,
        Fault::BrokenMidway,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Fault::TooMany => "429 with Retry-After: 1",
            Fault::Internal => "500",
            Fault::Unavailable => "503",
            Fault::NoAnswer => "no answer (first-byte timeout)",
            Fault::BrokenBeforeContent => "broken before the first content",
            Fault::BrokenMidway => "broken mid-way",
        }
    }

    fn reply(self, stream: bool) -> Reply {
        match self {
            Fault::TooMany => Reply::error(429, "rate limited by the soak").retry_after(1),
            Fault::Internal => Reply::error(500, "internal error by the soak"),
            Fault::Unavailable => Reply::error(503, "unavailable by the soak"),
            Fault::NoAnswer => Reply::hang(),
            // A stream's headers alone; half of a JSON answer.
            Fault::BrokenBeforeContent if stream => Reply::auto().break_after(0),
            Fault::BrokenBeforeContent => Reply::auto().break_after(1),
            // The role frame and three words, then the connection drops.
            Fault::BrokenMidway if stream => healthy(true).break_after(4),
            Fault::BrokenMidway => Reply::auto().break_after(1),
        }
    }
}

fn healthy(stream: bool) -> Reply {
    if stream { Reply::auto().chunk_delay(FRAME_GAP) } else { Reply::auto() }
}

/// SplitMix64: the arrival number's fault draw, the same on every run.
fn mix(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// What the primary served, by fault and by stream or not.
#[derive(Default)]
pub struct Served {
    pub calls: AtomicU64,
    faults: std::sync::Mutex<HashMap<(Fault, bool), u64>>,
}

impl Served {
    pub fn count(&self, fault: Fault, stream: bool) -> u64 {
        let map = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&(fault, stream)).copied().unwrap_or(0)
    }

    pub fn faults(&self) -> u64 {
        let map = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        map.values().sum()
    }

    pub fn by_fault(&self) -> Vec<(&'static str, u64)> {
        Fault::ALL
            .iter()
            .map(|f| (f.label(), self.count(*f, true) + self.count(*f, false)))
            .collect()
    }
}

fn is_stream(r: &Received) -> bool {
    r.body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

/// The primary: `rate` of its calls fail, the faults in equal parts.
pub fn script_primary(fake: &FakeUpstream, rate: f64) -> Arc<Served> {
    let served = Arc::new(Served::default());
    let s = Arc::clone(&served);
    // The draw's threshold over 2^64, and each fault's equal part of it.
    let threshold = (rate.clamp(0.0, 1.0) * u64::MAX as f64) as u64;
    fake.set_recording(false);
    fake.set_chooser(move |n, received| {
        s.calls.fetch_add(1, Ordering::Relaxed);
        let stream = is_stream(received);
        let draw = mix(n as u64);
        if draw >= threshold || threshold == 0 {
            return healthy(stream);
        }
        let part = threshold / Fault::ALL.len() as u64 + 1;
        let fault = Fault::ALL[((draw / part) as usize).min(Fault::ALL.len() - 1)];
        *s.faults.lock().unwrap_or_else(|e| e.into_inner()).entry((fault, stream)).or_default() +=
            1;
        fault.reply(stream)
    });
    served
}

/// The fallback: always the canned answer, paced like the primary's.
pub fn script_fallback(fake: &FakeUpstream) {
    fake.set_recording(false);
    fake.set_chooser(|_, received| healthy(is_stream(received)));
}

/// The primary's keys: a 429's `Retry-After` rests one key for a second. At
/// two thousand requests a second, a twentieth of the primary's calls a 429,
/// 32 keys were all resting most of the time and only 9 % of the upstream calls
/// failed; the run asks for 30 %.
const PRIMARY_KEYS: usize = 256;

/// The gateway's configuration: the chain, a one-second first-byte timeout (so
/// a call that never answers fails over soon), records in SQLite next to it.
///
/// The breaker is set never to open: at this failure rate it would take the
/// primary out of rotation within a second, and the run would exercise the
/// fallback alone. What an open breaker does has its own tests; this run is
/// about every fault being met, for minutes.
pub fn gateway_yaml(primary: &FakeUpstream, fallback: &FakeUpstream, api_key: &str) -> String {
    let keys: Vec<String> = (0..PRIMARY_KEYS).map(|i| format!("\"sk-primary-{i:02}\"")).collect();
    format!(
        r#"# Generated by switchyard-soak: a two-deployment chain, the primary faulty.
gateway:
  api_keys: ["{api_key}"]
  timeouts: {{ first_byte_ms: 1000 }}
  breaker: {{ threshold: 1000000000 }}
providers:
  primary:
    wire: openai-chat
    endpoint: "{}/v1"
    credentials: {{ keys: [{}] }}
  fallback:
    wire: openai-chat
    endpoint: "{}/v1"
    credentials: {{ none: true }}
models:
  - id: {MODEL}
    deployments: [{{ provider: primary }}, {{ provider: fallback }}]
storage:
  url: "sqlite://soak.db"
"#,
        primary.base_url(),
        keys.join(", "),
        fallback.base_url()
    )
}

/// One client request's outcome.
#[derive(Debug, Default)]
pub struct Outcome {
    pub requests: u64,
    pub streams: u64,
    pub ok: u64,
    /// Streams that ended in an error after content (expected: exactly the
    /// primary's mid-way breaks of streams).
    pub broken_streams: u64,
    /// Anything else that did not succeed.
    pub failed: u64,
    /// The first few failures, for the report.
    pub failures: Vec<String>,
    /// Streams with a gap longer than [`STALL`] after their first content.
    pub stalls: u64,
    /// The longest such gap seen, and the longest time to first content.
    pub max_gap: Duration,
    pub max_ttfc: Duration,
    /// Every request id the gateway answered with.
    pub ids: Vec<String>,
    /// Answers without an `x-request-id`.
    pub without_id: u64,
}

impl Outcome {
    fn merge(&mut self, o: Outcome) {
        self.requests += o.requests;
        self.streams += o.streams;
        self.ok += o.ok;
        self.broken_streams += o.broken_streams;
        self.failed += o.failed;
        let room = 20usize.saturating_sub(self.failures.len());
        self.failures.extend(o.failures.into_iter().take(room));
        self.stalls += o.stalls;
        self.max_gap = self.max_gap.max(o.max_gap);
        self.max_ttfc = self.max_ttfc.max(o.max_ttfc);
        self.ids.extend(o.ids);
        self.without_id += o.without_id;
    }

    fn fail(&mut self, what: String) {
        self.failed += 1;
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }
}

fn body(n: u64, stream: bool) -> Vec<u8> {
    let words: Vec<String> = (0..PROMPT_WORDS).map(|i| format!("w{n}x{i}")).collect();
    let v = json!({
        "model": MODEL,
        "stream": stream,
        "messages": [{"role": "user", "content": words.join(" ")}],
    });
    v.to_string().into_bytes()
}

/// `concurrency` clients, each sending one request after another until
/// `duration` is over: every other one a stream.
pub async fn drive(
    url: String,
    api_key: &str,
    concurrency: usize,
    duration: Duration,
) -> Result<Outcome, String> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let auth = format!("Bearer {api_key}");
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for worker in 0..concurrency {
        let (client, url, auth, stop) =
            (client.clone(), url.clone(), auth.clone(), Arc::clone(&stop));
        tasks.push(tokio::spawn(async move {
            let mut out = Outcome::default();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let n = (i * concurrency as u64) + worker as u64;
                one(&client, &url, &auth, n, i % 2 == 1, &mut out).await;
                i += 1;
            }
            out
        }));
    }
    tokio::time::sleep(duration).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Outcome::default();
    for t in tasks {
        all.merge(t.await.map_err(|e| format!("client task: {e}"))?);
    }
    Ok(all)
}

async fn one(
    client: &reqwest::Client,
    url: &str,
    auth: &str,
    n: u64,
    stream: bool,
    out: &mut Outcome,
) {
    out.requests += 1;
    out.streams += u64::from(stream);
    let start = Instant::now();
    let sent = client
        .post(url)
        .header("authorization", auth)
        .header("content-type", "application/json")
        .body(body(n, stream))
        .send()
        .await;
    let mut resp = match sent {
        Ok(r) => r,
        Err(e) => return out.fail(format!("request {n}: {e}")),
    };
    match resp.headers().get("x-request-id").and_then(|v| v.to_str().ok()) {
        Some(id) => out.ids.push(id.to_owned()),
        None => out.without_id += 1,
    }
    let status = resp.status().as_u16();
    let mut text = Vec::new();
    let mut first_content: Option<Instant> = None;
    let mut last = Instant::now();
    let mut gap = Duration::ZERO;
    let broken = loop {
        match resp.chunk().await {
            Ok(Some(piece)) => {
                let now = Instant::now();
                if first_content.is_some() {
                    gap = gap.max(now - last);
                } else if stream && crate::contains(&piece, b"\"content\"") {
                    first_content = Some(now);
                }
                last = now;
                text.extend_from_slice(&piece);
            }
            Ok(None) => break false,
            Err(_) => break true,
        }
    };
    if let Some(t) = first_content {
        out.max_ttfc = out.max_ttfc.max(t - start);
    }
    out.max_gap = out.max_gap.max(gap);
    if gap > STALL {
        out.stalls += 1;
    }
    let text = String::from_utf8_lossy(&text);
    let expect = format!("w{n}x{}", PROMPT_WORDS - 1);
    if status != 200 {
        return out.fail(format!("request {n}: status {status}: {}", snippet(&text)));
    }
    if !stream {
        if broken || !text.contains(&expect) {
            return out.fail(format!("request {n}: incomplete answer: {}", snippet(&text)));
        }
        out.ok += 1;
        return;
    }
    let complete = !broken && text.contains("data: [DONE]") && text.contains(&expect);
    if complete && !text.contains("\"error\"") {
        out.ok += 1;
    } else if first_content.is_some() && (broken || text.contains("\"error\"")) {
        out.broken_streams += 1;
    } else {
        out.fail(format!("stream {n}: broken={broken}: {}", snippet(&text)));
    }
}

fn snippet(text: &str) -> String {
    text.chars().take(300).collect()
}
