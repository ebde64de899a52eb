//! The execution pipeline after parsing: resolve → (authorize, admit: later) →
//! attempt loop → deliver (whole or streamed) → meter → record.
//!
//! The attempt loop walks the plan's candidates in order. A candidate that fails
//! before anything reached the client is followed by the next one (failover); a
//! request-shaped failure (400/413/422) is answered at once. Streams are held until
//! the first content event, so a failure before it is invisible to the client;
//! after it, the stream ends with an error event in the client's format and no
//! other provider's content is ever spliced in.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use switchyard_protocol::{
    ClientFormat, ErrorKind, Part, Request, Response, SseEvent, StreamEncoder, StreamEvent, Usage,
    Wire, openai_chat, sse, util,
};
use tokio::sync::mpsc;

use crate::access::{self, Principal};
use crate::breaker::{Clearance, CredentialKey, Outcome, Permit};
use crate::catalog::{AttemptPolicy, Candidate, Plan, ProviderKind, Scope, Strategy};
use crate::clock::UnixMs;
use crate::error::GatewayError;
use crate::filter::{self, Hints};
use crate::record::{AttemptRecord, RequestRecord, SharedSink, cost};
use crate::runtime::{InFlightGuard, Runtime};
use crate::state::{Admission, Ask, Reservation};
use crate::strategy::{self, View};
use crate::upstream::{self, Failure, Outgoing, RawBody, Source};
use crate::util::{Date, Redactor, Secret};
use crate::{Snapshot, continuity, estimate, mock};

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
    /// Shared, so a stream's pump can keep it without copying the conversation.
    pub request: Arc<Request>,
    /// The client's own body, kept for the same-format fast path.
    pub raw: Option<RawBody>,
    /// Client headers a same-vendor upstream needs (`anthropic-beta`, `anthropic-version`).
    pub forward_headers: Vec<(String, String)>,
    /// The authenticated caller (user, role, groups, key limits).
    pub principal: Principal,
    /// The project the request is attributed to (its id): the
    /// `x-switchyard-project` header (a project's id or name), else the key's
    /// bound project, else the user's primary project.
    pub project: Option<String>,
    /// That project's name, when known (per-project chains may be keyed by it).
    pub project_name: Option<String>,
    /// The caller's own provider keys (BYOK), by provider name, already opened.
    pub byok: Vec<(String, Secret)>,
    /// Routing hints from the request's `switchyard` extension field.
    pub hints: Hints,
    /// Log prompt and completion text up to this many bytes (the project opted in).
    pub content_cap: Option<usize>,
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
    /// Set aside by the admission stage; settled with what the request used.
    reservation: Option<(Arc<dyn Admission>, Reservation)>,
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
        // Failed attempts that reported usage add their cost (the answering
        // attempt's own cost is already on the record; unknown stays unknown).
        let failed: Option<f64> =
            self.rec.attempts.iter().filter_map(|a| a.cost_usd).reduce(|a, b| a + b);
        if let Some(extra) = failed {
            self.rec.cost_usd = match (self.rec.served_provider.is_some(), self.rec.cost_usd) {
                (true, Some(c)) => Some(c + extra),
                (true, None) => None,
                (false, _) => Some(extra),
            };
        }
        self.rec.total_ms = self.started.elapsed().as_millis() as u64;
        if let Some((admission, reservation)) = self.reservation.take() {
            // Settling may do IO; off the request's path. (A guard dropped outside
            // a runtime has nowhere to run it: the reservation then expires.)
            let (usage, cost) = (self.rec.usage, self.rec.cost_usd);
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move { admission.settle(reservation, usage, cost).await });
            }
        }
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
    Whole(Whole),
    Stream(Committed),
}

/// A complete answer: translated, or the upstream's own body forwarded as it is
/// (same-format fast path) with only its usage read.
enum Whole {
    /// Parsed; `raw` is the upstream's body when it is forwarded as it is.
    Parsed { response: Response, raw: Option<Bytes> },
    /// Forwarded as it is; only its usage (complete) was read.
    Forwarded { body: Bytes, usage: Usage },
}

/// A stream past its commit point: the held events (and raw bytes) up to and
/// including the first content event, and the rest still to read.
struct Committed {
    source: Source,
    held_raw: Vec<u8>,
    /// `held_raw` as events (kept with it).
    held_sse: Vec<SseEvent>,
    held: Vec<StreamEvent>,
    ended: bool,
    /// The credential the attempt used, to scrub from a failure after the commit
    /// point (the provider's platform keys are on the candidate).
    key: Option<Secret>,
    /// The credential's breaker permit, reported when the stream ends.
    permit: Option<Permit>,
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
    rec.cost_usd = cost(&usage, cand.pricing.as_ref()).map(|c| c * cand.provider.markup);
    rec.usage = usage;
}

/// Rank failures so the client gets the most informative one.
fn rank(f: &Failure) -> u8 {
    match f {
        Failure::Status { status, .. } if *status != 429 && *status < 500 => 6,
        Failure::Status { .. } => 5,
        Failure::UpstreamError { .. } => 4,
        Failure::Transport { .. } | Failure::BrokenStream(_) | Failure::Malformed(_) => 3,
        Failure::Unavailable(_) | Failure::CircuitOpen(_) => 2,
        Failure::Unsupported(_) => 1,
    }
}

/// The route-match descriptor: the plan's segments, then `failover:a->b` when more
/// than one provider was tried.
fn descriptor(plan: &Plan, tried: &[String]) -> String {
    let mut out = plan.descriptor.join(" ");
    if tried.len() > 1 {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("failover:");
        out.push_str(&tried.join("->"));
    }
    out
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
        Failure::CircuitOpen(m) => {
            GatewayError::new(503, ErrorKind::Overloaded, "circuit_open", m.clone())
        }
        Failure::Unavailable(m) => {
            GatewayError::new(503, ErrorKind::Overloaded, "provider_unavailable", m.clone())
        }
        Failure::Unsupported(m) => GatewayError::invalid("unsupported_request", m.clone()),
    }
}

/// What the next step is after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Next {
    Retry(Duration),
    Failover,
    Terminal,
}

/// Classify a failure under the route's policy. `retries` is how many retries this
/// deployment has had; `remaining` the request's time left.
fn next_step(f: &Failure, policy: &AttemptPolicy, retries: u32, remaining: Duration) -> Next {
    match f {
        Failure::Status { status, retry_after, .. } => {
            if policy.is_retryable(*status) && retries < policy.max_retries {
                let backoff = policy.backoff.saturating_mul(1u32 << retries.min(16));
                let wait = retry_after.unwrap_or_default().max(backoff);
                if wait <= policy.max_wait && wait < remaining {
                    return Next::Retry(wait);
                }
            }
            if policy.fails_over(*status) { Next::Failover } else { Next::Terminal }
        }
        Failure::Transport { .. } => {
            if policy.failover_transport {
                Next::Failover
            } else {
                Next::Terminal
            }
        }
        Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. }
        | Failure::Unavailable(_)
        | Failure::Unsupported(_)
        | Failure::CircuitOpen(_) => Next::Failover,
    }
}

/// What a failure tells the breaker of the credential used.
fn health_outcome(f: &Failure) -> Option<Outcome> {
    match f {
        Failure::Status { status: 429, retry_after, .. } => {
            Some(Outcome::Throttled { retry_after: *retry_after })
        }
        Failure::Status { status: 401 | 403, .. } => Some(Outcome::AuthFailure),
        Failure::Status { status, retry_after, .. }
            if *status >= 500 || *status == 404 || *status == 408 =>
        {
            Some(Outcome::Failure { retry_after: *retry_after })
        }
        Failure::Status { .. } => Some(Outcome::Success),
        Failure::Transport { .. }
        | Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. } => Some(Outcome::Failure { retry_after: None }),
        Failure::Unavailable(_) | Failure::Unsupported(_) | Failure::CircuitOpen(_) => None,
    }
}

fn health_outcome_of<T>(r: &Result<T, Failure>) -> Option<Outcome> {
    match r {
        Ok(_) => Some(Outcome::Success),
        Err(f) => health_outcome(f),
    }
}

/// The keys a request may use on a candidate: the caller's own key for that
/// provider (BYOK) if they stored one, else the provider's platform keys.
fn credentials<'a>(cand: &'a Candidate, inbound: &'a Inbound) -> &'a [Secret] {
    match inbound.byok.iter().find(|(p, _)| *p == cand.provider.name) {
        Some((_, k)) => std::slice::from_ref(k),
        None => &cand.provider.keys,
    }
}

/// The breaker key of a provider's credential.
pub fn credential_key(provider: &str, key: Option<&Secret>) -> CredentialKey {
    CredentialKey {
        provider: provider.to_owned(),
        credential: key
            .map_or_else(|| crate::breaker::NO_CREDENTIAL.to_owned(), Secret::fingerprint),
    }
}

impl Snapshot {
    /// Run the whole pipeline for a parsed request: resolve, filter, order, attempt.
    pub async fn execute(
        self: &Arc<Self>,
        mut inbound: Inbound,
        runtime: &Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<Success, GatewayError> {
        // Signed thinking a Chat client could not carry back, put back in front of
        // the tool calls it preceded (a Claude upstream refuses the loop without).
        if continuity::needs_store(inbound.format)
            && !continuity::wanted(&inbound.request).is_empty()
        {
            let request = Arc::make_mut(&mut inbound.request);
            continuity::restore_from(runtime.continuity.as_ref(), request).await;
        }
        let mut guard = RecordGuard {
            rec: RequestRecord {
                id: inbound.id.clone(),
                time_ms: inbound.time_ms,
                key_prefix: inbound.principal.key_prefix.clone(),
                user: inbound.principal.user_id.clone(),
                project: inbound.project.clone(),
                client_format: inbound.format.as_str().into(),
                requested_model: inbound.request.model.clone(),
                stream: inbound.request.stream,
                ..RequestRecord::default()
            },
            sink,
            started: inbound.received,
            done: false,
            reservation: None,
        };
        let plan = match self.prepare(&inbound, runtime, &mut guard.rec) {
            Ok(p) => p,
            Err(err) => {
                metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
                guard.finish(err.status(), Some(err.code()));
                return Err(err);
            }
        };
        // Gemini needs each call's signature back; clients have no field for it.
        if plan.candidates.iter().any(|c| c.provider.wire() == Some(Wire::Gemini))
            && continuity::lacks_signatures(&inbound.request)
        {
            let request = Arc::make_mut(&mut inbound.request);
            continuity::restore_signatures(runtime.continuity.as_ref(), request).await;
        }
        if let Some(admission) = &runtime.admission {
            match admit(admission.as_ref(), &inbound, &plan).await {
                Ok(reservation) => guard.reservation = Some((Arc::clone(admission), reservation)),
                Err(err) => {
                    metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
                    guard.finish(err.status(), Some(err.code()));
                    return Err(err);
                }
            }
        }
        self.attempt_loop(inbound, plan, runtime, guard).await
    }

    /// Resolve → capability, hint and context-window filters → circuit filter and
    /// strategy order. Nothing has been sent upstream yet.
    fn prepare(
        &self,
        inbound: &Inbound,
        runtime: &Runtime,
        rec: &mut RequestRecord,
    ) -> Result<Plan, GatewayError> {
        let scope = Scope {
            project: inbound.project.as_deref(),
            project_name: inbound.project_name.as_deref(),
        };
        let mut plan = self.catalog.plan(&inbound.request.model, Date::today(), &scope)?;
        rec.resolved_model = Some(plan.public_model.clone());
        rec.route_id.clone_from(&plan.route_id);
        rec.provider = plan.candidates.first().map(|c| c.provider.name.clone());
        self.authorize(&mut plan, inbound, runtime)?;
        filter::by_governance(&mut plan)?;
        filter::by_capability(&mut plan, &inbound.request)?;
        filter::by_hints(&mut plan, &inbound.hints, &inbound.request)?;
        filter::by_context_window(&mut plan, &self.catalog, &inbound.request)?;
        // Anthropic refuses thinking in a tool loop whose continued turn has none of
        // its own (it came from another family): such requests go without it there.
        if plan.candidates.iter().any(|c| c.provider.wire() == Some(Wire::Anthropic))
            && switchyard_protocol::anthropic::continues_without_thinking(&inbound.request)
        {
            plan.descriptor.push("thinking_off:anthropic_tool_loop".to_owned());
        }

        let now = UnixMs::now();
        let available = |c: &Candidate| {
            let keys = credentials(c, inbound);
            keys.is_empty()
                && runtime.health.is_available(&credential_key(&c.provider.name, None), now)
                || keys.iter().any(|k| {
                    runtime.health.is_available(&credential_key(&c.provider.name, Some(k)), now)
                })
        };
        filter::by_circuit(&mut plan, available);
        let strategy = if plan.bypass_breakers { Strategy::Ordered } else { plan.strategy };
        // Each strategy reads only its own figures; ordered reads none.
        let (costs, latencies, busy) = match strategy {
            Strategy::Ordered | Strategy::Weighted => (false, false, false),
            Strategy::LeastBusy => (false, false, true),
            Strategy::Cost => (true, false, false),
            Strategy::Latency => (false, true, false),
            Strategy::Balanced => (true, true, false),
        };
        let input_estimate = if costs { estimate::input_tokens(&inbound.request) } else { 0 };
        let views: Vec<View> = plan
            .candidates
            .iter()
            .map(|c| {
                let identity = if latencies || busy { c.identity() } else { String::new() };
                View {
                    available: strategy == Strategy::Weighted && available(c),
                    weight: c.weight,
                    in_flight: if busy { runtime.in_flight.count(&identity) } else { 0 },
                    price: if costs {
                        filter::estimated_price(c, input_estimate, &inbound.request)
                    } else {
                        None
                    },
                    latency_ms: if latencies { runtime.latency.estimate(&identity) } else { None },
                }
            })
            .collect();
        let order = strategy::order(strategy, &views, strategy::uniform());
        // Reorder by moving the candidates, not cloning them (chain order: nothing to do).
        if order.iter().enumerate().any(|(pos, &i)| pos != i) {
            let mut slots: Vec<Option<Candidate>> =
                std::mem::take(&mut plan.candidates).into_iter().map(Some).collect();
            plan.candidates =
                order.iter().filter_map(|&i| slots.get_mut(i).and_then(Option::take)).collect();
        }
        if plan.strategy != Strategy::Ordered {
            plan.descriptor.push(format!("strategy:{}", plan.strategy.as_str()));
            if let (Some(first), Some(route)) = (plan.candidates.first(), plan.route_id.as_deref())
            {
                metrics::counter!("gateway_deployment_selected_total", "route" => route.to_owned(), "provider" => first.provider.name.clone(), "strategy" => plan.strategy.as_str()).increment(1);
            }
        }
        rec.provider =
            plan.candidates.first().map(|c| c.provider.name.clone()).or(rec.provider.take());
        Ok(plan)
    }

    /// Access rules: refuse the request (403) when the caller may not use the model
    /// or route; drop fallback deployments serving a model the caller may not use,
    /// so an allowed primary never fails over to a denied fallback.
    fn authorize(
        &self,
        plan: &mut Plan,
        inbound: &Inbound,
        runtime: &Runtime,
    ) -> Result<(), GatewayError> {
        let stored = runtime.rules.load();
        // Configured rules, then stored ones (no copies: both are iterated per check).
        let rules = || self.catalog.rules.iter().chain(stored.iter());
        let who = &inbound.principal;
        if let Err(denial) =
            access::decide(rules(), who, &plan.public_model, plan.route_id.as_deref())
        {
            return Err(GatewayError::new(
                403,
                ErrorKind::Permission,
                "authz_denied",
                denial.to_string(),
            ));
        }
        let public = plan.public_model.clone();
        let route = plan.route_id.clone();
        let mut skipped = Vec::new();
        plan.candidates.retain(|c| match c.model.as_ref().map(|m| m.id.as_str()) {
            Some(id) if id != public => {
                let ok = access::decide(rules(), who, id, route.as_deref()).is_ok();
                if !ok {
                    skipped.push(format!("authz_skip:{id}"));
                }
                ok
            }
            _ => true,
        });
        plan.descriptor.extend(skipped);
        Ok(())
    }

    async fn attempt_loop(
        self: &Arc<Self>,
        inbound: Inbound,
        mut plan: Plan,
        runtime: &Arc<Runtime>,
        mut guard: RecordGuard,
    ) -> Result<Success, GatewayError> {
        let deadline = inbound.received + self.catalog.settings.request_timeout;
        let policy = &plan.policy;
        let mut failures: Vec<(usize, Failure)> = Vec::new();
        let mut sent = 0usize;
        let mut tried: Vec<String> = Vec::new();
        'candidates: for (i, cand) in plan.candidates.iter().enumerate() {
            let mut retries = 0u32;
            loop {
                if sent >= policy.max_attempts || Instant::now() >= deadline {
                    break 'candidates;
                }
                let started = Instant::now();
                let kind = if retries > 0 {
                    "retry"
                } else if i == 0 {
                    "primary"
                } else {
                    "failover"
                };
                let (result, credential, reported) =
                    self.attempt(&inbound, cand, runtime, deadline, plan.bypass_breakers).await;
                // A failed attempt that reported usage is metered too.
                let failed_usage = (result.is_err() && !reported.is_empty()).then_some(reported);
                let failed_cost = failed_usage
                    .and_then(|u| cost(&u, cand.pricing.as_ref()))
                    .map(|c| c * cand.provider.markup);
                let sent_upstream = !matches!(
                    &result,
                    Err(Failure::Unavailable(_)
                        | Failure::Unsupported(_)
                        | Failure::CircuitOpen(_))
                );
                sent += usize::from(sent_upstream);
                let elapsed = started.elapsed();
                guard.rec.attempts.push(AttemptRecord {
                    deployment: cand.label(),
                    credential,
                    outcome: match &result {
                        Ok(_) => "ok".to_owned(),
                        Err(f) => f.outcome(),
                    },
                    latency_ms: elapsed.as_millis() as u64,
                    kind: kind.into(),
                    usage: failed_usage,
                    cost_usd: failed_cost,
                });
                self.provider_meters(&cand.provider.name, |m| {
                    m.attempt_seconds.record(elapsed.as_secs_f64());
                });
                if let Err(Failure::Unavailable(_)) = &result {
                    // No caller key and no platform key for this deployment: skipped.
                    plan.descriptor.push(format!("no_credential:{}", cand.provider.name));
                }
                if sent_upstream && tried.last() != Some(&cand.provider.name) {
                    tried.push(cand.provider.name.clone());
                }
                match result {
                    Ok((answer, guard_in_flight)) => {
                        if matches!(answer, Answer::Whole(_)) {
                            // A stream's latency counts when it ends well (the pump).
                            runtime
                                .latency
                                .observe_attempt(&cand.identity(), elapsed.as_secs_f64() * 1000.0);
                        }
                        return Ok(self
                            .deliver(
                                &inbound,
                                &plan,
                                i,
                                &tried,
                                answer,
                                guard_in_flight,
                                runtime,
                                guard,
                                elapsed,
                            )
                            .await);
                    }
                    Err(f) => {
                        tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "attempt failed");
                        let remaining = deadline.saturating_duration_since(Instant::now());
                        match next_step(&f, policy, retries, remaining) {
                            Next::Retry(wait) => {
                                retries += 1;
                                // Dropping the request future (client gone) cancels this wait.
                                tokio::time::sleep(wait).await;
                            }
                            Next::Terminal => {
                                let err = failure_error(&f, &cand.provider.name);
                                metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
                                guard.finish(err.status(), Some(err.code()));
                                return Err(err);
                            }
                            Next::Failover => {
                                if let Some(next) = plan.candidates.get(i + 1) {
                                    let reason = match &f {
                                        Failure::Status { status, .. } => {
                                            format!("status_{status}")
                                        }
                                        Failure::CircuitOpen(_) => "circuit_open".to_owned(),
                                        _ => "transport".to_owned(),
                                    };
                                    metrics::counter!("gateway_upstream_failovers_total", "from" => cand.provider.name.clone(), "to" => next.provider.name.clone(), "reason" => reason).increment(1);
                                }
                                failures.push((i, f));
                                continue 'candidates;
                            }
                        }
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
                "request deadline or attempt budget exhausted",
            ),
        };
        tracing::warn!(request_id = %inbound.id, code = err.code(), attempts = guard.rec.attempts.len(), "all candidates failed");
        guard.rec.descriptor = descriptor(&plan, &tried);
        metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
        guard.finish(err.status(), Some(err.code()));
        Err(err)
    }

    /// One attempt on one candidate: pick a healthy credential, pass its breaker,
    /// call, and report the outcome to the breaker.
    async fn attempt(
        &self,
        inbound: &Inbound,
        cand: &Candidate,
        runtime: &Arc<Runtime>,
        deadline: Instant,
        bypass_breakers: bool,
    ) -> (Result<(Answer, InFlightGuard), Failure>, Option<String>, Usage) {
        let mut reported = Usage::default();
        let keys = credentials(cand, inbound);
        if let Some(why) = &cand.provider.unavailable
            && !cand.provider.reachable_with(&inbound.byok)
        {
            return (Err(Failure::Unavailable(why.clone())), None, reported);
        }
        let now = UnixMs::now();
        let (key, permit) = if bypass_breakers {
            let rt = self.runtimes.get(&cand.provider.name);
            let key = rt.and_then(|rt| keys.get(rt.next_index(keys.len())));
            (key, None)
        } else {
            match self.pick_credential(cand, keys, runtime, now) {
                Ok((k, p)) => (k, Some(p)),
                Err(f) => return (Err(f), None, reported),
            }
        };
        let credential = key.map(Secret::fingerprint);
        let in_flight = runtime.in_flight.enter(&cand.identity());
        let result = match (&cand.provider.kind, self.runtimes.get(&cand.provider.name)) {
            (ProviderKind::Mock { latency }, _) => {
                if !inbound.request.stream && !latency.is_zero() {
                    tokio::time::sleep(*latency).await;
                }
                Ok(self.attempt_mock(inbound, cand, *latency))
            }
            (ProviderKind::Wire(wire), Some(_)) => {
                self.attempt_http(inbound, cand, *wire, key, deadline, &mut reported).await
            }
            (ProviderKind::Wire(_), None) => {
                Err(Failure::Unavailable(format!("provider {} has no client", cand.provider.name)))
            }
        };
        let redactor = Redactor { platform: &cand.provider.keys, used: key };
        let result = match result {
            Ok(Answer::Stream(mut committed)) => {
                // A stream's outcome is known when it ends, not at its commit
                // point: the pump reports it with this permit, and scrubs whatever
                // the stream says later with the same credentials.
                committed.permit = permit;
                committed.key = key.cloned();
                Ok(Answer::Stream(committed))
            }
            other => {
                if let Some(permit) = permit {
                    match health_outcome_of(&other) {
                        Some(outcome) => runtime.health.report(permit, outcome, UnixMs::now()),
                        None => runtime.health.abandon(permit),
                    }
                }
                other.map_err(|f| f.redacted(&redactor))
            }
        };
        (result.map(|a| (a, in_flight)), credential, reported)
    }

    /// Record into `provider`'s histograms (kept by its runtime; the mock
    /// provider has none and registers them per call).
    fn provider_meters(&self, provider: &str, f: impl FnOnce(&upstream::ProviderMeters)) {
        match self.runtimes.get(provider) {
            Some(rt) => f(rt.meters(provider)),
            None => f(&upstream::ProviderMeters::new(provider)),
        }
    }

    /// Choose the credential: the next available key of the provider (rotating),
    /// admitted by its breaker.
    fn pick_credential<'a>(
        &self,
        cand: &Candidate,
        keys: &'a [Secret],
        runtime: &Runtime,
        now: UnixMs,
    ) -> Result<(Option<&'a Secret>, Permit), Failure> {
        let name = &cand.provider.name;
        if keys.is_empty() {
            return match runtime.health.clear(&credential_key(name, None), now) {
                Clearance::Allowed(p) => Ok((None, p)),
                Clearance::Rejected { state } => {
                    Err(Failure::CircuitOpen(format!("{name}: circuit {}", state.name())))
                }
            };
        }
        let start = self.runtimes.get(name).map_or(0, |rt| rt.next_index(keys.len()));
        let mut last_state = None;
        for n in 0..keys.len() {
            let Some(k) = keys.get((start + n) % keys.len()) else { continue };
            match runtime.health.clear(&credential_key(name, Some(k)), now) {
                Clearance::Allowed(p) => return Ok((Some(k), p)),
                Clearance::Rejected { state } => last_state = Some(state),
            }
        }
        let state = last_state.map_or("open", |s| s.name());
        Err(Failure::CircuitOpen(format!(
            "{name}: every credential is unavailable (circuit {state})"
        )))
    }

    fn attempt_mock(&self, inbound: &Inbound, cand: &Candidate, latency: Duration) -> Answer {
        let resp = mock::answer(&inbound.request, &cand.upstream_model, &inbound.id);
        if inbound.request.stream {
            let source = Source::Events { rx: mock::stream(resp, latency), done: false };
            Answer::Stream(Committed {
                source,
                held_raw: Vec::new(),
                held_sse: Vec::new(),
                held: Vec::new(),
                ended: false,
                key: None,
                permit: None,
            })
        } else {
            Answer::Whole(Whole::Parsed { response: resp, raw: None })
        }
    }

    async fn attempt_http(
        &self,
        inbound: &Inbound,
        cand: &Candidate,
        wire: Wire,
        key: Option<&crate::util::Secret>,
        deadline: Instant,
        reported: &mut Usage,
    ) -> Result<Answer, Failure> {
        let Some(rt) = self.runtimes.get(&cand.provider.name) else {
            return Err(Failure::Unavailable(format!(
                "provider {} has no client",
                cand.provider.name
            )));
        };
        let settings = &self.catalog.settings;
        let out = Outgoing {
            format: inbound.format,
            request: &inbound.request,
            raw: inbound.raw.as_ref(),
            forward_headers: &inbound.forward_headers,
        };
        let fast = upstream::is_fast_path(inbound.format, wire, inbound.raw.as_ref());
        let cap = cand.model.as_ref().and_then(|m| m.max_output_tokens);
        let traits = cand.traits(wire);
        let body =
            upstream::build_body(&out, wire, &cand.provider, &cand.upstream_model, cap, traits)
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
            let redactor = Redactor { platform: &cand.provider.keys, used: key };
            return Err(upstream::read_failure(resp, wire, &redactor).await);
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
            // Forwarded as it is: read only the usage, unless the text is wanted
            // (content logging) or must stand in for missing token counts.
            if fast && inbound.content_cap.is_none() {
                let usage = wire.parse_usage(&bytes).map_err(Failure::from_protocol)?;
                if let Some(usage) =
                    usage.filter(|u| u.input_tokens.is_some() && u.output_tokens.is_some())
                {
                    return Ok(Answer::Whole(Whole::Forwarded { body: bytes, usage }));
                }
            }
            let response = wire.parse_response(&bytes).map_err(Failure::from_protocol)?;
            return Ok(Answer::Whole(Whole::Parsed { response, raw: fast.then_some(bytes) }));
        }
        let source = Source::http(resp, wire);
        let committed =
            commit(source, settings.idle_timeout.min(remaining), fast, reported).await?;
        Ok(Answer::Stream(committed))
    }

    #[allow(clippy::too_many_arguments)]
    async fn deliver(
        self: &Arc<Self>,
        inbound: &Inbound,
        plan: &Plan,
        index: usize,
        tried: &[String],
        answer: Answer,
        in_flight: InFlightGuard,
        runtime: &Arc<Runtime>,
        mut guard: RecordGuard,
        attempt_time: Duration,
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
        let descriptor = descriptor(plan, tried);
        // The answer names the model as the client asked for it: agents compare it
        // with their request (Claude Code drops a turn's thinking from the next
        // request when it names another model). The served one is in the headers.
        let client_model = inbound.request.model.as_str();
        let renamed = cand.upstream_model != client_model;
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
        };
        guard.rec.served_provider = Some(served.provider.clone());
        guard.rec.upstream_model = Some(served.upstream_model.clone());
        guard.rec.descriptor.clone_from(&descriptor);
        let ttft = inbound.received.elapsed();
        guard.rec.ttft_ms = Some(ttft.as_millis() as u64);
        self.provider_meters(&served.provider, |m| m.ttft_seconds.record(ttft.as_secs_f64()));
        match answer {
            Answer::Whole(Whole::Forwarded { body, usage }) => {
                let body = if renamed { rename(body, client_model) } else { body };
                meter(&mut guard.rec, usage, &inbound.request, 0, cand);
                drop(in_flight);
                record_metrics(&guard.rec);
                guard.finish(200, None);
                Success { served, descriptor, delivery: Delivery::Whole(body) }
            }
            Answer::Whole(Whole::Parsed { mut response, raw }) => {
                client_model.clone_into(&mut response.model);
                let mut keep = continuity::signatures_to_keep(&response.content);
                if continuity::needs_store(inbound.format) {
                    keep.extend(continuity::thinking_to_keep(&response.content));
                }
                for (key, value) in keep {
                    runtime.continuity.put(key, value, continuity::TTL).await;
                }
                let body = match raw {
                    Some(raw) if renamed => rename(raw, client_model),
                    Some(raw) => raw,
                    None => Bytes::from(
                        inbound
                            .format
                            .encode_response(
                                &response,
                                &inbound.request.tools,
                                runtime.seal.as_deref(),
                            )
                            .to_string(),
                    ),
                };
                meter(
                    &mut guard.rec,
                    response.usage,
                    &inbound.request,
                    text_bytes(&response.content),
                    cand,
                );
                if let Some(cap) = inbound.content_cap {
                    let text: String = response
                        .content
                        .iter()
                        .filter_map(|p| {
                            if let Part::Text(t) = p { Some(t.text.as_str()) } else { None }
                        })
                        .collect();
                    guard.rec.content =
                        Some(crate::record::content_json(&inbound.request, &text, cap));
                }
                drop(in_flight);
                record_metrics(&guard.rec);
                guard.finish(200, None);
                Success { served, descriptor, delivery: Delivery::Whole(body) }
            }
            Answer::Stream(mut committed) => {
                let report = StreamReport {
                    runtime: Arc::clone(runtime),
                    permit: committed.permit.take(),
                    identity: cand.identity(),
                    attempt_ms: attempt_time.as_secs_f64() * 1000.0,
                    ttft_ms: ttft.as_secs_f64() * 1000.0,
                };
                let (tx, rx) = mpsc::channel(STREAM_CHANNEL);
                let wire = cand.provider.wire().unwrap_or(Wire::Gemini);
                let passthrough =
                    upstream::is_fast_path(inbound.format, wire, inbound.raw.as_ref())
                        && matches!(committed.source, Source::Http { .. });
                let mut pump = Pump {
                    encoder: inbound.format.stream_encoder(&inbound.request, runtime.seal.clone()),
                    passthrough,
                    idle: self.catalog.settings.idle_timeout,
                    tx,
                    guard,
                    request: Arc::clone(&inbound.request),
                    candidate: cand.clone(),
                    usage: Usage::default(),
                    out_bytes: 0,
                    content_cap: inbound.content_cap,
                    captured: String::new(),
                    key: None,
                    client_model: client_model.to_owned(),
                    rename: renamed,
                    continuity: (!passthrough).then(|| {
                        continuity::StreamContinuity::new(continuity::needs_store(inbound.format))
                    }),
                    strip_usage: passthrough
                        && wire == Wire::OpenAiChat
                        && !inbound.request.stream_usage,
                    report,
                    _in_flight: in_flight,
                    deadline: inbound.received + self.catalog.settings.request_timeout,
                };
                let Committed { source, held_raw, held_sse, held, ended, key, .. } = committed;
                pump.key = key;
                let mut first = pump.start(held_raw, &held_sse, &held);
                if !ended && !first.is_empty() {
                    // A new channel has room: this cannot fail for lack of space.
                    match pump.tx.try_send(Bytes::from(std::mem::take(&mut first))) {
                        Ok(()) => {}
                        Err(
                            mpsc::error::TrySendError::Full(b)
                            | mpsc::error::TrySendError::Closed(b),
                        ) => {
                            first = b.into();
                        }
                    }
                }
                tokio::spawn(pump.run(source, first, ended));
                Success { served, descriptor, delivery: Delivery::Stream(rx) }
            }
        }
    }
}

/// The admission stage: reserve what the request is expected to use against the
/// caller's limits and budgets, or refuse it before anything is sent.
async fn admit(
    admission: &dyn Admission,
    inbound: &Inbound,
    plan: &Plan,
) -> Result<Reservation, GatewayError> {
    let req = &inbound.request;
    let input = estimate::input_tokens(req);
    let tokens = input.saturating_add(req.max_tokens.unwrap_or(0));
    let cost_usd = plan.candidates.first().and_then(|c| filter::estimated_price(c, input, req));
    let ask = Ask {
        key_id: inbound.principal.key_id.as_deref(),
        user: inbound.principal.user_id.as_deref(),
        project: inbound.project.as_deref(),
        model: &plan.public_model,
        tokens,
        cost_usd,
    };
    admission.reserve(&ask).await.map_err(|refusal| {
        let mut message = refusal.message;
        if let Some(ms) = refusal.retry_after_ms {
            message.push_str(&format!(" (retry after {} s)", ms.div_ceil(1000)));
        }
        GatewayError::new(429, ErrorKind::RateLimit, refusal.code, message)
    })
}

/// A forwarded body naming the client's model; as it was if it names none.
fn rename(body: Bytes, model: &str) -> Bytes {
    util::rename_model(&body, model).map_or(body, Bytes::from)
}

/// The handles a successful request records into, per client format. Registered
/// on first use and kept for the process, as the recorder is.
struct FormatMeters {
    ok: metrics::Counter,
    stream_error: metrics::Counter,
    duration: metrics::Histogram,
}

impl FormatMeters {
    fn new(format: Cow<'static, str>) -> Self {
        Self {
            ok: metrics::counter!("gateway_requests_total", "format" => format.clone(), "status" => "200"),
            stream_error: metrics::counter!("gateway_requests_total", "format" => format.clone(), "status" => "stream_error"),
            duration: metrics::histogram!("gateway_request_duration_seconds", "format" => format),
        }
    }

    fn get(format: &str) -> Option<&'static FormatMeters> {
        static METERS: [OnceLock<FormatMeters>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let formats =
            [ClientFormat::OpenAiChat, ClientFormat::OpenAiResponses, ClientFormat::Anthropic];
        let i = formats.iter().position(|f| f.as_str() == format)?;
        let (cell, known) = (METERS.get(i)?, formats.get(i)?.as_str());
        Some(cell.get_or_init(|| FormatMeters::new(Cow::Borrowed(known))))
    }
}

/// Request-level metrics for a request that was answered (status 200), once per
/// request, low-cardinality labels only. An error code on it means its stream
/// failed after the commit point. (Called before the record's status is set.)
fn record_metrics(rec: &RequestRecord) {
    let stream_error = rec.error_code.is_some();
    let secs = rec.total_ms as f64 / 1000.0;
    let unlisted;
    let m = match FormatMeters::get(&rec.client_format) {
        Some(m) => m,
        None => {
            unlisted = FormatMeters::new(rec.client_format.clone());
            &unlisted
        }
    };
    if stream_error { &m.stream_error } else { &m.ok }.increment(1);
    m.duration.record(secs);
}

/// Read the stream until its first content event (or its end), holding everything
/// before it. Any failure here is still invisible to the client.
/// `reported` collects the usage the upstream reported while held, so a stream that
/// fails before its commit point is still metered.
async fn commit(
    mut source: Source,
    idle: Duration,
    keep_raw: bool,
    reported: &mut Usage,
) -> Result<Committed, Failure> {
    let mut held_raw = Vec::new();
    let mut held_sse = Vec::new();
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
            return Ok(Committed {
                source,
                held_raw,
                held_sse,
                held,
                ended: true,
                key: None,
                permit: None,
            });
        };
        if keep_raw {
            held_raw.extend_from_slice(&batch.raw);
            held_sse.extend(batch.sse);
        }
        let content = batch.events.iter().any(StreamEvent::is_content);
        for ev in &batch.events {
            if let StreamEvent::Usage { usage } = ev {
                reported.merge(usage);
            }
        }
        held.extend(batch.events);
        if content || batch.end {
            return Ok(Committed {
                source,
                held_raw,
                held_sse,
                held,
                ended: batch.end,
                key: None,
                permit: None,
            });
        }
    }
}

async fn send(tx: &mpsc::Sender<Bytes>, bytes: Vec<u8>) -> bool {
    bytes.is_empty() || tx.send(Bytes::from(bytes)).await.is_ok()
}

/// A streamed attempt's report to the runtime, made when the stream ends: the
/// breaker hears its outcome then (a stream that breaks after its first content
/// is a failure, not the success its start looked like), and only a stream that
/// ended well feeds the latency statistics. Dropped unreported (the client went
/// away), it gives the permit back with no outcome.
struct StreamReport {
    runtime: Arc<Runtime>,
    permit: Option<Permit>,
    identity: String,
    attempt_ms: f64,
    ttft_ms: f64,
}

impl StreamReport {
    fn finish(&mut self, outcome: Option<Outcome>) {
        if outcome == Some(Outcome::Success) {
            self.runtime.latency.observe_attempt(&self.identity, self.attempt_ms);
            self.runtime.latency.observe_ttft(&self.identity, self.ttft_ms);
        }
        if let Some(permit) = self.permit.take() {
            match outcome {
                Some(outcome) => self.runtime.health.report(permit, outcome, UnixMs::now()),
                None => self.runtime.health.abandon(permit),
            }
        }
    }
}

impl Drop for StreamReport {
    fn drop(&mut self) {
        if let Some(permit) = self.permit.take() {
            self.runtime.health.abandon(permit);
        }
    }
}

/// Moves a committed stream to the client: translate (or pass through), observe
/// usage, end cleanly or with an in-format error, then write the record.
struct Pump {
    encoder: Box<dyn StreamEncoder>,
    passthrough: bool,
    idle: Duration,
    tx: mpsc::Sender<Bytes>,
    guard: RecordGuard,
    request: Arc<Request>,
    candidate: Candidate,
    usage: Usage,
    out_bytes: usize,
    /// When the project logs content: the cap, and the response text so far.
    content_cap: Option<usize>,
    captured: String,
    /// The credential the attempt used (scrubbed from a failure's text).
    key: Option<Secret>,
    /// The model as the client named it, which the stream names too.
    client_model: String,
    /// Passed through, the upstream's events name another model: rename it.
    rename: bool,
    /// What the upstream needs back next turn that the client cannot carry:
    /// call signatures, signed thinking (see [`continuity`]).
    continuity: Option<continuity::StreamContinuity>,
    /// Passed through, an OpenAI stream carries the usage-only chunk the gateway
    /// asked for (to meter it) and the client did not: it is left out.
    strip_usage: bool,
    /// The attempt's health and latency, reported when the stream ends.
    report: StreamReport,
    /// Held for the stream's life: the deployment counts as busy until it ends.
    _in_flight: InFlightGuard,
    /// The whole request's deadline (timeouts.request_ms).
    deadline: Instant,
}

impl Pump {
    fn observe(&mut self, events: &[StreamEvent], out: &mut Vec<u8>) {
        for ev in events {
            if let Some(continuity) = &mut self.continuity {
                continuity.push(ev);
            }
            match ev {
                StreamEvent::Usage { usage } => self.usage.merge(usage),
                StreamEvent::Delta { delta, .. } => {
                    if let (Some(cap), switchyard_protocol::Delta::Text { text }) =
                        (self.content_cap, delta)
                        && self.captured.len() < cap
                    {
                        self.captured.push_str(text);
                    }
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
                match ev {
                    StreamEvent::Start { id, .. } => {
                        let start =
                            StreamEvent::Start { id: id.clone(), model: self.client_model.clone() };
                        self.encoder.push(&start, out);
                    }
                    ev => self.encoder.push(ev, out),
                }
            }
        }
    }

    /// The bytes for what was held up to the commit point. Sent before the
    /// response is returned, so the response head and the first content leave in
    /// one write instead of two.
    fn start(&mut self, held_raw: Vec<u8>, held_sse: &[SseEvent], held: &[StreamEvent]) -> Vec<u8> {
        let mut out = Vec::new();
        self.forward(held_raw, held_sse, &mut out);
        self.observe(held, &mut out);
        out
    }

    /// On the fast path, the upstream's own bytes, or its events with the model
    /// renamed when they name another one than the client asked for, and without
    /// a usage chunk it did not ask for. Event by event, as each completes: nothing
    /// is held back.
    fn forward(&self, raw: impl AsRef<[u8]> + Into<Vec<u8>>, sse: &[SseEvent], out: &mut Vec<u8>) {
        if !self.passthrough {
            return;
        }
        if !self.rename && !self.strip_usage {
            if out.is_empty() {
                *out = raw.into();
            } else {
                out.extend_from_slice(raw.as_ref());
            }
            return;
        }
        for ev in sse {
            if self.strip_usage && openai_chat::is_usage_only_chunk(ev.data.as_bytes()) {
                continue;
            }
            let renamed = if self.rename {
                util::rename_model(ev.data.as_bytes(), &self.client_model)
            } else {
                None
            };
            match renamed {
                Some(data) => {
                    let data = String::from_utf8_lossy(&data);
                    sse::write_event(out, ev.event.as_deref(), &data);
                }
                None => sse::write_event(out, ev.event.as_deref(), &ev.data),
            }
        }
    }

    async fn run(mut self, mut source: Source, mut out: Vec<u8>, mut ended: bool) {
        let mut error: Option<GatewayError> = None;
        // How the attempt ended after its commit point, when it did not end well:
        // the record's name for it and what the breaker hears (None: nothing,
        // the deployment was not at fault).
        let mut failed: Option<(String, Option<Outcome>)> = None;
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
                _ = tokio::time::sleep_until(self.deadline.into()) => {
                    error = Some(GatewayError::new(504, ErrorKind::Timeout, "deadline_exceeded", "the request deadline passed while streaming"));
                    failed = Some(("deadline_exceeded".to_owned(), None));
                    break;
                }
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
                    let outcome = Outcome::Failure { retry_after: None };
                    failed = Some(("transport_timeout".to_owned(), Some(outcome)));
                    break;
                }
                Ok(Err(f)) => {
                    let redactor = Redactor {
                        platform: &self.candidate.provider.keys,
                        used: self.key.as_ref(),
                    };
                    let f = f.redacted(&redactor);
                    error = Some(failure_error(&f, &self.candidate.provider.name));
                    failed = Some((f.outcome(), health_outcome(&f)));
                    break;
                }
                Ok(Ok(None)) => ended = true,
                Ok(Ok(Some(batch))) => {
                    self.forward(&batch.raw[..], &batch.sse, &mut out);
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
        if let Some(cap) = self.content_cap {
            self.guard.rec.content =
                Some(crate::record::content_json(&self.request, &self.captured, cap));
        }
        match (&error, delivered) {
            (Some(err), _) => {
                if let Some((outcome, health)) = failed {
                    if let Some(attempt) = self.guard.rec.attempts.last_mut() {
                        attempt.outcome = outcome;
                    }
                    self.report.finish(health);
                }
                self.guard.rec.error_code = Some(err.code().to_owned());
                record_metrics(&self.guard.rec);
                self.guard.finish(200, Some(err.code()));
            }
            (None, true) => {
                self.report.finish(Some(Outcome::Success));
                for (key, value) in self.continuity.take().map(|c| c.finish()).unwrap_or_default() {
                    self.report.runtime.continuity.put(key, value, continuity::TTL).await;
                }
                record_metrics(&self.guard.rec);
                self.guard.finish(200, None);
            }
            // Dropped: recorded as client_closed_request; the breaker hears nothing.
            (None, false) => {}
        }
    }
}

impl Snapshot {
    /// `POST /v1/messages/count_tokens`: forwarded to the first available Anthropic
    /// deployment of the model; otherwise estimated from the text. Answers in
    /// Anthropic's shape: `{"input_tokens": N}`.
    pub async fn count_tokens(&self, inbound: &Inbound) -> Result<Bytes, GatewayError> {
        let scope = Scope {
            project: inbound.project.as_deref(),
            project_name: inbound.project_name.as_deref(),
        };
        let plan = self.catalog.plan(&inbound.request.model, Date::today(), &scope)?;
        let anthropic = plan.candidates.iter().find(|c| {
            c.provider.wire() == Some(Wire::Anthropic) && c.provider.unavailable.is_none()
        });
        if let (Some(cand), Some(raw)) = (anthropic, inbound.raw.as_ref().and_then(RawBody::object))
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
