//! OpenAI's batch API: the requests uploaded as a JSONL file
//! (`POST /files`, `purpose: batch`), a batch created of it
//! (`POST /batches`), its state read (`GET /batches/{id}`), and its output
//! and error files read once it ends (`GET /files/{id}/content`). Paths are
//! relative to the provider's endpoint, which ends in `/v1` as for its
//! generations; each line names its endpoint as `/v1/chat/completions`.

use serde_json::{Value, json};

use super::native::{Answer, Call, End, Outcome, Progress, Request, State};
use crate::ProtocolError;

/// The most requests in one batch.
pub const MAX_REQUESTS: usize = 50_000;

/// The most bytes in one batch's file (200 MB), less room for the form.
pub const MAX_BYTES: usize = 200_000_000 - 4096;

/// The endpoint every line of a batch the gateway submits names.
const CHAT: &str = "/v1/chat/completions";

/// The form's boundary. A JSONL file's lines are serialized JSON, which
/// escapes every carriage return and line feed, so `\r\n--` followed by this
/// never occurs inside it.
const BOUNDARY: &str = "switchyard-batch-5f0c1d";

/// The requests as the file's JSONL: one `{"custom_id", "method", "url",
/// "body"}` a line.
pub fn jsonl(requests: &[Request]) -> String {
    let mut out = String::new();
    for r in requests {
        let line = json!({"custom_id": r.custom_id, "method": "POST", "url": CHAT, "body": r.body});
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The file's upload, as a multipart form of `purpose` and `file`.
pub(super) fn upload(endpoint: &str, requests: &[Request]) -> Call {
    let mut form = format!(
        "--{BOUNDARY}\r\ncontent-disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
         --{BOUNDARY}\r\ncontent-disposition: form-data; name=\"file\"; filename=\"batch.jsonl\"\r\n\
         content-type: application/jsonl\r\n\r\n"
    )
    .into_bytes();
    form.extend_from_slice(jsonl(requests).as_bytes());
    form.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Call {
        method: "POST",
        url: format!("{endpoint}/files"),
        body: Some((form, format!("multipart/form-data; boundary={BOUNDARY}"))),
        service: None,
    }
}

pub(super) fn parse_uploaded(body: &[u8]) -> Result<String, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    token(&v, "file")
}

/// An id the gateway puts in a URL: a plain token, never a path.
fn token(v: &Value, what: &str) -> Result<String, ProtocolError> {
    let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(ProtocolError::body(format!("the {what}'s id {id:?} is not a plain token")));
    }
    Ok(id.to_owned())
}

pub(super) fn create(endpoint: &str, file: &str) -> Call {
    let body = json!({"input_file_id": file, "endpoint": CHAT, "completion_window": "24h"});
    Call::post_json(format!("{endpoint}/batches"), &body)
}

pub(super) fn parse_progress(body: &[u8]) -> Result<Progress, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let id = token(&v, "batch")?;
    let status = v.get("status").and_then(Value::as_str).unwrap_or_default();
    let state = match status {
        "validating" | "in_progress" | "finalizing" => State::Running,
        "cancelling" => State::Cancelling,
        "completed" => State::Ended(End::Completed),
        "expired" => State::Ended(End::Expired),
        "cancelled" => State::Ended(End::Cancelled),
        "failed" => State::Ended(End::Failed(failure(&v))),
        other => {
            return Err(ProtocolError::body(format!("the batch's status {other:?} is not known")));
        }
    };
    let mut files = Vec::new();
    for field in ["output_file_id", "error_file_id"] {
        if let Some(f) = v.get(field).and_then(Value::as_str) {
            files.push(token(&json!({"id": f}), "file")?);
        }
    }
    Ok(Progress { id, state, files })
}

/// Why a batch failed: its `errors.data`' messages, with their lines.
fn failure(v: &Value) -> String {
    let list = v.pointer("/errors/data").and_then(Value::as_array);
    let messages: Vec<String> = list
        .into_iter()
        .flatten()
        .map(|e| {
            let message = e.get("message").and_then(Value::as_str).unwrap_or("invalid");
            match e.get("line").and_then(Value::as_u64) {
                Some(line) => format!("line {line}: {message}"),
                None => message.to_owned(),
            }
        })
        .collect();
    if messages.is_empty() { "the batch failed".to_owned() } else { messages.join("; ") }
}

/// One line of an output or error file:
/// `{"custom_id", "response": {"status_code", "body"}, "error"}`. A line
/// with no response never ran (`batch_expired`, `batch_cancelled`).
pub(super) fn answer(v: &Value) -> Option<Answer> {
    let custom_id = v.get("custom_id").and_then(Value::as_str)?.to_owned();
    Some(Answer { custom_id, outcome: outcome(v) })
}

fn outcome(v: &Value) -> Outcome {
    let Some(resp) = v.get("response").filter(|r| r.is_object()) else {
        return Outcome::Unrun;
    };
    let status = resp
        .get("status_code")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(500);
    let body = resp.get("body").map(Value::to_string).unwrap_or_default().into_bytes();
    Outcome::Answered { status, body }
}
