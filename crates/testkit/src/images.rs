//! Image generation on the fake upstreams: each vendor's request checked as
//! the real API checks it ([`check`]), and its answer built ([`answer`]);
//! and OpenAI's image edits, a multipart form ([`read_form`], [`check_edit`],
//! [`edit_answer_at`]).
//! Written from the providers' documented behaviour, not from the gateway's
//! encoder, so it checks that encoder independently.
//!
//! # Routes (POST)
//!
//! | Fake | Route | [`Api`] |
//! |---|---|---|
//! | OpenAi | `/v1/images/generations`, `/images/generations` | `OpenAi { deployment: false }` |
//! | Azure ([`crate::FakeUpstream::start_azure`]) | `/openai/deployments/{deployment}/images/generations?api-version=…` (model: the deployment) | `OpenAi { deployment: true }` |
//! | Azure | `/openai/v1/images/generations` (model in the body) | `OpenAi { deployment: false }` |
//! | OpenAi | `/v1/images/edits`, `/images/edits` (multipart) | `OpenAi { deployment: false }` |
//! | Azure | `/openai/deployments/{deployment}/images/edits?api-version=…` (model: the deployment) | `OpenAi { deployment: true }` |
//! | Azure | `/openai/v1/images/edits` (model in the form, required) | `OpenAi { deployment: false }` |
//! | Gemini | `/v1beta/models/{model}:predict` (`/v1/models/…` too), `model` an `imagen-…` | `Imagen` |
//! | Vertex Gemini ([`crate::FakeUpstream::start_vertex`]) | `/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:predict`, `model` an `imagen-…` | `VertexImagen` |
//!
//! Vertex's `:predict` serves embeddings too ([`crate::embeddings`]): the
//! model decides, an `imagen-…` model's call is an image call, any other an
//! embeddings call.
//!
//! Gemini's native image models (`gemini-2.5-flash-image`, …) answer images
//! on `generateContent` instead, as generation calls whose automatic answer
//! is an image (`images_gemini.rs`: [`gemini_image_answer`]).
//!
//! A refused body answers 400 in the vendor's error shape, is recorded and
//! takes nothing from the script; an accepted one takes the next scripted
//! [`Reply`](crate::Reply) as a generation does (scripted statuses, delays and
//! hangs alike), and [`ReplyBody::Auto`](crate::ReplyBody::Auto) answers with
//! [`answer`].
//!
//! # What the fake checks
//!
//! - **OpenAI**: only the fields the API defines (`prompt`, `model`, `n`,
//!   `size`, `quality`, `response_format`, `style`, `user`, `output_format`,
//!   `background`, `moderation`, `output_compression`), any other `Unrecognized
//!   request argument supplied: <name>`; then each model family's own rules
//!   (the family: a model ID starting `gpt-image`, `dall-e-3` or `dall-e-2`;
//!   no model is `dall-e-2`; any other model is refused):
//!
//!   | | dall-e-2 | dall-e-3 | gpt-image-… |
//!   |---|---|---|---|
//!   | prompt (characters) | 1..=1000 | 1..=4000 | 1..=32000 |
//!   | `n` | 1..=10 | 1 | 1..=10 |
//!   | `size` | 256x256, 512x512, 1024x1024 | 1024x1024, 1792x1024, 1024x1792 | 1024x1024, 1536x1024, 1024x1536, auto |
//!   | `quality` | standard | standard, hd | low, medium, high, auto |
//!   | `response_format` | url, b64_json | url, b64_json | refused (`Unknown parameter`) |
//!   | `style` | refused | vivid, natural | refused |
//!   | `output_format`, `background`, `moderation`, `output_compression` | refused | refused | png/jpeg/webp, transparent/opaque/auto, low/auto, 0..=100 |
//!
//!   A field a model does not take is refused whatever its value, `null`
//!   included (`Unknown parameter: '<name>'.`); for the fields it takes,
//!   `null` is the default. gpt-image-…: a `transparent` background needs
//!   `png` or `webp`, and `output_compression` below 100 needs `jpeg` or
//!   `webp`, as the API says.
//! - **OpenAI edits** (`/images/edits`): a `multipart/form-data` body (any
//!   other: `Invalid Content-Type header (…), expected multipart/form-data.`),
//!   read with `multer` (axum's parser) from the recorded bytes. Only the
//!   fields the endpoint defines (`image`, `image[]`, `mask`, `prompt`,
//!   `model`, `n`, `size`, `quality`, `response_format`, `user`,
//!   `output_format`, `background`, `output_compression`,
//!   `input_fidelity`), any other `Unrecognized request argument supplied:
//!   <name>` (`stream`, `partial_images`, `style` and `moderation` too); a
//!   field sent twice (but `image[]`) is refused, so is a file where text is
//!   due or text where a file is. The model: the deployment's, else the
//!   form's, else `dall-e-2`; only dall-e-2 and gpt-image-… edit (dall-e-3 is
//!   refused). The text fields then pass the generation's checks above for
//!   that model (`n` and `output_compression` read as numbers);
//!   `input_fidelity` (`high`, `low`) is gpt-image's only. The images: one
//!   `image` or several `image[]` (not both); dall-e-2 exactly one, gpt-image
//!   at most [`GPT_IMAGE_MAX_IMAGES`]. Each file's type is its part's
//!   `Content-Type`, else its file name's extension (neither: `failed to
//!   determine mimetype`), and must be `image/png` (dall-e-2) or `image/jpeg`,
//!   `image/png`, `image/webp` (gpt-image), else `unsupported mimetype`; its
//!   bytes must be that format by their magic number ([`ImageFormat::sniff`]),
//!   else `Invalid image file or mode for image N`; dall-e-2's below 4 MiB and
//!   square (its `IHDR`), gpt-image's below 50 MiB. A `mask`: a PNG below 4
//!   MiB, of the first image's size where that can be read
//!   ([`image_dimensions`]).
//! - **Imagen** (Gemini's and Vertex's `:predict`): `{"instances":
//!   [{"prompt"}], "parameters": {…}}`, exactly one instance, a non-empty
//!   prompt; `parameters`: `sampleCount` 1..=4 (default 4), `aspectRatio`
//!   (`1:1`, `3:4`, `4:3`, `9:16`, `16:9`), `personGeneration` (`dont_allow`,
//!   `allow_adult`, `allow_all`), `imageSize` (`1K`, `2K`; only
//!   `imagen-4.0-generate-…` and `imagen-4.0-ultra-generate-…`),
//!   `outputOptions.mimeType` (`image/png`, `image/jpeg`). Vertex also takes
//!   `sampleImageSize` (as `imageSize`), `addWatermark`, `seed` (a uint32),
//!   `enhancePrompt`, `outputOptions.compressionQuality` (0..=100), and
//!   `negativePrompt` on the older models only (`imagen-3.0-…-001`). Any other
//!   field is refused as Google refuses one (`Invalid JSON payload received.
//!   Unknown name "x"…`).
//!
//! # What the fake chooses where the APIs leave it open
//!
//! - **Images**: image `i` of a prompt is [`fake_png`]`(prompt, i)`, a 2x2
//!   PNG of one colour ([`fake_colour`]) drawn from a hash of the prompt and
//!   `i`, so a test can tell which image is which; base64 as
//!   [`fake_png_b64`]. It is a PNG whatever format was asked (`jpeg`, `webp`,
//!   `image/jpeg`): the answers say `png` (gpt-image's `output_format` echoes
//!   the request's). A URL answer is [`fake_image_url`]`(prompt, i)`.
//! - **Edits** answer as a generation for the same model does (URLs or
//!   base64, gpt-image's `usage`), their images drawn from the prompt and the
//!   input images: [`fake_edit_png`]`(prompt, images, i)` (base64:
//!   [`fake_edit_png_b64`]; URLs: [`fake_edit_image_url`]). gpt-image's
//!   `usage` counts [`GPT_IMAGE_EDIT_IMAGE_TOKENS`] per input image
//!   (`input_tokens_details.image_tokens`) besides the prompt's tokens.
//! - **dall-e-3** answers each image's `revised_prompt` as
//!   [`revised_prompt`]`(prompt)`, which differs from the prompt.
//! - **gpt-image usage**: `input_tokens` is [`crate::embeddings::token_count`]
//!   of the prompt (characters / 4, rounded up), all text; `output_tokens` per
//!   image is OpenAI's published table ([`gpt_image_output_tokens`]: 1056 for a
//!   medium 1024x1024 image), `auto` quality read as `medium` and `auto` size
//!   as `1024x1024`. The answer also names the `background`, `output_format`,
//!   `quality` and `size` it used (the `auto`s resolved so).
//! - **Azure** dresses an automatic answer's images with
//!   `content_filter_results` and `prompt_filter_results` (nothing filtered).
//!   A deployment's model is its name: a deployment's family is read from its
//!   name (containing `gpt-image`, `dall-e-3` or `dall-e-2`); one naming none
//!   is refused, so name test deployments after their models.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::Value;

/// OpenAI: the model when the body names none.
pub const OPENAI_DEFAULT_MODEL: &str = "dall-e-2";
/// OpenAI: the most images one request asks.
pub const OPENAI_MAX_N: u64 = 10;
/// OpenAI: the longest prompt (characters) for gpt-image-….
pub const GPT_IMAGE_MAX_PROMPT: usize = 32_000;
/// OpenAI: the longest prompt (characters) for dall-e-3.
pub const DALL_E_3_MAX_PROMPT: usize = 4000;
/// OpenAI: the longest prompt (characters) for dall-e-2.
pub const DALL_E_2_MAX_PROMPT: usize = 1000;
/// Imagen: the most images one request asks, and the default.
pub const IMAGEN_MAX_SAMPLES: u64 = 4;
/// Where the fake's URL answers point (a reserved domain: never fetched).
pub const URL_PREFIX: &str = "https://fake-images.invalid/";
/// The eight bytes every PNG starts with.
pub const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
/// The fake's images' width and height, in pixels.
pub const PNG_SIDE: u32 = 2;

/// Which image API a request is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI's `/v1/images/generations` (Azure's too); `deployment`: Azure's
    /// deployment route, whose model is the path's (the body's `model` is
    /// then optional).
    OpenAi {
        /// The model is the path's deployment.
        deployment: bool,
    },
    /// Imagen on Gemini's (AI Studio's) `:predict`.
    Imagen,
    /// Imagen on Vertex AI's `:predict` (a few more parameters).
    VertexImagen,
}

/// Whether a model ID is an Imagen model (its `:predict` is an image call).
pub fn is_imagen(model: &str) -> bool {
    model.starts_with("imagen-")
}

/// Whether `path` is one of the OpenAI fake's image generation routes.
pub fn is_openai_route(path: &str) -> bool {
    matches!(path, "/v1/images/generations" | "/images/generations")
}

/// Whether `path` is one of the OpenAI fake's image edit routes.
pub fn is_openai_edit_route(path: &str) -> bool {
    matches!(path, "/v1/images/edits" | "/images/edits")
}

/// Whether a routed image call's `path` is an edit (OpenAI's or Azure's).
pub(crate) fn is_edit_path(path: &str) -> bool {
    path.ends_with("/images/edits")
}

// ---------------------------------------------------------------------------
// The fake's images

/// The hash of a prompt and an image's index that picks its colour and URL.
fn image_hash(prompt: &str, index: usize) -> u64 {
    let fnv = |h: u64, b: u8| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    let h = prompt.bytes().fold(0xcbf2_9ce4_8422_2325_u64, fnv);
    // A separator no UTF-8 text holds, then the index.
    let index = u64::try_from(index).unwrap_or(u64::MAX);
    let h = std::iter::once(0xff).chain(index.to_le_bytes()).fold(h, fnv);
    // splitmix64's finaliser, so close inputs differ in every byte.
    let mut z = h;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The colour of every pixel of [`fake_png`]`(prompt, index)`: RGB.
pub fn fake_colour(prompt: &str, index: usize) -> [u8; 3] {
    let [r, g, b, ..] = image_hash(prompt, index).to_be_bytes();
    [r, g, b]
}

/// The fake's image `index` for `prompt`: a valid 2x2 8-bit RGB PNG (the
/// signature, `IHDR`, one `IDAT` of a stored zlib stream, `IEND`, each chunk's
/// CRC correct), every pixel [`fake_colour`]`(prompt, index)`.
pub fn fake_png(prompt: &str, index: usize) -> Vec<u8> {
    let [r, g, b] = fake_colour(prompt, index);
    // Each scanline: filter type 0, then its pixels.
    let row = [0, r, g, b, r, g, b];
    let pixels: Vec<u8> = row.iter().chain(row.iter()).copied().collect();
    // A zlib stream of one stored (uncompressed) final deflate block.
    let len = u16::try_from(pixels.len()).unwrap_or(u16::MAX);
    let mut idat = vec![0x78, 0x01, 0x01];
    idat.extend(len.to_le_bytes());
    idat.extend((!len).to_le_bytes());
    idat.extend(&pixels);
    idat.extend(adler32(&pixels).to_be_bytes());
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend(PNG_SIDE.to_be_bytes());
    ihdr.extend(PNG_SIDE.to_be_bytes());
    // Bit depth 8, colour type 2 (RGB), deflate, adaptive filtering, no interlace.
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut png = PNG_SIGNATURE.to_vec();
    png_chunk(&mut png, *b"IHDR", &ihdr);
    png_chunk(&mut png, *b"IDAT", &idat);
    png_chunk(&mut png, *b"IEND", &[]);
    png
}

/// [`fake_png`] in standard, padded base64 (as `b64_json` and
/// `bytesBase64Encoded` carry it).
pub fn fake_png_b64(prompt: &str, index: usize) -> String {
    base64::engine::general_purpose::STANDARD.encode(fake_png(prompt, index))
}

/// The URL an OpenAI URL answer gives image `index` of `prompt`.
pub fn fake_image_url(prompt: &str, index: usize) -> String {
    format!("{URL_PREFIX}{:016x}.png", image_hash(prompt, index))
}

/// The `revised_prompt` a dall-e-3 answer gives for `prompt`.
pub fn revised_prompt(prompt: &str) -> String {
    format!("Revised: {prompt}")
}

/// A PNG chunk: its length, type, data and the CRC of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: [u8; 4], data: &[u8]) {
    out.extend(u32::try_from(data.len()).unwrap_or(u32::MAX).to_be_bytes());
    let start = out.len();
    out.extend(kind);
    out.extend(data);
    let crc = crc32(&out[start..]);
    out.extend(crc.to_be_bytes());
}

/// CRC-32 as PNG (and zlib's gzip, and Ethernet) computes it: the reflected
/// polynomial `0xEDB88320`, initial and final XOR all ones.
pub fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(u32::MAX, |crc, &b| {
        (0..8).fold(
            crc ^ u32::from(b),
            |c, _| if c & 1 == 1 { (c >> 1) ^ 0xedb8_8320 } else { c >> 1 },
        )
    })
}

/// Adler-32, the checksum closing a zlib stream.
pub fn adler32(bytes: &[u8]) -> u32 {
    const MOD: u32 = 65_521;
    let (a, b) = bytes.iter().fold((1_u32, 0_u32), |(a, b), &x| {
        let a = (a + u32::from(x)) % MOD;
        (a, (b + a) % MOD)
    });
    (b << 16) | a
}

// ---------------------------------------------------------------------------
// Checks and answers

/// `Err(message)`: the real API refuses `body`, sent on `api` for `model`
/// (the path's model; OpenAI's is the body's unless a deployment's), with a
/// 400 saying `message`.
pub fn check(api: Api, model: &str, body: &Value) -> Result<(), String> {
    match api {
        Api::OpenAi { deployment } => openai(deployment, model, body).map(drop),
        Api::Imagen => imagen(false, model, body).map(drop),
        Api::VertexImagen => imagen(true, model, body).map(drop),
    }
}

/// The answer to a body [`check`] passed, in the API's shape, `created` now
/// (see the module's notes for the fake's choices). A body it refuses gets
/// `{"error": message}`.
pub fn answer(api: Api, model: &str, body: &Value) -> Value {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    answer_at(api, model, body, now)
}

/// [`answer`] with OpenAI's `created` (Unix seconds) given.
pub fn answer_at(api: Api, model: &str, body: &Value, created: u64) -> Value {
    let answered = match api {
        Api::OpenAi { deployment } => {
            openai(deployment, model, body).map(|r| openai_answer(&r, created))
        }
        Api::Imagen => imagen(false, model, body).map(|r| imagen_answer(&r)),
        Api::VertexImagen => imagen(true, model, body).map(|r| imagen_answer(&r)),
    };
    answered.unwrap_or_else(|message| serde_json::json!({ "error": message }))
}

/// JSON's name for a value's type, as OpenAI's messages say it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// OpenAI and Google, each in its own file.
#[path = "images_openai.rs"]
mod openai;
pub use openai::{azure_dress, gpt_image_output_tokens};
use openai::{openai, openai_answer};

// Edits: a multipart form, checked and answered as a generation is.
#[path = "images_edits.rs"]
mod edits;
pub(crate) use edits::edit_reply;
pub use edits::{
    DALL_E_2_MAX_IMAGE_BYTES, FormPart, GPT_IMAGE_EDIT_IMAGE_TOKENS, GPT_IMAGE_MAX_IMAGE_BYTES,
    GPT_IMAGE_MAX_IMAGES, ImageFormat, MASK_MAX_BYTES, check_edit, edit_answer_at, edit_key,
    fake_edit_image_url, fake_edit_png, fake_edit_png_b64, image_dimensions, read_form,
};

#[path = "images_google.rs"]
mod google;
use google::{imagen, imagen_answer};

// Gemini's native image models, on `generateContent`.
#[path = "images_gemini.rs"]
mod gemini;
pub(crate) use gemini::gemini_image_chunks;
pub use gemini::{
    GEMINI_IMAGE_INPUT_TOKENS, GEMINI_IMAGE_OUTPUT_TOKENS, fake_gemini_image,
    fake_gemini_image_b64, gemini_image_answer, is_gemini_image_model,
};

#[cfg(test)]
#[path = "images_tests.rs"]
mod tests;
