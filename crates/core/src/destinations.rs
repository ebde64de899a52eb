//! What each destination (deployment identity, `public|provider|upstream`: see
//! [`Candidate::identity`](crate::catalog::Candidate::identity)) did lately: the
//! outcomes, latencies and output speed of its last attempts, in a bounded
//! window (the last [`SAMPLES`] attempts of the last [`WINDOW_MS`]). The
//! adaptive strategy scores candidates by it; `/admin/destinations` and
//! `switchyard status` show it.
//!
//! A client that goes away is a cancellation, not a provider error: it counts
//! apart and feeds neither the error rate nor the latencies. Attempts that were
//! never sent (no credential, breaker open, no capacity) are not observed.
//!
//! Instances sharing state (`state.backend: redis`) publish their windows'
//! summaries with their latency averages ([`SharedDestinations`]); a
//! destination's figures are then every instance's, merged ([`merge`]).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::clock::UnixMs;

/// How far back a destination's window reaches.
pub const WINDOW_MS: u64 = 5 * 60_000;
/// The most attempts a destination's window keeps.
pub const SAMPLES: usize = 256;

/// How an attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Answered (a stream: to its end).
    Success,
    /// Failed: an error status, a transport failure, a broken or invalid answer.
    Error,
    /// The client went away first.
    Cancelled,
}

/// One finished attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Observation {
    /// How it ended.
    pub ended: Ended,
    /// Milliseconds from its start to its end (a stream's: to its last event).
    pub total_ms: f64,
    /// Milliseconds to a stream's first content; `None` for a whole answer.
    pub ttft_ms: Option<f64>,
    /// Output tokens, where known.
    pub output_tokens: Option<u64>,
}

/// A destination's window, summarised.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Attempts in the window.
    pub samples: u32,
    /// Of which answered.
    pub successes: u32,
    /// Of which failed.
    pub errors: u32,
    /// Of which the client cancelled.
    pub cancellations: u32,
    /// `errors / (successes + errors)`; `None` with neither.
    pub error_rate: Option<f64>,
    /// Median total latency of the answered attempts, milliseconds.
    pub p50_ms: Option<f64>,
    /// 95th percentile total latency of the answered attempts, milliseconds.
    pub p95_ms: Option<f64>,
    /// 95th percentile time to first token of the answered streams, milliseconds.
    pub ttft_p95_ms: Option<f64>,
    /// Output tokens per second of generation (a stream's time after its first
    /// token; a whole answer's whole time), the median over answered attempts.
    pub tokens_per_s: Option<f64>,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: u64,
    seen: Observation,
}

/// Destination statistics, behind a trait so instances may share them.
pub trait DestinationState: Send + Sync + std::fmt::Debug {
    /// An attempt on `identity` ended at `now`.
    fn observe(&self, identity: &str, seen: Observation, now: UnixMs);
    /// `identity`'s window at `now`.
    fn summary(&self, identity: &str, now: UnixMs) -> Summary;
    /// Every destination with attempts in its window, by identity.
    fn all(&self, now: UnixMs) -> Vec<(String, Summary)>;
    /// Keep the identities `keep` accepts (on reload), forget the rest.
    fn retain(&self, keep: &dyn Fn(&str) -> bool);
}

/// Destination statistics kept in this process.
#[derive(Debug, Default)]
pub struct Destinations {
    windows: Mutex<HashMap<String, VecDeque<Sample>>>,
}

impl Destinations {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<Sample>>> {
        self.windows.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl DestinationState for Destinations {
    fn observe(&self, identity: &str, seen: Observation, now: UnixMs) {
        let mut windows = self.lock();
        let window = match windows.get_mut(identity) {
            Some(w) => w,
            None => windows.entry(identity.to_owned()).or_default(),
        };
        if window.len() == SAMPLES {
            window.pop_front();
        }
        window.push_back(Sample { at_ms: now.0, seen });
    }

    fn summary(&self, identity: &str, now: UnixMs) -> Summary {
        self.lock().get(identity).map(|w| summarise(w, now)).unwrap_or_default()
    }

    fn all(&self, now: UnixMs) -> Vec<(String, Summary)> {
        let mut all: Vec<(String, Summary)> = self
            .lock()
            .iter()
            .map(|(id, w)| (id.clone(), summarise(w, now)))
            .filter(|(_, s)| s.samples > 0)
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.lock().retain(|id, _| keep(id));
    }
}

fn summarise(window: &VecDeque<Sample>, now: UnixMs) -> Summary {
    let since = now.0.saturating_sub(WINDOW_MS);
    let mut s = Summary::default();
    let (mut total, mut ttft, mut speed) = (Vec::new(), Vec::new(), Vec::new());
    for sample in window.iter().filter(|x| x.at_ms >= since) {
        let seen = &sample.seen;
        s.samples += 1;
        match seen.ended {
            Ended::Success => s.successes += 1,
            Ended::Error => s.errors += 1,
            Ended::Cancelled => s.cancellations += 1,
        }
        if seen.ended != Ended::Success {
            continue;
        }
        total.push(seen.total_ms);
        ttft.extend(seen.ttft_ms);
        let generating = seen.total_ms - seen.ttft_ms.unwrap_or(0.0);
        if let Some(tokens) = seen.output_tokens.filter(|t| *t > 0)
            && generating > 0.0
        {
            speed.push(tokens as f64 * 1000.0 / generating);
        }
    }
    let decided = s.successes + s.errors;
    s.error_rate = (decided > 0).then(|| f64::from(s.errors) / f64::from(decided));
    s.p50_ms = quantile(&mut total, 0.5);
    s.p95_ms = quantile(&mut total, 0.95);
    s.ttft_p95_ms = quantile(&mut ttft, 0.95);
    s.tokens_per_s = quantile(&mut speed, 0.5);
    s
}

/// Several instances' windows of one destination as one: counts summed, the
/// error rate of the sums, and each latency and speed figure the mean of the
/// instances', weighted by their answered attempts (an approximation: the
/// windows' samples are not shared, their summaries are).
pub fn merge(parts: &[Summary]) -> Summary {
    let mut s = Summary::default();
    for p in parts {
        s.samples += p.samples;
        s.successes += p.successes;
        s.errors += p.errors;
        s.cancellations += p.cancellations;
    }
    let decided = s.successes + s.errors;
    s.error_rate = (decided > 0).then(|| f64::from(s.errors) / f64::from(decided));
    let weighted = |figure: fn(&Summary) -> Option<f64>| {
        let (mut sum, mut weight) = (0.0, 0.0);
        for p in parts {
            if let Some(v) = figure(p).filter(|v| v.is_finite()) {
                let w = f64::from(p.successes.max(1));
                sum += v * w;
                weight += w;
            }
        }
        (weight > 0.0).then(|| sum / weight)
    };
    s.p50_ms = weighted(|p| p.p50_ms);
    s.p95_ms = weighted(|p| p.p95_ms);
    s.ttft_p95_ms = weighted(|p| p.ttft_p95_ms);
    s.tokens_per_s = weighted(|p| p.tokens_per_s);
    s
}

/// Destination windows shared by instances (`crate::health_sync`): this
/// instance's own, merged with the other instances' latest summaries, which
/// the synchronisation task brings every second or so.
#[derive(Debug, Default)]
pub struct SharedDestinations {
    local: Destinations,
    others: Mutex<HashMap<String, Vec<Summary>>>,
}

impl SharedDestinations {
    /// This instance's own windows, to publish.
    pub fn local(&self, now: UnixMs) -> Vec<(String, Summary)> {
        self.local.all(now)
    }

    /// The other instances' latest windows (one entry per instance and identity).
    pub fn set_others(&self, theirs: impl IntoIterator<Item = (String, Summary)>) {
        let mut others: HashMap<String, Vec<Summary>> = HashMap::new();
        for (id, s) in theirs {
            others.entry(id).or_default().push(s);
        }
        *self.others.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = others;
    }

    fn others(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Summary>>> {
        self.others.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl DestinationState for SharedDestinations {
    fn observe(&self, identity: &str, seen: Observation, now: UnixMs) {
        self.local.observe(identity, seen, now);
    }

    fn summary(&self, identity: &str, now: UnixMs) -> Summary {
        let mine = self.local.summary(identity, now);
        match self.others().get(identity) {
            None => mine,
            Some(theirs) => {
                let mut parts = theirs.clone();
                if mine.samples > 0 {
                    parts.push(mine);
                }
                merge(&parts)
            }
        }
    }

    fn all(&self, now: UnixMs) -> Vec<(String, Summary)> {
        let mut ids: Vec<String> = self.local.all(now).into_iter().map(|(id, _)| id).collect();
        ids.extend(self.others().keys().cloned());
        ids.sort();
        ids.dedup();
        ids.into_iter()
            .map(|id| {
                let s = self.summary(&id, now);
                (id, s)
            })
            .filter(|(_, s)| s.samples > 0)
            .collect()
    }

    fn retain(&self, keep: &dyn Fn(&str) -> bool) {
        self.local.retain(keep);
        self.others().retain(|id, _| keep(id));
    }
}

/// The `q` quantile (nearest rank) of `values`; `None` when empty.
fn quantile(values: &mut [f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let rank = (q * values.len() as f64).ceil() as usize;
    values.get(rank.saturating_sub(1).min(values.len() - 1)).copied()
}

/// An attempt being watched: observed as it ends, or as a cancellation when
/// dropped unended (the request's future dropped: the client went away).
#[derive(Debug)]
pub(crate) struct Watch {
    state: Option<(Arc<dyn DestinationState>, String)>,
    started: Instant,
}

impl Watch {
    /// An attempt on `identity` starting now.
    pub(crate) fn start(state: &Arc<dyn DestinationState>, identity: String) -> Watch {
        Watch { state: Some((Arc::clone(state), identity)), started: Instant::now() }
    }

    /// It ended: `ttft` for a stream's first content, `output_tokens` where known.
    pub(crate) fn end(
        mut self,
        ended: Ended,
        ttft: Option<std::time::Duration>,
        output_tokens: Option<u64>,
    ) {
        self.report(ended, ttft, output_tokens);
    }

    /// Not watched after all (never sent): no observation.
    pub(crate) fn forget(mut self) {
        self.state = None;
    }

    fn report(
        &mut self,
        ended: Ended,
        ttft: Option<std::time::Duration>,
        output_tokens: Option<u64>,
    ) {
        if let Some((state, identity)) = self.state.take() {
            let seen = Observation {
                ended,
                total_ms: self.started.elapsed().as_secs_f64() * 1000.0,
                ttft_ms: ttft.map(|t| t.as_secs_f64() * 1000.0),
                output_tokens,
            };
            state.observe(&identity, seen, UnixMs::now());
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.report(Ended::Cancelled, None, None);
    }
}

#[cfg(test)]
#[path = "destinations_tests.rs"]
mod tests;
