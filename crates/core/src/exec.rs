//! The execution pipeline after parsing: resolve → (authorize, admit: later) →
//! attempt loop → deliver (whole or streamed) → meter → record.
//!
//! The attempt loop walks the plan's candidates in order. A candidate that fails
//! before anything reached the client is followed by the next one (failover); a
//! request-shaped failure (400/413/422) is answered at once. Streams are held until
//! the first content event, so a failure before it is invisible to the client;
//! after it, the stream ends with an error event in the client's format and no
//! other provider's content is ever spliced in.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::{Map, Value};
use switchyard_protocol::{
    ClientFormat, ErrorKind, Part, Request, Response, StreamEncoder, StreamEvent, Usage, Wire,
};
use tokio::sync::mpsc;

use crate::catalog::{Candidate, Plan, ProviderKind};
use crate::error::GatewayError;
use crate::record::{AttemptRecord, RequestRecord, SharedSink, cost};
use crate::upstream::{self, Failure, Outgoing, ProviderRuntime, Source};
use crate::util::Date;
use crate::{Snapshot, estimate, mock};

/// Bounded channel between the stream pump and the client connection: a slow client
/// slows the upstream read (back-pressure) instead of growing a buffer.
const STREAM_CHANNEL: usize = 32;

/// A parsed client request, ready for the pipeline.
#[derive(Debug)]
pub struct Inbound {
    /// Request id (also returned to the client).
    pub id: String,
    pub received: Instant,
    /// Unix milliseconds at arrival.
    pub time_ms: u64,
    pub format: ClientFormat,
    pub request: Request,
    /// The client's own body, kept for the same-format fast path.
    pub raw: Option<Map<String, Value>>,
    /// Client headers a same-vendor upstream needs (`anthropic-beta`, `anthropic-version`).
    pub forward_headers: Vec<(String, String)>,
    /// Visible prefix of the gateway key used (never the key).
    pub key_prefix: Option<String>,
}

/// Which deployment answered.
#[derive(Debug, Clone)]
pub struct Served {
    pub provider: String,
    /// The catalog id the client was served.
    pub model: String,
    pub upstream_model: String,
}

#[derive(Debug)]
pub enum Delivery {
    /// A complete JSON body in the client's format.
    Whole(Bytes),
    /// SSE bytes in the client's format, produced as the upstream streams.
    Stream(mpsc::Receiver<Bytes>),
}

#[derive(Debug)]
pub struct Success {
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    pub delivery: Delivery,
}

/// Writes exactly one record per request: on `finish`, or on drop (the client went
/// away while the request was in flight).
struct RecordGuard {
    rec: RequestRecord,
    sink: SharedSink,
    started: Instant,
    done: bool,
}

impl RecordGuard {
    fn finish(mut self, status: u16, error_code: Option<&str>) {
        self.write(status, error_code);
    }

    fn write(&mut self, status: u16, error_code: Option<&str>) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.rec.status = status;
        self.rec.error_code = error_code.map(str::to_owned);
        self.rec.total_ms = self.started.elapsed().as_millis() as u64;
        self.sink.record(std::mem::take(&mut self.rec));
    }
}

impl Drop for RecordGuard {
    fn drop(&mut self) {
        self.write(499, Some("client_closed_request"));
    }
}

/// The answer of one successful attempt.
enum Answer {
    Whole { response: Response, raw: Option<Bytes> },
    Stream(Committed),
}

/// A stream past its commit point: the held events (and raw bytes) up to and
/// including the first content event, and the rest still to read.
struct Committed {
    source: Source,
    held_raw: Vec<u8>,
    held: Vec<StreamEvent>,
    ended: bool,
}

/// Bytes of generated text, for estimating output tokens when none are reported.
fn text_bytes(parts: &[Part]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.text.len(),
            Part::Thinking { text, .. } => text.len(),
            Part::ToolCall(c) => c.arguments.len(),
            _ => 0,
        })
        .sum()
}

/// Fill missing counts by estimation and compute the cost.
fn meter(
    rec: &mut RequestRecord,
    mut usage: Usage,
    req: &Request,
    out_bytes: usize,
    cand: &Candidate,
) {
    if usage.input_tokens.is_none() {
        usage.input_tokens = Some(estimate::input_tokens(req));
        rec.estimated = true;
    }
    if usage.output_tokens.is_none() {
        usage.output_tokens = Some(estimate::output_tokens(out_bytes));
        rec.estimated = true;
    }
    rec.cost_usd = cost(&usage, cand.pricing.as_ref());
    rec.usage = usage;
}

/// Rank failures so the client gets the most informative one.
fn rank(f: &Failure) -> u8 {
    match f {
        Failure::Status { status, .. } if *status != 429 && *status < 500 => 6,
        Failure::Status { .. } => 5,
        Failure::UpstreamError { .. } => 4,
        Failure::Transport { .. } | Failure::BrokenStream(_) | Failure::Malformed(_) => 3,
        Failure::Unavailable(_) => 2,
        Failure::Unsupported(_) => 1,
    }
}

/// Request-shaped failures: the fault is in the request, so nothing more is sent.
fn is_terminal(f: &Failure) -> bool {
    matches!(f, Failure::Status { status: 400 | 413 | 422, .. })
}

/// The client-facing error for a failure.
pub fn failure_error(f: &Failure, provider: &str) -> GatewayError {
    match f {
        Failure::Status { status, message, .. } => {
            let msg = format!("{provider}: {message}");
            match status {
                400 | 413 | 422 => GatewayError::new(
                    *status,
                    ErrorKind::from_status(*status),
                    "upstream_invalid_request",
                    msg,
                ),
                429 => GatewayError::new(429, ErrorKind::RateLimit, "upstream_rate_limited", msg),
                401 | 403 => {
                    GatewayError::new(502, ErrorKind::Upstream, "upstream_auth_failed", msg)
                }
                503 | 529 => {
                    GatewayError::new(503, ErrorKind::Overloaded, "upstream_overloaded", msg)
                }
                408 | 504 => GatewayError::new(504, ErrorKind::Timeout, "upstream_timeout", msg),
                _ => GatewayError::new(502, ErrorKind::Upstream, "upstream_error", msg),
            }
        }
        Failure::Transport { class: "timeout", message } => GatewayError::new(
            504,
            ErrorKind::Timeout,
            "upstream_timeout",
            format!("{provider}: {message}"),
        ),
        Failure::Transport { message, .. } => GatewayError::new(
            502,
            ErrorKind::Upstream,
            "upstream_unreachable",
            format!("{provider}: {message}"),
        ),
        Failure::BrokenStream(m) | Failure::Malformed(m) => GatewayError::new(
            502,
            ErrorKind::Upstream,
            "upstream_malformed",
            format!("{provider}: {m}"),
        ),
        Failure::UpstreamError { kind, message } => {
            let overloaded = kind.contains("overloaded");
            let (status, ek, code) = if overloaded {
                (503, ErrorKind::Overloaded, "upstream_overloaded")
            } else {
                (502, ErrorKind::Upstream, "upstream_error")
            };
            GatewayError::new(status, ek, code, format!("{provider}: {message}"))
        }
        Failure::Unavailable(m) => {
            GatewayError::new(503, ErrorKind::Overloaded, "provider_unavailable", m.clone())
        }
        Failure::Unsupported(m) => GatewayError::invalid("unsupported_request", m.clone()),
    }
}

impl Snapshot {
    /// Run the whole pipeline for a parsed request.
    pub async fn execute(
        self: &Arc<Self>,
        inbound: Inbound,
        sink: SharedSink,
    ) -> Result<Success, GatewayError> {
        let mut guard = RecordGuard {
            rec: RequestRecord {
                id: inbound.id.clone(),
                time_ms: inbound.time_ms,
                key_prefix: inbound.key_prefix.clone(),
                client_format: inbound.format.as_str(),
                requested_model: inbound.request.model.clone(),
                stream: inbound.request.stream,
                ..RequestRecord::default()
            },
            sink,
            started: inbound.received,
            done: false,
        };
        let planned = self
            .catalog
            .plan(&inbound.request.model, Date::today())
            .map_err(GatewayError::from)
            .and_then(|mut plan| {
                crate::filter::by_capability(&mut plan, &inbound.request)?;
                Ok(plan)
            });
        let plan = match planned {
            Ok(p) => p,
            Err(err) => {
                guard.finish(err.status(), Some(err.code()));
                return Err(err);
            }
        };
        guard.rec.resolved_model = Some(plan.public_model.clone());
        guard.rec.route_id.clone_from(&plan.route_id);
        guard.rec.provider = plan.candidates.first().map(|c| c.provider.name.clone());
        self.attempt_loop(inbound, plan, guard).await
    }

    async fn attempt_loop(
        self: &Arc<Self>,
        inbound: Inbound,
        plan: Plan,
        mut guard: RecordGuard,
    ) -> Result<Success, GatewayError> {
        let settings = &self.catalog.settings;
        let deadline = inbound.received + settings.request_timeout;
        let mut failures: Vec<(usize, Failure)> = Vec::new();
        let stream = inbound.request.stream;
        for (i, cand) in plan.candidates.iter().enumerate() {
            let started = Instant::now();
            let kind = if i == 0 { "primary" } else { "failover" };
            let mut credential = None;
            let result = match (&cand.provider.kind, &cand.provider.unavailable) {
                (_, Some(why)) => Err(Failure::Unavailable(why.clone())),
                (ProviderKind::Mock { latency }, None) => {
                    if !stream && !latency.is_zero() {
                        tokio::time::sleep(*latency).await;
                    }
                    Ok(self.attempt_mock(&inbound, cand, *latency))
                }
                (ProviderKind::Wire(wire), None) => match self.runtimes.get(&cand.provider.name) {
                    Some(rt) => {
                        let key = rt.pick_key(&cand.provider);
                        credential = key.map(|k| k.fingerprint());
                        self.attempt_http(&inbound, cand, *wire, rt, key, deadline).await
                    }
                    None => Err(Failure::Unavailable(format!(
                        "provider {} has no client",
                        cand.provider.name
                    ))),
                },
            };
            let outcome = match &result {
                Ok(_) => "ok".to_owned(),
                Err(f) => f.outcome(),
            };
            guard.rec.attempts.push(AttemptRecord {
                deployment: cand.label(),
                credential,
                outcome,
                latency_ms: started.elapsed().as_millis() as u64,
                kind,
            });
            match result {
                Ok(answer) => return Ok(self.deliver(&inbound, &plan, i, answer, guard)),
                Err(f) => {
                    tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "attempt failed");
                    if is_terminal(&f) {
                        let err = failure_error(&f, &cand.provider.name);
                        guard.finish(err.status(), Some(err.code()));
                        return Err(err);
                    }
                    failures.push((i, f));
                    if Instant::now() >= deadline {
                        break;
                    }
                }
            }
        }
        let best =
            failures.iter().enumerate().max_by_key(|(order, (_, f))| (rank(f), usize::MAX - order));
        let err = match best {
            Some((_, (i, f))) => {
                let provider =
                    plan.candidates.get(*i).map(|c| c.provider.name.as_str()).unwrap_or("upstream");
                failure_error(f, provider)
            }
            None => GatewayError::new(
                504,
                ErrorKind::Timeout,
                "deadline_exceeded",
                "request deadline exceeded",
            ),
        };
        tracing::warn!(request_id = %inbound.id, code = err.code(), attempts = failures.len(), "all candidates failed");
        guard.finish(err.status(), Some(err.code()));
        Err(err)
    }

    fn attempt_mock(&self, inbound: &Inbound, cand: &Candidate, latency: Duration) -> Answer {
        let resp = mock::answer(&inbound.request, &cand.upstream_model, &inbound.id);
        if inbound.request.stream {
            let source = Source::Events { rx: mock::stream(resp, latency), done: false };
            Answer::Stream(Committed {
                source,
                held_raw: Vec::new(),
                held: Vec::new(),
                ended: false,
            })
        } else {
            Answer::Whole { response: resp, raw: None }
        }
    }

    async fn attempt_http(
        &self,
        inbound: &Inbound,
        cand: &Candidate,
        wire: Wire,
        rt: &Arc<ProviderRuntime>,
        key: Option<&crate::util::Secret>,
        deadline: Instant,
    ) -> Result<Answer, Failure> {
        let settings = &self.catalog.settings;
        let out = Outgoing {
            format: inbound.format,
            request: &inbound.request,
            raw: inbound.raw.as_ref(),
            forward_headers: &inbound.forward_headers,
        };
        let fast = upstream::is_fast_path(inbound.format, wire, inbound.raw.as_ref());
        let body = upstream::build_body(&out, wire, &cand.provider, &cand.upstream_model)
            .map_err(Failure::from_protocol)?;
        let stream = inbound.request.stream;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let first_byte = settings.first_byte_timeout.min(remaining);
        let dest = upstream::Dest {
            runtime: rt,
            spec: &cand.provider,
            wire,
            key,
            upstream_model: &cand.upstream_model,
        };
        let send = upstream::send(dest, &out, stream, body);
        let resp = match tokio::time::timeout(first_byte, send).await {
            Err(_) => {
                return Err(Failure::Transport {
                    class: "timeout",
                    message: format!("no response within {} ms", first_byte.as_millis()),
                });
            }
            Ok(r) => r?,
        };
        if !resp.status().is_success() {
            return Err(upstream::read_failure(resp, wire, &cand.provider).await);
        }
        if !stream {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let bytes = match tokio::time::timeout(remaining, resp.bytes()).await {
                Err(_) => {
                    return Err(Failure::Transport {
                        class: "timeout",
                        message: "response body timed out".into(),
                    });
                }
                Ok(Err(e)) => return Err(Failure::from_reqwest(&e)),
                Ok(Ok(b)) => b,
            };
            let response = wire.parse_response(&bytes).map_err(Failure::from_protocol)?;
            return Ok(Answer::Whole { response, raw: fast.then_some(bytes) });
        }
        let source = Source::http(resp, wire);
        let committed = commit(source, settings.idle_timeout.min(remaining), fast).await?;
        Ok(Answer::Stream(committed))
    }

    fn deliver(
        self: &Arc<Self>,
        inbound: &Inbound,
        plan: &Plan,
        index: usize,
        answer: Answer,
        mut guard: RecordGuard,
    ) -> Success {
        let Some(cand) = plan.candidates.get(index) else {
            // Unreachable by construction: `index` comes from iterating the plan.
            return Success {
                served: Served {
                    provider: String::new(),
                    model: plan.public_model.clone(),
                    upstream_model: String::new(),
                },
                descriptor: String::new(),
                delivery: Delivery::Whole(Bytes::new()),
            };
        };
        let mut descriptor = plan.descriptor.clone();
        if index > 0
            && let Some(primary) = plan.candidates.first()
        {
            descriptor.push(format!("failover:{}->{}", primary.provider.name, cand.provider.name));
        }
        let descriptor = descriptor.join(" ");
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
        };
        guard.rec.served_provider = Some(served.provider.clone());
        guard.rec.upstream_model = Some(served.upstream_model.clone());
        guard.rec.descriptor.clone_from(&descriptor);
        match answer {
            Answer::Whole { response, raw } => {
                let body = match raw {
                    Some(raw) => raw,
                    None => Bytes::from(inbound.format.encode_response(&response).to_string()),
                };
                meter(
                    &mut guard.rec,
                    response.usage,
                    &inbound.request,
                    text_bytes(&response.content),
                    cand,
                );
                guard.rec.ttft_ms = Some(inbound.received.elapsed().as_millis() as u64);
                guard.finish(200, None);
                Success { served, descriptor, delivery: Delivery::Whole(body) }
            }
            Answer::Stream(committed) => {
                let (tx, rx) = mpsc::channel(STREAM_CHANNEL);
                guard.rec.ttft_ms = Some(inbound.received.elapsed().as_millis() as u64);
                let passthrough = upstream::is_fast_path(
                    inbound.format,
                    cand.provider.wire().unwrap_or(Wire::Gemini),
                    inbound.raw.as_ref(),
                ) && matches!(committed.source, Source::Http { .. });
                let pump = Pump {
                    encoder: inbound.format.stream_encoder(),
                    passthrough,
                    idle: self.catalog.settings.idle_timeout,
                    tx,
                    guard,
                    request: inbound.request.clone(),
                    candidate: cand.clone(),
                    usage: Usage::default(),
                    out_bytes: 0,
                };
                tokio::spawn(pump.run(committed));
                Success { served, descriptor, delivery: Delivery::Stream(rx) }
            }
        }
    }
}

/// Read the stream until its first content event (or its end), holding everything
/// before it. Any failure here is still invisible to the client.
async fn commit(mut source: Source, idle: Duration, keep_raw: bool) -> Result<Committed, Failure> {
    let mut held_raw = Vec::new();
    let mut held = Vec::new();
    loop {
        let batch = match tokio::time::timeout(idle, source.next()).await {
            Err(_) => {
                return Err(Failure::Transport {
                    class: "timeout",
                    message: "stream idle before first content".into(),
                });
            }
            Ok(r) => r?,
        };
        let Some(batch) = batch else {
            return Ok(Committed { source, held_raw, held, ended: true });
        };
        if keep_raw {
            held_raw.extend_from_slice(&batch.raw);
        }
        let content = batch.events.iter().any(StreamEvent::is_content);
        held.extend(batch.events);
        if content || batch.end {
            return Ok(Committed { source, held_raw, held, ended: batch.end });
        }
    }
}

async fn send(tx: &mpsc::Sender<Bytes>, bytes: Vec<u8>) -> bool {
    bytes.is_empty() || tx.send(Bytes::from(bytes)).await.is_ok()
}

/// Moves a committed stream to the client: translate (or pass through), observe
/// usage, end cleanly or with an in-format error, then write the record.
struct Pump {
    encoder: Box<dyn StreamEncoder>,
    passthrough: bool,
    idle: Duration,
    tx: mpsc::Sender<Bytes>,
    guard: RecordGuard,
    request: Request,
    candidate: Candidate,
    usage: Usage,
    out_bytes: usize,
}

impl Pump {
    fn observe(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for ev in events {
            match ev {
                StreamEvent::Usage { usage } => self.usage.merge(usage),
                StreamEvent::Delta { delta, .. } => {
                    self.out_bytes += match delta {
                        switchyard_protocol::Delta::Text { text }
                        | switchyard_protocol::Delta::Thinking { text } => text.len(),
                        switchyard_protocol::Delta::ToolArguments { json } => json.len(),
                        switchyard_protocol::Delta::Signature { .. } => 0,
                    }
                }
                _ => {}
            }
            if !self.passthrough {
                self.encoder.push(ev, out);
            }
        }
    }

    async fn run(mut self, committed: Committed) {
        let Committed { mut source, held_raw, held, mut ended } = committed;
        let mut out = if self.passthrough { held_raw } else { Vec::new() };
        self.observe(&held, &mut out);
        let mut error: Option<GatewayError> = None;
        loop {
            if ended {
                if !self.passthrough {
                    self.encoder.finish(&mut out);
                }
                break;
            }
            if !send(&self.tx, std::mem::take(&mut out)).await {
                return; // client went away: dropping `source` cancels the upstream call
            }
            let next = tokio::select! {
                biased;
                _ = self.tx.closed() => return,
                r = tokio::time::timeout(self.idle, source.next()) => r,
            };
            match next {
                Err(_) => {
                    error = Some(GatewayError::new(
                        504,
                        ErrorKind::Timeout,
                        "stream_idle_timeout",
                        "upstream stream went idle",
                    ));
                    break;
                }
                Ok(Err(f)) => {
                    error = Some(failure_error(&f, &self.candidate.provider.name));
                    break;
                }
                Ok(Ok(None)) => ended = true,
                Ok(Ok(Some(batch))) => {
                    if self.passthrough {
                        out.extend_from_slice(&batch.raw);
                    }
                    self.observe(&batch.events, &mut out);
                    ended = batch.end;
                }
            }
        }
        if let Some(err) = &error {
            tracing::warn!(request_id = %self.guard.rec.id, code = err.code(), "stream failed after commit");
            self.encoder.error(err.body(), &mut out);
        }
        let delivered = send(&self.tx, std::mem::take(&mut out)).await;
        meter(&mut self.guard.rec, self.usage, &self.request, self.out_bytes, &self.candidate);
        match (&error, delivered) {
            (Some(err), _) => self.guard.finish(200, Some(err.code())),
            (None, true) => self.guard.finish(200, None),
            (None, false) => {} // dropped: recorded as client_closed_request
        }
    }
}

impl Snapshot {
    /// `POST /v1/messages/count_tokens`: forwarded to the first available Anthropic
    /// deployment of the model; otherwise estimated from the text. Answers in
    /// Anthropic's shape: `{"input_tokens": N}`.
    pub async fn count_tokens(&self, inbound: &Inbound) -> Result<Bytes, GatewayError> {
        let plan = self.catalog.plan(&inbound.request.model, Date::today())?;
        let anthropic = plan.candidates.iter().find(|c| {
            c.provider.wire() == Some(Wire::Anthropic) && c.provider.unavailable.is_none()
        });
        if let (Some(cand), Some(raw)) = (anthropic, inbound.raw.as_ref())
            && let Some(rt) = self.runtimes.get(&cand.provider.name)
        {
            let mut body = raw.clone();
            body.insert("model".into(), Value::String(cand.upstream_model.clone()));
            let mut req = rt
                .client
                .post(format!("{}/v1/messages/count_tokens", cand.provider.endpoint))
                .header("content-type", "application/json")
                .header("anthropic-version", "2023-06-01");
            if let Some(k) = rt.pick_key(&cand.provider) {
                req = req.header("x-api-key", k.expose());
            }
            if let Some((_, beta)) =
                inbound.forward_headers.iter().find(|(k, _)| k == "anthropic-beta")
            {
                req = req.header("anthropic-beta", beta.as_str());
            }
            let timeout = self.catalog.settings.first_byte_timeout;
            let payload = serde_json::to_vec(&body).unwrap_or_default();
            let sent = tokio::time::timeout(timeout, req.body(payload).send()).await;
            if let Ok(Ok(resp)) = sent
                && resp.status().is_success()
                && let Ok(bytes) = resp.bytes().await
            {
                return Ok(bytes);
            }
            tracing::debug!(request_id = %inbound.id, "count_tokens upstream failed; estimating");
        }
        let n = estimate::input_tokens(&inbound.request);
        Ok(Bytes::from(serde_json::json!({ "input_tokens": n }).to_string()))
    }
}
