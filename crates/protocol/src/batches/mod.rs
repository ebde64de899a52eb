//! Batches in OpenAI's shape: the input file's lines (JSONL, one request a
//! line) and the output and error files' lines.
//!
//! An input line is `{"custom_id", "method": "POST", "url", "body"}`; every
//! line of a batch names the batch's endpoint, and `custom_id`s are unique
//! within the file. An output line is
//! `{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error": null}`;
//! a line that could not be sent at all has `"response": null` and an
//! `error` of its own.
//!
//! A batch the gateway hands to a provider's own batch API is shaped for it
//! in [`native`] (OpenAI's in [`openai`], Anthropic's in [`anthropic`],
//! Vertex AI's in [`vertex`], Bedrock's in [`bedrock`]).

pub mod anthropic;
pub mod bedrock;
pub mod native;
pub mod openai;
pub mod vertex;

use serde_json::{Map, Value, json};

use crate::ProtocolError;

/// The endpoints a batch may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/v1/chat/completions`.
    ChatCompletions,
    /// `/v1/responses`.
    Responses,
    /// `/v1/embeddings`.
    Embeddings,
}

impl Endpoint {
    /// Every endpoint a batch may name.
    pub const ALL: [Endpoint; 3] =
        [Endpoint::ChatCompletions, Endpoint::Responses, Endpoint::Embeddings];

    /// Its path, as a batch and its lines name it.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::ChatCompletions => "/v1/chat/completions",
            Endpoint::Responses => "/v1/responses",
            Endpoint::Embeddings => "/v1/embeddings",
        }
    }

    /// The endpoint `path` names.
    pub fn parse(path: &str) -> Option<Endpoint> {
        Endpoint::ALL.into_iter().find(|e| e.path() == path)
    }
}

/// One request of a batch's input file.
#[derive(Debug, Clone, PartialEq)]
pub struct InputLine {
    /// The caller's name for it, unique in the file.
    pub custom_id: String,
    /// The endpoint it is for.
    pub endpoint: Endpoint,
    /// The request body, as that endpoint takes it.
    pub body: Map<String, Value>,
}

/// The most lines an input file holds, as OpenAI allows.
pub const MAX_LINES: usize = 50_000;

/// Read an input file: every line a request, checked as OpenAI checks one
/// (a JSON object; `custom_id` a non-empty string, unique; `method` `POST`;
/// `url` an endpoint a batch runs; `body` an object naming its `model`, not
/// asking for a stream). The first fault is refused, naming its line.
pub fn parse_input(file: &[u8]) -> Result<Vec<InputLine>, ProtocolError> {
    let text =
        std::str::from_utf8(file).map_err(|_| ProtocolError::body("the file is not UTF-8"))?;
    let mut lines = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (n, raw) in text.lines().enumerate() {
        let n = n + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if lines.len() == MAX_LINES {
            return Err(ProtocolError::body(format!("more than {MAX_LINES} requests in the file")));
        }
        let bad = |msg: &str| ProtocolError::body(format!("line {n}: {msg}"));
        let Ok(Value::Object(mut o)) = serde_json::from_str::<Value>(raw) else {
            return Err(bad("not a JSON object"));
        };
        let custom_id = match o.remove("custom_id") {
            Some(Value::String(id)) if !id.is_empty() && id.len() <= 512 => id,
            _ => return Err(bad("custom_id: required, a string of 1 to 512 characters")),
        };
        if !seen.insert(custom_id.clone()) {
            return Err(bad(&format!("custom_id {custom_id:?} is not unique in the file")));
        }
        if o.get("method").and_then(Value::as_str) != Some("POST") {
            return Err(bad("method: must be POST"));
        }
        let url = o.get("url").and_then(Value::as_str).unwrap_or("");
        let Some(endpoint) = Endpoint::parse(url) else {
            return Err(bad(&format!(
                "url {url:?}: a batch runs {}",
                Endpoint::ALL.map(Endpoint::path).join(", ")
            )));
        };
        let Some(Value::Object(body)) = o.remove("body") else {
            return Err(bad("body: required, the request as an object"));
        };
        if body.get("model").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(bad("body.model: required"));
        }
        if body.get("stream").and_then(Value::as_bool) == Some(true) {
            return Err(bad("body.stream: a batch's requests are answered whole"));
        }
        lines.push(InputLine { custom_id, endpoint, body });
    }
    if lines.is_empty() {
        return Err(ProtocolError::body("the file holds no requests"));
    }
    Ok(lines)
}

/// An output line: the request's answer (any status), as the endpoint gave it.
pub fn output_line(
    id: &str,
    custom_id: &str,
    status: u16,
    request_id: &str,
    body: &Value,
) -> String {
    json!({
        "id": id,
        "custom_id": custom_id,
        "response": {"status_code": status, "request_id": request_id, "body": body},
        "error": null,
    })
    .to_string()
}

/// An error line: a request that was never sent (the batch was cancelled or
/// expired before it ran).
pub fn error_line(id: &str, custom_id: &str, code: &str, message: &str) -> String {
    json!({
        "id": id,
        "custom_id": custom_id,
        "response": null,
        "error": {"code": code, "message": message},
    })
    .to_string()
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
