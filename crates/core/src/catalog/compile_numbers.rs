//! Numbers that cannot mean what they say: a negative or non-finite price, a
//! zero limit, a timeout of zero. Each would be accepted by serde and then
//! misbehave quietly (a negative price credits a budget; a zero timeout fails
//! every request), so each is a problem naming its field, in files and in the
//! builder alike (the builder compiles through here).

use super::Problem;
use crate::config::raw::{self, RawConfig};
use crate::limits::{BudgetScope, BudgetSpec, Period, PeriodName};

/// Every number of the file that has a range, checked; problems appended.
pub(super) fn check_numbers(raw: &RawConfig, problems: &mut Vec<Problem>) {
    for m in &raw.models {
        let at = |message: String| Problem::at(&m.id, message);
        let name = &m.id.value;
        if let Some(p) = &m.pricing {
            for message in bad_prices(p, &format!("models[{name}].pricing")) {
                problems.push(at(message));
            }
        }
        for (field, value) in
            [("context_window", m.context_window), ("max_output_tokens", m.max_output_tokens)]
        {
            if value == Some(0) {
                problems.push(at(format!("models[{name}].{field}: must be greater than 0")));
            }
        }
        if let Some(c) = &m.cache
            && c.ttl_ms.value == 0
        {
            problems.push(Problem::at(
                &c.ttl_ms,
                format!("models[{name}].cache.ttl_ms: must be greater than 0"),
            ));
        }
        if let Some(a) = &m.affinity {
            problems.extend(bad_affinity(a, &format!("models[{name}].affinity")));
        }
        for d in &m.deployments {
            if let Some(p) = &d.pricing {
                let field = format!("models[{name}].deployments[{}].pricing", d.provider.value);
                for message in bad_prices(p, &field) {
                    problems.push(Problem::at(&d.provider, message));
                }
            }
            if let Some(l) = &d.limits {
                let field = format!("models[{name}].deployments[{}].limits", d.provider.value);
                for message in l.problems(&field) {
                    problems.push(Problem::at(&d.provider, message));
                }
            }
        }
    }
    for r in &raw.routes {
        if let Some(c) = &r.cache
            && c.ttl_ms.value == 0
        {
            problems.push(Problem::at(
                &c.ttl_ms,
                format!("routes[{}].cache.ttl_ms: must be greater than 0", r.name),
            ));
        }
        if let Some(a) = &r.affinity {
            problems.extend(bad_affinity(a, &format!("routes[{}].affinity", r.name)));
        }
    }
    check_state(raw, problems);
    let g = &raw.gateway;
    let t = &g.timeouts;
    let c = &g.connections;
    let b = &g.breaker;
    let positive: [(&str, u64); 14] = [
        ("gateway.timeouts.connect_ms", t.connect_ms),
        ("gateway.timeouts.first_byte_ms", t.first_byte_ms),
        ("gateway.timeouts.idle_ms", t.idle_ms),
        ("gateway.timeouts.request_ms", t.request_ms),
        ("gateway.timeouts.keepalive_ms", t.keepalive_ms),
        ("gateway.connections.header_read_timeout_ms", c.header_read_timeout_ms),
        ("gateway.connections.idle_timeout_ms", c.idle_timeout_ms),
        (
            "gateway.connections.http2_max_concurrent_streams",
            u64::from(c.http2_max_concurrent_streams),
        ),
        ("gateway.breaker.half_life_ms", b.half_life_ms),
        ("gateway.breaker.cooldown_ms", b.cooldown_ms),
        ("gateway.breaker.max_cooldown_ms", b.max_cooldown_ms),
        ("storage.audit_queue", raw.storage.audit_queue as u64),
        ("storage.audit_batch", raw.storage.audit_batch as u64),
        ("storage.max_connections", raw.storage.max_connections.map_or(1, u64::from)),
    ];
    let sizes: [(&str, usize); 4] = [
        ("gateway.max_body_bytes", g.max_body_bytes),
        ("gateway.max_json_depth", g.max_json_depth),
        ("gateway.max_json_elements", g.max_json_elements),
        ("gateway.max_response_bytes", g.max_response_bytes),
    ];
    let zeros = positive
        .into_iter()
        .filter(|(_, v)| *v == 0)
        .map(|(f, _)| f)
        .chain(sizes.into_iter().filter(|(_, v)| *v == 0).map(|(f, _)| f));
    for field in zeros {
        problems.push(Problem { line: None, message: format!("{field}: must be greater than 0") });
    }
    if !b.threshold.is_finite() || b.threshold <= 0.0 {
        problems.push(Problem {
            line: None,
            message: "gateway.breaker.threshold: must be a number greater than 0".into(),
        });
    }
}

/// What is wrong with each price of `p` (`field` names the block).
fn bad_prices(p: &raw::Pricing, field: &str) -> Vec<String> {
    [
        ("input", p.input),
        ("output", p.output),
        ("cache_read", p.cache_read),
        ("cache_write", p.cache_write),
    ]
    .into_iter()
    .filter_map(|(name, price)| {
        price.filter(|v| !v.is_finite() || *v < 0.0).map(|v| {
            format!(
                "{field}.{name}: {v} is not a price (a finite number >= 0, USD per million tokens)"
            )
        })
    })
    .collect()
}

/// `state:` and `limits:`: no zero limit, instance count or TTL, and a Redis URL
/// where Redis is the backend.
fn check_state(raw: &RawConfig, problems: &mut Vec<Problem>) {
    check_budgets(raw, problems);
    let mut say = |message: String| problems.push(Problem::at(&raw.state, message));
    let st = &raw.state.value;
    if st.expected_instances == 0 {
        say("state.expected_instances: must be greater than 0".into());
    }
    if st.lease_ttl_ms == 0 {
        say("state.lease_ttl_ms: must be greater than 0".into());
    }
    let c = &st.cache;
    for (field, value) in [
        ("state.cache.max_entries", c.max_entries),
        ("state.cache.max_bytes", c.max_bytes),
        ("state.cache.max_entry_bytes", c.max_entry_bytes),
    ] {
        if value == 0 {
            say(format!("{field}: must be greater than 0"));
        }
    }
    if c.max_entry_bytes > c.max_bytes && c.max_bytes > 0 {
        say("state.cache.max_entry_bytes: larger than state.cache.max_bytes".into());
    }
    match (&st.backend, &st.redis) {
        (raw::StateBackend::Redis, None) => {
            say("state.redis.url: required by `backend: redis`".into());
        }
        (_, Some(r)) => {
            if r.timeout_ms == 0 {
                say("state.redis.timeout_ms: must be greater than 0".into());
            }
            if r.url.starts_with("rediss://") {
                say("state.redis.url: TLS to Redis (rediss://) is not supported yet: reach \
                     Redis over a private network or a TLS tunnel, with redis://"
                    .into());
            } else if !r.url.starts_with("redis://") {
                say("state.redis.url: must start with redis://".into());
            }
        }
        (raw::StateBackend::Local, None) => {}
    }
    let mut say = |message: String| problems.push(Problem::at(&raw.limits, message));
    let limits = &raw.limits.value;
    let q = limits.queue;
    if q.max_wait_ms > 0 && q.max_waiting == 0 {
        say("limits.queue.max_waiting: must be greater than 0 when max_wait_ms is set".into());
    }
    for (kind, map) in [("projects", &limits.projects), ("users", &limits.users)] {
        for (name, l) in map {
            for message in l.problems(&format!("limits.{kind}[{name}]")) {
                say(message);
            }
        }
    }
}

/// `budgets:`: a scope that names one, a positive limit and reservation cap.
fn check_budgets(raw: &RawConfig, problems: &mut Vec<Problem>) {
    for (i, b) in raw.budgets.iter().enumerate() {
        let at = |message: String| Problem::at(&b.scope, message);
        if BudgetScope::parse(&b.scope.value).is_none() {
            problems.push(at(format!(
                "budgets[{i}].scope: {:?} is not gateway, key:<id>, user:<id> or project:<id>",
                b.scope.value
            )));
        }
        for (field, v) in
            [("limit_usd", b.limit_usd), ("max_reservation_usd", b.max_reservation_usd)]
        {
            if !v.is_finite() || v <= 0.0 {
                problems.push(at(format!("budgets[{i}].{field}: must be a number greater than 0")));
            }
        }
        if b.lower_max_tokens && b.mode == crate::limits::BudgetMode::Warn {
            problems.push(at(format!(
                "budgets[{i}].lower_max_tokens: only in `mode: enforce` (warn never refuses)"
            )));
        }
        match (b.period, &b.window_hours) {
            (PeriodName::Rolling, None) => problems.push(at(format!(
                "budgets[{i}].window_hours: required by `period: rolling` (the window's length)"
            ))),
            (PeriodName::Rolling, Some(h)) if h.value == 0 || h.value > MAX_WINDOW_HOURS => {
                problems.push(Problem::at(
                    h,
                    format!("budgets[{i}].window_hours: must be 1 to {MAX_WINDOW_HOURS} (a year)"),
                ));
            }
            (PeriodName::Rolling, Some(_)) if raw.storage.url.trim() == "none" => {
                problems.push(at(format!(
                    "budgets[{i}].period: a rolling window is rebuilt from the request records \
                     at each step, and `storage.url: none` keeps none"
                )));
            }
            (PeriodName::Rolling, Some(_)) => {}
            (_, Some(h)) => problems.push(Problem::at(
                h,
                format!("budgets[{i}].window_hours: only with `period: rolling`"),
            )),
            (_, None) => {}
        }
    }
}

/// The longest rolling window: a leap year, in hours.
const MAX_WINDOW_HOURS: u64 = 8784;

/// The budgets of a checked file, compiled.
pub(super) fn budgets(raw: &RawConfig) -> Vec<BudgetSpec> {
    raw.budgets
        .iter()
        .filter_map(|b| {
            Some(BudgetSpec {
                scope: BudgetScope::parse(&b.scope.value)?,
                limit_usd: b.limit_usd,
                period: match b.period {
                    PeriodName::Day => Period::Day,
                    PeriodName::Week => Period::Week,
                    PeriodName::Month => Period::Month,
                    PeriodName::Rolling => Period::Rolling {
                        hours: u32::try_from(b.window_hours.as_ref()?.value).ok()?,
                    },
                },
                mode: b.mode,
                max_reservation_usd: b.max_reservation_usd,
                lower_max_tokens: b.lower_max_tokens,
            })
        })
        .collect()
}

/// An `affinity:` block's problems, each at its TTL's line.
fn bad_affinity(a: &raw::AffinityConfig, field: &str) -> Vec<Problem> {
    let mut out = Vec::new();
    if a.ttl_ms.value == 0 {
        out.push(Problem::at(&a.ttl_ms, format!("{field}.ttl_ms: must be greater than 0")));
    }
    if !a.max_score_loss.is_finite() || a.max_score_loss < 0.0 {
        out.push(Problem::at(
            &a.ttl_ms,
            format!("{field}.max_score_loss: must be a number of at least 0"),
        ));
    }
    out
}
