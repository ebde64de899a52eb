//! The registry's side of shared health ([`crate::health_sync`]): what one
//! credential's health looks like to other instances ([`SharedRecord`]), the rule
//! that decides between two records of one credential ([`SharedRecord::merge`],
//! the same rule the Redis script applies), and the registry's methods to show
//! its entries and take a shared record in.
//!
//! Only what is a fact for every instance is shared: whether the breaker is open
//! (in which epoch, until when), and the throttle and quarantine deadlines. The
//! failure score stays in each instance (each counts its own failures; the open
//! it leads to is shared), and so does the half-open probe slot (the probe lease
//! decides which instance may take it).

use super::{CLOSED, CredentialKey, Entry, HealthRegistry, Inner, Phase};
use crate::breaker::{BreakerState, Clearance, Permit};
use crate::clock::{UnixMs, unique};

/// Whether this instance may take the half-open probe of a credential in an
/// epoch (shared health: whether it holds the probe lease).
pub(crate) type ProbeGate<'a> = dyn Fn(&CredentialKey, u64) -> bool + 'a;

/// One credential's health as instances share it. Times are unix milliseconds
/// (0: none); epochs are random, so they are compared for equality only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SharedRecord {
    /// The breaker epoch this record speaks of.
    pub epoch: u64,
    /// Open (or half-open) in `epoch`; false: closed in it.
    pub open: bool,
    /// The cooldown end of `epoch`'s open (kept once it closes, to order opens).
    pub until: UnixMs,
    /// A 429's back-off ends then.
    pub throttled_until: UnixMs,
    /// A 401/403's quarantine ends then.
    pub quarantined_until: UnixMs,
}

impl SharedRecord {
    /// What is kept when `incoming` is published over `stored`:
    ///
    /// - an open wins when its cooldown ends later than the stored record's (a
    ///   newer open, or a reopen after a failed probe, always ends later; a stale
    ///   open from an instance that was not listening ends earlier and loses);
    /// - a close wins only over an open of its own epoch (the probe that closed
    ///   it was admitted in that epoch): a stale instance cannot close a breaker
    ///   another instance opened since;
    /// - throttle and quarantine deadlines take the later of the two.
    pub fn merge(stored: Option<&SharedRecord>, incoming: &SharedRecord) -> SharedRecord {
        let Some(s) = stored else { return *incoming };
        let mut out = *s;
        if incoming.open {
            if incoming.until > s.until {
                (out.epoch, out.open, out.until) = (incoming.epoch, true, incoming.until);
            }
        } else if s.open && s.epoch == incoming.epoch {
            out.open = false;
        }
        out.throttled_until = s.throttled_until.max(incoming.throttled_until);
        out.quarantined_until = s.quarantined_until.max(incoming.quarantined_until);
        out
    }

    /// Whether two records say the same: closed breakers agree whatever their
    /// epoch (each instance's closed entry has an epoch of its own).
    pub fn agrees(&self, other: &SharedRecord) -> bool {
        let breaker = if self.open || other.open {
            (self.epoch, self.open, self.until) == (other.epoch, other.open, other.until)
        } else {
            true
        };
        breaker
            && self.throttled_until == other.throttled_until
            && self.quarantined_until == other.quarantined_until
    }

    /// `epoch open until throttled quarantined`, decimal (the Redis script parses
    /// it).
    pub fn encode(&self) -> String {
        format!(
            "{} {} {} {} {}",
            self.epoch,
            u8::from(self.open),
            self.until.0,
            self.throttled_until.0,
            self.quarantined_until.0
        )
    }

    /// The record [`encode`](Self::encode) wrote; `None` if it is not one.
    pub fn decode(s: &str) -> Option<SharedRecord> {
        let mut it = s.split(' ');
        let mut num = || it.next().and_then(|v| v.parse::<u64>().ok());
        let record = SharedRecord {
            epoch: num()?,
            open: match num()? {
                0 => false,
                1 => true,
                _ => return None,
            },
            until: UnixMs(num()?),
            throttled_until: UnixMs(num()?),
            quarantined_until: UnixMs(num()?),
        };
        it.next().is_none().then_some(record)
    }
}

/// One entry as the sync task sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub(crate) key: CredentialKey,
    pub(crate) record: SharedRecord,
    /// This instance's probe holds the half-open slot.
    pub(crate) probing: bool,
}

impl Entry {
    fn record(&self) -> SharedRecord {
        SharedRecord {
            epoch: self.epoch,
            open: !matches!(self.phase, Phase::Closed { .. }),
            until: self.until,
            throttled_until: self.throttled_until.unwrap_or_default(),
            quarantined_until: self.quarantined_until.unwrap_or_default(),
        }
    }

    /// [`Entry::state`], with a probe this instance may not take shown as taken.
    fn state_gated(&self, key: &CredentialKey, now: UnixMs, gate: &ProbeGate<'_>) -> BreakerState {
        match self.state(now) {
            BreakerState::HalfOpen { probe_in_flight: false } if !gate(key, self.epoch) => {
                BreakerState::HalfOpen { probe_in_flight: true }
            }
            state => state,
        }
    }
}

fn deadline(ms: UnixMs) -> Option<UnixMs> {
    (ms.0 > 0).then_some(ms)
}

impl HealthRegistry {
    /// [`HealthRegistry::clear`], handing out the half-open probe only where
    /// `gate` allows it (refused: shown as a probe already in flight). `gate` is
    /// called under the registry's lock.
    pub(crate) fn clear_gated(
        &self,
        key: &CredentialKey,
        now: UnixMs,
        gate: &ProbeGate<'_>,
    ) -> Clearance {
        let mut inner = self.lock();
        let Inner { entries, .. } = &mut *inner;
        // Looked up before it is made: the common case finds it, and an owned
        // key for `entry` would be two allocations per attempt.
        if !entries.contains_key(key) {
            entries.insert(key.clone(), Entry::new());
        }
        let Some(entry) = entries.get_mut(key) else {
            // Never: inserted above.
            return Clearance::Rejected { state: BreakerState::Closed };
        };
        let epoch = entry.epoch;
        let permit = |probe, ticket| Permit::issued(key.clone(), epoch, probe, ticket);
        match entry.state_gated(key, now, gate) {
            BreakerState::Closed => Clearance::Allowed(permit(false, 0)),
            // Also an `Open` phase whose cooldown is over: it becomes half-open here.
            BreakerState::HalfOpen { probe_in_flight: false } => {
                let ticket = unique();
                let allowed = Clearance::Allowed(permit(true, ticket));
                entry.phase = Phase::HalfOpen { probe: Some(ticket) };
                allowed
            }
            state => Clearance::Rejected { state },
        }
    }

    /// [`HealthRegistry::state`] with the probe gated as in
    /// [`clear_gated`](Self::clear_gated).
    pub(crate) fn state_gated(
        &self,
        key: &CredentialKey,
        now: UnixMs,
        gate: &ProbeGate<'_>,
    ) -> BreakerState {
        self.lock().entries.get(key).map_or(BreakerState::Closed, |e| e.state_gated(key, now, gate))
    }

    /// [`HealthRegistry::snapshot`] with the probe gated.
    pub(crate) fn snapshot_gated(
        &self,
        now: UnixMs,
        gate: &ProbeGate<'_>,
    ) -> Vec<(CredentialKey, BreakerState)> {
        let mut all: Vec<_> = self
            .lock()
            .entries
            .iter()
            .map(|(k, e)| (k.clone(), e.state_gated(k, now, gate)))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Every entry as it would be shared.
    pub(crate) fn views(&self) -> Vec<View> {
        self.lock()
            .entries
            .iter()
            .map(|(k, e)| View {
                key: k.clone(),
                record: e.record(),
                probing: matches!(e.phase, Phase::HalfOpen { probe: Some(_) }),
            })
            .collect()
    }

    /// The shared record of `key` (None: no entry).
    pub(crate) fn record(&self, key: &CredentialKey) -> Option<SharedRecord> {
        self.lock().entries.get(key).map(Entry::record)
    }

    /// Take in `remote`, the shared record of `key`. Throttle and quarantine
    /// deadlines extend to the later. The breaker becomes the remote one, unless
    /// both are closed (the local failure score and epoch stay), or the local
    /// breaker changed since it was `seen` (a local transition the next exchange
    /// publishes). Returns whether the breaker was taken in.
    pub fn adopt(
        &self,
        key: &CredentialKey,
        remote: &SharedRecord,
        seen: Option<&SharedRecord>,
    ) -> bool {
        let mut inner = self.lock();
        let trivial =
            !remote.open && remote.throttled_until.0 == 0 && remote.quarantined_until.0 == 0;
        if trivial && !inner.entries.contains_key(key) {
            return false;
        }
        let entry = inner.entries.entry(key.clone()).or_insert_with(Entry::new);
        let extend = |local: Option<UnixMs>, remote: UnixMs| local.max(deadline(remote));
        entry.throttled_until = extend(entry.throttled_until, remote.throttled_until);
        entry.quarantined_until = extend(entry.quarantined_until, remote.quarantined_until);
        let current = entry.record();
        // Not seen: the entry was made since, closed; an open made since is local.
        let changed = match seen {
            Some(s) => (s.epoch, s.open, s.until) != (current.epoch, current.open, current.until),
            None => current.open,
        };
        if changed {
            return false;
        }
        match (current.open, remote.open) {
            (false, false) => false,
            // The same open (perhaps half-open here, with our probe out): kept.
            (true, true) if current.epoch == remote.epoch => false,
            (_, true) => {
                entry.epoch = remote.epoch;
                entry.until = remote.until;
                entry.phase = Phase::Open { until: remote.until };
                true
            }
            (true, false) => {
                entry.epoch = remote.epoch;
                entry.until = remote.until;
                entry.phase = CLOSED;
                true
            }
        }
    }
}
