//! Plan: resolve, authorize, filter and order the candidates. Nothing is sent.

use super::*;
use crate::breaker::BreakerState;
use crate::config::raw::{ModelKind, Pricing};

/// What a plan is made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Purpose {
    Generate,
    Count,
    /// Embeddings: only embedding models, never refused for the whole
    /// request's size (each input is its own).
    Embed,
    /// Images: only image models.
    Image,
    /// Media jobs: only media models.
    Job,
}

impl Snapshot {
    /// Whether a Responses client's compaction trigger goes to its upstreams as
    /// the client sent it: every deployment the request may reach speaks the
    /// client's own API (the same-format fast path), which compacts natively and
    /// reads its own compaction items back. Otherwise the gateway compacts
    /// (`crate::compaction`), which holds across a failover to any wire.
    /// A compact request (`/v1/responses/compact`) likewise, where each
    /// deployment's wire has its own compaction endpoint.
    pub(crate) fn compacts_natively(&self, inbound: &Inbound, runtime: &Runtime) -> bool {
        use switchyard_protocol::Compaction;
        let endpoint = match &inbound.request.compaction {
            _ if inbound.output != Output::Client => return false,
            Some(Compaction::Trigger) => false,
            Some(Compaction::Endpoint { .. }) => true,
            None => return false,
        };
        // Planned again by the pipeline: compacting is rare, a plan is cheap.
        let mut scratch = RequestRecord::default();
        let Ok(plan) = self.prepare(inbound, runtime, &mut scratch) else { return false };
        let native = |w: Wire| inbound.fast_path(w) && (!endpoint || w.spec().compact.is_some());
        !plan.candidates.is_empty()
            && plan.candidates.iter().all(|c| c.provider.wire().is_some_and(native))
    }

    /// Resolve → capability, hosted-tool, hint and context-window filters →
    /// circuit filter, strategy order, and the deployments that run the offered
    /// hosted tools first. Nothing has been sent upstream yet.
    pub(super) fn prepare(
        &self,
        inbound: &Inbound,
        runtime: &Runtime,
        rec: &mut RequestRecord,
    ) -> Result<Plan, GatewayError> {
        self.plan_for(inbound, runtime, rec, Purpose::Generate)
    }

    /// [`Snapshot::prepare`] for `purpose`: a token count is planned the same way
    /// but is never refused for its size (telling a client how large its request
    /// is, is the point), so it skips the context-window filter.
    pub(super) fn plan_for(
        &self,
        inbound: &Inbound,
        runtime: &Runtime,
        rec: &mut RequestRecord,
        purpose: Purpose,
    ) -> Result<Plan, GatewayError> {
        let scope = Scope {
            project: inbound.project.as_deref(),
            project_name: inbound.project_name.as_deref(),
        };
        let today = Date::today();
        // An `auto` model goes where its class goes; the class and the rule that
        // decided it lead the descriptor (the `x-gateway-route` header, the record).
        let auto = self.catalog.auto_model(
            &inbound.request.model,
            &inbound.request,
            inbound.intent.as_ref(),
        );
        let model = auto.as_ref().map_or(inbound.request.model.as_str(), |a| a.target.as_str());
        let mut plan = self.catalog.plan(model, today, &scope)?;
        if let Some(a) = &auto {
            plan.descriptor
                .splice(0..0, [format!("auto:{}", a.intent), format!("intent_rule:{}", a.rule)]);
            rec.routing.intent = Some(a.intent.as_str().into());
            rec.routing.intent_rule = Some(a.rule.into());
        } else if let Some(d) = &inbound.intent {
            // Reasoning effort `auto` on a named model: the class set the effort.
            rec.routing.intent = Some(d.intent.as_str().into());
            rec.routing.intent_rule = Some(d.rule.into());
        }
        // The request's own fallbacks follow the model's candidates (authorized,
        // filtered and bounded below like them).
        for fallback in &inbound.limits.fallbacks {
            let more = self.catalog.plan(fallback, today, &scope)?;
            for c in more.candidates {
                let dup = plan.candidates.iter().any(|x| {
                    x.provider.name == c.provider.name && x.upstream_model == c.upstream_model
                });
                if !dup {
                    plan.candidates.push(c);
                }
            }
        }
        if !inbound.limits.fallbacks.is_empty() || inbound.limits.max_fallbacks.is_some() {
            let n = inbound.limits.max_fallbacks.unwrap_or(plan.policy.max_fallbacks);
            plan.candidates.truncate(1 + n.min(crate::catalog::HARD_MAX_FALLBACKS));
        }
        // A batch's line answered by its provider's batch API is delivered
        // from the deployment that answered, whatever its health now.
        if let Some(p) = &inbound.prefetched {
            plan.candidates
                .retain(|c| c.provider.name == p.provider && c.upstream_model == p.upstream_model);
            if plan.candidates.is_empty() {
                return Err(GatewayError::new(
                    ErrorCode::NoCandidate,
                    format!(
                        "the line was answered by {} ({}), which the catalog no longer routes it to",
                        p.provider, p.upstream_model
                    ),
                ));
            }
            plan.bypass_breakers = true;
            plan.descriptor.push(format!("provider_batch:{}", p.upstream_batch));
        }
        // A key's or project's own policy (the key's first) over the route's.
        let pinned = inbound.pinned();
        if let Some(p) = pinned.iter().flatten().find(|p| p.strategy.is_some()) {
            plan.strategy = p.strategy.unwrap_or(plan.strategy);
            plan.descriptor.push(format!("pinned:{}", p.source));
        }
        rec.resolved_model = Some(plan.public_model.clone());
        rec.route_id.clone_from(&plan.route_id);
        rec.provider = plan.candidates.first().map(|c| c.provider.name.clone());
        self.authorize(&mut plan, inbound, runtime)?;
        let kind = match purpose {
            Purpose::Embed => ModelKind::Embedding,
            Purpose::Image => ModelKind::Image,
            Purpose::Job => ModelKind::Media,
            Purpose::Generate | Purpose::Count => ModelKind::Chat,
        };
        filter::by_kind(&mut plan, kind)?;
        // Decided once: what the request's hosted tools ask of every candidate.
        let items_wire = inbound.format.native_wire().filter(|w| inbound.fast_path(*w));
        plan.tools = ToolDemand::new(plan.unrunnable_server_tools, items_wire);
        filter::by_governance(&mut plan)?;
        let structured =
            crate::structured::mode(inbound.hints.structured_output, plan.policy.structured_output);
        filter::by_capability(&mut plan, &inbound.request, structured)?;
        plan.tools.filter(&mut plan, &inbound.request)?;
        filter::by_hints(&mut plan, &inbound.hints, &inbound.request)?;
        for p in pinned.iter().flatten() {
            filter::by_pinned_ceiling(&mut plan, p)?;
        }
        if purpose == Purpose::Generate {
            // Images and documents are left out: their fixed estimates would
            // refuse requests that fit.
            filter::by_context_window(&mut plan, &self.catalog, || {
                estimate::text_input_tokens(&inbound.request)
            })?;
        }
        // A context-window fallback serves the request's hosted tools too, or not at all.
        plan.tools.filter(&mut plan, &inbound.request)?;
        // A wire that sends the request without the thinking asked for says so
        // in the descriptor (Anthropic, in a tool loop continued from another
        // family), once.
        if let Some(note) = plan.candidates.iter().find_map(|c| {
            let wire = c.provider.wire()?;
            wire.behaviour().thinking_note(&inbound.request, c.traits(wire))
        }) {
            plan.descriptor.push(note.to_owned());
        }

        let now = UnixMs::now();
        let blocked = |c: &Candidate| {
            let keys = credentials(c, inbound);
            // Every credential is looked at only when none is available.
            let mut throttled_only = true;
            let mut available = |k| {
                let s = runtime.health.state(&credential_key(&c.provider.name, k), now);
                throttled_only &= matches!(s, BreakerState::Throttled { .. });
                s.is_available()
            };
            let any = if keys.is_empty() {
                available(None)
            } else {
                keys.iter().any(|k| available(Some(k)))
            };
            match (any, throttled_only) {
                (true, _) => None,
                (false, true) => Some(filter::Blocked::Throttled),
                (false, false) => Some(filter::Blocked::CircuitOpen),
            }
        };
        filter::by_circuit(&mut plan, blocked);
        let strategy = if plan.bypass_breakers { Strategy::Ordered } else { plan.strategy };
        if strategy == Strategy::Adaptive {
            // The key's or project's policy, else the route's, else (a pinned
            // strategy on a route with none) the interactive preset.
            let policy = pinned
                .iter()
                .flatten()
                .find_map(|p| p.adaptive.clone())
                .or_else(|| plan.policy.adaptive.clone())
                .unwrap_or_else(crate::app_policy::default_adaptive);
            self.order_adaptive(&mut plan, &policy, inbound, runtime, rec)?;
        } else {
            self.order_by(strategy, &mut plan, inbound, runtime, &blocked);
        }
        // Where an offered tool runs comes first.
        plan.tools.order(&mut plan, &inbound.request);
        if plan.strategy != Strategy::Ordered {
            plan.descriptor.push(format!("strategy:{}", plan.strategy.as_str()));
            if let (Some(first), Some(route), true) =
                (plan.candidates.first(), plan.route_id.as_deref(), self.catalog.settings.metrics)
            {
                crate::telemetry::counter!("gateway_deployment_selected_total", "route" => route.to_owned(), "provider" => first.provider.name.clone(), "strategy" => plan.strategy.as_str()).increment(1);
            }
        }
        if let Some(batch) = &inbound.batch {
            // A batch's line is billed at the batch prices, whoever serves it.
            for c in &mut plan.candidates {
                c.pricing = c.pricing.as_ref().map(Pricing::batched);
            }
            plan.descriptor.push(format!("batch:{batch}"));
        }
        rec.provider =
            plan.candidates.first().map(|c| c.provider.name.clone()).or(rec.provider.take());
        Ok(plan)
    }

    /// Order the plan's candidates by a fixed `strategy` (`crate::strategy`).
    fn order_by(
        &self,
        strategy: Strategy,
        plan: &mut Plan,
        inbound: &Inbound,
        runtime: &Runtime,
        blocked: &dyn Fn(&Candidate) -> Option<filter::Blocked>,
    ) {
        // Each strategy reads only its own figures; ordered reads none.
        let (costs, latencies, busy) = match strategy {
            Strategy::Ordered | Strategy::Weighted | Strategy::Adaptive => (false, false, false),
            Strategy::LeastBusy => (false, false, true),
            Strategy::Cost => (true, false, false),
            Strategy::Latency => (false, true, false),
            Strategy::Balanced => (true, true, false),
        };
        let input_estimate = if costs { inbound.input_estimate() } else { 0 };
        let views: Vec<View> = plan
            .candidates
            .iter()
            .map(|c| {
                let identity = if latencies || busy { c.identity() } else { String::new() };
                View {
                    available: strategy == Strategy::Weighted && blocked(c).is_none(),
                    weight: c.weight,
                    in_flight: if busy { runtime.in_flight.count(&identity) } else { 0 },
                    price: if costs {
                        filter::estimated_price(c, input_estimate, &inbound.request)
                    } else {
                        None
                    },
                    latency_ms: if latencies { runtime.latency.estimate(&identity) } else { None },
                }
            })
            .collect();
        let order = strategy::order(strategy, &views, strategy::uniform());
        // Reorder by moving the candidates, not cloning them (chain order: nothing to do).
        if order.iter().enumerate().any(|(pos, &i)| pos != i) {
            let mut slots: Vec<Option<Candidate>> =
                std::mem::take(&mut plan.candidates).into_iter().map(Some).collect();
            plan.candidates =
                order.iter().filter_map(|&i| slots.get_mut(i).and_then(Option::take)).collect();
        }
    }

    /// Order the plan's candidates by the route's adaptive policy, leaving out
    /// those it excludes; the decision goes in the record.
    fn order_adaptive(
        &self,
        plan: &mut Plan,
        policy: &crate::adaptive::AdaptivePolicy,
        inbound: &Inbound,
        runtime: &Runtime,
        rec: &mut RequestRecord,
    ) -> Result<(), GatewayError> {
        // The class decided as the request entered or by its `auto` model; else
        // classified here, only where a quality profile depends on it.
        let intent =
            rec.routing.intent.as_deref().and_then(crate::intent::Intent::parse).or_else(|| {
                policy.reads_intent().then(|| crate::intent::classify(&inbound.request).intent)
            });
        let now = UnixMs::now();
        let input_estimate = inbound.input_estimate();
        let seen: Vec<crate::adaptive::Seen<'_>> = plan
            .candidates
            .iter()
            .map(|c| {
                let identity = c.identity();
                crate::adaptive::Seen {
                    deployment: c.label(),
                    model: c.model.as_ref().map(|m| m.id.as_str()),
                    summary: runtime.destinations.summary(&identity, now),
                    in_flight: runtime.in_flight.count(&identity),
                    cost_usd: filter::estimated_price(c, input_estimate, &inbound.request),
                }
            })
            .collect();
        let decision = policy.order(&seen, intent, policy.tick());
        drop(seen);
        if decision.order.is_empty() {
            let why: Vec<String> = decision
                .record
                .candidates
                .iter()
                .map(|c| format!("{} ({})", c.deployment, c.excluded.as_deref().unwrap_or("-")))
                .collect();
            rec.routing.adaptive = Some(decision.record);
            return Err(GatewayError::new(
                ErrorCode::NoCandidate,
                format!(
                    "the route's adaptive policy {} excluded every candidate: {}",
                    policy.version,
                    why.join(", ")
                ),
            ));
        }
        if let Some(explored) = &decision.record.explored {
            plan.descriptor.push(format!("explore:{explored}"));
        }
        let mut slots: Vec<Option<Candidate>> =
            std::mem::take(&mut plan.candidates).into_iter().map(Some).collect();
        plan.candidates = decision
            .order
            .iter()
            .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
            .collect();
        rec.routing.adaptive = Some(decision.record);
        Ok(())
    }

    /// May `who` use `model` through `route`: the key's `allowed_models`, then
    /// the configured rules and `stored` ones (no copies: both are iterated).
    fn decide(
        &self,
        stored: &[access::Rule],
        who: &Principal,
        model: &str,
        route: Option<&str>,
    ) -> Result<(), access::Denial> {
        access::decide(self.catalog.rules.iter().chain(stored), who, model, route)
    }

    /// Whether `who` may call the catalog model `m`: the check a request for it
    /// passes first (`authorize`: its id and the route serving it,
    /// on the configured and stored rules). Model listings show only these, so
    /// a listed model is never one the caller is refused.
    pub fn may_call(
        &self,
        runtime: &Runtime,
        who: &Principal,
        m: &crate::catalog::ModelEntry,
    ) -> bool {
        let route = self.catalog.route_of(m).map(|r| r.id.as_str());
        self.decide(&runtime.rules.load(), who, &m.id, route).is_ok()
    }

    /// Which rule decides whether `who` may call the catalog model `m` (its id
    /// and the route serving it, on the configured and `stored` rules): what
    /// `authorize` applies, for an operator asking "would this be allowed?".
    pub fn access_decider<'a>(
        &'a self,
        stored: &'a [access::Rule],
        who: &Principal,
        m: &crate::catalog::ModelEntry,
    ) -> access::Decider<'a> {
        let route = self.catalog.route_of(m).map(|r| r.id.as_str());
        access::decider(self.catalog.rules.iter().chain(stored), who, &m.id, route)
    }

    /// Access rules: refuse the request (403) when the caller may not use the model
    /// or route; drop fallback deployments serving a model the caller may not use,
    /// so an allowed primary never fails over to a denied fallback.
    pub(super) fn authorize(
        &self,
        plan: &mut Plan,
        inbound: &Inbound,
        runtime: &Runtime,
    ) -> Result<(), GatewayError> {
        let stored = runtime.rules.load();
        let who = &inbound.principal;
        if let Err(denial) = self.decide(&stored, who, &plan.public_model, plan.route_id.as_deref())
        {
            return Err(GatewayError::new(ErrorCode::AuthzDenied, denial.to_string()));
        }
        let public = plan.public_model.clone();
        let route = plan.route_id.clone();
        let mut skipped = Vec::new();
        plan.candidates.retain(|c| match c.model.as_ref().map(|m| m.id.as_str()) {
            Some(id) if id != public => {
                let ok = self.decide(&stored, who, id, route.as_deref()).is_ok();
                if !ok {
                    skipped.push(format!("authz_skip:{id}"));
                }
                ok
            }
            _ => true,
        });
        plan.descriptor.extend(skipped);
        Ok(())
    }
}
