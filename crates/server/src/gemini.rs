//! Gemini's own endpoints (`/v1beta`), for Google's SDKs and Gemini CLI
//! (`GOOGLE_GEMINI_BASE_URL`):
//!
//! - `POST /v1beta/models/{model}:generateContent`, and
//!   `:streamGenerateContent?alt=sse` (SSE, the only stream form served);
//! - `POST /v1beta/models/{model}:countTokens`: `{"totalTokens": N}`;
//! - `POST /v1beta/models/{model}:embedContent` and `:batchEmbedContents`
//!   ([`crate::embeddings`]);
//! - `GET /v1beta/models` and `GET /v1beta/models/{model}` ([`crate::models`]).
//!
//! The model is in the path (with or without a `models/` prefix), so the body never
//! names it: it is set on the parsed request ([`FromUrl`]). The gateway key comes in
//! `x-goog-api-key` (or any header the other formats use) or in `?key=`, which is
//! read here and never logged (nothing in the gateway logs a request's URL). Every
//! error, unknown `/v1beta` endpoints included, is Google's
//! `{"error":{"code","message","status"}}`.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use switchyard_core::GatewayError;
use switchyard_core::util::excerpt;
use switchyard_protocol::{ClientFormat, ErrorCode};

use crate::embeddings::GeminiMethod;
use crate::http::{FromUrl, error_response, generate, inbound};
use crate::{AppState, ids, limits, models};

const FORMAT: ClientFormat = ClientFormat::Gemini;

/// The query parameters the Gemini endpoints read; others (`$alt`, `prettyPrint`,
/// …) are ignored.
#[derive(Debug, Default, serde::Deserialize)]
pub struct GeminiQuery {
    /// The gateway key, as Google's API takes its own.
    key: Option<String>,
    /// `sse` for an SSE stream.
    alt: Option<String>,
    #[serde(rename = "pageSize")]
    page_size: Option<String>,
    #[serde(rename = "pageToken")]
    page_token: Option<String>,
}

/// The query; `None` when it is malformed ([`bad_query`]).
fn query(q: Result<Query<GeminiQuery>, QueryRejection>) -> Option<GeminiQuery> {
    q.ok().map(|Query(q)| q)
}

/// A malformed query, refused without quoting it: it may hold the key.
fn bad_query() -> Response {
    let err = GatewayError::new(ErrorCode::InvalidRequest, "the query string is malformed");
    error_response(FORMAT, &err, &ids::request_id())
}

/// The headers with `?key=` as `x-goog-api-key`, unless a header already carries a key
/// (a header wins, as the other formats' headers do among themselves).
fn with_query_key(mut headers: HeaderMap, key: Option<&str>) -> HeaderMap {
    if let Some(key) = key
        && crate::auth::presented(&headers).is_none()
        && let Ok(value) = HeaderValue::from_str(key)
    {
        headers.insert("x-goog-api-key", value);
    }
    headers
}

fn not_found(what: &str) -> Response {
    let err = GatewayError::new(ErrorCode::NotFound, format!("no endpoint {}", excerpt(what)));
    error_response(FORMAT, &err, &ids::request_id())
}

/// The model a `/v1beta/models/...` path names: Google's SDKs write `models/` once
/// (part of the route); a client that wrote it again is read the same.
fn model_of(target: &str) -> &str {
    target.strip_prefix("models/").unwrap_or(target)
}

/// `GET /v1beta/models`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    q: Result<Query<GeminiQuery>, QueryRejection>,
) -> Response {
    let Some(q) = query(q) else { return bad_query() };
    let headers = with_query_key(headers, q.key.as_deref());
    models::gemini_list(&state, &headers, q.page_size.as_deref(), q.page_token.as_deref()).await
}

/// `GET /v1beta/models/{model}`.
pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(target): Path<String>,
    q: Result<Query<GeminiQuery>, QueryRejection>,
) -> Response {
    let Some(q) = query(q) else { return bad_query() };
    let headers = with_query_key(headers, q.key.as_deref());
    models::retrieve_as(&state, &headers, model_of(&target), FORMAT).await
}

/// `POST /v1beta/models/{model}:{method}`.
pub async fn post(
    state: State<Arc<AppState>>,
    headers: HeaderMap,
    Path(target): Path<String>,
    q: Result<Query<GeminiQuery>, QueryRejection>,
    body: Body,
) -> Response {
    let Some(q) = query(q) else { return bad_query() };
    let Some((model, method)) = model_of(&target).rsplit_once(':') else {
        return not_found(&format!("/v1beta/models/{target}"));
    };
    let headers = with_query_key(headers, q.key.as_deref());
    let url = |stream| FromUrl { model: Some(model.to_owned()), stream };
    match method {
        "generateContent" => generate(state, headers, body, FORMAT, url(false)).await,
        "streamGenerateContent" if q.alt.as_deref() == Some("sse") => {
            generate(state, headers, body, FORMAT, url(true)).await
        }
        "streamGenerateContent" => {
            // Without `alt=sse` Google streams one JSON array, which is not served:
            // an SSE answer would break such a client.
            let err = GatewayError::new(
                ErrorCode::StreamFormUnsupported,
                "streamGenerateContent is served as SSE only: add ?alt=sse",
            );
            error_response(FORMAT, &err, &ids::request_id())
        }
        "countTokens" => count_tokens(&state, &headers, body, url(false)).await,
        "embedContent" => {
            crate::embeddings::gemini(&state, &headers, body, model, GeminiMethod::One).await
        }
        "batchEmbedContents" => {
            crate::embeddings::gemini(&state, &headers, body, model, GeminiMethod::Batch).await
        }
        _ => not_found(&format!("/v1beta/models/{target}")),
    }
}

/// `:countTokens`: the core's count (the upstream's own where it has one, else an
/// estimate, marked by `x-gateway-estimated`), as `{"totalTokens": N}`. The body is a `generateContent` body, or one
/// wrapped in `generateContentRequest` (as Google's API also takes it).
async fn count_tokens(state: &AppState, headers: &HeaderMap, body: Body, url: FromUrl) -> Response {
    let id = ids::request_id();
    let received = Instant::now();
    let counted = async {
        let max_body_bytes = state.gateway.snapshot().catalog.settings.max_body_bytes;
        let caller = state.identity.authenticate(headers).await?;
        let bytes = limits::read_body(body, max_body_bytes).await?;
        let bytes = unwrap_count_request(bytes);
        let inbound = inbound(state, headers, caller, bytes, FORMAT, &id, received, &url).await?;
        state.gateway.count_tokens(&inbound).await
    };
    match counted.await {
        Ok(counted) => {
            let body = serde_json::json!({ "totalTokens": counted.input_tokens });
            crate::count::answer(&counted, body, &id)
        }
        Err(e) => error_response(FORMAT, &e, &id),
    }
}

/// The `generateContent` body inside `{"generateContentRequest": {...}}`, else the
/// body as it is.
fn unwrap_count_request(bytes: axum::body::Bytes) -> axum::body::Bytes {
    if memchr::memmem::find(&bytes, b"\"generateContentRequest\"").is_none() {
        return bytes;
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Wrapped<'a> {
        #[serde(borrow)]
        generate_content_request: Option<&'a serde_json::value::RawValue>,
    }
    match serde_json::from_slice::<Wrapped<'_>>(&bytes) {
        Ok(Wrapped { generate_content_request: Some(inner) }) => {
            axum::body::Bytes::copy_from_slice(inner.get().as_bytes())
        }
        _ => bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_the_model_with_or_without_its_prefix() {
        assert_eq!(
            model_of("m-openai:generateContent").rsplit_once(':'),
            Some(("m-openai", "generateContent"))
        );
        assert_eq!(model_of("models/m:countTokens").rsplit_once(':'), Some(("m", "countTokens")));
        assert_eq!(model_of("vendor/m"), "vendor/m");
    }

    #[test]
    fn a_wrapped_count_request_is_unwrapped() {
        let wrapped = br#"{"generateContentRequest": {"model": "models/m", "contents": []}}"#;
        assert_eq!(
            &unwrap_count_request(axum::body::Bytes::from_static(wrapped))[..],
            br#"{"model": "models/m", "contents": []}"#
        );
        let plain = br#"{"contents": []}"#;
        assert_eq!(&unwrap_count_request(axum::body::Bytes::from_static(plain))[..], plain);
    }

    #[test]
    fn the_query_key_stands_in_only_for_a_missing_header() {
        let h = with_query_key(HeaderMap::new(), Some("sk-q"));
        assert_eq!(crate::auth::presented(&h), Some("sk-q"));
        let mut given = HeaderMap::new();
        given.insert("x-goog-api-key", HeaderValue::from_static("sk-h"));
        assert_eq!(crate::auth::presented(&with_query_key(given, Some("sk-q"))), Some("sk-h"));
    }
}
