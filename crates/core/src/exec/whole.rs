//! Requests answered whole by an endpoint of their own (embeddings, images):
//! planned among the catalog's models of their kind, admitted, then tried on
//! each candidate in order with the route's retries and failover, as a
//! generation is, but with no stream and no same-format fast path. What an
//! attempt sends is the operation's ([`WholeCall`]); the loop, the
//! credentials, breakers, capacity, attempt records and failover are here,
//! once for all of them.

use super::*;
use crate::exec::context::Estimate;

/// One kind of request answered whole: what an attempt on one candidate does.
pub(super) trait WholeCall: Sync {
    /// What an answering attempt gives.
    type Answer: Send;

    /// Why the candidate's wire cannot take the request, checked before a
    /// credential is spent on it (the wire serves no such endpoint, or cannot
    /// express what was asked of this model).
    fn check(&self, wire: Wire, upstream_model: &str) -> Result<(), Failure>;

    /// The mock provider's answer.
    fn mock(&self, upstream_model: &str) -> Self::Answer;

    /// One attempt over HTTP: every upstream call it needs. `reported`: what
    /// the calls that answered before one failed reported, to be metered.
    fn send<'a>(
        &'a self,
        snapshot: &'a Snapshot,
        to: Target<'a>,
        reported: &'a mut Usage,
    ) -> impl Future<Output = Result<Self::Answer, Failure>> + Send + 'a;
}

/// Where one HTTP attempt goes.
pub(super) struct Target<'a> {
    pub inbound: &'a Inbound,
    pub cand: &'a Candidate,
    pub wire: Wire,
    pub key: Option<&'a Secret>,
    pub deadline: Instant,
}

impl<'a> Target<'a> {
    /// The upstream this attempt calls, and what it carries of the request
    /// (headers, trace context): the provider's client must exist.
    pub fn dest(
        &self,
        snapshot: &'a Snapshot,
    ) -> Result<(upstream::Dest<'a>, Outgoing<'a>), Failure> {
        let cand = self.cand;
        let Some(rt) = snapshot.runtimes.get(&cand.provider.name) else {
            return Err(Failure::Unavailable(format!(
                "provider {} has no client",
                cand.provider.name
            )));
        };
        let dest = upstream::Dest {
            runtime: rt,
            spec: &cand.provider,
            wire: self.wire,
            key: self.key,
            upstream_model: &cand.upstream_model,
        };
        Ok((dest, self.inbound.outgoing(&self.inbound.request, self.wire)))
    }
}

/// The candidate that answered, its answer, and the providers tried (for the
/// descriptor); the record is still open, for the caller to meter and write.
pub(super) struct Answered<A> {
    pub index: usize,
    pub answer: A,
    pub tried: Vec<String>,
}

/// What one attempt came to.
struct Tried<A> {
    result: Result<A, Failure>,
    credential: Option<String>,
    reported: Usage,
    occupied: Option<Taken>,
}

impl Snapshot {
    /// Open the request's record, plan it for `purpose` (its `operation` in
    /// the record) and admit it; `estimate`: its input tokens, as the
    /// operation counts them.
    pub(super) async fn open_whole(
        &self,
        inbound: &mut Inbound,
        runtime: &Runtime,
        sink: SharedSink,
        purpose: Purpose,
        operation: &'static str,
        estimate: u64,
    ) -> Result<(RecordGuard, Plan), GatewayError> {
        inbound.estimate = Estimate::known(estimate);
        let mut guard = RecordGuard::open(inbound, sink, self.catalog.settings.metrics);
        guard.rec.operation = Some(Cow::Borrowed(operation));
        let mut plan = match self.plan_for(inbound, runtime, &mut guard.rec, purpose) {
            Ok(p) => p,
            Err(err) => return Err(guard.fail(inbound.format, err)),
        };
        if let Some(admission) = &runtime.admission {
            match admit(admission.as_ref(), self, inbound, &plan).await {
                Ok(reservation) => {
                    for scope in &reservation.over_budget {
                        plan.descriptor.push(format!("budget_over:{scope}"));
                    }
                    guard.reservation = Some((Arc::clone(admission), reservation));
                }
                Err(err) => return Err(guard.fail(inbound.format, err)),
            }
        }
        Ok((guard, plan))
    }

    /// The attempt loop: each candidate in order, with the route's retries,
    /// until one answers or none can. A failure that ends the request is
    /// recorded here; an answer is the caller's to meter and record.
    pub(super) async fn whole_loop<C: WholeCall>(
        &self,
        inbound: &Inbound,
        call: &C,
        plan: &mut Plan,
        runtime: &Arc<Runtime>,
        guard: &mut RecordGuard,
    ) -> Result<Answered<C::Answer>, GatewayError> {
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
                let Tried { result, credential, reported, occupied } = self
                    .whole_attempt(inbound, call, cand, runtime, deadline, plan.bypass_breakers)
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
                    Ok(answer) => {
                        runtime
                            .latency
                            .observe_attempt(&cand.identity(), elapsed.as_secs_f64() * 1000.0);
                        return Ok(Answered { index: i, answer, tried });
                    }
                    Err(f) => {
                        tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "attempt failed");
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
        let err = last_error(&failures, plan);
        tracing::warn!(request_id = %inbound.id, code = err.code().as_str(), attempts = guard.rec.attempts.len(), "all candidates failed");
        guard.rec.descriptor = descriptor(plan, &tried);
        Err(guard.fail(inbound.format, err))
    }

    /// One attempt on one candidate: a credential its breaker lets through,
    /// the deployment's capacity, the call's own sending, the outcome told to
    /// the breaker.
    async fn whole_attempt<C: WholeCall>(
        &self,
        inbound: &Inbound,
        call: &C,
        cand: &Candidate,
        runtime: &Arc<Runtime>,
        deadline: Instant,
        bypass_breakers: bool,
    ) -> Tried<C::Answer> {
        let failed = |f, credential| Tried {
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
        let wire = match &cand.provider.kind {
            ProviderKind::Mock { .. } => None,
            ProviderKind::Wire(wire) => match call.check(*wire, &cand.upstream_model) {
                Ok(()) => Some(*wire),
                Err(f) => return failed(f, None),
            },
        };
        let Cleared { key, permit, credential, occupied } =
            match self.clear(inbound, cand, runtime, bypass_breakers).await {
                Ok(cleared) => cleared,
                Err((f, credential)) => return failed(f, credential),
            };
        let _in_flight = runtime.in_flight.enter(&cand.identity());
        let mut reported = Usage::default();
        let result = match wire {
            None => Ok(call.mock(&cand.upstream_model)),
            Some(wire) => {
                let to = Target { inbound, cand, wire, key, deadline };
                call.send(self, to, &mut reported).await
            }
        };
        if let Some(permit) = permit {
            match health_outcome_of(&result) {
                Some(outcome) => runtime.health.report(permit, outcome, UnixMs::now()),
                None => runtime.health.abandon(permit),
            }
        }
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &[] };
        Tried { result: result.map_err(|f| f.redacted(&redactor)), credential, reported, occupied }
    }
}
