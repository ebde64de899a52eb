//! The counting backend: atomic, all-or-nothing steps over named counters.

use std::fmt::Debug;

use crate::continuity::BoxFuture;

/// One counter a request is charged against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Charge {
    /// The counter's stable name (`key:k1:rpm`); a backend may prefix it.
    pub key: String,
    /// What is counted, and how much.
    pub meter: Meter,
}

/// How a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meter {
    /// `amount` units against at most `limit` per `window_ms` (GCRA: a burst of
    /// `limit` at once, refilled one unit every `window_ms / limit`).
    Rate {
        /// Units per window.
        limit: u64,
        /// The window, in milliseconds.
        window_ms: u64,
        /// Units this request takes.
        amount: u64,
    },
    /// One lease among at most `limit` held at once; it lapses `ttl_ms` after it
    /// was taken or last renewed.
    Lease {
        /// Leases at once.
        limit: u64,
        /// Milliseconds a lease lives without renewal.
        ttl_ms: u64,
    },
}

/// What is left of one counter after a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// The counter's limit.
    pub limit: u64,
    /// Units (or leases) still available.
    pub remaining: u64,
    /// Milliseconds until the counter is full again (0 for leases).
    pub reset_ms: u64,
}

/// The outcome of [`Counters::acquire`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquired {
    /// Every charge was taken: each counter's level, in the charges' order.
    Granted(Vec<Level>),
    /// Nothing was taken: the charge at `index` does not fit.
    Denied {
        /// Which charge refused.
        index: usize,
        /// Milliseconds until it would fit; `None`: never (a request larger than
        /// the limit) or unknown (a lease: when another request ends).
        retry_after_ms: Option<u64>,
    },
}

/// The backend could not be reached or answered nonsense; the caller applies
/// its failure mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state backend unavailable: {0}")]
pub struct BackendError(pub String);

/// Counters shared by every instance that uses the same backend. Each method is
/// one atomic step on the backend's own clock (never the caller's, so clock skew
/// between instances changes nothing).
pub trait Counters: Send + Sync + Debug {
    /// `local` or `redis`: for metrics and logs.
    fn name(&self) -> &'static str;
    /// Take every charge, or none of them. `lease` names the leases taken (one
    /// per [`Meter::Lease`] charge, each in its own counter).
    fn acquire<'a>(
        &'a self,
        lease: &'a str,
        charges: &'a [Charge],
    ) -> BoxFuture<'a, Result<Acquired, BackendError>>;
    /// Reconcile a [`Meter::Rate`] charge taken earlier: `delta` more units
    /// (negative: give some back, never beyond a full counter).
    fn adjust<'a>(
        &'a self,
        charge: &'a Charge,
        delta: i64,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
    /// End the lease `lease` in each of `keys`.
    fn release<'a>(
        &'a self,
        lease: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Keep the leases `(key, lease)` alive `ttl_ms` longer (still held by
    /// requests in flight); a lease that already lapsed is not brought back.
    fn renew<'a>(
        &'a self,
        leases: &'a [(String, String)],
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
}
