//! The generation endpoints: one handler shape for every client format.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use switchyard_core::upstream::RawBody;
use switchyard_core::{Delivery, GatewayError, Inbound};
use switchyard_protocol::{ClientFormat, ErrorKind};

use crate::identity::Caller;
use crate::{AppState, ids, limits};

pub const HEADER_PROVIDER: &str = "x-gateway-provider";
pub const HEADER_MODEL: &str = "x-gateway-model";
pub const HEADER_REQUEST_ID: &str = "x-request-id";
pub const HEADER_DESCRIPTOR: &str = "x-gateway-route";
/// Attributes the request to a project (per-project routing chains).
pub const HEADER_PROJECT: &str = "x-switchyard-project";

/// The request extension field carrying routing hints; read here, never forwarded.
#[derive(serde::Deserialize)]
struct Extension {
    #[serde(default)]
    switchyard: Option<switchyard_core::filter::Hints>,
}

/// What a Gemini client says in its URL rather than its body: the model, and
/// whether to stream (`:streamGenerateContent`). Other formats say it in the body.
#[derive(Debug, Default, Clone)]
pub(crate) struct FromUrl {
    pub(crate) model: Option<String>,
    pub(crate) stream: bool,
}

/// Client headers a same-vendor upstream needs.
const FORWARDED: &[&str] = &["anthropic-beta", "anthropic-version"];

/// An error in the caller's format, with the request id.
pub fn error_response(format: ClientFormat, err: &GatewayError, request_id: &str) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = format.error_json(err.body()).to_string();
    let mut resp = (status, [("content-type", "application/json")], body).into_response();
    if let Ok(v) = HeaderValue::from_str(request_id) {
        resp.headers_mut().insert(HEADER_REQUEST_ID, v);
    }
    resp
}

pub async fn chat_completions(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    generate(state, headers, body, ClientFormat::OpenAiChat, FromUrl::default()).await
}

pub async fn responses(state: State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    generate(state, headers, body, ClientFormat::OpenAiResponses, FromUrl::default()).await
}

pub async fn messages(state: State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    generate(state, headers, body, ClientFormat::Anthropic, FromUrl::default()).await
}

pub async fn not_found(headers: HeaderMap, uri: axum::http::Uri) -> Response {
    // Only the path is named: a Gemini client may carry its key in the query.
    let format = if uri.path().starts_with("/v1beta/") || headers.contains_key("x-goog-api-key") {
        ClientFormat::Gemini
    } else if headers.contains_key("anthropic-version") || headers.contains_key("x-api-key") {
        ClientFormat::Anthropic
    } else {
        ClientFormat::OpenAiChat
    };
    let err = GatewayError::new(
        404,
        ErrorKind::NotFound,
        "not_found",
        format!("no endpoint {}", uri.path()),
    );
    error_response(format, &err, &ids::request_id())
}

/// Authenticate, read within limits, parse; shared by every POST endpoint.
async fn ingest(
    state: &AppState,
    headers: &HeaderMap,
    body: Body,
    format: ClientFormat,
    id: &str,
    url: &FromUrl,
) -> Result<Inbound, GatewayError> {
    let received = Instant::now();
    let max_body_bytes = state.gateway.snapshot().catalog.settings.max_body_bytes;
    let caller = state.identity.authenticate(headers).await?;
    let bytes = limits::read_body(body, max_body_bytes).await?;
    inbound(state, headers, caller, bytes, format, id, received, url).await
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
    let snapshot = state.gateway.snapshot();
    let settings = &snapshot.catalog.settings;
    limits::check_depth(&bytes, settings.max_json_depth)?;
    let mut request = format
        .parse_request(&bytes, state.gateway.runtime.seal.as_deref())
        .map_err(|e| GatewayError::invalid("invalid_request", e.to_string()))?;
    if let Some(model) = &url.model {
        request.model.clone_from(model);
        request.stream = url.stream;
    }
    limits::check_model_id(&request.model)?;
    if request.model.is_empty()
        && let Some(default) = &settings.default_model
    {
        request.model.clone_from(default);
    }
    // Kept for the same-format fast path; parsed as an object only if an edit needs it.
    let raw = format.native_wire().map(|_| RawBody::new(bytes.clone()));
    // Most requests carry no routing hints: only parse for them when the field's
    // name appears at all (a byte search is far cheaper than another JSON parse).
    let hints = if memchr::memmem::find(&bytes, b"\"switchyard\"").is_some() {
        match serde_json::from_slice::<Extension>(&bytes) {
            Ok(ext) => ext.switchyard.unwrap_or_default(),
            Err(e) => {
                return Err(GatewayError::invalid("invalid_request", format!("switchyard: {e}")));
            }
        }
    } else {
        Default::default()
    };
    let header_project = match headers.get(HEADER_PROJECT).map(|v| v.to_str()) {
        None => None,
        Some(Ok(p)) if !p.is_empty() && p.len() <= 128 && !p.chars().any(char::is_control) => {
            Some(p.to_owned())
        }
        Some(_) => {
            return Err(GatewayError::invalid(
                "invalid_project",
                format!("{HEADER_PROJECT}: expected 1-128 printable characters"),
            ));
        }
    };
    let principal = caller.principal;
    let (project, project_name) = attribute(state, &principal, header_project).await?;
    let content_cap = state.identity.content_cap(project.as_deref()).await;
    let forward_headers = FORWARDED
        .iter()
        .filter_map(|name| {
            let v = headers.get(*name)?.to_str().ok()?;
            Some(((*name).to_owned(), v.to_owned()))
        })
        .collect();
    Ok(Inbound {
        id: id.to_owned(),
        received,
        time_ms: ids::unix_ms(),
        format,
        request: std::sync::Arc::new(request),
        raw,
        forward_headers,
        principal,
        project,
        project_name,
        byok: caller.byok,
        content_cap,
        output: switchyard_core::exec::Output::Client,
        limits: Default::default(),
        hints,
    })
}

/// The project a request is attributed to, as `(id, name)`: the header (a
/// project's id or name), else the key's bound project, else the user's primary
/// project. A signed-in user may only name projects they belong to; an admin may
/// name any; a static key's header is taken as written (there is no directory).
async fn attribute(
    state: &AppState,
    principal: &switchyard_core::access::Principal,
    header: Option<String>,
) -> Result<(Option<String>, Option<String>), GatewayError> {
    let Some(named) = header else {
        let id = principal.project.clone();
        let name = id.as_deref().and_then(|id| principal.project_name(id)).map(str::to_owned);
        return Ok((id, name));
    };
    if principal.user_id.is_none() {
        return Ok((Some(named), None));
    }
    if let Some(id) = principal.project_id(&named) {
        let name = principal.project_name(id).map(str::to_owned);
        return Ok((Some(id.to_owned()), name));
    }
    if principal.role == Some(switchyard_core::access::Role::Admin) {
        return Ok(match state.identity.project(&named).await? {
            Some((id, name)) => (Some(id), Some(name)),
            None => (Some(named), None),
        });
    }
    Err(GatewayError::new(
        403,
        ErrorKind::Permission,
        "project_forbidden",
        format!("you are not a member of project {named:?}"),
    ))
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
            tracing::debug!(request_id = %id, code = e.code(), "request refused");
            return error_response(format, &e, &id);
        }
    };
    match state.gateway.execute(inbound).await {
        Err(e) => error_response(format, &e, &id),
        Ok(success) => {
            let mut resp = match success.delivery {
                Delivery::Whole(bytes) => {
                    ([("content-type", "application/json")], bytes).into_response()
                }
                Delivery::Stream(rx) => {
                    let body = Body::from_stream(stream::unfold(rx, |mut rx| async move {
                        rx.recv().await.map(|b| (Ok::<Bytes, std::convert::Infallible>(b), rx))
                    }));
                    let mut r = body.into_response();
                    let h = r.headers_mut();
                    h.insert("content-type", HeaderValue::from_static("text/event-stream"));
                    h.insert("cache-control", HeaderValue::from_static("no-cache"));
                    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
                    r
                }
                // The edge asks for its client's format (`Output::Client`): canonical
                // answers are for library callers and never reach here.
                Delivery::Response { .. } | Delivery::Events(_) => {
                    return error_response(format, &switchyard_core::exec::wrong_form(), &id);
                }
            };
            let h = resp.headers_mut();
            for (name, value) in [
                (HEADER_PROVIDER, success.served.provider.as_str()),
                (HEADER_MODEL, success.served.model.as_str()),
                (HEADER_REQUEST_ID, id.as_str()),
                (HEADER_DESCRIPTOR, success.descriptor.as_str()),
            ] {
                if let Ok(v) = HeaderValue::from_str(value)
                    && !value.is_empty()
                {
                    h.insert(name, v);
                }
            }
            resp
        }
    }
}

pub async fn count_tokens(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let format = ClientFormat::Anthropic;
    let id = ids::request_id();
    let inbound = match ingest(&state, &headers, body, format, &id, &FromUrl::default()).await {
        Ok(i) => i,
        Err(e) => return error_response(format, &e, &id),
    };
    match state.gateway.snapshot().count_tokens(&inbound).await {
        Ok(bytes) => ([("content-type", "application/json")], bytes).into_response(),
        Err(e) => error_response(format, &e, &id),
    }
}
