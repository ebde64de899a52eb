//! Batches in OpenAI's shape: `POST /v1/files` uploads a file of requests
//! (`purpose: batch`, JSONL), `POST /v1/batches` runs it, `GET
//! /v1/batches/{id}` follows it, and its answers come back as files
//! (`GET /v1/files/{id}/content`). Files and batches are their key's: another
//! key's id is 404, as an unknown one.
//!
//! A batch runs in the background (`runner.rs`), each line through the whole
//! pipeline as the key that created it, billed at the catalog's batch prices
//! (`pricing.batch`), a record per line.

mod native;
mod runner;

use std::sync::Arc;

use axum::Json;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::GatewayError;
use switchyard_core::batches::{Batch, BatchCaller, BatchStatus, FileMeta};
use switchyard_protocol::batches::{self, Endpoint};
use switchyard_protocol::{ClientFormat, ErrorCode};

use crate::http::{HEADER_PROJECT, error_response};
use crate::{AppState, ids};

pub(crate) use runner::runner;

const FORMAT: ClientFormat = ClientFormat::OpenAiChat;

/// The purposes of the files the gateway keeps.
const BATCH: &str = "batch";
const BATCH_OUTPUT: &str = "batch_output";

fn unavailable(e: switchyard_core::batches::StoreFailure) -> GatewayError {
    tracing::warn!("batches: {e}");
    GatewayError::new(ErrorCode::StorageUnavailable, "files and batches are unavailable")
}

fn invalid(message: impl Into<String>) -> GatewayError {
    GatewayError::new(ErrorCode::InvalidRequest, message)
}

fn not_found(what: &str, id: &str) -> GatewayError {
    GatewayError::new(
        ErrorCode::NotFound,
        format!("no {what} with id {:?}", switchyard_core::util::excerpt(id)),
    )
}

fn reply(result: Result<Response, GatewayError>) -> Response {
    result.unwrap_or_else(|e| error_response(FORMAT, &e, &ids::request_id()))
}

async fn owner(state: &AppState, headers: &HeaderMap) -> Result<String, GatewayError> {
    let caller = state.identity.authenticate(headers).await?;
    Ok(crate::stateful::owner(headers, &caller.principal))
}

/// A file as OpenAI describes one.
fn file_object(f: &FileMeta) -> Value {
    json!({
        "id": f.id,
        "object": "file",
        "bytes": f.bytes,
        "created_at": f.created_ms / 1000,
        "expires_at": f.expires_ms / 1000,
        "filename": f.filename,
        "purpose": f.purpose,
        "status": "processed",
    })
}

/// `POST /v1/files`: multipart, `purpose` and `file`. Only `purpose: batch`
/// is kept, and its content must be a batch's input (checked line by line,
/// the first fault named); past `gateway.batches.max_file_bytes`, 413.
pub async fn create_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Response {
    reply(upload(&state, &headers, multipart).await)
}

async fn upload(
    state: &AppState,
    headers: &HeaderMap,
    multipart: Result<Multipart, axum::extract::multipart::MultipartRejection>,
) -> Result<Response, GatewayError> {
    let owner = owner(state, headers).await?;
    let mut multipart =
        multipart.map_err(|e| invalid(format!("expected a multipart/form-data upload: {e}")))?;
    let settings = state.gateway.snapshot().catalog.settings.batches;
    let (mut purpose, mut file) = (None, None);
    let broken = |e: axum::extract::multipart::MultipartError| invalid(format!("the upload: {e}"));
    while let Some(mut field) = multipart.next_field().await.map_err(broken)? {
        match field.name() {
            Some("purpose") => purpose = Some(field.text().await.map_err(broken)?),
            Some("file") => {
                let name = field.file_name().unwrap_or("upload.jsonl").to_owned();
                let mut content = Vec::new();
                while let Some(chunk) = field.chunk().await.map_err(broken)? {
                    if content.len() + chunk.len() > settings.max_file_bytes {
                        return Err(GatewayError::new(
                            ErrorCode::RequestTooLarge,
                            format!("the file is over {} bytes", settings.max_file_bytes),
                        ));
                    }
                    content.extend_from_slice(&chunk);
                }
                file = Some((name, content));
            }
            // OpenAI's SDKs send no other field; one is ignored as OpenAI does.
            _ => {}
        }
    }
    let purpose = purpose.ok_or_else(|| invalid("purpose: required"))?;
    if purpose != BATCH {
        return Err(invalid(format!(
            "purpose {purpose:?}: the gateway keeps files for batches only (purpose batch)"
        )));
    }
    let (filename, content) = file.ok_or_else(|| invalid("file: required"))?;
    batches::parse_input(&content).map_err(|e| invalid(format!("{filename}: {e}")))?;
    let now = ids::unix_ms();
    let meta = FileMeta {
        id: format!("file-{}", unique()),
        owner,
        purpose,
        filename,
        bytes: content.len() as u64,
        created_ms: now,
        expires_ms: now + settings.retention_hours.saturating_mul(3_600_000),
    };
    state.gateway.runtime.batches.put_file(&meta, &content).await.map_err(unavailable)?;
    Ok(Json(file_object(&meta)).into_response())
}

/// OpenAI's list: every item (a key's files and batches are few: no pages).
fn list(items: impl Iterator<Item = Value>) -> Response {
    let data: Vec<Value> = items.collect();
    Json(json!({"object": "list", "data": data, "has_more": false})).into_response()
}

/// A 128-bit random hex name.
fn unique() -> String {
    let u = switchyard_core::clock::unique;
    format!("{:016x}{:016x}", u(), u())
}

/// `GET /v1/files`.
pub async fn list_files(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let files = state.gateway.runtime.batches.files(&owner).await.map_err(unavailable)?;
            Ok(list(files.iter().map(file_object)))
        }
        .await,
    )
}

/// `GET /v1/files/{id}`.
pub async fn retrieve_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let found = state.gateway.runtime.batches.file(&owner, &id, false).await;
            let (meta, _) = found.map_err(unavailable)?.ok_or_else(|| not_found("file", &id))?;
            Ok(Json(file_object(&meta)).into_response())
        }
        .await,
    )
}

/// `GET /v1/files/{id}/content`.
pub async fn file_content(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let found = state.gateway.runtime.batches.file(&owner, &id, true).await;
            let (_, content) = found.map_err(unavailable)?.ok_or_else(|| not_found("file", &id))?;
            Ok(([("content-type", "application/jsonl")], content).into_response())
        }
        .await,
    )
}

/// `DELETE /v1/files/{id}`.
pub async fn delete_file(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let gone = state
                .gateway
                .runtime
                .batches
                .delete_file(&owner, &id)
                .await
                .map_err(unavailable)?;
            if !gone {
                return Err(not_found("file", &id));
            }
            Ok(Json(json!({"id": id, "object": "file", "deleted": true})).into_response())
        }
        .await,
    )
}

/// A batch as OpenAI describes one.
fn batch_object(b: &Batch) -> Value {
    let at = |step: &str| b.times.get(step).map(|ms| ms / 1000);
    json!({
        "id": b.id,
        "object": "batch",
        "endpoint": b.endpoint,
        "errors": (!b.errors.is_empty()).then(|| json!({"object": "list", "data": b.errors})),
        "input_file_id": b.input_file_id,
        "completion_window": b.completion_window,
        "status": b.status.as_str(),
        "output_file_id": b.output_file_id,
        "error_file_id": b.error_file_id,
        "created_at": at("created"),
        "in_progress_at": at("in_progress"),
        "expires_at": b.expires_ms / 1000,
        "finalizing_at": at("finalizing"),
        "completed_at": at("completed"),
        "failed_at": at("failed"),
        "expired_at": at("expired"),
        "cancelling_at": at("cancelling"),
        "cancelled_at": at("cancelled"),
        "request_counts": {"total": b.total, "completed": b.completed, "failed": b.failed},
        "metadata": b.metadata,
    })
}

/// `POST /v1/batches`: `{input_file_id, endpoint, completion_window: "24h",
/// metadata?}`. The file must be the caller's, of purpose `batch`, every
/// line for `endpoint`.
pub async fn create_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    reply(start(&state, &headers, &body).await)
}

async fn start(
    state: &AppState,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, GatewayError> {
    let caller = state.identity.authenticate(headers).await?;
    let owner = crate::stateful::owner(headers, &caller.principal);
    let Ok(Value::Object(req)) = serde_json::from_slice::<Value>(body) else {
        return Err(invalid("expected a JSON object"));
    };
    let text = |k: &str| req.get(k).and_then(Value::as_str);
    let file_id = text("input_file_id").ok_or_else(|| invalid("input_file_id: required"))?;
    let endpoint = text("endpoint").ok_or_else(|| invalid("endpoint: required"))?;
    let Some(endpoint) = Endpoint::parse(endpoint) else {
        return Err(invalid(format!(
            "endpoint {endpoint:?}: a batch runs {}",
            Endpoint::ALL.map(Endpoint::path).join(", ")
        )));
    };
    let window = text("completion_window").unwrap_or("24h");
    if window != "24h" {
        return Err(invalid(format!("completion_window {window:?}: only 24h")));
    }
    let metadata = req.get("metadata").filter(|m| !m.is_null()).cloned();
    if metadata.as_ref().is_some_and(|m| !m.is_object()) {
        return Err(invalid("metadata: expected an object"));
    }
    let store = &state.gateway.runtime.batches;
    let found = store.file(&owner, file_id, true).await.map_err(unavailable)?;
    let (meta, content) = found.ok_or_else(|| not_found("file", file_id))?;
    if meta.purpose != BATCH {
        return Err(invalid(format!(
            "{file_id} is not a batch input file (purpose {})",
            meta.purpose
        )));
    }
    let lines = batches::parse_input(&content).map_err(|e| invalid(e.to_string()))?;
    if let Some(n) = lines.iter().position(|l| l.endpoint != endpoint) {
        return Err(invalid(format!(
            "line {}: url {} is not the batch's endpoint {}",
            n + 1,
            lines[n].endpoint.path(),
            endpoint.path()
        )));
    }
    let now = ids::unix_ms();
    let settings = state.gateway.snapshot().catalog.settings.batches;
    let presented = crate::auth::presented(headers).filter(|k| !k.is_empty());
    let project = headers.get(HEADER_PROJECT).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut batch = Batch {
        id: format!("batch_{}", unique()),
        owner,
        caller: BatchCaller {
            key_hash: presented.map(switchyard_store::db::hash_secret),
            key_prefix: caller.principal.key_prefix.clone(),
            project,
        },
        endpoint: endpoint.path().to_owned(),
        input_file_id: file_id.to_owned(),
        completion_window: window.to_owned(),
        status: BatchStatus::Validating,
        output_file_id: None,
        error_file_id: None,
        errors: Vec::new(),
        metadata,
        times: Default::default(),
        expires_ms: now + 24 * 3_600_000,
        total: lines.len() as u64,
        completed: 0,
        failed: 0,
        lease_until_ms: 0,
        forget_ms: now + settings.retention_hours.saturating_mul(3_600_000),
        native: None,
    };
    batch.enter(BatchStatus::Validating, now);
    batch.times.insert("created".to_owned(), now);
    // Checked whole above: it runs from the next tick of a runner.
    batch.enter(BatchStatus::InProgress, now);
    store.put_batch(&batch).await.map_err(unavailable)?;
    Ok(Json(batch_object(&batch)).into_response())
}

/// `GET /v1/batches`.
pub async fn list_batches(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let batches =
                state.gateway.runtime.batches.batches(&owner).await.map_err(unavailable)?;
            Ok(list(batches.iter().map(batch_object)))
        }
        .await,
    )
}

/// `GET /v1/batches/{id}`.
pub async fn retrieve_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let found = state.gateway.runtime.batches.batch(&owner, &id).await;
            let b = found.map_err(unavailable)?.ok_or_else(|| not_found("batch", &id))?;
            Ok(Json(batch_object(&b)).into_response())
        }
        .await,
    )
}

/// `POST /v1/batches/{id}/cancel`: `cancelling` until its runner stops it
/// (the lines in flight finish; the rest go to the error file unrun).
pub async fn cancel_batch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    reply(
        async {
            let owner = owner(&state, &headers).await?;
            let store = &state.gateway.runtime.batches;
            let found = store.batch(&owner, &id).await.map_err(unavailable)?;
            let mut b = found.ok_or_else(|| not_found("batch", &id))?;
            if !b.status.is_final() && b.status != BatchStatus::Cancelling {
                b.enter(BatchStatus::Cancelling, ids::unix_ms());
                if !store.put_batch(&b).await.map_err(unavailable)? {
                    // It ended meanwhile: answer it as it is.
                    b = store.batch(&owner, &id).await.map_err(unavailable)?.unwrap_or(b);
                }
            }
            Ok((StatusCode::OK, Json(batch_object(&b))).into_response())
        }
        .await,
    )
}
