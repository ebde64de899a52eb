//! Signing in and out: a gateway key of an admin or a viewer opens a session
//! (an identity provider's sign-in is `oidc`'s);
//! failed attempts are limited per client address.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use askama::Template;
use axum::Form;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use switchyard_store::db::{NewSession, SignIn};

use super::page::{CsrfForm, PageError, render};
use super::session::{self, Signed};
use crate::AppState;
use crate::conn::Peer;

/// Failed sign-ins one address may make in a window before it must wait.
const FAILURES_ALLOWED: u32 = 10;
/// The window failures are counted over.
const FAILURE_WINDOW: Duration = Duration::from_secs(300);
/// How long a session lasts.
pub(crate) const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// Failed sign-ins per client address, in this process. Keys are 240 random
/// bits, so this guards the database and the logs from a flood rather than a
/// key from guessing; behind a proxy every client shares the proxy's address.
#[derive(Default)]
pub(crate) struct SignInLimiter {
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl SignInLimiter {
    /// `Err(wait)` when `from` has failed too often lately.
    pub(super) fn check(&self, from: IpAddr) -> Result<(), Duration> {
        let map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        match map.get(&from) {
            Some((since, n)) if *n >= FAILURES_ALLOWED && since.elapsed() < FAILURE_WINDOW => {
                Err(FAILURE_WINDOW.saturating_sub(since.elapsed()))
            }
            _ => Ok(()),
        }
    }

    pub(super) fn failed(&self, from: IpAddr) {
        let mut map = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() > 10_000 {
            map.retain(|_, (since, _)| since.elapsed() < FAILURE_WINDOW);
        }
        let entry = map.entry(from).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= FAILURE_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }

    pub(super) fn succeeded(&self, from: IpAddr) {
        self.failures.lock().unwrap_or_else(|e| e.into_inner()).remove(&from);
    }
}

#[derive(Template)]
#[template(path = "console/sign_in.html")]
struct SignInPage<'a> {
    next: &'a str,
    error: Option<&'a str>,
    /// The identity provider's button label, when one is configured.
    oidc: Option<String>,
}

/// The label of the identity provider's button, when one is configured.
fn oidc_label(state: &AppState) -> Option<String> {
    state.gateway.snapshot().catalog.console.oidc.as_ref().map(|o| o.display_name.clone())
}

#[derive(Deserialize)]
pub(crate) struct NextQuery {
    #[serde(default)]
    next: Option<String>,
}

pub(crate) async fn form(
    State(state): State<Arc<AppState>>,
    Query(q): Query<NextQuery>,
) -> Result<Response, PageError> {
    super::store(&state)?;
    let next = safe_back(q.next.as_deref().unwrap_or_default());
    Ok(render(&SignInPage { next, error: None, oidc: oidc_label(&state) }))
}

#[derive(Deserialize)]
pub(crate) struct SignInForm {
    key: String,
    #[serde(default)]
    next: String,
}

pub(crate) async fn submit(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    Form(f): Form<SignInForm>,
) -> Result<Response, PageError> {
    let store = super::store(&state)?.clone();
    session::same_origin(&headers)?;
    let from = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.0.ip());
    let next = safe_back(&f.next);
    if let Err(wait) = state.sign_ins.check(from) {
        let page = SignInPage {
            next,
            error: Some("Too many failed sign-ins: wait a few minutes."),
            oidc: oidc_label(&state),
        };
        let mut response = render(&page);
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        if let Ok(v) = axum::http::HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return Ok(response);
    }
    let key = f.key.trim();
    let operator = if key.is_empty() {
        None
    } else {
        state
            .identity
            .operator(key)
            .await
            .map_err(|e| PageError::unavailable(e.body().message.clone()))?
    };
    let Some(op) = operator else {
        state.sign_ins.failed(from);
        tracing::info!(address = %from, "console: a sign-in was refused");
        let page = SignInPage {
            next,
            error: Some("That key does not belong to an admin or a viewer (or is revoked)."),
            oidc: oidc_label(&state),
        };
        let mut response = render(&page);
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        return Ok(response);
    };
    state.sign_ins.succeeded(from);
    let ttl_ms = i64::try_from(SESSION_TTL.as_millis()).unwrap_or(i64::MAX);
    let (opened, token) = store
        .create_session(NewSession {
            method: SignIn::Key,
            key_hash: Some(switchyard_store::db::hash_secret(key)),
            subject: op.subject.clone(),
            name: op.name.clone(),
            role: op.role,
            address: Some(from.to_string()),
            user_agent: headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(200).collect()),
            ttl_ms,
        })
        .await?;
    tracing::info!(subject = %op.subject, role = op.role.as_str(), session = %&opened.id[..12], "console: signed in");
    let cookie = session::set_cookie(&headers, &token, ttl_ms / 1000);
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to(next)).into_response())
}

pub(crate) async fn sign_out(
    signed: Signed,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Result<Response, PageError> {
    signed.check_write(&headers, &f.csrf)?;
    signed.store.revoke_session(&signed.session.id).await?;
    let cookie = session::clear_cookie(&headers);
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to("/console/sign-in")).into_response())
}

/// Where to go after signing in: a console path, never another site (an open
/// redirect would send a freshly signed-in operator anywhere).
pub(crate) fn safe_back(next: &str) -> &str {
    let ok = next.starts_with("/console")
        && !next.starts_with("/console/sign-in")
        && !next.contains("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control);
    if ok { next } else { "/console/overview" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_console_paths_are_followed_after_sign_in() {
        assert_eq!(safe_back("/console/requests?model=x"), "/console/requests?model=x");
        for bad in [
            "https://evil.example/",
            "//evil.example/console",
            "/console//evil",
            "/console\\evil",
            "/admin/keys",
            "/console/sign-in?next=/x",
            "",
        ] {
            assert_eq!(safe_back(bad), "/console/overview", "{bad}");
        }
    }

    #[test]
    fn failures_are_limited_per_address() {
        let limiter = SignInLimiter::default();
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..FAILURES_ALLOWED {
            assert!(limiter.check(a).is_ok());
            limiter.failed(a);
        }
        assert!(limiter.check(a).is_err());
        assert!(limiter.check(b).is_ok(), "another address is not held back");
        limiter.succeeded(a);
        assert!(limiter.check(a).is_ok());
    }
}
