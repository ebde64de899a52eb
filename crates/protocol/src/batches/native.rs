//! Providers' own batch APIs: a batch's requests, each already in the wire's
//! body, handed to the provider in one submission, followed until it ends,
//! and its answers read back, one per request, by the id the gateway gave it.
//!
//! | API | submission | answers |
//! |---|---|---|
//! | OpenAI (`/v1/batches`) | the requests uploaded as a JSONL file, then a batch of it | an output and an error file |
//! | Anthropic (Message Batches) | the requests in the creation's body | one results file |
//! | Vertex AI (batch prediction) | the requests uploaded to a Cloud Storage bucket, then a job reading them | the files the job wrote in the bucket, listed |
//! | Bedrock (batch inference) | the requests uploaded to an S3 bucket, then a job reading them as an IAM role | the one file the job wrote in the bucket |
//!
//! Every URL is built from the provider's endpoint or its staging bucket,
//! never taken from an answer (Anthropic's `results_url`, a job's output
//! directory outside the bucket), so a key is only ever sent where the
//! configuration says.

use serde_json::Value;

use super::Endpoint;
use super::{anthropic, bedrock, openai, vertex};
use crate::ProtocolError;

/// A provider's own batch API ([`crate::WireSpec::batches`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchApi {
    /// OpenAI's Files and Batches ([`openai`]).
    OpenAi,
    /// Anthropic's Message Batches ([`anthropic`]).
    Anthropic,
    /// Vertex AI's batch prediction for Gemini, staged in Cloud Storage
    /// ([`vertex`]).
    Vertex,
    /// Bedrock's batch inference of InvokeModel bodies, staged in S3
    /// ([`bedrock`]).
    Bedrock,
}

/// Where a provider's batch API reads its input and writes its answers, for
/// an API that takes them from a bucket (Vertex AI: Cloud Storage).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staging {
    /// The bucket's name.
    pub bucket: String,
    /// The objects' prefix in it, without slashes at either end (may be empty).
    pub prefix: String,
    /// The storage API's base URL (`https://storage.googleapis.com`,
    /// `https://s3.{region}.amazonaws.com`; an emulator's).
    pub storage_endpoint: String,
    /// The role a job assumes to read and write the bucket (Bedrock's).
    pub role_arn: Option<String>,
    /// Where jobs are created and followed, where not at the provider's
    /// endpoint (Bedrock's control plane, beside its runtime).
    pub jobs_endpoint: Option<String>,
}

impl Staging {
    /// `gs://bucket/prefix`, parsed; `None` for another form.
    pub fn parse_gcs(uri: &str, storage_endpoint: &str) -> Option<Staging> {
        let rest = uri.strip_prefix("gs://")?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
        if bucket.len() < 3 || bucket.len() > 222 || !bucket.chars().all(ok) {
            return None;
        }
        Some(Staging {
            bucket: bucket.to_owned(),
            prefix: prefix.trim_matches('/').to_owned(),
            storage_endpoint: storage_endpoint.trim_end_matches('/').to_owned(),
            role_arn: None,
            jobs_endpoint: None,
        })
    }

    /// `s3://bucket/prefix`, parsed, with the role a job assumes and where
    /// jobs are created; `None` for another form.
    pub fn parse_s3(
        uri: &str,
        storage_endpoint: &str,
        role_arn: &str,
        jobs_endpoint: &str,
    ) -> Option<Staging> {
        let gcs =
            Staging::parse_gcs(&format!("gs://{}", uri.strip_prefix("s3://")?), storage_endpoint)?;
        Some(Staging {
            role_arn: Some(role_arn.to_owned()),
            jobs_endpoint: Some(jobs_endpoint.trim_end_matches('/').to_owned()),
            ..gcs
        })
    }

    /// Where jobs go: the control plane, else the provider's endpoint.
    fn jobs<'a>(staging: Option<&'a Staging>, endpoint: &'a str) -> &'a str {
        staging.and_then(|s| s.jobs_endpoint.as_deref()).unwrap_or(endpoint)
    }

    /// The object name of `name` under the prefix.
    pub fn object(&self, name: &str) -> String {
        if self.prefix.is_empty() { name.to_owned() } else { format!("{}/{name}", self.prefix) }
    }
}

/// Where one provider batch goes: the provider's endpoint, its staging
/// bucket (where the API takes one), the model, and a name unique to this
/// provider batch (for the objects it stages).
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// The provider's endpoint.
    pub endpoint: &'a str,
    /// Its staging bucket.
    pub staging: Option<&'a Staging>,
    /// The model every request runs.
    pub model: &'a str,
    /// Unique to this provider batch (`batch_…-0`).
    pub name: &'a str,
}

/// Where an ended batch's answers are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetch {
    /// A results file, for [`BatchApi::parse_results`].
    File(Call),
    /// A listing of the files (Vertex AI's job writes several), for
    /// [`BatchApi::parse_listing`].
    Listing(Call),
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
    /// The cloud service it is signed for, where it is not the provider's
    /// own (`s3`, where Bedrock's batches are staged).
    pub service: Option<&'static str>,
}

impl Call {
    pub(super) fn get(url: String) -> Call {
        Call { method: "GET", url, body: None, service: None }
    }

    pub(super) fn post_json(url: String, body: &Value) -> Call {
        Call {
            method: "POST",
            url,
            body: Some((body.to_string().into_bytes(), JSON.to_owned())),
            service: None,
        }
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
    /// The most requests one batch holds (OpenAI's 50,000, Anthropic's
    /// 100,000, Vertex AI's 200,000).
    pub fn max_requests(self) -> usize {
        match self {
            BatchApi::OpenAi => openai::MAX_REQUESTS,
            BatchApi::Anthropic => anthropic::MAX_REQUESTS,
            BatchApi::Vertex => vertex::MAX_REQUESTS,
            BatchApi::Bedrock => bedrock::MAX_REQUESTS,
        }
    }

    /// The most bytes one batch's requests may take (OpenAI's file of 200 MB,
    /// Anthropic's creation of 256 MB, Vertex AI's input of 1 GB), less room
    /// for the framing.
    pub fn max_bytes(self) -> usize {
        match self {
            BatchApi::OpenAi => openai::MAX_BYTES,
            BatchApi::Anthropic => anthropic::MAX_BYTES,
            BatchApi::Vertex => vertex::MAX_BYTES,
            BatchApi::Bedrock => bedrock::MAX_BYTES,
        }
    }

    /// The fewest requests it runs as one batch (Bedrock's 100): fewer are
    /// run by the gateway.
    pub fn min_requests(self) -> usize {
        match self {
            BatchApi::Bedrock => bedrock::MIN_REQUESTS,
            _ => 1,
        }
    }

    /// Whether it reads its input from a staging bucket, which the
    /// provider's config must name.
    pub fn staged(self) -> bool {
        matches!(self, BatchApi::Vertex | BatchApi::Bedrock)
    }

    /// The id the input file's line `n` goes by upstream. The caller's own
    /// `custom_id`, which may be anything, never leaves the gateway.
    pub fn custom_id(self, n: u32) -> String {
        match self {
            BatchApi::Bedrock => bedrock::record_id(n),
            _ => custom_id(n),
        }
    }

    /// The line an id of [`BatchApi::custom_id`]'s names.
    pub fn line_of(self, id: &str) -> Option<u32> {
        match self {
            BatchApi::Bedrock => bedrock::line_of(id),
            _ => line_of(id),
        }
    }

    /// The endpoints whose requests it runs.
    pub fn runs(self, endpoint: Endpoint) -> bool {
        endpoint == Endpoint::ChatCompletions
    }

    /// The upload that comes before the creation, where the API takes its
    /// requests as a file (OpenAI's Files, Vertex AI's bucket); `None`: the
    /// creation carries them.
    pub fn upload(self, place: Place<'_>, requests: &[Request]) -> Option<Call> {
        match self {
            BatchApi::OpenAi => Some(openai::upload(place.endpoint, requests)),
            BatchApi::Anthropic => None,
            BatchApi::Vertex => vertex::upload(place, requests),
            BatchApi::Bedrock => bedrock::upload(place, requests),
        }
    }

    /// What the creation names as its input, from the upload's answer.
    pub fn parse_uploaded(self, place: Place<'_>, body: &[u8]) -> Result<String, ProtocolError> {
        match self {
            BatchApi::OpenAi => openai::parse_uploaded(body),
            BatchApi::Anthropic => Err(ProtocolError::body("Message Batches upload no file")),
            BatchApi::Vertex => vertex::parse_uploaded(place, body),
            BatchApi::Bedrock => bedrock::parse_uploaded(place),
        }
    }

    /// The creation of the batch: of the upload `uploaded` (OpenAI, Vertex
    /// AI), else of `requests`.
    pub fn create(self, place: Place<'_>, requests: &[Request], uploaded: Option<&str>) -> Call {
        let uploaded = uploaded.unwrap_or_default();
        match self {
            BatchApi::OpenAi => openai::create(place.endpoint, uploaded),
            BatchApi::Anthropic => anthropic::create(place.endpoint, requests),
            BatchApi::Vertex => vertex::create(place, uploaded),
            BatchApi::Bedrock => bedrock::create(place, uploaded),
        }
    }

    /// Where a batch is, read from the creation's or a status's answer.
    pub fn parse_progress(self, body: &[u8]) -> Result<Progress, ProtocolError> {
        match self {
            BatchApi::OpenAi => openai::parse_progress(body),
            BatchApi::Anthropic => anthropic::parse_progress(body),
            BatchApi::Vertex => vertex::parse_progress(body),
            BatchApi::Bedrock => bedrock::parse_progress(body),
        }
    }

    /// Where batch `id`'s state is asked for.
    pub fn status(self, endpoint: &str, staging: Option<&Staging>, id: &str) -> Call {
        match self {
            BatchApi::OpenAi => Call::get(format!("{endpoint}/batches/{id}")),
            BatchApi::Anthropic => Call::get(format!("{endpoint}/v1/messages/batches/{id}")),
            BatchApi::Vertex => Call::get(format!("{endpoint}/batchPredictionJobs/{id}")),
            BatchApi::Bedrock => bedrock::status(Staging::jobs(staging, endpoint), id),
        }
    }

    /// Where an ended batch's answers are read. A Vertex AI job's output
    /// directory outside the staging bucket is refused.
    pub fn results(
        self,
        endpoint: &str,
        staging: Option<&Staging>,
        progress: &Progress,
    ) -> Result<Vec<Fetch>, ProtocolError> {
        Ok(match self {
            BatchApi::OpenAi => progress
                .files
                .iter()
                .map(|f| Fetch::File(Call::get(format!("{endpoint}/files/{f}/content"))))
                .collect(),
            BatchApi::Anthropic => vec![Fetch::File(Call::get(format!(
                "{endpoint}/v1/messages/batches/{}/results",
                progress.id
            )))],
            BatchApi::Vertex => vertex::results(staging, progress)?,
            BatchApi::Bedrock => bedrock::results(staging, progress)?,
        })
    }

    /// The results files a [`Fetch::Listing`] names.
    pub fn parse_listing(
        self,
        staging: Option<&Staging>,
        body: &[u8],
    ) -> Result<Vec<Call>, ProtocolError> {
        match (self, staging) {
            (BatchApi::Vertex, Some(staging)) => vertex::parse_listing(staging, body),
            _ => Err(ProtocolError::body("this batch API lists no results files")),
        }
    }

    /// The answers in one results file, in its order.
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
            let answer = match self {
                BatchApi::OpenAi => openai::answer(&v),
                BatchApi::Anthropic => anthropic::answer(&v),
                BatchApi::Vertex => vertex::answer(&v),
                BatchApi::Bedrock => bedrock::answer(&v),
            };
            answers.push(answer.ok_or_else(|| {
                ProtocolError::body(format!("results line {}: names no request", n + 1))
            })?);
        }
        Ok(answers)
    }

    /// Where batch `id` is cancelled (a `POST` with no body).
    pub fn cancel(self, endpoint: &str, staging: Option<&Staging>, id: &str) -> Call {
        let url = match self {
            BatchApi::OpenAi => format!("{endpoint}/batches/{id}/cancel"),
            BatchApi::Anthropic => format!("{endpoint}/v1/messages/batches/{id}/cancel"),
            BatchApi::Vertex => format!("{endpoint}/batchPredictionJobs/{id}:cancel"),
            BatchApi::Bedrock => return bedrock::cancel(Staging::jobs(staging, endpoint), id),
        };
        Call { method: "POST", url, body: None, service: None }
    }
}

#[cfg(test)]
#[path = "native_tests.rs"]
mod tests;
