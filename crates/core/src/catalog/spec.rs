//! The compiled catalog's types: what [`Catalog::compile`](super::Catalog::compile)
//! produces from the file and what resolution hands the attempt loop.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use switchyard_protocol::{ServerTools, Wire};

use super::governance_ok;
use crate::config::raw;
use crate::util::{Date, Secret};

pub use raw::{Pricing, Requires};

/// Not enforced: nothing reads this. [`Catalog::plan`](super::Catalog::plan) cuts
/// its candidates to `1 + AttemptPolicy::max_fallbacks` (at most
/// `1 + HARD_MAX_FALLBACKS`); the attempt loop is bounded by `max_attempts`.
pub const MAX_CANDIDATES: usize = 9;

/// How a provider is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderKind {
    Wire(Wire),
    /// Built-in deterministic echo; no network.
    Mock {
        latency: Duration,
    },
}

#[derive(Debug)]
pub struct ProviderSpec {
    pub name: String,
    pub kind: ProviderKind,
    /// Base URL without a trailing slash.
    pub endpoint: String,
    /// Platform keys, in order. Empty for credential-free providers.
    pub keys: Vec<Secret>,
    /// Why this provider cannot be used (e.g. its key variable is unset).
    pub unavailable: Option<String>,
    pub headers: Vec<(String, String)>,
    pub drop_fields: Vec<String>,
    /// Backend surface: its models are never listed.
    pub backend: bool,
    /// Data stays in the EU.
    pub european: bool,
    /// The provider does not retain prompts or completions.
    pub no_retain: bool,
    /// Cost multiplier for this provider's answers.
    pub markup: f64,
    /// The server tools its deployments run unless they say otherwise.
    pub server_tools: ServerTools,
    /// The `anthropic-beta` flags it accepts (`None`: any, as the client sent them).
    pub anthropic_betas: Option<Vec<String>>,
}

impl ProviderSpec {
    pub fn wire(&self) -> Option<Wire> {
        match self.kind {
            ProviderKind::Wire(w) => Some(w),
            ProviderKind::Mock { .. } => None,
        }
    }

    pub fn wire_name(&self) -> &'static str {
        match self.kind {
            ProviderKind::Wire(w) => w.as_str(),
            ProviderKind::Mock { .. } => "mock",
        }
    }

    /// Whether a caller holding these own keys (BYOK, by provider name) can use this
    /// provider: it is available with a platform key (or needs none), or the caller
    /// brings a key for it.
    pub fn reachable_with(&self, byok: &[(String, Secret)]) -> bool {
        self.unavailable.is_none() || byok.iter().any(|(p, _)| *p == self.name)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    pub vision: bool,
    pub tools: bool,
    pub structured_output: bool,
    pub reasoning: bool,
}

#[derive(Debug)]
pub struct ModelEntry {
    pub id: String,
    pub aliases: Vec<String>,
    pub deployments: Vec<Deployment>,
    pub pricing: Option<Pricing>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// `None` when the catalog does not say (nothing is filtered).
    pub capabilities: Option<Capabilities>,
    /// The catalog's word on how the model takes reasoning (None: inferred per
    /// deployment from the upstream id).
    pub reasoning_control: Option<switchyard_protocol::ReasoningControl>,
    /// The catalog's word on sampling parameters (None: inferred).
    pub sampling: Option<bool>,
    /// The catalog's word on `max_tokens` (None: inferred).
    pub takes_max_tokens: Option<bool>,
    pub hidden: bool,
    pub retires: Option<Date>,
    pub fallbacks: Vec<String>,
    pub owned_by: String,
    /// Narrows the providers' governance flags (None: the provider's word).
    pub governance: raw::Governance,
}

impl ModelEntry {
    /// How a deployment of this model (on `wire`, as `upstream_model`) takes
    /// reasoning and sampling settings: the catalog's word, else inferred.
    pub fn traits(
        &self,
        wire: switchyard_protocol::Wire,
        upstream_model: &str,
    ) -> switchyard_protocol::ModelTraits {
        let inferred = switchyard_protocol::ModelTraits::infer(wire, upstream_model);
        switchyard_protocol::ModelTraits {
            reasoning: self.reasoning_control.unwrap_or(inferred.reasoning),
            sampling: self.sampling.unwrap_or(inferred.sampling),
            takes_max_tokens: self.takes_max_tokens.unwrap_or(inferred.takes_max_tokens),
        }
    }

    pub fn is_retired(&self, today: Date) -> bool {
        self.retires.is_some_and(|d| today >= d)
    }
}

#[derive(Debug, Clone)]
pub struct Deployment {
    pub provider: usize,
    pub upstream_model: String,
    pub pricing: Option<Pricing>,
    /// The server tools it runs (`None`: its provider's).
    pub server_tools: Option<ServerTools>,
}

#[derive(Debug, Clone)]
pub struct Target {
    pub provider: usize,
    pub model: Option<String>,
    /// Weight under `strategy: weighted` (≥ 1).
    pub weight: u32,
}

pub use raw::StrategyName as Strategy;

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Ordered => "ordered",
            Strategy::Weighted => "weighted",
            Strategy::LeastBusy => "least_busy",
            Strategy::Cost => "cost",
            Strategy::Latency => "latency",
            Strategy::Balanced => "balanced",
        }
    }
}

/// A primary and its ordered fallbacks, with the strategy that orders them.
#[derive(Debug, Clone)]
pub struct Chain {
    pub primary: Target,
    pub fallbacks: Vec<Target>,
    pub strategy: Strategy,
}

/// Per-scope chains of a route (`by_scope`).
#[derive(Debug, Clone)]
pub struct Scopes {
    /// The dimension (`project`).
    pub dimension: String,
    /// A value not listed goes down the route's own chain (else it is refused).
    pub unmapped_shared: bool,
    pub chains: HashMap<String, Chain>,
}

/// Bounds and classification rules of the attempt loop.
#[derive(Debug, Clone)]
pub struct AttemptPolicy {
    pub retry_statuses: Vec<u16>,
    pub max_retries: u32,
    pub backoff: Duration,
    pub max_wait: Duration,
    pub failover_statuses: Vec<u16>,
    pub failover_transport: bool,
    pub max_fallbacks: usize,
    pub max_attempts: usize,
}

/// Statuses the default policy fails over on (plus every 5xx).
pub const DEFAULT_FAILOVER: &[u16] = &[401, 402, 403, 404, 408, 409, 425, 429];
pub const DEFAULT_MAX_FALLBACKS: usize = 8;
pub const HARD_MAX_FALLBACKS: usize = 32;
pub const MAX_RETRIES: u32 = 5;
pub const DEFAULT_MAX_ATTEMPTS: usize = 16;
pub const HARD_MAX_ATTEMPTS: usize = 128;
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

fn five_xx() -> impl Iterator<Item = u16> {
    500..=599
}

impl Default for AttemptPolicy {
    fn default() -> Self {
        Self::compile(&raw::RetryConfig::default(), &raw::FailoverConfig::default(), None, None)
    }
}

impl AttemptPolicy {
    /// A route's policy from its settings, clamped to the hard maximums (the
    /// compiler builds one per route; the default one serves requests no route
    /// matches).
    pub(super) fn compile(
        retry: &raw::RetryConfig,
        failover: &raw::FailoverConfig,
        max_fallbacks: Option<usize>,
        max_attempts: Option<usize>,
    ) -> Self {
        let failover_statuses = match (&failover.statuses, failover.preset) {
            (Some(list), _) => list.clone(),
            (None, raw::FailoverPreset::Default) => {
                DEFAULT_FAILOVER.iter().copied().chain(five_xx()).collect()
            }
            (None, raw::FailoverPreset::Strict) => std::iter::once(429).chain(five_xx()).collect(),
        };
        AttemptPolicy {
            retry_statuses: retry.statuses.clone(),
            max_retries: retry.max_retries.min(MAX_RETRIES),
            backoff: Duration::from_millis(retry.backoff_ms),
            max_wait: Duration::from_millis(retry.max_wait_ms).min(MAX_RETRY_WAIT),
            failover_statuses,
            failover_transport: failover.transport.unwrap_or(true),
            max_fallbacks: max_fallbacks.unwrap_or(DEFAULT_MAX_FALLBACKS).min(HARD_MAX_FALLBACKS),
            max_attempts: max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS).clamp(1, HARD_MAX_ATTEMPTS),
        }
    }

    pub fn is_retryable(&self, status: u16) -> bool {
        self.retry_statuses.contains(&status)
    }

    pub fn fails_over(&self, status: u16) -> bool {
        self.failover_statuses.contains(&status)
    }
}

#[derive(Debug)]
pub struct Route {
    /// `slug(name)-<6 hex of FNV-1a(name)>`: stable across reloads and machines.
    pub id: String,
    pub name: String,
    pub pattern: String,
    pub chain: Chain,
    pub scopes: Option<Scopes>,
    /// Catalog ids tried when the request does not fit the chain's context window.
    pub context_fallbacks: Vec<String>,
    pub policy: Arc<AttemptPolicy>,
    pub requires: raw::Requires,
}

/// Gateway settings after compilation.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: String,
    pub default_model: Option<String>,
    pub allow_unlisted_models: bool,
    /// Normalised namespace prefixes stripped from requested ids.
    pub model_prefixes: Vec<String>,
    pub api_keys: Vec<Secret>,
    pub max_body_bytes: usize,
    pub max_json_depth: usize,
    pub shutdown_grace: Duration,
    pub connect_timeout: Duration,
    pub first_byte_timeout: Duration,
    pub idle_timeout: Duration,
    pub request_timeout: Duration,
    /// Keep-alive interval for silent committed streams.
    pub keepalive: Duration,
    pub breaker: crate::breaker::BreakerConfig,
    pub reload_poll: Duration,
}

/// What the request is attributed to, for per-scope chains. The project comes from
/// the `x-switchyard-project` header, else the API key's bound project, else the
/// user's primary project (the last two arrive with the tenancy work).
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    /// The attributed project's id (or, for static keys, the header as sent).
    pub project: Option<&'a str>,
    /// Its name, when known: a chain may be keyed by either.
    pub project_name: Option<&'a str>,
}

/// One deployment the attempt loop may try.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub provider: Arc<ProviderSpec>,
    pub upstream_model: String,
    pub pricing: Option<Pricing>,
    /// The catalog entry this deployment serves (None for unlisted models).
    pub model: Option<Arc<ModelEntry>>,
    /// Weight under `strategy: weighted`.
    pub weight: u32,
    /// The server tools this deployment runs.
    pub server_tools: ServerTools,
}

impl Candidate {
    /// `provider/upstream-model`, as logs and records name it.
    pub fn label(&self) -> String {
        format!("{}/{}", self.provider.name, self.upstream_model)
    }

    /// Does this deployment meet a route's data-governance requirements?
    pub fn governance(&self, req: &raw::Requires) -> Result<(), &'static str> {
        governance_ok(&self.provider, self.model.as_ref().map(|m| &m.governance), req)
    }

    /// What the encoder must know about the model behind this deployment: the
    /// catalog's word where it gives one, else inferred from the upstream id.
    pub fn traits(&self, wire: switchyard_protocol::Wire) -> switchyard_protocol::ModelTraits {
        match &self.model {
            Some(m) => m.traits(wire, &self.upstream_model),
            None => switchyard_protocol::ModelTraits::infer(wire, &self.upstream_model),
        }
    }

    /// Stable identity for runtime state: (public model, provider, provider model).
    pub fn identity(&self) -> String {
        let public = self.model.as_ref().map_or("", |m| m.id.as_str());
        format!("{public}|{}|{}", self.provider.name, self.upstream_model)
    }
}

/// The outcome of resolution: everything the attempt loop needs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub requested: String,
    /// The canonical catalog id (or the normalised requested id when unlisted).
    pub public_model: String,
    pub model: Option<Arc<ModelEntry>>,
    pub route_id: Option<String>,
    pub candidates: Vec<Candidate>,
    pub context_fallbacks: Vec<String>,
    /// Route-match descriptor segments (`route:…`, `scope:project=…`, later
    /// `strategy:…`, `failover:a->b`, …).
    pub descriptor: Vec<String>,
    pub strategy: Strategy,
    pub policy: Arc<AttemptPolicy>,
    /// Every candidate's breaker is open: try them all anyway, in chain order.
    pub bypass_breakers: bool,
    /// The route's data-governance requirements.
    pub requires: raw::Requires,
}
