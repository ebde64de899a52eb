//! The request record: one per request, saying who asked for what, which provider
//! answered and why, and what it cost. Built by the pipeline, written by a
//! [`RecordSink`] off the request path (the store crate provides sinks).

use std::sync::Arc;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use switchyard_protocol::Usage;

use crate::catalog::Pricing;

/// How one attempt ended.
///
/// Non-exhaustive: fields are added as the gateway records more, so code outside
/// this crate reads the fields but builds one with [`AttemptRecord::new`] (the
/// fields every attempt has) and sets the optional ones after:
///
/// ```
/// use switchyard_core::record::AttemptRecord;
///
/// let mut a = AttemptRecord::new("openai/gpt-5", "status_503", 420, "primary");
/// a.credential = Some("fp-1a2b3c4d".into());
/// assert_eq!((a.deployment.as_str(), a.latency_ms), ("openai/gpt-5", 420));
/// assert_eq!((a.usage, a.cost_usd), (None, None));
///
/// let b = AttemptRecord::new("bedrock/claude", "ok", 900, "failover").with_credential("fp-0");
/// assert_eq!(b.credential.as_deref(), Some("fp-0"));
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// `provider/upstream-model`.
    pub deployment: String,
    /// Fingerprint of the credential used (never the key itself).
    pub credential: Option<String>,
    /// `ok`, `status_<code>`, `transport_<class>`, `broken_stream`, `malformed`,
    /// `unavailable`, `unsupported`, `invalid_output` (prompted structured
    /// output: not JSON matching the request's schema).
    pub outcome: String,
    /// Milliseconds from its start until it answered or failed (for a stream,
    /// until its first content).
    pub latency_ms: u64,
    /// Milliseconds from the request's arrival until this attempt started
    /// (0 in records written before it was kept).
    #[serde(default)]
    pub started_ms: u64,
    /// `primary`, `retry` or `failover`.
    pub kind: Cow<'static, str>,
    /// Usage a failed attempt reported before failing (e.g. a stream that broke
    /// before its first content); it is costed and added to the request's cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// USD for that usage, markup included; `None` when unpriced or nothing was
    /// reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Why the answer stopped, as the GenAI conventions name it (`stop`,
    /// `length`, `tool_call`, `content_filter`, `error`); `None`: not
    /// answered, or not read (a whole answer forwarded with only its usage
    /// read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

/// One row per request. Small on purpose: ids and numbers, no catalog copies, no
/// prompt or completion content.
///
/// Non-exhaustive: fields are added as the gateway records more, so code outside
/// this crate reads the fields but builds one from [`RequestRecord::new`] (or
/// [`Default`]) and sets the fields it needs:
///
/// ```
/// use switchyard_core::record::{AttemptRecord, RequestRecord};
///
/// let mut r = RequestRecord::new("req-1", 1_700_000_000_000);
/// r.status = 200;
/// r.cost_usd = Some(0.25);
/// r.attempts.push(AttemptRecord::new("openai/gpt-5", "ok", 420, "primary"));
/// assert_eq!((r.id.as_str(), r.time_ms, r.status), ("req-1", 1_700_000_000_000, 200));
/// assert_eq!(r.user, None);
/// ```
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[non_exhaustive]
pub struct RequestRecord {
    /// The request id, as returned to the client.
    pub id: String,
    /// Unix milliseconds when the request arrived.
    pub time_ms: u64,
    /// The signed-in user's id, if any.
    pub user: Option<String>,
    /// The visible prefix of the API key used, if any.
    pub key_prefix: Option<String>,
    /// The project the request was attributed to (its id), if any.
    pub project: Option<String>,
    /// The client's format ([`ClientFormat::as_str`](switchyard_protocol::ClientFormat::as_str)).
    pub client_format: Cow<'static, str>,
    /// The model as the client named it (the default model where it named none).
    pub requested_model: String,
    /// The catalog id it resolved to; `None` when resolution failed.
    pub resolved_model: Option<String>,
    /// The route that matched, if any.
    pub route_id: Option<String>,
    /// The route's primary provider.
    pub provider: Option<String>,
    /// The provider that actually answered.
    pub served_provider: Option<String>,
    /// The answering deployment's id for the model.
    pub upstream_model: Option<String>,
    /// Route-match descriptor, e.g. `route:claude-4203d1 failover:a->b`.
    pub descriptor: String,
    /// The HTTP status answered (200 for a stream, even one that failed after its
    /// first content: see `error_code`).
    pub status: u16,
    /// The error's stable code ([`ErrorCode`](switchyard_protocol::ErrorCode)),
    /// when the request failed.
    pub error_code: Option<String>,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// Milliseconds from arrival until the answer was committed (a whole answer,
    /// or a stream's first content); `None` when nothing was answered.
    pub ttft_ms: Option<u64>,
    /// Milliseconds from arrival until the request was over.
    pub total_ms: u64,
    /// The answer's usage (estimated where the provider reported none: see
    /// `estimated`).
    pub usage: Usage,
    /// USD; `None` when a price is unknown (never a made-up zero).
    pub cost_usd: Option<f64>,
    /// Some token counts were estimated from text because the provider sent none.
    pub estimated: bool,
    /// The client asked for a stream.
    pub stream: bool,
    /// Prompt and completion text, only for projects that opted in
    /// (`log_content`), capped at the project's size limit. JSON:
    /// `{"request": "...", "response": "..."}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The client's own session id (Claude Code's, from `metadata.user_id`): groups
    /// a session's requests; never a user or tenant of the gateway's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// What the body sent to the answering (or last tried) deployment changed of
    /// the request's settings: `prompt_cache_key: dropped`, `service_tier: default
    /// -> standard_only`, `anthropic-beta: dropped <flag>`. Empty: nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_edits: Vec<String>,
    /// How the response cache took part: `hit` (answered from it: no upstream
    /// call, cost 0, the usage as kept), `coalesced` (answered by an identical
    /// request's upstream call: cost 0 here, the call's cost is on that
    /// request's record), `miss`; `None`: not cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cow<'static, str>>,
    /// What the request asked for beyond a generation: `embeddings`; `None`: a
    /// generation (chat, messages, responses, `generateContent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Cow<'static, str>>,
    /// How the gateway chose beyond the route's own order: an `auto` model's
    /// class, the adaptive policy's scores, the structured-output mode. Empty
    /// when none of them took part.
    #[serde(default, skip_serializing_if = "RoutingRecord::is_empty")]
    pub routing: RoutingRecord,
}

/// The decisions a request's routing made that its descriptor only names:
/// kept whole so an operator can audit each one (`/admin/requests`, the console).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[non_exhaustive]
pub struct RoutingRecord {
    /// An `auto` model's class (`reasoning`, `code`, `ordinary`, `cheap`, `vision`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Cow<'static, str>>,
    /// The classifier rule that decided it (`named` for `auto-<class>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent_rule: Option<Cow<'static, str>>,
    /// How a JSON-schema answer was asked for: `native` (the provider's own
    /// structured output) or `prompted` (the schema in the system prompt, the
    /// answer validated by the gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<Cow<'static, str>>,
    /// How `strategy: adaptive` ordered the candidates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveRecord>,
    /// What the model-based intent classifier answered (`intent.classifier`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classifier: Option<ClassifierRecord>,
}

/// The model-based intent classifier's part in a request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[non_exhaustive]
pub struct ClassifierRecord {
    /// The model asked.
    pub model: String,
    /// `reasoning` or `direct`; else why there is none: `timeout`, `error`,
    /// `unreadable` (the rules decided alone).
    pub answer: Cow<'static, str>,
    /// The class the rules gave before it.
    pub rules: Cow<'static, str>,
    /// Answered from the kept answers: no call made.
    #[serde(default)]
    pub cached: bool,
    /// Asked and recorded only: the rules routed.
    #[serde(default)]
    pub shadow: bool,
    /// Milliseconds the asking took (the wait for a kept answer included).
    pub latency_ms: u64,
    /// USD the call cost; `None`: none made, or unpriced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The call's own request record (`<request id>-intent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// An adaptive policy's decision: its version, each candidate's signals and
/// score in the order chosen, and those it excluded and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[non_exhaustive]
pub struct AdaptiveRecord {
    /// The policy's version.
    pub policy: String,
    /// The quality profiles' evaluation version, where they have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_version: Option<String>,
    /// The cold deployment this request explored (tried first whatever its score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explored: Option<String>,
    /// Every candidate: the ordered ones first, in their order, then the excluded.
    pub candidates: Vec<ScoredCandidate>,
}

/// One candidate as an adaptive policy saw it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[non_exhaustive]
pub struct ScoredCandidate {
    /// `provider/upstream-model`.
    pub deployment: String,
    /// Higher is better; `None`: excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// p95 latency read, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<f64>,
    /// Estimated USD for this request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Its quality profile's score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<f64>,
    /// Requests in flight on it.
    pub in_flight: u64,
    /// Its recent error rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// Its recent output tokens per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    /// The signals it lacked (`latency`, `cost`, `quality`, `errors`,
    /// `throughput`), each scored by the policy's missing-signal rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<Cow<'static, str>>,
    /// Why it was excluded (`cold_start`, `unknown_cost`, `missing_quality`,
    /// `quality_floor`); `None`: ordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded: Option<Cow<'static, str>>,
}

impl RoutingRecord {
    /// Nothing was decided beyond the route's order.
    pub fn is_empty(&self) -> bool {
        self == &RoutingRecord::default()
    }

    /// What the response's headers say of it (the class, its rule, the
    /// structured-output mode), without the adaptive and classifier details
    /// the record alone keeps: copied per answer, so kept small.
    pub fn headline(&self) -> RoutingRecord {
        RoutingRecord {
            intent: self.intent.clone(),
            intent_rule: self.intent_rule.clone(),
            structured_output: self.structured_output.clone(),
            ..RoutingRecord::default()
        }
    }
}

impl AttemptRecord {
    /// An attempt at `deployment` (`provider/upstream-model`) that ended in
    /// `outcome` after `latency_ms`, of `kind` (`primary`, `retry` or
    /// `failover`); no credential, usage or cost (set those after).
    pub fn new(
        deployment: impl Into<String>,
        outcome: impl Into<String>,
        latency_ms: u64,
        kind: impl Into<Cow<'static, str>>,
    ) -> Self {
        AttemptRecord {
            deployment: deployment.into(),
            credential: None,
            outcome: outcome.into(),
            latency_ms,
            started_ms: 0,
            kind: kind.into(),
            usage: None,
            cost_usd: None,
            finish_reason: None,
        }
    }

    /// With the fingerprint of the credential used.
    #[must_use]
    pub fn with_credential(mut self, fingerprint: impl Into<String>) -> Self {
        self.credential = Some(fingerprint.into());
        self
    }
}

impl RequestRecord {
    /// A record of request `id`, arrived at `time_ms` (Unix milliseconds); every
    /// other field empty (as [`Default`]), to be set after.
    pub fn new(id: impl Into<String>, time_ms: u64) -> Self {
        RequestRecord { id: id.into(), time_ms, ..RequestRecord::default() }
    }
}

/// The logged content of a request: the request's text (system and messages,
/// role-prefixed) and the response's text, together at most `cap` bytes (the
/// request gets at most half; each cut at a character boundary).
pub fn content_json(req: &switchyard_protocol::Request, response: &str, cap: usize) -> String {
    use std::fmt::Write;
    use switchyard_protocol::Part;
    let mut request = String::new();
    for s in &req.system {
        let _ = writeln!(request, "system: {}", s.text);
    }
    for m in &req.messages {
        let role = match m.role {
            switchyard_protocol::Role::System => "system",
            switchyard_protocol::Role::User => "user",
            switchyard_protocol::Role::Assistant => "assistant",
        };
        for p in &m.content {
            match p {
                Part::Text(t) => {
                    let _ = writeln!(request, "{role}: {}", t.text);
                }
                Part::ToolCall(c) => {
                    let _ = writeln!(request, "{role}: [tool call {}] {}", c.name, c.arguments);
                }
                Part::ToolResult(r) => {
                    let _ = writeln!(request, "{role}: [tool result] {}", r.text());
                }
                _ => {}
            }
        }
    }
    let request = truncate(&request, cap / 2);
    let response = truncate(response, cap.saturating_sub(request.len()));
    serde_json::json!({ "request": request, "response": response }).to_string()
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Where finished records go. Implementations must not block: the request path
/// calls this inline.
pub trait RecordSink: Send + Sync + 'static {
    /// Take one finished record: called once per request (token counts make none).
    fn record(&self, record: RequestRecord);
}

/// Discards records (library use without accounting).
#[derive(Debug, Default)]
pub struct NullSink;

impl RecordSink for NullSink {
    fn record(&self, _record: RequestRecord) {}
}

/// A sink shared by every request of a gateway.
pub type SharedSink = Arc<dyn RecordSink>;

/// Cost of `usage` at `pricing` (USD per million tokens), at its long-context
/// tier where the prompt is over the tier's threshold ([`Pricing::for_prompt`]).
/// Unknown when a needed price or count is missing. Cache reads and writes are
/// priced at their own rates (falling back to the input rate when the catalog
/// gives none).
pub fn cost(usage: &Usage, pricing: Option<&Pricing>) -> Option<f64> {
    let (p, _) = pricing?.for_prompt(usage.input_tokens.unwrap_or(0));
    let p = &p;
    let input_rate = p.input?;
    let output = usage.output_tokens? as f64;
    // No output (embeddings) needs no output price.
    let output_rate = if output == 0.0 { p.output.unwrap_or(0.0) } else { p.output? };
    let uncached = usage.uncached_input()? as f64;
    let read = usage.cache_read_tokens.unwrap_or(0) as f64;
    let write = usage.cache_write_tokens.unwrap_or(0) as f64;
    let total = uncached * input_rate
        + output * output_rate
        + read * p.cache_read.unwrap_or(input_rate)
        + write * p.cache_write.unwrap_or(input_rate);
    Some(total / 1_000_000.0)
}

/// Cost of `n` generated images of `size`: the catalog's price per image
/// (of that size, else of any) where it has one, else `usage` at its token
/// prices (GPT image models bill tokens), else unknown.
pub fn image_cost(
    n: usize,
    size: Option<&str>,
    usage: &Usage,
    pricing: Option<&Pricing>,
) -> Option<f64> {
    let p = pricing?;
    match p.image(size) {
        Some(each) => Some(each * n as f64),
        None => cost(usage, Some(p)),
    }
}

/// Cost of a finished media job that made `seconds` of media (`None`: its
/// length is not known): `per_job`, plus `per_second` for each second. A
/// model priced per second whose job's length is unknown costs unknown, as
/// does a model with neither price.
pub fn job_cost(seconds: Option<f64>, pricing: Option<&Pricing>) -> Option<f64> {
    let p = pricing?;
    match (p.per_job, p.per_second) {
        (None, None) => None,
        (job, None) => job,
        (job, Some(each)) => Some(job.unwrap_or(0.0) + each * seconds?),
    }
}

/// The price tier `usage` is billed at under `pricing`, where not the base
/// one: `long_context` (the prompt is over the tier's threshold).
pub fn price_tier(usage: &Usage, pricing: Option<&Pricing>) -> Option<&'static str> {
    let (_, long) = pricing?.for_prompt(usage.input_tokens.unwrap_or(0));
    long.then_some("long_context")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_billed_per_job_and_per_second() {
        let per_second = Pricing { per_second: Some(0.1), ..Pricing::default() };
        let both = Pricing { per_job: Some(0.5), per_second: Some(0.1), ..Pricing::default() };
        let per_job = Pricing { per_job: Some(0.25), ..Pricing::default() };
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(job_cost(Some(5.0), Some(&per_second)), 0.5));
        assert!(close(job_cost(Some(5.0), Some(&both)), 1.0));
        assert!(close(job_cost(None, Some(&per_job)), 0.25));
        assert_eq!(job_cost(None, Some(&per_second)), None);
        assert_eq!(job_cost(Some(5.0), Some(&Pricing::default())), None);
        assert_eq!(job_cost(Some(5.0), None), None);
    }

    #[test]
    fn a_prompt_over_the_tier_is_billed_at_it_whole() {
        let p = Pricing::per_million(3.0, 15.0).cache_read(0.3).long_context(200_000, 6.0, 22.5);
        let usage = |input| Usage {
            input_tokens: Some(input),
            output_tokens: Some(1_000_000),
            cache_read_tokens: Some(100_000),
            ..Usage::default()
        };
        // At the threshold: the base prices.
        let base = cost(&usage(200_000), Some(&p)).unwrap();
        assert!((base - (0.1 * 3.0 + 15.0 + 0.1 * 0.3)).abs() < 1e-9, "{base}");
        assert_eq!(price_tier(&usage(200_000), Some(&p)), None);
        // One over: the tier's, output included; its cache read falls back to
        // the tier's input price.
        let long = cost(&usage(200_001), Some(&p)).unwrap();
        let want = (100_001.0 * 6.0 + 1_000_000.0 * 22.5 + 100_000.0 * 6.0) / 1e6;
        assert!((long - want).abs() < 1e-9, "{long} vs {want}");
        assert_eq!(price_tier(&usage(200_001), Some(&p)), Some("long_context"));
        // A tier that leaves a price out keeps the base one.
        let mut partial = Pricing::per_million(1.0, 2.0);
        partial.long_context = Some(crate::config::raw::LongContext {
            threshold: 10,
            output: Some(4.0),
            ..Default::default()
        });
        let (tier, long) = partial.for_prompt(11);
        assert!(long);
        assert_eq!((tier.input, tier.output), (Some(1.0), Some(4.0)));
    }

    #[test]
    fn cost_prices_cache_apart_and_unknown_is_none() {
        let p = Pricing {
            input: Some(3.0),
            output: Some(15.0),
            cache_read: Some(0.3),
            cache_write: Some(3.75),
            ..Pricing::default()
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
        let no_output = Pricing { output: None, ..p.clone() };
        assert_eq!(cost(&u, Some(&no_output)), None);
        // Nothing written (embeddings): the input price is enough.
        let embedded =
            Usage { input_tokens: Some(2_000_000), output_tokens: Some(0), ..Usage::default() };
        let c =
            cost(&embedded, Some(&Pricing { input: Some(0.02), ..Pricing::default() })).unwrap();
        assert!((c - 0.04).abs() < 1e-12, "{c}");
        assert_eq!(cost(&Usage::default(), Some(&p)), None);
    }

    #[test]
    fn content_is_capped_at_character_boundaries() {
        use switchyard_protocol::{Message, Request, Role, TextBlock};
        let req = Request {
            system: vec![TextBlock::new("be brief")],
            messages: vec![Message::text(Role::User, "h\u{e9}llo world")],
            ..Request::default()
        };
        let full: serde_json::Value =
            serde_json::from_str(&content_json(&req, "answer", 1000)).unwrap();
        assert_eq!(full["request"], "system: be brief\nuser: h\u{e9}llo world\n");
        assert_eq!(full["response"], "answer");
        let capped: serde_json::Value =
            serde_json::from_str(&content_json(&req, "a long answer", 20)).unwrap();
        let (rq, rs) = (capped["request"].as_str().unwrap(), capped["response"].as_str().unwrap());
        assert!(rq.len() <= 10 && rq.len() + rs.len() <= 20, "{rq:?} {rs:?}");
        assert!(rq.starts_with("system"));
    }
}
