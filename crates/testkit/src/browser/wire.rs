//! One WebDriver command over HTTP, and the client that sends it.

use std::time::Duration;

use reqwest::Method;
use serde_json::Value;

use super::BrowserError;

/// One WebDriver call; answers the reply's `value`, or its error.
pub(super) async fn call(
    http: &reqwest::Client,
    method: Method,
    url: &str,
    body: Option<Value>,
) -> Result<Value, BrowserError> {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let transport = |e: reqwest::Error| BrowserError::new("http", format!("{url}: {e}"));
    let reply = request.send().await.map_err(transport)?;
    let status = reply.status();
    let bytes = reply.bytes().await.map_err(transport)?;
    let mut parsed: Value = serde_json::from_slice(&bytes).map_err(|e| {
        BrowserError::new(
            "http",
            format!("{url}: {status}, not JSON ({e}): {}", String::from_utf8_lossy(&bytes)),
        )
    })?;
    let value = parsed["value"].take();
    match value["error"].as_str() {
        Some(code) => Err(BrowserError::new(code, value["message"].as_str().unwrap_or_default())),
        None if !status.is_success() => {
            Err(BrowserError::new("http", format!("{url}: {status}: {value}")))
        }
        None => Ok(value),
    }
}

/// A client for chromedriver on loopback: no proxy, and TLS (never used) with
/// a provider of its own, as reqwest is built without a process-wide one.
pub(super) fn client(timeout: Duration) -> Result<reqwest::Client, BrowserError> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| BrowserError::setup(e.to_string()))?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| BrowserError::setup(e.to_string()))
}
