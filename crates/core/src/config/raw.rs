//! The configuration file as written: plain serde types, nothing resolved yet.
//! [`crate::catalog::Catalog::compile`] validates and compiles it.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_saphyr::{Location, Spanned};

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `gateway:`: listening, limits, timeouts, breakers.
    #[serde(default)]
    pub gateway: GatewaySettings,
    /// `providers:`, by the name models and routes use.
    #[serde(default)]
    pub providers: BTreeMap<ProviderName, ProviderConfig>,
    /// `models:`: the catalog.
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// `routes:`, in order: the first whose pattern matches a model serves it.
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    /// Access rules (more can be added at runtime through the admin API).
    #[serde(default)]
    pub access_rules: Vec<RuleConfig>,
    /// `storage:`: the database and the audit queue.
    #[serde(default)]
    pub storage: StorageConfig,
    /// `security:`: which variables hold the gateway's secrets.
    #[serde(default)]
    pub security: SecurityConfig,
}

/// Where users, keys, rules, BYOK credentials and request records live.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `sqlite://path` (relative paths are next to the config file; the embedded
    /// default uses `./switchyard-data/switchyard.db`; a subdirectory, so the
    /// database's writes never wake the config-file watcher), `postgres://…`, or
    /// `none` (no database:
    /// static keys only, records to the log).
    pub url: String,
    /// Request records older than this are deleted (0 keeps them forever).
    pub retention_days: u32,
    /// Bounded audit queue between the request path and the database.
    pub audit_queue: usize,
    /// Most records written in one insert.
    pub audit_batch: usize,
    /// Longest a record waits in a partial batch, in milliseconds.
    pub audit_flush_ms: u64,
    /// Where rows go when the queue overflows or the database is down; replayed at
    /// start. Relative to the config file.
    pub spill_path: String,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://switchyard-data/switchyard.db".to_owned(),
            retention_days: 30,
            audit_queue: 10_000,
            audit_batch: 500,
            audit_flush_ms: 200,
            spill_path: "switchyard-audit-spill.jsonl".to_owned(),
        }
    }
}

/// Secrets the gateway reads from the environment (never from this file).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// Variable holding the gateway secret that BYOK keys are encrypted under.
    pub secret_env: String,
    /// Variable holding the id of the current secret (for rotation; default "k1").
    pub secret_id_env: String,
    /// Variables holding previous secrets as `id:secret` (comma-separated), so keys
    /// sealed under them can still be opened until `switchyard secrets rotate`.
    pub previous_secrets_env: String,
    /// Variable holding a bootstrap admin key (administers a fresh install).
    pub admin_key_env: String,
    /// How long a key lookup is cached (revocation takes effect within this).
    pub key_cache_ms: u64,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            secret_env: "SWITCHYARD_SECRET".to_owned(),
            secret_id_env: "SWITCHYARD_SECRET_ID".to_owned(),
            previous_secrets_env: "SWITCHYARD_PREVIOUS_SECRETS".to_owned(),
            admin_key_env: "SWITCHYARD_ADMIN_KEY".to_owned(),
            key_cache_ms: 5_000,
        }
    }
}

/// An access rule as written. At most one subject field; none means everyone.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// The rule's name, which a denial quotes (`authz denied [<name>]`).
    pub name: Spanned<String>,
    /// Allow or deny.
    pub effect: crate::access::Effect,
    /// Glob over model ids or route ids.
    pub pattern: String,
    /// Subject: callers with this role.
    #[serde(default)]
    pub role: Option<crate::access::Role>,
    /// Subject: members of this group.
    #[serde(default)]
    pub group: Option<String>,
    /// Subject: requests attributed to this project (by id or name).
    #[serde(default)]
    pub project: Option<String>,
    /// Subject: this user (by id or email).
    #[serde(default)]
    pub user: Option<String>,
    /// Why, as a denied caller is told.
    pub reason: String,
    /// Among the matching rules the highest decides, a deny winning a tie (default 0).
    #[serde(default)]
    pub priority: i64,
}

impl RuleConfig {
    /// A rule for everyone (no subject) at priority 0, as YAML's defaults leave it.
    pub fn new(
        name: impl Into<String>,
        effect: crate::access::Effect,
        pattern: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            name: unlocated(name.into()),
            effect,
            pattern: pattern.into(),
            role: None,
            group: None,
            project: None,
            user: None,
            reason: reason.into(),
            priority: 0,
        }
    }
}

/// Data-governance declarations of a provider (or a model).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Governance {
    /// Data stays in the EU.
    #[serde(default)]
    pub european: Option<bool>,
    /// The provider contractually does not retain prompts or completions.
    #[serde(default)]
    pub no_retain: Option<bool>,
}

/// The `gateway:` section. Each field defaults to the value [`Default`] gives.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySettings {
    /// Address to listen on.
    pub listen: String,
    /// Model used when a request names none.
    pub default_model: Option<Spanned<String>>,
    /// Forward ids that are not in the catalog through the first matching route.
    pub allow_unlisted_models: bool,
    /// Namespace prefixes clients may put before a model id (`sy/auto` and
    /// `switchyard/auto` both mean `auto`); stripped before lookup.
    pub model_prefixes: Vec<String>,
    /// Gateway API keys accepted from clients. Empty strings are ignored; an empty
    /// list leaves the gateway open (a warning is logged at start).
    pub api_keys: Vec<String>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Deepest JSON nesting accepted in a request body.
    pub max_json_depth: usize,
    /// How long in-flight requests and streams may take to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// Upstream timeouts.
    pub timeouts: Timeouts,
    /// Circuit-breaker tuning.
    pub breaker: BreakerSettings,
    /// Seconds between checks of the config file for changes (0 disables polling;
    /// file-change notifications and SIGHUP still reload).
    pub reload_poll_secs: u64,
}

/// Circuit-breaker tuning (per provider credential).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerSettings {
    /// Decayed failure score at which a breaker opens.
    pub threshold: f64,
    /// Time for a failure's weight to halve.
    pub half_life_ms: u64,
    /// Open → half-open after max(cooldown, Retry-After), at most max_cooldown.
    pub cooldown_ms: u64,
    /// The longest a breaker stays open, whatever the `Retry-After`.
    pub max_cooldown_ms: u64,
    /// How long a credential answered 401/403 is taken out of rotation.
    pub quarantine_ms: u64,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            threshold: 5.0,
            half_life_ms: 30_000,
            cooldown_ms: 30_000,
            max_cooldown_ms: 300_000,
            quarantine_ms: 300_000,
        }
    }
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            default_model: None,
            allow_unlisted_models: false,
            model_prefixes: Vec::new(),
            api_keys: Vec::new(),
            max_body_bytes: 32 * 1024 * 1024,
            max_json_depth: 64,
            shutdown_grace_secs: 600,
            timeouts: Timeouts::default(),
            breaker: BreakerSettings::default(),
            reload_poll_secs: 5,
        }
    }
}

/// Upstream timeouts, in milliseconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect_ms: u64,
    /// From sending the request to the response headers (per attempt).
    pub first_byte_ms: u64,
    /// Longest silence between two chunks of a streamed answer. Reasoning models at
    /// high effort think for minutes without a word: the default allows five.
    pub idle_ms: u64,
    /// The whole request, all attempts together, until the answer (or a stream's
    /// first content); a stream that is still receiving has no total cap.
    pub request_ms: u64,
    /// While a committed stream's upstream is silent, a keep-alive goes to the
    /// client this often (an SSE comment; Anthropic's `ping` event), so proxies
    /// with an idle timeout (often 60 s) do not cut it.
    pub keepalive_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect_ms: 10_000,
            first_byte_ms: 120_000,
            idle_ms: 300_000,
            request_ms: 600_000,
            keepalive_ms: 15_000,
        }
    }
}

/// A provider's `wire:`, as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WireName {
    /// `openai-chat`: OpenAI Chat Completions and compatible servers.
    OpenaiChat,
    /// `anthropic`: Anthropic Messages.
    Anthropic,
    /// `gemini`: Google Gemini.
    Gemini,
    /// `mock`: the built-in deterministic echo, no network.
    Mock,
}

/// A provider's name as written under `providers:`, with where it was written (a
/// problem with the provider names this line when nothing closer has one). Compared,
/// ordered and looked up by the name alone, so the map reads like one keyed by
/// `String`.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct ProviderName(pub Spanned<String>);

impl ProviderName {
    /// A name from no file (built in code).
    pub fn new(name: impl Into<String>) -> Self {
        Self(unlocated(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0.value
    }

    /// Where it was written (unknown for a name built in code).
    pub fn location(&self) -> Location {
        self.0.referenced
    }
}

impl PartialEq for ProviderName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ProviderName {}

impl PartialOrd for ProviderName {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ProviderName {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Borrow<str> for ProviderName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for ProviderName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One entry of `providers:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// How it is called.
    pub wire: WireName,
    /// Base URL. Defaults per wire: `https://api.openai.com/v1`,
    /// `https://api.anthropic.com`, `https://generativelanguage.googleapis.com`.
    #[serde(default)]
    pub endpoint: Option<Spanned<String>>,
    /// Spanned so that a missing key is reported at the block that declares it.
    #[serde(default = "unwritten_credentials")]
    pub credentials: Spanned<Credentials>,
    /// Extra headers sent on every upstream request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Mock wire only: latency before the answer (and between streamed chunks).
    #[serde(default)]
    pub latency_ms: u64,
    /// Request fields this provider is known to refuse; removed on the fast path.
    #[serde(default)]
    pub drop_fields: Vec<String>,
    /// `backend`: serves routes, but the models deployed only here never appear in
    /// model lists.
    #[serde(default)]
    pub surface: Surface,
    /// What it declares about the data it is sent.
    #[serde(default)]
    pub governance: Governance,
    /// Multiplies the metered cost of this provider's answers (e.g. 1.1 for a 10%
    /// platform fee). Default 1.
    #[serde(default)]
    pub markup: Option<Spanned<f64>>,
    /// The server tools (hosted tools: web search, code execution, MCP, …) its
    /// deployments run, unless a deployment says otherwise. Absent: an `anthropic`
    /// provider runs Anthropic's, any other none. A request needing one goes only
    /// to deployments that run it.
    #[serde(default)]
    pub server_tools: Option<Vec<Spanned<switchyard_protocol::ServerTool>>>,
    /// `anthropic` wire: the `anthropic-beta` flags it accepts (an
    /// Anthropic-compatible server that refuses others). Absent: a client's flags
    /// go as they came.
    #[serde(default)]
    pub anthropic_betas: Option<Vec<String>>,
}

/// No `credentials` block was written: defaults, at no position in the file.
fn unwritten_credentials() -> Spanned<Credentials> {
    unlocated(Credentials::default())
}

/// A value that comes from no file (built in code): a problem with it is reported
/// without a line, as one with a defaulted value is.
pub fn unlocated<T>(value: T) -> Spanned<T> {
    Spanned::new(value, Location::UNKNOWN, Location::UNKNOWN)
}

impl ProviderConfig {
    /// A provider on `wire` with every other field as an empty YAML block leaves it
    /// (so `{ wire: … }` and this compile alike).
    pub fn new(wire: WireName) -> Self {
        Self {
            wire,
            endpoint: None,
            credentials: unwritten_credentials(),
            headers: BTreeMap::new(),
            latency_ms: 0,
            drop_fields: Vec::new(),
            surface: Surface::default(),
            governance: Governance::default(),
            markup: None,
            server_tools: None,
            anthropic_betas: None,
        }
    }
}

/// Whether a provider's models are listed (`surface:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// Its models are listed (the default).
    #[default]
    Public,
    /// It serves routes, but models deployed only here are never listed.
    Backend,
}

/// Where a provider's platform key(s) come from.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Environment variable(s) holding a key each (spanned: an unset one is
    /// reported at its own line).
    #[serde(default)]
    pub env: Vec<Spanned<String>>,
    /// Literal keys (use `${ENV}` interpolation rather than writing secrets here).
    #[serde(default)]
    pub keys: Vec<String>,
    /// The provider needs no key (a local vLLM or Ollama server).
    #[serde(default)]
    pub none: bool,
    /// Keys come only from users (BYOK); no platform key is expected.
    #[serde(default)]
    pub byok_only: bool,
    /// A missing key disables the provider (with a warning) instead of refusing the
    /// configuration. The embedded default uses this.
    #[serde(default)]
    pub optional: bool,
}

/// Prices, in USD per million tokens. Without `input` and `output` a cost is
/// unknown (`None`, never zero); cache prices fall back to the input price.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// USD per million input tokens (uncached).
    #[serde(default)]
    pub input: Option<f64>,
    /// USD per million output tokens.
    #[serde(default)]
    pub output: Option<f64>,
    /// USD per million input tokens read from the cache (absent: the input price).
    #[serde(default)]
    pub cache_read: Option<f64>,
    /// USD per million input tokens written to the cache (absent: the input price).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// What a model can take. A request needing vision, tools or structured output
/// skips models that declare capabilities without it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// Image input.
    Vision,
    /// Function tools.
    Tools,
    /// A JSON-schema `response_format`.
    StructuredOutput,
    /// Reasoning (thinking): shown in model lists, never filtered on.
    Reasoning,
}

/// One entry of `models:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The id clients ask for (normalised: lowercase, `_` and spaces to `-`).
    pub id: Spanned<String>,
    /// Other names for it (ids and aliases share one namespace).
    #[serde(default)]
    pub aliases: Vec<Spanned<String>>,
    /// Where the model runs: provider + that provider's model id.
    #[serde(default)]
    pub deployments: Vec<DeploymentConfig>,
    /// Its prices (a deployment may have its own); absent: costs are unknown.
    #[serde(default)]
    pub pricing: Option<Pricing>,
    /// Its context window, in tokens: a request estimated larger skips it (absent:
    /// never refused).
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The most tokens it writes in one answer: a request asking for more is
    /// clamped to it.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// What the model can take. Absent: unknown, nothing is filtered. Present: a
    /// request needing a capability not listed skips this model.
    #[serde(default)]
    pub capabilities: Option<Vec<Capability>>,
    /// How the model takes its reasoning setting (`budget` or `effort`). Absent:
    /// inferred from each deployment's model id (Claude 4.6+ and Gemini 3+: effort).
    #[serde(default)]
    pub reasoning_control: Option<switchyard_protocol::ReasoningControl>,
    /// Whether the model takes temperature/top_p/top_k. Absent: inferred (Claude
    /// Opus 4.7 and later refuse them; everything else takes them).
    #[serde(default)]
    pub sampling: Option<bool>,
    /// OpenAI-chat: whether the model takes the older `max_tokens`. Absent:
    /// inferred (OpenAI's reasoning models, o1+ and GPT-5+ by id, do not).
    #[serde(default)]
    pub takes_max_tokens: Option<bool>,
    /// Served but never listed.
    #[serde(default)]
    pub hidden: bool,
    /// `YYYY-MM-DD`; from that day the model is refused and unlisted.
    #[serde(default)]
    pub retires: Option<Spanned<String>>,
    /// Catalog ids tried after this model's own deployments.
    #[serde(default)]
    pub fallbacks: Vec<Spanned<String>>,
    /// Shown in model lists (absent: `switchyard`).
    #[serde(default)]
    pub owned_by: Option<String>,
    /// Narrows the providers' governance flags for this model.
    #[serde(default)]
    pub governance: Governance,
}

impl ModelConfig {
    /// A model with every field but its id as YAML's defaults leave it.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: unlocated(id.into()),
            aliases: Vec::new(),
            deployments: Vec::new(),
            pricing: None,
            context_window: None,
            max_output_tokens: None,
            capabilities: None,
            reasoning_control: None,
            sampling: None,
            takes_max_tokens: None,
            hidden: false,
            retires: None,
            fallbacks: Vec::new(),
            owned_by: None,
            governance: Governance::default(),
        }
    }
}

/// One of a model's `deployments:`: where it runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentConfig {
    /// The provider's name under `providers:`.
    pub provider: Spanned<String>,
    /// The provider's own id for the model; defaults to the catalog id.
    #[serde(default)]
    pub model: Option<String>,
    /// Overrides the model's prices for this deployment (e.g. a regional premium).
    #[serde(default)]
    pub pricing: Option<Pricing>,
    /// The server tools this deployment runs (replaces its provider's list).
    #[serde(default)]
    pub server_tools: Option<Vec<Spanned<switchyard_protocol::ServerTool>>>,
}

impl DeploymentConfig {
    /// A deployment on `provider` with every other field as YAML's defaults leave it
    /// (the upstream id is then the catalog id).
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: unlocated(provider.into()),
            model: None,
            pricing: None,
            server_tools: None,
        }
    }
}

/// How a chain orders its deployments for the first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requires {
    /// Only deployments whose data stays in the EU.
    #[serde(default)]
    pub european: bool,
    /// Only deployments that do not retain prompts or completions.
    #[serde(default)]
    pub no_retain: bool,
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

/// Retries of one deployment on transient answers, before failing over.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FailoverConfig {
    /// The status list used unless `statuses` gives one.
    pub preset: FailoverPreset,
    /// Replaces the preset's status list when given (5xx must be listed one by one).
    pub statuses: Option<Vec<u16>>,
    /// Fail over on transport failures (connect, DNS, TLS, timeout, reset). Default true.
    pub transport: Option<bool>,
}

#[cfg(test)]
#[path = "raw_tests.rs"]
mod tests;
