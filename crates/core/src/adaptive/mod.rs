//! `strategy: adaptive`: a route's candidates scored by a versioned policy of
//! weighted signals, each read from what the gateway measured or was told:
//!
//! | signal | from | scored |
//! |---|---|---|
//! | latency | the deployment's window: p95 time to first token (`ttft`; its whole-attempt p95 where it served no stream) or of the whole attempt (`total`) | penalty `min(1, p95 / latency_scale_ms)` |
//! | cost | the catalog's price for this request's estimated tokens | penalty `min(1, usd / cost_scale_usd)` |
//! | quality | the policy's profiles, per target and intent | reward, the score in [0, 1] |
//! | load | requests in flight on it now | penalty `min(1, in_flight / load_scale)` |
//! | errors | the window's error rate (cancellations are not errors) | penalty, the rate |
//! | throughput | the window's median output tokens per second | reward `min(1, tps / throughput_scale)` |
//!
//! score = Σ weight × reward − Σ weight × penalty; highest first, ties in chain
//! order. A deployment with fewer than `min_samples` attempts in its window is
//! cold: its latency, errors and throughput are missing. A missing penalty
//! signal costs `missing_signal_penalty` (at least 1: never better than the
//! worst measured) under `allow`; a missing reward earns nothing; `reject`
//! excludes the deployment instead (`cold_start`, `unknown_cost`,
//! `missing_quality`), as does a quality below `min_quality`. Every
//! `explore_every`th request on the route tries one cold deployment first, in
//! turn (cold ones excluded for cold start included: exploring is how they
//! warm), never one excluded for anything else. Each decision is recorded
//! whole ([`AdaptiveRecord`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::raw::{
    AdaptiveConfig, AdaptivePreset, AdaptiveWeights, LatencyMetric, MissingPolicy,
};
use crate::destinations::Summary;
use crate::intent::Intent;
use crate::record::{AdaptiveRecord, ScoredCandidate};

/// A compiled adaptive policy. Its exploration counter lives as long as the
/// configuration that compiled it (a reload starts it again).
#[derive(Debug)]
pub struct AdaptivePolicy {
    /// Recorded with each decision.
    pub version: String,
    pub(crate) weights: Weights,
    pub(crate) latency_metric: LatencyMetric,
    pub(crate) latency_scale_ms: f64,
    pub(crate) cost_scale_usd: f64,
    pub(crate) throughput_scale: f64,
    pub(crate) load_scale: f64,
    pub(crate) min_samples: u32,
    pub(crate) cold_start: MissingPolicy,
    pub(crate) unknown_cost: MissingPolicy,
    pub(crate) missing_quality: MissingPolicy,
    pub(crate) missing_penalty: f64,
    pub(crate) min_quality: Option<f64>,
    pub(crate) explore_every: u64,
    pub(crate) quality_version: Option<String>,
    pub(crate) profiles: Vec<Profile>,
    ticks: AtomicU64,
}

/// Nonnegative weights.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Weights {
    pub latency: f64,
    pub cost: f64,
    pub quality: f64,
    pub load: f64,
    pub errors: f64,
    pub throughput: f64,
}

/// A quality score for a target (a catalog id, or `provider/upstream`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Profile {
    pub target: String,
    pub intent: Option<Intent>,
    pub score: f64,
}

/// What the policy reads of one candidate.
#[derive(Debug, Clone, Default)]
pub struct Seen<'a> {
    /// `provider/upstream-model`.
    pub deployment: String,
    /// The catalog model it serves, if listed.
    pub model: Option<&'a str>,
    /// Its window.
    pub summary: Summary,
    /// Requests in flight on it now.
    pub in_flight: u64,
    /// Estimated USD for this request; `None`: unpriced.
    pub cost_usd: Option<f64>,
}

/// The order chosen: indices of the candidates kept, best first, and the
/// whole decision for the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Indices into the candidates given; the excluded are left out.
    pub order: Vec<usize>,
    /// For the record.
    pub record: AdaptiveRecord,
}

impl AdaptivePolicy {
    /// The preset's policy.
    pub fn preset(preset: AdaptivePreset) -> AdaptivePolicy {
        let (version, weights, metric, scale_ms, unknown_cost, missing_quality) = match preset {
            AdaptivePreset::Interactive => (
                "interactive-1",
                Weights {
                    latency: 0.4,
                    cost: 0.1,
                    quality: 0.2,
                    load: 0.15,
                    errors: 0.15,
                    throughput: 0.0,
                },
                LatencyMetric::Ttft,
                2_000.0,
                MissingPolicy::Allow,
                MissingPolicy::Allow,
            ),
            AdaptivePreset::Economy => (
                "economy-1",
                Weights {
                    latency: 0.1,
                    cost: 0.5,
                    quality: 0.25,
                    load: 0.0,
                    errors: 0.15,
                    throughput: 0.0,
                },
                LatencyMetric::Total,
                30_000.0,
                MissingPolicy::Reject,
                MissingPolicy::Reject,
            ),
            AdaptivePreset::Quality => (
                "quality-1",
                Weights {
                    latency: 0.1,
                    cost: 0.1,
                    quality: 0.6,
                    load: 0.0,
                    errors: 0.2,
                    throughput: 0.0,
                },
                LatencyMetric::Total,
                30_000.0,
                MissingPolicy::Allow,
                MissingPolicy::Reject,
            ),
        };
        AdaptivePolicy {
            version: version.to_owned(),
            weights,
            latency_metric: metric,
            latency_scale_ms: scale_ms,
            cost_scale_usd: 0.01,
            throughput_scale: 100.0,
            load_scale: 8.0,
            min_samples: 5,
            cold_start: MissingPolicy::Allow,
            unknown_cost,
            missing_quality,
            missing_penalty: 1.0,
            min_quality: None,
            explore_every: 20,
            quality_version: None,
            profiles: Vec::new(),
            ticks: AtomicU64::new(0),
        }
    }

    /// Compile `raw`; `target_ok` says whether a profile's target names a
    /// catalog model or a configured `provider/…`. Problems are returned as
    /// messages (the caller places them).
    pub fn compile(
        raw: &AdaptiveConfig,
        target_ok: &dyn Fn(&str) -> bool,
    ) -> Result<Arc<AdaptivePolicy>, Vec<String>> {
        let mut problems = Vec::new();
        let mut p = match raw.preset {
            Some(preset) => AdaptivePolicy::preset(preset),
            None => {
                if raw.version.as_deref().is_none_or(|v| v.trim().is_empty()) {
                    problems.push("adaptive.version: required without a preset (it is recorded with each decision)".to_owned());
                }
                let none = AdaptiveWeights::default();
                AdaptivePolicy {
                    weights: weights_over(
                        Weights {
                            latency: 0.0,
                            cost: 0.0,
                            quality: 0.0,
                            load: 0.0,
                            errors: 0.0,
                            throughput: 0.0,
                        },
                        &none,
                    ),
                    ..AdaptivePolicy::preset(AdaptivePreset::Interactive)
                }
            }
        };
        if let Some(v) = raw.version.as_deref().filter(|v| !v.trim().is_empty()) {
            p.version = v.trim().to_owned();
        }
        p.weights = weights_over(p.weights, &raw.weights);
        let w = p.weights;
        let all = [w.latency, w.cost, w.quality, w.load, w.errors, w.throughput];
        if all.iter().any(|x| !x.is_finite() || *x < 0.0) {
            problems
                .push("adaptive.weights: each must be a finite number of at least 0".to_owned());
        } else if all.iter().all(|x| *x == 0.0) {
            problems.push("adaptive.weights: at least one must be above 0".to_owned());
        }
        p.latency_metric = raw.latency_metric.unwrap_or(p.latency_metric);
        for (name, given, slot) in [
            ("latency_scale_ms", raw.latency_scale_ms, &mut p.latency_scale_ms),
            ("cost_scale_usd", raw.cost_scale_usd, &mut p.cost_scale_usd),
            ("throughput_scale", raw.throughput_scale, &mut p.throughput_scale),
            ("load_scale", raw.load_scale, &mut p.load_scale),
        ] {
            match given {
                Some(v) if v.is_finite() && v > 0.0 => *slot = v,
                Some(v) => problems.push(format!("adaptive.{name}: {v} is not above 0")),
                None => {}
            }
        }
        p.min_samples = raw.min_samples.unwrap_or(p.min_samples);
        p.cold_start = raw.cold_start.unwrap_or(p.cold_start);
        p.unknown_cost = raw.unknown_cost.unwrap_or(p.unknown_cost);
        p.missing_quality = raw.missing_quality.unwrap_or(p.missing_quality);
        match raw.missing_signal_penalty {
            Some(v) if v.is_finite() && v >= 1.0 => p.missing_penalty = v,
            Some(v) => problems.push(format!(
                "adaptive.missing_signal_penalty: {v} is below 1 (a missing signal is never better than the worst measured)"
            )),
            None => {}
        }
        match raw.min_quality {
            Some(v) if (0.0..=1.0).contains(&v) => p.min_quality = Some(v),
            Some(v) => problems.push(format!("adaptive.min_quality: {v} is not in [0, 1]")),
            None => {}
        }
        p.explore_every = raw.explore_every.unwrap_or(p.explore_every);
        p.quality_version = raw.quality.version.clone().filter(|v| !v.trim().is_empty());
        for (i, q) in raw.quality.profiles.iter().enumerate() {
            let at = format!("adaptive.quality.profiles[{i}]");
            let target = crate::catalog::normalize_model(&q.target);
            if !target_ok(&target) {
                problems.push(format!(
                    "{at}.target: `{}` is no catalog model and no `provider/model` of a configured provider",
                    q.target
                ));
            }
            let intent = match q.intent.as_deref() {
                None => None,
                Some(name) => match Intent::parse(name) {
                    Some(i) => Some(i),
                    None => {
                        problems.push(format!(
                            "{at}.intent: `{name}` is not a class (reasoning, code, ordinary, cheap, vision)"
                        ));
                        None
                    }
                },
            };
            if !(0.0..=1.0).contains(&q.score) {
                problems.push(format!("{at}.score: {} is not in [0, 1]", q.score));
            }
            p.profiles.push(Profile { target, intent, score: q.score });
        }
        if problems.is_empty() { Ok(Arc::new(p)) } else { Err(problems) }
    }

    /// Whether a profile depends on the request's intent (so the request
    /// must be classified to read it).
    pub fn reads_intent(&self) -> bool {
        self.profiles.iter().any(|p| p.intent.is_some())
    }

    /// The next request's place in the exploration cycle.
    pub fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, Ordering::Relaxed)
    }

    /// The quality profile score for a deployment serving `model`, for
    /// `intent`: the most specific profile wins (the deployment's for the
    /// intent, the model's for the intent, the deployment's for any, the
    /// model's for any).
    fn quality(
        &self,
        deployment: &str,
        model: Option<&str>,
        intent: Option<Intent>,
    ) -> Option<f64> {
        let find = |target: &str, want: Option<Intent>| {
            self.profiles.iter().find(|p| p.target == target && p.intent == want).map(|p| p.score)
        };
        let intent_specific = intent.and_then(|i| {
            find(deployment, Some(i)).or_else(|| model.and_then(|m| find(m, Some(i))))
        });
        intent_specific
            .or_else(|| find(deployment, None))
            .or_else(|| model.and_then(|m| find(m, None)))
    }

    /// Order `seen` (in chain order) for a request of `intent`, at `tick` of
    /// the exploration cycle ([`AdaptivePolicy::tick`]).
    pub fn order(&self, seen: &[Seen<'_>], intent: Option<Intent>, tick: u64) -> Decision {
        let w = self.weights;
        let mut scored: Vec<(usize, f64)> = Vec::new();
        let mut cold: Vec<usize> = Vec::new();
        let mut rows: Vec<ScoredCandidate> = Vec::with_capacity(seen.len());
        for (i, s) in seen.iter().enumerate() {
            let sum = &s.summary;
            let warm = sum.successes + sum.errors >= self.min_samples.max(1);
            let latency = warm
                .then(|| match self.latency_metric {
                    LatencyMetric::Ttft => sum.ttft_p95_ms.or(sum.p95_ms),
                    LatencyMetric::Total => sum.p95_ms,
                })
                .flatten();
            let errors = warm.then_some(sum.error_rate).flatten();
            let tps = warm.then_some(sum.tokens_per_s).flatten();
            let quality = self.quality(&s.deployment, s.model, intent);
            let mut row = ScoredCandidate {
                deployment: s.deployment.clone(),
                latency_ms: latency,
                cost_usd: s.cost_usd,
                quality,
                in_flight: s.in_flight,
                error_rate: errors,
                tokens_per_s: tps,
                ..ScoredCandidate::default()
            };
            let mut missing = |name: &'static str, weight: f64| {
                if weight > 0.0 {
                    row.missing.push(Cow::Borrowed(name));
                }
            };
            if latency.is_none() {
                missing("latency", w.latency);
            }
            if errors.is_none() {
                missing("errors", w.errors);
            }
            if tps.is_none() {
                missing("throughput", w.throughput);
            }
            if s.cost_usd.is_none() {
                missing("cost", w.cost);
            }
            if quality.is_none() {
                missing("quality", w.quality);
            }
            // Exclusions: the ones exploring may not bypass first.
            row.excluded = if s.cost_usd.is_none() && self.unknown_cost == MissingPolicy::Reject {
                Some(Cow::Borrowed("unknown_cost"))
            } else if quality.is_none() && self.missing_quality == MissingPolicy::Reject {
                Some(Cow::Borrowed("missing_quality"))
            } else if quality.zip(self.min_quality).is_some_and(|(q, floor)| q < floor) {
                Some(Cow::Borrowed("quality_floor"))
            } else {
                if !warm {
                    cold.push(i);
                }
                (!warm && self.cold_start == MissingPolicy::Reject)
                    .then_some(Cow::Borrowed("cold_start"))
            };
            if row.excluded.is_none() {
                let penalty = |v: Option<f64>, scale: f64| {
                    v.map_or(self.missing_penalty, |v| (v / scale).clamp(0.0, 1.0))
                };
                let score = w.quality * quality.unwrap_or(0.0)
                    + w.throughput * tps.map_or(0.0, |t| (t / self.throughput_scale).min(1.0))
                    - w.latency * penalty(latency, self.latency_scale_ms)
                    - w.cost * penalty(s.cost_usd, self.cost_scale_usd)
                    - w.load * (s.in_flight as f64 / self.load_scale).min(1.0)
                    - w.errors * errors.map_or(self.missing_penalty, |e| e.clamp(0.0, 1.0));
                row.score = Some(score);
                scored.push((i, score));
            }
            rows.push(row);
        }
        // Highest first; a stable sort keeps chain order among equals.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut order: Vec<usize> = scored.iter().map(|(i, _)| *i).collect();
        let mut explored = None;
        if self.explore_every > 0 && tick.is_multiple_of(self.explore_every) && !cold.is_empty() {
            let pick = cold[((tick / self.explore_every) as usize) % cold.len()];
            order.retain(|&i| i != pick);
            order.insert(0, pick);
            explored = Some(seen[pick].deployment.clone());
            if let Some(row) = rows.get_mut(pick) {
                row.excluded = None;
            }
        }
        // The record lists the ordered ones in their order, then the excluded.
        let mut candidates: Vec<ScoredCandidate> = Vec::with_capacity(rows.len());
        for &i in &order {
            candidates.push(std::mem::take(&mut rows[i]));
        }
        // (A row taken above is left empty: no deployment has an empty name.)
        candidates.extend(rows.into_iter().filter(|r| !r.deployment.is_empty()));
        Decision {
            order,
            record: AdaptiveRecord {
                policy: self.version.clone(),
                quality_version: self.quality_version.clone(),
                explored,
                candidates,
            },
        }
    }
}

/// `base` with the weights `given` sets.
fn weights_over(base: Weights, given: &AdaptiveWeights) -> Weights {
    Weights {
        latency: given.latency.unwrap_or(base.latency),
        cost: given.cost.unwrap_or(base.cost),
        quality: given.quality.unwrap_or(base.quality),
        load: given.load.unwrap_or(base.load),
        errors: given.errors.unwrap_or(base.errors),
        throughput: given.throughput.unwrap_or(base.throughput),
    }
}

#[cfg(test)]
mod tests;
