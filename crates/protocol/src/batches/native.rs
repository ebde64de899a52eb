//! Providers' own batch APIs: a batch's requests, each already in the wire's
//! body, handed to the provider in one submission, followed until it ends,
//! and its answers read back, one per request, by the id the gateway gave it.
//!
//! | API | submission | answers |
//! |---|---|---|
//! | OpenAI (`/v1/batches`) | the requests uploaded as a JSONL file, then a batch of it | an output and an error file |
//! | Anthropic (Message Batches) | the requests in the creation's body | one results file |
//!
//! Every URL is built from the provider's endpoint, never taken from an
//! answer (Anthropic's `results_url`, a file's location), so a key is only
//! ever sent where the configuration says.

use serde_json::Value;

use super::Endpoint;
use super::{anthropic, openai};
use crate::ProtocolError;

/// A provider's own batch API ([`crate::WireSpec::batches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchApi {
    /// OpenAI's Files and Batches ([`openai`]).
    OpenAi,
    /// Anthropic's Message Batches ([`anthropic`]).
    Anthropic,
}

/// One request of a batch, as the provider takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The gateway's id for it ([`custom_id`]).
    pub custom_id: String,
    /// The wire's body for it, as a generation would send it.
    pub body: Value,
}

/// An upstream call of a batch: method, URL and body (`None`: none).
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `GET` or `POST`.
    pub method: &'static str,
    /// The whole URL.
    pub url: String,
    /// The body and its content type.
    pub body: Option<(Vec<u8>, String)>,
}

impl Call {
    pub(super) fn get(url: String) -> Call {
        Call { method: "GET", url, body: None }
    }

    pub(super) fn post_json(url: String, body: &Value) -> Call {
        Call { method: "POST", url, body: Some((body.to_string().into_bytes(), JSON.to_owned())) }
    }
}

pub(super) const JSON: &str = "application/json";

/// Where a provider's batch is.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The provider's id for it.
    pub id: String,
    /// Where it is.
    pub state: State,
    /// Where its answers are read, once it has ended ([`BatchApi::results`]):
    /// OpenAI's output and error files' ids.
    pub files: Vec<String>,
}

/// A provider's batch's state.
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Being checked or run.
    Running,
    /// Asked to stop; the requests running finish.
    Cancelling,
    /// Nothing more runs: its answers can be read.
    Ended(End),
}

/// How a provider's batch ended.
#[derive(Debug, Clone, PartialEq)]
pub enum End {
    /// Every request ran (each may still have failed on its own).
    Completed,
    /// Refused as a whole (OpenAI's validation), with the provider's reason:
    /// no request ran.
    Failed(String),
    /// Its window closed; the requests that ran have answers.
    Expired,
    /// Cancelled; the requests that ran have answers.
    Cancelled,
}

/// One request's answer, by its [`Request::custom_id`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The request's id.
    pub custom_id: String,
    /// What came of it.
    pub outcome: Outcome,
}

/// What came of one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Answered, as a generation would have been: its status and body (the
    /// wire's answer, or its error body).
    Answered {
        /// The HTTP status it would have had.
        status: u16,
        /// Its body, in the wire's shape.
        body: Vec<u8>,
    },
    /// Never run: the batch was cancelled or expired first.
    Unrun,
}

/// The id a request of a batch goes by upstream: its line in the input file.
/// Both APIs take it (Anthropic's are at most 64 of `[a-zA-Z0-9_-]`), and the
/// caller's own `custom_id`, which may be anything, never leaves the gateway.
pub fn custom_id(line: u32) -> String {
    format!("line-{line}")
}

/// The input file's line a [`custom_id`] names.
pub fn line_of(custom_id: &str) -> Option<u32> {
    custom_id.strip_prefix("line-")?.parse().ok()
}

impl BatchApi {
    /// The most requests one batch holds (OpenAI's 50,000, Anthropic's 100,000).
    pub fn max_requests(self) -> usize {
        match self {
            BatchApi::OpenAi => openai::MAX_REQUESTS,
            BatchApi::Anthropic => anthropic::MAX_REQUESTS,
        }
    }

    /// The most bytes one batch's requests may take (OpenAI's file of 200 MB,
    /// Anthropic's creation of 256 MB), less room for the framing.
    pub fn max_bytes(self) -> usize {
        match self {
            BatchApi::OpenAi => openai::MAX_BYTES,
            BatchApi::Anthropic => anthropic::MAX_BYTES,
        }
    }

    /// The endpoints whose requests it runs.
    pub fn runs(self, endpoint: Endpoint) -> bool {
        match self {
            BatchApi::OpenAi => endpoint == Endpoint::ChatCompletions,
            BatchApi::Anthropic => endpoint == Endpoint::ChatCompletions,
        }
    }

    /// The upload that comes before the creation, where the API takes its
    /// requests as a file (OpenAI); `None`: the creation carries them.
    pub fn upload(self, endpoint: &str, requests: &[Request]) -> Option<Call> {
        match self {
            BatchApi::OpenAi => Some(openai::upload(endpoint, requests)),
            BatchApi::Anthropic => None,
        }
    }

    /// The uploaded file's id, from the upload's answer.
    pub fn parse_uploaded(self, body: &[u8]) -> Result<String, ProtocolError> {
        match self {
            BatchApi::OpenAi => openai::parse_uploaded(body),
            BatchApi::Anthropic => Err(ProtocolError::body("Message Batches upload no file")),
        }
    }

    /// The creation of the batch: of the uploaded file `uploaded` (OpenAI),
    /// else of `requests`.
    pub fn create(self, endpoint: &str, requests: &[Request], uploaded: Option<&str>) -> Call {
        match self {
            BatchApi::OpenAi => openai::create(endpoint, uploaded.unwrap_or_default()),
            BatchApi::Anthropic => anthropic::create(endpoint, requests),
        }
    }

    /// Where a batch is, read from the creation's or a status's answer.
    pub fn parse_progress(self, body: &[u8]) -> Result<Progress, ProtocolError> {
        match self {
            BatchApi::OpenAi => openai::parse_progress(body),
            BatchApi::Anthropic => anthropic::parse_progress(body),
        }
    }

    /// Where batch `id`'s state is asked for.
    pub fn status(self, endpoint: &str, id: &str) -> Call {
        match self {
            BatchApi::OpenAi => Call::get(format!("{endpoint}/batches/{id}")),
            BatchApi::Anthropic => Call::get(format!("{endpoint}/v1/messages/batches/{id}")),
        }
    }

    /// Where an ended batch's answers are read: each a JSONL file for
    /// [`BatchApi::parse_results`].
    pub fn results(self, endpoint: &str, progress: &Progress) -> Vec<Call> {
        match self {
            BatchApi::OpenAi => progress
                .files
                .iter()
                .map(|f| Call::get(format!("{endpoint}/files/{f}/content")))
                .collect(),
            BatchApi::Anthropic => {
                vec![Call::get(format!("{endpoint}/v1/messages/batches/{}/results", progress.id))]
            }
        }
    }

    /// The answers in one of [`BatchApi::results`]' files, in its order.
    pub fn parse_results(self, body: &[u8]) -> Result<Vec<Answer>, ProtocolError> {
        let text =
            std::str::from_utf8(body).map_err(|_| ProtocolError::body("results: not UTF-8"))?;
        let mut answers = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line)
                .map_err(|e| ProtocolError::body(format!("results line {}: {e}", n + 1)))?;
            let custom_id = v
                .get("custom_id")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ProtocolError::body(format!("results line {}: no custom_id", n + 1))
                })?
                .to_owned();
            let outcome = match self {
                BatchApi::OpenAi => openai::outcome(&v),
                BatchApi::Anthropic => anthropic::outcome(&v),
            };
            answers.push(Answer { custom_id, outcome });
        }
        Ok(answers)
    }

    /// Where batch `id` is cancelled (a `POST` with no body).
    pub fn cancel(self, endpoint: &str, id: &str) -> Call {
        let url = match self {
            BatchApi::OpenAi => format!("{endpoint}/batches/{id}/cancel"),
            BatchApi::Anthropic => format!("{endpoint}/v1/messages/batches/{id}/cancel"),
        };
        Call { method: "POST", url, body: None }
    }
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
