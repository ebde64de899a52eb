//! Embeddings: vectors for a list of inputs, through the same stages as a
//! generation.
//!
//! The request is planned as one (resolution, access rules, governance, hints,
//! circuit filter, strategy order) among the catalog's embedding models only
//! (`kind: embedding`; a chat model asked for vectors is refused by name),
//! admitted against the caller's limits and budgets with its inputs' tokens,
//! then each candidate is tried in order with the route's retries and
//! failover. There is no stream: an attempt is whole or failed.
//!
//! One attempt is every call the candidate needs: its wire's
//! [`EmbedSpec`] says how many inputs one call takes
//! ([`EmbedSpec::max_inputs`]), the inputs are sent in batches of that many
//! (a few at a time), and the answers are joined in input order. A batch that
//! fails fails the attempt (what the batches before it reported is metered);
//! the next attempt sends every batch again. What a wire cannot express
//! (token ids to Gemini, a size Titan does not make) fails the candidate as
//! unsupported, and the next one may take it; a request no candidate can
//! express is refused with the last one's reason.
//!
//! Metered from the upstream's token counts where it reports them (OpenAI,
//! Vertex AI, Titan), else estimated (Gemini, Cohere) and marked so; one
//! record per request.

use futures_util::StreamExt as _;
use switchyard_protocol::embeddings::{self, EmbedInput, EmbedRequest, EmbedResponse, EmbedSpec};

use super::*;
use crate::exec::context::Estimate;

/// Batches of one attempt in flight at once: a provider that takes one input a
/// call (Titan) is not called once per input in turn, nor flooded.
const BATCHES_AT_ONCE: usize = 4;

/// An embeddings answer: one vector per input, in input order.
#[derive(Debug)]
pub struct Embedded {
    /// The vectors, and the input tokens as metered (the upstream's count, or
    /// the gateway's estimate).
    pub response: EmbedResponse,
    /// The deployment that answered.
    pub served: Served,
    /// The route-match descriptor.
    pub descriptor: String,
    /// The caller's rate limits after this request; `None`: none apply.
    pub rate: Option<crate::limits::RateStatus>,
    /// The request's record, for a library caller ([`Output::Canonical`]).
    pub record: Option<Box<RequestRecord>>,
}

/// The canonical request an embeddings request is planned and admitted as:
/// its inputs' text as one user message, asking for no output. Access rules,
/// hints and governance read it as they read a generation's.
pub fn planned_request(req: &EmbedRequest) -> Request {
    let text: Vec<&str> = req
        .inputs
        .iter()
        .filter_map(|i| match i {
            EmbedInput::Text(t) => Some(t.as_str()),
            EmbedInput::Tokens(_) => None,
        })
        .collect();
    Request {
        model: req.model.clone(),
        messages: vec![switchyard_protocol::Message::text(
            switchyard_protocol::Role::User,
            text.join("\n"),
        )],
        max_tokens: Some(0),
        user: req.user.clone(),
        ..Request::default()
    }
}

/// The inputs' tokens as the gateway estimates them: text by its bytes, token
/// ids one each.
fn input_estimate(req: &EmbedRequest) -> u64 {
    req.inputs
        .iter()
        .map(|i| match i {
            EmbedInput::Text(t) => estimate::output_tokens(t.len()),
            EmbedInput::Tokens(ids) => ids.len() as u64,
        })
        .sum()
}

/// What one attempt came to.
struct EmbedTried {
    result: Result<EmbedResponse, Failure>,
    credential: Option<String>,
    /// What the batches answered before one failed reported.
    reported: Usage,
    occupied: Option<Taken>,
}

impl Snapshot {
    /// Embed `embed`'s inputs, `inbound` being the request as planned
    /// ([`planned_request`]): plan, admit, attempt with retries and failover,
    /// meter and record. The entry point of every client format's embeddings
    /// endpoint ([`crate::Engine::embed`]).
    pub async fn embed(
        self: Arc<Self>,
        mut inbound: Inbound,
        embed: EmbedRequest,
        runtime: Arc<Runtime>,
        sink: SharedSink,
    ) -> Result<Embedded, GatewayError> {
        inbound.estimate = Estimate::known(input_estimate(&embed));
        let metrics = self.catalog.settings.metrics;
        let mut guard = RecordGuard::open(&inbound, sink, metrics);
        guard.rec.operation = Some(Cow::Borrowed(OPERATION));
        let mut plan = match self.plan_for(&inbound, &runtime, &mut guard.rec, Purpose::Embed) {
            Ok(p) => p,
            Err(err) => return Err(guard.fail(inbound.format, err)),
        };
        if let Some(admission) = &runtime.admission {
            match admit(admission.as_ref(), &self, &inbound, &plan).await {
                Ok(reservation) => {
                    for scope in &reservation.over_budget {
                        plan.descriptor.push(format!("budget_over:{scope}"));
                    }
                    guard.reservation = Some((Arc::clone(admission), reservation));
                }
                Err(err) => return Err(guard.fail(inbound.format, err)),
            }
        }
        self.embed_loop(&inbound, &embed, &mut plan, &runtime, &mut guard).await
    }

    /// The attempt loop of an embeddings request: each candidate in order,
    /// with the route's retries, until one answers or none can.
    async fn embed_loop(
        &self,
        inbound: &Inbound,
        embed: &EmbedRequest,
        plan: &mut Plan,
        runtime: &Arc<Runtime>,
        guard: &mut RecordGuard,
    ) -> Result<Embedded, GatewayError> {
        let deadline = inbound.received
            + inbound.limits.deadline.unwrap_or(self.catalog.settings.request_timeout);
        let policy = bounded(&inbound.limits, &plan.policy).into_owned();
        let mut failures: Vec<(usize, Failure)> = Vec::new();
        let mut tried: Vec<String> = Vec::new();
        let mut sent = 0usize;
        'candidates: for (i, cand) in plan.candidates.iter().enumerate() {
            let mut retries = 0u32;
            loop {
                if sent >= policy.max_attempts || Instant::now() >= deadline {
                    break 'candidates;
                }
                let started = Instant::now();
                let kind = match (retries, i) {
                    (1.., _) => "retry",
                    (0, 0) => "primary",
                    (0, _) => "failover",
                };
                let watch = Watch::start(&runtime.destinations, cand.identity());
                let EmbedTried { result, credential, reported, occupied } = self
                    .embed_attempt(inbound, embed, cand, runtime, deadline, plan.bypass_breakers)
                    .await;
                let sent_upstream = !matches!(
                    &result,
                    Err(Failure::Unavailable(_)
                        | Failure::Credential(_)
                        | Failure::Unsupported(_)
                        | Failure::CircuitOpen(_)
                        | Failure::Capacity { .. })
                );
                sent += usize::from(sent_upstream);
                match (&result, occupied) {
                    (Ok(_), occupied) => guard.occupied = occupied,
                    (Err(_), Some(taken)) => taken.settle(reported),
                    (Err(_), None) => {}
                }
                match &result {
                    _ if !sent_upstream => watch.forget(),
                    Ok(_) => watch.end(Ended::Success, None, None),
                    Err(_) => watch.end(Ended::Error, None, None),
                }
                let elapsed = started.elapsed();
                let failed_usage = (result.is_err() && !reported.is_empty()).then_some(reported);
                guard.rec.attempts.push(AttemptRecord {
                    deployment: cand.label(),
                    credential,
                    outcome: match &result {
                        Ok(_) => "ok".to_owned(),
                        Err(f) => f.outcome(),
                    },
                    latency_ms: elapsed.as_millis() as u64,
                    started_ms: started.saturating_duration_since(inbound.received).as_millis()
                        as u64,
                    kind: kind.into(),
                    usage: failed_usage,
                    cost_usd: failed_usage
                        .and_then(|u| cost(&u, cand.pricing.as_ref()))
                        .map(|c| c * cand.provider.markup),
                    finish_reason: None,
                });
                self.provider_meters(&cand.provider.name, |m| {
                    m.attempt_seconds.record(elapsed.as_secs_f64());
                });
                match &result {
                    Err(Failure::Unavailable(_)) => {
                        plan.descriptor.push(format!("no_credential:{}", cand.provider.name));
                    }
                    Err(Failure::Credential(_)) => {
                        plan.descriptor.push(format!("credential_failed:{}", cand.provider.name));
                    }
                    Err(Failure::Capacity { .. }) => {
                        plan.descriptor.push(format!("capacity:{}", cand.label()));
                    }
                    _ => {}
                }
                if sent_upstream && tried.last() != Some(&cand.provider.name) {
                    tried.push(cand.provider.name.clone());
                }
                match result {
                    Ok(response) => {
                        runtime
                            .latency
                            .observe_attempt(&cand.identity(), elapsed.as_secs_f64() * 1000.0);
                        return Ok(self.embedded(inbound, plan, &tried, cand, response, guard));
                    }
                    Err(f) => {
                        tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "embeddings attempt failed");
                        let remaining = deadline.saturating_duration_since(Instant::now());
                        match next_step(&f, &policy, retries, remaining) {
                            Next::Retry(wait) => {
                                retries += 1;
                                tokio::time::sleep(wait).await;
                            }
                            Next::Terminal => {
                                let err = failure_error(&f, &cand.provider.name);
                                guard.rec.descriptor = descriptor(plan, &tried);
                                return Err(guard.fail(inbound.format, err));
                            }
                            Next::Failover => {
                                failures.push((i, f));
                                continue 'candidates;
                            }
                        }
                    }
                }
            }
        }
        let best =
            failures.iter().enumerate().max_by_key(|(order, (_, f))| (rank(f), usize::MAX - order));
        let err = match best {
            Some((_, (i, f))) => {
                let provider =
                    plan.candidates.get(*i).map(|c| c.provider.name.as_str()).unwrap_or("upstream");
                failure_error(f, provider)
            }
            None => GatewayError::new(
                ErrorCode::DeadlineExceeded,
                "request deadline or attempt budget exhausted",
            ),
        };
        tracing::warn!(request_id = %inbound.id, code = err.code().as_str(), attempts = guard.rec.attempts.len(), "every embeddings candidate failed");
        guard.rec.descriptor = descriptor(plan, &tried);
        Err(guard.fail(inbound.format, err))
    }

    /// The answer of the candidate `cand`: named as the client asked, metered
    /// and recorded.
    fn embedded(
        &self,
        inbound: &Inbound,
        plan: &Plan,
        tried: &[String],
        cand: &Candidate,
        mut response: EmbedResponse,
        guard: &mut RecordGuard,
    ) -> Embedded {
        let descriptor = descriptor(plan, tried);
        let served = Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: Vec::new(),
        };
        inbound.request.model.clone_into(&mut response.model);
        let input = match response.input_tokens {
            Some(n) => n,
            None => {
                guard.rec.estimated = true;
                inbound.input_estimate()
            }
        };
        response.input_tokens = Some(input);
        let usage = Usage { input_tokens: Some(input), output_tokens: Some(0), ..Usage::default() };
        guard.rec.cost_usd = cost(&usage, cand.pricing.as_ref()).map(|c| c * cand.provider.markup);
        guard.rec.usage = usage;
        guard.rec.served_provider = Some(served.provider.clone());
        guard.rec.upstream_model = Some(served.upstream_model.clone());
        guard.rec.descriptor.clone_from(&descriptor);
        guard.record_metrics();
        let record = (inbound.output == Output::Canonical).then(|| guard.copy(200, None));
        guard.write(200, None);
        let rate = guard.reservation.as_ref().and_then(|(_, r)| r.status);
        Embedded { response, served, descriptor, rate, record }
    }

    /// One attempt on one candidate: a credential its breaker lets through,
    /// the deployment's capacity, every batch, the outcome told to the breaker.
    async fn embed_attempt(
        &self,
        inbound: &Inbound,
        embed: &EmbedRequest,
        cand: &Candidate,
        runtime: &Arc<Runtime>,
        deadline: Instant,
        bypass_breakers: bool,
    ) -> EmbedTried {
        let failed = |f, credential| EmbedTried {
            result: Err(f),
            credential,
            reported: Usage::default(),
            occupied: None,
        };
        if let Some(why) = &cand.provider.unavailable
            && !cand.provider.reachable_with(&inbound.byok)
        {
            return failed(Failure::Unavailable(why.clone()), None);
        }
        // Refused before a credential is spent on it: the wire has no
        // embeddings, or cannot say this model's.
        let spec = match &cand.provider.kind {
            ProviderKind::Mock { .. } => None,
            ProviderKind::Wire(wire) => match embed_spec(*wire, &cand.upstream_model) {
                Ok(spec) => Some((*wire, spec)),
                Err(f) => return failed(f, None),
            },
        };
        let keys = credentials(cand, inbound);
        let (key, permit) = if bypass_breakers {
            let rt = self.runtimes.get(&cand.provider.name);
            (rt.and_then(|rt| keys.get(rt.next_index(keys.len()))), None)
        } else {
            match self.pick_credential(cand, keys, runtime, UnixMs::now()) {
                Ok((k, p)) => (k, Some(p)),
                Err(f) => return failed(f, None),
            }
        };
        let credential = key.map(Secret::fingerprint);
        let occupied = match occupy(inbound, cand, credential.as_deref(), runtime).await {
            Ok(taken) => taken,
            Err(f) => {
                if let Some(permit) = permit {
                    runtime.health.abandon(permit);
                }
                return failed(f, credential);
            }
        };
        let _in_flight = runtime.in_flight.enter(&cand.identity());
        let mut reported = Usage::default();
        let result = match spec {
            None => Ok(crate::mock::embeddings(embed, &cand.upstream_model)),
            Some((wire, spec)) => {
                let call = EmbedCall { inbound, embed, cand, wire, spec, key, deadline };
                self.embed_http(call, &mut reported).await
            }
        };
        if let Some(permit) = permit {
            match health_outcome_of(&result) {
                Some(outcome) => runtime.health.report(permit, outcome, UnixMs::now()),
                None => runtime.health.abandon(permit),
            }
        }
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &[] };
        EmbedTried {
            result: result.map_err(|f| f.redacted(&redactor)),
            credential,
            reported,
            occupied,
        }
    }

    /// Every batch of one attempt over HTTP, a few at a time, joined in input
    /// order. `reported`: the tokens the batches that answered counted, when
    /// one fails.
    async fn embed_http(
        &self,
        call: EmbedCall<'_>,
        reported: &mut Usage,
    ) -> Result<EmbedResponse, Failure> {
        let EmbedCall { inbound, embed, cand, wire, spec, key, deadline } = call;
        let Some(rt) = self.runtimes.get(&cand.provider.name) else {
            return Err(Failure::Unavailable(format!(
                "provider {} has no client",
                cand.provider.name
            )));
        };
        let cap = spec.max_inputs(&cand.upstream_model).map_err(Failure::from_protocol)?;
        let url = spec.url(wire.spec(), &cand.provider.endpoint, &cand.upstream_model);
        let mut bodies = Vec::new();
        for range in embeddings::batches(embed.inputs.len(), cap) {
            let inputs = embed.inputs.get(range.clone()).unwrap_or_default();
            let body =
                spec.encode(embed, inputs, &cand.upstream_model).map_err(Failure::from_protocol)?;
            bodies.push((body, range.len()));
        }
        let dest = upstream::Dest {
            runtime: rt,
            spec: &cand.provider,
            wire,
            key,
            upstream_model: &cand.upstream_model,
        };
        let out = inbound.outgoing(&inbound.request, wire);
        let timeout = inbound
            .limits
            .attempt_timeout
            .unwrap_or(self.catalog.settings.first_byte_timeout)
            .min(deadline.saturating_duration_since(Instant::now()));
        let max_bytes = self.catalog.settings.max_response_bytes;
        let one = |(body, n): (Vec<u8>, usize)| {
            let (url, out) = (&url, &out);
            async move {
                let timed_out = || Failure::Transport {
                    class: TransportClass::Timeout,
                    message: format!("no embeddings within {} ms", timeout.as_millis()),
                };
                let until = Instant::now() + timeout;
                let (resp, minted) =
                    tokio::time::timeout(timeout, upstream::send_to(dest, out, url, body, false))
                        .await
                        .map_err(|_| timed_out())??;
                let redactor =
                    Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
                if !resp.status().is_success() {
                    return Err(upstream::read_failure(resp, wire, &redactor, until).await);
                }
                let bytes = upstream::read_body(resp, max_bytes, until).await?;
                spec.parse(&bytes, &cand.upstream_model)
                    .and_then(|r| r.expect(n))
                    .map_err(|e| Failure::from_protocol(e).redacted(&redactor))
            }
        };
        let mut answers = futures_util::stream::iter(bodies).map(one).buffered(BATCHES_AT_ONCE);
        let mut parts = Vec::new();
        while let Some(answer) = answers.next().await {
            match answer {
                Ok(part) => parts.push(part),
                Err(f) => {
                    let counted: u64 = parts.iter().filter_map(|p| p.input_tokens).sum();
                    if counted > 0 {
                        reported.input_tokens = Some(counted);
                        reported.output_tokens = Some(0);
                    }
                    return Err(f);
                }
            }
        }
        Ok(EmbedResponse::join(parts))
    }
}

/// What one HTTP attempt of an embeddings request sends, and where.
struct EmbedCall<'a> {
    inbound: &'a Inbound,
    embed: &'a EmbedRequest,
    cand: &'a Candidate,
    wire: Wire,
    spec: EmbedSpec,
    key: Option<&'a Secret>,
    deadline: Instant,
}

/// How `wire` embeds with `upstream_model`, or why it cannot.
fn embed_spec(wire: Wire, upstream_model: &str) -> Result<EmbedSpec, Failure> {
    let Some(spec) = wire.spec().embeddings else {
        return Err(Failure::Unsupported(format!(
            "the {} wire serves no embeddings",
            wire.as_str()
        )));
    };
    spec.max_inputs(upstream_model).map_err(Failure::from_protocol)?;
    Ok(spec)
}

/// The record's operation for an embeddings request.
pub const OPERATION: &str = "embeddings";
