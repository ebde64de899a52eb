//! Per-application routing policy: what a gateway key or a project pins over the
//! routes it calls, set through the admin API (`PATCH /admin/keys/{id}`,
//! `PATCH /admin/projects/{id}`) or the CLI: a strategy, an adaptive policy,
//! and a cost ceiling. Where both pin a setting the key's wins; either wins
//! over the route's. A ceiling is a cap: the request's own hint, the key's and
//! the project's all hold, so the lowest decides.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use crate::adaptive::AdaptivePolicy;
use crate::catalog::Strategy;
use crate::config::raw::{AdaptiveConfig, AdaptivePreset};
use crate::filter::UnknownCost;

/// A key's or a project's policy, as stored and as the admin API takes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AppPolicy {
    /// Every chain it calls is ordered by this strategy instead of its route's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<Strategy>,
    /// The adaptive policy its adaptive chains score by, instead of the route's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveConfig>,
    /// Deployments priced above this, in USD per 1,000 input or output tokens,
    /// are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_per_1k_tokens: Option<f64>,
    /// What the ceiling does to an unpriced deployment (absent: `reject`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unknown_cost: Option<UnknownCost>,
}

/// An [`AppPolicy`] compiled, as a request's principal carries it.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// `key:<id>` or `project:<id>`: whose it is, for the descriptor.
    pub source: String,
    /// The strategy it pins.
    pub strategy: Option<Strategy>,
    /// Its adaptive policy, compiled.
    pub adaptive: Option<Arc<AdaptivePolicy>>,
    /// Its cost ceiling.
    pub max_cost_per_1k_tokens: Option<f64>,
    /// Its unknown-cost rule.
    pub unknown_cost: Option<UnknownCost>,
}

/// Alike when they pin the same: adaptive policies by their version (a policy's
/// exploration counter is no part of what it pins).
impl PartialEq for Pinned {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
            && self.strategy == other.strategy
            && self.adaptive.as_ref().map(|a| &a.version)
                == other.adaptive.as_ref().map(|a| &a.version)
            && self.max_cost_per_1k_tokens == other.max_cost_per_1k_tokens
            && self.unknown_cost == other.unknown_cost
    }
}

impl AppPolicy {
    /// Nothing pinned.
    pub fn is_empty(&self) -> bool {
        self == &AppPolicy::default()
    }

    /// Check and compile it for `source`; `target_ok` says whether a quality
    /// profile's target names a catalog model or a configured provider's
    /// deployment (a stored policy is compiled with `|_| true`: it was checked
    /// against the catalog when it was set, and a target the catalog no longer
    /// has simply matches nothing).
    pub fn compile(
        &self,
        source: impl Into<String>,
        target_ok: &dyn Fn(&str) -> bool,
    ) -> Result<Pinned, Vec<String>> {
        let mut problems = Vec::new();
        if let Some(c) = self.max_cost_per_1k_tokens
            && (!c.is_finite() || c < 0.0)
        {
            problems.push(format!("max_cost_per_1k_tokens: {c} is not a price of at least 0"));
        }
        let adaptive = match &self.adaptive {
            Some(raw) => match AdaptivePolicy::compile(raw, target_ok) {
                Ok(p) => Some(p),
                Err(found) => {
                    problems.extend(found);
                    None
                }
            },
            None => None,
        };
        if adaptive.is_some() && self.strategy.is_some_and(|s| s != Strategy::Adaptive) {
            problems.push(format!(
                "adaptive: the policy pins strategy {}, which does not read it (pin `adaptive`, or leave the strategy to the route)",
                self.strategy.map_or("", Strategy::as_str)
            ));
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(Pinned {
            source: source.into(),
            strategy: self.strategy,
            adaptive,
            max_cost_per_1k_tokens: self.max_cost_per_1k_tokens,
            unknown_cost: self.unknown_cost,
        })
    }
}

/// The `interactive` preset: what a key or project that pins `strategy:
/// adaptive` scores by where neither it nor the route gives a policy.
pub fn default_adaptive() -> Arc<AdaptivePolicy> {
    static DEFAULT: OnceLock<Arc<AdaptivePolicy>> = OnceLock::new();
    Arc::clone(
        DEFAULT.get_or_init(|| Arc::new(AdaptivePolicy::preset(AdaptivePreset::Interactive))),
    )
}

#[cfg(test)]
#[path = "app_policy_tests.rs"]
mod tests;
