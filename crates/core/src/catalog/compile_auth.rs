//! A provider's `credentials:`, compiled: its platform keys (`env`, `keys`),
//! or its cloud credential (`aws`, `google`) built and checked against its
//! wire, and why it is unusable when it is.

use std::path::Path;
use std::sync::Arc;

use super::ProviderKind;
use super::compile::Problem;
use super::compile_client::resolve;
use crate::client::ClientOptions;
use crate::config::raw::{AwsCredentialsConfig, Credentials, ProviderConfig};
use crate::config::{Span, Spanned};
use crate::credentials::aws::AwsCredentials;
use crate::credentials::{AwsSource, CloudAuth, CloudSource, CredentialError, Env, GoogleSource};
use crate::util::Secret;

/// A provider's credentials, and why it is unusable when it is.
pub(super) struct PlatformKeys {
    pub keys: Vec<Secret>,
    pub cloud: Option<Arc<CloudAuth>>,
    pub unavailable: Option<String>,
    /// Whether the missing credential is a configuration error (it is unless
    /// the provider is marked `optional` or `byok_only`).
    pub refuse: bool,
    /// Where a refusal is reported: the first unset variable, the cloud block.
    pub first_missing: Option<Span>,
}

impl PlatformKeys {
    pub(super) fn none() -> Self {
        Self {
            keys: Vec::new(),
            cloud: None,
            unavailable: None,
            refuse: false,
            first_missing: None,
        }
    }
}

/// What a provider on `kind` (a wire) authenticates with: its cloud credential
/// when `creds` (its `credentials`, or what its preset implies) has `aws` or
/// `google`, else its keys. `client`: the
/// provider's HTTP options, which a credential's token requests use too;
/// `base`: the configuration's folder, for relative files.
#[allow(clippy::too_many_arguments)]
pub(super) fn credentials_for(
    name: &str,
    p: &ProviderConfig,
    creds: &Credentials,
    kind: &ProviderKind,
    client: &ClientOptions,
    base: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> PlatformKeys {
    let Some((source, at)) = cloud_source(name, creds, base, problems) else {
        return keys_for(name, creds, env);
    };
    let auth = match kind {
        ProviderKind::Wire(wire) => wire.spec().auth,
        ProviderKind::Mock { .. } => return PlatformKeys::none(),
    };
    if !creds.env.is_empty() || !creds.keys.is_empty() || creds.none {
        problems.push(Problem::located(
            at,
            format!(
                "providers.{name}.credentials: a cloud credential (aws, google) is instead of \
                 keys (env, keys, none), not with them"
            ),
        ));
    }
    let region = p.region.as_ref().map(|r| r.value.as_str());
    let named: Vec<&str> = match &source {
        CloudSource::Google(GoogleSource::Env(var)) => vec![var.as_str()],
        _ => Vec::new(),
    };
    match CloudAuth::build(auth, &source, region, &Env::capture(env, &named), client) {
        Ok(cloud) => PlatformKeys { cloud: Some(Arc::new(cloud)), ..PlatformKeys::none() },
        Err(e) => {
            let why = match &e {
                CredentialError::Config { source_name, message } => {
                    format!("provider {name} is disabled: {source_name}: {message}")
                }
                CredentialError::Fetch(m) => format!("provider {name} is disabled: {m}"),
            };
            PlatformKeys {
                unavailable: Some(why),
                refuse: !creds.optional,
                first_missing: Some(at),
                ..PlatformKeys::none()
            }
        }
    }
}

/// The cloud source `credentials` names, and where it is written; `None` when
/// it names none. Two at once, or a Google block with both a file and a
/// variable, is a problem (the first is kept, so the rest is still checked).
fn cloud_source(
    name: &str,
    creds: &Credentials,
    base: Option<&Path>,
    problems: &mut Vec<Problem>,
) -> Option<(CloudSource, Span)> {
    if let (Some(_), Some(google)) = (&creds.aws, &creds.google) {
        problems.push(Problem::at(
            google,
            format!("providers.{name}.credentials: aws or google, not both"),
        ));
    }
    if let Some(aws) = &creds.aws {
        return Some((CloudSource::Aws(aws_source(name, aws, problems)), aws.span));
    }
    let google = creds.google.as_ref()?;
    let g = &google.value;
    let source = match (&g.service_account_file, &g.service_account_env) {
        (Some(file), env) => {
            if let Some(var) = env {
                problems.push(Problem::at(
                    var,
                    format!(
                        "providers.{name}.credentials.google: service_account_file or \
                         service_account_env, not both"
                    ),
                ));
            }
            GoogleSource::File(resolve(base, &file.value))
        }
        (None, Some(var)) => GoogleSource::Env(var.value.clone()),
        (None, None) => GoogleSource::ApplicationDefault,
    };
    let at = [g.service_account_file.as_ref(), g.service_account_env.as_ref()]
        .into_iter()
        .flatten()
        .map(|s: &Spanned<String>| s.span)
        .find(|s| s.line() > 0)
        .unwrap_or(google.span);
    Some((CloudSource::Google(source), at))
}

/// `credentials.aws` as written: a profile, keys, or (neither) the default
/// chain. Keys need their secret; a profile and keys at once is a problem.
fn aws_source(
    name: &str,
    aws: &Spanned<AwsCredentialsConfig>,
    problems: &mut Vec<Problem>,
) -> AwsSource {
    let a = &aws.value;
    let at = format!("providers.{name}.credentials.aws");
    match (&a.profile, &a.access_key_id, &a.secret_access_key) {
        (Some(profile), keys, _) => {
            if let Some(id) = keys {
                problems.push(Problem::at(id, format!("{at}: a profile or keys, not both")));
            }
            AwsSource::Profile(profile.value.clone())
        }
        (None, Some(id), Some(secret)) if !secret.value.is_empty() => {
            let token = a.session_token.clone().filter(|t| !t.is_empty()).map(Secret::new);
            AwsSource::Keys(AwsCredentials::new(id.value.clone(), secret.value.clone(), token))
        }
        (None, Some(id), _) => {
            problems.push(Problem::at(id, format!("{at}.secret_access_key: missing or empty")));
            AwsSource::DefaultChain
        }
        (None, None, Some(secret)) => {
            problems.push(Problem::at(secret, format!("{at}.access_key_id: missing")));
            AwsSource::DefaultChain
        }
        (None, None, None) => AwsSource::DefaultChain,
    }
}

/// The wire's endpoint with its placeholders filled: `{region}` (the
/// provider's `region:`, else its cloud credential's), `{region_prefix}`
/// (`{region}-`, nothing for `global`: Google's regional hosts) and
/// `{project}` (the provider's `project:`, else its credential's). A value a
/// placeholder needs and nothing gives is a problem naming the field.
pub(super) fn fill_place(
    name: &str,
    endpoint: &str,
    p: &ProviderConfig,
    cloud: Option<&CloudAuth>,
    at: Span,
    problems: &mut Vec<Problem>,
) -> String {
    let mut filled = endpoint.to_owned();
    if filled.contains("{region") {
        let region =
            p.region.as_ref().map(|r| r.value.as_str()).or_else(|| cloud.and_then(|c| c.region()));
        match region {
            Some(region) if label_ok(region) => {
                let prefix = if region == "global" { String::new() } else { format!("{region}-") };
                filled = filled.replace("{region_prefix}", &prefix).replace("{region}", region);
            }
            Some(region) => problems.push(Problem::located(
                p.region.as_ref().map_or(at, |r| r.span),
                format!(
                    "providers.{name}.region: {:?} is not a region name (letters, digits, `-`)",
                    crate::util::excerpt(region)
                ),
            )),
            None => problems.push(Problem::located(
                at,
                format!(
                    "providers.{name}.region: the endpoint {endpoint} needs a region: set \
                     `region` (or AWS_REGION for AWS credentials), or the whole `endpoint`"
                ),
            )),
        }
    }
    if filled.contains("{project}") {
        let project = p
            .project
            .as_ref()
            .map(|r| r.value.as_str())
            .or_else(|| cloud.and_then(|c| c.project_id()));
        match project {
            Some(project) if label_ok(project) => filled = filled.replace("{project}", project),
            Some(project) => problems.push(Problem::located(
                p.project.as_ref().map_or(at, |r| r.span),
                format!(
                    "providers.{name}.project: {:?} is not a project id (letters, digits, `-`)",
                    crate::util::excerpt(project)
                ),
            )),
            None => problems.push(Problem::located(
                at,
                format!(
                    "providers.{name}.project: the endpoint {endpoint} needs a project: set \
                     `project`, use a service account (its `project_id`), or the whole `endpoint`"
                ),
            )),
        }
    }
    filled
}

/// A region or project goes into a host name or a path segment: `us-east-1`,
/// `global`, `my-project-123`.
fn label_ok(value: &str) -> bool {
    !value.is_empty()
        && value.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn keys_for(name: &str, creds: &Credentials, env: &dyn Fn(&str) -> Option<String>) -> PlatformKeys {
    let none = |keys| PlatformKeys { keys, ..PlatformKeys::none() };
    if creds.none {
        return none(Vec::new());
    }
    let mut keys: Vec<Secret> =
        creds.keys.iter().filter(|k| !k.is_empty()).map(|k| Secret::new(k.clone())).collect();
    let mut missing: Vec<&Spanned<String>> = Vec::new();
    for var in &creds.env {
        match env(&var.value).filter(|v| !v.is_empty()) {
            Some(v) => keys.push(Secret::new(v)),
            None => missing.push(var),
        }
    }
    if !keys.is_empty() {
        return none(keys);
    }
    let first_missing = missing.first().map(|v| v.span);
    if creds.byok_only {
        let why =
            format!("provider {name} takes users' own keys only (byok_only) and none was given");
        return PlatformKeys {
            keys,
            unavailable: Some(why),
            first_missing,
            ..PlatformKeys::none()
        };
    }
    let why = if missing.is_empty() {
        format!(
            "provider {name} declares no credentials (set credentials.env, credentials.keys, or credentials.none: true)"
        )
    } else {
        let names: Vec<&str> = missing.iter().map(|v| v.value.as_str()).collect();
        format!("provider {name} is disabled: {} is not set", names.join(", "))
    };
    PlatformKeys {
        keys,
        unavailable: Some(why),
        refuse: !creds.optional,
        first_missing,
        ..PlatformKeys::none()
    }
}

#[cfg(all(test, feature = "yaml"))]
#[path = "compile_auth_tests.rs"]
mod tests;
