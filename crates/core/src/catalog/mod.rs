//! The compiled catalog: providers, models, aliases and routes, validated and
//! indexed. Immutable once built; a reload builds a new one and swaps it in.
//!
//! Resolution turns a requested model name into a [`Plan`]: the catalog entry, the
//! route that matched and the ordered candidate deployments the attempt loop tries.
//!
//! By stage: `spec` holds the compiled types, `compile` (with `compile_routes`
//! and `compile_client`)
//! validates a parsed file into a [`Catalog`], `resolve` answers requests from it.
//! [`presets`] is the table of OpenAI-compatible vendors a provider may name.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::raw;

mod compile;
mod compile_auth;
mod compile_batches;
mod compile_client;
mod compile_intent;
mod compile_kind;
mod compile_numbers;
mod compile_routes;
mod compile_telemetry;
mod console;
pub mod presets;
mod prices;
mod resolve;
mod spec;

pub use compile::{InvalidRegistry, Problem};
pub use console::{ConsoleSpec, OidcSpec};
pub use prices::PriceLine;
pub use resolve::{ResolveError, governance_ok};
pub use spec::{
    AffinitySpec, AttemptPolicy, CacheSpec, Candidate, Capabilities, ChainSpec, Connections,
    DEFAULT_FAILOVER, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_FALLBACKS, DeploymentSpec,
    HARD_MAX_ATTEMPTS, HARD_MAX_FALLBACKS, MAX_CANDIDATES, MAX_RETRIES, MAX_RETRY_WAIT, ModelEntry,
    Plan, Pricing, ProviderKind, ProviderSpec, Requires, RouteSpec, Scope, Scopes, Settings,
    Strategy, TargetSpec,
};

/// The compiled, immutable catalog.
#[derive(Debug)]
pub struct Catalog {
    /// The `gateway:` settings, compiled.
    pub settings: Settings,
    /// The providers, in name order (the file's map is sorted).
    pub providers: Vec<Arc<ProviderSpec>>,
    /// The models, in file order.
    pub models: Vec<Arc<ModelEntry>>,
    /// The routes, in file order: the first whose pattern matches serves a model.
    pub routes: Vec<RouteSpec>,
    /// Access rules from the configuration file.
    pub rules: Vec<crate::access::Rule>,
    /// Storage settings as written (paths are resolved by the binary).
    pub storage: raw::StorageConfig,
    /// Which variables hold the gateway's secrets, as written.
    pub security: raw::SecurityConfig,
    /// Where shared state lives, as written (read at start-up only).
    pub state: raw::StateConfig,
    /// Rate limits of projects and users.
    pub limits: raw::LimitsConfig,
    /// Budgets, in file order.
    pub budgets: Vec<crate::limits::BudgetSpec>,
    /// How operators sign in to the console.
    pub console: ConsoleSpec,
    /// `telemetry:`: traces over OTLP; `None`: off.
    pub telemetry: Option<Arc<crate::otel::TraceConfig>>,
    /// `intent:`: where the `auto` models send each class; `None`: no `auto`
    /// models.
    pub intent: Option<crate::intent::Targets>,
    /// The `auto` models as model lists show them (`auto`, `auto-<class>`),
    /// each with the catalog models it routes to; empty without `intent:`.
    pub auto_models: Vec<(Arc<ModelEntry>, Vec<Arc<ModelEntry>>)>,
    /// `intent.classifier`: the model asked whether an `auto` request needs
    /// reasoning; `None`: the rules decide alone.
    pub intent_classifier: Option<Arc<crate::intent::model::ClassifierSpec>>,
    /// Non-fatal findings (disabled providers, shadowed routes).
    pub warnings: Vec<String>,
    provider_index: HashMap<String, usize>,
    /// Normalised ids and aliases → index into `models`.
    lookup: HashMap<String, usize>,
    /// The route each catalog model resolves to (first match), computed once at
    /// compile time so a request never scans the route list for a known model.
    model_route: Vec<Option<usize>>,
    /// The attempt policy of requests no route matches (shared, not rebuilt).
    default_policy: Arc<AttemptPolicy>,
}

/// Normalise a requested model name: trim, lowercase, spaces and underscores to
/// hyphens, and strip Claude Code's `[1m]` context marker.
pub fn normalize_model(name: &str) -> String {
    let trimmed = name.trim();
    let trimmed = trimmed.strip_suffix("[1m]").unwrap_or(trimmed);
    trimmed
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// The longest model name taken, in bytes.
pub const MAX_MODEL_ID: usize = 256;

/// The rule [`model_name_ok`] applies, as error messages state it.
pub const MODEL_NAME_RULE: &str = "1-256 ASCII letters, digits and - . _ : @ / +, with no empty, `.` or `..` segment between slashes";

/// Whether `name` is a model name the gateway takes, wherever one enters it (a
/// client's request as normalised, the catalog's ids, aliases and upstream
/// names): 1 to [`MAX_MODEL_ID`] bytes of ASCII letters, digits and `-._:@/+`,
/// whose `/`-separated segments are neither empty, `.` nor `..` (so no leading,
/// trailing or doubled `/`). The set covers the ids providers use (`gpt-5`,
/// `anthropic.claude-v2:1`, `claude-x@20250101`, `meta-llama/Llama-3-70b`) and
/// leaves out everything that could read as more than a name in an upstream URL
/// (a query, a fragment, a percent-encoding, a climb up the path), though URLs
/// encode the model as well (`switchyard_protocol::spec::path_segment`).
pub fn model_name_ok(name: &str) -> bool {
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._:@/+".contains(&b);
    (1..=MAX_MODEL_ID).contains(&name.len())
        && name.bytes().all(allowed)
        && name.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
}

/// A name for an error message: at most 100 characters of it, marked where cut.
pub(crate) fn quote_model(name: &str) -> String {
    match name.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_owned(),
    }
}

impl Catalog {
    /// The provider with this name.
    pub fn provider(&self, name: &str) -> Option<&Arc<ProviderSpec>> {
        self.provider_index.get(name).and_then(|&i| self.providers.get(i))
    }

    /// The catalog entry for a (normalised) id or alias.
    pub fn model(&self, normalized: &str) -> Option<&Arc<ModelEntry>> {
        self.lookup.get(normalized).and_then(|&i| self.models.get(i))
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
mod tests;
