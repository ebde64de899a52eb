//! The ID token an OpenID Connect provider returns, verified as OpenID Connect
//! Core §3.1.3.7 asks: a JWS signed with one of the provider's published keys
//! (RS256 or ES256; nothing unsigned, nothing with a shared secret), from the
//! configured issuer, for this client, unexpired, and carrying the nonce this
//! sign-in sent. Then what it says: who (`sub`, a name to show) and which role
//! its group claim gives.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED, RSA_PKCS1_2048_8192_SHA256, RsaPublicKeyComponents, UnparsedPublicKey,
};
use serde_json::{Map, Value};
use switchyard_core::access::CallerRole;
use switchyard_core::catalog::OidcSpec;

/// Clocks disagree: `exp` and `iat` are allowed this much either way.
pub(crate) const SKEW_S: i64 = 60;

/// One verification key from the provider's JWKS.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Jwk {
    pub kid: Option<String>,
    /// The algorithm the key is restricted to, when the JWKS says.
    pub alg: Option<String>,
    pub key: PublicKey,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PublicKey {
    /// Modulus and exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// A P-256 point, uncompressed (`04 || x || y`).
    P256(Vec<u8>),
}

impl PublicKey {
    fn takes(&self, alg: &str) -> bool {
        matches!((self, alg), (PublicKey::Rsa { .. }, "RS256") | (PublicKey::P256(_), "ES256"))
    }
}

/// The keys of a JWKS document that can verify a signature: RSA and P-256 keys
/// meant for signing (`use` absent or `sig`); others (encryption keys, curves
/// not supported) are skipped rather than refused, as providers publish them.
pub(crate) fn parse_jwks(body: &[u8]) -> Result<Vec<Jwk>, String> {
    let doc: Value = serde_json::from_slice(body).map_err(|_| "the JWKS is not JSON")?;
    let keys = doc.get("keys").and_then(Value::as_array).ok_or("the JWKS has no `keys` list")?;
    let text = |k: &Value, name: &str| k.get(name).and_then(Value::as_str).map(str::to_owned);
    let bytes = |k: &Value, name: &str| text(k, name).and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    let mut out = Vec::new();
    for k in keys {
        if text(k, "use").is_some_and(|u| u != "sig") {
            continue;
        }
        let key = match text(k, "kty").as_deref() {
            Some("RSA") => match (bytes(k, "n"), bytes(k, "e")) {
                (Some(n), Some(e)) if !n.is_empty() && !e.is_empty() => PublicKey::Rsa { n, e },
                _ => continue,
            },
            Some("EC") if text(k, "crv").as_deref() == Some("P-256") => {
                match (bytes(k, "x"), bytes(k, "y")) {
                    (Some(x), Some(y)) if x.len() == 32 && y.len() == 32 => {
                        let mut point = Vec::with_capacity(65);
                        point.push(4);
                        point.extend_from_slice(&x);
                        point.extend_from_slice(&y);
                        PublicKey::P256(point)
                    }
                    _ => continue,
                }
            }
            _ => continue,
        };
        out.push(Jwk { kid: text(k, "kid"), alg: text(k, "alg"), key });
    }
    Ok(out)
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TokenError {
    /// No published key fits the token (its `kid` is unknown): the provider
    /// may have rotated its keys, so the JWKS is worth reading again once.
    UnknownKey,
    /// Refused, and why (no part of the token in it).
    Invalid(String),
}

fn invalid(why: impl Into<String>) -> TokenError {
    TokenError::Invalid(why.into())
}

/// What the token must say.
pub(crate) struct Expect<'a> {
    /// As discovery states it.
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: &'a str,
    /// Now, in seconds since the epoch.
    pub now_s: i64,
}

/// The verified token's claims.
pub(crate) fn verify(
    token: &str,
    keys: &[Jwk],
    expect: &Expect<'_>,
) -> Result<Map<String, Value>, TokenError> {
    let mut parts = token.split('.');
    let (Some(head), Some(body), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("the ID token is not a signed JWT (three parts)"));
    };
    let decode = |part: &str, what: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| invalid(format!("the ID token's {what} is not base64url")))
    };
    let header: Value = serde_json::from_slice(&decode(head, "header")?)
        .map_err(|_| invalid("the ID token's header is not JSON"))?;
    let alg = header.get("alg").and_then(Value::as_str).unwrap_or_default();
    if !matches!(alg, "RS256" | "ES256") {
        return Err(invalid(format!(
            "the ID token is signed with {:?}: only RS256 and ES256 are accepted",
            alg.chars().take(20).collect::<String>()
        )));
    }
    if header.get("crit").is_some() {
        return Err(invalid("the ID token names critical header extensions"));
    }
    let kid = header.get("kid").and_then(Value::as_str);
    let fits = |k: &&Jwk| {
        k.key.takes(alg)
            && k.alg.as_deref().is_none_or(|a| a == alg)
            && kid.is_none_or(|kid| k.kid.as_deref() == Some(kid))
    };
    let candidates: Vec<&Jwk> = keys.iter().filter(fits).collect();
    if candidates.is_empty() {
        return Err(TokenError::UnknownKey);
    }
    let signature = decode(sig, "signature")?;
    let signed = &token.as_bytes()[..head.len() + 1 + body.len()];
    let good = candidates.iter().any(|k| match &k.key {
        PublicKey::Rsa { n, e } => RsaPublicKeyComponents { n, e }
            .verify(&RSA_PKCS1_2048_8192_SHA256, signed, &signature)
            .is_ok(),
        PublicKey::P256(point) => UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(signed, &signature)
            .is_ok(),
    });
    if !good {
        return Err(invalid("the ID token's signature does not verify"));
    }
    let claims = match serde_json::from_slice(&decode(body, "payload")?) {
        Ok(Value::Object(map)) => map,
        _ => return Err(invalid("the ID token's claims are not a JSON object")),
    };
    check_claims(&claims, expect)?;
    Ok(claims)
}

fn check_claims(claims: &Map<String, Value>, expect: &Expect<'_>) -> Result<(), TokenError> {
    let text = |name: &str| claims.get(name).and_then(Value::as_str);
    if text("iss") != Some(expect.issuer) {
        return Err(invalid("the ID token is from another issuer"));
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(a)) => vec![a.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&expect.client_id) {
        return Err(invalid("the ID token is for another client (aud)"));
    }
    // Core §3.1.3.7 (4, 5): with several audiences the authorized party must be
    // named, and when named it must be this client.
    match text("azp") {
        Some(azp) if azp != expect.client_id => {
            return Err(invalid("the ID token was issued to another client (azp)"));
        }
        None if audiences.len() > 1 => {
            return Err(invalid("the ID token has several audiences and no azp"));
        }
        _ => {}
    }
    let seconds = |name: &str| claims.get(name).and_then(Value::as_f64).map(|v| v as i64);
    let Some(exp) = seconds("exp") else { return Err(invalid("the ID token has no exp")) };
    if exp + SKEW_S <= expect.now_s {
        return Err(invalid("the ID token has expired"));
    }
    let Some(iat) = seconds("iat") else { return Err(invalid("the ID token has no iat")) };
    if iat - SKEW_S > expect.now_s {
        return Err(invalid("the ID token was issued in the future (check the clocks)"));
    }
    let nonce = text("nonce").unwrap_or_default();
    let same: bool =
        subtle::ConstantTimeEq::ct_eq(nonce.as_bytes(), expect.nonce.as_bytes()).into();
    if !same {
        return Err(invalid("the ID token's nonce is not this sign-in's"));
    }
    if text("sub").is_none_or(str::is_empty) {
        return Err(invalid("the ID token has no subject (sub)"));
    }
    Ok(())
}

/// The values of the group claim: a list of strings, or one string. When the
/// claim is `email`, only a verified address counts (`email_verified: true`),
/// since an address someone could claim unverified names no one.
pub(crate) fn groups<'a>(claims: &'a Map<String, Value>, claim: &str) -> Vec<&'a str> {
    if claim == "email" && claims.get("email_verified").and_then(Value::as_bool) != Some(true) {
        return Vec::new();
    }
    match claims.get(claim) {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The role the groups give: admin wins over viewer; `None` for neither.
pub(crate) fn role(groups: &[&str], spec: &OidcSpec) -> Option<CallerRole> {
    let any = |list: &[String]| groups.iter().any(|g| list.iter().any(|l| l == g));
    if any(&spec.admin_groups) {
        Some(CallerRole::Admin)
    } else if any(&spec.viewer_groups) {
        Some(CallerRole::Viewer)
    } else {
        None
    }
}

/// What pages call them: their email, else their username, else their name.
pub(crate) fn display_name(claims: &Map<String, Value>) -> Option<String> {
    ["email", "preferred_username", "name"]
        .iter()
        .find_map(|c| claims.get(*c).and_then(Value::as_str).filter(|v| !v.is_empty()))
        .map(|v| v.chars().take(200).collect())
}

#[cfg(test)]
#[path = "oidc_token_tests.rs"]
mod tests;
