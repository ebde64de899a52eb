//! Gemini's embeddings: a client's `:embedContent` and `:batchEmbedContents`
//! bodies and answers, and `:batchEmbedContents` to a Gemini (or Vertex
//! Gemini) upstream.

use serde_json::{Map, Value, json};

use super::{EmbedInput, EmbedRequest, EmbedResponse, Purpose};
use crate::ProtocolError;

/// The most requests Gemini takes in one `batchEmbedContents`.
pub const MAX_INPUTS: usize = 100;

/// A client's `:embedContent` body, for `model` (from the path).
pub fn parse_embed_content(body: &[u8], model: &str) -> Result<EmbedRequest, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let (text, purpose, dimensions) = one(&v, "")?;
    Ok(EmbedRequest {
        model: model.to_owned(),
        inputs: vec![EmbedInput::Text(text)],
        dimensions,
        purpose,
        ..EmbedRequest::default()
    })
}

/// A client's `:batchEmbedContents` body, for `model` (from the path). Every
/// request in it must ask alike (one task type, one size): the batch is one
/// request here.
pub fn parse_batch(body: &[u8], model: &str) -> Result<EmbedRequest, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let Some(requests) = v.get("requests").and_then(Value::as_array) else {
        return Err(ProtocolError::body("requests: required, an array"));
    };
    if requests.is_empty() {
        return Err(ProtocolError::body("requests: must not be empty"));
    }
    let mut out = EmbedRequest { model: model.to_owned(), ..EmbedRequest::default() };
    for (i, r) in requests.iter().enumerate() {
        let at = format!("requests[{i}].");
        let (text, purpose, dimensions) = one(r, &at)?;
        if i == 0 {
            (out.purpose, out.dimensions) = (purpose, dimensions);
        } else if (purpose, dimensions) != (out.purpose, out.dimensions) {
            return Err(ProtocolError::Unsupported(format!(
                "{at}taskType or outputDimensionality differs from requests[0]'s: send such requests apart"
            )));
        }
        out.inputs.push(EmbedInput::Text(text));
    }
    Ok(out)
}

/// One `EmbedContentRequest`: its text, task and size.
fn one(v: &Value, at: &str) -> Result<(String, Option<Purpose>, Option<u32>), ProtocolError> {
    let Some(parts) = v.pointer("/content/parts").and_then(Value::as_array) else {
        return Err(ProtocolError::body(format!("{at}content.parts: required")));
    };
    let mut text = Vec::new();
    for (j, p) in parts.iter().enumerate() {
        match p.get("text").and_then(Value::as_str) {
            Some(t) => text.push(t),
            None => {
                return Err(ProtocolError::Unsupported(format!(
                    "{at}content.parts[{j}]: only text is embedded"
                )));
            }
        }
    }
    let purpose = match v.get("taskType").and_then(Value::as_str) {
        None | Some("TASK_TYPE_UNSPECIFIED") => None,
        Some("RETRIEVAL_DOCUMENT") => Some(Purpose::Document),
        Some("RETRIEVAL_QUERY" | "QUESTION_ANSWERING" | "CODE_RETRIEVAL_QUERY") => {
            Some(Purpose::Query)
        }
        Some("CLASSIFICATION") => Some(Purpose::Classification),
        Some("CLUSTERING") => Some(Purpose::Clustering),
        Some("SEMANTIC_SIMILARITY" | "FACT_VERIFICATION") => Some(Purpose::Similarity),
        Some(other) => {
            return Err(ProtocolError::body(format!("{at}taskType: {other:?} is not a task type")));
        }
    };
    let dimensions = match v.get("outputDimensionality") {
        None | Some(Value::Null) => None,
        Some(d) => {
            Some(d.as_u64().and_then(|d| u32::try_from(d).ok()).filter(|d| *d > 0).ok_or_else(
                || ProtocolError::body(format!("{at}outputDimensionality: a positive integer")),
            )?)
        }
    };
    Ok((text.join("\n"), purpose, dimensions))
}

/// One vector as Google writes it, from its `f32`s (see
/// [`super::openai::write_response`]).
#[derive(serde::Serialize)]
struct Values<'a> {
    values: &'a [f32],
}

/// The answer to an `:embedContent` (its one vector).
pub fn write_embed_content(resp: &EmbedResponse) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        embedding: Values<'a>,
    }
    let values = resp.vectors.first().map_or(&[][..], Vec::as_slice);
    serde_json::to_vec(&Answer { embedding: Values { values } }).unwrap_or_default()
}

/// The answer to a `:batchEmbedContents`.
pub fn write_batch(resp: &EmbedResponse) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Answer<'a> {
        embeddings: Vec<Values<'a>>,
    }
    let embeddings = resp.vectors.iter().map(|v| Values { values: v }).collect();
    serde_json::to_vec(&Answer { embeddings }).unwrap_or_default()
}

fn task_type(p: Purpose) -> &'static str {
    match p {
        Purpose::Document => "RETRIEVAL_DOCUMENT",
        Purpose::Query => "RETRIEVAL_QUERY",
        Purpose::Classification => "CLASSIFICATION",
        Purpose::Clustering => "CLUSTERING",
        Purpose::Similarity => "SEMANTIC_SIMILARITY",
    }
}

/// The `:batchEmbedContents` body a Gemini upstream is sent for `inputs` (a
/// batch of `req`'s, at most [`MAX_INPUTS`]), for its `upstream_model`.
pub fn encode_batch(
    req: &EmbedRequest,
    inputs: &[EmbedInput],
    upstream_model: &str,
) -> Result<Value, ProtocolError> {
    let name = format!("models/{}", upstream_model.trim_start_matches("models/"));
    let requests = inputs
        .iter()
        .map(|i| {
            let mut r = Map::new();
            r.insert("model".into(), json!(name));
            r.insert("content".into(), json!({"parts": [{"text": i.text("Gemini")?}]}));
            if let Some(p) = req.purpose {
                r.insert("taskType".into(), json!(task_type(p)));
            }
            if let Some(d) = req.dimensions {
                r.insert("outputDimensionality".into(), json!(d));
            }
            Ok(Value::Object(r))
        })
        .collect::<Result<Vec<_>, ProtocolError>>()?;
    Ok(json!({"requests": requests}))
}

/// A Gemini upstream's `:batchEmbedContents` answer (it counts no tokens).
pub fn parse_batch_response(
    body: &[u8],
    upstream_model: &str,
) -> Result<EmbedResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("embeddings: {e}")))?;
    let Some(list) = v.get("embeddings").and_then(Value::as_array) else {
        return Err(ProtocolError::MalformedUpstream("embeddings: no embeddings".into()));
    };
    let vectors = list
        .iter()
        .map(|e| match e.get("values").and_then(Value::as_array) {
            Some(xs) => super::openai::floats(xs),
            None => {
                Err(ProtocolError::MalformedUpstream("embeddings: an entry has no values".into()))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(EmbedResponse { model: upstream_model.to_owned(), vectors, input_tokens: None })
}
