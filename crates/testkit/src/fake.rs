//! The fake upstream server: one axum app per [`FakeUpstream`], on
//! `127.0.0.1:0`, answering from a FIFO script.

use std::collections::VecDeque;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use axum::serve::ListenerExt;
use bytes::Bytes;
use serde_json::Value;
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, watch};

use crate::Vendor;
use crate::bedrock::{self, BedrockAuth};
use crate::canned;
use crate::script::{Reply, ReplyBody};
use crate::validate::flavour::{self, Flavour};
use crate::{azure, vertex};

/// One request as the fake received it.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string, if any (`alt=sse`).
    pub query: Option<String>,
    /// All headers in arrival order; names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` if it is not JSON.
    pub body: Value,
    /// The body bytes as received.
    pub raw: Bytes,
    /// The HTTP version it came in (`HTTP/1.1`, `HTTP/2.0`).
    pub version: String,
}

impl Received {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The model ID of a Bedrock route, decoded (`…-v1%3A0` in the path is
    /// `…-v1:0` here); `None` for any other path.
    pub fn bedrock_model(&self) -> Option<String> {
        bedrock::route(&self.path)
            .or_else(|| bedrock::invoke::route(&self.path))
            .map(|(model, _)| model)
    }
}

/// A running fake upstream. Cheap to clone; the server stops when the last
/// clone is dropped (in-flight [`Reply::hang`]s end then too).
#[derive(Debug, Clone)]
pub struct FakeUpstream {
    handle: Arc<Handle>,
}

#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
    addr: SocketAddr,
    /// Served over TLS ([`FakeUpstream::start_tls`]).
    tls: bool,
    /// Dropping it tells the server task and any hanging handlers to stop.
    _shutdown: watch::Sender<()>,
}

#[derive(Debug)]
struct Shared {
    vendor: Vendor,
    /// What a Bedrock fake accepts (unused by the other vendors).
    bedrock: BedrockAuth,
    /// A Vertex AI fake ([`FakeUpstream::start_vertex`]): the tokens its
    /// `/token` granted, and its own `/token` URL (the JWTs' audience).
    vertex: Option<(Mutex<vertex::Tokens>, String)>,
    /// An Azure OpenAI fake ([`FakeUpstream::start_azure`]): the Entra tokens
    /// it granted.
    azure: Option<Mutex<azure::Tokens>>,
    /// An OpenAI or Anthropic fake's own batch API, the Vertex Gemini fake's
    /// batch prediction and Cloud Storage, or the Bedrock fake's batch
    /// inference and S3 (`batch_api.rs`); `None` for the other vendors and
    /// clouds' fakes.
    batches: Option<Mutex<batch_api::Batches>>,
    state: Mutex<ScriptState>,
    arrived: Notify,
    in_flight: AtomicUsize,
    /// The most requests in flight at once since the start.
    peak: AtomicUsize,
    idle: Notify,
    shutdown: watch::Receiver<()>,
    /// [`FakeUpstream::hold_streams`]: streamed bodies stop after this many
    /// frames until it is `None` again.
    hold: watch::Sender<Option<usize>>,
}

/// Picks the reply for a request the script does not cover
/// ([`FakeUpstream::set_chooser`]): its arrival number (from 0, unrouted
/// requests counted) and the request.
pub type Chooser = Arc<dyn Fn(usize, &Received) -> Reply + Send + Sync>;

/// A [`Chooser`] that `ScriptState`'s `Debug` can print.
struct Choose(Chooser);

impl std::fmt::Debug for Choose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Choose(..)")
    }
}

#[derive(Debug)]
struct ScriptState {
    script: VecDeque<Reply>,
    default: Reply,
    /// Replaces `default` when set.
    chooser: Option<Choose>,
    received: Vec<Received>,
    /// Requests arrived, recorded or not.
    count: usize,
    recording: bool,
    /// An OpenAI fake's vendor rules besides OpenAI's ([`FakeUpstream::set_flavour`]).
    flavour: Option<Flavour>,
    /// A Vertex Claude fake's flags and fields ([`FakeUpstream::set_vertex_claude`]).
    vertex_claude: vertex::ClaudeRules,
    /// What a Bedrock fake's InvokeModel takes of Claude's flags and fields
    /// ([`FakeUpstream::set_bedrock_claude`]).
    bedrock_claude: vertex::ClaudeRules,
    /// What its model list holds ([`FakeUpstream::set_models`]).
    models: Vec<models::FakeModel>,
}

/// A lock that survives a test thread's panic while it was held.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ScriptState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a request; for a routed one, also takes its reply (atomically,
    /// so the n-th routed request gets the n-th scripted reply).
    fn record(&self, received: &Received, take_reply: bool) -> Option<Reply> {
        let reply = {
            let mut st = self.lock();
            st.count += 1;
            if st.recording {
                st.received.push(received.clone());
            }
            let n = st.count - 1;
            take_reply.then(|| match st.script.pop_front() {
                Some(reply) => reply,
                None => match &st.chooser {
                    Some(Choose(choose)) => choose(n, received),
                    None => st.default.clone(),
                },
            })
        };
        self.arrived.notify_waiters();
        reply
    }

    async fn until_shutdown(&self) {
        let mut rx = self.shutdown.clone();
        // Only ever errors: nothing is sent, the sender is just dropped.
        let _ = rx.changed().await;
    }
}

/// Marks a request a batch runs inside the fake (`run` in `batch_api.rs`):
/// its credentials were checked when its batch was created, so [`handle`]
/// does not check them again. Bedrock needs it: the creation's SigV4
/// signature covers the creation's own path and body, never a record's
/// InvokeModel. A request extension, so only this process can set it: no
/// header or body a caller sends over HTTP can stand for it.
#[derive(Debug, Clone, Copy)]
struct BatchInternal;

/// Counts a request as in flight until its response body is done or dropped.
struct InFlight(Arc<Shared>);

impl InFlight {
    fn new(shared: &Arc<Shared>) -> InFlight {
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.peak.fetch_max(now, Ordering::SeqCst);
        InFlight(Arc::clone(shared))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.idle.notify_waiters();
    }
}

impl FakeUpstream {
    /// Binds `127.0.0.1:0` and serves `vendor`'s routes in a tokio task. A
    /// Bedrock fake accepts the default credentials ([`BedrockAuth::default`]).
    pub async fn start(vendor: Vendor) -> io::Result<FakeUpstream> {
        FakeUpstream::start_with(vendor, BedrockAuth::default()).await
    }

    /// A [`Vendor::Bedrock`] fake accepting exactly `auth`'s credentials. It
    /// also serves Bedrock's batch inference and the S3 it reads and writes
    /// (`batch_api_bedrock.rs`; point the S3 and control-plane endpoints at
    /// [`base_url`](Self::base_url)), S3 signed for service `s3`.
    pub async fn start_bedrock(auth: BedrockAuth) -> io::Result<FakeUpstream> {
        FakeUpstream::start_with(Vendor::Bedrock, auth).await
    }

    /// A fake of `vendor`'s models on Vertex AI (Anthropic: Claude's
    /// `rawPredict`; Gemini: `generateContent`; OpenAi: the Model-as-a-Service
    /// Chat Completions endpoint), under `/v1/projects/{PROJECT}/locations/…`,
    /// with the Google token endpoint its service account names at `/token`
    /// ([`vertex::service_account_json`]). Every Vertex request must carry a
    /// token it granted, unexpired. A Gemini one also serves Vertex AI's
    /// batch prediction and the Cloud Storage it reads and writes
    /// (`batch_api_vertex.rs`; point a storage endpoint at
    /// [`base_url`](Self::base_url)).
    pub async fn start_vertex(vendor: Vendor) -> io::Result<FakeUpstream> {
        FakeUpstream::start_inner(vendor, BedrockAuth::default(), Cloud::Vertex).await
    }

    /// A fake Azure OpenAI resource (Chat Completions on its deployments and
    /// on the v1 API, in Azure's shape), with the Microsoft Entra token
    /// endpoint of its tenant at [`azure::token_path`]. Every request must
    /// carry its key in `api-key` ([`azure::API_KEY`]) or a token it granted,
    /// unexpired.
    pub async fn start_azure() -> io::Result<FakeUpstream> {
        FakeUpstream::start_inner(Vendor::OpenAi, BedrockAuth::default(), Cloud::Azure).await
    }

    /// The access tokens a Vertex or Azure fake has granted.
    pub fn tokens_granted(&self) -> usize {
        let shared = &self.handle.shared;
        shared.vertex.as_ref().map_or(0, |(tokens, _)| lock(tokens).count())
            + shared.azure.as_ref().map_or(0, |tokens| lock(tokens).count())
    }

    /// `vendor`'s fake served over TLS, as a real provider's API is: a
    /// certificate for `127.0.0.1` and `localhost` issued by the test CA
    /// ([`crate::tls::CA_PEM`]), HTTP/2 and HTTP/1.1 offered by ALPN
    /// ([`Received::version`] says which a request came in).
    /// [`base_url`](Self::base_url) is `https://`.
    pub async fn start_tls(vendor: Vendor) -> io::Result<FakeUpstream> {
        FakeUpstream::start_served(vendor, BedrockAuth::default(), Cloud::None, true).await
    }

    async fn start_with(vendor: Vendor, bedrock: BedrockAuth) -> io::Result<FakeUpstream> {
        FakeUpstream::start_inner(vendor, bedrock, Cloud::None).await
    }

    async fn start_inner(
        vendor: Vendor,
        bedrock: BedrockAuth,
        cloud: Cloud,
    ) -> io::Result<FakeUpstream> {
        FakeUpstream::start_served(vendor, bedrock, cloud, false).await
    }

    async fn start_served(
        vendor: Vendor,
        bedrock: BedrockAuth,
        cloud: Cloud,
        tls: bool,
    ) -> io::Result<FakeUpstream> {
        let vertex = cloud == Cloud::Vertex;
        let listener = listen_wide((Ipv4Addr::LOCALHOST, 0).into())?;
        let addr = listener.local_addr()?;
        let (tx, rx) = watch::channel(());
        let batched = match cloud {
            Cloud::None => matches!(vendor, Vendor::OpenAi | Vendor::Anthropic | Vendor::Bedrock),
            Cloud::Vertex => vendor == Vendor::Gemini,
            Cloud::Azure => false,
        };
        let scheme = if tls { "https" } else { "http" };
        let shared = Arc::new(Shared {
            vendor,
            bedrock,
            vertex: vertex.then(|| (Mutex::default(), format!("http://{addr}/token"))),
            azure: (cloud == Cloud::Azure).then(Mutex::default),
            batches: batched
                .then(|| Mutex::new(batch_api::Batches::new(format!("{scheme}://{addr}")))),
            state: Mutex::new(ScriptState {
                script: VecDeque::new(),
                default: Reply::auto(),
                chooser: None,
                received: Vec::new(),
                count: 0,
                recording: true,
                flavour: None,
                vertex_claude: vertex::ClaudeRules::default(),
                bedrock_claude: bedrock::invoke::default_rules(),
                models: vec![models::FakeModel::new(canned::DEFAULT_MODEL)],
            }),
            arrived: Notify::new(),
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            idle: Notify::new(),
            shutdown: rx.clone(),
            hold: watch::Sender::new(None),
        });
        let app = Router::new().fallback(dispatch).with_state(Arc::clone(&shared));
        if tls {
            crate::tls::serve(listener, app, rx)?;
            let handle = Handle { shared, addr, tls, _shutdown: tx };
            return Ok(FakeUpstream { handle: Arc::new(handle) });
        }
        let listener = listener.tap_io(|s| {
            let _ = s.set_nodelay(true);
        });
        let mut stop = rx;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stop.changed().await;
                })
                .await;
        });
        Ok(FakeUpstream { handle: Arc::new(Handle { shared, addr, tls, _shutdown: tx }) })
    }

    /// `http://127.0.0.1:PORT` (`https://` for a TLS fake), no path suffix.
    pub fn base_url(&self) -> String {
        let scheme = if self.handle.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.handle.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.handle.addr
    }

    /// The vendor this fake speaks.
    pub fn vendor(&self) -> Vendor {
        self.handle.shared.vendor
    }

    /// Appends to the script: the next routed request not yet answered from it
    /// gets `reply`.
    pub fn push(&self, reply: Reply) {
        self.handle.shared.lock().script.push_back(reply);
    }

    /// Appends `n` copies of `reply`.
    pub fn push_n(&self, n: usize, reply: Reply) {
        let mut st = self.handle.shared.lock();
        st.script.extend(std::iter::repeat_n(reply, n));
    }

    /// The reply used when the script is empty (initially [`Reply::auto`]).
    pub fn set_default(&self, reply: Reply) {
        self.handle.shared.lock().default = reply;
    }

    /// Replies chosen per request when the script is empty, in place of the
    /// default: a soak's mix of faults, drawn from the arrival number so a run
    /// can be repeated. It runs under the fake's lock: keep it quick.
    pub fn set_chooser(&self, choose: impl Fn(usize, &Received) -> Reply + Send + Sync + 'static) {
        self.handle.shared.lock().chooser = Some(Choose(Arc::new(choose)));
    }

    /// Holds streamed bodies mid-way: from now until
    /// [`release_streams`](Self::release_streams), a streamed body (SSE, binary
    /// frames, a body cut by `break_after`) sends at most its first `after`
    /// frames and waits there, its connection open. Applies to bodies already
    /// streaming too. A held body ends when the fake is dropped.
    pub fn hold_streams(&self, after: usize) {
        self.handle.shared.hold.send_replace(Some(after));
    }

    /// Lets every held body go on, and later ones stream unheld.
    pub fn release_streams(&self) {
        self.handle.shared.hold.send_replace(None);
    }

    /// Drops the unused part of the script.
    pub fn clear_script(&self) {
        self.handle.shared.lock().script.clear();
    }

    /// How many scripted replies are still waiting for a request.
    pub fn script_len(&self) -> usize {
        self.handle.shared.lock().script.len()
    }

    /// Everything received so far, in arrival order (unrouted requests too).
    pub fn received(&self) -> Vec<Received> {
        self.handle.shared.lock().received.clone()
    }

    /// How many requests have arrived (unrouted ones too; counted even while
    /// recording is off).
    pub fn request_count(&self) -> usize {
        self.handle.shared.lock().count
    }

    /// Whether to keep each request for [`received`](Self::received) (on by
    /// default). Turn it off for long benchmark runs, so memory stays flat;
    /// [`request_count`](Self::request_count) still counts.
    pub fn set_recording(&self, on: bool) {
        self.handle.shared.lock().recording = on;
    }

    /// An OpenAI fake that also refuses what `flavour`'s vendor refuses (its
    /// tool-id form, fields it does not define, …); `None`: OpenAI's rules only.
    pub fn set_flavour(&self, flavour: Option<Flavour>) {
        self.handle.shared.lock().flavour = flavour;
    }

    /// What a Vertex Claude fake takes of `anthropic-beta` flags and body
    /// fields (by default [`vertex::ClaudeRules::default`]).
    pub fn set_vertex_claude(&self, rules: vertex::ClaudeRules) {
        self.handle.shared.lock().vertex_claude = rules;
    }

    /// What a Bedrock fake's InvokeModel takes of Claude's `anthropic_beta`
    /// flags and body fields (by default [`bedrock::invoke::default_rules`]).
    pub fn set_bedrock_claude(&self, rules: vertex::ClaudeRules) {
        self.handle.shared.lock().bedrock_claude = rules;
    }

    /// What the vendor's model list holds from now on, in this order (at
    /// first [`canned::DEFAULT_MODEL`] alone). See `fake_models.rs` for the
    /// routes, their credentials and pages.
    pub fn set_models(&self, models: impl IntoIterator<Item = models::FakeModel>) {
        self.handle.shared.lock().models = models.into_iter().collect();
    }

    /// Forgets the requests recorded so far (the count stays).
    pub fn clear_received(&self) {
        self.handle.shared.lock().received.clear();
    }

    /// Resolves once at least `n` requests have arrived
    /// ([`request_count`](Self::request_count)), with all recorded so far.
    /// Never times out by itself: wrap it in `tokio::time::timeout`.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<Received> {
        let shared = &self.handle.shared;
        loop {
            let mut notified = pin!(shared.arrived.notified());
            notified.as_mut().enable();
            {
                let st = shared.lock();
                if st.count >= n {
                    return st.received.clone();
                }
            }
            notified.await;
        }
    }

    /// Requests whose handling has not finished: still waiting out a delay,
    /// hanging, or streaming a body. Drops to zero when clients go away, so a
    /// test can check that the gateway cancels upstream calls.
    pub fn in_flight(&self) -> usize {
        self.handle.shared.in_flight.load(Ordering::SeqCst)
    }

    /// The most requests that were in flight at once (a limit on concurrency,
    /// measured where it matters).
    pub fn peak_in_flight(&self) -> usize {
        self.handle.shared.peak.load(Ordering::SeqCst)
    }

    /// Resolves once [`in_flight`](Self::in_flight) is zero. Wrap it in a
    /// timeout.
    pub async fn wait_idle(&self) {
        let shared = &self.handle.shared;
        loop {
            let mut notified = pin!(shared.idle.notified());
            notified.as_mut().enable();
            if shared.in_flight.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// Binds `addr` with a listen backlog of 4096 (the kernel caps it at
/// `net.core.somaxconn`) rather than tokio's 128: a burst of a thousand
/// connects, a soak's slow streams or a gateway opening its pool, would
/// otherwise overflow the accept queue, and each dropped handshake waits out
/// the client's one-second SYN retransmission.
pub(crate) fn listen_wide(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Which cloud's fake, if any: its own routes and authentication.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cloud {
    None,
    Vertex,
    Azure,
}

// Routing: `fake_route.rs`.
#[path = "fake_route.rs"]
mod route;
use route::{Route, azure_call, route};

// Model lists: `fake_models.rs`.
#[path = "fake_reply.rs"]
mod reply;
use reply::{Prepared, prepare, respond};

#[path = "fake_models.rs"]
pub(crate) mod models;

// Embeddings calls: `fake_embed.rs`.
#[path = "fake_embed.rs"]
mod embed;

// Image generation calls: `fake_image.rs`.
#[path = "fake_image.rs"]
mod image;

// The vendors' own batch APIs: `batch_api.rs`.
#[path = "batch_api.rs"]
mod batch_api;

// Vertex Gemini's `labels`: `fake_labels.rs`.
#[path = "fake_labels.rs"]
mod labels;

// ---------------------------------------------------------------------------
// Serving

/// A request on a batch route is answered by `batch_api.rs`, any other by
/// [`handle`]. A batch's requests come back to [`handle`] as requests of their
/// own, so each is checked, scripted and recorded as a direct call would be.
async fn dispatch(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    match batch_api::route(&shared, req.method(), req.uri().path()) {
        Some(route) => batch_api::serve(shared, route, req).await,
        None => handle(State(shared), req).await,
    }
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let guard = InFlight::new(&shared);
    let (parts, body) = req.into_parts();
    // A body that fails to arrive is recorded as empty.
    let raw = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
    let received = receive(&parts, raw);
    let vendor = shared.vendor;
    if let Some((tokens, token_url)) = &shared.vertex {
        if received.path == "/token" && parts.method == Method::POST {
            shared.record(&received, false);
            let (status, body) = lock(tokens).grant(&received.raw, token_url);
            return plain(status, "application/json", body.to_string());
        }
        if !lock(tokens).authorized(received.header("authorization")) {
            shared.record(&received, false);
            let message =
                "Request had invalid authentication credentials. Expected OAuth 2 access token.";
            return plain(401, "application/json", vertex::error_body(401, message).to_string());
        }
    }
    // A model list, where the vendor or cloud has one.
    if let Some(response) = models::answer(&shared, &parts.method, &received) {
        return response;
    }
    let routed = match &shared.azure {
        Some(tokens) => match azure_call(tokens, &shared, &parts.method, &received) {
            Ok(call) => call,
            Err(response) => return *response,
        },
        None => route(vendor, shared.vertex.is_some(), &parts.method, &received),
    };
    let call = match routed {
        Route::Call(call) => call,
        unrouted => {
            let (status, what) = match unrouted {
                Route::MethodNotAllowed => (405, "method not allowed"),
                _ => (404, "no such route"),
            };
            let message =
                format!("fake {vendor:?} upstream: {what}: {} {}", received.method, received.path);
            shared.record(&received, false);
            return vendor_error(vendor, status, None, &message);
        }
    };
    // A batch's record was authenticated with its batch ([`BatchInternal`]).
    if vendor == Vendor::Bedrock && parts.extensions.get::<BatchInternal>().is_none() {
        let target = match &received.query {
            Some(q) => format!("{}?{q}", received.path),
            None => received.path.clone(),
        };
        let authenticated = bedrock::authenticate(
            &shared.bedrock,
            &received.method,
            &target,
            &received.headers,
            &received.raw,
            SystemTime::now(),
        );
        if let Err(refusal) = authenticated {
            shared.record(&received, false);
            return vendor_error(
                vendor,
                refusal.status,
                Some(refusal.error_type),
                &refusal.message,
            );
        }
    }
    // Embeddings: their own rules and answers (`fake_embed.rs`).
    if let Some(api) = call.embed {
        return embed::serve(&shared, api, &call, &received, guard).await;
    }
    // Image generation: its own rules and answers (`fake_image.rs`).
    if let Some(api) = call.image {
        return image::serve(&shared, api, &call, &received, guard).await;
    }
    // Claude on Vertex: its own fields, then Anthropic's rules on the rest.
    let vertex_claude = shared.vertex.is_some() && vendor == Vendor::Anthropic;
    let stripped = if vertex_claude {
        let rules = shared.lock().vertex_claude.clone();
        let beta = received.header("anthropic-beta");
        match vertex::check_claude(&rules, beta, &received.body, call.count)
            .and_then(|()| vertex::claude_body(&received.body, call.count))
        {
            Ok(body) => Some(body),
            Err(message) => {
                shared.record(&received, false);
                return vendor_error(vendor, 400, None, &message);
            }
        }
    } else if call.invoke {
        // Claude through InvokeModel: Bedrock's fields, then Anthropic's rules.
        let rules = shared.lock().bedrock_claude.clone();
        match bedrock::invoke::claude_body(&rules, &received.body) {
            Ok(body) => Some(body),
            Err(message) => {
                shared.record(&received, false);
                return vendor_error(vendor, 400, None, &message);
            }
        }
    } else if shared.vertex.is_some() && vendor == Vendor::Gemini {
        // Gemini on Vertex: its `labels` and own image options checked, then
        // Gemini's rules on the rest.
        match labels::strip(&received.body).and_then(|stripped| {
            let body = stripped.as_ref().unwrap_or(&received.body);
            Ok(crate::validate::generation::strip_vertex(body)?.or(stripped))
        }) {
            Ok(body) => body,
            Err(message) => {
                shared.record(&received, false);
                return vendor_error(vendor, 400, None, &message);
            }
        }
    } else {
        None
    };
    let validated = stripped.as_ref().unwrap_or(&received.body);
    // The rules of the body's own API: Claude's, through InvokeModel.
    let rules_of = if call.invoke { Vendor::Anthropic } else { vendor };
    // A body the real API refuses is refused here too, before the script is read:
    // the scripted reply stays for the next request.
    let checked = if call.count && call.responses {
        crate::responses::check_count(&received.body)
    } else if call.count {
        crate::validate::count::check(vendor, &call.model, validated)
    } else if call.responses {
        crate::responses::check(&received.body)
    } else {
        crate::validate::check(rules_of, &call.model, validated)
    };
    let flavour = shared.lock().flavour;
    // OpenAI's reasoning models' own rules, on its two APIs.
    let checked = checked.and_then(|()| match (rules_of, flavour, &received.body) {
        (Vendor::OpenAi, None, body) if !call.count => {
            let model = body.get("model").and_then(Value::as_str).unwrap_or(&call.model);
            crate::validate::openai_reasoning(model, body, !call.responses)
        }
        _ => Ok(()),
    });
    if let Err(message) = checked {
        shared.record(&received, false);
        return vendor_error(vendor, 400, None, &message);
    }
    let flavour = flavour.filter(|_| vendor == Vendor::OpenAi && !call.count && !call.responses);
    if let Some(Err((status, message))) = flavour.map(|f| flavour::check(f, &received.body)) {
        shared.record(&received, false);
        return vendor_error(vendor, status, None, &message);
    }
    let Some(reply) = shared.record(&received, true) else {
        return plain(500, "text/plain", "fake upstream: no reply".to_owned());
    };
    if !reply.first_byte_delay.is_zero() {
        tokio::select! {
            () = tokio::time::sleep(reply.first_byte_delay) => {}
            () = shared.until_shutdown() => return plain(503, "text/plain", "fake upstream stopped".to_owned()),
        }
    }
    let prepared = match prepare(vendor, &reply, &call, &received.body) {
        // Azure's answers carry its content filter's results.
        Some(p)
            if shared.azure.is_some()
                && !call.responses
                && matches!(reply.body, ReplyBody::Auto) =>
        {
            Prepared {
                frames: if p.streamed {
                    azure::dress_stream(&p.frames)
                } else {
                    p.frames.iter().map(|f| azure::dress_whole(f)).collect()
                },
                ..p
            }
        }
        Some(p) => p,
        None => {
            // Hang: wait for the fake to be dropped; if the client goes away
            // first, hyper drops this future.
            shared.until_shutdown().await;
            return plain(503, "text/plain", "fake upstream stopped".to_owned());
        }
    };
    respond(&reply, prepared, guard)
}

/// A request as [`Received`] records it, its body read in full.
fn receive(parts: &Parts, raw: Bytes) -> Received {
    Received {
        method: parts.method.as_str().to_owned(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
        raw,
        version: format!("{:?}", parts.version),
    }
}

/// Bedrock's error-type header (lowercase, as `HeaderName` wants it).
const ERROR_TYPE: &str = "x-amzn-errortype";

/// An error the fake itself answers (no route, a refused body or credentials),
/// in the vendor's shape; Bedrock's type (`error_type`, else the status's) goes
/// in `x-amzn-ErrorType`.
fn vendor_error(
    vendor: Vendor,
    status: u16,
    error_type: Option<&'static str>,
    message: &str,
) -> Response {
    let body = canned::error_body(vendor, status, message).to_string();
    let mut response = plain(status, "application/json", body);
    if vendor == Vendor::Bedrock {
        let kind = error_type.unwrap_or_else(|| match status {
            // What AWS answers for a path no operation has.
            404 => "UnknownOperationException",
            _ => bedrock::error_type(status),
        });
        response
            .headers_mut()
            .insert(HeaderName::from_static(ERROR_TYPE), HeaderValue::from_static(kind));
    }
    response
}

fn plain(status: u16, content_type: &'static str, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
