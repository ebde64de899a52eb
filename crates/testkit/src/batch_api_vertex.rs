//! Vertex AI's batch prediction for Gemini on the Vertex Gemini fake
//! ([`super`]), reading its requests from and writing its answers to the
//! Cloud Storage served beside it ([`super::gcs`]).
//!
//! # Routes
//!
//! | Method | Path | Answer |
//! |---|---|---|
//! | POST | `/upload/storage/v1/b/{bucket}/o?uploadType=media&name={name}` | the object resource |
//! | GET | `/storage/v1/b/{bucket}/o?prefix={prefix}` | `storage#objects`, in name order |
//! | GET | `/storage/v1/b/{bucket}/o/{name}` (`?alt=media`: its bytes) | the object resource |
//! | POST | `/v1/projects/{PROJECT}/locations/{l}/batchPredictionJobs` | the job, `JOB_STATE_PENDING` |
//! | GET | `/v1/projects/{PROJECT}/locations/{l}/batchPredictionJobs/{id}` | the job, advanced by this poll |
//! | POST | `/v1/projects/{PROJECT}/locations/{l}/batchPredictionJobs/{id}:cancel` | `{}` |
//!
//! Every route takes only a bearer token the fake's `/token` granted, as its
//! generation routes do (Cloud Storage refuses others in its own shape).
//!
//! # A job's life
//!
//! Its creation is checked at once, strictly (Vertex refuses unknown fields);
//! its input is read at its first poll, as Vertex reads it once the job
//! starts: an input URI that names no object fails the job (`error.code` 5,
//! `NOT_FOUND`), else it is `JOB_STATE_RUNNING`. Each input line must be
//! `{"request": {…}}`; the request runs through the fake's own
//! `…/publishers/google/models/{model}:generateContent` handler with the
//! creation's headers, so it is checked, scripted and recorded as a direct
//! call is. The answers are written last line first (Vertex promises no
//! order and keeps no id of a request: a client maps them by what it put in
//! the echoed `request`, its `labels`) to
//! `{outputUriPrefix}/prediction-model-{time}/predictions.jsonl`.

use std::sync::{Arc, Mutex};

use axum::http::{Method, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};

use super::gcs::{self, Gcs};
use super::{Batch, Batches, End, Line, Phase, insert, mix, rfc3339};
use crate::Vendor;
use crate::fake::{Received, Shared, labels, lock, plain};
use crate::sigv4::percent_decode;
use crate::vertex::PROJECT;

/// The most requests one job reads.
const MAX_REQUESTS: usize = 200_000;

/// The job's top-level fields the fake serves (Vertex's BatchPredictionJob
/// has more: a field the fake does not model is refused as unknown, so a
/// test sees it rather than a job that silently ignores it).
const FIELDS: [&str; 5] = ["displayName", "model", "inputConfig", "outputConfig", "labels"];

/// A Vertex or Cloud Storage route.
#[derive(Debug)]
pub(super) enum Op {
    Upload { bucket: String },
    List { bucket: String },
    Object { bucket: String, name: String },
    Create { location: String },
    Status { location: String, id: String },
    Cancel { location: String, id: String },
}

impl Op {
    /// Cloud Storage's, whose errors have their own shape.
    fn storage(&self) -> bool {
        matches!(self, Op::Upload { .. } | Op::List { .. } | Op::Object { .. })
    }
}

/// A job's own fields, beside what every batch keeps.
#[derive(Debug)]
pub(super) struct VertexJob {
    location: String,
    display_name: String,
    /// `publishers/google/models/{model}`, as created.
    model: String,
    input_config: Value,
    output_config: Value,
    labels: Option<Value>,
    /// The input objects, `(bucket, name)`.
    inputs: Vec<(String, String)>,
    out_bucket: String,
    /// The output prefix's object part, no slash at either end (may be empty).
    out_prefix: String,
    /// What each input line's output echoes as its `request`, in input order.
    echoes: Vec<Value>,
    /// The output directory's object part, once the job runs.
    output_dir: Option<String>,
    /// Why the job failed: a google.rpc code and message.
    error: Option<(u16, String)>,
}

/// The route `path` is on, and the method it takes; `None`: not a Vertex
/// batch or Cloud Storage path (the generation handler answers it).
pub(super) fn route(path: &str) -> Option<(Op, Method)> {
    if let Some(rest) = path.strip_prefix("/upload/storage/v1/b/") {
        let (bucket, rest) = rest.split_once('/')?;
        let bucket = percent_decode(bucket);
        return (rest == "o" && !bucket.is_empty())
            .then_some((Op::Upload { bucket }, Method::POST));
    }
    if let Some(rest) = path.strip_prefix("/storage/v1/b/") {
        let (bucket, rest) = rest.split_once('/')?;
        let bucket = percent_decode(bucket);
        if bucket.is_empty() {
            return None;
        }
        if rest == "o" {
            return Some((Op::List { bucket }, Method::GET));
        }
        let name = rest.strip_prefix("o/").filter(|n| !n.is_empty())?;
        return Some((Op::Object { bucket, name: percent_decode(name) }, Method::GET));
    }
    let rest = path.strip_prefix(&format!("/v1/projects/{PROJECT}/locations/"))?;
    let (location, rest) = rest.split_once('/')?;
    let rest = rest.strip_prefix("batchPredictionJobs")?;
    if location.is_empty() {
        return None;
    }
    let location = location.to_owned();
    if rest.is_empty() {
        return Some((Op::Create { location }, Method::POST));
    }
    let id = rest.strip_prefix('/')?.replace("%3A", ":").replace("%3a", ":");
    let plain_id = |id: &str| !id.is_empty() && !id.contains(['/', ':']);
    match id.strip_suffix(":cancel") {
        Some(id) if plain_id(id) => {
            Some((Op::Cancel { location, id: id.to_owned() }, Method::POST))
        }
        None if plain_id(&id) => Some((Op::Status { location, id }, Method::GET)),
        _ => None,
    }
}

/// Answers a Vertex or Cloud Storage route, already recorded and counted:
/// its token checked, then served.
pub(super) async fn serve(
    shared: &Arc<Shared>,
    batches: &Mutex<Batches>,
    op: Op,
    method_ok: bool,
    rx: &Received,
) -> Response {
    let storage = op.storage();
    let authorized = shared
        .vertex
        .as_ref()
        .is_some_and(|(tokens, _)| lock(tokens).authorized(rx.header("authorization")));
    if !authorized {
        if storage {
            return gcs::unauthorized();
        }
        let message = "Request had invalid authentication credentials. Expected OAuth 2 access \
                       token, login cookie or other valid authentication credential.";
        return error(401, "UNAUTHENTICATED", message);
    }
    if !method_ok {
        let message = format!("fake Vertex AI upstream: method not allowed: {}", rx.method);
        return if storage {
            gcs::error(405, "methodNotAllowed", &message)
        } else {
            error(405, "METHOD_NOT_ALLOWED", &message)
        };
    }
    match op {
        Op::Upload { bucket } => gcs::upload(&mut lock(batches), &bucket, rx),
        Op::List { bucket } => gcs::list(&lock(batches), &bucket, rx),
        Op::Object { bucket, name } => gcs::get(&lock(batches), &bucket, &name, rx),
        Op::Create { location } => create(&mut lock(batches), &location, rx),
        Op::Status { location, id } => {
            let known = located(&lock(batches), &location, &id);
            if !known {
                return no_job(&id);
            }
            super::status(shared, batches, &id).await
        }
        Op::Cancel { location, id } => {
            let mut st = lock(batches);
            if !located(&st, &location, &id) {
                return no_job(&id);
            }
            super::cancel(Vendor::Gemini, &mut st, &id)
        }
    }
}

/// Whether job `id` is in `location`: a job is not found from another one.
fn located(st: &Batches, location: &str, id: &str) -> bool {
    st.batches.get(id).and_then(|b| b.vertex.as_ref()).is_some_and(|j| j.location == location)
}

// ---------------------------------------------------------------------------
// Creation

/// `POST …/batchPredictionJobs`: the job checked now, its input at its first
/// poll.
fn create(st: &mut Batches, location: &str, rx: &Received) -> Response {
    if let Some(fault) = super::scripted_create_fault(st, Vendor::Gemini) {
        return fault;
    }
    let job = match check_job(location, &rx.body) {
        Ok(job) => job,
        Err(message) => return error(400, "INVALID_ARGUMENT", &message),
    };
    let id = job_id(st);
    insert(st, &id, Phase::Validating, None, Vec::new(), rx);
    if let Some(batch) = st.batches.get_mut(&id) {
        batch.vertex = Some(job);
    }
    super::view(st, &id)
}

/// The job a creation's body describes, checked as Vertex checks it.
fn check_job(location: &str, body: &Value) -> Result<VertexJob, String> {
    let Some(map) = body.as_object() else {
        return Err("Invalid JSON payload received. Expected an object.".into());
    };
    if let Some(k) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "Invalid JSON payload received. Unknown name \"{k}\": Cannot find field."
        ));
    }
    let display_name = map.get("displayName").and_then(Value::as_str).filter(|s| !s.is_empty());
    let Some(display_name) = display_name else { return Err(required("display_name")) };
    let Some(model) = map.get("model").and_then(Value::as_str) else {
        return Err(required("model"));
    };
    let named = model.strip_prefix("publishers/google/models/");
    if !named.is_some_and(|m| !m.is_empty() && !m.contains('/')) {
        return Err(format!(
            "Invalid model name {model:?}: a Gemini batch prediction job names \
             publishers/google/models/{{model}}."
        ));
    }
    let input_config = map.get("inputConfig").cloned().unwrap_or(Value::Null);
    let inputs = check_input(&input_config)?;
    let output_config = map.get("outputConfig").cloned().unwrap_or(Value::Null);
    let (out_bucket, out_prefix) = check_output(&output_config)?;
    let labels = map.get("labels").cloned();
    if let Some(labels) = &labels {
        labels::check(labels)?;
    }
    Ok(VertexJob {
        location: location.to_owned(),
        display_name: display_name.to_owned(),
        model: model.to_owned(),
        input_config,
        output_config,
        labels,
        inputs,
        out_bucket,
        out_prefix,
        echoes: Vec::new(),
        output_dir: None,
        error: None,
    })
}

/// `inputConfig`: JSONL from Cloud Storage; its objects.
fn check_input(config: &Value) -> Result<Vec<(String, String)>, String> {
    let at = "batch_prediction_job.input_config";
    let Some(map) = config.as_object() else { return Err(required("input_config")) };
    only(map, &["instancesFormat", "gcsSource", "bigquerySource"], at)?;
    format_is_jsonl(map, "instancesFormat", "instances_format")?;
    let Some(source) = map.get("gcsSource").and_then(Value::as_object) else {
        return Err(required("input_config.gcs_source"));
    };
    only(source, &["uris"], &format!("{at}.gcs_source"))?;
    let uris = source.get("uris").and_then(Value::as_array).filter(|u| !u.is_empty());
    let Some(uris) = uris else { return Err(required("input_config.gcs_source.uris")) };
    uris.iter()
        .map(|uri| {
            let uri = uri.as_str().unwrap_or_default();
            gs_uri(uri).filter(|(_, object)| !object.is_empty()).ok_or_else(|| {
                format!("Invalid input URI {uri:?}: expected gs://{{bucket}}/{{object}}.")
            })
        })
        .collect()
}

/// `outputConfig`: JSONL to Cloud Storage; its bucket and prefix.
fn check_output(config: &Value) -> Result<(String, String), String> {
    let at = "batch_prediction_job.output_config";
    let Some(map) = config.as_object() else { return Err(required("output_config")) };
    only(map, &["predictionsFormat", "gcsDestination", "bigqueryDestination"], at)?;
    format_is_jsonl(map, "predictionsFormat", "predictions_format")?;
    let Some(destination) = map.get("gcsDestination").and_then(Value::as_object) else {
        return Err(required("output_config.gcs_destination"));
    };
    only(destination, &["outputUriPrefix"], &format!("{at}.gcs_destination"))?;
    let Some(prefix) = destination.get("outputUriPrefix").and_then(Value::as_str) else {
        return Err(required("output_config.gcs_destination.output_uri_prefix"));
    };
    let (bucket, object) = gs_uri(prefix).ok_or_else(|| {
        format!("Invalid output URI prefix {prefix:?}: expected gs://{{bucket}}.")
    })?;
    Ok((bucket, object.trim_matches('/').to_owned()))
}

/// The fake serves Cloud Storage only: a BigQuery source or destination (real
/// fields) is refused by name, anything else as unknown.
fn only(map: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    for k in map.keys() {
        if k.starts_with("bigquery") && known.contains(&k.as_str()) {
            return Err(format!("fake upstream: {k} is not served: use Cloud Storage (gcs…)."));
        }
        if !known.contains(&k.as_str()) {
            return Err(format!(
                "Invalid JSON payload received. Unknown name \"{k}\" at '{at}': Cannot find field."
            ));
        }
    }
    Ok(())
}

fn format_is_jsonl(map: &Map<String, Value>, field: &str, proto: &str) -> Result<(), String> {
    match map.get(field).and_then(Value::as_str) {
        Some("jsonl") => Ok(()),
        Some(other) => Err(format!(
            "Unsupported {proto} {other:?}: Gemini batch prediction from Cloud Storage takes \
             \"jsonl\"."
        )),
        None => Err(required(proto)),
    }
}

/// `gs://bucket/object` (the object may be empty), split.
fn gs_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("gs://")?;
    let (bucket, object) = rest.split_once('/').unwrap_or((rest, ""));
    (!bucket.is_empty()).then(|| (bucket.to_owned(), object.to_owned()))
}

fn required(field: &str) -> String {
    format!(
        "List of found errors:\t1.Field: batch_prediction_job.{field}; Message: Required field \
         is not set.\t"
    )
}

/// A numeric id, as Vertex's are (19 digits), unique in this fake.
fn job_id(st: &mut Batches) -> String {
    loop {
        st.next_id += 1;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = mix(nanos as u64 ^ st.next_id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let id = (n % 9_000_000_000_000_000_000 + 1_000_000_000_000_000_000).to_string();
        if !st.batches.contains_key(&id) {
            return id;
        }
    }
}

// ---------------------------------------------------------------------------
// Running

/// The first poll: the input objects read, each line made a request (or a
/// refusal, answered without running); `JOB_STATE_RUNNING`, or
/// `JOB_STATE_FAILED` when an object is missing or holds no line.
pub(super) fn validate(batch: &mut Batch, gcs: &mut Gcs, now: u64) {
    let Some(job) = batch.vertex.as_mut() else { return };
    let url =
        format!("/v1/projects/{PROJECT}/locations/{}/{}:generateContent", job.location, job.model);
    let (mut lines, mut echoes) = (Vec::new(), Vec::new());
    let mut failure = None;
    for (bucket, object) in &job.inputs {
        let Some(bytes) = gcs.read(bucket, object) else {
            let message = format!("Failed to read the input: gs://{bucket}/{object} not found.");
            failure = Some((5, message));
            break;
        };
        for row in bytes.split(|b| *b == b'\n') {
            let row = row.strip_suffix(b"\r").unwrap_or(row);
            if row.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let (line, echo) = read_line(row, &url);
            lines.push(line);
            echoes.push(echo);
        }
    }
    if failure.is_none() && lines.is_empty() {
        failure = Some((3, "The input holds no requests.".to_owned()));
    }
    if failure.is_none() && lines.len() > MAX_REQUESTS {
        failure =
            Some((3, format!("A batch prediction job takes at most {MAX_REQUESTS} requests.")));
    }
    if let Some(failure) = failure {
        job.error = Some(failure);
        batch.phase = Phase::Ended(End::Failed);
        batch.ended_at = Some(now);
        return;
    }
    let stamp = gcs.stamp();
    let time = rfc3339(stamp / 1_000_000);
    let dir = format!("prediction-model-{}.{:06}Z", time.trim_end_matches('Z'), stamp % 1_000_000);
    job.output_dir =
        Some(if job.out_prefix.is_empty() { dir } else { format!("{}/{dir}", job.out_prefix) });
    job.echoes = echoes;
    batch.requests = lines;
    batch.phase = Phase::InProgress;
    batch.in_progress_at = Some(now);
}

/// An input line: its request to run and what its output echoes; a line that
/// is not `{"request": {…}}` becomes a refusal (an empty `url`, its answer in
/// `body`), answered in its output line without running.
fn read_line(row: &[u8], url: &str) -> (Line, Value) {
    let refused = |echo: Value, message: &str| {
        let body =
            json!({"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}});
        (Line { custom_id: String::new(), url: String::new(), body }, echo)
    };
    match serde_json::from_slice::<Value>(row) {
        Ok(Value::Object(line)) => match line.get("request") {
            Some(request @ Value::Object(_)) => {
                let run =
                    Line { custom_id: String::new(), url: url.to_owned(), body: request.clone() };
                (run, request.clone())
            }
            Some(other) => refused(other.clone(), "The line's `request` is not a JSON object."),
            None => refused(Value::Object(line), "The line has no `request` field."),
        },
        Ok(other) => refused(other, "The line is not a JSON object."),
        Err(_) => {
            let text = Value::String(String::from_utf8_lossy(row).into_owned());
            refused(text, "The line is not valid JSON.")
        }
    }
}

/// An ended job's answers as `predictions.jsonl` in its output directory,
/// last line first; nothing when no line ran (a job cancelled while held).
pub(super) fn write_output(st: &mut Batches, id: &str) {
    let Some(batch) = st.batches.get(id) else { return };
    let Some(job) = &batch.vertex else { return };
    let Some(dir) = &job.output_dir else { return };
    if batch.answers.is_empty() {
        return;
    }
    let processed = rfc3339(batch.ended_at.unwrap_or_else(super::now));
    let mut out = Vec::new();
    for (n, (status, body)) in batch.answers.iter().enumerate().rev() {
        let request = job.echoes.get(n).cloned().unwrap_or(Value::Null);
        let line = if (200..300).contains(status) {
            json!({"status": "", "processed_time": processed, "request": request,
                   "response": body})
        } else {
            json!({"status": failure(*status, body), "processed_time": processed,
                   "request": request})
        };
        out.extend(line.to_string().as_bytes());
        out.push(b'\n');
    }
    let object = format!("{dir}/predictions.jsonl");
    st.gcs.write(&job.out_bucket, &object, out.into(), "application/jsonl");
}

/// A failed line's `status`, as Vertex words it: the HTTP reason, then the
/// error body the model answered (`Bad Request: {"error": …}`), so its
/// message and its google.rpc status are both there.
fn failure(status: u16, body: &Value) -> String {
    let reason = StatusCode::from_u16(status).ok().and_then(|s| s.canonical_reason());
    let detail = match body {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    format!("{}: {detail}", reason.unwrap_or("Error"))
}

// ---------------------------------------------------------------------------
// Views

/// The job's `state`.
fn state(batch: &Batch) -> &'static str {
    match batch.phase {
        Phase::Validating => "JOB_STATE_PENDING",
        Phase::Running if batch.cancel_at.is_some() => "JOB_STATE_CANCELLING",
        Phase::InProgress | Phase::Running => "JOB_STATE_RUNNING",
        Phase::Cancelling => "JOB_STATE_CANCELLING",
        Phase::Ended(End::Completed) => "JOB_STATE_SUCCEEDED",
        Phase::Ended(End::Failed) => "JOB_STATE_FAILED",
        Phase::Ended(End::Expired) => "JOB_STATE_EXPIRED",
        Phase::Ended(End::Cancelled) => "JOB_STATE_CANCELLED",
    }
}

/// The BatchPredictionJob: int64s as strings, fields unset left out, as
/// Google writes them; `outputInfo` and `completionStats` once it has ended
/// having run.
pub(super) fn view(id: &str, batch: &Batch) -> Value {
    let Some(job) = &batch.vertex else { return Value::Null };
    let times = [Some(batch.created_at), batch.in_progress_at, batch.cancel_at, batch.ended_at];
    let updated = times.into_iter().flatten().max().unwrap_or(batch.created_at);
    let mut v = json!({
        "name": format!("projects/{PROJECT}/locations/{}/batchPredictionJobs/{id}", job.location),
        "displayName": job.display_name,
        "model": job.model,
        "inputConfig": job.input_config,
        "outputConfig": job.output_config,
        "state": state(batch),
        "createTime": rfc3339(batch.created_at),
        "updateTime": rfc3339(updated),
    });
    if let Some(labels) = &job.labels {
        v["labels"] = labels.clone();
    }
    if let Some(at) = batch.in_progress_at {
        v["startTime"] = json!(rfc3339(at));
    }
    if let (Phase::Ended(how), Some(at)) = (batch.phase, batch.ended_at) {
        v["endTime"] = json!(rfc3339(at));
        if let (Some(dir), false) = (&job.output_dir, how == End::Failed) {
            v["outputInfo"] =
                json!({"gcsOutputDirectory": format!("gs://{}/{dir}", job.out_bucket)});
            let succeeded = batch.answers.iter().filter(|(s, _)| (200..300).contains(s)).count();
            let mut stats = json!({
                "successfulCount": succeeded.to_string(),
                "failedCount": (batch.answers.len() - succeeded).to_string(),
            });
            let incomplete = batch.requests.len() - batch.answers.len();
            if incomplete > 0 {
                stats["incompleteCount"] = json!(incomplete.to_string());
            }
            v["completionStats"] = stats;
        }
    }
    if let Some((code, message)) = &job.error {
        v["error"] = json!({"code": code, "message": message});
    }
    v
}

// ---------------------------------------------------------------------------
// Errors

/// An error in Google's shape, with its google.rpc status name.
pub(super) fn error(status: u16, name: &str, message: &str) -> Response {
    let body = json!({"error": {"code": status, "message": message, "status": name}});
    plain(status, "application/json", body.to_string())
}

pub(super) fn no_job(id: &str) -> Response {
    error(404, "NOT_FOUND", &format!("The BatchPredictionJob {id} does not exist."))
}

/// A cancel of a job that has ended otherwise than cancelled.
pub(super) fn not_cancellable(id: &str, batch: &Batch) -> Response {
    let message =
        format!("BatchPredictionJob {id} is in state {} and cannot be cancelled.", state(batch));
    error(400, "FAILED_PRECONDITION", &message)
}
