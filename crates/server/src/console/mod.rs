//! The operator console at `/console`: pages rendered on the server (askama
//! templates under `templates/console/`, checked at build time), plain forms,
//! one stylesheet embedded in the binary, no JavaScript build.
//!
//! Who may use it: an admin or a viewer, signed in with their gateway key
//! ([`signin`]) or through an OpenID Connect provider ([`oidc`]); sessions live in the database, so every instance on it knows
//! them ([`session`]). Viewers read; admins also change. Every page reads the
//! same state the gateway serves from: the current configuration snapshot, the
//! live breaker and in-flight state, and the request records and their hourly
//! rollups.
//!
//! A page per file: [`overview`], [`providers`], [`routes`], [`models`] (and the
//! public `/pricing`), [`requests`], [`analytics`],
//! [`keys`], [`people`], [`rules`], [`sessions`];
//! charts are SVG drawn here ([`chart`]), each beside the table it plots.

mod analytics;
mod assets;
mod chart;
mod keys;
mod models;
mod oidc;
mod oidc_token;
mod overview;
mod page;
mod people;
mod providers;
mod requests;
mod routes;
mod rules;
mod session;
mod sessions;
mod signin;

use std::sync::Arc;

use axum::Router;
use axum::response::Redirect;
use axum::routing::{get, post};
use switchyard_store::Store;

use crate::AppState;
pub(crate) use oidc::OidcState;
pub(crate) use signin::SignInLimiter;

/// The console's routes, under `/console`.
pub(crate) fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/console", get(|| async { Redirect::to("/console/overview") }))
        .route("/console/", get(|| async { Redirect::to("/console/overview") }))
        .route("/console/sign-in", get(signin::form).post(signin::submit))
        .route("/console/sign-out", post(signin::sign_out))
        .route("/console/oidc/start", get(oidc::start))
        .route("/console/oidc/callback", get(oidc::callback))
        .route("/console/assets/{name}", get(assets::serve))
        .route("/console/overview", get(overview::page))
        .route("/console/providers", get(providers::page))
        .route("/console/requests", get(requests::list))
        .route("/console/requests/{id}", get(requests::detail))
        .route("/console/analytics", get(analytics::page))
        .route("/console/keys", get(keys::page).post(keys::create))
        .route("/console/keys/{id}/revoke", post(keys::revoke))
        .route("/console/keys/{id}/limits", post(keys::limits))
        .route("/console/people", get(people::page))
        .route("/console/people/{what}", post(people::create))
        .route("/console/people/{what}/{id}", post(people::update))
        .route("/console/routes", get(routes::page).post(routes::save))
        .route("/console/models", get(models::page))
        .route("/pricing", get(models::public))
        .route("/v1/pricing", get(models::public_json))
        .route("/console/rules", get(rules::page).post(rules::create))
        .route("/console/rules/{id}/delete", post(rules::delete))
        .route("/console/sessions", get(sessions::page))
        .route("/console/sessions/{id}/revoke", post(sessions::revoke))
}

/// The database, or the page that says the console needs one (sessions,
/// records and the directory all live there).
fn store(state: &AppState) -> Result<&Store, page::PageError> {
    state.identity.store().ok_or_else(|| {
        page::PageError::unavailable(
            "the console needs a database (storage.url): sessions, requests and analytics live there",
        )
    })
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 as a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A cost for a table cell: `$0.0123`, or `—` when unknown.
fn usd(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("${v:.2}"),
        Some(v) if v == 0.0 || v >= 0.01 => format!("${v:.4}"),
        // A single request's cost is often a fraction of a cent.
        Some(v) => format!("${v:.6}"),
        None => "—".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_798_761_599_000), "2026-12-31 23:59:59");
    }

    #[test]
    fn costs_keep_a_fraction_of_a_cent() {
        assert_eq!(usd(Some(0.00003)), "$0.000030");
        assert_eq!(usd(Some(0.0)), "$0.0000");
        assert_eq!(usd(Some(1.5)), "$1.5000");
        assert_eq!(usd(Some(250.0)), "$250.00");
        assert_eq!(usd(None), "—");
    }
}
