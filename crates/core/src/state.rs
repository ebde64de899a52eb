//! Runtime state behind traits: what the pipeline reads and writes between
//! requests, each with today's in-process implementation, so that state shared by
//! several instances (Redis, later) is an implementation of these traits, not a
//! change to the pipeline.
//!
//! | trait | what | in-process implementation |
//! |---|---|---|
//! | [`HealthState`] | breakers, throttles, quarantine per credential | [`HealthRegistry`]; shared: [`SharedHealth`](crate::health_sync::SharedHealth) |
//! | [`LatencyState`] | latency estimates per deployment | [`LatencyTracker`]; shared: [`SharedLatency`](crate::health_sync::SharedLatency) |
//! | [`InFlightState`] | requests in flight per deployment | [`InFlight`] |
//! | [`Admission`] | rate limits and budgets: reserve before the attempts, settle after | [`Limiter`](crate::limits::Limiter) over [`LocalCounters`](crate::limits::LocalCounters), or [`Unlimited`] |
//! | [`Counters`](crate::limits::Counters) | the atomic counting under the limits | [`LocalCounters`](crate::limits::LocalCounters) |
//! | [`ResponseCache`] | answers by a key of the canonical request | [`LocalCache`](crate::cache::LocalCache), or [`NoCache`] |
//! | [`ContinuityStore`](crate::continuity::ContinuityStore) | what upstreams need back next turn | [`LocalContinuity`](crate::continuity::LocalContinuity) |
//!
//! Conventions: identities are stable strings (see [`crate::catalog::Candidate::identity`],
//! [`CredentialKey`]); times that cross processes are unix milliseconds
//! ([`UnixMs`]); breaker epochs and probe tokens are unique across instances. The
//! health, latency and in-flight traits are synchronous: they sit on every
//! attempt, so a shared implementation keeps a local view and synchronises behind
//! it. Admission and caching are asynchronous: exact limits across instances need
//! a round trip.

use std::fmt::Debug;
use std::sync::Arc;

use switchyard_protocol::{ErrorCode, Usage};

pub use crate::breaker::HealthRegistry;
use crate::breaker::{BreakerConfig, BreakerState, Clearance, CredentialKey, Outcome, Permit};
use crate::clock::UnixMs;
use crate::continuity::BoxFuture;
use crate::limits::{BackendError, Budgeted, Held, RateStatus, Scoped, Spent};
pub use crate::runtime::{InFlight, InFlightGuard, LatencyTracker};

/// Per-credential health (see [`crate::breaker`] for the rules).
pub trait HealthState: Send + Sync + Debug {
    /// Replace the tuning (on reload).
    fn set_config(&self, config: BreakerConfig);
    /// May a request be sent on `key` now? A half-open breaker hands its one probe
    /// slot to the caller.
    fn clear(&self, key: &CredentialKey, now: UnixMs) -> Clearance;
    /// How a request cleared with `permit` ended.
    fn report(&self, permit: Permit, outcome: Outcome, now: UnixMs);
    /// A cleared request ended with no outcome (cancelled).
    fn abandon(&self, permit: Permit);
    /// The state of `key` at `now` (unknown keys are closed); reading changes nothing.
    fn state(&self, key: &CredentialKey, now: UnixMs) -> BreakerState;
    /// Whether `key` would be admitted at `now` (the circuit filter's test).
    fn is_available(&self, key: &CredentialKey, now: UnixMs) -> bool {
        self.state(key, now).is_available()
    }
    /// Keep the identities a reloaded catalog still has.
    fn retain_for_reload(&self, keep: &dyn Fn(&CredentialKey) -> bool);
    /// Every known identity and its state (for metrics), sorted by key.
    fn snapshot(&self, now: UnixMs) -> Vec<(CredentialKey, BreakerState)>;
}

impl HealthState for HealthRegistry {
    fn set_config(&self, config: BreakerConfig) {
        HealthRegistry::set_config(self, config);
    }
    fn clear(&self, key: &CredentialKey, now: UnixMs) -> Clearance {
        HealthRegistry::clear(self, key, now)
    }
    fn report(&self, permit: Permit, outcome: Outcome, now: UnixMs) {
        HealthRegistry::report(self, permit, outcome, now);
    }
    fn abandon(&self, permit: Permit) {
        HealthRegistry::abandon(self, permit);
    }
    fn state(&self, key: &CredentialKey, now: UnixMs) -> BreakerState {
        HealthRegistry::state(self, key, now)
    }
    fn retain_for_reload(&self, keep: &dyn Fn(&CredentialKey) -> bool) {
        HealthRegistry::retain_for_reload(self, keep);
    }
    fn snapshot(&self, now: UnixMs) -> Vec<(CredentialKey, BreakerState)> {
        HealthRegistry::snapshot(self, now)
    }
}

/// Rolling latency per deployment identity.
pub trait LatencyState: Send + Sync + Debug {
    /// A whole attempt on `identity` took `ms` milliseconds.
    fn observe_attempt(&self, identity: &str, ms: f64);
    /// A stream on `identity` took `ms` milliseconds to its first token.
    fn observe_ttft(&self, identity: &str, ms: f64);
    /// What the latency strategy reads, in milliseconds (time to first token when
    /// known); `None` before any sample.
    fn estimate(&self, identity: &str) -> Option<f64>;
    /// Keep the identities `keep` accepts (on reload), forget the rest.
    fn retain(&self, keep: &dyn Fn(&str) -> bool);
}

impl LatencyState for LatencyTracker {
    fn observe_attempt(&self, identity: &str, ms: f64) {
        LatencyTracker::observe_attempt(self, identity, ms);
    }
    fn observe_ttft(&self, identity: &str, ms: f64) {
        LatencyTracker::observe_ttft(self, identity, ms);
    }
    fn estimate(&self, identity: &str) -> Option<f64> {
        LatencyTracker::estimate(self, identity)
    }
    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        LatencyTracker::retain(self, keep);
    }
}

/// Requests in flight per deployment identity.
pub trait InFlightState: Send + Sync + Debug {
    /// Count one more until the guard drops.
    fn enter(&self, identity: &str) -> InFlightGuard;
    /// Requests in flight on `identity` now (0 for an unknown one).
    fn count(&self, identity: &str) -> u64;
    /// All of them (for the gauge).
    fn total(&self) -> u64;
}

impl InFlightState for InFlight {
    fn enter(&self, identity: &str) -> InFlightGuard {
        InFlight::enter(self, identity)
    }
    fn count(&self, identity: &str) -> u64 {
        InFlight::count(self, identity)
    }
    fn total(&self) -> u64 {
        InFlight::total(self)
    }
}

/// What a request asks of the limits and budgets before any attempt: who, for
/// which model, and what it is expected to use.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask<'a> {
    /// The stored API key used, if any.
    pub key_id: Option<&'a str>,
    /// The signed-in user, if any.
    pub user: Option<&'a str>,
    /// The project the request is attributed to, if any.
    pub project: Option<&'a str>,
    /// The catalog model the request resolved to.
    pub model: &'a str,
    /// Input tokens (estimated) plus the output asked for.
    pub tokens: u64,
    /// USD, when the price is known.
    pub cost_usd: Option<f64>,
    /// The limits that apply to the caller, by scope (its key, user and project),
    /// resolved by the pipeline.
    pub limits: &'a [Scoped],
    /// The budgets that apply (the gateway's, the caller's key, user and
    /// project), each with this request's reservation.
    pub budgets: &'a [Budgeted],
}

/// Held between [`Admission::reserve`] and [`Admission::settle`]: what was set
/// aside, so settling can give back the difference. Opaque to the pipeline.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Reservation {
    /// The implementation's handle on what it set aside.
    pub id: u64,
    /// Tokens set aside.
    pub tokens: u64,
    /// USD set aside, when the price is known.
    pub cost_usd: Option<f64>,
    /// The caller's rate limits after this request (the `x-ratelimit-*`
    /// headers); `None`: none apply.
    pub status: Option<RateStatus>,
    /// Budgets in warn mode this request took past their limit (their scopes),
    /// for the record.
    pub over_budget: Vec<String>,
    /// What a [`Limiter`](crate::limits::Limiter) took, to give back.
    pub(crate) held: Option<Held>,
    /// Nothing was set aside (no limit or budget applied): there is nothing to
    /// settle, so the pipeline spends no task on it.
    pub(crate) nothing: bool,
}

impl Reservation {
    /// `tokens` (and `cost_usd`) set aside under the implementation's handle `id`.
    pub fn new(id: u64, tokens: u64, cost_usd: Option<f64>) -> Self {
        Self {
            id,
            tokens,
            cost_usd,
            status: None,
            over_budget: Vec::new(),
            held: None,
            nothing: false,
        }
    }

    /// Nothing set aside: never settled (the built-in admissions' answer when
    /// no limit applies).
    pub(crate) fn nothing(tokens: u64) -> Self {
        Self { nothing: true, ..Self::new(0, tokens, None) }
    }
}

/// Why a request was not admitted. `retry_after_ms`: when it may succeed.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// Stable code for the client ([`ErrorCode::RateLimited`],
    /// [`ErrorCode::BudgetExceeded`], [`ErrorCode::LimitsUnavailable`]),
    /// answered with the code's status.
    pub code: ErrorCode,
    /// What was exceeded, for the client.
    pub message: String,
    /// Milliseconds until the request may succeed (the message quotes it, in
    /// seconds); `None`: unknown.
    pub retry_after_ms: Option<u64>,
}

/// Rate limits and budgets. `reserve` sets the expected use aside before the
/// first attempt (refusing when a limit would be passed); `settle` replaces it
/// with what was used, once the request is over (however it ended).
pub trait Admission: Send + Sync + Debug {
    /// Set `ask`'s expected use aside, or refuse it (the request is answered
    /// with the refusal's code).
    fn reserve<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Reservation, Refusal>>;
    /// Take a slot of a deployment's capacity (`deployment`'s limits) for one
    /// attempt expected to use `tokens`, or refuse it: the attempt loop then
    /// moves on to the next candidate without marking this one unhealthy. The
    /// default admits everything.
    fn occupy<'a>(
        &'a self,
        deployment: &'a Scoped,
        tokens: u64,
    ) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        let _ = deployment;
        Box::pin(std::future::ready(Ok(Reservation::nothing(tokens))))
    }
    /// Replace `reservation` with what the request used (`used`, costing
    /// `cost_usd`), once it is over.
    fn settle(
        &self,
        reservation: Reservation,
        used: Usage,
        cost_usd: Option<f64>,
    ) -> BoxFuture<'_, ()>;
    /// A budget's live amounts this period (`None`: not counted here, or not
    /// yet this period). The default counts none.
    fn read_budget<'a>(
        &'a self,
        budget: &'a Budgeted,
    ) -> BoxFuture<'a, Result<Option<Spent>, BackendError>> {
        let _ = budget;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// No limits, no budgets: admits everything, settles nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Unlimited;

impl Admission for Unlimited {
    fn reserve<'a>(&'a self, ask: &'a Ask<'a>) -> BoxFuture<'a, Result<Reservation, Refusal>> {
        let r = Reservation::nothing(ask.tokens);
        Box::pin(std::future::ready(Ok(r)))
    }
    fn settle(&self, _: Reservation, _: Usage, _: Option<f64>) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// Answers kept by a key of the canonical request (the key is the caller's: a
/// cache must never serve one tenant's answer to another; the pipeline derives
/// it, see `exec/cache.rs`). Values are the canonical response, serialized.
/// A backend that fails answers as if it held nothing: a cache never fails a
/// request.
pub trait ResponseCache: Send + Sync + Debug {
    /// The first of `keys` that holds an answer that has not expired: its index
    /// in `keys` and the answer. One step for all of them (the keys are the
    /// request's under each deployment that may serve it).
    fn get<'a>(&'a self, keys: &'a [String]) -> BoxFuture<'a, Option<(usize, Arc<[u8]>)>>;
    /// Keep `value` under `key` for `ttl_ms` milliseconds.
    fn put(&self, key: String, value: Arc<[u8]>, ttl_ms: u64) -> BoxFuture<'_, ()>;

    /// Claim the upstream call for the request `key` (the key identical requests
    /// share, whichever deployment answers) for `ttl_ms`, as `token` (unique to
    /// the request): identical requests on other instances then wait for its
    /// answer ([`ResponseCache::poll`]) instead of calling too. A store that
    /// does not coordinate instances (the in-process one: coalescing in one
    /// process needs no store) answers [`Claim::Alone`], as does one that
    /// cannot now (the caller calls upstream either way).
    fn claim<'a>(&'a self, key: &'a str, token: &'a str, ttl_ms: u64) -> BoxFuture<'a, Claim> {
        let _ = (key, token, ttl_ms);
        Box::pin(std::future::ready(Claim::Alone))
    }

    /// While another instance holds the claim on `key`: the first of `keys`
    /// holding an answer, else whether the claim is still held. One step.
    fn poll<'a>(&'a self, keys: &'a [String], key: &'a str) -> BoxFuture<'a, Polled> {
        let _ = key;
        Box::pin(async move {
            match self.get(keys).await {
                Some((i, answer)) => Polled::Answer(i, answer),
                None => Polled::Free,
            }
        })
    }

    /// Keep the claim on `key` taken as `token` for `ttl_ms` more, while its
    /// call runs (a claim lost meanwhile is not taken back).
    fn renew<'a>(&'a self, key: &'a str, token: &'a str, ttl_ms: u64) -> BoxFuture<'a, ()> {
        let _ = (key, token, ttl_ms);
        Box::pin(std::future::ready(()))
    }

    /// Give back the claim on `key` taken as `token` (after the answer was kept,
    /// or when there is none to keep); a claim since taken by another is left.
    fn release<'a>(&'a self, key: &'a str, token: &'a str) -> BoxFuture<'a, ()> {
        let _ = (key, token);
        Box::pin(std::future::ready(()))
    }
}

/// What [`ResponseCache::claim`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The caller calls upstream for every instance, and releases the claim
    /// when its answer is kept.
    Led,
    /// Another instance is calling upstream for the same request now.
    Busy,
    /// The store does not coordinate instances (or cannot now): call upstream.
    Alone,
}

/// What [`ResponseCache::poll`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Polled {
    /// The answer, under the key at this index.
    Answer(usize, Arc<[u8]>),
    /// The call is still in progress elsewhere.
    Busy,
    /// No answer and no claim: the call ended with nothing kept (it failed, or
    /// its answer may not be kept), or its instance went away.
    Free,
}

/// Caches nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoCache;

impl ResponseCache for NoCache {
    fn get<'a>(&'a self, _: &'a [String]) -> BoxFuture<'a, Option<(usize, Arc<[u8]>)>> {
        Box::pin(std::future::ready(None))
    }
    fn put(&self, _: String, _: Arc<[u8]>, _: u64) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}
