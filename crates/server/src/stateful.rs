//! Stateful Responses over HTTP: `store` and `previous_response_id` on
//! `POST /v1/responses`, and `GET` / `DELETE /v1/responses/{id}` and
//! `GET /v1/responses/{id}/input_items`, on every upstream wire.
//!
//! The gateway keeps the state ([`switchyard_core::stored_responses`]), per
//! gateway key. A request naming a `previous_response_id` is rebuilt here,
//! before the pipeline sees it: that response's whole input, its output
//! items, then the new input; so the upstream (any wire, stateless or not) is
//! sent the whole conversation, and failover works as for any request. A
//! request that is stored asks for its reasoning's encrypted content
//! (`include`), so that what it thought can be sent back on the next turn
//! whoever takes it; reasoning items an upstream gave without it (they name
//! server state the gateway does not hold) are left out of a rebuilt
//! conversation. `store` itself goes upstream as the client sent it (an
//! OpenAI upstream keeps its own copy where the client asked it to).
//!
//! A response is stored once it is complete (a stream: before its
//! `response.completed` event reaches the client, so a next turn sent at once
//! finds it). A request the pipeline refuses or that fails stores nothing.
//!
//! `background: true` stores the response `queued` and answers at once; the
//! request runs in a task of this instance, and its answer, or its failure,
//! replaces the stored one. `POST /v1/responses/{id}/cancel` aborts the task
//! (dropping its upstream call) and stores it `cancelled`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use serde_json::{Map, Value, json};
use switchyard_core::GatewayError;
use switchyard_core::stored_responses::{ResponseStore, StoredResponse, owner_of};
use switchyard_core::util::excerpt;
use switchyard_protocol::{ClientFormat, ErrorCode, SseDecoder};

use crate::http::{FromUrl, answer, error_response, inbound};
use crate::{AppState, ids, limits};

const FORMAT: ClientFormat = ClientFormat::OpenAiResponses;

/// What a Responses body says of server-side state, read without building
/// the body (every field but these is skipped).
#[derive(serde::Deserialize, Default)]
struct Probe {
    store: Option<bool>,
    previous_response_id: Option<Value>,
    background: Option<bool>,
    stream: Option<bool>,
    model: Option<String>,
}

/// Background responses running in this instance, by `(owner, id)`.
#[derive(Default)]
pub(crate) struct Background(
    std::sync::Mutex<std::collections::HashMap<(String, String), tokio::task::AbortHandle>>,
);

impl Background {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<
        '_,
        std::collections::HashMap<(String, String), tokio::task::AbortHandle>,
    > {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `POST /v1/responses`.
pub async fn create(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let id = ids::request_id();
    let received = Instant::now();
    let snapshot = state.gateway.snapshot();
    let settings = snapshot.catalog.settings.responses;
    let max_body = snapshot.catalog.settings.max_body_bytes;
    drop(snapshot);
    let prepared = async {
        let caller = state.identity.authenticate(&headers).await?;
        let bytes = limits::read_body(body, max_body).await?;
        // A malformed body is the parser's to name.
        let probe: Probe = serde_json::from_slice(&bytes).unwrap_or_default();
        let previous = match probe.previous_response_id {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some(p),
            Some(_) => {
                return Err(GatewayError::new(
                    ErrorCode::InvalidRequest,
                    "previous_response_id: expected a string",
                )
                .with_param(Some("previous_response_id".into())));
            }
        };
        let store =
            settings.retention_hours > 0 && probe.store.unwrap_or(settings.store_by_default);
        if probe.background == Some(true) {
            if !store {
                return Err(GatewayError::new(
                    ErrorCode::InvalidRequest,
                    "background: a background response must be stored (store: true)",
                )
                .with_param(Some("background".into())));
            }
            if probe.stream == Some(true) {
                return Err(GatewayError::new(
                    ErrorCode::UnsupportedRequest,
                    "background with stream is not served: poll GET /v1/responses/{id}",
                )
                .with_param(Some("stream".into())));
            }
        }
        let background = (probe.background == Some(true)).then(|| probe.model.unwrap_or_default());
        if previous.is_none() && !store {
            let inbound = inbound(
                &state,
                &headers,
                caller,
                bytes,
                FORMAT,
                &id,
                received,
                &FromUrl::default(),
            )
            .await?;
            return Ok((inbound, None, None));
        }
        let owner = owner(&headers, &caller.principal);
        let (bytes, input) =
            rebuilt(&state, &owner, &bytes, previous.as_deref(), store, max_body).await?;
        let inbound =
            inbound(&state, &headers, caller, bytes, FORMAT, &id, received, &FromUrl::default())
                .await?;
        let keep = Keep {
            owner,
            input,
            hours: settings.retention_hours,
            id: crate::encode::response_id(FORMAT, &id).unwrap_or_default(),
        };
        Ok((inbound, store.then_some(keep), background))
    };
    let (inbound, keep, background) = match prepared.await {
        Ok(p) => p,
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "request refused");
            return error_response(FORMAT, &e, &id);
        }
    };
    let keep = match (background, keep) {
        (Some(model), Some(keep)) => {
            return start_background(state, inbound, keep, model, id).await;
        }
        (_, keep) => keep,
    };
    let resp = answer(&state, inbound, FORMAT, &id).await;
    match keep {
        Some(keep) if resp.status() == StatusCode::OK => keep.around(&state, resp).await,
        _ => resp,
    }
}

/// A background response: stored at once as `queued` and answered so; the
/// request runs in this instance, detached from the client's connection, and
/// its answer (or failure) replaces the stored one when it ends. A cancel
/// stops it ([`cancel`]).
async fn start_background(
    state: Arc<AppState>,
    inbound: switchyard_core::Inbound,
    keep: Keep,
    model: String,
    id: String,
) -> Response {
    let now = ids::unix_ms();
    let queued = json!({
        "id": keep.id, "object": "response", "created_at": now / 1000,
        "status": "queued", "background": true, "model": model, "output": [],
    });
    let placeholder = StoredResponse {
        id: keep.id.clone(),
        owner: keep.owner.clone(),
        created_ms: now,
        expires_ms: now.saturating_add(keep.hours.saturating_mul(3_600_000)),
        input: keep.input.clone(),
        response: queued.clone(),
    };
    if let Err(e) = state.gateway.runtime.responses.put(&placeholder).await {
        tracing::warn!("stored responses: {e}");
        let err =
            GatewayError::new(ErrorCode::StorageUnavailable, "stored responses are unavailable");
        return error_response(FORMAT, &err, &id);
    }
    let key = (keep.owner.clone(), keep.id.clone());
    let task_state = Arc::clone(&state);
    let task = tokio::spawn(async move {
        let state = task_state;
        let resp = answer(&state, inbound, FORMAT, &id).await;
        let key = (keep.owner.clone(), keep.id.clone());
        // Cancelled meanwhile (by another instance): its answer is not kept.
        let store = Arc::clone(&state.gateway.runtime.responses);
        let current = store.get(&keep.owner, &keep.id, ids::unix_ms()).await;
        let cancelled = matches!(&current, Ok(Some(r)) if r.response["status"] == "cancelled");
        if !cancelled {
            if resp.status() == StatusCode::OK {
                let _ = keep.around(&state, resp).await;
            } else {
                let status = resp.status().as_u16();
                let error = axum::body::to_bytes(resp.into_body(), usize::MAX)
                    .await
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .map_or(Value::Null, |mut v| v["error"].take());
                let mut failed = placeholder_of(&keep, "failed");
                failed["error"] =
                    json!({"code": error["code"], "message": error["message"], "status": status});
                keep.store(store.as_ref(), failed).await;
            }
        }
        state.background.lock().remove(&key);
    });
    state.background.lock().insert(key, task.abort_handle());
    json_response(&queued)
}

/// The stored shape of a background response that ended without an answer.
fn placeholder_of(keep: &Keep, status: &str) -> Value {
    json!({"id": keep.id, "object": "response", "created_at": ids::unix_ms() / 1000,
           "status": status, "background": true, "output": []})
}

/// `POST /v1/responses/{id}/cancel`: stop a background response of the
/// caller's that is still running; answered with it, `status: cancelled`.
pub async fn cancel(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (owner, found) = match owned(&state, &headers, &id).await {
        Ok((owner, Some(found))) => (owner, found),
        Ok((_, None)) => return error_response(FORMAT, &not_found(&id), &ids::request_id()),
        Err(e) => return error_response(FORMAT, &e, &ids::request_id()),
    };
    let running = matches!(found.response["status"].as_str(), Some("queued" | "in_progress"));
    if !running {
        let err = GatewayError::new(
            ErrorCode::InvalidRequest,
            "only a background response that is still running can be cancelled",
        );
        return error_response(FORMAT, &err, &ids::request_id());
    }
    if let Some(task) = state.background.lock().remove(&(owner.clone(), id.clone())) {
        task.abort();
    }
    let mut cancelled = found;
    cancelled.response["status"] = json!("cancelled");
    if let Err(e) = state.gateway.runtime.responses.put(&cancelled).await {
        tracing::warn!("stored responses: {e}");
    }
    json_response(&cancelled.response)
}

/// What a stored request keeps once its answer is complete.
#[derive(Clone)]
struct Keep {
    owner: String,
    /// The whole input, continuation expanded.
    input: Vec<Value>,
    hours: u64,
    /// The id the response is stored under and its client sees: the
    /// gateway's, also where a Responses upstream's answer passed through
    /// had its own (servers that repeat ids would have one conversation
    /// stored over another).
    id: String,
}

impl Keep {
    /// The response for the client, stored as it completes: a whole answer
    /// now, a stream before its completion reaches the client.
    async fn around(self, state: &AppState, resp: Response) -> Response {
        let store = Arc::clone(&state.gateway.runtime.responses);
        let streamed = resp
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let (parts, body) = resp.into_parts();
        if streamed {
            return Response::from_parts(parts, tap(body, self, store));
        }
        let mut parts = parts;
        let mut bytes = match axum::body::to_bytes(body, usize::MAX).await {
            Ok(b) => b,
            Err(_) => return Response::from_parts(parts, Body::empty()),
        };
        if let Ok(mut response) = serde_json::from_slice::<Value>(&bytes) {
            if response["id"] != self.id.as_str()
                && let Ok(renamed) = {
                    response["id"] = json!(self.id);
                    serde_json::to_vec(&response)
                }
            {
                bytes = Bytes::from(renamed);
                parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            }
            self.store(store.as_ref(), response).await;
        }
        Response::from_parts(parts, Body::from(bytes))
    }

    async fn store(self, store: &dyn ResponseStore, mut response: Value) {
        response["id"] = json!(self.id);
        let now = ids::unix_ms();
        let stored = StoredResponse {
            id: self.id,
            owner: self.owner,
            created_ms: now,
            expires_ms: now.saturating_add(self.hours.saturating_mul(3_600_000)),
            input: self.input,
            response,
        };
        if let Err(e) = store.put(&stored).await {
            tracing::warn!(response_id = %stored.id, "a response could not be stored: {e}");
        }
    }
}

/// `body`, a stream of Responses events, passed on as it comes; its output
/// items noted, and the response stored before its terminal event
/// (`response.completed`, `.incomplete`) goes on.
fn tap(body: Body, keep: Keep, store: Arc<dyn ResponseStore>) -> Body {
    struct Tap {
        inner: axum::body::BodyDataStream,
        sse: SseDecoder,
        seen: Seen,
        keep: Option<Keep>,
        store: Arc<dyn ResponseStore>,
    }
    let state = Tap {
        inner: body.into_data_stream(),
        sse: SseDecoder::new(),
        seen: Seen::default(),
        keep: Some(keep),
        store,
    };
    Body::from_stream(futures_util::stream::unfold(state, |mut t| async move {
        let mut chunk = t.inner.next().await?;
        let id = t.keep.as_ref().map(|k| k.id.clone());
        if let (Some(id), Ok(bytes)) = (id, &chunk) {
            let mut events = Vec::new();
            // Past the decoder's caps: passed on, not stored.
            let whole = t.sse.push(bytes, &mut events).is_ok();
            for e in &events {
                t.seen.note(&e.data);
            }
            // The response named as it is stored, where the chunk is whole
            // events (as the pipeline sends them).
            let renamed = if whole && t.sse.pending() == 0 { renamed(&events, &id) } else { None };
            if !whole {
                t.keep = None;
            }
            if let Some(renamed) = renamed {
                chunk = Ok(Bytes::from(renamed));
            }
            // Both taken only once the response is complete.
            if let Some(response) = t.seen.finished.take()
                && let Some(keep) = t.keep.take()
            {
                keep.store(t.store.as_ref(), response).await;
            }
        }
        Some((chunk, t))
    }))
}

/// `events` written again with each lifecycle event's response named `id`;
/// `None` when none needed it (the chunk goes as it came).
fn renamed(events: &[switchyard_protocol::SseEvent], id: &str) -> Option<Vec<u8>> {
    let mut changed = false;
    let mut out = Vec::new();
    for e in events {
        let mut data = None;
        if e.data.contains("\"response\"")
            && let Ok(mut v) = serde_json::from_str::<Value>(&e.data)
            && v["response"]["id"].as_str().is_some_and(|x| x != id)
        {
            v["response"]["id"] = json!(id);
            data = Some(v.to_string());
            changed = true;
        }
        let data = data.as_deref().unwrap_or(&e.data);
        match &e.id {
            Some(event_id) => {
                out.extend_from_slice(b"id: ");
                out.extend_from_slice(event_id.as_bytes());
                out.push(b'\n');
                switchyard_protocol::sse::write_event(&mut out, e.event.as_deref(), data);
            }
            None => switchyard_protocol::sse::write_event(&mut out, e.event.as_deref(), data),
        }
    }
    changed.then_some(out)
}

/// What a relayed Responses stream said that a continuation needs: its output
/// items, and the response object of its terminal event (with those items
/// where the event lists none).
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) output: Vec<Value>,
    /// The terminal event's response, once it arrived.
    pub(crate) finished: Option<Value>,
}

impl Seen {
    pub(crate) fn note(&mut self, data: &str) {
        // Most events are deltas: only parse the kinds that matter.
        let done = data.contains("response.output_item.done");
        let finished = data.contains("response.completed") || data.contains("response.incomplete");
        if !done && !finished {
            return;
        }
        let Ok(mut event) = serde_json::from_str::<Value>(data) else { return };
        match event["type"].as_str() {
            Some("response.output_item.done") => {
                if let Some(item) = event.get_mut("item").map(Value::take) {
                    self.output.push(item);
                }
            }
            Some("response.completed" | "response.incomplete") => {
                let mut response = event["response"].take();
                let listed = response["output"].as_array().is_some_and(|o| !o.is_empty());
                if !listed && response.is_object() {
                    response["output"] = Value::Array(self.output.clone());
                }
                self.finished = Some(response);
            }
            _ => {}
        }
    }
}

/// The body as the pipeline gets it, and the whole input kept with its
/// answer: a continuation expanded (404 when the previous response is not
/// the caller's or is gone), and, where it is stored, asked of the upstream
/// with its reasoning's encrypted content.
async fn rebuilt(
    state: &AppState,
    owner: &str,
    bytes: &[u8],
    previous: Option<&str>,
    store: bool,
    max_body: usize,
) -> Result<(Bytes, Vec<Value>), GatewayError> {
    let invalid = |m: String| GatewayError::new(ErrorCode::InvalidRequest, m);
    let mut body: Map<String, Value> = match serde_json::from_slice(bytes) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(invalid("expected a JSON object".into())),
        Err(e) => return Err(invalid(format!("the body is not JSON: {e}"))),
    };
    let mut input = match body.remove("input") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => {
            vec![json!({"type": "message", "role": "user", "content": text})]
        }
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(invalid("input: expected a string or an array of items".into())
                .with_param(Some("input".into())));
        }
    };
    if let Some(previous) = previous {
        body.remove("previous_response_id");
        let found = state
            .gateway
            .runtime
            .responses
            .get(owner, previous, ids::unix_ms())
            .await
            .map_err(|e| {
                tracing::warn!("stored responses: {e}");
                GatewayError::new(ErrorCode::StorageUnavailable, "stored responses are unavailable")
            })?;
        let Some(found) = found else {
            return Err(GatewayError::new(
                ErrorCode::PreviousResponseNotFound,
                format!("previous response with id {:?} not found", excerpt(previous)),
            )
            .with_status(404)
            .with_param(Some("previous_response_id".into())));
        };
        let output: Vec<Value> = found.output().iter().filter(|i| replayable(i)).cloned().collect();
        let mut whole = found.input;
        whole.extend(output);
        resolve_references(&mut input, &whole)?;
        whole.append(&mut input);
        input = whole;
    }
    if store {
        let include = body.entry("include").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = include
            && !list.iter().any(|v| v == "reasoning.encrypted_content")
        {
            list.push(json!("reasoning.encrypted_content"));
        }
    }
    body.insert("input".into(), Value::Array(input));
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| invalid(format!("the body cannot be written: {e}")))?;
    if bytes.len() > max_body {
        return Err(GatewayError::new(
            ErrorCode::RequestTooLarge,
            format!("request body larger than {max_body} bytes (continuation included)"),
        ));
    }
    let input = match body.remove("input") {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    };
    Ok((Bytes::from(bytes), input))
}

/// Each `item_reference` of `input` replaced by the item of `conversation`
/// (the stored input and output the request continues) it names by `id`; one
/// that names none is 400, naming it. References resolve within the
/// conversation the request continues, not across a key's every response.
fn resolve_references(input: &mut [Value], conversation: &[Value]) -> Result<(), GatewayError> {
    for (i, item) in input.iter_mut().enumerate() {
        if item["type"] != "item_reference" {
            continue;
        }
        let id = item["id"].as_str().unwrap_or_default();
        let Some(found) = conversation.iter().find(|c| !id.is_empty() && c["id"] == id) else {
            return Err(GatewayError::new(
                ErrorCode::InvalidRequest,
                format!(
                    "input[{i}]: item_reference {:?} names no item of the conversation \
                     previous_response_id continues",
                    excerpt(id)
                ),
            )
            .with_param(Some(format!("input[{i}]"))));
        };
        *item = found.clone();
    }
    Ok(())
}

/// Whether an output item may be sent back as input: a reasoning item only
/// with its encrypted content (without, it names state an upstream kept).
pub(crate) fn replayable(item: &Value) -> bool {
    item["type"] != "reasoning" || item.get("encrypted_content").is_some_and(Value::is_string)
}

/// The caller's stored response `id`, or the 404 OpenAI answers for one that
/// is unknown, gone, or another key's.
async fn owned(
    state: &AppState,
    headers: &HeaderMap,
    id: &str,
) -> Result<(String, Option<StoredResponse>), GatewayError> {
    let caller = state.identity.authenticate(headers).await?;
    let owner = owner(headers, &caller.principal);
    let found =
        state.gateway.runtime.responses.get(&owner, id, ids::unix_ms()).await.map_err(|e| {
            tracing::warn!("stored responses: {e}");
            GatewayError::new(ErrorCode::StorageUnavailable, "stored responses are unavailable")
        })?;
    Ok((owner, found))
}

/// Whose stored responses the caller reads and writes: the key it presented
/// ([`owner_of`], by the key's digest). Worked out here, where state is
/// read, not for every request.
pub(crate) fn owner(headers: &HeaderMap, principal: &switchyard_core::access::Principal) -> String {
    match crate::auth::presented(headers).filter(|k| !k.is_empty()) {
        Some(key) => {
            let mut keyed = principal.clone();
            keyed.key_digest = Some(switchyard_core::stored_responses::key_digest(key));
            owner_of(&keyed)
        }
        None => owner_of(principal),
    }
}

fn not_found(id: &str) -> GatewayError {
    GatewayError::new(ErrorCode::NotFound, format!("no response with id {:?}", excerpt(id)))
}

fn json_response(v: &Value) -> Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

/// `GET /v1/responses/{id}`: the response as its client got it.
pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    match owned(&state, &headers, &id).await {
        Ok((_, Some(found))) => json_response(&lost_or(&state, found).await.response),
        Ok((_, None)) => error_response(FORMAT, &not_found(&id), &ids::request_id()),
        Err(e) => error_response(FORMAT, &e, &ids::request_id()),
    }
}

/// How long past its request's own deadline a background response may stay
/// unfinished before it is taken as lost.
const LOST_AFTER_MS: u64 = 60_000;

/// `found`, or, where it is a background response still `queued` long after
/// its request's deadline (the instance running it stopped), the same marked
/// `failed` and stored so: a client polling it gets an end, not a wait
/// forever.
async fn lost_or(state: &AppState, mut found: StoredResponse) -> StoredResponse {
    let running = matches!(found.response["status"].as_str(), Some("queued" | "in_progress"));
    let deadline = state.gateway.snapshot().catalog.settings.request_timeout.as_millis() as u64;
    let lost = found.created_ms.saturating_add(deadline).saturating_add(LOST_AFTER_MS);
    if !running || ids::unix_ms() < lost {
        return found;
    }
    found.response["status"] = json!("failed");
    found.response["error"] = json!({
        "code": "background_lost",
        "message": "the gateway running this response stopped before it finished",
    });
    if let Err(e) = state.gateway.runtime.responses.put(&found).await {
        tracing::warn!("stored responses: {e}");
    }
    found
}

/// `DELETE /v1/responses/{id}`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let deleted = async {
        let caller = state.identity.authenticate(&headers).await?;
        let owner = owner(&headers, &caller.principal);
        state.gateway.runtime.responses.delete(&owner, &id).await.map_err(|e| {
            tracing::warn!("stored responses: {e}");
            GatewayError::new(ErrorCode::StorageUnavailable, "stored responses are unavailable")
        })
    };
    match deleted.await {
        Ok(true) => json_response(&json!({"id": id, "object": "response", "deleted": true})),
        Ok(false) => error_response(FORMAT, &not_found(&id), &ids::request_id()),
        Err(e) => error_response(FORMAT, &e, &ids::request_id()),
    }
}

/// `GET /v1/responses/{id}/input_items`'s query.
#[derive(serde::Deserialize, Default)]
pub struct ItemsQuery {
    limit: Option<usize>,
    order: Option<String>,
    after: Option<String>,
}

/// `GET /v1/responses/{id}/input_items`: the whole input the response
/// answered, a page at a time (`limit` 1 to 100, default 20; `order` `desc`,
/// the default, or `asc`; `after` an item id). An item the client sent
/// without an id is listed with one made from the response's.
pub async fn input_items(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
    query: Result<Query<ItemsQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let q = match query {
        Ok(Query(q)) => q,
        Err(e) => {
            let err = GatewayError::new(ErrorCode::InvalidRequest, e.body_text());
            return error_response(FORMAT, &err, &ids::request_id());
        }
    };
    let found = match owned(&state, &headers, &id).await {
        Ok((_, Some(found))) => found,
        Ok((_, None)) => return error_response(FORMAT, &not_found(&id), &ids::request_id()),
        Err(e) => return error_response(FORMAT, &e, &ids::request_id()),
    };
    let limit = q.limit.unwrap_or(20).clamp(1, 100);
    let mut items: Vec<Value> = found
        .input
        .into_iter()
        .enumerate()
        .map(|(i, mut item)| {
            if item.get("id").is_none_or(|v| !v.is_string()) && item.is_object() {
                item["id"] = json!(format!("{id}_in_{i}"));
            }
            item
        })
        .collect();
    match q.order.as_deref() {
        None | Some("desc") => items.reverse(),
        Some("asc") => {}
        Some(other) => {
            let err = GatewayError::new(
                ErrorCode::InvalidRequest,
                format!("order: {:?} is not asc or desc", excerpt(other)),
            );
            return error_response(FORMAT, &err, &ids::request_id());
        }
    }
    let start = match &q.after {
        Some(after) => items.iter().position(|i| i["id"] == *after).map_or(items.len(), |p| p + 1),
        None => 0,
    };
    let page: Vec<Value> = items.iter().skip(start).take(limit).cloned().collect();
    let has_more = start + page.len() < items.len();
    json_response(&json!({
        "object": "list",
        "data": page,
        "first_id": page.first().map(|i| i["id"].clone()),
        "last_id": page.last().map(|i| i["id"].clone()),
        "has_more": has_more,
    }))
}
