//! Embeddings: the canonical request and answer, and their wire forms.
//!
//! | side | format | module |
//! |---|---|---|
//! | client | OpenAI `POST /v1/embeddings` | [`openai`] |
//! | client | Gemini `:embedContent`, `:batchEmbedContents` | [`gemini`] |
//! | upstream | OpenAI-compatible `/embeddings` | [`openai`] |
//! | upstream | Gemini (and Vertex's Gemini) `:batchEmbedContents` | [`gemini`] |
//! | upstream | Vertex AI `:predict` (Google's text embedding models) | [`vertex`] |
//! | upstream | Bedrock Titan (one text a call), Cohere (up to 96) | [`bedrock`] |
//!
//! Which of these an upstream wire speaks, and where, is its folder's
//! [`crate::WireSpec::embeddings`] ([`EmbedSpec`]).
//!
//! One vector per input, in input order, whatever served it: an upstream that
//! takes fewer inputs a call than the request holds is sent it in [`batches`],
//! and the answers are joined in order ([`EmbedResponse::join`]). What a wire
//! cannot express (token-id input, `dimensions` where the model has one size)
//! is refused by name, never dropped. Vectors are kept as `f32`: every provider
//! serves single precision; `encoding_format: base64` is the little-endian
//! bytes of those, as OpenAI writes them.

pub mod bedrock;
pub mod gemini;
pub mod openai;
pub mod vertex;

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::ProtocolError;

/// One input to embed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum EmbedInput {
    /// Text.
    Text(String),
    /// Token ids of the model's own tokenizer (OpenAI-compatible upstreams only).
    Tokens(Vec<u32>),
}

impl EmbedInput {
    /// The text, or the refusal a wire that takes text only gives token ids.
    pub fn text(&self, wire: &str) -> Result<&str, ProtocolError> {
        match self {
            EmbedInput::Text(t) => Ok(t),
            EmbedInput::Tokens(_) => Err(ProtocolError::Unsupported(format!(
                "input as token ids: {wire} takes text only"
            ))),
        }
    }
}

/// How the client wants the vectors written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    /// JSON numbers.
    #[default]
    Float,
    /// Base64 of the little-endian `f32` bytes (OpenAI's `encoding_format: base64`).
    Base64,
}

/// What an embedding is for, where a provider asks (Gemini's `taskType`,
/// Cohere's `input_type`); `None`: the provider's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// A document stored for retrieval.
    Document,
    /// A query searched with.
    Query,
    /// Classification.
    Classification,
    /// Clustering.
    Clustering,
    /// Similarity between texts.
    Similarity,
}

/// An embeddings request, whatever format it came in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EmbedRequest {
    /// The model as the client named it.
    pub model: String,
    /// The inputs, one vector each.
    pub inputs: Vec<EmbedInput>,
    /// Asked vector size (models that can shorten theirs).
    pub dimensions: Option<u32>,
    /// How the client wants the vectors written.
    pub encoding: Encoding,
    /// What the vectors are for.
    pub purpose: Option<Purpose>,
    /// The end user, as OpenAI's `user`.
    pub user: Option<String>,
}

/// An embeddings answer: one vector per input, in input order.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct EmbedResponse {
    /// The model that answered, as the upstream named it.
    pub model: String,
    /// The vectors, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens, where the upstream counted them.
    pub input_tokens: Option<u64>,
}

impl EmbedResponse {
    /// The answers to consecutive batches of one request, as one: vectors in
    /// order, token counts summed (unknown where any batch's is).
    pub fn join(parts: Vec<EmbedResponse>) -> EmbedResponse {
        let mut out = EmbedResponse { input_tokens: Some(0), ..EmbedResponse::default() };
        for p in parts {
            if out.model.is_empty() {
                out.model = p.model;
            }
            out.vectors.extend(p.vectors);
            out.input_tokens = out.input_tokens.zip(p.input_tokens).map(|(a, b)| a + b);
        }
        out
    }

    /// Check it holds one vector per input of a batch of `expected`.
    pub fn expect(self, expected: usize) -> Result<EmbedResponse, ProtocolError> {
        if self.vectors.len() == expected {
            Ok(self)
        } else {
            Err(ProtocolError::MalformedUpstream(format!(
                "{} embedding(s) for {expected} input(s)",
                self.vectors.len()
            )))
        }
    }
}

/// `len` inputs in batches of at most `cap` (a provider's most inputs a call),
/// in order. No batch for no input.
pub fn batches(len: usize, cap: usize) -> Vec<Range<usize>> {
    let cap = cap.max(1);
    (0..len).step_by(cap).map(|start| start..(start + cap).min(len)).collect()
}

/// A vector as OpenAI writes `encoding_format: base64`: its little-endian
/// `f32` bytes, base64.
pub fn to_base64(vector: &[f32]) -> String {
    use base64::Engine as _;
    let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A vector from OpenAI's base64 form.
pub fn from_base64(text: &str) -> Result<Vec<f32>, ProtocolError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| ProtocolError::MalformedUpstream(format!("embedding base64: {e}")))?;
    if bytes.len() % 4 != 0 {
        return Err(ProtocolError::MalformedUpstream(format!(
            "embedding base64: {} bytes, not whole f32 values",
            bytes.len()
        )));
    }
    Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// How an upstream wire embeds ([`crate::WireSpec::embeddings`]): where, and
/// in which body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbedSpec {
    /// Relative to the provider's endpoint, like [`crate::WireSpec::path`];
    /// `{model}` stands for the upstream model where the path names it.
    pub path: &'static str,
    /// The bodies it exchanges.
    pub body: EmbedBody,
}

/// The bodies an embeddings endpoint exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedBody {
    /// OpenAI's `/embeddings` ([`openai`]).
    OpenAi,
    /// Gemini's `:batchEmbedContents` ([`gemini`]).
    Gemini,
    /// Vertex AI's `:predict` ([`vertex`]).
    VertexPredict,
    /// Bedrock's `InvokeModel`, in the model's vendor's body ([`bedrock`]).
    BedrockInvoke,
}

impl EmbedSpec {
    /// The URL of a call for the upstream `model` at `endpoint` (written
    /// without a trailing `/`), the model encoded as `wire` encodes it in a
    /// path ([`crate::WireSpec::model_segment`]).
    pub fn url(&self, wire: &crate::WireSpec, endpoint: &str, model: &str) -> String {
        if self.path.contains("{model}") {
            format!("{endpoint}{}", self.path.replace("{model}", &wire.model_segment(model)))
        } else {
            format!("{endpoint}{}", self.path)
        }
    }

    /// The most inputs one call of `upstream_model` takes; refused where the
    /// body depends on a model this gateway does not know to embed (Bedrock).
    pub fn max_inputs(&self, upstream_model: &str) -> Result<usize, ProtocolError> {
        match self.body {
            EmbedBody::OpenAi => Ok(openai::MAX_INPUTS),
            EmbedBody::Gemini => Ok(gemini::MAX_INPUTS),
            EmbedBody::VertexPredict => Ok(vertex::max_inputs(upstream_model)),
            EmbedBody::BedrockInvoke => {
                bedrock_family(upstream_model).map(bedrock::Family::max_inputs)
            }
        }
    }

    /// The body of one call for `inputs` (a batch of `req`'s, within
    /// [`EmbedSpec::max_inputs`]).
    pub fn encode(
        &self,
        req: &EmbedRequest,
        inputs: &[EmbedInput],
        upstream_model: &str,
    ) -> Result<Vec<u8>, ProtocolError> {
        let body = match self.body {
            EmbedBody::OpenAi => openai::encode_request(req, inputs, upstream_model),
            EmbedBody::Gemini => gemini::encode_batch(req, inputs, upstream_model)?,
            EmbedBody::VertexPredict => vertex::encode_request(req, inputs)?,
            EmbedBody::BedrockInvoke => {
                bedrock::encode_request(bedrock_family(upstream_model)?, req, inputs)?
            }
        };
        serde_json::to_vec(&body).map_err(|e| ProtocolError::body(e.to_string()))
    }

    /// One call's answer.
    pub fn parse(&self, body: &[u8], upstream_model: &str) -> Result<EmbedResponse, ProtocolError> {
        match self.body {
            EmbedBody::OpenAi => openai::parse_response(body),
            EmbedBody::Gemini => gemini::parse_batch_response(body, upstream_model),
            EmbedBody::VertexPredict => vertex::parse_response(body, upstream_model),
            EmbedBody::BedrockInvoke => {
                bedrock::parse_response(bedrock_family(upstream_model)?, body, upstream_model)
            }
        }
    }
}

fn bedrock_family(upstream_model: &str) -> Result<bedrock::Family, ProtocolError> {
    bedrock::Family::of(upstream_model).ok_or_else(|| {
        ProtocolError::Unsupported(format!(
            "{upstream_model} on Bedrock: embeddings are spoken for Titan Text Embeddings \
             (amazon.titan-embed-text-*) and Cohere Embed (cohere.embed-*)"
        ))
    })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
