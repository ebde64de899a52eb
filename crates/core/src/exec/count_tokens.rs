//! Token counts: a request's input tokens, without generating.
//!
//! The request is planned like a generation (resolution, access rules, governance,
//! capability and hint filters, circuit filter, strategy order; not the context
//! window: a count is never refused for its size), then the candidates are tried
//! in order. A candidate whose wire has a counting endpoint
//! ([`switchyard_protocol::CountSpec`]) is asked for its count, with the body a
//! generation would send it (translated, or the client's own on the same format)
//! reshaped for counting, and the caller's own key (BYOK) before platform keys. A
//! failure fails over as a generation's does (401/403/404/408/429/5xx, transport);
//! a request-shaped one (400/413/422) is answered. A candidate whose wire has no
//! counting endpoint (OpenAI Chat, the mock) is answered with the gateway's
//! estimate ([`crate::estimate`]), marked as such; so is a request whose every
//! candidate failed, since a count that is close serves a client better than none.
//!
//! A count that may call an upstream counts against the caller's request rate
//! and concurrency (`limits:` of its key, user and project), not its tokens or
//! budgets. Counts never report to the breakers: a provider whose counting
//! endpoint is missing or broken must not lose its generations. They are not request records
//! either (they cost nothing); each one is logged, estimated or not.

use super::*;

/// A request's input tokens, in no client's format (the edge encodes it).
#[derive(Debug, Clone)]
pub struct TokenCount {
    /// The request's input tokens, as the upstream counts them (or estimated).
    pub input_tokens: u64,
    /// The gateway estimated the count: the deployment's wire has no counting
    /// endpoint, or every candidate's count failed.
    pub estimated: bool,
    /// The deployment that counted, or whose count was estimated.
    pub served: Served,
}

impl Snapshot {
    /// Count `inbound`'s input tokens on the deployments a generation of it would
    /// use: planned as a generation is (never refused for its size), then each
    /// candidate in order is asked for its count where its wire has a counting
    /// endpoint, failures failing over as a generation's do; a wire without one, or
    /// every candidate failing, gives the gateway's estimate
    /// ([`TokenCount::estimated`]). Counts never report to the breakers and make
    /// no request record. The entry point for every client
    /// format's counting endpoint: the edge parses the request into an
    /// [`Inbound`] as for a generation and encodes the [`TokenCount`] in its own
    /// shape; [`crate::Engine::count_tokens`] calls this on the current snapshot.
    pub async fn count_tokens(
        &self,
        inbound: &Inbound,
        runtime: &Runtime,
    ) -> Result<TokenCount, GatewayError> {
        // Counts are not recorded: the plan's notes go nowhere.
        let mut scratch = RequestRecord::default();
        let plan = self.plan_for(inbound, runtime, &mut scratch, Purpose::Count)?;
        // A count that may call an upstream is a request of the caller's: it
        // counts against its request rate and concurrency (given back when
        // `_admitted` drops). Not its tokens, nor a budget (counting is free),
        // nor a deployment's capacity (providers limit counting apart from
        // generation).
        let calls = plan
            .candidates
            .iter()
            .any(|c| c.provider.wire().is_some_and(|w| w.spec().count.is_some()));
        let _admitted = match &runtime.admission {
            Some(admission) if calls => Some(admit_count(admission, self, inbound, &plan).await?),
            _ => None,
        };
        let request = restored(inbound, &plan, runtime).await;
        let deadline = inbound.received
            + inbound.limits.deadline.unwrap_or(self.catalog.settings.request_timeout);
        let policy = &*plan.policy;
        let max_attempts = inbound.limits.max_attempts.unwrap_or(policy.max_attempts);
        let mut sent = 0usize;
        for cand in &plan.candidates {
            if sent >= max_attempts || Instant::now() >= deadline {
                break;
            }
            // Counted as a generation would be sent there: without the offered
            // tools it does not run.
            let dropped = plan.tools.dropped(cand, &request);
            let counted = self.count_on(inbound, &request, &dropped, cand, runtime, deadline).await;
            let f = match counted {
                Ok(Some(n)) => {
                    return Ok(finish(
                        inbound,
                        &plan,
                        cand,
                        &dropped,
                        n,
                        false,
                        self.catalog.settings.metrics,
                    ));
                }
                Ok(None) => {
                    let n = estimate::input_tokens(&dropped.apply(&request));
                    return Ok(finish(
                        inbound,
                        &plan,
                        cand,
                        &dropped,
                        n,
                        true,
                        self.catalog.settings.metrics,
                    ));
                }
                Err(f) => f,
            };
            sent += usize::from(!matches!(
                f,
                Failure::Unavailable(_) | Failure::Credential(_) | Failure::Unsupported(_)
            ));
            tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), outcome = %f.outcome(), "token count failed");
            let remaining = deadline.saturating_duration_since(Instant::now());
            // No retries: the next candidate, or the estimate, is as good an answer.
            if next_step(&f, policy, u32::MAX, remaining) == Next::Terminal {
                let err = failure_error(&f, &cand.provider.name);
                if self.catalog.settings.metrics {
                    crate::telemetry::counter!("gateway_token_counts_total", "format" => inbound.format.as_str(), "outcome" => "error").increment(1);
                }
                return Err(err);
            }
        }
        let Some(first) = plan.candidates.first() else {
            return Err(GatewayError::new(
                ErrorCode::ProviderUnavailable,
                format!("no deployment of model {:?} can count tokens", plan.public_model),
            ));
        };
        tracing::warn!(request_id = %inbound.id, model = %plan.public_model, "every token count failed; estimating");
        let dropped = plan.tools.dropped(first, &request);
        let n = estimate::input_tokens(&dropped.apply(&request));
        Ok(finish(inbound, &plan, first, &dropped, n, true, self.catalog.settings.metrics))
    }

    /// One candidate's count: `Ok(None)` when its wire has no counting endpoint.
    async fn count_on(
        &self,
        inbound: &Inbound,
        request: &Request,
        dropped: &Dropped,
        cand: &Candidate,
        runtime: &Runtime,
        deadline: Instant,
    ) -> Result<Option<u64>, Failure> {
        let Some(wire) = cand.provider.wire() else { return Ok(None) };
        let spec = wire.spec();
        let Some(count) = spec.count else { return Ok(None) };
        if let Some(why) = &cand.provider.unavailable
            && !cand.provider.reachable_with(&inbound.byok)
        {
            return Err(Failure::Unavailable(why.clone()));
        }
        let name = &cand.provider.name;
        let Some(rt) = self.runtimes.get(name) else {
            return Err(Failure::Unavailable(format!("provider {name} has no client")));
        };
        // The caller's key, else the next platform key whose breaker lets it through
        // (any of them when none does: the plan kept this candidate).
        let keys = credentials(cand, inbound);
        let now = UnixMs::now();
        let start = rt.next_index(keys.len());
        let rotated = || (0..keys.len()).filter_map(|n| keys.get((start + n) % keys.len()));
        let key = rotated()
            .find(|k| runtime.health.is_available(&credential_key(name, Some(k)), now))
            .or_else(|| rotated().next());
        let trimmed = dropped.apply(request);
        let refused = runtime.refusals.get(name);
        let mut out = inbound.outgoing(&trimmed, wire);
        out.dropped = dropped.tools(request);
        out.refused = refused.as_deref();
        let generation = upstream::build_body(
            &out,
            wire,
            &cand.provider,
            &cand.upstream_model,
            None,
            cand.traits(wire),
        )
        .map_err(Failure::from_protocol)?;
        let body = count.body(&generation, &cand.upstream_model).map_err(Failure::from_protocol)?;
        let Some(url) = spec.count_url(&cand.provider.endpoint, &cand.upstream_model) else {
            return Ok(None);
        };
        let dest = upstream::Dest {
            runtime: rt,
            spec: &cand.provider,
            wire,
            key,
            upstream_model: &cand.upstream_model,
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let timeout = inbound
            .limits
            .attempt_timeout
            .unwrap_or(self.catalog.settings.first_byte_timeout)
            .min(remaining);
        let timed_out = || Failure::Transport {
            class: TransportClass::Timeout,
            message: format!("no token count within {} ms", timeout.as_millis()),
        };
        let configured = Redactor { platform: &cand.provider.secrets, used: key, minted: &[] };
        let started = Instant::now();
        let (resp, minted) = tokio::time::timeout(
            timeout,
            upstream::send_to(dest, &out, &url, body, count.passthrough),
        )
        .await
        .map_err(|_| timed_out())?
        .map_err(|f| f.redacted(&configured))?;
        let redactor = Redactor { platform: &cand.provider.secrets, used: key, minted: &minted };
        let until = started + timeout;
        if !resp.status().is_success() {
            return Err(upstream::read_failure(resp, wire, &redactor, until).await);
        }
        let bytes = upstream::read_body(resp, self.catalog.settings.max_response_bytes, until)
            .await
            .map_err(|f| match f {
                Failure::Transport { class: TransportClass::Timeout, .. } => timed_out(),
                other => other,
            })?;
        count
            .parse_answer(&bytes)
            .map(Some)
            .map_err(|e| Failure::from_protocol(e).redacted(&redactor))
    }
}

/// The request as a generation of it would be sent: with what the gateway keeps
/// for the upstream between turns put back (signed thinking a Chat client cannot
/// carry, Gemini's call signatures), which the upstream counts too. Borrowed when
/// nothing is missing.
async fn restored<'a>(inbound: &'a Inbound, plan: &Plan, runtime: &Runtime) -> Cow<'a, Request> {
    let mut request = Cow::Borrowed(&*inbound.request);
    if continuity::needs_store(inbound.format) && !continuity::wanted(&request).is_empty() {
        continuity::restore_from(runtime.continuity.as_ref(), request.to_mut()).await;
    }
    if super::needs_call_signatures(plan) && continuity::lacks_signatures(&request) {
        continuity::restore_signatures(runtime.continuity.as_ref(), request.to_mut()).await;
    }
    request
}

fn finish(
    inbound: &Inbound,
    plan: &Plan,
    cand: &Candidate,
    dropped: &Dropped,
    n: u64,
    estimated: bool,
    metrics: bool,
) -> TokenCount {
    tracing::debug!(request_id = %inbound.id, deployment = %cand.label(), input_tokens = n, estimated, "token count");
    if metrics {
        let outcome = if estimated { "estimated" } else { "counted" };
        crate::telemetry::counter!("gateway_token_counts_total", "format" => inbound.format.as_str(), "outcome" => outcome).increment(1);
    }
    TokenCount {
        input_tokens: n,
        estimated,
        served: Served {
            provider: cand.provider.name.clone(),
            model: plan.public_model.clone(),
            upstream_model: cand.upstream_model.clone(),
            dropped_tools: dropped.names(&inbound.request),
        },
    }
}
