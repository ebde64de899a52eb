//! Gemini's native image models (`gemini-2.5-flash-image`, `gemini-3-pro-image-…`)
//! on `generateContent` (Gemini API and Vertex AI): the prompt and, for an
//! edit, the images to edit as inline parts, `responseModalities: ["IMAGE"]`,
//! the size as an aspect ratio; one image a call, read from the answer's
//! inline data. They edit by instruction: a mask is refused by name.

use base64::Engine;
use serde_json::{Map, Value, json};

use super::{Image, ImageRequest, ImageResponse};
use crate::ProtocolError;

/// The most images one call makes.
pub const MAX_IMAGES: u32 = 1;

/// The aspect ratios Gemini's image models make, and their width / height.
const RATIOS: [(&str, f64); 10] = [
    ("1:1", 1.0),
    ("2:3", 2.0 / 3.0),
    ("3:2", 1.5),
    ("3:4", 0.75),
    ("4:3", 4.0 / 3.0),
    ("4:5", 0.8),
    ("5:4", 1.25),
    ("9:16", 9.0 / 16.0),
    ("16:9", 16.0 / 9.0),
    ("21:9", 21.0 / 9.0),
];

/// Whether `upstream_model` is one of Gemini's own image models, served on
/// `generateContent` rather than Imagen's `:predict`.
pub fn is_native(upstream_model: &str) -> bool {
    let m = upstream_model.rsplit('/').next().unwrap_or(upstream_model);
    m.starts_with("gemini-") && m.contains("-image")
}

/// The aspect ratio asked for a `WIDTHxHEIGHT` size: the one within 5% of
/// it; refused when none is.
fn aspect(size: &str) -> Result<Option<&'static str>, ProtocolError> {
    super::imagen::nearest(size, &RATIOS, "Gemini's image models")
}

/// The `generateContent` body for one of `req`'s images (refused by name
/// where the model has no such setting).
pub fn encode_request(req: &ImageRequest) -> Result<Value, ProtocolError> {
    if let Some(q) = req.quality.as_deref().filter(|q| !matches!(*q, "auto" | "standard")) {
        return Err(ProtocolError::Unsupported(format!(
            "quality {q}: Gemini's image models have no quality setting"
        )));
    }
    if let Some(s) = &req.style {
        return Err(ProtocolError::Unsupported(format!(
            "style {s}: Gemini's image models have no styles"
        )));
    }
    if let Some(b) = req.background.as_deref().filter(|b| *b != "auto") {
        return Err(ProtocolError::Unsupported(format!(
            "background {b}: Gemini's image models make opaque images"
        )));
    }
    if let Some(f) = req.output_format.as_deref().filter(|f| *f != "png") {
        return Err(ProtocolError::Unsupported(format!(
            "output_format {f}: Gemini's image models write png"
        )));
    }
    let mut parts = vec![json!({"text": req.prompt})];
    if let Some(edit) = &req.edit {
        if edit.mask.is_some() {
            return Err(ProtocolError::Unsupported(
                "mask: Gemini's image models edit by instruction, with no mask; say in the \
                 prompt what to change"
                    .to_owned(),
            ));
        }
        if let Some(f) = &edit.input_fidelity {
            return Err(ProtocolError::Unsupported(format!(
                "input_fidelity {f}: Gemini's image models have no such setting"
            )));
        }
        for image in &edit.images {
            let data = base64::engine::general_purpose::STANDARD.encode(&image.bytes);
            parts.push(json!({"inlineData": {"mimeType": image.mime, "data": data}}));
        }
    }
    let mut config = Map::new();
    config.insert("responseModalities".into(), json!(["IMAGE"]));
    if let Some(ratio) = req.size.as_deref().map(aspect).transpose()?.flatten() {
        config.insert("imageConfig".into(), json!({"aspectRatio": ratio}));
    }
    Ok(json!({"contents": [{"role": "user", "parts": parts}], "generationConfig": config}))
}

/// A `generateContent` answer: its inline images, and the tokens it counted.
/// An answer with none is refused with the reason given (a safety block).
pub fn parse_response(body: &[u8]) -> Result<ImageResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("images: {e}")))?;
    let mut images = Vec::new();
    let mut reason = v.pointer("/promptFeedback/blockReason").and_then(Value::as_str);
    for c in v.get("candidates").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
        let parts = c.pointer("/content/parts").and_then(Value::as_array);
        for p in parts.map_or(&[][..], Vec::as_slice) {
            if let Some(data) = p.pointer("/inlineData/data").and_then(Value::as_str) {
                let mime = p.pointer("/inlineData/mimeType").and_then(Value::as_str);
                images.push(Image {
                    b64: data.to_owned(),
                    mime: mime.unwrap_or("image/png").to_owned(),
                    revised_prompt: None,
                });
            }
        }
        reason = reason.or(c.get("finishReason").and_then(Value::as_str));
    }
    if images.is_empty() {
        return Err(ProtocolError::MalformedUpstream(match reason {
            Some(why) => format!("images: no image in the answer ({why})"),
            None => "images: no image in the answer".into(),
        }));
    }
    let count = |k: &str| v.pointer(&format!("/usageMetadata/{k}")).and_then(Value::as_u64);
    Ok(ImageResponse {
        images,
        input_tokens: count("promptTokenCount"),
        output_tokens: count("candidatesTokenCount"),
    })
}
