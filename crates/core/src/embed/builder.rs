//! Configuration in code: [`GatewayBuilder`] and the typed parts it takes
//! ([`Provider`], [`Model`], [`Route`], [`AccessRule`]). They only fill in a
//! [`RawConfig`], the parsed file's own types, which then goes through the same
//! [`Catalog::compile`] as YAML: validation, defaults and problems are those of
//! a file, not a second implementation of them.

use std::sync::Arc;
use std::time::Duration;

use switchyard_protocol::ServerTool;

use super::Gateway;
use super::catalog::{Model, Route};
use crate::access::{CallerRole, Effect};
use crate::catalog::Problem;
use crate::config::raw::{
    ClientConfig, ModelConfig, ProviderConfig, ProviderName, RawConfig, RouteConfig, RuleConfig,
    Surface, WireName, unlocated,
};
use crate::record::SharedSink;
use crate::runtime::Runtime;
use crate::util::Secret;
use crate::{Catalog, InvalidRegistry, LoadError};

/// How a provider's HTTP client is shaped ([`Provider::client`]).
pub use crate::client::{ClientIdentity, ClientOptions};
/// The file's own types, for the parts the builder takes whole (a route's retry
/// policy, a model's prices, the gateway settings), with their YAML defaults.
pub use crate::config::raw::{
    Capability, FailoverConfig, FailoverPreset, GatewaySettings, Governance, ModelKind, Pricing,
    Requires, RetryConfig, StorageConfig, StrategyName as Strategy, UnrunnableServerTools,
};

/// The name problems of a builder's configuration carry (`<builder>: …`) unless
/// [`GatewayBuilder::name`] gives another.
pub const BUILDER_SOURCE: &str = "<builder>";

type EnvLookup = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// A gateway's configuration, built in code; see [`Gateway::builder`].
///
/// Every default is the one an empty YAML section gives, except storage: `none`,
/// since a library gateway opens no database. Nothing is read from the process
/// environment unless [`GatewayBuilder::env`] says how, and nothing is connected
/// to until a request is sent.
#[derive(Clone)]
pub struct GatewayBuilder {
    name: String,
    env: Option<EnvLookup>,
    gateway: GatewaySettings,
    storage: StorageConfig,
    /// In the order given; a name given twice is a problem at compile time (the
    /// YAML map cannot hold one twice either).
    providers: Vec<(String, Provider)>,
    models: Vec<ModelConfig>,
    routes: Vec<RouteConfig>,
    rules: Vec<RuleConfig>,
    /// Where request records go (default: nowhere).
    sink: Option<SharedSink>,
}

impl std::fmt::Debug for GatewayBuilder {
    // Gateway settings are left out: their `api_keys` are plain strings.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("name", &self.name)
            .field("env", &self.env.is_some())
            .field("providers", &self.providers)
            .field("models", &self.models.iter().map(|m| &m.id.value).collect::<Vec<_>>())
            .field("routes", &self.routes.iter().map(|r| &r.name).collect::<Vec<_>>())
            .field("rules", &self.rules.iter().map(|r| &r.name.value).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Default for GatewayBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl GatewayBuilder {
    /// An empty configuration: no providers, models or routes.
    pub fn new() -> Self {
        let storage = StorageConfig { url: "none".to_owned(), ..StorageConfig::default() };
        Self {
            name: BUILDER_SOURCE.to_owned(),
            env: None,
            gateway: GatewaySettings::default(),
            storage,
            providers: Vec::new(),
            models: Vec::new(),
            routes: Vec::new(),
            rules: Vec::new(),
            sink: None,
        }
    }

    /// The name problems are reported under (default [`BUILDER_SOURCE`]).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How [`Provider::key_env`] variables are read. Without one, none is set:
    /// pass `|k| std::env::var(k).ok()` for the process environment.
    #[must_use]
    pub fn env(mut self, lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        self.env = Some(Arc::new(lookup));
        self
    }

    /// Where the record of every request goes (a database writer, a log, a
    /// channel to the caller's own accounting). Without one, records are
    /// dropped; a failed request's record still reaches its
    /// [`Failed`](crate::embed::Failed).
    #[must_use]
    pub fn sink(mut self, sink: SharedSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// A provider, under the name models and routes refer to it by.
    #[must_use]
    pub fn provider(mut self, name: impl Into<String>, provider: Provider) -> Self {
        self.providers.push((name.into(), provider));
        self
    }

    /// A catalog model.
    #[must_use]
    pub fn model(mut self, model: Model) -> Self {
        self.models.push(model.config);
        self
    }

    /// A route; the first whose pattern matches a model serves it.
    #[must_use]
    pub fn route(mut self, route: Route) -> Self {
        self.routes.push(route.config);
        self
    }

    /// An access rule.
    #[must_use]
    pub fn access_rule(mut self, rule: AccessRule) -> Self {
        self.rules.push(rule.config);
        self
    }

    /// The model used when a request names none (`gateway.default_model`).
    #[must_use]
    pub fn default_model(mut self, id: impl Into<String>) -> Self {
        self.gateway.default_model = Some(unlocated(id.into()));
        self
    }

    /// Gateway settings (timeouts, breaker, prefixes, …), changed in place from
    /// their defaults:
    ///
    /// ```
    /// # use switchyard_core::embed::Gateway;
    /// let builder = Gateway::builder().settings(|s| {
    ///     s.timeouts.first_byte_ms = 30_000;
    ///     s.breaker.threshold = 3.0;
    /// });
    /// ```
    #[must_use]
    pub fn settings(mut self, change: impl FnOnce(&mut GatewaySettings)) -> Self {
        change(&mut self.gateway);
        self
    }

    /// Storage settings, as the file's `storage` (default: `url: none`). A library
    /// gateway never opens storage itself; they are kept in the catalog.
    #[must_use]
    pub fn storage(mut self, storage: StorageConfig) -> Self {
        self.storage = storage;
        self
    }

    /// Validate and compile, as [`Catalog::compile`] does a file: every problem
    /// is listed, none with a line. For a gateway with its own record sink or
    /// runtime state, pass the catalog to [`Gateway::new`].
    ///
    /// ```
    /// use switchyard_core::embed::{Gateway, Model, Provider};
    ///
    /// let err = Gateway::builder()
    ///     .name("my-app")
    ///     .provider("openai", Provider::openai().key_env("OPENAI_API_KEY"))
    ///     .model(Model::new("fast").deployment("groq", "llama-3.1-8b"))
    ///     .compile()
    ///     .unwrap_err();
    /// let problems: Vec<String> = err.problems.iter().map(|p| p.render(&err.file)).collect();
    /// assert_eq!(problems.len(), 2);
    /// let unset = "my-app: providers.openai.credentials: provider openai is disabled";
    /// assert!(problems[0].starts_with(unset));
    /// assert_eq!(problems[1], r#"my-app: models[fast].deployments: unknown provider "groq""#);
    /// ```
    pub fn compile(&self) -> Result<Catalog, InvalidRegistry> {
        let (raw, mut problems) = self.raw();
        let env = |k: &str| self.env.as_ref().and_then(|lookup| lookup(k));
        match Catalog::compile(&raw, &self.name, &env) {
            Ok(catalog) if problems.is_empty() => Ok(catalog),
            Ok(_) => Err(InvalidRegistry { file: self.name.clone(), problems }),
            Err(mut invalid) => {
                problems.append(&mut invalid.problems);
                invalid.problems = problems;
                Err(invalid)
            }
        }
    }

    /// The gateway, records dropped (as [`Gateway::from_yaml`]).
    pub fn build(self) -> Result<Gateway, LoadError> {
        let sink = self.sink.clone().unwrap_or_else(|| Arc::new(crate::record::NullSink));
        Gateway::new(self.compile()?, sink, Runtime::default())
    }

    /// The file this configuration stands for, and the problems it cannot hold.
    fn raw(&self) -> (RawConfig, Vec<Problem>) {
        let mut raw = RawConfig {
            gateway: self.gateway.clone(),
            storage: self.storage.clone(),
            models: self.models.clone(),
            routes: self.routes.clone(),
            access_rules: self.rules.clone(),
            ..RawConfig::default()
        };
        let mut problems = Vec::new();
        for (name, provider) in &self.providers {
            if raw.providers.contains_key(name.as_str()) {
                let message = format!("providers.{name}: defined twice");
                problems.push(Problem { line: None, message });
                continue;
            }
            raw.providers.insert(ProviderName::new(name.clone()), provider.raw());
        }
        (raw, problems)
    }
}

/// An upstream provider: its wire, endpoint, keys and options.
///
/// A provider needs a key unless it is a mock or says otherwise ([`Provider::no_key`],
/// [`Provider::byok_only`], [`Provider::optional`]). Keys and header values never
/// appear in `Debug` output.
#[derive(Clone)]
pub struct Provider {
    /// Everything but the literal keys, which stay [`Secret`]s until compiled.
    config: ProviderConfig,
    keys: Vec<Secret>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = &self.config;
        f.debug_struct("Provider")
            .field("wire", &c.wire)
            .field("endpoint", &c.endpoint.as_ref().map(|e| &e.value))
            .field("keys", &self.keys)
            .field("key_env", &c.credentials.value.env.iter().map(|v| &v.value).collect::<Vec<_>>())
            .field("headers", &c.headers.keys().collect::<Vec<_>>())
            .field("client", &c.client.as_ref().map(|c| &c.value))
            .finish_non_exhaustive()
    }
}

impl Provider {
    fn on(wire: WireName) -> Self {
        Self { config: ProviderConfig::new(wire), keys: Vec::new() }
    }

    /// An OpenAI-compatible server (vLLM, Ollama, DeepSeek, Groq, …) at `endpoint`,
    /// the base URL requests append `/chat/completions` to.
    pub fn openai_compatible(endpoint: impl Into<String>) -> Self {
        Self::on(WireName::OpenaiChat).endpoint(endpoint)
    }

    /// OpenAI itself (`https://api.openai.com/v1`).
    pub fn openai() -> Self {
        Self::on(WireName::OpenaiChat)
    }

    /// Anthropic's Messages API (`https://api.anthropic.com` unless
    /// [`Provider::endpoint`] says otherwise). Runs Anthropic's server tools
    /// unless [`Provider::server_tools`] says otherwise.
    pub fn anthropic() -> Self {
        Self::on(WireName::Anthropic)
    }

    /// Google's Gemini API (`https://generativelanguage.googleapis.com` unless
    /// [`Provider::endpoint`] says otherwise).
    pub fn gemini() -> Self {
        Self::on(WireName::Gemini)
    }

    /// The built-in deterministic echo: no network, no key.
    pub fn mock() -> Self {
        Self::on(WireName::Mock)
    }

    /// The base URL, instead of the wire's default.
    #[must_use]
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.config.endpoint = Some(unlocated(url.into()));
        self
    }

    /// A platform key. Several are used in rotation.
    #[must_use]
    pub fn key(mut self, key: Secret) -> Self {
        self.keys.push(key);
        self
    }

    /// A platform key read from a variable through [`GatewayBuilder::env`] at
    /// compile time (unset: the provider is refused, or disabled when
    /// [`Provider::optional`]).
    #[must_use]
    pub fn key_env(mut self, var: impl Into<String>) -> Self {
        self.config.credentials.value.env.push(unlocated(var.into()));
        self
    }

    /// The server needs no key (a local vLLM or Ollama).
    #[must_use]
    pub fn no_key(mut self) -> Self {
        self.config.credentials.value.none = true;
        self
    }

    /// Keys come only from callers (a [`super::CredentialResolver`]).
    #[must_use]
    pub fn byok_only(mut self) -> Self {
        self.config.credentials.value.byok_only = true;
        self
    }

    /// A missing key disables the provider (a catalog warning) instead of refusing
    /// the configuration.
    #[must_use]
    pub fn optional(mut self) -> Self {
        self.config.credentials.value.optional = true;
        self
    }

    /// Requests may name `<provider>/<model>` for a model the catalog does not
    /// list: sent here with `<model>` as the upstream id.
    #[must_use]
    pub fn allow_unlisted_models(mut self) -> Self {
        self.config.allow_unlisted_models = true;
        self
    }

    /// An extra header sent on every request to this provider.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.headers.insert(name.into(), value.into());
        self
    }

    /// A top-level request field this provider refuses; removed before sending.
    #[must_use]
    pub fn drop_field(mut self, field: impl Into<String>) -> Self {
        self.config.drop_fields.push(field.into());
        self
    }

    /// Serves routes, but models deployed only here are never listed.
    #[must_use]
    pub fn backend(mut self) -> Self {
        self.config.surface = Surface::Backend;
        self
    }

    /// Its data-governance declarations.
    #[must_use]
    pub fn governance(mut self, governance: Governance) -> Self {
        self.config.governance = governance;
        self
    }

    /// Multiplies the metered cost of its answers (e.g. 1.1 for a 10% fee).
    #[must_use]
    pub fn markup(mut self, markup: f64) -> Self {
        self.config.markup = Some(unlocated(markup));
        self
    }

    /// The server tools its deployments run (an empty list: none, even on
    /// Anthropic). Each must be one its wire can run.
    #[must_use]
    pub fn server_tools(mut self, tools: impl IntoIterator<Item = ServerTool>) -> Self {
        self.config.server_tools = Some(tools.into_iter().map(unlocated).collect());
        self
    }

    /// Anthropic wire only: the `anthropic-beta` flags it accepts (others are left
    /// out). Without this, a client's flags go as they came.
    #[must_use]
    pub fn anthropic_betas(mut self, flags: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.config.anthropic_betas = Some(flags.into_iter().map(Into::into).collect());
        self
    }

    /// How its HTTP client is shaped: extra trusted roots, a client certificate
    /// (mTLS), a proxy, the connection pool; checked when compiled, as the file's
    /// `client:` block is (a problem names `providers.<name>.client.<field>`).
    ///
    /// ```
    /// use switchyard_core::embed::{ClientOptions, Gateway, Provider};
    ///
    /// let err = Gateway::builder()
    ///     .provider(
    ///         "internal",
    ///         Provider::openai_compatible("https://llm.internal/v1")
    ///             .no_key()
    ///             .client(ClientOptions::default().ca_pem("not a certificate")),
    ///     )
    ///     .compile()
    ///     .unwrap_err();
    /// let problem = err.problems[0].render(&err.file);
    /// assert_eq!(problem, "<builder>: providers.internal.client.ca_pem: no CERTIFICATE block in it");
    /// ```
    #[must_use]
    pub fn client(mut self, options: ClientOptions) -> Self {
        let ClientOptions { ca_pem, identity, proxy, pool_max_idle_per_host, pool_idle_timeout } =
            options;
        let config = ClientConfig {
            proxy: proxy.map(unlocated),
            pool_max_idle_per_host: Some(pool_max_idle_per_host),
            pool_idle_timeout_ms: Some(unlocated(
                u64::try_from(pool_idle_timeout.as_millis()).unwrap_or(u64::MAX),
            )),
            ca_pem,
            identity,
            ..ClientConfig::default()
        };
        self.config.client = Some(unlocated(config));
        self
    }

    /// Mock wire only: the delay before its answer and between streamed chunks.
    #[must_use]
    pub fn latency(mut self, latency: Duration) -> Self {
        self.config.latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
        self
    }

    fn raw(&self) -> ProviderConfig {
        let mut config = self.config.clone();
        let keys = self.keys.iter().map(|k| k.expose().to_owned());
        config.credentials.value.keys.extend(keys);
        config
    }
}

/// An access rule over model or route ids (a glob), for everyone unless given one
/// subject (two are refused). No matching rule means allowed.
#[derive(Debug, Clone)]
pub struct AccessRule {
    config: RuleConfig,
}

impl AccessRule {
    /// Let callers use what matches `pattern` (a glob).
    pub fn allow(name: impl Into<String>, pattern: impl Into<String>) -> Self {
        Self { config: RuleConfig::new(name, Effect::Allow, pattern, "") }
    }

    /// Refuse what matches `pattern`, saying `reason`.
    pub fn deny(
        name: impl Into<String>,
        pattern: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self { config: RuleConfig::new(name, Effect::Deny, pattern, reason) }
    }

    /// Only callers with this role.
    #[must_use]
    pub fn role(mut self, role: CallerRole) -> Self {
        self.config.role = Some(role);
        self
    }

    /// Only members of this group.
    #[must_use]
    pub fn group(mut self, group: impl Into<String>) -> Self {
        self.config.group = Some(group.into());
        self
    }

    /// Only requests attributed to this project.
    #[must_use]
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.config.project = Some(project.into());
        self
    }

    /// Only this user.
    #[must_use]
    pub fn user(mut self, user: impl Into<String>) -> Self {
        self.config.user = Some(user.into());
        self
    }

    /// Among the rules matching a request the highest priority decides, a deny
    /// winning a tie (default 0).
    #[must_use]
    pub fn priority(mut self, priority: i64) -> Self {
        self.config.priority = priority;
        self
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
