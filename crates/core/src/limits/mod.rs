//! Rate limits and concurrency caps, counted exactly across instances.
//!
//! | part | file |
//! |---|---|
//! | what is limited: [`Limits`] (requests and tokens per minute, requests at once) | here |
//! | counting: the [`Counters`] backend trait and its in-process [`LocalCounters`] | `counters.rs`, `local.rs` |
//! | the pipeline's [`Admission`](crate::state::Admission): [`Limiter`], failure modes, lease renewal | `limiter.rs` |
//!
//! Rates are counted with GCRA (the generic cell rate algorithm): a limit of L
//! per window W is a budget of L at once, refilled evenly, one unit every W / L.
//! A simultaneous burst of N requests against L is admitted exactly L times,
//! however many instances share the counter, and a refusal knows exactly when
//! the next unit frees up (its `Retry-After`). Each counter is one number (the
//! theoretical arrival time), so a check is one atomic step. Concurrency is a set
//! of leases, each lapsing a TTL after it was last renewed, so that a crashed
//! instance's slots come back.
//!
//! The Redis backend (`switchyard_store::redis`) runs the same algorithms as
//! Lua scripts on the Redis server's clock; the conformance tests in
//! `counters_tests.rs` hold both to the same behaviour.

pub mod budget;
#[cfg(any(test, feature = "testing"))]
#[allow(
    clippy::panic,
    clippy::expect_used,
    reason = "a test suite for backends: a failed check fails the caller's test"
)]
pub mod conformance;
mod counters;
mod limiter;
mod local;

pub use budget::{
    BudgetMode, BudgetScope, BudgetSpec, Budgeted, Ledger, Period, PeriodName, ROLLING_STEPS,
};
pub use counters::{
    Acquired, BackendError, Charge, Counters, GiveBack, Level, Meter, NO_LIMIT, Spent,
};
pub(crate) use limiter::Held;
pub use limiter::{FailureMode, Limiter, LimiterConfig, RateStatus};
pub use local::LocalCounters;

use serde::{Deserialize, Serialize};

/// One minute, the window of the per-minute limits.
pub const MINUTE_MS: u64 = 60_000;

/// The limits on one scope (a gateway key, a user, a project, a deployment).
/// `None`: not limited in that dimension.
///
/// ```
/// use switchyard_core::limits::Limits;
/// let l = Limits::default().rpm(60).concurrent(4);
/// assert_eq!((l.rpm, l.tpm, l.concurrent), (Some(60), None, Some(4)));
/// assert!(Limits::default().is_empty());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Limits {
    /// Requests per minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpm: Option<u64>,
    /// Tokens per minute: the input estimate plus the output asked for, reserved
    /// before the request and reconciled with the usage reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpm: Option<u64>,
    /// Requests in flight at once (a stream counts until it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrent: Option<u64>,
}

impl Limits {
    /// At most `n` requests per minute.
    #[must_use]
    pub fn rpm(mut self, n: u64) -> Self {
        self.rpm = Some(n);
        self
    }

    /// At most `n` tokens per minute.
    #[must_use]
    pub fn tpm(mut self, n: u64) -> Self {
        self.tpm = Some(n);
        self
    }

    /// At most `n` requests at once.
    #[must_use]
    pub fn concurrent(mut self, n: u64) -> Self {
        self.concurrent = Some(n);
        self
    }

    /// No limit is set.
    pub fn is_empty(&self) -> bool {
        self.rpm.is_none() && self.tpm.is_none() && self.concurrent.is_none()
    }

    /// What is wrong with these limits, each naming its field under `at` (a zero
    /// limit would refuse everything: it is a mistake, not a way to disable).
    pub fn problems(&self, at: &str) -> Vec<String> {
        [("rpm", self.rpm), ("tpm", self.tpm), ("concurrent", self.concurrent)]
            .into_iter()
            .filter(|(_, v)| *v == Some(0))
            .map(|(f, _)| format!("{at}.{f}: must be greater than 0"))
            .collect()
    }
}

/// The limits that apply to one request in one scope. `scope` is a stable name
/// (`key:<id>`, `user:<id>`, `project:<id>`, `deployment:<identity>`) that names
/// the counters and the refusal's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scoped {
    /// The scope's stable name.
    pub scope: String,
    /// Its limits.
    pub limits: Limits,
}

impl Scoped {
    /// `limits` on `scope`.
    pub fn new(scope: impl Into<String>, limits: Limits) -> Self {
        Self { scope: scope.into(), limits }
    }
}
