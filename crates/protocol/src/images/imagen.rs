//! Imagen's `:predict` (Gemini API and Vertex AI): one instance holding the
//! prompt, `parameters.sampleCount` images, the size as an aspect ratio.

use serde_json::{Map, Value, json};

use super::{Image, ImageRequest, ImageResponse};
use crate::ProtocolError;

/// The most images Imagen makes in one call.
pub const MAX_IMAGES: u32 = 4;

/// The aspect ratios Imagen makes, and their width / height.
const RATIOS: [(&str, f64); 5] =
    [("1:1", 1.0), ("4:3", 4.0 / 3.0), ("3:4", 0.75), ("16:9", 16.0 / 9.0), ("9:16", 9.0 / 16.0)];

/// The aspect ratio Imagen is asked for a `WIDTHxHEIGHT` size: the one within
/// 5% of it (`1792x1024` is 16:9); refused when none is.
fn aspect(size: &str) -> Result<Option<&'static str>, ProtocolError> {
    nearest(size, &RATIOS, "Imagen")
}

/// Of `ratios`, the one within 5% of a `WIDTHxHEIGHT` size (`None` for
/// `auto`); refused, naming what `who` makes, when none is.
pub(super) fn nearest(
    size: &str,
    ratios: &[(&'static str, f64)],
    who: &str,
) -> Result<Option<&'static str>, ProtocolError> {
    if size == "auto" {
        return Ok(None);
    }
    let ratio = size
        .split_once('x')
        .and_then(|(w, h)| Some((w.parse::<f64>().ok()?, h.parse::<f64>().ok()?)))
        .filter(|(w, h)| *w > 0.0 && *h > 0.0)
        .map(|(w, h)| w / h)
        .ok_or_else(|| ProtocolError::body(format!("size: {size:?} is not WIDTHxHEIGHT")))?;
    ratios.iter().find(|(_, r)| (ratio / r - 1.0).abs() <= 0.05).map(|(n, _)| Some(*n)).ok_or_else(
        || {
            let names: Vec<&str> = ratios.iter().map(|(n, _)| *n).collect();
            let (last, rest) = names.split_last().map_or((&"", &[][..]), |(l, r)| (l, r));
            ProtocolError::Unsupported(format!(
                "size {size}: {who} makes the aspect ratios {} and {last}",
                rest.join(", ")
            ))
        },
    )
}

/// The `:predict` body for `n` of `req`'s images (refused by name where Imagen
/// has no such setting).
pub fn encode_request(
    req: &ImageRequest,
    n: u32,
    upstream_model: &str,
) -> Result<Value, ProtocolError> {
    let _ = upstream_model;
    if let Some(q) = req.quality.as_deref().filter(|q| !matches!(*q, "auto" | "standard")) {
        return Err(ProtocolError::Unsupported(format!(
            "quality {q}: Imagen has no quality setting"
        )));
    }
    if let Some(s) = &req.style {
        return Err(ProtocolError::Unsupported(format!("style {s}: Imagen has no styles")));
    }
    if let Some(b) = req.background.as_deref().filter(|b| *b != "auto") {
        return Err(ProtocolError::Unsupported(format!(
            "background {b}: Imagen makes opaque images"
        )));
    }
    let mut parameters = Map::new();
    parameters.insert("sampleCount".into(), json!(n));
    if let Some(ratio) = req.size.as_deref().map(aspect).transpose()?.flatten() {
        parameters.insert("aspectRatio".into(), json!(ratio));
    }
    match req.output_format.as_deref() {
        None | Some("png") => {}
        Some("jpeg") => {
            parameters.insert("outputOptions".into(), json!({"mimeType": "image/jpeg"}));
        }
        Some(other) => {
            return Err(ProtocolError::Unsupported(format!(
                "output_format {other}: Imagen writes png or jpeg"
            )));
        }
    }
    Ok(json!({"instances": [{"prompt": req.prompt}], "parameters": parameters}))
}

/// A `:predict` answer: each prediction's image. Images the provider's filter
/// withheld are left out; an answer left with none is refused with its reason.
pub fn parse_response(body: &[u8]) -> Result<ImageResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("images: {e}")))?;
    let predictions = v.get("predictions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut filtered = None;
    let mut images = Vec::new();
    for p in predictions {
        match p.get("bytesBase64Encoded").and_then(Value::as_str) {
            Some(b64) => images.push(Image {
                b64: b64.to_owned(),
                mime: p.get("mimeType").and_then(Value::as_str).unwrap_or("image/png").to_owned(),
                revised_prompt: p.get("prompt").and_then(Value::as_str).map(str::to_owned),
            }),
            None => filtered = p.get("raiFilteredReason").and_then(Value::as_str).or(filtered),
        }
    }
    if images.is_empty() {
        return Err(ProtocolError::MalformedUpstream(match filtered {
            Some(why) => format!("images: every image was filtered: {why}"),
            None => "images: no image in the answer".into(),
        }));
    }
    Ok(ImageResponse { images, input_tokens: None, output_tokens: None })
}
