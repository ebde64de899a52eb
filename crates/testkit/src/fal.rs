//! A strict fake of fal.ai's **queue API**, for black-box tests of the
//! gateway's media jobs: its own axum server on `127.0.0.1:0`, stateful (jobs
//! live in it), not script-driven like [`crate::FakeUpstream`].
//!
//! # Routes
//!
//! | Method | Path | Answer |
//! |---|---|---|
//! | POST | `/{owner}/{alias}[/{sub/path…}]` | 200 `request_id`, `response_url`, `status_url`, `cancel_url`, `queue_position` |
//! | GET | `/{owner}/{alias}/requests/{id}/status[?logs=1]` | 202 `IN_QUEUE` / 202 `IN_PROGRESS` / 200 `COMPLETED` |
//! | GET | `/{owner}/{alias}/requests/{id}` | 200 the model's output; 400 while not completed or when cancelled |
//! | PUT | `/{owner}/{alias}/requests/{id}/cancel` | 202 `CANCELLATION_REQUESTED`; 400 `ALREADY_COMPLETED` |
//! | GET | `/files/{name}` | the bytes an output links to (no key, like fal's CDN) |
//!
//! As on fal, the URLs a submit answers name only the app id
//! `{owner}/{alias}`: the model's sub-path is dropped, and a status, result
//! or cancel URL that keeps it answers 404 `Request not found` (so does a
//! request id used under another app than the one it was submitted to).
//! Every route but `/files/` needs `Authorization: Key <key>` (401 otherwise).
//!
//! A submitted body must be a JSON object with a non-empty string `prompt`;
//! a model id holding `video` takes `duration` only as whole seconds 1..=60
//! (`"5"` or `5`); any other model but `audio` ones takes `num_images` only
//! as 1..=4. A refusal is 422 in pydantic's shape and creates no job; fields
//! it does not check are ignored, as fal ignores unknown ones.
//!
//! # Progress
//!
//! Jobs advance on **status polls, never on time**, so tests need no sleeps:
//! the k-th poll of a job answers `IN_QUEUE` while k ≤ `queued_polls`
//! (`queue_position` counting down to 0), then `IN_PROGRESS` while
//! k ≤ `queued_polls + running_polls`, then `COMPLETED` (defaults 1 and 1;
//! [`FakeFal::set_progress`]). With 0 and 0 a job is completed when submitted.
//! Faults: [`FakeFal::fail_next_submits`], [`FakeFal::fail_next_jobs`],
//! [`FakeFal::hold`], [`FakeFal::vanish`].

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

/// A running fake of fal.ai's queue API. Cheap to clone; the server stops
/// when the last clone is dropped.
#[derive(Debug, Clone)]
pub struct FakeFal {
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    /// Dropping it tells the server task to stop.
    _shutdown: watch::Sender<()>,
}

#[derive(Debug)]
struct Shared {
    key: String,
    /// `http://127.0.0.1:PORT`: every URL the fake hands out starts with it.
    base: String,
    state: Mutex<FalState>,
    /// Woken on every status poll ([`FakeFal::wait_for_status_polls`]).
    polled: Notify,
}

#[derive(Debug, Default)]
struct FalState {
    jobs: HashMap<String, Job>,
    /// Job ids in submission order.
    order: Vec<String>,
    queued_polls: u32,
    running_polls: u32,
    /// How many submits are still to be refused, and with which status.
    failing_submits: (usize, u16),
    /// How many jobs are still to fail, with which status and message.
    failing_jobs: (usize, u16, String),
    held: bool,
    vanished: bool,
    /// Requests per [`Kind`]: submits, status polls, result fetches, cancels.
    counts: [usize; 4],
    received: Vec<(String, String, Value)>,
    next_id: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Queued { position: u32 },
    Running,
    Completed,
    Cancelled,
}

#[derive(Debug)]
struct Job {
    app: String,
    /// Status polls answered so far.
    polls: u32,
    /// The progress settings when it was submitted (later changes apply to
    /// later jobs only, so a test's earlier jobs keep their course).
    queued_polls: u32,
    running_polls: u32,
    phase: Phase,
    /// Scripted failure: the result's status and message.
    failure: Option<(u16, String)>,
    output: Value,
    inference_time: f64,
    logs: Vec<Value>,
    files: Vec<FalFile>,
}

/// A file an output links to, served under `/files/` once the job completed.
#[derive(Debug)]
struct FalFile {
    name: String,
    content_type: &'static str,
    size: usize,
}

impl Job {
    /// What the k-th status poll (from 1) answers, held or not.
    fn phase_at(&self, k: u32, held: bool) -> Phase {
        if k <= self.queued_polls {
            Phase::Queued { position: self.queued_polls - k }
        } else if held || k <= self.queued_polls.saturating_add(self.running_polls) {
            Phase::Running
        } else {
            Phase::Completed
        }
    }

    fn poll(&mut self, held: bool) {
        if matches!(self.phase, Phase::Queued { .. } | Phase::Running) {
            self.polls = self.polls.saturating_add(1);
            self.phase = self.phase_at(self.polls, held);
            if self.phase == Phase::Running {
                let step = self.logs.len() + 1;
                self.logs.push(json!({"message": format!("Running: step {step}"),
                    "level": "INFO", "source": "user", "timestamp": timestamp()}));
            }
        }
    }

    fn status_word(&self) -> &'static str {
        match self.phase {
            Phase::Queued { .. } => "IN_QUEUE",
            Phase::Running => "IN_PROGRESS",
            Phase::Completed if self.failure.is_some() => "FAILED",
            Phase::Completed => "COMPLETED",
            Phase::Cancelled => "CANCELLED",
        }
    }
}

impl FakeFal {
    /// Binds `127.0.0.1:0` and serves the queue API in a tokio task,
    /// accepting only `Authorization: Key {key}`.
    pub async fn start(key: &str) -> io::Result<FakeFal> {
        let listener = crate::fake::listen_wide((Ipv4Addr::LOCALHOST, 0).into())?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            key: key.to_owned(),
            base: format!("http://{addr}"),
            state: Mutex::new(FalState {
                queued_polls: 1,
                running_polls: 1,
                ..FalState::default()
            }),
            polled: Notify::new(),
        });
        let app = Router::new().fallback(handle).with_state(Arc::clone(&shared));
        let (tx, mut stop) = watch::channel(());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    // Only ever errors: nothing is sent, the sender is dropped.
                    let _ = stop.changed().await;
                })
                .await;
        });
        Ok(FakeFal { handle: Arc::new(Handle { shared, addr, _shutdown: tx }) })
    }

    fn lock(&self) -> MutexGuard<'_, FalState> {
        self.handle.shared.lock()
    }

    /// `http://127.0.0.1:PORT`, no path suffix: the base of every route and of
    /// every URL the fake answers.
    pub fn url(&self) -> String {
        self.handle.shared.base.clone()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// Jobs submitted from now on spend `queued_polls` status polls in
    /// `IN_QUEUE`, then `running_polls` in `IN_PROGRESS`, then complete.
    pub fn set_progress(&self, queued_polls: u32, running_polls: u32) {
        let mut st = self.lock();
        st.queued_polls = queued_polls;
        st.running_polls = running_polls;
    }

    /// The next `n` submits answer `status` without creating a job (replacing
    /// what is left of an earlier call): 503 `Service temporarily
    /// unavailable`, 429 `Rate limit exceeded` with `Retry-After: 0`, others
    /// the status's reason, all as `{"detail"}`.
    pub fn fail_next_submits(&self, n: usize, status: u16) {
        self.lock().failing_submits = (n, status);
    }

    /// The next `n` jobs submitted complete (status `COMPLETED`) with a failed
    /// result: 422 `{"detail": message}` (replacing what is left of an
    /// earlier call).
    pub fn fail_next_jobs(&self, n: usize, message: impl Into<String>) {
        self.fail_next_jobs_with(n, 422, message);
    }

    /// [`fail_next_jobs`](Self::fail_next_jobs) with the result's `status`.
    pub fn fail_next_jobs_with(&self, n: usize, status: u16, message: impl Into<String>) {
        self.lock().failing_jobs = (n, status, message.into());
    }

    /// While on, no job advances past `IN_PROGRESS` (queued ones still reach
    /// it): a test can restart the gateway mid-job. Off: the next poll of a
    /// job past its running polls completes it.
    pub fn hold(&self, on: bool) {
        self.lock().held = on;
    }

    /// While on, every request (`/files/` too) answers 404
    /// `{"detail":"Not Found"}`, as if the provider disappeared; jobs keep
    /// their state for when it is turned off. Requests are still counted.
    pub fn vanish(&self, on: bool) {
        self.lock().vanished = on;
    }

    /// POSTs to a submit path, refused ones included (401, 422, faults).
    pub fn submits(&self) -> usize {
        self.lock().counts[Kind::Submit as usize]
    }

    /// GETs of a status path (the sub-path form too), refused ones included.
    pub fn status_polls(&self) -> usize {
        self.lock().counts[Kind::Status as usize]
    }

    /// GETs of a result path, refused ones included.
    pub fn result_fetches(&self) -> usize {
        self.lock().counts[Kind::Result as usize]
    }

    /// PUTs to a cancel path, refused ones included.
    pub fn cancels(&self) -> usize {
        self.lock().counts[Kind::Cancel as usize]
    }

    /// The ids of the jobs created, in submission order.
    pub fn job_ids(&self) -> Vec<String> {
        self.lock().order.clone()
    }

    /// Where job `id` stands: `IN_QUEUE`, `IN_PROGRESS`, `COMPLETED`,
    /// `CANCELLED` or `FAILED` (completed with a scripted failure); `None` if
    /// unknown. Before its first poll a job stands where that poll will find it.
    pub fn job_status(&self, id: &str) -> Option<String> {
        self.lock().jobs.get(id).map(|job| job.status_word().to_owned())
    }

    /// Every request received, in arrival order: method, path (no query) and
    /// body as JSON (`Null` when it is not JSON).
    pub fn received(&self) -> Vec<(String, String, Value)> {
        self.lock().received.clone()
    }

    /// Resolves once at least `n` status polls have arrived, with the count.
    /// Never times out by itself: wrap it in `tokio::time::timeout`.
    pub async fn wait_for_status_polls(&self, n: usize) -> usize {
        let shared = &self.handle.shared;
        loop {
            let mut notified = pin!(shared.polled.notified());
            // Registered before the check, so a poll in between still wakes us.
            notified.as_mut().enable();
            let count = shared.lock().counts[Kind::Status as usize];
            if count >= n {
                return count;
            }
            notified.await;
        }
    }
}

// ---------------------------------------------------------------------------
// Serving

/// A route; the first four index [`FalState::counts`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Kind {
    Submit,
    Status,
    Result,
    Cancel,
    File,
    #[default]
    Unknown,
}

#[derive(Debug, Default)]
struct Route {
    kind: Kind,
    /// `{owner}/{alias}`.
    app: String,
    /// The whole model id, sub-path included (submits).
    model: String,
    /// The request id, or the file's name.
    id: String,
    /// A request route under a model's sub-path: fal knows no such request.
    misplaced: bool,
    /// The route's method: a path with another answers 405.
    method_ok: bool,
}

fn route(method: &Method, path: &str) -> Route {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut r = Route::default();
    if segs.len() < 2 || segs.iter().any(|s| s.is_empty()) {
        return r;
    }
    r.app = segs[..2].join("/");
    if segs[0] == "files" && segs.len() == 2 {
        (r.kind, r.id, r.method_ok) = (Kind::File, segs[1].to_owned(), method == Method::GET);
        return r;
    }
    if let Some(p) = segs.iter().skip(2).position(|s| *s == "requests").map(|p| p + 2) {
        let (kind, wanted) = match segs.get(p + 2..) {
            Some([]) => (Kind::Result, Method::GET),
            Some(["status"]) => (Kind::Status, Method::GET),
            Some(["cancel"]) => (Kind::Cancel, Method::PUT),
            _ => return r,
        };
        let Some(id) = segs.get(p + 1) else { return r };
        (r.kind, r.id, r.misplaced, r.method_ok) =
            (kind, (*id).to_owned(), p != 2, method == wanted);
        return r;
    }
    (r.kind, r.model, r.method_ok) = (Kind::Submit, segs.join("/"), method == Method::POST);
    r
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, FalState> {
        // A lock that survives a test thread's panic while it was held.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn authorize(&self, headers: &HeaderMap) -> Option<Response> {
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Some(detail(401, "Missing authorization header"));
        };
        let given = value.to_str().ok().and_then(|v| v.strip_prefix("Key "));
        (given != Some(self.key.as_str()))
            .then(|| detail(401, "No user found for Key ID and Secret"))
    }

    fn answer(&self, st: &mut FalState, r: &Route, parts: &Parts, body: &Value) -> Response {
        if st.vanished {
            return detail(404, "Not Found");
        }
        if r.kind == Kind::File && r.method_ok {
            return serve_file(st, &r.id);
        }
        if let Some(refusal) = self.authorize(&parts.headers) {
            return refusal;
        }
        if r.kind == Kind::Unknown {
            return detail(404, "Not Found");
        }
        if !r.method_ok {
            return detail(405, "Method Not Allowed");
        }
        if r.kind == Kind::Submit {
            return self.submit(st, r, body);
        }
        let held = st.held;
        let job = match st.jobs.get_mut(&r.id) {
            Some(job) if !r.misplaced && job.app == r.app => job,
            _ => return detail(404, "Request not found"),
        };
        match r.kind {
            Kind::Status => {
                let q = parts.uri.query().unwrap_or_default();
                let logs = q.split('&').any(|pair| matches!(pair, "logs=1" | "logs=true"));
                self.status(job, &r.id, held, logs)
            }
            Kind::Result => match (job.phase, &job.failure) {
                (Phase::Queued { .. } | Phase::Running, _) => {
                    detail(400, "Request is still in progress")
                }
                (Phase::Cancelled, _) => detail(400, "Request was cancelled"),
                (Phase::Completed, Some((status, message))) => detail(*status, message),
                (Phase::Completed, None) => reply(200, job.output.clone()),
            },
            _ => match job.phase {
                Phase::Queued { .. } | Phase::Running => {
                    job.phase = Phase::Cancelled;
                    reply(202, json!({"status": "CANCELLATION_REQUESTED"}))
                }
                // A cancelled job's status already says COMPLETED.
                Phase::Completed | Phase::Cancelled => {
                    reply(400, json!({"status": "ALREADY_COMPLETED"}))
                }
            },
        }
    }

    fn status(&self, job: &mut Job, id: &str, held: bool, logs: bool) -> Response {
        job.poll(held);
        let logs = if logs { Value::Array(job.logs.clone()) } else { Value::Null };
        let (code, mut body) = match job.phase {
            Phase::Queued { position } => {
                (202, json!({"status": "IN_QUEUE", "queue_position": position}))
            }
            Phase::Running => (202, json!({"status": "IN_PROGRESS", "logs": logs})),
            Phase::Completed => (
                200,
                json!({"status": "COMPLETED", "logs": logs,
                "metrics": {"inference_time": job.inference_time}}),
            ),
            Phase::Cancelled => (
                200,
                json!({"status": "COMPLETED", "logs": logs, "metrics": {},
                "error": "Request was cancelled", "error_type": "request_cancelled"}),
            ),
        };
        body["response_url"] = json!(format!("{}/{}/requests/{id}", self.base, job.app));
        reply(code, body)
    }

    fn submit(&self, st: &mut FalState, r: &Route, body: &Value) -> Response {
        if st.failing_submits.0 > 0 {
            st.failing_submits.0 -= 1;
            return submit_fault(st.failing_submits.1);
        }
        if let Some((field, msg, kind)) = refusal(Media::of(&r.model), body) {
            let loc: Vec<&str> = std::iter::once("body").chain(field).collect();
            return reply(422, json!({"detail": [{"loc": loc, "msg": msg, "type": kind}]}));
        }
        let id = st.new_id();
        let failure = (st.failing_jobs.0 > 0).then(|| {
            st.failing_jobs.0 -= 1;
            (st.failing_jobs.1, st.failing_jobs.2.clone())
        });
        let (output, files, inference_time) = outputs(&self.base, &r.model, &id, body);
        let mut job = Job {
            app: r.app.clone(),
            polls: 0,
            queued_polls: st.queued_polls,
            running_polls: st.running_polls,
            phase: Phase::Running,
            failure,
            output,
            inference_time,
            logs: Vec::new(),
            files,
        };
        // Before any poll a job stands where its first poll will find it.
        job.phase = job.phase_at(1, st.held);
        let position = match job.phase {
            Phase::Queued { position } => position,
            _ => 0,
        };
        st.jobs.insert(id.clone(), job);
        st.order.push(id.clone());
        let url = format!("{}/{}/requests/{id}", self.base, r.app);
        reply(
            200,
            json!({"request_id": id, "response_url": url, "status_url": format!("{url}/status"),
                   "cancel_url": format!("{url}/cancel"), "queue_position": position}),
        )
    }
}

impl FalState {
    /// A UUID-v4-shaped id from the time and a counter, unique in this fake.
    fn new_id(&mut self) -> String {
        loop {
            self.next_id += 1;
            let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
            let a = mix(nanos as u64 ^ self.next_id.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let b = mix(a ^ self.next_id);
            let h = format!("{a:016x}{b:016x}");
            let id =
                format!("{}-{}-4{}-8{}-{}", &h[..8], &h[8..12], &h[13..16], &h[17..20], &h[20..]);
            if !self.jobs.contains_key(&id) {
                return id;
            }
        }
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    // A body that fails to arrive is taken as empty.
    let raw = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
    let path = parts.uri.path().to_owned();
    let r = route(&parts.method, &path);
    let response = {
        let mut st = shared.lock();
        st.received.push((parts.method.as_str().to_owned(), path, body.clone()));
        if let Some(count) = st.counts.get_mut(r.kind as usize) {
            *count += 1;
        }
        shared.answer(&mut st, &r, &parts, &body)
    };
    if r.kind == Kind::Status {
        shared.polled.notify_waiters();
    }
    response
}

fn reply(status: u16, body: Value) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

fn detail(status: u16, message: &str) -> Response {
    reply(status, json!({"detail": message}))
}

fn submit_fault(status: u16) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let message = match status {
        429 => "Rate limit exceeded",
        503 => "Service temporarily unavailable",
        _ => code.canonical_reason().unwrap_or("Error"),
    };
    let mut response = detail(code.as_u16(), message);
    if status == 429 {
        // Zero, so a client that honours it retries at once and tests stay fast.
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("0"));
    }
    response
}

fn serve_file(st: &FalState, name: &str) -> Response {
    // Names start with their job's id: `<id>.mp4`, `<id>-0.jpg`.
    let job = name.get(..36).and_then(|id| st.jobs.get(id));
    let file = job
        .filter(|job| job.phase == Phase::Completed && job.failure.is_none())
        .and_then(|job| job.files.iter().find(|f| f.name == name));
    let Some(file) = file else { return detail(404, "Not Found") };
    let magic: &[u8] = match file.content_type {
        "video/mp4" => b"\0\0\0\x18ftypmp42",
        "audio/wav" => b"RIFF\0\0\0\0WAVEfmt ",
        "image/png" => b"\x89PNG\r\n\x1a\n",
        _ => b"\xff\xd8\xff\xe0\0\x10JFIF\0",
    };
    let mut bytes = magic.to_vec();
    bytes.resize(file.size.max(magic.len()), 0);
    ([(header::CONTENT_TYPE, file.content_type)], bytes).into_response()
}

// ---------------------------------------------------------------------------
// Inputs and outputs

/// What a model makes, told from its id as the brief of each fal model says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Video,
    Audio,
    Image,
}

impl Media {
    fn of(model: &str) -> Media {
        if model.contains("video") {
            Media::Video
        } else if model.contains("audio") {
            Media::Audio
        } else {
            Media::Image
        }
    }
}

/// Why fal's pydantic model would refuse `body`: the field (none: the body
/// itself), message and error type.
fn refusal(
    media: Media,
    body: &Value,
) -> Option<(Option<&'static str>, &'static str, &'static str)> {
    let Some(input) = body.as_object() else {
        return Some((None, "Input should be a valid dictionary", "dict_type"));
    };
    let (field, msg, kind) = match (input.get("prompt"), media) {
        (Some(Value::String(p)), _) if p.is_empty() => ("prompt", "Field required", "missing"),
        (None, _) => ("prompt", "Field required", "missing"),
        (Some(p), _) if !p.is_string() => {
            ("prompt", "Input should be a valid string", "string_type")
        }
        (_, Media::Video) => match input.get("duration") {
            Some(d) if whole_seconds(d).is_none() => (
                "duration",
                "Input should be a whole number of seconds from 1 to 60",
                "value_error",
            ),
            _ => return None,
        },
        (_, Media::Audio) => return None,
        (_, Media::Image) => match input.get("num_images").map(Value::as_i64) {
            None | Some(Some(1..=4)) => return None,
            Some(None) => ("num_images", "Input should be a valid integer", "int_type"),
            Some(Some(..=0)) => {
                ("num_images", "Input should be greater than or equal to 1", "greater_than_equal")
            }
            Some(Some(_)) => {
                ("num_images", "Input should be less than or equal to 4", "less_than_equal")
            }
        },
    };
    Some((Some(field), msg, kind))
}

/// `"5"` or `5` (or `5.0`) seconds, 1..=60; `None` for anything else.
fn whole_seconds(value: &Value) -> Option<u64> {
    let n = match value {
        Value::String(s) => s.parse::<u64>().ok()?,
        Value::Number(n) => match n.as_u64() {
            Some(n) => n,
            None => n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64)?,
        },
        _ => return None,
    };
    (1..=60).contains(&n).then_some(n)
}

/// The output of a job: deterministic from the model and input, but for the
/// file URLs, which carry the request id as fal's do.
fn outputs(base: &str, model: &str, id: &str, input: &Value) -> (Value, Vec<FalFile>, f64) {
    let hash = fnv(model.as_bytes(), input.to_string().as_bytes());
    // fal echoes a seed it was given.
    let seed = input.get("seed").and_then(Value::as_u64).unwrap_or(hash >> 32);
    let inference_time = 0.5 + (hash % 2000) as f64 / 1000.0;
    let size = 4096 + (hash % 4096) as usize;
    let file = |name: String, content_type| {
        let url = format!("{base}/files/{name}");
        (
            json!({"url": url, "content_type": content_type, "file_name": name, "file_size": size}),
            FalFile { name, content_type, size },
        )
    };
    match Media::of(model) {
        Media::Video => {
            let (video, f) = file(format!("{id}.mp4"), "video/mp4");
            (json!({"video": video, "seed": seed}), vec![f], inference_time)
        }
        Media::Audio => {
            let (audio, f) = file(format!("{id}.wav"), "audio/wav");
            let duration = input.get("seconds_total").and_then(Value::as_f64).unwrap_or(10.0);
            (json!({"audio_file": audio, "duration": duration}), vec![f], inference_time)
        }
        Media::Image => {
            let n = input.get("num_images").and_then(Value::as_u64).unwrap_or(1);
            // fal's `output_format`: `jpeg` by default.
            let (ext, content_type) = match input.get("output_format").and_then(Value::as_str) {
                Some("png") => ("png", "image/png"),
                _ => ("jpg", "image/jpeg"),
            };
            let mut images = Vec::new();
            let mut files = Vec::new();
            for i in 0..n {
                let name = format!("{id}-{i}.{ext}");
                images.push(json!({"url": format!("{base}/files/{name}"), "width": 1024,
                    "height": 768, "content_type": content_type}));
                files.push(FalFile { name, content_type, size });
            }
            let output = json!({"images": images, "seed": seed,
                "has_nsfw_concepts": vec![false; files.len()], "prompt": input.get("prompt"),
                "timings": {"inference": inference_time}});
            (output, files, inference_time)
        }
    }
}

/// FNV-1a over both parts: a stable hash, unlike std's seeded one.
fn fnv(a: &[u8], b: &[u8]) -> u64 {
    a.iter().chain(b).fold(0xcbf2_9ce4_8422_2325, |h, byte| {
        (h ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64's finaliser: spreads a counter and a time over all bits.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Now as fal's log timestamps are written (`2025-01-31T12:00:00.123456`, UTC).
fn timestamp() -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let (days, secs) = ((now.as_secs() / 86_400) as i64, now.as_secs() % 86_400);
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
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:06}", now.subsec_micros())
}

#[cfg(test)]
#[path = "fal_tests.rs"]
mod tests;
