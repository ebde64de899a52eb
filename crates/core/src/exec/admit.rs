//! Admit: reserve what the request will use against limits and budgets.

use super::*;

/// The admission stage: reserve what the request is expected to use against the
/// caller's limits and budgets, or refuse it before anything is sent.
pub(super) async fn admit(
    admission: &dyn Admission,
    inbound: &Inbound,
    plan: &Plan,
) -> Result<Reservation, GatewayError> {
    let req = &inbound.request;
    let input = inbound.input_estimate();
    let tokens = input.saturating_add(req.max_tokens.unwrap_or(0));
    let cost_usd = plan.candidates.first().and_then(|c| filter::estimated_price(c, input, req));
    let ask = Ask {
        key_id: inbound.principal.key_id.as_deref(),
        user: inbound.principal.user_id.as_deref(),
        project: inbound.project.as_deref(),
        model: &plan.public_model,
        tokens,
        cost_usd,
    };
    admission.reserve(&ask).await.map_err(|refusal| {
        let mut message = refusal.message;
        if let Some(ms) = refusal.retry_after_ms {
            message.push_str(&format!(" (retry after {} s)", ms.div_ceil(1000)));
        }
        // A refusal is a 429 whatever code the admission gives it: the client
        // should back off, not fix its request.
        GatewayError::new(refusal.code, message).with_status(429).with_kind(ErrorKind::RateLimit)
    })
}
