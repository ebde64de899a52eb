//! Gemini's native image models ("Nano Banana": `gemini-2.5-flash-image`,
//! `gemini-3-pro-image-preview`, …) on `generateContent` and
//! `streamGenerateContent`, on the Gemini fake and the Vertex Gemini fake:
//! which models they are ([`is_gemini_image_model`]), the image the fake
//! draws for a prompt and the images to edit ([`fake_gemini_image`]), and
//! the answer [`ReplyBody::Auto`](crate::ReplyBody::Auto) gives
//! ([`gemini_image_answer`]). Their `generationConfig` is checked with every
//! Gemini body ([`crate::validate::generation`]).
//!
//! Unlike Imagen's `:predict` these are generation calls: they are routed,
//! checked, scripted and recorded as any other `generateContent` call, and
//! only the automatic answer differs. A scripted reply (`push`,
//! `set_chooser`) wins as usual.
//!
//! # What the fake chooses where the API leaves it open
//!
//! - **What is read**: the prompt is the text of the last user turn that has
//!   any (its text parts joined with `\n`, thought parts skipped, as the echo
//!   reads it: [`crate::canned::last_user_text`]); the images to edit are
//!   that turn's `inlineData` parts of an `image/…` type, base64-decoded, in
//!   order (an edit has no mask: the model edits by instruction).
//! - **The image**: a generation's is [`fake_png`]`(prompt, 0)`, the first
//!   image Imagen's fake answers for the prompt; an edit's is
//!   [`fake_edit_png`]`(prompt, images, 0)`, the image OpenAI's edit fake
//!   answers for the same prompt and images; so a test tells an edit from a
//!   generation, and which images were passed. It is a PNG whatever the
//!   aspect ratio or size asked.
//! - **When it answers an image**: the model is an image model and
//!   `responseModalities` holds `IMAGE`, or is absent or empty (the image
//!   models' default is text and image). Any other Gemini call answers the
//!   usual echo.
//! - **Text**: a text part `"echo: <prompt>"` comes before the image only
//!   when `responseModalities` names `TEXT` (or is absent or empty).
//! - **Usage**: `candidatesTokenCount` is [`GEMINI_IMAGE_OUTPUT_TOKENS`]
//!   (what Gemini counts for a 1024px image; the short text part is not
//!   counted); `promptTokenCount` is
//!   [`CANNED_INPUT_TOKENS`](crate::canned::CANNED_INPUT_TOKENS) for the text
//!   plus [`GEMINI_IMAGE_INPUT_TOKENS`] per image to edit, each modality's
//!   share in `promptTokensDetails`.
//! - **Streaming**: the text part (if any) in a chunk of its own, then the
//!   image in the last chunk, which carries `finishReason` and the full usage.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{fake_edit_png, fake_png};
use crate::canned::{CANNED_INPUT_TOKENS, ECHO_PREFIX, GEMINI_RESPONSE_ID};

/// The output tokens Gemini counts for one generated image of up to
/// 1024x1024 pixels: the answer's `candidatesTokenCount`.
pub const GEMINI_IMAGE_OUTPUT_TOKENS: u64 = 1290;
/// The input tokens Gemini counts for one small image (either side up to
/// 384 pixels; the fake's images are 2x2): per image to edit.
pub const GEMINI_IMAGE_INPUT_TOKENS: u64 = 258;

/// Whether `model` is one of Gemini's native image models, which answer
/// images on `generateContent`: a `gemini-…` ID (a `models/` or
/// `publishers/google/models/` prefix skipped) one of whose `-`-separated
/// words is `image` (`gemini-2.5-flash-image`, `gemini-3-pro-image-preview`,
/// `gemini-2.0-flash-preview-image-generation`), read by name because the
/// request carries nothing else that says so.
pub fn is_gemini_image_model(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let name = name.split('@').next().unwrap_or(name);
    name.starts_with("gemini-") && name.split('-').any(|word| word == "image")
}

/// The fake's image for `prompt` and the images to edit (`inputs`, their
/// decoded bytes in order; empty for a generation): [`fake_png`]`(prompt,
/// 0)` for a generation, [`fake_edit_png`]`(prompt, inputs, 0)` for an edit,
/// so the same prompt and images draw the same image on every image fake.
pub fn fake_gemini_image(prompt: &str, inputs: &[Vec<u8>]) -> Vec<u8> {
    if inputs.is_empty() {
        return fake_png(prompt, 0);
    }
    let images: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    fake_edit_png(prompt, &images, 0)
}

/// [`fake_gemini_image`] in standard, padded base64, as the answer's
/// `inlineData.data` carries it: what a test compares the answer with.
pub fn fake_gemini_image_b64(prompt: &str, inputs: &[Vec<u8>]) -> String {
    base64::engine::general_purpose::STANDARD.encode(fake_gemini_image(prompt, inputs))
}

/// The whole (non-streamed) automatic answer of the fakes to `request` sent
/// to `model`: `None` when it is no image answer (not an image model, or
/// `IMAGE` not asked; see the module's notes), so a test can compute what
/// the fake sends.
pub fn gemini_image_answer(model: &str, request: &Value) -> Option<Value> {
    gemini_image_chunks(model, request, false).and_then(|mut chunks| chunks.pop())
}

/// The automatic answer as the responses the fake sends: one for a
/// generation, each chunk of a stream for a streamed call (`stream`).
pub(crate) fn gemini_image_chunks(
    model: &str,
    request: &Value,
    stream: bool,
) -> Option<Vec<Value>> {
    if !is_gemini_image_model(model) {
        return None;
    }
    let asked = modalities(request);
    let (text, image) = if asked.is_empty() {
        (true, true)
    } else {
        (asked.iter().any(|m| m == "TEXT"), asked.iter().any(|m| m == "IMAGE"))
    };
    if !image {
        return None;
    }
    let (prompt, inputs) = prompt_and_images(request);
    let text_part = text.then(|| json!({"text": format!("{ECHO_PREFIX}{prompt}")}));
    let image_part = json!({"inlineData": {
        "mimeType": "image/png",
        "data": fake_gemini_image_b64(&prompt, &inputs),
    }});
    let images_in = GEMINI_IMAGE_INPUT_TOKENS * u64::try_from(inputs.len()).unwrap_or(u64::MAX);
    let prompt_tokens = CANNED_INPUT_TOKENS.saturating_add(images_in);
    let mut prompt_details = vec![json!({"modality": "TEXT", "tokenCount": CANNED_INPUT_TOKENS})];
    if images_in > 0 {
        prompt_details.push(json!({"modality": "IMAGE", "tokenCount": images_in}));
    }
    let usage = |last: bool| {
        if last {
            json!({
                "promptTokenCount": prompt_tokens,
                "candidatesTokenCount": GEMINI_IMAGE_OUTPUT_TOKENS,
                "totalTokenCount": prompt_tokens.saturating_add(GEMINI_IMAGE_OUTPUT_TOKENS),
                "promptTokensDetails": prompt_details,
                "candidatesTokensDetails":
                    [{"modality": "IMAGE", "tokenCount": GEMINI_IMAGE_OUTPUT_TOKENS}],
            })
        } else {
            json!({
                "promptTokenCount": prompt_tokens,
                "totalTokenCount": prompt_tokens,
                "promptTokensDetails": prompt_details,
            })
        }
    };
    let response = |parts: Vec<Value>, last: bool| {
        let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if last {
            candidate["finishReason"] = "STOP".into();
        }
        json!({
            "candidates": [candidate],
            "usageMetadata": usage(last),
            "modelVersion": model,
            "responseId": GEMINI_RESPONSE_ID,
        })
    };
    Some(match (stream, text_part) {
        (false, text) => vec![response(text.into_iter().chain([image_part]).collect(), true)],
        (true, Some(text)) => vec![response(vec![text], false), response(vec![image_part], true)],
        (true, None) => vec![response(vec![image_part], true)],
    })
}

/// `generationConfig.responseModalities` as asked, uppercase (the API reads
/// them in any case); empty when absent.
fn modalities(request: &Value) -> Vec<String> {
    let config = request.get("generationConfig").or_else(|| request.get("generation_config"));
    let asked = config
        .and_then(|c| c.get("responseModalities").or_else(|| c.get("response_modalities")))
        .and_then(Value::as_array);
    asked.into_iter().flatten().filter_map(Value::as_str).map(str::to_ascii_uppercase).collect()
}

/// The prompt and the images to edit, read as the module's notes say.
fn prompt_and_images(request: &Value) -> (String, Vec<Vec<u8>>) {
    let turns = request.get("contents").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for turn in turns.iter().rev() {
        let role = turn.get("role").and_then(Value::as_str);
        if role.is_some_and(|r| r != "user") {
            continue;
        }
        let parts = turn.get("parts").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        let texts: Vec<&str> = parts
            .iter()
            .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect();
        if texts.is_empty() {
            continue;
        }
        let images = parts
            .iter()
            .filter_map(|p| p.get("inlineData").or_else(|| p.get("inline_data")))
            .filter(|blob| {
                let mime = blob.get("mimeType").or_else(|| blob.get("mime_type"));
                mime.and_then(Value::as_str).is_some_and(|m| m.starts_with("image/"))
            })
            .filter_map(|blob| blob.get("data").and_then(Value::as_str))
            .map(decode)
            .collect();
        return (texts.join("\n"), images);
    }
    (String::new(), Vec::new())
}

/// Base64 as Google's JSON mapping reads `bytes`: standard or URL-safe,
/// padded or not. Data that is neither counts as its own bytes, so an image
/// still tells edits apart.
fn decode(data: &str) -> Vec<u8> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    [STANDARD, URL_SAFE, STANDARD_NO_PAD, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(data).ok())
        .unwrap_or_else(|| data.as_bytes().to_vec())
}

#[cfg(test)]
#[path = "images_gemini_tests.rs"]
mod tests;
