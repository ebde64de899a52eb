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
    /// `amount` micro-dollars reserved against a budget of `limit`: fits while
    /// spent + reserved + uncertain + amount ≤ limit. The counter lives `ttl_ms`
    /// (to its period's end and a margin) and must be seeded first
    /// ([`Counters::seed_spend`]) from the ledger.
    Spend {
        /// Micro-dollars per period ([`NO_LIMIT`]: never refused).
        limit: u64,
        /// Micro-dollars this request reserves.
        amount: u64,
        /// Milliseconds the counter lives.
        ttl_ms: u64,
    },
}

/// What a request gives back when it is over ([`Counters::give_back`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GiveBack {
    /// The lease it took.
    pub lease: String,
    /// Token charges and the units to add (negative: give back).
    pub adjust: Vec<(Charge, i64)>,
    /// Counters holding the lease.
    pub release: Vec<String>,
    /// Budget charges and their cost in micro-dollars (`None`: unknown, the
    /// reservation becomes uncertain spend).
    pub spend: Vec<(Charge, Option<u64>)>,
}

/// A [`Meter::Spend`] limit that never refuses (a budget in warn mode): 2^53,
/// the largest integer the Redis scripts count exactly.
pub const NO_LIMIT: u64 = 1 << 53;

/// A budget counter's amounts, in micro-dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spent {
    /// Settled against metered cost.
    pub spent: u64,
    /// Held by requests in flight.
    pub reserved: u64,
    /// Kept by requests whose cost is unknown.
    pub uncertain: u64,
}

impl Spent {
    /// All that counts against the limit.
    pub fn total(&self) -> u64 {
        self.spent.saturating_add(self.reserved).saturating_add(self.uncertain)
    }
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
    /// Nothing was taken: the budget counter at `index` is not seeded (new, or
    /// lost with the backend's data); seed it from the ledger and ask again.
    Unseeded {
        /// Which charge.
        index: usize,
    },
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
    /// Start the budget counter `key` at `spent` micro-dollars (what the ledger
    /// says was spent this period), living `ttl_ms`, unless it is seeded already.
    fn seed_spend<'a>(
        &'a self,
        key: &'a str,
        spent: u64,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Settle a [`Meter::Spend`] charge taken earlier: its reservation becomes
    /// `cost` micro-dollars spent, or, unknown, uncertain spend.
    fn settle_spend<'a>(
        &'a self,
        charge: &'a Charge,
        cost: Option<u64>,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
    /// Everything a request took, given back in one step where the backend can
    /// (one round trip on Redis): each token charge adjusted by its delta, the
    /// lease ended in `release`'s counters, each budget charge settled with its
    /// cost. The default does each in turn.
    fn give_back<'a>(&'a self, back: &'a GiveBack) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let mut result = Ok(());
            for (c, delta) in &back.adjust {
                result = result.and(self.adjust(c, *delta).await);
            }
            if !back.release.is_empty() {
                result = result.and(self.release(&back.lease, &back.release).await);
            }
            for (c, cost) in &back.spend {
                result = result.and(self.settle_spend(c, *cost).await);
            }
            result
        })
    }
    /// A budget counter's amounts now (`None`: not seeded).
    fn read_spend<'a>(&'a self, key: &'a str)
    -> BoxFuture<'a, Result<Option<Spent>, BackendError>>;
    /// Keep the leases `(key, lease)` alive `ttl_ms` longer (still held by
    /// requests in flight); a lease that already lapsed is not brought back.
    fn renew<'a>(
        &'a self,
        leases: &'a [(String, String)],
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>>;
}
