//! OpenAI's image generation (and Azure OpenAI's), as the fakes check and
//! answer it (see [`crate::images`] for the rules and the fake's choices).

use serde_json::{Map, Value, json};

use super::{
    DALL_E_2_MAX_PROMPT, DALL_E_3_MAX_PROMPT, GPT_IMAGE_MAX_PROMPT, OPENAI_DEFAULT_MODEL,
    OPENAI_MAX_N, fake_image_url, fake_png_b64, kind, revised_prompt,
};
use crate::embeddings::token_count;

/// Every field the endpoint defines, for some model.
const FIELDS: [&str; 12] = [
    "prompt",
    "model",
    "n",
    "size",
    "quality",
    "response_format",
    "style",
    "user",
    "output_format",
    "background",
    "moderation",
    "output_compression",
];
/// The fields only gpt-image models take.
const GPT_IMAGE_ONLY: [&str; 4] =
    ["output_format", "background", "moderation", "output_compression"];

/// A model family: its own prompt cap, sizes, qualities and fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Family {
    DallE2,
    DallE3,
    GptImage,
}

impl Family {
    /// The family of a model ID (starting with its name), or of an Azure
    /// deployment (its name containing it).
    pub(super) fn of(model: &str, deployment: bool) -> Option<Family> {
        let names = |name: &str| {
            if deployment { model.contains(name) } else { model.starts_with(name) }
        };
        if names("gpt-image") {
            Some(Family::GptImage)
        } else if names("dall-e-3") {
            Some(Family::DallE3)
        } else if names("dall-e-2") {
            Some(Family::DallE2)
        } else {
            None
        }
    }

    fn max_prompt(self) -> usize {
        match self {
            Family::DallE2 => DALL_E_2_MAX_PROMPT,
            Family::DallE3 => DALL_E_3_MAX_PROMPT,
            Family::GptImage => GPT_IMAGE_MAX_PROMPT,
        }
    }

    fn sizes(self) -> &'static [&'static str] {
        match self {
            Family::DallE2 => &["256x256", "512x512", "1024x1024"],
            Family::DallE3 => &["1024x1024", "1792x1024", "1024x1792"],
            Family::GptImage => &["1024x1024", "1536x1024", "1024x1536", "auto"],
        }
    }

    fn qualities(self) -> &'static [&'static str] {
        match self {
            Family::DallE2 => &["standard"],
            Family::DallE3 => &["standard", "hd"],
            Family::GptImage => &["low", "medium", "high", "auto"],
        }
    }

    /// Whether the family takes `field` at all.
    fn takes(self, field: &str) -> bool {
        match field {
            "response_format" => self != Family::GptImage,
            "style" => self == Family::DallE3,
            f if GPT_IMAGE_ONLY.contains(&f) => self == Family::GptImage,
            _ => true,
        }
    }
}

/// A request the API takes, its defaults filled in (`auto`s resolved as the
/// fake resolves them).
pub(super) struct OpenAiRequest {
    pub(super) family: Family,
    pub(super) prompt: String,
    n: usize,
    size: String,
    quality: String,
    b64: bool,
    background: String,
    output_format: String,
}

/// `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`: OpenAI's list of values.
pub(super) fn listed(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

/// A string field's value, one of `allowed`; `default` when absent or null.
pub(super) fn one_of(
    map: &Map<String, Value>,
    field: &str,
    allowed: &[&str],
    default: &str,
) -> Result<String, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(default.to_owned()),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(s.clone()),
        Some(Value::String(s)) => {
            Err(format!("Invalid value: '{s}'. Supported values are: {}.", listed(allowed)))
        }
        Some(other) => Err(format!(
            "Invalid type for '{field}': expected one of {}, but got {} instead.",
            listed(allowed),
            kind(other)
        )),
    }
}

/// An integer field's value in `min..=max`; `None` when absent or null.
fn integer(
    map: &Map<String, Value>,
    field: &str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, String> {
    let v = match map.get(field) {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    let below = || {
        format!(
            "Invalid '{field}': integer below minimum value. Expected a value >= {min}, but got \
             {v} instead."
        )
    };
    match (v.as_u64(), v.as_i64()) {
        (Some(n), _) if n < min => Err(below()),
        (Some(n), _) if n > max => Err(format!(
            "Invalid '{field}': integer above maximum value. Expected a value <= {max}, but got \
             {n} instead."
        )),
        (Some(n), _) => Ok(Some(n)),
        (None, Some(_)) => Err(below()),
        (None, None) if v.is_number() => Err(format!(
            "Invalid type for '{field}': expected an integer, but got a decimal number instead."
        )),
        (None, None) => Err(format!(
            "Invalid type for '{field}': expected an integer, but got {} instead.",
            kind(v)
        )),
    }
}

pub(super) fn openai(
    deployment: bool,
    path_model: &str,
    body: &Value,
) -> Result<OpenAiRequest, String> {
    let map = body.as_object().ok_or(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't \
         using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was \
         sent was not valid JSON.)",
    )?;
    if let Some(key) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!("Unrecognized request argument supplied: {key}"));
    }
    let body_model = match map.get("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.as_str()),
        Some(other) => {
            return Err(format!(
                "Invalid type for 'model': expected a string, but got {} instead.",
                kind(other)
            ));
        }
    };
    let model = match (deployment, body_model) {
        (true, _) => path_model,
        (false, Some(m)) => m,
        (false, None) => OPENAI_DEFAULT_MODEL,
    };
    let family = Family::of(model, deployment).ok_or_else(|| {
        if deployment {
            format!(
                "The deployment '{model}' is no image model the fake knows: name it after its \
                 model (dall-e-2, dall-e-3, gpt-image-…)."
            )
        } else {
            format!(
                "Invalid value: '{model}'. Supported values are: 'dall-e-2', 'dall-e-3', and \
                 'gpt-image-1'."
            )
        }
    })?;
    if let Some(field) = FIELDS.iter().find(|f| map.contains_key(**f) && !family.takes(f)) {
        return Err(format!("Unknown parameter: '{field}'."));
    }
    let prompt = match map.get("prompt") {
        None | Some(Value::Null) => return Err("Missing required parameter: 'prompt'.".into()),
        Some(Value::String(p)) => p,
        Some(other) => {
            return Err(format!(
                "Invalid type for 'prompt': expected a string, but got {} instead.",
                kind(other)
            ));
        }
    };
    let chars = prompt.chars().count();
    if chars == 0 {
        return Err("Invalid 'prompt': string too short. Expected a string with minimum length \
                    1, but got an empty string instead."
            .into());
    }
    if chars > family.max_prompt() {
        return Err(format!(
            "Invalid 'prompt': string too long. Expected a string with maximum length {}, but \
             got a string with length {chars} instead.",
            family.max_prompt()
        ));
    }
    let n = integer(map, "n", 1, OPENAI_MAX_N)?.unwrap_or(1);
    if family == Family::DallE3 && n != 1 {
        return Err(format!("Invalid 'n': dall-e-3 supports n=1 only, but got {n} instead."));
    }
    let gpt_image = family == Family::GptImage;
    let size = one_of(map, "size", family.sizes(), if gpt_image { "auto" } else { "1024x1024" })?;
    let quality =
        one_of(map, "quality", family.qualities(), if gpt_image { "auto" } else { "standard" })?;
    let b64 = one_of(map, "response_format", &["url", "b64_json"], "url")? == "b64_json";
    one_of(map, "style", &["vivid", "natural"], "vivid")?;
    match map.get("user") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(other) => {
            return Err(format!(
                "Invalid type for 'user': expected a string, but got {} instead.",
                kind(other)
            ));
        }
    }
    let output_format = one_of(map, "output_format", &["png", "jpeg", "webp"], "png")?;
    let background = one_of(map, "background", &["transparent", "opaque", "auto"], "auto")?;
    one_of(map, "moderation", &["low", "auto"], "auto")?;
    let compression = integer(map, "output_compression", 0, 100)?;
    if background == "transparent" && output_format == "jpeg" {
        return Err("Transparent background is not supported for JPEG output format. Use \
                    'png' or 'webp'."
            .into());
    }
    if compression.is_some_and(|c| c < 100) && output_format == "png" {
        return Err("Compression less than 100 is not supported for PNG output format.".into());
    }
    let resolve = |value: String, auto: &str| if value == "auto" { auto.to_owned() } else { value };
    Ok(OpenAiRequest {
        family,
        prompt: prompt.clone(),
        n: usize::try_from(n).unwrap_or(1),
        size: resolve(size, "1024x1024"),
        quality: resolve(quality, "medium"),
        b64: b64 || gpt_image,
        background: resolve(background, "opaque"),
        output_format,
    })
}

/// A gpt-image model's output tokens for one image of `size` and `quality`
/// (`low`, `medium`, `high`; anything else is read as `medium`), from
/// OpenAI's published table.
pub fn gpt_image_output_tokens(size: &str, quality: &str) -> u64 {
    let square = !matches!(size, "1536x1024" | "1024x1536");
    match (quality, square) {
        ("low", true) => 272,
        ("low", false) => 408,
        ("high", true) => 4160,
        ("high", false) => 6240,
        (_, true) => 1056,
        (_, false) => 1584,
    }
}

pub(super) fn openai_answer(r: &OpenAiRequest, created: u64) -> Value {
    openai_answer_as(r, created, &r.prompt, 0)
}

/// [`openai_answer`] with the images drawn for `key` instead of the prompt
/// (an edit's: the prompt and its input images), and `image_tokens` more
/// input tokens in a gpt-image model's usage (its input images').
pub(super) fn openai_answer_as(
    r: &OpenAiRequest,
    created: u64,
    key: &str,
    image_tokens: u64,
) -> Value {
    let data: Vec<Value> = (0..r.n)
        .map(|i| {
            let mut item = if r.b64 {
                json!({"b64_json": fake_png_b64(key, i)})
            } else {
                json!({"url": fake_image_url(key, i)})
            };
            if r.family == Family::DallE3 {
                item["revised_prompt"] = Value::from(revised_prompt(&r.prompt));
            }
            item
        })
        .collect();
    let mut answer = json!({"created": created, "data": data});
    if r.family == Family::GptImage {
        let text = token_count(&r.prompt);
        let input = text + image_tokens;
        let images = u64::try_from(r.n).unwrap_or(1);
        let output = gpt_image_output_tokens(&r.size, &r.quality) * images;
        answer["background"] = Value::from(r.background.as_str());
        answer["output_format"] = Value::from(r.output_format.as_str());
        answer["quality"] = Value::from(r.quality.as_str());
        answer["size"] = Value::from(r.size.as_str());
        answer["usage"] = json!({
            "input_tokens": input,
            "output_tokens": output,
            "total_tokens": input + output,
            "input_tokens_details": {"text_tokens": text, "image_tokens": image_tokens},
        });
    }
    answer
}

/// An OpenAI image answer dressed as Azure's: each image with its
/// `content_filter_results` and `prompt_filter_results` (nothing filtered).
/// Any other body is left as it is.
pub fn azure_dress(mut answer: Value) -> Value {
    let undetected = json!({"filtered": false, "detected": false});
    let mut prompt = crate::azure::filter_results();
    prompt["jailbreak"] = undetected.clone();
    prompt["profanity"] = undetected;
    if let Some(data) = answer.get_mut("data").and_then(Value::as_array_mut) {
        for item in data.iter_mut().filter(|item| item.is_object()) {
            item["content_filter_results"] = crate::azure::filter_results();
            item["prompt_filter_results"] = prompt.clone();
        }
    }
    answer
}
