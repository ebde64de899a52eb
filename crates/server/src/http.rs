//! The generation endpoints: one handler shape for every client format.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::FutureExt;
use switchyard_core::exec::CacheMode;
use switchyard_core::limits::RateStatus;
use switchyard_core::util::excerpt;
use switchyard_core::{Delivery, GatewayError, Inbound, Success};
use switchyard_protocol::{ClientFormat, ErrorCode, responses};

use crate::identity::Caller;
use crate::{AppState, encode, ids, limits};

pub const HEADER_PROVIDER: &str = "x-gateway-provider";
pub const HEADER_MODEL: &str = "x-gateway-model";
pub const HEADER_REQUEST_ID: &str = "x-request-id";
pub const HEADER_DESCRIPTOR: &str = "x-gateway-route";
/// Names the conversation for prompt-cache affinity (its turns go to the
/// deployment that served the first), instead of its derived key.
pub const HEADER_AFFINITY: &str = "x-switchyard-affinity";
/// Attributes the request to a project (per-project routing chains).
pub const HEADER_PROJECT: &str = "x-switchyard-project";
/// The hosted tools the request offered that the answering deployment does not
/// run, comma-separated (`web_search`): it was served without them.
pub const HEADER_DROPPED_TOOLS: &str = "x-switchyard-dropped-tools";
/// What the request asks of the response cache: `skip` or `refresh`.
pub const HEADER_CACHE_MODE: &str = "x-switchyard-cache";
/// How the response cache took part: `hit`, `miss` or `coalesced` (absent: the
/// request is not cached).
pub const HEADER_CACHE: &str = "x-gateway-cache";
/// How the answering attempt asked for the request's JSON schema: `native`
/// (the provider's structured output) or `prompted` (in the system prompt,
/// the answer checked by the gateway); absent: the request has no schema.
pub const HEADER_STRUCTURED_OUTPUT: &str = "x-switchyard-structured-output";
/// An `auto` model's class and the rule that decided it: `code; rule=tool_loop`.
pub const HEADER_INTENT: &str = "x-switchyard-intent";

/// What a Gemini client says in its URL rather than its body: the model, and
/// whether to stream (`:streamGenerateContent`). Other formats say it in the body.
#[derive(Debug, Default, Clone)]
pub(crate) struct FromUrl {
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
}

/// Client headers a same-vendor upstream needs.
// Header names, not strings: a `HeaderMap` lookup by `&str` parses and hashes the
// name anew each time (measured: about 1,400 instructions a request for these).
const FORWARDED: [HeaderName; 2] =
    [HeaderName::from_static("anthropic-beta"), HeaderName::from_static("anthropic-version")];
const PROJECT: HeaderName = HeaderName::from_static(HEADER_PROJECT);
const AFFINITY: HeaderName = HeaderName::from_static(HEADER_AFFINITY);
const PROVIDER: HeaderName = HeaderName::from_static(HEADER_PROVIDER);
const MODEL: HeaderName = HeaderName::from_static(HEADER_MODEL);
const REQUEST_ID: HeaderName = HeaderName::from_static(HEADER_REQUEST_ID);
const DESCRIPTOR: HeaderName = HeaderName::from_static(HEADER_DESCRIPTOR);
const DROPPED_TOOLS: HeaderName = HeaderName::from_static(HEADER_DROPPED_TOOLS);
const CACHE_MODE: HeaderName = HeaderName::from_static(HEADER_CACHE_MODE);
const CACHE: HeaderName = HeaderName::from_static(HEADER_CACHE);
const STRUCTURED_OUTPUT: HeaderName = HeaderName::from_static(HEADER_STRUCTURED_OUTPUT);
const INTENT: HeaderName = HeaderName::from_static(HEADER_INTENT);
const ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// An error in the caller's format, with the request id.
pub fn error_response(format: ClientFormat, err: &GatewayError, request_id: &str) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = format.error_json(err.body()).to_string();
    let mut resp = (status, [(CONTENT_TYPE, JSON)], body).into_response();
    if let Ok(v) = HeaderValue::from_str(request_id) {
        resp.headers_mut().insert(REQUEST_ID, v);
    }
    if let Some(after) = err.retry_after() {
        // Whole seconds, rounded up: a client that waits this long will fit.
        let secs = after.as_millis().div_ceil(1000).max(1);
        resp.headers_mut().insert(RETRY_AFTER, HeaderValue::from(secs as u64));
    }
    resp
}

/// OpenAI's `x-ratelimit-*` headers, requests then tokens: limit, remaining, reset.
const RATE: [[HeaderName; 3]; 2] = [
    [
        HeaderName::from_static("x-ratelimit-limit-requests"),
        HeaderName::from_static("x-ratelimit-remaining-requests"),
        HeaderName::from_static("x-ratelimit-reset-requests"),
    ],
    [
        HeaderName::from_static("x-ratelimit-limit-tokens"),
        HeaderName::from_static("x-ratelimit-remaining-tokens"),
        HeaderName::from_static("x-ratelimit-reset-tokens"),
    ],
];

/// The gateway's headers on an answer: who served it, the request's id, the
/// route descriptor, and the caller's rate limits (`x-ratelimit-*`). Empty
/// values are left out.
pub(crate) fn served_headers(
    h: &mut HeaderMap,
    served: &switchyard_core::Served,
    id: &str,
    descriptor: &str,
    rate: Option<&RateStatus>,
) {
    for (name, value) in [
        (&PROVIDER, served.provider.as_str()),
        (&MODEL, served.model.as_str()),
        (&REQUEST_ID, id),
        (&DESCRIPTOR, descriptor),
    ] {
        if let Ok(v) = HeaderValue::from_str(value)
            && !value.is_empty()
        {
            h.insert(name.clone(), v);
        }
    }
    if let Some(rate) = rate {
        rate_headers(h, rate);
    }
}

/// The `x-ratelimit-*` headers of the caller's most restrictive request and
/// token limits (reset: until the limit is whole again, as OpenAI's `6s`).
fn rate_headers(h: &mut HeaderMap, rate: &RateStatus) {
    for (level, [limit, remaining, reset]) in [rate.requests, rate.tokens].into_iter().zip(RATE) {
        let Some(level) = level else { continue };
        h.insert(limit, HeaderValue::from(level.limit));
        h.insert(remaining, HeaderValue::from(level.remaining));
        if let Ok(v) = HeaderValue::from_str(&format!("{}s", level.reset_ms.div_ceil(1000))) {
            h.insert(reset, v);
        }
    }
}

// The handlers are plain functions returning `generate`'s future: an `async fn`
// here would be one more layer holding the request's headers twice.
pub fn chat_completions(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> impl Future<Output = Response> + Send {
    generate(state, headers, body, ClientFormat::OpenAiChat, FromUrl::default())
}

/// `POST /v1/responses/compact`: the conversation compacted into one item (see
/// `switchyard_protocol::compaction`), answered whole.
pub async fn responses_compact(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let format = ClientFormat::OpenAiResponses;
    let id = ids::request_id();
    let inbound =
        match ingest_as(&state, &headers, body, format, &id, Parse::Compact, &FromUrl::default())
            .await
        {
            Ok(i) => i,
            Err(e) => return error_response(format, &e, &id),
        };
    answer(&state, inbound, format, &id).await
}

pub fn messages(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> impl Future<Output = Response> + Send {
    generate(state, headers, body, ClientFormat::Anthropic, FromUrl::default())
}

pub async fn not_found(headers: HeaderMap, uri: axum::http::Uri) -> Response {
    // Only the path is named: a Gemini client may carry its key in the query.
    let err =
        GatewayError::new(ErrorCode::NotFound, format!("no endpoint {}", excerpt(uri.path())));
    error_response(format_of(&headers, uri.path()), &err, &ids::request_id())
}

/// The caller's format guessed from its path and headers, for an answer given
/// before any endpoint has read the request (no such endpoint, a refused browser).
pub(crate) fn format_of(headers: &HeaderMap, path: &str) -> ClientFormat {
    if path.starts_with("/v1beta/") || headers.contains_key("x-goog-api-key") {
        ClientFormat::Gemini
    } else if headers.contains_key("anthropic-version") || headers.contains_key("x-api-key") {
        ClientFormat::Anthropic
    } else {
        ClientFormat::OpenAiChat
    }
}

/// How a body is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Parse {
    /// As its format's generation request.
    Generate,
    /// As a `/v1/responses/compact` body.
    Compact,
}

/// Authenticate, read within limits, parse; shared by every POST endpoint.
pub(crate) async fn ingest(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    format: ClientFormat,
    id: &str,
    url: &FromUrl,
) -> Result<Inbound, GatewayError> {
    ingest_as(state, headers, body, format, id, Parse::Generate, url).await
}

async fn ingest_as(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    format: ClientFormat,
    id: &str,
    parse: Parse,
    url: &FromUrl,
) -> Result<Inbound, GatewayError> {
    let received = Instant::now();
    let max_body_bytes = state.gateway.snapshot().catalog.settings.max_body_bytes;
    let caller = state.identity.authenticate(headers).await?;
    let bytes = limits::read_body(body, max_body_bytes).await?;
    let mut inbound =
        inbound(state, headers, caller, bytes.clone(), format, id, received, url).await?;
    if parse == Parse::Compact {
        // Read again for what the answer keeps (the user's messages, as sent):
        // compacting is rare, the body already passed the limits.
        let compact =
            responses::parse_compact_request(&bytes, state.gateway.runtime.seal.as_deref())
                .map_err(|e| GatewayError::new(ErrorCode::InvalidRequest, e.to_string()))?;
        let request = Arc::make_mut(&mut inbound.request);
        request.compaction = compact.compaction;
        request.stream = false;
    }
    Ok(inbound)
}

/// Everything after authentication and reading the body: limits, parsing, routing
/// hints, project attribution. The HTTP endpoints and each WebSocket turn build
/// their request here, so both reach the pipeline as the same [`Inbound`].
#[allow(clippy::too_many_arguments)]
pub(crate) async fn inbound(
    state: &AppState,
    headers: &HeaderMap,
    caller: Caller,
    bytes: Bytes,
    format: ClientFormat,
    id: &str,
    received: Instant,
    url: &FromUrl,
) -> Result<Inbound, GatewayError> {
    let mut parsed = state.gateway.snapshot().parse_body(
        format,
        bytes,
        state.gateway.runtime.seal.as_deref(),
    )?;
    if let Some(model) = &url.model {
        switchyard_core::exec::check_model_id(model)?;
        parsed.request.model.clone_from(model);
        parsed.request.stream = url.stream;
    }
    attach(state, headers, caller, parsed, format, id, received).await
}

/// The request of an endpoint answered whole (embeddings, images): the
/// caller authenticated, the body read within the limits and `parse`d (a body
/// it refuses is 400, named), the model defaulted and checked (`model`: where
/// the request names it), then planned as `planned` has it with the caller's
/// context. The request comes back with its [`Inbound`].
#[allow(clippy::too_many_arguments)]
pub(crate) async fn whole_request<R>(
    state: &AppState,
    headers: &HeaderMap,
    payload: Payload,
    format: ClientFormat,
    id: &str,
    parse: impl FnOnce(&[u8]) -> Result<R, switchyard_protocol::ProtocolError>,
    model: fn(&mut R) -> &mut String,
    planned: fn(&R) -> switchyard_protocol::Request,
) -> Result<(Inbound, R), GatewayError> {
    let received = Instant::now();
    let snapshot = state.gateway.snapshot();
    let (caller, bytes, batch) = match payload {
        Payload::Http(body) => {
            let caller = state.identity.authenticate(headers).await?;
            (caller, limits::read_body(body, snapshot.catalog.settings.max_body_bytes).await?, None)
        }
        Payload::Line { caller, bytes, batch } => (*caller, bytes, Some(batch)),
    };
    snapshot.check_json_bounds(&bytes)?;
    let req = parse(&bytes).map_err(refused)?;
    let mut inbound =
        whole_parsed(state, headers, caller, req, format, id, model, planned, received).await?;
    inbound.0.batch = batch;
    Ok(inbound)
}

/// A request body the gateway refuses: unsupported, or not valid.
pub(crate) fn refused(e: switchyard_protocol::ProtocolError) -> GatewayError {
    let code = match e {
        switchyard_protocol::ProtocolError::Unsupported(_) => ErrorCode::UnsupportedRequest,
        _ => ErrorCode::InvalidRequest,
    };
    GatewayError::new(code, e.to_string())
}

/// [`whole_request`] once the request is read: the model defaulted and
/// checked, planned with the caller's context (a multipart form's request
/// comes here from its own reading).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn whole_parsed<R>(
    state: &AppState,
    headers: &HeaderMap,
    caller: Caller,
    mut req: R,
    format: ClientFormat,
    id: &str,
    model: fn(&mut R) -> &mut String,
    planned: fn(&R) -> switchyard_protocol::Request,
    received: Instant,
) -> Result<(Inbound, R), GatewayError> {
    let snapshot = state.gateway.snapshot();
    let named = model(&mut req);
    if named.is_empty()
        && let Some(default) = &snapshot.catalog.settings.default_model
    {
        named.clone_from(default);
    }
    if named.is_empty() {
        return Err(GatewayError::new(ErrorCode::ModelRequired, "model: required"));
    }
    switchyard_core::exec::check_model_id(named)?;
    let parsed = switchyard_core::exec::Parsed {
        request: planned(&req),
        raw: None,
        hints: Default::default(),
        intent: None,
    };
    let inbound = attach(state, headers, caller, parsed, format, id, received).await?;
    Ok((inbound, req))
}

/// What a request endpoint answered whole reads: an HTTP request's body
/// (its caller authenticated from its headers), or a batch's line (its
/// caller resolved when the batch runs, its body in hand).
pub(crate) enum Payload {
    Http(Body),
    Line { caller: Box<Caller>, bytes: Bytes, batch: String },
}

/// A parsed request with its caller's context: the project it is attributed
/// to, its caller keys, cache mode, affinity and trace context, from the
/// headers. Generations and embeddings alike.
pub(crate) async fn attach(
    state: &AppState,
    headers: &HeaderMap,
    caller: Caller,
    parsed: switchyard_core::exec::Parsed,
    format: ClientFormat,
    id: &str,
    received: Instant,
) -> Result<Inbound, GatewayError> {
    let named = match headers.get(&PROJECT).map(|v| v.to_str()) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(_)) => {
            return Err(GatewayError::new(
                ErrorCode::InvalidProject,
                format!("{HEADER_PROJECT}: expected 1-128 printable characters"),
            ));
        }
    };
    let cache = match headers.get(&CACHE_MODE) {
        None => CacheMode::Use,
        Some(v) => v.to_str().ok().and_then(CacheMode::parse).ok_or_else(|| {
            GatewayError::new(
                ErrorCode::InvalidRequest,
                format!("{HEADER_CACHE_MODE}: expected skip or refresh"),
            )
        })?,
    };
    let affinity = match headers.get(&AFFINITY).map(|v| v.to_str()) {
        None => None,
        Some(Ok(v)) if !v.is_empty() && v.len() <= 256 => Some(v.to_owned()),
        Some(_) => {
            return Err(GatewayError::new(
                ErrorCode::InvalidRequest,
                format!("{HEADER_AFFINITY}: expected 1-256 printable characters"),
            ));
        }
    };
    let principal = caller.principal;
    let (project, project_name) =
        switchyard_core::exec::attribute(&principal, named, &state.identity).await?;
    let content_cap = state.identity.content_cap(project.as_deref()).await;
    let forward_headers = FORWARDED
        .iter()
        .filter_map(|name| {
            let v = headers.get(name)?.to_str().ok()?;
            Some((name.as_str().to_owned(), v.to_owned()))
        })
        .collect();
    let mut inbound = Inbound::from_body(id.to_owned(), format, parsed, principal);
    inbound.received = received;
    inbound.forward_headers = forward_headers;
    inbound.project = project;
    inbound.project_name = project_name;
    inbound.byok = caller.byok;
    inbound.affinity = affinity;
    inbound.content_cap = content_cap;
    inbound.cache = cache;
    inbound.trace = trace_context(headers);
    Ok(inbound)
}

/// The client's W3C trace context. Two `traceparent` headers make it invalid
/// (the spec); several `tracestate` headers are one list.
fn trace_context(headers: &HeaderMap) -> switchyard_core::otel::Incoming {
    let mut parents = headers.get_all("traceparent").iter();
    let parent = match (parents.next(), parents.next()) {
        (Some(one), None) => one.to_str().ok(),
        _ => None,
    };
    let states: Vec<&str> =
        headers.get_all("tracestate").iter().filter_map(|v| v.to_str().ok()).collect();
    let state = (!states.is_empty()).then(|| states.join(","));
    switchyard_core::otel::Incoming::from_headers(parent, state.as_deref())
}

pub(crate) async fn generate(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
    format: ClientFormat,
    url: FromUrl,
) -> Response {
    let id = ids::request_id();
    let inbound = match ingest(&state, &headers, body, format, &id, &url).await {
        Ok(i) => i,
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "request refused");
            return error_response(format, &e, &id);
        }
    };
    answer(&state, inbound, format, &id).await
}

/// Run a parsed request and answer it: its body whole or streamed, the gateway headers.
// Not an `async fn` (see `Snapshot::execute`), nor an `async` block awaiting the
// pipeline's future (which would hold it twice: as captured, and as awaited):
// the future is built here and mapped in place.
pub(crate) fn answer<'a>(
    state: &'a AppState,
    inbound: Inbound,
    format: ClientFormat,
    id: &'a str,
) -> impl Future<Output = Response> + Send + 'a {
    state.gateway.execute(inbound).map(move |executed| respond(state, executed, format, id))
}

/// The response for the pipeline's outcome.
fn respond(
    state: &AppState,
    executed: Result<Success, GatewayError>,
    format: ClientFormat,
    id: &str,
) -> Response {
    let success = match executed {
        Err(e) => return error_response(format, &e, id),
        Ok(success) => success,
    };
    let seal = state.gateway.runtime.seal.clone();
    let mut resp = match success.delivery {
        Delivery::Passthrough { body, .. } => ([(CONTENT_TYPE, JSON)], body).into_response(),
        Delivery::Response { mut response, .. } => {
            if let Some(named) = encode::response_id(format, id) {
                response.id = named;
            }
            let body = encode::whole(format, &response, &success.request, seal.as_deref());
            ([(CONTENT_TYPE, JSON)], body).into_response()
        }
        Delivery::Stream(stream) => {
            let writer = encode::StreamWriter::new(format, &success.request, seal, &stream)
                .named(encode::response_id(format, id));
            let mut r = encode::sse_body(stream, writer).into_response();
            let h = r.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            h.insert(ACCEL_BUFFERING, HeaderValue::from_static("no"));
            r
        }
    };
    let h = resp.headers_mut();
    served_headers(h, &success.served, id, &success.descriptor, success.rate.as_ref());
    if let Some(cache) = success.cache {
        h.insert(CACHE, HeaderValue::from_static(cache.as_str()));
    }
    if let Some(mode) = &success.routing.structured_output
        && let Ok(v) = HeaderValue::from_str(mode)
    {
        h.insert(STRUCTURED_OUTPUT, v);
    }
    if let Some(intent) = &success.routing.intent {
        let rule = success.routing.intent_rule.as_deref().unwrap_or("");
        if let Ok(v) = HeaderValue::from_str(&format!("{intent}; rule={rule}")) {
            h.insert(INTENT, v);
        }
    }
    // Streams too: the head goes out with the first content, after the decision.
    if !success.served.dropped_tools.is_empty()
        && let Ok(v) = HeaderValue::from_str(&success.served.dropped_tools.join(","))
    {
        h.insert(DROPPED_TOOLS, v);
    }
    resp
}
