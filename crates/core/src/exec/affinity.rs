//! Prompt-cache affinity, after the plan: a conversation's later turns go back
//! to the deployment that served its earlier ones, whose prompt cache holds
//! their prefix, while that deployment is still a candidate (healthy, allowed)
//! and not too slow against the best one.
//!
//! A conversation is named by its affinity key: the caller's
//! `x-switchyard-affinity` header, else a hash of what stays the same across
//! its turns (the system prompt and the first message's text), each within the
//! caller's scope (its key, else its user), so that one tenant never steers, or
//! learns, another's. The pin (provider and upstream model) lives in the
//! runtime's affinity store, in process or on Redis, renewed by every turn for
//! the configured TTL. Routing is unchanged for requests without affinity, for
//! a first turn, and for a pin whose deployment is no longer a candidate.

use sha2::{Digest, Sha256};
use switchyard_protocol::Part;

use super::*;
use crate::catalog::AffinitySpec;

/// A request's affinity key and how long its pin lasts.
pub(super) struct Pin {
    key: String,
    ttl_ms: u64,
}

/// The affinity key of `inbound`'s conversation on `model`.
fn key(inbound: &Inbound, model: &str) -> String {
    let p = &inbound.principal;
    let scope = p.key_id.as_deref().or(p.key_prefix.as_deref()).or(p.user_id.as_deref());
    let mut h = Sha256::new();
    h.update(scope.unwrap_or("anonymous").as_bytes());
    h.update([0]);
    h.update(model.as_bytes());
    h.update([0]);
    match &inbound.affinity {
        Some(named) => {
            h.update(b"header\0");
            h.update(named.as_bytes());
        }
        None => {
            // Text only: cache markers move between turns, the text stays.
            for block in &inbound.request.system {
                h.update(block.text.as_bytes());
                h.update([0]);
            }
            if let Some(first) = inbound.request.messages.first() {
                h.update([first.role as u8]);
                for part in &first.content {
                    if let Part::Text(t) = part {
                        h.update(t.text.as_bytes());
                        h.update([0]);
                    }
                }
            }
        }
    }
    let digest = h.finalize();
    let mut out = String::with_capacity(4 + 2 * digest.len());
    out.push_str("aff:");
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The value a pin holds: the deployment, as its provider and upstream model.
fn pinned_as(provider: &str, upstream_model: &str) -> String {
    format!("{provider}|{upstream_model}")
}

/// Put the conversation's pinned deployment first, where it is a candidate and
/// within the score loss; the pin to renew once the request is answered.
pub(super) async fn steer(inbound: &Inbound, plan: &mut Plan, runtime: &Runtime) -> Option<Pin> {
    let spec = plan.affinity?;
    let key = key(inbound, &plan.public_model);
    if plan.candidates.len() > 1
        && let Some((_, value)) = runtime.affinity.get(std::slice::from_ref(&key)).await
        && let Ok(pinned) = std::str::from_utf8(&value)
        && let Some(at) = plan
            .candidates
            .iter()
            .position(|c| pinned_as(&c.provider.name, &c.upstream_model) == pinned)
    {
        let keep = at == 0
            || plan
                .candidates
                .first()
                .zip(plan.candidates.get(at))
                .is_some_and(|(best, p)| within(runtime, &spec, best, p));
        if keep {
            let c = plan.candidates.remove(at);
            plan.descriptor.push(format!("affinity:{}", c.label()));
            plan.candidates.insert(0, c);
        }
    }
    Some(Pin { key, ttl_ms: spec.ttl_ms })
}

/// Whether `pinned` is no slower than `max_score_loss` past `best`, by their
/// latency estimates (unknown: it is).
fn within(runtime: &Runtime, spec: &AffinitySpec, best: &Candidate, pinned: &Candidate) -> bool {
    let estimate = |c: &Candidate| runtime.latency.estimate(&c.identity());
    match (estimate(best), estimate(pinned)) {
        (Some(b), Some(p)) if b > 0.0 => p <= b * (1.0 + spec.max_score_loss),
        _ => true,
    }
}

/// Pin the conversation to the deployment that served it, before the answer
/// goes back: a client's next turn, sent the moment it has this one, finds the
/// pin (written off the path, it could come second, and the turn go elsewhere).
pub(super) async fn remember(pin: Pin, served: &Served, runtime: &Runtime) {
    if served.provider.is_empty() {
        return;
    }
    let value: Arc<[u8]> = pinned_as(&served.provider, &served.upstream_model).into_bytes().into();
    runtime.affinity.put(pin.key, value, pin.ttl_ms).await;
}
