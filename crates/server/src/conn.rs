//! Client connections: the accept loop, the cap on open connections, and each
//! connection's deadlines.
//!
//! `axum::serve` sets no deadline on a connection: one that sends nothing, or a
//! header byte now and then, is kept for ever, and enough of them hold every file
//! descriptor the process has. Here every connection has a deadline at any time:
//!
//! | the connection is | it is closed when |
//! |---|---|
//! | waiting for its first request | `header_read_timeout` after the accept |
//! | receiving a request's headers (HTTP/1) | `header_read_timeout` after the first byte |
//! | serving a request (a stream, a WebSocket) | never by these rules: the pipeline's own timeouts apply |
//! | idle between requests | `idle_timeout` after the last response ended |
//!
//! A deadline counts from a fixed point, so a byte now and then does not extend
//! it. The cap on open connections sits below the process's open-file limit;
//! past it, new connections wait in the listen backlog, and the log says so.
//!
//! Activity is watched from outside hyper, by the socket ([`Io`]: bytes read) and
//! the service ([`Tracked`]: a request begins; its response body is dropped), so
//! the rules hold before hyper knows the protocol (a silent connection never
//! reaches HTTP/1 or HTTP/2), for HTTP/2 (which has no header timeout), and
//! across keep-alive (where hyper's own header timer would also close an idle
//! connection at the header deadline).

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use switchyard_core::catalog::Connections;

/// How often a refused accept or a reached cap is logged, at most.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// The listen backlog [`bind`] asks for. The kernel caps it at
/// `net.core.somaxconn` (4096 on Linux since 5.4).
pub const LISTEN_BACKLOG: u32 = 4096;

/// Binds a listener on `addr` (`host:port`; each address the name resolves to
/// is tried in turn) with a backlog of [`LISTEN_BACKLOG`]. tokio's `bind` asks
/// for 128: a burst of connects larger than that, a thousand agents starting
/// streams at once, overflows the accept queue, and every handshake the kernel
/// drops waits out the client's one-second SYN retransmission.
pub async fn bind(addr: &str) -> io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        match bind_addr(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "the address resolves to nothing")
    }))
}

fn bind_addr(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    // As tokio's own bind: a restarted gateway rebinds while old connections
    // sit in TIME_WAIT.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// The open-connection cap: the configured one, else half the open-file limit
/// (the other half for upstream connections, the database and files). Never
/// above the limit less a reserve (64, or a quarter of a small limit), whatever is
/// configured.
pub fn connection_cap(configured: usize, file_limit: Option<u64>) -> usize {
    let Some(limit) = file_limit.map(|l| usize::try_from(l).unwrap_or(usize::MAX)) else {
        return if configured == 0 { 4096 } else { configured };
    };
    let ceiling = limit.saturating_sub((limit / 4).min(64)).max(1);
    let cap = if configured == 0 { limit / 2 } else { configured };
    cap.clamp(1, ceiling)
}

/// The process's soft open-file limit, where the platform tells it.
pub fn file_limit() -> Option<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE).ok().map(|(soft, _)| soft)
}

/// Accept connections until `stop` is cancelled, then ask each open connection
/// to finish its requests and close. Resolves once every connection task ended
/// (upgraded connections are no longer tasks of this loop: the caller waits for
/// its WebSocket sessions itself).
pub(crate) async fn accept_loop<S>(
    listener: TcpListener,
    app: S,
    limits: Connections,
    stop: CancellationToken,
) where
    S: App,
{
    let cap = connection_cap(limits.max, file_limit());
    tracing::info!(
        max_connections = cap,
        file_limit = file_limit().map(|l| l.to_string()).unwrap_or_else(|| "unknown".into()),
        header_read_timeout_ms = limits.header_read_timeout.as_millis() as u64,
        idle_timeout_ms = limits.idle_timeout.as_millis() as u64,
        "accepting client connections"
    );
    let slots = Arc::new(Semaphore::new(cap));
    let tasks = TaskTracker::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(limits.http2_max_concurrent_streams)
        .max_header_list_size(limits.http2_max_header_list_bytes)
        // WebSockets over HTTP/2 (RFC 8441), as `axum::serve` allows.
        .enable_connect_protocol();
    let builder = Arc::new(builder);
    let mut logged_full: Option<Instant> = None;
    let mut logged_error: Option<Instant> = None;
    loop {
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                if logged_full.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                    logged_full = Some(Instant::now());
                    tracing::warn!(
                        max_connections = cap,
                        "connection limit reached: new connections wait in the listen backlog \
                         until one closes (gateway.connections.max)"
                    );
                }
                tokio::select! {
                    p = slots.clone().acquire_owned() => match p {
                        Ok(p) => p,
                        Err(_) => break,
                    },
                    () = stop.cancelled() => break,
                }
            }
        };
        let accepted = tokio::select! {
            r = listener.accept() => r,
            () = stop.cancelled() => break,
        };
        let (tcp, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors, or the peer gave up before the accept.
                // Back off briefly rather than spin on an error that persists.
                if logged_error.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                    logged_error = Some(Instant::now());
                    tracing::warn!(error = %e, "accepting a connection failed");
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(50)) => continue,
                    () = stop.cancelled() => break,
                }
            }
        };
        // Small responses must not wait for delayed ACKs.
        let _ = tcp.set_nodelay(true);
        let activity = Arc::new(Activity::new());
        let io = Io { tcp, activity: activity.clone(), _slot: permit };
        let service = Tracked { app: app.clone(), activity: activity.clone(), peer };
        tasks.spawn(serve_connection(builder.clone(), io, service, activity, limits, stop.clone()));
    }
    drop(listener);
    tasks.close();
    tasks.wait().await;
}

/// Serve one connection until it ends, its deadline passes, or shutdown.
async fn serve_connection<S: App>(
    builder: Arc<auto::Builder<TokioExecutor>>,
    io: Io,
    service: Tracked<S>,
    activity: Arc<Activity>,
    limits: Connections,
    stop: CancellationToken,
) {
    let service = hyper_util::service::TowerToHyperService::new(service);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    // Once a graceful close began: when it is cut short (an idle connection
    // whose peer ignores GOAWAY), or never (shutdown, whose grace bounds it).
    let mut closing: Option<Option<Instant>> = None;
    loop {
        let wake = match closing {
            Some(Some(end)) if Instant::now() >= end => return,
            Some(end) => end,
            None => match activity.check(&limits, Instant::now()) {
                Check::Close => return, // dropping the connection closes the socket
                Check::Drain => {
                    conn.as_mut().graceful_shutdown();
                    closing = Some(Some(Instant::now() + limits.header_read_timeout));
                    continue;
                }
                Check::Wait(at) => Some(at),
            },
        };
        let timer = async move {
            match wake {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = conn.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "client connection ended with an error");
                }
                return;
            }
            () = timer => {}
            () = stop.cancelled(), if closing.is_none() => {
                conn.as_mut().graceful_shutdown();
                closing = Some(None);
            }
        }
    }
}

/// What a connection's watchdog found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// Close now: nothing in flight is worth keeping.
    Close,
    /// Ask the connection to finish gracefully (idle: HTTP/2 gets its GOAWAY).
    Drain,
    /// Nothing to do before then.
    Wait(Instant),
}

/// What the socket and the service saw, as milliseconds since the accept.
#[derive(Debug)]
struct Activity {
    born: Instant,
    in_flight: AtomicUsize,
    /// Requests begun on this connection.
    served: AtomicU64,
    /// When the last request in flight ended.
    idle_since: AtomicU64,
    /// When the first byte of a request arrived on an idle HTTP/1 connection
    /// (plus one; zero: none is arriving).
    arriving: AtomicU64,
    /// The connection speaks HTTP/2: bytes between requests are frames of the
    /// connection (pings, window updates), not a request's headers.
    h2: AtomicBool,
    read_any: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            born: Instant::now(),
            in_flight: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
            arriving: AtomicU64::new(0),
            h2: AtomicBool::new(false),
            read_any: AtomicBool::new(false),
        }
    }

    fn ms(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.born).as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.born + Duration::from_millis(ms)
    }

    fn on_read(&self, data: &[u8]) {
        if !self.read_any.swap(true, Ordering::Relaxed) {
            self.h2.store(data.starts_with(b"PRI "), Ordering::Relaxed);
        }
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.arriving.load(Ordering::Relaxed) == 0
            && !self.h2.load(Ordering::Relaxed)
        {
            self.arriving.store(self.ms(Instant::now()) + 1, Ordering::Relaxed);
        }
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.served.fetch_add(1, Ordering::Relaxed);
        self.arriving.store(0, Ordering::Relaxed);
        InFlight(self.clone())
    }

    /// The connection's deadline as of `now`.
    fn check(&self, limits: &Connections, now: Instant) -> Check {
        let header = limits.header_read_timeout;
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            // The pipeline bounds a request; look again once it may have ended.
            return Check::Wait(now + header);
        }
        if self.served.load(Ordering::Relaxed) == 0 {
            let end = self.born + header;
            return if now >= end { Check::Close } else { Check::Wait(end) };
        }
        let arriving = self.arriving.load(Ordering::Relaxed);
        let idle_end = self.at(self.idle_since.load(Ordering::Relaxed)) + limits.idle_timeout;
        if arriving > 0 {
            let end = (self.at(arriving - 1) + header).min(idle_end);
            return if now >= end { Check::Close } else { Check::Wait(end) };
        }
        if now >= idle_end { Check::Drain } else { Check::Wait(idle_end) }
    }
}

/// A request in flight on a connection, until its response body is dropped.
#[derive(Debug)]
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        a.idle_since.store(a.ms(Instant::now()), Ordering::Relaxed);
        a.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The client's socket, holding its slot under the connection cap for as long
/// as it is open (an upgraded WebSocket keeps it), and telling [`Activity`] of
/// the bytes it reads.
struct Io {
    tcp: TcpStream,
    activity: Arc<Activity>,
    _slot: OwnedSemaphorePermit,
}

impl AsyncRead for Io {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r
            && let Some(read) = buf.filled().get(before..).filter(|d| !d.is_empty())
        {
            self.activity.on_read(read);
        }
        r
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}

/// What the accept loop serves: the router (behind its guard), a service that
/// is always ready.
pub(crate) trait App:
    tower_service::Service<
        hyper::Request<Body>,
        Response = hyper::Response<Body>,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> App for S where
    S: tower_service::Service<
            hyper::Request<Body>,
            Response = hyper::Response<Body>,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// The app, counting requests in flight on its connection.
#[derive(Clone)]
struct Tracked<S> {
    app: S,
    activity: Arc<Activity>,
    peer: SocketAddr,
}

/// The client's address, handed to the console's requests only (its sign-in
/// limit is per address); the API's requests carry nothing extra.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peer(pub SocketAddr);

impl<S: App> tower_service::Service<hyper::Request<Incoming>> for Tracked<S> {
    type Response = hyper::Response<TrackedBody>;
    type Error = Infallible;
    type Future = TrackedFuture<S::Future>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: hyper::Request<Incoming>) -> Self::Future {
        let guard = self.activity.begin();
        let mut req = req.map(Body::new);
        if req.uri().path().starts_with("/console") {
            req.extensions_mut().insert(Peer(self.peer));
        }
        // The app is always ready; calling it without `poll_ready` is allowed.
        let inner = tower_service::Service::call(&mut self.app, req);
        TrackedFuture { inner, guard: Some(guard) }
    }
}

pin_project_lite::pin_project! {
    /// The app's future, handing the request's [`InFlight`] to its body.
    struct TrackedFuture<F> {
        #[pin]
        inner: F,
        guard: Option<InFlight>,
    }
}

impl<F> Future for TrackedFuture<F>
where
    F: Future<Output = Result<hyper::Response<Body>, Infallible>>,
{
    type Output = Result<hyper::Response<TrackedBody>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let resp = std::task::ready!(this.inner.poll(cx))?;
        let in_flight = this.guard.take();
        Poll::Ready(Ok(resp.map(|inner| TrackedBody { inner, _in_flight: in_flight })))
    }
}

/// A response body that ends its request's time in flight when hyper drops it:
/// after its last byte, or when the client went away.
struct TrackedBody {
    inner: Body,
    _in_flight: Option<InFlight>,
}

impl hyper::body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
