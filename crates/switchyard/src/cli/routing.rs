//! `switchyard keys routing` and `switchyard projects routing`: a key's or a
//! project's own routing policy (`switchyard_core::app_policy`): a pinned
//! strategy, an adaptive policy, a cost ceiling. The options given replace
//! those settings and keep the others; `--clear` removes the policy; none
//! shows it. Checked against the configuration's catalog before it is stored.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use switchyard_core::app_policy::AppPolicy;
use switchyard_core::catalog::Strategy;
use switchyard_core::config::raw::{AdaptiveConfig, AdaptivePreset};
use switchyard_core::filter::UnknownCost;

use super::{Ctx, Failure, Result};

/// The options of a routing policy.
#[derive(Args)]
pub struct PolicyArgs {
    /// Order every chain it calls by this strategy instead of the route's.
    #[arg(long, value_enum)]
    strategy: Option<StrategyArg>,
    /// Score adaptive chains by this preset (with --strategy adaptive, or on
    /// routes whose strategy is adaptive).
    #[arg(long, value_enum, conflicts_with = "adaptive_file")]
    preset: Option<PresetArg>,
    /// Score adaptive chains by this policy: a JSON file shaped as a route's
    /// `adaptive:` block (preset, version, weights, quality, …).
    #[arg(long, value_name = "FILE")]
    adaptive_file: Option<PathBuf>,
    /// Skip deployments priced above this, in USD per 1,000 input or output tokens.
    #[arg(long, value_name = "USD")]
    max_cost_per_1k_tokens: Option<f64>,
    /// What the ceiling does to an unpriced deployment.
    #[arg(long, value_enum)]
    unknown_cost: Option<UnknownCostArg>,
    /// Remove the policy.
    #[arg(long, conflicts_with_all = ["strategy", "preset", "adaptive_file", "max_cost_per_1k_tokens", "unknown_cost"])]
    pub clear: bool,
    /// Print the changed key or project as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum StrategyArg {
    Ordered,
    Weighted,
    LeastBusy,
    Cost,
    Latency,
    Balanced,
    Adaptive,
}

#[derive(Clone, Copy, ValueEnum)]
enum PresetArg {
    Interactive,
    Economy,
    Quality,
}

#[derive(Clone, Copy, ValueEnum)]
enum UnknownCostArg {
    Reject,
    Allow,
}

impl PolicyArgs {
    /// Nothing to change (show the policy).
    pub fn is_empty(&self) -> bool {
        !self.clear
            && self.strategy.is_none()
            && self.preset.is_none()
            && self.adaptive_file.is_none()
            && self.max_cost_per_1k_tokens.is_none()
            && self.unknown_cost.is_none()
    }

    /// `base` with the options given replaced, checked against `ctx`'s catalog
    /// (as `source`: `key:<id>`, `project:<id>`); `None`: nothing pinned.
    pub fn over(
        &self,
        ctx: &Ctx,
        base: Option<AppPolicy>,
        source: &str,
    ) -> Result<Option<AppPolicy>> {
        if self.clear {
            return Ok(None);
        }
        let mut p = base.unwrap_or_default();
        if let Some(s) = self.strategy {
            p.strategy = Some(match s {
                StrategyArg::Ordered => Strategy::Ordered,
                StrategyArg::Weighted => Strategy::Weighted,
                StrategyArg::LeastBusy => Strategy::LeastBusy,
                StrategyArg::Cost => Strategy::Cost,
                StrategyArg::Latency => Strategy::Latency,
                StrategyArg::Balanced => Strategy::Balanced,
                StrategyArg::Adaptive => Strategy::Adaptive,
            });
        }
        if let Some(preset) = self.preset {
            let mut a = AdaptiveConfig::default();
            a.preset = Some(match preset {
                PresetArg::Interactive => AdaptivePreset::Interactive,
                PresetArg::Economy => AdaptivePreset::Economy,
                PresetArg::Quality => AdaptivePreset::Quality,
            });
            p.adaptive = Some(a);
        }
        if let Some(path) = &self.adaptive_file {
            let text = std::fs::read(path)
                .map_err(|e| Failure(format!("{}: cannot read: {e}", path.display())))?;
            p.adaptive = Some(serde_json::from_slice(&text).map_err(|e| {
                Failure(format!("{}: not an adaptive policy: {e}", path.display()))
            })?);
        }
        if let Some(c) = self.max_cost_per_1k_tokens {
            p.max_cost_per_1k_tokens = Some(c);
        }
        if let Some(u) = self.unknown_cost {
            p.unknown_cost = Some(match u {
                UnknownCostArg::Reject => UnknownCost::Reject,
                UnknownCostArg::Allow => UnknownCost::Allow,
            });
        }
        let catalog = &ctx.catalog;
        let target_ok = |t: &str| {
            catalog.model(t).is_some()
                || t.split_once('/').is_some_and(|(prov, _)| catalog.provider(prov).is_some())
        };
        p.compile(source, &target_ok).map_err(|problems| Failure(problems.join("; ")))?;
        Ok((!p.is_empty()).then_some(p))
    }
}

/// A policy in one line: `strategy cost, adaptive economy-1, at most $0.004 per 1k tokens`.
pub fn describe(p: Option<&AppPolicy>) -> String {
    let Some(p) = p.filter(|p| !p.is_empty()) else { return "none (the routes')".to_owned() };
    let mut parts = Vec::new();
    if let Some(s) = p.strategy {
        parts.push(format!("strategy {}", s.as_str()));
    }
    if let Some(a) = &p.adaptive {
        let version = match (&a.version, a.preset) {
            (Some(v), _) => v.clone(),
            (None, Some(preset)) => format!("{preset:?}").to_lowercase(),
            (None, None) => "custom".to_owned(),
        };
        parts.push(format!("adaptive {version}"));
    }
    if let Some(c) = p.max_cost_per_1k_tokens {
        let unknown = match p.unknown_cost {
            Some(UnknownCost::Allow) => ", unpriced allowed",
            _ => "",
        };
        parts.push(format!("at most ${c} per 1k tokens{unknown}"));
    }
    parts.join(", ")
}
