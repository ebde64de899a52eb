//! The Responses API's WebSocket mode: `GET /v1/responses` with `Upgrade:
//! websocket`, as Codex opens it with `supports_websockets = true`.
//!
//! One connection carries a session's turns, one at a time. Each text message the
//! client sends is an event; `response.create` carries the fields of a `POST
//! /v1/responses` body (at the top level, as Codex sends them, or nested under
//! `response`) and runs through the same pipeline as that POST, streamed: every
//! event of the answer comes back as one text message holding the event's JSON
//! (its `type` names it). A refusal before the answer starts comes back as an
//! `error` event, in the Responses error shape plus the HTTP `status` the POST
//! would have had, and the connection stays open for the next turn.
//!
//! The connection remembers its last completed response (the full input and the
//! output items), so a `response.create` may continue it with
//! `previous_response_id` and only the new input items, as Codex does on a reused
//! connection; a `previous_response_id` naming a response the key stored over
//! HTTP (`store: true`) continues that one. A turn here is not stored.
//! `generate: false` (Codex's warm-up) answers `response.created` and
//! `response.completed` with no output and sends nothing upstream; its id may
//! be continued the same way.
//!
//! The connection closes with 1008 when the key stops authenticating between turns,
//! 1003 on a binary message, 1002 on an unreadable one and 1001 when the server shuts
//! down (after the turn in flight). Access rules and limits refuse a turn, not the
//! session: their `error` event carries the status (403, 429) and the client may go
//! on, as it would after the same answer over HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};
use switchyard_core::exec::ChunkStream;
use switchyard_core::util::excerpt;
use switchyard_core::{Delivery, GatewayError};
use switchyard_protocol::{ClientFormat, ErrorCode, SseDecoder};

use crate::encode::{self, StreamWriter};
use crate::http::{error_response, inbound};
use crate::stateful::Seen;
use crate::{AppState, ids};

const FORMAT: ClientFormat = ClientFormat::OpenAiResponses;

/// How long a closing session waits for the client's close frame in reply.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// `GET /v1/responses`: authenticate the handshake, then upgrade.
pub async fn responses(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    uri: axum::http::Uri,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    // Refused before the upgrade, so the client gets an HTTP 401 it can act on
    // rather than a session that closes at once.
    if let Err(e) = state.identity.authenticate(&headers).await {
        tracing::debug!(code = e.code().as_str(), "websocket handshake refused");
        return error_response(FORMAT, &e, &ids::request_id());
    }
    let upgrade = match upgrade {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            let err = GatewayError::new(
                ErrorCode::WebsocketRequired,
                format!(
                    "GET {} opens a WebSocket session ({rejection}); send POST for HTTP",
                    uri.path()
                ),
            );
            let mut resp = error_response(FORMAT, &err, &ids::request_id());
            resp.headers_mut().insert("upgrade", HeaderValue::from_static("websocket"));
            return resp;
        }
    };
    // A message over the body limit is answered with a 413 `error` event, as the POST
    // would be; only one past twice the limit is refused by the socket itself, which
    // bounds the memory a message can take.
    let max_body = state.gateway.snapshot().catalog.settings.max_body_bytes;
    let hard_cap = max_body.saturating_mul(2);
    let open = Open::new(&state);
    upgrade.max_message_size(hard_cap).max_frame_size(hard_cap).on_upgrade(move |socket| {
        Session { state, headers, socket, last: None, pending: None, _open: open }.run()
    })
}

/// Counts a session as open until it ends (shutdown waits for the count to drop).
struct Open(Arc<AppState>);

impl Open {
    fn new(state: &Arc<AppState>) -> Open {
        state.sessions.send_modify(|open| *open += 1);
        Open(state.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.sessions.send_modify(|open| *open = open.saturating_sub(1));
    }
}

/// The connection's last completed response: what `previous_response_id` may name.
struct Last {
    id: String,
    /// The whole input of that request, continuations expanded.
    input: Vec<Value>,
    /// Its output items, as `response.output_item.done` gave them.
    output: Vec<Value>,
}

/// What the session does after a message.
enum Flow {
    Continue,
    Close(u16, &'static str),
    /// The client went away (or the socket broke): nothing left to say.
    Gone,
}

struct Session {
    state: Arc<AppState>,
    /// The handshake's headers: the key is checked again before every turn (it may
    /// have been revoked since), and the project header applies to every turn.
    headers: HeaderMap,
    socket: WebSocket,
    last: Option<Last>,
    /// A message that arrived while a turn was streaming, handled once it ends.
    pending: Option<Message>,
    _open: Open,
}

impl Session {
    async fn run(mut self) {
        loop {
            let message = match self.pending.take() {
                Some(m) => m,
                None => {
                    let shutdown = self.state.shutdown.clone();
                    tokio::select! {
                        biased;
                        () = shutdown.cancelled() => {
                            return self.close(close_code::AWAY, "server shutting down").await;
                        }
                        m = self.socket.recv() => match m {
                            Some(Ok(m)) => m,
                            Some(Err(_)) => {
                                return self.close(close_code::PROTOCOL, "unreadable message").await;
                            }
                            None => return,
                        },
                    }
                }
            };
            let flow = match message {
                Message::Text(text) => self.message(text.as_str()).await,
                Message::Binary(_) => {
                    Flow::Close(close_code::UNSUPPORTED, "messages are JSON text")
                }
                // Pings are answered by the socket itself.
                Message::Ping(_) | Message::Pong(_) => Flow::Continue,
                Message::Close(_) => return self.closed_by_client().await,
            };
            match flow {
                Flow::Continue => {}
                Flow::Close(code, reason) => return self.close(code, reason).await,
                Flow::Gone => return,
            }
            // A turn that was streaming when shutdown began has now finished.
            if self.state.shutdown.is_cancelled() {
                return self.close(close_code::AWAY, "server shutting down").await;
            }
        }
    }

    /// Send a close frame, then wait (briefly) for the client's in reply.
    async fn close(mut self, code: u16, reason: &'static str) {
        let frame = CloseFrame { code, reason: reason.into() };
        if self.socket.send(Message::Close(Some(frame))).await.is_err() {
            return;
        }
        let _ = tokio::time::timeout(CLOSE_WAIT, async {
            while let Some(Ok(m)) = self.socket.recv().await {
                if matches!(m, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }

    /// The client sent a close frame: the socket has queued the reply, and reading
    /// on (until the connection ends, briefly) is what sends it.
    async fn closed_by_client(&mut self) {
        let _ = tokio::time::timeout(CLOSE_WAIT, self.socket.recv()).await;
    }

    async fn message(&mut self, text: &str) -> Flow {
        let received = Instant::now();
        let id = ids::request_id();
        // Sized and shaped before it is parsed: a parse costs many times the
        // text of a message made of small values.
        let refused = {
            let snapshot = self.state.gateway.snapshot();
            let max_body = snapshot.catalog.settings.max_body_bytes;
            if text.len() > max_body {
                Some(GatewayError::new(
                    ErrorCode::RequestTooLarge,
                    format!("message larger than {max_body} bytes"),
                ))
            } else {
                snapshot.check_json_bounds(text.as_bytes()).err()
            }
        };
        if let Some(e) = refused {
            return self.refuse(&id, &e).await;
        }
        let event = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(event)) => event,
            Ok(_) => return self.refuse(&id, &invalid("expected a JSON object event")).await,
            Err(e) => return self.refuse(&id, &invalid(format!("not JSON: {e}"))).await,
        };
        match event.get("type").and_then(Value::as_str) {
            Some("response.create") => self.turn(event, id, received).await,
            // Codex acknowledges a response it has read; nothing answers that.
            Some("response.processed") => Flow::Continue,
            Some(other) => {
                let err = GatewayError::new(
                    ErrorCode::UnsupportedEvent,
                    format!("event type {:?} is not served; send response.create", excerpt(other)),
                );
                self.refuse(&id, &err).await
            }
            None => self.refuse(&id, &invalid("the event has no `type`")).await,
        }
    }

    /// One `response.create`: the same request `POST /v1/responses` would make, streamed.
    async fn turn(&mut self, event: Map<String, Value>, id: String, received: Instant) -> Flow {
        let caller = match self.state.identity.authenticate(&self.headers).await {
            Ok(caller) => caller,
            // The key no longer authenticates: the session it opened is over. Any
            // other failure (the key store unreachable) refuses only this turn.
            Err(e) if e.status() == 401 => {
                if let Flow::Gone = self.refuse(&id, &e).await {
                    return Flow::Gone;
                }
                return Flow::Close(close_code::POLICY, "the API key was refused");
            }
            Err(e) => return self.refuse(&id, &e).await,
        };
        let max_body = self.state.gateway.snapshot().catalog.settings.max_body_bytes;
        // A continuation of a response other than this connection's last: one
        // stored (`store: true`, over HTTP or another connection) serves.
        let last = match event.get("previous_response_id").and_then(Value::as_str) {
            Some(previous) if self.last.as_ref().is_none_or(|l| l.id != previous) => {
                match stored(&self.state, &self.headers, &caller, previous).await {
                    Some(stored) => Some(stored),
                    None => self.last.take(),
                }
            }
            _ => self.last.take(),
        };
        let turn = match Turn::build(event, last, max_body) {
            Ok(turn) => turn,
            Err(e) => return self.refuse(&id, &e).await,
        };
        let inbound = match inbound(
            &self.state,
            &self.headers,
            caller,
            turn.body,
            FORMAT,
            &id,
            received,
            &Default::default(),
        )
        .await
        {
            Ok(inbound) => inbound,
            Err(e) => return self.refuse(&id, &e).await,
        };
        if !turn.generate {
            let model = inbound.request.model.clone();
            return self.warm_up(&id, &model, turn.input).await;
        }
        match self.state.gateway.execute(inbound).await {
            Err(e) => self.refuse(&id, &e).await,
            Ok(success) => {
                let seal = self.state.gateway.runtime.seal.clone();
                match success.delivery {
                    Delivery::Stream(stream) => {
                        let writer = StreamWriter::new(FORMAT, &success.request, seal, &stream);
                        self.stream(stream, writer, turn.input).await
                    }
                    Delivery::Response { response, .. } => {
                        let body =
                            encode::whole(FORMAT, &response, &success.request, seal.as_deref());
                        self.whole(&body, turn.input).await
                    }
                    Delivery::Passthrough { body, .. } => self.whole(&body, turn.input).await,
                }
            }
        }
    }

    /// Relay a stream's SSE events, one message each, noting what a continuation needs.
    async fn stream(
        &mut self,
        mut stream: ChunkStream,
        mut writer: StreamWriter,
        input: Vec<Value>,
    ) -> Flow {
        let mut sse = SseDecoder::new();
        let mut events = Vec::new();
        let mut seen = Seen::default();
        loop {
            let chunk = tokio::select! {
                chunk = stream.next() => chunk.map(|c| writer.write(c)),
                m = self.socket.recv(), if self.pending.is_none() => match m {
                    Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                    // Dropping the stream cancels the upstream call, as a disconnect
                    // does over HTTP.
                    Some(Ok(Message::Close(_))) => {
                        self.closed_by_client().await;
                        return Flow::Gone;
                    }
                    Some(Err(_)) | None => return Flow::Gone,
                    Some(Ok(m)) => {
                        self.pending = Some(m);
                        continue;
                    }
                },
            };
            let Some(chunk) = chunk else { break };
            // The gateway's own encoder writes these events: a line too long for the
            // decoder would be a bug, and the stream cannot go on past it.
            if sse.push(&chunk, &mut events).is_err() {
                return Flow::Close(close_code::ERROR, "stream could not be relayed");
            }
            for event in events.drain(..) {
                seen.note(&event.data);
                if self.socket.send(Message::Text(event.data.into())).await.is_err() {
                    return Flow::Gone;
                }
            }
        }
        sse.finish(&mut events);
        for event in events.drain(..) {
            seen.note(&event.data);
            if self.socket.send(Message::Text(event.data.into())).await.is_err() {
                return Flow::Gone;
            }
        }
        // Continued from its id only once it completed (`response.completed`).
        let completed = seen.finished.as_ref().filter(|r| r["status"] != "incomplete");
        if let Some(id) = completed.and_then(|r| r["id"].as_str()).map(str::to_owned) {
            self.last = Some(Last { id, input, output: seen.output });
        }
        Flow::Continue
    }

    /// A whole answer (the pipeline streams `stream: true` requests, so this is a
    /// fallback): sent as the events a stream of it would end with.
    async fn whole(&mut self, bytes: &[u8], input: Vec<Value>) -> Flow {
        let response: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(_) => return Flow::Close(close_code::ERROR, "answer could not be relayed"),
        };
        let output = response["output"].as_array().cloned().unwrap_or_default();
        let id = response["id"].as_str().map(str::to_owned);
        let mut messages = Vec::new();
        for (i, item) in output.iter().enumerate() {
            messages.push(
                json!({"type": "response.output_item.done", "output_index": i, "item": item}),
            );
        }
        messages.push(json!({"type": "response.completed", "response": response}));
        for m in messages {
            if self.socket.send(Message::Text(m.to_string().into())).await.is_err() {
                return Flow::Gone;
            }
        }
        if let Some(id) = id {
            self.last = Some(Last { id, input, output });
        }
        Flow::Continue
    }

    /// `generate: false`: a response with no output, nothing sent upstream; a later
    /// turn may continue it with `previous_response_id`.
    async fn warm_up(&mut self, id: &str, model: &str, input: Vec<Value>) -> Flow {
        let response_id = format!("resp_{}", id.strip_prefix("req_").unwrap_or(id));
        let created_at = ids::unix_ms() / 1000;
        let response = |status: &str| {
            json!({"id": response_id, "object": "response", "created_at": created_at,
                   "status": status, "model": model, "output": []})
        };
        let events = [
            json!({"type": "response.created", "sequence_number": 0, "response": response("in_progress")}),
            json!({"type": "response.completed", "sequence_number": 1, "response": response("completed")}),
        ];
        for event in events {
            if self.socket.send(Message::Text(event.to_string().into())).await.is_err() {
                return Flow::Gone;
            }
        }
        self.last = Some(Last { id: response_id, input, output: Vec::new() });
        Flow::Continue
    }

    /// A turn refused before its answer started: an `error` event; the session goes on.
    async fn refuse(&mut self, id: &str, err: &GatewayError) -> Flow {
        tracing::debug!(request_id = %id, code = err.code().as_str(), "websocket turn refused");
        let mut event = FORMAT.error_json(err.body());
        event["type"] = json!("error");
        // Codex reads `status` as the HTTP status the request would have had: its
        // retry rules (429, 5xx) then apply as they do over HTTP.
        event["status"] = json!(err.status());
        match self.socket.send(Message::Text(event.to_string().into())).await {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Gone,
        }
    }
}

/// The caller's stored response `id` as a continuation's base, if there is
/// one (a free function: the session itself is not `Sync`).
async fn stored(
    state: &AppState,
    headers: &HeaderMap,
    caller: &crate::identity::Caller,
    id: &str,
) -> Option<Last> {
    let owner = crate::stateful::owner(headers, &caller.principal);
    let found = state.gateway.runtime.responses.get(&owner, id, ids::unix_ms()).await;
    let found = found.map_err(|e| tracing::warn!("stored responses: {e}")).ok()??;
    let output = found.output().iter().filter(|i| crate::stateful::replayable(i)).cloned();
    Some(Last { id: id.to_owned(), output: output.collect(), input: found.input })
}

/// A `response.create` made into a `POST /v1/responses` body.
struct Turn {
    body: Bytes,
    /// The whole input, continuation expanded (kept for the next continuation).
    input: Vec<Value>,
    generate: bool,
}

impl Turn {
    fn build(
        mut event: Map<String, Value>,
        last: Option<Last>,
        max_body: usize,
    ) -> Result<Turn, GatewayError> {
        event.remove("type");
        match event.remove("response") {
            None | Some(Value::Null) => {}
            Some(Value::Object(nested)) => event.extend(nested),
            Some(_) => return Err(invalid_param("response: expected an object", "response")),
        }
        let generate = match event.remove("generate") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(generate)) => generate,
            Some(_) => return Err(invalid_param("generate: expected a boolean", "generate")),
        };
        let mut input = match event.remove("input") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(text)) => {
                vec![json!({"type": "message", "role": "user", "content": text})]
            }
            Some(Value::Array(items)) => items,
            Some(_) => {
                return Err(invalid_param(
                    "input: expected a string or an array of items",
                    "input",
                ));
            }
        };
        match event.remove("previous_response_id") {
            None | Some(Value::Null) => {}
            Some(Value::String(previous)) => match last {
                Some(last) if last.id == previous => {
                    let mut whole = last.input;
                    whole.extend(last.output);
                    whole.append(&mut input);
                    input = whole;
                }
                _ => {
                    let err = GatewayError::new(
                        ErrorCode::PreviousResponseNotFound,
                        format!(
                            "previous response {:?} is not this connection's last \
                             completed response (only that one can be continued); send the \
                             whole input",
                            excerpt(&previous)
                        ),
                    );
                    return Err(err.with_param(Some("previous_response_id".into())));
                }
            },
            Some(_) => {
                return Err(invalid_param(
                    "previous_response_id: expected a string",
                    "previous_response_id",
                ));
            }
        }
        // WebSocket mode always streams: the events are the messages.
        event.insert("stream".into(), Value::Bool(true));
        event.insert("input".into(), Value::Array(input));
        let body = Value::Object(event);
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| invalid(format!("the request cannot be encoded: {e}")))?;
        if bytes.len() > max_body {
            return Err(GatewayError::new(
                ErrorCode::RequestTooLarge,
                format!("request body larger than {max_body} bytes (continuation included)"),
            ));
        }
        let input = match body {
            Value::Object(mut event) => match event.remove("input") {
                Some(Value::Array(input)) => input,
                _ => Vec::new(),
            },
            _ => Vec::new(),
        };
        Ok(Turn { body: Bytes::from(bytes), input, generate })
    }
}

fn invalid(message: impl Into<String>) -> GatewayError {
    GatewayError::new(ErrorCode::InvalidRequest, message)
}

fn invalid_param(message: &str, param: &str) -> GatewayError {
    invalid(message).with_param(Some(param.to_owned()))
}
