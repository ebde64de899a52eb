//! [`Limiter`]: the limits that apply to a request, taken from a [`Counters`]
//! backend all at once, with the backend's failure mode and lease renewal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use switchyard_protocol::{ErrorCode, Usage};

use super::budget::{self, BudgetMode, Budgeted, Ledger, Period};
use super::counters::{Acquired, BackendError, Charge, Counters, GiveBack, Level, Meter, NO_LIMIT};
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
    /// Budget reservations, settled with the cost.
    spend: Vec<Charge>,
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
    /// Where spend since a period's start is read, to seed a budget counter the
    /// backend does not have (new, or lost with its data); `None`: from zero.
    ledger: Option<Arc<dyn Ledger>>,
    /// Budget breaches in warn mode already logged (scope and period).
    warned: Mutex<std::collections::HashSet<String>>,
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
                ledger: None,
                warned: Mutex::default(),
                local: LocalCounters::default(),
                config,
                degraded: AtomicBool::new(false),
                live: Mutex::default(),
                ticking: AtomicBool::new(false),
            }),
        }
    }

    /// Budget counters the backend does not have are seeded with what `ledger`
    /// says was spent this period (set before the limiter is shared).
    #[must_use]
    pub fn with_ledger(mut self, ledger: Arc<dyn Ledger>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.ledger = Some(ledger);
        }
        self
    }

    /// Limits counted in this process.
    pub fn local() -> Self {
        Self::new(Arc::new(LocalCounters::default()), LimiterConfig::default())
    }

    /// Record the series alerts read at zero (its backend's errors, its
    /// failure mode), so a rate of them reads 0 before the first failure
    /// rather than "no data". The binary's, where metrics are on; a library
    /// embedding records nothing it did not ask for.
    pub fn prime_metrics(&self) {
        if self.inner.config.metrics {
            let (name, mode) =
                (self.inner.backend.name(), self.inner.config.on_unavailable.as_str());
            crate::telemetry::counter!("gateway_state_backend_errors_total", "backend" => name)
                .increment(0);
            crate::telemetry::counter!("gateway_state_failure_mode_total", "mode" => mode)
                .increment(0);
        }
    }

    /// The backend's name (`local`, `redis`).
    pub fn backend(&self) -> &'static str {
        self.inner.backend.name()
    }

    /// Take `tokens` (and one request, and a lease where capped) from every scope
    /// of `scoped`, and each budget's reservation, all at once; or refuse,
    /// naming the limit that does not fit.
    pub async fn take(
        &self,
        scoped: &[Scoped],
        tokens: u64,
        budgets: &[Budgeted],
    ) -> Result<Reservation, Refusal> {
        let (charges, what) = charges(scoped, tokens, budgets, self.inner.config.lease_ttl);
        if charges.is_empty() {
            return Ok(Reservation::nothing(tokens));
        }
        let lease = format!("{:016x}", crate::clock::unique());
        let (acquired, local) = self.inner.acquire(&lease, &charges, &what, budgets).await?;
        match acquired {
            Acquired::Granted(levels) => {
                let held = self.inner.hold(lease, local, &charges, &what);
                let mut r = Reservation::new(0, tokens, None);
                r.status = Some(status(&levels, &what));
                r.over_budget = self.inner.breaches(&levels, &what, budgets);
                if !held.leases.is_empty() {
                    self.start_ticker();
                }
                r.held = Some(held);
                Ok(r)
            }
            // Seeding failed twice over: counted as the backend failing.
            Acquired::Unseeded { .. } => Err(unavailable()),
            Acquired::Denied { index, retry_after_ms } => Err(self.inner.refusal(
                scoped,
                budgets,
                &charges,
                &what,
                index,
                retry_after_ms,
                tokens,
            )),
        }
    }

    /// Reconcile what `reservation` took with what the request used (`used`:
    /// tokens reserved but unreported stay taken; `cost_usd`: budget
    /// reservations become spent, or uncertain when unknown) and release its
    /// leases.
    pub async fn give_back(&self, reservation: Reservation, used: &Usage, cost_usd: Option<f64>) {
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
        let mut back = GiveBack { lease: held.lease, release: held.leases, ..GiveBack::default() };
        if let Some(total) = total {
            for c in &held.tokens {
                let Meter::Rate { amount, .. } = c.meter else { continue };
                let delta = i64::try_from(total).unwrap_or(i64::MAX)
                    - i64::try_from(amount).unwrap_or(i64::MAX);
                if delta != 0 {
                    back.adjust.push((c.share(share), delta));
                }
            }
        }
        let cost = cost_usd.filter(|c| c.is_finite() && *c >= 0.0).map(budget::micros);
        back.spend = held.spend.iter().map(|c| (c.share(share), cost)).collect();
        if back.adjust.is_empty() && back.release.is_empty() && back.spend.is_empty() {
            return;
        }
        if let Err(e) = counters.give_back(&back).await {
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
    /// Acquire on the backend, seeding budget counters it does not have from
    /// the ledger; the backend unreachable, the failure mode. `true`: taken from
    /// the local share.
    async fn acquire(
        &self,
        lease: &str,
        charges: &[Charge],
        what: &[What],
        budgets: &[Budgeted],
    ) -> Result<(Acquired, bool), Refusal> {
        let mut result =
            self.seeded_acquire(self.backend.as_ref(), lease, charges, what, budgets).await;
        if result.is_ok() {
            self.recovered();
        }
        if let Err(e) = &result {
            match self.failed(e) {
                FailureMode::FailClosed => return Err(unavailable()),
                FailureMode::LocalShare => {
                    let share = self.config.expected_instances.max(1);
                    let shared: Vec<Charge> = charges.iter().map(|c| c.share(share)).collect();
                    result = self.seeded_acquire(&self.local, lease, &shared, what, budgets).await;
                    return result.map(|a| (a, true)).map_err(|_| unavailable());
                }
            }
        }
        result.map(|a| (a, false)).map_err(|_| unavailable())
    }

    async fn seeded_acquire(
        &self,
        counters: &dyn Counters,
        lease: &str,
        charges: &[Charge],
        what: &[What],
        budgets: &[Budgeted],
    ) -> Result<Acquired, BackendError> {
        // Each round seeds one budget counter; one more round takes them all.
        for _ in 0..=budgets.len() {
            let acquired = counters.acquire(lease, charges).await?;
            let Acquired::Unseeded { index } = acquired else { return Ok(acquired) };
            let (Some(What::Budget(b)), Some(charge)) = (what.get(index), charges.get(index))
            else {
                return Ok(acquired);
            };
            let Some(budget) = budgets.get(*b) else { return Ok(acquired) };
            let spent = match &self.ledger {
                Some(ledger) => ledger.spent(budget).await?,
                None => 0.0,
            };
            let ttl = budget_ttl_ms(budget);
            counters.seed_spend(&charge.key, budget::micros(spent), ttl).await?;
        }
        counters.acquire(lease, charges).await
    }

    fn hold(&self, lease: String, local: bool, charges: &[Charge], what: &[What]) -> Held {
        let mut held = Held { lease, local, ..Held::default() };
        for (c, w) in charges.iter().zip(what) {
            match (c.meter, w) {
                (Meter::Rate { .. }, What::Rate(_, Dim::Tokens)) => held.tokens.push(c.clone()),
                (Meter::Rate { .. }, _) => {}
                (Meter::Lease { .. }, _) => held.leases.push(c.key.clone()),
                (Meter::Spend { .. }, _) => held.spend.push(c.clone()),
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
            Meter::Spend { limit: NO_LIMIT, amount, ttl_ms } => {
                Meter::Spend { limit: NO_LIMIT, amount, ttl_ms }
            }
            Meter::Spend { limit, amount, ttl_ms } => {
                Meter::Spend { limit: part(limit), amount, ttl_ms }
            }
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

/// What a charge counts: a rate or concurrency limit of the scope at an index
/// of the request's scopes, or the budget at an index of its budgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    Rate(usize, Dim),
    Budget(usize),
}

/// The charges for `scoped` and `budgets`, in order, and what each counts.
fn charges(
    scoped: &[Scoped],
    tokens: u64,
    budgets: &[Budgeted],
    ttl: Duration,
) -> (Vec<Charge>, Vec<What>) {
    let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
    let mut charges = Vec::new();
    let mut what = Vec::new();
    for (i, s) in scoped.iter().enumerate() {
        let l = &s.limits;
        if let Some(limit) = l.rpm {
            let meter = Meter::Rate { limit, window_ms: MINUTE_MS, amount: 1 };
            charges.push(Charge { key: format!("{}:rpm", s.scope), meter });
            what.push(What::Rate(i, Dim::Requests));
        }
        if let Some(limit) = l.tpm {
            let meter = Meter::Rate { limit, window_ms: MINUTE_MS, amount: tokens };
            charges.push(Charge { key: format!("{}:tpm", s.scope), meter });
            what.push(What::Rate(i, Dim::Tokens));
        }
        if let Some(limit) = l.concurrent {
            let meter = Meter::Lease { limit, ttl_ms };
            charges.push(Charge { key: format!("{}:conc", s.scope), meter });
            what.push(What::Rate(i, Dim::Concurrent));
        }
    }
    for (i, b) in budgets.iter().enumerate() {
        let limit = match b.spec.mode {
            BudgetMode::Enforce => budget::micros(b.spec.limit_usd),
            BudgetMode::Warn => NO_LIMIT,
        };
        let amount = budget::micros(b.reserve_usd);
        let meter = Meter::Spend { limit, amount, ttl_ms: budget_ttl_ms(b) };
        charges.push(Charge { key: b.key(), meter });
        what.push(What::Budget(i));
    }
    (charges, what)
}

/// A budget counter lives to its period's end and a day more, so that late
/// settlements still find it.
fn budget_ttl_ms(b: &Budgeted) -> u64 {
    let now = crate::clock::UnixMs::now();
    b.window.end.0.saturating_sub(now.0).saturating_add(86_400_000)
}

/// The refusal of the fail-closed mode.
fn unavailable() -> Refusal {
    Refusal {
        code: ErrorCode::LimitsUnavailable,
        message: "the rate-limit store is unavailable".into(),
        retry_after_ms: Some(1000),
    }
}

fn usd(micros: u64) -> String {
    format!("${:.2}", micros as f64 / budget::MICROS_PER_USD)
}

impl Inner {
    /// Why the charge at `index` refused.
    #[allow(clippy::too_many_arguments)]
    fn refusal(
        &self,
        scoped: &[Scoped],
        budgets: &[Budgeted],
        charges: &[Charge],
        what: &[What],
        index: usize,
        retry_after_ms: Option<u64>,
        tokens: u64,
    ) -> Refusal {
        let limit = charges.get(index).map_or(0, |c| match c.meter {
            Meter::Rate { limit, .. } | Meter::Lease { limit, .. } | Meter::Spend { limit, .. } => {
                limit
            }
        });
        let (level, kind) = match what.get(index) {
            Some(What::Rate(i, dim)) => {
                (scoped.get(*i).map_or("", |s| s.scope.as_str()), dim.name())
            }
            Some(What::Budget(_)) | None => ("budget", "usd"),
        };
        if self.config.metrics {
            let level = level.split(':').next().unwrap_or("other").to_owned();
            crate::telemetry::counter!("gateway_admission_denials_total", "level" => level, "limit" => kind).increment(1);
        }
        match what.get(index) {
            Some(What::Budget(b)) => {
                let (scope, period) = budgets.get(*b).map_or((String::new(), String::new()), |b| {
                    let period = match b.spec.period {
                        Period::Rolling { hours } => format!("in any {hours} hours"),
                        calendar => format!("per {}", calendar.as_str()),
                    };
                    (b.scope.to_string(), period)
                });
                Refusal {
                    code: ErrorCode::BudgetExceeded,
                    message: format!("the budget of {scope} is spent: {} {period}", usd(limit)),
                    retry_after_ms: None,
                }
            }
            Some(What::Rate(i, dim)) => {
                let scope = scoped.get(*i).map_or("", |s| s.scope.as_str());
                let said = match dim {
                    Dim::Requests => format!("{limit} requests per minute"),
                    Dim::Tokens if retry_after_ms.is_none() => {
                        format!("{limit} tokens per minute, fewer than this request's {tokens}")
                    }
                    Dim::Tokens => format!("{limit} tokens per minute"),
                    Dim::Concurrent => format!("{limit} requests at once"),
                };
                Refusal {
                    code: ErrorCode::RateLimited,
                    message: format!("rate limit of {scope} reached: {said}"),
                    retry_after_ms: match dim {
                        // A slot frees when a request ends: unknown, soon.
                        Dim::Concurrent => Some(1000),
                        _ => retry_after_ms,
                    },
                }
            }
            None => unavailable(),
        }
    }

    /// The warn-mode budgets this request took over their limit: counted, logged
    /// once per scope and period, named for the record.
    fn breaches(&self, levels: &[Level], what: &[What], budgets: &[Budgeted]) -> Vec<String> {
        let mut over = Vec::new();
        for (level, w) in levels.iter().zip(what) {
            let What::Budget(b) = w else { continue };
            let Some(b) = budgets.get(*b).filter(|b| b.spec.mode == BudgetMode::Warn) else {
                continue;
            };
            let used = level.limit.saturating_sub(level.remaining);
            if used <= budget::micros(b.spec.limit_usd) {
                continue;
            }
            if self.config.metrics {
                crate::telemetry::counter!("gateway_budget_breaches_total", "mode" => "warn")
                    .increment(1);
            }
            let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
            if warned.insert(b.key()) {
                tracing::warn!(budget = %b.scope, period = %b.window.id, limit = %usd(budget::micros(b.spec.limit_usd)), "budget passed (warn mode: requests go on)");
            }
            over.push(b.scope.to_string());
        }
        over
    }
}

/// The most restrictive request and token levels.
fn status(levels: &[Level], what: &[What]) -> RateStatus {
    let pick = |want: Dim| {
        levels
            .iter()
            .zip(what)
            .filter(|(_, w)| matches!(w, What::Rate(_, d) if *d == want))
            .map(|(l, _)| *l)
            .min_by_key(|l| l.remaining)
    };
    RateStatus { requests: pick(Dim::Requests), tokens: pick(Dim::Tokens) }
}

impl Admission for Limiter {
    fn reserve<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        Box::pin(self.take(ask.limits, ask.tokens, ask.budgets))
    }
    fn occupy<'a>(
        &'a self,
        deployment: &'a Scoped,
        tokens: u64,
    ) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        Box::pin(self.take(std::slice::from_ref(deployment), tokens, &[]))
    }
    fn settle(
        &self,
        reservation: Reservation,
        used: Usage,
        cost_usd: Option<f64>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.give_back(reservation, &used, cost_usd).await })
    }
    fn read_budget<'a>(
        &'a self,
        budget: &'a Budgeted,
    ) -> BoxFuture<'a, Result<Option<super::Spent>, BackendError>> {
        let key = budget.key();
        Box::pin(async move { self.inner.backend.read_spend(&key).await })
    }
}

#[cfg(test)]
#[path = "limiter_tests.rs"]
mod tests;
