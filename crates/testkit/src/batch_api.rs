//! The vendors' own batch APIs on a plain OpenAI or Anthropic
//! [`FakeUpstream`], on the Vertex AI Gemini fake and on the Bedrock fake,
//! for black-box tests of the gateway's native batches: OpenAI's Files and
//! Batches, Anthropic's Message Batches, Vertex AI's batch prediction with the
//! Cloud Storage it reads and writes (`batch_api_vertex.rs`,
//! `batch_api_gcs.rs`), Bedrock's batch inference with the S3 it reads and
//! writes (`batch_api_bedrock.rs`, `batch_api_s3.rs`; their docs list their
//! routes). Stateful (files, objects and batches live in the
//! fake), and **strict where the real APIs are**,
//! including *when* they check: OpenAI accepts any file and fails the batch
//! at its first status poll, Anthropic checks the creation's envelope at once
//! and each request's params only when it runs.
//!
//! # Routes
//!
//! | Vendor | Method | Path | Answer |
//! |---|---|---|---|
//! | OpenAi | POST | `{/v1}/files` (multipart `purpose=batch`, `file=….jsonl`) | the file object |
//! | OpenAi | GET | `{/v1}/files/{id}`, `{/v1}/files/{id}/content` | the file object, its bytes |
//! | OpenAi | POST | `{/v1}/batches` (`input_file_id`, `endpoint`, `completion_window: 24h`) | the batch, `validating` |
//! | OpenAi | GET | `{/v1}/batches/{id}` | the batch, advanced by this poll |
//! | OpenAi | POST | `{/v1}/batches/{id}/cancel` | the batch, `cancelling` |
//! | Anthropic | POST | `/v1/messages/batches` (`requests: [{custom_id, params}]`) | the batch, `in_progress` |
//! | Anthropic | GET | `/v1/messages/batches/{id}` | the batch, advanced by this poll |
//! | Anthropic | GET | `/v1/messages/batches/{id}/results` | JSONL, once `ended` (400 before) |
//! | Anthropic | POST | `/v1/messages/batches/{id}/cancel` | the batch, `canceling` |
//!
//! OpenAI's routes are served with and without `/v1`, as its chat
//! completions are. Every route needs the vendor's credential, checked as the
//! model list checks it (OpenAI's bearer token; Anthropic's `x-api-key` and
//! `anthropic-version`). Batch requests are recorded like any request and
//! take nothing from the script.
//!
//! # Running
//!
//! A batch's requests are answered by **the fake's own handler**: each is
//! sent back through it as a `POST` of its `url` (Anthropic: `/v1/messages`)
//! with its body and the creation's headers, so it is checked, takes its
//! reply from the script (`push`, `set_default`, `set_chooser`) and is
//! recorded under its real path, exactly as a direct call is. A request the
//! API refuses directly is refused inside the batch too (OpenAI: a line in the
//! error file; Anthropic: an `errored` result). A scripted hang hangs the
//! status poll that runs it.
//!
//! # Progress
//!
//! Batches advance on **status polls, never on time**, so tests need no
//! sleeps. OpenAI: the first poll validates the file (`failed` with
//! `errors.data[{code, message, param, line}]`, or `in_progress`); Anthropic
//! is `in_progress` from its creation. Then the requests run at the n-th
//! poll in progress ([`FakeUpstream::set_batch_polls`], default 1) unless
//! [held](FakeUpstream::hold_batches), and the batch ends (`completed`,
//! `ended`). Answers are written **last request first**: no API promises
//! an order, and a client must map them by `custom_id` (Vertex: by the
//! request's `labels`, echoed; Bedrock: by `recordId`). A cancel stops a
//! batch at its next poll (`cancelled`, `ended`); requests that never ran have
//! no answer (OpenAI) or a `canceled` result (Anthropic).
//! [`FakeUpstream::expire_batches_after`] lets a batch run only its first
//! requests and end `expired`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HeaderName, HeaderValue, RETRY_AFTER};
use axum::http::{Method, Uri};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use super::{FakeUpstream, InFlight, Received, Shared, handle, lock, plain, receive, vendor_error};
use crate::{Vendor, canned};

/// Both APIs keep a batch 24 hours.
const DAY_SECS: u64 = 86_400;

/// Request headers that describe the creation's own body or connection: not
/// passed on to the requests it runs.
const NOT_PASSED_ON: [&str; 9] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "expect",
    "accept-encoding",
    "te",
    "upgrade",
];

/// A fake's files, batches and batch faults.
#[derive(Debug)]
pub(super) struct Batches {
    /// `http://127.0.0.1:PORT`: Anthropic's `results_url` starts with it.
    base: String,
    /// Polls in progress before a batch's requests run.
    polls: u32,
    /// While on, no batch's requests run.
    held: bool,
    /// How many creations are still to be refused, and with which status.
    failing_creates: (usize, u16),
    /// How many of a batch's requests run before it expires; `None`: all.
    expire_after: Option<usize>,
    creates: usize,
    status_polls: usize,
    cancels: usize,
    /// Batch ids in creation order.
    order: Vec<String>,
    batches: HashMap<String, Batch>,
    /// OpenAI's files: uploaded, and the batches' outputs.
    files: HashMap<String, File>,
    /// The Vertex fake's Cloud Storage: uploaded inputs, and jobs' outputs.
    gcs: gcs::Gcs,
    /// The Bedrock fake's S3: uploaded inputs, and jobs' outputs.
    s3: s3::S3,
    next_id: u64,
}

impl Batches {
    pub(super) fn new(base: String) -> Batches {
        Batches {
            base,
            polls: 1,
            held: false,
            failing_creates: (0, 0),
            expire_after: None,
            creates: 0,
            status_polls: 0,
            cancels: 0,
            order: Vec::new(),
            batches: HashMap::new(),
            files: HashMap::new(),
            gcs: gcs::Gcs::default(),
            s3: s3::S3::default(),
            next_id: 0,
        }
    }
}

#[derive(Debug)]
struct File {
    filename: String,
    purpose: &'static str,
    created_at: u64,
    bytes: Bytes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// OpenAI's file, or a Vertex job's input, not read yet.
    Validating,
    InProgress,
    /// A status poll is running its requests (another poll sees `in_progress`).
    Running,
    /// Cancelled while not running: stops at the next poll.
    Cancelling,
    Ended(End),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Completed,
    /// OpenAI's file refused, or a Vertex or Bedrock job's input missing
    /// (or too short, for Bedrock): nothing ran.
    Failed,
    Expired,
    Cancelled,
}

#[derive(Debug)]
struct Batch {
    /// OpenAI's own fields; `None` for an Anthropic batch or a Vertex job.
    openai: Option<OpenAiBatch>,
    /// A Vertex AI batch prediction job's own fields.
    vertex: Option<vertex_ai::VertexJob>,
    /// A Bedrock batch inference job's own fields.
    bedrock: Option<bedrock_batch::BedrockJob>,
    created_at: u64,
    phase: Phase,
    /// Polls answered while in progress.
    waited: u32,
    /// Its requests (OpenAI's: once its file is validated).
    requests: Vec<Line>,
    /// The creation's headers, the credential among them: its requests carry
    /// them, as the provider runs them on the creator's account.
    headers: Vec<(String, String)>,
    /// The answers of the requests that ran, in request order (a prefix).
    answers: Vec<(u16, Value)>,
    in_progress_at: Option<u64>,
    cancel_at: Option<u64>,
    ended_at: Option<u64>,
}

#[derive(Debug)]
struct OpenAiBatch {
    input_file_id: String,
    endpoint: String,
    metadata: Value,
    /// The input file's bytes, checked at the first poll.
    input: Bytes,
    /// OpenAI's `errors.data` for a refused file.
    errors: Vec<Value>,
    output_file_id: Option<String>,
    error_file_id: Option<String>,
}

#[derive(Debug, Clone)]
struct Line {
    custom_id: String,
    url: String,
    body: Value,
}

// ---------------------------------------------------------------------------
// Scripting

impl FakeUpstream {
    fn batches(&self) -> Option<MutexGuard<'_, Batches>> {
        self.handle.shared.batches.as_ref().map(lock)
    }

    /// Status polls a batch spends in progress before its requests run and it
    /// ends (default 1; 0: at the poll that finds it in progress, OpenAI's
    /// validating one and Vertex's pending one included). Read at each poll,
    /// so it applies to batches already created. Like the other batch
    /// methods, a no-op on a fake without batches (Gemini's own API, Azure,
    /// Vertex's Claude and OpenAI fakes).
    pub fn set_batch_polls(&self, n: u32) {
        if let Some(mut st) = self.batches() {
            st.polls = n;
        }
    }

    /// While on, no batch's requests run, whatever the polls: batches stay in
    /// progress (a test can cancel one, or restart the gateway). Off: the
    /// next poll of a batch that has waited its polls runs it.
    pub fn hold_batches(&self, on: bool) {
        if let Some(mut st) = self.batches() {
            st.held = on;
        }
    }

    /// The next `n` batch creations (OpenAI's `POST /batches`, Anthropic's
    /// `POST /v1/messages/batches`, Vertex's `POST …/batchPredictionJobs`,
    /// Bedrock's `POST /model-invocation-job`) answer `status` in the
    /// vendor's error shape (Bedrock's type: `ThrottlingException` for 429,
    /// `InternalServerException` for 5xx, else `ValidationException`) and
    /// create nothing (replacing what is left of an earlier call); a 429 says
    /// `Retry-After: 0`. Uploads (Cloud Storage's and S3's too) are not
    /// creations.
    pub fn fail_next_batch_creates(&self, n: usize, status: u16) {
        if let Some(mut st) = self.batches() {
            st.failing_creates = (n, status);
        }
    }

    /// Batches run only their first `k` requests, then end `expired` (OpenAI:
    /// the others in the error file as `batch_expired`; Anthropic: `expired`
    /// results; Vertex: `JOB_STATE_EXPIRED`, Bedrock: `Expired`, output for
    /// those `k` only).
    /// Read when a batch runs; `usize::MAX`: every request runs.
    pub fn expire_batches_after(&self, k: usize) {
        if let Some(mut st) = self.batches() {
            st.expire_after = (k != usize::MAX).then_some(k);
        }
    }

    /// Batch creations received (refused and scripted failures included).
    pub fn batch_creates(&self) -> usize {
        self.batches().map_or(0, |st| st.creates)
    }

    /// Batch status polls received (refused ones and unknown ids included).
    pub fn batch_status_polls(&self) -> usize {
        self.batches().map_or(0, |st| st.status_polls)
    }

    /// Batch cancels received (refused ones and unknown ids included).
    pub fn batch_cancels(&self) -> usize {
        self.batches().map_or(0, |st| st.cancels)
    }

    /// The ids of the batches created, in creation order (Vertex: the jobs'
    /// numeric ids, the last segment of their `name`; Bedrock: the jobs' 12
    /// character ids, the last segment of their `jobArn`).
    pub fn batch_ids(&self) -> Vec<String> {
        self.batches().map_or_else(Vec::new, |st| st.order.clone())
    }

    /// The Vertex fake's Cloud Storage objects, as `gs://bucket/name`,
    /// sorted: what was uploaded and what jobs wrote. Empty on other fakes.
    pub fn gcs_objects(&self) -> Vec<String> {
        self.batches().map_or_else(Vec::new, |st| st.gcs.uris())
    }

    /// The Bedrock fake's S3 objects, as `s3://bucket/key`, sorted: what was
    /// put and what jobs wrote. Empty on other fakes.
    pub fn s3_objects(&self) -> Vec<String> {
        self.batches().map_or_else(Vec::new, |st| st.s3.uris())
    }
}

// ---------------------------------------------------------------------------
// Routing

/// A batch route, and whether the request's method is the route's.
pub(super) struct Route {
    op: Op,
    method_ok: bool,
}

enum Op {
    Upload,
    FileMeta(String),
    Content(String),
    Create,
    Status(String),
    Cancel(String),
    Results(String),
    /// Vertex AI's batch prediction or Cloud Storage (`batch_api_vertex.rs`).
    Google(vertex_ai::Op),
    /// Bedrock's batch inference or S3 (`batch_api_bedrock.rs`).
    Aws(bedrock_batch::Op),
}

/// The batch route `path` is on; `None` for any other path, or a fake
/// without batches (answered by the generation handler).
pub(super) fn route(shared: &Shared, method: &Method, path: &str) -> Option<Route> {
    shared.batches.as_ref()?;
    if shared.vertex.is_some() {
        let (op, wanted) = vertex_ai::route(path)?;
        return Some(Route { op: Op::Google(op), method_ok: method == wanted });
    }
    let rest = match shared.vendor {
        Vendor::OpenAi => path.strip_prefix("/v1").filter(|r| r.starts_with('/')).unwrap_or(path),
        Vendor::Anthropic => path.strip_prefix("/v1/messages")?,
        Vendor::Bedrock => {
            let (op, wanted) = bedrock_batch::route(method, path)?;
            return Some(Route { op: Op::Aws(op), method_ok: method == wanted });
        }
        Vendor::Gemini => return None,
    };
    let segs: Vec<&str> = rest.trim_start_matches('/').split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let id = |s: &str| s.to_owned();
    let (op, wanted) = match (shared.vendor, segs.as_slice()) {
        (Vendor::OpenAi, ["files"]) => (Op::Upload, Method::POST),
        (Vendor::OpenAi, ["files", f]) => (Op::FileMeta(id(f)), Method::GET),
        (Vendor::OpenAi, ["files", f, "content"]) => (Op::Content(id(f)), Method::GET),
        (Vendor::Anthropic, ["batches", b, "results"]) => (Op::Results(id(b)), Method::GET),
        (_, ["batches"]) => (Op::Create, Method::POST),
        (_, ["batches", b]) => (Op::Status(id(b)), Method::GET),
        (_, ["batches", b, "cancel"]) => (Op::Cancel(id(b)), Method::POST),
        _ => return None,
    };
    Some(Route { op, method_ok: method == wanted })
}

/// Answers a request on a batch route: recorded (taking nothing from the
/// script), counted, its credential checked, then served.
pub(super) async fn serve(shared: Arc<Shared>, route: Route, req: Request) -> Response {
    let _guard = InFlight::new(&shared);
    let vendor = shared.vendor;
    let (parts, body) = req.into_parts();
    // A body that fails to arrive is taken as empty.
    let raw = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let rx = receive(&parts, raw);
    shared.record(&rx, false);
    let Some(batches) = shared.batches.as_ref() else {
        return vendor_error(vendor, 404, None, "fake upstream: no batches here");
    };
    {
        let mut st = lock(batches);
        match route.op {
            Op::Create => st.creates += 1,
            Op::Status(_) => st.status_polls += 1,
            Op::Cancel(_) => st.cancels += 1,
            Op::Google(vertex_ai::Op::Create { .. }) => st.creates += 1,
            Op::Google(vertex_ai::Op::Status { .. }) => st.status_polls += 1,
            Op::Google(vertex_ai::Op::Cancel { .. }) => st.cancels += 1,
            Op::Aws(bedrock_batch::Op::Create) => st.creates += 1,
            Op::Aws(bedrock_batch::Op::Status(_)) => st.status_polls += 1,
            Op::Aws(bedrock_batch::Op::Stop(_)) => st.cancels += 1,
            _ => {}
        }
    }
    match route.op {
        // The Vertex fake's own token, checked there, in Google's shapes.
        Op::Google(op) => {
            return vertex_ai::serve(&shared, batches, op, route.method_ok, &rx).await;
        }
        // SigV4 (S3's, or Bedrock's and its API key), checked there.
        Op::Aws(op) => {
            return bedrock_batch::serve(&shared, batches, op, route.method_ok, &rx).await;
        }
        _ => {}
    }
    if let Err((status, kind, message)) = super::models::authorized(&shared, &rx) {
        return vendor_error(vendor, status, kind, &message);
    }
    if !route.method_ok {
        let message = format!("fake {vendor:?} upstream: method not allowed: {}", rx.method);
        return vendor_error(vendor, 405, None, &message);
    }
    match route.op {
        Op::Upload => openai::upload(batches, &rx).await,
        Op::Status(id) => status(&shared, batches, &id).await,
        op => answer(vendor, &mut lock(batches), op, &rx),
    }
}

/// The routes answered under the lock alone.
fn answer(vendor: Vendor, st: &mut Batches, op: Op, rx: &Received) -> Response {
    match op {
        Op::FileMeta(id) => match st.files.get(&id) {
            Some(file) => ok(openai::file_object(&id, file)),
            None => openai::no_file(&id),
        },
        Op::Content(id) => match st.files.get(&id) {
            Some(file) => {
                let mut response = Response::new(Body::from(file.bytes.clone()));
                let kind = HeaderValue::from_static("application/octet-stream");
                response.headers_mut().insert(CONTENT_TYPE, kind);
                response
            }
            None => openai::no_file(&id),
        },
        Op::Create => {
            if let Some(fault) = scripted_create_fault(st, vendor) {
                return fault;
            }
            match vendor {
                Vendor::Anthropic => anthropic::create(st, rx),
                _ => openai::create(st, rx),
            }
        }
        Op::Cancel(id) => cancel(vendor, st, &id),
        Op::Results(id) => anthropic::results(st, &id),
        Op::Upload | Op::Status(_) | Op::Google(_) | Op::Aws(_) => {
            plain(500, "text/plain", "fake upstream: misrouted".into())
        }
    }
}

// ---------------------------------------------------------------------------
// Progress

/// A status poll: advances the batch one step, running its requests (outside
/// the lock) when they are due.
async fn status(shared: &Arc<Shared>, batches: &Mutex<Batches>, id: &str) -> Response {
    let vendor = shared.vendor;
    let (due, headers) = {
        let mut guard = lock(batches);
        let st = &mut *guard;
        let Some(batch) = st.batches.get_mut(id) else { return no_batch(vendor, id) };
        let now = now();
        match batch.phase {
            Phase::Validating if batch.vertex.is_some() => {
                vertex_ai::validate(batch, &mut st.gcs, now);
            }
            Phase::Validating if batch.bedrock.is_some() => {
                bedrock_batch::validate(batch, &st.s3, &mut st.next_id, now);
            }
            Phase::Validating => openai::validate(batch, now),
            Phase::InProgress => batch.waited = batch.waited.saturating_add(1),
            Phase::Cancelling => {
                end(st, id, End::Cancelled);
                return view(st, id);
            }
            Phase::Running | Phase::Ended(_) => {}
        }
        if batch.phase != Phase::InProgress || batch.waited < st.polls || st.held {
            return view(st, id);
        }
        batch.phase = Phase::Running;
        let k = st.expire_after.unwrap_or(usize::MAX).min(batch.requests.len());
        (batch.requests.get(..k).unwrap_or_default().to_vec(), batch.headers.clone())
    };
    for line in &due {
        // A cancel that came in meanwhile stops the batch before its next request.
        let cancelled = lock(batches).batches.get(id).is_none_or(|b| b.cancel_at.is_some());
        if cancelled {
            break;
        }
        let answer = run(shared, line, &headers).await;
        if let Some(batch) = lock(batches).batches.get_mut(id) {
            batch.answers.push(answer);
        }
    }
    let mut guard = lock(batches);
    let st = &mut *guard;
    let Some(batch) = st.batches.get_mut(id) else { return no_batch(vendor, id) };
    if batch.cancel_at.is_some() {
        // Stops at the next poll, as a cancel of a batch not running does.
        batch.phase = Phase::Cancelling;
    } else if batch.answers.len() < batch.requests.len() {
        end(st, id, End::Expired);
    } else {
        end(st, id, End::Completed);
    }
    view(st, id)
}

/// One request, answered by the fake's own handler as a direct call: a `POST`
/// of its `url` with its body and the creation's headers. The status and the
/// body (JSON, else its text). A line with no `url` is one a Vertex or
/// Bedrock job refused when it read its input: its answer is a 400 of its
/// `body`.
///
/// The request carries [`super::BatchInternal`]: its credentials were checked
/// when the batch was created, and a SigV4 signature (Bedrock's) covers that
/// creation's path and body only, so it could never verify here. The mark is
/// a request extension, which only code in this process can set: a caller
/// over HTTP cannot claim it.
async fn run(shared: &Arc<Shared>, line: &Line, headers: &[(String, String)]) -> (u16, Value) {
    if line.url.is_empty() {
        return (400, line.body.clone());
    }
    let broken = |message: &str| (500, canned::error_body(shared.vendor, 500, message));
    let Ok(uri) = line.url.parse::<Uri>() else {
        return broken("fake upstream: a batch request's url does not parse");
    };
    let mut req = Request::new(Body::from(line.body.to_string()));
    *req.method_mut() = Method::POST;
    *req.uri_mut() = uri;
    for (k, v) in headers {
        if let (Ok(k), Ok(v)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) {
            req.headers_mut().append(k, v);
        }
    }
    req.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    req.extensions_mut().insert(super::BatchInternal);
    let response = handle(State(Arc::clone(shared)), req).await;
    let status = response.status().as_u16();
    match axum::body::to_bytes(response.into_body(), usize::MAX).await {
        Ok(raw) => (
            status,
            serde_json::from_slice(&raw)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned())),
        ),
        Err(_) => broken("fake upstream: the answer broke off (break_after)"),
    }
}

/// Ends batch `id`; an OpenAI batch's answers go into its output and error
/// files, a Vertex job's into its output directory.
fn end(st: &mut Batches, id: &str, how: End) {
    let Some(batch) = st.batches.get_mut(id) else { return };
    batch.phase = Phase::Ended(how);
    batch.ended_at = Some(now());
    if batch.openai.is_some() {
        openai::write_files(st, id, how);
    } else if batch.vertex.is_some() {
        vertex_ai::write_output(st, id);
    } else if batch.bedrock.is_some() {
        bedrock_batch::write_output(st, id);
    }
}

/// A cancel: a batch not ended stops at its next poll (a running one after
/// the request running). Vertex and Bedrock answer `{}`, not the job.
fn cancel(vendor: Vendor, st: &mut Batches, id: &str) -> Response {
    let Some(batch) = st.batches.get_mut(id) else { return no_batch(vendor, id) };
    match batch.phase {
        Phase::Validating | Phase::InProgress => {
            batch.phase = Phase::Cancelling;
            batch.cancel_at = Some(now());
        }
        Phase::Running => {
            batch.cancel_at.get_or_insert_with(now);
        }
        Phase::Cancelling | Phase::Ended(End::Cancelled) => {}
        Phase::Ended(_) if vendor == Vendor::Gemini => {
            return vertex_ai::not_cancellable(id, batch);
        }
        Phase::Ended(_) if vendor == Vendor::Bedrock => return bedrock_batch::not_stoppable(batch),
        Phase::Ended(_) => {
            let message = match vendor {
                Vendor::Anthropic => {
                    format!("Batch {id} has already ended: it cannot be canceled.")
                }
                _ => format!("Cannot cancel a batch with status '{}'.", openai::status(batch)),
            };
            return refusal(vendor, 400, &message);
        }
    }
    if matches!(vendor, Vendor::Gemini | Vendor::Bedrock) {
        return ok(serde_json::json!({}));
    }
    view(st, id)
}

/// The batch object, in the vendor's shape.
fn view(st: &Batches, id: &str) -> Response {
    match st.batches.get(id) {
        Some(batch) if batch.openai.is_some() => ok(openai::view(id, batch)),
        Some(batch) if batch.vertex.is_some() => ok(vertex_ai::view(id, batch)),
        Some(batch) if batch.bedrock.is_some() => ok(bedrock_batch::view(batch)),
        Some(batch) => ok(anthropic::view(&st.base, id, batch)),
        None => plain(404, "text/plain", "fake upstream: no such batch".into()),
    }
}

// ---------------------------------------------------------------------------
// Both

/// Stores a new batch and its id.
fn insert(
    st: &mut Batches,
    id: &str,
    phase: Phase,
    openai: Option<OpenAiBatch>,
    requests: Vec<Line>,
    rx: &Received,
) {
    let headers =
        rx.headers.iter().filter(|(k, _)| !NOT_PASSED_ON.contains(&k.as_str())).cloned().collect();
    let batch = Batch {
        openai,
        vertex: None,
        bedrock: None,
        created_at: now(),
        phase,
        waited: 0,
        requests,
        headers,
        answers: Vec::new(),
        in_progress_at: (phase == Phase::InProgress).then(now),
        cancel_at: None,
        ended_at: None,
    };
    st.batches.insert(id.to_owned(), batch);
    st.order.push(id.to_owned());
}

/// The scripted creation failure due now, if any ([`FakeUpstream::fail_next_batch_creates`]).
fn scripted_create_fault(st: &mut Batches, vendor: Vendor) -> Option<Response> {
    if st.failing_creates.0 == 0 {
        return None;
    }
    st.failing_creates.0 -= 1;
    Some(create_fault(vendor, st.failing_creates.1))
}

/// A scripted creation failure, in the vendor's shape.
fn create_fault(vendor: Vendor, status: u16) -> Response {
    let message = match status {
        429 => "Rate limit reached for batch creations.",
        500..=599 => "The server had an error while processing your request.",
        _ => "Batch creation refused (scripted).",
    };
    // Bedrock's control plane has three error types a creation can meet.
    let kind = (vendor == Vendor::Bedrock).then_some(match status {
        429 => "ThrottlingException",
        500..=599 => "InternalServerException",
        _ => "ValidationException",
    });
    let mut response = vendor_error(vendor, status, kind, message);
    if status == 429 {
        // Zero, so a client that honours it retries at once and tests stay fast.
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from_static("0"));
    }
    response
}

fn no_batch(vendor: Vendor, id: &str) -> Response {
    match vendor {
        Vendor::Anthropic => refusal(vendor, 404, &format!("Batch {id} not found.")),
        Vendor::Gemini => vertex_ai::no_job(id),
        Vendor::Bedrock => bedrock_batch::no_job(id),
        _ => {
            let message = format!("No batch found with id '{id}'.");
            openai::error(404, &message, Some("batch_id"), None)
        }
    }
}

/// A refusal in the vendor's shape (OpenAI's type from the status is
/// `invalid_request_error` for 4xx).
fn refusal(vendor: Vendor, status: u16, message: &str) -> Response {
    match vendor {
        Vendor::Anthropic => vendor_error(vendor, status, None, message),
        _ => openai::error(status, message, None, None),
    }
}

fn ok(body: Value) -> Response {
    plain(200, "application/json", body.to_string())
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A new id: `prefix` and 24 hex digits from the time and a counter, unique in
/// this fake.
fn new_id(counter: &mut u64, prefix: &str) -> String {
    *counter += 1;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let hash = mix(nanos as u64 ^ counter.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    format!("{prefix}{hash:016x}{:08x}", *counter)
}

/// FNV-1a: a stable hash, unlike std's seeded one.
fn fnv(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// splitmix64's finaliser: spreads a counter and a time over all bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Unix seconds as Anthropic writes its times (`2025-01-31T12:00:00Z`).
fn rfc3339(secs: u64) -> String {
    let (days, secs) = ((secs / DAY_SECS) as i64, secs % DAY_SECS);
    // Days to a civil date: Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let (era, doe) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

// OpenAI's Files and Batches: `batch_api_openai.rs`.
#[path = "batch_api_openai.rs"]
mod openai;

// Anthropic's Message Batches: `batch_api_anthropic.rs`.
#[path = "batch_api_anthropic.rs"]
mod anthropic;

// Vertex AI's batch prediction: `batch_api_vertex.rs`.
#[path = "batch_api_vertex.rs"]
mod vertex_ai;

// Cloud Storage's JSON API, for Vertex: `batch_api_gcs.rs`.
#[path = "batch_api_gcs.rs"]
mod gcs;

// Bedrock's batch inference: `batch_api_bedrock.rs`.
#[path = "batch_api_bedrock.rs"]
mod bedrock_batch;

// Amazon S3, for Bedrock: `batch_api_s3.rs`.
#[path = "batch_api_s3.rs"]
mod s3;

#[cfg(test)]
#[path = "batch_api_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "batch_api_bedrock_tests.rs"]
mod bedrock_tests;

#[cfg(test)]
#[path = "batch_api_vertex_tests.rs"]
mod vertex_tests;
