//! Image generation: the canonical request and answer, and their wire forms.
//!
//! | side | format | module |
//! |---|---|---|
//! | client | OpenAI `POST /v1/images/generations` | [`openai`] |
//! | upstream | OpenAI-compatible `/images/generations` | [`openai`] |
//! | upstream | Imagen `:predict` (Gemini API, Vertex AI) | [`imagen`] |
//! | upstream | Gemini's image models on `generateContent` (Gemini API, Vertex AI): generations and edits | [`gemini`] |
//!
//! Upstreams are always asked for the images themselves (base64), never for
//! links: the gateway answers a client that wants `url` with links of its own
//! to the images it keeps, so the answer is in OpenAI's shape whatever served
//! it. A request for more images than a provider makes in one call is sent in
//! several. What a wire cannot express (a size Imagen does not make, a style)
//! is refused by name, never dropped.

pub mod edits;
pub mod gemini;
pub mod imagen;
pub mod openai;

use serde::{Deserialize, Serialize};

use crate::ProtocolError;

/// How the client wants the images.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// A link to each image.
    Url,
    /// Each image in the answer, base64.
    B64Json,
}

/// An image generation request, whatever format it came in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageRequest {
    /// The model as the client named it.
    pub model: String,
    /// What to draw.
    pub prompt: String,
    /// How many images (1 to 10).
    pub n: u32,
    /// `WIDTHxHEIGHT` or `auto`; `None`: the model's default.
    pub size: Option<String>,
    /// `standard`, `hd`, `low`, `medium`, `high`, `auto`.
    pub quality: Option<String>,
    /// `vivid` or `natural` (DALL·E 3).
    pub style: Option<String>,
    /// `url` or `b64_json`; `None`: the model's default (`url` for DALL·E,
    /// `b64_json` for GPT image models).
    pub format: Option<ImageFormat>,
    /// `png`, `jpeg` or `webp`.
    pub output_format: Option<String>,
    /// `transparent`, `opaque` or `auto` (GPT image models).
    pub background: Option<String>,
    /// The end user, as OpenAI's `user`.
    pub user: Option<String>,
    /// An edit of images given (`/v1/images/edits`); `None`: a generation.
    pub edit: Option<ImageEdit>,
}

/// What an edit starts from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageEdit {
    /// The images to edit (DALL·E 2: one).
    pub images: Vec<InputFile>,
    /// Where to edit: a PNG whose transparent areas are redrawn.
    pub mask: Option<InputFile>,
    /// `high` or `low` (GPT image models).
    pub input_fidelity: Option<String>,
}

/// A file a client sent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InputFile {
    /// Its name, as sent.
    pub name: String,
    /// Its media type, by its bytes (`image/png`).
    pub mime: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// One generated image.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// The image's bytes, base64 (standard alphabet, padded).
    pub b64: String,
    /// Its media type (`image/png`).
    pub mime: String,
    /// The prompt the model drew from, where it rewrote the one given.
    pub revised_prompt: Option<String>,
}

/// An image generation answer.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ImageResponse {
    /// The images, in order.
    pub images: Vec<Image>,
    /// Input tokens, where the upstream counts them (GPT image models).
    pub input_tokens: Option<u64>,
    /// Output tokens, where the upstream counts them.
    pub output_tokens: Option<u64>,
}

impl ImageResponse {
    /// The answers to the calls of one request, as one: images in order,
    /// tokens summed (unknown where any call's is).
    pub fn join(parts: Vec<ImageResponse>) -> ImageResponse {
        let mut out = ImageResponse {
            input_tokens: Some(0),
            output_tokens: Some(0),
            ..ImageResponse::default()
        };
        for p in parts {
            out.images.extend(p.images);
            out.input_tokens = out.input_tokens.zip(p.input_tokens).map(|(a, b)| a + b);
            out.output_tokens = out.output_tokens.zip(p.output_tokens).map(|(a, b)| a + b);
        }
        out
    }
}

/// How an upstream wire generates images ([`crate::WireSpec::images`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageSpec {
    /// Relative to the provider's endpoint; `{model}` stands for the upstream
    /// model where the path names it.
    pub path: &'static str,
    /// Where it edits images, likewise; `None`: it edits none.
    pub edit_path: Option<&'static str>,
    /// The bodies it exchanges.
    pub body: ImageBody,
}

/// The bodies an image endpoint exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageBody {
    /// OpenAI's `/images/generations` ([`openai`]).
    OpenAi,
    /// Imagen's `:predict` ([`imagen`]).
    Imagen,
    /// Gemini's image models on the wire's `generateContent` ([`gemini`]).
    Gemini,
}

impl ImageSpec {
    /// How `wire` makes images with `upstream_model`: Gemini's own image
    /// models are served on its `generateContent` (where they edit too), not
    /// on Imagen's `:predict`.
    pub fn for_model(self, wire: &crate::WireSpec, upstream_model: &str) -> ImageSpec {
        match self.body {
            ImageBody::Imagen if gemini::is_native(upstream_model) => {
                ImageSpec { path: wire.path, edit_path: Some(wire.path), body: ImageBody::Gemini }
            }
            _ => self,
        }
    }

    /// The URL of a call for `req` to the upstream `model` at `endpoint`.
    pub fn url(
        &self,
        wire: &crate::WireSpec,
        endpoint: &str,
        model: &str,
        req: &ImageRequest,
    ) -> String {
        let path = match &req.edit {
            Some(_) => self.edit_path.unwrap_or(self.path),
            None => self.path,
        };
        if path.contains("{model}") {
            format!("{endpoint}{}", path.replace("{model}", &wire.model_segment(model)))
        } else {
            format!("{endpoint}{path}")
        }
    }

    /// The most images one call of `upstream_model` makes.
    pub fn max_images(&self, upstream_model: &str) -> u32 {
        match self.body {
            ImageBody::OpenAi if upstream_model.starts_with("dall-e-3") => 1,
            ImageBody::OpenAi => openai::MAX_IMAGES,
            ImageBody::Imagen => imagen::MAX_IMAGES,
            ImageBody::Gemini => gemini::MAX_IMAGES,
        }
    }

    /// Refuse by name what this endpoint cannot make of `req` for
    /// `upstream_model`, before anything is sent.
    pub fn check(&self, req: &ImageRequest, upstream_model: &str) -> Result<(), ProtocolError> {
        if req.edit.is_some() && self.edit_path.is_none() {
            return Err(ProtocolError::Unsupported(
                "image edits: this provider edits no images".to_owned(),
            ));
        }
        match self.body {
            ImageBody::OpenAi => Ok(()),
            ImageBody::Imagen => imagen::encode_request(req, 1, upstream_model).map(drop),
            ImageBody::Gemini => gemini::encode_request(req).map(drop),
        }
    }

    /// The body of one call for `n` of `req`'s images, and its content type:
    /// JSON, or an edit's multipart form.
    pub fn encode(
        &self,
        req: &ImageRequest,
        n: u32,
        upstream_model: &str,
    ) -> Result<(Vec<u8>, String), ProtocolError> {
        if req.edit.is_some() && self.body == ImageBody::OpenAi {
            let boundary = format!("switchyard-{:016x}", boundary_salt(req));
            let body = edits::encode_request(req, n, upstream_model, &boundary);
            return Ok((body, format!("multipart/form-data; boundary={boundary}")));
        }
        let body = match self.body {
            ImageBody::OpenAi => openai::encode_request(req, n, upstream_model),
            ImageBody::Imagen => imagen::encode_request(req, n, upstream_model)?,
            ImageBody::Gemini => gemini::encode_request(req)?,
        };
        let body = serde_json::to_vec(&body).map_err(|e| ProtocolError::body(e.to_string()))?;
        Ok((body, "application/json".to_owned()))
    }

    /// One call's answer.
    pub fn parse(&self, body: &[u8]) -> Result<ImageResponse, ProtocolError> {
        match self.body {
            ImageBody::OpenAi => openai::parse_response(body),
            ImageBody::Imagen => imagen::parse_response(body),
            ImageBody::Gemini => gemini::parse_response(body),
        }
    }
}

/// A boundary no part of `req`'s form holds: a hash of its files, tried
/// again until none contains it (a collision is astronomically unlikely, but
/// a boundary inside a part would cut it).
fn boundary_salt(req: &ImageRequest) -> u64 {
    use std::hash::{Hash, Hasher};
    let edit = req.edit.as_ref();
    let files: Vec<&InputFile> =
        edit.map(|e| e.images.iter().chain(e.mask.iter()).collect()).unwrap_or_default();
    let mut salt = 0u64;
    loop {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (salt, &req.prompt).hash(&mut h);
        for f in &files {
            f.bytes.hash(&mut h);
        }
        let candidate = h.finish();
        let needle = format!("switchyard-{candidate:016x}");
        let inside =
            files.iter().any(|f| f.bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
                || req.prompt.contains(&needle);
        if !inside {
            return candidate;
        }
        salt += 1;
    }
}

/// `n` images in calls of at most `cap` each, in order.
pub fn calls(n: u32, cap: u32) -> Vec<u32> {
    let cap = cap.max(1);
    let mut out = Vec::new();
    let mut left = n;
    while left > 0 {
        let take = left.min(cap);
        out.push(take);
        left -= take;
    }
    out
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
