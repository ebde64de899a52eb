//! Prometheus at `/metrics`. The pipeline records through the `metrics` facade;
//! this installs the process-wide recorder once and renders it, adding gauges read
//! from runtime state at scrape time (breaker state per credential, in-flight).
//! Labels stay low-cardinality: providers, routes, formats, statuses — never users
//! or keys. A credential is named by its position in its provider's platform
//! keys (`key-1`), `byok` for callers' own keys, `none` for a provider without a
//! key: nothing derived from the secret, which a short fingerprint would be (32
//! bits can be searched for a key whose prefix is known).
//!
//! Who may read it: on the gateway's address, anyone in open mode, otherwise a key
//! whose role is admin or viewer, or a static key from `gateway.api_keys` (no user
//! behind it: the operator's own); a member's stored key gets 403. On the optional
//! `gateway.metrics_listen` address, which serves nothing else, no key is asked.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use switchyard_core::GatewayError;
use switchyard_core::access::{CallerRole, Principal};
use switchyard_core::breaker::{BreakerState, CredentialKey, NO_CREDENTIAL};
use switchyard_core::catalog::Catalog;
use switchyard_protocol::{ClientFormat, ErrorCode};
use tokio::net::TcpListener;

use crate::browser::{Door, Guard};
use crate::http::error_response;
use crate::{AppState, ids};

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

/// `GET /metrics` on the gateway's address: for a caller who may read it.
pub async fn render(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let refused = match state.identity.authenticate(&headers).await {
        Ok(caller) if may_read(&caller.principal) => {
            return exposition(&state).await.into_response();
        }
        Ok(_) => GatewayError::new(
            ErrorCode::MetricsForbidden,
            "/metrics needs a key whose role is admin or viewer, or one from gateway.api_keys",
        ),
        Err(e) => e,
    };
    error_response(ClientFormat::OpenAiChat, &refused, &ids::request_id())
}

/// Whom `/metrics` answers on the gateway's address.
fn may_read(p: &Principal) -> bool {
    match p.role {
        Some(CallerRole::Admin | CallerRole::Viewer) => true,
        // A static key from the file: no user behind it, so the operator's own
        // (all a gateway without a database has); a member's stored key is not.
        Some(CallerRole::Member) => p.user_id.is_none(),
        // Only open mode authenticates a caller without a role.
        None => true,
    }
}

/// The text Prometheus reads.
async fn exposition(state: &AppState) -> impl IntoResponse + use<> {
    let runtime = &state.gateway.runtime;
    budget_gauges(state).await;
    metrics::gauge!("gateway_requests_in_flight").set(runtime.in_flight.total() as f64);
    let snapshot = state.gateway.snapshot();
    for ((provider, credential), value) in breaker_gauges(
        &snapshot.catalog,
        runtime.health.snapshot(switchyard_core::clock::UnixMs::now()),
    ) {
        metrics::gauge!("gateway_breaker_state", "provider" => provider, "credential" => credential)
            .set(value);
    }
    let body = handle().map(PrometheusHandle::render).unwrap_or_default();
    ([("content-type", "text/plain; version=0.0.4")], body)
}

/// Each budget's limit and its spent, reserved and uncertain USD this period,
/// read from the counters (this instance's, or Redis's) at scrape time; a
/// budget not counted yet this period shows its limit only.
async fn budget_gauges(state: &AppState) {
    let Some(admission) = &state.gateway.runtime.admission else { return };
    let snapshot = state.gateway.snapshot();
    let now = switchyard_core::clock::UnixMs::now();
    for spec in &snapshot.catalog.budgets {
        let b = switchyard_core::limits::Budgeted::now(spec, now);
        let scope = spec.scope.to_string();
        let period = spec.period.label();
        let gauge = |kind: &'static str, usd: f64| {
            metrics::gauge!("gateway_budget_usd", "scope" => scope.clone(), "period" => period.clone(), "kind" => kind)
                .set(usd);
        };
        gauge("limit", spec.limit_usd);
        if let Ok(Some(s)) = admission.read_budget(&b).await {
            let usd = |m: u64| m as f64 / switchyard_core::limits::budget::MICROS_PER_USD;
            gauge("spent", usd(s.spent));
            gauge("reserved", usd(s.reserved));
            gauge("uncertain", usd(s.uncertain));
        }
    }
}

/// One value per (provider, credential label): a platform key's own state; for
/// callers' own keys, which share the `byok` label, the worst of theirs.
fn breaker_gauges(
    catalog: &Catalog,
    breakers: Vec<(CredentialKey, BreakerState)>,
) -> BTreeMap<(String, String), f64> {
    let mut out: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (key, s) in breakers {
        let label = credential_label(catalog, &key);
        let value = out.entry((key.provider, label)).or_insert(0.0);
        *value = value.max(state_value(&s));
    }
    out
}

/// `key-N` for the provider's N-th platform key (from 1), `byok` for a key that
/// is none of them (a caller's own), `none` for a provider that takes no key.
fn credential_label(catalog: &Catalog, key: &CredentialKey) -> String {
    if key.credential == NO_CREDENTIAL {
        return NO_CREDENTIAL.to_owned();
    }
    let position = catalog
        .provider(&key.provider)
        .and_then(|p| p.keys.iter().position(|k| k.fingerprint() == key.credential));
    match position {
        Some(i) => format!("key-{}", i + 1),
        None => "byok".to_owned(),
    }
}

/// `/metrics` alone on its own address, with no key asked (the address is the
/// operator's choice: loopback, or a network only Prometheus reaches), until
/// `shutdown` resolves. Browsers are held to what open mode allows them.
pub async fn serve_metrics(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route(
            "/metrics",
            get(|State(state): State<Arc<AppState>>| async move { exposition(&state).await }),
        )
        .fallback(crate::http::not_found)
        .with_state(state.clone());
    let limits = state.gateway.snapshot().catalog.settings.connections;
    let app = Guard::new(app, state, Door::Keyless);
    // The same accept loop as the main listener: its connections are capped and
    // have deadlines too.
    let stop = tokio_util::sync::CancellationToken::new();
    let stopping = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        stopping.cancel();
    });
    crate::conn::accept_loop(listener, app, limits, stop).await;
    Ok(())
}

#[cfg(test)]
#[path = "prometheus_tests.rs"]
mod tests;
