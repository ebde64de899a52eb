//! Token-counting endpoints: each client format's request body, counted by the
//! core ([`switchyard_core::Engine::count_tokens`]) and answered in the format's
//! own shape, with [`HEADER_ESTIMATED`] saying whether the gateway estimated it.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::TokenCount;
use switchyard_protocol::ClientFormat;

use crate::http::{HEADER_MODEL, HEADER_PROVIDER, HEADER_REQUEST_ID, error_response, ingest};
use crate::{AppState, ids};

/// `true` when the count is the gateway's estimate (the deployment's wire has no
/// counting endpoint, or every counting endpoint failed), `false` when the
/// upstream counted.
pub const HEADER_ESTIMATED: &str = "x-gateway-estimated";

/// `POST /v1/messages/count_tokens`: an Anthropic Messages body; answers
/// `{"input_tokens": N}`.
pub async fn messages(state: State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    count(state, headers, body, ClientFormat::Anthropic, |n| json!({ "input_tokens": n })).await
}

/// `POST /v1/responses/input_tokens`: an OpenAI Responses body; answers
/// `{"object": "response.input_tokens", "input_tokens": N}`.
pub async fn responses(state: State<Arc<AppState>>, headers: HeaderMap, body: Body) -> Response {
    count(
        state,
        headers,
        body,
        ClientFormat::OpenAiResponses,
        |n| json!({ "object": "response.input_tokens", "input_tokens": n }),
    )
    .await
}

/// Authenticate and parse `body` as a request in `format` (as for a generation),
/// count it, answer `encode(count)` with the count's headers, or the error in
/// `format`. A client format with a counting endpoint of its own needs only its
/// handler and its answer's shape.
pub(crate) async fn count(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
    format: ClientFormat,
    encode: fn(u64) -> Value,
) -> Response {
    let id = ids::request_id();
    let inbound =
        match ingest(&state, &headers, body, format, &id, &crate::http::FromUrl::default()).await {
            Ok(i) => i,
            Err(e) => {
                tracing::debug!(request_id = %id, code = e.code().as_str(), "token count refused");
                return error_response(format, &e, &id);
            }
        };
    match state.gateway.count_tokens(&inbound).await {
        Ok(counted) => answer(&counted, encode(counted.input_tokens), &id),
        Err(e) => error_response(format, &e, &id),
    }
}

pub(crate) fn answer(counted: &TokenCount, body: Value, id: &str) -> Response {
    let mut resp = ([("content-type", "application/json")], body.to_string()).into_response();
    let h = resp.headers_mut();
    let estimated = if counted.estimated { "true" } else { "false" };
    for (name, value) in [
        (HEADER_PROVIDER, counted.served.provider.as_str()),
        (HEADER_MODEL, counted.served.model.as_str()),
        (HEADER_REQUEST_ID, id),
        (HEADER_ESTIMATED, estimated),
    ] {
        if let Ok(v) = HeaderValue::from_str(value)
            && !value.is_empty()
        {
            h.insert(name, v);
        }
    }
    resp
}
