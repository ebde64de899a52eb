//! Admit: reserve what the request will use against the caller's limits and
//! budgets (its key, user and project), or refuse it before anything is sent.
//! A deployment's own capacity is taken per attempt (`attempt.rs`, `occupy`).

use super::*;
use crate::catalog::ModelEntry;
use crate::clock::UnixMs;
use crate::limits::{BudgetScope, Budgeted, Scoped};

/// The admission stage: reserve what the request is expected to use against the
/// caller's limits and budgets, or refuse it before anything is sent.
pub(super) async fn admit(
    admission: &dyn Admission,
    snapshot: &Snapshot,
    inbound: &Inbound,
    plan: &Plan,
) -> Result<Reservation, GatewayError> {
    let req = &inbound.request;
    let input = inbound.input_estimate();
    let model = plan.candidates.first().and_then(|c| c.model.as_deref());
    let tokens = expected_tokens(inbound, model);
    let cost_usd = plan.candidates.first().and_then(|c| filter::estimated_price(c, input, req));
    let limits = caller_limits(snapshot, inbound);
    let budgets = caller_budgets(snapshot, inbound, plan);
    let ask = Ask {
        key_id: inbound.principal.key_id.as_deref(),
        user: inbound.principal.user_id.as_deref(),
        project: inbound.project.as_deref(),
        model: &plan.public_model,
        tokens,
        cost_usd,
        limits: &limits,
        budgets: &budgets,
    };
    admission.reserve(&ask).await.map_err(refused)
}

/// Where a budget of the caller's asks for it (`lower_max_tokens`), lower the
/// request's `max_tokens` to the output the rest of that budget can pay for, at
/// the first candidate's price: the scope that lowered it and the new ceiling.
/// `None`: nothing to lower (the output fits, a budget that is not counted yet
/// or a model without prices says nothing, or nothing at all fits, which the
/// admission refuses). The request is then sent from its canonical form: the
/// client's own body names the ceiling it asked for.
pub(super) async fn lower_to_budget(
    admission: &dyn Admission,
    snapshot: &Snapshot,
    inbound: &mut Inbound,
    plan: &Plan,
) -> Option<(String, u64)> {
    if !snapshot.catalog.budgets.iter().any(|b| b.lower_max_tokens) {
        return None;
    }
    let cand = plan.candidates.first()?;
    let (price, _) = cand.pricing.as_ref()?.for_prompt(inbound.input_estimate());
    let price = &price;
    let (input_price, output_price) = (price.input?, price.output?);
    let per_token = output_price * cand.provider.markup / 1_000_000.0;
    if per_token <= 0.0 {
        return None;
    }
    let input_usd =
        inbound.input_estimate() as f64 * input_price * cand.provider.markup / 1_000_000.0;
    let asked = output_ceiling(inbound, cand.model.as_deref());
    let mut lowest: Option<(String, u64)> = None;
    for b in caller_budgets(snapshot, inbound, plan) {
        if !b.spec.lower_max_tokens || b.spec.mode != crate::limits::BudgetMode::Enforce {
            continue;
        }
        // Not counted yet (its first request this period): nothing spent is known.
        let Ok(spent) = admission.read_budget(&b).await else { continue };
        let spent = spent.unwrap_or_default();
        let left = b.spec.limit_usd - spent.total() as f64 / crate::limits::budget::MICROS_PER_USD;
        let n = ((left - input_usd) / per_token).floor();
        let n = if n.is_finite() && n > 0.0 { n as u64 } else { 0 };
        if lowest.as_ref().is_none_or(|(_, m)| n < *m) {
            lowest = Some((b.scope.to_string(), n));
        }
    }
    let (scope, n) = lowest.filter(|(_, n)| *n > 0 && *n < asked)?;
    Arc::make_mut(&mut inbound.request).max_tokens = Some(n);
    inbound.raw = None;
    Some((scope, n))
}

/// The output a request may produce: `max_tokens` capped by the model's
/// maximum (the model's maximum where it asks for none, else 4096).
fn output_ceiling(inbound: &Inbound, model: Option<&ModelEntry>) -> u64 {
    match (inbound.request.max_tokens, model.and_then(|m| m.max_output_tokens)) {
        (Some(asked), Some(cap)) => asked.min(cap),
        (Some(n), None) | (None, Some(n)) => n,
        (None, None) => 4096,
    }
}

/// Admit a token count that may call an upstream: one request against the
/// caller's request rate and concurrency, no tokens, no budget. Given back
/// when the returned hold drops.
pub(super) async fn admit_count(
    admission: &Arc<dyn Admission>,
    snapshot: &Snapshot,
    inbound: &Inbound,
    plan: &Plan,
) -> Result<Taken, GatewayError> {
    let limits = caller_limits(snapshot, inbound);
    let ask = Ask {
        key_id: inbound.principal.key_id.as_deref(),
        user: inbound.principal.user_id.as_deref(),
        project: inbound.project.as_deref(),
        model: &plan.public_model,
        tokens: 0,
        cost_usd: None,
        limits: &limits,
        budgets: &[],
    };
    match admission.reserve(&ask).await {
        Ok(reservation) => {
            Ok(Taken { admission: Arc::clone(admission), reservation: Some(reservation) })
        }
        Err(refusal) => Err(refused(refusal)),
    }
}

/// The caller's error for a refusal, with its wait.
fn refused(refusal: crate::state::Refusal) -> GatewayError {
    let mut message = refusal.message;
    if let Some(ms) = refusal.retry_after_ms {
        message.push_str(&format!(" (retry after {} s)", ms.div_ceil(1000)));
    }
    let err = GatewayError::new(refusal.code, message);
    match refusal.retry_after_ms {
        Some(ms) => err.with_retry_after(Duration::from_millis(ms)),
        None => err,
    }
}

/// The tokens a request is expected to use: its input (estimated) plus the
/// output it may produce, `max_tokens` capped by the model's maximum (the
/// model's maximum where it asks for none).
pub(super) fn expected_tokens(inbound: &Inbound, model: Option<&ModelEntry>) -> u64 {
    let cap = model.and_then(|m| m.max_output_tokens);
    let output = match (inbound.request.max_tokens, cap) {
        (Some(asked), Some(cap)) => asked.min(cap),
        (Some(n), None) | (None, Some(n)) => n,
        (None, None) => 0,
    };
    inbound.input_estimate().saturating_add(output)
}

/// The limits on the caller: its key's own, its user's and its project's (by id
/// or name, from `limits:`), each a scope of its own.
pub(super) fn caller_limits(snapshot: &Snapshot, inbound: &Inbound) -> Vec<Scoped> {
    let p = &inbound.principal;
    let cfg = &snapshot.catalog.limits;
    let mut out = Vec::new();
    if let (Some(id), Some(limits)) = (&p.key_id, p.limits)
        && !limits.is_empty()
    {
        out.push(Scoped::new(format!("key:{id}"), limits));
    }
    if !cfg.users.is_empty() {
        let by_id = p.user_id.as_ref().and_then(|u| cfg.users.get(u).map(|l| (u, l)));
        let by_email = || p.email.as_ref().and_then(|e| cfg.users.get(e).map(|l| (e, l)));
        if let Some((name, limits)) = by_id.or_else(by_email) {
            let id = p.user_id.as_ref().unwrap_or(name);
            out.push(Scoped::new(format!("user:{id}"), *limits));
        }
    }
    if !cfg.projects.is_empty()
        && let Some(project) = &inbound.project
    {
        let named = || inbound.project_name.as_ref().and_then(|n| cfg.projects.get(n));
        if let Some(limits) = cfg.projects.get(project).or_else(named) {
            out.push(Scoped::new(format!("project:{project}"), *limits));
        }
    }
    out
}

/// The budgets that apply to the request (the gateway's, and its key's, user's
/// and project's), each with what it reserves: the prompt plus the output it
/// may produce at the first candidate's price (its provider's markup
/// included), capped by the budget's `max_reservation_usd`, which is also what
/// a request without a known price reserves.
pub(super) fn caller_budgets(snapshot: &Snapshot, inbound: &Inbound, plan: &Plan) -> Vec<Budgeted> {
    let specs = &snapshot.catalog.budgets;
    if specs.is_empty() {
        return Vec::new();
    }
    let p = &inbound.principal;
    let estimate = plan.candidates.first().and_then(|c| {
        let (price, _) = c.pricing.as_ref()?.for_prompt(inbound.input_estimate());
        let price = &price;
        let output = output_ceiling(inbound, c.model.as_deref());
        // No output (embeddings) needs no output price.
        let output_rate = if output == 0 { price.output.unwrap_or(0.0) } else { price.output? };
        let usd = (inbound.input_estimate() as f64 * price.input? + output as f64 * output_rate)
            / 1_000_000.0;
        Some(usd * c.provider.markup)
    });
    let now = UnixMs::now();
    let mut out = Vec::new();
    for spec in specs {
        // Whether the budget is the caller's, and how the ledger (the records)
        // names its scope: a key by its prefix, a user and a project by id,
        // whichever name the configuration used. The counter keeps the
        // configured name, so that operators read it as they wrote it.
        let names = match &spec.scope {
            BudgetScope::Gateway => Some(Vec::new()),
            BudgetScope::Key(id) => (p.key_id.as_deref() == Some(id.as_str()))
                .then(|| p.key_prefix.iter().cloned().collect()),
            BudgetScope::User(name) => p
                .user_id
                .as_ref()
                .filter(|u| *u == name || p.email.as_deref() == Some(name.as_str()))
                .map(|u| vec![u.clone()]),
            BudgetScope::Project(name) => inbound
                .project
                .as_ref()
                .filter(|id| *id == name || inbound.project_name.as_deref() == Some(name.as_str()))
                .map(|id| vec![id.clone()]),
        };
        let Some(names) = names else { continue };
        let cap = spec.max_reservation_usd;
        out.push(Budgeted {
            scope: spec.scope.clone(),
            names,
            spec: spec.clone(),
            window: spec.period.window(now),
            reserve_usd: estimate.map_or(cap, |e| e.min(cap)),
        });
    }
    out
}
