//! Pure decisions of the attempt loop: how a failure ranks, what it tells the
//! client and the breaker, whether to retry or fail over; the descriptor.

use super::*;

/// Rank failures so the client gets the most informative one.
pub(super) fn rank(f: &Failure) -> u8 {
    match f {
        Failure::Status { status, .. } if *status != 429 && *status < 500 => 6,
        Failure::Status { .. } => 5,
        Failure::UpstreamError { .. } => 4,
        Failure::Transport { .. } | Failure::BrokenStream(_) | Failure::Malformed(_) => 3,
        Failure::Unavailable(_) | Failure::CircuitOpen(_) => 2,
        Failure::Unsupported(_) => 1,
    }
}

/// The route-match descriptor: the plan's segments, then `failover:a->b` when more
/// than one provider was tried.
pub(super) fn descriptor(plan: &Plan, tried: &[String]) -> String {
    let mut out = plan.descriptor.join(" ");
    if tried.len() > 1 {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str("failover:");
        out.push_str(&tried.join("->"));
    }
    out
}

/// The client-facing error for a failure.
pub fn failure_error(f: &Failure, provider: &str) -> GatewayError {
    match f {
        Failure::Status { status, message, .. } => {
            let msg = format!("{provider}: {message}");
            match status {
                400 | 413 | 422 => GatewayError::new(
                    *status,
                    ErrorKind::from_status(*status),
                    "upstream_invalid_request",
                    msg,
                ),
                429 => GatewayError::new(429, ErrorKind::RateLimit, "upstream_rate_limited", msg),
                401 | 403 => {
                    GatewayError::new(502, ErrorKind::Upstream, "upstream_auth_failed", msg)
                }
                503 | 529 => {
                    GatewayError::new(503, ErrorKind::Overloaded, "upstream_overloaded", msg)
                }
                408 | 504 => GatewayError::new(504, ErrorKind::Timeout, "upstream_timeout", msg),
                _ => GatewayError::new(502, ErrorKind::Upstream, "upstream_error", msg),
            }
        }
        Failure::Transport { class: "timeout", message } => GatewayError::new(
            504,
            ErrorKind::Timeout,
            "upstream_timeout",
            format!("{provider}: {message}"),
        ),
        Failure::Transport { message, .. } => GatewayError::new(
            502,
            ErrorKind::Upstream,
            "upstream_unreachable",
            format!("{provider}: {message}"),
        ),
        Failure::BrokenStream(m) | Failure::Malformed(m) => GatewayError::new(
            502,
            ErrorKind::Upstream,
            "upstream_malformed",
            format!("{provider}: {m}"),
        ),
        Failure::UpstreamError { kind, message } => {
            let overloaded = kind.contains("overloaded");
            let (status, ek, code) = if overloaded {
                (503, ErrorKind::Overloaded, "upstream_overloaded")
            } else {
                (502, ErrorKind::Upstream, "upstream_error")
            };
            GatewayError::new(status, ek, code, format!("{provider}: {message}"))
        }
        Failure::CircuitOpen(m) => {
            GatewayError::new(503, ErrorKind::Overloaded, "circuit_open", m.clone())
        }
        Failure::Unavailable(m) => {
            GatewayError::new(503, ErrorKind::Overloaded, "provider_unavailable", m.clone())
        }
        Failure::Unsupported(m) => GatewayError::invalid("unsupported_request", m.clone()),
    }
}

/// What the next step is after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Next {
    Retry(Duration),
    Failover,
    Terminal,
}

/// Classify a failure under the route's policy. `retries` is how many retries this
/// deployment has had; `remaining` the request's time left.
pub(super) fn next_step(
    f: &Failure,
    policy: &AttemptPolicy,
    retries: u32,
    remaining: Duration,
) -> Next {
    match f {
        Failure::Status { status, retry_after, .. } => {
            if policy.is_retryable(*status) && retries < policy.max_retries {
                let backoff = policy.backoff.saturating_mul(1u32 << retries.min(16));
                let wait = retry_after.unwrap_or_default().max(backoff);
                if wait <= policy.max_wait && wait < remaining {
                    return Next::Retry(wait);
                }
            }
            if policy.fails_over(*status) { Next::Failover } else { Next::Terminal }
        }
        Failure::Transport { .. } => {
            if policy.failover_transport {
                Next::Failover
            } else {
                Next::Terminal
            }
        }
        Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. }
        | Failure::Unavailable(_)
        | Failure::Unsupported(_)
        | Failure::CircuitOpen(_) => Next::Failover,
    }
}

/// What a failure tells the breaker of the credential used.
pub(super) fn health_outcome(f: &Failure) -> Option<Outcome> {
    match f {
        Failure::Status { status: 429, retry_after, .. } => {
            Some(Outcome::Throttled { retry_after: *retry_after })
        }
        Failure::Status { status: 401 | 403, .. } => Some(Outcome::AuthFailure),
        Failure::Status { status, retry_after, .. }
            if *status >= 500 || *status == 404 || *status == 408 =>
        {
            Some(Outcome::Failure { retry_after: *retry_after })
        }
        Failure::Status { .. } => Some(Outcome::Success),
        Failure::Transport { .. }
        | Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. } => Some(Outcome::Failure { retry_after: None }),
        Failure::Unavailable(_) | Failure::Unsupported(_) | Failure::CircuitOpen(_) => None,
    }
}

pub(super) fn health_outcome_of<T>(r: &Result<T, Failure>) -> Option<Outcome> {
    match r {
        Ok(_) => Some(Outcome::Success),
        Err(f) => health_outcome(f),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
