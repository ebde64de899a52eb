//! Embeddings on the fake upstreams: each vendor's embeddings request checked
//! as the real API checks it ([`check`]), and its answer built ([`answer`]).
//! Written from the providers' documented behaviour, not from the gateway's
//! encoder, so it checks that encoder independently.
//!
//! # Routes (POST)
//!
//! | Fake | Route | [`Api`] |
//! |---|---|---|
//! | OpenAi | `/v1/embeddings`, `/embeddings` | `OpenAi { deployment: false }` |
//! | Azure ([`crate::FakeUpstream::start_azure`]) | `/openai/deployments/{deployment}/embeddings?api-version=…` (model: the deployment) | `OpenAi { deployment: true }` |
//! | Azure | `/openai/v1/embeddings` (model in the body) | `OpenAi { deployment: false }` |
//! | Gemini | `/v1beta/models/{model}:embedContent` (`/v1/models/…` too) | `GeminiEmbed` |
//! | Gemini | `/v1beta/models/{model}:batchEmbedContents` | `GeminiBatch` |
//! | Vertex Gemini ([`crate::FakeUpstream::start_vertex`]) | `/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:predict` | `VertexPredict` |
//! | Bedrock | `/model/{modelId}/invoke`, the ID (after an optional region prefix, `us.`) `amazon.titan-embed-text-…` | `Titan` |
//! | Bedrock | `/model/{modelId}/invoke`, the ID `cohere.embed-…` | `Cohere` |
//!
//! A refused body answers 400 in the vendor's error shape, is recorded and
//! takes nothing from the script; an accepted one takes the next scripted
//! [`Reply`](crate::Reply) as a generation does (so `Reply::status(429)` or a
//! delay script an embeddings call too), and [`ReplyBody::Auto`](crate::ReplyBody::Auto)
//! answers with [`answer`].
//!
//! # What the fake chooses where the APIs leave it open
//!
//! - **Vectors**: input `i`'s vector is [`fake_vector`]`(text_i, dims)`:
//!   deterministic from the text, values multiples of 1/1024 in [-1, 1]
//!   (exact in f32 and in JSON), and a shorter vector is a prefix of a longer
//!   one. The text of an input: an OpenAI string itself, an OpenAI token-id
//!   array its compact JSON (`[1,2,3]`); a Gemini content its text parts
//!   joined with `\n`; a Vertex instance's `content`; Titan's `inputText`;
//!   each Cohere text.
//! - **Size**: `dims` is the size the request asks (OpenAI `dimensions`,
//!   Gemini and Vertex `outputDimensionality`, Titan v2 `dimensions`, Cohere
//!   v4 `output_dimension`), else [`DEFAULT_DIMS`] (8) for every model, Titan
//!   v1 included (whose real size is a fixed 1536): small answers keep tests
//!   readable. Titan's `normalize` is accepted and changes nothing.
//! - **Tokens**: [`token_count`]: a text's characters / 4, rounded up, at
//!   least 1; an OpenAI token-id array counts its ids. Vertex's
//!   `billableCharacterCount` counts the non-whitespace characters.
//! - **Order**: OpenAI lists `data` in **reverse** index order when the input
//!   is an array of 3 or more inputs (each item keeps its `index`): the real
//!   API promises no order, so a gateway must sort by `index`. Every other
//!   answer is in input order, as those APIs are.
//! - Caps beyond the brief, from the providers' references: OpenAI 8192 tokens
//!   an input and 300,000 a request, `dimensions` at most 1536 (3072 for a
//!   model whose ID has `large`); Google `outputDimensionality` at most 3072;
//!   Vertex 2048 tokens an input (over it: `truncated: true`, or a 400 with
//!   `autoTruncate: false`); Titan 8192 tokens; Cohere 2048 characters a text.
//! - An Azure deployment's model is its name, so `dimensions` passes only for
//!   a deployment named `text-embedding-3…`.

use base64::Engine as _;
use serde_json::{Value, json};

use crate::bedrock;
use crate::vertex::PROJECT;

/// The vector size when the request asks none.
pub const DEFAULT_DIMS: usize = 8;
/// OpenAI: inputs in one request.
pub const OPENAI_MAX_INPUTS: usize = 2048;
/// OpenAI: tokens in one input.
pub const OPENAI_MAX_INPUT_TOKENS: u64 = 8192;
/// OpenAI: tokens in one request, all inputs together.
pub const OPENAI_MAX_REQUEST_TOKENS: u64 = 300_000;
/// Gemini: requests in one `batchEmbedContents`.
pub const GEMINI_MAX_BATCH: usize = 100;
/// Gemini and Vertex: the largest `outputDimensionality`.
pub const GOOGLE_MAX_DIMS: u64 = 3072;
/// Vertex: instances in one `predict` (`gemini-embedding-…`: 1).
pub const VERTEX_MAX_INSTANCES: usize = 250;
/// Vertex: tokens in one instance before truncation.
pub const VERTEX_MAX_INPUT_TOKENS: u64 = 2048;
/// Titan: tokens in `inputText`.
pub const TITAN_MAX_INPUT_TOKENS: u64 = 8192;
/// Cohere on Bedrock: texts in one request.
pub const COHERE_MAX_TEXTS: usize = 96;
/// Cohere on Bedrock: characters in one text.
pub const COHERE_MAX_TEXT_CHARS: usize = 2048;
/// Google's embedding task types (Gemini `taskType`, Vertex `task_type`).
pub const TASK_TYPES: [&str; 9] = [
    "TASK_TYPE_UNSPECIFIED",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_DOCUMENT",
    "SEMANTIC_SIMILARITY",
    "CLASSIFICATION",
    "CLUSTERING",
    "QUESTION_ANSWERING",
    "FACT_VERIFICATION",
    "CODE_RETRIEVAL_QUERY",
];

/// Which embeddings API a request is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// OpenAI's `/v1/embeddings` (Azure's too); `deployment`: Azure's
    /// deployment route, whose model is the path's (the body's `model` is
    /// then optional).
    OpenAi {
        /// The model is the path's deployment.
        deployment: bool,
    },
    /// Gemini's `:embedContent`.
    GeminiEmbed,
    /// Gemini's `:batchEmbedContents`.
    GeminiBatch,
    /// Vertex AI's `:predict` for Google's embedding models.
    VertexPredict,
    /// Amazon Titan Text Embeddings (v1 or v2, by the model ID) on InvokeModel.
    Titan,
    /// Cohere Embed on InvokeModel.
    Cohere,
}

/// The fake's embedding of `text`: `dims` values, each a multiple of 1/1024
/// in [-1, 1] (so exact as f32 and through JSON), drawn from a sequence seeded
/// by the text's hash; a shorter vector is a prefix of a longer one.
pub fn fake_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut state = text
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (0..dims)
        .map(|_| {
            // splitmix64
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            // 0..=2048, exact in f32.
            let step = u16::try_from(z % 2049).unwrap_or(1024);
            (f32::from(step) - 1024.0) / 1024.0
        })
        .collect()
}

/// The fake's token count of a text: its characters / 4, rounded up, at least 1.
pub fn token_count(text: &str) -> u64 {
    u64::try_from(text.chars().count()).unwrap_or(u64::MAX).div_ceil(4).max(1)
}

/// A vector as OpenAI's `encoding_format: "base64"` sends it: the
/// little-endian f32 bytes in standard, padded base64.
pub fn base64_floats(vector: &[f32]) -> String {
    let bytes: Vec<u8> = vector.iter().flat_map(|v| v.to_le_bytes()).collect();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `Err(message)`: the real API refuses `body`, sent on `api` for `model`
/// (the path's model; OpenAI's is the body's unless a deployment's), with a
/// 400 saying `message`.
pub fn check(api: Api, model: &str, body: &Value) -> Result<(), String> {
    match api {
        Api::OpenAi { deployment } => openai(deployment, model, body).map(drop),
        Api::GeminiEmbed => gemini_one(model, body, None).map(drop),
        Api::GeminiBatch => gemini_batch(model, body).map(drop),
        Api::VertexPredict => vertex(model, body).map(drop),
        Api::Titan => titan(model, body).map(drop),
        Api::Cohere => cohere(model, body).map(drop),
    }
}

/// The answer to a body [`check`] passed, in the API's shape (see the module's
/// notes for the fake's choices). A body it refuses gets `{"error": message}`.
pub fn answer(api: Api, model: &str, body: &Value) -> Value {
    let answered = match api {
        Api::OpenAi { deployment } => openai(deployment, model, body).map(openai_answer),
        Api::GeminiEmbed => gemini_one(model, body, None)
            .map(|one| json!({"embedding": {"values": fake_vector(&one.text, one.dims)}})),
        Api::GeminiBatch => gemini_batch(model, body).map(|all| {
            let values: Vec<Value> =
                all.iter().map(|one| json!({"values": fake_vector(&one.text, one.dims)})).collect();
            json!({ "embeddings": values })
        }),
        Api::VertexPredict => vertex(model, body).map(vertex_answer),
        Api::Titan => titan(model, body).map(titan_answer),
        Api::Cohere => cohere(model, body).map(|c| cohere_answer(&c, body)),
    };
    answered.unwrap_or_else(|message| json!({ "error": message }))
}

/// The model ID and API of an InvokeModel route on an embedding model
/// (`path` as sent, the ID percent-decoded); `None` for any other path.
pub fn bedrock_route(path: &str) -> Option<(String, Api)> {
    let (model, action) = bedrock::model_action(path)?;
    if action != "invoke" {
        return None;
    }
    let base = base_model(&model);
    let api = if base.starts_with("amazon.titan-embed-text-") {
        Api::Titan
    } else if base.starts_with("cohere.embed-") {
        Api::Cohere
    } else {
        return None;
    };
    Some((model, api))
}

/// The model of a Vertex `:predict` route of Google's publisher in the fake's
/// project; `None` for any other path.
pub fn vertex_route(path: &str) -> Option<String> {
    let rest = path.strip_prefix(&format!("/v1/projects/{PROJECT}/locations/"))?;
    let (location, rest) = rest.split_once('/')?;
    let rest = rest.replace("%3A", ":").replace("%3a", ":").replace("%40", "@");
    let (model, action) = rest.strip_prefix("publishers/google/models/")?.rsplit_once(':')?;
    let routed = !location.is_empty() && action == "predict" && !model.is_empty();
    (routed && !model.contains('/')).then(|| model.to_owned())
}

/// A Bedrock model ID without its cross-region inference prefix (`us.`,
/// `eu.`, `apac.`, `global.`).
fn base_model(model: &str) -> &str {
    match model.split_once('.') {
        Some((prefix, rest))
            if (prefix.len() == 2 && prefix.bytes().all(|b| b.is_ascii_lowercase()))
                || prefix == "apac"
                || prefix == "global" =>
        {
            rest
        }
        _ => model,
    }
}

/// JSON's name for a value's type, as error messages say it.
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

/// A positive integer that fits a vector size.
fn positive(v: &Value) -> Option<usize> {
    v.as_u64().filter(|n| *n >= 1).and_then(|n| usize::try_from(n).ok())
}

fn dims_or_default(dims: Option<usize>) -> usize {
    dims.unwrap_or(DEFAULT_DIMS)
}

// ---------------------------------------------------------------------------
// OpenAI (and Azure OpenAI)

const OPENAI_FIELDS: [&str; 5] = ["model", "input", "encoding_format", "dimensions", "user"];
const OPENAI_BAD_INPUT: &str = "'$.input' is invalid. Please check the API reference: \
                                https://platform.openai.com/docs/api-reference.";

/// One input to embed: the text its vector is drawn from, its tokens.
#[derive(Debug, Clone, PartialEq)]
struct Input {
    text: String,
    tokens: u64,
}

impl Input {
    fn text(text: &str) -> Input {
        Input { text: text.to_owned(), tokens: token_count(text) }
    }

    /// A token-id array: its compact JSON, its ids.
    fn ids(ids: &Value, n: usize) -> Input {
        Input { text: ids.to_string(), tokens: u64::try_from(n).unwrap_or(u64::MAX) }
    }
}

struct OpenAiRequest {
    model: String,
    inputs: Vec<Input>,
    dims: Option<usize>,
    base64: bool,
}

fn openai(deployment: bool, path_model: &str, body: &Value) -> Result<OpenAiRequest, String> {
    let map = body.as_object().ok_or(
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't \
         using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was \
         sent was not valid JSON.)",
    )?;
    if let Some(key) = map.keys().find(|k| !OPENAI_FIELDS.contains(&k.as_str())) {
        return Err(format!("Unrecognized request argument supplied: {key}"));
    }
    let body_model = match map.get("model") {
        None => None,
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
        (false, None) => return Err("you must provide a model parameter".into()),
    };
    let input =
        map.get("input").filter(|v| !v.is_null()).ok_or("Missing required parameter: 'input'.")?;
    let inputs = openai_inputs(input)?;
    if let Some((i, long)) =
        inputs.iter().enumerate().find(|(_, x)| x.tokens > OPENAI_MAX_INPUT_TOKENS)
    {
        return Err(format!(
            "This model's maximum context length is {OPENAI_MAX_INPUT_TOKENS} tokens, however \
             you requested {} tokens (input {i}). Please reduce your prompt.",
            long.tokens
        ));
    }
    let total: u64 = inputs.iter().map(|x| x.tokens).sum();
    if total > OPENAI_MAX_REQUEST_TOKENS {
        return Err(format!(
            "Requested {total} tokens, max {OPENAI_MAX_REQUEST_TOKENS} tokens per request"
        ));
    }
    let base64 = match map.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(other) => {
            return Err(format!(
                "Invalid value for 'encoding_format': {other}. Supported values are: 'float' \
                 and 'base64'."
            ));
        }
    };
    let dims = match map.get("dimensions") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let n = positive(v).ok_or_else(|| {
                format!("Invalid 'dimensions': expected an integer >= 1, but got {v} instead.")
            })?;
            if !model.starts_with("text-embedding-3") {
                return Err("This model does not support specifying dimensions.".into());
            }
            let max = if model.contains("large") { 3072 } else { 1536 };
            if n > max {
                return Err(format!(
                    "Invalid 'dimensions': integer above maximum value. Expected a value <= \
                     {max}, but got {n} instead."
                ));
            }
            Some(n)
        }
    };
    match map.get("user") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(other) => {
            return Err(format!(
                "Invalid type for 'user': expected a string, but got {} instead.",
                kind(other)
            ));
        }
    }
    Ok(OpenAiRequest { model: model.to_owned(), inputs, dims, base64 })
}

/// `input`: a string, an array of strings, one array of token ids, or an
/// array of token-id arrays. The 2048 cap counts inputs (a lone token-id
/// array is one input, its ids capped by the token limit instead).
fn openai_inputs(input: &Value) -> Result<Vec<Input>, String> {
    let items = match input {
        Value::String(s) if s.is_empty() => return Err(OPENAI_BAD_INPUT.into()),
        Value::String(s) => return Ok(vec![Input::text(s)]),
        Value::Array(items) => items,
        _ => return Err(OPENAI_BAD_INPUT.into()),
    };
    if items.is_empty() {
        return Err("Invalid 'input': empty array. Expected an array with minimum length 1, but \
                    got an empty array instead."
            .into());
    }
    if items.iter().all(Value::is_u64) {
        return Ok(vec![Input::ids(input, items.len())]);
    }
    if items.len() > OPENAI_MAX_INPUTS {
        return Err(format!(
            "Invalid 'input': array too long. Expected an array with maximum length \
             {OPENAI_MAX_INPUTS}, but got an array with length {} instead.",
            items.len()
        ));
    }
    let strings = items.iter().all(Value::is_string);
    items
        .iter()
        .map(|item| match item {
            Value::String(s) if strings && !s.is_empty() => Ok(Input::text(s)),
            Value::Array(ids) if !strings && !ids.is_empty() && ids.iter().all(Value::is_u64) => {
                Ok(Input::ids(item, ids.len()))
            }
            _ => Err(OPENAI_BAD_INPUT.to_owned()),
        })
        .collect()
}

fn openai_answer(request: OpenAiRequest) -> Value {
    let dims = dims_or_default(request.dims);
    let mut data: Vec<Value> = request
        .inputs
        .iter()
        .enumerate()
        .map(|(index, input)| {
            let vector = fake_vector(&input.text, dims);
            let embedding =
                if request.base64 { Value::from(base64_floats(&vector)) } else { json!(vector) };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    // Real servers promise no order: a gateway must sort by `index`.
    if data.len() >= 3 {
        data.reverse();
    }
    let tokens: u64 = request.inputs.iter().map(|x| x.tokens).sum();
    json!({"object": "list", "data": data, "model": request.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})
}

// Google's and Bedrock's APIs.
#[path = "embeddings_google.rs"]
mod google;
use google::{gemini_batch, gemini_one, vertex, vertex_answer};

#[path = "embeddings_bedrock.rs"]
mod aws;
use aws::{cohere, cohere_answer, titan, titan_answer};

#[cfg(test)]
#[path = "embeddings_tests.rs"]
mod tests;
