//! How a provider's HTTP client is shaped ([`ClientOptions`]: extra trusted
//! roots, a client certificate for mTLS, a proxy, the connection pool), and the
//! TLS setup built from them.
//!
//! Every client gets its own crypto provider (ring) inside its own TLS config:
//! nothing is installed process-wide, so an application embedding the gateway
//! stays free to install its own default provider (aws-lc-rs, say) before or
//! after building a gateway.
//!
//! The options are plain data (PEM bytes, a URL, numbers) with nothing of the HTTP
//! client library in them, so the client underneath can change without changing
//! them. The file's `client:` block compiles into them
//! ([`crate::config::raw::ClientConfig`]); so does [`crate::embed::Provider::client`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Idle connections kept per upstream host unless configured.
pub const DEFAULT_POOL_MAX_IDLE_PER_HOST: usize = 256;

/// How long an idle upstream connection is kept unless configured.
pub const DEFAULT_POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How a provider's HTTP client is shaped. The default is what a provider gets
/// without a `client:` block: the platform's roots, no client certificate, the
/// environment's proxy variables (`HTTPS_PROXY`, `NO_PROXY`, …), 256 idle
/// connections per host kept for 90 s.
///
/// ```
/// use std::time::Duration;
/// use switchyard_core::client::{ClientIdentity, ClientOptions};
///
/// # let (ca, cert, key) = ("", "", "");
/// let options = ClientOptions::default()
///     .ca_pem(ca)
///     .identity(ClientIdentity::from_pem(cert, key))
///     .proxy("http://proxy.internal:3128")
///     .pool_max_idle_per_host(32)
///     .pool_idle_timeout(Duration::from_secs(30));
/// assert_eq!(options.pool_max_idle_per_host, 32);
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Extra root certificates (PEM, one or more), trusted besides the platform's:
    /// an internal CA, say. An `https` proxy is verified with them too.
    pub ca_pem: Option<Vec<u8>>,
    /// The certificate and key presented when the upstream asks for one (mTLS).
    pub identity: Option<ClientIdentity>,
    /// Every request goes through this proxy: `http://` or `https://`, with
    /// `user:password@` for Basic proxy authentication. `None`: the environment's
    /// proxy variables, as any client reads them.
    pub proxy: Option<String>,
    /// The most idle connections kept per upstream host (0 keeps none).
    pub pool_max_idle_per_host: usize,
    /// How long an idle connection is kept before it is closed.
    pub pool_idle_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            ca_pem: None,
            identity: None,
            proxy: None,
            pool_max_idle_per_host: DEFAULT_POOL_MAX_IDLE_PER_HOST,
            pool_idle_timeout: DEFAULT_POOL_IDLE_TIMEOUT,
        }
    }
}

impl ClientOptions {
    /// Trust these root certificates (PEM) besides the platform's.
    #[must_use]
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca_pem = Some(pem.into());
        self
    }

    /// Present this certificate when the upstream asks for one (mTLS).
    #[must_use]
    pub fn identity(mut self, identity: ClientIdentity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// Send every request through this proxy (`http://` or `https://`).
    #[must_use]
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.proxy = Some(url.into());
        self
    }

    /// The most idle connections kept per upstream host (0 keeps none).
    #[must_use]
    pub fn pool_max_idle_per_host(mut self, n: usize) -> Self {
        self.pool_max_idle_per_host = n;
        self
    }

    /// How long an idle connection is kept (more than zero).
    #[must_use]
    pub fn pool_idle_timeout(mut self, timeout: Duration) -> Self {
        self.pool_idle_timeout = timeout;
        self
    }
}

impl fmt::Debug for ClientOptions {
    // Certificates as their size; the proxy's password never.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("ca_pem", &self.ca_pem.as_ref().map(|p| format!("{} bytes", p.len())))
            .field("identity", &self.identity)
            .field("proxy", &self.proxy.as_deref().map(crate::util::redact_userinfo))
            .field("pool_max_idle_per_host", &self.pool_max_idle_per_host)
            .field("pool_idle_timeout", &self.pool_idle_timeout)
            .finish()
    }
}

/// A client certificate chain (leaf first) and its private key, both PEM. The
/// key never appears in `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    cert_chain_pem: Vec<u8>,
    key_pem: Vec<u8>,
}

impl ClientIdentity {
    /// From PEM: the certificate chain (leaf first) and the private key (PKCS#8,
    /// PKCS#1 or SEC1).
    pub fn from_pem(cert_chain: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        Self { cert_chain_pem: cert_chain.into(), key_pem: key.into() }
    }

    /// The certificate chain, PEM.
    pub fn cert_chain_pem(&self) -> &[u8] {
        &self.cert_chain_pem
    }

    /// The private key, PEM. Never log it.
    pub fn key_pem(&self) -> &[u8] {
        &self.key_pem
    }
}

impl fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientIdentity")
            .field("cert_chain_pem", &format!("{} bytes", self.cert_chain_pem.len()))
            .finish_non_exhaustive()
    }
}

/// The crypto provider of one client. Built per client rather than taken from,
/// or installed as, the process-wide default.
fn crypto() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Every certificate in `pem`, each checked as a trust anchor.
pub(crate) fn roots(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = certificates(pem)?;
    let mut store = rustls::RootCertStore::empty();
    for cert in &certs {
        store
            .add(cert.clone())
            .map_err(|e| format!("a certificate in it is not a usable root: {e}"))?;
    }
    Ok(certs)
}

/// Every certificate in `pem` (at least one).
pub(crate) fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM: {e}"))?;
    if certs.is_empty() {
        return Err("no CERTIFICATE block in it".to_owned());
    }
    Ok(certs)
}

/// What is wrong with a [`ClientIdentity`]: its certificate chain, or its key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IdentityError {
    Chain(String),
    Key(String),
}

impl fmt::Display for IdentityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdentityError::Chain(m) => write!(f, "client certificate: {m}"),
            IdentityError::Key(m) => write!(f, "client key: {m}"),
        }
    }
}

/// The chain and key of `identity`, checked as the handshake would use them: the
/// key loads with `crypto` and belongs to the leaf certificate.
fn identity_parts(
    identity: &ClientIdentity,
    crypto: &CryptoProvider,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), IdentityError> {
    let chain = certificates(&identity.cert_chain_pem).map_err(IdentityError::Chain)?;
    let key = PrivateKeyDer::from_pem_slice(&identity.key_pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => {
            IdentityError::Key("no PRIVATE KEY block in it".to_owned())
        }
        other => IdentityError::Key(format!("not PEM: {other}")),
    })?;
    let checked = rustls::sign::CertifiedKey::from_der(chain.clone(), key.clone_key(), crypto);
    match checked {
        Ok(_) => Ok((chain, key)),
        Err(rustls::Error::InconsistentKeys(_)) => Err(IdentityError::Key(
            "does not belong to the client certificate (the chain's first)".to_owned(),
        )),
        Err(rustls::Error::InvalidCertificate(e)) => Err(IdentityError::Chain(e.to_string())),
        Err(e) => Err(IdentityError::Key(e.to_string())),
    }
}

/// `identity` checked as [`tls_config`] will use it (for the compiler, which
/// reports a problem at the field's line rather than when the client is built).
pub(crate) fn check_identity(identity: &ClientIdentity) -> Result<(), IdentityError> {
    identity_parts(identity, &crypto()).map(|_| ())
}

/// A proxy URL the client can use: `http` or `https`, a host, an optional port
/// and userinfo, nothing after.
pub(crate) fn check_proxy(url: &str) -> Result<(), String> {
    let shown = crate::util::redact_userinfo(url);
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{shown:?} is not a URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("{shown:?}: the proxy must be http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("{shown:?} names no host"));
    }
    if !matches!(parsed.path(), "" | "/") || parsed.query().is_some() || parsed.fragment().is_some()
    {
        return Err(format!("{shown:?}: a proxy is scheme://[user:password@]host[:port] alone"));
    }
    Ok(())
}

/// The TLS setup of one provider's client: its own ring provider, the platform's
/// verifier (with `ca_pem`'s roots added), the identity when there is one, and
/// ALPN offering HTTP/2 then HTTP/1.1.
///
/// The client takes this config as it is (nothing is added to it), so ALPN is
/// set here: without it every TLS upstream would be spoken to in HTTP/1.1.
pub(crate) fn tls_config(options: &ClientOptions) -> Result<rustls::ClientConfig, String> {
    let crypto = crypto();
    let extra = match &options.ca_pem {
        Some(pem) => roots(pem).map_err(|e| format!("extra roots: {e}"))?,
        None => Vec::new(),
    };
    // The verifier the client library itself would use: the platform's trust
    // store (read now), plus the extra roots.
    let verifier = if extra.is_empty() {
        rustls_platform_verifier::Verifier::new(Arc::clone(&crypto))
    } else {
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, Arc::clone(&crypto))
    }
    .map_err(|e| format!("certificate verifier: {e}"))?;
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&crypto))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS versions: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut config = match &options.identity {
        Some(identity) => {
            let (chain, key) = identity_parts(identity, &crypto).map_err(|e| e.to_string())?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client identity: {e}"))?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// A client for the gateway's own calls to an HTTPS service that is not a
/// provider (the console's OpenID Connect provider): the TLS setup of
/// `tls_config` from `options` (the platform's roots, extra roots, proxy),
/// a connect deadline, and redirects not followed (a token endpoint that
/// redirects is not sent a code or a secret elsewhere).
pub fn service_client(
    options: &ClientOptions,
    connect_timeout: Duration,
) -> Result<reqwest::Client, String> {
    let tls = tls_config(options)?;
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .connect_timeout(connect_timeout)
        .pool_idle_timeout(options.pool_idle_timeout)
        .redirect(reqwest::redirect::Policy::none());
    if let Some(proxy) = &options.proxy {
        builder = builder.proxy(reqwest::Proxy::all(proxy.as_str()).map_err(|e| e.to_string())?);
    }
    builder.build().map_err(|e| e.to_string())
}

mod connect;
mod pool;
pub(crate) use connect::{ConnectError, chain};
pub(crate) use pool::{Body, ClientError, HttpClient, Response};

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
