//! Routes as written: patterns, chains, strategies, retry and failover.

use super::*;

/// How a chain orders its deployments for the first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StrategyName {
    /// Chain order (the default).
    #[default]
    Ordered,
    /// Drawn by weight among the targets whose breaker is not open.
    Weighted,
    /// Fewest requests in flight in this process.
    LeastBusy,
    /// Cheapest estimated price for the request.
    Cost,
    /// Scored by the route's versioned `adaptive:` policy: latency, cost,
    /// quality, load, errors and throughput, weighted.
    Adaptive,
    /// Lowest recent latency.
    Latency,
    /// Price and latency together, each relative to the best target.
    Balanced,
}

/// One entry of `routes:`: the models whose id matches `match` go down its chain.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// Its name; its id is derived from it (stable across reloads).
    pub name: String,
    /// Glob over the requested (canonical) model id: `*` any run, `?` one char.
    #[serde(rename = "match", alias = "model_pattern")]
    pub pattern: Spanned<String>,
    /// The primary target's provider.
    pub provider: Spanned<String>,
    /// Upstream model id to send instead of the catalog's (a rewrite).
    #[serde(default, alias = "upstream_model")]
    pub model: Option<String>,
    /// The primary's weight under `strategy: weighted` (default 1; 0 is refused).
    #[serde(default)]
    pub weight: Option<Spanned<u32>>,
    /// Targets after the primary, in order.
    #[serde(default)]
    pub fallbacks: Vec<RouteTarget>,
    /// How the chain is ordered for the first attempt.
    #[serde(default)]
    pub strategy: StrategyName,
    /// Catalog ids tried, in order, when the request does not fit the chain's
    /// context window.
    #[serde(default)]
    pub context_fallbacks: Vec<Spanned<String>>,
    /// Per-scope chains (e.g. per project).
    #[serde(default)]
    pub by_scope: Option<ByScope>,
    /// Retries of one deployment before failing over.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Which failures move on to the next target.
    #[serde(default)]
    pub failover: FailoverConfig,
    /// Most fallbacks tried after the primary (default 8, at most 32).
    #[serde(default)]
    pub max_fallbacks: Option<usize>,
    /// Most attempts per request, retries included (default 16, at most 128).
    #[serde(default)]
    pub max_attempts: Option<usize>,
    /// Data-governance conditions every deployment of this route must meet.
    #[serde(default)]
    pub requires: Requires,
    /// What a request offering a hosted tool that a deployment cannot run gets
    /// (absent: the model's setting, else `drop`).
    #[serde(default)]
    pub unrunnable_server_tools: Option<UnrunnableServerTools>,
    /// Keep the answers of the models it serves in the response cache (absent:
    /// the model's setting).
    #[serde(default)]
    pub cache: Option<CacheConfig>,
    /// Send later turns of a conversation to the deployment that served the
    /// earlier ones (absent: the model's setting).
    #[serde(default)]
    pub affinity: Option<AffinityConfig>,
    /// How a JSON-schema response format is asked for: `native`, `prompted`
    /// or `auto` (absent: `auto`); a request's routing hint overrides it.
    #[serde(default)]
    pub structured_output: Option<crate::structured::StructuredMode>,
    /// The policy `strategy: adaptive` scores the chain by.
    #[serde(default)]
    pub adaptive: Option<Spanned<super::AdaptiveConfig>>,
    /// Refused: write a one-entry `fallbacks` list instead.
    #[serde(default)]
    pub fallback_provider: Option<Spanned<String>>,
    /// Refused: write a one-entry `fallbacks` list instead.
    #[serde(default)]
    pub fallback_upstream_model: Option<Spanned<String>>,
}

impl RouteConfig {
    /// A route named `name` sending models matching `pattern` to `provider`, with
    /// every other field as YAML's defaults leave it.
    pub fn new(
        name: impl Into<String>,
        pattern: impl Into<String>,
        provider: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            pattern: unlocated(pattern.into()),
            provider: unlocated(provider.into()),
            model: None,
            weight: None,
            fallbacks: Vec::new(),
            strategy: StrategyName::default(),
            context_fallbacks: Vec::new(),
            by_scope: None,
            retry: RetryConfig::default(),
            failover: FailoverConfig::default(),
            max_fallbacks: None,
            max_attempts: None,
            requires: Requires::default(),
            unrunnable_server_tools: None,
            cache: None,
            affinity: None,
            structured_output: None,
            adaptive: None,
            fallback_provider: None,
            fallback_upstream_model: None,
        }
    }
}

/// A fallback of a route or scope chain.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteTarget {
    /// The provider's name under `providers:`.
    pub provider: Spanned<String>,
    /// A catalog id (its deployment on that provider is used) or an upstream id.
    #[serde(default, alias = "upstream_model")]
    pub model: Option<String>,
    /// Its weight under `strategy: weighted` (default 1; 0 is refused).
    #[serde(default)]
    pub weight: Option<Spanned<u32>>,
}

impl RouteTarget {
    /// A target on `provider` with every other field as YAML's defaults leave it.
    pub fn new(provider: impl Into<String>) -> Self {
        Self { provider: unlocated(provider.into()), model: None, weight: None }
    }
}

/// A route's `requires:`: data-governance conditions every deployment it sends
/// to must meet (a deployment that does not is never contacted).
///
/// ```
/// use switchyard_core::embed::Requires;
///
/// let eu = Requires::default().european(true);
/// assert!(eu.european && !eu.no_retain);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Requires {
    /// Only deployments whose data stays in the EU.
    #[serde(default)]
    pub european: bool,
    /// Only deployments that do not retain prompts or completions.
    #[serde(default)]
    pub no_retain: bool,
}

impl Requires {
    /// Whether only deployments whose data stays in the EU may serve.
    #[must_use]
    pub fn european(mut self, required: bool) -> Self {
        self.european = required;
        self
    }

    /// Whether only deployments that retain nothing may serve.
    #[must_use]
    pub fn no_retain(mut self, required: bool) -> Self {
        self.no_retain = required;
        self
    }
}

/// What a route does with a scope value its `by_scope` does not list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmapped {
    /// A scope value the route does not list is refused (403).
    #[default]
    Refuse,
    /// It goes down the route's own chain.
    Shared,
}

/// A route's `by_scope:`: its own chain per scope value (per project).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByScope {
    /// The scope dimension. Only `project` today.
    pub dimension: Spanned<String>,
    /// What a value not listed gets (default: refused).
    #[serde(default)]
    pub unmapped: Unmapped,
    /// The chains, by scope value (a project's id or name).
    pub chains: BTreeMap<String, ScopeChain>,
}

/// The chain of one scope value.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopeChain {
    /// The primary target's provider.
    pub provider: Spanned<String>,
    /// The primary's model: a catalog id or an upstream id (absent: the requested one).
    #[serde(default, alias = "upstream_model")]
    pub model: Option<String>,
    /// The primary's weight under `strategy: weighted` (default 1; 0 is refused).
    #[serde(default)]
    pub weight: Option<Spanned<u32>>,
    /// Targets after the primary, in order.
    #[serde(default)]
    pub fallbacks: Vec<RouteTarget>,
    /// Defaults to the route's strategy.
    #[serde(default)]
    pub strategy: Option<StrategyName>,
}

impl ByScope {
    /// Per-scope chains over `dimension`, none listed yet, unlisted values refused.
    pub fn new(dimension: impl Into<String>) -> Self {
        Self {
            dimension: unlocated(dimension.into()),
            unmapped: Unmapped::default(),
            chains: BTreeMap::new(),
        }
    }
}

impl ScopeChain {
    /// A chain whose primary is `provider`, with every other field as YAML's
    /// defaults leave it.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: unlocated(provider.into()),
            model: None,
            weight: None,
            fallbacks: Vec::new(),
            strategy: None,
        }
    }
}

/// Retries of one deployment on transient answers, before failing over. The
/// defaults are the file's; the setters change one field each.
///
/// ```
/// use switchyard_core::embed::RetryConfig;
///
/// let retry = RetryConfig::default().max_retries(2).statuses([429]).backoff_ms(100);
/// assert_eq!((retry.max_retries, retry.statuses.as_slice()), (2, &[429][..]));
/// assert_eq!(retry.max_wait_ms, 60_000, "the default");
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct RetryConfig {
    /// Retries per deployment (at most 5).
    pub max_retries: u32,
    /// Statuses that are retried on the same deployment.
    pub statuses: Vec<u16>,
    /// First backoff; doubles per retry.
    pub backoff_ms: u64,
    /// Longest wait (Retry-After or backoff) before retrying; a longer wait fails over
    /// instead. At most 60000.
    pub max_wait_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self { max_retries: 1, statuses: vec![408, 429, 503], backoff_ms: 250, max_wait_ms: 60_000 }
    }
}

impl RetryConfig {
    /// Retries per deployment (at most 5).
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = n;
        self
    }

    /// The statuses retried on the same deployment.
    #[must_use]
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.statuses = statuses.into_iter().collect();
        self
    }

    /// The first backoff, in milliseconds; it doubles per retry.
    #[must_use]
    pub fn backoff_ms(mut self, ms: u64) -> Self {
        self.backoff_ms = ms;
        self
    }

    /// The longest wait before a retry, in milliseconds (at most 60000).
    #[must_use]
    pub fn max_wait_ms(mut self, ms: u64) -> Self {
        self.max_wait_ms = ms;
        self
    }
}

/// A named set of failover statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailoverPreset {
    /// 401, 402, 403, 404, 408, 409, 425, 429, 5xx and transport failures.
    #[default]
    Default,
    /// Only 429, 5xx and transport failures.
    Strict,
}

/// Which failures move on to the next deployment.
///
/// ```
/// use switchyard_core::embed::{FailoverConfig, FailoverPreset};
///
/// let strict = FailoverConfig::default().preset(FailoverPreset::Strict).transport(false);
/// assert_eq!((strict.preset, strict.transport), (FailoverPreset::Strict, Some(false)));
/// ```
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct FailoverConfig {
    /// The status list used unless `statuses` gives one.
    pub preset: FailoverPreset,
    /// Replaces the preset's status list when given (5xx must be listed one by one).
    pub statuses: Option<Vec<u16>>,
    /// Fail over on transport failures (connect, DNS, TLS, timeout, reset). Default true.
    pub transport: Option<bool>,
}

impl FailoverConfig {
    /// The named status list.
    #[must_use]
    pub fn preset(mut self, preset: FailoverPreset) -> Self {
        self.preset = preset;
        self
    }

    /// The statuses that fail over, replacing the preset's.
    #[must_use]
    pub fn statuses(mut self, statuses: impl IntoIterator<Item = u16>) -> Self {
        self.statuses = Some(statuses.into_iter().collect());
        self
    }

    /// Whether transport failures fail over.
    #[must_use]
    pub fn transport(mut self, fail_over: bool) -> Self {
        self.transport = Some(fail_over);
        self
    }
}
