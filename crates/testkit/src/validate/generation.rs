//! What Gemini refuses in a `generateContent` body's `generationConfig`, for
//! the fields that choose images: `responseModalities` and `imageConfig`
//! (Gemini's native image models, [`crate::images::is_gemini_image_model`]).
//! Its other fields are not checked: a fake stricter than its API would fail
//! tests for nothing. Each field is read by its lowerCamelCase and its proto
//! name, as Google's JSON mapping reads it.
//!
//! | Field | Rule |
//! |---|---|
//! | `responseModalities` | an array of `TEXT`, `IMAGE`, `AUDIO` (any case); an image model's must hold `IMAGE` and no `AUDIO` (empty: the model's default); any other model's no `IMAGE` |
//! | `imageConfig` | an object of `aspectRatio` (one of [`ASPECT_RATIOS`]) and `imageSize` (a string); any other field refused. Vertex also takes `personGeneration` and `imageOutputOptions`, checked and removed first on a Vertex fake (`strip_vertex`) |

use serde_json::{Map, Value};

use crate::images::is_gemini_image_model;

/// The aspect ratios Gemini's image models make.
pub const ASPECT_RATIOS: [&str; 10] =
    ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"];

/// The response modalities the API defines.
const MODALITIES: [&str; 3] = ["TEXT", "IMAGE", "AUDIO"];

/// Vertex's `personGeneration` values.
const PERSON_GENERATION: [&str; 4] =
    ["PERSON_GENERATION_UNSPECIFIED", "ALLOW_ALL", "ALLOW_ADULT", "ALLOW_NONE"];

/// The proto type Google names when an enum value is not one of its own.
const MODALITY_TYPE: &str = "type.googleapis.com/google.ai.generativelanguage.v1beta.\
                             GenerationConfig.Modality";

/// A field by its lowerCamelCase or its proto name; `null` is absent.
fn field<'a>(map: &'a Map<String, Value>, camel: &str, proto: &str) -> Option<&'a Value> {
    map.get(camel).or_else(|| map.get(proto)).filter(|v| !v.is_null())
}

/// `generationConfig`, if the body has one as an object.
fn config(body: &Value) -> Option<&Map<String, Value>> {
    body.as_object()
        .and_then(|b| field(b, "generationConfig", "generation_config"))
        .and_then(Value::as_object)
}

fn unknown_name(key: &str, at: &str) -> String {
    format!("Invalid JSON payload received. Unknown name \"{key}\" at '{at}': Cannot find field.")
}

/// Google's message for a value of the wrong type at `at`.
fn bad_value(at: &str, proto: &str, v: &Value) -> String {
    format!("Invalid value at '{at}' ({proto}), {v}")
}

/// `Err(message)`: Gemini refuses `body`'s `generationConfig`, sent for
/// `model`, with a 400 saying `message` (see the module's table).
pub fn check(model: &str, body: &Value) -> Result<(), String> {
    let Some(config) = config(body) else { return Ok(()) };
    if let Some(asked) = field(config, "responseModalities", "response_modalities") {
        modalities(model, asked)?;
    }
    if let Some(image) = field(config, "imageConfig", "image_config") {
        image_config(image)?;
    }
    Ok(())
}

fn modalities(model: &str, asked: &Value) -> Result<(), String> {
    const AT: &str = "generation_config.response_modalities";
    let Some(list) = asked.as_array() else {
        return Err(bad_value(AT, MODALITY_TYPE, asked));
    };
    let mut names = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let name = v.as_str().map(str::to_ascii_uppercase);
        match name.filter(|n| MODALITIES.contains(&n.as_str())) {
            Some(name) => names.push(name),
            None => return Err(bad_value(&format!("{AT}[{i}]"), MODALITY_TYPE, v)),
        }
    }
    let has = |m: &str| names.iter().any(|n| n == m);
    let unsupported: Vec<&str> = if is_gemini_image_model(model) {
        match (names.is_empty(), has("IMAGE"), has("AUDIO")) {
            (false, _, true) => vec!["audio"],
            (false, false, false) => vec!["text"],
            _ => vec![],
        }
    } else if has("IMAGE") {
        vec!["image"]
    } else {
        vec![]
    };
    if unsupported.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Model does not support the requested response modalities: {}",
            unsupported.join(", ")
        ))
    }
}

fn image_config(image: &Value) -> Result<(), String> {
    const AT: &str = "generation_config.image_config";
    let Some(map) = image.as_object() else {
        return Err(bad_value(AT, "TYPE_MESSAGE", image));
    };
    let known = ["aspectRatio", "aspect_ratio", "imageSize", "image_size"];
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(unknown_name(key, AT));
    }
    match field(map, "aspectRatio", "aspect_ratio") {
        None => {}
        Some(Value::String(r)) if ASPECT_RATIOS.contains(&r.as_str()) => {}
        Some(Value::String(r)) => {
            return Err(format!(
                "{AT}.aspect_ratio: unsupported aspect ratio \"{r}\"; supported aspect ratios: \
                 {}.",
                ASPECT_RATIOS.join(", ")
            ));
        }
        Some(other) => return Err(bad_value(&format!("{AT}.aspect_ratio"), "TYPE_STRING", other)),
    }
    match field(map, "imageSize", "image_size") {
        None | Some(Value::String(_)) => Ok(()),
        Some(other) => Err(bad_value(&format!("{AT}.image_size"), "TYPE_STRING", other)),
    }
}

/// The body without Vertex's own `imageConfig` fields once they are well
/// formed (`None`: it has none, check the body as it is); `Err`: Vertex's
/// refusal. Vertex takes `personGeneration` (one of its enum's values) and
/// `imageOutputOptions` (`mimeType`, a string; `compressionQuality`, 0 to
/// 100) where the Gemini API takes neither, so a Vertex Gemini fake checks
/// them here and Gemini's rules ([`check`]) the rest.
pub(crate) fn strip_vertex(body: &Value) -> Result<Option<Value>, String> {
    const AT: &str = "generation_config.image_config";
    let image = config(body)
        .and_then(|c| field(c, "imageConfig", "image_config"))
        .and_then(Value::as_object);
    let Some(image) = image else { return Ok(None) };
    let vertex_only =
        ["personGeneration", "person_generation", "imageOutputOptions", "image_output_options"];
    if !image.keys().any(|k| vertex_only.contains(&k.as_str())) {
        return Ok(None);
    }
    match field(image, "personGeneration", "person_generation") {
        None => {}
        Some(Value::String(p)) if PERSON_GENERATION.contains(&p.as_str()) => {}
        Some(other) => {
            return Err(bad_value(
                &format!("{AT}.person_generation"),
                "type.googleapis.com/google.cloud.aiplatform.v1.ImageConfig.PersonGeneration",
                other,
            ));
        }
    }
    if let Some(options) = field(image, "imageOutputOptions", "image_output_options") {
        output_options(options)?;
    }
    let mut rest = body.clone();
    for config in ["generationConfig", "generation_config"] {
        let Some(Value::Object(config)) = rest.get_mut(config) else { continue };
        for image in ["imageConfig", "image_config"] {
            if let Some(Value::Object(image)) = config.get_mut(image) {
                image.retain(|k, _| !vertex_only.contains(&k.as_str()));
            }
        }
    }
    Ok(Some(rest))
}

/// Vertex's `imageConfig.imageOutputOptions`.
fn output_options(options: &Value) -> Result<(), String> {
    const AT: &str = "generation_config.image_config.image_output_options";
    let Some(map) = options.as_object() else {
        return Err(bad_value(AT, "TYPE_MESSAGE", options));
    };
    let known = ["mimeType", "mime_type", "compressionQuality", "compression_quality"];
    if let Some(key) = map.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(unknown_name(key, AT));
    }
    match field(map, "mimeType", "mime_type") {
        None | Some(Value::String(_)) => {}
        Some(other) => return Err(bad_value(&format!("{AT}.mime_type"), "TYPE_STRING", other)),
    }
    match field(map, "compressionQuality", "compression_quality") {
        None => Ok(()),
        Some(v) if v.as_u64().is_some_and(|q| q <= 100) => Ok(()),
        Some(v) => Err(format!("{AT}.compression_quality: must be from 0 to 100, got {v}.")),
    }
}
