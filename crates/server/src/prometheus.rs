//! Prometheus at `/metrics`. The pipeline records through the `metrics` facade;
//! this installs the process-wide recorder once and renders it, adding gauges read
//! from runtime state at scrape time (breaker state per credential, in-flight).
//! Labels stay low-cardinality: providers, routes, formats, statuses — never users
//! or keys (credentials appear only as fingerprints).

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::response::IntoResponse;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use switchyard_core::breaker::BreakerState;

use crate::AppState;

const LATENCY_BUCKETS: &[f64] =
    &[0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

/// The recorder's handle; installed on first use (once per process).
pub fn handle() -> Option<&'static PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), LATENCY_BUCKETS)
                .ok()?
                .build_recorder();
            let handle = recorder.handle();
            match metrics::set_global_recorder(recorder) {
                Ok(()) => Some(handle),
                Err(e) => {
                    tracing::warn!("metrics recorder not installed: {e}");
                    None
                }
            }
        })
        .as_ref()
}

/// Histograms keep their raw samples until they are folded into buckets: by a
/// scrape, or by this upkeep. Without it an unscraped gateway grows by every sample
/// it records. The server runs it for as long as it serves.
pub async fn upkeep() {
    let mut every = tokio::time::interval(UPKEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        if let Some(h) = handle() {
            h.run_upkeep();
        }
    }
}

const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

fn state_value(s: &BreakerState) -> f64 {
    match s {
        BreakerState::Closed => 0.0,
        BreakerState::HalfOpen { .. } => 1.0,
        BreakerState::Open { .. } => 2.0,
        BreakerState::Throttled { .. } => 3.0,
        BreakerState::Quarantined { .. } => 4.0,
    }
}

pub async fn render(State(state): State<Arc<AppState>>) -> impl IntoResponse {
    let runtime = &state.gateway.runtime;
    metrics::gauge!("gateway_requests_in_flight").set(runtime.in_flight.total() as f64);
    for (key, s) in runtime.health.snapshot(switchyard_core::clock::UnixMs::now()) {
        metrics::gauge!("gateway_breaker_state", "provider" => key.provider, "credential" => key.credential)
            .set(state_value(&s));
    }
    let body = handle().map(PrometheusHandle::render).unwrap_or_default();
    ([("content-type", "text/plain; version=0.0.4")], body)
}
