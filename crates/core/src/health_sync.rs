//! Health and latency shared by instances: the synchronous [`HealthState`] and
//! [`LatencyState`] the attempt loop reads on every attempt stay local (a
//! [`HealthRegistry`], a [`LatencyTracker`]); a background task synchronises them
//! through a [`HealthSync`] backend (Redis: `switchyard_store::redis`), so no
//! request ever waits on the backend.
//!
//! Each tick (every [`TICK`], and at once after a local transition) it
//! publishes what changed here since the last exchange (an open with its epoch
//! and cooldown end, a close after a probe, throttle and quarantine deadlines),
//! and takes in every credential's shared record ([`SharedRecord::merge`] says
//! which record wins). Breakers opened elsewhere are thus refused here within a
//! tick. The failure score is not shared: each instance counts its own
//! failures; the open they lead to is shared.
//!
//! **One probe across instances.** Once an open breaker's cooldown is over, an
//! instance takes the half-open probe only while it holds the probe lease of
//! that epoch in the backend ([`HealthSync::claim_probe`], renewed while the
//! probe is out). Without it the breaker reads as half-open with the probe in
//! flight (refused, skipped by the circuit filter), and the task is asked to
//! claim the lease: an instance with traffic wins it within a round trip; the
//! others wait for the probe's outcome, published like any transition.
//!
//! **Backend unreachable.** Each instance keeps its own breakers (probes need no
//! lease then); failed exchanges count in
//! `gateway_state_backend_errors_total{backend}`, and the log says so once per
//! episode. When the backend answers again, the local changes are published and
//! the shared ones taken in.
//!
//! **Latency.** Every [`LATENCY_EVERY`], each instance publishes its averages
//! and reads the others'; an estimate is the mean of this instance's average and
//! the other instances' (each counted once, however many samples it saw). The
//! destination windows' summaries travel with them
//! ([`crate::destinations::SharedDestinations`]).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::breaker::remote::View;
use crate::breaker::{
    BreakerConfig, BreakerState, Clearance, CredentialKey, HealthRegistry, Outcome, Permit,
    SharedRecord,
};
use crate::clock::{UnixMs, unique};
use crate::continuity::BoxFuture;
use crate::limits::BackendError;
use crate::runtime::LatencyTracker;
use crate::state::{HealthState, LatencyState};

/// How often the task exchanges health with the backend.
pub const TICK: Duration = Duration::from_millis(200);
/// How often latency averages are exchanged.
pub const LATENCY_EVERY: Duration = Duration::from_secs(1);
/// How long a probe lease lasts in the backend unless renewed (renewed every
/// tick while the probe is out; a crashed holder's lapses after this).
pub const LEASE_TTL: Duration = Duration::from_secs(3);
/// A lease is taken as ours this much less long than the backend keeps it, so
/// we never probe on a lease the backend has let go.
const LEASE_MARGIN: Duration = Duration::from_millis(500);
/// Ticks woken early (by transitions, wanted leases) are at least this far
/// apart, so a busy instance does not exchange back to back.
const MIN_GAP: Duration = Duration::from_millis(20);

/// One instance's latency averages of one identity, in milliseconds, and its
/// destination window's summary.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latency {
    /// Whole attempts.
    pub attempt_ms: Option<f64>,
    /// Time to first token (streams).
    pub ttft_ms: Option<f64>,
    /// The destination window (`crate::destinations`); `None` from an
    /// instance that publishes none (an older one), or with nothing in it.
    pub window: Option<crate::destinations::Summary>,
}

/// Where instances meet: the shared records of every credential, the probe
/// leases, and every instance's latency averages.
pub trait HealthSync: Send + Sync + Debug {
    /// The backend's name, for metrics and logs.
    fn name(&self) -> &'static str;
    /// Publish `push` (each merged over the stored record by
    /// [`SharedRecord::merge`], atomically) and return every stored record.
    fn exchange<'a>(
        &'a self,
        push: &'a [(CredentialKey, SharedRecord)],
    ) -> BoxFuture<'a, Result<Vec<(CredentialKey, SharedRecord)>, BackendError>>;
    /// Take the probe lease of `key` in `epoch` for `owner` (this instance) for
    /// `ttl`, or renew it if `owner` holds it: whether `owner` holds it now.
    fn claim_probe<'a>(
        &'a self,
        key: &'a CredentialKey,
        epoch: u64,
        owner: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, BackendError>>;
    /// Publish `owner`'s latency averages and return the other instances'
    /// recent ones (identity, averages), one entry per instance and identity.
    fn exchange_latency<'a>(
        &'a self,
        owner: u64,
        push: &'a [(String, Latency)],
    ) -> BoxFuture<'a, Result<Vec<(String, Latency)>, BackendError>>;
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The backend's state as this instance sees it: reachable or not (logged once
/// per episode, counted per failure).
#[derive(Debug)]
struct Link {
    backend: Arc<dyn HealthSync>,
    degraded: AtomicBool,
    metrics: bool,
}

impl Link {
    fn failed(&self, e: &BackendError) {
        if self.metrics {
            crate::telemetry::counter!("gateway_state_backend_errors_total", "backend" => self.backend.name()).increment(1);
        }
        if !self.degraded.swap(true, Ordering::AcqRel) {
            tracing::error!(backend = self.backend.name(), error = %e, "shared health backend unavailable: breakers are kept per instance until it answers again");
        }
    }

    fn recovered(&self) {
        if self.degraded.load(Ordering::Relaxed) && self.degraded.swap(false, Ordering::AcqRel) {
            tracing::warn!(
                backend = self.backend.name(),
                "shared health backend answers again: breakers are shared again"
            );
        }
    }

    fn degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Default)]
struct Probes {
    /// Leases held: the epoch, and until when we take it as ours.
    held: HashMap<CredentialKey, (u64, Instant)>,
    /// Leases to claim at the next tick (a request wanted the probe).
    wanted: HashMap<CredentialKey, u64>,
}

/// Breakers, throttles and quarantines shared through a [`HealthSync`]: a
/// [`HealthState`] whose every call is local, synchronised by [`Shared`]'s task.
#[derive(Debug)]
pub struct SharedHealth {
    local: HealthRegistry,
    link: Arc<Link>,
    owner: u64,
    probes: Mutex<Probes>,
    /// Every shared record as of the last exchange: what changed here since is
    /// published at the next.
    known: Mutex<HashMap<CredentialKey, SharedRecord>>,
    wake: Arc<Notify>,
}

impl SharedHealth {
    /// Whether this instance may take the probe of `key` in `epoch`; if not and
    /// `want`, the lease is claimed at the next tick.
    fn may_probe(&self, key: &CredentialKey, epoch: u64, want: bool) -> bool {
        if self.link.degraded() {
            return true;
        }
        let mut probes = lock(&self.probes);
        if probes.held.get(key).is_some_and(|(e, until)| *e == epoch && *until > Instant::now()) {
            return true;
        }
        if want && probes.wanted.insert(key.clone(), epoch) != Some(epoch) {
            self.wake.notify_one();
        }
        false
    }

    fn gate(&self, want: bool) -> impl Fn(&CredentialKey, u64) -> bool + '_ {
        move |key, epoch| self.may_probe(key, epoch, want)
    }

    /// One exchange: publish what changed here, take in the shared records,
    /// claim or renew the probe leases wanted or in use.
    pub async fn tick(&self) {
        let views = self.local.views();
        let push: Vec<(CredentialKey, SharedRecord)> = {
            let known = lock(&self.known);
            let closed = SharedRecord::default();
            views
                .iter()
                .filter(|v| !v.record.agrees(known.get(&v.key).unwrap_or(&closed)))
                .map(|v| (v.key.clone(), v.record))
                .collect()
        };
        let remote = match self.link.backend.exchange(&push).await {
            Ok(remote) => remote,
            Err(e) => return self.link.failed(&e),
        };
        self.link.recovered();
        let seen: HashMap<&CredentialKey, &SharedRecord> =
            views.iter().map(|v| (&v.key, &v.record)).collect();
        let mut known = HashMap::with_capacity(remote.len());
        for (key, record) in remote {
            self.local.adopt(&key, &record, seen.get(&key).copied());
            known.insert(key, record);
        }
        // A key missing remotely (the backend lost it) is published again.
        *lock(&self.known) = known;
        self.claim_probes(&views).await;
    }

    async fn claim_probes(&self, views: &[View]) {
        let mut claims: HashMap<CredentialKey, u64> =
            std::mem::take(&mut lock(&self.probes).wanted);
        for v in views.iter().filter(|v| v.probing) {
            claims.insert(v.key.clone(), v.record.epoch);
        }
        for (key, epoch) in claims {
            // Only for the breaker as it is now: a lease of an old epoch is useless.
            if !self.local.record(&key).is_some_and(|r| r.open && r.epoch == epoch) {
                continue;
            }
            let asked = Instant::now();
            match self.link.backend.claim_probe(&key, epoch, self.owner, LEASE_TTL).await {
                Ok(true) => {
                    let until = asked + LEASE_TTL.saturating_sub(LEASE_MARGIN);
                    lock(&self.probes).held.insert(key, (epoch, until));
                }
                Ok(false) => {
                    lock(&self.probes).held.remove(&key);
                }
                Err(e) => return self.link.failed(&e),
            }
        }
        let now = Instant::now();
        lock(&self.probes).held.retain(|_, (_, until)| *until > now);
    }
}

impl HealthState for SharedHealth {
    fn set_config(&self, config: BreakerConfig) {
        self.local.set_config(config);
    }
    fn clear(&self, key: &CredentialKey, now: UnixMs) -> Clearance {
        self.local.clear_gated(key, now, &self.gate(true))
    }
    fn report(&self, permit: Permit, outcome: Outcome, now: UnixMs) {
        let key = permit.key.clone();
        let before = self.local.record(&key);
        self.local.report(permit, outcome, now);
        if self.local.record(&key) != before {
            // A transition: publish it now rather than at the next tick.
            self.wake.notify_one();
        }
    }
    fn abandon(&self, permit: Permit) {
        self.local.abandon(permit);
    }
    fn state(&self, key: &CredentialKey, now: UnixMs) -> BreakerState {
        // The circuit filter asks before any clear: wanting the lease here lets
        // an instance that routes around a half-open breaker still probe it.
        self.local.state_gated(key, now, &self.gate(true))
    }
    fn retain_for_reload(&self, keep: &dyn Fn(&CredentialKey) -> bool) {
        self.local.retain_for_reload(keep);
        lock(&self.known).retain(|k, _| keep(k));
    }
    fn snapshot(&self, now: UnixMs) -> Vec<(CredentialKey, BreakerState)> {
        self.local.snapshot_gated(now, &self.gate(false))
    }
}

/// Latency averages shared through a [`HealthSync`]: this instance's
/// [`LatencyTracker`], blended with the other instances' latest averages.
#[derive(Debug)]
pub struct SharedLatency {
    local: LatencyTracker,
    /// The destination windows, published and read with the averages.
    windows: Arc<crate::destinations::SharedDestinations>,
    link: Arc<Link>,
    owner: u64,
    /// The other instances' averages by identity: sums and counts.
    others: Mutex<HashMap<String, Blend>>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Blend {
    attempt: (f64, u32),
    ttft: (f64, u32),
}

fn mean(local: Option<f64>, (sum, n): (f64, u32)) -> Option<f64> {
    let (sum, n) = match local {
        Some(l) => (sum + l, n + 1),
        None => (sum, n),
    };
    (n > 0).then(|| sum / f64::from(n))
}

impl SharedLatency {
    /// Publish this instance's averages and read the others'.
    pub async fn tick(&self) {
        let mut push: HashMap<String, Latency> = self
            .local
            .all()
            .into_iter()
            .map(|(id, attempt_ms, ttft_ms)| (id, Latency { attempt_ms, ttft_ms, window: None }))
            .collect();
        for (id, w) in self.windows.local(UnixMs::now()) {
            push.entry(id).or_default().window = Some(w);
        }
        let push: Vec<(String, Latency)> = push.into_iter().collect();
        let theirs = match self.link.backend.exchange_latency(self.owner, &push).await {
            Ok(t) => t,
            Err(e) => return self.link.failed(&e),
        };
        self.windows.set_others(theirs.iter().filter_map(|(id, l)| Some((id.clone(), l.window?))));
        let mut others: HashMap<String, Blend> = HashMap::new();
        for (id, l) in theirs {
            let b = others.entry(id).or_default();
            let add = |(s, n): &mut (f64, u32), v: Option<f64>| {
                if let Some(v) = v.filter(|v| v.is_finite()) {
                    (*s, *n) = (*s + v, *n + 1);
                }
            };
            add(&mut b.attempt, l.attempt_ms);
            add(&mut b.ttft, l.ttft_ms);
        }
        *lock(&self.others) = others;
    }
}

impl LatencyState for SharedLatency {
    fn observe_attempt(&self, identity: &str, ms: f64) {
        self.local.observe_attempt(identity, ms);
    }
    fn observe_ttft(&self, identity: &str, ms: f64) {
        self.local.observe_ttft(identity, ms);
    }
    fn estimate(&self, identity: &str) -> Option<f64> {
        let (attempt, ttft) = self.local.averages(identity);
        let theirs = lock(&self.others).get(identity).copied().unwrap_or_default();
        mean(ttft, theirs.ttft).or_else(|| mean(attempt, theirs.attempt))
    }
    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.local.retain(keep);
        lock(&self.others).retain(|k, _| keep(k));
    }
}

/// Health and latency shared through one backend, and the task that
/// synchronises them.
#[derive(Debug, Clone)]
pub struct Shared {
    /// The [`HealthState`] for [`crate::runtime::Runtime::health`].
    pub health: Arc<SharedHealth>,
    /// The [`LatencyState`] for [`crate::runtime::Runtime::latency`].
    pub latency: Arc<SharedLatency>,
    /// The destination windows for [`crate::runtime::Runtime::destinations`].
    pub destinations: Arc<crate::destinations::SharedDestinations>,
}

impl Shared {
    /// Both states over `backend`, this instance known to it by a fresh random
    /// id; `metrics`: count backend failures. Nothing runs until
    /// [`spawn`](Self::spawn) (or [`tick`](Self::tick), in tests).
    pub fn new(backend: Arc<dyn HealthSync>, config: BreakerConfig, metrics: bool) -> Self {
        let link = Arc::new(Link { backend, degraded: AtomicBool::new(false), metrics });
        let owner = unique();
        let destinations = Arc::new(crate::destinations::SharedDestinations::default());
        Shared {
            health: Arc::new(SharedHealth {
                local: HealthRegistry::new(config),
                link: link.clone(),
                owner,
                probes: Mutex::default(),
                known: Mutex::default(),
                wake: Arc::new(Notify::new()),
            }),
            latency: Arc::new(SharedLatency {
                local: LatencyTracker::default(),
                windows: Arc::clone(&destinations),
                link,
                owner,
                others: Mutex::default(),
            }),
            destinations,
        }
    }

    /// Exchange health now, and latency too when `latency`.
    pub async fn tick(&self, latency: bool) {
        self.health.tick().await;
        if latency {
            self.latency.tick().await;
        }
    }

    /// Run the synchronisation on the current tokio runtime until both states
    /// are dropped: health every [`TICK`] (sooner after a transition or a wanted
    /// probe), latency every [`LATENCY_EVERY`].
    pub fn spawn(&self) -> tokio::task::JoinHandle<()> {
        let health: Weak<SharedHealth> = Arc::downgrade(&self.health);
        let latency: Weak<SharedLatency> = Arc::downgrade(&self.latency);
        let wake = self.health.wake.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(TICK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut latency_at = Instant::now();
            loop {
                tokio::select! {
                    _ = every.tick() => {}
                    () = wake.notified() => {}
                }
                let started = tokio::time::Instant::now();
                let (Some(h), Some(l)) = (health.upgrade(), latency.upgrade()) else { return };
                h.tick().await;
                if latency_at.elapsed() >= LATENCY_EVERY {
                    latency_at = Instant::now();
                    l.tick().await;
                }
                drop((h, l));
                tokio::time::sleep_until(started + MIN_GAP).await;
            }
        })
    }
}

/// A [`HealthSync`] in this process, for several gateways in one process (and
/// tests): the same rules as the Redis backend, on the local clock.
#[derive(Debug, Default)]
pub struct MemorySync {
    inner: Mutex<MemoryInner>,
}

#[derive(Debug, Default)]
struct MemoryInner {
    records: HashMap<CredentialKey, SharedRecord>,
    leases: HashMap<(CredentialKey, u64), (u64, Instant)>,
    latency: HashMap<(u64, String), Latency>,
    /// Set: every call fails (an outage, in tests).
    down: bool,
}

impl MemorySync {
    /// Make every call fail (`true`) or answer again.
    pub fn set_down(&self, down: bool) {
        lock(&self.inner).down = down;
    }

    fn up(&self) -> Result<MutexGuard<'_, MemoryInner>, BackendError> {
        let inner = lock(&self.inner);
        if inner.down { Err(BackendError("memory sync: down".into())) } else { Ok(inner) }
    }
}

impl HealthSync for MemorySync {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn exchange<'a>(
        &'a self,
        push: &'a [(CredentialKey, SharedRecord)],
    ) -> BoxFuture<'a, Result<Vec<(CredentialKey, SharedRecord)>, BackendError>> {
        let out = self.up().map(|mut inner| {
            for (key, record) in push {
                let merged = SharedRecord::merge(inner.records.get(key), record);
                inner.records.insert(key.clone(), merged);
            }
            inner.records.iter().map(|(k, r)| (k.clone(), *r)).collect()
        });
        Box::pin(std::future::ready(out))
    }

    fn claim_probe<'a>(
        &'a self,
        key: &'a CredentialKey,
        epoch: u64,
        owner: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, BackendError>> {
        let out = self.up().map(|mut inner| {
            let now = Instant::now();
            let lease = inner.leases.entry((key.clone(), epoch)).or_insert((owner, now + ttl));
            if lease.1 <= now {
                *lease = (owner, now + ttl);
            }
            if lease.0 == owner {
                lease.1 = now + ttl;
            }
            lease.0 == owner
        });
        Box::pin(std::future::ready(out))
    }

    fn exchange_latency<'a>(
        &'a self,
        owner: u64,
        push: &'a [(String, Latency)],
    ) -> BoxFuture<'a, Result<Vec<(String, Latency)>, BackendError>> {
        let out = self.up().map(|mut inner| {
            for (id, l) in push {
                inner.latency.insert((owner, id.clone()), *l);
            }
            inner
                .latency
                .iter()
                .filter(|((o, _), _)| *o != owner)
                .map(|((_, id), l)| (id.clone(), *l))
                .collect()
        });
        Box::pin(std::future::ready(out))
    }
}

#[cfg(test)]
#[path = "health_sync_tests.rs"]
mod tests;
