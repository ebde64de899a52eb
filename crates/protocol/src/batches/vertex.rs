//! Vertex AI's batch prediction for Gemini, staged in Cloud Storage: the
//! requests uploaded as one JSONL object (`{"request": …}` a line) to the
//! provider's staging bucket, a `batchPredictionJobs` job created reading it
//! and writing under the same bucket, its state read, and, once it has
//! ended, the files it wrote listed and read (`{"status", "request",
//! "response"}` a line).
//!
//! Vertex AI writes its answers in no promised order and keeps no id of its
//! own for a request, but echoes each request: the gateway's id for it goes
//! in the request's `labels` (`switchyard_line`), which generateContent
//! takes for billing and reports back with the request.

use serde_json::{Map, Value, json};

use super::native::{Answer, Call, End, Fetch, Outcome, Place, Progress, Request, Staging, State};
use crate::ProtocolError;
use crate::spec::aws_path_label as encoded;

/// The most requests in one job.
pub const MAX_REQUESTS: usize = 200_000;

/// The most bytes of one job's input (1 GB), less room for the framing.
pub const MAX_BYTES: usize = 1_000_000_000 - 4096;

/// The label that carries the gateway's id for a request.
pub const LABEL: &str = "switchyard_line";

/// The requests' object: `{prefix}/{name}/input.jsonl`.
fn input_object(staging: &Staging, name: &str) -> String {
    staging.object(&format!("{name}/input.jsonl"))
}

/// The requests as the input's JSONL, each carrying its id in its labels.
pub fn jsonl(requests: &[Request]) -> String {
    let mut out = String::new();
    for r in requests {
        let mut body = r.body.clone();
        if let Value::Object(o) = &mut body {
            let labels = o.entry("labels").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(labels) = labels {
                labels.insert(LABEL.to_owned(), Value::String(r.custom_id.clone()));
            }
        }
        out.push_str(&json!({ "request": body }).to_string());
        out.push('\n');
    }
    out
}

pub(super) fn upload(place: Place<'_>, requests: &[Request]) -> Option<Call> {
    let staging = place.staging?;
    let url = format!(
        "{}/upload/storage/v1/b/{}/o?uploadType=media&name={}",
        staging.storage_endpoint,
        encoded(&staging.bucket),
        encoded(&input_object(staging, place.name))
    );
    let body = jsonl(requests).into_bytes();
    Some(Call {
        method: "POST",
        url,
        body: Some((body, "application/jsonl".to_owned())),
        service: None,
    })
}

/// The input's `gs://` URI, once the bucket has it.
pub(super) fn parse_uploaded(place: Place<'_>, body: &[u8]) -> Result<String, ProtocolError> {
    let staging =
        place.staging.ok_or_else(|| ProtocolError::body("Vertex AI batches need a bucket"))?;
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let object = input_object(staging, place.name);
    if v.get("name").and_then(Value::as_str) != Some(object.as_str()) {
        return Err(ProtocolError::body(format!("the bucket did not keep {object}")));
    }
    Ok(format!("gs://{}/{object}", staging.bucket))
}

pub(super) fn create(place: Place<'_>, input: &str) -> Call {
    let output = place
        .staging
        .map(|s| format!("gs://{}/{}", s.bucket, s.object(&format!("{}/output", place.name))))
        .unwrap_or_default();
    let body = json!({
        "displayName": format!("switchyard-{}", place.name),
        "model": format!("publishers/google/models/{}", place.model),
        "inputConfig": {"instancesFormat": "jsonl", "gcsSource": {"uris": [input]}},
        "outputConfig": {"predictionsFormat": "jsonl", "gcsDestination": {"outputUriPrefix": output}},
    });
    Call::post_json(format!("{}/batchPredictionJobs", place.endpoint), &body)
}

pub(super) fn parse_progress(body: &[u8]) -> Result<Progress, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
    let id = name.rsplit('/').next().unwrap_or_default();
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ProtocolError::body(format!("the job's name {name:?} ends in no id")));
    }
    let state = match v.get("state").and_then(Value::as_str).unwrap_or_default() {
        "JOB_STATE_SUCCEEDED" | "JOB_STATE_PARTIALLY_SUCCEEDED" => State::Ended(End::Completed),
        "JOB_STATE_FAILED" => {
            let message = v.pointer("/error/message").and_then(Value::as_str);
            State::Ended(End::Failed(message.unwrap_or("the job failed").to_owned()))
        }
        "JOB_STATE_CANCELLED" => State::Ended(End::Cancelled),
        "JOB_STATE_EXPIRED" => State::Ended(End::Expired),
        "JOB_STATE_CANCELLING" => State::Cancelling,
        "JOB_STATE_QUEUED" | "JOB_STATE_PENDING" | "JOB_STATE_RUNNING" | "JOB_STATE_PAUSED"
        | "JOB_STATE_UPDATING" => State::Running,
        other => {
            return Err(ProtocolError::body(format!("the job's state {other:?} is not known")));
        }
    };
    let files = v
        .pointer("/outputInfo/gcsOutputDirectory")
        .and_then(Value::as_str)
        .map(|d| vec![d.to_owned()])
        .unwrap_or_default();
    Ok(Progress { id: id.to_owned(), state, files })
}

/// A listing of what the job wrote, where it wrote it: in the staging
/// bucket only.
pub(super) fn results(
    staging: Option<&Staging>,
    progress: &Progress,
) -> Result<Vec<Fetch>, ProtocolError> {
    let staging = staging.ok_or_else(|| ProtocolError::body("Vertex AI batches need a bucket"))?;
    let mut out = Vec::new();
    for dir in &progress.files {
        let Some(object) = dir
            .strip_prefix("gs://")
            .and_then(|r| r.strip_prefix(staging.bucket.as_str()))
            .and_then(|r| r.strip_prefix('/'))
        else {
            return Err(ProtocolError::body(format!(
                "the job wrote to {dir}, outside the bucket gs://{}",
                staging.bucket
            )));
        };
        let url = format!(
            "{}/storage/v1/b/{}/o?prefix={}",
            staging.storage_endpoint,
            encoded(&staging.bucket),
            encoded(&format!("{}/", object.trim_end_matches('/')))
        );
        out.push(Fetch::Listing(Call::get(url)));
    }
    Ok(out)
}

/// The results files in a listing: its `.jsonl` objects.
pub(super) fn parse_listing(staging: &Staging, body: &[u8]) -> Result<Vec<Call>, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let items = v.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut names: Vec<String> = items
        .iter()
        .filter_map(|i| i.get("name").and_then(Value::as_str))
        .filter(|n| n.ends_with(".jsonl"))
        .map(str::to_owned)
        .collect();
    names.sort();
    Ok(names
        .iter()
        .map(|n| {
            Call::get(format!(
                "{}/storage/v1/b/{}/o/{}?alt=media",
                staging.storage_endpoint,
                encoded(&staging.bucket),
                encoded(n)
            ))
        })
        .collect())
}

/// One output line: `{"status": "", "request", "response"}`, or a failed
/// request's `{"status": "<why>", "request"}`; its id is the request's label.
pub(super) fn answer(v: &Value) -> Option<Answer> {
    let custom_id =
        v.pointer(&format!("/request/labels/{LABEL}")).and_then(Value::as_str)?.to_owned();
    let status = v.get("status").and_then(Value::as_str).unwrap_or_default();
    let outcome = match v.get("response").filter(|r| r.is_object()) {
        Some(response) if status.is_empty() => {
            Outcome::Answered { status: 200, body: response.to_string().into_bytes() }
        }
        _ => {
            let message = if status.is_empty() { "the request failed" } else { status };
            let code = if message.contains("INVALID_ARGUMENT") || message.contains("Bad Request") {
                400
            } else {
                500
            };
            let body = json!({"error": {"code": code, "message": message}});
            Outcome::Answered { status: code, body: body.to_string().into_bytes() }
        }
    };
    Some(Answer { custom_id, outcome })
}
