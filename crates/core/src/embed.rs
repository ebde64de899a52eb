//! Library mode: the gateway in-process, without the HTTP server. Build a
//! [`Gateway`] from a configuration (YAML text or a file, with the `yaml`
//! feature, or in code with [`Gateway::builder`]), then [`Gateway::generate`] or [`Gateway::stream`]
//! canonical requests; the answer says which provider and model served it, every
//! attempt, usage, cost and the route descriptor.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use switchyard_core::embed::{Generate, Gateway};
//! use switchyard_core::protocol::{Message, Request, Role};
//!
//! let gateway = Gateway::from_yaml(
//!     "inline.yaml",
//!     "storage: { url: none }\nproviders: { local: { wire: mock } }\nmodels: [{ id: echo, deployments: [{ provider: local }] }]\n",
//!     &|_| None,
//! )?;
//! let request = Request {
//!     model: "echo".into(),
//!     messages: vec![Message::text(Role::User, "hello")],
//!     ..Request::default()
//! };
//! let answer = gateway.generate(Generate::new(request)).await?;
//! assert_eq!(answer.provider, "local");
//! assert_eq!(answer.attempts.len(), 1);
//! # Ok(())
//! # }
//! ```
//!
//! Many gateways may live in one process: each owns its catalog, runtime state and
//! record sink; nothing is global and nothing touches the network until a request
//! is sent. Dropping the future (or the stream) cancels the request upstream.
//!
//! Everything a program built on this module needs is exported here (the
//! canonical request and answer types too); `use switchyard_core::embed::prelude::*`
//! brings the usual ones in at once.
//!
//! # Metrics
//!
//! With the `metrics` feature (on by default), the pipeline records these series
//! through the [`metrics`](https://docs.rs/metrics) facade. They go nowhere unless
//! the program installs a recorder; one that does (for metrics of its own)
//! receives them too:
//!
//! | series | labels |
//! |---|---|
//! | `gateway_requests_total` (counter) | `format` (`openai-chat` for the library), `status` |
//! | `gateway_request_duration_seconds` (histogram) | `format` |
//! | `gateway_attempt_duration_seconds` (histogram) | `provider` |
//! | `gateway_time_to_first_token_seconds` (histogram) | `provider` |
//! | `gateway_upstream_failovers_total` (counter) | `from`, `to`, `reason` |
//! | `gateway_deployment_selected_total` (counter) | `route`, `provider`, `strategy` |
//! | `gateway_token_counts_total` (counter) | `format`, `outcome` |
//! | `gateway_dropped_tools_total` (counter) | `tool`, `model` |
//!
//! No label holds a user, a key or anything derived from one. The HTTP server adds
//! its own (in flight, breaker states, reloads): docs/routing.md §7. A gateway
//! built with `.settings(|s| s.metrics = false)` (the file's `gateway.metrics`)
//! records none of them, whatever recorder is installed.

mod builder;
mod catalog;
mod embeddings;

/// The names most programs use, in one import.
pub mod prelude {
    pub use super::{
        Deployment, Failed, Gateway, Generate, Generation, GenerationStream, Model, Pricing,
        Provider, Route, Secret, Target,
    };
    pub use crate::protocol::{Delta, Message, Part, Request, Response, Role, StreamEvent, Tool};
}

pub use crate::access::{CallerRole, Principal};
pub use crate::exec::RequestRouting;
pub use crate::record::{AttemptRecord, RecordSink, RequestRecord, SharedSink};
pub use crate::runtime::Runtime;
pub use crate::structured::StructuredMode;
pub use crate::{GatewayError, LoadError};
/// The canonical types requests and answers are made of.
pub use switchyard_protocol::{
    Delta, ErrorCode, Message, Part, Request, Response, Role, StopReason, StreamEvent, Tool,
    ToolCall, ToolChoice, ToolResult, Usage,
};

/// Provider keys, as [`Provider::key`] and [`CredentialResolver`] take them.
pub use crate::util::Secret;
pub use builder::{
    AccessRule, BUILDER_SOURCE, Capability, ClientIdentity, ClientOptions, FailoverConfig,
    FailoverPreset, GatewayBuilder, GatewaySettings, Governance, ModelKind, Pricing, Provider,
    Requires, RetryConfig, StorageConfig, Strategy, UnrunnableServerTools,
};
pub use catalog::{Chain, Deployment, Model, Route, Target};
pub use embeddings::{Embed, Embeddings};

use std::collections::VecDeque;
use std::sync::Arc;

use switchyard_protocol::{ClientFormat, ResponseAccumulator};

use crate::Catalog;
use crate::exec::{
    Chunk, ChunkStream, Delivery, Inbound, NoDirectory, Output, attribute, check_model_id,
    wrong_form,
};

/// Supplies provider keys per request, so an embedding application can give each
/// of its tenants its own (they are used before the configuration's keys).
///
/// It is asked once per provider of the catalog for every request. The mock
/// needs no key, but an attempt's record still names the one it was given, by
/// fingerprint:
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use switchyard_core::access::Principal;
/// use switchyard_core::embed::{CredentialResolver, Gateway, Generate, Model, Provider, Secret};
/// use switchyard_core::protocol::{Message, Request, Role};
///
/// /// Each tenant's own key for `local`, by user id.
/// struct TenantKeys;
///
/// impl CredentialResolver for TenantKeys {
///     fn resolve(&self, provider: &str, caller: &Principal) -> Option<Secret> {
///         match (provider, caller.user_id.as_deref()) {
///             ("local", Some("acme")) => Some(Secret::from("sk-acme-0001")),
///             _ => None,
///         }
///     }
/// }
///
/// let gateway = Gateway::builder()
///     .provider("local", Provider::mock())
///     .model(Model::new("echo").deployment("local", "echo-1"))
///     .build()?
///     .with_credentials(Arc::new(TenantKeys));
/// let request = Request {
///     model: "echo".into(),
///     messages: vec![Message::text(Role::User, "hello")],
///     ..Request::default()
/// };
///
/// let acme = Principal::user("acme");
/// let generate = Generate::new(request.clone()).caller(acme);
/// let answer = gateway.generate(generate).await?;
/// let used = answer.attempts[0].credential.as_deref();
/// assert_eq!(used, Some(Secret::from("sk-acme-0001").fingerprint().as_str()));
///
/// // An anonymous caller has no key of its own (and the mock has no platform key).
/// let answer = gateway.generate(Generate::new(request)).await?;
/// assert_eq!(answer.attempts[0].credential, None);
/// # Ok(())
/// # }
/// ```
pub trait CredentialResolver: Send + Sync {
    /// The key to use for `provider` on behalf of `caller`, if the caller has one.
    fn resolve(&self, provider: &str, caller: &Principal) -> Option<Secret>;
}

/// A request through the library: [`Generate::new`], then what it needs beyond
/// the configuration's defaults.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Generate {
    /// The canonical request. Its `stream` flag is ignored: [`Gateway::generate`]
    /// and [`Gateway::stream`] set it.
    pub request: Request,
    /// Fallbacks, deadlines and attempt bounds for this request.
    pub routing: RequestRouting,
    /// Who asks, for access rules, records and credentials (default: anonymous).
    pub caller: Principal,
    /// The project the request is attributed to, by id or name (a signed-in
    /// caller may name only their own); default: the caller's bound project.
    pub project: Option<String>,
    /// The request's id, as its record, its answer and its failure carry it, so
    /// the caller can correlate them with its own: 1 to 128 ASCII letters,
    /// digits and `-_.:`. Default: a fresh `lib_…` id.
    pub id: Option<String>,
}

impl Generate {
    /// `request` from an anonymous caller, with the configuration's routing.
    pub fn new(request: Request) -> Self {
        Self { request, ..Self::default() }
    }

    /// This request's own fallbacks, deadline and attempt bounds.
    #[must_use]
    pub fn routing(mut self, routing: RequestRouting) -> Self {
        self.routing = routing;
        self
    }

    /// Who asks (access rules, records, per-tenant credentials).
    #[must_use]
    pub fn caller(mut self, caller: Principal) -> Self {
        self.caller = caller;
        self
    }

    /// The project it is attributed to, by id or name.
    #[must_use]
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Its id, as its record, answer and failure carry it: 1 to 128 ASCII
    /// letters, digits and `-_.:`.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// A request that failed: the error its caller is answered with, and how it
/// came to it (every attempt, and the request's record as its sink got it).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use switchyard_core::embed::{Gateway, Generate, Model, Provider};
/// use switchyard_core::protocol::{Message, Request};
///
/// let gateway = Gateway::builder()
///     .provider("local", Provider::mock())
///     .model(Model::new("echo").deployment("local", "echo-1"))
///     .build()?;
/// let request = Request { model: "nope".into(), messages: vec![Message::user("hi")], ..Request::default() };
/// let failed = gateway
///     .generate(Generate::new(request).id("order-42"))
///     .await
///     .unwrap_err();
/// assert_eq!((failed.status(), failed.request_id.as_str()), (404, "order-42"));
/// assert!(failed.attempts.is_empty(), "nothing was sent");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Failed {
    /// What the caller is answered with (status, stable code, message).
    pub error: GatewayError,
    /// The request's id, as its record has it.
    pub request_id: String,
    /// Every attempt, in order (empty when none was made: an unknown model, a
    /// refusal before any upstream was called).
    pub attempts: Vec<AttemptRecord>,
    /// The request's record, as its sink got it (`None` where none was written:
    /// a request refused before its record began, a malformed id say).
    pub record: Option<Box<RequestRecord>>,
}

impl Failed {
    fn new(error: GatewayError, request_id: String, record: Option<RequestRecord>) -> Self {
        let attempts = record.as_ref().map(|r| r.attempts.clone()).unwrap_or_default();
        Self { error, request_id, attempts, record: record.map(Box::new) }
    }

    /// The HTTP status an HTTP caller would get.
    pub fn status(&self) -> u16 {
        self.error.status()
    }

    /// The stable machine code (`model_not_found`, …).
    pub fn code(&self) -> switchyard_protocol::ErrorCode {
        self.error.code()
    }
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "request {}: {}", self.request_id, self.error)?;
        if let Some(last) = self.attempts.last() {
            let n = self.attempts.len();
            write!(f, " (after {n} attempt(s), the last {} on {})", last.outcome, last.deployment)?;
        }
        Ok(())
    }
}

impl std::error::Error for Failed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<Failed> for GatewayError {
    fn from(f: Failed) -> Self {
        f.error
    }
}

/// The gateway's sink for one request, keeping a copy of that request's record
/// when it failed, for its [`Failed`].
struct Capture {
    sink: SharedSink,
    failed: std::sync::Mutex<Option<RequestRecord>>,
}

impl RecordSink for Capture {
    fn record(&self, record: RequestRecord) {
        if record.status >= 400
            && let Ok(mut kept) = self.failed.lock()
        {
            *kept = Some(record.clone());
        }
        self.sink.record(record);
    }
}

impl Capture {
    fn take(&self) -> Option<RequestRecord> {
        self.failed.lock().ok().and_then(|mut kept| kept.take())
    }
}

/// A complete answer and how it was served.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Generation {
    /// The answer.
    pub response: Response,
    /// The request's id (`lib_…`), as its record has it.
    pub request_id: String,
    /// The provider that answered.
    pub provider: String,
    /// The catalog model the request resolved to, also when a fallback answered
    /// (`provider` and `upstream_model` say who did).
    pub model: String,
    /// The provider's own id for it.
    pub upstream_model: String,
    /// The route-match descriptor (`route:… failover:a->b`).
    pub descriptor: String,
    /// The hosted tools the request offered that the answering deployment does
    /// not run, so it answered without them (`web_search`); empty for most.
    pub dropped_tools: Vec<String>,
    /// Every attempt, in order, the answering one last.
    pub attempts: Vec<AttemptRecord>,
    /// Usage: reported, or estimated where it was not.
    pub usage: Usage,
    /// USD; `None` when a price is unknown.
    pub cost_usd: Option<f64>,
}

/// A streaming answer: how it is served, known at its first content, and its
/// canonical events. A failure after the first content ends it with an error.
/// Dropping it cancels the request upstream.
#[derive(Debug)]
#[non_exhaustive]
pub struct GenerationStream {
    /// The request's id (`lib_…`).
    pub request_id: String,
    /// The provider that answers.
    pub provider: String,
    /// The catalog model the request resolved to, also when a fallback answers.
    pub model: String,
    /// The provider's own id for it.
    pub upstream_model: String,
    /// The route-match descriptor (`route:… failover:a->b`).
    pub descriptor: String,
    /// The hosted tools the request offered that the answering deployment does
    /// not run, so it answers without them (`web_search`); empty for most.
    pub dropped_tools: Vec<String>,
    chunks: ChunkStream,
    ready: VecDeque<StreamEvent>,
    record: Option<Box<RequestRecord>>,
}

impl GenerationStream {
    /// The next event; `None` after the last (and after an error). The same as
    /// the [`Stream`](futures_util::Stream) it is.
    pub async fn next(&mut self) -> Option<Result<StreamEvent, GatewayError>> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn poll_event(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<StreamEvent, GatewayError>>> {
        use std::task::Poll;
        loop {
            if let Some(ev) = self.ready.pop_front() {
                return Poll::Ready(Some(Ok(ev)));
            }
            match std::task::ready!(self.chunks.poll_next(cx)) {
                None => return Poll::Ready(None),
                Some(Chunk::Events(events)) => self.ready.extend(events),
                Some(Chunk::End { error, record }) => {
                    self.record = record;
                    return Poll::Ready(error.map(Err));
                }
                // Keep-alives are for connections; canonical streams carry no bytes.
                Some(Chunk::KeepAlive | Chunk::Raw(_)) => {}
            }
        }
    }

    /// Read the rest of the stream and assemble it into one [`Response`], as
    /// `generate` would have answered; an error after the first content is
    /// the error.
    pub async fn into_response(mut self) -> Result<Response, GatewayError> {
        let mut whole = ResponseAccumulator::default();
        while let Some(event) = self.next().await {
            whole.push(&event?);
        }
        Ok(whole.finish())
    }

    /// Every attempt, in order, once the stream has ended (`None` before).
    pub fn attempts(&self) -> Option<&[AttemptRecord]> {
        self.record.as_deref().map(|r| r.attempts.as_slice())
    }

    /// Usage once the stream has ended: reported, or estimated where it was not.
    pub fn usage(&self) -> Option<Usage> {
        self.record.as_deref().map(|r| r.usage)
    }

    /// Cost in USD once the stream has ended (`None` before, or when a price is
    /// unknown).
    pub fn cost_usd(&self) -> Option<f64> {
        self.record.as_deref().and_then(|r| r.cost_usd)
    }
}

impl futures_util::Stream for GenerationStream {
    type Item = Result<StreamEvent, GatewayError>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}

/// An in-process gateway: the [`Engine`](crate::Engine) plus what a library caller needs.
pub struct Gateway {
    inner: crate::Engine,
    credentials: Option<Arc<dyn CredentialResolver>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("credentials", &self.credentials.is_some()).finish()
    }
}

impl Gateway {
    /// A configuration built in code, compiled and validated like a file: every
    /// problem is listed at [`GatewayBuilder::build`]. Nothing global is read (no
    /// environment unless [`GatewayBuilder::env`] gives a lookup) and nothing
    /// touches the network until a request is sent.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use switchyard_core::embed::{
    ///     Gateway, Generate, Model, Pricing, Provider, Route, Secret, Target,
    /// };
    /// use switchyard_core::protocol::{Message, Request, Role};
    ///
    /// let price = Pricing::per_million(3.0, 15.0);
    /// let gateway = Gateway::builder()
    ///     .provider("local", Provider::mock())
    ///     .provider("openai", Provider::openai().key(Secret::from("sk-example")))
    ///     .provider("claude", Provider::anthropic().key_env("ANTHROPIC_API_KEY").optional())
    ///     .model(Model::new("echo").deployment("local", "echo-1"))
    ///     .model(
    ///         Model::new("smart")
    ///             .deployment("claude", "claude-sonnet-4-5")
    ///             .deployment("openai", "gpt-4.1")
    ///             .pricing(price),
    ///     )
    ///     // `smart` tries OpenAI first, then Claude.
    ///     .route(
    ///         Route::new("openai first", "smart", Target::new("openai"))
    ///             .fallback(Target::new("claude")),
    ///     )
    ///     .settings(|s| s.timeouts.first_byte_ms = 30_000)
    ///     .build()?;
    /// // No lookup was given, so ANTHROPIC_API_KEY reads as unset: `claude` is disabled.
    /// let snapshot = gateway.engine().snapshot();
    /// assert!(snapshot.catalog.provider("claude").is_some_and(|p| p.unavailable.is_some()));
    ///
    /// let request = Request {
    ///     model: "echo".into(),
    ///     messages: vec![Message::text(Role::User, "hello")],
    ///     ..Request::default()
    /// };
    /// let answer = gateway.generate(Generate::new(request)).await?;
    /// assert_eq!((answer.provider.as_str(), answer.upstream_model.as_str()), ("local", "echo-1"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn builder() -> GatewayBuilder {
        GatewayBuilder::new()
    }

    /// From a compiled catalog, with records going to `sink` and runtime state
    /// (breakers, limits, shared stores) as given.
    pub fn new(catalog: Catalog, sink: SharedSink, runtime: Runtime) -> Result<Self, LoadError> {
        Ok(Self { inner: crate::Engine::with_runtime(catalog, sink, runtime)?, credentials: None })
    }

    /// From YAML text (`name` appears in problems: `name:line: …`). `${VAR}`
    /// references are resolved with `env` (pass `&|k| std::env::var(k).ok()` for the
    /// process environment). Records are dropped; use [`Gateway::new`] to keep them.
    #[cfg(feature = "yaml")]
    pub fn from_yaml(
        name: &str,
        yaml: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        let raw = crate::ConfigSource::from_text(name, yaml).parse_with(env)?;
        Self::from_raw(&raw, name, env)
    }

    /// From a configuration file.
    #[cfg(feature = "yaml")]
    pub fn from_file(
        path: &std::path::Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        let source = crate::ConfigSource::from_path(path)?;
        let raw = source.parse_with(env)?;
        Self::from_raw(&raw, &source.name, env)
    }

    /// From the parsed file's values ([`crate::config::raw::RawConfig`]);
    /// [`Gateway::builder`] builds a configuration in code with typed parts.
    pub fn from_raw(
        raw: &crate::config::raw::RawConfig,
        name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, LoadError> {
        let catalog = Catalog::compile(raw, name, env)?;
        let sink: SharedSink = Arc::new(crate::record::NullSink);
        Self::new(catalog, sink, Runtime::default())
    }

    /// Per-tenant provider keys, asked for on each request.
    #[must_use]
    pub fn with_credentials(mut self, resolver: Arc<dyn CredentialResolver>) -> Self {
        self.credentials = Some(resolver);
        self
    }

    /// The engine underneath (reload, snapshot, runtime state).
    pub fn engine(&self) -> &crate::Engine {
        &self.inner
    }

    /// Answer `generate` whole.
    pub async fn generate(&self, mut generate: Generate) -> Result<Generation, Failed> {
        generate.request.stream = false;
        let (id, success) = self.run(generate).await?;
        match success.delivery {
            Delivery::Response { response, record: Some(record) } => Ok(Generation {
                response: *response,
                request_id: id,
                provider: success.served.provider,
                model: success.served.model,
                upstream_model: success.served.upstream_model,
                descriptor: success.descriptor,
                dropped_tools: success.served.dropped_tools,
                attempts: record.attempts,
                usage: record.usage,
                cost_usd: record.cost_usd,
            }),
            _ => Err(Failed::new(wrong_form(), id, None)),
        }
    }

    /// The pipeline for `generate`, its record kept when it fails.
    async fn run(&self, generate: Generate) -> Result<(String, crate::Success), Failed> {
        let id = match &generate.id {
            Some(id) => checked_id(id).map_err(|e| Failed::new(e, id.clone(), None))?,
            None => request_id(),
        };
        let inbound = self
            .inbound(generate, id.clone())
            .await
            .map_err(|e| Failed::new(e, id.clone(), None))?;
        let capture =
            Arc::new(Capture { sink: self.inner.sink.clone(), failed: Default::default() });
        let sink: SharedSink = capture.clone();
        let run = self.inner.snapshot().execute(inbound, Arc::clone(&self.inner.runtime), sink);
        match run.await {
            Ok(success) => Ok((id, success)),
            Err(e) => Err(Failed::new(e, id, capture.take())),
        }
    }

    /// Answer `generate` as a stream of canonical events. It is returned once the
    /// answer has its first content (a failure before it fails over, invisibly);
    /// its attempts, usage and cost are known once it has ended.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use switchyard_core::embed::{Gateway, Generate, Model, Provider};
    /// use switchyard_core::protocol::{Delta, Message, Request, Role, StreamEvent};
    ///
    /// let gateway = Gateway::builder()
    ///     .provider("local", Provider::mock())
    ///     .model(Model::new("echo").deployment("local", "echo-1"))
    ///     .build()?;
    /// let request = Request {
    ///     model: "echo".into(),
    ///     messages: vec![Message::text(Role::User, "hello there")],
    ///     ..Request::default()
    /// };
    /// let mut stream = gateway.stream(Generate::new(request)).await?;
    /// assert_eq!((stream.provider.as_str(), stream.upstream_model.as_str()), ("local", "echo-1"));
    /// assert!(stream.attempts().is_none(), "not before the end");
    ///
    /// let mut text = String::new();
    /// while let Some(event) = stream.next().await {
    ///     if let StreamEvent::Delta { delta: Delta::Text { text: piece }, .. } = event? {
    ///         text.push_str(&piece);
    ///     }
    /// }
    /// assert_eq!(text, "echo: hello there");
    /// let attempts = stream.attempts().unwrap_or_default();
    /// assert_eq!((attempts.len(), attempts[0].outcome.as_str()), (1, "ok"));
    /// assert!(stream.usage().is_some_and(|u| u.output_tokens.is_some()));
    /// assert_eq!(stream.cost_usd(), None, "echo has no price");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn stream(&self, mut generate: Generate) -> Result<GenerationStream, Failed> {
        generate.request.stream = true;
        let (id, success) = self.run(generate).await?;
        match success.delivery {
            Delivery::Stream(chunks) if chunks.passthrough.is_none() => Ok(GenerationStream {
                request_id: id,
                provider: success.served.provider,
                model: success.served.model,
                upstream_model: success.served.upstream_model,
                descriptor: success.descriptor,
                dropped_tools: success.served.dropped_tools,
                chunks,
                ready: VecDeque::new(),
                record: None,
            }),
            _ => Err(Failed::new(wrong_form(), id, None)),
        }
    }

    async fn inbound(&self, generate: Generate, id: String) -> Result<Inbound, GatewayError> {
        let Generate { mut request, routing, caller, project, id: _ } = generate;
        let snapshot = self.inner.snapshot();
        snapshot.apply_default_model(&mut request);
        let intent = crate::intent::settle_reasoning(&mut request);
        for model in std::iter::once(&request.model).chain(&routing.fallbacks) {
            check_model_id(model)?;
        }
        let byok = match &self.credentials {
            Some(resolver) => snapshot
                .catalog
                .providers
                .iter()
                .filter_map(|p| resolver.resolve(&p.name, &caller).map(|k| (p.name.clone(), k)))
                .collect(),
            None => Vec::new(),
        };
        // The records' client format: a library caller has none of the wire ones,
        // and canonical answers are never encoded into it.
        // Attributed as at the edge, without a directory: a signed-in caller names
        // one of their own projects.
        let (project, project_name) = attribute(&caller, project.as_deref(), &NoDirectory).await?;
        let mut inbound = Inbound::new(id, ClientFormat::OpenAiChat, request, caller);
        inbound.intent = intent;
        inbound.project = project;
        inbound.project_name = project_name;
        inbound.byok = byok;
        inbound.output = Output::Canonical;
        inbound.limits = routing;
        Ok(inbound)
    }
}

/// `lib_` + 24 hex digits: unique, sortable by time like the edge's ids.
/// A caller's own request id, if records and logs can carry it as it is.
fn checked_id(id: &str) -> Result<String, GatewayError> {
    let ok = |b: u8| b.is_ascii_alphanumeric() || b"-_.:".contains(&b);
    if (1..=128).contains(&id.len()) && id.bytes().all(ok) {
        return Ok(id.to_owned());
    }
    Err(GatewayError::new(
        switchyard_protocol::ErrorCode::InvalidRequest,
        format!(
            "request id {:?}: 1-128 ASCII letters, digits and - _ . :",
            crate::util::excerpt(id)
        ),
    ))
}

fn request_id() -> String {
    format!(
        "lib_{:012x}{:012x}",
        crate::clock::UnixMs::now().0,
        crate::clock::unique() & 0xffff_ffff_ffff
    )
}
