//! fal's queue (`https://queue.fal.run`): a job is submitted to
//! `POST /{model}` with the model's input as the body, answered with a
//! `request_id`; its state is at `GET /{app}/requests/{id}/status` (`202`
//! `IN_QUEUE` or `IN_PROGRESS`, then `200` `COMPLETED`), its result at
//! `GET /{app}/requests/{id}`, and `PUT /{app}/requests/{id}/cancel` cancels it.
//!
//! `{app}` is the model's first two segments: a model with a sub-path
//! (`fal-ai/flux/dev`) is submitted under its whole id but asked about under
//! its app's (`fal-ai/flux`); the sub-path there is 404. The URLs fal answers a
//! submission with say the same, but the gateway builds its own from the
//! provider's endpoint: a URL from an upstream's body is never sent a key.

use serde_json::Value;

use super::{JobRequest, JobState, Submitted};
use crate::ProtocolError;

/// The queue's endpoint.
pub const ENDPOINT: &str = "https://queue.fal.run";

/// The app a model belongs to: its first two segments (`fal-ai/flux` of
/// `fal-ai/flux/dev`).
pub fn app_id(model: &str) -> &str {
    let mut slashes = model.match_indices('/').map(|(i, _)| i);
    match (slashes.next(), slashes.next()) {
        (Some(_), Some(second)) => &model[..second],
        _ => model,
    }
}

/// Where a job for `model` is submitted.
pub fn submit_url(endpoint: &str, model: &str) -> String {
    format!("{endpoint}/{}", model.trim_start_matches('/'))
}

fn request_url(endpoint: &str, model: &str, id: &str) -> String {
    format!("{endpoint}/{}/requests/{id}", app_id(model.trim_start_matches('/')))
}

/// Where a job's state is.
pub fn status_url(endpoint: &str, model: &str, id: &str) -> String {
    format!("{}/status", request_url(endpoint, model, id))
}

/// Where a job's result is.
pub fn result_url(endpoint: &str, model: &str, id: &str) -> String {
    request_url(endpoint, model, id)
}

/// Where a job is cancelled (`PUT`).
pub fn cancel_url(endpoint: &str, model: &str, id: &str) -> String {
    format!("{}/cancel", request_url(endpoint, model, id))
}

/// The body of a submission: the model's input, as the client gave it.
pub fn encode_request(req: &JobRequest) -> Vec<u8> {
    serde_json::to_vec(&req.input).unwrap_or_else(|_| b"{}".to_vec())
}

/// A submission's answer: `{"request_id", "status_url", …, "queue_position"}`.
/// The id goes into URLs the gateway builds, so one that is not a plain token
/// is refused as malformed.
pub fn parse_submitted(body: &[u8]) -> Result<Submitted, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    let id = v
        .get("request_id")
        .and_then(Value::as_str)
        .ok_or_else(|| ProtocolError::upstream("fal's submission answer has no request_id"))?;
    let plain = !id.is_empty()
        && id.len() <= 128
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !plain {
        return Err(ProtocolError::upstream(format!("fal's request_id {id:?} is not a plain id")));
    }
    Ok(Submitted {
        upstream_id: id.to_owned(),
        queue_position: v.get("queue_position").and_then(Value::as_u64),
    })
}

/// A status answer.
pub fn parse_status(body: &[u8]) -> Result<JobState, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    let status = v.get("status").and_then(Value::as_str).unwrap_or("");
    let error = || {
        v.get("error").and_then(Value::as_str).map(str::to_owned).or_else(|| match status {
            "FAILED" => Some("the job failed".to_owned()),
            "CANCELED" | "CANCELLED" => Some("the job was cancelled".to_owned()),
            _ => None,
        })
    };
    match status {
        "IN_QUEUE" => {
            Ok(JobState::Queued { position: v.get("queue_position").and_then(Value::as_u64) })
        }
        "IN_PROGRESS" => Ok(JobState::Running),
        "COMPLETED" | "FAILED" | "CANCELED" | "CANCELLED" => Ok(JobState::Completed {
            inference_seconds: v
                .pointer("/metrics/inference_time")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite() && *s >= 0.0),
            error: error(),
        }),
        other => {
            Err(ProtocolError::upstream(format!("fal's job status {other:?} is not one it has")))
        }
    }
}

/// An error body's message: `{"detail": "…"}`, or a validation error's
/// `{"detail": [{"loc": ["body", "prompt"], "msg": "Field required"}]}`
/// (`body.prompt: Field required`).
pub fn parse_error(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    match v.get("detail")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let lines: Vec<String> = items
                .iter()
                .filter_map(|item| {
                    let msg = item.get("msg").and_then(Value::as_str)?;
                    let loc: Vec<String> = item
                        .get("loc")
                        .and_then(Value::as_array)
                        .map(|l| {
                            l.iter()
                                .map(|p| match p {
                                    Value::String(s) => s.clone(),
                                    other => other.to_string(),
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    Some(if loc.is_empty() {
                        msg.to_owned()
                    } else {
                        format!("{}: {msg}", loc.join("."))
                    })
                })
                .collect();
            (!lines.is_empty()).then(|| lines.join("; "))
        }
        _ => None,
    }
}
