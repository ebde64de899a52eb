//! The catalog's parts in code: [`Model`] and its [`Deployment`]s, [`Route`]s
//! with their [`Chain`]s and [`Target`]s. Each fills in the parsed file's own
//! type (`config::raw`), compiled by [`GatewayBuilder`](super::GatewayBuilder)
//! like a file.

use switchyard_protocol::{ReasoningControl, ServerTool};

use super::builder::{
    Capability, FailoverConfig, Governance, Pricing, Requires, RetryConfig, Strategy,
    UnrunnableServerTools,
};
use crate::config::raw::{
    ByScope, DeploymentConfig, ModelConfig, RouteConfig, RouteTarget, ScopeChain, Unmapped,
    unlocated,
};

/// Where a model runs: a provider and that provider's id for it.
#[derive(Debug, Clone)]
pub struct Deployment {
    pub(super) config: DeploymentConfig,
}

impl Deployment {
    /// On `provider`, under the catalog id.
    pub fn new(provider: impl Into<String>) -> Self {
        Self { config: DeploymentConfig::new(provider) }
    }

    /// The provider's own id for the model.
    #[must_use]
    pub fn model(mut self, upstream: impl Into<String>) -> Self {
        self.config.model = Some(upstream.into());
        self
    }

    /// Prices here instead of the model's (a regional premium, say).
    #[must_use]
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.config.pricing = Some(pricing);
        self
    }

    /// Its capacity, per credential (`limits:` on a deployment): an attempt over
    /// it moves on to the next candidate without marking this one unhealthy,
    /// and with none left the request is refused with a `Retry-After`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use switchyard_core::embed::{Deployment, Gateway, Generate, Model, Provider};
    /// use switchyard_core::limits::Limits;
    /// use switchyard_core::protocol::{Message, Request, Role};
    ///
    /// let capped = Deployment::new("local").model("echo-1").limits(Limits::default().rpm(1));
    /// let gateway = Gateway::builder()
    ///     .provider("local", Provider::mock())
    ///     .model(Model::new("echo").deploy(capped))
    ///     .build()?;
    /// let ask = || {
    ///     let messages = vec![Message::text(Role::User, "hi")];
    ///     Generate::new(Request { model: "echo".into(), messages, ..Request::default() })
    /// };
    /// assert!(gateway.generate(ask()).await.is_ok());
    /// let refused = gateway.generate(ask()).await.expect_err("one request per minute");
    /// assert_eq!(refused.error.status(), 429);
    /// assert!(refused.error.retry_after().is_some());
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn limits(mut self, limits: crate::limits::Limits) -> Self {
        self.config.limits = Some(limits);
        self
    }

    /// The server tools this deployment runs, instead of its provider's.
    #[must_use]
    pub fn server_tools(mut self, tools: impl IntoIterator<Item = ServerTool>) -> Self {
        self.config.server_tools = Some(tools.into_iter().map(unlocated).collect());
        self
    }
}

/// A catalog model: the id clients ask for and where it runs.
#[derive(Debug, Clone)]
pub struct Model {
    pub(super) config: ModelConfig,
}

impl Model {
    /// The model clients call `id` (normalised: lowercase, `_` and spaces to `-`).
    pub fn new(id: impl Into<String>) -> Self {
        Self { config: ModelConfig::new(id) }
    }

    /// A deployment on `provider`, which calls the model `upstream`; tried in the
    /// order given.
    #[must_use]
    pub fn deployment(self, provider: impl Into<String>, upstream: impl Into<String>) -> Self {
        self.deploy(Deployment::new(provider).model(upstream))
    }

    /// A deployment with its own options.
    #[must_use]
    pub fn deploy(mut self, deployment: Deployment) -> Self {
        self.config.deployments.push(deployment.config);
        self
    }

    /// Another name for it (ids and aliases share one namespace).
    #[must_use]
    pub fn alias(mut self, alias: impl Into<String>) -> Self {
        self.config.aliases.push(unlocated(alias.into()));
        self
    }

    /// A catalog id (not an alias) whose deployments are tried after its own.
    #[must_use]
    pub fn fallback(mut self, id: impl Into<String>) -> Self {
        self.config.fallbacks.push(unlocated(id.into()));
        self
    }

    /// USD per million tokens; a missing price makes the cost unknown.
    #[must_use]
    pub fn pricing(mut self, pricing: Pricing) -> Self {
        self.config.pricing = Some(pricing);
        self
    }

    /// Its context window, in tokens.
    #[must_use]
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.config.context_window = Some(tokens);
        self
    }

    /// The most tokens it writes in one answer.
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: u64) -> Self {
        self.config.max_output_tokens = Some(tokens);
        self
    }

    /// What it can take; a request needing anything else skips it (unset:
    /// unknown, nothing is filtered).
    #[must_use]
    pub fn capabilities(mut self, capabilities: impl IntoIterator<Item = Capability>) -> Self {
        self.config.capabilities = Some(capabilities.into_iter().collect());
        self
    }

    /// Whose model it is (unset: read from each deployment's model id).
    #[must_use]
    pub fn family(mut self, family: switchyard_protocol::Family) -> Self {
        self.config.family = Some(family);
        self
    }

    /// How it takes its reasoning setting (unset: inferred per deployment).
    #[must_use]
    pub fn reasoning_control(mut self, control: ReasoningControl) -> Self {
        self.config.reasoning_control = Some(control);
        self
    }

    /// Whether it takes temperature/top_p/top_k (unset: inferred).
    #[must_use]
    pub fn sampling(mut self, takes_sampling: bool) -> Self {
        self.config.sampling = Some(takes_sampling);
        self
    }

    /// Whether it takes `temperature` or `top_p` but not both (unset: inferred).
    #[must_use]
    pub fn one_sampler(mut self, one: bool) -> Self {
        self.config.one_sampler = Some(one);
        self
    }

    /// OpenAI chat: whether it takes the older `max_tokens` (unset: inferred).
    #[must_use]
    pub fn takes_max_tokens(mut self, takes: bool) -> Self {
        self.config.takes_max_tokens = Some(takes);
        self
    }

    /// What it does (unset: chat): an embedding model serves
    /// [`Gateway::embed`](super::Gateway::embed) and `/v1/embeddings`, never a
    /// generation.
    #[must_use]
    pub fn kind(mut self, kind: super::ModelKind) -> Self {
        self.config.kind = kind;
        self
    }

    /// Served but never listed.
    #[must_use]
    pub fn hidden(mut self) -> Self {
        self.config.hidden = true;
        self
    }

    /// `YYYY-MM-DD`: from that day it is refused and unlisted.
    #[must_use]
    pub fn retires(mut self, date: impl Into<String>) -> Self {
        self.config.retires = Some(unlocated(date.into()));
        self
    }

    /// Shown in model lists (default `switchyard`).
    #[must_use]
    pub fn owned_by(mut self, owner: impl Into<String>) -> Self {
        self.config.owned_by = Some(owner.into());
        self
    }

    /// Narrows its providers' governance declarations.
    #[must_use]
    pub fn governance(mut self, governance: Governance) -> Self {
        self.config.governance = governance;
        self
    }

    /// What a request offering a hosted tool that a deployment cannot run gets
    /// (default: [`UnrunnableServerTools::Drop`]; a route's setting wins).
    #[must_use]
    pub fn unrunnable_server_tools(mut self, mode: UnrunnableServerTools) -> Self {
        self.config.unrunnable_server_tools = Some(mode);
        self
    }
}

/// One provider a route or chain may send to, optionally under another model id.
#[derive(Debug, Clone)]
pub struct Target {
    pub(super) config: RouteTarget,
}

impl Target {
    /// `provider`, with the requested model.
    pub fn new(provider: impl Into<String>) -> Self {
        Self { config: RouteTarget::new(provider) }
    }

    /// A catalog id (its deployment on this provider is used) or an upstream id.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.config.model = Some(model.into());
        self
    }

    /// Its weight under [`Strategy::Weighted`] (default 1; 0 is refused).
    #[must_use]
    pub fn weight(mut self, weight: u32) -> Self {
        self.config.weight = Some(unlocated(weight));
        self
    }
}

/// A project's own chain on a route ([`Route::project`]).
#[derive(Debug, Clone)]
pub struct Chain {
    pub(super) config: ScopeChain,
}

impl Chain {
    /// A chain whose primary is `primary`.
    pub fn new(primary: Target) -> Self {
        let RouteTarget { provider, model, weight } = primary.config;
        let config = ScopeChain { model, weight, ..ScopeChain::new(provider.value) };
        Self { config }
    }

    /// A fallback, tried in the order given.
    #[must_use]
    pub fn fallback(mut self, target: Target) -> Self {
        self.config.fallbacks.push(target.config);
        self
    }

    /// How it orders its targets (default: the route's strategy).
    #[must_use]
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.config.strategy = Some(strategy);
        self
    }
}

/// A route: the models whose id matches a glob go down its chain (primary, then
/// fallbacks), under its retry and failover policy.
#[derive(Debug, Clone)]
pub struct Route {
    pub(super) config: RouteConfig,
}

impl Route {
    /// A route named `name` (its id is derived from it) sending the models that
    /// match `pattern` (`*` any run, `?` one character) to `primary`.
    pub fn new(name: impl Into<String>, pattern: impl Into<String>, primary: Target) -> Self {
        let RouteTarget { provider, model, weight } = primary.config;
        let config =
            RouteConfig { model, weight, ..RouteConfig::new(name, pattern, provider.value) };
        Self { config }
    }

    /// A fallback, tried in the order given.
    #[must_use]
    pub fn fallback(mut self, target: Target) -> Self {
        self.config.fallbacks.push(target.config);
        self
    }

    /// How it orders its targets for the first attempt (default ordered).
    #[must_use]
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.config.strategy = strategy;
        self
    }

    /// A catalog id tried when the request does not fit the chain's context window.
    #[must_use]
    pub fn context_fallback(mut self, id: impl Into<String>) -> Self {
        self.config.context_fallbacks.push(unlocated(id.into()));
        self
    }

    /// The chain requests attributed to `project` (by id or name) take instead.
    /// Once a route has one, a request attributed to no listed project is refused
    /// (403) unless [`Route::other_projects_shared`].
    #[must_use]
    pub fn project(mut self, project: impl Into<String>, chain: Chain) -> Self {
        let scopes = self.config.by_scope.get_or_insert_with(|| ByScope::new("project"));
        scopes.chains.insert(project.into(), chain.config);
        self
    }

    /// Requests attributed to no project with a chain of its own go down the
    /// route's chain instead of being refused.
    #[must_use]
    pub fn other_projects_shared(mut self) -> Self {
        let scopes = self.config.by_scope.get_or_insert_with(|| ByScope::new("project"));
        scopes.unmapped = Unmapped::Shared;
        self
    }

    /// Retries of one deployment before failing over.
    #[must_use]
    pub fn retry(mut self, retry: RetryConfig) -> Self {
        self.config.retry = retry;
        self
    }

    /// Which failures move on to the next target.
    #[must_use]
    pub fn failover(mut self, failover: FailoverConfig) -> Self {
        self.config.failover = failover;
        self
    }

    /// The most fallbacks tried after the primary (default 8, at most 32).
    #[must_use]
    pub fn max_fallbacks(mut self, n: usize) -> Self {
        self.config.max_fallbacks = Some(n);
        self
    }

    /// The most attempts per request, retries included (default 16, at most 128).
    #[must_use]
    pub fn max_attempts(mut self, n: usize) -> Self {
        self.config.max_attempts = Some(n);
        self
    }

    /// Data-governance conditions every target must meet.
    #[must_use]
    pub fn requires(mut self, requires: Requires) -> Self {
        self.config.requires = requires;
        self
    }

    /// What a request offering a hosted tool that a deployment cannot run gets
    /// (default: the model's setting, else [`UnrunnableServerTools::Drop`]).
    #[must_use]
    pub fn unrunnable_server_tools(mut self, mode: UnrunnableServerTools) -> Self {
        self.config.unrunnable_server_tools = Some(mode);
        self
    }

    /// How a JSON-schema response format is asked for (default:
    /// [`StructuredMode::Auto`](crate::structured::StructuredMode::Auto)):
    /// natively, in the system prompt with the answer checked, or each where it
    /// fits.
    #[must_use]
    pub fn structured_output(mut self, mode: crate::structured::StructuredMode) -> Self {
        self.config.structured_output = Some(mode);
        self
    }
}
