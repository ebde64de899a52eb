//! A provider's model list asked for: the one `GET` the gateway sends an
//! upstream (`crate::discover`), authenticated like its generations.

use switchyard_protocol::Auth;

use super::{Dest, Failure, cloud_headers, with_query};
use crate::util::Secret;

/// A `GET` of `url` for a whole JSON answer (the wire's model list), with
/// what the cloud credential minted for it (as [`super::send`]),
/// authenticated as a generation is: the key where the wire takes it, else the
/// cloud credential's signature or token; the wire's required headers (their
/// defaults: there is no client to forward from) and the provider's own; the
/// provider's query parameters.
pub(crate) async fn get(
    dest: Dest<'_>,
    mut url: reqwest::Url,
) -> Result<(reqwest::Response, Vec<Secret>), Failure> {
    with_query(&mut url, &dest.spec.query);
    let signed = cloud_headers(dest, "GET", &url, &[], b"").await?;
    let minted = super::minted(&signed);
    let mut req = with_key(dest.runtime.client.get(url), dest.wire.spec().auth, dest.key);
    req = req.header("accept", "application/json");
    for header in dest.wire.spec().headers {
        req = req.header(header.name, header.default);
    }
    for (k, v) in &dest.spec.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let req = signed.into_iter().fold(req, |req, (name, value)| req.header(name, value));
    let resp = req.send().await.map_err(|e| Failure::from_reqwest(&e))?;
    Ok((resp, minted))
}

/// The key, where the wire's `auth` takes it (a list's request and a
/// generation's alike).
pub(super) fn with_key(
    req: reqwest::RequestBuilder,
    auth: Auth,
    key: Option<&Secret>,
) -> reqwest::RequestBuilder {
    let Some(k) = key else { return req };
    match auth {
        Auth::Bearer => req.bearer_auth(k.expose()),
        Auth::Header(name) | Auth::Entra { key_header: name } => req.header(name, k.expose()),
        // A key given where the wire is signed or takes a minted token is a
        // bearer token of its own: a Bedrock API key, a Google access token.
        Auth::OAuthToken | Auth::SigV4 { .. } => req.bearer_auth(k.expose()),
    }
}
