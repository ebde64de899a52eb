//! Imagen, as the fakes check and answer it: Gemini's (AI Studio's) and
//! Vertex AI's `:predict` (see [`crate::images`] for the rules and the fake's
//! choices).

use serde_json::{Map, Value, json};

use super::{IMAGEN_MAX_SAMPLES, fake_png_b64, kind};

/// The parameters Gemini's `:predict` takes (Vertex's too).
const PARAMETERS: [&str; 5] =
    ["sampleCount", "aspectRatio", "personGeneration", "imageSize", "outputOptions"];
/// The parameters only Vertex's `:predict` takes.
const VERTEX_PARAMETERS: [&str; 5] =
    ["sampleImageSize", "addWatermark", "seed", "enhancePrompt", "negativePrompt"];
const ASPECT_RATIOS: [&str; 5] = ["1:1", "3:4", "4:3", "9:16", "16:9"];
const PERSON_GENERATION: [&str; 3] = ["dont_allow", "allow_adult", "allow_all"];
const IMAGE_SIZES: [&str; 2] = ["1K", "2K"];
const MIME_TYPES: [&str; 2] = ["image/png", "image/jpeg"];

/// A request the API takes: its prompt and how many images it asks.
pub(super) struct ImagenRequest {
    prompt: String,
    count: usize,
}

fn unknown_name(key: &str, at: &str) -> String {
    let at = if at.is_empty() { String::new() } else { format!(" at '{at}'") };
    format!("Invalid JSON payload received. Unknown name \"{key}\"{at}: Cannot find field.")
}

/// Google's message for a value of the wrong type at `at`.
fn bad_value(at: &str, proto: &str, v: &Value) -> String {
    format!("Invalid value at '{at}' ({proto}), {v}")
}

/// Whether the model takes an output size (`imageSize`, `sampleImageSize`).
fn sized(model: &str) -> bool {
    model.starts_with("imagen-4.0-generate") || model.starts_with("imagen-4.0-ultra-generate")
}

/// Whether the model is an older one that takes a negative prompt.
fn negative_prompts(model: &str) -> bool {
    model.starts_with("imagen-3.0-") && model.ends_with("-001")
}

pub(super) fn imagen(vertex: bool, model: &str, body: &Value) -> Result<ImagenRequest, String> {
    let map = body.as_object().ok_or_else(|| {
        format!("Invalid JSON payload received. Expected an object, got {}.", kind(body))
    })?;
    if let Some(key) = map.keys().find(|k| !matches!(k.as_str(), "instances" | "parameters")) {
        return Err(unknown_name(key, ""));
    }
    let instance = match map.get("instances") {
        Some(Value::Array(all)) if all.len() == 1 => &all[0],
        Some(Value::Array(all)) => {
            return Err(format!(
                "instances: exactly one instance is required for {model}, got {}.",
                all.len()
            ));
        }
        None | Some(Value::Null) => {
            return Err(format!("instances: exactly one instance is required for {model}."));
        }
        Some(other) => return Err(bad_value("instances", "TYPE_LIST", other)),
    };
    let instance =
        instance.as_object().ok_or_else(|| bad_value("instances[0]", "TYPE_STRUCT", instance))?;
    if let Some(key) = instance.keys().find(|k| *k != "prompt") {
        return Err(unknown_name(key, "instances[0]"));
    }
    let prompt = match instance.get("prompt") {
        Some(Value::String(p)) if !p.is_empty() => p.clone(),
        None | Some(Value::Null | Value::String(_)) => {
            return Err(
                "instances[0].prompt: the prompt is empty; a text prompt is required.".into()
            );
        }
        Some(other) => return Err(bad_value("instances[0].prompt", "TYPE_STRING", other)),
    };
    let count = match map.get("parameters") {
        None | Some(Value::Null) => IMAGEN_MAX_SAMPLES,
        Some(Value::Object(parameters)) => imagen_parameters(vertex, model, parameters)?,
        Some(other) => return Err(bad_value("parameters", "TYPE_STRUCT", other)),
    };
    Ok(ImagenRequest { prompt, count: usize::try_from(count).unwrap_or(1) })
}

/// `parameters`' checks; the number of images asked.
fn imagen_parameters(vertex: bool, model: &str, p: &Map<String, Value>) -> Result<u64, String> {
    let known = |k: &str| PARAMETERS.contains(&k) || (vertex && VERTEX_PARAMETERS.contains(&k));
    if let Some(key) = p.keys().find(|k| !known(k)) {
        return Err(unknown_name(key, "parameters"));
    }
    let count = match p.get("sampleCount") {
        None | Some(Value::Null) => IMAGEN_MAX_SAMPLES,
        Some(v) => match (v.as_u64(), v.as_i64()) {
            (Some(n), _) if (1..=IMAGEN_MAX_SAMPLES).contains(&n) => n,
            (Some(_), _) | (None, Some(_)) => {
                return Err(format!(
                    "parameters.sampleCount: the number of images must be from 1 to \
                     {IMAGEN_MAX_SAMPLES}, got {v}."
                ));
            }
            (None, None) => return Err(bad_value("parameters.sampleCount", "TYPE_INT32", v)),
        },
    };
    choice(p, "aspectRatio", &ASPECT_RATIOS)?;
    choice(p, "personGeneration", &PERSON_GENERATION)?;
    for field in ["imageSize", "sampleImageSize"] {
        if choice(p, field, &IMAGE_SIZES)? && !sized(model) {
            return Err(format!("parameters.{field}: {model} does not support an output size."));
        }
    }
    match p.get("outputOptions") {
        None | Some(Value::Null) => {}
        Some(Value::Object(options)) => output_options(vertex, options)?,
        Some(other) => return Err(bad_value("parameters.outputOptions", "TYPE_STRUCT", other)),
    }
    for field in ["addWatermark", "enhancePrompt"] {
        match p.get(field) {
            None | Some(Value::Null | Value::Bool(_)) => {}
            Some(other) => {
                return Err(bad_value(&format!("parameters.{field}"), "TYPE_BOOL", other));
            }
        }
    }
    match p.get("seed") {
        None | Some(Value::Null) => {}
        Some(v) if v.as_u64().is_some_and(|s| u32::try_from(s).is_ok()) => {}
        Some(other) => return Err(bad_value("parameters.seed", "TYPE_UINT32", other)),
    }
    match p.get("negativePrompt") {
        None | Some(Value::Null) => {}
        Some(Value::String(_)) if negative_prompts(model) => {}
        Some(Value::String(_)) => {
            return Err(format!(
                "parameters.negativePrompt: negative prompts are not supported by {model}."
            ));
        }
        Some(other) => return Err(bad_value("parameters.negativePrompt", "TYPE_STRING", other)),
    }
    Ok(count)
}

/// A string parameter, one of `allowed`: whether it was given.
fn choice(p: &Map<String, Value>, field: &str, allowed: &[&str]) -> Result<bool, String> {
    match p.get(field) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(true),
        Some(Value::String(s)) => Err(format!(
            "parameters.{field}: unsupported value \"{s}\"; supported values: {}.",
            allowed.join(", ")
        )),
        Some(other) => Err(bad_value(&format!("parameters.{field}"), "TYPE_STRING", other)),
    }
}

/// `parameters.outputOptions`: `mimeType`, and on Vertex `compressionQuality`.
fn output_options(vertex: bool, options: &Map<String, Value>) -> Result<(), String> {
    let known = |k: &str| k == "mimeType" || (vertex && k == "compressionQuality");
    if let Some(key) = options.keys().find(|k| !known(k)) {
        return Err(unknown_name(key, "parameters.outputOptions"));
    }
    match options.get("mimeType") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if MIME_TYPES.contains(&m.as_str()) => {}
        Some(Value::String(m)) => {
            return Err(format!(
                "parameters.outputOptions.mimeType: unsupported value \"{m}\"; supported \
                 values: {}.",
                MIME_TYPES.join(", ")
            ));
        }
        Some(other) => {
            return Err(bad_value("parameters.outputOptions.mimeType", "TYPE_STRING", other));
        }
    }
    match options.get("compressionQuality") {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v.as_u64().is_some_and(|q| q <= 100) => Ok(()),
        Some(v) if v.is_i64() || v.is_u64() => Err(format!(
            "parameters.outputOptions.compressionQuality: must be from 0 to 100, got {v}."
        )),
        Some(other) => {
            Err(bad_value("parameters.outputOptions.compressionQuality", "TYPE_INT32", other))
        }
    }
}

pub(super) fn imagen_answer(r: &ImagenRequest) -> Value {
    let predictions: Vec<Value> = (0..r.count)
        .map(|i| json!({"bytesBase64Encoded": fake_png_b64(&r.prompt, i), "mimeType": "image/png"}))
        .collect();
    json!({ "predictions": predictions })
}
