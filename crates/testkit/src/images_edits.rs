//! OpenAI's image edits (`POST /v1/images/edits`, Azure OpenAI's too), as the
//! fakes read, check and answer them: a multipart/form-data body read from
//! the bytes the fake recorded ([`read_form`], with `multer`, axum's own
//! parser), checked as the real API checks it ([`check_edit`]), and answered
//! as a generation for the same model is ([`edit_answer_at`]), its images
//! drawn from the prompt and the input images ([`fake_edit_png`]). See
//! [`crate::images`] for the rules and the fake's choices.

use std::convert::Infallible;

use bytes::Bytes;
use serde_json::{Map, Number, Value};

use super::openai::{Family, OpenAiRequest, listed, one_of, openai, openai_answer_as};
use super::{OPENAI_DEFAULT_MODEL, PNG_SIGNATURE, fake_image_url, fake_png, fake_png_b64};

/// Every field the endpoint defines, for some model (`stream` and
/// `partial_images` are refused, as the generations fake refuses them: the
/// fakes stream no images).
const FIELDS: [&str; 14] = [
    "image",
    "image[]",
    "mask",
    "prompt",
    "model",
    "n",
    "size",
    "quality",
    "response_format",
    "user",
    "output_format",
    "background",
    "output_compression",
    "input_fidelity",
];
/// The fields that carry files.
const FILES: [&str; 3] = ["image", "image[]", "mask"];
/// The fields a form carries as text but the generation checks read as numbers.
const NUMBERS: [&str; 2] = ["n", "output_compression"];

/// gpt-image-…: the most input images one edit takes.
pub const GPT_IMAGE_MAX_IMAGES: usize = 16;
/// dall-e-2: an input image's size must be below this (4 MiB).
pub const DALL_E_2_MAX_IMAGE_BYTES: usize = 4 * 1024 * 1024;
/// gpt-image-…: each input image's size must be below this (50 MiB).
pub const GPT_IMAGE_MAX_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// A mask's size must be below this (4 MiB), whatever the model.
pub const MASK_MAX_BYTES: usize = 4 * 1024 * 1024;
/// gpt-image-…: the input tokens the fake counts for each input image (65
/// base and one 129-token tile, as OpenAI counts a small image; the fake's
/// images are 2x2), whatever its size or `input_fidelity`.
pub const GPT_IMAGE_EDIT_IMAGE_TOKENS: u64 = 194;

/// The message OpenAI's file endpoints answer for a body that is no
/// multipart form.
fn not_multipart(header: &str) -> String {
    format!(
        "Invalid Content-Type header ({header}), expected multipart/form-data. (HINT: If you're \
         using curl, you can pass -H 'Content-Type: multipart/form-data')"
    )
}

// ---------------------------------------------------------------------------
// The form

/// One part of a multipart/form-data body, as the fake read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormPart {
    /// The part's name (`prompt`, `image[]`).
    pub name: String,
    /// Its `filename`, for a file.
    pub file_name: Option<String>,
    /// Its declared `Content-Type`, lowercase, without parameters.
    pub content_type: Option<String>,
    /// Its bytes.
    pub data: Bytes,
}

impl FormPart {
    /// A text field.
    pub fn text(name: &str, value: &str) -> FormPart {
        FormPart {
            name: name.to_owned(),
            file_name: None,
            content_type: None,
            data: Bytes::copy_from_slice(value.as_bytes()),
        }
    }

    /// A file named `file_name`, of `content_type` if given.
    pub fn file(
        name: &str,
        file_name: &str,
        content_type: Option<&str>,
        data: impl Into<Bytes>,
    ) -> FormPart {
        FormPart {
            name: name.to_owned(),
            file_name: Some(file_name.to_owned()),
            content_type: content_type.map(str::to_ascii_lowercase),
            data: data.into(),
        }
    }

    /// Whether the part is a file: it has a file name, or a content type
    /// other than text's.
    pub fn is_file(&self) -> bool {
        self.file_name.is_some()
            || self.content_type.as_deref().is_some_and(|t| !t.starts_with("text/"))
    }

    /// The file's type as the API takes it: the declared one, else the one
    /// its file name's extension says (a declared `application/octet-stream`
    /// stays so, and is refused, as the API refuses it).
    fn mimetype(&self) -> Option<String> {
        if let Some(declared) = &self.content_type {
            return Some(declared.clone());
        }
        let (_, extension) = self.file_name.as_deref()?.rsplit_once('.')?;
        let guessed = match extension.to_ascii_lowercase().as_str() {
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "webp" => "image/webp",
            "gif" => "image/gif",
            _ => return None,
        };
        Some(guessed.to_owned())
    }
}

/// The parts of a multipart/form-data body, in order; `content_type`: the
/// request's header. `Err`: the API's message for a body that is no
/// multipart form (another content type, or none), or one that does not
/// parse.
pub async fn read_form(content_type: Option<&str>, raw: Bytes) -> Result<Vec<FormPart>, String> {
    let header = content_type.unwrap_or_default();
    let boundary = multer::parse_boundary(header).map_err(|e| match e {
        multer::Error::NoBoundary => {
            "Could not parse multipart form: the Content-Type header names no boundary.".to_owned()
        }
        _ => not_multipart(header),
    })?;
    // The whole body arrived already (the fake records it): one chunk.
    let body = futures_util::stream::once(async move { Ok::<Bytes, Infallible>(raw) });
    let mut form = multer::Multipart::new(body, boundary);
    let unreadable = |e: multer::Error| format!("Could not parse multipart form: {e}.");
    let mut parts = Vec::new();
    while let Some(field) = form.next_field().await.map_err(unreadable)? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(str::to_owned);
        let content_type = field.content_type().map(|m| m.essence_str().to_ascii_lowercase());
        let data = field.bytes().await.map_err(unreadable)?;
        parts.push(FormPart { name, file_name, content_type, data });
    }
    Ok(parts)
}

// ---------------------------------------------------------------------------
// Image files

/// An image format the fake tells by a file's first bytes (its magic number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    /// `89 50 4E 47 0D 0A 1A 0A`.
    Png,
    /// `FF D8 FF`.
    Jpeg,
    /// `RIFF`, four bytes of size, `WEBP`.
    Webp,
    /// `GIF87a` or `GIF89a` (told apart only to be refused by name).
    Gif,
}

impl ImageFormat {
    /// The format `bytes` start as, if any the fake knows.
    pub fn sniff(bytes: &[u8]) -> Option<ImageFormat> {
        if bytes.starts_with(&PNG_SIGNATURE) {
            Some(ImageFormat::Png)
        } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
            Some(ImageFormat::Jpeg)
        } else if bytes.get(..4) == Some(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
            Some(ImageFormat::Webp)
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some(ImageFormat::Gif)
        } else {
            None
        }
    }

    /// Its MIME type.
    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
            ImageFormat::Webp => "image/webp",
            ImageFormat::Gif => "image/gif",
        }
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    let [x, y, z] = b.get(at..at + 3)?.try_into().ok()?;
    Some(u32::from_le_bytes([x, y, z, 0]))
}

/// An image's width and height in pixels, read from its header (PNG's
/// `IHDR`, JPEG's frame header, WebP's `VP8 `/`VP8L`/`VP8X` chunk, GIF's
/// screen descriptor); `None` when `bytes` are none of those or cut short.
pub fn image_dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    match ImageFormat::sniff(bytes)? {
        ImageFormat::Png => {
            // The first chunk must be IHDR: its length, type, width, height.
            (bytes.get(12..16)? == b"IHDR").then_some(())?;
            Some((be32(bytes, 16)?, be32(bytes, 20)?))
        }
        ImageFormat::Jpeg => jpeg_dimensions(bytes),
        ImageFormat::Webp => match bytes.get(12..16)? {
            // Lossy: a key frame's tag, its start code, 14-bit width and height.
            b"VP8 " => {
                (bytes.get(23..26)? == [0x9d, 0x01, 0x2a]).then_some(())?;
                let side = |at| le16(bytes, at).map(|v| u32::from(v & 0x3fff));
                Some((side(26)?, side(28)?))
            }
            // Lossless: a signature byte, then width - 1 and height - 1 in 14 bits each.
            b"VP8L" => {
                (*bytes.get(20)? == 0x2f).then_some(())?;
                let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            // Extended: flags, three reserved bytes, the canvas's width - 1 and height - 1.
            b"VP8X" => Some((le24(bytes, 24)? + 1, le24(bytes, 27)? + 1)),
            _ => None,
        },
        ImageFormat::Gif => Some((u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?))),
    }
}

/// A JPEG's size, from its first frame header (`SOFn`), walking the segments
/// before it.
fn jpeg_dimensions(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // A marker: 0xFF (fill bytes allowed), then its code.
        if *b.get(at)? != 0xff {
            return None;
        }
        while *b.get(at)? == 0xff {
            at += 1;
        }
        let marker = *b.get(at)?;
        at += 1;
        match marker {
            // Standalone markers: no length.
            0x01 | 0xd0..=0xd7 => {}
            // The end, or the scan, before any frame header.
            0xd9 | 0xda => return None,
            // A frame header (not DHT, JPG or DAC, which share the range):
            // its length, precision, height, width.
            0xc0..=0xcf if !matches!(marker, 0xc4 | 0xc8 | 0xcc) => {
                return Some((u32::from(be16(b, at + 5)?), u32::from(be16(b, at + 3)?)));
            }
            // Any other segment: skip it (its length counts itself).
            _ => at += usize::from(be16(b, at)?),
        }
    }
}

// ---------------------------------------------------------------------------
// The fake's answers

/// What an edit's images are drawn from: the prompt, `|`, and a 64-bit
/// FNV-1a hash (16 hex digits) of the input images in order, each its length
/// (8 bytes, little-endian) then its bytes. The mask does not count.
pub fn edit_key(prompt: &str, images: &[&[u8]]) -> String {
    let fnv = |h: u64, b: &u8| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    let h = images.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, image| {
        // The length first, so where one image ends and the next starts counts.
        let len = u64::try_from(image.len()).unwrap_or(u64::MAX);
        image.iter().fold(len.to_le_bytes().iter().fold(h, fnv), fnv)
    });
    format!("{prompt}|{h:016x}")
}

/// The fake's image `index` for an edit of `images` (the `image`/`image[]`
/// parts' bytes, in order) by `prompt`: [`fake_png`] of [`edit_key`], so a
/// test can tell which images were passed (and that they were).
pub fn fake_edit_png(prompt: &str, images: &[&[u8]], index: usize) -> Vec<u8> {
    fake_png(&edit_key(prompt, images), index)
}

/// [`fake_edit_png`] in standard, padded base64, as an edit's `b64_json`
/// carries it.
pub fn fake_edit_png_b64(prompt: &str, images: &[&[u8]], index: usize) -> String {
    fake_png_b64(&edit_key(prompt, images), index)
}

/// The URL an edit's URL answer gives image `index` ([`fake_image_url`] of
/// [`edit_key`]).
pub fn fake_edit_image_url(prompt: &str, images: &[&[u8]], index: usize) -> String {
    fake_image_url(&edit_key(prompt, images), index)
}

// ---------------------------------------------------------------------------
// Checks and answers

/// `Err(message)`: the real API refuses the edit `form` with a 400 saying
/// `message`. `deployment`: on Azure's deployment route, whose `model` (the
/// deployment) names the model; else the form's `model` does.
pub fn check_edit(deployment: bool, model: &str, form: &[FormPart]) -> Result<(), String> {
    edit(deployment, model, form).map(drop)
}

/// The answer to an edit [`check_edit`] passed, as a generation for the same
/// model answers, `created` given (Unix seconds), its images
/// [`fake_edit_png`]'s (or [`fake_edit_image_url`]'s); a gpt-image model's
/// `usage` counts [`GPT_IMAGE_EDIT_IMAGE_TOKENS`] per input image besides the
/// prompt's. A form it refuses gets `{"error": message}`.
pub fn edit_answer_at(deployment: bool, model: &str, form: &[FormPart], created: u64) -> Value {
    edit_reply(deployment, model, form, created)
        .unwrap_or_else(|message| serde_json::json!({ "error": message }))
}

/// [`edit_answer_at`], or the refusal's message.
pub(crate) fn edit_reply(
    deployment: bool,
    model: &str,
    form: &[FormPart],
    created: u64,
) -> Result<Value, String> {
    let e = edit(deployment, model, form)?;
    let image_tokens = GPT_IMAGE_EDIT_IMAGE_TOKENS * u64::try_from(e.images).unwrap_or(u64::MAX);
    Ok(openai_answer_as(&e.request, created, &e.key, image_tokens))
}

/// An edit the API takes: the generation it answers as, what its images are
/// drawn from, how many images it was given.
struct Edit {
    request: OpenAiRequest,
    key: String,
    images: usize,
}

fn duplicate(name: &str) -> String {
    format!("Duplicate parameter: '{name}'. Send it once (several images as 'image[]').")
}

/// A text field as the generation checks read it: `n` and
/// `output_compression` as numbers where they are, the rest as strings.
fn form_value(name: &str, text: &str) -> Value {
    if !NUMBERS.contains(&name) {
        return Value::from(text);
    }
    if let Ok(n) = text.parse::<u64>() {
        Value::from(n)
    } else if let Ok(n) = text.parse::<i64>() {
        Value::from(n)
    } else {
        text.parse::<f64>().ok().and_then(Number::from_f64).map_or(Value::from(text), Value::Number)
    }
}

fn edit(deployment: bool, path_model: &str, form: &[FormPart]) -> Result<Edit, String> {
    let mut text = Map::new();
    let mut single = None;
    let mut several = Vec::new();
    let mut mask = None;
    for part in form {
        let name = part.name.as_str();
        if !FIELDS.contains(&name) {
            return Err(format!("Unrecognized request argument supplied: {name}"));
        }
        match (FILES.contains(&name), part.is_file()) {
            (true, false) => {
                return Err(format!(
                    "Invalid type for '{name}': expected a file, but got a string instead."
                ));
            }
            (false, true) => {
                return Err(format!(
                    "Invalid type for '{name}': expected a string, but got a file instead."
                ));
            }
            _ => {}
        }
        match name {
            "image[]" => several.push(part),
            "image" if single.replace(part).is_some() => return Err(duplicate(name)),
            "mask" if mask.replace(part).is_some() => return Err(duplicate(name)),
            "image" | "mask" => {}
            _ => {
                let value = std::str::from_utf8(&part.data)
                    .map_err(|_| format!("Invalid '{name}': expected UTF-8 text."))?;
                if text.insert(name.to_owned(), form_value(name, value)).is_some() {
                    return Err(duplicate(name));
                }
            }
        }
    }

    // The model: the deployment's, the form's, or dall-e-2; dall-e-3 edits nothing.
    let model = match (deployment, text.get("model")) {
        (true, _) => path_model,
        (false, Some(Value::String(m))) => m.as_str(),
        (false, _) => OPENAI_DEFAULT_MODEL,
    };
    let family = match Family::of(model, deployment) {
        Some(family @ (Family::DallE2 | Family::GptImage)) => family,
        Some(Family::DallE3) if deployment => {
            return Err(format!(
                "The images edit operation does not work with the specified model, {model}. \
                 Please choose different model and try again."
            ));
        }
        None if deployment => {
            return Err(format!(
                "The deployment '{model}' is no image edit model the fake knows: name it after \
                 its model (dall-e-2, gpt-image-…)."
            ));
        }
        _ => {
            return Err(format!(
                "Invalid value: '{model}'. Supported values are: 'dall-e-2' and 'gpt-image-1'."
            ));
        }
    };
    let gpt_image = family == Family::GptImage;

    // Edits' own field; then the generation's checks for the rest.
    if text.contains_key("input_fidelity") && !gpt_image {
        return Err("Unknown parameter: 'input_fidelity'.".into());
    }
    one_of(&text, "input_fidelity", &["high", "low"], "low")?;
    text.remove("input_fidelity");
    let request = openai(deployment, path_model, &Value::Object(text))?;

    // The images: one (`image`) or several (`image[]`), never both.
    let (images, named): (Vec<&FormPart>, fn(usize) -> String) = match (single, several.is_empty())
    {
        (Some(_), false) => {
            return Err("Invalid 'image': send one 'image' or several 'image[]', not both.".into());
        }
        (Some(one), true) => (vec![one], |_| "image".to_owned()),
        (None, false) => (several, |i| format!("image[{i}]")),
        (None, true) => return Err("Missing required parameter: 'image'.".into()),
    };
    if !gpt_image && images.len() > 1 {
        return Err(format!(
            "Invalid 'image': dall-e-2 edits exactly one image, but got {} images instead.",
            images.len()
        ));
    }
    if images.len() > GPT_IMAGE_MAX_IMAGES {
        return Err(format!(
            "Invalid 'image': array too long. Expected an array with maximum length \
             {GPT_IMAGE_MAX_IMAGES}, but got an array with length {} instead.",
            images.len()
        ));
    }
    let (formats, max, cap): (&[ImageFormat], _, _) = if gpt_image {
        (
            &[ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp],
            GPT_IMAGE_MAX_IMAGE_BYTES,
            "50 MB",
        )
    } else {
        (&[ImageFormat::Png], DALL_E_2_MAX_IMAGE_BYTES, "4 MB")
    };
    for (i, image) in images.iter().enumerate() {
        let what = format!("image {}", i + 1);
        check_file(&named(i), &what, image, formats, max, cap)?;
        if !gpt_image {
            match image_dimensions(&image.data) {
                Some((w, h)) if w == h => {}
                Some((w, h)) => {
                    return Err(format!(
                        "Invalid input image: dall-e-2 edits square images only, but got an \
                         image of {w}x{h}."
                    ));
                }
                None => return Err(invalid_file(&what)),
            }
        }
    }

    // The mask: a PNG of the (first) image's size.
    if let Some(mask) = mask {
        check_file("mask", "mask", mask, &[ImageFormat::Png], MASK_MAX_BYTES, "4 MB")?;
        let (w, h) = image_dimensions(&mask.data).ok_or_else(|| invalid_file("mask"))?;
        if let Some((iw, ih)) = images.first().and_then(|first| image_dimensions(&first.data))
            && (iw, ih) != (w, h)
        {
            return Err(format!(
                "Invalid mask: the mask must have the same dimensions as the image ({iw}x{ih}), \
                 but it is {w}x{h}."
            ));
        }
    }

    let bytes: Vec<&[u8]> = images.iter().map(|part| &part.data[..]).collect();
    let key = edit_key(&request.prompt, &bytes);
    Ok(Edit { request, key, images: images.len() })
}

fn invalid_file(what: &str) -> String {
    format!("Invalid image file or mode for {what}, please check your image file.")
}

/// A file part `param` (`what` in the API's words) of one of `formats`, by
/// its type and by its bytes, smaller than `max` bytes (`cap` in words).
fn check_file(
    param: &str,
    what: &str,
    part: &FormPart,
    formats: &[ImageFormat],
    max: usize,
    cap: &str,
) -> Result<(), String> {
    let mimetype = part.mimetype().ok_or_else(|| {
        format!(
            "Invalid file '{param}': failed to determine mimetype. Ensure you are providing the \
             file's mimetype as part of the 'Content-Type' header."
        )
    })?;
    let Some(format) = formats.iter().find(|f| f.mime() == mimetype) else {
        let mimes: Vec<&str> = formats.iter().map(|f| f.mime()).collect();
        return Err(format!(
            "Invalid file '{param}': unsupported mimetype ('{mimetype}'). Supported file formats \
             are {}.",
            listed(&mimes)
        ));
    };
    // The type says one format; the bytes must be that format.
    if ImageFormat::sniff(&part.data) != Some(*format) {
        return Err(invalid_file(what));
    }
    if part.data.len() >= max {
        return Err(format!(
            "Invalid file '{param}': the file must be less than {cap}, but it is {} bytes.",
            part.data.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "images_edits_tests.rs"]
mod tests;
