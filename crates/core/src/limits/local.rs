//! The in-process [`Counters`]: the same algorithms as the Redis scripts, on this
//! process's clock. One mutex over the counters: each step is a few arithmetic
//! operations, far shorter than any contention it could cause.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::counters::{Acquired, BackendError, Charge, Counters, Level, Meter, Spent};
use crate::continuity::BoxFuture;

/// Microseconds on some monotonic clock.
type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// Counters in this process only: exact for one instance.
#[derive(Clone)]
pub struct LocalCounters {
    state: Arc<Mutex<State>>,
    now_us: Clock,
}

#[derive(Default)]
struct State {
    /// GCRA: each rate counter's theoretical arrival time (µs).
    tat: HashMap<String, f64>,
    /// Leases per counter: lease name → expiry (µs).
    leases: HashMap<String, HashMap<String, f64>>,
    /// Budget counters and their expiry (µs).
    spend: HashMap<String, (Spent, f64)>,
    /// Steps since the last sweep of lapsed counters.
    steps: u32,
}

impl std::fmt::Debug for LocalCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalCounters").finish_non_exhaustive()
    }
}

impl Default for LocalCounters {
    fn default() -> Self {
        let start = Instant::now();
        Self::with_clock(Arc::new(move || start.elapsed().as_secs_f64() * 1e6))
    }
}

/// Half a microsecond: room for the rounding of `window / limit * limit`.
const SLACK_US: f64 = 0.5;
/// Sweep lapsed counters every this many steps, so that a scope seen once does
/// not stay forever.
const SWEEP_EVERY: u32 = 4096;

impl LocalCounters {
    /// Counters on `now_us` (microseconds, monotonic): tests drive time by hand.
    pub fn with_clock(now_us: Clock) -> Self {
        Self { state: Arc::default(), now_us }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The step itself, synchronous.
    pub fn acquire_now(&self, lease: &str, charges: &[Charge]) -> Acquired {
        let now = (self.now_us)();
        let mut st = self.lock();
        st.sweep(now);
        let mut levels = Vec::with_capacity(charges.len());
        // Check every charge before taking any: all or nothing.
        for (index, c) in charges.iter().enumerate() {
            match c.meter {
                Meter::Rate { limit, window_ms, amount } => {
                    let tat = st.tat.get(&c.key).copied().unwrap_or(now);
                    match gcra(tat, now, limit, window_ms, amount) {
                        Ok((_, level)) => levels.push(level),
                        Err(retry_after_ms) => return Acquired::Denied { index, retry_after_ms },
                    }
                }
                Meter::Lease { limit, .. } => {
                    let held = st.leases.get(&c.key).map_or(0, |l| {
                        l.iter().filter(|(id, exp)| **exp > now && id.as_str() != lease).count()
                    }) as u64;
                    if held >= limit {
                        return Acquired::Denied { index, retry_after_ms: None };
                    }
                    levels.push(Level { limit, remaining: limit - held - 1, reset_ms: 0 });
                }
                Meter::Spend { limit, amount, .. } => {
                    let Some((spent, _)) = st.spend.get(&c.key).filter(|(_, exp)| *exp > now)
                    else {
                        return Acquired::Unseeded { index };
                    };
                    let after = spent.total().saturating_add(amount);
                    if after > limit {
                        return Acquired::Denied { index, retry_after_ms: None };
                    }
                    levels.push(Level { limit, remaining: limit - after, reset_ms: 0 });
                }
            }
        }
        for c in charges {
            match c.meter {
                Meter::Rate { limit, window_ms, amount } => {
                    let tat = st.tat.get(&c.key).copied().unwrap_or(now);
                    if let Ok((new, _)) = gcra(tat, now, limit, window_ms, amount) {
                        st.tat.insert(c.key.clone(), new);
                    }
                }
                Meter::Lease { ttl_ms, .. } => {
                    let leases = st.leases.entry(c.key.clone()).or_default();
                    leases.insert(lease.to_owned(), now + ttl_ms as f64 * 1000.0);
                }
                Meter::Spend { amount, .. } => {
                    if let Some((spent, _)) = st.spend.get_mut(&c.key) {
                        spent.reserved = spent.reserved.saturating_add(amount);
                    }
                }
            }
        }
        Acquired::Granted(levels)
    }

    /// [`Counters::adjust`], synchronous.
    pub fn adjust_now(&self, charge: &Charge, delta: i64) {
        let Meter::Rate { limit, window_ms, .. } = charge.meter else { return };
        if limit == 0 {
            return;
        }
        let now = (self.now_us)();
        let interval = window_ms as f64 * 1000.0 / limit as f64;
        let mut st = self.lock();
        let current = st.tat.get(&charge.key).copied();
        let next = adjusted(current, now, interval, delta);
        match next {
            Some(t) => st.tat.insert(charge.key.clone(), t),
            None => st.tat.remove(&charge.key),
        };
    }

    /// [`Counters::release`], synchronous.
    pub fn release_now(&self, lease: &str, keys: &[String]) {
        let mut st = self.lock();
        for key in keys {
            if let Some(l) = st.leases.get_mut(key) {
                l.remove(lease);
                if l.is_empty() {
                    st.leases.remove(key);
                }
            }
        }
    }

    /// [`Counters::seed_spend`], synchronous.
    pub fn seed_spend_now(&self, key: &str, spent: u64, ttl_ms: u64) {
        let now = (self.now_us)();
        let mut st = self.lock();
        let live = st.spend.get(key).is_some_and(|(_, exp)| *exp > now);
        if !live {
            let seeded = Spent { spent, ..Spent::default() };
            st.spend.insert(key.to_owned(), (seeded, now + ttl_ms as f64 * 1000.0));
        }
    }

    /// [`Counters::settle_spend`], synchronous.
    pub fn settle_spend_now(&self, charge: &Charge, cost: Option<u64>) {
        let Meter::Spend { amount, .. } = charge.meter else { return };
        let mut st = self.lock();
        if let Some((s, _)) = st.spend.get_mut(&charge.key) {
            s.reserved = s.reserved.saturating_sub(amount);
            match cost {
                Some(c) => s.spent = s.spent.saturating_add(c),
                None => s.uncertain = s.uncertain.saturating_add(amount),
            }
        }
    }

    /// [`Counters::read_spend`], synchronous.
    pub fn read_spend_now(&self, key: &str) -> Option<Spent> {
        let now = (self.now_us)();
        self.lock().spend.get(key).filter(|(_, exp)| *exp > now).map(|(s, _)| *s)
    }

    /// [`Counters::renew`], synchronous.
    pub fn renew_now(&self, leases: &[(String, String)], ttl_ms: u64) {
        let now = (self.now_us)();
        let mut st = self.lock();
        for (key, lease) in leases {
            if let Some(exp) = st.leases.get_mut(key).and_then(|l| l.get_mut(lease))
                && *exp > now
            {
                *exp = now + ttl_ms as f64 * 1000.0;
            }
        }
    }
}

impl State {
    fn sweep(&mut self, now: f64) {
        self.steps += 1;
        if self.steps < SWEEP_EVERY {
            return;
        }
        self.steps = 0;
        self.tat.retain(|_, tat| *tat > now);
        self.leases.retain(|_, l| {
            l.retain(|_, exp| *exp > now);
            !l.is_empty()
        });
        self.spend.retain(|_, (_, exp)| *exp > now);
    }
}

/// One GCRA step: the new arrival time and the level after it, or the
/// milliseconds until it would fit (`None`: never, `amount` exceeds `limit`).
/// The Redis script (`switchyard_store::redis`) computes the same.
pub fn gcra(
    tat: f64,
    now: f64,
    limit: u64,
    window_ms: u64,
    amount: u64,
) -> Result<(f64, Level), Option<u64>> {
    if limit == 0 || amount > limit {
        return Err(None);
    }
    let window = window_ms as f64 * 1000.0;
    let interval = window / limit as f64;
    let new = tat.max(now) + amount as f64 * interval;
    let ahead = new - now;
    if ahead > window + SLACK_US {
        let wait_us = ahead - window;
        return Err(Some((wait_us / 1000.0).ceil() as u64));
    }
    let remaining = ((window - ahead + SLACK_US) / interval).floor().max(0.0) as u64;
    Ok((new, Level { limit, remaining, reset_ms: (ahead / 1000.0).ceil() as u64 }))
}

/// The arrival time after `delta` more units (negative: given back, never
/// earlier than `now`, a full counter); `None`: the counter is full.
fn adjusted(current: Option<f64>, now: f64, interval: f64, delta: i64) -> Option<f64> {
    let base = current.unwrap_or(now).max(now);
    let next = base + delta as f64 * interval;
    (next > now).then_some(next)
}

impl Counters for LocalCounters {
    fn name(&self) -> &'static str {
        "local"
    }
    fn acquire<'a>(
        &'a self,
        lease: &'a str,
        charges: &'a [Charge],
    ) -> BoxFuture<'a, Result<Acquired, BackendError>> {
        Box::pin(std::future::ready(Ok(self.acquire_now(lease, charges))))
    }
    fn adjust<'a>(
        &'a self,
        charge: &'a Charge,
        delta: i64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.adjust_now(charge, delta);
        Box::pin(std::future::ready(Ok(())))
    }
    fn release<'a>(
        &'a self,
        lease: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.release_now(lease, keys);
        Box::pin(std::future::ready(Ok(())))
    }
    fn renew<'a>(
        &'a self,
        leases: &'a [(String, String)],
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.renew_now(leases, ttl_ms);
        Box::pin(std::future::ready(Ok(())))
    }
    fn seed_spend<'a>(
        &'a self,
        key: &'a str,
        spent: u64,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.seed_spend_now(key, spent, ttl_ms);
        Box::pin(std::future::ready(Ok(())))
    }
    fn settle_spend<'a>(
        &'a self,
        charge: &'a Charge,
        cost: Option<u64>,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        self.settle_spend_now(charge, cost);
        Box::pin(std::future::ready(Ok(())))
    }
    fn read_spend<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Spent>, BackendError>> {
        Box::pin(std::future::ready(Ok(self.read_spend_now(key))))
    }
}

#[cfg(test)]
#[path = "local_tests.rs"]
mod tests;
