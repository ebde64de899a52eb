//! Requests to a provider's other endpoints, authenticated like its
//! generations: its model list (`crate::discover`), a media job's status, a
//! provider batch's calls (`crate::exec::batch`).

use switchyard_protocol::Auth;

use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

use super::{Dest, Failure, Response, cloud_headers_for, finish, uri, with_query};
use crate::util::Secret;

/// A `GET` of `url` for a whole JSON answer (the wire's model list), with
/// what the cloud credential minted for it (as [`super::send`]),
/// authenticated as a generation is: the key where the wire takes it, else the
/// cloud credential's signature or token; the wire's required headers (their
/// defaults: there is no client to forward from) and the provider's own; the
/// provider's query parameters.
pub(crate) async fn get(
    dest: Dest<'_>,
    url: reqwest::Url,
) -> Result<(Response, Vec<Secret>), Failure> {
    bodiless(dest, http::Method::GET, url).await
}

/// A request with no body (`GET`, `PUT`) for a whole JSON answer, headed and
/// authenticated as [`get`]'s: a media job's status, result or cancel.
pub(crate) async fn bodiless(
    dest: Dest<'_>,
    method: http::Method,
    url: reqwest::Url,
) -> Result<(Response, Vec<Secret>), Failure> {
    request(dest, method, url, None, None).await
}

/// A request of any method, with a body of its content type or none, headed
/// and authenticated as [`get`]'s; its cloud signature for `service` where it
/// goes to another of the cloud's services (`s3`, where a batch is staged).
/// A provider batch's calls.
pub(crate) async fn request(
    dest: Dest<'_>,
    method: http::Method,
    mut url: reqwest::Url,
    body: Option<(Vec<u8>, &str)>,
    service: Option<&str>,
) -> Result<(Response, Vec<Secret>), Failure> {
    with_query(&mut url, &dest.spec.query);
    let url = uri(&url)?;
    let (body, content_type) = match body {
        Some((b, t)) => (b, Some(t)),
        None => (Vec::new(), None),
    };
    let signed_headers: Vec<(&str, &str)> =
        content_type.iter().map(|t| ("content-type", *t)).collect();
    let signed =
        cloud_headers_for(dest, service, method.as_str(), &url, &signed_headers, &body).await?;
    let minted = super::minted(&signed);
    let builder = http::Request::builder().method(method).uri(url);
    let mut req = with_key(builder, dest.wire.spec().auth, dest.key)?;
    req = req.header(ACCEPT, HeaderValue::from_static("application/json"));
    if let Some(t) = content_type {
        req = req.header(CONTENT_TYPE, t);
    }
    // Another service is sent only what signs it: the wire's and the
    // provider's headers are Bedrock's, not S3's.
    if service.is_none() {
        for header in dest.wire.spec().headers {
            req = req.header(header.name, header.default);
        }
        for (k, v) in &dest.spec.headers {
            req = req.header(k.as_str(), v.as_str());
        }
    }
    let resp = finish(dest, req, signed, body).await?;
    Ok((resp, minted))
}

/// The key, where the wire's `auth` takes it (a list's request and a
/// generation's alike).
pub(super) fn with_key(
    req: http::request::Builder,
    auth: Auth,
    key: Option<&Secret>,
) -> Result<http::request::Builder, Failure> {
    let Some(k) = key else { return Ok(req) };
    // Marked sensitive: left out of the client's debug output, and never
    // indexed by an HTTP/2 connection's header compression.
    let value = |text: &str| {
        let mut value = HeaderValue::from_str(text).map_err(|_| {
            Failure::Unavailable("the key is not valid in an HTTP header".to_owned())
        })?;
        value.set_sensitive(true);
        Ok::<_, Failure>(value)
    };
    Ok(match auth {
        Auth::Header(name) | Auth::Entra { key_header: name } => {
            req.header(name, value(k.expose())?)
        }
        Auth::Prefixed { header, prefix } => {
            req.header(header, value(&format!("{prefix}{}", k.expose()))?)
        }
        // A key given where the wire is signed or takes a minted token is a
        // bearer token of its own: a Bedrock API key, a Google access token.
        Auth::Bearer | Auth::OAuthToken | Auth::SigV4 { .. } => {
            req.header(AUTHORIZATION, value(&format!("Bearer {}", k.expose()))?)
        }
    })
}
