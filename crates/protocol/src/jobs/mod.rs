//! Media jobs: generations a queue runs (video, audio, images on queue APIs),
//! submitted at once and collected later.
//!
//! | side | format | module |
//! |---|---|---|
//! | client | the gateway's `POST /v1/jobs` (`{model, input}`) | [`parse_request`] |
//! | upstream | fal's queue: submit, status, result, cancel | [`fal`] |
//!
//! A job's `input` is the model's own (a prompt, a duration, an image URL):
//! each media model takes different fields, so the gateway passes them as they
//! came and routes on `model` alone. What a queue answers is read into a
//! [`JobState`]; the result, once there, is the model's output as it was made.
//! [`output_seconds`] reads how many seconds of media a job made, for models
//! priced per second.

pub mod fal;

use serde_json::{Map, Value};

use crate::ProtocolError;

/// A job as a client submits it: `POST /v1/jobs`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRequest {
    /// The model as the client named it.
    pub model: String,
    /// The model's input, passed as it came.
    pub input: Map<String, Value>,
    /// The end user, as OpenAI's `user`.
    pub user: Option<String>,
}

impl JobRequest {
    /// The prompt, where the input has one (for the estimate and the record).
    pub fn prompt(&self) -> &str {
        self.input.get("prompt").and_then(Value::as_str).unwrap_or("")
    }
}

/// A client's body: `{"model": "...", "input": {...}, "user": "..."}`.
pub fn parse_request(body: &[u8]) -> Result<JobRequest, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let Value::Object(mut o) = v else {
        return Err(ProtocolError::body("expected a JSON object"));
    };
    let model = match o.remove("model") {
        Some(Value::String(m)) if !m.trim().is_empty() => m,
        _ => return Err(ProtocolError::body("model: required, a non-empty string")),
    };
    let input = match o.remove("input") {
        Some(Value::Object(input)) => input,
        None | Some(Value::Null) => {
            return Err(ProtocolError::body("input: required, the model's input as an object"));
        }
        Some(_) => return Err(ProtocolError::body("input: expected an object")),
    };
    let user = match o.remove("user") {
        None | Some(Value::Null) => None,
        Some(Value::String(u)) => Some(u),
        Some(_) => return Err(ProtocolError::body("user: expected a string")),
    };
    if let Some(field) = o.keys().next() {
        return Err(ProtocolError::body(format!(
            "{field}: unknown field (a job takes model, input and user; the model's own \
             fields go in input)"
        )));
    }
    Ok(JobRequest { model, input, user })
}

/// A job the queue took: its id there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    /// The queue's id for it.
    pub upstream_id: String,
    /// Its place in the queue, where the queue says.
    pub queue_position: Option<u64>,
}

/// Where a job is, as its queue reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum JobState {
    /// Waiting for a runner.
    Queued {
        /// Its place in the queue, where the queue says.
        position: Option<u64>,
    },
    /// A runner has it.
    Running,
    /// Done: its result can be fetched (and may be a failure).
    Completed {
        /// Seconds the runner worked on it, where the queue says.
        inference_seconds: Option<f64>,
        /// The queue's own word that it failed or was cancelled.
        error: Option<String>,
    },
}

/// How an upstream wire runs media jobs ([`crate::WireSpec::jobs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSpec {
    /// The queue's protocol.
    pub queue: Queue,
}

/// The queue protocols the gateway speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// fal's queue ([`fal`]).
    Fal,
}

/// An upstream request of a job after its submission: its method and URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `GET` or `PUT`.
    pub method: &'static str,
    /// The whole URL.
    pub url: String,
}

impl JobSpec {
    /// The URL a job for the upstream `model` is submitted to.
    pub fn submit_url(&self, endpoint: &str, model: &str) -> String {
        match self.queue {
            Queue::Fal => fal::submit_url(endpoint, model),
        }
    }

    /// The body of a submission.
    pub fn encode(&self, req: &JobRequest) -> Vec<u8> {
        match self.queue {
            Queue::Fal => fal::encode_request(req),
        }
    }

    /// A submission's answer.
    pub fn parse_submitted(&self, body: &[u8]) -> Result<Submitted, ProtocolError> {
        match self.queue {
            Queue::Fal => fal::parse_submitted(body),
        }
    }

    /// Where a job's state is asked for.
    pub fn status(&self, endpoint: &str, model: &str, id: &str) -> Call {
        match self.queue {
            Queue::Fal => Call { method: "GET", url: fal::status_url(endpoint, model, id) },
        }
    }

    /// A status answer (any 2xx).
    pub fn parse_status(&self, body: &[u8]) -> Result<JobState, ProtocolError> {
        match self.queue {
            Queue::Fal => fal::parse_status(body),
        }
    }

    /// Where a completed job's result is fetched.
    pub fn result(&self, endpoint: &str, model: &str, id: &str) -> Call {
        match self.queue {
            Queue::Fal => Call { method: "GET", url: fal::result_url(endpoint, model, id) },
        }
    }

    /// Where a job is cancelled.
    pub fn cancel(&self, endpoint: &str, model: &str, id: &str) -> Call {
        match self.queue {
            Queue::Fal => Call { method: "PUT", url: fal::cancel_url(endpoint, model, id) },
        }
    }

    /// A failed call's message, read from the queue's error body.
    pub fn parse_error(&self, body: &[u8]) -> Option<String> {
        match self.queue {
            Queue::Fal => fal::parse_error(body),
        }
    }
}

/// Where a job's seconds of media were read from ([`output_seconds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondsFrom {
    /// The result's own `duration`.
    Output,
    /// The input's `duration`: what was asked for (a queue's video answers
    /// often say nothing of their length).
    Request,
}

impl SecondsFrom {
    /// The record's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            SecondsFrom::Output => "output",
            SecondsFrom::Request => "request",
        }
    }
}

/// How many seconds of media a job made: the result's `duration` (top level,
/// or its `video`, `audio` or `audio_file`'s), else the `duration` its input
/// asked for (`5`, `"5"`, `"5s"`); `None` when neither says.
pub fn output_seconds(result: &Value, input: &Map<String, Value>) -> Option<(f64, SecondsFrom)> {
    let from_output = std::iter::once(result)
        .chain(["video", "audio", "audio_file"].iter().filter_map(|k| result.get(*k)))
        .find_map(|o| o.get("duration").and_then(seconds));
    if let Some(s) = from_output {
        return Some((s, SecondsFrom::Output));
    }
    input.get("duration").and_then(seconds).map(|s| (s, SecondsFrom::Request))
}

/// A duration as a number of seconds, or a string of one (`"5"`, `"5s"`).
fn seconds(v: &Value) -> Option<f64> {
    let s = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('s').trim().parse::<f64>().ok(),
        _ => None,
    }?;
    (s.is_finite() && s >= 0.0).then_some(s)
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
