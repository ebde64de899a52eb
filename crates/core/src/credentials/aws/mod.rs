//! AWS credentials (Bedrock): the SDKs' default chain, a named profile or keys
//! given in configuration, SigV4 signing ([`sign`]), and Bedrock's API keys
//! ([`AwsAuth::Bearer`]).
//!
//! The default chain ([`AwsChain::default_chain`]) looks where the AWS SDK for
//! Rust does, in its order, and keeps the first source configured:
//!
//! 1. the environment: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!    `AWS_SESSION_TOKEN`;
//! 2. the shared files' profile (`AWS_PROFILE`, else `default`) when it holds
//!    keys (see [the file rules](#shared-files)); a profile `AWS_PROFILE`
//!    names that is in neither file is an error;
//! 3. web identity: `AWS_WEB_IDENTITY_TOKEN_FILE` and `AWS_ROLE_ARN` (and
//!    `AWS_ROLE_SESSION_NAME`), exchanged at STS (`AWS_ENDPOINT_URL_STS`, else
//!    the region's endpoint);
//! 4. the container endpoint: `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (on
//!    169.254.170.2) or `AWS_CONTAINER_CREDENTIALS_FULL_URI`, with
//!    `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or `_TOKEN`;
//! 5. EC2 instance metadata, IMDSv2 (`AWS_EC2_METADATA_SERVICE_ENDPOINT`, unless
//!    `AWS_EC2_METADATA_DISABLED=true`).
//!
//! Sources 3–5 give temporary credentials, cached in a
//! [`Refreshing`] and refreshed before they expire. Which
//! source applies is decided once, from the configuration; a source that is
//! configured but unusable (a key without its secret, a profile that assumes a
//! role) is an error, not a reason to fall through to the next.
//!
//! The AWS SDKs for other languages (Java, PHP, Kotlin) look at web identity
//! before the shared files; the order here is the Rust SDK's.
//!
//! # Shared files
//!
//! `AWS_SHARED_CREDENTIALS_FILE` (else `~/.aws/credentials`) and
//! `AWS_CONFIG_FILE` (else `~/.aws/config`). Profiles are `[name]` in the
//! credentials file and `[profile name]` in the config file (where the default
//! may also be `[default]`); the credentials file's values win. Read:
//! `aws_access_key_id`, `aws_secret_access_key`, `aws_session_token`, `region`.
//! A profile that assumes a role, runs a process or uses SSO is refused.
//!
//! The region: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's.

mod profile;
mod sign;
mod sources;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use sign::sign;

use super::{Clock, CredentialError, Env, Http, Refreshing};
use crate::clock::UnixMs;
use crate::util::Secret;
use sources::{Container, Imds, WebIdentity};

/// AWS credentials: an access key, and a session token and expiry when they are
/// temporary. `Debug` shows the access key ID (not a secret: it is sent in
/// every request's `Authorization`), never the secret or the token.
#[derive(Clone, PartialEq, Eq)]
pub struct AwsCredentials {
    /// `AKIA…` or (temporary) `ASIA…`.
    pub access_key_id: String,
    /// The secret key that signs.
    pub secret_access_key: Secret,
    /// Sent as `x-amz-security-token` with temporary credentials.
    pub session_token: Option<Secret>,
    /// When temporary credentials expire.
    pub expires_at: Option<UnixMs>,
}

impl AwsCredentials {
    /// Long-lived keys, or temporary ones with their session token.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<Secret>,
        session_token: Option<Secret>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token,
            expires_at: None,
        }
    }
}

impl fmt::Debug for AwsCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsCredentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &self.secret_access_key)
            .field("session_token", &self.session_token)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// Profile properties that need what this module does not do.
const UNSUPPORTED: &[&str] = &[
    "role_arn",
    "source_profile",
    "credential_source",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
    "login_session",
];

#[derive(Clone)]
enum Source {
    Static(AwsCredentials),
    Fetched(Refreshing<AwsCredentials>),
}

/// Where AWS credentials come from, chosen once: see the [module](self).
/// Cheap to clone: clones share the cache.
#[derive(Clone)]
pub struct AwsChain {
    source: Source,
    region: Option<String>,
    origin: String,
    clock: Clock,
}

impl fmt::Debug for AwsChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AwsChain")
            .field("origin", &self.origin)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl AwsChain {
    /// The default chain, in the Rust SDK's order (see the [module](self)).
    /// Reads files and variables; fetches nothing.
    pub fn default_chain(env: &Env, http: Http, clock: Clock) -> Result<Self, CredentialError> {
        let profile_name = profile::selected(env);
        // An unreadable file is an error only where it is needed: not when
        // the environment's keys come first.
        let shared = profile::load(env, &profile_name);
        let region = profile::region(env, shared.as_ref().ok().and_then(Option::as_ref));
        let chain = |source, origin: String| Self {
            source,
            region: region.clone(),
            origin,
            clock: clock.clone(),
        };

        if let Some(creds) = env_keys(env)? {
            return Ok(chain(Source::Static(creds), "environment variables".to_owned()));
        }
        match &shared? {
            Some(p) => {
                if let Some(creds) = profile_keys(p, &profile_name)? {
                    return Ok(chain(Source::Static(creds), p.describe(&profile_name)));
                }
            }
            // A profile named on purpose and not found is a mistake (a typo),
            // not a reason to go on to instance metadata.
            None if env.get("AWS_PROFILE").is_some() => {
                return Err(CredentialError::config(
                    format!("AWS profile {profile_name:?} (AWS_PROFILE)"),
                    "not found in the shared config or credentials file",
                ));
            }
            None => {}
        }
        if let Some(web) = WebIdentity::from_env(env, region.as_deref(), &clock)? {
            let origin = format!("web identity ({})", web.role_arn);
            let web = Arc::new(web);
            let source = fetched(&clock, http, move |http| {
                let web = Arc::clone(&web);
                async move { web.fetch(&http).await }
            });
            return Ok(chain(source, origin));
        }
        if let Some(container) = Container::from_env(env)? {
            let container = Arc::new(container);
            let source = fetched(&clock, http, move |http| {
                let container = Arc::clone(&container);
                async move { container.fetch(&http).await }
            });
            return Ok(chain(source, "container credentials".to_owned()));
        }
        if let Some(imds) = Imds::from_env(env) {
            let imds = Arc::new(imds);
            let source = fetched(&clock, http, move |http| {
                let imds = Arc::clone(&imds);
                async move { imds.fetch(&http).await }
            });
            return Ok(chain(source, "EC2 instance metadata".to_owned()));
        }
        Err(CredentialError::config(
            "AWS credentials",
            format!(
                "none found: no AWS_ACCESS_KEY_ID, no keys in profile {profile_name:?}, no web \
                 identity or container variables, and instance metadata is disabled"
            ),
        ))
    }

    /// Keys given in configuration.
    pub fn from_static(credentials: AwsCredentials) -> Self {
        Self {
            source: Source::Static(credentials),
            region: None,
            origin: "configuration".to_owned(),
            clock: Clock::system(),
        }
    }

    /// The keys of profile `name` in the shared files (the variables above
    /// name the files); the region from the environment, else the profile.
    pub fn from_profile(env: &Env, name: &str) -> Result<Self, CredentialError> {
        let missing = || {
            CredentialError::config(
                format!("AWS profile {name:?}"),
                "not found in the shared config or credentials file",
            )
        };
        let p = profile::load(env, name)?.ok_or_else(missing)?;
        let creds = profile_keys(&p, name)?.ok_or_else(|| {
            CredentialError::config(p.describe(name), "field `aws_access_key_id`: missing")
        })?;
        Ok(Self {
            source: Source::Static(creds),
            region: profile::region(env, Some(&p)),
            origin: p.describe(name),
            clock: Clock::system(),
        })
    }

    /// Sign at `clock`'s time (the system's unless set) — for static keys;
    /// a fetching source keeps the clock it was built with.
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sign in `region` whatever the environment says.
    #[must_use]
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Refresh temporary credentials this long before they expire (5 min
    /// unless set; half their lifetime when that is shorter).
    #[must_use]
    pub fn refresh_ahead(mut self, ahead: Duration) -> Self {
        if let Source::Fetched(r) = self.source {
            self.source = Source::Fetched(r.refresh_ahead(ahead));
        }
        self
    }

    /// Current credentials: the static ones, or temporary ones cached until
    /// shortly before they expire.
    pub async fn credentials(&self) -> Result<AwsCredentials, CredentialError> {
        match &self.source {
            Source::Static(c) => Ok(c.clone()),
            Source::Fetched(r) => r.get().await,
        }
    }

    /// The secrets of static credentials (the secret key, a session token),
    /// for redaction from whatever an upstream echoes; none for a fetching
    /// source, whose credentials are not known ahead.
    pub fn static_secrets(&self) -> Vec<Secret> {
        match &self.source {
            Source::Static(c) => std::iter::once(c.secret_access_key.clone())
                .chain(c.session_token.clone())
                .collect(),
            Source::Fetched(_) => Vec::new(),
        }
    }

    /// The region found with the credentials (variables, profile), if any.
    pub fn region(&self) -> Option<&str> {
        self.region.as_deref()
    }

    /// Which source the chain chose, for logs: `environment variables`,
    /// `AWS profile "x" (…)`, `web identity (arn)`, ….
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The time to sign at: the chain's clock.
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.clock.now().0)
    }
}

/// A source whose credentials are fetched with `fetch`, cached until they
/// expire.
fn fetched<F, Fut>(clock: &Clock, http: Http, fetch: F) -> Source
where
    F: Fn(Http) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AwsCredentials, CredentialError>> + Send + 'static,
{
    Source::Fetched(Refreshing::new(clock.clone(), move || {
        let got = fetch(http.clone());
        async move {
            let creds = got.await?;
            let expires_at = creds.expires_at.ok_or_else(|| {
                CredentialError::Fetch("temporary credentials came without an expiry".to_owned())
            })?;
            Ok((creds, expires_at))
        }
    }))
}

/// `AWS_ACCESS_KEY_ID` with `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`);
/// `None` when neither is set, an error when one is.
fn env_keys(env: &Env) -> Result<Option<AwsCredentials>, CredentialError> {
    match (env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")) {
        (None, None) => Ok(None),
        (Some(id), Some(secret)) => {
            Ok(Some(AwsCredentials::new(id, secret, env.get("AWS_SESSION_TOKEN").map(Secret::new))))
        }
        (Some(_), None) => Err(CredentialError::config(
            "environment variable AWS_SECRET_ACCESS_KEY",
            "not set, while AWS_ACCESS_KEY_ID is",
        )),
        (None, Some(_)) => Err(CredentialError::config(
            "environment variable AWS_ACCESS_KEY_ID",
            "not set, while AWS_SECRET_ACCESS_KEY is",
        )),
    }
}

/// A profile's static keys; `None` when it has none (a profile with only a
/// region); an error when it needs what is not supported, or has half a key.
fn profile_keys(
    p: &profile::Profile,
    name: &str,
) -> Result<Option<AwsCredentials>, CredentialError> {
    if let Some(key) = UNSUPPORTED.iter().find(|k| p.get(k).is_some()) {
        return Err(CredentialError::config(
            p.describe(name),
            format!(
                "field `{key}`: not supported here; give keys, or use the environment's credentials"
            ),
        ));
    }
    match (p.get("aws_access_key_id"), p.get("aws_secret_access_key")) {
        (None, None) => Ok(None),
        (Some(id), Some(secret)) => {
            Ok(Some(AwsCredentials::new(id, secret, p.get("aws_session_token").map(Secret::new))))
        }
        (Some(_), None) => {
            Err(CredentialError::config(p.describe(name), "field `aws_secret_access_key`: missing"))
        }
        (None, Some(_)) => {
            Err(CredentialError::config(p.describe(name), "field `aws_access_key_id`: missing"))
        }
    }
}

/// How Bedrock requests are authenticated: SigV4 with credentials from a
/// chain, or a Bedrock API key sent as a bearer token.
#[derive(Clone, Debug)]
pub enum AwsAuth {
    /// SigV4, with the chain's credentials, in `region`.
    SigV4 {
        /// Where the credentials come from.
        chain: AwsChain,
        /// The region signed for (and called).
        region: String,
    },
    /// A Bedrock API key: `Authorization: Bearer …`.
    Bearer(Secret),
}

impl AwsAuth {
    /// As the AWS SDKs set Bedrock up: `AWS_BEARER_TOKEN_BEDROCK` when set,
    /// else SigV4 with the default chain, in `region` if given, else the
    /// chain's (an error when there is none).
    pub fn from_env(
        env: &Env,
        http: Http,
        clock: Clock,
        region: Option<&str>,
    ) -> Result<Self, CredentialError> {
        if let Some(token) = env.get("AWS_BEARER_TOKEN_BEDROCK") {
            return Ok(AwsAuth::Bearer(Secret::new(token)));
        }
        let chain = AwsChain::default_chain(env, http, clock)?;
        let region = region.map(str::to_owned).or_else(|| chain.region().map(str::to_owned));
        let region = region.ok_or_else(|| {
            CredentialError::config(
                "AWS region",
                "none configured (the provider's region, AWS_REGION, or the profile's `region`)",
            )
        })?;
        Ok(AwsAuth::SigV4 { chain, region })
    }

    /// The headers that authenticate one request: `authorization` with the
    /// bearer token, or the SigV4 headers ([`sign`]) for `service` over the
    /// exact `body`, at the chain's clock.
    pub async fn headers(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        service: &str,
    ) -> Result<Vec<(String, String)>, CredentialError> {
        match self {
            AwsAuth::Bearer(token) => {
                Ok(vec![("authorization".to_owned(), format!("Bearer {}", token.expose()))])
            }
            AwsAuth::SigV4 { chain, region } => {
                let creds = chain.credentials().await?;
                sign(method, url, headers, body, &creds, region, service, chain.now())
            }
        }
    }
}

#[cfg(test)]
#[path = "chain_tests.rs"]
mod tests;
