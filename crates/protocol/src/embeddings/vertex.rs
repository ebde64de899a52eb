//! Google's text embedding models on Vertex AI (`:predict`): `instances` of
//! `{content, task_type}`, `parameters.outputDimensionality`, and answers
//! that count each input's tokens.
//!
//! `gemini-embedding-001` takes one instance a call there; the older models
//! (`text-embedding-005`, `text-multilingual-embedding-002`) up to 250.

use serde_json::{Map, Value, json};

use super::{EmbedInput, EmbedRequest, EmbedResponse, Purpose};
use crate::ProtocolError;

/// The most instances one `:predict` call of the older models takes.
pub const MAX_INPUTS: usize = 250;

/// The most inputs one call of `upstream_model` takes.
pub fn max_inputs(upstream_model: &str) -> usize {
    if upstream_model.starts_with("gemini-embedding") { 1 } else { MAX_INPUTS }
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

/// The `:predict` body for `inputs` (a batch of `req`'s).
pub fn encode_request(req: &EmbedRequest, inputs: &[EmbedInput]) -> Result<Value, ProtocolError> {
    let instances = inputs
        .iter()
        .map(|i| {
            let mut instance = Map::new();
            instance.insert("content".into(), json!(i.text("Vertex AI")?));
            if let Some(p) = req.purpose {
                instance.insert("task_type".into(), json!(task_type(p)));
            }
            Ok(Value::Object(instance))
        })
        .collect::<Result<Vec<_>, ProtocolError>>()?;
    let mut body = Map::new();
    body.insert("instances".into(), Value::Array(instances));
    if let Some(d) = req.dimensions {
        body.insert("parameters".into(), json!({"outputDimensionality": d}));
    }
    Ok(Value::Object(body))
}

/// A `:predict` answer: each prediction's values, and the tokens each counted.
pub fn parse_response(body: &[u8], upstream_model: &str) -> Result<EmbedResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("embeddings: {e}")))?;
    let malformed = |what: &str| ProtocolError::MalformedUpstream(format!("embeddings: {what}"));
    let predictions = v
        .get("predictions")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no predictions"))?;
    let mut vectors = Vec::with_capacity(predictions.len());
    let mut tokens = Some(0u64);
    for p in predictions {
        let e = p.get("embeddings").ok_or_else(|| malformed("a prediction has no embeddings"))?;
        let values = e
            .get("values")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("a prediction has no values"))?;
        vectors.push(super::openai::floats(values)?);
        let counted = e.pointer("/statistics/token_count").and_then(Value::as_f64);
        tokens = tokens.zip(counted).map(|(a, b)| a + b as u64);
    }
    Ok(EmbedResponse { model: upstream_model.to_owned(), vectors, input_tokens: tokens })
}
