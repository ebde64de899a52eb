//! The request record: one per request, saying who asked for what, which provider
//! answered and why, and what it cost. Built by the pipeline, written by a
//! [`RecordSink`] off the request path (the store crate provides sinks).

use std::sync::Arc;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use switchyard_protocol::Usage;

use crate::catalog::Pricing;

/// How one attempt ended.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AttemptRecord {
    /// `provider/upstream-model`.
    pub deployment: String,
    /// Fingerprint of the credential used (never the key itself).
    pub credential: Option<String>,
    /// `ok`, `status_<code>`, `transport_<class>`, `broken_stream`, `malformed`,
    /// `unavailable`, `unsupported`.
    pub outcome: String,
    pub latency_ms: u64,
    /// `primary`, `retry` or `failover`.
    pub kind: Cow<'static, str>,
}

/// One row per request. Small on purpose: ids and numbers, no catalog copies, no
/// prompt or completion content.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RequestRecord {
    pub id: String,
    /// Unix milliseconds when the request arrived.
    pub time_ms: u64,
    pub user: Option<String>,
    pub key_prefix: Option<String>,
    pub project: Option<String>,
    pub client_format: Cow<'static, str>,
    pub requested_model: String,
    pub resolved_model: Option<String>,
    pub route_id: Option<String>,
    /// The route's primary provider.
    pub provider: Option<String>,
    /// The provider that actually answered.
    pub served_provider: Option<String>,
    pub upstream_model: Option<String>,
    /// Route-match descriptor, e.g. `route:claude-4203d1 failover:a->b`.
    pub descriptor: String,
    pub status: u16,
    pub error_code: Option<String>,
    pub attempts: Vec<AttemptRecord>,
    pub ttft_ms: Option<u64>,
    pub total_ms: u64,
    pub usage: Usage,
    /// USD; `None` when a price is unknown (never a made-up zero).
    pub cost_usd: Option<f64>,
    /// Some token counts were estimated from text because the provider sent none.
    pub estimated: bool,
    pub stream: bool,
}

/// Where finished records go. Implementations must not block: the request path
/// calls this inline.
pub trait RecordSink: Send + Sync + 'static {
    fn record(&self, record: RequestRecord);
}

/// Discards records (library use without accounting).
#[derive(Debug, Default)]
pub struct NullSink;

impl RecordSink for NullSink {
    fn record(&self, _record: RequestRecord) {}
}

pub type SharedSink = Arc<dyn RecordSink>;

/// Cost of `usage` at `pricing` (USD per million tokens). Unknown when a needed
/// price or count is missing. Cache reads and writes are priced at their own rates
/// (falling back to the input rate when the catalog gives none).
pub fn cost(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    let p = pricing?;
    let input_rate = p.input?;
    let output_rate = p.output?;
    let uncached = usage.uncached_input()? as f64;
    let output = usage.output_tokens? as f64;
    let read = usage.cache_read_tokens.unwrap_or(0) as f64;
    let write = usage.cache_write_tokens.unwrap_or(0) as f64;
    let total = uncached * input_rate
        + output * output_rate
        + read * p.cache_read.unwrap_or(input_rate)
        + write * p.cache_write.unwrap_or(input_rate);
    Some(total / 1_000_000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_prices_cache_apart_and_unknown_is_none() {
        let p = Pricing {
            input: Some(3.0),
            output: Some(15.0),
            cache_read: Some(0.3),
            cache_write: Some(3.75),
        };
        let u = Usage {
            input_tokens: Some(1_000_000 + 200_000 + 100_000),
            output_tokens: Some(100_000),
            cache_read_tokens: Some(200_000),
            cache_write_tokens: Some(100_000),
            reasoning_tokens: None,
        };
        let c = cost(&u, Some(&p)).unwrap();
        assert!((c - (3.0 + 1.5 + 0.06 + 0.375)).abs() < 1e-9, "{c}");
        assert_eq!(cost(&u, None), None);
        let no_output = Pricing { output: None, ..p };
        assert_eq!(cost(&u, Some(&no_output)), None);
        assert_eq!(cost(&Usage::default(), Some(&p)), None);
    }
}
