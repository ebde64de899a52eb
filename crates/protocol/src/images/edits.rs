//! OpenAI's image edits (`POST /v1/images/edits`): a multipart form of the
//! images to edit, an optional mask and the prompt, read from a client into
//! an [`ImageRequest`] with its [`ImageEdit`], and written again, field for
//! field, to an OpenAI-compatible upstream's `/images/edits`.

use super::{ImageEdit, ImageFormat, ImageRequest, InputFile};
use crate::ProtocolError;

/// One part of a multipart form, as read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FormPart {
    /// The field's name (`image`, `image[]`, `prompt`).
    pub name: String,
    /// A file's name, for a file part.
    pub filename: Option<String>,
    /// A file's media type, where the client said.
    pub content_type: Option<String>,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The most images one edit takes (GPT image models; DALL·E 2 takes one).
pub const MAX_IMAGES: usize = 16;

fn text(p: &FormPart) -> Result<String, ProtocolError> {
    String::from_utf8(p.bytes.clone())
        .map_err(|_| ProtocolError::body(format!("{}: expected text", p.name)))
}

fn file(p: &FormPart) -> Result<InputFile, ProtocolError> {
    let mime = sniff(&p.bytes).ok_or_else(|| {
        ProtocolError::body(format!("{}: expected a PNG, JPEG or WebP image", p.name))
    })?;
    Ok(InputFile {
        name: p
            .filename
            .clone()
            .unwrap_or_else(|| format!("{}.{}", p.name.trim_end_matches("[]"), ext(mime))),
        mime: mime.to_owned(),
        bytes: p.bytes.clone(),
    })
}

/// An image's media type, by its first bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn ext(mime: &str) -> &'static str {
    match mime {
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        _ => "png",
    }
}

/// A client's form: `image` (or `image[]`, several), `mask`, `prompt`,
/// `model`, `n`, `size`, `quality`, `response_format`, `output_format`,
/// `background`, `input_fidelity`, `user`. An unknown field is refused by
/// name, as OpenAI refuses it.
pub fn parse_request(parts: &[FormPart]) -> Result<ImageRequest, ProtocolError> {
    let mut req = ImageRequest { n: 1, ..ImageRequest::default() };
    let mut edit = ImageEdit::default();
    for p in parts {
        match p.name.as_str() {
            "image" | "image[]" => edit.images.push(file(p)?),
            "mask" => {
                let mask = file(p)?;
                if mask.mime != "image/png" {
                    return Err(ProtocolError::body("mask: expected a PNG"));
                }
                edit.mask = Some(mask);
            }
            "prompt" => req.prompt = text(p)?,
            "model" => req.model = text(p)?,
            "n" => {
                req.n = text(p)?
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=super::openai::MAX_IMAGES).contains(n))
                    .ok_or_else(|| ProtocolError::body("n: an integer from 1 to 10"))?;
            }
            "size" => req.size = Some(text(p)?),
            "quality" => req.quality = Some(text(p)?),
            "output_format" => req.output_format = Some(text(p)?),
            "background" => req.background = Some(text(p)?),
            "user" => req.user = Some(text(p)?),
            "input_fidelity" => edit.input_fidelity = Some(text(p)?),
            "response_format" => {
                req.format = match text(p)?.as_str() {
                    "url" => Some(ImageFormat::Url),
                    "b64_json" => Some(ImageFormat::B64Json),
                    other => {
                        return Err(ProtocolError::body(format!(
                            "response_format: {other:?} is not url or b64_json"
                        )));
                    }
                };
            }
            other => return Err(ProtocolError::body(format!("{other}: unknown parameter"))),
        }
    }
    if req.prompt.trim().is_empty() {
        return Err(ProtocolError::body("prompt: required, a non-empty string"));
    }
    match edit.images.len() {
        0 => return Err(ProtocolError::body("image: required, the image to edit")),
        n if n > MAX_IMAGES => {
            return Err(ProtocolError::body(format!("image: at most {MAX_IMAGES} images")));
        }
        _ => {}
    }
    req.edit = Some(edit);
    Ok(req)
}

/// The form an OpenAI-compatible upstream is sent for `n` of `req`'s edited
/// images, for its `upstream_model` (always asked for base64, as a
/// generation is), between `boundary`s.
pub fn encode_request(req: &ImageRequest, n: u32, upstream_model: &str, boundary: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut field = |name: &str, value: &str| {
        out.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    };
    field("model", upstream_model);
    field("prompt", &req.prompt);
    field("n", &n.to_string());
    for (name, value) in [
        ("size", &req.size),
        ("quality", &req.quality),
        ("output_format", &req.output_format),
        ("background", &req.background),
        ("user", &req.user),
    ] {
        if let Some(v) = value {
            field(name, v);
        }
    }
    let edit = req.edit.clone().unwrap_or_default();
    if let Some(f) = &edit.input_fidelity {
        field("input_fidelity", f);
    }
    if !super::openai::gpt_image(upstream_model) {
        field("response_format", "b64_json");
    }
    // One image goes as `image` (every model takes it); several as `image[]`.
    let name = if edit.images.len() > 1 { "image[]" } else { "image" };
    let files = edit.images.iter().map(|f| (name, f)).chain(edit.mask.iter().map(|m| ("mask", m)));
    for (name, f) in files {
        let filename: String =
            f.name.chars().filter(|c| !matches!(c, '"' | '\r' | '\n' | '\\')).collect();
        out.extend_from_slice(
            format!(
                "--{boundary}\r\ncontent-disposition: form-data; name=\"{name}\"; \
                 filename=\"{filename}\"\r\ncontent-type: {}\r\n\r\n",
                f.mime
            )
            .as_bytes(),
        );
        out.extend_from_slice(&f.bytes);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    out
}
