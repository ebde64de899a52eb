//! `telemetry:`: OpenTelemetry traces over OTLP, as written. Off unless
//! `otlp` is there.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `telemetry:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TelemetryConfig {
    /// Where spans go; none: no traces are exported.
    pub otlp: Option<OtlpConfig>,
    /// The resource's `service.name`.
    pub service_name: String,
    /// The share of new traces kept, 0 to 1 (a client's `traceparent` decides
    /// for its own).
    pub sample_ratio: f64,
    /// Export prompts and completions on the spans.
    pub capture_content: bool,
    /// Finished requests waiting for export; more are dropped.
    pub queue_size: usize,
    /// Spans per export.
    pub batch_size: usize,
    /// The longest a span waits for its batch.
    pub flush_ms: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            otlp: None,
            service_name: "switchyard".to_owned(),
            sample_ratio: 1.0,
            capture_content: false,
            queue_size: 2048,
            batch_size: 512,
            flush_ms: 1000,
        }
    }
}

/// `telemetry.otlp:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct OtlpConfig {
    /// `http/protobuf`: the URL spans are POSTed to (`/v1/traces` is added
    /// when it has no path); `grpc`: the collector's URL.
    pub endpoint: String,
    /// `http/protobuf` (the default) or `grpc`.
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Sent with every export; values may be `${ENV}` secrets.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// One export's limit, connection included.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
}

fn default_timeout_ms() -> u64 {
    10_000
}

/// `telemetry.otlp.protocol`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum OtlpProtocol {
    /// OTLP/HTTP, protobuf bodies.
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    /// OTLP/gRPC.
    #[serde(rename = "grpc")]
    Grpc,
}
