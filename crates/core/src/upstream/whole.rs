//! Requests for a whole JSON answer (or a form's) to a wire's endpoints
//! other than its generation: token counts, embeddings, images, job
//! submissions. Authenticated and headed as a generation is.

use http::header::{CONTENT_TYPE, HeaderValue};

use super::{
    Dest, Failure, JSON, Outgoing, Response, cloud_headers, finish, minted, post, uri,
    with_headers, with_query,
};
use crate::util::Secret;

/// Send a request for a whole JSON answer to `url`, another of the wire's
/// endpoints (its token count), authenticated and headed like a generation;
/// the client's passed-through headers only where `passthrough`.
pub(crate) async fn send_to(
    dest: Dest<'_>,
    out: &Outgoing<'_>,
    url: &str,
    body: Vec<u8>,
    passthrough: bool,
) -> Result<(Response, Vec<Secret>), Failure> {
    send_as(dest, out, url, (body, JSON[0].1), passthrough).await
}

/// [`send_to`] with a body of another content type (an image edit's
/// multipart form): `(body, content type)`.
pub(crate) async fn send_as(
    dest: Dest<'_>,
    out: &Outgoing<'_>,
    url: &str,
    (body, content_type): (Vec<u8>, &str),
    passthrough: bool,
) -> Result<(Response, Vec<Secret>), Failure> {
    let mut url = reqwest::Url::parse(url)
        .map_err(|e| Failure::Unavailable(format!("the URL is not valid: {e}")))?;
    with_query(&mut url, &dest.spec.query);
    let url = uri(&url)?;
    let signed =
        cloud_headers(dest, "POST", &url, &[("content-type", content_type)], &body).await?;
    let minted = minted(&signed);
    let mut req = with_headers(post(url), dest, out, false, passthrough)?;
    if let (Some(h), Ok(v)) = (req.headers_mut(), HeaderValue::from_str(content_type)) {
        h.insert(CONTENT_TYPE, v);
    }
    let resp = finish(dest, req, signed, body).await?;
    Ok((resp, minted))
}
