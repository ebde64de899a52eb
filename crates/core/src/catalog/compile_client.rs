//! A provider's `client:` block compiled into [`ClientOptions`]: its files read,
//! its PEM and proxy checked as the client will use them, so that a bad file is
//! a problem at its field's line when the configuration is loaded (or checked
//! with `switchyard check`), not a failure when the client is built.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{Span, Spanned};

use super::ProviderKind;
use super::compile::{Problem, first_known};
use crate::client::{self, ClientIdentity, ClientOptions, IdentityError};
use crate::config::raw::ProviderConfig;

/// What a piece of the block came from: a file (its field and line) or PEM
/// given in code (its field, no line).
struct Origin<'a> {
    field: &'a str,
    at: Option<Span>,
}

/// `p.client` as options; each problem names `providers.<name>.client.<field>`
/// at that field's line (else the block's, else the provider's). `base`: where
/// relative paths start.
pub(super) fn compile_client(
    name: &str,
    written: Span,
    p: &ProviderConfig,
    kind: &ProviderKind,
    base: Option<&Path>,
    problems: &mut Vec<Problem>,
) -> ClientOptions {
    let mut options = ClientOptions::default();
    let Some(block) = &p.client else { return options };
    let at = |field: Option<Span>| first_known(&[field, Some(block.span), Some(written)]);
    if matches!(kind, ProviderKind::Mock { .. }) {
        problems.push(Problem::located(
            at(None),
            format!("providers.{name}.client: the mock makes no HTTP calls"),
        ));
        return options;
    }
    let mut problem = |origin: &Origin<'_>, message: String| {
        problems.push(Problem::located(
            at(origin.at),
            format!("providers.{name}.client.{}: {message}", origin.field),
        ));
    };
    let c = &block.value;
    let file = |field: &'static str, path: &Spanned<String>| {
        (Origin { field, at: Some(path.span) }, read(base, &path.value))
    };

    let ca = match (&c.ca_pem, &c.ca_file) {
        (Some(pem), _) => Some((Origin { field: "ca_pem", at: None }, Ok(pem.clone()))),
        (None, Some(path)) => Some(file("ca_file", path)),
        (None, None) => None,
    };
    if let Some((origin, pem)) = ca {
        match pem.and_then(|pem| client::roots(&pem).map(|_| pem)) {
            Ok(pem) => options.ca_pem = Some(pem),
            Err(e) => problem(&origin, e),
        }
    }

    let identity = match (&c.identity, &c.client_cert_file, &c.client_key_file) {
        (Some(identity), _, _) => {
            let origin = || Origin { field: "identity", at: None };
            Some((origin(), origin(), identity.clone()))
        }
        (None, Some(cert), Some(key)) => {
            let (cert_origin, cert_pem) = file("client_cert_file", cert);
            let (key_origin, key_pem) = file("client_key_file", key);
            match (cert_pem, key_pem) {
                (Ok(cert), Ok(key)) => {
                    Some((cert_origin, key_origin, ClientIdentity::from_pem(cert, key)))
                }
                // Each file's own problem, as far as it can be judged alone.
                (cert, key) => {
                    if let Err(e) = cert.and_then(|pem| client::certificates(&pem).map(drop)) {
                        problem(&cert_origin, e);
                    }
                    if let Err(e) = key {
                        problem(&key_origin, e);
                    }
                    None
                }
            }
        }
        (None, Some(cert), None) => {
            let origin = Origin { field: "client_cert_file", at: Some(cert.span) };
            problem(&origin, "needs client_key_file (its private key)".to_owned());
            None
        }
        (None, None, Some(key)) => {
            let origin = Origin { field: "client_key_file", at: Some(key.span) };
            problem(&origin, "needs client_cert_file (the certificate it belongs to)".to_owned());
            None
        }
        (None, None, None) => None,
    };
    if let Some((cert_origin, key_origin, identity)) = identity {
        match client::check_identity(&identity) {
            Ok(()) => options.identity = Some(identity),
            Err(IdentityError::Chain(e)) => problem(&cert_origin, e),
            Err(IdentityError::Key(e)) => problem(&key_origin, e),
        }
    }

    if let Some(proxy) = &c.proxy {
        match client::check_proxy(&proxy.value) {
            Ok(()) => options.proxy = Some(proxy.value.clone()),
            Err(e) => problem(&Origin { field: "proxy", at: Some(proxy.span) }, e),
        }
    }
    if let Some(n) = c.pool_max_idle_per_host {
        options.pool_max_idle_per_host = n;
    }
    if let Some(ms) = &c.pool_idle_timeout_ms {
        if ms.value == 0 {
            let origin = Origin { field: "pool_idle_timeout_ms", at: Some(ms.span) };
            // Zero would mean "close at once", which `pool_max_idle_per_host: 0`
            // says plainly.
            problem(&origin, "must be more than 0 (pool_max_idle_per_host: 0 keeps none)".into());
        } else {
            options.pool_idle_timeout = Duration::from_millis(ms.value);
        }
    }
    options
}

/// The file at `path` (relative to `base`), or why not, naming the path read.
fn read(base: Option<&Path>, path: &str) -> Result<Vec<u8>, String> {
    let resolved = resolve(base, path);
    std::fs::read(&resolved).map_err(|e| format!("cannot read {}: {e}", resolved.display()))
}

/// `path` as written if absolute, else under `base` (when there is one).
pub(super) fn resolve(base: Option<&Path>, path: &str) -> PathBuf {
    let path = Path::new(path);
    match base {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "compile_client_tests.rs"]
mod tests;
