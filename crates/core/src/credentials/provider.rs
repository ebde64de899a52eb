//! A provider's cloud credential, as its configuration (`credentials.aws`,
//! `credentials.google`, `credentials.azure`) builds it: what signs or
//! authorizes each request to a wire whose [`Auth`] is [`Auth::SigV4`],
//! [`Auth::OAuthToken`] or [`Auth::Entra`].
//!
//! Built when the configuration is compiled, where a file, profile or variable
//! that cannot work refuses it, naming the file and field; held by the compiled
//! provider, so a reload builds it again (a rotated service-account file takes
//! effect) and its first request after one fetches a fresh token. Each attempt
//! asks it for the request's headers; a token endpoint or metadata service
//! that fails fails the attempt as the provider being unavailable.

use std::fmt;

use switchyard_protocol::Auth;

use super::aws::{AwsAuth, AwsChain, AwsCredentials};
use super::azure::{AzureAuth, AzureCredentials};
use super::google::{GoogleAuth, GoogleCredentials};
use super::{Clock, CredentialError, Env, Http};
use crate::client::ClientOptions;
use crate::util::Secret;

/// The environment variables the credential sources read, captured when a
/// configuration is compiled (through the compiler's own lookup, which tests
/// replace).
const VARIABLES: &[&str] = &[
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL_STS",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_DISABLED",
    "AWS_BEARER_TOKEN_BEDROCK",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GCE_METADATA_HOST",
    "CLOUDSDK_CONFIG",
    "APPDATA",
    "HOME",
    "USERPROFILE",
];

impl Env {
    /// The variables the credential sources read, and the `named` ones (a
    /// configuration's own, such as `service_account_env`'s), as `lookup`
    /// gives them now.
    pub fn capture(lookup: &dyn Fn(&str) -> Option<String>, named: &[&str]) -> Self {
        let names = VARIABLES.iter().chain(named);
        Env::from_pairs(names.filter_map(|&name| lookup(name).map(|v| (name, v))))
    }
}

/// Where a provider's cloud credential comes from, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloudSource {
    /// AWS: the SDKs' default chain (`AWS_BEARER_TOKEN_BEDROCK` first, as they
    /// take it for Bedrock), the keys of a profile of the shared files, or keys
    /// given in the configuration.
    Aws(AwsSource),
    /// Google: a credential JSON file (service account or user), the JSON in
    /// an environment variable, or Application Default Credentials.
    Google(GoogleSource),
    /// Microsoft Entra ID: an app's client secret, or a managed identity.
    Azure(AzureSource),
}

impl CloudSource {
    /// The configuration's field for it (`credentials.aws`).
    fn field(&self) -> &'static str {
        match self {
            CloudSource::Aws(_) => "credentials.aws",
            CloudSource::Google(_) => "credentials.google",
            CloudSource::Azure(_) => "credentials.azure",
        }
    }
}

/// Where Microsoft Entra ID tokens come from ([`CloudSource::Azure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AzureSource {
    /// An app registration's client secret.
    ClientSecret {
        /// The tenant.
        tenant_id: String,
        /// The app's client ID.
        client_id: String,
        /// Its secret.
        client_secret: Secret,
        /// The authority, where not Azure's public cloud's.
        authority_host: Option<String>,
        /// The scope, where not Cognitive Services'.
        scope: Option<String>,
    },
    /// The machine's managed identity (`client_id`: a user-assigned one).
    ManagedIdentity {
        /// A user-assigned identity's client ID.
        client_id: Option<String>,
        /// The scope, where not Cognitive Services'.
        scope: Option<String>,
    },
}

/// Where AWS credentials are read from ([`CloudSource::Aws`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AwsSource {
    /// The default chain.
    DefaultChain,
    /// A profile of the shared files.
    Profile(String),
    /// Keys given in the configuration.
    Keys(AwsCredentials),
}

/// Where Google credentials are read from ([`CloudSource::Google`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoogleSource {
    /// A credential JSON file (resolved against the configuration's folder).
    File(std::path::PathBuf),
    /// An environment variable holding the JSON.
    Env(String),
    /// Application Default Credentials.
    ApplicationDefault,
}

/// A provider's built cloud credential. Cheap to clone (clones share caches).
#[derive(Clone)]
pub enum CloudAuth {
    /// AWS: SigV4 with a credential chain, or a Bedrock API key.
    Aws {
        /// The credentials.
        auth: AwsAuth,
        /// The service signed for (`bedrock`).
        service: &'static str,
        /// The region: the provider's, else the chain's, else the
        /// environment's (`AWS_REGION`, `AWS_DEFAULT_REGION`).
        region: Option<String>,
    },
    /// A Google OAuth access token, as a bearer token.
    Google(GoogleAuth),
    /// A Microsoft Entra ID access token, as a bearer token.
    Azure(AzureAuth),
}

impl fmt::Debug for CloudAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl CloudAuth {
    /// The credential for a wire authenticated by `auth`, from `source`, its
    /// HTTP shaped by `client`. `region`: the provider's (AWS: else the
    /// chain's). Reads files and variables, fetches nothing. Refused
    /// ([`CredentialError::Config`]) when the source does not fit the wire or
    /// cannot work; the message names the file, variable or profile and the
    /// field.
    pub fn build(
        auth: Auth,
        source: &CloudSource,
        region: Option<&str>,
        env: &Env,
        client: &ClientOptions,
    ) -> Result<Self, CredentialError> {
        let http = Http::new(client)?;
        let clock = Clock::system();
        match (auth, source) {
            (Auth::SigV4 { service }, CloudSource::Aws(aws)) => {
                aws_auth(service, aws, region, env, http, clock)
            }
            (Auth::OAuthToken, CloudSource::Google(google)) => {
                let credentials = match google {
                    GoogleSource::File(path) => GoogleCredentials::from_file(path)?,
                    GoogleSource::Env(var) => GoogleCredentials::from_env_json(env, var)?,
                    GoogleSource::ApplicationDefault => {
                        GoogleCredentials::application_default(env)?
                    }
                };
                Ok(CloudAuth::Google(GoogleAuth::new(credentials, http, clock)))
            }
            (Auth::Entra { .. }, CloudSource::Azure(azure)) => {
                let credentials = match azure {
                    AzureSource::ClientSecret {
                        tenant_id,
                        client_id,
                        client_secret,
                        authority_host,
                        scope,
                    } => AzureCredentials::client_secret(
                        tenant_id,
                        client_id,
                        client_secret.clone(),
                        authority_host.as_deref(),
                        scope.as_deref(),
                    )?,
                    AzureSource::ManagedIdentity { client_id, scope } => {
                        AzureCredentials::managed_identity(
                            client_id.as_deref(),
                            scope.as_deref(),
                            env,
                        )?
                    }
                };
                Ok(CloudAuth::Azure(AzureAuth::new(credentials, http, clock)))
            }
            (auth, source) => Err(CredentialError::config(
                source.field(),
                match auth {
                    Auth::SigV4 { .. } => "the wire is signed with AWS SigV4: use credentials.aws",
                    Auth::OAuthToken => {
                        "the wire takes a Google access token: use credentials.google"
                    }
                    Auth::Entra { .. } => {
                        "the wire takes a Microsoft Entra token: use credentials.azure (or a \
                         key: credentials.env or credentials.keys)"
                    }
                    Auth::Bearer | Auth::Header(_) | Auth::Prefixed { .. } => {
                        "the wire takes an API key: use credentials.env or credentials.keys"
                    }
                },
            )),
        }
    }

    /// The region its requests go to (AWS), when one is known.
    pub fn region(&self) -> Option<&str> {
        match self {
            CloudAuth::Aws { region, .. } => region.as_deref(),
            CloudAuth::Google(_) | CloudAuth::Azure(_) => None,
        }
    }

    /// The project of a Google credential, when it says (a service account's).
    pub fn project_id(&self) -> Option<&str> {
        match self {
            CloudAuth::Google(auth) => auth.project_id(),
            CloudAuth::Aws { .. } | CloudAuth::Azure(_) => None,
        }
    }

    /// The secrets known when it is built (a Bedrock API key, static AWS keys'
    /// secret and session token, an Entra app's client secret), which the
    /// gateway scrubs from whatever an
    /// upstream sends back, as it does a provider's keys. Temporary
    /// credentials and tokens are fetched later and are not among them: each
    /// attempt scrubs those its request carried (`upstream::minted`).
    pub fn secrets(&self) -> Vec<Secret> {
        match self {
            CloudAuth::Aws { auth: AwsAuth::SigV4 { chain, .. }, .. } => chain.static_secrets(),
            CloudAuth::Aws { auth: AwsAuth::Bearer(token), .. } => vec![token.clone()],
            CloudAuth::Google(_) => Vec::new(),
            CloudAuth::Azure(auth) => auth.credentials().secrets(),
        }
    }

    /// What it is, for logs and pages: never a key or token.
    pub fn describe(&self) -> String {
        match self {
            CloudAuth::Aws { auth: AwsAuth::SigV4 { chain, region }, .. } => {
                format!("AWS SigV4 ({}, {region})", chain.origin())
            }
            CloudAuth::Aws { auth: AwsAuth::Bearer(_), .. } => {
                "a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)".to_owned()
            }
            CloudAuth::Google(auth) => match auth.credentials() {
                GoogleCredentials::ServiceAccount(sa) => {
                    format!("Google service account {}", sa.client_email())
                }
                GoogleCredentials::AuthorizedUser(_) => "Google user credentials".to_owned(),
                GoogleCredentials::Metadata(_) => "Google metadata server".to_owned(),
            },
            CloudAuth::Azure(auth) => auth.credentials().describe(),
        }
    }

    /// The headers that authenticate one request: `method` to the exact `url`
    /// with these `headers` (signed, for SigV4) over the exact `body`. Fails as
    /// a fetch ([`CredentialError::Fetch`]) when a token endpoint or metadata
    /// service does.
    pub async fn headers(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, CredentialError> {
        self.headers_for(None, method, url, headers, body).await
    }

    /// [`CloudAuth::headers`] for another of the cloud's services than the
    /// provider's own (`s3`, where a batch is staged); `None`: its own. A
    /// Google or Azure token is the same for every service.
    pub async fn headers_for(
        &self,
        other: Option<&str>,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<Vec<(String, String)>, CredentialError> {
        match self {
            CloudAuth::Aws { auth, service, .. } => {
                auth.headers(method, url, headers, body, other.unwrap_or(service)).await
            }
            CloudAuth::Google(auth) => {
                let token = auth.token().await?;
                Ok(vec![("authorization".to_owned(), format!("Bearer {}", token.token.expose()))])
            }
            CloudAuth::Azure(auth) => {
                let token = auth.token().await?;
                Ok(vec![("authorization".to_owned(), format!("Bearer {}", token.token.expose()))])
            }
        }
    }
}

/// AWS credentials from `source`, signing for `service` in `region` (else
/// the chain's, else the environment's).
fn aws_auth(
    service: &'static str,
    source: &AwsSource,
    region: Option<&str>,
    env: &Env,
    http: Http,
    clock: Clock,
) -> Result<CloudAuth, CredentialError> {
    let env_region = || env.get("AWS_REGION").or_else(|| env.get("AWS_DEFAULT_REGION"));
    let (chain, name) = match source {
        AwsSource::DefaultChain => {
            let auth = AwsAuth::from_env(env, http, clock, region)?;
            let region = match &auth {
                AwsAuth::SigV4 { region, .. } => Some(region.clone()),
                AwsAuth::Bearer(_) => region.map(str::to_owned).or_else(env_region),
            };
            return Ok(CloudAuth::Aws { auth, service, region });
        }
        AwsSource::Profile(name) => {
            (AwsChain::from_profile(env, name)?, format!("AWS profile {name:?}"))
        }
        AwsSource::Keys(keys) => {
            (AwsChain::from_static(keys.clone()).with_clock(clock), "credentials.aws".to_owned())
        }
    };
    let region = region
        .map(str::to_owned)
        .or_else(|| chain.region().map(str::to_owned))
        .or_else(env_region)
        .ok_or_else(|| {
            CredentialError::config(
                name,
                "no region: set the provider's `region`, AWS_REGION, or the profile's `region`",
            )
        })?;
    let auth = AwsAuth::SigV4 { chain, region: region.clone() };
    Ok(CloudAuth::Aws { auth, service, region: Some(region) })
}

#[cfg(test)]
#[path = "provider_tests.rs"]
mod tests;
