//! What the credential tests share: a clock moved by hand, a fake server on
//! `127.0.0.1:0`, temporary directories, an [`Http`] for the fakes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::{Clock, Http};
use crate::clock::UnixMs;

/// 2025-01-01T00:00:00Z.
pub const T0: UnixMs = UnixMs(1_735_689_600_000);

/// A clock that moves only when told.
#[derive(Clone)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn at(t: UnixMs) -> Self {
        Self(Arc::new(AtomicU64::new(t.0)))
    }

    pub fn clock(&self) -> Clock {
        let now = Arc::clone(&self.0);
        Clock::from_fn(move || UnixMs(now.load(Ordering::SeqCst)))
    }

    pub fn now(&self) -> UnixMs {
        UnixMs(self.0.load(Ordering::SeqCst))
    }

    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(u64::try_from(d.as_millis()).unwrap(), Ordering::SeqCst);
    }
}

/// A server on `127.0.0.1:0` running `router` until dropped.
pub struct Server {
    pub base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One request as a fake received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The path and query exactly as sent (percent-encoding kept).
    pub target: String,
    /// Names lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The body as a form: decoded pairs.
    pub fn form(&self) -> Vec<(String, String)> {
        let text = String::from_utf8_lossy(&self.body);
        let decode = |s: &str| crate::util::percent_decode(&s.replace('+', " "));
        text.split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect()
    }

    pub fn field(&self, name: &str) -> Option<String> {
        self.form().into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}

/// A fake answering every request with `handler`'s status and body.
pub async fn fake(handler: impl Fn(Seen) -> (u16, String) + Send + Sync + 'static) -> Server {
    use axum::response::IntoResponse;
    let handler = Arc::new(handler);
    let router = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let handler = Arc::clone(&handler);
        async move {
            let (parts, body) = req.into_parts();
            let body = axum::body::to_bytes(body, 1 << 20).await.unwrap_or_default();
            let seen = Seen {
                method: parts.method.to_string(),
                target: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str().to_owned())
                    .unwrap_or_default(),
                headers: parts
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        (k.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned())
                    })
                    .collect(),
                body: body.to_vec(),
            };
            let (status, body) = handler(seen);
            (axum::http::StatusCode::from_u16(status).unwrap(), body).into_response()
        }
    });
    serve(router).await
}

pub async fn serve(router: axum::Router) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    Server { base, task }
}

/// The HTTP the sources use, with a short deadline (every fake answers at once
/// unless a test makes it hang).
pub fn http() -> Http {
    Http::new(&crate::client::ClientOptions::default())
        .unwrap()
        .with_timeout(Duration::from_secs(5))
}

/// A fresh directory under the system's temporary one, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> Self {
        let dir =
            std::env::temp_dir().join(format!("switchyard-creds-{:016x}", crate::clock::unique()));
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Write `text` at `relative` (directories made), returning its path.
    pub fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.0.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
