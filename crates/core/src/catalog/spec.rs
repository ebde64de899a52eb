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
    /// Over HTTP, speaking this wire.
    Wire(Wire),
    /// Built-in deterministic echo; no network.
    Mock {
        /// The delay before its answer and between streamed chunks.
        latency: Duration,
    },
}

/// A compiled provider.
#[derive(Debug)]
pub struct ProviderSpec {
    /// Its name under `providers:`.
    pub name: String,
    /// How it is reached.
    pub kind: ProviderKind,
    /// Base URL without a trailing slash.
    pub endpoint: String,
    /// Platform keys, in order. Empty for credential-free providers and for
    /// those with a cloud credential.
    pub keys: Vec<Secret>,
    /// Its cloud credential (`credentials.aws`, `credentials.google`), which
    /// signs or authorizes each request that carries no key.
    pub cloud: Option<Arc<crate::credentials::CloudAuth>>,
    /// Every secret its requests carry besides a caller's own key: the platform
    /// keys, the values of credential-like `headers`, the endpoint's userinfo
    /// (as written, decoded, and as the Basic credentials sent). Whatever an
    /// upstream sends back is scrubbed of these before it goes anywhere.
    pub secrets: Vec<Secret>,
    /// Why this provider cannot be used (e.g. its key variable is unset).
    pub unavailable: Option<String>,
    /// Extra headers sent on every request, as configured.
    pub headers: Vec<(String, String)>,
    /// Query parameters set on every request's URL, replacing the wire's own
    /// of the same name (`query:`; Azure's `api-version`).
    pub query: Vec<(String, String)>,
    /// Top-level request fields removed before sending (ones it refuses).
    pub drop_fields: Vec<String>,
    /// Backend surface: its models are never listed.
    pub backend: bool,
    /// Data stays in the EU.
    pub european: bool,
    /// The provider does not retain prompts or completions.
    pub no_retain: bool,
    /// Cost multiplier for this provider's answers (1 when not configured).
    pub markup: f64,
    /// The server tools its deployments run unless they say otherwise.
    pub server_tools: ServerTools,
    /// The `anthropic-beta` flags it accepts (`None`: any, as the client sent them).
    pub anthropic_betas: Option<Vec<String>>,
    /// `<provider>/<model>` reaches it for a model the catalog does not list.
    pub allow_unlisted_models: bool,
    /// Its own batch API, where its config turns it on (`batch_api: true`):
    /// batches whose lines all go to one of its deployments are handed to it.
    pub batch_api: Option<switchyard_protocol::batches::native::BatchApi>,
    /// Where that batch API stages its input, where it reads it from a
    /// bucket (`batch_bucket`, Vertex AI's).
    pub batch_staging: Option<switchyard_protocol::batches::native::Staging>,
    /// How its HTTP client is shaped (roots, client certificate, proxy, pool),
    /// checked: the PEM parses, the key belongs to the certificate, the proxy is
    /// a URL the client takes.
    pub client: crate::client::ClientOptions,
    /// `openai-chat` wire: what the server takes differently from OpenAI (its
    /// `preset`'s; OpenAI's own without one).
    pub openai: switchyard_protocol::openai_chat::Compat,
}

impl ProviderSpec {
    /// The wire it speaks; `None` for the mock.
    pub fn wire(&self) -> Option<Wire> {
        match self.kind {
            ProviderKind::Wire(w) => Some(w),
            ProviderKind::Mock { .. } => None,
        }
    }

    /// The wire's name as the configuration writes it (`mock` for the mock).
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

/// What a model declares it can take (the configuration's `capabilities`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// Image input.
    pub vision: bool,
    /// Function tools.
    pub tools: bool,
    /// A JSON-schema `response_format`.
    pub structured_output: bool,
    /// Reasoning (shown in model lists; never filtered on).
    pub reasoning: bool,
}

/// A compiled catalog model.
#[derive(Debug)]
pub struct ModelEntry {
    /// The canonical (normalised) id.
    pub id: String,
    /// Its other names, normalised.
    pub aliases: Vec<String>,
    /// What it does: which endpoints serve it.
    pub kind: raw::ModelKind,
    /// Where it runs, in the order written.
    pub deployments: Vec<DeploymentSpec>,
    /// Its prices; `None`: costs are unknown unless a deployment has its own.
    pub pricing: Option<Pricing>,
    /// Its context window in tokens; `None`: never refused for size.
    pub context_window: Option<u64>,
    /// Its output ceiling in tokens: larger `max_tokens` are clamped to it.
    pub max_output_tokens: Option<u64>,
    /// `None` when the catalog does not say (nothing is filtered).
    pub capabilities: Option<Capabilities>,
    /// The catalog's word on the model's family (None: read from each
    /// deployment's upstream id).
    pub family: Option<switchyard_protocol::Family>,
    /// The catalog's word on how the model takes reasoning (None: inferred per
    /// deployment from the upstream id).
    pub reasoning_control: Option<switchyard_protocol::ReasoningControl>,
    /// The catalog's word on sampling parameters (None: inferred).
    pub sampling: Option<bool>,
    /// The catalog's word on taking `temperature` and `top_p` together (None:
    /// inferred).
    pub one_sampler: Option<bool>,
    /// The catalog's word on `max_tokens` (None: inferred).
    pub takes_max_tokens: Option<bool>,
    /// Served but never listed.
    pub hidden: bool,
    /// From this day it is refused and unlisted.
    pub retires: Option<Date>,
    /// Catalog ids (normalised) whose deployments are tried after its own.
    pub fallbacks: Vec<String>,
    /// Shown in model lists (`switchyard` unless configured).
    pub owned_by: String,
    /// Narrows the providers' governance flags (None: the provider's word).
    pub governance: raw::Governance,
    /// What a request offering a hosted tool a deployment cannot run gets
    /// (`None`: not said; the route's, else `drop`).
    pub unrunnable_server_tools: Option<raw::UnrunnableServerTools>,
    /// Its answers are kept in the response cache (`None`: not cached).
    pub cache: Option<CacheSpec>,
    /// Conversations stay on the deployment that served them (`None`: no).
    pub affinity: Option<AffinitySpec>,
}

/// A model's or route's `affinity:`, compiled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AffinitySpec {
    /// How long a conversation stays pinned after its last turn.
    pub ttl_ms: u64,
    /// How much slower than the best candidate the pinned one may be.
    pub max_score_loss: f64,
}

impl AffinitySpec {
    /// Compiled from the file's.
    pub fn from_config(c: &raw::AffinityConfig) -> Self {
        Self { ttl_ms: c.ttl_ms.value, max_score_loss: c.max_score_loss }
    }
}

/// A model's or route's `cache:`, compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSpec {
    /// How long an answer is kept.
    pub ttl_ms: u64,
}

impl ModelEntry {
    /// How a deployment of this model (on `wire`, as `upstream_model`) takes
    /// reasoning and sampling settings: the catalog's word, else inferred.
    pub fn traits(
        &self,
        wire: switchyard_protocol::Wire,
        upstream_model: &str,
    ) -> switchyard_protocol::ModelTraits {
        use switchyard_protocol::{Family, ModelTraits};
        let family = self.family.unwrap_or_else(|| Family::of(upstream_model));
        let inferred = ModelTraits::infer_as(wire, family, upstream_model);
        switchyard_protocol::ModelTraits {
            family: inferred.family,
            reasoning: self.reasoning_control.unwrap_or(inferred.reasoning),
            sampling: self.sampling.unwrap_or(inferred.sampling),
            one_sampler: self.one_sampler.unwrap_or(inferred.one_sampler),
            takes_max_tokens: self.takes_max_tokens.unwrap_or(inferred.takes_max_tokens),
        }
    }

    /// Whether it is retired on `today` (its retirement day included).
    pub fn is_retired(&self, today: Date) -> bool {
        self.retires.is_some_and(|d| today >= d)
    }
}

/// A compiled deployment of a model.
#[derive(Debug, Clone)]
pub struct DeploymentSpec {
    /// Index into [`Catalog::providers`](super::Catalog::providers).
    pub provider: usize,
    /// The provider's id for the model (the catalog id unless configured).
    pub upstream_model: String,
    /// Its own prices; `None`: the model's.
    pub pricing: Option<Pricing>,
    /// The server tools it runs (`None`: its provider's).
    pub server_tools: Option<ServerTools>,
    /// Its capacity per credential (empty: unlimited).
    pub limits: crate::limits::Limits,
}

/// A compiled route or chain target.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    /// Index into [`Catalog::providers`](super::Catalog::providers).
    pub provider: usize,
    /// A catalog id (its deployment on this provider is used) or an upstream id;
    /// `None`: the requested model.
    pub model: Option<String>,
    /// Weight under `strategy: weighted` (≥ 1).
    pub weight: u32,
}

pub use raw::StrategyName as Strategy;

impl Strategy {
    /// The configuration's name for it (`least_busy`, …), as descriptors show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Ordered => "ordered",
            Strategy::Weighted => "weighted",
            Strategy::LeastBusy => "least_busy",
            Strategy::Cost => "cost",
            Strategy::Latency => "latency",
            Strategy::Balanced => "balanced",
            Strategy::Adaptive => "adaptive",
        }
    }
}

/// A primary and its ordered fallbacks, with the strategy that orders them.
#[derive(Debug, Clone)]
pub struct ChainSpec {
    /// Tried first (unless the strategy orders otherwise).
    pub primary: TargetSpec,
    /// Tried after it, in order.
    pub fallbacks: Vec<TargetSpec>,
    /// How the targets are ordered for the first attempt.
    pub strategy: Strategy,
}

/// Per-scope chains of a route (`by_scope`).
#[derive(Debug, Clone)]
pub struct Scopes {
    /// The dimension (`project`).
    pub dimension: String,
    /// A value not listed goes down the route's own chain (else it is refused).
    pub unmapped_shared: bool,
    /// The chains, by value as written (a project's id or name).
    pub chains: HashMap<String, ChainSpec>,
}

/// Bounds and classification rules of the attempt loop.
#[derive(Debug, Clone)]
pub struct AttemptPolicy {
    /// Statuses retried on the same deployment.
    pub retry_statuses: Vec<u16>,
    /// Retries per deployment (at most [`MAX_RETRIES`]).
    pub max_retries: u32,
    /// The first retry's backoff; it doubles per retry.
    pub backoff: Duration,
    /// The longest wait before a retry (at most [`MAX_RETRY_WAIT`]); a longer one
    /// fails over instead.
    pub max_wait: Duration,
    /// Statuses that move on to the next candidate.
    pub failover_statuses: Vec<u16>,
    /// Whether transport failures (connect, timeout, reset) move on.
    pub failover_transport: bool,
    /// The most candidates after the first (at most [`HARD_MAX_FALLBACKS`]).
    pub max_fallbacks: usize,
    /// The most attempts per request, retries included (1 to [`HARD_MAX_ATTEMPTS`]).
    pub max_attempts: usize,
    /// How a JSON-schema response format is asked of each candidate (and
    /// whether the gateway checks the answer): the route's `structured_output`.
    pub structured_output: crate::structured::StructuredMode,
    /// The route's `adaptive:` policy, which `strategy: adaptive` orders by.
    pub adaptive: Option<Arc<crate::adaptive::AdaptivePolicy>>,
}

/// Statuses the default policy fails over on (plus every 5xx).
pub const DEFAULT_FAILOVER: &[u16] = &[401, 402, 403, 404, 408, 409, 425, 429];
/// Fallbacks after the primary when a route does not say.
pub const DEFAULT_MAX_FALLBACKS: usize = 8;
/// The most fallbacks any route may ask for.
pub const HARD_MAX_FALLBACKS: usize = 32;
/// The most retries per deployment any route may ask for.
pub const MAX_RETRIES: u32 = 5;
/// Attempts per request when a route does not say.
pub const DEFAULT_MAX_ATTEMPTS: usize = 16;
/// The most attempts per request any route may ask for.
pub const HARD_MAX_ATTEMPTS: usize = 128;
/// The longest wait before a retry any route may ask for.
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
            structured_output: crate::structured::StructuredMode::default(),
            adaptive: None,
        }
    }

    /// Whether `status` is retried on the same deployment.
    pub fn is_retryable(&self, status: u16) -> bool {
        self.retry_statuses.contains(&status)
    }

    /// Whether `status` moves on to the next candidate.
    pub fn fails_over(&self, status: u16) -> bool {
        self.failover_statuses.contains(&status)
    }
}

/// A compiled route.
#[derive(Debug)]
pub struct RouteSpec {
    /// `slug(name)-<6 hex of FNV-1a(name)>`: stable across reloads and machines.
    pub id: String,
    /// Its name as written.
    pub name: String,
    /// Glob over canonical model ids, normalised.
    pub pattern: String,
    /// Its own chain.
    pub chain: ChainSpec,
    /// Per-scope chains; `None`: every request takes `chain`.
    pub scopes: Option<Scopes>,
    /// Catalog ids tried when the request does not fit the chain's context window.
    pub context_fallbacks: Vec<String>,
    /// Its retry and failover rules, clamped to the hard maximums.
    pub policy: Arc<AttemptPolicy>,
    /// Data-governance conditions every target must meet.
    pub requires: raw::Requires,
    /// What a request offering a hosted tool a deployment cannot run gets
    /// (`None`: the model's setting).
    pub unrunnable_server_tools: Option<raw::UnrunnableServerTools>,
    /// Answers of the models it serves are cached (`None`: the model's setting).
    pub cache: Option<CacheSpec>,
    /// Conversations stay on their deployment (`None`: the model's setting).
    pub affinity: Option<AffinitySpec>,
}

/// Gateway settings after compilation.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The address the server listens on.
    pub listen: String,
    /// The model a request naming none gets (normalised).
    pub default_model: Option<String>,
    /// Ids not in the catalog go through the first route whose pattern matches.
    pub allow_unlisted_models: bool,
    /// Normalised namespace prefixes stripped from requested ids.
    pub model_prefixes: Vec<String>,
    /// Static gateway API keys clients may present (empty strings dropped). With
    /// none, no admin key and no stored key, the HTTP server is open.
    pub api_keys: Vec<Secret>,
    /// Largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Deepest JSON nesting accepted in a request body.
    pub max_json_depth: usize,
    /// Most JSON values accepted in a request body.
    pub max_json_elements: usize,
    /// Largest whole upstream answer read, in bytes.
    pub max_response_bytes: usize,
    /// How long requests in flight may take to finish on shutdown.
    pub shutdown_grace: Duration,
    /// How long `/readyz` answers 503 on shutdown before the listener closes.
    pub shutdown_delay: Duration,
    /// TCP and TLS connect, per attempt.
    pub connect_timeout: Duration,
    /// From sending a request to the response headers, per attempt.
    pub first_byte_timeout: Duration,
    /// Longest silence between two chunks of a stream.
    pub idle_timeout: Duration,
    /// The whole request, every attempt together, until the answer (or a stream's
    /// first content).
    pub request_timeout: Duration,
    /// Keep-alive interval for silent committed streams (at least 1 ms).
    pub keepalive: Duration,
    /// Client connections (read by the server when it starts).
    pub connections: Connections,
    /// Circuit-breaker tuning.
    pub breaker: crate::breaker::BreakerConfig,
    /// Record the metrics series (`gateway.metrics`).
    pub metrics: bool,
    /// How often the config file is checked for changes; zero: never polled.
    pub reload_poll: Duration,
    /// Host names (lowercase, no port) a request's `Host` may name, besides IP
    /// addresses and `localhost`, while the gateway needs no key.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call (lowercase `scheme://host[:port]`, the
    /// scheme's default port left out, as browsers send them).
    pub allowed_origins: Vec<String>,
    /// The address that serves `/metrics` without a key, if any.
    pub metrics_listen: Option<String>,
    /// Stored Responses (`gateway.responses`).
    pub responses: raw::ResponsesSettings,
    /// Media jobs (`gateway.jobs`).
    pub jobs: raw::JobSettings,
    /// Batches (`gateway.batches`).
    pub batches: raw::BatchSettings,
}

/// Client connections to the listener: `gateway.connections`, compiled.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// Most open at once; 0: half the process's open-file limit.
    pub max: usize,
    /// A request's headers must arrive within this of its first byte (of the
    /// accept, for the first request).
    pub header_read_timeout: Duration,
    /// A connection with nothing in flight is closed after this.
    pub idle_timeout: Duration,
    /// HTTP/2 streams open at once per connection.
    pub http2_max_concurrent_streams: u32,
    /// HTTP/2 header list size, in bytes.
    pub http2_max_header_list_bytes: u32,
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
    /// The provider it is on.
    pub provider: Arc<ProviderSpec>,
    /// The id sent upstream.
    pub upstream_model: String,
    /// Its prices (the deployment's, else its model's); `None`: cost unknown.
    pub pricing: Option<Pricing>,
    /// The catalog entry this deployment serves (None for unlisted models).
    pub model: Option<Arc<ModelEntry>>,
    /// Weight under `strategy: weighted`.
    pub weight: u32,
    /// The server tools this deployment runs.
    pub server_tools: ServerTools,
    /// Its capacity per credential (empty: unlimited).
    pub limits: crate::limits::Limits,
    /// [`Candidate::traits`], worked out on first use: every stage of a
    /// request asks (the plan's notes, the body, the edits recorded).
    pub traits: std::sync::OnceLock<(switchyard_protocol::Wire, switchyard_protocol::ModelTraits)>,
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
    /// catalog's word where it gives one, else inferred from the upstream id;
    /// the output field its provider's preset names, if any.
    pub fn traits(&self, wire: switchyard_protocol::Wire) -> switchyard_protocol::ModelTraits {
        match self.traits.get() {
            Some((known, traits)) if *known == wire => *traits,
            _ => {
                let traits = self.infer_traits(wire);
                let _ = self.traits.set((wire, traits));
                traits
            }
        }
    }

    fn infer_traits(&self, wire: switchyard_protocol::Wire) -> switchyard_protocol::ModelTraits {
        let mut traits = match &self.model {
            Some(m) => m.traits(wire, &self.upstream_model),
            None => switchyard_protocol::ModelTraits::infer(wire, &self.upstream_model),
        };
        // A preset says which output field its server takes, for every model
        // (the body's rewrite puts the limit there whatever the model's traits).
        if let Some(field) = self.provider.openai.output_field {
            traits.takes_max_tokens =
                field == switchyard_protocol::openai_chat::OutputField::MaxTokens;
        }
        traits
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
    /// The model as the client named it.
    pub requested: String,
    /// The canonical catalog id (or the normalised requested id when unlisted).
    pub public_model: String,
    /// The catalog entry; `None` for an unlisted model.
    pub model: Option<Arc<ModelEntry>>,
    /// The route that matched; `None`: the model's own deployments.
    pub route_id: Option<String>,
    /// The deployments to try: in chain order from [`Catalog::plan`](super::Catalog::plan)
    /// (at most `1 + policy.max_fallbacks`); the pipeline then filters and orders
    /// them, and the attempts follow that order.
    pub candidates: Vec<Candidate>,
    /// The route's context-window fallbacks (catalog ids).
    pub context_fallbacks: Vec<String>,
    /// Route-match descriptor segments (`route:…`, `scope:project=…`, later
    /// `strategy:…`, `failover:a->b`, …).
    pub descriptor: Vec<String>,
    /// The chain's strategy (`ordered` without a route).
    pub strategy: Strategy,
    /// The route's attempt policy (the default one without a route).
    pub policy: Arc<AttemptPolicy>,
    /// Every candidate's breaker is open: try them all anyway, in chain order.
    pub bypass_breakers: bool,
    /// The route's data-governance requirements.
    pub requires: raw::Requires,
    /// What an offered hosted tool that a candidate cannot run gets: the route's
    /// setting, else the requested model's, else `drop`.
    pub unrunnable_server_tools: raw::UnrunnableServerTools,
    /// What the request's hosted tools ask of each candidate, decided when the
    /// pipeline plans it (the default until then).
    pub tools: crate::hosted::ToolDemand,
    /// The response cache's setting for this request: the route's, else the
    /// requested model's; `None`: not cached.
    pub cache: Option<CacheSpec>,
    /// Prompt-cache affinity for this request: the route's, else the requested
    /// model's; `None`: none.
    pub affinity: Option<AffinitySpec>,
}
