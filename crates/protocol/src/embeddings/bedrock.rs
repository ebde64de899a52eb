//! Embedding models on Bedrock (`InvokeModel`), each in its vendor's body:
//!
//! - Amazon Titan Text Embeddings (`amazon.titan-embed-text-*`): one text a
//!   call, `dimensions` (v2: 256, 512 or 1024) and `normalize`.
//! - Cohere Embed (`cohere.embed-*`): up to 96 texts a call with their
//!   `input_type`; the model's own size (no `dimensions`).

use serde_json::{Map, Value, json};

use super::{EmbedInput, EmbedRequest, EmbedResponse, Purpose};
use crate::ProtocolError;

/// The most texts Cohere Embed takes in one call on Bedrock.
pub const COHERE_MAX_INPUTS: usize = 96;
/// Titan takes one text a call.
pub const TITAN_MAX_INPUTS: usize = 1;
/// The sizes Titan Text Embeddings v2 offers.
pub const TITAN_V2_DIMENSIONS: [u32; 3] = [256, 512, 1024];

/// Which body an upstream model id takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Amazon Titan Text Embeddings (v1 or v2).
    Titan {
        /// v2 (sizes and `normalize`); v1 has one size.
        v2: bool,
    },
    /// Cohere Embed.
    Cohere,
}

impl Family {
    /// The family of a Bedrock model id (a region prefix such as `us.` allowed);
    /// `None`: not an embedding model this gateway speaks.
    pub fn of(upstream_model: &str) -> Option<Family> {
        let id = upstream_model
            .split_once('.')
            .filter(|(p, _)| p.len() == 2)
            .map_or(upstream_model, |(_, rest)| rest);
        if let Some(rest) = id.strip_prefix("amazon.titan-embed-text-") {
            Some(Family::Titan { v2: rest.starts_with("v2") })
        } else if id.starts_with("cohere.embed-") {
            Some(Family::Cohere)
        } else {
            None
        }
    }

    /// The most inputs one call takes.
    pub fn max_inputs(self) -> usize {
        match self {
            Family::Titan { .. } => TITAN_MAX_INPUTS,
            Family::Cohere => COHERE_MAX_INPUTS,
        }
    }
}

/// The body one call is sent for `inputs` (a batch of `req`'s, within the
/// family's [`Family::max_inputs`]).
pub fn encode_request(
    family: Family,
    req: &EmbedRequest,
    inputs: &[EmbedInput],
) -> Result<Value, ProtocolError> {
    match family {
        Family::Titan { v2 } => {
            let [input] = inputs else {
                return Err(ProtocolError::Unsupported(format!(
                    "Titan embeds one text a call, not {}",
                    inputs.len()
                )));
            };
            let mut body = Map::new();
            body.insert("inputText".into(), json!(input.text("Bedrock Titan")?));
            match (req.dimensions, v2) {
                (None, _) => {}
                (Some(d), true) if TITAN_V2_DIMENSIONS.contains(&d) => {
                    body.insert("dimensions".into(), json!(d));
                }
                (Some(d), true) => {
                    return Err(ProtocolError::Unsupported(format!(
                        "dimensions: Titan Text Embeddings v2 makes 256, 512 or 1024, not {d}"
                    )));
                }
                (Some(_), false) => {
                    return Err(ProtocolError::Unsupported(
                        "dimensions: Titan Text Embeddings v1 has one size (1536)".into(),
                    ));
                }
            }
            Ok(Value::Object(body))
        }
        Family::Cohere => {
            if req.dimensions.is_some() {
                return Err(ProtocolError::Unsupported(
                    "dimensions: Cohere Embed on Bedrock makes the model's own size".into(),
                ));
            }
            let texts = inputs
                .iter()
                .map(|i| i.text("Bedrock Cohere").map(str::to_owned))
                .collect::<Result<Vec<_>, _>>()?;
            // Cohere requires the purpose; a document is what stores embed most.
            let input_type = match req.purpose {
                Some(Purpose::Query) => "search_query",
                Some(Purpose::Classification) => "classification",
                Some(Purpose::Clustering) => "clustering",
                Some(Purpose::Document | Purpose::Similarity) | None => "search_document",
            };
            Ok(json!({"texts": texts, "input_type": input_type}))
        }
    }
}

/// One call's answer.
pub fn parse_response(
    family: Family,
    body: &[u8],
    upstream_model: &str,
) -> Result<EmbedResponse, ProtocolError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("embeddings: {e}")))?;
    let malformed = |what: &str| ProtocolError::MalformedUpstream(format!("embeddings: {what}"));
    match family {
        Family::Titan { .. } => {
            let xs = v
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("no embedding"))?;
            Ok(EmbedResponse {
                model: upstream_model.to_owned(),
                vectors: vec![super::openai::floats(xs)?],
                input_tokens: v.get("inputTextTokenCount").and_then(Value::as_u64),
            })
        }
        Family::Cohere => {
            // `embeddings` is the float list, or (with embedding_types) an
            // object holding it under `float`.
            let list = match v.get("embeddings") {
                Some(Value::Array(list)) => list,
                Some(Value::Object(by_type)) => by_type
                    .get("float")
                    .and_then(Value::as_array)
                    .ok_or_else(|| malformed("no float embeddings"))?,
                _ => return Err(malformed("no embeddings")),
            };
            let vectors = list
                .iter()
                .map(|e| e.as_array().ok_or_else(|| malformed("an embedding is not a list")))
                .map(|xs| xs.and_then(|xs| super::openai::floats(xs)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(EmbedResponse { model: upstream_model.to_owned(), vectors, input_tokens: None })
        }
    }
}
