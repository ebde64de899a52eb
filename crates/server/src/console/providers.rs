//! Providers: where each is reached and how, the models it serves, the routes
//! that send to it, and every credential's health. The credential view is the
//! overview's too.

use std::sync::Arc;

use askama::Template;
use axum::extract::State;
use axum::response::Response;
use switchyard_core::Engine;
use switchyard_core::breaker::{BreakerState, CredentialKey, NO_CREDENTIAL};
use switchyard_core::catalog::{Catalog, ProviderSpec};
use switchyard_core::clock::UnixMs;

use super::page::{Chrome, PageError, render};
use super::session::Signed;
use crate::AppState;

/// One credential's health as a page shows it: never the key, only its
/// position and fingerprint.
pub(crate) struct Credential {
    /// `key-1`, `key-2`, … (the provider's platform keys in order), `byok`
    /// (callers' own keys, the worst of them), or `none`.
    pub label: String,
    /// The key's fingerprint (`key-1a2b3c4d`), where there is a key.
    pub fingerprint: String,
    /// `closed`, `open`, `half_open`, `throttled`, `quarantined`.
    pub state: &'static str,
    /// When an open, throttled or quarantined state ends, in seconds from now.
    pub ends_in_s: Option<u64>,
}

/// Every credential of `provider` with its live state: its platform keys in
/// order (or its one keyless identity), then callers' own keys as one line
/// (the worst of them), when any has been used.
pub(crate) fn credentials(engine: &Engine, provider: &ProviderSpec) -> Vec<Credential> {
    let now = UnixMs::now();
    let health = &engine.runtime.health;
    let mut out: Vec<Credential> = provider
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let fingerprint = k.fingerprint();
            let state = health.state(&CredentialKey::new(&provider.name, &fingerprint), now);
            shown(format!("key-{}", i + 1), fingerprint, state, now)
        })
        .collect();
    if provider.keys.is_empty() {
        let state = health.state(&CredentialKey::new(&provider.name, NO_CREDENTIAL), now);
        let label = if provider.cloud.is_some() { "cloud" } else { NO_CREDENTIAL };
        out.push(shown(label.to_owned(), String::new(), state, now));
    }
    let platform: Vec<String> = provider.keys.iter().map(|k| k.fingerprint()).collect();
    let byok = health
        .snapshot(now)
        .into_iter()
        .filter(|(key, _)| {
            key.provider == provider.name
                && key.credential != NO_CREDENTIAL
                && !platform.contains(&key.credential)
        })
        .map(|(_, s)| s)
        .max_by_key(severity);
    if let Some(state) = byok {
        out.push(shown("byok".to_owned(), String::new(), state, now));
    }
    out
}

fn shown(label: String, fingerprint: String, state: BreakerState, now: UnixMs) -> Credential {
    let ends_in_s = match state {
        BreakerState::Open { until }
        | BreakerState::Throttled { until }
        | BreakerState::Quarantined { until } => Some(until.0.saturating_sub(now.0).div_ceil(1000)),
        _ => None,
    };
    Credential { label, fingerprint, state: state.name(), ends_in_s }
}

/// Worse states sort higher.
fn severity(s: &BreakerState) -> u8 {
    match s {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen { .. } => 1,
        BreakerState::Throttled { .. } => 2,
        BreakerState::Open { .. } => 3,
        BreakerState::Quarantined { .. } => 4,
    }
}

/// A provider's wire as the configuration names it (`mock` for the built-in one).
pub(crate) fn wire_name(p: &ProviderSpec) -> &'static str {
    p.wire().map_or("mock", |w| w.as_str())
}

struct ProviderRow {
    name: String,
    wire: &'static str,
    endpoint: String,
    unavailable: Option<String>,
    models: Vec<String>,
    routes: Vec<String>,
    credentials: Vec<Credential>,
}

#[derive(Template)]
#[template(path = "console/providers.html")]
struct ProvidersPage {
    chrome: Chrome,
    providers: Vec<ProviderRow>,
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
) -> Result<Response, PageError> {
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let providers = catalog
        .providers
        .iter()
        .enumerate()
        .map(|(i, p)| ProviderRow {
            name: p.name.clone(),
            wire: wire_name(p),
            endpoint: switchyard_core::util::redact_userinfo(&p.endpoint).into_owned(),
            unavailable: p.unavailable.clone(),
            models: models_of(catalog, i),
            routes: routes_of(catalog, i),
            credentials: credentials(&state.gateway, p),
        })
        .collect();
    Ok(render(&ProvidersPage { chrome: Chrome::new(&signed, "providers", "Providers"), providers }))
}

/// Catalog models with a deployment on provider `i`, as `id → upstream id`.
fn models_of(catalog: &Catalog, i: usize) -> Vec<String> {
    catalog
        .models
        .iter()
        .flat_map(|m| {
            m.deployments.iter().filter(move |d| d.provider == i).map(move |d| {
                if d.upstream_model == m.id {
                    m.id.clone()
                } else {
                    format!("{} → {}", m.id, d.upstream_model)
                }
            })
        })
        .collect()
}

/// Routes whose chains (their own or a scope's) send to provider `i`.
fn routes_of(catalog: &Catalog, i: usize) -> Vec<String> {
    catalog
        .routes
        .iter()
        .filter(|r| {
            let chains =
                std::iter::once(&r.chain).chain(r.scopes.iter().flat_map(|s| s.chains.values()));
            chains
                .into_iter()
                .any(|c| std::iter::once(&c.primary).chain(&c.fallbacks).any(|t| t.provider == i))
        })
        .map(|r| r.name.clone())
        .collect()
}
