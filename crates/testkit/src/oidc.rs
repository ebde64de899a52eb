//! A fake OpenID Connect provider, strict like a real one, for the console's
//! sign-in tests: discovery, an authorization endpoint (a login form where the
//! user is picked, or approval as a chosen user), a token endpoint and a JWKS,
//! under an issuer of `http://127.0.0.1:{port}/realms/test` (or `localhost`,
//! another site to a browser).
//!
//! What it refuses, as a provider does: an unknown client or a redirect URI not
//! registered exactly (an error page, no redirect); a `response_type` other
//! than `code`, no `openid` scope, no `state`, a PKCE challenge missing or not
//! S256 (back to the client with `error=`); at the token endpoint, a client that
//! does not authenticate as registered (`client_secret_basic`,
//! `client_secret_post`, or a public client), a code unknown, used before,
//! expired or issued to another client or redirect URI, and a PKCE verifier
//! whose S256 is not the challenge.
//!
//! ID tokens are signed with RS256 (the test key of `data/rsa-test.key`) or,
//! after [`FakeIdp::rotate_to_es256`], ES256 with a key made at that moment,
//! and carry the user's claims; a [`Fault`] spoils them one way each.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Where every route lives, as Keycloak's realms do (an issuer with a path).
pub const REALM_PATH: &str = "/realms/test";
/// How long a code may wait for its exchange.
const CODE_TTL: Duration = Duration::from_secs(60);

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// `Authorization: Basic` with the form-encoded id and secret.
    Basic,
    /// `client_id` and `client_secret` in the body.
    Post,
    /// A public client: `client_id` in the body, no secret (PKCE only).
    Public,
}

impl ClientAuth {
    fn method(self) -> &'static str {
        match self {
            ClientAuth::Basic => "client_secret_basic",
            ClientAuth::Post => "client_secret_post",
            ClientAuth::Public => "none",
        }
    }
}

/// The registered client and where the provider is reached.
#[derive(Debug, Clone)]
pub struct IdpConfig {
    pub client_id: String,
    /// Required unless `auth` is [`ClientAuth::Public`].
    pub client_secret: Option<String>,
    pub auth: ClientAuth,
    /// The issuer's host: `127.0.0.1`, or `localhost` (a different site from
    /// `127.0.0.1` to a browser, so that the redirects are cross-site as
    /// against a real provider).
    pub host: &'static str,
}

impl Default for IdpConfig {
    fn default() -> Self {
        Self {
            client_id: "switchyard-console".into(),
            client_secret: Some("idp-client-secret-4f1c9a7e".into()),
            auth: ClientAuth::Basic,
            host: "127.0.0.1",
        }
    }
}

/// A user the provider signs in.
#[derive(Debug, Clone)]
pub struct IdpUser {
    /// Their subject (`sub`) and login name.
    pub sub: String,
    pub email: String,
    pub name: String,
    pub groups: Vec<String>,
    /// More claims, or claims replaced (`groups` as one string, `azp`, …).
    pub extra: Map<String, Value>,
}

impl IdpUser {
    pub fn new(sub: &str, email: &str, groups: &[&str]) -> Self {
        Self {
            sub: sub.into(),
            email: email.into(),
            name: sub.into(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            extra: Map::new(),
        }
    }
}

/// One way an ID token is spoiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `aud` names another client.
    WrongAudience,
    /// `iss` is another issuer.
    WrongIssuer,
    /// `exp` an hour ago.
    Expired,
    /// `iat` an hour from now.
    IssuedInTheFuture,
    /// The signature is of other bytes.
    BadSignature,
    /// Signed by a key the JWKS does not publish, under a `kid` it does not know.
    UnknownKey,
    /// No `nonce`.
    MissingNonce,
    /// A `nonce`, not the one sent.
    WrongNonce,
    /// `alg: none`, no signature.
    Unsigned,
    /// Two audiences (this client's and another) and no `azp`.
    SeveralAudiencesNoAzp,
}

/// One code exchanged at the token endpoint (whether or not it succeeded).
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The challenge the authorization request carried.
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    /// The verifier the token request carried.
    pub code_verifier: Option<String>,
    /// How the client authenticated: `client_secret_basic`, `client_secret_post`, `none`.
    pub client_auth: &'static str,
    /// The status the token endpoint answered.
    pub status: u16,
    /// The whole body of the token request (form-encoded).
    pub body: String,
}

enum Signer {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
}

struct Key {
    kid: String,
    signer: Signer,
}

impl Key {
    fn alg(&self) -> &'static str {
        match self.signer {
            Signer::Rsa(_) => "RS256",
            Signer::Ec(_) => "ES256",
        }
    }

    fn jwk(&self) -> Value {
        match &self.signer {
            Signer::Rsa(k) => {
                let public: signature::RsaPublicKeyComponents<Vec<u8>> = k.public().into();
                json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid,
                       "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e)})
            }
            Signer::Ec(k) => {
                let point = k.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid,
                       "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
            }
        }
    }

    fn sign(&self, input: &[u8]) -> Vec<u8> {
        let rng = SystemRandom::new();
        match &self.signer {
            Signer::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                // Signing with a well-formed key and a fresh buffer cannot fail.
                let _ = k.sign(&signature::RSA_PKCS1_SHA256, &rng, input, &mut sig);
                sig
            }
            Signer::Ec(k) => k.sign(&rng, input).map(|s| s.as_ref().to_vec()).unwrap_or_default(),
        }
    }
}

struct Pending {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    method: String,
    nonce: Option<String>,
    sub: String,
    issued: Instant,
    used: bool,
}

struct Inner {
    config: IdpConfig,
    issuer: String,
    redirect_uris: Vec<String>,
    users: Vec<IdpUser>,
    approve_as: Option<String>,
    fault: Option<Fault>,
    key: Key,
    /// Published besides `key` (the one rotated away from).
    old_keys: Vec<Key>,
    /// Signs [`Fault::UnknownKey`]'s tokens: never published.
    stray: Key,
    codes: HashMap<String, Pending>,
    exchanges: Vec<Exchange>,
    discovery_reads: usize,
    jwks_reads: usize,
}

/// The fake provider; stops when dropped.
pub struct FakeIdp {
    issuer: String,
    inner: Arc<Mutex<Inner>>,
    stop: watch::Sender<()>,
}

impl Drop for FakeIdp {
    fn drop(&mut self) {
        let _ = self.stop.send(());
    }
}

/// The test key of `data/rsa-test.key`, as PKCS#8 DER.
fn rsa_key(kid: &str) -> std::io::Result<Key> {
    let pem = crate::vertex::PRIVATE_KEY_PEM;
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = STANDARD.decode(b64).map_err(std::io::Error::other)?;
    let pair = RsaKeyPair::from_pkcs8(&der).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(Key { kid: kid.into(), signer: Signer::Rsa(pair) })
}

fn ec_key(kid: &str) -> std::io::Result<Key> {
    let rng = SystemRandom::new();
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let doc = EcdsaKeyPair::generate_pkcs8(alg, &rng)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let pair = EcdsaKeyPair::from_pkcs8(alg, doc.as_ref(), &rng)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(Key { kid: kid.into(), signer: Signer::Ec(pair) })
}

fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    let _ = SystemRandom::new().fill(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

fn now_s() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl FakeIdp {
    /// Starts the provider on `127.0.0.1:0`.
    pub async fn start(config: IdpConfig) -> std::io::Result<FakeIdp> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let port = listener.local_addr()?.port();
        let issuer = format!("http://{}:{port}{REALM_PATH}", config.host);
        let inner = Arc::new(Mutex::new(Inner {
            config,
            issuer: issuer.clone(),
            redirect_uris: Vec::new(),
            users: Vec::new(),
            approve_as: None,
            fault: None,
            key: rsa_key("rsa-1")?,
            old_keys: Vec::new(),
            stray: ec_key("stray")?,
            codes: HashMap::new(),
            exchanges: Vec::new(),
            discovery_reads: 0,
            jwks_reads: 0,
        }));
        let app = Router::new()
            .route(&format!("{REALM_PATH}/.well-known/openid-configuration"), get(discovery))
            .route(&format!("{REALM_PATH}/authorize"), get(authorize).post(log_in))
            .route(&format!("{REALM_PATH}/token"), axum::routing::post(token))
            .route(&format!("{REALM_PATH}/jwks"), get(jwks))
            .with_state(Arc::clone(&inner));
        let (stop, mut stopped) = watch::channel(());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.changed().await;
                })
                .await;
        });
        Ok(FakeIdp { issuer, inner, stop })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The issuer (the base of every route).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// Registers a redirect URI (compared exactly).
    pub fn register_redirect_uri(&self, uri: &str) {
        self.lock().redirect_uris.push(uri.to_owned());
    }

    /// Adds a user (replacing one with the same `sub`).
    pub fn add_user(&self, user: IdpUser) {
        let mut inner = self.lock();
        inner.users.retain(|u| u.sub != user.sub);
        inner.users.push(user);
    }

    /// The authorization endpoint approves at once as this user (`None`: it
    /// shows its login form).
    pub fn approve_as(&self, sub: Option<&str>) {
        self.lock().approve_as = sub.map(str::to_owned);
    }

    /// Spoils every ID token from now on (`None`: good tokens again).
    pub fn set_fault(&self, fault: Option<Fault>) {
        self.lock().fault = fault;
    }

    /// Signs with a new ES256 key from now on, published beside the old one.
    pub fn rotate_to_es256(&self) -> std::io::Result<()> {
        let mut inner = self.lock();
        let n = inner.old_keys.len() + 2;
        let new = ec_key(&format!("ec-{n}"))?;
        let old = std::mem::replace(&mut inner.key, new);
        inner.old_keys.push(old);
        Ok(())
    }

    /// Every code exchange so far.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.lock().exchanges.clone()
    }

    /// How often discovery and the JWKS were read.
    pub fn reads(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.discovery_reads, inner.jwks_reads)
    }

    /// An ID token for `user`, as the token endpoint would sign it (with the
    /// current fault): for tests of a verifier alone.
    pub fn id_token(&self, user: &IdpUser, nonce: Option<&str>) -> String {
        let inner = self.lock();
        id_token(&inner, user, nonce)
    }

    /// The JWKS document.
    pub fn jwks_document(&self) -> Value {
        published(&self.lock())
    }
}

type Shared = Arc<Mutex<Inner>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

async fn discovery(State(s): State<Shared>) -> Json<Value> {
    let mut inner = lock(&s);
    inner.discovery_reads += 1;
    let i = &inner.issuer;
    let methods = match inner.config.auth {
        ClientAuth::Public => vec!["none"],
        other => vec![other.method()],
    };
    Json(json!({
        "issuer": i,
        "authorization_endpoint": format!("{i}/authorize"),
        "token_endpoint": format!("{i}/token"),
        "jwks_uri": format!("{i}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": methods,
        "scopes_supported": ["openid", "email", "profile", "groups"],
    }))
}

fn published(inner: &Inner) -> Value {
    let keys: Vec<Value> =
        std::iter::once(&inner.key).chain(&inner.old_keys).map(Key::jwk).collect();
    json!({ "keys": keys })
}

async fn jwks(State(s): State<Shared>) -> Json<Value> {
    let mut inner = lock(&s);
    inner.jwks_reads += 1;
    Json(published(&inner))
}

fn page(status: StatusCode, text: &str) -> Response {
    (status, Html(format!("<!doctype html><title>Fake IdP</title><h1>{}</h1>", escape(text))))
        .into_response()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// What the authorization endpoint makes of a request.
enum Verdict {
    Fine,
    /// A client or redirect URI it must not redirect to: an error page.
    Page(&'static str),
    /// An error sent back to the client (`error=`).
    Back(&'static str),
}

/// The authorization request's checks.
fn check_authorize(inner: &Inner, q: &HashMap<String, String>) -> Verdict {
    let get = |k: &str| q.get(k).map(String::as_str);
    if get("client_id") != Some(inner.config.client_id.as_str()) {
        return Verdict::Page("unknown client_id");
    }
    let Some(redirect) = get("redirect_uri") else { return Verdict::Page("no redirect_uri") };
    if !inner.redirect_uris.iter().any(|r| r == redirect) {
        return Verdict::Page("redirect_uri is not registered for this client");
    }
    if get("response_type") != Some("code") {
        return Verdict::Back("unsupported_response_type");
    }
    if !get("scope").unwrap_or_default().split(' ').any(|s| s == "openid") {
        return Verdict::Back("invalid_scope");
    }
    if get("state").is_none_or(str::is_empty) {
        return Verdict::Back("invalid_request");
    }
    let challenge = get("code_challenge").unwrap_or_default();
    if !(43..=128).contains(&challenge.len()) || get("code_challenge_method") != Some("S256") {
        return Verdict::Back("invalid_request");
    }
    Verdict::Fine
}

fn back_with(q: &HashMap<String, String>, params: &[(&str, &str)]) -> Response {
    let redirect = q.get("redirect_uri").map(String::as_str).unwrap_or_default();
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    if let Some(state) = q.get("state") {
        pairs.push(("state", state));
    }
    let query: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={}", encode(v))).collect();
    let joiner = if redirect.contains('?') { '&' } else { '?' };
    Redirect::to(&format!("{redirect}{joiner}{}", query.join("&"))).into_response()
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Issues a code for `sub` and sends the browser back with it.
fn approve(inner: &mut Inner, q: &HashMap<String, String>, sub: &str) -> Response {
    if !inner.users.iter().any(|u| u.sub == sub) {
        return page(StatusCode::UNAUTHORIZED, "no such user");
    }
    let code = random_hex(16);
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    inner.codes.insert(
        code.clone(),
        Pending {
            client_id: get("client_id"),
            redirect_uri: get("redirect_uri"),
            challenge: get("code_challenge"),
            method: get("code_challenge_method"),
            nonce: q.get("nonce").cloned(),
            sub: sub.to_owned(),
            issued: Instant::now(),
            used: false,
        },
    );
    back_with(q, &[("code", &code), ("iss", &inner.issuer.clone())])
}

/// `GET /authorize`: the checks, then approval or the login form.
async fn authorize(State(s): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s);
    match check_authorize(&inner, &q) {
        Verdict::Page(why) => return page(StatusCode::BAD_REQUEST, why),
        Verdict::Back(error) => return back_with(&q, &[("error", error)]),
        Verdict::Fine => {}
    }
    if let Some(sub) = inner.approve_as.clone() {
        return approve(&mut inner, &q, &sub);
    }
    let hidden: String = q
        .iter()
        .map(|(k, v)| {
            format!("<input type=\"hidden\" name=\"{}\" value=\"{}\">", escape(k), escape(v))
        })
        .collect();
    let options: String = inner
        .users
        .iter()
        .map(|u| format!("<option value=\"{0}\">{0}</option>", escape(&u.sub)))
        .collect();
    Html(format!(
        "<!doctype html><title>Fake IdP: sign in</title><h1>Fake IdP</h1>\
         <form method=\"post\" id=\"login\">{hidden}\
         <label>User <select name=\"login_user\" id=\"login_user\">{options}</select></label>\
         <button type=\"submit\" id=\"login_submit\">Sign in</button></form>"
    ))
    .into_response()
}

/// `POST /authorize`: the login form, answered.
async fn log_in(State(s): State<Shared>, Form(q): Form<HashMap<String, String>>) -> Response {
    let mut inner = lock(&s);
    match check_authorize(&inner, &q) {
        Verdict::Page(why) => return page(StatusCode::BAD_REQUEST, why),
        Verdict::Back(error) => return back_with(&q, &[("error", error)]),
        Verdict::Fine => {}
    }
    let sub = q.get("login_user").cloned().unwrap_or_default();
    approve(&mut inner, &q, &sub)
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (status, Json(json!({"error": error}))).into_response()
}

fn form_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'+', _) => out.push(b' '),
            (b'%', Some(b)) => {
                out.push(b);
                i += 2;
            }
            (b, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `POST /token`.
async fn token(State(s): State<Shared>, headers: HeaderMap, body: String) -> Response {
    let mut inner = lock(&s);
    let form: HashMap<String, String> = body
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (form_decode(k), form_decode(v)))
        .collect();
    let get = |k: &str| form.get(k).map(String::as_str);
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|pair| pair.split_once(':').map(|(i, s)| (form_decode(i), form_decode(s))));
    let client_auth = match (&basic, get("client_secret")) {
        (Some(_), _) => "client_secret_basic",
        (None, Some(_)) => "client_secret_post",
        (None, None) => "none",
    };
    let pending = get("code").and_then(|c| inner.codes.get(c));
    let mut exchange = Exchange {
        code_challenge: pending.map(|p| p.challenge.clone()),
        code_challenge_method: pending.map(|p| p.method.clone()),
        code_verifier: get("code_verifier").map(str::to_owned),
        client_auth,
        status: 200,
        body: body.clone(),
    };
    let answer = grant(&mut inner, &form, basic);
    exchange.status = answer.status().as_u16();
    inner.exchanges.push(exchange);
    answer
}

fn grant(
    inner: &mut Inner,
    form: &HashMap<String, String>,
    basic: Option<(String, String)>,
) -> Response {
    let get = |k: &str| form.get(k).map(String::as_str);
    let config = inner.config.clone();
    // The client, authenticated as registered and only so.
    let authenticated = match config.auth {
        ClientAuth::Basic => {
            get("client_secret").is_none()
                && basic.as_ref().is_some_and(|(id, secret)| {
                    *id == config.client_id && Some(secret) == config.client_secret.as_ref()
                })
        }
        ClientAuth::Post => {
            basic.is_none()
                && get("client_id") == Some(config.client_id.as_str())
                && get("client_secret") == config.client_secret.as_deref()
        }
        ClientAuth::Public => {
            basic.is_none()
                && get("client_secret").is_none()
                && get("client_id") == Some(config.client_id.as_str())
        }
    };
    if !authenticated {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    if get("grant_type") != Some("authorization_code") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    let Some(pending) = get("code").and_then(|c| inner.codes.get_mut(c)) else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    if pending.used || pending.issued.elapsed() > CODE_TTL {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    pending.used = true;
    if pending.client_id != config.client_id
        || get("redirect_uri") != Some(pending.redirect_uri.as_str())
    {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    // RFC 7636 §4.6: S256 only (plain refused at the authorization endpoint).
    let verifier = get("code_verifier").unwrap_or_default();
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    if !well_formed || pending.method != "S256" || computed != pending.challenge {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let sub = pending.sub.clone();
    let nonce = pending.nonce.clone();
    let Some(user) = inner.users.iter().find(|u| u.sub == sub).cloned() else {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_grant");
    };
    let id_token = id_token(inner, &user, nonce.as_deref());
    Json(json!({
        "access_token": random_hex(16),
        "token_type": "Bearer",
        "expires_in": 300,
        "id_token": id_token,
    }))
    .into_response()
}

fn id_token(inner: &Inner, user: &IdpUser, nonce: Option<&str>) -> String {
    let now = now_s();
    let mut claims = json!({
        "iss": inner.issuer,
        "sub": user.sub,
        "aud": inner.config.client_id,
        "exp": now + 300,
        "iat": now,
        "email": user.email,
        "email_verified": true,
        "name": user.name,
        "preferred_username": user.sub,
        "groups": user.groups,
    });
    if let Some(n) = nonce {
        claims["nonce"] = json!(n);
    }
    if let Value::Object(map) = &mut claims {
        map.extend(user.extra.clone());
    }
    let mut key = &inner.key;
    let mut alg = key.alg();
    match inner.fault {
        Some(Fault::WrongAudience) => claims["aud"] = json!("another-client"),
        Some(Fault::WrongIssuer) => claims["iss"] = json!("https://elsewhere.example/realms/test"),
        Some(Fault::Expired) => {
            claims["exp"] = json!(now - 3600);
            claims["iat"] = json!(now - 3900);
        }
        Some(Fault::IssuedInTheFuture) => claims["iat"] = json!(now + 3600),
        Some(Fault::MissingNonce) => {
            if let Value::Object(map) = &mut claims {
                map.remove("nonce");
            }
        }
        Some(Fault::WrongNonce) => claims["nonce"] = json!("not-the-nonce-sent"),
        Some(Fault::SeveralAudiencesNoAzp) => {
            claims["aud"] = json!([inner.config.client_id, "another-client"]);
        }
        Some(Fault::UnknownKey) => {
            key = &inner.stray;
            alg = key.alg();
        }
        Some(Fault::Unsigned) => alg = "none",
        Some(Fault::BadSignature) | None => {}
    }
    let header = json!({"alg": alg, "kid": key.kid, "typ": "JWT"});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let signature = match inner.fault {
        Some(Fault::Unsigned) => Vec::new(),
        Some(Fault::BadSignature) => key.sign(b"other bytes"),
        _ => key.sign(input.as_bytes()),
    };
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
}
