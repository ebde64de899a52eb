//! `state:` (where shared runtime state lives), `limits:` (rate limits of
//! projects and users) and `budgets:`, as written.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::config::Spanned;
use crate::limits::{BudgetMode, FailureMode, Limits, PeriodName};

/// `state:`: where counters shared by instances live. Read at start-up (a
/// reload keeps the backend it started with).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// `local` (in this process; the default) or `redis`.
    pub backend: StateBackend,
    /// The Redis server, for `backend: redis`.
    pub redis: Option<RedisConfig>,
    /// What the limits do while Redis cannot be reached.
    pub on_unavailable: FailureMode,
    /// Instances sharing the limits: each takes this share of every limit under
    /// `on_unavailable: local_share`.
    pub expected_instances: u64,
    /// A concurrency slot lapses this long after its holder last renewed it (a
    /// crashed instance's slots come back after it).
    pub lease_ttl_ms: u64,
    /// The response cache's bounds (on the same backend as the counters).
    pub cache: CacheBounds,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self {
            backend: StateBackend::Local,
            redis: None,
            on_unavailable: FailureMode::FailClosed,
            expected_instances: 1,
            lease_ttl_ms: 60_000,
            cache: CacheBounds::default(),
        }
    }
}

/// `state.cache:`: how much the response cache may hold. The in-process store
/// keeps at most `max_entries` answers and `max_bytes` in all, dropping the
/// least recently used; on Redis, entries lapse by their TTL and Redis's own
/// `maxmemory` policy bounds the rest. No answer larger than
/// `max_entry_bytes` is kept, on either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheBounds {
    /// Answers kept in this process, at most.
    pub max_entries: u64,
    /// Bytes kept in this process, at most (keys and serialized answers).
    pub max_bytes: u64,
    /// The largest answer kept, serialized.
    pub max_entry_bytes: u64,
}

impl Default for CacheBounds {
    fn default() -> Self {
        Self { max_entries: 10_000, max_bytes: 64 << 20, max_entry_bytes: 1 << 20 }
    }
}

/// Where shared state lives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateBackend {
    /// In this process: nothing to install, exact for one instance.
    #[default]
    Local,
    /// A Redis server every instance shares.
    Redis,
}

/// `state.redis:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedisConfig {
    /// `redis://[:password@]host:port/db`; `${VAR}` may supply it (`rediss://`, TLS, is refused: not supported yet).
    pub url: String,
    /// One Redis step may take this long before it counts as a failure.
    #[serde(default = "default_redis_timeout")]
    pub timeout_ms: u64,
    /// Prefix of every key (instances of one gateway share it; two gateways on
    /// one Redis use two).
    #[serde(default = "default_prefix")]
    pub prefix: String,
}

fn default_redis_timeout() -> u64 {
    250
}

fn default_prefix() -> String {
    "switchyard".into()
}

/// `limits:`: rate limits by project and by user (a key's own limits are stored
/// with it: `switchyard keys create --rpm …`), and the admission queue.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// By project id or name.
    pub projects: BTreeMap<String, Limits>,
    /// By user id or email.
    pub users: BTreeMap<String, Limits>,
    /// Requests whose every deployment is at capacity wait here for a slot.
    pub queue: QueueConfig,
}

/// `limits.queue:`: a request whose every candidate deployment is at its
/// capacity waits for a slot, at most `max_wait_ms`, with at most
/// `max_waiting` others in this instance; then it is refused (429). Off by
/// default (`max_wait_ms: 0`).
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// The longest a request waits for a slot (0: no queue).
    pub max_wait_ms: u64,
    /// Requests waiting at once in an instance.
    pub max_waiting: usize,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self { max_wait_ms: 0, max_waiting: 256 }
    }
}

/// One entry of `budgets:`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// `gateway`, `key:<id>`, `user:<id or email>` or `project:<id or name>`.
    pub scope: Spanned<String>,
    /// USD per period.
    pub limit_usd: f64,
    /// `day`, `week` or `month` (UTC calendar), or `rolling` (the last
    /// `window_hours`).
    pub period: PeriodName,
    /// A rolling window's length, in hours (with `period: rolling` only).
    #[serde(default)]
    pub window_hours: Option<Spanned<u64>>,
    /// `enforce` (the default: 402 once spent) or `warn` (record, never refuse).
    #[serde(default)]
    pub mode: BudgetMode,
    /// The most one request reserves before it runs (its estimate is capped
    /// here; a model without prices reserves this much).
    #[serde(default = "default_max_reservation")]
    pub max_reservation_usd: f64,
    /// Lower a request's `max_tokens` to what the rest of the budget can pay
    /// for, instead of refusing it (enforce mode).
    #[serde(default)]
    pub lower_max_tokens: bool,
}

fn default_max_reservation() -> f64 {
    1.0
}
