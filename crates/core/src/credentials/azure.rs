//! Microsoft Entra ID access tokens (Azure OpenAI): an app registration's
//! client secret (OAuth2's client-credentials grant at
//! `{authority}/{tenant}/oauth2/v2.0/token`), or the managed identity of the
//! Azure machine the gateway runs on (the instance metadata service, IMDS).
//! Both ask for the Cognitive Services scope unless told another (a national
//! cloud's).
//!
//! A managed identity is what the configuration gets when it gives no client
//! secret, found where Azure's libraries look for it, in their order:
//! - App Service and Container Apps: their identity endpoint
//!   (`IDENTITY_ENDPOINT`, with `IDENTITY_HEADER` sent back as
//!   `X-IDENTITY-HEADER`);
//! - AKS workload identity: the service account token the cluster projects
//!   (`AZURE_FEDERATED_TOKEN_FILE`, re-read at each grant: it rotates),
//!   exchanged at Entra for the app `AZURE_CLIENT_ID` of `AZURE_TENANT_ID`
//!   (the client-credentials grant with a client assertion);
//! - a VM or scale set: the instance metadata service, IMDS (its
//!   `AZURE_POD_IDENTITY_AUTHORITY_HOST` override honoured).
//!
//! ```no_run
//! # async fn f() -> Result<(), switchyard_core::credentials::CredentialError> {
//! use switchyard_core::client::ClientOptions;
//! use switchyard_core::credentials::azure::{AzureAuth, AzureCredentials};
//! use switchyard_core::credentials::{Clock, Env, Http};
//! use switchyard_core::util::Secret;
//!
//! let http = Http::new(&ClientOptions::default())?;
//! let credentials = AzureCredentials::client_secret(
//!     "contoso.onmicrosoft.com",
//!     "00000000-0000-0000-0000-000000000001",
//!     Secret::new("from-a-variable"),
//!     None,
//!     None,
//! )?;
//! let auth = AzureAuth::new(credentials, http, Clock::system());
//! let token = auth.token().await?; // cached until 5 min before it expires
//! # let _ = token; Ok(()) }
//! ```

use std::fmt;

use super::google::{AccessToken, grant, token_answer};
use super::oauth::{OAuthTokens, TokenSource};
use super::{Call, Clock, CredentialError, Env, Http, form};
use crate::util::Secret;

/// The scope asked for unless configured: Azure OpenAI's (Cognitive Services).
pub const COGNITIVE_SERVICES_SCOPE: &str = "https://cognitiveservices.azure.com/.default";

/// Entra's authority in Azure's public cloud.
pub const DEFAULT_AUTHORITY_HOST: &str = "https://login.microsoftonline.com";

/// The instance metadata service unless `AZURE_POD_IDENTITY_AUTHORITY_HOST`
/// names another.
pub const DEFAULT_IMDS: &str = "http://169.254.169.254";

/// Where Entra access tokens come from.
pub enum AzureCredentials {
    /// An app registration's client secret: the client-credentials grant.
    ClientSecret {
        /// The tenant (a GUID or a domain).
        tenant_id: String,
        /// The app's client ID.
        client_id: String,
        /// Its secret.
        client_secret: Secret,
        /// `{authority}/{tenant}/oauth2/v2.0/token`.
        token_url: String,
        /// The scope asked for.
        scope: String,
    },
    /// The machine's managed identity, through IMDS or App Service's identity
    /// endpoint.
    ManagedIdentity {
        /// A user-assigned identity's client ID; `None`: the system-assigned one.
        client_id: Option<String>,
        /// The token URL, its query (`api-version`, `resource`, `client_id`) made.
        url: String,
        /// App Service's `X-IDENTITY-HEADER` (its `IDENTITY_HEADER`); `None`:
        /// IMDS, which takes `Metadata: true`.
        identity_header: Option<Secret>,
    },
    /// A Kubernetes workload identity: the cluster's token for the pod's
    /// service account, exchanged for an Entra token.
    WorkloadIdentity {
        /// The tenant (a GUID or a domain).
        tenant_id: String,
        /// The app's client ID.
        client_id: String,
        /// The file the cluster writes the service account token to.
        token_file: std::path::PathBuf,
        /// `{authority}/{tenant}/oauth2/v2.0/token`.
        token_url: String,
        /// The scope asked for.
        scope: String,
    },
}

impl fmt::Debug for AzureCredentials {
    // The secret never.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AzureCredentials::ClientSecret { tenant_id, client_id, token_url, scope, .. } => f
                .debug_struct("ClientSecret")
                .field("tenant_id", tenant_id)
                .field("client_id", client_id)
                .field("token_url", token_url)
                .field("scope", scope)
                .finish_non_exhaustive(),
            AzureCredentials::ManagedIdentity { client_id, url, .. } => f
                .debug_struct("ManagedIdentity")
                .field("client_id", client_id)
                .field("url", url)
                .finish_non_exhaustive(),
            AzureCredentials::WorkloadIdentity { tenant_id, client_id, token_file, .. } => f
                .debug_struct("WorkloadIdentity")
                .field("tenant_id", tenant_id)
                .field("client_id", client_id)
                .field("token_file", token_file)
                .finish_non_exhaustive(),
        }
    }
}

/// What a tenant ID, a client ID or a scope may hold: letters, digits and the
/// few marks GUIDs, domains and URLs need. Anything else would change the URL
/// it goes in.
fn plain(value: &str, extra: &[u8]) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

fn http_url(value: &str) -> bool {
    matches!(reqwest::Url::parse(value), Ok(u) if matches!(u.scheme(), "https" | "http"))
}

impl AzureCredentials {
    /// An app registration's client secret, in `tenant_id`, asking
    /// `authority_host` (else [`DEFAULT_AUTHORITY_HOST`]) for `scope` (else
    /// [`COGNITIVE_SERVICES_SCOPE`]). Refused, naming the field, when a value
    /// cannot work.
    pub fn client_secret(
        tenant_id: &str,
        client_id: &str,
        client_secret: Secret,
        authority_host: Option<&str>,
        scope: Option<&str>,
    ) -> Result<Self, CredentialError> {
        let bad = |field: &str, why: &str| {
            CredentialError::config("credentials.azure", format!("field `{field}`: {why}"))
        };
        if !plain(tenant_id, b"-.") {
            return Err(bad("tenant_id", "not a tenant ID or domain (letters, digits, `-`, `.`)"));
        }
        if !plain(client_id, b"-") {
            return Err(bad("client_id", "not a client ID (letters, digits, `-`)"));
        }
        if client_secret.expose().is_empty() {
            return Err(bad("client_secret", "empty"));
        }
        let authority = authority_host.unwrap_or(DEFAULT_AUTHORITY_HOST).trim_end_matches('/');
        if !http_url(authority) {
            return Err(bad("authority_host", "not an http(s) URL"));
        }
        let scope = scope.unwrap_or(COGNITIVE_SERVICES_SCOPE);
        if !http_url(scope) {
            return Err(bad("scope", "not a URL (`https://…/.default`)"));
        }
        Ok(AzureCredentials::ClientSecret {
            tenant_id: tenant_id.to_owned(),
            client_id: client_id.to_owned(),
            client_secret,
            token_url: format!("{authority}/{tenant_id}/oauth2/v2.0/token"),
            scope: scope.to_owned(),
        })
    }

    /// The managed identity of where the gateway runs (`client_id`: a
    /// user-assigned one, or the workload identity's app), for `scope`: App
    /// Service's identity endpoint when `IDENTITY_ENDPOINT` and
    /// `IDENTITY_HEADER` are set, a workload identity when
    /// `AZURE_FEDERATED_TOKEN_FILE` is, else IMDS at
    /// `AZURE_POD_IDENTITY_AUTHORITY_HOST` (else [`DEFAULT_IMDS`]). The
    /// identity endpoints take the scope's resource (without its `/.default`).
    pub fn managed_identity(
        client_id: Option<&str>,
        scope: Option<&str>,
        env: &Env,
    ) -> Result<Self, CredentialError> {
        let bad = |field: &str, why: &str| {
            CredentialError::config("credentials.azure", format!("field `{field}`: {why}"))
        };
        if let Some(id) = client_id
            && !plain(id, b"-")
        {
            return Err(bad("client_id", "not a client ID (letters, digits, `-`)"));
        }
        let scope = scope.unwrap_or(COGNITIVE_SERVICES_SCOPE);
        if !http_url(scope) {
            return Err(bad("scope", "not a URL (`https://…/.default`)"));
        }
        let resource = scope.strip_suffix("/.default").unwrap_or(scope);
        let bad_env = |name: &str, why: &str| {
            CredentialError::config(format!("environment variable {name}"), why)
        };
        if let (Some(endpoint), Some(header)) =
            (env.get("IDENTITY_ENDPOINT"), env.get("IDENTITY_HEADER"))
        {
            let mut url = reqwest::Url::parse(&endpoint)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https"))
                .ok_or_else(|| bad_env("IDENTITY_ENDPOINT", "not an http(s) URL"))?;
            {
                let mut query = url.query_pairs_mut();
                query.append_pair("api-version", "2019-08-01").append_pair("resource", resource);
                if let Some(id) = client_id {
                    query.append_pair("client_id", id);
                }
            }
            return Ok(AzureCredentials::ManagedIdentity {
                client_id: client_id.map(str::to_owned),
                url: url.to_string(),
                identity_header: Some(Secret::new(header)),
            });
        }
        if let Some(token_file) = env.get("AZURE_FEDERATED_TOKEN_FILE") {
            let tenant_id = env
                .get("AZURE_TENANT_ID")
                .filter(|t| plain(t, b"-."))
                .ok_or_else(|| bad_env("AZURE_TENANT_ID", "missing, or not a tenant ID"))?;
            let client_id = client_id
                .map(str::to_owned)
                .or_else(|| env.get("AZURE_CLIENT_ID"))
                .filter(|c| plain(c, b"-"))
                .ok_or_else(|| {
                    bad_env("AZURE_CLIENT_ID", "missing (and no client_id), or not a client ID")
                })?;
            let authority = env.get("AZURE_AUTHORITY_HOST");
            let authority =
                authority.as_deref().unwrap_or(DEFAULT_AUTHORITY_HOST).trim_end_matches('/');
            if !http_url(authority) {
                return Err(bad_env("AZURE_AUTHORITY_HOST", "not an http(s) URL"));
            }
            return Ok(AzureCredentials::WorkloadIdentity {
                token_url: format!("{authority}/{tenant_id}/oauth2/v2.0/token"),
                tenant_id,
                client_id,
                token_file: token_file.into(),
                scope: scope.to_owned(),
            });
        }
        let host = env.get("AZURE_POD_IDENTITY_AUTHORITY_HOST");
        let host = host.as_deref().unwrap_or(DEFAULT_IMDS).trim_end_matches('/');
        let mut url = reqwest::Url::parse(&format!("{host}/metadata/identity/oauth2/token"))
            .map_err(|_| {
                CredentialError::config(
                    "environment variable AZURE_POD_IDENTITY_AUTHORITY_HOST",
                    "not an http(s) URL",
                )
            })?;
        {
            let mut query = url.query_pairs_mut();
            query.append_pair("api-version", "2018-02-01").append_pair("resource", resource);
            if let Some(id) = client_id {
                query.append_pair("client_id", id);
            }
        }
        Ok(AzureCredentials::ManagedIdentity {
            client_id: client_id.map(str::to_owned),
            url: url.to_string(),
            identity_header: None,
        })
    }

    /// The secret known when it is built (a client secret), which the gateway
    /// scrubs from whatever an upstream sends back.
    pub fn secrets(&self) -> Vec<Secret> {
        match self {
            AzureCredentials::ClientSecret { client_secret, .. } => vec![client_secret.clone()],
            AzureCredentials::ManagedIdentity { identity_header, .. } => {
                identity_header.iter().cloned().collect()
            }
            AzureCredentials::WorkloadIdentity { .. } => Vec::new(),
        }
    }

    /// What it is, for logs and pages: never the secret.
    pub fn describe(&self) -> String {
        match self {
            AzureCredentials::ClientSecret { tenant_id, client_id, .. } => {
                format!("Microsoft Entra app {client_id} (tenant {tenant_id})")
            }
            AzureCredentials::ManagedIdentity { client_id: Some(id), .. } => {
                format!("Azure managed identity {id}")
            }
            AzureCredentials::ManagedIdentity { client_id: None, .. } => {
                "Azure managed identity (system-assigned)".to_owned()
            }
            AzureCredentials::WorkloadIdentity { tenant_id, client_id, .. } => {
                format!("Azure workload identity {client_id} (tenant {tenant_id})")
            }
        }
    }
}

impl TokenSource for AzureCredentials {
    async fn fetch(&self, http: &Http, clock: &Clock) -> Result<AccessToken, CredentialError> {
        match self {
            AzureCredentials::ClientSecret {
                client_id, client_secret, token_url, scope, ..
            } => {
                let body = form(&[
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id),
                    ("client_secret", client_secret.expose()),
                    ("scope", scope),
                ]);
                grant(
                    http,
                    token_url,
                    "Microsoft Entra token endpoint (client secret)",
                    body,
                    clock,
                )
                .await
            }
            AzureCredentials::ManagedIdentity { url, identity_header, .. } => {
                let (what, header) = match identity_header {
                    Some(secret) => (
                        "Azure identity endpoint (managed identity)",
                        ("x-identity-header", secret.expose().to_owned()),
                    ),
                    None => (
                        "Azure instance metadata service (managed identity)",
                        ("metadata", "true".to_owned()),
                    ),
                };
                let answer = http
                    .call(Call {
                        method: reqwest::Method::GET,
                        url,
                        headers: vec![header],
                        body: None,
                        metadata: true,
                        what,
                    })
                    .await?;
                token_answer(what, &answer, clock)
            }
            AzureCredentials::WorkloadIdentity {
                client_id, token_file, token_url, scope, ..
            } => {
                // Re-read each time: the cluster rotates it.
                let assertion = tokio::fs::read_to_string(token_file).await.map_err(|e| {
                    CredentialError::Fetch(format!(
                        "the workload identity's token file {}: {e}",
                        token_file.display()
                    ))
                })?;
                let body = form(&[
                    ("grant_type", "client_credentials"),
                    ("client_id", client_id),
                    ("scope", scope),
                    (
                        "client_assertion_type",
                        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                    ),
                    ("client_assertion", assertion.trim()),
                ]);
                let what = "Microsoft Entra token endpoint (workload identity)";
                grant(http, token_url, what, body, clock).await
            }
        }
    }
}

/// Entra access tokens from one [`AzureCredentials`], cached and refreshed
/// ahead of expiry ([`OAuthTokens`]).
pub type AzureAuth = OAuthTokens<AzureCredentials>;

#[cfg(test)]
#[path = "azure_tests.rs"]
mod tests;
