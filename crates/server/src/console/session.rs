//! Who is signed in to the console: the session cookie, the session it names in
//! the database, and the checks every write passes (CSRF token, same origin,
//! admin role).
//!
//! The cookie holds a random token (the database keeps only its SHA-256); it is
//! `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page or
//! link sends it), scoped to `/console`, and `Secure` when the browser reached
//! the gateway over TLS (a terminating proxy says so with
//! `X-Forwarded-Proto: https`). A session signed in with a key resolves that key
//! again at every page, so revoking the key, disabling its user or changing the
//! role ends or changes the session at once, on every instance.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use switchyard_core::access::CallerRole;
use switchyard_store::Store;
use switchyard_store::db::{ConsoleSession, SignIn};

use super::page::PageError;
use crate::AppState;

/// The cookie's name.
pub(crate) const COOKIE: &str = "switchyard_console";

/// A signed-in operator, checked before the handler looks at anything else.
pub(crate) struct Signed {
    /// The session as stored.
    pub session: ConsoleSession,
    /// Their role now (a key's user may have changed since sign-in).
    pub role: CallerRole,
    /// What the pages call them.
    pub who: String,
    /// The database (the console runs only with one).
    pub store: Store,
}

impl Signed {
    /// Whether they may change things.
    pub(crate) fn is_admin(&self) -> bool {
        self.role == CallerRole::Admin
    }

    /// Changes to the directory made by this operator (the admin API's checks).
    pub(crate) fn directory<'a>(
        &'a self,
        state: &'a AppState,
    ) -> crate::admin::directory::Directory<'a> {
        crate::admin::directory::Directory {
            store: &self.store,
            identity: &state.identity,
            actor: &self.who,
        }
    }

    /// 403 for a viewer.
    pub(crate) fn admin(&self) -> Result<(), PageError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(PageError::forbidden("viewers can look but not change: this needs an admin"))
        }
    }

    /// An admin's write: [`Signed::admin`], then [`Signed::check_write`].
    pub(crate) fn admin_write(&self, headers: &HeaderMap, csrf: &str) -> Result<(), PageError> {
        self.admin()?;
        self.check_write(headers, csrf)
    }

    /// The checks a write passes: the form's CSRF token is this session's, and
    /// the request comes from the console's own origin.
    pub(crate) fn check_write(&self, headers: &HeaderMap, csrf: &str) -> Result<(), PageError> {
        same_origin(headers)?;
        let ok: bool =
            subtle::ConstantTimeEq::ct_eq(self.session.csrf.as_bytes(), csrf.as_bytes()).into();
        if !ok {
            return Err(PageError::forbidden(
                "this form is stale or came from elsewhere (CSRF token mismatch): reload the page",
            ));
        }
        Ok(())
    }
}

impl FromRequestParts<Arc<AppState>> for Signed {
    type Rejection = PageError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, Self::Rejection> {
        let store = super::store(state)?;
        let back = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/console");
        let Some(token) = cookie(&parts.headers) else {
            return Err(PageError::sign_in(back));
        };
        let session =
            store.session(&token).await.map_err(|e| PageError::unavailable(e.to_string()))?;
        let Some(session) = session else { return Err(PageError::sign_in(back)) };
        let (role, who) = match session.method {
            SignIn::Key => {
                let hash = session.key_hash.as_deref().unwrap_or_default();
                let operator = state
                    .identity
                    .operator_by_hash(hash)
                    .await
                    .map_err(|e| PageError::unavailable(e.body().message.clone()))?;
                let Some(op) = operator else {
                    // The key no longer signs anyone in: neither does its session.
                    let _ = store.revoke_session(&session.id).await;
                    return Err(PageError::sign_in(back));
                };
                (op.role, op.name.unwrap_or(op.subject))
            }
            SignIn::Oidc => {
                (session.role, session.name.clone().unwrap_or_else(|| session.subject.clone()))
            }
        };
        Ok(Signed { session, role, who, store: store.clone() })
    }
}

/// The session token the browser sent, if any.
pub(crate) fn cookie(headers: &HeaderMap) -> Option<String> {
    cookie_named(headers, COOKIE)
}

/// The value of the cookie `name` the browser sent, if any (not empty).
pub(crate) fn cookie_named(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(n, _)| *n == name)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Whether the browser reached the gateway over TLS (the gateway itself serves
/// plain HTTP; a proxy that terminates TLS says so).
pub(crate) fn over_tls(headers: &HeaderMap) -> bool {
    headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()).is_some_and(|v| {
        v.split(',').next().is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
    })
}

/// The `Set-Cookie` that opens a session of `max_age_s` seconds.
pub(crate) fn set_cookie(headers: &HeaderMap, token: &str, max_age_s: i64) -> HeaderValue {
    let secure = if over_tls(headers) { "; Secure" } else { "" };
    let value = format!(
        "{COOKIE}={token}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age_s}{secure}"
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `Set-Cookie` that ends it in the browser.
pub(crate) fn clear_cookie(headers: &HeaderMap) -> HeaderValue {
    let secure = if over_tls(headers) { "; Secure" } else { "" };
    let value = format!("{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{secure}");
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// A write must come from a page of this origin. Browsers send `Origin` on every
/// POST; when it is there it must name the host the request was sent to
/// (SameSite=Strict already keeps the cookie off other sites' requests; this
/// also covers the sign-in form, which has no session yet).
pub(crate) fn same_origin(headers: &HeaderMap) -> Result<(), PageError> {
    let Some(origin) = headers.get(header::ORIGIN) else { return Ok(()) };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let origin = origin.to_str().unwrap_or_default();
    let authority = origin.split_once("://").map(|(_, rest)| rest).unwrap_or("");
    if !host.is_empty() && authority.eq_ignore_ascii_case(host) {
        Ok(())
    } else {
        Err(PageError::forbidden("this form was sent from another site"))
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
