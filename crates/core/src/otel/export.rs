//! The exporter: a background task fed through a bounded queue. A request
//! hands over its finished record and trace without waiting; when the queue is
//! full the request's spans are dropped and counted, never waited for. The
//! task builds the spans, sends them in batches (when a batch fills, or
//! `flush_ms` after the first span waiting), each export within `timeout`,
//! retried with backoff where the collector says it may be (HTTP 429, 502,
//! 503, 504; gRPC UNAVAILABLE, RESOURCE_EXHAUSTED and the like). On shutdown
//! it exports what is queued, then ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::spans::{self, Span, Value};
use super::{Protocol, RequestTrace, TraceConfig, proto};
use crate::record::RequestRecord;

/// The instrumentation scope's name.
const SCOPE: &str = "switchyard";

/// The gRPC method an OTLP/gRPC export calls.
pub(crate) const GRPC_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Tries of one batch (the first and the retries).
const TRIES: u32 = 5;

/// The first retry's wait; doubled each time, at most [`MAX_BACKOFF`].
const BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A finished request for export.
pub(crate) struct Finished {
    pub record: RequestRecord,
    pub trace: RequestTrace,
}

/// The handle requests hand their finished traces to (cheap to clone; kept on
/// the [`Runtime`](crate::runtime::Runtime)).
#[derive(Clone)]
pub struct Traces {
    tx: mpsc::Sender<Finished>,
    dropped: Arc<AtomicU64>,
    config: Arc<TraceConfig>,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces")
            .field("host", &self.config.endpoint.host_str())
            .field("protocol", &self.config.protocol.as_str())
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Traces {
    /// Requests whose spans were dropped because the queue was full (or the
    /// exporter had stopped).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// A handle whose queue (of `queue` requests) the test reads.
    #[cfg(test)]
    pub(crate) fn for_tests(
        config: TraceConfig,
        queue: usize,
    ) -> (Traces, mpsc::Receiver<Finished>) {
        let (tx, rx) = mpsc::channel(queue);
        (Traces { tx, dropped: Arc::default(), config: Arc::new(config) }, rx)
    }

    /// Queue a finished request; never waits.
    pub(crate) fn submit(&self, finished: Finished) {
        if self.tx.try_send(finished).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed);
            // The first, then one in a thousand: a collector that is down
            // should not fill the log too.
            if n.is_multiple_of(1000) {
                tracing::warn!(
                    dropped = n + 1,
                    "trace export queue full: a request's spans were dropped \
                     (telemetry.queue_size; is the collector reachable?)"
                );
            }
        }
    }
}

/// The running exporter: [`ExportTask::shutdown`] exports what is queued and
/// waits for it.
#[derive(Debug)]
pub struct ExportTask {
    stop: oneshot::Sender<()>,
    handle: tokio::task::JoinHandle<()>,
}

impl ExportTask {
    /// Export what is queued, then end (bound it with a timeout: a collector
    /// that does not answer is retried).
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        if let Err(e) = self.handle.await {
            tracing::error!("trace exporter: {e}");
        }
    }
}

/// Start the exporter for `config` (inside a tokio runtime): the handle for
/// the [`Runtime`](crate::runtime::Runtime), and the task to shut down.
pub fn start(config: &TraceConfig) -> Result<(Traces, ExportTask), String> {
    let tls = crate::client::tls_config(&crate::client::ClientOptions::default())?;
    let mut builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(config.timeout)
        .connect_timeout(config.timeout)
        // A collector is not a redirector; credentials stay with it.
        .redirect(reqwest::redirect::Policy::none());
    if config.protocol == Protocol::Grpc {
        // gRPC is HTTP/2 only, cleartext (h2c) included.
        builder = builder.http2_prior_knowledge();
    }
    let client = builder.build().map_err(|e| format!("trace exporter client: {e}"))?;
    let (tx, rx) = mpsc::channel(config.queue.max(1));
    let (stop, stopped) = oneshot::channel();
    let config = Arc::new(config.clone());
    let exporter = Exporter { client, config: Arc::clone(&config) };
    let handle = tokio::spawn(exporter.run(rx, stopped));
    let traces = Traces { tx, dropped: Arc::new(AtomicU64::new(0)), config };
    Ok((traces, ExportTask { stop, handle }))
}

struct Exporter {
    client: reqwest::Client,
    config: Arc<TraceConfig>,
}

/// Why an export failed, and whether trying again may help.
#[derive(Debug)]
struct Failed {
    retry: bool,
    message: String,
}

impl Exporter {
    async fn run(self, mut rx: mpsc::Receiver<Finished>, mut stop: oneshot::Receiver<()>) {
        let batch = self.config.batch.max(1);
        let mut pending: Vec<Span> = Vec::new();
        let mut due: Option<tokio::time::Instant> = None;
        loop {
            let wait = async {
                match due {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                _ = &mut stop => break,
                got = rx.recv() => match got {
                    Some(f) => {
                        pending.extend(spans::build(&f.record, &f.trace));
                        due.get_or_insert_with(|| tokio::time::Instant::now() + self.config.flush);
                        while pending.len() >= batch {
                            let rest = pending.split_off(batch);
                            self.send(std::mem::replace(&mut pending, rest)).await;
                        }
                        if pending.is_empty() {
                            due = None;
                        }
                    }
                    None => break,
                },
                () = wait => {
                    self.send(std::mem::take(&mut pending)).await;
                    due = None;
                }
            }
        }
        // Shutdown: what is queued goes too.
        rx.close();
        while let Some(f) = rx.recv().await {
            pending.extend(spans::build(&f.record, &f.trace));
        }
        while !pending.is_empty() {
            let rest = pending.split_off(batch.min(pending.len()));
            self.send(std::mem::replace(&mut pending, rest)).await;
        }
    }

    /// Export one batch, retrying what may succeed later; a batch that still
    /// fails is dropped (and logged: its size, never the headers).
    async fn send(&self, spans: Vec<Span>) {
        if spans.is_empty() {
            return;
        }
        let resource: Vec<(&str, Value)> = vec![
            ("service.name", self.config.service_name.clone().into()),
            ("telemetry.sdk.name", "switchyard".into()),
            ("telemetry.sdk.language", "rust".into()),
            ("telemetry.sdk.version", env!("CARGO_PKG_VERSION").into()),
        ];
        let body = Bytes::from(proto::export_request(
            &resource,
            (SCOPE, env!("CARGO_PKG_VERSION")),
            &spans,
        ));
        let mut wait = BACKOFF;
        for n in 1..=TRIES {
            match self.export(body.clone()).await {
                Ok(()) => return,
                Err(f) if f.retry && n < TRIES => {
                    tracing::debug!(try_ = n, "trace export failed, retrying: {}", f.message);
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
                Err(f) => {
                    tracing::warn!(
                        spans = spans.len(),
                        host = self.config.endpoint.host_str().unwrap_or(""),
                        "trace export failed, spans dropped: {}",
                        f.message
                    );
                    return;
                }
            }
        }
    }

    async fn export(&self, body: Bytes) -> Result<(), Failed> {
        match self.config.protocol {
            Protocol::HttpProtobuf => self.export_http(body).await,
            Protocol::Grpc => self.export_grpc(body).await,
        }
    }

    fn request(&self, url: reqwest::Url) -> reqwest::RequestBuilder {
        let mut req = self.client.post(url);
        for (name, value) in &self.config.headers {
            req = req.header(name.as_str(), value.expose());
        }
        req
    }

    async fn export_http(&self, body: Bytes) -> Result<(), Failed> {
        let resp = self
            .request(self.config.endpoint.clone())
            .header("content-type", "application/x-protobuf")
            .body(body)
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status().as_u16();
        let answer = resp.bytes().await.map_err(transport)?;
        if (200..300).contains(&status) {
            partial(&answer);
            return Ok(());
        }
        Err(Failed {
            retry: matches!(status, 429 | 502 | 503 | 504),
            message: format!("HTTP {status}"),
        })
    }

    async fn export_grpc(&self, body: Bytes) -> Result<(), Failed> {
        let mut url = self.config.endpoint.clone();
        let base = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{base}{GRPC_PATH}"));
        let resp = self
            .request(url)
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(proto::grpc_frame(&body))
            .send()
            .await
            .map_err(transport)?;
        let status = resp.status().as_u16();
        if status != 200 {
            // Not a gRPC answer (a proxy's): HTTP's codes, as gRPC maps them.
            return Err(Failed {
                retry: matches!(status, 429 | 502 | 503 | 504),
                message: format!("HTTP {status}"),
            });
        }
        let (head, mut body) = http::Response::<reqwest::Body>::from(resp).into_parts();
        // A Trailers-Only answer carries its status in the headers.
        let mut grpc = grpc_status(&head.headers);
        let mut data = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| {
            http_body::Body::poll_frame(std::pin::Pin::new(&mut body), cx)
        })
        .await
        {
            let frame = frame.map_err(transport)?;
            match frame.into_data() {
                Ok(chunk) => data.extend_from_slice(&chunk),
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        grpc = grpc.or_else(|| grpc_status(&trailers));
                    }
                }
            }
        }
        match grpc {
            Some((0, _)) => {
                // One length-prefixed message: the response.
                if let Some(message) = data.get(5..) {
                    partial(message);
                }
                Ok(())
            }
            Some((code, message)) => Err(Failed {
                // UNAVAILABLE, RESOURCE_EXHAUSTED, CANCELLED, DEADLINE_EXCEEDED,
                // ABORTED, OUT_OF_RANGE, DATA_LOSS: the OTLP spec's retryable codes.
                retry: matches!(code, 1 | 4 | 8 | 10 | 11 | 14 | 15),
                message: format!("grpc-status {code}: {message}"),
            }),
            None => Err(Failed { retry: true, message: "no grpc-status".to_owned() }),
        }
    }
}

fn grpc_status(headers: &http::HeaderMap) -> Option<(u32, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.trim().parse().ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_default();
    Some((code, message))
}

/// A collector that accepted the export but refused some spans says so.
fn partial(answer: &[u8]) {
    if let Some((rejected, message)) = proto::rejected(answer) {
        tracing::warn!(rejected, "the trace collector refused spans: {message}");
    }
}

/// A connection or read failure: worth another try. Without the URL, whose
/// query may carry a key.
fn transport(e: reqwest::Error) -> Failed {
    Failed { retry: true, message: e.without_url().to_string() }
}
