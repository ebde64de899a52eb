//! The overview: each route's dispatch order, every provider credential's live
//! health, requests in flight, and the last hours' requests, errors and
//! failovers (from the hourly rollups).

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use switchyard_store::{RecordFilter, UsageBy};

use super::page::{Chrome, PageError, render};
use super::providers::{Credential, credentials, wire_name};
use super::routes::{RouteRow, dispatch};
use super::session::Signed;
use crate::AppState;
use crate::identity::now_ms;

const HOUR_MS: i64 = 3_600_000;
/// Hours the traffic table covers (the current one included).
const HOURS: i64 = 3;

struct Health {
    provider: String,
    wire: &'static str,
    credentials: Vec<Credential>,
}

struct HourRow {
    hour: String,
    provider: String,
    requests: u64,
    errors: u64,
    failovers: u64,
}

#[derive(Template)]
#[template(path = "console/overview.html")]
struct OverviewPage {
    chrome: Chrome,
    in_flight: u64,
    hour_requests: u64,
    hour_errors: u64,
    hour_failovers: u64,
    routes: Vec<RouteRow>,
    health: Vec<Health>,
    hours: Vec<HourRow>,
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
) -> Result<Response, PageError> {
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let health: Vec<Health> = catalog
        .providers
        .iter()
        .map(|p| Health {
            provider: p.name.clone(),
            wire: wire_name(p),
            credentials: credentials(&state.gateway, p),
        })
        .collect();
    let routes = dispatch(&state);
    // The traffic of the last hours, whole hours from the rollups.
    let now = now_ms();
    let this_hour = now - now.rem_euclid(HOUR_MS);
    let filter = RecordFilter {
        since_ms: Some(this_hour - (HOURS - 1) * HOUR_MS),
        ..RecordFilter::default()
    };
    let series = signed.store.usage_series(&filter, UsageBy::Provider, 0).await?;
    let mut hours: Vec<HourRow> = series
        .iter()
        .map(|p| HourRow {
            hour: super::utc(p.hour_ms).get(..16).unwrap_or_default().to_owned(),
            provider: p.usage.key.clone().unwrap_or_else(|| "(none)".to_owned()),
            requests: p.usage.requests,
            errors: p.usage.errors,
            failovers: p.failovers,
        })
        .collect();
    hours.sort_by(|a, b| b.hour.cmp(&a.hour).then(b.requests.cmp(&a.requests)));
    let current = series.iter().filter(|p| p.hour_ms == this_hour);
    let (hour_requests, hour_errors, hour_failovers) = current.fold((0, 0, 0), |(r, e, f), p| {
        (r + p.usage.requests, e + p.usage.errors, f + p.failovers)
    });
    Ok(render(&OverviewPage {
        chrome: Chrome::new(&signed, "overview", "Overview"),
        in_flight: state.gateway.runtime.in_flight.total(),
        hour_requests,
        hour_errors,
        hour_failovers,
        routes,
        health,
        hours,
    }))
}
