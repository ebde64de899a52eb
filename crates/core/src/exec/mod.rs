//! The execution pipeline after parsing, one stage a file. `Snapshot::run` reads
//! as the request's path: it plans the request, then hands one per-request
//! context (`Flow`: the snapshot, the runtime, the request, its plan and its
//! record) through the phases, in order.
//!
//! | phase | file |
//! |---|---|
//! | plan: resolve, authorize, filter, order | `prepare.rs` |
//! | affinity: a conversation's turns back to the deployment of the last | `affinity.rs` |
//! | cache: answer from the response cache, or share an identical request's call (in this instance or another) | `cache.rs`, `flight.rs` |
//! | admit: limits and budgets (reserve, later settle; a budget may lower `max_tokens`) | `admit.rs` |
//! | attempt loop: capacity, credential, breaker, translate, send, classify | `attempt.rs` (decisions in `policy.rs`, the queue in `queue.rs`) |
//! | deliver: whole answers; streams' commit point and pump | `deliver.rs`, `stream.rs` |
//! | meter and record, exactly once; settle what admission took | `deliver.rs`, `guard.rs` |
//! | token counts: planned the same way, then each candidate's counting endpoint | `count_tokens.rs` |
//! | requests answered whole by an endpoint of their own: planned among models of their kind, admitted, an attempt loop with no stream | `whole.rs` |
//! | embeddings: batches to each provider's cap, joined in input order | `embeddings.rs` |
//! | images: calls of each provider's most images, joined in order | `images.rs` |
//! | a batch's lines handed to a provider's batch API, and their answers run through again | `batch.rs` |
//!
//! The attempt loop walks the plan's candidates in order. A candidate that fails
//! before anything reached the client is followed by the next one (failover); a
//! request-shaped failure (400/413/422) is answered at once. Streams are held until
//! the first content event, so a failure before it is invisible to the client;
//! after it, the stream ends with an error event in the client's format and no
//! other provider's content is ever spliced in.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use switchyard_protocol::{
    ClientFormat, ErrorCode, ErrorKind, Frame, HostedTool, Part, Request, Response, StreamEvent,
    Usage, Wire, openai_chat, sse, util,
};
use tokio::sync::mpsc;

use crate::access::{self, Principal};
use crate::breaker::{Clearance, CredentialKey, Outcome, Permit};
use crate::catalog::{AttemptPolicy, Candidate, Plan, ProviderKind, Scope, Strategy};
use crate::clock::UnixMs;
use crate::destinations::{Ended, Watch};
use crate::error::GatewayError;
use crate::filter::{self, Hints};
use crate::hosted::{Dropped, ToolDemand};
use crate::record::{AttemptRecord, RequestRecord, SharedSink, cost};
use crate::runtime::{InFlightGuard, Runtime};
use crate::state::{Admission, Ask, Reservation};
use crate::strategy::{self, View};
use crate::upstream::{self, Failure, Outgoing, RawBody, Source, TransportClass};
use crate::util::{Date, Redactor, Secret};
use crate::{Snapshot, continuity, estimate, mock};

/// The descriptor's note that a budget lowered the request's `max_tokens`
/// (`budget_lowered:<scope>:<tokens>`).
const LOWERED: &str = "budget_lowered:";

/// Bounded channel between the stream pump and the client connection: a slow client
/// slows the upstream read (back-pressure) instead of growing a buffer.
const STREAM_CHANNEL: usize = 32;

/// A parsed client request, ready for the pipeline.
#[derive(Debug)]
pub struct Inbound {
    /// Request id (also returned to the client).
    pub id: String,
    /// When it arrived: its deadline and its record's timings count from here.
    pub received: Instant,
    /// Unix milliseconds at arrival.
    pub time_ms: u64,
    /// The format the client speaks (and, at the edge, is answered in).
    pub format: ClientFormat,
    /// Shared, so a stream's pump can keep it without copying the conversation.
    pub request: Arc<Request>,
    /// The client's own body, kept for the same-format fast path.
    pub raw: Option<RawBody>,
    /// Client headers a same-vendor upstream needs (`anthropic-beta`, `anthropic-version`).
    pub forward_headers: Vec<(String, String)>,
    /// The authenticated caller (user, role, groups, key limits).
    pub principal: Principal,
    /// The project the request is attributed to (its id): the
    /// `x-switchyard-project` header (a project's id or name), else the key's
    /// bound project, else the user's primary project.
    pub project: Option<String>,
    /// That project's name, when known (per-project chains may be keyed by it).
    pub project_name: Option<String>,
    /// The caller's own provider keys (BYOK), by provider name, already opened.
    pub byok: Vec<(String, Secret)>,
    /// Routing hints from the request's `switchyard` extension field.
    pub hints: Hints,
    /// The request's intent where it was decided as the request entered
    /// (reasoning effort `auto`): an `auto` model routes by the same decision.
    pub intent: Option<crate::intent::Decision>,
    /// Log prompt and completion text up to this many bytes (the project opted in).
    pub content_cap: Option<usize>,
    /// Whether the caller takes pass-through bytes (the HTTP edge) or canonical
    /// answers only (a library caller).
    pub output: Output,
    /// This request's own fallbacks and bounds (a library caller's).
    pub limits: RequestRouting,
    /// What the request asks of the response cache (`x-switchyard-cache`).
    pub cache: CacheMode,
    /// The conversation's affinity key as the caller names it
    /// (`x-switchyard-affinity`); `None`: derived from the conversation.
    pub affinity: Option<String>,
    /// The client's W3C trace context (`traceparent`, `tracestate`), as far as
    /// it was valid: continued by the request's spans, or passed to upstreams
    /// as it came when no spans are exported.
    pub trace: crate::otel::Incoming,
    /// The batch this request is a line of (`batch_…`): billed at the
    /// catalog's batch prices (`pricing.batch`), and said in its record's
    /// descriptor.
    pub batch: Option<String>,
    /// The line's answer from its provider's batch API
    /// ([`batch::Prefetched`]): planned only on the deployment that answered,
    /// whose attempt is this answer instead of a call.
    pub prefetched: Option<Arc<batch::Prefetched>>,
    /// A whole answer is parsed for the request's exported trace (its finish
    /// reason, and its text with `telemetry.capture_content`), also where it
    /// is forwarded as it came: set by the pipeline.
    pub(crate) trace_answer: bool,
    /// Computed on first use ([`Inbound::input_estimate`]).
    estimate: context::Estimate,
}

/// What the caller takes: the pipeline never encodes, but it forwards an upstream's
/// own bytes only to a caller that speaks their format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// A client of [`Inbound::format`] (the HTTP edge): canonical answers, or the
    /// upstream's bytes where they are already in that format (the fast path).
    #[default]
    Client,
    /// Canonical answers only (a library caller), each with its record.
    Canonical,
}

/// A request's own routing: fallbacks after the model it names, and bounds that
/// replace the configuration's (None: the configuration's), within the hard
/// maximums (32 fallbacks, 5 retries, 128 attempts).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use switchyard_core::embed::{Gateway, Generate, Model, Provider};
/// use switchyard_core::exec::RequestRouting;
/// use switchyard_core::protocol::{Message, Request, Role};
///
/// let gateway = Gateway::builder()
///     // No key variable is read here: `claude` is disabled, so `smart` cannot answer.
///     .provider("claude", Provider::anthropic().key_env("ANTHROPIC_API_KEY").optional())
///     .provider("local", Provider::mock())
///     .model(Model::new("smart").deployment("claude", "claude-sonnet-4-5"))
///     .model(Model::new("echo").deployment("local", "echo-1"))
///     .build()?;
/// let ask = |routing| {
///     let messages = vec![Message::text(Role::User, "hi")];
///     let request = Request { model: "smart".into(), messages, ..Request::default() };
///     Generate::new(request).routing(routing)
/// };
///
/// // This request may fall back to `echo`, and must be answered within 10 s.
/// let routing = RequestRouting::default().fallback("echo").deadline(Duration::from_secs(10));
/// let answer = gateway.generate(ask(routing.clone())).await?;
/// assert_eq!((answer.provider.as_str(), answer.upstream_model.as_str()), ("local", "echo-1"));
/// assert_eq!(answer.model, "smart", "the model asked for, whoever answered");
/// let outcomes: Vec<&str> = answer.attempts.iter().map(|a| a.outcome.as_str()).collect();
/// assert_eq!(outcomes, ["unavailable", "ok"]);
///
/// // Its bounds replace the configuration's: with no fallback allowed, it fails.
/// let strict = routing.max_fallbacks(0);
/// assert!(gateway.generate(ask(strict)).await.is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RequestRouting {
    /// Model ids tried after the requested one's own candidates, in order.
    pub fallbacks: Vec<String>,
    /// The whole request, streaming included.
    pub deadline: Option<Duration>,
    /// One attempt, until the upstream's first byte.
    pub attempt_timeout: Option<Duration>,
    /// Silence allowed in a stream.
    pub idle_timeout: Option<Duration>,
    /// At most this many fallbacks after the first candidate.
    pub max_fallbacks: Option<usize>,
    /// Retries per deployment.
    pub max_retries: Option<u32>,
    /// Attempts sent upstream, all candidates together.
    pub max_attempts: Option<usize>,
}

impl RequestRouting {
    /// Also try `model` after the requested one's own candidates (in the order
    /// given).
    #[must_use]
    pub fn fallback(mut self, model: impl Into<String>) -> Self {
        self.fallbacks.push(model.into());
        self
    }

    /// The whole request must be answered (a stream's first content) within `d`.
    #[must_use]
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// One attempt may wait `d` for the upstream's first byte.
    #[must_use]
    pub fn attempt_timeout(mut self, d: Duration) -> Self {
        self.attempt_timeout = Some(d);
        self
    }

    /// A stream may be silent for `d`.
    #[must_use]
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.idle_timeout = Some(d);
        self
    }

    /// At most `n` fallbacks after the first candidate.
    #[must_use]
    pub fn max_fallbacks(mut self, n: usize) -> Self {
        self.max_fallbacks = Some(n);
        self
    }

    /// At most `n` retries per deployment.
    #[must_use]
    pub fn max_retries(mut self, n: u32) -> Self {
        self.max_retries = Some(n);
        self
    }

    /// At most `n` attempts sent upstream, all candidates together.
    #[must_use]
    pub fn max_attempts(mut self, n: usize) -> Self {
        self.max_attempts = Some(n);
        self
    }
}

/// Which deployment answered.
#[derive(Debug, Clone)]
pub struct Served {
    /// The provider's name.
    pub provider: String,
    /// The catalog id the request resolved to, also when a fallback's deployment
    /// answered.
    pub model: String,
    /// The provider's id for the model.
    pub upstream_model: String,
    /// The hosted tools the request offered that this deployment does not run,
    /// so it was served without them (`web_search`); empty for most requests.
    pub dropped_tools: Vec<String>,
}

/// The error for a delivery in the form its caller did not ask for (the edge asks
/// for bytes in its client's format, a library caller for canonical answers): a
/// bug, reported as such rather than a panic. Its kind stays `Upstream`, as it
/// always was, so OpenAI-format clients keep reading `api_error` (not the
/// `server_error` of `internal_error`'s usual kind).
pub fn wrong_form() -> GatewayError {
    GatewayError::new(ErrorCode::InternalError, "the pipeline answered in the wrong form")
        .with_kind(ErrorKind::Upstream)
}

/// What the pipeline answers with: canonical answers, which the caller encodes
/// into its own format (the HTTP edge) or uses as they are (a library caller), or
/// an upstream's own bytes, tagged with their format, where the client's format is
/// the upstream's (the fast path: never re-encoded).
#[derive(Debug)]
pub enum Delivery {
    /// The canonical answer. `record`: the request's record, for a library caller
    /// ([`Output::Canonical`]); the edge has it written for it and gets none.
    Response {
        /// The answer.
        response: Box<Response>,
        /// The request's record ([`Output::Canonical`] only).
        record: Option<Box<RequestRecord>>,
    },
    /// An upstream's whole body in `format` (the client's), its model renamed to
    /// the one the client asked for.
    Passthrough {
        /// The body's format (the client's own).
        format: ClientFormat,
        /// The body, ready to send.
        body: Bytes,
    },
    /// A stream, produced as the upstream streams.
    Stream(ChunkStream),
}

/// One step of a streamed answer. The last is always [`Chunk::End`]; a channel
/// that closes without it means the pipeline went away (a bug or a shutdown).
#[derive(Debug)]
pub enum Chunk {
    /// Canonical events, in order (a translated stream).
    Events(Vec<StreamEvent>),
    /// Upstream bytes in the stream's pass-through format, whole SSE events as
    /// they arrived (model renamed), ready to go to the client.
    Raw(Bytes),
    /// The upstream is silent: the caller's connection wants a keep-alive (each
    /// format has its own; a library caller ignores it).
    KeepAlive,
    /// The stream is over: `error` when it failed after its first content (the
    /// caller ends it with an error in its format), and the record for a library
    /// caller.
    End {
        /// The failure after the first content; `None`: the stream completed.
        error: Option<GatewayError>,
        /// The request's record ([`Output::Canonical`] only).
        record: Option<Box<RequestRecord>>,
    },
}

/// A streamed answer's chunks. Dropping it cancels the upstream call.
#[derive(Debug)]
pub struct ChunkStream {
    /// `Some(format)`: the content comes as [`Chunk::Raw`] bytes in that format
    /// (the client's own, forwarded); `None`: as canonical [`Chunk::Events`].
    pub passthrough: Option<ClientFormat>,
    rx: mpsc::Receiver<Chunk>,
}

impl ChunkStream {
    pub(crate) fn new(passthrough: Option<ClientFormat>, rx: mpsc::Receiver<Chunk>) -> Self {
        Self { passthrough, rx }
    }

    /// The next chunk; `None` after [`Chunk::End`].
    pub async fn next(&mut self) -> Option<Chunk> {
        self.rx.recv().await
    }

    /// [`ChunkStream::next`], polled (for a `Stream` built on it).
    pub fn poll_next(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<Option<Chunk>> {
        self.rx.poll_recv(cx)
    }
}

/// A request the pipeline answered: who served it and the answer.
#[derive(Debug)]
pub struct Success {
    /// The deployment that answered.
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    /// The request as the pipeline sent it (the caller's encoder reads its tools
    /// and stream options).
    pub request: Arc<Request>,
    /// The answer, whole or streamed.
    pub delivery: Delivery,
    /// The caller's rate limits after this request (`x-ratelimit-*`); `None`:
    /// none apply.
    pub rate: Option<crate::limits::RateStatus>,
    /// How the response cache took part (`x-gateway-cache`); `None`: the
    /// request is not cached.
    pub cache: Option<CacheStatus>,
    /// What routing decided beyond the route's order, as the response's
    /// headers say it (`x-switchyard-intent`, `x-switchyard-structured-output`):
    /// the record's [`RoutingRecord::headline`](crate::record::RoutingRecord::headline).
    pub routing: crate::record::RoutingRecord,
}

impl Success {
    /// An answer the upstream gave now (not the cache's).
    pub(super) fn new(
        served: Served,
        descriptor: String,
        inbound: &Inbound,
        delivery: Delivery,
        rate: Option<crate::limits::RateStatus>,
    ) -> Self {
        let request = Arc::clone(&inbound.request);
        let routing = crate::record::RoutingRecord::default();
        Self { served, descriptor, request, delivery, rate, cache: None, routing }
    }

    /// With the record's routing decisions (the response's headers say them).
    pub(super) fn with_routing(mut self, routing: crate::record::RoutingRecord) -> Self {
        self.routing = routing;
        self
    }
}

mod admit;
mod affinity;
mod attempt;
pub mod batch;
mod cache;
pub mod context;
mod count_tokens;
mod deliver;
mod embeddings;
mod flight;
mod guard;
mod images;
mod jobs;
mod policy;
mod prepare;
mod queue;
mod stream;
mod whole;

use admit::*;
use attempt::*;
use deliver::*;
use guard::*;
use policy::*;
use prepare::Purpose;
use stream::*;

pub use attempt::credential_key;
pub use cache::{CacheMode, CacheStatus};
pub use context::{MAX_MODEL_ID, NoDirectory, Parsed, ProjectDirectory, attribute, check_model_id};
pub use count_tokens::TokenCount;
pub use embeddings::{Embedded, OPERATION as EMBEDDINGS, planned_request};
pub use flight::Flights;
pub use images::{Imaged, OPERATION as IMAGES, planned_image_request};
pub(crate) use jobs::poll_due;
pub use jobs::{JobSubmitted, OPERATION as JOBS, planned_job_request};
pub(crate) use policy::failure_error;

impl Snapshot {
    /// Run the whole pipeline for a parsed request: resolve, filter, order, attempt.
    /// The future owns what it needs (`'static`), so it may be spawned.
    //
    // Not an `async fn`, and neither are the layers above it (`Gateway::execute`,
    // the HTTP edge's `answer`): an `async fn` keeps its arguments twice for its
    // whole life (as passed, and as moved into its body), and each layer is moved
    // whole into the one above when it starts. Built synchronously, the pipeline's
    // future holds the request once, in `run`.
    pub fn execute(
        self: Arc<Self>,
        inbound: Inbound,
        runtime: Arc<Runtime>,
        sink: SharedSink,
    ) -> impl Future<Output = Result<Success, GatewayError>> + Send + 'static {
        self.run(inbound, runtime, sink, None)
    }

    /// The pipeline for `inbound` as it is; `purpose` (`compaction`) is noted in
    /// the route descriptor, so the record says what the request was for.
    #[allow(
        clippy::manual_async_fn,
        reason = "an async fn would hold `inbound` twice (see `execute`)"
    )]
    pub(crate) fn run(
        self: Arc<Self>,
        mut inbound: Inbound,
        runtime: Arc<Runtime>,
        sink: SharedSink,
        purpose: Option<&'static str>,
    ) -> impl Future<Output = Result<Success, GatewayError>> + Send + 'static {
        async move {
            // Compacting is a summarisation request of its own (`crate::compaction`,
            // which comes back here with a `purpose`); boxed, so that every other
            // request's future stays its own size.
            if purpose.is_none() && inbound.request.compaction.is_some() {
                return crate::compaction::execute(self, inbound, runtime, sink).await;
            }
            // Signed thinking a Chat client could not carry back, put back in front
            // of the tool calls it preceded (a Claude upstream refuses the loop
            // without).
            if continuity::needs_store(inbound.format)
                && !continuity::wanted(&inbound.request).is_empty()
            {
                let request = Arc::make_mut(&mut inbound.request);
                continuity::restore_from(runtime.continuity.as_ref(), request).await;
            }
            // A bare `auto` model with a model-based classifier: asked before
            // planning, where the rules leave it a say.
            let mut classified = None;
            if purpose.is_none()
                && let Some(spec) = self.catalog.intent_classifier.clone()
                && self.catalog.classifies(&inbound.request.model)
            {
                let rules = match inbound.intent.take() {
                    Some(d) => d,
                    None => crate::intent::classify(&inbound.request),
                };
                if crate::intent::model::asks(&rules) {
                    let asking = crate::intent::model::Asking::of(&inbound);
                    let (decided, record) = crate::intent::model::consult(
                        Arc::clone(&self),
                        asking,
                        Arc::clone(&runtime),
                        Arc::clone(&sink),
                        spec,
                        rules,
                    )
                    .await;
                    inbound.intent = Some(decided);
                    classified = Some(record);
                } else {
                    inbound.intent = Some(rules);
                }
            }
            let metrics = self.catalog.settings.metrics;
            let mut guard = RecordGuard::open(&inbound, sink, metrics);
            guard.rec.routing.classifier = classified;
            if let (Some(traces), Some(config)) = (&runtime.traces, &self.catalog.telemetry) {
                let trace = crate::otel::RequestTrace::begin(
                    &inbound.trace,
                    traces,
                    config,
                    &inbound.request,
                    inbound.received,
                );
                inbound.trace_answer = trace.sampled;
                guard.trace = Some(trace);
            }
            // Plan: resolve, authorize, filter and order the candidates.
            let mut plan = match self.prepare(&inbound, &runtime, &mut guard.rec) {
                Ok(p) => p,
                Err(err) => return Err(guard.fail(inbound.format, err)),
            };
            plan.descriptor.extend(purpose.map(str::to_owned));
            // Boxed: the later phases' futures hold the request by pointer, not
            // 2.4 KB copied into each of their states.
            let mut flow = Box::new(Flow { snapshot: self, runtime, inbound, plan, guard });
            flow.restore_signatures().await;
            // Affinity: a conversation's turns go back where the last one went.
            let pin = affinity::steer(&flow.inbound, &mut flow.plan, &flow.runtime).await;
            let runtime = Arc::clone(&flow.runtime);
            // The cache, admission, the attempt loop and delivery.
            let answered = flow.answer(purpose).await;
            if let (Some(pin), Ok(success)) = (pin, &answered) {
                affinity::remember(pin, &success.served, &runtime).await;
            }
            answered
        }
    }
}

/// One request on its way through the pipeline, made once it is planned: what
/// every later phase reads and writes (pingora's per-request context). Its
/// phases, in order: [`Flow::answer`] (the cache, `cache.rs`), admission
/// ([`Flow::admit_and_attempt`], `admit.rs`), the attempt loop
/// ([`Flow::attempt_loop`], `attempt.rs`) and delivery (`deliver.rs`; a
/// stream's pump, `stream.rs`). Its record is written exactly once, whatever
/// happens ([`RecordGuard`]).
struct Flow {
    /// The configuration the request runs under, whole: a reload while it runs
    /// changes nothing for it.
    snapshot: Arc<Snapshot>,
    /// The state shared with other requests: health, limits, caches.
    runtime: Arc<Runtime>,
    inbound: Inbound,
    plan: Plan,
    guard: RecordGuard,
}

/// Whether a candidate's wire needs each tool call's signature back (Gemini),
/// which clients have no field for: the gateway restores them before sending.
fn needs_call_signatures(plan: &Plan) -> bool {
    plan.candidates
        .iter()
        .filter_map(|c| c.provider.wire())
        .any(|wire| wire.behaviour().needs_call_signatures())
}

impl Flow {
    /// Gemini needs each call's signature back; clients have no field for it.
    async fn restore_signatures(&mut self) {
        if needs_call_signatures(&self.plan) && continuity::lacks_signatures(&self.inbound.request)
        {
            let request = Arc::make_mut(&mut self.inbound.request);
            continuity::restore_signatures(self.runtime.continuity.as_ref(), request).await;
        }
    }

    /// Answered from the cache, by an identical request's upstream call, or by
    /// admission and the attempt loop.
    async fn answer(mut self: Box<Self>, purpose: Option<&str>) -> Result<Success, GatewayError> {
        let Some(keyed) = cache::keyed(&self.inbound, &self.plan, purpose) else {
            return self.admit_and_attempt().await;
        };
        match self.cached(keyed).await {
            Ok(answered) => answered,
            Err(mut flow) => flow.admit_and_attempt().await.map(|mut success| {
                success.cache = Some(CacheStatus::Miss);
                success
            }),
        }
    }

    /// Admission (a budget may lower `max_tokens` first), then the attempt loop.
    async fn admit_and_attempt(&mut self) -> Result<Success, GatewayError> {
        let Flow { snapshot, runtime, inbound, plan, guard } = self;
        if let Some(admission) = &runtime.admission {
            if let Some((scope, n)) =
                lower_to_budget(admission.as_ref(), snapshot, inbound, plan).await
            {
                plan.descriptor.push(format!("{LOWERED}{scope}:{n}"));
            }
            match admit(admission.as_ref(), snapshot, inbound, plan).await {
                Ok(reservation) => {
                    // A warn-mode budget passed: said in the record.
                    for scope in &reservation.over_budget {
                        plan.descriptor.push(format!("budget_over:{scope}"));
                    }
                    guard.reservation = Some((Arc::clone(admission), reservation));
                }
                Err(err) => return Err(guard.fail(inbound.format, err)),
            }
        }
        self.attempt_loop().await
    }
}
