//! Anthropic's Message Batches: the requests in the creation's body
//! (`POST /v1/messages/batches`, each `{custom_id, params}`), its state read
//! (`GET /v1/messages/batches/{id}`), and its results read once it has ended
//! (`GET /v1/messages/batches/{id}/results`, built here rather than taken
//! from the answer's `results_url`). Paths are relative to the provider's
//! endpoint, as `/v1/messages` is.

use serde_json::{Value, json};

use super::native::{Answer, Call, End, Outcome, Progress, Request, State};
use crate::ProtocolError;

/// The most requests in one batch.
pub const MAX_REQUESTS: usize = 100_000;

/// The most bytes in one batch's creation (256 MB), less room for the framing.
pub const MAX_BYTES: usize = 256_000_000 - 4096;

pub(super) fn create(endpoint: &str, requests: &[Request]) -> Call {
    let requests: Vec<Value> =
        requests.iter().map(|r| json!({"custom_id": r.custom_id, "params": r.body})).collect();
    Call::post_json(format!("{endpoint}/v1/messages/batches"), &json!({"requests": requests}))
}

pub(super) fn parse_progress(body: &[u8]) -> Result<Progress, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err(ProtocolError::body(format!("the batch's id {id:?} is not a plain token")));
    }
    let state = match v.get("processing_status").and_then(Value::as_str).unwrap_or_default() {
        "in_progress" => State::Running,
        "canceling" => State::Cancelling,
        // Which requests ran is in the results: each says succeeded,
        // errored, canceled or expired.
        "ended" => State::Ended(ended(&v)),
        other => {
            return Err(ProtocolError::body(format!(
                "the batch's processing_status {other:?} is not known"
            )));
        }
    };
    Ok(Progress { id: id.to_owned(), state, files: Vec::new() })
}

/// How an ended batch ended, by its counts: cancelled where its owner asked,
/// expired where requests expired, else completed.
fn ended(v: &Value) -> End {
    let count = |k: &str| v.pointer(&format!("/request_counts/{k}")).and_then(Value::as_u64);
    if v.get("cancel_initiated_at").is_some_and(|c| !c.is_null()) {
        End::Cancelled
    } else if count("expired").unwrap_or(0) > 0 {
        End::Expired
    } else {
        End::Completed
    }
}

/// One results line: `{"custom_id", "result": {"type", "message" | "error"}}`.
pub(super) fn answer(v: &Value) -> Option<Answer> {
    let custom_id = v.get("custom_id").and_then(Value::as_str)?.to_owned();
    Some(Answer { custom_id, outcome: outcome(v) })
}

fn outcome(v: &Value) -> Outcome {
    let result = v.get("result");
    match result.and_then(|r| r.get("type")).and_then(Value::as_str) {
        Some("succeeded") => {
            let message = result.and_then(|r| r.get("message")).cloned().unwrap_or(Value::Null);
            Outcome::Answered { status: 200, body: message.to_string().into_bytes() }
        }
        Some("errored") => {
            // The error as `/v1/messages` would have answered it.
            let error = result.and_then(|r| r.get("error")).cloned().unwrap_or(Value::Null);
            let kind = error.pointer("/error/type").and_then(Value::as_str).unwrap_or_default();
            Outcome::Answered { status: status_of(kind), body: error.to_string().into_bytes() }
        }
        _ => Outcome::Unrun,
    }
}

/// The status `/v1/messages` answers an error of this type with.
fn status_of(kind: &str) -> u16 {
    match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    }
}
