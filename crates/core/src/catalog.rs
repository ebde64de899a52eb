//! The compiled catalog: providers, models, aliases and routes, validated and
//! indexed. Immutable once built; a reload builds a new one and swaps it in.
//!
//! Resolution turns a requested model name into a [`Plan`]: the catalog entry, the
//! route that matched and the ordered candidate deployments the attempt loop tries.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};
use switchyard_protocol::Wire;

use crate::config::raw::{self, Capability, Credentials, RawConfig, WireName};
use crate::util::{Date, Secret, fnv1a, glob_match, slug};

pub use raw::{Pricing, Requires};

/// Hard cap on candidates per request (primary + fallbacks), whatever the config says.
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
    fn compile(
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
    pub breaker: crate::breaker::BreakerConfig,
    pub reload_poll: Duration,
}

/// One problem found while compiling, with its position in the file when known.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub line: Option<u64>,
    pub message: String,
}

impl Problem {
    fn at<T>(s: &Spanned<T>, message: impl Into<String>) -> Self {
        Self::located(s.referenced, message)
    }

    /// Line 0 is serde-saphyr's "unknown" (a value from a default, say).
    fn located(at: Location, message: impl Into<String>) -> Self {
        let line = at.line();
        Problem { line: (line > 0).then_some(line), message: message.into() }
    }

    /// `file:line: message`, or `file: message`.
    pub fn render(&self, file: &str) -> String {
        match self.line {
            Some(l) => format!("{file}:{l}: {}", self.message),
            None => format!("{file}: {}", self.message),
        }
    }
}

/// The configuration was refused. Error code `model_registry_invalid`.
#[derive(Debug, Clone)]
pub struct InvalidRegistry {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for InvalidRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "model_registry_invalid: {} problem(s)", self.problems.len())?;
        for p in &self.problems {
            writeln!(f, "  {}", p.render(&self.file))?;
        }
        Ok(())
    }
}

impl std::error::Error for InvalidRegistry {}

/// The compiled, immutable catalog.
#[derive(Debug)]
pub struct Catalog {
    pub settings: Settings,
    pub providers: Vec<Arc<ProviderSpec>>,
    pub models: Vec<Arc<ModelEntry>>,
    pub routes: Vec<Route>,
    /// Access rules from the configuration file.
    pub rules: Vec<crate::access::Rule>,
    /// Storage settings as written (paths are resolved by the binary).
    pub storage: raw::StorageConfig,
    pub security: raw::SecurityConfig,
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

fn default_endpoint(wire: WireName) -> &'static str {
    match wire {
        WireName::OpenaiChat => "https://api.openai.com/v1",
        WireName::Anthropic => "https://api.anthropic.com",
        WireName::Gemini => "https://generativelanguage.googleapis.com",
        WireName::Mock => "",
    }
}

fn route_id(name: &str) -> String {
    let s = slug(name);
    let h = fnv1a(name.as_bytes()) & 0xff_ffff;
    if s.is_empty() { format!("route-{h:06x}") } else { format!("{s}-{h:06x}") }
}

fn capabilities(list: &[Capability]) -> Capabilities {
    let mut c = Capabilities::default();
    for cap in list {
        match cap {
            Capability::Vision => c.vision = true,
            Capability::Tools => c.tools = true,
            Capability::StructuredOutput => c.structured_output = true,
            Capability::Reasoning => c.reasoning = true,
        }
    }
    c
}

/// A provider's platform keys, and why it is unusable when it is.
struct PlatformKeys {
    keys: Vec<Secret>,
    unavailable: Option<String>,
    /// Whether the missing key is a configuration error (it is unless the provider
    /// is marked `optional` or `byok_only`).
    refuse: bool,
    /// The first unset variable's position, where a refusal is reported.
    first_missing: Option<Location>,
}

fn keys_for(name: &str, creds: &Credentials, env: &dyn Fn(&str) -> Option<String>) -> PlatformKeys {
    let none = |keys| PlatformKeys { keys, unavailable: None, refuse: false, first_missing: None };
    if creds.none {
        return none(Vec::new());
    }
    let mut keys: Vec<Secret> =
        creds.keys.iter().filter(|k| !k.is_empty()).map(|k| Secret::new(k.clone())).collect();
    let mut missing: Vec<&Spanned<String>> = Vec::new();
    for var in &creds.env {
        match env(&var.value).filter(|v| !v.is_empty()) {
            Some(v) => keys.push(Secret::new(v)),
            None => missing.push(var),
        }
    }
    if !keys.is_empty() {
        return none(keys);
    }
    let first_missing = missing.first().map(|v| v.referenced);
    if creds.byok_only {
        let why =
            format!("provider {name} takes users' own keys only (byok_only) and none was given");
        return PlatformKeys { keys, unavailable: Some(why), refuse: false, first_missing };
    }
    let why = if missing.is_empty() {
        format!(
            "provider {name} declares no credentials (set credentials.env, credentials.keys, or credentials.none: true)"
        )
    } else {
        let names: Vec<&str> = missing.iter().map(|v| v.value.as_str()).collect();
        format!("provider {name} is disabled: {} is not set", names.join(", "))
    };
    PlatformKeys { keys, unavailable: Some(why), refuse: !creds.optional, first_missing }
}

/// The closest known position of the first of `candidates`: a problem is reported
/// at the field it is about when that was written, else at the provider's name.
fn first_known(candidates: &[Option<Location>]) -> Location {
    candidates.iter().flatten().copied().find(|l| l.line() > 0).unwrap_or(Location::UNKNOWN)
}

/// What validating a route's chains needs to see.
struct RouteCtx<'a> {
    route: &'a str,
    providers: &'a [Arc<ProviderSpec>],
    provider_index: &'a HashMap<String, usize>,
    models: &'a HashMap<&'a str, &'a ModelEntry>,
    lookup: &'a HashMap<String, usize>,
}

impl RouteCtx<'_> {
    fn provider(
        &self,
        s: &Spanned<String>,
        what: &str,
        problems: &mut Vec<Problem>,
    ) -> Option<usize> {
        let idx = self.provider_index.get(&s.value).copied();
        if idx.is_none() {
            problems.push(Problem::at(
                s,
                format!("routes[{}].{what}: unknown provider {:?}", self.route, s.value),
            ));
        }
        idx
    }

    fn weight(&self, w: Option<&Spanned<u32>>, problems: &mut Vec<Problem>) -> u32 {
        match w {
            Some(w) if w.value == 0 => {
                problems.push(Problem::at(
                    w,
                    format!(
                        "routes[{}]: weight 0 is refused (remove the deployment instead)",
                        self.route
                    ),
                ));
                1
            }
            Some(w) => w.value,
            None => 1,
        }
    }

    /// Does this target serve at least one priced catalog model?
    fn serves_priced_model(&self, provider: usize, model: Option<&String>) -> bool {
        let priced = |m: &ModelEntry, d: &Deployment| {
            d.pricing
                .as_ref()
                .or(m.pricing.as_ref())
                .is_some_and(|p| p.input.is_some() && p.output.is_some())
        };
        self.models.values().any(|m| {
            m.deployments.iter().any(|d| {
                d.provider == provider
                    && match model {
                        None => true,
                        Some(name) => {
                            let n = normalize_model(name);
                            d.upstream_model == *name
                                || m.id == n
                                || self.lookup.get(&n).is_some_and(|_| m.aliases.contains(&n))
                        }
                    }
                    && priced(m, d)
            })
        })
    }

    fn chain(
        &self,
        provider: &Spanned<String>,
        model: Option<&String>,
        weight: Option<&Spanned<u32>>,
        fallbacks: &[raw::RouteTarget],
        strategy: Strategy,
        problems: &mut Vec<Problem>,
    ) -> Option<Chain> {
        let primary = self.provider(provider, "provider", problems).map(|p| Target {
            provider: p,
            model: model.cloned(),
            weight: self.weight(weight, problems),
        });
        let mut out: Vec<Target> = Vec::new();
        for f in fallbacks {
            let Some(p) = self.provider(&f.provider, "fallbacks", problems) else { continue };
            let t = Target {
                provider: p,
                model: f.model.clone(),
                weight: self.weight(f.weight.as_ref(), problems),
            };
            let same = |a: &Target| a.provider == t.provider && a.model == t.model;
            let name = self.providers.get(p).map(|x| x.name.as_str()).unwrap_or("?");
            if primary.as_ref().is_some_and(same) {
                problems.push(Problem::at(
                    &f.provider,
                    format!("routes[{}].fallbacks: {name} equals the route's primary", self.route),
                ));
            } else if out.iter().any(same) {
                problems.push(Problem::at(
                    &f.provider,
                    format!("routes[{}].fallbacks: {name} is listed twice", self.route),
                ));
            } else if !self.serves_priced_model(p, t.model.as_ref()) {
                problems.push(Problem::at(&f.provider, format!(
                    "routes[{}].fallbacks: {name}{} serves no priced catalog model (cost could not be metered)",
                    self.route,
                    t.model.as_ref().map(|m| format!("/{m}")).unwrap_or_default()
                )));
            }
            out.push(t);
        }
        primary.map(|primary| Chain { primary, fallbacks: out, strategy })
    }
}

impl Catalog {
    /// Validate and compile a parsed file. `env` reads credential variables.
    pub fn compile(
        raw: &RawConfig,
        file: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Catalog, InvalidRegistry> {
        let mut problems = Vec::new();
        let mut warnings = Vec::new();
        let g = &raw.gateway;

        // Providers.
        let mut providers = Vec::new();
        let mut provider_index = HashMap::new();
        for (written, p) in &raw.providers {
            let name = written.as_str();
            let kind = match p.wire {
                WireName::OpenaiChat => ProviderKind::Wire(Wire::OpenAiChat),
                WireName::Anthropic => ProviderKind::Wire(Wire::Anthropic),
                WireName::Gemini => ProviderKind::Wire(Wire::Gemini),
                WireName::Mock => {
                    ProviderKind::Mock { latency: Duration::from_millis(p.latency_ms) }
                }
            };
            let PlatformKeys { keys, unavailable, refuse, first_missing } =
                if p.wire == WireName::Mock {
                    PlatformKeys {
                        keys: Vec::new(),
                        unavailable: None,
                        refuse: false,
                        first_missing: None,
                    }
                } else {
                    keys_for(name, &p.credentials.value, env)
                };
            if let Some(why) = &unavailable {
                if refuse {
                    let at = first_known(&[
                        first_missing,
                        Some(p.credentials.referenced),
                        Some(written.location()),
                    ]);
                    problems.push(Problem::located(at, format!(
                        "providers.{name}.credentials: {why} (mark the provider `credentials.optional: true` to start without it, or `byok_only: true`)"
                    )));
                } else {
                    warnings.push(why.clone());
                }
            }
            let endpoint = p
                .endpoint
                .as_ref()
                .map_or(default_endpoint(p.wire), |e| e.value.as_str())
                .trim_end_matches('/')
                .to_owned();
            if let Some(m) = &p.markup
                && (!m.value.is_finite() || m.value < 0.0)
            {
                let at = first_known(&[Some(m.referenced), Some(written.location())]);
                problems.push(Problem::located(
                    at,
                    format!("providers.{name}.markup: must be a number >= 0"),
                ));
            }
            if p.wire != WireName::Mock
                && !(endpoint.starts_with("http://") || endpoint.starts_with("https://"))
            {
                let written_at = p.endpoint.as_ref().map(|e| e.referenced);
                let at = first_known(&[written_at, Some(written.location())]);
                problems.push(Problem::located(
                    at,
                    format!("providers.{name}.endpoint: {endpoint:?} is not an http(s) URL"),
                ));
            }
            provider_index.insert(name.to_owned(), providers.len());
            providers.push(Arc::new(ProviderSpec {
                name: name.to_owned(),
                kind,
                endpoint,
                keys,
                unavailable,
                headers: p.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                drop_fields: p.drop_fields.clone(),
                backend: p.surface == raw::Surface::Backend,
                european: p.governance.european.unwrap_or(false),
                no_retain: p.governance.no_retain.unwrap_or(false),
                markup: p.markup.as_ref().map_or(1.0, |m| m.value),
            }));
        }
        let find_provider = |s: &Spanned<String>, what: &str, problems: &mut Vec<Problem>| {
            let idx = provider_index.get(&s.value).copied();
            if idx.is_none() {
                problems.push(Problem::at(s, format!("{what}: unknown provider {:?}", s.value)));
            }
            idx
        };

        // Models: ids and aliases share one namespace.
        let mut models = Vec::new();
        let mut lookup: HashMap<String, usize> = HashMap::new();
        for m in &raw.models {
            let id = normalize_model(&m.id.value);
            if id.is_empty() {
                problems.push(Problem::at(&m.id, "models[].id: empty"));
                continue;
            }
            if lookup.contains_key(&id) {
                problems.push(Problem::at(
                    &m.id,
                    format!("models[].id: {id:?} is defined twice (or collides with an alias)"),
                ));
            }
            let index = models.len();
            lookup.insert(id.clone(), index);
            let mut aliases = Vec::new();
            for a in &m.aliases {
                let alias = normalize_model(&a.value);
                if lookup.contains_key(&alias) {
                    problems.push(Problem::at(
                        a,
                        format!(
                            "models[{id}].aliases: {alias:?} collides with another id or alias"
                        ),
                    ));
                    continue;
                }
                lookup.insert(alias.clone(), index);
                aliases.push(alias);
            }
            let mut deployments = Vec::new();
            for d in &m.deployments {
                if let Some(provider) =
                    find_provider(&d.provider, &format!("models[{id}].deployments"), &mut problems)
                {
                    deployments.push(Deployment {
                        provider,
                        upstream_model: d.model.clone().unwrap_or_else(|| m.id.value.clone()),
                        pricing: d.pricing.clone(),
                    });
                }
            }
            let retires = match &m.retires {
                None => None,
                Some(s) => match Date::parse(&s.value) {
                    Some(d) => Some(d),
                    None => {
                        problems.push(Problem::at(
                            s,
                            format!("models[{id}].retires: {:?} is not a YYYY-MM-DD date", s.value),
                        ));
                        None
                    }
                },
            };
            models.push(ModelEntry {
                id: id.clone(),
                aliases,
                deployments,
                pricing: m.pricing.clone(),
                context_window: m.context_window,
                max_output_tokens: m.max_output_tokens,
                capabilities: m.capabilities.as_deref().map(capabilities),
                reasoning_control: m.reasoning_control,
                sampling: m.sampling,
                takes_max_tokens: m.takes_max_tokens,
                hidden: m.hidden,
                retires,
                fallbacks: m.fallbacks.iter().map(|f| normalize_model(&f.value)).collect(),
                owned_by: m.owned_by.clone().unwrap_or_else(|| "switchyard".to_owned()),
                governance: m.governance,
            });
        }
        // Model fallbacks: ids only (aliases are not valid targets), not itself, no repeats.
        for (m, entry) in raw.models.iter().zip(models.iter()) {
            let mut seen = HashSet::new();
            for f in &m.fallbacks {
                let target = normalize_model(&f.value);
                if target == entry.id {
                    problems.push(Problem::at(
                        f,
                        format!(
                            "models[{}].fallbacks: a model cannot fall back to itself",
                            entry.id
                        ),
                    ));
                } else if !models.iter().any(|x| x.id == target) {
                    problems.push(Problem::at(f, format!("models[{}].fallbacks: {target:?} is not a model id (aliases are not valid fallback targets)", entry.id)));
                }
                if !seen.insert(target.clone()) {
                    problems.push(Problem::at(
                        f,
                        format!("models[{}].fallbacks: {target:?} is listed twice", entry.id),
                    ));
                }
            }
        }

        // Routes.
        let model_index: HashMap<&str, &ModelEntry> =
            models.iter().map(|m| (m.id.as_str(), m)).collect();
        let mut routes: Vec<Route> = Vec::new();
        for r in &raw.routes {
            let ctx = RouteCtx {
                route: &r.name,
                providers: &providers,
                provider_index: &provider_index,
                models: &model_index,
                lookup: &lookup,
            };
            let pattern = normalize_model(&r.pattern.value);
            for (key, spanned) in [
                ("fallback_provider", &r.fallback_provider),
                ("fallback_upstream_model", &r.fallback_upstream_model),
            ] {
                if let Some(v) = spanned {
                    problems.push(Problem::at(v, format!(
                        "routes[{}].{key} is no longer supported: write it as a one-entry list, `fallbacks: [{{ provider: <name>, model: <upstream id> }}]`",
                        r.name
                    )));
                }
            }
            let chain = ctx.chain(
                &r.provider,
                r.model.as_ref(),
                r.weight.as_ref(),
                &r.fallbacks,
                r.strategy,
                &mut problems,
            );
            let scopes = r.by_scope.as_ref().map(|b| {
                if b.dimension.value != "project" {
                    problems.push(Problem::at(
                        &b.dimension,
                        format!(
                            "routes[{}].by_scope.dimension: {:?} is not supported (only `project`)",
                            r.name, b.dimension.value
                        ),
                    ));
                }
                let chains = b
                    .chains
                    .iter()
                    .filter_map(|(scope, c)| {
                        let strategy = c.strategy.unwrap_or(r.strategy);
                        ctx.chain(
                            &c.provider,
                            c.model.as_ref(),
                            c.weight.as_ref(),
                            &c.fallbacks,
                            strategy,
                            &mut problems,
                        )
                        .map(|chain| (scope.clone(), chain))
                    })
                    .collect();
                Scopes {
                    dimension: b.dimension.value.clone(),
                    unmapped_shared: b.unmapped == raw::Unmapped::Shared,
                    chains,
                }
            });
            let mut context_fallbacks = Vec::new();
            for c in &r.context_fallbacks {
                let id = normalize_model(&c.value);
                if model_index.contains_key(id.as_str()) {
                    context_fallbacks.push(id);
                } else {
                    problems.push(Problem::at(
                        c,
                        format!("routes[{}].context_fallbacks: {id:?} is not a model id", r.name),
                    ));
                }
            }
            for (what, limit, hard) in [
                ("max_fallbacks", r.max_fallbacks, HARD_MAX_FALLBACKS),
                ("max_attempts", r.max_attempts, HARD_MAX_ATTEMPTS),
            ] {
                if let Some(n) = limit.filter(|n| *n > hard) {
                    warnings.push(format!(
                        "route {:?}: {what} {n} is above the hard maximum {hard}; using {hard}",
                        r.name
                    ));
                }
            }
            if r.retry.max_retries > MAX_RETRIES {
                warnings.push(format!(
                    "route {:?}: retry.max_retries {} is above {MAX_RETRIES}; using {MAX_RETRIES}",
                    r.name, r.retry.max_retries
                ));
            }
            if let Some(earlier) = routes.iter().find(|e| glob_match(&e.pattern, &pattern)) {
                warnings.push(format!(
                    "route {:?} (match {pattern:?}) is shadowed by the earlier route {:?} (match {:?})",
                    r.name, earlier.name, earlier.pattern
                ));
            }
            if let Some(chain) = chain {
                routes.push(Route {
                    id: route_id(&r.name),
                    name: r.name.clone(),
                    pattern,
                    chain,
                    scopes,
                    context_fallbacks,
                    requires: r.requires,
                    policy: Arc::new(AttemptPolicy::compile(
                        &r.retry,
                        &r.failover,
                        r.max_fallbacks,
                        r.max_attempts,
                    )),
                });
            }
        }

        // Governance: every deployment a route may use must meet its requirements,
        // judged as dispatch judges it: a target naming a catalog model carries
        // that model's narrowing; any other target serves the requested model, so
        // every catalog model the route serves narrows it.
        for (r, compiled) in raw.routes.iter().zip(routes.iter()) {
            if !r.requires.european && !r.requires.no_retain {
                continue;
            }
            let routed: Vec<&ModelEntry> = models
                .iter()
                .filter(|m| {
                    routes.iter().position(|x| glob_match(&x.pattern, &m.id))
                        == routes.iter().position(|x| x.id == compiled.id)
                })
                .collect();
            let chains = std::iter::once(&compiled.chain)
                .chain(compiled.scopes.iter().flat_map(|s| s.chains.values()));
            for chain in chains {
                for t in std::iter::once(&chain.primary).chain(&chain.fallbacks) {
                    let Some(p) = providers.get(t.provider) else { continue };
                    let named = t
                        .model
                        .as_ref()
                        .and_then(|m| lookup.get(&normalize_model(m)).and_then(|&i| models.get(i)));
                    let target = t.model.as_ref().map(|m| format!("/{m}")).unwrap_or_default();
                    let served: Vec<Option<&ModelEntry>> = match named {
                        Some(m) => vec![Some(m)],
                        None => {
                            std::iter::once(None).chain(routed.iter().copied().map(Some)).collect()
                        }
                    };
                    for model in served {
                        let Err(failed) =
                            governance_ok(p, model.map(|m| &m.governance), &r.requires)
                        else {
                            continue;
                        };
                        let serving = match (named, model) {
                            (None, Some(m)) => format!(" serving model {}", m.id),
                            _ => String::new(),
                        };
                        problems.push(Problem::at(
                            &r.provider,
                            format!(
                                "routes[{}].requires: {}{target}{serving} does not satisfy `{failed}`",
                                r.name, p.name,
                            ),
                        ));
                        break;
                    }
                }
            }
        }

        // Access rules from the file.
        let mut rules = Vec::new();
        for rc in &raw.access_rules {
            use crate::access::Subject;
            let subjects: Vec<Subject> = [
                rc.role.map(Subject::Role),
                rc.group.clone().map(Subject::Group),
                rc.project.clone().map(Subject::Project),
                rc.user.clone().map(Subject::User),
            ]
            .into_iter()
            .flatten()
            .collect();
            if subjects.len() > 1 {
                problems.push(Problem::at(
                    &rc.name,
                    format!(
                        "access_rules[{}]: give at most one of role, group, project, user",
                        rc.name.value
                    ),
                ));
            }
            if rules.iter().any(|r: &crate::access::Rule| r.name == rc.name.value) {
                problems.push(Problem::at(
                    &rc.name,
                    format!("access_rules[{}]: defined twice", rc.name.value),
                ));
            }
            rules.push(crate::access::Rule {
                name: rc.name.value.clone(),
                effect: rc.effect,
                pattern: normalize_model(&rc.pattern),
                subject: subjects.into_iter().next().unwrap_or(Subject::Any),
                reason: rc.reason.clone(),
                priority: rc.priority,
            });
        }

        if let Some(dm) = &g.default_model {
            let n = normalize_model(&dm.value);
            if !lookup.contains_key(&n) && !g.allow_unlisted_models {
                problems.push(Problem::at(
                    dm,
                    format!("gateway.default_model: {:?} is not in the catalog", dm.value),
                ));
            }
        }

        if !problems.is_empty() {
            return Err(InvalidRegistry { file: file.to_owned(), problems });
        }
        let t = g.timeouts;
        let settings = Settings {
            listen: g.listen.clone(),
            default_model: g.default_model.as_ref().map(|dm| normalize_model(&dm.value)),
            allow_unlisted_models: g.allow_unlisted_models,
            model_prefixes: g
                .model_prefixes
                .iter()
                .map(|p| normalize_model(p))
                .filter(|p| !p.is_empty())
                .collect(),
            api_keys: g
                .api_keys
                .iter()
                .filter(|k| !k.is_empty())
                .map(|k| Secret::new(k.clone()))
                .collect(),
            max_body_bytes: g.max_body_bytes,
            max_json_depth: g.max_json_depth,
            shutdown_grace: Duration::from_secs(g.shutdown_grace_secs),
            connect_timeout: Duration::from_millis(t.connect_ms),
            first_byte_timeout: Duration::from_millis(t.first_byte_ms),
            idle_timeout: Duration::from_millis(t.idle_ms),
            request_timeout: Duration::from_millis(t.request_ms),
            breaker: crate::breaker::BreakerConfig {
                threshold: g.breaker.threshold,
                half_life: Duration::from_millis(g.breaker.half_life_ms),
                cooldown: Duration::from_millis(g.breaker.cooldown_ms),
                max_cooldown: Duration::from_millis(g.breaker.max_cooldown_ms),
                quarantine: Duration::from_millis(g.breaker.quarantine_ms),
            },
            reload_poll: Duration::from_secs(g.reload_poll_secs),
        };
        let model_route = models
            .iter()
            .map(|m| routes.iter().position(|r| glob_match(&r.pattern, &m.id)))
            .collect();
        Ok(Catalog {
            settings,
            providers,
            models: models.into_iter().map(Arc::new).collect(),
            model_route,
            default_policy: Arc::new(AttemptPolicy::default()),
            routes,
            rules,
            storage: raw.storage.clone(),
            security: raw.security.clone(),
            warnings,
            provider_index,
            lookup,
        })
    }

    pub fn provider(&self, name: &str) -> Option<&Arc<ProviderSpec>> {
        self.provider_index.get(name).and_then(|&i| self.providers.get(i))
    }

    /// The catalog entry for a (normalised) id or alias.
    pub fn model(&self, normalized: &str) -> Option<&Arc<ModelEntry>> {
        self.lookup.get(normalized).and_then(|&i| self.models.get(i))
    }

    /// Does a runtime identity (`public|provider|upstream`, see
    /// [`Candidate::identity`]) still name something this catalog serves?
    pub fn has_identity(&self, identity: &str) -> bool {
        let mut parts = identity.splitn(3, '|');
        let (Some(public), Some(provider), Some(upstream)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let Some(&pi) = self.provider_index.get(provider) else { return false };
        let deployed = |m: &ModelEntry| {
            m.deployments.iter().any(|d| d.provider == pi && d.upstream_model == upstream)
        };
        if public.is_empty() {
            return self.settings.allow_unlisted_models;
        }
        match self.model(public) {
            Some(m) => {
                deployed(m)
                    || self.routes.iter().any(|r| {
                        glob_match(&r.pattern, public)
                            && std::iter::once(&r.chain)
                                .chain(r.scopes.iter().flat_map(|s| s.chains.values()))
                                .any(|c| {
                                    std::iter::once(&c.primary)
                                        .chain(&c.fallbacks)
                                        .any(|t| t.provider == pi)
                                })
                    })
                    || self.models.iter().any(|o| deployed(o))
            }
            None => false,
        }
    }

    /// Models a client may see in `/v1/models`: not hidden, not retired, and not
    /// served only by backend-surface providers.
    pub fn visible_models(&self, today: Date) -> impl Iterator<Item = &Arc<ModelEntry>> {
        self.models.iter().filter(move |m| {
            let backend_only = !m.deployments.is_empty()
                && m.deployments
                    .iter()
                    .all(|d| self.providers.get(d.provider).is_some_and(|p| p.backend));
            !m.hidden && !m.is_retired(today) && !backend_only
        })
    }

    /// Whether some deployment a request for `m` may be sent to is on a provider
    /// `usable` accepts: the targets of the route it resolves to (every scope's
    /// chain; without a route, its own deployments), then its fallback models'
    /// deployments. The candidates [`Catalog::plan`] builds, for any scope, so a
    /// model listed this way can be answered by something other than a 503.
    pub fn reachable(&self, m: &ModelEntry, usable: impl Fn(&ProviderSpec) -> bool) -> bool {
        let usable_at = |i: usize| self.providers.get(i).is_some_and(|p| usable(p));
        let route = self
            .lookup
            .get(&m.id)
            .and_then(|&i| self.model_route.get(i).copied().flatten())
            .and_then(|r| self.routes.get(r));
        let first = match route {
            Some(r) => std::iter::once(&r.chain)
                .chain(r.scopes.iter().flat_map(|s| s.chains.values()))
                .flat_map(|c| std::iter::once(&c.primary).chain(&c.fallbacks))
                .any(|t| usable_at(t.provider)),
            None => m.deployments.iter().any(|d| usable_at(d.provider)),
        };
        first
            || m.fallbacks
                .iter()
                .filter_map(|fb| self.model(fb))
                .any(|fm| fm.deployments.iter().any(|d| usable_at(d.provider)))
    }

    /// The canonical id for a requested name: normalised, namespace prefix removed.
    pub fn canonical_name(&self, requested: &str) -> String {
        let name = normalize_model(requested);
        for prefix in &self.settings.model_prefixes {
            if let Some(rest) = name.strip_prefix(prefix.as_str())
                && !rest.is_empty()
            {
                return rest.to_owned();
            }
        }
        name
    }

    /// Resolve a requested model into a plan of candidate deployments, in chain
    /// order (strategies, health and request filters are applied by the pipeline).
    pub fn plan(
        &self,
        requested: &str,
        today: Date,
        scope: &Scope<'_>,
    ) -> Result<Plan, ResolveError> {
        let mut name = self.canonical_name(requested);
        if name.is_empty() {
            name = self.settings.default_model.clone().ok_or(ResolveError::NoModel)?;
        }
        let model = self.model(&name).cloned();
        if let Some(m) = &model
            && m.is_retired(today)
        {
            return Err(ResolveError::Retired {
                model: m.id.clone(),
                date: m.retires.unwrap_or(today),
            });
        }
        if model.is_none() && !self.settings.allow_unlisted_models {
            return Err(ResolveError::NotFound(requested.to_owned()));
        }
        let route = match self.lookup.get(&name) {
            Some(&i) => self.model_route.get(i).copied().flatten().and_then(|r| self.routes.get(r)),
            None => self.routes.iter().find(|r| glob_match(&r.pattern, &name)),
        };
        let public_model = model.as_ref().map(|m| m.id.clone()).unwrap_or(name);

        let mut candidates = Vec::new();
        let mut descriptor = Vec::new();
        let mut strategy = Strategy::Ordered;
        let policy = route.map_or_else(|| self.default_policy.clone(), |r| r.policy.clone());
        if let Some(r) = route {
            descriptor.push(format!("route:{}", r.id));
            let chain = self.pick_chain(r, scope, &mut descriptor)?;
            strategy = chain.strategy;
            for t in std::iter::once(&chain.primary).chain(&chain.fallbacks) {
                self.push_target(t, model.as_ref(), &public_model, &mut candidates);
            }
        } else if let Some(m) = &model {
            for d in &m.deployments {
                self.push_deployment(d, m, &mut candidates);
            }
        }
        if let Some(m) = &model {
            for fb in &m.fallbacks {
                if let Some(fm) = self.model(fb) {
                    for d in &fm.deployments {
                        self.push_deployment(d, fm, &mut candidates);
                    }
                }
            }
        }
        candidates.truncate(1 + policy.max_fallbacks);
        if candidates.is_empty() {
            return Err(ResolveError::NoRoute(public_model));
        }
        Ok(Plan {
            requested: requested.to_owned(),
            public_model,
            model,
            route_id: route.map(|r| r.id.clone()),
            context_fallbacks: route.map(|r| r.context_fallbacks.clone()).unwrap_or_default(),
            candidates,
            descriptor,
            strategy,
            policy,
            bypass_breakers: false,
            requires: route.map(|r| r.requires).unwrap_or_default(),
        })
    }

    /// The chain serving this request: the scope's own, the route's (unmapped:
    /// shared, or no scopes), or a refusal.
    fn pick_chain<'r>(
        &self,
        r: &'r Route,
        scope: &Scope<'_>,
        descriptor: &mut Vec<String>,
    ) -> Result<&'r Chain, ResolveError> {
        let Some(scopes) = &r.scopes else { return Ok(&r.chain) };
        let (value, name) = match scopes.dimension.as_str() {
            "project" => (scope.project, scope.project_name),
            _ => (None, None),
        };
        match value {
            Some(v) => {
                // Keyed by id, else by name (users write names in the file).
                let by_id = scopes.chains.get(v).map(|c| (v, c));
                let hit = by_id.or_else(|| name.and_then(|n| scopes.chains.get(n).map(|c| (n, c))));
                let shown = hit.map_or(v, |(k, _)| k);
                descriptor.push(format!("scope:{}={shown}", scopes.dimension));
                match hit.map(|(_, c)| c) {
                    Some(chain) => Ok(chain),
                    None if scopes.unmapped_shared => Ok(&r.chain),
                    None => Err(ResolveError::ScopeRefused {
                        route: r.id.clone(),
                        dimension: scopes.dimension.clone(),
                        value: v.to_owned(),
                    }),
                }
            }
            None if scopes.unmapped_shared => Ok(&r.chain),
            None => Err(ResolveError::ScopeRefused {
                route: r.id.clone(),
                dimension: scopes.dimension.clone(),
                value: String::new(),
            }),
        }
    }

    /// The candidate a model id gives on its first available deployment (used for
    /// context-window fallbacks).
    pub fn first_deployment(&self, id: &str) -> Option<Candidate> {
        let m = self.model(id)?;
        let mut out = Vec::new();
        for d in &m.deployments {
            self.push_deployment(d, m, &mut out);
        }
        out.into_iter().next()
    }

    fn push_deployment(&self, d: &Deployment, m: &Arc<ModelEntry>, out: &mut Vec<Candidate>) {
        if let Some(provider) = self.providers.get(d.provider) {
            push_unique(
                out,
                Candidate {
                    provider: provider.clone(),
                    upstream_model: d.upstream_model.clone(),
                    pricing: d.pricing.clone().or_else(|| m.pricing.clone()),
                    model: Some(m.clone()),
                    weight: 1,
                },
            );
        }
    }

    fn push_target(
        &self,
        t: &Target,
        model: Option<&Arc<ModelEntry>>,
        public: &str,
        out: &mut Vec<Candidate>,
    ) {
        let Some(provider) = self.providers.get(t.provider) else { return };
        // A target model naming a catalog entry uses that entry's deployment there.
        let served = match &t.model {
            Some(name) => self.model(&normalize_model(name)).cloned().or_else(|| model.cloned()),
            None => model.cloned(),
        };
        let deployment = served.as_ref().and_then(|m| {
            m.deployments.iter().find(|d| {
                d.provider == t.provider
                    && t.model.as_ref().is_none_or(|name| {
                        *name == d.upstream_model || normalize_model(name) == m.id
                    })
            })
        });
        let upstream_model = match (deployment, &t.model) {
            (Some(d), _) => d.upstream_model.clone(),
            (None, Some(name)) => name.clone(),
            (None, None) => public.to_owned(),
        };
        let pricing = deployment
            .and_then(|d| d.pricing.clone())
            .or_else(|| served.as_ref().and_then(|m| m.pricing.clone()));
        push_unique(
            out,
            Candidate {
                provider: provider.clone(),
                upstream_model,
                pricing,
                model: served,
                weight: t.weight,
            },
        );
    }
}

fn push_unique(out: &mut Vec<Candidate>, c: Candidate) {
    if !out
        .iter()
        .any(|x| x.provider.name == c.provider.name && x.upstream_model == c.upstream_model)
    {
        out.push(c);
    }
}

/// Does a provider (and optionally a model on it) meet `req`? On failure, the name
/// of the first condition not met.
pub fn governance_ok(
    p: &ProviderSpec,
    model: Option<&raw::Governance>,
    req: &raw::Requires,
) -> Result<(), &'static str> {
    let flag = |provider: bool, m: Option<Option<bool>>| provider && m.flatten().unwrap_or(true);
    if req.european && !flag(p.european, model.map(|g| g.european)) {
        return Err("european");
    }
    if req.no_retain && !flag(p.no_retain, model.map(|g| g.no_retain)) {
        return Err("no_retain");
    }
    Ok(())
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

/// Why a requested model could not be resolved.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResolveError {
    #[error("no model given and no default model configured")]
    NoModel,
    #[error("model {0:?} is not served by this gateway")]
    NotFound(String),
    #[error("model {model:?} was retired on {date}")]
    Retired { model: String, date: Date },
    #[error("no route serves model {0:?}")]
    NoRoute(String),
    #[error(
        "route {route} has no chain for {dimension} {value:?} (and does not send unmapped {dimension}s to its shared chain)"
    )]
    ScopeRefused { route: String, dimension: String, value: String },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ConfigSource;

    fn compile(yaml: &str) -> Result<Catalog, InvalidRegistry> {
        let env = |k: &str| (k == "KEY").then(|| "sk-test-123456".to_owned());
        let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
        Catalog::compile(&raw, "t.yaml", &env)
    }

    const BASE: &str = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  b: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { env: [KEY] } }
  off: { wire: gemini, credentials: { env: [UNSET_VAR], optional: true } }
models:
  - id: m1
    aliases: [m-one, m1-2025]
    deployments: [{ provider: a, model: up-m1 }, { provider: b }]
    pricing: { input: 1, output: 2 }
  - id: m2
    hidden: true
    deployments: [{ provider: b, model: up-m2 }]
  - id: old
    retires: "2020-01-01"
    deployments: [{ provider: a }]
routes:
  - name: Claude Route
    match: "claude-*"
    provider: b
    fallbacks: [{ provider: a, model: m1 }]
"#;

    #[test]
    fn resolves_ids_aliases_and_forgiving_names() {
        let c = compile(BASE).unwrap();
        let today = Date::parse("2026-11-30").unwrap();
        for name in ["m1", "M1", "m_one", "m one", "m1-2025[1m]"] {
            let p = c.plan(name, today, &Scope::default()).unwrap();
            assert_eq!(p.public_model, "m1", "{name}");
            assert_eq!(p.candidates[0].upstream_model, "up-m1");
            assert_eq!(p.candidates[1].provider.name, "b");
        }
        assert!(matches!(
            c.plan("old", today, &Scope::default()),
            Err(ResolveError::Retired { .. })
        ));
        assert!(matches!(c.plan("nope", today, &Scope::default()), Err(ResolveError::NotFound(_))));
        let visible: Vec<_> = c.visible_models(today).map(|m| m.id.as_str()).collect();
        assert_eq!(visible, ["m1"]);
    }

    #[test]
    fn disabled_provider_is_a_warning_not_a_crash() {
        let c = compile(BASE).unwrap();
        assert!(c.provider("off").unwrap().unavailable.as_deref().unwrap().contains("UNSET_VAR"));
        assert!(c.warnings.iter().any(|w| w.contains("UNSET_VAR")));
    }

    #[test]
    fn route_ids_are_slug_plus_stable_hash() {
        let c = compile(BASE).unwrap();
        assert_eq!(
            c.routes[0].id,
            format!("claude-route-{:06x}", fnv1a(b"Claude Route") & 0xff_ffff)
        );
    }

    #[test]
    fn unlisted_models_follow_the_first_matching_route_when_allowed() {
        let yaml =
            BASE.replace("providers:", "gateway: { allow_unlisted_models: true }\nproviders:");
        let c = compile(&yaml).unwrap();
        let p = c.plan("claude-x", Date::parse("2026-01-01").unwrap(), &Scope::default()).unwrap();
        assert_eq!(p.candidates[0].provider.name, "b");
        assert_eq!(p.candidates[0].upstream_model, "claude-x");
        assert_eq!(
            p.candidates[1].upstream_model, "up-m1",
            "fallback naming a catalog id uses its deployment"
        );
        assert_eq!(p.descriptor, vec![format!("route:{}", c.routes[0].id)]);
        assert!(matches!(
            c.plan("other", Date::parse("2026-01-01").unwrap(), &Scope::default()),
            Err(ResolveError::NoRoute(_))
        ));
    }

    #[test]
    fn problems_are_all_listed_with_lines() {
        let yaml = r#"
providers:
  a: { wire: mock }
models:
  - id: x
    deployments: [{ provider: nowhere }]
  - id: x
    aliases: [x]
    fallbacks: [x, y]
"#;
        let err = compile(yaml).unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("model_registry_invalid"), "{text}");
        assert!(
            text.contains("t.yaml:6: models[x].deployments: unknown provider \"nowhere\""),
            "{text}"
        );
        assert!(text.contains("t.yaml:7: models[].id: \"x\" is defined twice"), "{text}");
        assert!(text.contains("t.yaml:8:"), "{text}");
        assert!(text.contains("cannot fall back to itself"), "{text}");
        assert!(text.contains("\"y\" is not a model id"), "{text}");
    }

    #[test]
    fn provider_and_gateway_problems_have_lines_too() {
        // Each problem at the line of the field it is about; a provider with no
        // credentials block at all, at its name.
        let yaml = r#"gateway: { default_model: nowhere }
providers:
  emptykey:
    wire: openai-chat
    credentials: { keys: [""] }
  unset:
    wire: anthropic
    credentials:
      env:
        - KEY_NOT_THERE
  ftp:
    wire: openai-chat
    endpoint: "ftp://x"
    credentials: { none: true }
  undeclared:
    wire: gemini
  marked: { wire: mock, markup: -1 }
models: []
"#;
        let err = compile(yaml).unwrap_err();
        let lines: Vec<(Option<u64>, &str)> = err
            .problems
            .iter()
            .map(|p| (p.line, p.message.split(':').next().unwrap_or("")))
            .collect();
        let mut want = vec![
            (Some(1), "gateway.default_model"),
            (Some(5), "providers.emptykey.credentials"),
            (Some(10), "providers.unset.credentials"),
            (Some(13), "providers.ftp.endpoint"),
            (Some(15), "providers.undeclared.credentials"),
            (Some(17), "providers.marked.markup"),
        ];
        let mut got = lines.clone();
        got.sort_by_key(|(l, _)| *l);
        want.sort_by_key(|(l, _)| *l);
        assert_eq!(got, want, "{err}");
    }

    #[test]
    fn a_model_is_reachable_through_its_route_deployments_or_fallbacks() {
        let yaml = r#"
providers:
  on: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  off: { wire: gemini, credentials: { env: [UNSET_VAR], optional: true } }
  mine: { wire: anthropic, credentials: { byok_only: true } }
models:
  - { id: direct, deployments: [{ provider: on }], pricing: { input: 1, output: 1 } }
  - { id: keyless, deployments: [{ provider: off }] }
  - { id: routed, deployments: [{ provider: off }] }
  - { id: falls-back, deployments: [{ provider: off }], fallbacks: [direct] }
  - { id: own-key, deployments: [{ provider: mine }] }
routes:
  - { name: r, match: routed, provider: on }
"#;
        let c = compile(yaml).unwrap();
        let reachable = |byok: &[(String, Secret)]| -> Vec<&str> {
            c.models
                .iter()
                .filter(|m| c.reachable(m, |p| p.reachable_with(byok)))
                .map(|m| m.id.as_str())
                .collect()
        };
        assert_eq!(reachable(&[]), ["direct", "routed", "falls-back"]);
        let own = [("mine".to_owned(), Secret::new("sk-own"))];
        assert_eq!(reachable(&own), ["direct", "routed", "falls-back", "own-key"]);
    }

    #[test]
    fn embedded_default_compiles_without_any_keys() {
        let raw = ConfigSource::embedded().parse_with(&|_| None).unwrap();
        let c = Catalog::compile(&raw, "<embedded default>", &|_| None).unwrap();
        assert!(c.provider("openai").unwrap().unavailable.is_some());
        assert!(c.settings.api_keys.is_empty());
        let p = c.plan("", Date::today(), &Scope::default()).unwrap();
        assert_eq!(p.public_model, "mock-echo");
    }

    fn problems(yaml: &str) -> String {
        compile(yaml).unwrap_err().to_string()
    }

    const PROVIDERS: &str = r#"
providers:
  a: { wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: { env: [KEY] } }
  b: { wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: { env: [KEY] } }
models:
  - id: priced
    deployments: [{ provider: a }, { provider: b, model: up-b }]
    pricing: { input: 1, output: 2 }
  - id: free-text
    deployments: [{ provider: b, model: unpriced-b }]
"#;

    #[test]
    fn deprecated_single_fallback_keys_are_refused_with_the_new_form() {
        let text = problems(&format!(
            "{PROVIDERS}routes:\n  - name: r\n    match: \"x*\"\n    provider: a\n    fallback_provider: b\n"
        ));
        assert!(text.contains("fallback_provider is no longer supported"), "{text}");
        assert!(text.contains("fallbacks: [{ provider:"), "{text}");
    }

    #[test]
    fn weight_zero_duplicate_and_unpriced_fallbacks_are_refused() {
        let yaml = format!(
            "{PROVIDERS}routes:\n  - name: r\n    match: \"x*\"\n    provider: a\n    weight: 0\n    fallbacks:\n      - {{ provider: b, model: priced }}\n      - {{ provider: b, model: priced }}\n      - {{ provider: b, model: unpriced-b }}\n"
        );
        let text = problems(&yaml);
        assert!(text.contains("weight 0 is refused"), "{text}");
        assert!(text.contains("b is listed twice"), "{text}");
        assert!(text.contains("b/unpriced-b serves no priced catalog model"), "{text}");
    }

    #[test]
    fn missing_credential_source_refuses_boot_unless_optional_or_byok_only() {
        let base = "providers:\n  p: { wire: openai-chat, credentials: { env: [UNSET_X] CREDS } }\nmodels:\n  - { id: m, deployments: [{ provider: p }] }\n";
        let text = problems(&base.replace(" CREDS", ""));
        assert!(text.contains("UNSET_X is not set"), "{text}");
        assert!(compile(&base.replace(" CREDS", ", optional: true")).is_ok());
        let c = compile(&base.replace(" CREDS", ", byok_only: true")).unwrap();
        assert!(c.provider("p").unwrap().unavailable.is_some());
    }

    #[test]
    fn shadowed_routes_are_warned_about() {
        let yaml = format!(
            "{PROVIDERS}routes:\n  - {{ name: wide, match: \"pri*\", provider: a }}\n  - {{ name: narrow, match: \"pric*\", provider: b }}\n"
        );
        let c = compile(&yaml).unwrap();
        assert!(
            c.warnings.iter().any(|w| w.contains("\"narrow\"") && w.contains("shadowed")),
            "{:?}",
            c.warnings
        );
    }

    #[test]
    fn per_project_chains_and_unmapped_projects() {
        let yaml = format!(
            "{PROVIDERS}routes:\n  - name: r\n    match: \"priced\"\n    provider: a\n    by_scope:\n      dimension: project\n      UNMAPPED\n      chains:\n        storefront: {{ provider: b }}\n"
        );
        let today = Date::parse("2026-01-01").unwrap();
        let refuse = compile(&yaml.replace("UNMAPPED", "unmapped: refuse")).unwrap();
        let p = refuse
            .plan("priced", today, &Scope { project: Some("storefront"), ..Scope::default() })
            .unwrap();
        assert_eq!(p.candidates[0].provider.name, "b");
        assert_eq!(
            p.candidates[0].upstream_model, "up-b",
            "the scope chain uses the model's deployment there"
        );
        assert!(p.descriptor.contains(&"scope:project=storefront".to_owned()));
        assert!(matches!(
            refuse.plan("priced", today, &Scope { project: Some("other"), ..Scope::default() }),
            Err(ResolveError::ScopeRefused { .. })
        ));
        let shared = compile(&yaml.replace("UNMAPPED", "unmapped: shared")).unwrap();
        let p = shared
            .plan("priced", today, &Scope { project: Some("other"), ..Scope::default() })
            .unwrap();
        assert_eq!(p.candidates[0].provider.name, "a");
        assert!(p.descriptor.contains(&"scope:project=other".to_owned()));
    }

    #[test]
    fn amplification_is_bounded_by_the_hard_maximums() {
        let yaml = format!(
            "{PROVIDERS}routes:\n  - {{ name: r, match: \"x*\", provider: a, max_fallbacks: 1000, max_attempts: 1000, retry: {{ max_retries: 50 }} }}\n"
        );
        let c = compile(&yaml).unwrap();
        let p = &c.routes[0].policy;
        assert_eq!(
            (p.max_fallbacks, p.max_attempts, p.max_retries),
            (HARD_MAX_FALLBACKS, HARD_MAX_ATTEMPTS, MAX_RETRIES)
        );
        assert_eq!(AttemptPolicy::default().max_fallbacks, DEFAULT_MAX_FALLBACKS);
        assert_eq!(AttemptPolicy::default().max_attempts, DEFAULT_MAX_ATTEMPTS);
        assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
    }

    #[test]
    fn failover_presets() {
        let d = AttemptPolicy::default();
        for s in [401, 402, 403, 404, 408, 409, 425, 429, 500, 503, 599] {
            assert!(d.fails_over(s), "{s}");
        }
        for s in [400, 413, 422] {
            assert!(!d.fails_over(s), "{s}");
        }
        let yaml = format!(
            "{PROVIDERS}routes:\n  - {{ name: r, match: \"x*\", provider: a, failover: {{ preset: strict }} }}\n"
        );
        let strict = compile(&yaml).unwrap().routes[0].policy.clone();
        assert!(
            strict.fails_over(429)
                && strict.fails_over(502)
                && !strict.fails_over(401)
                && !strict.fails_over(404)
        );
    }

    #[test]
    fn namespace_prefixes_map_onto_canonical_names() {
        let yaml =
            format!("gateway: {{ model_prefixes: [\"sy/\", \"switchyard/\"] }}\n{PROVIDERS}");
        let c = compile(&yaml).unwrap();
        let today = Date::parse("2026-01-01").unwrap();
        for name in ["sy/priced", "switchyard/priced", "SY/Priced", "priced"] {
            assert_eq!(
                c.plan(name, today, &Scope::default()).unwrap().public_model,
                "priced",
                "{name}"
            );
        }
        assert!(c.plan("other/priced", today, &Scope::default()).is_err());
    }

    #[test]
    fn backend_surface_models_are_served_but_never_listed() {
        let yaml = PROVIDERS.replace(
            "credentials: { env: [KEY] } }\n  b:",
            "credentials: { env: [KEY] }, surface: backend }\n  b:",
        ) + "  - id: backend-only\n    deployments: [{ provider: a, model: x }]\n";
        let c = compile(&yaml).unwrap();
        let today = Date::parse("2026-01-01").unwrap();
        let listed: Vec<_> = c.visible_models(today).map(|m| m.id.as_str()).collect();
        assert!(!listed.contains(&"backend-only") && listed.contains(&"priced"), "{listed:?}");
        assert!(c.plan("backend-only", today, &Scope::default()).is_ok());
    }

    #[test]
    fn routes_whose_deployments_miss_their_governance_requirements_are_refused() {
        let yaml = PROVIDERS.replace(
            "credentials: { env: [KEY] } }\n  b:",
            "credentials: { env: [KEY] }, governance: { european: true } }\n  b:",
        ) + "routes:\n  - { name: eu, match: \"pri*\", provider: a, requires: { european: true, no_retain: true } }\n  - { name: eu2, match: \"x*\", provider: a, requires: { european: true }, fallbacks: [{ provider: b, model: priced }] }\n";
        let text = problems(&yaml);
        assert!(text.contains("routes[eu].requires: a does not satisfy `no_retain`"), "{text}");
        assert!(
            text.contains("routes[eu2].requires: b/priced does not satisfy `european`"),
            "{text}"
        );
        assert!(!text.contains("a does not satisfy `european`"), "{text}");
    }

    #[test]
    fn a_model_narrowing_its_providers_governance_is_judged_at_boot_as_at_dispatch() {
        let yaml = PROVIDERS
            .replace(
                "credentials: { env: [KEY] } }\n  b:",
                "credentials: { env: [KEY] }, governance: { no_retain: true } }\n  b:",
            )
            .replace(
                "    pricing: { input: 1, output: 2 }\n",
                "    pricing: { input: 1, output: 2 }\n    governance: { no_retain: false }\n",
            )
            + "routes:\n  - { name: keep-nothing, match: \"pri*\", provider: a, requires: { no_retain: true } }\n";
        let text = problems(&yaml);
        assert!(
            text.contains(
                "routes[keep-nothing].requires: a serving model priced does not satisfy `no_retain`"
            ),
            "{text}"
        );
        // Without the model's narrowing the same route is fine.
        let ok = yaml.replace("    governance: { no_retain: false }\n", "");
        let c = compile(&ok).unwrap();
        let plan = c.plan("priced", Date::parse("2026-01-01").unwrap(), &Scope::default()).unwrap();
        assert!(plan.candidates[0].governance(&plan.requires).is_ok());
    }

    #[test]
    fn access_rules_compile_with_one_subject_each() {
        let ok = format!(
            "{PROVIDERS}access_rules:\n  - {{ name: r1, effect: deny, pattern: \"pri*\", group: g, reason: no }}\n"
        );
        let c = compile(&ok).unwrap();
        assert_eq!(c.rules[0].subject, crate::access::Subject::Group("g".into()));
        let bad = format!(
            "{PROVIDERS}access_rules:\n  - {{ name: r1, effect: deny, pattern: x, group: g, user: u, reason: no }}\n  - {{ name: r1, effect: allow, pattern: y, reason: dup }}\n"
        );
        let text = problems(&bad);
        assert!(
            text.contains("at most one of role, group, project, user")
                && text.contains("defined twice"),
            "{text}"
        );
    }
}
