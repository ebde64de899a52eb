//! The attempt loop: pick a credential, pass its breaker, translate, send,
//! classify; retry, fail over, or answer.

use super::*;

/// The answer of one successful attempt. Moved once, from the attempt to its
/// delivery: a box for the stream would be an allocation per stream for nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Answer {
    Whole(Whole),
    Stream(Committed),
}

/// A complete answer: translated, or the upstream's own body forwarded as it is
/// (same-format fast path) with only its usage read.
pub(super) enum Whole {
    /// Parsed; `raw` is the upstream's body when it is forwarded as it is.
    Parsed { response: Response, raw: Option<Bytes> },
    /// Forwarded as it is; only its usage (complete) was read.
    Forwarded { body: Bytes, usage: Usage },
}

impl Whole {
    /// The answer's output tokens, where it reported them.
    fn output_tokens(&self) -> Option<u64> {
        match self {
            Whole::Parsed { response, .. } => response.usage.output_tokens,
            Whole::Forwarded { usage, .. } => usage.output_tokens,
        }
    }
}

/// What one HTTP attempt sends, and where.
pub(super) struct Call<'a> {
    /// The request as this candidate gets it (less the offered tools it drops).
    pub request: &'a Request,
    /// Those tools, as the client declared them (taken out of its own body on
    /// the fast path).
    pub dropped: Vec<&'a HostedTool>,
    pub wire: Wire,
    pub key: Option<&'a Secret>,
    pub deadline: Instant,
    /// The `traceparent` the upstream is sent, if any.
    pub traceparent: Option<&'a str>,
    /// The request carries its schema in its system prompt
    /// ([`crate::structured`]): never the client's own bytes, and the answer
    /// parsed, to be checked.
    pub prompted: bool,
}

/// What one attempt came to.
pub(super) struct Tried {
    pub result: Result<(Answer, InFlightGuard), Failure>,
    /// The fingerprint of the credential used.
    pub credential: Option<String>,
    /// Usage a failed attempt reported.
    pub reported: Usage,
    /// The deployment's capacity this attempt took, given back when the request
    /// ends (at once, when the attempt failed).
    pub occupied: Option<Taken>,
    /// How the body sent differs from what the client asked
    /// ([`upstream::field_edits`]), worked out from the body as it was built.
    pub field_edits: Vec<String>,
}

/// An attempt cleared to go ([`Snapshot::clear`]).
pub(super) struct Cleared<'a> {
    pub key: Option<&'a Secret>,
    pub permit: Option<Permit>,
    /// The key's fingerprint, for the attempt's record.
    pub credential: Option<String>,
    /// The deployment's capacity taken, where it has limits.
    pub occupied: Option<Taken>,
}

/// A whole answer of `wire`, scrubbed: forwarded as it is where `fast` (the
/// same-format fast path) and only its usage is needed, else parsed.
pub(super) fn whole_answer(
    inbound: &Inbound,
    wire: Wire,
    bytes: Bytes,
    fast: bool,
) -> Result<Answer, Failure> {
    // Forwarded as it is: read only the usage, unless the text is wanted
    // (content logging) or must stand in for missing token counts.
    // A canonical caller (a library, a shared cached call) needs it parsed.
    if fast
        && inbound.content_cap.is_none()
        && !inbound.trace_answer
        && inbound.output == Output::Client
    {
        let usage = wire.parse_usage(&bytes).map_err(Failure::from_protocol)?;
        if let Some(usage) = usage.filter(|u| u.input_tokens.is_some() && u.output_tokens.is_some())
        {
            return Ok(Answer::Whole(Whole::Forwarded { body: bytes, usage }));
        }
    }
    let response = wire.parse_response(&bytes).map_err(Failure::from_protocol)?;
    Ok(Answer::Whole(Whole::Parsed { response, raw: fast.then_some(bytes) }))
}

/// The keys a request may use on a candidate: the caller's own key for that
/// provider (BYOK) if they stored one, else the provider's platform keys.
pub(super) fn credentials<'a>(cand: &'a Candidate, inbound: &'a Inbound) -> &'a [Secret] {
    match inbound.byok.iter().find(|(p, _)| *p == cand.provider.name) {
        Some((_, k)) => std::slice::from_ref(k),
        None => &cand.provider.keys,
    }
}

/// The breaker key of a provider's credential.
pub fn credential_key(provider: &str, key: Option<&Secret>) -> CredentialKey {
    CredentialKey {
        provider: provider.to_owned(),
        credential: key
            .map_or_else(|| crate::breaker::NO_CREDENTIAL.to_owned(), Secret::fingerprint),
    }
}

/// Take a slot of `cand`'s capacity on the credential `credential`, where it
/// has limits; refused: a [`Failure::Capacity`] (the loop moves on).
pub(super) async fn occupy(
    inbound: &Inbound,
    cand: &Candidate,
    credential: Option<&str>,
    runtime: &Runtime,
) -> Result<Option<Taken>, Failure> {
    let Some(admission) = runtime.admission.as_ref().filter(|_| !cand.limits.is_empty()) else {
        return Ok(None);
    };
    let scope = crate::limits::Scoped::new(
        format!("deployment:{}|{}", cand.identity(), credential.unwrap_or("-")),
        cand.limits,
    );
    let tokens = expected_tokens(inbound, cand.model.as_deref());
    match admission.occupy(&scope, tokens).await {
        Ok(taken) => Ok(Some(Taken { admission: Arc::clone(admission), reservation: Some(taken) })),
        Err(refusal) => Err(Failure::Capacity {
            code: refusal.code,
            message: format!("{} is at capacity ({})", cand.label(), refusal.message),
            retry_after_ms: refusal.retry_after_ms,
        }),
    }
}

/// A whole prompted answer checked against the request's schema: a valid one
/// is left as its bare JSON text; an invalid one fails the attempt (the next
/// candidate may comply), its usage reported so that what was paid for is
/// metered, estimated where the upstream reported none. A stream is checked by
/// its pump when it ends (`Pump::run`).
fn check_prompted(
    result: Result<(Answer, InFlightGuard), Failure>,
    schema: &serde_json::Value,
    reported: &mut Usage,
    inbound: &Inbound,
) -> Result<(Answer, InFlightGuard), Failure> {
    let Ok((Answer::Whole(Whole::Parsed { mut response, raw }), in_flight)) = result else {
        return result;
    };
    match crate::structured::settle(&mut response, schema) {
        Ok(()) => Ok((Answer::Whole(Whole::Parsed { response, raw }), in_flight)),
        Err(why) => {
            let mut usage = response.usage;
            if usage.input_tokens.is_none() {
                usage.input_tokens = Some(inbound.input_estimate());
            }
            if usage.output_tokens.is_none() {
                usage.output_tokens = Some(estimate::output_tokens(text_bytes(&response.content)));
            }
            reported.merge(&usage);
            Err(Failure::InvalidOutput(why))
        }
    }
}

impl Flow {
    /// The attempt loop: each candidate in the plan's order, with retries and
    /// failover, until one answers (delivered) or none can.
    pub(super) async fn attempt_loop(&mut self) -> Result<Success, GatewayError> {
        let Flow { snapshot: this, runtime, inbound, plan, guard } = self;
        let limits = &inbound.limits;
        let deadline =
            inbound.received + limits.deadline.unwrap_or(this.catalog.settings.request_timeout);
        // The request's own bounds replace the route's, within the hard maximums.
        let bounded = bounded(limits, &plan.policy);
        let policy = &*bounded;
        let structured =
            crate::structured::mode(inbound.hints.structured_output, policy.structured_output);
        let schema = crate::structured::schema_of(&inbound.request);
        let mut failures: Vec<(usize, Failure)> = Vec::new();
        let mut sent = 0usize;
        let mut tried: Vec<String> = Vec::new();
        // Every candidate at its capacity: the request may wait for a slot in
        // the bounded admission queue, then go round the candidates again.
        let queued_since = Instant::now();
        let mut waiting: Option<super::queue::Waiting> = None;
        let mut round = 0u32;
        'rounds: loop {
            failures.clear();
            'candidates: for (i, cand) in plan.candidates.iter().enumerate() {
                // The offered tools this deployment does not run: it is sent the
                // request without them.
                let dropped = plan.tools.dropped(cand, &inbound.request);
                let request = dropped.apply(&inbound.request);
                // How the request's JSON schema is asked of this deployment;
                // prompted, it goes in the system prompt and the answer is the
                // gateway's to check.
                let caps = cand.model.as_ref().and_then(|m| m.capabilities.as_ref());
                let asked = crate::structured::asked(&inbound.request, structured, caps);
                let prompted = asked == Some(crate::structured::Asked::Prompted);
                let request = if prompted { crate::structured::prompted(request) } else { request };
                let mut retries = 0u32;
                loop {
                    if sent >= policy.max_attempts || Instant::now() >= deadline {
                        break 'candidates;
                    }
                    let started = Instant::now();
                    // The attempt's span exists before it is sent: the
                    // upstream's `traceparent` names it as the parent.
                    let span_id =
                        guard.trace.as_ref().map(|_| crate::otel::propagation::new_span_id());
                    let traceparent = match (&guard.trace, span_id) {
                        (Some(trace), Some(span)) => Some(trace.traceparent(span)),
                        _ => inbound.trace.passthrough(),
                    };
                    let kind = if retries > 0 {
                        "retry"
                    } else if i == 0 {
                        "primary"
                    } else {
                        "failover"
                    };
                    // Dropped before it ends (the client went away): a cancellation.
                    let watch = Watch::start(&runtime.destinations, cand.identity());
                    let Tried { result, credential, mut reported, occupied, field_edits } = this
                        .attempt(
                            inbound,
                            &request,
                            &dropped,
                            cand,
                            runtime,
                            deadline,
                            plan.bypass_breakers,
                            traceparent.as_deref(),
                            prompted,
                        )
                        .await;
                    let result = match schema.filter(|_| prompted) {
                        Some(schema) => check_prompted(result, schema, &mut reported, inbound),
                        None => result,
                    };
                    guard.rec.routing.structured_output = asked.map(|a| a.as_str().into());
                    // A failed attempt that reported usage is metered too.
                    let failed_usage =
                        (result.is_err() && !reported.is_empty()).then_some(reported);
                    let failed_cost = failed_usage
                        .and_then(|u| cost(&u, cand.pricing.as_ref()))
                        .map(|c| c * cand.provider.markup);
                    let sent_upstream = !matches!(
                        &result,
                        Err(Failure::Unavailable(_)
                            | Failure::Credential(_)
                            | Failure::Unsupported(_)
                            | Failure::CircuitOpen(_)
                            | Failure::Capacity { .. })
                    );
                    match (&result, occupied) {
                        (Ok(_), occupied) => guard.occupied = occupied,
                        (Err(_), Some(taken)) => taken.settle(reported),
                        (Err(_), None) => {}
                    }
                    sent += usize::from(sent_upstream);
                    // A stream's destination hears how it went when it ends.
                    let replayed = inbound.prefetched.is_some();
                    let watch = match &result {
                        // An answer read back from a provider's batch says
                        // nothing of the deployment's latency or errors now.
                        _ if !sent_upstream || replayed => {
                            watch.forget();
                            None
                        }
                        Err(_) => {
                            watch.end(Ended::Error, None, None);
                            None
                        }
                        Ok((Answer::Whole(whole), _)) => {
                            watch.end(Ended::Success, None, whole.output_tokens());
                            None
                        }
                        Ok((Answer::Stream(_), _)) => Some(watch),
                    };
                    if sent_upstream {
                        guard.rec.field_edits = field_edits;
                        guard.rec.field_edits.extend(dropped.edits(&inbound.request));
                        if prompted {
                            guard.rec.field_edits.push(
                                "response_format: json_schema sent as a system-prompt instruction (prompted structured output)".to_owned(),
                            );
                        }
                    }
                    let elapsed = started.elapsed();
                    // A queued request's later rounds at capacity are not attempts
                    // worth a record each.
                    let requeued = round > 0 && matches!(result, Err(Failure::Capacity { .. }));
                    if !requeued {
                        let offset = started.saturating_duration_since(inbound.received);
                        guard.rec.attempts.push(AttemptRecord {
                            deployment: cand.label(),
                            credential,
                            outcome: match &result {
                                Ok(_) => "ok".to_owned(),
                                Err(f) => f.outcome(),
                            },
                            latency_ms: elapsed.as_millis() as u64,
                            started_ms: offset.as_millis() as u64,
                            kind: kind.into(),
                            usage: failed_usage,
                            cost_usd: failed_cost,
                            finish_reason: None,
                        });
                        if let (Some(trace), Some(span_id)) = (&mut guard.trace, span_id) {
                            trace.attempts.push(crate::otel::AttemptSpan::new(
                                span_id,
                                offset,
                                elapsed,
                                &cand.provider,
                            ));
                        }
                    }
                    this.provider_meters(&cand.provider.name, |m| {
                        m.attempt_seconds.record(elapsed.as_secs_f64());
                    });
                    match &result {
                        // No caller key and no platform key for this deployment: skipped.
                        Err(Failure::Unavailable(_)) => {
                            plan.descriptor.push(format!("no_credential:{}", cand.provider.name));
                        }
                        Err(Failure::Credential(_)) => {
                            plan.descriptor
                                .push(format!("credential_failed:{}", cand.provider.name));
                        }
                        Err(Failure::Capacity { .. }) if !requeued => {
                            plan.descriptor.push(format!("capacity:{}", cand.label()));
                        }
                        _ => {}
                    }
                    if sent_upstream && tried.last() != Some(&cand.provider.name) {
                        tried.push(cand.provider.name.clone());
                    }
                    match result {
                        Ok((answer, guard_in_flight)) => {
                            if matches!(answer, Answer::Whole(_)) && !replayed {
                                // A stream's latency counts when it ends well (the pump).
                                runtime.latency.observe_attempt(
                                    &cand.identity(),
                                    elapsed.as_secs_f64() * 1000.0,
                                );
                            }
                            let won = Won {
                                index: i,
                                dropped,
                                answer,
                                in_flight: guard_in_flight,
                                elapsed,
                                prompted,
                                watch,
                            };
                            let (success, keep) =
                                this.deliver(inbound, plan, &tried, won, runtime, guard);
                            for (key, value) in keep {
                                runtime.continuity.put(key, value, continuity::TTL).await;
                            }
                            return Ok(success);
                        }
                        Err(f) => {
                            tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "attempt failed");
                            let remaining = deadline.saturating_duration_since(Instant::now());
                            // An answer read back is the answer: trying it again
                            // reads the same.
                            let step = if replayed {
                                Next::Terminal
                            } else {
                                next_step(&f, policy, retries, remaining)
                            };
                            match step {
                                Next::Retry(wait) => {
                                    retries += 1;
                                    // Dropping the request future (client gone) cancels this wait.
                                    tokio::time::sleep(wait).await;
                                }
                                Next::Terminal => {
                                    let err = failure_error(&f, &cand.provider.name);
                                    return Err(guard.fail(inbound.format, err));
                                }
                                Next::Failover => {
                                    if let Some(next) = plan
                                        .candidates
                                        .get(i + 1)
                                        .filter(|_| this.catalog.settings.metrics)
                                    {
                                        let reason = match &f {
                                            Failure::Status { status, .. } => {
                                                format!("status_{status}")
                                            }
                                            Failure::CircuitOpen(_) => "circuit_open".to_owned(),
                                            Failure::InvalidOutput(_) => {
                                                "invalid_output".to_owned()
                                            }
                                            _ => "transport".to_owned(),
                                        };
                                        crate::telemetry::counter!("gateway_upstream_failovers_total", "from" => cand.provider.name.clone(), "to" => next.provider.name.clone(), "reason" => reason).increment(1);
                                    }
                                    failures.push((i, f));
                                    continue 'candidates;
                                }
                            }
                        }
                    }
                }
            }
            let queue = this.catalog.limits.queue;
            match super::queue::wait_for_capacity(
                &failures,
                queue,
                queued_since,
                deadline,
                runtime,
                &mut waiting,
            ) {
                Some(wait) => {
                    round += 1;
                    tokio::time::sleep(wait).await;
                }
                None => break 'rounds,
            }
        }
        let err = last_error(&failures, plan);
        tracing::warn!(request_id = %inbound.id, code = err.code().as_str(), attempts = guard.rec.attempts.len(), "all candidates failed");
        guard.rec.descriptor = descriptor(plan, &tried);
        Err(guard.fail(inbound.format, err))
    }
}

impl Snapshot {
    /// One attempt on one candidate: pick a healthy credential, pass its breaker,
    /// call, and report the outcome to the breaker. `request`: the inbound one,
    /// less the offered tools `dropped` (the candidate does not run them).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn attempt(
        &self,
        inbound: &Inbound,
        request: &Request,
        dropped: &Dropped,
        cand: &Candidate,
        runtime: &Arc<Runtime>,
        deadline: Instant,
        bypass_breakers: bool,
        traceparent: Option<&str>,
        prompted: bool,
    ) -> Tried {
        let mut reported = Usage::default();
        let mut field_edits = Vec::new();
        let failed = |f, credential| Tried {
            result: Err(f),
            credential,
            reported: Usage::default(),
            occupied: None,
            field_edits: Vec::new(),
        };
        if let Some(why) = &cand.provider.unavailable
            && !cand.provider.reachable_with(&inbound.byok)
        {
            return failed(Failure::Unavailable(why.clone()), None);
        }
        // A batch's line answered by its provider's batch API: the answer read
        // back is the attempt (nothing is sent, no credential or capacity taken).
        if let Some(p) = &inbound.prefetched {
            let in_flight = runtime.in_flight.enter(&cand.identity());
            return Tried {
                result: self.replay(inbound, cand, p, prompted).map(|a| (a, in_flight)),
                credential: None,
                reported,
                occupied: None,
                field_edits,
            };
        }
        let Cleared { key, permit, credential, occupied } =
            match self.clear(inbound, cand, runtime, bypass_breakers).await {
                Ok(cleared) => cleared,
                Err((f, credential)) => return failed(f, credential),
            };
        let in_flight = runtime.in_flight.enter(&cand.identity());
        let result = match (&cand.provider.kind, self.runtimes.get(&cand.provider.name)) {
            (ProviderKind::Mock { latency }, _) => {
                if !request.stream && !latency.is_zero() {
                    tokio::time::sleep(*latency).await;
                }
                Ok(self.attempt_mock(inbound, request, cand, *latency))
            }
            (ProviderKind::Wire(wire), Some(_)) => {
                let tools = dropped.tools(&inbound.request);
                let call = Call {
                    request,
                    dropped: tools,
                    wire: *wire,
                    key,
                    deadline,
                    traceparent,
                    prompted,
                };
                self.attempt_http(inbound, cand, call, runtime, &mut reported, &mut field_edits)
                    .await
            }
            (ProviderKind::Wire(_), None) => {
                Err(Failure::Unavailable(format!("provider {} has no client", cand.provider.name)))
            }
        };
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &[] };
        let result = match result {
            Ok(Answer::Stream(mut committed)) => {
                // A stream's outcome is known when it ends, not at its commit
                // point: the pump reports it with this permit (and scrubs
                // whatever the stream says later with the attempt's credentials,
                // `Committed::used`).
                committed.permit = permit;
                Ok(Answer::Stream(committed))
            }
            other => {
                if let Some(permit) = permit {
                    match health_outcome_of(&other) {
                        Some(outcome) => runtime.health.report(permit, outcome, UnixMs::now()),
                        None => runtime.health.abandon(permit),
                    }
                }
                other.map_err(|f| f.redacted(&redactor))
            }
        };
        Tried {
            result: result.map(|a| (a, in_flight)),
            credential,
            reported,
            occupied,
            field_edits,
        }
    }

    /// What an attempt on `cand` needs before it is sent: a credential (the
    /// caller's own key, else the next platform key its breaker lets through;
    /// none needed where the provider takes none), the breaker's permit (none
    /// when the route bypasses breakers) and the deployment's capacity on
    /// that credential. Refused: why, with the credential where one was chosen.
    pub(super) async fn clear<'a>(
        &self,
        inbound: &'a Inbound,
        cand: &'a Candidate,
        runtime: &Arc<Runtime>,
        bypass_breakers: bool,
    ) -> Result<Cleared<'a>, (Failure, Option<String>)> {
        let keys = credentials(cand, inbound);
        let (key, permit) = if bypass_breakers {
            let rt = self.runtimes.get(&cand.provider.name);
            (rt.and_then(|rt| keys.get(rt.next_index(keys.len()))), None)
        } else {
            match self.pick_credential(cand, keys, runtime, UnixMs::now()) {
                Ok((k, p)) => (k, Some(p)),
                Err(f) => return Err((f, None)),
            }
        };
        let credential = key.map(Secret::fingerprint);
        match occupy(inbound, cand, credential.as_deref(), runtime).await {
            Ok(occupied) => Ok(Cleared { key, permit, credential, occupied }),
            Err(f) => {
                if let Some(permit) = permit {
                    runtime.health.abandon(permit);
                }
                Err((f, credential))
            }
        }
    }

    /// Record into `provider`'s histograms (kept by its runtime; the mock
    /// provider has none and registers them per call).
    pub(super) fn provider_meters(
        &self,
        provider: &str,
        f: impl FnOnce(&upstream::ProviderMeters),
    ) {
        if !self.catalog.settings.metrics {
            return;
        }
        match self.runtimes.get(provider) {
            Some(rt) => f(rt.meters(provider)),
            None => f(&upstream::ProviderMeters::new(provider)),
        }
    }

    /// Choose the credential: the next available key of the provider (rotating),
    /// admitted by its breaker.
    pub(super) fn pick_credential<'a>(
        &self,
        cand: &Candidate,
        keys: &'a [Secret],
        runtime: &Runtime,
        now: UnixMs,
    ) -> Result<(Option<&'a Secret>, Permit), Failure> {
        let name = &cand.provider.name;
        if keys.is_empty() {
            return match runtime.health.clear(&credential_key(name, None), now) {
                Clearance::Allowed(p) => Ok((None, p)),
                Clearance::Rejected { state } => {
                    Err(Failure::CircuitOpen(format!("{name}: circuit {}", state.name())))
                }
            };
        }
        let start = self.runtimes.get(name).map_or(0, |rt| rt.next_index(keys.len()));
        let mut last_state = None;
        for n in 0..keys.len() {
            let Some(k) = keys.get((start + n) % keys.len()) else { continue };
            match runtime.health.clear(&credential_key(name, Some(k)), now) {
                Clearance::Allowed(p) => return Ok((Some(k), p)),
                Clearance::Rejected { state } => last_state = Some(state),
            }
        }
        let state = last_state.map_or("open", |s| s.name());
        Err(Failure::CircuitOpen(format!(
            "{name}: every credential is unavailable (circuit {state})"
        )))
    }

    pub(super) fn attempt_mock(
        &self,
        inbound: &Inbound,
        request: &Request,
        cand: &Candidate,
        latency: Duration,
    ) -> Answer {
        let resp = mock::answer(request, &cand.upstream_model, &inbound.id);
        if request.stream {
            let source = Source::Events { rx: mock::stream(resp, latency), done: false };
            Answer::Stream(Committed {
                source,
                held_raw: Vec::new(),
                held_frames: Vec::new(),
                held: Vec::new(),
                ended: false,
                used: Vec::new(),
                permit: None,
            })
        } else {
            Answer::Whole(Whole::Parsed { response: resp, raw: None })
        }
    }

    pub(super) async fn attempt_http(
        &self,
        inbound: &Inbound,
        cand: &Candidate,
        call: Call<'_>,
        runtime: &Runtime,
        reported: &mut Usage,
        field_edits: &mut Vec<String>,
    ) -> Result<Answer, Failure> {
        let Call { request, dropped, wire, key, deadline, traceparent, prompted } = call;
        let Some(rt) = self.runtimes.get(&cand.provider.name) else {
            return Err(Failure::Unavailable(format!(
                "provider {} has no client",
                cand.provider.name
            )));
        };
        let settings = &self.catalog.settings;
        // Prompted, the body is the request as rewritten, and the answer is
        // parsed to be checked: no same-format fast path either way.
        let fast = inbound.fast_path(wire) && !prompted;
        let cap = cand.model.as_ref().and_then(|m| m.max_output_tokens);
        let traits = cand.traits(wire);
        let stream = inbound.request.stream;
        let dest = upstream::Dest {
            runtime: rt,
            spec: &cand.provider,
            wire,
            key,
            upstream_model: &cand.upstream_model,
        };
        // Sent again once, without what a refusal named that the provider was
        // not yet known to refuse ([`crate::refusals`]).
        let mut resent = false;
        let (resp, minted) = loop {
            let refused = runtime.refusals.get(&cand.provider.name);
            let mut out = inbound.outgoing(request, wire);
            if prompted {
                out.raw = None;
            }
            out.dropped = dropped.clone();
            out.refused = refused.as_deref();
            out.traceparent = traceparent;
            let body =
                upstream::build_body(&out, wire, &cand.provider, &cand.upstream_model, cap, traits)
                    .map_err(Failure::from_protocol)?;
            *field_edits = upstream::field_edits(&out, wire, &cand.provider, traits);
            let remaining = deadline.saturating_duration_since(Instant::now());
            let first_byte = inbound
                .limits
                .attempt_timeout
                .unwrap_or(settings.first_byte_timeout)
                .min(remaining);
            let send = upstream::send(dest, &out, stream, body);
            let resp = match tokio::time::timeout(first_byte, send).await {
                Err(_) => {
                    return Err(Failure::Transport {
                        class: TransportClass::Timeout,
                        message: format!("no response within {} ms", first_byte.as_millis()),
                    });
                }
                Ok(r) => r?,
            };
            // With what the cloud credential minted for this request.
            let (resp, minted) = resp;
            if resp.status().is_success() {
                break (resp, minted);
            }
            let redactor =
                Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
            let failure = upstream::read_failure(resp, wire, &redactor, deadline).await;
            if let Failure::Status { status: 400, message, .. } = &failure
                && !resent
                && let Some(named) = wire.behaviour().refused(message)
                && runtime.refusals.learn(&cand.provider.name, &named)
            {
                resent = true;
                continue;
            }
            return Err(failure);
        };
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
        if !stream {
            let bytes = upstream::read_body(resp, settings.max_response_bytes, deadline).await?;
            // Scrubbed before anything reads or forwards it, as an error's body is.
            let bytes = match redactor.forwarded(&bytes) {
                Cow::Borrowed(_) => bytes,
                Cow::Owned(clean) => Bytes::from(clean),
            };
            return whole_answer(inbound, wire, bytes, fast).map_err(|f| f.redacted(&redactor));
        }
        let source = Source::http(resp, wire);
        let mut committed = commit(
            source,
            inbound
                .limits
                .idle_timeout
                .unwrap_or(settings.idle_timeout)
                .min(deadline.saturating_duration_since(Instant::now())),
            fast,
            settings.max_response_bytes,
            reported,
        )
        .await
        .map_err(|f| f.redacted(&redactor))?;
        // What the stream says later is scrubbed with the same credentials.
        committed.used = key.cloned().into_iter().chain(minted).collect();
        Ok(Answer::Stream(committed))
    }
}
