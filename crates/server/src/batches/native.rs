//! A batch's lines handed to providers' own batch APIs (`batch_api: true`),
//! and their answers brought back.
//!
//! Before any line runs, each chat line is planned as it would run
//! ([`Snapshot::native_line`]); the lines whose first deployment's provider
//! has its batch API on are grouped by deployment and submitted, one provider
//! batch a group (more where the provider caps a batch's size). A group the
//! provider refuses is run by the gateway instead, as is every other line.
//! The runner then asks after each provider batch every
//! `gateway.batches.provider_poll_interval_ms`; once one ends, its answers are
//! read back a line at a time and each line is run through the pipeline with
//! its answer in hand ([`Prefetched`]), so it is admitted, translated,
//! metered at the batch price and recorded as a line the gateway ran. A line
//! whose answer is kept is never read back again, so a runner that stops
//! halfway is followed by another that reads the rest.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use switchyard_core::Snapshot;
use switchyard_core::batches::{Batch, BatchStatus, NativePart, PartState};
use switchyard_core::exec::batch::Prefetched;
use switchyard_protocol::ClientFormat;
use switchyard_protocol::batches::native::{self, BatchApi, End, Fetch, Outcome, State};
use switchyard_protocol::batches::{Endpoint, InputLine};

use super::runner::{answer, line_headers, line_inbound};
use crate::identity::Caller;
use crate::{AppState, ids};

/// How long after a batch's window closes its provider batches are still
/// asked after (asked to stop at the close), before their lines are given up.
const GRACE_MS: u64 = 3_600_000;

/// Plan the lines not yet answered and hand those a provider's batch API
/// takes to it, each provider batch kept in `batch.native` as soon as the
/// provider has it (a crash in between would submit it again). The decision
/// is kept first, with no parts: a crash before any is kept leaves every line
/// to the gateway, never to a second submission. `false`: the batch could
/// not be kept (this runner lets it go).
pub(super) async fn submit(
    state: &AppState,
    caller: &Caller,
    batch: &mut Batch,
    lines: &[InputLine],
    answered: &HashSet<u32>,
) -> bool {
    let snapshot = state.gateway.snapshot();
    let runtime = &state.gateway.runtime;
    let headers = line_headers(batch);
    type Group = (BatchApi, Vec<(u32, Value)>);
    let mut groups: BTreeMap<(String, String, Option<String>), Group> = BTreeMap::new();
    for (i, line) in (0u32..).zip(lines) {
        if answered.contains(&i) || line.endpoint != Endpoint::ChatCompletions {
            continue;
        }
        let body = Bytes::from(serde_json::to_vec(&line.body).unwrap_or_default());
        let id = ids::request_id();
        let format = ClientFormat::OpenAiChat;
        let Ok(inbound) = line_inbound(state, &headers, caller, batch, body, format, &id).await
        else {
            // Refused as it is: the gateway answers it so, in the client's words.
            continue;
        };
        let Some(n) = snapshot.native_line(&inbound, runtime) else { continue };
        if !n.api.runs(line.endpoint) {
            continue;
        }
        let group = groups
            .entry((n.provider, n.upstream_model, n.credential))
            .or_insert_with(|| (n.api, Vec::new()));
        group.1.push((i, n.body));
    }
    if !keep(state, batch, None).await {
        return false;
    }
    for ((provider, model, credential), (api, items)) in groups {
        for chunk in split(items, api) {
            // Too few for the API (Bedrock runs 100 at least): run here.
            if chunk.len() < api.min_requests() {
                continue;
            }
            // Cancelled meanwhile: no more go out; the rest are the gateway's
            // to end.
            if batch.status == BatchStatus::Cancelling {
                return true;
            }
            let lines: Vec<u32> = chunk.iter().map(|(i, _)| *i).collect();
            let name = format!("{}-{}", batch.id, batch.native.as_ref().map_or(0, Vec::len));
            let to =
                Target { provider: &provider, credential: credential.as_deref(), model: &model };
            match create(&snapshot, to, api, &name, chunk).await {
                Ok(upstream_id) => {
                    let count = lines.len();
                    let part = NativePart {
                        provider: provider.clone(),
                        upstream_model: model.clone(),
                        credential: credential.clone(),
                        upstream_id: upstream_id.clone(),
                        lines,
                        state: PartState::Running,
                    };
                    if !keep(state, batch, Some(part)).await {
                        return false;
                    }
                    tracing::info!(batch = %batch.id, provider = %provider, upstream = %upstream_id, lines = count, "batch handed to the provider's batch API");
                }
                Err(reason) => {
                    tracing::warn!(batch = %batch.id, provider = %provider, "the provider's batch API refused the batch, so the gateway runs its lines: {reason}");
                }
            }
        }
    }
    true
}

/// Keep `batch` with `part` added to its provider batches (`None`: with
/// none yet, the decision made). Whether it was kept.
async fn keep(state: &AppState, batch: &mut Batch, part: Option<NativePart>) -> bool {
    let parts = batch.native.get_or_insert_with(Vec::new);
    parts.extend(part);
    batch.lease_until_ms =
        ids::unix_ms() + state.gateway.snapshot().catalog.settings.batches.lease_ms.max(1);
    put(state, batch).await
}

/// Keep what this runner knows of `batch` (its provider batches, its next
/// lease). A cancel that came meanwhile is kept with it (the store refuses a
/// write that would undo it): the batch is written again as cancelling, so
/// its provider batches are still followed, and stopped. Whether it was kept.
pub(super) async fn put(state: &AppState, batch: &mut Batch) -> bool {
    let store = &state.gateway.runtime.batches;
    match store.put_batch(batch).await {
        Ok(true) => return true,
        Ok(false) => {}
        Err(e) => {
            tracing::error!(batch = %batch.id, "batches: the batch was not kept: {e}");
            return false;
        }
    }
    match store.batch(&batch.owner, &batch.id).await {
        Ok(Some(mut now)) if !now.status.is_final() => {
            now.native = batch.native.take();
            now.lease_until_ms = batch.lease_until_ms;
            now.completed = batch.completed;
            now.failed = batch.failed;
            *batch = now;
            matches!(store.put_batch(batch).await, Ok(true))
        }
        _ => false,
    }
}

/// `items` in batches within the API's caps on requests and bytes.
fn split(items: Vec<(u32, Value)>, api: BatchApi) -> Vec<Vec<(u32, Value)>> {
    let mut out: Vec<Vec<(u32, Value)>> = Vec::new();
    let mut bytes = 0usize;
    for item in items {
        // The line's framing (`custom_id`, `url`, …) is well under 256 bytes.
        let size = item.1.to_string().len() + 256;
        let full = out
            .last()
            .is_none_or(|last| last.len() >= api.max_requests() || bytes + size > api.max_bytes());
        if full {
            out.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(last) = out.last_mut() {
            last.push(item);
        }
    }
    out
}

/// Which deployment a provider batch runs on, and the key it goes with.
#[derive(Clone, Copy)]
struct Target<'a> {
    provider: &'a str,
    credential: Option<&'a str>,
    model: &'a str,
}

/// Submit one provider batch (`name`: unique to it, for what it stages): its
/// id there.
async fn create(
    snapshot: &Snapshot,
    to: Target<'_>,
    api: BatchApi,
    name: &str,
    chunk: Vec<(u32, Value)>,
) -> Result<String, String> {
    let Target { provider, credential, model } = to;
    let spec = snapshot
        .catalog
        .provider(provider)
        .ok_or_else(|| format!("provider {provider} is no longer configured"))?;
    let place = native::Place {
        endpoint: &spec.endpoint,
        staging: spec.batch_staging.as_ref(),
        model,
        name,
    };
    let requests: Vec<native::Request> = chunk
        .into_iter()
        .map(|(i, body)| native::Request { custom_id: api.custom_id(i), body })
        .collect();
    let uploaded = match api.upload(place, &requests) {
        Some(call) => {
            let body = ok(snapshot.batch_call(provider, credential, call).await, "upload")?;
            Some(api.parse_uploaded(place, &body).map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let call = api.create(place, &requests, uploaded.as_deref());
    let body = ok(snapshot.batch_call(provider, credential, call).await, "create")?;
    Ok(api.parse_progress(&body).map_err(|e| e.to_string())?.id)
}

/// A call's body where it was answered with a 2xx.
fn ok(answer: Result<(u16, Bytes), String>, what: &str) -> Result<Bytes, String> {
    match answer? {
        (200..=299, body) => Ok(body),
        (status, body) => {
            Err(format!("{what}: status {status}: {}", String::from_utf8_lossy(&body)))
        }
    }
}

/// Where a batch's provider batches are after one round of asking.
pub(super) enum Followed {
    /// Some are still running: ask again later.
    Waiting,
    /// A provider refused its batch as a whole: its lines are the gateway's
    /// to run, at once.
    Refused,
    /// Every one has ended and its answers are kept: how the last that did
    /// not complete ended (`expired`, `cancelled`), if any did not.
    Done(Option<&'static str>),
}

/// Ask after each of `batch`'s provider batches still running, once; read
/// back the answers of those that ended. `stopping`: the batch was
/// cancelled, or its window closed: provider batches still running are asked
/// to stop.
pub(super) async fn follow(
    state: &AppState,
    caller: &Caller,
    batch: &mut Batch,
    lines: &[InputLine],
    stopping: bool,
) -> Followed {
    let Some(mut parts) = batch.native.take() else { return Followed::Done(None) };
    let given_up = ids::unix_ms() >= batch.expires_ms.saturating_add(GRACE_MS);
    let (mut waiting, mut refused) = (false, false);
    for part in parts.iter_mut().filter(|p| p.pending()) {
        if given_up {
            tracing::warn!(batch = %batch.id, upstream = %part.upstream_id, "the provider batch did not end within an hour of the batch's window: its lines are given up");
            part.state = PartState::Collected { end: "expired".to_owned() };
            continue;
        }
        match step(state, caller, batch, lines, part, stopping).await {
            Ok(()) => {}
            Err(message) => {
                tracing::warn!(batch = %batch.id, upstream = %part.upstream_id, "provider batch: {message}")
            }
        }
        waiting |= part.pending();
        refused |= !part.holds_lines();
    }
    let end = parts.iter().rev().find_map(|p| match &p.state {
        PartState::Collected { end } if end == "expired" => Some("expired"),
        PartState::Collected { end } if end == "cancelled" => Some("cancelled"),
        _ => None,
    });
    batch.native = Some(parts);
    if waiting {
        Followed::Waiting
    } else if refused {
        Followed::Refused
    } else {
        Followed::Done(end)
    }
}

/// One provider batch asked after (and asked to stop, where `stopping`);
/// its answers read back if it has ended.
async fn step(
    state: &AppState,
    caller: &Caller,
    batch: &Batch,
    lines: &[InputLine],
    part: &mut NativePart,
    stopping: bool,
) -> Result<(), String> {
    let snapshot = state.gateway.snapshot();
    let (provider, credential) = (part.provider.clone(), part.credential.clone());
    let credential = credential.as_deref();
    let spec = snapshot
        .catalog
        .provider(&provider)
        .ok_or_else(|| format!("provider {provider} is no longer configured"))?;
    let api =
        spec.batch_api.ok_or_else(|| format!("provider {provider}'s batch API is no longer on"))?;
    let (endpoint, staging) = (spec.endpoint.clone(), spec.batch_staging.clone());
    if stopping && part.state == PartState::Running {
        let call = api.cancel(&endpoint, staging.as_ref(), &part.upstream_id);
        ok(snapshot.batch_call(&provider, credential, call).await, "cancel")?;
        part.state = PartState::Stopping;
    }
    let call = api.status(&endpoint, staging.as_ref(), &part.upstream_id);
    let body = ok(snapshot.batch_call(&provider, credential, call).await, "status")?;
    let progress = api.parse_progress(&body).map_err(|e| e.to_string())?;
    let end = match &progress.state {
        State::Running | State::Cancelling => return Ok(()),
        State::Ended(End::Failed(reason)) => {
            tracing::warn!(batch = %batch.id, upstream = %part.upstream_id, "the provider's batch failed, so the gateway runs its lines: {reason}");
            part.state = PartState::Refused { reason: reason.clone() };
            return Ok(());
        }
        State::Ended(End::Completed) => "completed",
        State::Ended(End::Expired) => "expired",
        State::Ended(End::Cancelled) => "cancelled",
    };
    let store = &state.gateway.runtime.batches;
    let mut answered: HashSet<u32> = store
        .results(&batch.id)
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|r| r.index)
        .collect();
    let concurrency = snapshot.catalog.settings.batches.concurrency.max(1);
    let mut files = Vec::new();
    for fetch in api.results(&endpoint, staging.as_ref(), &progress).map_err(|e| e.to_string())? {
        match fetch {
            Fetch::File(call) => files.push(call),
            Fetch::Listing(call) => {
                let body = ok(snapshot.batch_call(&provider, credential, call).await, "listing")?;
                let listed = api.parse_listing(staging.as_ref(), &body);
                files.extend(listed.map_err(|e| e.to_string())?);
            }
        }
    }
    for call in files {
        let mut results = snapshot.batch_results(&provider, credential, call).await?;
        let mut ready: Vec<(u32, Prefetched)> = Vec::new();
        while let Some(a) = results.next().await? {
            let Some(i) = api.line_of(&a.custom_id) else { continue };
            // Only the lines this batch handed it, each once.
            if part.lines.binary_search(&i).is_err() || !answered.insert(i) {
                continue;
            }
            let Outcome::Answered { status, body } = a.outcome else { continue };
            ready.push((
                i,
                Prefetched {
                    provider: provider.clone(),
                    upstream_model: part.upstream_model.clone(),
                    upstream_batch: part.upstream_id.clone(),
                    status,
                    body: Bytes::from(body),
                },
            ));
            if ready.len() >= concurrency {
                deliver(state, caller, batch, lines, std::mem::take(&mut ready)).await?;
            }
        }
        deliver(state, caller, batch, lines, ready).await?;
    }
    part.state = PartState::Collected { end: end.to_owned() };
    Ok(())
}

/// Run answered lines through the pipeline with their answers, and keep what
/// each comes to.
async fn deliver(
    state: &AppState,
    caller: &Caller,
    batch: &Batch,
    lines: &[InputLine],
    ready: Vec<(u32, Prefetched)>,
) -> Result<(), String> {
    let runs = ready.into_iter().filter_map(|(i, p)| {
        let line = lines.get(i as usize)?;
        Some(answer(state, caller, batch, (i, line), Some(Arc::new(p))))
    });
    for r in futures_util::future::join_all(runs).await {
        state.gateway.runtime.batches.put_result(&batch.id, &r).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}
