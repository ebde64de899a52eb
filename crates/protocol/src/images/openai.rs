//! OpenAI's image generation: the client's `POST /v1/images/generations` body
//! and answer, and the same shapes to and from an OpenAI-compatible upstream.

use serde_json::{Map, Value, json};

use super::{Image, ImageFormat, ImageRequest, ImageResponse};
use crate::ProtocolError;

/// The most images OpenAI makes in one call (DALL·E 3: one).
pub const MAX_IMAGES: u32 = 10;

fn text(o: &Map<String, Value>, field: &str) -> Result<Option<String>, ProtocolError> {
    match o.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ProtocolError::body(format!("{field}: expected a string"))),
    }
}

/// A client's body.
pub fn parse_request(body: &[u8]) -> Result<ImageRequest, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let Value::Object(o) = v else { return Err(ProtocolError::body("expected a JSON object")) };
    let prompt = match text(&o, "prompt")? {
        Some(p) if !p.trim().is_empty() => p,
        _ => return Err(ProtocolError::body("prompt: required, a non-empty string")),
    };
    let n = match o.get("n") {
        None | Some(Value::Null) => 1,
        Some(n) => n
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=MAX_IMAGES).contains(n))
            .ok_or_else(|| ProtocolError::body(format!("n: an integer from 1 to {MAX_IMAGES}")))?,
    };
    let format = match text(&o, "response_format")?.as_deref() {
        None => None,
        Some("url") => Some(ImageFormat::Url),
        Some("b64_json") => Some(ImageFormat::B64Json),
        Some(other) => {
            return Err(ProtocolError::body(format!(
                "response_format: {other:?} is not url or b64_json"
            )));
        }
    };
    Ok(ImageRequest {
        model: text(&o, "model")?.unwrap_or_default(),
        prompt,
        n,
        size: text(&o, "size")?,
        quality: text(&o, "quality")?,
        style: text(&o, "style")?,
        format,
        output_format: text(&o, "output_format")?,
        background: text(&o, "background")?,
        user: text(&o, "user")?,
        edit: None,
    })
}

/// Whether a model is one of OpenAI's GPT image models, which always answer
/// base64 and refuse `response_format`.
pub fn gpt_image(model: &str) -> bool {
    model.starts_with("gpt-image")
}

/// The body an OpenAI-compatible upstream is sent for `n` of `req`'s images,
/// for its `upstream_model`: always asked for base64 (the gateway serves
/// links itself).
pub fn encode_request(req: &ImageRequest, n: u32, upstream_model: &str) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(upstream_model));
    body.insert("prompt".into(), json!(req.prompt));
    body.insert("n".into(), json!(n));
    for (field, value) in [
        ("size", &req.size),
        ("quality", &req.quality),
        ("style", &req.style),
        ("output_format", &req.output_format),
        ("background", &req.background),
        ("user", &req.user),
    ] {
        if let Some(v) = value {
            body.insert(field.into(), json!(v));
        }
    }
    if !gpt_image(upstream_model) {
        body.insert("response_format".into(), json!("b64_json"));
    }
    Value::Object(body)
}

/// An OpenAI-compatible upstream's answer.
pub fn parse_response(body: &[u8]) -> Result<ImageResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("images: {e}")))?;
    let Some(data) = v.get("data").and_then(Value::as_array) else {
        return Err(ProtocolError::MalformedUpstream("images: no data".into()));
    };
    let mime = match v.get("output_format").and_then(Value::as_str) {
        Some("jpeg") => "image/jpeg",
        Some("webp") => "image/webp",
        _ => "image/png",
    };
    let images = data
        .iter()
        .enumerate()
        .map(|(i, item)| match item.get("b64_json").and_then(Value::as_str) {
            Some(b64) => Ok(Image {
                b64: b64.to_owned(),
                mime: mime.to_owned(),
                revised_prompt: item
                    .get("revised_prompt")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            }),
            // Asked for base64: a link instead is not an answer the gateway
            // can keep or pass on as asked.
            None => {
                Err(ProtocolError::MalformedUpstream(format!("images: data[{i}] has no b64_json")))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ImageResponse {
        images,
        input_tokens: v.pointer("/usage/input_tokens").and_then(Value::as_u64),
        output_tokens: v.pointer("/usage/output_tokens").and_then(Value::as_u64),
    })
}

/// One image as the client gets it: the image, or a link to it.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivered<'a> {
    /// Base64 of the image.
    B64(&'a str),
    /// A link the gateway serves the image at.
    Url(String),
}

/// The answer as OpenAI writes it.
pub fn write_response(
    created: u64,
    images: &[(Delivered<'_>, Option<&str>)],
    usage: Option<(u64, u64)>,
) -> Vec<u8> {
    let data: Vec<Value> = images
        .iter()
        .map(|(d, revised)| {
            let mut item = match d {
                Delivered::B64(b) => json!({"b64_json": b}),
                Delivered::Url(u) => json!({"url": u}),
            };
            if let Some(r) = revised {
                item["revised_prompt"] = json!(r);
            }
            item
        })
        .collect();
    let mut out = json!({"created": created, "data": data});
    if let Some((input, output)) = usage {
        out["usage"] = json!({
            "input_tokens": input,
            "output_tokens": output,
            "total_tokens": input + output,
        });
    }
    out.to_string().into_bytes()
}
