//! The AWS credential sources that fetch: STS web identity, ECS/EKS container
//! credentials, EC2 instance metadata (IMDSv2). Each one's HTTP is in its own
//! `fetch`.

use std::net::IpAddr;
use std::path::PathBuf;

use serde_json::Value;

use super::super::{
    Answer, Call, Clock, CredentialError, Env, Http, describe_error, form, parse_utc, xml_tag,
};
use super::AwsCredentials;
use crate::util::Secret;

/// `AssumeRoleWithWebIdentity`: a role assumed with an OIDC token from a file
/// (EKS IRSA), at STS.
#[derive(Debug, Clone)]
pub(crate) struct WebIdentity {
    pub token_file: PathBuf,
    pub role_arn: String,
    pub session_name: String,
    /// STS: `AWS_ENDPOINT_URL_STS`, else the region's, else the global one.
    pub endpoint: String,
}

impl WebIdentity {
    /// From `AWS_WEB_IDENTITY_TOKEN_FILE`, `AWS_ROLE_ARN` and
    /// `AWS_ROLE_SESSION_NAME`; `None` when the first two are unset.
    pub fn from_env(
        env: &Env,
        region: Option<&str>,
        clock: &Clock,
    ) -> Result<Option<Self>, CredentialError> {
        let (file, role) = (env.get("AWS_WEB_IDENTITY_TOKEN_FILE"), env.get("AWS_ROLE_ARN"));
        let (token_file, role_arn) = match (file, role) {
            (None, None) => return Ok(None),
            (Some(f), Some(r)) => (PathBuf::from(f), r),
            (Some(_), None) => {
                return Err(CredentialError::config(
                    "environment variable AWS_ROLE_ARN",
                    "not set, while AWS_WEB_IDENTITY_TOKEN_FILE is",
                ));
            }
            (None, Some(_)) => {
                return Err(CredentialError::config(
                    "environment variable AWS_WEB_IDENTITY_TOKEN_FILE",
                    "not set, while AWS_ROLE_ARN is",
                ));
            }
        };
        if let Err(e) = std::fs::metadata(&token_file) {
            return Err(CredentialError::config(
                format!("{} (AWS_WEB_IDENTITY_TOKEN_FILE)", token_file.display()),
                format!("cannot read it: {e}"),
            ));
        }
        let session_name = env
            .get("AWS_ROLE_SESSION_NAME")
            .unwrap_or_else(|| format!("switchyard-{}", clock.now().0));
        let endpoint = match (env.get("AWS_ENDPOINT_URL_STS"), region) {
            (Some(url), _) => url,
            (None, Some(region)) => format!("https://sts.{region}.amazonaws.com/"),
            (None, None) => "https://sts.amazonaws.com/".to_owned(),
        };
        Ok(Some(Self { token_file, role_arn, session_name, endpoint }))
    }

    /// The token file read anew (it is rotated), then STS asked.
    pub async fn fetch(&self, http: &Http) -> Result<AwsCredentials, CredentialError> {
        let what = "STS AssumeRoleWithWebIdentity";
        let token = std::fs::read_to_string(&self.token_file).map_err(|e| {
            CredentialError::Fetch(format!(
                "{what}: cannot read {}: {e}",
                self.token_file.display()
            ))
        })?;
        let token = Secret::new(token.trim());
        let body = form(&[
            ("Action", "AssumeRoleWithWebIdentity"),
            ("Version", "2011-06-15"),
            ("RoleArn", &self.role_arn),
            ("RoleSessionName", &self.session_name),
            ("WebIdentityToken", token.expose()),
        ]);
        let answer = http
            .call(Call {
                method: reqwest::Method::POST,
                url: &self.endpoint,
                headers: vec![("content-type", "application/x-www-form-urlencoded".to_owned())],
                body: Some(body),
                metadata: false,
                what,
            })
            .await?;
        if !(200..300).contains(&answer.status) {
            return Err(describe_error(what, &answer));
        }
        let xml = String::from_utf8_lossy(&answer.body);
        let field = |tag: &str| {
            xml_tag(&xml, tag)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| CredentialError::Fetch(format!("{what}: unusable answer: no {tag}")))
        };
        let expiration = field("Expiration")?;
        Ok(AwsCredentials {
            access_key_id: field("AccessKeyId")?,
            secret_access_key: Secret::new(field("SecretAccessKey")?),
            session_token: Some(Secret::new(field("SessionToken")?)),
            expires_at: Some(parse_utc(&expiration).ok_or_else(|| {
                CredentialError::Fetch(format!("{what}: unusable answer: Expiration is not a time"))
            })?),
        })
    }
}

/// The container credentials endpoint (ECS task roles, EKS Pod Identity).
#[derive(Debug, Clone)]
pub(crate) struct Container {
    pub url: String,
    pub auth: Option<ContainerAuth>,
}

/// The `Authorization` value a container endpoint wants.
#[derive(Debug, Clone)]
pub(crate) enum ContainerAuth {
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN`.
    Token(Secret),
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE`, read at each fetch (rotated).
    File(PathBuf),
}

/// ECS's credentials address, which `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI`
/// is relative to.
const ECS_HOST: &str = "http://169.254.170.2";

impl Container {
    /// From `AWS_CONTAINER_CREDENTIALS_RELATIVE_URI` (on ECS's address) or
    /// `AWS_CONTAINER_CREDENTIALS_FULL_URI` (`https`, or `http` to a loopback
    /// or the ECS/EKS addresses only, as the SDKs allow), with
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE` or
    /// `AWS_CONTAINER_AUTHORIZATION_TOKEN`; `None` when neither URI is set.
    pub fn from_env(env: &Env) -> Result<Option<Self>, CredentialError> {
        let url = if let Some(relative) = env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") {
            let sep = if relative.starts_with('/') { "" } else { "/" };
            format!("{ECS_HOST}{sep}{relative}")
        } else if let Some(full) = env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI") {
            check_full_uri(&full).map_err(|m| {
                CredentialError::config(
                    "environment variable AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    m,
                )
            })?;
            full
        } else {
            return Ok(None);
        };
        let auth = match env.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE") {
            Some(file) => Some(ContainerAuth::File(PathBuf::from(file))),
            None => env
                .get("AWS_CONTAINER_AUTHORIZATION_TOKEN")
                .map(|t| ContainerAuth::Token(Secret::new(t))),
        };
        Ok(Some(Self { url, auth }))
    }

    pub async fn fetch(&self, http: &Http) -> Result<AwsCredentials, CredentialError> {
        let what = "container credentials endpoint";
        let mut headers = vec![("accept", "application/json".to_owned())];
        match &self.auth {
            Some(ContainerAuth::Token(t)) => headers.push(("authorization", t.expose().to_owned())),
            Some(ContainerAuth::File(path)) => {
                let token = std::fs::read_to_string(path).map_err(|e| {
                    CredentialError::Fetch(format!("{what}: cannot read {}: {e}", path.display()))
                })?;
                headers.push(("authorization", token.trim().to_owned()));
            }
            None => {}
        }
        let answer = http
            .call(Call {
                method: reqwest::Method::GET,
                url: &self.url,
                headers,
                body: None,
                metadata: true,
                what,
            })
            .await?;
        credentials_json(what, &answer)
    }
}

/// The addresses a plain-http full URI may name besides a loopback: ECS's,
/// EKS Pod Identity's (IPv4 and IPv6).
const CONTAINER_HOSTS: [&str; 3] = ["169.254.170.2", "169.254.170.23", "fd00:ec2::23"];

fn check_full_uri(uri: &str) -> Result<(), String> {
    let shown = crate::util::redact_userinfo(uri);
    let url = reqwest::Url::parse(uri).map_err(|e| format!("{shown:?} is not a URL: {e}"))?;
    match url.scheme() {
        "https" => Ok(()),
        "http" => {
            let host = url.host_str().unwrap_or_default();
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            let allowed = bare.eq_ignore_ascii_case("localhost")
                || bare.parse::<IpAddr>().is_ok_and(|ip| {
                    ip.is_loopback()
                        || CONTAINER_HOSTS.iter().any(|a| a.parse::<IpAddr>().ok() == Some(ip))
                });
            if allowed {
                Ok(())
            } else {
                Err(format!(
                    "{shown:?}: plain http only to a loopback address or the ECS/EKS ones (169.254.170.2, 169.254.170.23, fd00:ec2::23)"
                ))
            }
        }
        _ => Err(format!("{shown:?}: not http(s)")),
    }
}

/// EC2's instance metadata service, IMDSv2 (a session token first).
#[derive(Debug, Clone)]
pub(crate) struct Imds {
    pub endpoint: String,
}

/// IMDS's address unless `AWS_EC2_METADATA_SERVICE_ENDPOINT` names another.
const IMDS_ENDPOINT: &str = "http://169.254.169.254";

impl Imds {
    /// At `AWS_EC2_METADATA_SERVICE_ENDPOINT`, else 169.254.169.254; `None`
    /// when `AWS_EC2_METADATA_DISABLED` is `true`.
    pub fn from_env(env: &Env) -> Option<Self> {
        if env
            .get("AWS_EC2_METADATA_DISABLED")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        {
            return None;
        }
        let endpoint = env
            .get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
            .unwrap_or_else(|| IMDS_ENDPOINT.to_owned());
        Some(Self { endpoint: endpoint.trim_end_matches('/').to_owned() })
    }

    /// A session token, the instance profile's role, then its credentials.
    pub async fn fetch(&self, http: &Http) -> Result<AwsCredentials, CredentialError> {
        let what = "EC2 instance metadata (IMDSv2)";
        let base = &self.endpoint;
        let answer = http
            .call(Call {
                method: reqwest::Method::PUT,
                url: &format!("{base}/latest/api/token"),
                headers: vec![("x-aws-ec2-metadata-token-ttl-seconds", "21600".to_owned())],
                body: None,
                metadata: true,
                what,
            })
            .await?;
        if answer.status != 200 {
            return Err(describe_error(&format!("{what}, session token"), &answer));
        }
        let session = Secret::new(String::from_utf8_lossy(&answer.body).trim());
        let get = |url: String| {
            let session = session.expose().to_owned();
            async move {
                http.call(Call {
                    method: reqwest::Method::GET,
                    url: &url,
                    headers: vec![("x-aws-ec2-metadata-token", session)],
                    body: None,
                    metadata: true,
                    what,
                })
                .await
            }
        };
        let list = format!("{base}/latest/meta-data/iam/security-credentials/");
        let answer = get(list.clone()).await?;
        if answer.status != 200 {
            return Err(describe_error(&format!("{what}, instance profile"), &answer));
        }
        let roles = String::from_utf8_lossy(&answer.body);
        let role = roles.lines().map(str::trim).find(|l| !l.is_empty()).ok_or_else(|| {
            CredentialError::Fetch(format!("{what}: the instance has no instance profile"))
        })?;
        let answer = get(format!("{list}{role}")).await?;
        credentials_json(what, &answer)
    }
}

/// The JSON the container endpoint and IMDS answer: `AccessKeyId`,
/// `SecretAccessKey`, `Token`, `Expiration` (and from IMDS `Code: Success`).
fn credentials_json(what: &str, answer: &Answer) -> Result<AwsCredentials, CredentialError> {
    if !(200..300).contains(&answer.status) {
        return Err(describe_error(what, answer));
    }
    // Never the body in an error: it holds the keys.
    let garbage = |m: &str| CredentialError::Fetch(format!("{what}: unusable answer: {m}"));
    let Ok(Value::Object(o)) = serde_json::from_slice::<Value>(&answer.body) else {
        return Err(garbage("not a JSON object"));
    };
    if let Some(code) = o.get("Code").and_then(Value::as_str)
        && code != "Success"
    {
        return Err(CredentialError::Fetch(format!(
            "{what}: Code {:?}",
            crate::util::excerpt(code)
        )));
    }
    let field = |name: &str| {
        o.get(name)
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| garbage(&format!("no {name}")))
    };
    let expiration = field("Expiration")?;
    Ok(AwsCredentials {
        access_key_id: field("AccessKeyId")?.to_owned(),
        secret_access_key: Secret::new(field("SecretAccessKey")?),
        session_token: Some(Secret::new(field("Token")?)),
        expires_at: Some(parse_utc(expiration).ok_or_else(|| garbage("Expiration is not a time"))?),
    })
}
