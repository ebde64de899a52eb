//! `telemetry:` read and checked: the OTLP endpoint, its headers (whose values
//! are never quoted: they are often `${ENV}` secrets), the sampling ratio and
//! the exporter's bounds.

use std::sync::Arc;
use std::time::Duration;

use super::compile::Problem;
use crate::config::raw::{OtlpProtocol, RawConfig};
use crate::otel::{Protocol, TraceConfig};
use crate::util::Secret;

/// The compiled `telemetry:` block; `None` when no `otlp` is configured (or
/// it has problems, which are pushed).
pub(super) fn compile_telemetry(
    raw: &RawConfig,
    problems: &mut Vec<Problem>,
) -> Option<Arc<TraceConfig>> {
    let t = &raw.telemetry.value;
    // Every problem is reported at the block's line, naming its field.
    let mut found: Vec<String> = Vec::new();
    if !(0.0..=1.0).contains(&t.sample_ratio) {
        found.push(format!("telemetry.sample_ratio: {}: expected 0 to 1", t.sample_ratio));
    }
    if t.queue_size == 0 {
        found.push("telemetry.queue_size: expected at least 1".to_owned());
    }
    if t.batch_size == 0 {
        found.push("telemetry.batch_size: expected at least 1".to_owned());
    }
    if t.service_name.trim().is_empty() {
        found.push("telemetry.service_name: expected a name".to_owned());
    }
    let mut endpoint = None;
    let mut headers = Vec::new();
    if let Some(otlp) = &t.otlp {
        match reqwest::Url::parse(otlp.endpoint.trim()) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                if !u.username().is_empty() || u.password().is_some() {
                    found.push(
                        "telemetry.otlp.endpoint: credentials belong in telemetry.otlp.headers, \
                         not the URL"
                            .to_owned(),
                    );
                }
                endpoint = Some(u);
            }
            _ => found
                .push("telemetry.otlp.endpoint: expected an http:// or https:// URL".to_owned()),
        }
        if otlp.timeout_ms == 0 {
            found.push("telemetry.otlp.timeout_ms: expected at least 1".to_owned());
        }
        for (name, value) in &otlp.headers {
            if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                found.push(format!("telemetry.otlp.headers: {name:?} is not a valid header name"));
            } else if reqwest::header::HeaderValue::from_str(value).is_err() {
                // The value is not quoted: it is usually a secret.
                found.push(format!(
                    "telemetry.otlp.headers.{name}: the value is not a valid header value"
                ));
            } else {
                headers.push((name.clone(), Secret::new(value.clone())));
            }
        }
    }
    let ok = found.is_empty();
    problems.extend(found.into_iter().map(|m| Problem::at(&raw.telemetry, m)));
    let otlp = t.otlp.as_ref().filter(|_| ok)?;
    let mut endpoint = endpoint?;
    let protocol = match otlp.protocol {
        OtlpProtocol::HttpProtobuf => Protocol::HttpProtobuf,
        OtlpProtocol::Grpc => Protocol::Grpc,
    };
    // OTLP/HTTP's conventional path, for an endpoint given as the collector's
    // address alone (`http://collector:4318`).
    if protocol == Protocol::HttpProtobuf && matches!(endpoint.path(), "" | "/") {
        endpoint.set_path("/v1/traces");
    }
    Some(Arc::new(TraceConfig {
        endpoint,
        protocol,
        headers,
        timeout: Duration::from_millis(otlp.timeout_ms),
        service_name: t.service_name.trim().to_owned(),
        sample_ratio: t.sample_ratio,
        capture_content: t.capture_content,
        queue: t.queue_size,
        batch: t.batch_size,
        flush: Duration::from_millis(t.flush_ms),
    }))
}

#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "compile_telemetry_tests.rs"]
mod tests;
