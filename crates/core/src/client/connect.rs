//! How a provider's client opens a connection: TCP (no delay, keepalive), then
//! through a proxy where one applies (a `CONNECT` tunnel for an `https`
//! destination; an `http` one is sent to the proxy in absolute form), then TLS
//! with ALPN where the destination is `https`. All of it within the connect
//! timeout.
//!
//! Hand-written rather than layered from hyper-util's `Tunnel` and a TLS
//! connector crate: an `https` proxy puts TLS under the tunnel and TLS again
//! inside it, and one recursive stream type carries every case.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::{Intercept, Matcher};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The largest proxy answer to a `CONNECT` read before it is refused.
const MAX_CONNECT_ANSWER: usize = 8 * 1024;

/// Why a connection could not be opened. Found in an upstream error's source
/// chain, it tells a timeout from any other connect failure.
#[derive(Debug)]
pub(crate) struct ConnectError {
    pub timed_out: bool,
    message: String,
}

impl ConnectError {
    fn new(message: impl Into<String>) -> Self {
        Self { timed_out: false, message: message.into() }
    }
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConnectError {}

/// Opens the connections of one provider's client (see the module's doc).
#[derive(Clone)]
pub(crate) struct Connector {
    tcp: HttpConnector,
    /// The provider's TLS setup: its roots, its identity, ALPN `h2` then
    /// `http/1.1`.
    tls: TlsConnector,
    /// The same for an `https` proxy, offering `http/1.1` alone: a tunnel is
    /// asked for with an HTTP/1.1 `CONNECT`.
    proxy_tls: TlsConnector,
    pub proxy: Option<Arc<Matcher>>,
    timeout: Duration,
}

impl Connector {
    pub fn new(
        tls: rustls::ClientConfig,
        proxy: Option<Arc<Matcher>>,
        timeout: Duration,
    ) -> Connector {
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_keepalive(Some(Duration::from_secs(30)));
        let mut proxy_tls = tls.clone();
        proxy_tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Connector {
            tcp,
            tls: TlsConnector::from(Arc::new(tls)),
            proxy_tls: TlsConnector::from(Arc::new(proxy_tls)),
            proxy,
            timeout,
        }
    }

    async fn connect(mut self, dst: Uri) -> Result<Conn, ConnectError> {
        let https = dst.scheme_str() == Some("https");
        let host = dst.host().ok_or_else(|| ConnectError::new(format!("{dst}: no host")))?;
        let port = dst.port_u16().unwrap_or(if https { 443 } else { 80 });
        let intercept = self.proxy.as_ref().and_then(|m| m.intercept(&dst));
        let Some(proxy) = intercept else {
            let tcp = self.tcp(dst.clone()).await?;
            return self.finish(tcp, https, host, false).await;
        };
        let via = proxy.uri().clone();
        if !matches!(via.scheme_str(), Some("http" | "https")) {
            return Err(ConnectError::new(format!(
                "the proxy {}: only http:// and https:// proxies are supported",
                via.authority().map(ToString::to_string).unwrap_or_default()
            )));
        }
        let mut stream = self.tcp(via.clone()).await?;
        if via.scheme_str() == Some("https") {
            let name = via.host().unwrap_or_default();
            stream = tls(&self.proxy_tls, stream, name, "the proxy").await?.0;
        }
        if !https {
            // The request itself goes to the proxy, in absolute form.
            return Ok(Conn::new(stream, false, true));
        }
        let stream = tunnel(stream, host, port, &proxy).await?;
        self.finish(stream, true, host, false).await
    }

    async fn tcp(&mut self, to: Uri) -> Result<Stream, ConnectError> {
        use tower_service::Service;
        let shown = to.authority().map(ToString::to_string).unwrap_or_default();
        match self.tcp.call(to).await {
            Ok(io) => Ok(Stream::Tcp(io.into_inner())),
            Err(e) => Err(ConnectError::new(format!("{shown}: {}", chain(&e)))),
        }
    }

    async fn finish(
        &self,
        stream: Stream,
        https: bool,
        host: &str,
        proxied: bool,
    ) -> Result<Conn, ConnectError> {
        if !https {
            return Ok(Conn::new(stream, false, proxied));
        }
        let (stream, h2) = tls(&self.tls, stream, host, host).await?;
        Ok(Conn::new(stream, h2, proxied))
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, ConnectError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let timeout = self.timeout;
        let connect = self.clone().connect(dst);
        Box::pin(async move {
            match tokio::time::timeout(timeout, connect).await {
                Ok(done) => done,
                Err(_) => Err(ConnectError {
                    timed_out: true,
                    message: format!("connect timed out after {} ms", timeout.as_millis()),
                }),
            }
        })
    }
}

/// `stream` wrapped in TLS for `host` (brackets of an IPv6 literal taken off);
/// whether `h2` was agreed by ALPN.
async fn tls(
    connector: &TlsConnector,
    stream: Stream,
    host: &str,
    shown: &str,
) -> Result<(Stream, bool), ConnectError> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(bare.to_owned())
        .map_err(|e| ConnectError::new(format!("{shown}: not a TLS server name: {e}")))?;
    let tls = connector
        .connect(name, stream)
        .await
        .map_err(|e| ConnectError::new(format!("{shown}: TLS handshake: {}", chain(&e))))?;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    Ok((Stream::Tls(Box::new(tls)), h2))
}

/// A tunnel through the proxy to `host:port`, asked for with `CONNECT` (and
/// the proxy's credentials, when its URL has them).
async fn tunnel(
    mut stream: Stream,
    host: &str,
    port: u16,
    proxy: &Intercept,
) -> Result<Stream, ConnectError> {
    let target = format!("{host}:{port}");
    let mut head = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(auth) = proxy.basic_auth().and_then(|v| v.to_str().ok()) {
        head.push_str("Proxy-Authorization: ");
        head.push_str(auth);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    let failed = |e: io::Error| ConnectError::new(format!("proxy CONNECT to {target}: {e}"));
    stream.write_all(head.as_bytes()).await.map_err(failed)?;
    let mut answer = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    // Read byte runs until the answer's head ends; a TLS client speaks first,
    // so nothing may follow the head yet.
    let end = loop {
        let n = stream.read(&mut buf).await.map_err(failed)?;
        if n == 0 {
            return Err(ConnectError::new(format!(
                "proxy closed the connection before answering CONNECT to {target}"
            )));
        }
        answer.extend_from_slice(&buf[..n]);
        if let Some(at) = memchr::memmem::find(&answer, b"\r\n\r\n") {
            break at + 4;
        }
        if answer.len() > MAX_CONNECT_ANSWER {
            return Err(ConnectError::new("proxy answered CONNECT with an oversized head"));
        }
    };
    let status = answer
        .split(|b| *b == b' ')
        .nth(1)
        .and_then(|s| std::str::from_utf8(s).ok())
        .and_then(|s| s.parse::<u16>().ok());
    match status {
        Some(200..=299) if end == answer.len() => Ok(stream),
        Some(200..=299) => Err(ConnectError::new("proxy sent data before the tunnel was used")),
        Some(407) => Err(ConnectError::new(format!(
            "proxy refused CONNECT to {target}: 407 (proxy authentication required)"
        ))),
        Some(status) => {
            Err(ConnectError::new(format!("proxy refused CONNECT to {target}: {status}")))
        }
        None => Err(ConnectError::new("proxy answered CONNECT with something not HTTP")),
    }
}

/// An error and its sources, one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut shown = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        // Wrappers often repeat their source's text.
        if !shown.ends_with(&next) {
            shown.push_str(": ");
            shown.push_str(&next);
        }
        source = s.source();
    }
    shown
}

/// A connection's bytes: TCP, or TLS over a stream (TCP, or TLS to an `https`
/// proxy for a tunnel through it).
pub(crate) enum Stream {
    Tcp(TcpStream),
    Tls(Box<TlsStream<Stream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Tcp(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An open connection as the pool holds it: its bytes, whether HTTP/2 was
/// agreed, whether requests on it go to a proxy in absolute form.
pub(crate) struct Conn {
    io: TokioIo<Stream>,
    h2: bool,
    proxied: bool,
}

impl Conn {
    fn new(stream: Stream, h2: bool, proxied: bool) -> Conn {
        Conn { io: TokioIo::new(stream), h2, proxied }
    }
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        let connected = Connected::new().proxy(self.proxied);
        if self.h2 { connected.negotiated_h2() } else { connected }
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
