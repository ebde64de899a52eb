//! Pure decisions of the attempt loop: how a failure ranks, what it tells the
//! client and the breaker, whether to retry or fail over; the descriptor.

use super::*;

/// Rank failures so the client gets the most informative one.
pub(super) fn rank(f: &Failure) -> u8 {
    match f {
        Failure::Status { status, .. } if *status != 429 && *status < 500 => 6,
        // A model that answered, only not as the schema asks: what the client
        // most needs to hear after an upstream's own status.
        Failure::Status { .. } | Failure::InvalidOutput(_) => 5,
        Failure::UpstreamError { .. } => 4,
        Failure::Transport { .. }
        | Failure::Redirect { .. }
        | Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::Credential(_) => 3,
        Failure::Unavailable(_) | Failure::CircuitOpen(_) | Failure::Capacity { .. } => 2,
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
                // The upstream refused the request itself: passed on with its
                // status, so the client sees what it would have seen direct.
                400 | 413 | 422 => GatewayError::new(ErrorCode::UpstreamInvalidRequest, msg)
                    .with_status(*status)
                    .with_kind(ErrorKind::from_status(*status)),
                429 => GatewayError::new(ErrorCode::UpstreamRateLimited, msg),
                401 | 403 => GatewayError::new(ErrorCode::UpstreamAuthFailed, msg),
                503 | 529 => GatewayError::new(ErrorCode::UpstreamOverloaded, msg),
                408 | 504 => GatewayError::new(ErrorCode::UpstreamTimeout, msg),
                _ => GatewayError::new(ErrorCode::UpstreamError, msg),
            }
        }
        Failure::Transport { class: TransportClass::Timeout, message } => {
            GatewayError::new(ErrorCode::UpstreamTimeout, format!("{provider}: {message}"))
        }
        Failure::Transport { message, .. } => {
            GatewayError::new(ErrorCode::UpstreamUnreachable, format!("{provider}: {message}"))
        }
        Failure::BrokenStream(m) | Failure::Malformed(m) => {
            GatewayError::new(ErrorCode::UpstreamMalformed, format!("{provider}: {m}"))
        }
        Failure::Redirect { message, .. } => {
            GatewayError::new(ErrorCode::UpstreamError, format!("{provider}: {message}"))
        }
        // The upstream's own kind only picks the gateway's code; the client gets
        // the gateway's code and the upstream's message, as for a status.
        Failure::UpstreamError { kind, message } => {
            let code = if kind.contains("overloaded") {
                ErrorCode::UpstreamOverloaded
            } else {
                ErrorCode::UpstreamError
            };
            GatewayError::new(code, format!("{provider}: {message}"))
        }
        Failure::CircuitOpen(m) => GatewayError::new(ErrorCode::CircuitOpen, m.clone()),
        Failure::Capacity { code, message, retry_after_ms } => {
            let err = GatewayError::new(*code, message.clone());
            match retry_after_ms {
                Some(ms) => err.with_retry_after(Duration::from_millis(*ms)),
                None => err,
            }
        }
        Failure::Unavailable(m) | Failure::Credential(m) => {
            GatewayError::new(ErrorCode::ProviderUnavailable, m.clone())
        }
        Failure::Unsupported(m) => GatewayError::new(ErrorCode::UnsupportedRequest, m.clone()),
        Failure::InvalidOutput(m) => {
            GatewayError::new(ErrorCode::InvalidStructuredOutput, format!("{provider}: {m}"))
        }
    }
}

/// What the next step is after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Next {
    Retry(Duration),
    Failover,
    Terminal,
}

/// What a request whose every candidate failed is answered: the most telling
/// failure (by [`rank`], the earliest among equals), in its provider's name;
/// a spent deadline or attempt budget where nothing was tried to the end.
pub(super) fn last_error(failures: &[(usize, Failure)], plan: &Plan) -> GatewayError {
    let best =
        failures.iter().enumerate().max_by_key(|(order, (_, f))| (rank(f), usize::MAX - order));
    match best {
        Some((_, (i, f))) => {
            let provider =
                plan.candidates.get(*i).map(|c| c.provider.name.as_str()).unwrap_or("upstream");
            failure_error(f, provider)
        }
        None => GatewayError::new(
            ErrorCode::DeadlineExceeded,
            "request deadline or attempt budget exhausted",
        ),
    }
}

/// The route's policy with a request's own bounds in place of its retries and
/// attempts (within the hard maximums); borrowed when it sets neither.
pub(super) fn bounded<'a>(
    limits: &RequestRouting,
    policy: &'a AttemptPolicy,
) -> Cow<'a, AttemptPolicy> {
    if limits.max_retries.is_none() && limits.max_attempts.is_none() {
        return Cow::Borrowed(policy);
    }
    let mut p = policy.clone();
    if let Some(n) = limits.max_retries {
        p.max_retries = n.min(crate::catalog::MAX_RETRIES);
    }
    if let Some(n) = limits.max_attempts {
        p.max_attempts = n.clamp(1, crate::catalog::HARD_MAX_ATTEMPTS);
    }
    Cow::Owned(p)
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
        Failure::Redirect { .. }
        | Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. }
        | Failure::Unavailable(_)
        | Failure::Credential(_)
        | Failure::Unsupported(_)
        | Failure::CircuitOpen(_)
        | Failure::Capacity { .. }
        | Failure::InvalidOutput(_) => Next::Failover,
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
        // The upstream answered: a model's non-compliance is not the deployment's fault.
        Failure::Status { .. } | Failure::InvalidOutput(_) => Some(Outcome::Success),
        Failure::Transport { .. }
        | Failure::Redirect { .. }
        | Failure::BrokenStream(_)
        | Failure::Malformed(_)
        | Failure::UpstreamError { .. }
        | Failure::Credential(_) => Some(Outcome::Failure { retry_after: None }),
        Failure::Unavailable(_)
        | Failure::Unsupported(_)
        | Failure::CircuitOpen(_)
        | Failure::Capacity { .. } => None,
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
