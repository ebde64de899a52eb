//! A fake OpenTelemetry collector: OTLP traces over HTTP (protobuf, `POST
//! /v1/traces`) and gRPC (`TraceService/Export` over cleartext HTTP/2, one
//! length-prefixed message, the status in a `grpc-status` trailer), on
//! `127.0.0.1:0`.
//!
//! It checks what a real collector checks and refuses the rest: the content
//! type, the protobuf itself (wire types, lengths), ids of the right length and
//! not zero (16-byte trace ids, 8-byte span ids), a span's end not before its
//! start. Accepted spans are kept; tests await them ([`FakeCollector::wait_for_spans`]:
//! a notification, never a sleep). Faults can be scripted
//! ([`FakeCollector::fail_next`], [`FakeCollector::hang`]).

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Request, StatusCode, Version};
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

mod decode;

/// The gRPC method of an OTLP trace export.
pub const GRPC_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// An attribute's value as received.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrValue {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
    Array(Vec<AttrValue>),
}

impl AttrValue {
    /// The string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        if let AttrValue::Str(s) = self { Some(s) } else { None }
    }

    /// The integer, if it is one.
    pub fn as_int(&self) -> Option<i64> {
        if let AttrValue::Int(i) = self { Some(*i) } else { None }
    }

    /// The double, if it is one.
    pub fn as_f64(&self) -> Option<f64> {
        if let AttrValue::Double(d) = self { Some(*d) } else { None }
    }
}

/// One span as the collector decoded it (ids in lowercase hex).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CollectedSpan {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub trace_state: String,
    pub name: String,
    /// `SpanKind`: 2 SERVER, 3 CLIENT.
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: BTreeMap<String, AttrValue>,
    /// `StatusCode`: 0 unset, 1 ok, 2 error.
    pub status_code: i32,
    pub status_message: String,
    pub flags: u32,
    /// Its resource's attributes (`service.name`).
    pub resource: BTreeMap<String, AttrValue>,
    /// Its instrumentation scope's name.
    pub scope: String,
    /// `http` or `grpc`: how it arrived.
    pub protocol: &'static str,
}

impl CollectedSpan {
    /// Attribute `key`.
    pub fn attr(&self, key: &str) -> Option<&AttrValue> {
        self.attributes.get(key)
    }

    /// Attribute `key`, a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(AttrValue::as_str)
    }
}

/// One export request as received.
#[derive(Debug, Clone)]
pub struct Export {
    pub protocol: &'static str,
    /// Headers, names lowercase.
    pub headers: Vec<(String, String)>,
    /// Whether it was accepted.
    pub accepted: bool,
}

/// A scripted answer to the next export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// HTTP 503 / gRPC UNAVAILABLE (retryable).
    Unavailable,
    /// HTTP 400 / gRPC INVALID_ARGUMENT (not retryable).
    Invalid,
}

#[derive(Default)]
struct Inner {
    spans: Vec<CollectedSpan>,
    exports: Vec<Export>,
    faults: VecDeque<Fault>,
    hang: bool,
}

struct Shared {
    inner: Mutex<Inner>,
    arrived: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The fake collector; stops when dropped.
pub struct FakeCollector {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _stop: watch::Sender<()>,
}

impl FakeCollector {
    /// Start one on `127.0.0.1:0`, both protocols on the one port.
    pub async fn start() -> io::Result<FakeCollector> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared =
            Arc::new(Shared { inner: Mutex::new(Inner::default()), arrived: Notify::new() });
        let app = Router::new()
            .route("/v1/traces", axum::routing::post(http_export))
            .route(GRPC_PATH, axum::routing::post(grpc_export))
            .with_state(Arc::clone(&shared));
        let (stop, mut stopped) = watch::channel(());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move {
                    let _ = stopped.changed().await;
                })
                .await;
        });
        Ok(FakeCollector { shared, addr, _stop: stop })
    }

    /// The OTLP/HTTP traces URL (`http://127.0.0.1:PORT/v1/traces`).
    pub fn http_endpoint(&self) -> String {
        format!("http://{}/v1/traces", self.addr)
    }

    /// The OTLP/gRPC endpoint (`http://127.0.0.1:PORT`).
    pub fn grpc_endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The spans accepted so far.
    pub fn spans(&self) -> Vec<CollectedSpan> {
        self.shared.lock().spans.clone()
    }

    /// Every export received (refused ones too).
    pub fn exports(&self) -> Vec<Export> {
        self.shared.lock().exports.clone()
    }

    /// Answer the next exports with these faults, in order.
    pub fn fail_next(&self, faults: &[Fault]) {
        self.shared.lock().faults.extend(faults.iter().copied());
    }

    /// Never answer exports (a collector that accepts connections and stalls).
    pub fn hang(&self) {
        self.shared.lock().hang = true;
    }

    /// Wait until at least `n` spans were accepted; all of them. Bound it with
    /// a timeout.
    pub async fn wait_for_spans(&self, n: usize) -> Vec<CollectedSpan> {
        self.wait_until(|i| i.spans.len() >= n).await;
        self.spans()
    }

    /// Wait until at least `n` exports arrived (accepted or not).
    pub async fn wait_for_exports(&self, n: usize) -> Vec<Export> {
        self.wait_until(|i| i.exports.len() >= n).await;
        self.exports()
    }

    async fn wait_until(&self, done: impl Fn(&Inner) -> bool) {
        loop {
            let mut notified = pin!(self.shared.arrived.notified());
            notified.as_mut().enable();
            if done(&self.shared.lock()) {
                return;
            }
            notified.await;
        }
    }
}

/// Decode an `ExportTraceServiceRequest` as this collector does, and check
/// it the same way (for unit tests of an encoder).
pub fn decode_export(message: &[u8]) -> Result<Vec<CollectedSpan>, String> {
    accept(message, "http")
}

fn header_list(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect()
}

/// Decode and check an export's message; the spans, or why it is refused.
fn accept(message: &[u8], protocol: &'static str) -> Result<Vec<CollectedSpan>, String> {
    let mut spans = decode::export_request(message)?;
    for s in &mut spans {
        s.protocol = protocol;
        check_id("trace_id", &s.trace_id, 16)?;
        check_id("span_id", &s.span_id, 8)?;
        if let Some(p) = &s.parent_span_id {
            check_id("parent_span_id", p, 8)?;
        }
        if s.start_ns == 0 || s.end_ns < s.start_ns {
            return Err(format!("span {}: end before start", s.name));
        }
    }
    Ok(spans)
}

fn check_id(field: &str, hex: &str, len: usize) -> Result<(), String> {
    if hex.len() != len * 2 {
        return Err(format!("{field}: {} bytes, expected {len}", hex.len() / 2));
    }
    if hex.bytes().all(|b| b == b'0') {
        return Err(format!("{field}: all zero"));
    }
    Ok(())
}

impl Shared {
    /// The scripted fault for this export, after recording it; `None`: go on.
    /// Waits forever when the collector hangs.
    async fn arrive(&self, protocol: &'static str, headers: &HeaderMap) -> Option<Fault> {
        let (fault, hang) = {
            let mut i = self.lock();
            let fault = i.faults.pop_front();
            i.exports.push(Export { protocol, headers: header_list(headers), accepted: false });
            (fault, i.hang)
        };
        self.arrived.notify_waiters();
        if hang {
            std::future::pending::<()>().await;
        }
        fault
    }

    fn keep(&self, spans: Vec<CollectedSpan>) {
        {
            let mut i = self.lock();
            if let Some(last) = i.exports.last_mut() {
                last.accepted = true;
            }
            i.spans.extend(spans);
        }
        self.arrived.notify_waiters();
    }
}

async fn http_export(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fault = shared.arrive("http", &headers).await;
    let protobuf = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().map(str::trim) == Some("application/x-protobuf"));
    if !protobuf {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "expected application/x-protobuf")
            .into_response();
    }
    match fault {
        Some(Fault::Unavailable) => return StatusCode::SERVICE_UNAVAILABLE.into_response(),
        Some(Fault::Invalid) => return StatusCode::BAD_REQUEST.into_response(),
        None => {}
    }
    match accept(&body, "http") {
        Ok(spans) => {
            shared.keep(spans);
            // An empty ExportTraceServiceResponse: all accepted.
            ([("content-type", "application/x-protobuf")], Bytes::new()).into_response()
        }
        Err(why) => (StatusCode::BAD_REQUEST, why).into_response(),
    }
}

async fn grpc_export(State(shared): State<Arc<Shared>>, req: Request<Body>) -> Response {
    let (head, body) = req.into_parts();
    let fault = shared.arrive("grpc", &head.headers).await;
    if head.version != Version::HTTP_2 {
        return (StatusCode::HTTP_VERSION_NOT_SUPPORTED, "gRPC needs HTTP/2").into_response();
    }
    let grpc_type = head
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "application/grpc" || v.starts_with("application/grpc+"));
    if !grpc_type {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "expected application/grpc").into_response();
    }
    let Ok(bytes) = axum::body::to_bytes(body, 64 << 20).await else {
        return grpc_status(13, "body unreadable");
    };
    match fault {
        Some(Fault::Unavailable) => return grpc_status(14, "unavailable"),
        Some(Fault::Invalid) => return grpc_status(3, "invalid"),
        None => {}
    }
    // One message: a compression flag (0), its length (4 bytes, big-endian), it.
    let message = match bytes.get(..5) {
        Some([0, a, b, c, d]) => {
            let len = u32::from_be_bytes([*a, *b, *c, *d]) as usize;
            match bytes.get(5..) {
                Some(m) if m.len() == len => m,
                _ => return grpc_status(3, "the message's length does not match its prefix"),
            }
        }
        Some(_) => return grpc_status(12, "compressed messages are not accepted here"),
        None => return grpc_status(3, "no message"),
    };
    match accept(message, "grpc") {
        Ok(spans) => {
            shared.keep(spans);
            // An empty ExportTraceServiceResponse, framed; the status in a trailer.
            let mut trailers = HeaderMap::new();
            trailers.insert("grpc-status", HeaderValue::from_static("0"));
            let body = WithTrailers {
                data: Some(Bytes::from_static(&[0, 0, 0, 0, 0])),
                trailers: Some(trailers),
            };
            Response::builder()
                .header("content-type", "application/grpc")
                .body(Body::new(body))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        Err(why) => grpc_status(3, &why),
    }
}

/// A Trailers-Only gRPC answer: the status in the headers, no body.
fn grpc_status(code: u32, message: &str) -> Response {
    let mut r = StatusCode::OK.into_response();
    let h = r.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/grpc"));
    h.insert("grpc-status", HeaderValue::from(code));
    if let Ok(v) =
        HeaderValue::from_str(&message.replace(|c: char| !c.is_ascii_graphic() && c != ' ', "_"))
    {
        h.insert("grpc-message", v);
    }
    r
}

/// A body of one data frame, then trailers.
struct WithTrailers {
    data: Option<Bytes>,
    trailers: Option<HeaderMap>,
}

impl http_body::Body for WithTrailers {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        if let Some(data) = self.data.take() {
            return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
        }
        Poll::Ready(self.trailers.take().map(|t| Ok(http_body::Frame::trailers(t))))
    }
}
