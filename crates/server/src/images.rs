//! Image generation: OpenAI's `POST /v1/images/generations`, answered in
//! OpenAI's shape whatever served it, and `GET /v1/images/files/{name}`, where
//! the images a client asked links for are served.
//!
//! Upstreams send the images themselves; a client that wants links
//! (`response_format: url`, DALL·E's default) gets links to copies the
//! gateway keeps for an hour (`runtime.images`: in process, or on Redis where
//! state is shared, so any instance serves them). A link names a random
//! 128-bit id and needs no key, as OpenAI's do: whoever holds it may fetch the
//! image until it expires.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::multipart::MultipartRejection;
use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use switchyard_core::GatewayError;
use switchyard_core::exec::{Imaged, planned_image_request};
use switchyard_protocol::images::edits::{self, FormPart};
use switchyard_protocol::images::openai::{self, Delivered};
use switchyard_protocol::images::{ImageFormat, ImageRequest};
use switchyard_protocol::{ClientFormat, ErrorCode};

use crate::http::{error_response, served_headers, whole_request};
use crate::{AppState, ids};

const FORMAT: ClientFormat = ClientFormat::OpenAiChat;

/// How long a linked image is kept.
const LINK_TTL_MS: u64 = 3_600_000;

/// `POST /v1/images/generations`.
pub async fn generations(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> Response {
    let id = ids::request_id();
    let generated = async {
        let (inbound, req) = whole_request(
            &state,
            &headers,
            crate::http::Payload::Http(body),
            FORMAT,
            &id,
            openai::parse_request,
            |r: &mut ImageRequest| &mut r.model,
            planned_image_request,
        )
        .await?;
        let format = req.format;
        let done = state.gateway.generate_images(inbound, req).await?;
        Ok::<_, GatewayError>((done, format))
    };
    match generated.await {
        Ok((done, format)) => answer(&state, &headers, &uri, &done, format, &id).await,
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "images refused or failed");
            error_response(FORMAT, &e, &id)
        }
    }
}

/// `POST /v1/images/edits`: OpenAI's multipart form (the images, a mask, the
/// prompt), through the same stages as a generation, on the image models
/// whose wire edits (OpenAI-compatible, Azure); answered as a generation is.
/// The whole form counts against `gateway.max_body_bytes`.
pub async fn edits(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    uri: Uri,
    form: Result<Multipart, MultipartRejection>,
) -> Response {
    let id = ids::request_id();
    let edited = async {
        let received = std::time::Instant::now();
        let caller = state.identity.authenticate(&headers).await?;
        let form = form.map_err(|e| {
            GatewayError::new(
                ErrorCode::InvalidRequest,
                format!("expected a multipart/form-data body: {e}"),
            )
        })?;
        let cap = state.gateway.snapshot().catalog.settings.max_body_bytes;
        let parts = read_form(form, cap).await?;
        let req = edits::parse_request(&parts).map_err(crate::http::refused)?;
        let (inbound, req) = crate::http::whole_parsed(
            &state,
            &headers,
            caller,
            req,
            FORMAT,
            &id,
            |r: &mut ImageRequest| &mut r.model,
            planned_image_request,
            received,
        )
        .await?;
        let format = req.format;
        let done = state.gateway.generate_images(inbound, req).await?;
        Ok::<_, GatewayError>((done, format))
    };
    match edited.await {
        Ok((done, format)) => answer(&state, &headers, &uri, &done, format, &id).await,
        Err(e) => {
            tracing::debug!(request_id = %id, code = e.code().as_str(), "image edit refused or failed");
            error_response(FORMAT, &e, &id)
        }
    }
}

/// Every part of a form, at most `cap` bytes in all (413 past it).
async fn read_form(mut form: Multipart, cap: usize) -> Result<Vec<FormPart>, GatewayError> {
    let broken = |e: axum::extract::multipart::MultipartError| {
        GatewayError::new(ErrorCode::InvalidRequest, format!("the form: {e}"))
    };
    let mut parts = Vec::new();
    let mut total = 0usize;
    while let Some(mut field) = form.next_field().await.map_err(broken)? {
        let mut part = FormPart {
            name: field.name().unwrap_or_default().to_owned(),
            filename: field.file_name().map(str::to_owned),
            content_type: field.content_type().map(str::to_owned),
            bytes: Vec::new(),
        };
        while let Some(chunk) = field.chunk().await.map_err(broken)? {
            total += chunk.len();
            if total > cap {
                return Err(GatewayError::new(
                    ErrorCode::RequestTooLarge,
                    format!("the form is over {cap} bytes (gateway.max_body_bytes)"),
                ));
            }
            part.bytes.extend_from_slice(&chunk);
        }
        parts.push(part);
    }
    Ok(parts)
}

/// The answer in OpenAI's shape: each image, or a link to the gateway's copy.
async fn answer(
    state: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
    done: &Imaged,
    format: Option<ImageFormat>,
    id: &str,
) -> Response {
    // OpenAI's default: links for DALL·E, the images for GPT image models.
    let gpt_image = openai::gpt_image(&done.served.upstream_model);
    let links = format.unwrap_or(if gpt_image { ImageFormat::B64Json } else { ImageFormat::Url })
        == ImageFormat::Url;
    let mut delivered = Vec::with_capacity(done.response.images.len());
    for image in &done.response.images {
        let d = if links {
            match keep(state, &image.b64, &image.mime).await {
                Some(name) => Delivered::Url(link(headers, uri, &name)),
                None => {
                    let err = GatewayError::new(
                        ErrorCode::InvalidRequest,
                        "an image could not be kept for its link: ask for response_format b64_json",
                    )
                    .with_status(502);
                    return error_response(FORMAT, &err, id);
                }
            }
        } else {
            Delivered::B64(&image.b64)
        };
        delivered.push((d, image.revised_prompt.as_deref()));
    }
    let usage = done
        .response
        .output_tokens
        .filter(|n| *n > 0)
        .map(|out| (done.response.input_tokens.unwrap_or(0), out));
    let body = openai::write_response(ids::unix_ms() / 1000, &delivered, usage);
    let mut resp = ([("content-type", "application/json")], body).into_response();
    served_headers(resp.headers_mut(), &done.served, id, &done.descriptor, done.rate.as_ref());
    resp
}

/// Keep an image for its link: its name (`<id>.<ext>`), or `None` when it
/// cannot be kept (not base64, or the store refused it).
async fn keep(state: &AppState, b64: &str, mime: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let unique = switchyard_core::clock::unique;
    let ext = match mime {
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        _ => "png",
    };
    let name = format!("{:016x}{:016x}.{ext}", unique(), unique());
    let mut value = Vec::with_capacity(mime.len() + 1 + bytes.len());
    value.extend_from_slice(mime.as_bytes());
    value.push(b'\n');
    value.extend_from_slice(&bytes);
    let images = &state.gateway.runtime.images;
    images.put(format!("img:{name}"), value.into(), LINK_TTL_MS).await;
    // Kept only if it can be read back (a store may refuse an entry too large).
    images.get(&[format!("img:{name}")]).await.map(|_| name)
}

/// The link a client fetches `name` at: this gateway as the client reached it.
fn link(headers: &HeaderMap, uri: &Uri, name: &str) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let scheme = match headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()) {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}/v1/images/files/{name}")
}

/// `GET /v1/images/files/{name}`: a kept image, no key (its name is the
/// capability); 404 once it expired.
pub async fn file(State(state): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    let ok = name.len() <= 40 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.');
    let found =
        if ok { state.gateway.runtime.images.get(&[format!("img:{name}")]).await } else { None };
    let Some((_, value)) = found else {
        return (StatusCode::NOT_FOUND, "no such image (links last an hour)").into_response();
    };
    let Some(split) = value.iter().position(|b| *b == b'\n') else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let mime = String::from_utf8_lossy(&value[..split]).into_owned();
    let bytes = value[split + 1..].to_vec();
    let mut resp = Response::new(Body::from(bytes));
    if let Ok(v) = HeaderValue::from_str(&mime) {
        resp.headers_mut().insert(axum::http::header::CONTENT_TYPE, v);
    }
    resp.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=3600"),
    );
    resp
}
