//! The stack floor: two throwaway forwarders built on the gateway's own HTTP
//! stack, run in the gateway's place so a report shows what the stack costs
//! before the gateway does any work.
//!
//! Each is axum on a single-threaded tokio runtime (what the gateway runs on one
//! CPU), `TCP_NODELAY` on accepted and upstream sockets, one route that reads the
//! body and posts it to the upstream with a pooled keep-alive client, and returns
//! the upstream's status, content type and body. No parsing, no routing, no
//! records, no metrics, no logging. They differ only in the client:
//!
//! * `reqwest`: the client the gateway used for its upstreams until it moved to
//!   hyper-util's (kept for comparison: what reqwest's layers cost);
//! * `hyper`: hyper-util's pooled client, which reqwest wraps, called directly:
//!   the gateway's upstream client since.
//!
//! The bench starts them as `switchyard-bench --forwarder KIND --listen ADDR
//! --upstream ADDR`, pinned like the gateway, and measures them in the
//! throughput phase only.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, Response, StatusCode, header};
use axum::routing::post;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// Which client a forwarder uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// axum + reqwest: the gateway's HTTP stack before hyper-util's client.
    Reqwest,
    /// axum + hyper-util's client.
    Hyper,
}

impl Kind {
    /// The value `--forwarder` takes for this kind, as clap names it.
    pub fn arg(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map_or_else(String::new, |v| v.get_name().to_owned())
    }

    /// The row name in the report.
    pub fn label(self) -> &'static str {
        match self {
            Kind::Reqwest => "axum+reqwest",
            Kind::Hyper => "axum+hyper",
        }
    }
}

enum Upstream {
    Reqwest(reqwest::Client),
    Hyper(Box<HyperClient<HttpConnector, Full<Bytes>>>),
}

struct Forwarder {
    client: Upstream,
    url: String,
    uri: axum::http::Uri,
}

/// Run a forwarder until killed.
pub fn run(kind: Kind, listen: SocketAddr, upstream: SocketAddr) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    runtime.block_on(serve(kind, listen, upstream))
}

async fn serve(kind: Kind, listen: SocketAddr, upstream: SocketAddr) -> Result<(), String> {
    let client = match kind {
        Kind::Reqwest => {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .pool_max_idle_per_host(256)
                .tcp_nodelay(true)
                .build()
                .map_err(|e| format!("reqwest client: {e}"))?;
            Upstream::Reqwest(client)
        }
        Kind::Hyper => {
            let mut connector = HttpConnector::new();
            connector.set_nodelay(true);
            let client = HyperClient::builder(TokioExecutor::new())
                .pool_max_idle_per_host(256)
                .build(connector);
            Upstream::Hyper(Box::new(client))
        }
    };
    let url = format!("http://{upstream}/v1/chat/completions");
    let uri = url.parse().map_err(|e| format!("upstream uri: {e}"))?;
    let state = Arc::new(Forwarder { client, url, uri });
    let app = Router::new().route("/v1/chat/completions", post(forward)).with_state(state);
    let listener =
        tokio::net::TcpListener::bind(listen).await.map_err(|e| format!("bind {listen}: {e}"))?;
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await.map_err(|e| format!("serve: {e}"))
}

async fn forward(State(fwd): State<Arc<Forwarder>>, body: Bytes) -> Response<Body> {
    let sent = match &fwd.client {
        Upstream::Reqwest(client) => {
            match client
                .post(&fwd.url)
                .header(header::CONTENT_TYPE, "application/json")
                .body(body)
                .send()
                .await
            {
                Ok(resp) => {
                    let status = resp.status();
                    let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
                    resp.bytes().await.map(|b| (status, content_type, b)).map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            }
        }
        Upstream::Hyper(client) => {
            let request = axum::http::Request::post(fwd.uri.clone())
                .header(header::CONTENT_TYPE, "application/json")
                .body(Full::new(body));
            match request {
                Ok(request) => match client.request(request).await {
                    Ok(resp) => {
                        let status = resp.status();
                        let content_type = resp.headers().get(header::CONTENT_TYPE).cloned();
                        resp.into_body()
                            .collect()
                            .await
                            .map(|c| (status, content_type, c.to_bytes()))
                            .map_err(|e| e.to_string())
                    }
                    Err(e) => Err(e.to_string()),
                },
                Err(e) => Err(e.to_string()),
            }
        }
    };
    let (status, content_type, bytes) = match sent {
        Ok(parts) => parts,
        Err(e) => (StatusCode::BAD_GATEWAY, None, Bytes::from(e)),
    };
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        content_type.unwrap_or(HeaderValue::from_static("application/json")),
    );
    response
}
