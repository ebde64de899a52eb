//! OpenTelemetry traces over OTLP: a span per request (kind SERVER) and one per
//! attempt (kind CLIENT, the request span's child), with the GenAI semantic
//! conventions, exported in the background over OTLP/HTTP (protobuf) or
//! OTLP/gRPC. Off unless `telemetry.otlp` is configured.
//!
//! Spans are built from what the pipeline decides anyway: the request's record
//! (models, provider, usage, cost, attempts and their timings) and its trace
//! context (`RequestTrace`), handed over once, when the record is written.
//! Only the ids must exist earlier: an attempt's span id is made when the
//! attempt starts, because the upstream's `traceparent` names it as the parent.
//!
//! | file | job |
//! |---|---|
//! | `propagation.rs` | W3C `traceparent` / `tracestate`: read from the client, written to the upstream |
//! | `spans.rs` | the spans of one finished request, and their GenAI attributes |
//! | `proto.rs` | the OTLP messages, encoded as protobuf |
//! | `export.rs` | the background exporter: bounded queue, batches, retries, flush on shutdown |

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_protocol::Request;

use crate::util::Secret;

mod export;
pub mod propagation;
mod proto;
mod spans;

pub(crate) use export::Finished;
pub use export::{ExportTask, Traces, start};
pub use propagation::{Incoming, SpanId, TraceId, TraceParent};
pub(crate) use spans::finish_reason;

/// How spans travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies (`POST …/v1/traces`).
    HttpProtobuf,
    /// OTLP/gRPC (`TraceService/Export` over HTTP/2).
    Grpc,
}

impl Protocol {
    /// As the configuration writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::HttpProtobuf => "http/protobuf",
            Protocol::Grpc => "grpc",
        }
    }
}

/// `telemetry:`, compiled. The exporter's own settings (endpoint, protocol,
/// headers, service name, queue and batch) are read when it starts
/// ([`start`]); `sample_ratio` and `capture_content` by every request, so a
/// reload changes them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TraceConfig {
    /// Where spans go: the full URL for `http/protobuf` (`…/v1/traces` is
    /// added to an endpoint with no path), the server for `grpc`.
    pub endpoint: reqwest::Url,
    /// How they go.
    pub protocol: Protocol,
    /// Sent with every export (`Authorization` for Langfuse, API keys): values
    /// are secrets, never logged.
    pub headers: Vec<(String, Secret)>,
    /// One export, connection included.
    pub timeout: Duration,
    /// The resource's `service.name`.
    pub service_name: String,
    /// The share of new traces kept (0 to 1); a client's `traceparent` decides
    /// for its own trace (its sampled flag).
    pub sample_ratio: f64,
    /// Export prompts and completions (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.system_instructions`).
    pub capture_content: bool,
    /// Finished requests waiting for export; more are dropped (and counted).
    pub queue: usize,
    /// Spans per export.
    pub batch: usize,
    /// The longest a span waits for its batch to fill.
    pub flush: Duration,
}

/// The most bytes of one content attribute: collectors cap attributes too
/// (Jaeger, Tempo); a prompt beyond is cut at a character boundary.
pub(crate) const MAX_CONTENT: usize = 64 * 1024;

/// One request's trace: its ids, whether it is exported, and what its spans
/// need that the record does not keep. Made when the pipeline starts
/// ([`RequestTrace::begin`]), carried by the record guard, handed to the
/// exporter with the record.
#[derive(Debug)]
pub(crate) struct RequestTrace {
    pub trace_id: TraceId,
    /// The request's span.
    pub span_id: SpanId,
    /// The client's span, when it sent a valid `traceparent`.
    pub parent: Option<SpanId>,
    /// W3C trace flags (sampled or not), passed on as they came.
    pub flags: u8,
    /// The client's `tracestate`, passed on.
    pub state: Option<String>,
    /// Exported: sampled, and an exporter is running.
    pub sampled: bool,
    /// Unix nanoseconds at the request's arrival.
    pub start_ns: u64,
    /// How long the request took, set when its record is written.
    pub ended: Duration,
    /// One per recorded attempt, in the record's order.
    pub attempts: Vec<AttemptSpan>,
    /// Request parameters the GenAI conventions name.
    pub params: Params,
    /// With `capture_content`: the request, and the answer's text.
    pub content: Option<Content>,
    /// Where the finished request goes.
    pub(crate) traces: Traces,
}

/// One attempt's span: its id and timing, and what the record does not say
/// of the deployment.
#[derive(Debug, Clone)]
pub(crate) struct AttemptSpan {
    pub span_id: SpanId,
    /// From the request's arrival to the attempt's start, and its length
    /// (a committed stream's runs to the request's end instead).
    pub offset: Duration,
    pub took: Duration,
    /// `gen_ai.provider.name`.
    pub provider: &'static str,
    /// `server.address` and `server.port`.
    pub server: Option<(String, u16)>,
}

impl AttemptSpan {
    /// The span `span_id` of an attempt at `provider` that started `offset`
    /// after the request and took `took`.
    pub(crate) fn new(
        span_id: SpanId,
        offset: Duration,
        took: Duration,
        provider: &crate::catalog::ProviderSpec,
    ) -> Self {
        let server = reqwest::Url::parse(&provider.endpoint).ok().and_then(|u| {
            let port = u.port_or_known_default()?;
            Some((u.host_str()?.to_owned(), port))
        });
        AttemptSpan { span_id, offset, took, provider: provider_name(provider.wire()), server }
    }
}

/// The request's parameters, as asked.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Params {
    pub max_tokens: Option<u64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
}

/// Content for `capture_content`.
#[derive(Debug)]
pub(crate) struct Content {
    pub request: Arc<Request>,
    /// The answer's text so far.
    pub output: String,
}

impl RequestTrace {
    /// The trace of a request that arrived at `started` with the client's
    /// context `incoming`: the client's trace continued (its sampled flag
    /// followed), else a new one, kept at `config.sample_ratio`. Every request
    /// gets ids, exported or not, so that upstreams see one trace either way.
    pub(crate) fn begin(
        incoming: &Incoming,
        traces: &Traces,
        config: &TraceConfig,
        request: &Arc<Request>,
        started: Instant,
    ) -> Self {
        let (trace_id, parent, flags) = match incoming.parent {
            Some(p) => (p.trace_id, Some(p.span_id), p.flags),
            None => {
                let id = propagation::new_trace_id();
                let keep = sampled_by_ratio(&id, config.sample_ratio);
                (id, None, if keep { propagation::SAMPLED } else { 0 })
            }
        };
        let sampled = flags & propagation::SAMPLED != 0;
        let since = started.elapsed();
        let now_ns = crate::clock::unix_nanos();
        let start_ns = now_ns.saturating_sub(since.as_nanos() as u64);
        RequestTrace {
            trace_id,
            span_id: propagation::new_span_id(),
            parent,
            flags,
            state: incoming.state.clone(),
            sampled,
            start_ns,
            ended: Duration::ZERO,
            attempts: Vec::new(),
            params: Params {
                max_tokens: request.max_tokens,
                temperature: request.temperature,
                top_p: request.top_p,
            },
            content: (sampled && config.capture_content)
                .then(|| Content { request: Arc::clone(request), output: String::new() }),
            traces: traces.clone(),
        }
    }

    /// The `traceparent` for an upstream call made in the span `span`.
    pub(crate) fn traceparent(&self, span: SpanId) -> String {
        TraceParent { trace_id: self.trace_id, span_id: span, flags: self.flags }.header()
    }

    /// Append to the captured answer (up to [`MAX_CONTENT`]).
    pub(crate) fn capture(&mut self, text: &str) {
        if let Some(c) = &mut self.content
            && c.output.len() < MAX_CONTENT
        {
            c.output.push_str(text);
        }
    }

    /// Whether the answer's text is wanted.
    pub(crate) fn wants_text(&self) -> bool {
        self.content.is_some()
    }
}

/// TraceIdRatioBased as the SDKs do it: the trace id's low 8 bytes, read as
/// an integer, under `ratio` of the range; so every service deciding by the
/// same ratio keeps the same traces.
fn sampled_by_ratio(id: &TraceId, ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    if ratio <= 0.0 {
        return false;
    }
    let mut low = [0u8; 8];
    low.copy_from_slice(&id[8..]);
    let bound = (ratio * (u64::MAX as f64)) as u64;
    u64::from_be_bytes(low) < bound
}

/// `gen_ai.provider.name` for a provider's wire, as the conventions name the
/// services (the mock provider is the gateway's own).
pub(crate) fn provider_name(wire: Option<switchyard_protocol::Wire>) -> &'static str {
    use switchyard_protocol::Wire;
    match wire {
        None => "switchyard.mock",
        Some(w) => match w {
            Wire::OpenAiChat | Wire::Responses => "openai",
            Wire::Anthropic => "anthropic",
            Wire::Gemini => "gcp.gemini",
            Wire::Bedrock | Wire::BedrockAnthropic => "aws.bedrock",
            Wire::VertexAnthropic | Wire::VertexGemini | Wire::VertexOpenAi => "gcp.vertex_ai",
            Wire::AzureOpenAi | Wire::AzureOpenAiV1 | Wire::AzureOpenAiResponses => {
                "azure.ai.openai"
            }
            Wire::Fal => "fal",
        },
    }
}

#[cfg(test)]
#[path = "otel_tests.rs"]
mod tests;
