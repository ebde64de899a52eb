//! OpenAI's Files and Batches on the fake ([`super`]): the upload, the
//! creation, the input file's check at the first poll (OpenAI fails a batch
//! there, never at the upload), and the batch and file objects.

use std::collections::HashSet;
use std::sync::Mutex;

use axum::response::Response;
use serde_json::{Value, json};

use super::{
    Batch, Batches, DAY_SECS, End, File, Line, OpenAiBatch, Phase, fnv, insert, mix, new_id, now,
    ok,
};
use crate::fake::{Received, lock, plain};

/// OpenAI's endpoints a batch may run (its `endpoint`, its lines' `url`).
pub(super) const ENDPOINTS: [&str; 3] = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"];

/// The most requests one batch holds: its file's lines.
const MAX_REQUESTS: usize = 50_000;

/// `POST /files`: a multipart form, `purpose=batch` and a `.jsonl` file. Its
/// lines are checked only when a batch of it is (at its first poll).
pub(super) async fn upload(batches: &Mutex<Batches>, rx: &Received) -> Response {
    let form = match crate::images::read_form(rx.header("content-type"), rx.raw.clone()).await {
        Ok(form) => form,
        Err(message) => return error(400, &message, None, None),
    };
    let part = |name: &str| form.iter().find(|p| p.name == name);
    let Some(purpose) = part("purpose") else {
        return missing("purpose");
    };
    if purpose.data.as_ref() != b"batch" {
        let message = format!(
            "Invalid value for 'purpose': '{}': this fake takes only 'batch'.",
            String::from_utf8_lossy(&purpose.data)
        );
        return error(400, &message, Some("purpose"), Some("invalid_value"));
    }
    let Some((file, filename)) = part("file").and_then(|p| Some((p, p.file_name.clone()?))) else {
        return missing("file");
    };
    if !filename.ends_with(".jsonl") {
        return error(400, "Invalid file format for Batch API. Must be .jsonl", None, None);
    }
    let mut st = lock(batches);
    let id = new_id(&mut st.next_id, "file-");
    let file = File { filename, purpose: "batch", created_at: now(), bytes: file.data.clone() };
    let object = file_object(&id, &file);
    st.files.insert(id, file);
    ok(object)
}

/// `POST /batches`: the request's own fields checked now; its file's lines
/// at the first poll.
pub(super) fn create(st: &mut Batches, rx: &Received) -> Response {
    let Some(body) = rx.body.as_object() else {
        return error(400, "We could not parse the JSON body of your request.", None, None);
    };
    let known = ["input_file_id", "endpoint", "completion_window", "metadata"];
    if let Some(k) = body.keys().find(|k| !known.contains(&k.as_str())) {
        return error(400, &format!("Unrecognized request argument supplied: {k}"), None, None);
    }
    let text = |name: &str| body.get(name).and_then(Value::as_str);
    let (Some(file_id), Some(endpoint), Some(window)) =
        (text("input_file_id"), text("endpoint"), text("completion_window"))
    else {
        let name = ["input_file_id", "endpoint", "completion_window"]
            .into_iter()
            .find(|n| text(n).is_none())
            .unwrap_or_default();
        return missing(name);
    };
    if !ENDPOINTS.contains(&endpoint) {
        let message = format!(
            "Invalid value for 'endpoint': '{endpoint}'. Supported: {}.",
            ENDPOINTS.join(", ")
        );
        return error(400, &message, Some("endpoint"), Some("invalid_value"));
    }
    if window != "24h" {
        let message = format!("Invalid value for 'completion_window': '{window}'. Supported: 24h.");
        return error(400, &message, Some("completion_window"), Some("invalid_value"));
    }
    let metadata = body.get("metadata").cloned().unwrap_or(Value::Null);
    let metadata_ok = match &metadata {
        Value::Null => true,
        Value::Object(m) => {
            m.len() <= 16
                && m.iter()
                    .all(|(k, v)| k.len() <= 64 && v.as_str().is_some_and(|v| v.len() <= 512))
        }
        _ => false,
    };
    if !metadata_ok {
        let message = "Invalid 'metadata': at most 16 pairs, keys of up to 64 characters, \
                       string values of up to 512.";
        return error(400, message, Some("metadata"), Some("invalid_value"));
    }
    let input = match st.files.get(file_id) {
        Some(file) if file.purpose == "batch" => file.bytes.clone(),
        Some(_) => {
            let message = format!("File {file_id} was not uploaded with purpose 'batch'.");
            return error(400, &message, Some("input_file_id"), None);
        }
        None => return no_file(file_id),
    };
    let openai = OpenAiBatch {
        input_file_id: file_id.to_owned(),
        endpoint: endpoint.to_owned(),
        metadata,
        input,
        errors: Vec::new(),
        output_file_id: None,
        error_file_id: None,
    };
    let id = new_id(&mut st.next_id, "batch_");
    insert(st, &id, Phase::Validating, Some(openai), Vec::new(), rx);
    super::view(st, &id)
}

/// The first poll of an OpenAI batch: its file's lines checked as OpenAI
/// checks them; `failed` with every line's first fault, else `in_progress`.
pub(super) fn validate(batch: &mut Batch, now: u64) {
    let Some(openai) = batch.openai.as_mut() else { return };
    match check_file(&openai.input, &openai.endpoint) {
        Ok(lines) => {
            batch.requests = lines;
            batch.phase = Phase::InProgress;
            batch.in_progress_at = Some(now);
        }
        Err(errors) => {
            openai.errors = errors;
            batch.phase = Phase::Ended(End::Failed);
            batch.ended_at = Some(now);
        }
    }
}

/// An input file's requests, or OpenAI's `errors.data` (`line` from 1).
fn check_file(input: &[u8], endpoint: &str) -> Result<Vec<Line>, Vec<Value>> {
    let error = |code: &str, message: String, param: Option<&str>, line: Option<usize>| json!({"code": code, "message": message, "param": param, "line": line});
    let mut rows: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if rows.last().is_some_and(|r| r.is_empty()) {
        rows.pop();
    }
    if rows.is_empty() {
        return Err(vec![error("empty_file", "The input file is empty.".into(), None, None)]);
    }
    if rows.len() > MAX_REQUESTS {
        let message = format!("A batch may have at most {MAX_REQUESTS} requests.");
        return Err(vec![error("too_many_tasks", message, None, None)]);
    }
    let (mut lines, mut errors) = (Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    let mut first_model: Option<(String, usize)> = None;
    for (i, row) in rows.into_iter().enumerate() {
        let n = i + 1;
        let row = row.strip_suffix(b"\r").unwrap_or(row);
        match check_line(row, endpoint, &mut seen, &mut first_model, n) {
            Ok(line) => lines.push(line),
            Err((code, message, param)) => errors.push(error(code, message, param, Some(n))),
        }
    }
    if errors.is_empty() { Ok(lines) } else { Err(errors) }
}

type LineFault = (&'static str, String, Option<&'static str>);

fn check_line(
    row: &[u8],
    endpoint: &str,
    seen: &mut HashSet<String>,
    first_model: &mut Option<(String, usize)>,
    n: usize,
) -> Result<Line, LineFault> {
    let missing = |p: &'static str| {
        ("missing_required_parameter", format!("Missing required parameter: '{p}'."), Some(p))
    };
    let invalid = |p: &'static str, m: &str| ("invalid_request", m.to_owned(), Some(p));
    let parsed: Option<Value> = serde_json::from_slice(row).ok();
    let Some(obj) = parsed.as_ref().and_then(Value::as_object) else {
        return Err((
            "invalid_json_line",
            "This line is not parseable as valid JSON.".into(),
            None,
        ));
    };
    if let Some(k) =
        obj.keys().find(|k| !["custom_id", "method", "url", "body"].contains(&k.as_str()))
    {
        return Err(("invalid_request", format!("Unrecognized field '{k}'."), None));
    }
    let custom_id = match obj.get("custom_id") {
        None => return Err(missing("custom_id")),
        Some(Value::String(id)) => id.clone(),
        Some(_) => return Err(invalid("custom_id", "custom_id must be a string.")),
    };
    match obj.get("method").map(Value::as_str) {
        None => return Err(missing("method")),
        Some(Some("POST")) => {}
        Some(_) => return Err(invalid("method", "method must be 'POST'.")),
    }
    let url = match obj.get("url").map(Value::as_str) {
        None => return Err(missing("url")),
        Some(Some(url)) if ENDPOINTS.contains(&url) => url,
        Some(url) => {
            let message =
                format!("The URL '{}' is not supported by the Batch API.", url.unwrap_or(""));
            return Err(("invalid_url", message, Some("url")));
        }
    };
    if url != endpoint {
        let message =
            format!("The URL '{url}' does not match the endpoint '{endpoint}' of the batch.");
        return Err(("url_mismatch", message, Some("url")));
    }
    let body = match obj.get("body") {
        None => return Err(missing("body")),
        Some(body @ Value::Object(_)) => body.clone(),
        Some(_) => return Err(invalid("body", "body must be an object.")),
    };
    let Some(model) = body.get("model").and_then(Value::as_str) else {
        return Err(missing("body.model"));
    };
    match first_model {
        None => *first_model = Some((model.to_owned(), n)),
        Some((first, line)) if first.as_str() != model => {
            let message = format!(
                "The model '{model}' does not match the model '{first}' of line {line}: all \
                 requests in a batch must use the same model."
            );
            return Err(("model_mismatch", message, Some("body.model")));
        }
        Some(_) => {}
    }
    if !seen.insert(custom_id.clone()) {
        let message = format!(
            "The custom_id '{custom_id}' is duplicated in this batch. custom_id must be unique \
             for each request."
        );
        return Err(("duplicate_custom_id", message, Some("custom_id")));
    }
    Ok(Line { custom_id, url: url.to_owned(), body })
}

/// The batch's `status` (a running batch asked to stop is `cancelling`).
pub(super) fn status(batch: &Batch) -> &'static str {
    match batch.phase {
        Phase::Validating => "validating",
        Phase::Running if batch.cancel_at.is_some() => "cancelling",
        Phase::InProgress | Phase::Running => "in_progress",
        Phase::Cancelling => "cancelling",
        Phase::Ended(End::Completed) => "completed",
        Phase::Ended(End::Failed) => "failed",
        Phase::Ended(End::Expired) => "expired",
        Phase::Ended(End::Cancelled) => "cancelled",
    }
}

/// The batch object; `request_counts.total` is 0 until the file is checked,
/// and an expired batch's requests never run count as failed.
pub(super) fn view(id: &str, batch: &Batch) -> Value {
    let Some(o) = &batch.openai else { return Value::Null };
    let at = |how: End| batch.ended_at.filter(|_| batch.phase == Phase::Ended(how));
    let succeeded = batch.answers.iter().filter(|(s, _)| (200..300).contains(s)).count();
    let mut failed = batch.answers.len() - succeeded;
    if batch.phase == Phase::Ended(End::Expired) {
        failed += batch.requests.len() - batch.answers.len();
    }
    let ended = matches!(batch.phase, Phase::Ended(End::Completed | End::Expired | End::Cancelled));
    let errors = (!o.errors.is_empty()).then(|| json!({"object": "list", "data": o.errors}));
    json!({
        "id": id,
        "object": "batch",
        "endpoint": o.endpoint,
        "errors": errors,
        "input_file_id": o.input_file_id,
        "completion_window": "24h",
        "status": status(batch),
        "output_file_id": o.output_file_id,
        "error_file_id": o.error_file_id,
        "created_at": batch.created_at,
        "in_progress_at": batch.in_progress_at,
        "expires_at": batch.created_at + DAY_SECS,
        "finalizing_at": batch.ended_at.filter(|_| ended),
        "completed_at": at(End::Completed),
        "failed_at": at(End::Failed),
        "expired_at": at(End::Expired),
        "cancelling_at": batch.cancel_at,
        "cancelled_at": at(End::Cancelled),
        "request_counts": {"total": batch.requests.len(), "completed": succeeded, "failed": failed},
        "metadata": o.metadata,
    })
}

pub(super) fn file_object(id: &str, file: &File) -> Value {
    json!({"id": id, "object": "file", "bytes": file.bytes.len(), "created_at": file.created_at,
           "expires_at": null, "filename": file.filename, "purpose": file.purpose,
           "status": "processed", "status_details": null})
}

/// An error in OpenAI's shape.
pub(super) fn error(
    status: u16,
    message: &str,
    param: Option<&str>,
    code: Option<&str>,
) -> Response {
    let body = json!({"error": {"message": message, "type": "invalid_request_error",
                                "param": param, "code": code}});
    plain(status, "application/json", body.to_string())
}

fn missing(name: &str) -> Response {
    let message = format!("Missing required parameter: '{name}'.");
    error(400, &message, Some(name), Some("missing_required_parameter"))
}

pub(super) fn no_file(id: &str) -> Response {
    error(404, &format!("No such File object: {id}"), Some("id"), None)
}

/// An ended batch's output and error files, each only when it has a line:
/// every answer in one or the other by its status, as `batch_req` lines;
/// the requests an expired batch never ran in the error file as
/// `batch_expired`.
pub(super) fn write_files(st: &mut Batches, id: &str, how: End) {
    let Some(batch) = st.batches.get_mut(id) else { return };
    let Some(openai) = batch.openai.as_mut() else { return };
    let (mut output, mut errors) = (Vec::new(), Vec::new());
    // Last request first: the API promises no order.
    for (n, line) in batch.requests.iter().enumerate().rev() {
        let request = format!("{:016x}", mix(fnv(id.as_bytes()) ^ n as u64));
        let (into, response, error) = match batch.answers.get(n) {
            Some((status, body)) => (
                if (200..300).contains(status) { &mut output } else { &mut errors },
                json!({"status_code": status, "request_id": format!("req_{request}"),
                       "body": body}),
                Value::Null,
            ),
            // Never ran: only an expired batch reports those.
            None if how == End::Expired => (
                &mut errors,
                Value::Null,
                json!({"code": "batch_expired", "message":
                    "This request could not be executed before the completion window expired."}),
            ),
            None => continue,
        };
        let out = json!({"id": format!("batch_req_{request}"), "custom_id": line.custom_id,
                         "response": response, "error": error});
        into.extend(out.to_string().as_bytes());
        into.push(b'\n');
    }
    let now = now();
    for (bytes, slot, kind) in [
        (output, &mut openai.output_file_id, "output"),
        (errors, &mut openai.error_file_id, "error"),
    ] {
        if bytes.is_empty() {
            continue;
        }
        let file_id = new_id(&mut st.next_id, "file-");
        let filename = format!("{id}_{kind}.jsonl");
        let file = File { filename, purpose: "batch_output", created_at: now, bytes: bytes.into() };
        st.files.insert(file_id.clone(), file);
        *slot = Some(file_id);
    }
}
