//! `console:` compiled: how operators sign in to the web console
//! ([`ConsoleSpec`]), checked with the rest of the file.

use std::sync::Arc;

use super::compile::Problem;
use crate::config::raw::RawConfig;
use crate::util::Secret;

/// The console's sign-in settings.
#[derive(Debug, Clone, Default)]
pub struct ConsoleSpec {
    /// Sign-in through an OpenID Connect provider, when configured.
    pub oidc: Option<Arc<OidcSpec>>,
}

/// `console.oidc`, checked: the relying party the console is at one provider.
#[derive(Debug, Clone, PartialEq)]
pub struct OidcSpec {
    /// The issuer as written (tokens' `iss` must equal the one discovery
    /// states, which must be this one, a trailing `/` aside).
    pub issuer: String,
    /// The client id registered at the provider.
    pub client_id: String,
    /// The client secret, read from its variable; `None` for a public client.
    pub client_secret: Option<Secret>,
    /// The callback's external URL, when the request cannot tell it.
    pub redirect_url: Option<String>,
    /// Space-separated, as the authorization request carries them.
    pub scope: String,
    /// The ID token claim matched against the group lists.
    pub group_claim: String,
    /// Claim values that make an admin.
    pub admin_groups: Vec<String>,
    /// Claim values that make a viewer.
    pub viewer_groups: Vec<String>,
    /// The sign-in button says "Sign in with" this.
    pub display_name: String,
}

impl OidcSpec {
    /// Where discovery is read.
    pub fn discovery_url(&self) -> String {
        format!("{}/.well-known/openid-configuration", self.issuer.trim_end_matches('/'))
    }
}

/// Compiles `console:`, adding a problem (at the block's line) for each thing
/// wrong. `env` reads the client secret's variable.
pub(super) fn compile_console(
    raw: &RawConfig,
    env: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> ConsoleSpec {
    let Some(o) = &raw.console.value.oidc else { return ConsoleSpec::default() };
    let mut say = |message: String| problems.push(Problem::at(&raw.console, message));
    if let Err(why) = issuer_ok(&o.issuer) {
        say(format!("console.oidc.issuer: {why}"));
    }
    if o.client_id.trim().is_empty() {
        say("console.oidc.client_id: required".into());
    }
    let client_secret = match &o.client_secret_env {
        None => None,
        Some(var) => match env(var).filter(|v| !v.is_empty()) {
            Some(v) => Some(Secret::new(v)),
            None => {
                say(format!(
                    "console.oidc.client_secret_env: the variable {var} is not set (leave the key out for a public client)"
                ));
                None
            }
        },
    };
    if let Some(url) = &o.redirect_url
        && let Err(why) = redirect_ok(url)
    {
        say(format!("console.oidc.redirect_url: {why}"));
    }
    if !o.scopes.iter().any(|s| s == "openid") {
        say("console.oidc.scopes: must include openid".into());
    }
    if let Some(bad) = o.scopes.iter().find(|s| s.is_empty() || !s.bytes().all(scope_char)) {
        say(format!(
            "console.oidc.scopes: {bad:?} is not a scope (printable ASCII, no space, quote or backslash)"
        ));
    }
    if o.group_claim.trim().is_empty() {
        say("console.oidc.group_claim: must not be empty".into());
    }
    if o.admin_groups.is_empty() && o.viewer_groups.is_empty() {
        say("console.oidc: admin_groups and viewer_groups are both empty, so no one could sign in"
            .into());
    }
    if o.display_name.trim().is_empty() {
        say("console.oidc.display_name: must not be empty".into());
    }
    let spec = OidcSpec {
        issuer: o.issuer.clone(),
        client_id: o.client_id.clone(),
        client_secret,
        redirect_url: o.redirect_url.clone(),
        scope: o.scopes.join(" "),
        group_claim: o.group_claim.clone(),
        admin_groups: o.admin_groups.clone(),
        viewer_groups: o.viewer_groups.clone(),
        display_name: o.display_name.clone(),
    };
    ConsoleSpec { oidc: Some(Arc::new(spec)) }
}

/// RFC 6749's `scope-token`: %x21 / %x23-5B / %x5D-7E.
fn scope_char(b: u8) -> bool {
    matches!(b, 0x21 | 0x23..=0x5b | 0x5d..=0x7e)
}

/// An issuer is an `https` URL without query or fragment (OpenID Connect
/// Discovery §3); plain `http` only for a loopback host (a local test
/// provider), since everything the console trusts comes from it.
fn issuer_ok(url: &str) -> Result<(), String> {
    let host = http_host(url)?;
    if url.contains(['?', '#']) {
        return Err("must not have a query or fragment".into());
    }
    if url.starts_with("http://") && !is_loopback(host) {
        return Err("must be an https URL (http only for localhost)".into());
    }
    Ok(())
}

fn redirect_ok(url: &str) -> Result<(), String> {
    http_host(url)?;
    if url.contains('#') {
        return Err("must not have a fragment".into());
    }
    Ok(())
}

/// The host of an `http(s)://host[:port][/path]` URL.
fn http_host(url: &str) -> Result<&str, String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("{url:?} is not an http(s) URL"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{url:?} is not a plain http(s) URL"));
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        authority.split(':').next().unwrap_or_default()
    };
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    Ok(host)
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers_are_https_or_loopback() {
        for ok in [
            "https://accounts.google.com",
            "https://login.microsoftonline.com/0000/v2.0",
            "https://id.example.com/realms/ops/",
            "http://127.0.0.1:8080/realms/x",
            "http://localhost:9000",
            "http://[::1]:9000",
        ] {
            assert_eq!(issuer_ok(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://id.example.com",
            "https://id.example.com/?x=1",
            "https://id.example.com/#f",
            "ftp://id.example.com",
            "https://",
            "https://user:pw@id.example.com",
            "id.example.com",
        ] {
            assert!(issuer_ok(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_are_tokens() {
        assert!("openid".bytes().all(scope_char));
        assert!(!"a b".bytes().all(scope_char));
        assert!(!"a\"b".bytes().all(scope_char));
    }
}
