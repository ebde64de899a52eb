//! `console:`: how operators sign in to the web console, as written.

use serde::Deserialize;

/// `console:`. Problems are reported at the block's line.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleConfig {
    /// `console.oidc:`: sign-in through an OpenID Connect provider, besides a
    /// gateway key. Absent: keys only.
    pub oidc: Option<OidcConfig>,
}

/// `console.oidc:`: the authorization code flow with PKCE against any OpenID
/// Connect provider; its group claim decides admin or viewer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The issuer's URL, exactly as the provider's tokens name it (`iss`);
    /// discovery is read from `{issuer}/.well-known/openid-configuration`.
    pub issuer: String,
    /// The client (application) id registered at the provider.
    pub client_id: String,
    /// The variable holding the client secret. Absent: a public client,
    /// protected by PKCE alone.
    #[serde(default)]
    pub client_secret_env: Option<String>,
    /// The external URL of `/console/oidc/callback`, as registered at the
    /// provider. Absent: built from the request's `Host` and
    /// `X-Forwarded-Proto`.
    #[serde(default)]
    pub redirect_url: Option<String>,
    /// The scopes asked for (`openid` among them).
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// The ID token claim whose values are matched against the group lists
    /// (a string or a list of strings).
    #[serde(default = "default_group_claim")]
    pub group_claim: String,
    /// Values of the group claim that make an admin.
    #[serde(default)]
    pub admin_groups: Vec<String>,
    /// Values of the group claim that make a viewer (admin wins when both match).
    #[serde(default)]
    pub viewer_groups: Vec<String>,
    /// The sign-in button's label: "Sign in with {display_name}".
    #[serde(default = "default_display_name")]
    pub display_name: String,
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(str::to_owned).to_vec()
}

fn default_group_claim() -> String {
    "groups".to_owned()
}

fn default_display_name() -> String {
    "Single sign-on".to_owned()
}
