//! Switchyard's HTTP surface (axum): the client-format endpoints (OpenAI Chat and
//! Responses, Anthropic Messages, Gemini `generateContent`), gateway-key auth,
//! request limits, errors in the caller's own format, response headers, and
//! graceful shutdown. Everything after parsing is `switchyard_core`'s pipeline.

mod admin;
mod auth;
mod batches;
mod browser;
mod conn;
mod console;
mod count;
mod embeddings;
mod encode;
mod gemini;
mod http;
pub mod identity;
mod ids;
mod images;
mod jobs;
mod limits;
mod models;
mod prometheus;
pub mod reload;
mod stateful;
mod ws;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::routing::{get, post};
use switchyard_core::Engine;
use tokio::net::TcpListener;

pub use count::HEADER_ESTIMATED;
pub use http::{
    HEADER_DESCRIPTOR, HEADER_DROPPED_TOOLS, HEADER_INTENT, HEADER_MODEL, HEADER_PROJECT,
    HEADER_PROVIDER, HEADER_REQUEST_ID, HEADER_STRUCTURED_OUTPUT,
};
pub use prometheus::serve_metrics;

/// Install the process's metrics recorder (once): what is recorded before
/// the server starts (the audit writer's and the limits' series at zero) is
/// kept only once it is installed.
pub fn install_metrics() {
    let _ = prometheus::handle();
}

/// Shared by every handler.
pub struct AppState {
    pub gateway: Arc<Engine>,
    pub identity: identity::Identity,
    /// False once shutdown has begun (`/readyz` answers 503).
    ready: AtomicBool,
    /// Cancelled when shutdown begins. WebSocket sessions outlive the HTTP
    /// connection that opened them, so graceful shutdown does not see them: this
    /// is how they learn to close (1001, going away) after their current turn.
    shutdown: tokio_util::sync::CancellationToken,
    /// Open WebSocket sessions, so shutdown can wait for them within its grace.
    sessions: tokio::sync::watch::Sender<usize>,
    /// Failed console sign-ins per client address.
    sign_ins: console::SignInLimiter,
    /// The console's identity provider's documents (discovery, keys), cached.
    oidc: console::OidcState,
    /// The configuration file being served and its reloader, where there is
    /// one (the console's route editor writes it); unset on embedded defaults.
    config_file: std::sync::OnceLock<ConfigFile>,
    /// Background responses running in this instance, by owner and id, so a
    /// cancel stops their upstream call.
    background: stateful::Background,
}

/// The configuration file the gateway serves from, and what reloads it.
pub struct ConfigFile {
    pub path: std::path::PathBuf,
    pub reloader: reload::Reloader,
}

impl AppState {
    /// Static keys from the configuration only (no database).
    pub fn new(gateway: Arc<Engine>) -> Arc<Self> {
        let keys = gateway.snapshot().catalog.settings.api_keys.clone();
        Self::with_identity(gateway, identity::Identity::from_keys(keys))
    }

    pub fn with_identity(gateway: Arc<Engine>, identity: identity::Identity) -> Arc<Self> {
        // Install the metrics recorder before the first request records anything.
        let _ = prometheus::handle();
        Arc::new(Self {
            gateway,
            identity,
            ready: AtomicBool::new(true),
            shutdown: tokio_util::sync::CancellationToken::new(),
            sessions: tokio::sync::watch::Sender::new(0),
            sign_ins: console::SignInLimiter::default(),
            oidc: console::OidcState::default(),
            config_file: std::sync::OnceLock::new(),
            background: stateful::Background::default(),
        })
    }

    /// Names the configuration file the gateway was started from and its
    /// reloader, so the console can edit it (once; later calls are ignored).
    pub fn attach_config(&self, file: ConfigFile) {
        let _ = self.config_file.set(file);
    }
}

/// The router with every endpoint.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(http::chat_completions))
        .route("/chat/completions", post(http::chat_completions))
        // GET with `Upgrade: websocket`: the Responses WebSocket mode Codex speaks.
        .route("/v1/responses", post(stateful::create).get(ws::responses))
        .route("/responses", post(stateful::create).get(ws::responses))
        // Stored responses (`store: true`), the caller's own.
        .route("/v1/responses/{id}", get(stateful::retrieve).delete(stateful::delete))
        .route("/responses/{id}", get(stateful::retrieve).delete(stateful::delete))
        .route("/v1/responses/{id}/input_items", get(stateful::input_items))
        .route("/responses/{id}/input_items", get(stateful::input_items))
        .route("/v1/responses/{id}/cancel", post(stateful::cancel))
        .route("/responses/{id}/cancel", post(stateful::cancel))
        // Older Codex compacts here; newer ones send `compaction_trigger` above.
        .route("/v1/responses/compact", post(http::responses_compact))
        .route("/responses/compact", post(http::responses_compact))
        .route("/v1/messages", post(http::messages))
        .route("/v1/messages/count_tokens", post(count::messages))
        .route("/v1/responses/input_tokens", post(count::responses))
        .route("/responses/input_tokens", post(count::responses))
        .route("/v1/images/generations", post(images::generations))
        .route("/images/generations", post(images::generations))
        // Multipart: the form's own limit (`gateway.max_body_bytes`) is the
        // handler's, counted as it reads.
        .route(
            "/v1/images/edits",
            post(images::edits).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route(
            "/images/edits",
            post(images::edits).layer(axum::extract::DefaultBodyLimit::disable()),
        )
        .route("/v1/images/files/{name}", get(images::file))
        // Batches: files of requests run in the background, the caller's own.
        // The upload's own limit (`gateway.batches.max_file_bytes`) is the
        // handler's, counted as it reads.
        .route(
            "/v1/files",
            post(batches::create_file)
                .layer(axum::extract::DefaultBodyLimit::disable())
                .get(batches::list_files),
        )
        .route("/v1/files/{id}", get(batches::retrieve_file).delete(batches::delete_file))
        .route("/v1/files/{id}/content", get(batches::file_content))
        .route("/v1/batches", post(batches::create_batch).get(batches::list_batches))
        .route("/v1/batches/{id}", get(batches::retrieve_batch))
        .route("/v1/batches/{id}/cancel", post(batches::cancel_batch))
        // Media jobs on a provider's queue, the caller's own.
        .route("/v1/jobs", post(jobs::create))
        .route("/v1/jobs/{id}", get(jobs::retrieve).delete(jobs::cancel))
        .route("/v1/embeddings", post(embeddings::openai))
        .route("/embeddings", post(embeddings::openai))
        .route("/v1/models", get(models::list))
        .route("/models", get(models::list))
        .route("/v1/models/{id}", get(models::retrieve))
        .route("/models/{id}", get(models::retrieve))
        // Gemini's API: the method follows the model in the last segment
        // (`{model}:generateContent`); other `/v1beta` paths get Google's 404.
        .route("/v1beta/models", get(gemini::list).fallback(http::not_found))
        .route(
            "/v1beta/models/{*target}",
            get(gemini::retrieve).post(gemini::post).fallback(http::not_found),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(prometheus::render))
        .nest("/admin", admin::router())
        .merge(console::router())
        .fallback(http::not_found)
        .with_state(state)
}

/// [`router`] behind the browser guard ([`browser`]): what [`serve`] serves.
fn guarded(state: Arc<AppState>) -> browser::Guard<Router> {
    browser::Guard::new(router(state.clone()), state, browser::Door::Gateway)
}

async fn readyz(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
) -> (axum::http::StatusCode, &'static str) {
    if state.ready.load(Ordering::Relaxed) {
        (axum::http::StatusCode::OK, "ready")
    } else {
        (axum::http::StatusCode::SERVICE_UNAVAILABLE, "shutting down")
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Serve until `shutdown` resolves; then `/readyz` fails, new connections are
/// still served for `shutdown_delay` (0: none), then the listener closes and
/// in-flight requests, streams and WebSocket turns get the configured grace
/// period to finish.
///
/// Connections are capped and each has a deadline (`gateway.connections`, read
/// now: a reload does not change them); see `conn.rs`.
pub async fn serve(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let settings = &state.gateway.snapshot().catalog.settings;
    let (grace, delay, limits) =
        (settings.shutdown_grace, settings.shutdown_delay, settings.connections);
    let upkeep = tokio::spawn(prometheus::upkeep());
    let _stop_upkeep = AbortOnDrop(upkeep);
    let _stop_jobs = AbortOnDrop(tokio::spawn(jobs::poller(state.clone())));
    let _stop_batches = AbortOnDrop(tokio::spawn(batches::runner(state.clone())));
    let app = guarded(state.clone());
    let stop = tokio_util::sync::CancellationToken::new();
    let accepting = conn::accept_loop(listener, app, limits, stop.clone());
    let started = Arc::new(tokio::sync::Notify::new());
    let started_tx = started.clone();
    let signal_state = state.clone();
    tokio::spawn(async move {
        shutdown.await;
        signal_state.ready.store(false, Ordering::Relaxed);
        // Readiness fails first: a balancer polling /readyz takes this long
        // to stop sending new connections, which are served meanwhile.
        if !delay.is_zero() {
            tracing::info!(
                delay_secs = delay.as_secs(),
                "shutdown: /readyz answers 503; still accepting for shutdown_delay_secs"
            );
            tokio::time::sleep(delay).await;
        }
        signal_state.shutdown.cancel();
        tracing::info!("shutdown: no longer accepting; draining in-flight requests");
        stop.cancel();
        started_tx.notify_one();
    });
    let mut sessions = state.sessions.subscribe();
    let drained = async move {
        accepting.await;
        // Upgraded connections are no longer the accept loop's: wait for the
        // sessions too.
        let _ = sessions.wait_for(|open| *open == 0).await;
    };
    tokio::select! {
        () = drained => Ok(()),
        () = async {
            started.notified().await;
            tokio::time::sleep(grace).await;
        } => {
            tracing::warn!(grace_secs = grace.as_secs(), "shutdown: grace period over; closing remaining connections");
            Ok(())
        }
    }
}

pub use conn::{LISTEN_BACKLOG, bind, connection_cap, file_limit};
