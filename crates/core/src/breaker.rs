//! Per-credential health for the routing engine: circuit breakers, 429 throttling
//! and 401/403 quarantine. Pure logic behind one mutex, with the clock injected
//! (every call takes `now`, in unix milliseconds, so deadlines mean the same in
//! every instance), so there are no timers and no IO; expiries are evaluated
//! lazily when the state is read.
//!
//! One entry per [`CredentialKey`] (provider name, credential fingerprint). Its state:
//!
//! - **Breaker.** Closed → Open when the exponentially decayed failure score
//!   (`score·2^(−Δt/half_life) + 1` on each failure), rounded, reaches `threshold`. Open →
//!   HalfOpen after `min(max_cooldown, max(cooldown, Retry-After))`. HalfOpen admits
//!   one probe at a time; its success closes (score 0), its failure reopens.
//! - **Epochs.** Each transition to Open gives the entry a new epoch (a random
//!   64-bit value, never reused, even for an identity dropped and re-added by a
//!   reload, and never confused between instances that share the state). A [`Permit`] carries the epoch it
//!   was admitted in; a success or failure whose epoch is not the entry's current
//!   one is ignored entirely (no score, no transition): a late success admitted
//!   before the breaker opened never closes it.
//! - **Throttle (429)** and **quarantine (401/403)** are separate deadlines on the
//!   entry. They are facts about the credential at the moment the answer arrived,
//!   so they apply whatever the permit's epoch, and they never touch the score.
//!
//! While several reasons to refuse hold at once, [`HealthRegistry::state`] reports
//! the first of: quarantined, open, throttled; otherwise half-open or closed.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::{UnixMs, unique};

pub(crate) mod remote;
pub use remote::SharedRecord;

/// How long a 429 without a usable `Retry-After` throttles a credential.
pub const THROTTLE_DEFAULT: Duration = Duration::from_secs(1);
/// The longest a single 429 throttles a credential, whatever its `Retry-After`.
pub const THROTTLE_MAX: Duration = Duration::from_secs(60);
/// The credential id of a provider that uses no credential.
pub const NO_CREDENTIAL: &str = "none";

/// Breaker tuning. Values are taken as given (validation belongs to config
/// compilation): a zero `half_life` forgets every failure at once, so only a
/// `threshold` ≤ 1 can open; a `max_cooldown` below `cooldown` wins.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BreakerConfig {
    /// Decayed failure score at which a closed breaker opens.
    pub threshold: f64,
    /// Time for a failure's weight in the score to halve.
    pub half_life: Duration,
    /// Minimum time a breaker stays open.
    pub cooldown: Duration,
    /// Maximum time a breaker stays open, even with a longer `Retry-After`.
    pub max_cooldown: Duration,
    /// How long a 401/403 keeps a credential out of rotation.
    pub quarantine: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self {
            threshold: 5.0,
            half_life: Duration::from_secs(30),
            cooldown: Duration::from_secs(30),
            max_cooldown: Duration::from_secs(300),
            quarantine: Duration::from_secs(300),
        }
    }
}

impl BreakerConfig {
    /// `min(max_cooldown, max(cooldown, retry_after))`.
    fn cooldown_for(&self, retry_after: Option<Duration>) -> Duration {
        retry_after.map_or(self.cooldown, |ra| self.cooldown.max(ra)).min(self.max_cooldown)
    }

    /// The factor a score decays by over `elapsed`: `2^(−elapsed/half_life)`.
    fn decay(&self, elapsed: Duration) -> f64 {
        if self.half_life.is_zero() {
            return 0.0;
        }
        (-(elapsed.as_secs_f64() / self.half_life.as_secs_f64())).exp2()
    }
}

/// The identity health is tracked for: a provider and one of its credentials
/// (a key fingerprint such as `key-1a2b3c4d`, or [`NO_CREDENTIAL`]).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct CredentialKey {
    /// The provider's name.
    pub provider: String,
    /// The credential's fingerprint, or [`NO_CREDENTIAL`]; never the key itself.
    pub credential: String,
}

impl CredentialKey {
    /// The key for `credential` (a fingerprint) of `provider`.
    pub fn new(provider: impl Into<String>, credential: impl Into<String>) -> Self {
        Self { provider: provider.into(), credential: credential.into() }
    }
}

/// What a credential's health looks like at a given instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Healthy: every request is admitted.
    Closed,
    /// Too many recent failures: refused until `until`, then half-open.
    Open {
        /// When the cooldown ends.
        until: UnixMs,
    },
    /// Cooldown over: one probe at a time is admitted.
    HalfOpen {
        /// The probe slot is taken: nothing else is admitted until it reports.
        probe_in_flight: bool,
    },
    /// A 429 asked us to back off until `until`.
    Throttled {
        /// When the back-off ends.
        until: UnixMs,
    },
    /// A 401/403: this credential is out of rotation until `until`.
    Quarantined {
        /// When the quarantine ends.
        until: UnixMs,
    },
}

impl BreakerState {
    /// A stable name for metrics and logs.
    pub fn name(&self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open { .. } => "open",
            BreakerState::HalfOpen { .. } => "half_open",
            BreakerState::Throttled { .. } => "throttled",
            BreakerState::Quarantined { .. } => "quarantined",
        }
    }

    /// Whether a request may be sent now: closed, or half-open with the probe slot
    /// free (the circuit filter's test).
    pub fn is_available(&self) -> bool {
        matches!(self, BreakerState::Closed | BreakerState::HalfOpen { probe_in_flight: false })
    }
}

/// The answer to [`HealthRegistry::clear`]: may a request be sent on a credential?
#[derive(Debug, PartialEq, Eq)]
pub enum Clearance {
    /// Send the request; report its outcome with the permit (or abandon it).
    Allowed(Permit),
    /// Do not send; `state` says why.
    Rejected {
        /// The refusing state (never `Closed`).
        state: BreakerState,
    },
}

/// Leave to send one request on a credential. Hand it back exactly once: to
/// [`HealthRegistry::report`] with the outcome, or to [`HealthRegistry::abandon`]
/// when there is none (the request was cancelled). Only a health state's `clear`
/// makes permits: [`HealthRegistry::clear`] here, or [`Permit::issued`] in another
/// [`HealthState`](crate::state::HealthState) (one shared through Redis, say).
#[derive(Debug, PartialEq, Eq)]
pub struct Permit {
    /// The credential it was given for.
    pub key: CredentialKey,
    /// The breaker epoch the request was admitted in.
    pub epoch: u64,
    /// Whether this request is the half-open probe.
    pub probe: bool,
    /// The token owning this probe's claim on the slot (0 for non-probes): only
    /// the probe holding the slot can free it, in whichever instance it runs.
    ticket: u64,
}

impl Permit {
    /// A permit a [`HealthState`](crate::state::HealthState) implementation issues
    /// from its `clear`: `epoch` the breaker epoch it was admitted in, `ticket`
    /// the token that owns the half-open probe slot when `probe` (0 otherwise).
    /// Tickets and epochs must mean the same in every instance sharing the state
    /// (unique across them, e.g. random), so a report from one frees only its own
    /// probe in another.
    pub fn issued(key: CredentialKey, epoch: u64, probe: bool, ticket: u64) -> Self {
        Self { key, epoch, probe, ticket }
    }

    /// The token owning this permit's probe slot (0 for a request that is not
    /// the probe): what a shared health state compares before freeing the slot.
    pub fn ticket(&self) -> u64 {
        self.ticket
    }
}

/// How an admitted request ended, as far as the credential's health is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The upstream answered.
    Success,
    /// 5xx, timeout, transport failure: counts toward opening the breaker.
    Failure {
        /// The upstream's `Retry-After`: lengthens the cooldown if this failure
        /// opens the breaker (up to `max_cooldown`).
        retry_after: Option<Duration>,
    },
    /// 429: throttles the credential; not a failure.
    Throttled {
        /// How long to back off: absent, [`THROTTLE_DEFAULT`]; at most
        /// [`THROTTLE_MAX`].
        retry_after: Option<Duration>,
    },
    /// 401/403: quarantines the credential; not a failure.
    AuthFailure,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// `scored_at` is when `score` was last updated (None: never failed).
    Closed {
        score: f64,
        scored_at: Option<UnixMs>,
    },
    Open {
        until: UnixMs,
    },
    /// `probe`: the ticket of the probe holding the slot, if any.
    HalfOpen {
        probe: Option<u64>,
    },
}

const CLOSED: Phase = Phase::Closed { score: 0.0, scored_at: None };

#[derive(Debug)]
struct Entry {
    phase: Phase,
    epoch: u64,
    /// The cooldown end of this epoch's open (0 before any): kept through
    /// half-open and close, so instances sharing health can order opens.
    until: UnixMs,
    throttled_until: Option<UnixMs>,
    quarantined_until: Option<UnixMs>,
}

impl Entry {
    fn state(&self, now: UnixMs) -> BreakerState {
        if let Some(until) = self.quarantined_until.filter(|u| *u > now) {
            return BreakerState::Quarantined { until };
        }
        if let Phase::Open { until } = self.phase
            && until > now
        {
            return BreakerState::Open { until };
        }
        if let Some(until) = self.throttled_until.filter(|u| *u > now) {
            return BreakerState::Throttled { until };
        }
        match self.phase {
            Phase::Closed { .. } => BreakerState::Closed,
            Phase::Open { .. } => BreakerState::HalfOpen { probe_in_flight: false },
            Phase::HalfOpen { probe } => {
                BreakerState::HalfOpen { probe_in_flight: probe.is_some() }
            }
        }
    }

    fn open(&mut self, config: &BreakerConfig, now: UnixMs, ra: Option<Duration>) {
        self.until = later(now, config.cooldown_for(ra));
        self.phase = Phase::Open { until: self.until };
        self.epoch = unique();
    }

    fn new() -> Self {
        Entry {
            phase: CLOSED,
            epoch: unique(),
            until: UnixMs(0),
            throttled_until: None,
            quarantined_until: None,
        }
    }

    /// Free the half-open slot if `permit` is the probe holding it.
    fn release(&mut self, permit: &Permit) {
        if let Phase::HalfOpen { probe: Some(ticket) } = self.phase
            && permit.probe
            && permit.epoch == self.epoch
            && permit.ticket == ticket
        {
            self.phase = Phase::HalfOpen { probe: None };
        }
    }
}

#[derive(Debug)]
struct Inner {
    config: BreakerConfig,
    entries: HashMap<CredentialKey, Entry>,
}

/// `now + d`, saturating instead of overflowing on absurd durations.
fn later(now: UnixMs, d: Duration) -> UnixMs {
    now + d
}

/// Health state of every credential the gateway has used. Lives beside the
/// catalog snapshot and survives reloads (see [`HealthRegistry::retain_for_reload`]).
#[derive(Debug)]
pub struct HealthRegistry {
    inner: Mutex<Inner>,
}

impl Default for HealthRegistry {
    fn default() -> Self {
        Self::new(BreakerConfig::default())
    }
}

impl HealthRegistry {
    /// An empty registry (every credential closed) with this tuning.
    pub fn new(config: BreakerConfig) -> Self {
        Self { inner: Mutex::new(Inner { config, entries: HashMap::new() }) }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replace the tuning (on reload). Deadlines already set keep their value.
    pub fn set_config(&self, config: BreakerConfig) {
        self.lock().config = config;
    }

    /// May a request be sent on `key` now? A half-open breaker hands its single
    /// probe slot to the caller (`Permit::probe`).
    pub fn clear(&self, key: &CredentialKey, now: UnixMs) -> Clearance {
        self.clear_gated(key, now, &|_, _| true)
    }

    /// Record how a request admitted with `permit` ended. Success and failure only
    /// count in the permit's own epoch; throttling and quarantine always apply. A
    /// permit whose entry was dropped by a reload is ignored.
    pub fn report(&self, permit: Permit, outcome: Outcome, now: UnixMs) {
        let mut inner = self.lock();
        let Inner { config, entries } = &mut *inner;
        let Some(entry) = entries.get_mut(&permit.key) else {
            return;
        };
        let current = permit.epoch == entry.epoch;
        match outcome {
            Outcome::Success if current => {
                if matches!(entry.phase, Phase::HalfOpen { .. }) && permit.probe {
                    entry.phase = CLOSED;
                }
            }
            Outcome::Failure { retry_after } if current => match entry.phase {
                Phase::Closed { score, scored_at } => {
                    let elapsed = scored_at.map_or(Duration::ZERO, |t| now.since(t));
                    let score = score * config.decay(elapsed) + 1.0;
                    // Rounded: `threshold` failures in quick succession open the
                    // breaker even though each has decayed a hair by the next.
                    if score.round() >= config.threshold {
                        entry.open(config, now, retry_after);
                    } else {
                        entry.phase = Phase::Closed { score, scored_at: Some(now) };
                    }
                }
                Phase::HalfOpen { .. } if permit.probe => {
                    entry.open(config, now, retry_after);
                }
                _ => {}
            },
            Outcome::Success | Outcome::Failure { .. } => {}
            Outcome::Throttled { retry_after } => {
                let wait = retry_after.unwrap_or(THROTTLE_DEFAULT).min(THROTTLE_MAX);
                let until = later(now, wait);
                entry.throttled_until = Some(entry.throttled_until.map_or(until, |u| u.max(until)));
                entry.release(&permit);
            }
            Outcome::AuthFailure => {
                entry.quarantined_until = Some(later(now, config.quarantine));
                entry.release(&permit);
            }
        }
    }

    /// The request admitted with `permit` ended with no outcome (cancelled): free
    /// the half-open slot if it held it; nothing else changes.
    pub fn abandon(&self, permit: Permit) {
        if let Some(entry) = self.lock().entries.get_mut(&permit.key) {
            entry.release(&permit);
        }
    }

    /// The state of `key` at `now` (unknown keys are closed). Reading changes nothing.
    pub fn state(&self, key: &CredentialKey, now: UnixMs) -> BreakerState {
        self.lock().entries.get(key).map_or(BreakerState::Closed, |e| e.state(now))
    }

    /// Whether `key` would be admitted at `now` (the circuit filter's test).
    pub fn is_available(&self, key: &CredentialKey, now: UnixMs) -> bool {
        self.state(key, now).is_available()
    }

    /// On a config reload: keep the state of identities `keep` accepts, drop the
    /// rest, and clear every half-open probe slot (a probe from the old
    /// configuration never blocks the new one; its outcome still counts).
    pub fn retain_for_reload(&self, keep: impl Fn(&CredentialKey) -> bool) {
        self.lock().entries.retain(|key, entry| {
            if !keep(key) {
                return false;
            }
            if let Phase::HalfOpen { probe } = &mut entry.phase {
                *probe = None;
            }
            true
        });
    }

    /// Every known identity and its state at `now`, sorted by key (for metrics).
    pub fn snapshot(&self, now: UnixMs) -> Vec<(CredentialKey, BreakerState)> {
        let mut all: Vec<_> =
            self.lock().entries.iter().map(|(k, e)| (k.clone(), e.state(now))).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn key(credential: &str) -> CredentialKey {
        CredentialKey::new("openai", credential)
    }

    fn allowed(adm: Clearance) -> Permit {
        match adm {
            Clearance::Allowed(p) => p,
            Clearance::Rejected { state } => panic!("expected admission, got {state:?}"),
        }
    }

    fn rejected(adm: Clearance) -> BreakerState {
        match adm {
            Clearance::Allowed(p) => panic!("expected rejection, got {p:?}"),
            Clearance::Rejected { state } => state,
        }
    }

    /// Admit and report a failure on `k` at `now`.
    fn fail(reg: &HealthRegistry, k: &CredentialKey, now: UnixMs, retry_after: Option<Duration>) {
        let p = allowed(reg.clear(k, now));
        reg.report(p, Outcome::Failure { retry_after }, now);
    }

    /// Open `k` at `now` with the default config (5 failures).
    fn open(reg: &HealthRegistry, k: &CredentialKey, now: UnixMs) {
        for _ in 0..5 {
            fail(reg, k, now, None);
        }
        assert!(matches!(reg.state(k, now), BreakerState::Open { .. }));
    }

    #[test]
    fn unknown_keys_are_closed_and_available() {
        let reg = HealthRegistry::default();
        let now = UnixMs::now();
        assert_eq!(reg.state(&key("k1"), now), BreakerState::Closed);
        assert!(reg.is_available(&key("k1"), now));
        assert!(reg.snapshot(now).is_empty(), "reading must not create entries");
        let p = allowed(reg.clear(&CredentialKey::new("ollama", NO_CREDENTIAL), now));
        assert!(!p.probe);
    }

    #[test]
    fn opens_after_threshold_failures() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        for _ in 0..4 {
            fail(&reg, &k, t0, None);
        }
        assert_eq!(reg.state(&k, t0), BreakerState::Closed);
        fail(&reg, &k, t0, None);
        let until = t0 + 30 * S;
        assert_eq!(reg.state(&k, t0), BreakerState::Open { until });
        assert_eq!(rejected(reg.clear(&k, t0)), BreakerState::Open { until });
        assert!(!reg.is_available(&k, t0 + 29 * S));
    }

    #[test]
    fn successes_do_not_reset_the_failure_score() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        for _ in 0..5 {
            fail(&reg, &k, t0, None);
            if reg.state(&k, t0) == BreakerState::Closed {
                let p = allowed(reg.clear(&k, t0));
                reg.report(p, Outcome::Success, t0);
            }
        }
        assert!(matches!(reg.state(&k, t0), BreakerState::Open { .. }));
    }

    #[test]
    fn old_failures_decay_and_do_not_open() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        for _ in 0..4 {
            fail(&reg, &k, t0, None);
        }
        // Two half-lives later the 4 old failures weigh 1: 1 + 3 = 4 < 5.
        let t1 = t0 + 60 * S;
        for _ in 0..3 {
            fail(&reg, &k, t1, None);
        }
        assert_eq!(reg.state(&k, t1), BreakerState::Closed);
        // Recent failures still add up: 4 + 1 = 5.
        fail(&reg, &k, t1, None);
        assert!(matches!(reg.state(&k, t1), BreakerState::Open { .. }));
    }

    #[test]
    fn open_becomes_half_open_after_cooldown() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let just_before = t0 + 30 * S - Duration::from_millis(1);
        assert!(matches!(rejected(reg.clear(&k, just_before)), BreakerState::Open { .. }));
        let t1 = t0 + 30 * S;
        assert_eq!(reg.state(&k, t1), BreakerState::HalfOpen { probe_in_flight: false });
        assert!(reg.is_available(&k, t1));
        assert!(allowed(reg.clear(&k, t1)).probe);
    }

    #[test]
    fn cooldown_honours_retry_after_up_to_max() {
        let reg = HealthRegistry::default();
        let t0 = UnixMs::now();
        let cases = [
            ("short", Some(10 * S), 30 * S), // below the cooldown: the cooldown
            ("long", Some(90 * S), 90 * S),  // above: Retry-After
            ("huge", Some(10_000 * S), 300 * S), // capped at max_cooldown
            ("absent", None, 30 * S),
        ];
        for (name, retry_after, expect) in cases {
            let k = key(name);
            for _ in 0..4 {
                fail(&reg, &k, t0, None);
            }
            fail(&reg, &k, t0, retry_after);
            assert_eq!(reg.state(&k, t0), BreakerState::Open { until: t0 + expect }, "{name}");
        }
    }

    #[test]
    fn half_open_admits_exactly_one_probe() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        assert!(probe.probe);
        let busy = BreakerState::HalfOpen { probe_in_flight: true };
        assert_eq!(rejected(reg.clear(&k, t1)), busy);
        assert_eq!(reg.state(&k, t1 + 5 * S), busy);
        assert!(!reg.is_available(&k, t1));
    }

    #[test]
    fn half_open_admits_exactly_one_probe_across_threads() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let barrier = std::sync::Barrier::new(16);
        let probes: usize = std::thread::scope(|s| {
            let handles: Vec<_> = (0..16)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        usize::from(matches!(reg.clear(&k, t1), Clearance::Allowed(_)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(probes, 1);
    }

    #[test]
    fn probe_success_closes() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        reg.report(probe, Outcome::Success, t1);
        assert_eq!(reg.state(&k, t1), BreakerState::Closed);
        assert!(!allowed(reg.clear(&k, t1)).probe);
        // The score restarted from 0: 4 new failures do not reopen it (the old
        // score, decayed one half-life, would have made 2.5 + 4 ≥ 5).
        for _ in 0..4 {
            fail(&reg, &k, t1, None);
        }
        assert_eq!(reg.state(&k, t1), BreakerState::Closed);
    }

    #[test]
    fn probe_failure_reopens() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        let old_epoch = probe.epoch;
        reg.report(probe, Outcome::Failure { retry_after: Some(45 * S) }, t1);
        assert_eq!(reg.state(&k, t1), BreakerState::Open { until: t1 + 45 * S });
        assert!(matches!(rejected(reg.clear(&k, t1 + 44 * S)), BreakerState::Open { .. }));
        let next = allowed(reg.clear(&k, t1 + 45 * S));
        assert!(next.probe);
        assert_ne!(next.epoch, old_epoch, "reopening starts a new epoch");
    }

    #[test]
    fn stale_epoch_success_never_closes_a_newer_open() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        let early = allowed(reg.clear(&k, t0));
        let early2 = allowed(reg.clear(&k, t0));
        open(&reg, &k, t0);
        reg.report(early, Outcome::Success, t0 + S);
        assert!(matches!(reg.state(&k, t0 + S), BreakerState::Open { .. }));
        // Nor while half-open with a probe out: the late success is not the probe.
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        reg.report(early2, Outcome::Success, t1);
        assert_eq!(reg.state(&k, t1), BreakerState::HalfOpen { probe_in_flight: true });
        reg.report(probe, Outcome::Success, t1);
        assert_eq!(reg.state(&k, t1), BreakerState::Closed);
    }

    #[test]
    fn stale_epoch_probe_success_never_closes_a_newer_open() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        // Two probes of one epoch (a reload freed the slot); the second fails.
        let old_probe = allowed(reg.clear(&k, t1));
        reg.retain_for_reload(|_| true);
        let second = allowed(reg.clear(&k, t1));
        reg.report(second, Outcome::Failure { retry_after: None }, t1);
        let t2 = t1 + 30 * S;
        let probe = allowed(reg.clear(&k, t2));
        // The first probe's late success is from the older epoch: ignored.
        reg.report(old_probe, Outcome::Success, t2);
        assert_eq!(reg.state(&k, t2), BreakerState::HalfOpen { probe_in_flight: true });
        reg.report(probe, Outcome::Success, t2);
        assert_eq!(reg.state(&k, t2), BreakerState::Closed);
    }

    #[test]
    fn stale_epoch_failure_never_reopens_or_counts() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        let late: Vec<Permit> = (0..6).map(|_| allowed(reg.clear(&k, t0))).collect();
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        let mut late = late.into_iter();
        if let Some(p) = late.next() {
            reg.report(p, Outcome::Failure { retry_after: None }, t1);
        }
        assert_eq!(reg.state(&k, t1), BreakerState::HalfOpen { probe_in_flight: true });
        reg.report(probe, Outcome::Success, t1);
        // Closed in the newer epoch: five late failures from before the open are ignored.
        for p in late {
            reg.report(p, Outcome::Failure { retry_after: None }, t1);
        }
        assert_eq!(reg.state(&k, t1), BreakerState::Closed);
    }

    #[test]
    fn throttle_429_is_not_a_failure_and_expires() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        for i in 0..10 {
            let t = t0 + i * 2 * S;
            let p = allowed(reg.clear(&k, t));
            reg.report(p, Outcome::Throttled { retry_after: None }, t);
        }
        // Default 1 s after the last 429, and the breaker never opened.
        let last = t0 + 18 * S;
        assert_eq!(reg.state(&k, last), BreakerState::Throttled { until: last + S });
        assert_eq!(rejected(reg.clear(&k, last)), BreakerState::Throttled { until: last + S });
        assert!(!reg.is_available(&k, last));
        assert_eq!(reg.state(&k, last + S), BreakerState::Closed);
        assert!(!allowed(reg.clear(&k, last + S)).probe);
        // Retry-After is honoured, capped at 60 s.
        let p = allowed(reg.clear(&k, last + S));
        reg.report(p, Outcome::Throttled { retry_after: Some(3600 * S) }, last + S);
        assert_eq!(reg.state(&k, last + S), BreakerState::Throttled { until: last + 61 * S });
        // A shorter later 429 does not shorten the throttle.
        let k2 = key("k2");
        let (a, b) = (allowed(reg.clear(&k2, t0)), allowed(reg.clear(&k2, t0)));
        reg.report(a, Outcome::Throttled { retry_after: Some(20 * S) }, t0);
        reg.report(b, Outcome::Throttled { retry_after: Some(2 * S) }, t0);
        assert_eq!(reg.state(&k2, t0), BreakerState::Throttled { until: t0 + 20 * S });
    }

    #[test]
    fn throttled_probe_releases_the_slot_without_reopening() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        reg.report(probe, Outcome::Throttled { retry_after: Some(2 * S) }, t1);
        assert_eq!(reg.state(&k, t1), BreakerState::Throttled { until: t1 + 2 * S });
        assert_eq!(reg.state(&k, t1 + 2 * S), BreakerState::HalfOpen { probe_in_flight: false });
        assert!(allowed(reg.clear(&k, t1 + 2 * S)).probe);
    }

    #[test]
    fn auth_failure_quarantines_only_that_credential() {
        let reg = HealthRegistry::default();
        let (bad, good, t0) = (key("key-bad"), key("key-good"), UnixMs::now());
        let p = allowed(reg.clear(&bad, t0));
        reg.report(p, Outcome::AuthFailure, t0);
        let until = t0 + 300 * S;
        assert_eq!(rejected(reg.clear(&bad, t0 + 299 * S)), BreakerState::Quarantined { until });
        assert!(!reg.is_available(&bad, t0));
        assert_eq!(reg.state(&good, t0), BreakerState::Closed);
        assert!(!allowed(reg.clear(&good, t0)).probe);
        assert_eq!(
            reg.state(&CredentialKey::new("anthropic", "key-bad"), t0),
            BreakerState::Closed
        );
        // It expires, and it was not a breaker failure.
        assert_eq!(reg.state(&bad, until), BreakerState::Closed);
        allowed(reg.clear(&bad, until));
    }

    #[test]
    fn quarantine_and_throttle_apply_from_stale_epochs() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        let (a, b) = (allowed(reg.clear(&k, t0)), allowed(reg.clear(&k, t0)));
        open(&reg, &k, t0);
        reg.report(a, Outcome::Throttled { retry_after: Some(50 * S) }, t0);
        assert_eq!(reg.state(&k, t0 + 40 * S), BreakerState::Throttled { until: t0 + 50 * S });
        reg.report(b, Outcome::AuthFailure, t0);
        assert_eq!(reg.state(&k, t0), BreakerState::Quarantined { until: t0 + 300 * S });
    }

    #[test]
    fn abandoned_probe_releases_the_slot() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let probe = allowed(reg.clear(&k, t1));
        assert!(!reg.is_available(&k, t1));
        reg.abandon(probe);
        assert_eq!(reg.state(&k, t1), BreakerState::HalfOpen { probe_in_flight: false });
        assert!(allowed(reg.clear(&k, t1)).probe);
    }

    #[test]
    fn abandoning_a_non_probe_changes_nothing() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        let early = allowed(reg.clear(&k, t0));
        open(&reg, &k, t0);
        let t1 = t0 + 30 * S;
        let _probe = allowed(reg.clear(&k, t1));
        reg.abandon(early);
        assert_eq!(reg.state(&k, t1), BreakerState::HalfOpen { probe_in_flight: true });
    }

    #[test]
    fn reload_keeps_state_but_clears_probe_flags() {
        let reg = HealthRegistry::default();
        let t0 = UnixMs::now();
        let (opened, half, throttled, quarantined) = (key("a"), key("b"), key("c"), key("d"));
        open(&reg, &opened, t0 + 10 * S);
        open(&reg, &half, t0);
        let t1 = t0 + 30 * S;
        let old_probe = allowed(reg.clear(&half, t1));
        let p = allowed(reg.clear(&throttled, t1));
        reg.report(p, Outcome::Throttled { retry_after: Some(5 * S) }, t1);
        let p = allowed(reg.clear(&quarantined, t1));
        reg.report(p, Outcome::AuthFailure, t1);
        let before = reg.snapshot(t1);

        reg.retain_for_reload(|_| true);

        let after = reg.snapshot(t1);
        assert_eq!(after.len(), 4);
        for ((k1, s1), (k2, s2)) in before.iter().zip(&after) {
            assert_eq!(k1, k2);
            if *k1 == half {
                assert_eq!(*s1, BreakerState::HalfOpen { probe_in_flight: true });
                assert_eq!(*s2, BreakerState::HalfOpen { probe_in_flight: false });
            } else {
                assert_eq!(s1, s2, "{k1:?}");
            }
        }
        assert_eq!(reg.state(&opened, t1), BreakerState::Open { until: t0 + 40 * S });
        // The cleared slot admits a new probe; the old probe's abandon cannot free it.
        let new_probe = allowed(reg.clear(&half, t1));
        assert!(new_probe.probe);
        reg.abandon(old_probe);
        assert_eq!(reg.state(&half, t1), BreakerState::HalfOpen { probe_in_flight: true });
        reg.report(new_probe, Outcome::Success, t1);
        assert_eq!(reg.state(&half, t1), BreakerState::Closed);
    }

    #[test]
    fn reload_drops_removed_identities() {
        let reg = HealthRegistry::default();
        let (gone, kept, t0) = (key("gone"), key("kept"), UnixMs::now());
        let late = allowed(reg.clear(&gone, t0));
        open(&reg, &gone, t0);
        open(&reg, &kept, t0);
        reg.retain_for_reload(|k| k.credential == "kept");
        assert_eq!(reg.state(&gone, t0), BreakerState::Closed);
        assert!(matches!(reg.state(&kept, t0), BreakerState::Open { .. }));
        // A late outcome for a dropped identity does not bring it back.
        reg.report(late, Outcome::AuthFailure, t0);
        assert_eq!(reg.snapshot(t0).len(), 1);
        // Re-added later it starts fresh, in an epoch no old permit can match.
        let p = allowed(reg.clear(&gone, t0));
        assert!(!p.probe);
    }

    #[test]
    fn state_reports_the_strongest_reason_to_refuse() {
        let reg = HealthRegistry::default();
        let (k, t0) = (key("k1"), UnixMs::now());
        let (a, b) = (allowed(reg.clear(&k, t0)), allowed(reg.clear(&k, t0)));
        open(&reg, &k, t0);
        reg.report(a, Outcome::Throttled { retry_after: Some(60 * S) }, t0);
        // Open beats throttled; once the cooldown is over the throttle shows, and
        // no probe is handed out while it lasts.
        assert_eq!(reg.state(&k, t0), BreakerState::Open { until: t0 + 30 * S });
        let throttled = BreakerState::Throttled { until: t0 + 60 * S };
        assert_eq!(reg.state(&k, t0 + 30 * S), throttled);
        assert_eq!(rejected(reg.clear(&k, t0 + 30 * S)), throttled);
        assert_eq!(reg.state(&k, t0 + 60 * S), BreakerState::HalfOpen { probe_in_flight: false });
        // Quarantine beats everything.
        reg.report(b, Outcome::AuthFailure, t0 + 60 * S);
        let quarantined = BreakerState::Quarantined { until: t0 + 360 * S };
        assert_eq!(reg.state(&k, t0 + 60 * S), quarantined);
        assert_eq!(rejected(reg.clear(&k, t0 + 60 * S)), quarantined);
    }

    #[test]
    fn set_config_changes_the_threshold() {
        let reg = HealthRegistry::default();
        reg.set_config(BreakerConfig { threshold: 2.0, ..BreakerConfig::default() });
        let (k, t0) = (key("k1"), UnixMs::now());
        fail(&reg, &k, t0, None);
        fail(&reg, &k, t0, None);
        assert!(matches!(reg.state(&k, t0), BreakerState::Open { .. }));
    }

    #[test]
    fn state_names_are_stable() {
        let t = UnixMs::now();
        let names = [
            BreakerState::Closed,
            BreakerState::Open { until: t },
            BreakerState::HalfOpen { probe_in_flight: true },
            BreakerState::Throttled { until: t },
            BreakerState::Quarantined { until: t },
        ]
        .map(|s| s.name());
        assert_eq!(names, ["closed", "open", "half_open", "throttled", "quarantined"]);
    }

    #[test]
    fn snapshot_is_sorted_by_key() {
        let reg = HealthRegistry::default();
        let t0 = UnixMs::now();
        for k in [key("c"), key("a"), CredentialKey::new("anthropic", "z"), key("b")] {
            allowed(reg.clear(&k, t0));
        }
        let keys: Vec<_> = reg.snapshot(t0).into_iter().map(|(k, _)| k).collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys[0].provider, "anthropic");
    }
}
