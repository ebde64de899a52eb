//! The cache phase, after the plan and before admission: answer from the
//! exact response cache, follow an identical request already in flight, or
//! lead the upstream call and keep its answer.
//!
//! Only requests whose route or model opts in (`cache: { ttl_ms }`) take part,
//! and not those that say `x-switchyard-cache: skip`. A hit is answered without
//! admission (it uses no upstream capacity and costs nothing); a stream is
//! answered from the cache as a stream of the cached answer's events, but a
//! streamed miss goes upstream as usual, uncoalesced and not kept (only whole
//! answers are kept).

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use super::flight::{Joined, Landing, Shared};
use super::*;
use crate::state::{Claim, Polled, ResponseCache};

/// The key's layout version: a release that changes what the key covers bumps
/// it, so no instance reads an answer kept under another meaning.
const KEY_VERSION: u32 = 1;

/// What a request asks of the cache (`x-switchyard-cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// Answer from the cache when it can, keep the answer otherwise.
    #[default]
    Use,
    /// Neither read nor write the cache, nor share an upstream call.
    Skip,
    /// Do not read the cache: call the upstream and keep its answer.
    Refresh,
}

impl CacheMode {
    /// The header's value (`skip`, `refresh`); `None` for anything else.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "skip" => Some(Self::Skip),
            "refresh" => Some(Self::Refresh),
            _ => None,
        }
    }
}

/// How the cache took part in an answer (`x-gateway-cache`, the record's `cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheStatus {
    /// Answered from the cache.
    Hit,
    /// Not in the cache: the upstream answered.
    Miss,
    /// An identical request in flight was answered, and so was this one.
    Coalesced,
}

impl CacheStatus {
    /// `hit`, `miss`, `coalesced`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hit => "hit",
            Self::Miss => "miss",
            Self::Coalesced => "coalesced",
        }
    }
}

/// A cacheable request's keys.
pub(super) struct Keyed {
    /// Shared by identical requests whichever deployment answers: the key a
    /// flight is coalesced under.
    pub(super) base: String,
    /// The answer's key under each candidate, in plan order (an answer is kept
    /// under the deployment that served it).
    pub(super) keys: Vec<String>,
    pub(super) ttl_ms: u64,
    pub(super) mode: CacheMode,
}

/// What identifies a request's answer: everything that can change it, and no
/// more (the stream flag, the client's user and metadata fields, its
/// prompt-cache and session ids change how it is delivered or billed, not what
/// is said).
#[derive(Serialize)]
struct KeyFields<'a> {
    version: u32,
    /// The tenant: one never sees another's answer.
    scope: [Option<&'a str>; 4],
    /// The client format (its API kind).
    api: &'a str,
    /// The catalog model it resolved to.
    model: &'a str,
    system: &'a [TextBlock],
    messages: &'a [Message],
    tools: &'a [Tool],
    tool_choice: &'a Option<ToolChoice>,
    parallel_tool_calls: Option<bool>,
    response_format: &'a Option<ResponseFormat>,
    reasoning: &'a Option<Reasoning>,
    // Sampling, each written whether set or not: `null` is the deployment's own
    // default, which the key pins by naming the deployment.
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<u64>,
    stop: &'a [String],
    hosted_tools: &'a [HostedTool],
    deferred_tools: &'a [String],
    history_tools: &'a switchyard_protocol::ServerTools,
    service_tier: &'a Option<String>,
}

use serde::Serialize;
use switchyard_protocol::{Message, Reasoning, ResponseFormat, TextBlock, Tool, ToolChoice};

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The request's keys, if it is cached: its route or model opts in, it does not
/// skip the cache, and it is a generation (not a compaction).
pub(super) fn keyed(inbound: &Inbound, plan: &Plan, purpose: Option<&str>) -> Option<Keyed> {
    let spec = plan.cache?;
    if inbound.cache == CacheMode::Skip || purpose.is_some() {
        return None;
    }
    // Destructured whole: a field added to the request fails to compile here
    // until it is put in the key or said to be left out.
    let Request {
        model: _,
        system,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        max_tokens,
        temperature,
        top_p,
        top_k,
        stop,
        stream: _,
        reasoning,
        response_format,
        user: _,
        metadata: _,
        stream_usage: _,
        compaction,
        extras,
    } = &*inbound.request;
    if compaction.is_some() {
        return None;
    }
    let switchyard_protocol::Extras {
        hosted_tools,
        deferred_tools,
        history_tools,
        prompt_cache_key: _,
        prompt_cache_retention: _,
        safety_identifier: _,
        service_tier,
        store: _,
        session_id: _,
        // Settled into `reasoning` (keyed) where the request entered.
        reasoning_auto: _,
    } = extras;
    let p = &inbound.principal;
    // A static key has no id: its visible prefix stands for it.
    let key = p.key_id.as_deref().map(|_| "stored").unwrap_or("static");
    let fields = KeyFields {
        version: KEY_VERSION,
        scope: [
            Some(key),
            p.key_id.as_deref().or(p.key_prefix.as_deref()),
            p.user_id.as_deref(),
            inbound.project.as_deref(),
        ],
        api: inbound.format.as_str(),
        model: &plan.public_model,
        system,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls: *parallel_tool_calls,
        response_format,
        reasoning,
        temperature: *temperature,
        top_p: *top_p,
        top_k: *top_k,
        stop,
        hosted_tools,
        deferred_tools,
        history_tools,
        service_tier,
    };
    let json = serde_json::to_vec(&fields).ok()?;
    let base = hex(&Sha256::digest(&json));
    let keys = plan
        .candidates
        .iter()
        .map(|c| {
            // The output ceiling as the deployment gets it: the model's cap
            // where the request asks for more or for none.
            let cap = c.model.as_ref().and_then(|m| m.max_output_tokens);
            let ceiling = match (*max_tokens, cap) {
                (Some(asked), Some(cap)) => Some(asked.min(cap)),
                (asked, cap) => asked.or(cap),
            };
            let mut h = Sha256::new();
            h.update(base.as_bytes());
            h.update([0]);
            h.update(c.identity().as_bytes());
            h.update([0]);
            h.update(ceiling.map_or_else(|| "-".to_owned(), |n| n.to_string()).as_bytes());
            hex(&h.finalize())
        })
        .collect();
    Some(Keyed { base, keys, ttl_ms: spec.ttl_ms, mode: inbound.cache })
}

/// Whether an answer may be kept: a complete one (an error, a filtered or
/// refused answer, a paused turn are asked again).
pub(super) fn keepable(response: &Response) -> bool {
    use switchyard_protocol::StopReason as S;
    matches!(response.stop_reason, Some(S::EndTurn | S::MaxTokens | S::StopSequence | S::ToolUse))
}

/// The first candidate's answer the cache holds, with the candidate's index.
/// An entry that does not read back is a miss.
pub(super) async fn lookup(cache: &dyn ResponseCache, keyed: &Keyed) -> Option<(usize, Response)> {
    let (i, bytes) = cache.get(&keyed.keys).await?;
    serde_json::from_slice(&bytes).ok().map(|r| (i, r))
}

/// What keeping `shared` writes: the key of the candidate that served it and
/// the answer's bytes; `None` when it is not to be kept (larger than
/// `max_bytes`, or served by no candidate of the plan).
fn entry(
    keyed: &Keyed,
    plan: &Plan,
    shared: &Shared,
    max_bytes: u64,
) -> Option<(String, Arc<[u8]>)> {
    let served = &shared.served;
    let key = plan
        .candidates
        .iter()
        .position(|c| {
            c.provider.name == served.provider && c.upstream_model == served.upstream_model
        })
        .and_then(|i| keyed.keys.get(i))?;
    let bytes = serde_json::to_vec(&shared.response).ok()?;
    (bytes.len() as u64 <= max_bytes).then(|| (key.clone(), Arc::from(bytes)))
}

/// The answer of a successful request, to share and keep, if it may be.
fn shareable(success: &Success) -> Landing {
    match &success.delivery {
        Delivery::Response { response, .. } if keepable(response) => Some(Arc::new(Shared {
            response: (**response).clone(),
            served: success.served.clone(),
        })),
        _ => None,
    }
}

impl Flow {
    /// The cache phase: `Ok` when the request was answered (from the cache, by
    /// a flight it followed or led); `Err` hands the request back for the
    /// uncached path.
    pub(super) async fn cached(
        mut self: Box<Self>,
        keyed: Keyed,
    ) -> Result<Result<Success, GatewayError>, Box<Flow>> {
        let runtime = Arc::clone(&self.runtime);
        if keyed.mode == CacheMode::Use
            && let Some((i, response)) = lookup(runtime.cache.as_ref(), &keyed).await
            && i < self.plan.candidates.len()
        {
            let served = served_by(&self.plan, i);
            return Ok(Ok(self.serve_kept(response, served, CacheStatus::Hit)));
        }
        self.guard.rec.cache = Some(CacheStatus::Miss.as_str().into());
        if self.inbound.request.stream {
            self.count_cache(CacheStatus::Miss);
            return Err(self);
        }
        match runtime.flights.join(&keyed.base) {
            Joined::Follow(flight) => match flight.wait().await {
                Some(shared) => {
                    let Shared { response, served } = Shared::clone_of(&shared);
                    Ok(Ok(self.serve_kept(response, served, CacheStatus::Coalesced)))
                }
                // The leader has no answer to share: this request goes on its own.
                None => {
                    self.count_cache(CacheStatus::Miss);
                    Err(self)
                }
            },
            Joined::Lead { flight, publisher } => {
                let output = self.inbound.output;
                let (tx, rx) = oneshot::channel();
                let task = tokio::spawn(async move {
                    let mut flow = self;
                    // The answer is shared and kept canonical: the leader's own
                    // caller gets it as every follower does.
                    flow.inbound.output = Output::Canonical;
                    let (result, claimed) = match flow.across(&keyed).await {
                        Across::Answered(i, response) => {
                            let served = served_by(&flow.plan, i);
                            let status = CacheStatus::Coalesced;
                            (Ok(flow.serve_kept(response, served, status)), false)
                        }
                        Across::Call { claimed } => {
                            flow.count_cache(CacheStatus::Miss);
                            // Renewed while the call runs; stops when it ends
                            // (or this task is aborted).
                            let _renewal = claimed.then(|| Renewal::start(&flow, &keyed));
                            (flow.admit_and_attempt().await, claimed)
                        }
                    };
                    let landing = match &result {
                        Ok(success) => shareable(success),
                        Err(_) => None,
                    };
                    // An answer cut short by a budget is not the request's answer
                    // (nor one kept under its key).
                    let lowered =
                        flow.plan.descriptor.iter().any(|d| d.starts_with(super::LOWERED));
                    let landing = landing.filter(|_| !lowered);
                    let kept = landing.clone().filter(|_| !was_coalesced(&result));
                    // The answer is kept, then the claim released (an identical
                    // request elsewhere finds the claim or the answer, never
                    // neither), by a task of their own: this one is aborted when
                    // its last caller lets go of the flight, which the leader's
                    // caller does as soon as it has the answer sent below. The
                    // answer is kept even when every caller has gone.
                    let max = flow.snapshot.catalog.state.cache.max_entry_bytes;
                    let entry = kept.and_then(|shared| entry(&keyed, &flow.plan, &shared, max));
                    if entry.is_some() || claimed {
                        let cache = Arc::clone(&flow.runtime.cache);
                        let (base, token, ttl_ms) =
                            (keyed.base.clone(), flow.inbound.id.clone(), keyed.ttl_ms);
                        tokio::spawn(async move {
                            if let Some((key, bytes)) = entry {
                                cache.put(key, bytes, ttl_ms).await;
                            }
                            if claimed {
                                cache.release(&base, &token).await;
                            }
                        });
                    }
                    publisher.land(landing);
                    let _ = tx.send(result);
                });
                flight.started(task.abort_handle());
                let result = rx.await.unwrap_or_else(|_| {
                    Err(GatewayError::new(ErrorCode::InternalError, "the upstream call ended"))
                });
                drop(flight);
                Ok(result.map(|mut success| {
                    success.cache.get_or_insert(CacheStatus::Miss);
                    if output == Output::Client
                        && let Delivery::Response { record, .. } = &mut success.delivery
                    {
                        *record = None;
                    }
                    success
                }))
            }
        }
    }

    /// Coalescing across instances, on a store that coordinates them: claim
    /// the upstream call, or wait for the instance holding the claim to keep
    /// its answer. The wait ends with that answer; or, when the claim goes with
    /// nothing kept (that call failed, or its instance went away) or the
    /// request's deadline comes, with a call of this request's own.
    async fn across(&self, keyed: &Keyed) -> Across {
        let (inbound, plan) = (&self.inbound, &self.plan);
        let cache = self.runtime.cache.as_ref();
        let settings = &self.snapshot.catalog.settings;
        let deadline = inbound.limits.deadline.unwrap_or(settings.request_timeout);
        match cache.claim(&keyed.base, &inbound.id, CLAIM_TTL_MS).await {
            Claim::Led => return Across::Call { claimed: true },
            Claim::Alone => return Across::Call { claimed: false },
            Claim::Busy => {}
        }
        let until = inbound.received + deadline;
        let mut pause = POLL_FIRST;
        while Instant::now() + pause < until {
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(POLL_MAX);
            match cache.poll(&keyed.keys, &keyed.base).await {
                Polled::Busy => {}
                Polled::Free => break,
                Polled::Answer(i, bytes) => {
                    if let (Some(response), true) =
                        (serde_json::from_slice(&bytes).ok(), i < plan.candidates.len())
                    {
                        return Across::Answered(i, response);
                    }
                    break;
                }
            }
        }
        Across::Call { claimed: false }
    }

    fn count_cache(&self, status: CacheStatus) {
        if self.snapshot.catalog.settings.metrics {
            crate::telemetry::counter!("gateway_cache_total", "result" => status.as_str())
                .increment(1);
        }
    }

    /// Answer with a kept (or shared) answer: no upstream call, no cost, the
    /// usage as it was; a stream of its events when the caller asked for one.
    fn serve_kept(
        &mut self,
        mut response: Response,
        served: Served,
        status: CacheStatus,
    ) -> Success {
        self.count_cache(status);
        let Flow { inbound, plan, guard, .. } = self;
        inbound.request.model.clone_into(&mut response.model);
        let mut descriptor = descriptor(plan, &[]);
        if !descriptor.is_empty() {
            descriptor.push(' ');
        }
        descriptor.push_str("cache:");
        descriptor.push_str(status.as_str());
        let rec = &mut guard.rec;
        rec.served_provider = Some(served.provider.clone());
        rec.upstream_model = Some(served.upstream_model.clone());
        rec.descriptor.clone_from(&descriptor);
        rec.cache = Some(status.as_str().into());
        rec.ttft_ms = Some(inbound.received.elapsed().as_millis() as u64);
        rec.usage = response.usage;
        rec.cost_usd = Some(0.0);
        guard.record_metrics();
        let record = (inbound.output == Output::Canonical).then(|| guard.copy(200, None));
        guard.write(200, None);
        let delivery = if inbound.request.stream {
            let (tx, rx) = mpsc::channel(2);
            let events = switchyard_protocol::response_to_events(&response);
            // A new channel of two has room for both: nothing waits.
            let _ = tx.try_send(Chunk::Events(events));
            let _ = tx.try_send(Chunk::End { error: None, record });
            Delivery::Stream(ChunkStream::new(None, rx))
        } else {
            Delivery::Response { response: Box::new(response), record }
        };
        Success {
            served,
            descriptor,
            request: Arc::clone(&inbound.request),
            delivery,
            rate: None,
            cache: Some(status),
            routing: guard.rec.routing.headline(),
        }
    }
}

/// How the wait for another instance's call ended.
enum Across {
    /// With its answer, kept under the `usize`th candidate's key.
    Answered(usize, Response),
    /// With a call of this request's own; `claimed`: its claim to release.
    Call { claimed: bool },
}

/// A claim on an upstream call lapses this long after it was taken or last
/// renewed: identical requests elsewhere wait at most this long for a leader
/// whose instance died, or whose release was lost.
const CLAIM_TTL_MS: u64 = 10_000;
/// The leader renews its claim this often while its call runs.
const CLAIM_RENEW: Duration = Duration::from_secs(3);

/// The renewal of a claim while its call runs: stopped when dropped.
struct Renewal(tokio::task::AbortHandle);

impl Renewal {
    fn start(flow: &Flow, keyed: &Keyed) -> Self {
        let runtime = Arc::clone(&flow.runtime);
        let (key, token) = (keyed.base.clone(), flow.inbound.id.clone());
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(CLAIM_RENEW).await;
                runtime.cache.renew(&key, &token, CLAIM_TTL_MS).await;
            }
        });
        Renewal(task.abort_handle())
    }
}

impl Drop for Renewal {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The first wait for another instance's answer, doubled up to [`POLL_MAX`]:
/// a call takes hundreds of milliseconds to seconds, so the wait adds a few
/// percent at most, and a waiting request costs one Redis step per interval.
const POLL_FIRST: Duration = Duration::from_millis(10);
const POLL_MAX: Duration = Duration::from_millis(100);

/// The deployment the `i`th candidate names, as the answer's `served`.
fn served_by(plan: &Plan, i: usize) -> Served {
    let cand = plan.candidates.get(i);
    Served {
        provider: cand.map(|c| c.provider.name.clone()).unwrap_or_default(),
        model: plan.public_model.clone(),
        upstream_model: cand.map(|c| c.upstream_model.clone()).unwrap_or_default(),
        dropped_tools: Vec::new(),
    }
}

/// Whether the request was answered by another instance's call (its answer is
/// kept already).
fn was_coalesced(result: &Result<Success, GatewayError>) -> bool {
    matches!(result, Ok(s) if s.cache == Some(CacheStatus::Coalesced))
}

impl Shared {
    fn clone_of(shared: &Arc<Shared>) -> Shared {
        Shared { response: shared.response.clone(), served: shared.served.clone() }
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "cache_tests.rs"]
mod tests;
