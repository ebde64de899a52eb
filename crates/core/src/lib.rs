//! Switchyard core: configuration, the catalog, provider adapters and the execution
//! pipeline. Usable as a library: [`embed::Gateway`] runs canonical requests
//! in-process (see its module for an example); the HTTP server is a layer over
//! the [`Engine`] underneath it ([`Engine::execute`]).
//!
//! # Cargo features
//!
//! Both on by default; `default-features = false` leaves them out.
//!
//! - `yaml`: configuration from YAML: [`embed::Gateway::from_yaml`],
//!   [`embed::Gateway::from_file`], [`ConfigSource::parse`], [`load`]. Without
//!   it, [`embed::Gateway::builder`] and [`embed::Gateway::from_raw`] build the
//!   configuration, validated as a file is.
//! - `metrics`: the series listed in [`embed`], recorded through the `metrics`
//!   facade. Without it nothing is recorded and the `metrics` crate is not
//!   linked; with it, `gateway.metrics: false` still turns them off.
//!
//! The library handles no signals (the `switchyard` binary does) and installs
//! nothing process-wide.
//!
//! # MSRV
//!
//! Rust 1.89 (`rust-version`): the highest of what the code uses (let-chains,
//! 1.88) and of its locked dependencies' own `rust-version` (serde-saphyr: 1.89).
//! Raising it is a minor-version change, noted in the changelog. It is checked
//! by clippy's `incompatible_msrv` lint, not by a build on that toolchain.

#![warn(missing_docs)]

pub mod access;
pub mod adaptive;
pub mod app_policy;
pub mod batches;
pub mod breaker;
pub mod cache;
pub mod catalog;
pub mod client;
pub mod clock;
mod compaction;
pub mod config;
pub mod continuity;
pub mod credentials;
pub mod destinations;
pub mod discover;
pub mod embed;
pub mod error;
pub mod estimate;
pub mod exec;
pub mod filter;
pub mod health_sync;
pub mod hosted;
pub mod intent;
pub mod jobs;
pub mod limits;
pub mod mock;
pub mod otel;
pub mod record;
pub mod refusals;
pub mod runtime;
pub mod state;
pub mod stored_responses;
mod strategy;
pub mod structured;
mod telemetry;
pub mod upstream;
pub mod util;

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;

pub use catalog::{Catalog, InvalidRegistry, Plan};
pub use config::{ConfigError, ConfigSource};
pub use error::GatewayError;
pub use exec::{Delivery, Inbound, Served, Success, TokenCount};
pub use record::{RecordSink, RequestRecord, SharedSink};
/// The wire types and translators the core is built on.
pub use switchyard_protocol as protocol;

use upstream::ProviderRuntime;

/// Loading or compiling the configuration failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read, interpolated or parsed.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The configuration was refused: every problem, with its line.
    #[error("{0}")]
    Invalid(#[from] InvalidRegistry),
    /// A provider's HTTP client could not be built (its TLS setup, say).
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Locate, parse and compile a configuration (flag path, else `SWITCHYARD_CONFIG`,
/// else the embedded default).
#[cfg(feature = "yaml")]
pub fn load(path: Option<&std::path::Path>) -> Result<(ConfigSource, Catalog), LoadError> {
    let source = ConfigSource::locate(path)?;
    let raw = source.parse()?;
    let catalog = Catalog::compile(&raw, &source.name, &|k| std::env::var(k).ok())?;
    Ok((source, catalog))
}

/// One immutable configuration generation: the catalog plus the provider runtimes
/// it uses. Requests hold an `Arc<Snapshot>` for their whole life, so a reload never
/// changes the rules under a request in flight.
#[derive(Debug)]
pub struct Snapshot {
    /// The compiled configuration this generation serves.
    pub catalog: Catalog,
    runtimes: HashMap<String, Arc<ProviderRuntime>>,
}

impl Snapshot {
    /// Build a snapshot, reusing the runtimes (connection pools) of `previous` for
    /// providers whose name, wire, endpoint and client options are unchanged (a
    /// rotated certificate file, reloaded, builds a new client).
    pub fn build(catalog: Catalog, previous: Option<&Snapshot>) -> Result<Snapshot, LoadError> {
        let mut runtimes = HashMap::new();
        for p in &catalog.providers {
            if p.wire().is_none() {
                continue;
            }
            let reused = previous.and_then(|prev| {
                let same = prev.catalog.provider(&p.name).is_some_and(|old| {
                    old.endpoint == p.endpoint && old.kind == p.kind && old.client == p.client
                });
                same.then(|| prev.runtimes.get(&p.name).cloned()).flatten()
            });
            let rt = match reused {
                Some(rt) => rt,
                None => Arc::new(
                    ProviderRuntime::new(&catalog.settings, p)
                        .map_err(|e| LoadError::Client(format!("provider {}: {e}", p.name)))?,
                ),
            };
            runtimes.insert(p.name.clone(), rt);
        }
        Ok(Snapshot { catalog, runtimes })
    }
}

/// The engine under every way in (the HTTP server, [`embed::Gateway`]): the
/// current snapshot (swapped atomically on reload), the runtime state that
/// outlives snapshots, and the sink request records go to. It runs requests
/// already parsed ([`Inbound`]); a library caller uses [`embed::Gateway`].
pub struct Engine {
    current: ArcSwap<Snapshot>,
    /// Breaker, latency and in-flight state: outlives snapshots.
    pub runtime: Arc<runtime::Runtime>,
    /// Where every request's record goes.
    pub sink: SharedSink,
}

impl Engine {
    /// A gateway serving `catalog`, records to `sink`, with in-process runtime
    /// state and no limits ([`runtime::Runtime::default`]).
    pub fn new(catalog: Catalog, sink: SharedSink) -> Result<Self, LoadError> {
        Self::with_runtime(catalog, sink, runtime::Runtime::default())
    }

    /// [`Engine::new`] on the given runtime state: shared implementations of the
    /// [`state`] traits, limits ([`runtime::Runtime::admission`]), a seal for the
    /// continuation data handed to clients ([`runtime::Runtime::seal`]).
    pub fn with_runtime(
        catalog: Catalog,
        sink: SharedSink,
        runtime: runtime::Runtime,
    ) -> Result<Self, LoadError> {
        runtime.health.set_config(catalog.settings.breaker);
        let snap = Snapshot::build(catalog, None)?;
        Ok(Self { current: ArcSwap::from_pointee(snap), runtime: Arc::new(runtime), sink })
    }

    /// The snapshot a new request should use.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Swap in a new catalog; requests in flight finish on the old one. Breaker,
    /// throttle, latency and per-key health state carry over for every identity the
    /// new catalog still has; half-open probe flags never do.
    pub fn reload(&self, catalog: Catalog) -> Result<(), LoadError> {
        let prev = self.current.load();
        let snap = Snapshot::build(catalog, Some(&prev))?;
        let c = &snap.catalog;
        self.runtime.health.set_config(c.settings.breaker);
        self.runtime.health.retain_for_reload(&|key| {
            c.provider(&key.provider).is_some_and(|p| {
                if p.keys.is_empty() {
                    key.credential == breaker::NO_CREDENTIAL
                } else {
                    p.keys.iter().any(|k| k.fingerprint() == key.credential)
                }
            })
        });
        self.runtime.latency.retain(&|identity| c.has_identity(identity));
        self.runtime.destinations.retain(&|identity| c.has_identity(identity));
        self.current.store(Arc::new(snap));
        Ok(())
    }

    /// Re-read and swap in the configuration from `source` (a file path). The old
    /// configuration keeps serving when the new one is invalid.
    #[cfg(feature = "yaml")]
    pub fn reload_from(&self, path: &std::path::Path) -> Result<(), LoadError> {
        let source = ConfigSource::from_path(path)?;
        let raw = source.parse()?;
        let catalog = Catalog::compile(&raw, &source.name, &|k| std::env::var(k).ok())?;
        self.reload(catalog)
    }

    /// Run a parsed request through the pipeline on the current snapshot. The
    /// future owns what it needs (`'static`): it may be spawned, and dropping it
    /// cancels the request.
    pub fn execute(
        &self,
        inbound: Inbound,
    ) -> impl Future<Output = Result<Success, GatewayError>> + Send + 'static {
        // Not an `async fn`: see `Snapshot::execute`.
        self.snapshot().execute(inbound, Arc::clone(&self.runtime), self.sink.clone())
    }

    /// Count a parsed request's input tokens on the current snapshot, on the
    /// deployments a generation of it would use: the upstream's own count where
    /// its wire has a counting endpoint, else an estimate, marked as such
    /// ([`TokenCount::estimated`]). Every client format's counting endpoint comes
    /// here with the [`Inbound`] it would generate with, and encodes the answer in
    /// its own shape. See [`Snapshot::count_tokens`].
    pub async fn count_tokens(&self, inbound: &Inbound) -> Result<TokenCount, GatewayError> {
        self.snapshot().count_tokens(inbound, &self.runtime).await
    }

    /// Embed `embed`'s inputs on the current snapshot: `inbound` is the request
    /// as planned ([`exec::planned_request`] of it, with the caller's context).
    /// Every client format's embeddings endpoint comes here and encodes the
    /// [`exec::Embedded`] in its own shape. See [`Snapshot::embed`].
    pub async fn embed(
        &self,
        inbound: Inbound,
        embed: switchyard_protocol::embeddings::EmbedRequest,
    ) -> Result<exec::Embedded, GatewayError> {
        let runtime = Arc::clone(&self.runtime);
        self.snapshot().embed(inbound, embed, runtime, self.sink.clone()).await
    }

    /// Generate `req`'s images on the current snapshot: `inbound` is the
    /// request as planned ([`exec::planned_image_request`] of it, with the
    /// caller's context). See [`Snapshot::generate_images`].
    pub async fn generate_images(
        &self,
        inbound: Inbound,
        req: switchyard_protocol::images::ImageRequest,
    ) -> Result<exec::Imaged, GatewayError> {
        let runtime = Arc::clone(&self.runtime);
        self.snapshot().generate_images(inbound, req, runtime, self.sink.clone()).await
    }

    /// Submit a media job on the current snapshot for `owner`
    /// ([`stored_responses::owner_of`] the caller): `inbound` is the request as
    /// planned ([`exec::planned_job_request`] of it). The job is kept and
    /// followed until it ends ([`Engine::poll_jobs`]). See
    /// [`Snapshot::submit_job`].
    pub async fn submit_job(
        &self,
        inbound: Inbound,
        req: switchyard_protocol::jobs::JobRequest,
        owner: String,
    ) -> Result<exec::JobSubmitted, GatewayError> {
        let runtime = Arc::clone(&self.runtime);
        self.snapshot().submit_job(inbound, req, owner, runtime, self.sink.clone()).await
    }

    /// `owner`'s job `id`, as last polled; `None`: none (or another's).
    pub async fn job(
        &self,
        owner: &str,
        id: &str,
    ) -> Result<Option<jobs::Job>, jobs::StoreFailure> {
        self.runtime.jobs.get(owner, id).await
    }

    /// Cancel `owner`'s job `id`: its queue is told and it ends cancelled (an
    /// ended job is answered as it is); `None`: no such job.
    pub async fn cancel_job(
        &self,
        owner: &str,
        id: &str,
    ) -> Result<Option<jobs::Job>, jobs::StoreFailure> {
        let Some(job) = self.runtime.jobs.get(owner, id).await? else { return Ok(None) };
        Ok(Some(self.snapshot().cancel_job(job, &self.runtime, &self.sink).await))
    }

    /// Poll the media jobs due now (at most `limit`), each once, whichever
    /// instance submitted them: the gateway's poller calls this every
    /// `gateway.jobs.poll_interval_ms`. How many were polled.
    pub async fn poll_jobs(&self, limit: usize) -> usize {
        exec::poll_due(self, limit).await
    }
}
