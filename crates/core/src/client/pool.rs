//! A provider's HTTP client: hyper-util's pooled client over the
//! [`Connector`], one per provider (its own pool, TLS setup and proxy).
//!
//! The gateway's own path to every upstream. It was reqwest's; hyper-util's
//! client underneath it, used directly, costs a third less CPU per forwarded
//! request (the bench's stack-floor rows), and everything the gateway relied on
//! is here: the platform's roots, HTTP/2 by ALPN, the proxy variables, connect
//! timeouts, a pool per provider, and cancellation by dropping the future.
//!
//! **Lanes.** hyper-util's pool keeps one HTTP/2 connection per origin and
//! queues every request past the server's `SETTINGS_MAX_CONCURRENT_STREAMS` on
//! it: a thousand agents streaming from one provider waited in waves behind the
//! first hundred or two (the soak's slow streams: time to first content 6 s for
//! a 0.5 s stream start). So a provider's client is up to [`MAX_LANES`] pools, a
//! lane each, and a request takes the first lane with fewer than
//! [`LANE_STREAMS`] of its requests in flight (counted until the answer's body
//! is done or dropped); past that, the least busy. Below a hundred requests in
//! flight only the first lane is ever used. Over HTTP/1.1 a lane is just a
//! share of the idle connections.

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::PROXY_AUTHORIZATION;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::ClientOptions;
use super::connect::Connector;

/// What an upstream answers: the head now, the body as it arrives.
pub(crate) type Response = http::Response<Body>;

/// Requests in flight on one lane before the next lane opens: the least a
/// server should allow on a connection (RFC 9113 §6.5.2 recommends no fewer
/// than 100), so a lane never queues on a server that follows it.
pub(crate) const LANE_STREAMS: usize = 100;

/// The most lanes a provider opens; past `MAX_LANES * LANE_STREAMS` requests
/// in flight, the least busy lane queues.
pub(crate) const MAX_LANES: usize = 64;

/// Why a request got no answer (connect, TLS, proxy, a connection lost).
pub(crate) type ClientError = hyper_util::client::legacy::Error;

/// The proxy variables a matcher is built from; without any, requests skip the
/// proxy check altogether.
const PROXY_VARIABLES: [&str; 6] =
    ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// One provider's client. Cheap to clone: clones share the lanes.
#[derive(Clone)]
pub(crate) struct HttpClient {
    lanes: Arc<Lanes>,
    proxy: Option<Arc<Matcher>>,
}

struct Lanes {
    /// Each lane's client, made when first needed (the first at once).
    clients: [OnceLock<Client<Connector, Full<Bytes>>>; MAX_LANES],
    /// Each lane's requests in flight.
    busy: [Arc<AtomicUsize>; MAX_LANES],
    connector: Connector,
    idle_timeout: Duration,
    max_idle: usize,
}

impl Lanes {
    fn client(&self, lane: usize) -> &Client<Connector, Full<Bytes>> {
        self.clients[lane].get_or_init(|| {
            Client::builder(TokioExecutor::new())
                .pool_timer(TokioTimer::new())
                .timer(TokioTimer::new())
                .pool_idle_timeout(self.idle_timeout)
                .pool_max_idle_per_host(self.max_idle)
                .build(self.connector.clone())
        })
    }

    /// The lane for the next request, and its count taken.
    fn take(&self) -> (usize, Busy) {
        let mut least = (usize::MAX, 0);
        for (lane, busy) in self.busy.iter().enumerate() {
            let n = busy.load(Ordering::Relaxed);
            if n < LANE_STREAMS {
                return (lane, Busy::take(busy));
            }
            if n < least.0 {
                least = (n, lane);
            }
        }
        (least.1, Busy::take(&self.busy[least.1]))
    }
}

/// A request counted on its lane until dropped.
#[derive(Debug)]
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn take(count: &Arc<AtomicUsize>) -> Busy {
        count.fetch_add(1, Ordering::Relaxed);
        Busy(Arc::clone(count))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An answer's body, counted on its lane until it is done or dropped.
#[derive(Debug)]
pub(crate) struct Body {
    inner: hyper::body::Incoming,
    busy: Option<Busy>,
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            // Done: the lane may take another request before the body is dropped.
            self.busy = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient").field("proxied", &self.proxy.is_some()).finish_non_exhaustive()
    }
}

impl HttpClient {
    /// The client `options` shape; `connect_timeout` bounds the TCP connect, the
    /// proxy's tunnel and the TLS handshake together.
    pub fn new(options: &ClientOptions, connect_timeout: Duration) -> Result<HttpClient, String> {
        let tls = super::tls_config(options)?;
        let proxy = match &options.proxy {
            // Every request, as documented: the environment's NO_PROXY is for
            // the environment's proxy.
            Some(url) => Some(Matcher::builder().all(url.clone()).build()),
            None => PROXY_VARIABLES
                .iter()
                .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()))
                .then(Matcher::from_env),
        }
        .map(Arc::new);
        let lanes = Lanes {
            clients: std::array::from_fn(|_| OnceLock::new()),
            busy: std::array::from_fn(|_| Arc::new(AtomicUsize::new(0))),
            connector: Connector::new(tls, proxy.clone(), connect_timeout),
            idle_timeout: options.pool_idle_timeout,
            max_idle: options.pool_max_idle_per_host,
        };
        lanes.client(0);
        Ok(HttpClient { lanes: Arc::new(lanes), proxy })
    }

    /// Send `req`; resolves when the answer's head arrives. Dropping the future,
    /// or the answer's body before its end, gives up the request (an HTTP/1.1
    /// connection is then closed, an HTTP/2 stream reset).
    pub async fn send(&self, mut req: http::Request<Full<Bytes>>) -> Result<Response, ClientError> {
        // A plain-HTTP request through a proxy is sent to it whole, and carries
        // the proxy's credentials itself (a tunnel's go in its CONNECT).
        if let Some(proxy) = &self.proxy
            && req.uri().scheme_str() == Some("http")
            && let Some(auth) = proxy.intercept(req.uri()).and_then(|i| i.basic_auth().cloned())
        {
            req.headers_mut().insert(PROXY_AUTHORIZATION, auth);
        }
        let (lane, busy) = self.lanes.take();
        let resp = self.lanes.client(lane).request(req).await?;
        Ok(resp.map(|inner| Body { inner, busy: Some(busy) }))
    }
}

#[cfg(test)]
#[path = "pool_tests.rs"]
mod tests;
