//! The batch runner every instance runs: it claims batches no other runner
//! holds (a lease, renewed as it goes), and runs each one's lines that have
//! no answer yet, a few at a time, as the key that created the batch, each
//! through the same code its endpoint's HTTP handler runs. Each answer is
//! kept as it comes, so a batch picked up again (its runner's instance
//! stopped) sends only the rest. When every line has an answer, or the batch
//! is cancelled or its window closes, the answers are gathered into its
//! output and error files.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use switchyard_core::GatewayError;
use switchyard_core::batches::{Batch, BatchStatus, FileMeta, LineResult};
use switchyard_core::exec::batch::Prefetched;
use switchyard_core::exec::{CacheMode, Inbound};
use switchyard_protocol::ClientFormat;
use switchyard_protocol::batches::{self, Endpoint, InputLine};

use super::{BATCH_OUTPUT, native, unique};
use crate::http::{FromUrl, HEADER_PROJECT, HEADER_REQUEST_ID, Payload, error_response};
use crate::identity::Caller;
use crate::{AppState, ids};

/// Batches one instance runs at once.
const RUNNING: usize = 4;

/// The most one line's answer may be (an embeddings answer of many inputs is
/// the largest a batch's line gives).
const MAX_ANSWER: usize = 64 << 20;

/// Times a line the gateway's own limits refuse (429) is tried again, after
/// the wait they name, before it is answered with the refusal.
const LIMIT_RETRIES: u32 = 20;

/// Claim and run batches every `gateway.batches.poll_interval_ms`, until
/// dropped (the batches it runs stop with it, and are picked up again).
pub(crate) async fn runner(state: Arc<AppState>) {
    let mut running = tokio::task::JoinSet::new();
    loop {
        let every = state.gateway.snapshot().catalog.settings.batches.poll_interval_ms.max(10);
        tokio::time::sleep(Duration::from_millis(every)).await;
        while running.try_join_next().is_some() {}
        let room = RUNNING.saturating_sub(running.len());
        if room == 0 {
            continue;
        }
        let lease = lease_ms(&state);
        let claimed = state.gateway.runtime.batches.claim_batches(ids::unix_ms(), lease, room);
        match claimed.await {
            Ok(list) => {
                for b in list {
                    running.spawn(run(Arc::clone(&state), b));
                }
            }
            Err(e) => tracing::warn!("batches: {e}"),
        }
    }
}

/// How long a runner holds a batch between renewals (`gateway.batches.lease_ms`).
fn lease_ms(state: &AppState) -> u64 {
    state.gateway.snapshot().catalog.settings.batches.lease_ms.max(1)
}

/// Why a batch stops before every line ran.
enum Stop {
    Cancelled,
    Expired,
    Failed(String, String),
}

async fn run(state: Arc<AppState>, mut batch: Batch) {
    let store = Arc::clone(&state.gateway.runtime.batches);
    let prepared = prepare(&state, &batch).await;
    let (caller, lines) = match prepared {
        Ok(p) => p,
        Err((code, message)) => {
            finish(&state, &mut batch, &[], Some(Stop::Failed(code, message))).await;
            return;
        }
    };
    let answered: HashSet<u32> = match store.results(&batch.id).await {
        Ok(r) => r.into_iter().map(|r| r.index).collect(),
        Err(e) => {
            tracing::warn!(batch = %batch.id, "batches: {e}");
            return;
        }
    };
    // Which lines providers' own batch APIs run is decided once, before any
    // line runs here.
    if batch.native.is_none()
        && batch.status != BatchStatus::Cancelling
        && !native::submit(&state, &caller, &mut batch, &lines, &answered).await
    {
        return;
    }
    let handed: HashSet<u32> = batch
        .native
        .iter()
        .flatten()
        .filter(|p| p.holds_lines())
        .flat_map(|p| p.lines.iter().copied())
        .collect();
    let pending: Vec<(u32, &InputLine)> = (0u32..)
        .zip(&lines)
        .filter(|(i, _)| !answered.contains(i) && !handed.contains(i))
        .collect();
    let concurrency = state.gateway.snapshot().catalog.settings.batches.concurrency.max(1);
    let mut stop = None;
    for chunk in pending.chunks(concurrency) {
        match stopped(&state, &mut batch).await {
            Ok(None) => {}
            Ok(Some(s)) => {
                stop = Some(s);
                break;
            }
            Err(()) => return,
        }
        let answers = futures_util::future::join_all(
            chunk.iter().map(|(i, line)| answer(&state, &caller, &batch, (*i, line), None)),
        )
        .await;
        for r in &answers {
            if let Err(e) = store.put_result(&batch.id, r).await {
                // Not kept: it runs again when the batch is picked up again.
                tracing::warn!(batch = %batch.id, "batches: {e}");
                return;
            }
            if r.ok {
                batch.completed += 1;
            } else {
                batch.failed += 1;
            }
        }
        batch.lease_until_ms = ids::unix_ms() + lease_ms(&state);
        match store.put_batch(&batch).await {
            Ok(true) => {}
            // Cancelled or ended elsewhere: the next round reads which.
            Ok(false) => {}
            Err(e) => tracing::warn!(batch = %batch.id, "batches: {e}"),
        }
    }
    if batch.native.iter().flatten().any(|p| p.pending() || !p.holds_lines()) {
        if stop.is_none() {
            match stopped(&state, &mut batch).await {
                Ok(s) => stop = s,
                Err(()) => return,
            }
        }
        let stopping = stop.is_some();
        let next_ms = match native::follow(&state, &caller, &mut batch, &lines, stopping).await {
            native::Followed::Waiting => {
                Some(state.gateway.snapshot().catalog.settings.batches.provider_poll_interval_ms)
            }
            // Its lines run here, from the next claim.
            native::Followed::Refused => Some(0),
            native::Followed::Done(end) => {
                stop = stop.or(match end {
                    Some("expired") => Some(Stop::Expired),
                    Some(_) => Some(Stop::Cancelled),
                    None => None,
                });
                None
            }
        };
        if let Some(ms) = next_ms {
            batch.lease_until_ms = ids::unix_ms() + ms;
            native::put(&state, &mut batch).await;
            return;
        }
    }
    finish(&state, &mut batch, &lines, stop).await;
}

/// Whether the batch is to stop before its next lines run: cancelled meanwhile
/// (by its owner, on any instance), or its window closed. `Err`: it ended
/// elsewhere, or the store did not answer; this runner lets it go.
async fn stopped(state: &AppState, batch: &mut Batch) -> Result<Option<Stop>, ()> {
    let store = &state.gateway.runtime.batches;
    match store.batch(&batch.owner, &batch.id).await {
        Ok(Some(now)) if now.status == BatchStatus::Cancelling => {
            batch.status = now.status;
            batch.times = now.times;
            return Ok(Some(Stop::Cancelled));
        }
        Ok(Some(now)) if now.status.is_final() => return Err(()),
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(batch = %batch.id, "batches: {e}");
            return Err(());
        }
    }
    Ok((ids::unix_ms() >= batch.expires_ms).then_some(Stop::Expired))
}

/// Who the batch runs as and its lines; `Err`: why it cannot run at all.
async fn prepare(
    state: &AppState,
    batch: &Batch,
) -> Result<(Caller, Vec<InputLine>), (String, String)> {
    let caller = state
        .identity
        .caller_by_hash(batch.caller.key_hash.as_deref(), batch.caller.key_prefix.as_deref())
        .await
        .map_err(|e| ("unavailable".to_owned(), e.to_string()))?
        .ok_or_else(|| {
            (
                "invalid_api_key".to_owned(),
                "the key that created the batch is no longer valid".to_owned(),
            )
        })?;
    let store = &state.gateway.runtime.batches;
    let found = store.file(&batch.owner, &batch.input_file_id, true).await;
    let (_, content) = found
        .map_err(|e| ("unavailable".to_owned(), e.to_string()))?
        .ok_or_else(|| ("file_not_found".to_owned(), "the input file was deleted".to_owned()))?;
    let lines =
        batches::parse_input(&content).map_err(|e| ("invalid_file".to_owned(), e.to_string()))?;
    Ok((caller, lines))
}

/// The headers a batch's line is run with: its project's.
pub(super) fn line_headers(batch: &Batch) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(v) = batch.caller.project.as_deref().and_then(|p| HeaderValue::from_str(p).ok()) {
        headers.insert(HEADER_PROJECT, v);
    }
    headers
}

/// One line, answered as its endpoint answers it over HTTP; `prefetched`:
/// with the answer its provider's batch API gave it (`native.rs`).
pub(super) async fn answer(
    state: &AppState,
    caller: &Caller,
    batch: &Batch,
    (index, line): (u32, &InputLine),
    prefetched: Option<Arc<Prefetched>>,
) -> LineResult {
    let headers = line_headers(batch);
    let body = Bytes::from(serde_json::to_vec(&line.body).unwrap_or_default());
    let mut tries = 0;
    let (status, request_id, answer) = loop {
        let resp =
            send(state, &headers, caller, batch, line, body.clone(), prefetched.clone()).await;
        let status = resp.status().as_u16();
        let wait = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(Duration::from_secs(1), |s| Duration::from_secs(s.clamp(1, 60)));
        let request_id = resp
            .headers()
            .get(HEADER_REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let bytes = axum::body::to_bytes(resp.into_body(), MAX_ANSWER).await.unwrap_or_default();
        // The caller's own limits: wait their turn, as a batch's lines do.
        if status == 429 && tries < LIMIT_RETRIES && ids::unix_ms() < batch.expires_ms {
            tries += 1;
            tokio::time::sleep(wait).await;
            continue;
        }
        let answer: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        break (status, request_id, answer);
    };
    let id = format!("batch_req_{}", unique());
    LineResult {
        index,
        ok: (200..300).contains(&status),
        line: batches::output_line(&id, &line.custom_id, status, &request_id, &answer),
    }
}

async fn send(
    state: &AppState,
    headers: &HeaderMap,
    caller: &Caller,
    batch: &Batch,
    line: &InputLine,
    body: Bytes,
    prefetched: Option<Arc<Prefetched>>,
) -> Response {
    let format = match line.endpoint {
        Endpoint::ChatCompletions => ClientFormat::OpenAiChat,
        Endpoint::Responses => ClientFormat::OpenAiResponses,
        Endpoint::Embeddings => {
            let line = Payload::Line {
                caller: Box::new(caller.clone()),
                bytes: body,
                batch: batch.id.clone(),
            };
            return crate::embeddings::openai_line(state, headers, line).await;
        }
    };
    let id = ids::request_id();
    match line_inbound(state, headers, caller, batch, body, format, &id).await {
        Ok(mut inbound) => {
            if prefetched.is_some() {
                // The answer is in hand: neither the cache nor an identical
                // request's call stands in for it.
                inbound.cache = CacheMode::Skip;
                inbound.prefetched = prefetched;
            }
            crate::http::answer(state, inbound, format, &id).await
        }
        Err(e) => error_response(format, &e, &id),
    }
}

/// A batch's line as the pipeline takes it, run as the batch's caller.
pub(super) async fn line_inbound(
    state: &AppState,
    headers: &HeaderMap,
    caller: &Caller,
    batch: &Batch,
    body: Bytes,
    format: ClientFormat,
    id: &str,
) -> Result<Inbound, GatewayError> {
    let url = FromUrl::default();
    let received = Instant::now();
    let mut inbound =
        crate::http::inbound(state, headers, caller.clone(), body, format, id, received, &url)
            .await?;
    inbound.batch = Some(batch.id.clone());
    Ok(inbound)
}

/// Gather the answers into the output and error files, and end the batch:
/// completed, or as `stop` says (the lines that never ran go to the error
/// file, each saying why).
async fn finish(state: &AppState, batch: &mut Batch, lines: &[InputLine], stop: Option<Stop>) {
    let store = &state.gateway.runtime.batches;
    let now = ids::unix_ms();
    batch.lease_until_ms = now + lease_ms(state);
    batch.enter(BatchStatus::Finalizing, now);
    let results = match store.results(&batch.id).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(batch = %batch.id, "batches: {e}");
            return;
        }
    };
    let answered: HashSet<u32> = results.iter().map(|r| r.index).collect();
    let mut output = String::new();
    let mut errors = String::new();
    for r in &results {
        let file = if r.ok { &mut output } else { &mut errors };
        file.push_str(&r.line);
        file.push('\n');
    }
    let unrun = match &stop {
        Some(Stop::Cancelled) => Some(("batch_cancelled", "the batch was cancelled before it ran")),
        Some(Stop::Expired) => Some(("batch_expired", "the batch's window closed before it ran")),
        _ => None,
    };
    if let Some((code, message)) = unrun {
        for (i, line) in (0u32..).zip(lines) {
            if !answered.contains(&i) {
                let id = format!("batch_req_{}", unique());
                errors.push_str(&batches::error_line(&id, &line.custom_id, code, message));
                errors.push('\n');
            }
        }
    }
    batch.completed = results.iter().filter(|r| r.ok).count() as u64;
    batch.failed = results.len() as u64 - batch.completed;
    let retention = state.gateway.snapshot().catalog.settings.batches.retention_hours;
    let keep = |content: &str, which: &str| FileMeta {
        id: format!("file-{}", unique()),
        owner: batch.owner.clone(),
        purpose: BATCH_OUTPUT.to_owned(),
        filename: format!("{}_{which}.jsonl", batch.id),
        bytes: content.len() as u64,
        created_ms: now,
        expires_ms: now + retention.saturating_mul(3_600_000),
    };
    for (content, which) in [(&output, "output"), (&errors, "error")] {
        if content.is_empty() {
            continue;
        }
        let meta = keep(content, which);
        if let Err(e) = store.put_file(&meta, content.as_bytes()).await {
            tracing::warn!(batch = %batch.id, "batches: {e}");
            return;
        }
        match which {
            "output" => batch.output_file_id = Some(meta.id),
            _ => batch.error_file_id = Some(meta.id),
        }
    }
    let end = match stop {
        None => BatchStatus::Completed,
        Some(Stop::Cancelled) => BatchStatus::Cancelled,
        Some(Stop::Expired) => BatchStatus::Expired,
        Some(Stop::Failed(code, message)) => {
            batch.errors.push(json!({"code": code, "message": message, "line": null}));
            BatchStatus::Failed
        }
    };
    batch.enter(end, ids::unix_ms());
    match store.put_batch(batch).await {
        Ok(_) => {
            tracing::info!(batch = %batch.id, status = end.as_str(), completed = batch.completed, failed = batch.failed, "batch ended")
        }
        Err(e) => tracing::warn!(batch = %batch.id, "batches: {e}"),
    }
}
