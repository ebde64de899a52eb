//! A fake forward proxy on `127.0.0.1:0`, as a company's egress proxy is: a
//! `CONNECT` opens a tunnel (an `https` upstream reached through it), a request
//! in absolute form (`POST http://host/path`) is forwarded to its origin (an
//! `http` one). It can require credentials (`Proxy-Authorization: Basic`,
//! 407 without them) and records what it was asked ([`FakeProxy::seen`]).
//!
//! Strict where a real proxy is: a request in origin form is not a proxy
//! request (400), and each forwarded request is sent to its origin on a
//! connection of its own, so a client cannot reach an origin it did not name.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// What the proxy was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `CONNECT`, `POST`, …
    pub method: String,
    /// `host:port` for a `CONNECT`, else the absolute URI.
    pub target: String,
    /// The `Proxy-Authorization` header, if any.
    pub authorization: Option<String>,
    /// Whether it was let through (credentials right, target reachable).
    pub allowed: bool,
}

#[derive(Debug)]
struct Shared {
    /// The `Proxy-Authorization` value required; `None`: none is.
    required: Option<String>,
    seen: Mutex<Vec<Seen>>,
}

/// A running fake proxy; it stops when dropped.
#[derive(Debug)]
pub struct FakeProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _stop: watch::Sender<()>,
}

type Body = BoxBody<Bytes, hyper::Error>;

impl FakeProxy {
    /// A proxy that lets everyone through.
    pub async fn start() -> std::io::Result<FakeProxy> {
        FakeProxy::start_inner(None).await
    }

    /// A proxy that requires `user:password` (Basic), answering 407 without it.
    pub async fn start_with_auth(user: &str, password: &str) -> std::io::Result<FakeProxy> {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        FakeProxy::start_inner(Some(format!("Basic {token}"))).await
    }

    async fn start_inner(required: Option<String>) -> std::io::Result<FakeProxy> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared { required, seen: Mutex::default() });
        let (tx, stop) = watch::channel(());
        let serving = Arc::clone(&shared);
        crate::tls::accept_until(listener, stop, move |tcp| {
            let shared = Arc::clone(&serving);
            let service = hyper::service::service_fn(move |req| {
                let shared = Arc::clone(&shared);
                async move { Ok::<_, Infallible>(handle(&shared, req).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .with_upgrades(),
            );
        });
        Ok(FakeProxy { addr, shared, _stop: tx })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://user:password@127.0.0.1:PORT`.
    pub fn url_with(&self, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@{}", self.addr)
    }

    /// Everything asked so far, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

fn answer(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(Bytes::from_static(text.as_bytes())).map_err(|e| match e {}).boxed(),
    );
    *resp.status_mut() = status;
    resp
}

async fn handle(shared: &Shared, mut req: Request<Incoming>) -> Response<Body> {
    let authorization = req
        .headers()
        .get(hyper::header::PROXY_AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let connect = req.method() == hyper::Method::CONNECT;
    let target = if connect {
        req.uri().authority().map(ToString::to_string).unwrap_or_default()
    } else {
        req.uri().to_string()
    };
    let allowed = shared.required.is_none() || shared.required == authorization;
    let origin = req.uri().authority().map(ToString::to_string);
    let absolute = connect || req.uri().scheme().is_some();
    shared.seen.lock().unwrap_or_else(|e| e.into_inner()).push(Seen {
        method: req.method().to_string(),
        target,
        authorization,
        allowed: allowed && absolute && origin.is_some(),
    });
    if !allowed {
        let mut resp =
            answer(StatusCode::PROXY_AUTHENTICATION_REQUIRED, "proxy credentials needed");
        resp.headers_mut().insert(
            hyper::header::PROXY_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Basic realm=\"fake\""),
        );
        return resp;
    }
    let (Some(origin), true) = (origin, absolute) else {
        return answer(StatusCode::BAD_REQUEST, "not a proxy request: no absolute URI");
    };
    let Ok(upstream) = TcpStream::connect(&origin).await else {
        return answer(StatusCode::BAD_GATEWAY, "origin unreachable");
    };
    if connect {
        tokio::spawn(async move {
            let Ok(upgraded) = hyper::upgrade::on(req).await else { return };
            let mut client = TokioIo::new(upgraded);
            let mut upstream = upstream;
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
        return Response::new(Empty::new().map_err(|e| match e {}).boxed());
    }
    // Forwarded in origin form, without the proxy's own header.
    let path = req.uri().path_and_query().map_or("/", |p| p.as_str()).to_owned();
    let Ok(uri) = path.parse() else {
        return answer(StatusCode::BAD_REQUEST, "bad path");
    };
    *req.uri_mut() = uri;
    req.headers_mut().remove(hyper::header::PROXY_AUTHORIZATION);
    let Ok((mut sender, conn)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return answer(StatusCode::BAD_GATEWAY, "origin handshake failed");
    };
    tokio::spawn(conn);
    match sender.send_request(req).await {
        Ok(resp) => resp.map(BodyExt::boxed),
        Err(_) => answer(StatusCode::BAD_GATEWAY, "origin failed"),
    }
}
