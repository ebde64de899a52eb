//! Google OAuth2 access tokens (Vertex AI): from a service account's key (the
//! JWT bearer grant, RS256), from gcloud's user credentials (the refresh-token
//! grant), or from the GCE/GKE metadata server; and Application Default
//! Credentials, which picks one as Google's libraries do.
//!
//! ```no_run
//! # async fn f() -> Result<(), switchyard_core::credentials::CredentialError> {
//! use switchyard_core::client::ClientOptions;
//! use switchyard_core::credentials::google::GoogleAuth;
//! use switchyard_core::credentials::{Clock, Env, Http};
//!
//! let http = Http::new(&ClientOptions::default())?;
//! let auth = GoogleAuth::application_default(&Env::process(), http, Clock::system())?;
//! let token = auth.token().await?; // cached until 5 min before it expires
//! let header = format!("Bearer {}", token.token.expose());
//! # let _ = header; Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use rustls::pki_types::PrivateKeyDer;
use rustls::pki_types::pem::PemObject;
use serde_json::{Map, Value, json};

use super::oauth::{OAuthTokens, TokenSource};
use super::{Call, Clock, CredentialError, Env, Http, describe_error, form};
use crate::clock::UnixMs;
use crate::util::Secret;

/// The scope asked for: every Google Cloud API the account may use.
pub const CLOUD_PLATFORM_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Google's token endpoint, where a credential file names none.
pub const DEFAULT_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";

/// The metadata server's host unless `GCE_METADATA_HOST` names another.
pub const DEFAULT_METADATA_HOST: &str = "metadata.google.internal";

/// How long a service account's JWT is valid: Google's maximum.
const JWT_LIFETIME_SECS: u64 = 3600;

/// An OAuth2 access token and when it expires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessToken {
    /// The token, for `Authorization: Bearer …`.
    pub token: Secret,
    /// When it stops being accepted.
    pub expires_at: UnixMs,
}

/// A service account's key file (`"type": "service_account"`).
pub struct ServiceAccount {
    client_email: String,
    private_key_id: Option<String>,
    token_uri: String,
    project_id: Option<String>,
    key: Arc<RsaKeyPair>,
}

impl fmt::Debug for ServiceAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccount")
            .field("client_email", &self.client_email)
            .field("private_key_id", &self.private_key_id)
            .field("token_uri", &self.token_uri)
            .field("project_id", &self.project_id)
            .finish_non_exhaustive()
    }
}

impl ServiceAccount {
    /// The account (`client_email`): the JWT's issuer.
    pub fn client_email(&self) -> &str {
        &self.client_email
    }

    /// Where tokens are asked for (`token_uri`).
    pub fn token_uri(&self) -> &str {
        &self.token_uri
    }

    /// The account's project (`project_id`), if the file names it.
    pub fn project_id(&self) -> Option<&str> {
        self.project_id.as_deref()
    }

    /// The signed JWT the grant presents, issued at `now` for an hour.
    pub fn assertion(&self, now: UnixMs) -> Result<Secret, CredentialError> {
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let mut header = json!({"alg": "RS256", "typ": "JWT"});
        if let (Some(kid), Some(h)) = (&self.private_key_id, header.as_object_mut()) {
            h.insert("kid".to_owned(), Value::from(kid.as_str()));
        }
        let iat = now.0 / 1000;
        let claims = json!({
            "iss": self.client_email,
            "scope": CLOUD_PLATFORM_SCOPE,
            "aud": self.token_uri,
            "iat": iat,
            "exp": iat + JWT_LIFETIME_SECS,
        });
        let input = format!("{}.{}", b64(&header), b64(&claims));
        let mut signature = vec![0; self.key.public().modulus_len()];
        let rng = ring::rand::SystemRandom::new();
        self.key.sign(&RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut signature).map_err(|_| {
            CredentialError::Fetch("signing the service account's JWT failed".into())
        })?;
        let signature = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(signature);
        Ok(Secret::new(format!("{input}.{signature}")))
    }
}

/// A user's credentials as `gcloud auth application-default login` writes them
/// (`"type": "authorized_user"`).
#[derive(Debug)]
pub struct AuthorizedUser {
    client_id: String,
    client_secret: Secret,
    refresh_token: Secret,
    token_uri: String,
}

/// The GCE/GKE metadata server: tokens for the instance's (or the pod's)
/// service account.
#[derive(Debug, Clone)]
pub struct MetadataServer {
    host: String,
}

impl MetadataServer {
    /// The server at `GCE_METADATA_HOST` (`host[:port]`), else
    /// `metadata.google.internal`.
    pub fn from_env(env: &Env) -> Self {
        Self::at(env.get("GCE_METADATA_HOST").as_deref().unwrap_or(DEFAULT_METADATA_HOST))
    }

    /// The server at `host` (`host[:port]`, plain HTTP, as every client speaks
    /// to it).
    pub fn at(host: &str) -> Self {
        Self { host: host.to_owned() }
    }

    fn token_url(&self) -> String {
        format!("http://{}/computeMetadata/v1/instance/service-accounts/default/token", self.host)
    }
}

/// Where Google access tokens come from.
#[derive(Debug)]
pub enum GoogleCredentials {
    /// A service account's key: the JWT bearer grant.
    ServiceAccount(ServiceAccount),
    /// A user's refresh token: the refresh-token grant.
    AuthorizedUser(AuthorizedUser),
    /// The metadata server of the machine the gateway runs on.
    Metadata(MetadataServer),
}

impl GoogleCredentials {
    /// A credential file's JSON (`service_account` or `authorized_user`);
    /// `source_name` names it in errors (a path, a variable).
    pub fn from_json(text: &str, source_name: &str) -> Result<Self, CredentialError> {
        let bad = |m: String| CredentialError::config(source_name, m);
        let object = match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err(bad("not a JSON object".to_owned())),
            Err(e) => return Err(bad(format!("not JSON: {e}"))),
        };
        let fields = Fields { object: &object, source_name };
        match fields.required("type")? {
            "service_account" => {
                let key = parse_key(fields.required("private_key")?)
                    .map_err(|m| bad(format!("field `private_key`: {m}")))?;
                Ok(GoogleCredentials::ServiceAccount(ServiceAccount {
                    client_email: fields.required("client_email")?.to_owned(),
                    private_key_id: fields.optional("private_key_id")?.map(str::to_owned),
                    token_uri: fields.token_uri()?,
                    project_id: fields.optional("project_id")?.map(str::to_owned),
                    key: Arc::new(key),
                }))
            }
            "authorized_user" => Ok(GoogleCredentials::AuthorizedUser(AuthorizedUser {
                client_id: fields.required("client_id")?.to_owned(),
                client_secret: Secret::new(fields.required("client_secret")?),
                refresh_token: Secret::new(fields.required("refresh_token")?),
                token_uri: fields.token_uri()?,
            })),
            other => Err(bad(format!(
                "field `type`: {:?} is not supported (service_account, authorized_user are)",
                crate::util::excerpt(other)
            ))),
        }
    }

    /// A credential file.
    pub fn from_file(path: &Path) -> Result<Self, CredentialError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| CredentialError::config(&name, format!("cannot read it: {e}")))?;
        Self::from_json(&text, &name)
    }

    /// A credential file's JSON held in the environment variable `var`.
    pub fn from_env_json(env: &Env, var: &str) -> Result<Self, CredentialError> {
        let name = format!("environment variable {var}");
        let text = env.get(var).ok_or_else(|| CredentialError::config(&name, "not set"))?;
        Self::from_json(&text, &name)
    }

    /// Application Default Credentials, in the order Google's libraries look:
    /// the file `GOOGLE_APPLICATION_CREDENTIALS` names (an error if it cannot
    /// be used); gcloud's well-known file
    /// (`$CLOUDSDK_CONFIG/application_default_credentials.json`, else
    /// `~/.config/gcloud/…`, `%APPDATA%\gcloud\…` on Windows) if it exists;
    /// else the metadata server (not probed here: off Google Cloud, the first
    /// token fails).
    pub fn application_default(env: &Env) -> Result<Self, CredentialError> {
        if let Some(path) = env.get("GOOGLE_APPLICATION_CREDENTIALS") {
            return Self::from_file(Path::new(&path)).map_err(|e| match e {
                CredentialError::Config { source_name, message } => CredentialError::Config {
                    source_name: format!("{source_name} (GOOGLE_APPLICATION_CREDENTIALS)"),
                    message,
                },
                other => other,
            });
        }
        if let Some(path) = well_known_file(env).filter(|p| p.is_file()) {
            return Self::from_file(&path);
        }
        Ok(GoogleCredentials::Metadata(MetadataServer::from_env(env)))
    }

    /// The project the credential belongs to, when it says (a service
    /// account's `project_id`).
    pub fn project_id(&self) -> Option<&str> {
        match self {
            GoogleCredentials::ServiceAccount(sa) => sa.project_id(),
            _ => None,
        }
    }
}

impl TokenSource for GoogleCredentials {
    async fn fetch(&self, http: &Http, clock: &Clock) -> Result<AccessToken, CredentialError> {
        match self {
            GoogleCredentials::ServiceAccount(sa) => jwt_grant(http, sa, clock).await,
            GoogleCredentials::AuthorizedUser(user) => refresh_grant(http, user, clock).await,
            GoogleCredentials::Metadata(server) => metadata_token(http, server, clock).await,
        }
    }
}

/// gcloud's application-default credentials file, where it would be.
fn well_known_file(env: &Env) -> Option<PathBuf> {
    const FILE: &str = "application_default_credentials.json";
    if let Some(dir) = env.get("CLOUDSDK_CONFIG") {
        return Some(PathBuf::from(dir).join(FILE));
    }
    if cfg!(windows) {
        return env.get("APPDATA").map(|d| PathBuf::from(d).join("gcloud").join(FILE));
    }
    env.home().map(|h| h.join(".config").join("gcloud").join(FILE))
}

/// A credential file's fields, read with errors that name them.
struct Fields<'a> {
    object: &'a Map<String, Value>,
    source_name: &'a str,
}

impl<'a> Fields<'a> {
    fn optional(&self, name: &str) -> Result<Option<&'a str>, CredentialError> {
        match self.object.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(CredentialError::config(
                self.source_name,
                format!("field `{name}`: not a string"),
            )),
        }
    }

    fn required(&self, name: &str) -> Result<&'a str, CredentialError> {
        self.optional(name)?.ok_or_else(|| {
            CredentialError::config(self.source_name, format!("field `{name}`: missing"))
        })
    }

    fn token_uri(&self) -> Result<String, CredentialError> {
        let uri = self.optional("token_uri")?.unwrap_or(DEFAULT_TOKEN_URI);
        match reqwest::Url::parse(uri) {
            Ok(u) if matches!(u.scheme(), "https" | "http") => Ok(uri.to_owned()),
            _ => Err(CredentialError::config(
                self.source_name,
                format!("field `token_uri`: {:?} is not an http(s) URL", crate::util::excerpt(uri)),
            )),
        }
    }
}

/// A PEM private key as an RSA key pair. Errors say what is wrong without
/// repeating any of it.
fn parse_key(pem: &str) -> Result<RsaKeyPair, String> {
    let der = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => "no PRIVATE KEY block in it".to_owned(),
        _ => "not a PEM private key".to_owned(),
    })?;
    let key = match &der {
        PrivateKeyDer::Pkcs8(k) => RsaKeyPair::from_pkcs8(k.secret_pkcs8_der()),
        PrivateKeyDer::Pkcs1(k) => RsaKeyPair::from_der(k.secret_pkcs1_der()),
        _ => return Err("not an RSA key (a service account's key is RSA)".to_owned()),
    };
    key.map_err(|e| format!("not a usable RSA private key ({e})"))
}

/// Service account: the JWT bearer grant at the account's token endpoint.
async fn jwt_grant(
    http: &Http,
    sa: &ServiceAccount,
    clock: &Clock,
) -> Result<AccessToken, CredentialError> {
    let assertion = sa.assertion(clock.now())?;
    let body = form(&[
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", assertion.expose()),
    ]);
    grant(http, &sa.token_uri, "Google token endpoint (service account)", body, clock).await
}

/// POST a grant (`body`, form-encoded) to a token endpoint: its access token.
pub(super) async fn grant(
    http: &Http,
    url: &str,
    what: &'static str,
    body: Vec<u8>,
    clock: &Clock,
) -> Result<AccessToken, CredentialError> {
    let answer = http
        .call(Call {
            method: reqwest::Method::POST,
            url,
            headers: vec![("content-type", "application/x-www-form-urlencoded".to_owned())],
            body: Some(body),
            metadata: false,
            what,
        })
        .await?;
    token_answer(what, &answer, clock)
}

/// Authorized user: the refresh-token grant.
async fn refresh_grant(
    http: &Http,
    user: &AuthorizedUser,
    clock: &Clock,
) -> Result<AccessToken, CredentialError> {
    let body = form(&[
        ("grant_type", "refresh_token"),
        ("client_id", &user.client_id),
        ("client_secret", user.client_secret.expose()),
        ("refresh_token", user.refresh_token.expose()),
    ]);
    grant(http, &user.token_uri, "Google token endpoint (authorized user)", body, clock).await
}

/// Metadata server: the default service account's token.
async fn metadata_token(
    http: &Http,
    server: &MetadataServer,
    clock: &Clock,
) -> Result<AccessToken, CredentialError> {
    let what = "GCE metadata server";
    let answer = http
        .call(Call {
            method: reqwest::Method::GET,
            url: &server.token_url(),
            headers: vec![("metadata-flavor", "Google".to_owned())],
            body: None,
            metadata: true,
            what,
        })
        .await?;
    token_answer(what, &answer, clock)
}

/// A token endpoint's answer: `{access_token, expires_in, token_type}`.
pub(super) fn token_answer(
    what: &str,
    answer: &super::Answer,
    clock: &Clock,
) -> Result<AccessToken, CredentialError> {
    if !(200..300).contains(&answer.status) {
        return Err(describe_error(what, answer));
    }
    // Never the body in an error: it holds the token.
    let garbage = |m: &str| CredentialError::Fetch(format!("{what}: unusable answer: {m}"));
    let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(&answer.body) else {
        return Err(garbage("not a JSON object"));
    };
    let token = o
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| garbage("no access_token"))?;
    // Numbers, or (Azure's identity endpoints) numbers written as strings.
    let number = |field: &str| match o.get(field) {
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        _ => None,
    };
    // A lifetime, or (App Service's identity endpoint) only when it ends, in
    // seconds since the epoch.
    let now_secs = clock.now().0 / 1000;
    let expires_in = number("expires_in")
        .or_else(|| number("expires_on").map(|on| on.saturating_sub(now_secs)))
        .ok_or_else(|| garbage("no expires_in"))?;
    if let Some(kind) = o.get("token_type").and_then(Value::as_str)
        && !kind.eq_ignore_ascii_case("bearer")
    {
        return Err(garbage("token_type is not Bearer"));
    }
    Ok(AccessToken {
        token: Secret::new(token),
        expires_at: clock.now() + Duration::from_secs(expires_in),
    })
}

/// Google access tokens from one [`GoogleCredentials`], cached and refreshed
/// ahead of expiry ([`OAuthTokens`]).
pub type GoogleAuth = OAuthTokens<GoogleCredentials>;

impl GoogleAuth {
    /// [`GoogleCredentials::application_default`]'s credentials.
    pub fn application_default(
        env: &Env,
        http: Http,
        clock: Clock,
    ) -> Result<Self, CredentialError> {
        Ok(Self::new(GoogleCredentials::application_default(env)?, http, clock))
    }

    /// The project the credential belongs to, when it says.
    pub fn project_id(&self) -> Option<&str> {
        self.credentials().project_id()
    }
}

#[cfg(test)]
#[path = "google_tests.rs"]
mod tests;
