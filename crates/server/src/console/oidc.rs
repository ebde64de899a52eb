//! Signing in through an OpenID Connect provider (`console.oidc`): the
//! authorization code flow with PKCE (S256), a state bound to the browser and a
//! nonce bound to the ID token.
//!
//! `GET /console/oidc/start` reads the provider's discovery document, starts a
//! sign-in in the database (state, nonce, PKCE verifier; see
//! `switchyard_store::db::OidcLogin`) and sends the browser to the provider with
//! a short-lived cookie naming it. `GET /console/oidc/callback` takes that
//! sign-in (once: it is deleted as it is read), checks the state, exchanges the
//! code at the token endpoint (client secret by Basic or in the body, as the
//! provider says; the PKCE verifier), verifies the ID token ([`oidc_token`]),
//! maps the group claim to admin or viewer and opens a console session.
//!
//! Why the database and not a sealed cookie: the callback may reach another
//! instance (the database is shared, a gateway secret need not be configured),
//! and a row can be used once, which a cookie cannot promise.
//!
//! [`oidc_token`]: super::oidc_token

use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use switchyard_core::catalog::OidcSpec;
use switchyard_core::client::{ClientOptions, service_client};
use switchyard_store::db::{NewSession, SignIn};

use super::oidc_token::{self, Expect, Jwk, TokenError};
use super::page::{PageError, render};
use super::session;
use super::signin::{SESSION_TTL, safe_back};
use crate::AppState;
use crate::conn::Peer;

/// The cookie naming a sign-in under way.
const PENDING_COOKIE: &str = "switchyard_oidc";
/// How long a sign-in may take at the provider.
const PENDING_TTL: Duration = Duration::from_secs(600);
/// Discovery and the JWKS are read again after this long.
const CACHE_TTL: Duration = Duration::from_secs(3600);
/// Each call to the provider, answer included.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The most read of any answer of the provider.
const MAX_ANSWER: usize = 256 * 1024;

/// What discovery says, of what the console uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
    /// Absent means `client_secret_basic` (Discovery §3).
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
}

/// A value read from the provider, and when.
struct Cached<T> {
    /// What it was read for (the discovery URL, the JWKS URI): a reload that
    /// names another provider does not use it.
    from: String,
    at: Instant,
    value: Arc<T>,
}

/// The provider's documents, shared by every sign-in of this process, and the
/// HTTP client that reads them.
#[derive(Default)]
pub(crate) struct OidcState {
    client: OnceLock<reqwest::Client>,
    discovery: Mutex<Option<Cached<Discovery>>>,
    jwks: Mutex<Option<Cached<Vec<Jwk>>>>,
}

/// A failure reaching or reading the provider (shown as 503: it is not the
/// operator's doing).
struct Unreachable(String);

impl OidcState {
    fn client(&self) -> Result<&reqwest::Client, Unreachable> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        // The providers' TLS setup: the platform's roots, the environment's proxy.
        let built = service_client(&ClientOptions::default(), CALL_TIMEOUT)
            .map_err(|e| Unreachable(format!("building the HTTP client failed: {e}")))?;
        Ok(self.client.get_or_init(|| built))
    }

    async fn discovery(&self, spec: &OidcSpec) -> Result<Arc<Discovery>, Unreachable> {
        let url = spec.discovery_url();
        if let Some(hit) = fresh(&self.discovery, &url) {
            return Ok(hit);
        }
        let body = self.get(&url, "discovery").await?;
        let doc: Discovery = serde_json::from_slice(&body)
            .map_err(|_| Unreachable("discovery is not the JSON document expected".into()))?;
        // Discovery §4.3: the document must be the configured issuer's.
        if doc.issuer.trim_end_matches('/') != spec.issuer.trim_end_matches('/') {
            return Err(Unreachable(format!(
                "discovery names the issuer {:?}, not the configured {:?}",
                doc.issuer, spec.issuer
            )));
        }
        let plain_ok = doc.issuer.starts_with("http://");
        for (what, endpoint) in [
            ("authorization_endpoint", &doc.authorization_endpoint),
            ("token_endpoint", &doc.token_endpoint),
            ("jwks_uri", &doc.jwks_uri),
        ] {
            if !(endpoint.starts_with("https://") || plain_ok && endpoint.starts_with("http://")) {
                return Err(Unreachable(format!("discovery's {what} is not an https URL")));
            }
        }
        if let Some(methods) = &doc.code_challenge_methods_supported
            && !methods.iter().any(|m| m == "S256")
        {
            return Err(Unreachable("the provider does not support PKCE with S256".into()));
        }
        let doc = Arc::new(doc);
        store_cache(&self.discovery, url, Arc::clone(&doc));
        Ok(doc)
    }

    /// The provider's keys; read again when `refresh` (a token named a key not
    /// among them: the provider may have rotated).
    async fn jwks(&self, d: &Discovery, refresh: bool) -> Result<Arc<Vec<Jwk>>, Unreachable> {
        if !refresh && let Some(hit) = fresh(&self.jwks, &d.jwks_uri) {
            return Ok(hit);
        }
        let body = self.get(&d.jwks_uri, "JWKS").await?;
        let keys = Arc::new(oidc_token::parse_jwks(&body).map_err(|e| Unreachable(e.to_owned()))?);
        store_cache(&self.jwks, d.jwks_uri.clone(), Arc::clone(&keys));
        Ok(keys)
    }

    async fn get(&self, url: &str, what: &str) -> Result<Vec<u8>, Unreachable> {
        let request = self.client()?.get(url).header(header::ACCEPT, "application/json");
        let (status, body) = read(request, what).await?;
        if status != 200 {
            return Err(Unreachable(format!("{what} answered {status}")));
        }
        Ok(body)
    }
}

fn fresh<T>(slot: &Mutex<Option<Cached<T>>>, from: &str) -> Option<Arc<T>> {
    let slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    slot.as_ref()
        .filter(|c| c.from == from && c.at.elapsed() < CACHE_TTL)
        .map(|c| Arc::clone(&c.value))
}

fn store_cache<T>(slot: &Mutex<Option<Cached<T>>>, from: String, value: Arc<T>) {
    *slot.lock().unwrap_or_else(|e| e.into_inner()) =
        Some(Cached { from, at: Instant::now(), value });
}

/// Sends `request` and reads its answer, at most [`MAX_ANSWER`] bytes. Errors
/// name `what` and the transport's reason, never the URL's query or a body.
async fn read(request: reqwest::RequestBuilder, what: &str) -> Result<(u16, Vec<u8>), Unreachable> {
    let failed = |e: reqwest::Error| {
        let kind = if e.is_timeout() { "timed out" } else { "failed" };
        Unreachable(format!("{what}: the request {kind}: {}", e.without_url()))
    };
    let mut response = request.timeout(CALL_TIMEOUT).send().await.map_err(failed)?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(Unreachable(format!("{what}: the answer is over {MAX_ANSWER} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((status, body))
}

/// The configured provider, or 404: the routes exist only with one.
fn configured(state: &AppState) -> Result<Arc<OidcSpec>, PageError> {
    state
        .gateway
        .snapshot()
        .catalog
        .console
        .oidc
        .clone()
        .ok_or_else(|| PageError::not_found("sign-in with an identity provider is not configured"))
}

fn client_address(peer: Option<axum::Extension<Peer>>) -> IpAddr {
    peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |p| p.0.0.ip())
}

fn too_many(wait: Duration) -> Response {
    let error = PageError::Status {
        status: StatusCode::TOO_MANY_REQUESTS,
        message: "Too many failed sign-ins: wait a few minutes.".into(),
    };
    let mut response = error.into_response();
    if let Ok(v) = HeaderValue::from_str(&wait.as_secs().max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

#[derive(Deserialize)]
pub(crate) struct StartQuery {
    #[serde(default)]
    next: Option<String>,
}

/// `GET /console/oidc/start`: to the provider.
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    Query(q): Query<StartQuery>,
) -> Result<Response, PageError> {
    let store = super::store(&state)?.clone();
    let spec = configured(&state)?;
    if let Err(wait) = state.sign_ins.check(client_address(peer)) {
        return Ok(too_many(wait));
    }
    let discovery = state.oidc.discovery(&spec).await.map_err(unreachable)?;
    let redirect_uri = match &spec.redirect_url {
        Some(url) => url.clone(),
        None => callback_url(&headers)?,
    };
    let next = safe_back(q.next.as_deref().unwrap_or_default());
    let ttl_ms = i64::try_from(PENDING_TTL.as_millis()).unwrap_or(i64::MAX);
    let Some((token, login)) = store.begin_oidc_login(&redirect_uri, next, ttl_ms).await? else {
        tracing::warn!("console: too many sign-ins through the identity provider are under way");
        return Err(PageError::unavailable(
            "too many sign-ins are under way: try again in a few minutes",
        ));
    };
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(login.code_verifier.as_bytes()));
    let params = [
        ("response_type", "code"),
        ("client_id", spec.client_id.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("scope", spec.scope.as_str()),
        ("state", login.state.as_str()),
        ("nonce", login.nonce.as_str()),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
    ];
    let endpoint = &discovery.authorization_endpoint;
    let joiner = if endpoint.contains('?') { '&' } else { '?' };
    let to = format!("{endpoint}{joiner}{}", form(&params));
    // SameSite=Lax, not Strict: the provider sends the browser back with a
    // top-level GET from its own site, which carries a Lax cookie and drops a
    // Strict one. Lax still keeps it off every cross-site POST and sub-request,
    // and it names only this sign-in, for ten minutes, under /console/oidc.
    let secure = if session::over_tls(&headers) { "; Secure" } else { "" };
    let cookie = format!(
        "{PENDING_COOKIE}={token}; Path=/console/oidc; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        PENDING_TTL.as_secs()
    );
    let cookie = HeaderValue::from_str(&cookie)
        .map_err(|_| PageError::internal("the sign-in cookie could not be written"))?;
    Ok(([(header::SET_COOKIE, cookie)], Redirect::to(&to)).into_response())
}

/// This request's own `/console/oidc/callback`: its `Host`, over `https` when a
/// proxy says the browser used TLS. A forged `Host` gains nothing: the provider
/// sends codes only to the redirect URIs registered for the client.
fn callback_url(headers: &HeaderMap) -> Result<String, PageError> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or_default();
    let plain = |b: u8| b.is_ascii_alphanumeric() || b".-:[]".contains(&b);
    if host.is_empty() || !host.bytes().all(plain) {
        return Err(PageError::invalid(
            "the request names no usable Host: set console.oidc.redirect_url",
        ));
    }
    let scheme = if session::over_tls(headers) { "https" } else { "http" };
    Ok(format!("{scheme}://{host}/console/oidc/callback"))
}

#[derive(Deserialize)]
pub(crate) struct CallbackQuery {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
    /// RFC 9207: the issuer, when the provider names it.
    #[serde(default)]
    iss: Option<String>,
}

/// `GET /console/oidc/callback`: back from the provider.
pub(crate) async fn callback(
    State(state): State<Arc<AppState>>,
    peer: Option<axum::Extension<Peer>>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let from = client_address(peer);
    let outcome = finish(&state, from, &headers, q).await;
    // The sign-in under way is spent, whatever happened.
    let secure = if session::over_tls(&headers) { "; Secure" } else { "" };
    let clear =
        format!("{PENDING_COOKIE}=; Path=/console/oidc; HttpOnly; SameSite=Lax; Max-Age=0{secure}");
    let mut response = match outcome {
        Ok(response) => response,
        Err(Refused::Limited(wait)) => too_many(wait),
        Err(Refused::Page(e)) => e.into_response(),
        Err(Refused::Failed(e)) => {
            state.sign_ins.failed(from);
            e.into_response()
        }
    };
    if let Ok(v) = HeaderValue::from_str(&clear) {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

enum Refused {
    /// Too many failures from this address lately.
    Limited(Duration),
    /// Not the sign-in's fault (the database, the provider unreachable).
    Page(PageError),
    /// A failed sign-in: counted against the address.
    Failed(PageError),
}

impl From<PageError> for Refused {
    fn from(e: PageError) -> Self {
        Refused::Page(e)
    }
}

fn failed(address: IpAddr, why: &str, shown: &str) -> Refused {
    tracing::info!(address = %address, reason = why, "console: a sign-in through the identity provider was refused");
    Refused::Failed(PageError::forbidden(shown))
}

fn unreachable(e: Unreachable) -> PageError {
    tracing::warn!(error = %e.0, "console: the identity provider could not be used");
    PageError::unavailable(format!("the identity provider could not be used: {}", e.0))
}

async fn finish(
    state: &AppState,
    from: IpAddr,
    headers: &HeaderMap,
    q: CallbackQuery,
) -> Result<Response, Refused> {
    let store = super::store(state)?.clone();
    let spec = configured(state)?;
    state.sign_ins.check(from).map_err(Refused::Limited)?;
    let again = "This sign-in has expired, was already used, or was started in another browser: sign in again.";
    let pending = pending_cookie(headers);
    let login = match pending {
        Some(token) => store.take_oidc_login(&token).await.map_err(PageError::from)?,
        None => None,
    };
    let Some(login) = login else {
        return Err(failed(from, "no sign-in under way for this browser", again));
    };
    let sent = q.state.as_deref().unwrap_or_default();
    let same: bool = subtle::ConstantTimeEq::ct_eq(sent.as_bytes(), login.state.as_bytes()).into();
    if !same {
        return Err(failed(from, "state mismatch", again));
    }
    if let Some(error) = &q.error {
        // An OAuth error code is a short token; anything else is not shown.
        let code: String =
            error.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(60).collect();
        let shown = format!("The identity provider did not sign you in ({code}).");
        return Err(failed(from, "the provider answered an error", &shown));
    }
    let Some(code) = q.code.as_deref().filter(|c| !c.is_empty()) else {
        return Err(failed(from, "no code", "The identity provider sent no authorization code."));
    };
    let discovery = state.oidc.discovery(&spec).await.map_err(unreachable)?;
    if let Some(iss) = &q.iss
        && iss != &discovery.issuer
    {
        return Err(failed(
            from,
            "iss mismatch",
            "The answer came from another identity provider.",
        ));
    }
    let id_token = exchange(state, &spec, &discovery, code, &login, from).await?;
    let now_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let expect = Expect {
        issuer: &discovery.issuer,
        client_id: &spec.client_id,
        nonce: &login.nonce,
        now_s: i64::try_from(now_s).unwrap_or(i64::MAX),
    };
    let keys = state.oidc.jwks(&discovery, false).await.map_err(unreachable)?;
    let claims = match oidc_token::verify(&id_token, &keys, &expect) {
        Err(TokenError::UnknownKey) => {
            let keys = state.oidc.jwks(&discovery, true).await.map_err(unreachable)?;
            oidc_token::verify(&id_token, &keys, &expect)
        }
        other => other,
    };
    let claims = match claims {
        Ok(claims) => claims,
        Err(TokenError::UnknownKey) => {
            let why = "no key the provider publishes fits the ID token";
            return Err(failed(from, why, &format!("The ID token was refused: {why}.")));
        }
        Err(TokenError::Invalid(why)) => {
            return Err(failed(from, &why, &format!("The ID token was refused: {why}.")));
        }
    };
    let subject = claims.get("sub").and_then(Value::as_str).unwrap_or_default().to_owned();
    let name = oidc_token::display_name(&claims);
    let groups = oidc_token::groups(&claims, &spec.group_claim);
    let Some(role) = oidc_token::role(&groups, &spec) else {
        let who = name.as_deref().unwrap_or(&subject);
        tracing::info!(address = %from, subject = %subject, "console: signed in at the identity provider but in no console group");
        return Err(Refused::Failed(PageError::forbidden(format!(
            "{who} signed in at {}, but is in none of the groups allowed to use the console \
             ({} in the {:?} claim). An administrator can add you to one.",
            spec.display_name, "admin_groups or viewer_groups", spec.group_claim
        ))));
    };
    state.sign_ins.succeeded(from);
    let ttl_ms = i64::try_from(SESSION_TTL.as_millis()).unwrap_or(i64::MAX);
    let (opened, token) = store
        .create_session(NewSession {
            method: SignIn::Oidc,
            key_hash: None,
            subject: subject.clone(),
            name,
            role,
            address: Some(from.to_string()),
            user_agent: headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .map(|s| s.chars().take(200).collect()),
            ttl_ms,
        })
        .await
        .map_err(PageError::from)?;
    tracing::info!(subject = %subject, role = role.as_str(), session = %&opened.id[..12], "console: signed in through the identity provider");
    let cookie = session::set_cookie(headers, &token, ttl_ms / 1000);
    // A page, not a redirect: the browser arrived here from the provider's
    // site, and a redirect continues that cross-site navigation, on which the
    // new SameSite=Strict session cookie would not be sent. The page's own
    // navigation is same-site, so the console sees the session.
    let next = safe_back(&login.next);
    let mut response = render(&Continue { next });
    response.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(response)
}

#[derive(Template)]
#[template(path = "console/oidc_continue.html")]
struct Continue<'a> {
    next: &'a str,
}

/// The code for an ID token at the token endpoint.
async fn exchange(
    state: &AppState,
    spec: &OidcSpec,
    discovery: &Discovery,
    code: &str,
    login: &switchyard_store::db::OidcLogin,
    from: IpAddr,
) -> Result<String, Refused> {
    let mut params = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", login.redirect_uri.as_str()),
        ("code_verifier", login.code_verifier.as_str()),
    ];
    let client = state.oidc.client().map_err(unreachable)?;
    let mut request = client
        .post(&discovery.token_endpoint)
        .header(header::ACCEPT, "application/json")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    match &spec.client_secret {
        None => params.push(("client_id", spec.client_id.as_str())),
        Some(secret) => {
            let methods = discovery.token_endpoint_auth_methods_supported.as_deref();
            let supports = |m: &str| methods.is_none_or(|l| l.iter().any(|s| s == m));
            if methods.is_none() || supports("client_secret_basic") {
                // RFC 6749 §2.3.1: each part form-encoded before Basic.
                let pair =
                    format!("{}:{}", form_escape(&spec.client_id), form_escape(secret.expose()));
                let basic = base64::engine::general_purpose::STANDARD.encode(pair);
                request = request.header(header::AUTHORIZATION, format!("Basic {basic}"));
            } else if supports("client_secret_post") {
                params.push(("client_id", spec.client_id.as_str()));
                params.push(("client_secret", secret.expose()));
            } else {
                return Err(unreachable(Unreachable(
                    "the token endpoint takes neither client_secret_basic nor client_secret_post"
                        .into(),
                ))
                .into());
            }
        }
    }
    let (status, body) =
        read(request.body(form(&params)), "the token endpoint").await.map_err(unreachable)?;
    let answer: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if status != 200 {
        // The error code only (RFC 6749 §5.2): a description is the provider's
        // free text and stays out of pages.
        let code: String = answer
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no error code")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ' ')
            .take(60)
            .collect();
        let why = format!("the token endpoint answered {status} ({code})");
        return Err(failed(
            from,
            &why,
            &format!("The identity provider refused the sign-in: {why}."),
        ));
    }
    match answer.get("id_token").and_then(Value::as_str) {
        Some(t) => Ok(t.to_owned()),
        None => Err(failed(
            from,
            "no id_token",
            "The identity provider returned no ID token (is `openid` among the scopes?).",
        )),
    }
}

/// The pending sign-in's cookie value.
fn pending_cookie(headers: &HeaderMap) -> Option<String> {
    session::cookie_named(headers, PENDING_COOKIE)
}

/// `application/x-www-form-urlencoded`, as a query string or a body.
fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", form_escape(k), form_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn form_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'*') {
            out.push(char::from(b));
        } else if b == b' ' {
            out.push('+');
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_encoded_as_browsers_encode_them() {
        assert_eq!(form(&[("a b", "x/y?z=1&w"), ("k", "é")]), "a+b=x%2Fy%3Fz%3D1%26w&k=%C3%A9");
    }

    #[test]
    fn the_callback_url_is_this_host_s() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("gw.example:8443"));
        assert_eq!(callback_url(&h).unwrap(), "http://gw.example:8443/console/oidc/callback");
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert_eq!(callback_url(&h).unwrap(), "https://gw.example:8443/console/oidc/callback");
        h.insert(header::HOST, HeaderValue::from_static("evil/x?"));
        assert!(callback_url(&h).is_err());
    }
}
