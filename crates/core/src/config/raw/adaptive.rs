//! A route's `adaptive:` block: the versioned policy `strategy: adaptive`
//! scores its candidates by ([`crate::adaptive`]), as written. Every field is
//! optional over a `preset`; without one, `version` and some weight are required.

use serde::{Deserialize, Serialize};

/// `routes[].adaptive`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AdaptiveConfig {
    /// The starting policy: `interactive`, `economy` or `quality`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<AdaptivePreset>,
    /// The policy's version, recorded with each decision (a preset's own
    /// otherwise, e.g. `interactive-1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Nonnegative weights; those left out keep the preset's (or 0).
    #[serde(skip_serializing_if = "AdaptiveWeights::is_empty")]
    pub weights: AdaptiveWeights,
    /// `ttft` (time to first token; an attempt's whole time where a
    /// deployment has served no stream) or `total`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_metric: Option<LatencyMetric>,
    /// p95 latency at which the latency penalty is full, in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_scale_ms: Option<f64>,
    /// Estimated request cost at which the cost penalty is full, in USD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_scale_usd: Option<f64>,
    /// Output tokens per second at which the throughput reward is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_scale: Option<f64>,
    /// Requests in flight at which the load penalty is full.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_scale: Option<f64>,
    /// Attempts a deployment's window needs before its latency, error rate and
    /// throughput count; below it the deployment is cold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_samples: Option<u32>,
    /// What a cold deployment gets: `allow` (its missing signals take the
    /// conservative penalty) or `reject` (only exploration tries it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<MissingPolicy>,
    /// What a deployment without a price gets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown_cost: Option<MissingPolicy>,
    /// What a deployment without a quality profile gets: `allow` (no quality
    /// reward) or `reject`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_quality: Option<MissingPolicy>,
    /// The penalty a missing latency, cost or error signal takes under
    /// `allow` (at least 1: never better than the worst measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_signal_penalty: Option<f64>,
    /// A deployment whose quality profile scores below this is excluded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_quality: Option<f64>,
    /// Every Nth request on the route tries one cold deployment first (0: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explore_every: Option<u64>,
    /// Quality profiles per target and intent.
    #[serde(skip_serializing_if = "QualityConfig::is_empty")]
    pub quality: QualityConfig,
}

impl AdaptiveWeights {
    /// No weight given.
    pub fn is_empty(&self) -> bool {
        *self == AdaptiveWeights::default()
    }
}

impl QualityConfig {
    /// No evaluation version and no profiles.
    pub fn is_empty(&self) -> bool {
        self.version.is_none() && self.profiles.is_empty()
    }
}

/// The weights of an adaptive policy's signals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct AdaptiveWeights {
    /// Of the p95 latency penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
    /// Of the estimated cost penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Of the quality profile reward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    /// Of the requests-in-flight penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<f64>,
    /// Of the error-rate penalty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<f64>,
    /// Of the output-speed reward.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
}

/// The starting points of an adaptive policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AdaptivePreset {
    /// Latency first (time to first token), then quality, load and errors.
    Interactive,
    /// Cost first; needs prices and quality profiles.
    Economy,
    /// Quality first; needs quality profiles.
    Quality,
}

/// Which latency an adaptive policy reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LatencyMetric {
    /// p95 time to first token.
    Ttft,
    /// p95 of the whole attempt.
    Total,
}

/// What a missing signal does to a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingPolicy {
    /// Kept, with a conservative penalty (or no reward).
    Allow,
    /// Excluded.
    Reject,
}

/// `adaptive.quality`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct QualityConfig {
    /// The evaluation the scores come from, recorded with each decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The scores.
    pub profiles: Vec<QualityProfile>,
}

/// A quality score for a target, for one intent or all.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct QualityProfile {
    /// A catalog model id, or a deployment as `provider/upstream-model`.
    pub target: String,
    /// The class it was measured on (`reasoning`, `code`, …); absent: any.
    #[serde(default)]
    pub intent: Option<String>,
    /// In [0, 1].
    pub score: f64,
}
