//! Runtime state beside the immutable snapshot: breaker health, latency estimates
//! and in-flight counts, keyed by stable identities so a reload keeps them for every
//! deployment that still exists.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::breaker::{BreakerConfig, HealthRegistry};
use crate::state::{Admission, HealthState, InFlightState, LatencyState};

/// Exponentially weighted moving average, α = 0.2 (a new sample moves the estimate a
/// fifth of the way).
const ALPHA: f64 = 0.2;

#[derive(Debug, Default, Clone, Copy)]
struct Ewma {
    attempt_ms: Option<f64>,
    ttft_ms: Option<f64>,
}

fn fold(prev: Option<f64>, sample: f64) -> Option<f64> {
    Some(match prev {
        Some(p) => p + ALPHA * (sample - p),
        None => sample,
    })
}

/// Rolling latency per deployment identity (whole attempt, and time to first token).
#[derive(Debug, Default)]
pub struct LatencyTracker {
    map: Mutex<HashMap<String, Ewma>>,
}

impl LatencyTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Ewma>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Fold a whole attempt's latency, in milliseconds, into `identity`'s average.
    pub fn observe_attempt(&self, identity: &str, ms: f64) {
        let mut m = self.lock();
        let e = m.entry(identity.to_owned()).or_default();
        e.attempt_ms = fold(e.attempt_ms, ms);
    }

    /// Fold a stream's time to first token, in milliseconds, into `identity`'s
    /// average.
    pub fn observe_ttft(&self, identity: &str, ms: f64) {
        let mut m = self.lock();
        let e = m.entry(identity.to_owned()).or_default();
        e.ttft_ms = fold(e.ttft_ms, ms);
    }

    /// The estimate the latency strategy reads: time to first token when known
    /// (streams), else whole-attempt latency.
    pub fn estimate(&self, identity: &str) -> Option<f64> {
        self.lock().get(identity).and_then(|e| e.ttft_ms.or(e.attempt_ms))
    }

    /// `identity`'s averages: whole attempt, time to first token.
    pub fn averages(&self, identity: &str) -> (Option<f64>, Option<f64>) {
        self.lock().get(identity).map_or((None, None), |e| (e.attempt_ms, e.ttft_ms))
    }

    /// Every identity's averages (whole attempt, time to first token).
    pub fn all(&self) -> Vec<(String, Option<f64>, Option<f64>)> {
        self.lock().iter().map(|(k, e)| (k.clone(), e.attempt_ms, e.ttft_ms)).collect()
    }

    /// Keep the identities `keep` accepts, forget the rest (on reload).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.lock().retain(|k, _| keep(k));
    }
}

/// Requests in flight per deployment identity, in this process.
#[derive(Debug, Default)]
pub struct InFlight {
    map: Mutex<HashMap<String, Arc<AtomicU64>>>,
}

/// Decrements its deployment's in-flight count when dropped.
pub struct InFlightGuard(Release);

/// What dropping an [`InFlightGuard`] does.
enum Release {
    /// This process's counter: no allocation on the request path.
    Local(Arc<AtomicU64>),
    /// Another [`InFlightState`](crate::state::InFlightState)'s release.
    Custom(Option<Box<dyn FnOnce() + Send + Sync>>),
}

impl InFlightGuard {
    /// A guard that runs `release` once, when dropped: for an
    /// [`crate::state::InFlightState`] kept elsewhere than in this
    /// process (a shared counter decremented on release).
    pub fn new(release: impl FnOnce() + Send + Sync + 'static) -> Self {
        Self(Release::Custom(Some(Box::new(release))))
    }
}

impl std::fmt::Debug for InFlightGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.0 {
            Release::Local(_) => "local",
            Release::Custom(_) => "custom",
        };
        f.debug_tuple("InFlightGuard").field(&kind).finish()
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        match &mut self.0 {
            Release::Local(count) => {
                count.fetch_sub(1, Ordering::Relaxed);
            }
            Release::Custom(release) => {
                if let Some(release) = release.take() {
                    release();
                }
            }
        }
    }
}

impl InFlight {
    fn counter(&self, identity: &str) -> Arc<AtomicU64> {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(identity.to_owned()).or_default().clone()
    }

    /// Requests in flight on `identity` now (0 for an unknown one).
    pub fn count(&self, identity: &str) -> u64 {
        let m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        m.get(identity).map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// Count one more request on `identity` until the guard drops.
    pub fn enter(&self, identity: &str) -> InFlightGuard {
        let c = self.counter(identity);
        c.fetch_add(1, Ordering::Relaxed);
        InFlightGuard(Release::Local(c))
    }

    /// Total requests in flight (for the gauge).
    pub fn total(&self) -> u64 {
        let m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        m.values().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// Everything that outlives a configuration snapshot, each part behind its trait
/// ([`crate::state`]) so that instances may share it.
#[derive(Debug)]
pub struct Runtime {
    /// Breakers, throttles and quarantines per credential.
    pub health: Arc<dyn HealthState>,
    /// Latency estimates per deployment (the latency and balanced strategies).
    pub latency: Arc<dyn LatencyState>,
    /// Requests in flight per deployment (the least-busy strategy, the gauge).
    pub in_flight: Arc<dyn InFlightState>,
    /// Each deployment's recent outcomes, latencies and speed (the adaptive
    /// strategy, `/admin/destinations`).
    pub destinations: Arc<dyn crate::destinations::DestinationState>,
    /// Rate limits and budgets; None: none (nothing is reserved or settled, and
    /// deployments' capacity is not counted). By default, limits counted in this
    /// process ([`Limiter::local`](crate::limits::Limiter::local)).
    pub admission: Option<Arc<dyn Admission>>,
    /// Access rules stored in the database (the admin API replaces them).
    pub rules: arc_swap::ArcSwap<Vec<crate::access::Rule>>,
    /// Seals continuation data (thinking signatures) into answers for clients
    /// that carry it back (Responses' `encrypted_content`); None: not sealed.
    pub seal: Option<Arc<dyn switchyard_protocol::Seal>>,
    /// What upstreams need back on the next turn that clients do not carry
    /// (signed thinking for Chat clients), by tool-call id.
    pub continuity: Arc<dyn crate::continuity::ContinuityStore>,
    /// When each key, tool and model was last logged as served without an
    /// offered hosted tool (once an hour each).
    pub dropped_tools: Arc<crate::hosted::DropNotices>,
    /// The exact response cache (used by models and routes that opt in). By
    /// default in this process, within the default bounds.
    pub cache: Arc<dyn crate::state::ResponseCache>,
    /// Identical cacheable requests in flight in this process, sharing one
    /// upstream call.
    pub flights: Arc<crate::exec::Flights>,
    /// Conversations' pinned deployments (prompt-cache affinity), by affinity
    /// key. By default in this process.
    pub affinity: Arc<dyn crate::state::ResponseCache>,
    /// The model-based intent classifier's answers, by model and text hash
    /// (`crate::intent::model`). By default in this process.
    pub intent_decisions: Arc<dyn crate::state::ResponseCache>,
    /// Requests waiting in this instance's admission queue (`limits.queue`).
    pub queued: Arc<std::sync::atomic::AtomicUsize>,
    /// The flags and fields providers refused, learned from their answers
    /// (kept in this process).
    pub refusals: Arc<crate::refusals::Refusals>,
    /// Where finished requests' traces go (`telemetry.otlp`, started by the
    /// binary: [`crate::otel::start`]); `None`: no spans are exported, and a
    /// client's `traceparent` is passed to upstreams as it came.
    pub traces: Option<crate::otel::Traces>,
    /// Stored Responses (`store`, `previous_response_id`): in process by
    /// default; the database's where the gateway has one.
    pub responses: Arc<dyn crate::stored_responses::ResponseStore>,
    /// Generated images the gateway links to (`response_format: url`), by
    /// their id, for an hour: in process, or on Redis where state is shared.
    pub images: Arc<dyn crate::state::ResponseCache>,
    /// Media jobs (`/v1/jobs`): in process by default; the database's where
    /// the gateway has one, so any instance follows them and they outlive a
    /// restart.
    pub jobs: Arc<dyn crate::jobs::JobStore>,
    /// What the jobs this instance submitted hold until they end (their
    /// reservations, a caller's own key).
    pub job_holds: Arc<crate::jobs::Holds>,
    /// Uploaded files, batches and their lines' answers (`/v1/files`,
    /// `/v1/batches`): in process by default; the database's where the
    /// gateway has one, so a batch outlives the instance running it.
    pub batches: Arc<dyn crate::batches::BatchStore>,
}

impl Default for Runtime {
    /// Everything in process, no limits.
    fn default() -> Self {
        Self {
            health: Arc::new(HealthRegistry::new(BreakerConfig::default())),
            latency: Arc::new(LatencyTracker::default()),
            in_flight: Arc::new(InFlight::default()),
            destinations: Arc::new(crate::destinations::Destinations::default()),
            admission: Some(Arc::new(crate::limits::Limiter::local())),
            rules: arc_swap::ArcSwap::from_pointee(Vec::new()),
            seal: None,
            continuity: Arc::new(crate::continuity::LocalContinuity::default()),
            dropped_tools: Arc::default(),
            cache: Arc::new(crate::cache::LocalCache::default()),
            flights: Arc::default(),
            queued: Arc::default(),
            affinity: Arc::new(crate::cache::LocalCache::new(crate::cache::AFFINITY_BOUNDS)),
            intent_decisions: Arc::new(crate::cache::LocalCache::new(
                crate::cache::AFFINITY_BOUNDS,
            )),
            refusals: Arc::default(),
            traces: None,
            responses: Arc::new(crate::stored_responses::LocalResponses::default()),
            images: Arc::new(crate::cache::LocalCache::new(crate::cache::IMAGE_BOUNDS)),
            jobs: Arc::new(crate::jobs::LocalJobs::default()),
            job_holds: Arc::default(),
            batches: Arc::new(crate::batches::LocalBatches::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_is_an_ewma_and_prefers_ttft() {
        let t = LatencyTracker::default();
        assert_eq!(t.estimate("d"), None);
        t.observe_attempt("d", 100.0);
        assert_eq!(t.estimate("d"), Some(100.0));
        t.observe_attempt("d", 200.0);
        assert_eq!(t.estimate("d"), Some(120.0));
        t.observe_ttft("d", 10.0);
        assert_eq!(t.estimate("d"), Some(10.0));
        t.retain(|k| k != "d");
        assert_eq!(t.estimate("d"), None);
    }

    #[test]
    fn in_flight_counts_follow_guards() {
        let f = InFlight::default();
        let a = f.enter("d");
        let b = f.enter("d");
        assert_eq!(f.count("d"), 2);
        drop(a);
        assert_eq!(f.count("d"), 1);
        drop(b);
        assert_eq!(f.total(), 0);
    }
}
