//! The execution pipeline after parsing, one stage a file:
//!
//! | stage | file |
//! |---|---|
//! | plan: resolve, authorize, filter, order | `prepare.rs` |
//! | admit: limits and budgets (reserve, later settle) | `admit.rs` |
//! | attempt loop: credential, breaker, translate, send, classify | `attempt.rs` (decisions in `policy.rs`) |
//! | deliver: whole answers; streams' commit point and pump | `deliver.rs`, `stream.rs` |
//! | meter and record, exactly once | `deliver.rs`, `guard.rs` |
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
use serde_json::Value;
use switchyard_protocol::{
    ClientFormat, ErrorKind, Part, Request, Response, SseEvent, StreamEncoder, StreamEvent, Usage,
    Wire, openai_chat, sse, util,
};
use tokio::sync::mpsc;

use crate::access::{self, Principal};
use crate::breaker::{Clearance, CredentialKey, Outcome, Permit};
use crate::catalog::{AttemptPolicy, Candidate, Plan, ProviderKind, Scope, Strategy};
use crate::clock::UnixMs;
use crate::error::GatewayError;
use crate::filter::{self, Hints};
use crate::record::{AttemptRecord, RequestRecord, SharedSink, cost};
use crate::runtime::{InFlightGuard, Runtime};
use crate::state::{Admission, Ask, Reservation};
use crate::strategy::{self, View};
use crate::upstream::{self, Failure, Outgoing, RawBody, Source};
use crate::util::{Date, Redactor, Secret};
use crate::{Snapshot, continuity, estimate, mock};

/// Bounded channel between the stream pump and the client connection: a slow client
/// slows the upstream read (back-pressure) instead of growing a buffer.
const STREAM_CHANNEL: usize = 32;

/// A parsed client request, ready for the pipeline.
#[derive(Debug)]
pub struct Inbound {
    /// Request id (also returned to the client).
    pub id: String,
    pub received: Instant,
    /// Unix milliseconds at arrival.
    pub time_ms: u64,
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
    /// Log prompt and completion text up to this many bytes (the project opted in).
    pub content_cap: Option<usize>,
    /// Encoded in `format` (the HTTP edge), or canonical (a library caller).
    pub output: Output,
    /// This request's own fallbacks and bounds (a library caller's).
    pub limits: RequestRouting,
}

/// What the pipeline answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// Bytes in the client's format ([`Inbound::format`]).
    #[default]
    Client,
    /// The canonical response, or stream of canonical events.
    Canonical,
}

/// A request's own routing: fallbacks after the model it names, and bounds that
/// replace the configuration's (None: the configuration's), within the hard
/// maximums (32 fallbacks, 5 retries, 128 attempts).
#[derive(Debug, Clone, Default, PartialEq)]
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

/// Which deployment answered.
#[derive(Debug, Clone)]
pub struct Served {
    pub provider: String,
    /// The catalog id the client was served.
    pub model: String,
    pub upstream_model: String,
}

/// The error for a delivery in the form its caller did not ask for (the edge asks
/// for bytes in its client's format, a library caller for canonical answers): a
/// bug, reported as such rather than a panic.
pub fn wrong_form() -> GatewayError {
    GatewayError::new(
        500,
        ErrorKind::Upstream,
        "internal_error",
        "the pipeline answered in the wrong form",
    )
}

#[derive(Debug)]
pub enum Delivery {
    /// A complete JSON body in the client's format.
    Whole(Bytes),
    /// SSE bytes in the client's format, produced as the upstream streams.
    Stream(mpsc::Receiver<Bytes>),
    /// The canonical answer ([`Output::Canonical`]), and its record.
    Response { response: Box<Response>, record: Box<RequestRecord> },
    /// Canonical events as the upstream streams ([`Output::Canonical`]); a failure
    /// after the first content ends it with an error.
    Events(mpsc::Receiver<Result<StreamEvent, GatewayError>>),
}

#[derive(Debug)]
pub struct Success {
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    pub delivery: Delivery,
}

mod admit;
mod attempt;
mod count_tokens;
mod deliver;
mod guard;
mod policy;
mod prepare;
mod stream;

use admit::*;
use attempt::*;
use deliver::*;
use guard::*;
use policy::*;
use stream::*;

pub use attempt::credential_key;
pub use policy::failure_error;

impl Snapshot {
    /// Run the whole pipeline for a parsed request: resolve, filter, order, attempt.
    pub async fn execute(
        self: &Arc<Self>,
        mut inbound: Inbound,
        runtime: &Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<Success, GatewayError> {
        // Signed thinking a Chat client could not carry back, put back in front of
        // the tool calls it preceded (a Claude upstream refuses the loop without).
        if continuity::needs_store(inbound.format)
            && !continuity::wanted(&inbound.request).is_empty()
        {
            let request = Arc::make_mut(&mut inbound.request);
            continuity::restore_from(runtime.continuity.as_ref(), request).await;
        }
        let mut guard = RecordGuard {
            rec: RequestRecord {
                id: inbound.id.clone(),
                time_ms: inbound.time_ms,
                key_prefix: inbound.principal.key_prefix.clone(),
                user: inbound.principal.user_id.clone(),
                project: inbound.project.clone(),
                client_format: inbound.format.as_str().into(),
                requested_model: inbound.request.model.clone(),
                stream: inbound.request.stream,
                session_id: inbound.request.extras.session_id.clone(),
                ..RequestRecord::default()
            },
            sink,
            started: inbound.received,
            done: false,
            reservation: None,
        };
        let plan = match self.prepare(&inbound, runtime, &mut guard.rec) {
            Ok(p) => p,
            Err(err) => {
                metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
                guard.finish(err.status(), Some(err.code()));
                return Err(err);
            }
        };
        // Gemini needs each call's signature back; clients have no field for it.
        if plan.candidates.iter().any(|c| c.provider.wire() == Some(Wire::Gemini))
            && continuity::lacks_signatures(&inbound.request)
        {
            let request = Arc::make_mut(&mut inbound.request);
            continuity::restore_signatures(runtime.continuity.as_ref(), request).await;
        }
        if let Some(admission) = &runtime.admission {
            match admit(admission.as_ref(), &inbound, &plan).await {
                Ok(reservation) => guard.reservation = Some((Arc::clone(admission), reservation)),
                Err(err) => {
                    metrics::counter!("gateway_requests_total", "format" => inbound.format.as_str(), "status" => err.status().to_string()).increment(1);
                    guard.finish(err.status(), Some(err.code()));
                    return Err(err);
                }
            }
        }
        self.attempt_loop(inbound, plan, runtime, guard).await
    }
}
