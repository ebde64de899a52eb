//! `GET /admin/destinations`: each deployment's recent behaviour, as the adaptive
//! strategy reads it (`switchyard_core::destinations`): requests in flight, and
//! over its window the successes, errors, client cancellations, p50/p95 total
//! latency, p95 time to first token and output tokens per second. Live from
//! this instance's memory; no database needed.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use serde::Serialize;
use serde_json::json;
use switchyard_core::clock::UnixMs;
use switchyard_core::destinations::{SAMPLES, Summary, WINDOW_MS};

use super::{Admin, ApiResult, ok};
use crate::AppState;

/// One row: a deployment of a public model.
#[derive(Debug, Serialize)]
struct Row {
    model: String,
    provider: String,
    upstream_model: String,
    in_flight: u64,
    #[serde(flatten)]
    summary: Summary,
}

pub(crate) async fn list(_: Admin, State(state): State<Arc<AppState>>) -> ApiResult {
    let snapshot = state.gateway.snapshot();
    let runtime = &state.gateway.runtime;
    let now = UnixMs::now();
    // Every catalog deployment, observed or not, and every observed one (a
    // route's chain may serve a model through a deployment of another's).
    let mut rows: BTreeMap<String, Summary> = BTreeMap::new();
    for m in &snapshot.catalog.models {
        for d in &m.deployments {
            if let Some(p) = snapshot.catalog.providers.get(d.provider) {
                rows.insert(
                    format!("{}|{}|{}", m.id, p.name, d.upstream_model),
                    Summary::default(),
                );
            }
        }
    }
    rows.extend(runtime.destinations.all(now));
    let data: Vec<Row> = rows
        .into_iter()
        .filter_map(|(identity, summary)| {
            let mut parts = identity.splitn(3, '|');
            let (model, provider, upstream) = (parts.next()?, parts.next()?, parts.next()?);
            Some(Row {
                model: model.to_owned(),
                provider: provider.to_owned(),
                upstream_model: upstream.to_owned(),
                in_flight: runtime.in_flight.count(&identity),
                summary,
            })
        })
        .collect();
    ok(json!({ "window_ms": WINDOW_MS, "max_samples": SAMPLES, "data": data }))
}
