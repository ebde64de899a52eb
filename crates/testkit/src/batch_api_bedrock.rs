//! Bedrock batch inference (the control plane's model invocation jobs) on the
//! Bedrock fake ([`super`]), reading its records from and writing its answers
//! to the S3 served beside it ([`super::s3`]).
//!
//! # Routes
//!
//! | Method | Path | Answer |
//! |---|---|---|
//! | PUT | `/{bucket}/{key…}` | 200, `ETag` (S3) |
//! | GET | `/{bucket}/{key…}` | the bytes, or 404 `NoSuchKey` (S3) |
//! | POST | `/model-invocation-job` | `{"jobArn"}`, the job `Submitted` |
//! | GET | `/model-invocation-job/{jobIdentifier}` | the job, advanced by this poll |
//! | POST | `/model-invocation-job/{jobIdentifier}/stop` | `{}` |
//!
//! A `jobIdentifier` is the job's id or its whole ARN, percent-encoded (a
//! raw `/` in it is no route). The control plane takes what the runtime
//! takes: SigV4 for service `bedrock`, or the fake's Bedrock API key as a
//! bearer token; S3 takes SigV4 for service `s3` only
//! ([`super::s3::refusal`]). Errors are Bedrock's (`{"message"}` and
//! `x-amzn-ErrorType`) on the control plane, S3's XML on S3.
//!
//! # A job's life
//!
//! Its creation is checked at once, strictly (the API's patterns; fields the
//! fake does not know are refused, so a test sees them rather than a job that
//! ignores them). A repeated `clientRequestToken` answers the job it created
//! before, as AWS's idempotent creations do. Then, by status polls:
//! `Submitted` → `Validating` → the input object is read: a missing object,
//! fewer than 100 records (Bedrock's minimum per job) or more than
//! [`MAX_RECORDS`] fail the job, else `InProgress` → after
//! [`set_batch_polls`](crate::FakeUpstream::set_batch_polls) more polls, the
//! records run and the job is `Completed`, or `PartiallyCompleted` when any
//! record errored.
//!
//! Each input line is `{"recordId": <11 alphanumerics>, "modelInput": {…}}`
//! (a missing `recordId` gets one). Its `modelInput` runs through the fake's
//! own `POST /model/{modelId}/invoke` handler with the creation's headers, so
//! it is checked, scripted and recorded as a direct InvokeModel is (the
//! creation's SigV4 signature covers the creation only: the request is
//! marked as already authenticated, see `run` in [`super`]). A line that is
//! not JSON, has no object `modelInput`, or a `recordId` that is malformed or
//! repeated errors without running. Answers go, last record first (a client
//! must map them by `recordId`), to `{output s3Uri}{jobId}/{input file}.out`,
//! beside `manifest.json.out` with the counts.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use axum::http::Method;
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::s3::{self, S3};
use super::{Batch, Batches, End, Line, Phase, insert, mix, ok, rfc3339};
use crate::Vendor;
use crate::fake::{Received, Shared, lock, models, plain, vendor_error};
use crate::sigv4;

/// The control plane's path, and the bucket name S3 routing leaves to it.
pub(super) const ROOT: &str = "model-invocation-job";

/// The account every job's ARN names.
const ACCOUNT: &str = "123456789012";

/// Bedrock's minimum of records per job.
const MIN_RECORDS: usize = 100;

/// Bedrock's default quota of records per job.
const MAX_RECORDS: usize = 50_000;

/// The creation's fields the fake serves.
const FIELDS: [&str; 8] = [
    "jobName",
    "roleArn",
    "modelId",
    "clientRequestToken",
    "inputDataConfig",
    "outputDataConfig",
    "timeoutDurationInHours",
    "tags",
];

/// Real fields of the creation the fake does not model: refused by name.
const UNSERVED: [&str; 2] = ["vpcConfig", "modelInvocationType"];

/// A batch inference or S3 route.
#[derive(Debug)]
pub(super) enum Op {
    Object { put: bool, bucket: String, key: String },
    Create,
    Status(String),
    Stop(String),
}

/// A job's own fields, beside what every batch keeps.
#[derive(Debug)]
pub(super) struct BedrockJob {
    arn: String,
    job_name: String,
    model_id: String,
    role_arn: String,
    client_request_token: Option<String>,
    timeout_hours: u64,
    input_data_config: Value,
    output_data_config: Value,
    in_bucket: String,
    in_key: String,
    out_bucket: String,
    /// The output URI's key part: empty, or ending with `/`.
    out_prefix: String,
    /// No poll has seen it yet (`Submitted`).
    submitted: bool,
    validating_at: Option<u64>,
    /// Each record's `modelInput` as its output line echoes it, in input order.
    echoes: Vec<Value>,
    /// Why the job failed.
    message: Option<String>,
}

/// The route `path` is on, and the method it takes; `None`: neither S3 nor
/// batch inference (the Bedrock handler answers it).
pub(super) fn route(method: &Method, path: &str) -> Option<(Op, Method)> {
    if let Some((bucket, key)) = s3::route(method, path) {
        let put = method == Method::PUT;
        return Some((Op::Object { put, bucket, key }, method.clone()));
    }
    let rest = path.strip_prefix('/')?.strip_prefix(ROOT)?;
    if rest.is_empty() {
        return Some((Op::Create, Method::POST));
    }
    let segs: Vec<&str> = rest.strip_prefix('/')?.split('/').collect();
    match segs[..] {
        [id] if !id.is_empty() => Some((Op::Status(sigv4::percent_decode(id)), Method::GET)),
        [id, "stop"] if !id.is_empty() => Some((Op::Stop(sigv4::percent_decode(id)), Method::POST)),
        _ => None,
    }
}

/// Answers an S3 or batch inference route, already recorded and counted:
/// its credentials checked, then served.
pub(super) async fn serve(
    shared: &Arc<Shared>,
    batches: &Mutex<Batches>,
    op: Op,
    method_ok: bool,
    rx: &Received,
) -> Response {
    if let Op::Object { put, bucket, key } = &op {
        if let Some(refusal) = s3::refusal(&shared.bedrock, rx, SystemTime::now()) {
            return refusal;
        }
        let method = if *put { Method::PUT } else { Method::GET };
        return s3::serve(&mut lock(batches).s3, &method, bucket, key, rx);
    }
    // The runtime's check: SigV4 for `bedrock`, or the API key.
    if let Err((status, kind, message)) = models::authorized(shared, rx) {
        return vendor_error(Vendor::Bedrock, status, kind, &message);
    }
    if !method_ok {
        let message = format!("fake Bedrock upstream: method not allowed: {}", rx.method);
        return vendor_error(Vendor::Bedrock, 405, None, &message);
    }
    let region = shared.bedrock.region.as_str();
    match op {
        Op::Create => create(&mut lock(batches), region, rx),
        Op::Status(ident) => {
            let id = resolve(&lock(batches), region, &ident);
            match id {
                Some(id) => super::status(shared, batches, &id).await,
                None => no_job(&ident),
            }
        }
        Op::Stop(ident) => {
            let mut st = lock(batches);
            match resolve(&st, region, &ident) {
                Some(id) => super::cancel(Vendor::Bedrock, &mut st, &id),
                None => no_job(&ident),
            }
        }
        Op::Object { .. } => plain(500, "text/plain", "fake upstream: misrouted".into()),
    }
}

/// The id of the job `ident` names (its id, or its ARN in this region).
fn resolve(st: &Batches, region: &str, ident: &str) -> Option<String> {
    let prefix = format!("arn:aws:bedrock:{region}:{ACCOUNT}:{ROOT}/");
    let id = ident.strip_prefix(&prefix).unwrap_or(ident);
    st.batches.get(id).filter(|b| b.bedrock.is_some()).map(|_| id.to_owned())
}

// ---------------------------------------------------------------------------
// Creation

/// `POST /model-invocation-job`: the job checked now, its input when polled.
fn create(st: &mut Batches, region: &str, rx: &Received) -> Response {
    if let Some(fault) = super::scripted_create_fault(st, Vendor::Bedrock) {
        return fault;
    }
    let mut job = match check_job(&rx.body) {
        Ok(job) => job,
        Err(message) => return vendor_error(Vendor::Bedrock, 400, None, &message),
    };
    if let Some(token) = &job.client_request_token {
        let earlier = st
            .batches
            .values()
            .filter_map(|b| b.bedrock.as_ref())
            .find(|j| j.client_request_token.as_ref() == Some(token));
        if let Some(earlier) = earlier {
            return ok(json!({ "jobArn": earlier.arn }));
        }
    }
    let id = job_id(st);
    job.arn = format!("arn:aws:bedrock:{region}:{ACCOUNT}:{ROOT}/{id}");
    let answer = json!({ "jobArn": job.arn });
    insert(st, &id, Phase::Validating, None, Vec::new(), rx);
    if let Some(batch) = st.batches.get_mut(&id) {
        batch.bedrock = Some(job);
    }
    ok(answer)
}

/// The job a creation's body describes, checked as the API checks it.
fn check_job(body: &Value) -> Result<BedrockJob, String> {
    let Some(map) = body.as_object() else {
        return Err("The request body is not a JSON object.".into());
    };
    for k in map.keys() {
        if UNSERVED.contains(&k.as_str()) {
            return Err(format!("fake upstream: {k} is not served by this fake."));
        }
        if !FIELDS.contains(&k.as_str()) {
            return Err(format!(
                "Unknown field {k:?}: CreateModelInvocationJob has no such member."
            ));
        }
    }
    let job_name = string(map, "jobName", 63)?;
    if !job_name_ok(job_name) {
        return Err(pattern(job_name, "jobName", r"[a-zA-Z0-9](-*[a-zA-Z0-9\+\-\.])*"));
    }
    let role_arn = string(map, "roleArn", 2048)?;
    if !role_arn_ok(role_arn) {
        return Err(pattern(role_arn, "roleArn", r"arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+"));
    }
    let model_id = string(map, "modelId", 2048)?;
    if model_id.contains(char::is_whitespace) {
        return Err(pattern(model_id, "modelId", "a model ID or ARN"));
    }
    let client_request_token = match map.get("clientRequestToken") {
        None => None,
        Some(_) => {
            let token = string(map, "clientRequestToken", 256)?;
            let alnum = |c: char| c.is_ascii_alphanumeric();
            let good = token.starts_with(alnum) && token.chars().all(|c| alnum(c) || c == '-');
            if !good || token.ends_with('-') {
                return Err(pattern(token, "clientRequestToken", "[a-zA-Z0-9](-*[a-zA-Z0-9])*"));
            }
            Some(token.to_owned())
        }
    };
    let timeout_hours = match map.get("timeoutDurationInHours") {
        None => 24,
        Some(v) => match v.as_u64() {
            Some(h) if (24..=168).contains(&h) => h,
            _ => {
                return Err(format!(
                    "1 validation error detected: Value {v} at 'timeoutDurationInHours' failed \
                     to satisfy constraint: Member must be an integer from 24 to 168"
                ));
            }
        },
    };
    if let Some(tags) = map.get("tags") {
        let tag_ok = |t: &Value| {
            t.get("key").is_some_and(Value::is_string)
                && t.get("value").is_some_and(Value::is_string)
        };
        if !tags.as_array().is_some_and(|t| t.iter().all(tag_ok)) {
            return Err("tags: a list of {\"key\", \"value\"} strings".into());
        }
    }
    let input_data_config = map.get("inputDataConfig").cloned().unwrap_or(Value::Null);
    let input = config(&input_data_config, "inputDataConfig", "s3InputDataConfig")?;
    only(input, &["s3Uri", "s3InputFormat", "s3BucketOwner"], "s3InputDataConfig")?;
    match input.get("s3InputFormat") {
        None => {}
        Some(Value::String(f)) if f == "JSONL" => {}
        Some(other) => {
            return Err(pattern(&other.to_string(), "s3InputFormat", "Member must be JSONL"));
        }
    }
    let (in_bucket, in_key) = s3_uri(input, "inputDataConfig.s3InputDataConfig.s3Uri")?;
    if in_key.is_empty() || in_key.ends_with('/') {
        return Err("fake upstream: an input folder is not served: name the JSONL object \
                    (s3://bucket/key.jsonl)."
            .into());
    }
    let output_data_config = map.get("outputDataConfig").cloned().unwrap_or(Value::Null);
    let output = config(&output_data_config, "outputDataConfig", "s3OutputDataConfig")?;
    only(output, &["s3Uri", "s3EncryptionKeyId", "s3BucketOwner"], "s3OutputDataConfig")?;
    let (out_bucket, mut out_prefix) = s3_uri(output, "outputDataConfig.s3OutputDataConfig.s3Uri")?;
    if !out_prefix.is_empty() && !out_prefix.ends_with('/') {
        out_prefix.push('/');
    }
    Ok(BedrockJob {
        arn: String::new(),
        job_name: job_name.to_owned(),
        model_id: model_id.to_owned(),
        role_arn: role_arn.to_owned(),
        client_request_token,
        timeout_hours,
        input_data_config,
        output_data_config,
        in_bucket,
        in_key,
        out_bucket,
        out_prefix,
        submitted: true,
        validating_at: None,
        echoes: Vec::new(),
        message: None,
    })
}

/// A required string member of 1 to `max` characters.
fn string<'a>(map: &'a Map<String, Value>, field: &str, max: usize) -> Result<&'a str, String> {
    match map.get(field) {
        None | Some(Value::Null) => Err(format!(
            "1 validation error detected: Value null at '{field}' failed to satisfy constraint: \
             Member must not be null"
        )),
        Some(Value::String(s)) if (1..=max).contains(&s.chars().count()) => Ok(s),
        Some(Value::String(s)) => Err(format!(
            "1 validation error detected: Value '{s}' at '{field}' failed to satisfy constraint: \
             Member must have length between 1 and {max}"
        )),
        Some(other) => Err(format!("Value {other} at '{field}' is not a string.")),
    }
}

fn pattern(value: &str, field: &str, pattern: &str) -> String {
    format!(
        "1 validation error detected: Value '{value}' at '{field}' failed to satisfy constraint: \
         Member must satisfy regular expression pattern: {pattern}"
    )
}

/// `[a-zA-Z0-9](-*[a-zA-Z0-9\+\-\.])*`: an alphanumeric, then any of those
/// and `+`, `-`, `.`.
fn job_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// `arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+`.
fn role_arn_ok(arn: &str) -> bool {
    let Some(rest) = arn.strip_prefix("arn:aws") else { return false };
    let rest = match rest.strip_prefix('-') {
        Some(partition) => match partition.split_once(':') {
            Some((p, rest)) if !p.is_empty() => rest,
            _ => return false,
        },
        None => match rest.strip_prefix(':') {
            Some(rest) => rest,
            None => return false,
        },
    };
    let Some(rest) = rest.strip_prefix("iam::") else { return false };
    let (account, role) = rest.split_once(':').unwrap_or((rest, ""));
    let account_ok =
        account.is_empty() || (account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit()));
    account_ok && role.strip_prefix("role/").is_some_and(|r| !r.is_empty() && !r.contains('\n'))
}

/// A data config: `{"<member>": {…}}`, the union's one member, as its object.
fn config<'a>(
    value: &'a Value,
    field: &str,
    member: &str,
) -> Result<&'a Map<String, Value>, String> {
    let Some(map) = value.as_object() else {
        return Err(format!(
            "1 validation error detected: Value null at '{field}' failed to satisfy constraint: \
             Member must not be null"
        ));
    };
    only(map, &[member], field)?;
    map.get(member)
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{field}: {member} is required, as an object."))
}

/// Refuses a member `map` has beyond `known`.
fn only(map: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("Unknown field {k:?} in {at}.")),
        None => Ok(()),
    }
}

/// `s3Uri` of `config`: its bucket and key part.
fn s3_uri(config: &Map<String, Value>, at: &str) -> Result<(String, String), String> {
    let uri = config.get("s3Uri").and_then(Value::as_str).unwrap_or_default();
    let bad = || pattern(uri, at, r"s3://[a-z0-9][\.\-a-z0-9]{1,61}[a-z0-9](/.*)?");
    let rest = uri.strip_prefix("s3://").ok_or_else(bad)?;
    let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let good = (3..=63).contains(&bucket.len())
        && bucket.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c))
        && edge(bucket.chars().next())
        && edge(bucket.chars().next_back())
        && uri.len() <= 1024;
    if !good {
        return Err(bad());
    }
    Ok((bucket.to_owned(), key.to_owned()))
}

/// 12 lowercase alphanumerics, as Bedrock's job ids are, unique in this fake.
fn job_id(st: &mut Batches) -> String {
    loop {
        let id = alphanumerics(&mut st.next_id, 12, b"abcdefghijklmnopqrstuvwxyz0123456789");
        if !st.batches.contains_key(&id) {
            return id;
        }
    }
}

/// `n` characters of `alphabet`, from the time and a counter.
fn alphanumerics(counter: &mut u64, n: usize, alphabet: &[u8]) -> String {
    *counter += 1;
    let nanos = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut z = mix(nanos as u64 ^ counter.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    (0..n)
        .map(|i| {
            if i % 10 == 9 {
                z = mix(z);
            }
            let c = alphabet[(z % alphabet.len() as u64) as usize];
            z /= alphabet.len() as u64;
            char::from(c)
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Running

/// A poll of a job not yet in progress: the first makes it `Validating`; the
/// next reads its input, each line a record to run (or an errored one,
/// answered without running), and makes it `InProgress` or `Failed`.
pub(super) fn validate(batch: &mut Batch, s3: &S3, counter: &mut u64, now: u64) {
    let Some(job) = batch.bedrock.as_mut() else { return };
    if job.submitted {
        job.submitted = false;
        job.validating_at = Some(now);
        return;
    }
    let url = format!("/model/{}/invoke", sigv4::uri_encode(&job.model_id));
    let uri = format!("s3://{}/{}", job.in_bucket, job.in_key);
    let read = s3.read(&job.in_bucket, &job.in_key).map(|bytes| read_records(bytes, &url, counter));
    let failure = match &read {
        None => Some(format!("The input file {uri} does not exist or cannot be read.")),
        Some((lines, _)) if lines.len() < MIN_RECORDS => Some(format!(
            "The input {uri} has {} records: fewer than the minimum number of records \
             ({MIN_RECORDS}) a batch inference job takes.",
            lines.len()
        )),
        Some((lines, _)) if lines.len() > MAX_RECORDS => Some(format!(
            "The input {uri} has {} records: more than the maximum number of records \
             ({MAX_RECORDS}) a batch inference job takes.",
            lines.len()
        )),
        Some(_) => None,
    };
    match (failure, read) {
        (None, Some((lines, echoes))) => {
            job.echoes = echoes;
            batch.requests = lines;
            batch.phase = Phase::InProgress;
            batch.in_progress_at = Some(now);
        }
        (failure, _) => {
            job.message = failure;
            batch.phase = Phase::Ended(End::Failed);
            batch.ended_at = Some(now);
        }
    }
}

/// The input's records (blank lines skipped) and what each output line echoes
/// as `modelInput`.
fn read_records(bytes: &Bytes, url: &str, counter: &mut u64) -> (Vec<Line>, Vec<Value>) {
    let mut seen = HashSet::new();
    let (mut lines, mut echoes) = (Vec::new(), Vec::new());
    for row in bytes.split(|b| *b == b'\n') {
        let row = row.strip_suffix(b"\r").unwrap_or(row);
        if row.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut fresh_id = || loop {
            let id = alphanumerics(counter, 11, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
            if !seen.contains(&id) {
                break id;
            }
        };
        let parsed = serde_json::from_slice::<Value>(row);
        let (record_id, echo, refusal) = match parsed {
            Ok(Value::Object(line)) => {
                let echo = line.get("modelInput").cloned().unwrap_or(Value::Null);
                let refusal = match line.get("recordId") {
                    None => None,
                    Some(Value::String(id)) if !record_id_ok(id) => {
                        Some(format!("recordId {id:?} is not an 11-character alphanumeric string."))
                    }
                    Some(Value::String(id)) if seen.contains(id) => {
                        Some(format!("recordId {id:?} is repeated in the input."))
                    }
                    Some(Value::String(_)) => None,
                    Some(other) => Some(format!("recordId {other} is not a string.")),
                };
                let refusal = refusal.or_else(|| {
                    (!echo.is_object())
                        .then(|| "modelInput is missing or not a JSON object.".into())
                });
                let id = match line.get("recordId") {
                    Some(Value::String(id)) => id.clone(),
                    _ => fresh_id(),
                };
                (id, echo, refusal)
            }
            Ok(_) => (
                fresh_id(),
                Value::String(String::from_utf8_lossy(row).into_owned()),
                Some("The line is not a JSON object.".into()),
            ),
            Err(_) => (
                fresh_id(),
                Value::String(String::from_utf8_lossy(row).into_owned()),
                Some("The line is not valid JSON.".into()),
            ),
        };
        seen.insert(record_id.clone());
        let line = match refusal {
            // No url: answered as a 400 of its body without running.
            Some(message) => Line {
                custom_id: record_id,
                url: String::new(),
                body: json!({ "message": message }),
            },
            None => Line { custom_id: record_id, url: url.to_owned(), body: echo.clone() },
        };
        lines.push(line);
        echoes.push(echo);
    }
    (lines, echoes)
}

fn record_id_ok(id: &str) -> bool {
    id.len() == 11 && id.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// An ended job's answers as `{input file}.out`, last record first, and its
/// `manifest.json.out`, under `{output prefix}{jobId}/`; nothing when no
/// record ran (a job stopped while held, or failed).
pub(super) fn write_output(st: &mut Batches, id: &str) {
    let Some(batch) = st.batches.get(id) else { return };
    let Some(job) = &batch.bedrock else { return };
    if batch.answers.is_empty() {
        return;
    }
    let mut out = Vec::new();
    let (mut succeeded, mut input_tokens, mut output_tokens) = (0, 0, 0);
    for (n, (status, body)) in batch.answers.iter().enumerate().rev() {
        let record_id = batch.requests.get(n).map_or("", |l| l.custom_id.as_str());
        let model_input = job.echoes.get(n).cloned().unwrap_or(Value::Null);
        let line = if (200..300).contains(status) {
            succeeded += 1;
            let usage = |k: &str| body.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
            input_tokens += usage("input_tokens").unwrap_or(0);
            output_tokens += usage("output_tokens").unwrap_or(0);
            json!({"recordId": record_id, "modelInput": model_input, "modelOutput": body})
        } else {
            let message = match body {
                Value::String(text) => text.clone(),
                other => other
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| other.to_string(), str::to_owned),
            };
            json!({"recordId": record_id, "modelInput": model_input,
                   "error": {"errorCode": status, "errorMessage": message}})
        };
        out.extend(line.to_string().as_bytes());
        out.push(b'\n');
    }
    let processed = batch.answers.len();
    let manifest = json!({
        "totalRecordCount": batch.requests.len(),
        "processedRecordCount": processed,
        "successRecordCount": succeeded,
        "errorRecordCount": processed - succeeded,
        "inputTokenCount": input_tokens,
        "outputTokenCount": output_tokens,
    });
    let file = job.in_key.rsplit('/').next().unwrap_or_default();
    let dir = format!("{}{id}/", job.out_prefix);
    let bucket = job.out_bucket.clone();
    st.s3.write(&bucket, &format!("{dir}{file}.out"), out.into(), "binary/octet-stream");
    let manifest = Bytes::from(manifest.to_string());
    st.s3.write(&bucket, &format!("{dir}manifest.json.out"), manifest, "binary/octet-stream");
}

// ---------------------------------------------------------------------------
// Views

/// The job's `status`.
fn status(batch: &Batch) -> &'static str {
    let submitted = batch.bedrock.as_ref().is_some_and(|j| j.submitted);
    match batch.phase {
        Phase::Validating if submitted => "Submitted",
        Phase::Validating => "Validating",
        Phase::Running if batch.cancel_at.is_some() => "Stopping",
        Phase::InProgress | Phase::Running => "InProgress",
        Phase::Cancelling => "Stopping",
        Phase::Ended(End::Completed)
            if batch.answers.iter().any(|(s, _)| !(200..300).contains(s)) =>
        {
            "PartiallyCompleted"
        }
        Phase::Ended(End::Completed) => "Completed",
        Phase::Ended(End::Failed) => "Failed",
        Phase::Ended(End::Expired) => "Expired",
        Phase::Ended(End::Cancelled) => "Stopped",
    }
}

/// GetModelInvocationJob's answer; fields unset left out, as AWS writes them.
pub(super) fn view(batch: &Batch) -> Value {
    let Some(job) = &batch.bedrock else { return Value::Null };
    let times = [
        Some(batch.created_at),
        job.validating_at,
        batch.in_progress_at,
        batch.cancel_at,
        batch.ended_at,
    ];
    let modified = times.into_iter().flatten().max().unwrap_or(batch.created_at);
    let mut v = json!({
        "jobArn": job.arn,
        "jobName": job.job_name,
        "modelId": job.model_id,
        "roleArn": job.role_arn,
        "status": status(batch),
        "submitTime": rfc3339(batch.created_at),
        "lastModifiedTime": rfc3339(modified),
        "inputDataConfig": job.input_data_config,
        "outputDataConfig": job.output_data_config,
        "timeoutDurationInHours": job.timeout_hours,
        "jobExpirationTime": rfc3339(batch.created_at + job.timeout_hours * 3600),
    });
    if let Some(token) = &job.client_request_token {
        v["clientRequestToken"] = json!(token);
    }
    if let Some(message) = &job.message {
        v["message"] = json!(message);
    }
    if let (Phase::Ended(_), Some(at)) = (batch.phase, batch.ended_at) {
        v["endTime"] = json!(rfc3339(at));
    }
    v
}

// ---------------------------------------------------------------------------
// Errors

pub(super) fn no_job(ident: &str) -> Response {
    let message = format!("The specified model invocation job {ident} was not found.");
    vendor_error(Vendor::Bedrock, 404, Some("ResourceNotFoundException"), &message)
}

/// A stop of a job that has ended otherwise than stopped.
pub(super) fn not_stoppable(batch: &Batch) -> Response {
    let arn = batch.bedrock.as_ref().map_or("", |j| j.arn.as_str());
    let message = format!("The job {arn} is {} and cannot be stopped.", status(batch));
    vendor_error(Vendor::Bedrock, 400, Some("ValidationException"), &message)
}
