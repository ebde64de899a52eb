//! Bedrock's batch inference, staged in S3: the requests uploaded as one
//! JSONL object (`{"recordId", "modelInput"}` a line, `modelInput` the
//! InvokeModel body) to the provider's staging bucket, a model invocation
//! job created reading it (on Bedrock's control plane, as the IAM role the
//! configuration names), its state read, and once it has ended the one file
//! it wrote read (`{input}.out` under `{output}/{job id}/`).
//!
//! The bucket is reached path-style (`{storage}/{bucket}/{key}`) and signed
//! for S3; the control plane is signed for Bedrock. Bedrock takes a request
//! token, so a creation sent again (a retry) makes no second job.

use serde_json::{Value, json};

use super::native::{Answer, Call, End, Fetch, Outcome, Place, Progress, Request, Staging, State};
use crate::ProtocolError;
use crate::spec::aws_path_label as encoded;

/// The most records in one job.
pub const MAX_REQUESTS: usize = 50_000;

/// The fewest records Bedrock runs as a job: smaller batches are run by the
/// gateway.
pub const MIN_REQUESTS: usize = 100;

/// The most bytes of one job's input (1 GB), less room for the framing.
pub const MAX_BYTES: usize = 1_000_000_000 - 4096;

/// The input object's file name (the output is `{INPUT}.out`).
const INPUT: &str = "input.jsonl";

/// Bedrock's record id for the input file's line `n`: 11 alphanumeric
/// characters, as its batch inference takes them.
pub fn record_id(n: u32) -> String {
    format!("L{n:010}")
}

/// The line a [`record_id`] names.
pub fn line_of(id: &str) -> Option<u32> {
    let digits = id.strip_prefix('L').filter(|d| d.len() == 10)?;
    digits.parse().ok()
}

/// `{storage}/{bucket}/{key}`, each of the key's segments encoded.
fn object_url(staging: &Staging, key: &str) -> String {
    let key: Vec<String> = key.split('/').map(|s| encoded(s).into_owned()).collect();
    format!("{}/{}/{}", staging.storage_endpoint, encoded(&staging.bucket), key.join("/"))
}

fn input_key(staging: &Staging, name: &str) -> String {
    staging.object(&format!("{name}/{INPUT}"))
}

fn output_key(staging: &Staging, name: &str) -> String {
    staging.object(&format!("{name}/output/"))
}

/// The requests as the input's JSONL.
pub fn jsonl(requests: &[Request]) -> String {
    let mut out = String::new();
    for r in requests {
        out.push_str(&json!({"recordId": r.custom_id, "modelInput": r.body}).to_string());
        out.push('\n');
    }
    out
}

pub(super) fn upload(place: Place<'_>, requests: &[Request]) -> Option<Call> {
    let staging = place.staging?;
    Some(Call {
        method: "PUT",
        url: object_url(staging, &input_key(staging, place.name)),
        body: Some((jsonl(requests).into_bytes(), "application/jsonl".to_owned())),
        service: Some("s3"),
    })
}

/// The input's `s3://` URI (S3's answer to a PUT says nothing more).
pub(super) fn parse_uploaded(place: Place<'_>) -> Result<String, ProtocolError> {
    let staging =
        place.staging.ok_or_else(|| ProtocolError::body("Bedrock batches need a bucket"))?;
    Ok(format!("s3://{}/{}", staging.bucket, input_key(staging, place.name)))
}

/// A job name Bedrock takes (`[a-zA-Z0-9](-*[a-zA-Z0-9+\-.])*`, 63 at most).
fn job_name(name: &str) -> String {
    let cleaned: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    format!("switchyard-{cleaned}").chars().take(63).collect()
}

pub(super) fn create(place: Place<'_>, input: &str) -> Call {
    let (output, role, jobs) = match place.staging {
        Some(s) => (
            format!("s3://{}/{}", s.bucket, output_key(s, place.name)),
            s.role_arn.clone().unwrap_or_default(),
            s.jobs_endpoint.clone().unwrap_or_else(|| place.endpoint.to_owned()),
        ),
        None => (String::new(), String::new(), place.endpoint.to_owned()),
    };
    let body = json!({
        "jobName": job_name(place.name),
        "roleArn": role,
        "modelId": place.model,
        // The same name each time this batch is created: a creation sent
        // again makes no second job.
        "clientRequestToken": job_name(place.name),
        "inputDataConfig": {"s3InputDataConfig": {"s3Uri": input, "s3InputFormat": "JSONL"}},
        "outputDataConfig": {"s3OutputDataConfig": {"s3Uri": output}},
    });
    Call::post_json(format!("{jobs}/model-invocation-job"), &body)
}

/// The job's id, from its ARN (`…:model-invocation-job/{id}`).
fn job_id(v: &Value) -> Result<String, ProtocolError> {
    let arn = v.get("jobArn").and_then(Value::as_str).unwrap_or_default();
    let id = arn.rsplit('/').next().unwrap_or_default();
    if !arn.contains(":model-invocation-job/")
        || id.is_empty()
        || !id.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(ProtocolError::body(format!("the job's ARN {arn:?} ends in no id")));
    }
    Ok(id.to_owned())
}

pub(super) fn parse_progress(body: &[u8]) -> Result<Progress, ProtocolError> {
    let v: Value = serde_json::from_slice(body).map_err(ProtocolError::body)?;
    let id = job_id(&v)?;
    let state = match v.get("status").and_then(Value::as_str) {
        // The creation's answer is the ARN alone.
        None if v.get("status").is_none() => State::Running,
        Some("Submitted" | "Validating" | "Scheduled" | "InProgress") => State::Running,
        Some("Completed" | "PartiallyCompleted") => State::Ended(End::Completed),
        Some("Failed") => {
            let message = v.get("message").and_then(Value::as_str).unwrap_or("the job failed");
            State::Ended(End::Failed(message.to_owned()))
        }
        Some("Stopping") => State::Cancelling,
        Some("Stopped") => State::Ended(End::Cancelled),
        Some("Expired") => State::Ended(End::Expired),
        other => {
            return Err(ProtocolError::body(format!("the job's status {other:?} is not known")));
        }
    };
    let files = v
        .pointer("/outputDataConfig/s3OutputDataConfig/s3Uri")
        .and_then(Value::as_str)
        .map(|d| vec![d.to_owned()])
        .unwrap_or_default();
    Ok(Progress { id, state, files })
}

/// The job's status, on the control plane.
pub(super) fn status(jobs: &str, id: &str) -> Call {
    Call::get(format!("{jobs}/model-invocation-job/{id}"))
}

/// The job's stop, on the control plane.
pub(super) fn cancel(jobs: &str, id: &str) -> Call {
    Call {
        method: "POST",
        url: format!("{jobs}/model-invocation-job/{id}/stop"),
        body: None,
        service: None,
    }
}

/// The one file the job wrote: `{job id}/{input}.out` under its output
/// (from its status), which must be in the staging bucket.
pub(super) fn results(
    staging: Option<&Staging>,
    progress: &Progress,
) -> Result<Vec<Fetch>, ProtocolError> {
    let staging = staging.ok_or_else(|| ProtocolError::body("Bedrock batches need a bucket"))?;
    let mut out = Vec::new();
    for dir in &progress.files {
        let Some(prefix) = dir
            .strip_prefix("s3://")
            .and_then(|r| r.strip_prefix(staging.bucket.as_str()))
            .and_then(|r| r.strip_prefix('/'))
        else {
            return Err(ProtocolError::body(format!(
                "the job wrote to {dir}, outside the bucket s3://{}",
                staging.bucket
            )));
        };
        let prefix = if prefix.is_empty() || prefix.ends_with('/') {
            prefix.to_owned()
        } else {
            format!("{prefix}/")
        };
        let key = format!("{prefix}{}/{INPUT}.out", progress.id);
        let mut call = Call::get(object_url(staging, &key));
        call.service = Some("s3");
        out.push(Fetch::File(call));
    }
    Ok(out)
}

/// One output line: `{"recordId", "modelOutput"}`, or a refused record's
/// `{"recordId", "error": {"errorCode", "errorMessage"}}`.
pub(super) fn answer(v: &Value) -> Option<Answer> {
    let custom_id = v.get("recordId").and_then(Value::as_str)?.to_owned();
    let outcome = match (v.get("modelOutput").filter(|o| o.is_object()), v.get("error")) {
        (Some(output), _) => {
            Outcome::Answered { status: 200, body: output.to_string().into_bytes() }
        }
        (None, Some(error)) => {
            let status = error
                .get("errorCode")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| (400..600).contains(c))
                .unwrap_or(500);
            let message =
                error.get("errorMessage").and_then(Value::as_str).unwrap_or("the record failed");
            let body = json!({"message": message});
            Outcome::Answered { status, body: body.to_string().into_bytes() }
        }
        (None, None) => Outcome::Unrun,
    };
    Some(Answer { custom_id, outcome })
}
