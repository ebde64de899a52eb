//! [`Limiter`]: the limits that apply to a request, taken from a [`Counters`]
//! backend all at once, with the backend's failure mode and lease renewal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchyard_protocol::{ErrorCode, Usage};

use super::counters::{Acquired, BackendError, Charge, Counters, Level, Meter};
use super::local::LocalCounters;
use super::{MINUTE_MS, Scoped};
use crate::continuity::BoxFuture;
use crate::state::{Admission, Ask, Refusal, Reservation};

/// What the limits do while the shared backend cannot be reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureMode {
    /// Refuse limited requests (503 `limits_unavailable`) until it is back:
    /// never more than the limits, at the price of availability.
    #[default]
    FailClosed,
    /// Count in this process against its share of each limit (the limit divided
    /// by `expected_instances`, at least 1): the instances together stay near
    /// the limit while each counts alone.
    LocalShare,
}

impl FailureMode {
    /// The configuration's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureMode::FailClosed => "fail_closed",
            FailureMode::LocalShare => "local_share",
        }
    }
}

/// How a [`Limiter`] behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimiterConfig {
    /// While the backend is unreachable.
    pub on_unavailable: FailureMode,
    /// Instances sharing the limits, for [`FailureMode::LocalShare`].
    pub expected_instances: u64,
    /// A concurrency lease lapses this long after its last renewal (a crashed
    /// instance's slots come back after it); live leases are renewed every third
    /// of it.
    pub lease_ttl: Duration,
    /// Count denials and backend errors in `metrics` series.
    pub metrics: bool,
}

impl Default for LimiterConfig {
    fn default() -> Self {
        Self {
            on_unavailable: FailureMode::default(),
            expected_instances: 1,
            lease_ttl: Duration::from_secs(60),
            metrics: true,
        }
    }
}

/// The most restrictive level of the caller's request and token limits after a
/// request was admitted: what the `x-ratelimit-*` headers say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateStatus {
    /// Requests per minute: the scope with the fewest left.
    pub requests: Option<Level>,
    /// Tokens per minute: the scope with the fewest left.
    pub tokens: Option<Level>,
}

/// What a [`Limiter`] took for one request, kept in its [`Reservation`] to be
/// reconciled and released when the request is over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    lease: String,
    /// Taken from the local share (the backend was down), not the backend.
    local: bool,
    /// Token charges, reconciled with the usage.
    tokens: Vec<Charge>,
    /// Counters holding a lease.
    leases: Vec<String>,
}

/// Limits counted on a [`Counters`] backend: the pipeline's admission for gateway
/// keys, users and projects, and for deployments' capacity.
#[derive(Debug, Clone)]
pub struct Limiter {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    backend: Arc<dyn Counters>,
    /// The local share while the backend is down.
    local: LocalCounters,
    config: LimiterConfig,
    /// In a failure episode (logged once when it starts and once when it ends).
    degraded: AtomicBool,
    /// Leases held by requests in flight, renewed by the ticker: lease → (taken
    /// locally, counters).
    live: Mutex<HashMap<String, (bool, Vec<String>)>>,
    ticking: AtomicBool,
}

/// The dimension a charge counts, for messages and headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dim {
    Requests,
    Tokens,
    Concurrent,
}

impl Limiter {
    /// Limits counted on `backend`.
    pub fn new(backend: Arc<dyn Counters>, config: LimiterConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend,
                local: LocalCounters::default(),
                config,
                degraded: AtomicBool::new(false),
                live: Mutex::default(),
                ticking: AtomicBool::new(false),
            }),
        }
    }

    /// Limits counted in this process.
    pub fn local() -> Self {
        Self::new(Arc::new(LocalCounters::default()), LimiterConfig::default())
    }

    /// The backend's name (`local`, `redis`).
    pub fn backend(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// Take `tokens` (and one request, and a lease where capped) from every scope
    /// of `scoped` at once, or refuse naming the limit that does not fit.
    pub async fn take(&self, scoped: &[Scoped], tokens: u64) -> Result<Reservation, Refusal> {
        let (charges, dims) = charges(scoped, tokens, self.inner.config.lease_ttl);
        if charges.is_empty() {
            return Ok(Reservation::new(0, tokens, None));
        }
        let lease = format!("{:016x}", crate::clock::unique());
        let (acquired, local) = match self.inner.backend.acquire(&lease, &charges).await {
            Ok(a) => {
                self.inner.recovered();
                (a, false)
            }
            Err(e) => match self.inner.failed(&e) {
                FailureMode::FailClosed => {
                    return Err(Refusal {
                        code: ErrorCode::LimitsUnavailable,
                        message: "the rate-limit store is unavailable".into(),
                        retry_after_ms: Some(1000),
                    });
                }
                FailureMode::LocalShare => {
                    let share = self.inner.config.expected_instances.max(1);
                    let shared: Vec<Charge> = charges.iter().map(|c| c.share(share)).collect();
                    (self.inner.local.acquire_now(&lease, &shared), true)
                }
            },
        };
        match acquired {
            Acquired::Granted(levels) => {
                let held = self.inner.hold(lease, local, &charges);
                let mut r = Reservation::new(0, tokens, None);
                r.status = Some(status(&levels, &dims));
                r.held = Some(held);
                if !r.held.as_ref().is_some_and(|h| h.leases.is_empty()) {
                    self.start_ticker();
                }
                Ok(r)
            }
            Acquired::Denied { index, retry_after_ms } => {
                let (scope, limit, dim) = describe(scoped, &charges, &dims, index);
                if self.inner.config.metrics {
                    let level = scope.split(':').next().unwrap_or("other").to_owned();
                    crate::telemetry::counter!("gateway_admission_denials_total", "level" => level, "limit" => dim.name()).increment(1);
                }
                let what = match dim {
                    Dim::Requests => format!("{limit} requests per minute"),
                    Dim::Tokens if retry_after_ms.is_none() => {
                        format!("{limit} tokens per minute, fewer than this request's {tokens}")
                    }
                    Dim::Tokens => format!("{limit} tokens per minute"),
                    Dim::Concurrent => format!("{limit} requests at once"),
                };
                Err(Refusal {
                    code: ErrorCode::RateLimited,
                    message: format!("rate limit of {scope} reached: {what}"),
                    retry_after_ms: match dim {
                        // A slot frees when a request ends: unknown, soon.
                        Dim::Concurrent => Some(1000),
                        _ => retry_after_ms,
                    },
                })
            }
        }
    }

    /// Reconcile what `reservation` took with what the request used (`used`:
    /// tokens reserved but unreported stay taken) and release its leases.
    pub async fn give_back(&self, reservation: Reservation, used: &Usage) {
        let Some(held) = reservation.held else { return };
        let inner = &self.inner;
        if !held.leases.is_empty() {
            let mut live = inner.live.lock().unwrap_or_else(|e| e.into_inner());
            live.remove(&held.lease);
        }
        let total = match (used.input_tokens, used.output_tokens) {
            (Some(i), Some(o)) => Some(i.saturating_add(o)),
            _ => None,
        };
        let counters: &dyn Counters =
            if held.local { &inner.local } else { inner.backend.as_ref() };
        let share = if held.local { inner.config.expected_instances.max(1) } else { 1 };
        let mut result = Ok(());
        if let Some(total) = total {
            for c in &held.tokens {
                let Meter::Rate { amount, .. } = c.meter else { continue };
                let delta = i64::try_from(total).unwrap_or(i64::MAX)
                    - i64::try_from(amount).unwrap_or(i64::MAX);
                if delta != 0 {
                    result = result.and(counters.adjust(&c.share(share), delta).await);
                }
            }
        }
        if !held.leases.is_empty() {
            result = result.and(counters.release(&held.lease, &held.leases).await);
        }
        if let Err(e) = result {
            // The leases lapse by their TTL; the tokens stay taken (the safe side).
            inner.failed(&e);
        }
    }

    fn start_ticker(&self) {
        if self.inner.ticking.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            self.inner.ticking.store(false, Ordering::Release);
            return;
        };
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let every = (self.inner.config.lease_ttl / 3).max(Duration::from_millis(10));
        rt.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(inner) = weak.upgrade() else { return };
                inner.renew().await;
            }
        });
    }
}

impl Inner {
    fn hold(&self, lease: String, local: bool, charges: &[Charge]) -> Held {
        let mut held = Held { lease, local, ..Held::default() };
        for c in charges {
            match c.meter {
                Meter::Rate { .. } if c.key.ends_with(":tpm") => held.tokens.push(c.clone()),
                Meter::Rate { .. } => {}
                Meter::Lease { .. } => held.leases.push(c.key.clone()),
            }
        }
        if !held.leases.is_empty() {
            let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            live.insert(held.lease.clone(), (local, held.leases.clone()));
        }
        held
    }

    async fn renew(&self) {
        let (mut shared, mut local) = (Vec::new(), Vec::new());
        {
            let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
            for (lease, (is_local, keys)) in live.iter() {
                let into = if *is_local { &mut local } else { &mut shared };
                into.extend(keys.iter().map(|k| (k.clone(), lease.clone())));
            }
        }
        let ttl = u64::try_from(self.config.lease_ttl.as_millis()).unwrap_or(u64::MAX);
        if !local.is_empty() {
            self.local.renew_now(&local, ttl);
        }
        if !shared.is_empty()
            && let Err(e) = self.backend.renew(&shared, ttl).await
        {
            self.failed(&e);
        }
    }

    /// The backend failed: counted, logged when an episode starts; the mode to
    /// apply.
    fn failed(&self, e: &BackendError) -> FailureMode {
        let mode = self.config.on_unavailable;
        if self.config.metrics {
            crate::telemetry::counter!("gateway_state_backend_errors_total", "backend" => self.backend.name()).increment(1);
            crate::telemetry::counter!("gateway_state_failure_mode_total", "mode" => mode.as_str())
                .increment(1);
        }
        if !self.degraded.swap(true, Ordering::AcqRel) {
            tracing::error!(backend = self.backend.name(), mode = mode.as_str(), error = %e, "rate-limit backend unavailable: applying the failure mode until it answers again");
        }
        mode
    }

    fn recovered(&self) {
        if self.degraded.load(Ordering::Relaxed) && self.degraded.swap(false, Ordering::AcqRel) {
            tracing::warn!(
                backend = self.backend.name(),
                "rate-limit backend answers again: limits are shared again"
            );
        }
    }
}

impl Charge {
    /// This charge against a `1 / share` part of its limit (at least 1).
    fn share(&self, share: u64) -> Charge {
        let part = |limit: u64| (limit / share).max(1);
        let meter = match self.meter {
            Meter::Rate { limit, window_ms, amount } => {
                Meter::Rate { limit: part(limit), window_ms, amount }
            }
            Meter::Lease { limit, ttl_ms } => Meter::Lease { limit: part(limit), ttl_ms },
        };
        Charge { key: self.key.clone(), meter }
    }
}

impl Dim {
    fn name(self) -> &'static str {
        match self {
            Dim::Requests => "rpm",
            Dim::Tokens => "tpm",
            Dim::Concurrent => "concurrent",
        }
    }
}

/// The charges for `scoped`, in order, and what each counts.
fn charges(scoped: &[Scoped], tokens: u64, ttl: Duration) -> (Vec<Charge>, Vec<(usize, Dim)>) {
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let mut charges = Vec::new();
    let mut dims = Vec::new();
    for (i, s) in scoped.iter().enumerate() {
        let l = &s.limits;
        if let Some(limit) = l.rpm {
            let meter = Meter::Rate { limit, window_ms: MINUTE_MS, amount: 1 };
            charges.push(Charge { key: format!("{}:rpm", s.scope), meter });
            dims.push((i, Dim::Requests));
        }
        if let Some(limit) = l.tpm {
            let meter = Meter::Rate { limit, window_ms: MINUTE_MS, amount: tokens };
            charges.push(Charge { key: format!("{}:tpm", s.scope), meter });
            dims.push((i, Dim::Tokens));
        }
        if let Some(limit) = l.concurrent {
            let meter = Meter::Lease { limit, ttl_ms };
            charges.push(Charge { key: format!("{}:conc", s.scope), meter });
            dims.push((i, Dim::Concurrent));
        }
    }
    (charges, dims)
}

/// The scope, limit and dimension of the charge at `index`.
fn describe<'a>(
    scoped: &'a [Scoped],
    charges: &[Charge],
    dims: &[(usize, Dim)],
    index: usize,
) -> (&'a str, u64, Dim) {
    let (scope, dim) = dims.get(index).copied().unwrap_or((0, Dim::Requests));
    let limit = charges.get(index).map_or(0, |c| match c.meter {
        Meter::Rate { limit, .. } | Meter::Lease { limit, .. } => limit,
    });
    (scoped.get(scope).map_or("", |s| s.scope.as_str()), limit, dim)
}

/// The most restrictive request and token levels.
fn status(levels: &[Level], dims: &[(usize, Dim)]) -> RateStatus {
    let pick = |want: Dim| {
        levels
            .iter()
            .zip(dims)
            .filter(|(_, (_, d))| *d == want)
            .map(|(l, _)| *l)
            .min_by_key(|l| l.remaining)
    };
    RateStatus { requests: pick(Dim::Requests), tokens: pick(Dim::Tokens) }
}

impl Admission for Limiter {
    fn reserve<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        Box::pin(self.take(ask.limits, ask.tokens))
    }
    fn occupy<'a>(
        &'a self,
        deployment: &'a Scoped,
        tokens: u64,
    ) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        Box::pin(self.take(std::slice::from_ref(deployment), tokens))
    }
    fn settle(&self, reservation: Reservation, used: Usage, _: Option<f64>) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.give_back(reservation, &used).await })
    }
}

#[cfg(test)]
#[path = "limiter_tests.rs"]
mod tests;
