//! Credentials for cloud providers: Google OAuth access tokens (Vertex AI),
//! AWS credentials with SigV4 signing (Bedrock), and Microsoft Entra ID access
//! tokens (Azure OpenAI).
//!
//! A provider that needs a credential builds its source when its configuration
//! is compiled ([`CloudAuth::build`], from `credentials.aws`,
//! `credentials.google` or `credentials.azure`), where an unusable configuration is refused
//! ([`CredentialError::Config`]); each attempt then asks it for the request's
//! headers, which fails as the provider being unavailable when a token
//! endpoint or metadata service does ([`CredentialError::Fetch`]).
//!
//! Expiring credentials are cached in a [`Refreshing`]: served until shortly
//! before they expire, then refreshed once for all callers.
//!
//! The process environment is read through an [`Env`] and time through a
//! [`Clock`], both injectable: tests run several sources side by side, each with
//! its own variables and its own time. All HTTP goes through [`Http`], one small
//! function over the core's reqwest client.

pub mod aws;
pub mod azure;
pub mod google;
mod oauth;
mod provider;
mod refreshing;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::client::ClientOptions;
use crate::clock::UnixMs;

pub use oauth::{OAuthTokens, TokenSource};
pub use provider::{AwsSource, AzureSource, CloudAuth, CloudSource, GoogleSource};
pub use refreshing::{DEFAULT_REFRESH_AHEAD, Refreshing};

/// Why a credential could not be had. No variant's message ever contains a
/// token, key, signature or private key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// The configuration cannot work: a missing or malformed file, variable or
    /// field. Refused at start-up; the message names the field.
    #[error("{source_name}: {message}")]
    Config {
        /// What was read: a file's path, an environment variable, a profile.
        source_name: String,
        /// What is wrong with it, naming the field.
        message: String,
    },
    /// A token endpoint or metadata service failed, timed out or answered
    /// something unusable: the attempt fails as the provider being unavailable.
    #[error("{0}")]
    Fetch(String),
}

impl CredentialError {
    pub(crate) fn config(source_name: impl Into<String>, message: impl Into<String>) -> Self {
        CredentialError::Config { source_name: source_name.into(), message: message.into() }
    }
}

/// The wall clock credentials' expiries are compared with. [`Clock::system`]
/// unless a test drives time by hand ([`Clock::from_fn`]).
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> UnixMs + Send + Sync>);

impl Clock {
    /// The system's wall clock.
    pub fn system() -> Self {
        Clock(Arc::new(UnixMs::now))
    }

    /// A clock that reads `now`.
    pub fn from_fn(now: impl Fn() -> UnixMs + Send + Sync + 'static) -> Self {
        Clock(Arc::new(now))
    }

    /// The time now.
    pub fn now(&self) -> UnixMs {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}

/// Environment variables as the credential sources read them. An empty value
/// counts as unset, as the AWS and Google libraries treat it. [`Env::process`]
/// reads the process environment; tests give a map ([`Env::from_pairs`]) rather
/// than change the process's, which other tests running in parallel share.
#[derive(Clone)]
pub struct Env(Arc<Lookup>);

type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    /// The process environment.
    pub fn process() -> Self {
        Env(Arc::new(|name| std::env::var(name).ok()))
    }

    /// These variables and no others.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let map: HashMap<String, String> =
            pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        Env(Arc::new(move |name| map.get(name).cloned()))
    }

    /// Variables from `lookup`.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Env(Arc::new(lookup))
    }

    /// The variable's value; `None` when it is unset or empty.
    pub fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.is_empty())
    }

    /// The user's home directory: `HOME`, else (Windows) `USERPROFILE`.
    pub fn home(&self) -> Option<PathBuf> {
        self.get("HOME").or_else(|| self.get("USERPROFILE")).map(PathBuf::from)
    }
}

impl fmt::Debug for Env {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Env")
    }
}

/// The most bytes of an answer a credential endpoint may send.
const MAX_ANSWER: usize = 64 * 1024;

/// How the credential sources speak HTTP: two of the core's reqwest clients,
/// one for token endpoints (shaped by [`ClientOptions`]: roots, proxy) and one
/// for link-local metadata services (never through a proxy), and a deadline
/// for each request, answer included (10 s unless set). Every request any
/// source makes goes through one function of it (`Http::call`).
#[derive(Clone, Debug)]
pub struct Http {
    client: reqwest::Client,
    metadata: reqwest::Client,
    timeout: Duration,
}

/// [`Http`]'s deadline for one request unless set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// One request a source makes.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    pub method: reqwest::Method,
    pub url: &'a str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Option<Vec<u8>>,
    /// A link-local metadata service: sent without a proxy.
    pub metadata: bool,
    /// Names the endpoint in errors (the URL is not shown: it may carry a
    /// query a user did not mean to print).
    pub what: &'a str,
}

/// What came back: the status and the body, whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Http {
    /// Clients shaped by `options` (the metadata client ignores its proxy).
    pub fn new(options: &ClientOptions) -> Result<Self, CredentialError> {
        let client = build(options, false)?;
        let metadata = build(options, true)?;
        Ok(Self { client, metadata, timeout: DEFAULT_TIMEOUT })
    }

    /// Given clients: `client` for token endpoints, `metadata` for metadata
    /// services.
    pub fn from_clients(client: reqwest::Client, metadata: reqwest::Client) -> Self {
        Self { client, metadata, timeout: DEFAULT_TIMEOUT }
    }

    /// Each request's deadline, its answer included.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The deadline of each request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Send one request and read its answer (at most 64 KiB), within the
    /// deadline. Errors name `call.what`, never a header or the body.
    pub(crate) async fn call(&self, call: Call<'_>) -> Result<Answer, CredentialError> {
        let what = call.what;
        let client = if call.metadata { &self.metadata } else { &self.client };
        let mut request = client.request(call.method, call.url).timeout(self.timeout);
        for (name, value) in call.headers {
            request = request.header(name, value);
        }
        if let Some(body) = call.body {
            request = request.body(body);
        }
        let failed = |e: reqwest::Error| {
            let kind = if e.is_timeout() { "timed out" } else { "failed" };
            // The error and its causes (connection refused, …), without the URL.
            let e = e.without_url();
            let mut shown = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                shown.push_str(&format!(": {c}"));
                cause = c.source();
            }
            CredentialError::Fetch(format!("{what}: the request {kind}: {shown}"))
        };
        let mut response = request.send().await.map_err(failed)?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(failed)? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(CredentialError::Fetch(format!(
                    "{what}: the answer is over {MAX_ANSWER} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Answer { status, body: Bytes::from(body) })
    }
}

fn build(options: &ClientOptions, metadata: bool) -> Result<reqwest::Client, CredentialError> {
    let refused = |e: String| CredentialError::config("credentials HTTP client", e);
    let tls = crate::client::tls_config(options).map_err(refused)?;
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(DEFAULT_TIMEOUT)
        .pool_idle_timeout(options.pool_idle_timeout)
        // A token endpoint that redirects is not followed with a credential.
        .redirect(reqwest::redirect::Policy::none());
    if metadata {
        builder = builder.no_proxy();
    } else if let Some(proxy) = &options.proxy {
        let proxy = reqwest::Proxy::all(proxy.as_str()).map_err(|e| refused(e.to_string()))?;
        builder = builder.proxy(proxy);
    }
    builder.build().map_err(|e| refused(e.to_string()))
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(crate) fn form(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        form_escape(k, &mut out);
        out.push('=');
        form_escape(v, &mut out);
    }
    out.into_bytes()
}

fn form_escape(s: &str, out: &mut String) {
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
}

/// What an error answer says, for a [`CredentialError::Fetch`]: its status and
/// the service's error code and message (OAuth's JSON `error` and
/// `error_description`, or AWS's XML `Code` and `Message`), and nothing else
/// of the body, which might echo what was sent.
pub(crate) fn describe_error(what: &str, answer: &Answer) -> CredentialError {
    let text = String::from_utf8_lossy(&answer.body);
    let mut parts = Vec::new();
    if let Ok(serde_json::Value::Object(o)) = serde_json::from_str::<serde_json::Value>(&text) {
        for field in ["error", "error_description", "code", "message", "Code", "Message"] {
            if let Some(v) = o.get(field).and_then(serde_json::Value::as_str) {
                parts.push(crate::util::excerpt(v).into_owned());
            }
        }
    } else {
        for tag in ["Code", "Message"] {
            if let Some(v) = xml_tag(&text, tag) {
                parts.push(crate::util::excerpt(&v).into_owned());
            }
        }
    }
    let detail = if parts.is_empty() { String::new() } else { format!(": {}", parts.join(": ")) };
    CredentialError::Fetch(format!("{what}: HTTP {}{detail}", answer.status))
}

/// The text of the first `<tag>…</tag>` in `xml`, its five predefined entities
/// decoded: enough for the flat answers of STS (no XML library for that).
pub(crate) fn xml_tag(xml: &str, tag: &str) -> Option<String> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = xml.find(&open)? + open.len();
    let len = xml.get(start..)?.find(&close)?;
    let raw = xml.get(start..start + len)?.trim();
    Some(
        raw.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// An RFC 3339 time in UTC (`2024-05-01T12:00:00Z`, fractional seconds and a
/// `+00:00` offset allowed) as milliseconds since the epoch.
pub(crate) fn parse_utc(s: &str) -> Option<UnixMs> {
    let s = s.trim();
    let body = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00"))?;
    let (date, time) = body.split_once(['T', 't', ' '])?;
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (year, month, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, m, sec) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let millis = frac
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(3)
        .fold(0, |acc, b| acc * 10 + i64::from(b - b'0'));
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let ms = ((days * 86_400 + h * 3_600 + m * 60 + sec) * 1_000) + millis;
    u64::try_from(ms).ok().map(UnixMs)
}

#[cfg(test)]
#[path = "testing.rs"]
pub(crate) mod testing;

#[cfg(test)]
#[path = "mod_tests.rs"]
mod tests;
