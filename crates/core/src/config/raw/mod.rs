//! The configuration file as written: plain serde types, nothing resolved yet.
//! [`crate::catalog::Catalog::compile`] validates and compiles it.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::{Span, Spanned};
use serde::Deserialize;

mod adaptive;
mod console;
mod intent;
mod models;
mod providers;
mod routes;
mod state;
mod telemetry;

pub use adaptive::*;
pub use console::*;
pub use intent::*;
pub use models::*;
pub use providers::*;
pub use routes::*;
pub use state::*;
pub use telemetry::*;

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// `gateway:`: listening, limits, timeouts, breakers.
    #[serde(default)]
    pub gateway: GatewaySettings,
    /// `providers:`, by the name models and routes use.
    #[serde(default)]
    pub providers: BTreeMap<ProviderName, ProviderConfig>,
    /// `models:`: the catalog.
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// `routes:`, in order: the first whose pattern matches a model serves it.
    #[serde(default)]
    pub routes: Vec<RouteConfig>,
    /// Access rules (more can be added at runtime through the admin API).
    #[serde(default)]
    pub access_rules: Vec<RuleConfig>,
    /// `storage:`: the database and the audit queue.
    #[serde(default)]
    pub storage: StorageConfig,
    /// `security:`: which variables hold the gateway's secrets.
    #[serde(default)]
    pub security: SecurityConfig,
    /// `state:`: where limits' counters live (this process, or Redis). Its
    /// problems are reported at the block's line.
    #[serde(default)]
    pub state: Spanned<StateConfig>,
    /// `limits:`: rate limits of projects and users (problems at the block's
    /// line).
    #[serde(default)]
    pub limits: Spanned<LimitsConfig>,
    /// `budgets:`: USD per period, per scope.
    #[serde(default)]
    pub budgets: Vec<BudgetConfig>,
    /// `console:`: how operators sign in to the web console (problems at the
    /// block's line).
    #[serde(default)]
    pub console: Spanned<ConsoleConfig>,
    /// `telemetry:`: OpenTelemetry traces (problems at the block's line).
    #[serde(default)]
    pub telemetry: Spanned<TelemetryConfig>,
    /// `intent:`: what the `auto` models route to, by class (problems at the
    /// block's line).
    #[serde(default)]
    pub intent: Spanned<IntentConfig>,
    /// Not in the file: how the parsed text maps back to the file as written,
    /// so that compile problems name the written line and never a variable's
    /// value. Empty for a configuration built in code.
    #[serde(skip)]
    pub source_map: super::SourceMap,
    /// Not in the file: the directory its relative paths (a provider's
    /// certificate files) are resolved against, the file's own. `None` (text
    /// with no file, a configuration built in code): the working directory.
    #[serde(skip)]
    pub base_dir: Option<std::path::PathBuf>,
}

/// Where users, keys, rules, BYOK credentials and request records live.
///
/// ```
/// use switchyard_core::embed::StorageConfig;
///
/// let pg = StorageConfig::default().url("postgres://sy@db/sy").retention_days(90);
/// assert_eq!((pg.url.as_str(), pg.retention_days), ("postgres://sy@db/sy", 90));
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct StorageConfig {
    /// `sqlite://path` (relative paths are next to the config file; the embedded
    /// default uses `./switchyard-data/switchyard.db`; a subdirectory, so the
    /// database's writes never wake the config-file watcher), `postgres://…`, or
    /// `none` (no database:
    /// static keys only, records to the log).
    pub url: String,
    /// Request records older than this are deleted (0 keeps them forever).
    pub retention_days: u32,
    /// Hourly rollups older than this are deleted: the fine ones (every
    /// combination of model, provider, project, user and key, which filtered
    /// reports read) and the hourly slices. The daily slices (one row per
    /// model, provider, project, user and key per day) are kept. 0 keeps all.
    pub rollup_retention_days: u32,
    /// Bounded audit queue between the request path and the database.
    pub audit_queue: usize,
    /// Most records written in one insert.
    pub audit_batch: usize,
    /// Longest a record waits in a partial batch, in milliseconds.
    pub audit_flush_ms: u64,
    /// Where rows go when the queue overflows or the database is down; replayed
    /// once the database takes rows again, and at start. Relative to the config
    /// file.
    pub spill_path: String,
    /// Most connections the instance opens to the database (default: 10 to
    /// PostgreSQL, 8 to a SQLite file). Size it so that every instance's, and
    /// the operator commands', fit the server's `max_connections`.
    pub max_connections: Option<u32>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            url: "sqlite://switchyard-data/switchyard.db".to_owned(),
            retention_days: 30,
            rollup_retention_days: 90,
            audit_queue: 10_000,
            audit_batch: 500,
            audit_flush_ms: 200,
            spill_path: "switchyard-audit-spill.jsonl".to_owned(),
            max_connections: None,
        }
    }
}

impl StorageConfig {
    /// The database: `sqlite://path`, `postgres://…` or `none`.
    #[must_use]
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = url.into();
        self
    }

    /// Days request records are kept (0: forever).
    #[must_use]
    pub fn retention_days(mut self, days: u32) -> Self {
        self.retention_days = days;
        self
    }

    /// Days the hourly rollups are kept (0: forever).
    #[must_use]
    pub fn rollup_retention_days(mut self, days: u32) -> Self {
        self.rollup_retention_days = days;
        self
    }

    /// The audit queue's bound, batch size and longest wait (ms) of a partial batch.
    #[must_use]
    pub fn audit(mut self, queue: usize, batch: usize, flush_ms: u64) -> Self {
        (self.audit_queue, self.audit_batch, self.audit_flush_ms) = (queue, batch, flush_ms);
        self
    }

    /// Where records go when the queue overflows or the database is down.
    #[must_use]
    pub fn spill_path(mut self, path: impl Into<String>) -> Self {
        self.spill_path = path.into();
        self
    }

    /// Most connections to the database.
    #[must_use]
    pub fn max_connections(mut self, n: u32) -> Self {
        self.max_connections = Some(n);
        self
    }
}

/// Secrets the gateway reads from the environment (never from this file).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecurityConfig {
    /// Variable holding the gateway secret that BYOK keys are encrypted under.
    pub secret_env: String,
    /// Variable holding the id of the current secret (for rotation; default "k1").
    pub secret_id_env: String,
    /// Variables holding previous secrets as `id:secret` (comma-separated), so keys
    /// sealed under them can still be opened until `switchyard secrets rotate`.
    pub previous_secrets_env: String,
    /// Variable holding a bootstrap admin key (administers a fresh install).
    pub admin_key_env: String,
    /// How long a key lookup is cached (revocation takes effect within this).
    pub key_cache_ms: u64,
}

impl Default for SecurityConfig {
    fn default() -> Self {
        Self {
            secret_env: "SWITCHYARD_SECRET".to_owned(),
            secret_id_env: "SWITCHYARD_SECRET_ID".to_owned(),
            previous_secrets_env: "SWITCHYARD_PREVIOUS_SECRETS".to_owned(),
            admin_key_env: "SWITCHYARD_ADMIN_KEY".to_owned(),
            key_cache_ms: 5_000,
        }
    }
}

/// An access rule as written. At most one subject field; none means everyone.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// The rule's name, which a denial quotes (`authz denied [<name>]`).
    pub name: Spanned<String>,
    /// Allow or deny.
    pub effect: crate::access::Effect,
    /// Glob over model ids or route ids.
    pub pattern: String,
    /// Subject: callers with this role.
    #[serde(default)]
    pub role: Option<crate::access::CallerRole>,
    /// Subject: members of this group.
    #[serde(default)]
    pub group: Option<String>,
    /// Subject: requests attributed to this project (by id or name).
    #[serde(default)]
    pub project: Option<String>,
    /// Subject: this user (by id or email).
    #[serde(default)]
    pub user: Option<String>,
    /// Why, as a denied caller is told.
    pub reason: String,
    /// Among the matching rules the highest decides, a deny winning a tie (default 0).
    #[serde(default)]
    pub priority: i64,
}

impl RuleConfig {
    /// A rule for everyone (no subject) at priority 0, as YAML's defaults leave it.
    pub fn new(
        name: impl Into<String>,
        effect: crate::access::Effect,
        pattern: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            name: unlocated(name.into()),
            effect,
            pattern: pattern.into(),
            role: None,
            group: None,
            project: None,
            user: None,
            reason: reason.into(),
            priority: 0,
        }
    }
}

/// Data-governance declarations of a provider (or a model).
///
/// ```
/// use switchyard_core::embed::Governance;
///
/// let eu = Governance::default().european(true).no_retain(true);
/// assert_eq!((eu.european, eu.no_retain), (Some(true), Some(true)));
/// ```
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct Governance {
    /// Data stays in the EU.
    #[serde(default)]
    pub european: Option<bool>,
    /// The provider contractually does not retain prompts or completions.
    #[serde(default)]
    pub no_retain: Option<bool>,
}

impl Governance {
    /// Whether data stays in the EU.
    #[must_use]
    pub fn european(mut self, european: bool) -> Self {
        self.european = Some(european);
        self
    }

    /// Whether prompts and completions are contractually not retained.
    #[must_use]
    pub fn no_retain(mut self, no_retain: bool) -> Self {
        self.no_retain = Some(no_retain);
        self
    }
}

/// The `gateway:` section. Each field defaults to the value [`Default`] gives; a
/// builder changes them in place ([`GatewayBuilder::settings`](crate::embed::GatewayBuilder::settings)).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct GatewaySettings {
    /// Address to listen on.
    pub listen: String,
    /// Model used when a request names none.
    pub default_model: Option<Spanned<String>>,
    /// Forward ids that are not in the catalog through the first matching route.
    pub allow_unlisted_models: bool,
    /// Namespace prefixes clients may put before a model id (`sy/auto` and
    /// `switchyard/auto` both mean `auto`); stripped before lookup.
    pub model_prefixes: Vec<String>,
    /// Gateway API keys accepted from clients. Empty strings are ignored; an empty
    /// list leaves the gateway open (a warning is logged at start).
    pub api_keys: Vec<String>,
    /// Largest request body accepted, in bytes (a WebSocket message too). The
    /// default, 20 MiB, takes a long conversation with several large images;
    /// Anthropic accepts up to 32 MB.
    pub max_body_bytes: usize,
    /// Deepest JSON nesting accepted in a request body.
    pub max_json_depth: usize,
    /// Most JSON values (arrays, objects, and their elements) accepted in a
    /// request body: what bounds the memory its parse takes, whatever its size.
    pub max_json_elements: usize,
    /// Largest whole (non-streamed) upstream answer read, in bytes; a larger one
    /// fails the attempt. A stream's events are capped one by one instead.
    pub max_response_bytes: usize,
    /// How long in-flight requests and streams may take to finish on shutdown.
    pub shutdown_grace_secs: u64,
    /// On shutdown, how long `/readyz` answers 503 while new connections are
    /// still served, before the listener closes: the time a load balancer
    /// takes to see the instance go (its check interval times its threshold).
    /// 0: the listener closes at once (Kubernetes' preStop pause does this
    /// job there).
    pub shutdown_delay_secs: u64,
    /// Upstream timeouts.
    pub timeouts: Timeouts,
    /// Client connections: how many, and how long each may wait idle.
    pub connections: ConnectionSettings,
    /// Circuit-breaker tuning.
    pub breaker: BreakerSettings,
    /// Record the gateway's metrics series (through the `metrics` facade: the
    /// server's `/metrics`, or a library's own recorder). False: none is
    /// recorded, whatever recorder is installed.
    pub metrics: bool,
    /// Seconds between checks of the config file for changes (0 disables polling;
    /// file-change notifications and SIGHUP still reload).
    pub reload_poll_secs: u64,
    /// Host names a request's `Host` may name, besides IP addresses and
    /// `localhost`, while the gateway needs no key (`example.com`, no port).
    pub allowed_hosts: Vec<Spanned<String>>,
    /// Browser origins (`https://app.example.com`) that may open WebSocket
    /// sessions, and call at all while the gateway needs no key. Empty: none.
    pub allowed_origins: Vec<Spanned<String>>,
    /// A second address that serves only `/metrics`, without a key.
    pub metrics_listen: Option<Spanned<String>>,
    /// Stored Responses (`store`, `previous_response_id`).
    pub responses: ResponsesSettings,
    /// Media jobs (`POST /v1/jobs`): how they are followed and kept.
    pub jobs: JobSettings,
    /// Batches (`/v1/files`, `/v1/batches`): uploads and how they are run.
    pub batches: BatchSettings,
}

/// `gateway.responses`: the Responses API's server-side state.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ResponsesSettings {
    /// Whether a Responses request that does not say `store` is stored, as
    /// OpenAI's own API does (default false: a gateway keeps conversations
    /// only when asked, and a request that does not ask is passed on as it
    /// came). `store: false` is never stored; `store: true` always is, unless
    /// `retention_hours` is 0.
    pub store_by_default: bool,
    /// How long a stored response lives, in hours (0: nothing is stored, and a
    /// request naming a `previous_response_id` is answered 404).
    pub retention_hours: u64,
}

impl Default for ResponsesSettings {
    fn default() -> Self {
        // 30 days, as OpenAI keeps them.
        Self { store_by_default: false, retention_hours: 720 }
    }
}

/// `gateway.jobs`: how media jobs on a queue are followed.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct JobSettings {
    /// How often a job's queue is asked where it is, in milliseconds.
    pub poll_interval_ms: u64,
    /// The most times one job is asked about: past it, the job is cancelled
    /// upstream and fails (`job_timeout`). With the interval, the longest a
    /// job may run (2 s × 1800: an hour).
    pub max_polls: u32,
    /// Polls in a row that get no answer (the provider down, the job unknown
    /// to it) before the job fails (`job_lost`).
    pub max_failed_polls: u32,
    /// How long a finished job is kept for its owner to read, in hours.
    pub retention_hours: u64,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            poll_interval_ms: 2_000,
            max_polls: 1_800,
            max_failed_polls: 10,
            retention_hours: 720,
        }
    }
}

/// `gateway.batches`: uploaded files and how batches are run.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct BatchSettings {
    /// The largest file an upload may be, in bytes.
    pub max_file_bytes: usize,
    /// Lines of one batch in flight at once, in each instance running it.
    pub concurrency: usize,
    /// How often each instance looks for batches to run, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long an instance holds a batch it runs between renewals (after
    /// each round of lines), in milliseconds: another instance picks a batch
    /// up this long after its runner stopped. Longer than a line may take.
    pub lease_ms: u64,
    /// How often a batch handed to a provider's own batch API
    /// (`batch_api: true`) is asked after, in milliseconds.
    pub provider_poll_interval_ms: u64,
    /// How long files, and batches once ended, are kept, in hours.
    pub retention_hours: u64,
}

impl Default for BatchSettings {
    fn default() -> Self {
        Self {
            max_file_bytes: 50 << 20,
            concurrency: 4,
            poll_interval_ms: 1_000,
            lease_ms: 300_000,
            provider_poll_interval_ms: 60_000,
            retention_hours: 720,
        }
    }
}

/// Circuit-breaker tuning (per provider credential).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct BreakerSettings {
    /// Decayed failure score at which a breaker opens.
    pub threshold: f64,
    /// Time for a failure's weight to halve.
    pub half_life_ms: u64,
    /// Open → half-open after max(cooldown, Retry-After), at most max_cooldown.
    pub cooldown_ms: u64,
    /// The longest a breaker stays open, whatever the `Retry-After`.
    pub max_cooldown_ms: u64,
    /// How long a credential answered 401/403 is taken out of rotation.
    pub quarantine_ms: u64,
}

impl Default for BreakerSettings {
    fn default() -> Self {
        Self {
            threshold: 5.0,
            half_life_ms: 30_000,
            cooldown_ms: 30_000,
            max_cooldown_ms: 300_000,
            quarantine_ms: 300_000,
        }
    }
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".to_owned(),
            default_model: None,
            allow_unlisted_models: false,
            model_prefixes: Vec::new(),
            api_keys: Vec::new(),
            max_body_bytes: 20 * 1024 * 1024,
            max_json_depth: 64,
            max_json_elements: 256 * 1024,
            max_response_bytes: 64 * 1024 * 1024,
            shutdown_grace_secs: 600,
            shutdown_delay_secs: 0,
            timeouts: Timeouts::default(),
            connections: ConnectionSettings::default(),
            breaker: BreakerSettings::default(),
            metrics: true,
            reload_poll_secs: 5,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            metrics_listen: None,
            responses: ResponsesSettings::default(),
            jobs: JobSettings::default(),
            batches: BatchSettings::default(),
        }
    }
}

/// Client connections to the gateway's listener. Read when the server starts (a
/// reload does not change them).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ConnectionSettings {
    /// Most client connections open at once (WebSocket sessions included); more
    /// wait in the listen backlog. 0: half the process's open-file limit, so the
    /// other half stays for upstream connections, the database and files.
    pub max: usize,
    /// A request's headers must arrive within this, counted from its first byte
    /// (from the accept, for a connection's first request): a client that sends
    /// nothing, or a byte now and then, is disconnected.
    pub header_read_timeout_ms: u64,
    /// A connection with no request in flight is closed after this.
    pub idle_timeout_ms: u64,
    /// HTTP/2: most streams (requests) open at once on one connection.
    pub http2_max_concurrent_streams: u32,
    /// HTTP/2: largest header list accepted, in bytes.
    pub http2_max_header_list_bytes: u32,
}

impl Default for ConnectionSettings {
    fn default() -> Self {
        Self {
            max: 0,
            header_read_timeout_ms: 10_000,
            idle_timeout_ms: 60_000,
            http2_max_concurrent_streams: 128,
            http2_max_header_list_bytes: 64 * 1024,
        }
    }
}

/// Upstream timeouts, in milliseconds.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect_ms: u64,
    /// From sending the request to the response headers (per attempt).
    pub first_byte_ms: u64,
    /// Longest silence between two chunks of a streamed answer. Reasoning models at
    /// high effort think for minutes without a word: the default allows five.
    pub idle_ms: u64,
    /// The whole request, all attempts together, until the answer (or a stream's
    /// first content); a stream that is still receiving has no total cap.
    pub request_ms: u64,
    /// While a committed stream's upstream is silent, a keep-alive goes to the
    /// client this often (an SSE comment; Anthropic's `ping` event), so proxies
    /// with an idle timeout (often 60 s) do not cut it.
    pub keepalive_ms: u64,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect_ms: 10_000,
            first_byte_ms: 120_000,
            idle_ms: 300_000,
            request_ms: 600_000,
            keepalive_ms: 15_000,
        }
    }
}

// Its tests read YAML.
#[cfg(test)]
#[cfg(feature = "yaml")]
#[path = "raw_tests.rs"]
mod tests;
