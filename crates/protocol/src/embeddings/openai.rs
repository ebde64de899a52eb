//! OpenAI's embeddings: the client's `POST /v1/embeddings` body and answer, and
//! the same shapes to and from an OpenAI-compatible upstream.

use serde_json::{Map, Value, json};

use super::{EmbedInput, EmbedRequest, EmbedResponse, Encoding, to_base64};
use crate::ProtocolError;

/// The most inputs OpenAI takes in one call.
pub const MAX_INPUTS: usize = 2048;

/// A client's body.
pub fn parse_request(body: &[u8]) -> Result<EmbedRequest, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let Value::Object(o) = v else { return Err(ProtocolError::body("expected a JSON object")) };
    let model = match o.get("model") {
        Some(Value::String(m)) => m.clone(),
        None | Some(Value::Null) => String::new(),
        Some(_) => return Err(ProtocolError::body("model: expected a string")),
    };
    let inputs = match o.get("input") {
        Some(Value::String(s)) => vec![EmbedInput::Text(s.clone())],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(ProtocolError::body("input: must not be empty"));
        }
        Some(Value::Array(items)) if items.iter().all(Value::is_number) => {
            vec![EmbedInput::Tokens(token_ids(items, "input")?)]
        }
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::String(s) => Ok(EmbedInput::Text(s.clone())),
                Value::Array(ids) => {
                    Ok(EmbedInput::Tokens(token_ids(ids, &format!("input[{i}]"))?))
                }
                _ => Err(ProtocolError::body(format!(
                    "input[{i}]: expected a string or an array of token ids"
                ))),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(ProtocolError::body(
                "input: expected a string, an array of strings, or token ids",
            ));
        }
        None => return Err(ProtocolError::body("input: required")),
    };
    let dimensions = match o.get("dimensions") {
        None | Some(Value::Null) => None,
        Some(d) => Some(
            d.as_u64()
                .and_then(|d| u32::try_from(d).ok())
                .filter(|d| *d > 0)
                .ok_or_else(|| ProtocolError::body("dimensions: expected a positive integer"))?,
        ),
    };
    let encoding = match o.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => Encoding::Float,
        Some("base64") => Encoding::Base64,
        Some(other) => {
            return Err(ProtocolError::body(format!(
                "encoding_format: {other:?} is not float or base64"
            )));
        }
    };
    let user = o.get("user").and_then(Value::as_str).map(str::to_owned);
    Ok(EmbedRequest { model, inputs, dimensions, encoding, purpose: None, user })
}

fn token_ids(items: &[Value], at: &str) -> Result<Vec<u32>, ProtocolError> {
    if items.is_empty() {
        return Err(ProtocolError::body(format!("{at}: must not be empty")));
    }
    items
        .iter()
        .map(|t| {
            t.as_u64().and_then(|t| u32::try_from(t).ok()).ok_or_else(|| {
                ProtocolError::body(format!("{at}: token ids are integers of 0 or more"))
            })
        })
        .collect()
}

/// The answer as OpenAI writes it, named `model`, vectors encoded as
/// `encoding`. Written from the `f32`s (each in its shortest form, as OpenAI
/// writes them), not through `f64`, whose digits would double the body.
pub fn write_response(resp: &EmbedResponse, model: &str, encoding: Encoding) -> Vec<u8> {
    #[derive(serde::Serialize)]
    #[serde(untagged)]
    enum Vector<'a> {
        Float(&'a [f32]),
        Base64(String),
    }
    #[derive(serde::Serialize)]
    struct Item<'a> {
        object: &'static str,
        index: usize,
        embedding: Vector<'a>,
    }
    #[derive(serde::Serialize)]
    struct Tokens {
        prompt_tokens: u64,
        total_tokens: u64,
    }
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        object: &'static str,
        data: Vec<Item<'a>>,
        model: &'a str,
        usage: Tokens,
    }
    let data = resp
        .vectors
        .iter()
        .enumerate()
        .map(|(index, v)| Item {
            object: "embedding",
            index,
            embedding: match encoding {
                Encoding::Float => Vector::Float(v),
                Encoding::Base64 => Vector::Base64(to_base64(v)),
            },
        })
        .collect();
    let tokens = resp.input_tokens.unwrap_or(0);
    let answer = Answer {
        object: "list",
        data,
        model,
        usage: Tokens { prompt_tokens: tokens, total_tokens: tokens },
    };
    serde_json::to_vec(&answer).unwrap_or_default()
}

/// The body an OpenAI-compatible upstream is sent for `inputs` (a batch of
/// `req`'s), for its `upstream_model`. Vectors are asked as floats: a client's
/// base64 is written by the gateway.
pub fn encode_request(req: &EmbedRequest, inputs: &[EmbedInput], upstream_model: &str) -> Value {
    let input: Vec<Value> = inputs
        .iter()
        .map(|i| match i {
            EmbedInput::Text(t) => json!(t),
            EmbedInput::Tokens(ids) => json!(ids),
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(upstream_model));
    body.insert("input".into(), Value::Array(input));
    body.insert("encoding_format".into(), json!("float"));
    if let Some(d) = req.dimensions {
        body.insert("dimensions".into(), json!(d));
    }
    if let Some(u) = &req.user {
        body.insert("user".into(), json!(u));
    }
    Value::Object(body)
}

/// An OpenAI-compatible upstream's answer, vectors in input order (by their
/// `index`, which servers need not send sorted).
pub fn parse_response(body: &[u8]) -> Result<EmbedResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("embeddings: {e}")))?;
    let Some(data) = v.get("data").and_then(Value::as_array) else {
        return Err(ProtocolError::MalformedUpstream("embeddings: no data".into()));
    };
    let mut indexed: Vec<(u64, Vec<f32>)> = Vec::with_capacity(data.len());
    for (pos, item) in data.iter().enumerate() {
        let index = item.get("index").and_then(Value::as_u64).unwrap_or(pos as u64);
        let vector = match item.get("embedding") {
            Some(Value::Array(xs)) => floats(xs)?,
            Some(Value::String(b64)) => super::from_base64(b64)?,
            _ => {
                return Err(ProtocolError::MalformedUpstream(format!(
                    "embeddings: data[{pos}] has no embedding"
                )));
            }
        };
        indexed.push((index, vector));
    }
    indexed.sort_by_key(|(i, _)| *i);
    if indexed.iter().enumerate().any(|(pos, (i, _))| *i != pos as u64) {
        return Err(ProtocolError::MalformedUpstream(
            "embeddings: indexes are not one per input".into(),
        ));
    }
    Ok(EmbedResponse {
        model: v.get("model").and_then(Value::as_str).unwrap_or_default().to_owned(),
        vectors: indexed.into_iter().map(|(_, v)| v).collect(),
        input_tokens: v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
    })
}

/// JSON numbers as `f32` (a vector holds nothing else).
pub(super) fn floats(xs: &[Value]) -> Result<Vec<f32>, ProtocolError> {
    xs.iter()
        .map(|x| {
            x.as_f64().map(|f| f as f32).ok_or_else(|| {
                ProtocolError::MalformedUpstream("embeddings: a vector holds a non-number".into())
            })
        })
        .collect()
}
