//! Bedrock's embedding models through InvokeModel, as the fake checks and
//! answers them: Amazon Titan Text Embeddings (v1, v2) and Cohere Embed (see
//! [`crate::embeddings`] for the fake's choices).

use serde_json::{Map, Value, json};

use super::{
    COHERE_MAX_TEXT_CHARS, COHERE_MAX_TEXTS, DEFAULT_DIMS, TITAN_MAX_INPUT_TOKENS, base_model,
    fake_vector, kind, positive, token_count,
};

/// Bedrock's JSON-schema refusal, worded as InvokeModel words it.
fn malformed(what: &str) -> String {
    format!("Malformed input request: {what}, please reformat your input and try again.")
}

fn bedrock_object(body: &Value) -> Result<&Map<String, Value>, String> {
    body.as_object().ok_or_else(|| malformed("expected type: JSONObject"))
}

fn extraneous(map: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(malformed(&format!("#: extraneous key [{key}] is not permitted"))),
        None => Ok(()),
    }
}

fn not_enum(path: &str, v: &Value) -> String {
    malformed(&format!("#/{path}: {v} is not a valid enum value"))
}

pub(super) struct TitanRequest {
    text: String,
    tokens: u64,
    dims: usize,
    /// `embeddingTypes`, when given.
    types: Option<Vec<String>>,
}

pub(super) fn titan(model: &str, body: &Value) -> Result<TitanRequest, String> {
    let map = bedrock_object(body)?;
    let v1 = base_model(model).starts_with("amazon.titan-embed-text-v1");
    let allowed: &[&str] = if v1 {
        &["inputText"]
    } else {
        &["inputText", "dimensions", "normalize", "embeddingTypes"]
    };
    extraneous(map, allowed)?;
    let text = match map.get("inputText") {
        None => return Err(malformed("#: required key [inputText] not found")),
        Some(Value::String(t)) if t.is_empty() => {
            return Err(malformed("#/inputText: expected minLength: 1, actual: 0"));
        }
        Some(Value::String(t)) => t.clone(),
        Some(other) => {
            return Err(malformed(&format!(
                "#/inputText: expected type: String, found: {}",
                kind(other)
            )));
        }
    };
    let tokens = token_count(&text);
    if tokens > TITAN_MAX_INPUT_TOKENS {
        return Err(format!(
            "400 Bad Request: Too many input tokens. Max input tokens: {TITAN_MAX_INPUT_TOKENS}, \
             request input token count: {tokens}"
        ));
    }
    let dims = match map.get("dimensions") {
        None => DEFAULT_DIMS,
        Some(v) => match v.as_u64() {
            Some(n @ (256 | 512 | 1024)) => usize::try_from(n).unwrap_or(DEFAULT_DIMS),
            _ => return Err(not_enum("dimensions", v)),
        },
    };
    if let Some(v) = map.get("normalize").filter(|v| !v.is_boolean()) {
        return Err(malformed(&format!("#/normalize: expected type: Boolean, found: {}", kind(v))));
    }
    let types = match map.get("embeddingTypes") {
        None => None,
        Some(v) => Some(enum_list(v, "embeddingTypes", &["float", "binary"])?),
    };
    Ok(TitanRequest { text, tokens, dims, types })
}

/// A non-empty array of values from `allowed`.
fn enum_list(v: &Value, path: &str, allowed: &[&str]) -> Result<Vec<String>, String> {
    let items = match v {
        Value::Array(items) if !items.is_empty() => items,
        Value::Array(_) => {
            return Err(malformed(&format!("#/{path}: expected minItems: 1, actual: 0")));
        }
        other => {
            return Err(malformed(&format!(
                "#/{path}: expected type: JSONArray, found: {}",
                kind(other)
            )));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item.as_str() {
            Some(s) if allowed.contains(&s) => Ok(s.to_owned()),
            _ => Err(not_enum(&format!("{path}/{i}"), item)),
        })
        .collect()
}

pub(super) fn titan_answer(request: TitanRequest) -> Value {
    let vector = fake_vector(&request.text, request.dims);
    let mut answer = json!({"embedding": vector, "inputTextTokenCount": request.tokens});
    if let Some(types) = &request.types {
        let mut by_type = Map::new();
        for kind in types {
            let values = match kind.as_str() {
                "binary" => json!(vector.iter().map(|v| u8::from(*v >= 0.0)).collect::<Vec<_>>()),
                _ => json!(vector),
            };
            by_type.insert(kind.clone(), values);
        }
        answer["embeddingsByType"] = Value::Object(by_type);
    }
    answer
}

const COHERE_INPUT_TYPES: [&str; 4] =
    ["search_document", "search_query", "classification", "clustering"];
const COHERE_EMBEDDING_TYPES: [&str; 5] = ["float", "int8", "uint8", "binary", "ubinary"];

pub(super) struct CohereRequest {
    texts: Vec<String>,
    dims: usize,
    types: Option<Vec<String>>,
}

pub(super) fn cohere(model: &str, body: &Value) -> Result<CohereRequest, String> {
    let map = bedrock_object(body)?;
    let v4 = base_model(model).starts_with("cohere.embed-v4");
    let v3_fields = ["texts", "input_type", "truncate", "embedding_types"];
    let v4_fields =
        ["texts", "input_type", "truncate", "embedding_types", "output_dimension", "max_tokens"];
    extraneous(map, if v4 { &v4_fields } else { &v3_fields })?;
    let texts = match map.get("texts") {
        None => return Err(malformed("#: required key [texts] not found")),
        Some(Value::Array(texts)) => texts,
        Some(other) => {
            return Err(malformed(&format!(
                "#/texts: expected type: JSONArray, found: {}",
                kind(other)
            )));
        }
    };
    if texts.is_empty() {
        return Err(malformed("#/texts: expected minItems: 1, actual: 0"));
    }
    if texts.len() > COHERE_MAX_TEXTS {
        return Err(malformed(&format!(
            "#/texts: expected maxItems: {COHERE_MAX_TEXTS}, actual: {}",
            texts.len()
        )));
    }
    let texts = texts
        .iter()
        .enumerate()
        .map(|(i, t)| match t.as_str() {
            Some("") => Err(malformed(&format!("#/texts/{i}: expected minLength: 1, actual: 0"))),
            Some(s) if s.chars().count() > COHERE_MAX_TEXT_CHARS => Err(malformed(&format!(
                "#/texts/{i}: expected maxLength: {COHERE_MAX_TEXT_CHARS}, actual: {}",
                s.chars().count()
            ))),
            Some(s) => Ok(s.to_owned()),
            None => {
                Err(malformed(&format!("#/texts/{i}: expected type: String, found: {}", kind(t))))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    match map.get("input_type") {
        None => return Err(malformed("#: required key [input_type] not found")),
        Some(Value::String(t)) if COHERE_INPUT_TYPES.contains(&t.as_str()) => {}
        Some(other) => return Err(not_enum("input_type", other)),
    }
    match map.get("truncate") {
        None => {}
        Some(Value::String(t)) if matches!(t.as_str(), "NONE" | "START" | "END") => {}
        Some(other) => return Err(not_enum("truncate", other)),
    }
    let types = match map.get("embedding_types") {
        None => None,
        Some(v) => Some(enum_list(v, "embedding_types", &COHERE_EMBEDDING_TYPES)?),
    };
    let dims = match map.get("output_dimension") {
        None => DEFAULT_DIMS,
        Some(v) => match v.as_u64() {
            Some(n @ (256 | 512 | 1024 | 1536)) => usize::try_from(n).unwrap_or(DEFAULT_DIMS),
            _ => return Err(not_enum("output_dimension", v)),
        },
    };
    if let Some(v) = map.get("max_tokens").filter(|v| positive(v).is_none()) {
        return Err(malformed(&format!("#/max_tokens: {v} is not a positive integer")));
    }
    Ok(CohereRequest { texts, dims, types })
}

/// A deterministic UUID-like id for a body.
fn uuid_like(body: &Value) -> String {
    let v = fake_vector(&body.to_string(), 16);
    let hex: String = v.iter().map(|x| format!("{:02x}", ((x + 1.0) * 127.0) as u8)).collect();
    format!("{}-{}-4{}-a{}-{}", &hex[..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

/// Cohere's int8, uint8 and packed-bit forms of a float vector.
fn quantized(vector: &[f32], kind: &str) -> Value {
    let int8 = |v: f32| (v * 127.0).round() as i32;
    match kind {
        "int8" => json!(vector.iter().map(|v| int8(*v)).collect::<Vec<_>>()),
        "uint8" => json!(vector.iter().map(|v| int8(*v) + 128).collect::<Vec<_>>()),
        "binary" | "ubinary" => {
            let bytes: Vec<i32> = vector
                .chunks(8)
                .map(|bits| {
                    let byte = bits
                        .iter()
                        .enumerate()
                        .fold(0_i32, |b, (i, v)| if *v > 0.0 { b | (0x80 >> i) } else { b });
                    if kind == "binary" { byte - 128 } else { byte }
                })
                .collect();
            json!(bytes)
        }
        _ => json!(vector),
    }
}

pub(super) fn cohere_answer(request: &CohereRequest, body: &Value) -> Value {
    let vectors: Vec<Vec<f32>> =
        request.texts.iter().map(|t| fake_vector(t, request.dims)).collect();
    let id = uuid_like(body);
    match &request.types {
        None => json!({"id": id, "response_type": "embeddings_floats", "texts": request.texts,
            "embeddings": vectors}),
        Some(types) => {
            let mut by_type = Map::new();
            for kind in types {
                let all: Vec<Value> = vectors.iter().map(|v| quantized(v, kind)).collect();
                by_type.insert(kind.clone(), Value::Array(all));
            }
            json!({"id": id, "response_type": "embeddings_by_type", "texts": request.texts,
                "embeddings": by_type})
        }
    }
}
