//! Opening the database and everything that hangs off it: migrations, the audit
//! writer (with spill replay and retention), the key-resolving identity, the BYOK
//! sealer and stored access rules. Shared by `serve` and the admin subcommands.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchyard_core::config::raw::{SecurityConfig, StateBackend, StorageConfig};
use switchyard_core::health_sync::Shared;
use switchyard_core::limits::{Counters, Limiter, LimiterConfig, LocalCounters};
use switchyard_core::util::Secret;
use switchyard_core::{Catalog, Engine};
use switchyard_store::audit::{AuditConfig, AuditTask, AuditWriter, RecordStore};
use switchyard_store::redis::RedisCounters;
use switchyard_store::redis_health::RedisHealth;
use switchyard_store::seal::Sealer;
use switchyard_store::{Store, StoreError};

/// Resolve a path from the configuration: relative paths sit next to the config
/// file (or in the working directory for the embedded default).
pub fn beside_config(config: Option<&Path>, path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        return p;
    }
    match config.and_then(Path::parent).filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir.join(p),
        None => p,
    }
}

/// The database URL with a relative SQLite path resolved; `None` for `none`.
pub fn database_url(storage: &StorageConfig, config: Option<&Path>) -> Option<String> {
    let url = storage.url.trim();
    if url.is_empty() || url == "none" {
        return None;
    }
    if let Some(path) = url.strip_prefix("sqlite://")
        && !path.starts_with(':')
    {
        let (file, query) = path.split_once('?').map_or((path, None), |(f, q)| (f, Some(q)));
        let resolved = beside_config(config, file);
        return Some(match query {
            Some(q) => format!("sqlite://{}?{q}", resolved.display()),
            None => format!("sqlite://{}", resolved.display()),
        });
    }
    Some(url.to_owned())
}

/// Connect and migrate. A SQLite file or folder that cannot be written is
/// said as the store says it, naming the path and the key it came from.
pub async fn open(url: &str, storage: &StorageConfig) -> Result<Store, String> {
    let store = open_as_is(url, storage).await?;
    store.migrate().await.map_err(|e| format!("database migration failed: {e}"))?;
    Ok(store)
}

/// Connect, leaving the schema as it is: for reading only (`check`), so that
/// checking a new release's file against the production database does not
/// upgrade it.
pub async fn open_as_is(url: &str, storage: &StorageConfig) -> Result<Store, String> {
    Store::connect_with(url, storage.max_connections).await.map_err(|e| match e {
        StoreError::Invalid(why) => format!("storage.url: {why}"),
        e => format!("cannot open the database: {e}"),
    })
}

/// The seal for continuation data in answers (thinking signatures): keyed by the
/// gateway secret when one is set, so every instance and restart opens the tokens;
/// else at random for this process (said once in the log).
pub fn continuity_seal(
    security: &SecurityConfig,
) -> Result<Arc<dyn switchyard_core::protocol::Seal>, String> {
    use switchyard_store::seal::ContinuitySeal;
    let seal = match std::env::var(&security.secret_env).ok().filter(|s| !s.is_empty()) {
        Some(secret) => ContinuitySeal::from_secret(&secret)
            .map_err(|e| format!("{}: {e}", security.secret_env))?,
        None => {
            tracing::info!(
                "{} is not set: reasoning handed to clients (encrypted_content) continues only on this instance until it restarts",
                security.secret_env
            );
            ContinuitySeal::ephemeral().map_err(|e| e.to_string())?
        }
    };
    Ok(Arc::new(seal))
}

/// The BYOK sealer from the environment, if a gateway secret is set.
pub fn sealer(security: &SecurityConfig) -> Result<Option<Sealer>, String> {
    let Some(secret) = std::env::var(&security.secret_env).ok().filter(|s| !s.is_empty()) else {
        return Ok(None);
    };
    let id = std::env::var(&security.secret_id_env)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "k1".to_owned());
    let mut sealer =
        Sealer::new(&secret, &id).map_err(|e| format!("{}: {e}", security.secret_env))?;
    if let Ok(previous) = std::env::var(&security.previous_secrets_env) {
        for entry in previous.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((pid, psecret)) = entry.split_once(':') else {
                return Err(format!(
                    "{}: expected id:secret entries",
                    security.previous_secrets_env
                ));
            };
            sealer = sealer
                .with_previous(psecret, pid)
                .map_err(|e| format!("{}: {e}", security.previous_secrets_env))?;
        }
    }
    Ok(Some(sealer))
}

/// The limits' counters the configuration asks for (`state:`): in this process,
/// or on Redis. A Redis server that does not answer at start-up is said in the
/// log, not fatal: the limits apply their failure mode until it answers.
pub async fn limiter(catalog: &Catalog, store: Option<&Store>) -> Result<Limiter, String> {
    let st = &catalog.state;
    let config = LimiterConfig {
        on_unavailable: st.on_unavailable,
        expected_instances: st.expected_instances,
        lease_ttl: Duration::from_millis(st.lease_ttl_ms),
        metrics: catalog.settings.metrics,
    };
    let backend: Arc<dyn Counters> = match (st.backend, &st.redis) {
        (StateBackend::Redis, Some(r)) => {
            let counters =
                RedisCounters::new(&r.url, &r.prefix, Duration::from_millis(r.timeout_ms))
                    .map_err(|e| format!("state.redis.url: {e}"))?;
            match counters.ping().await {
                Ok(()) => tracing::info!("limits are counted on Redis (shared by every instance)"),
                Err(e) => tracing::error!(
                    error = %e,
                    mode = st.on_unavailable.as_str(),
                    "Redis does not answer: limits apply their failure mode until it does"
                ),
            }
            Arc::new(counters)
        }
        (StateBackend::Redis, None) => return Err("state.redis.url is required".into()),
        (StateBackend::Local, _) => Arc::new(LocalCounters::default()),
    };
    let limiter = Limiter::new(backend, config);
    limiter.prime_metrics();
    // Budgets are rebuilt from the request records when a counter is missing.
    Ok(match store {
        Some(s) => limiter.with_ledger(Arc::new(s.clone())),
        None => limiter,
    })
}

/// The response cache the configuration asks for (`state:`): in this process
/// within `state.cache`'s bounds, or on the Redis the counters use.
pub fn response_cache(
    catalog: &Catalog,
) -> Result<Arc<dyn switchyard_core::state::ResponseCache>, String> {
    Ok(match on_redis(catalog, "cache")? {
        Some(redis) => Arc::new(redis),
        None => Arc::new(switchyard_core::cache::LocalCache::new(catalog.state.cache)),
    })
}

/// Where conversations' pinned deployments live (prompt-cache affinity): in
/// this process, or on the Redis the counters use, so that every instance
/// sends a conversation's turns to the same deployment.
pub fn affinity_store(
    catalog: &Catalog,
) -> Result<Arc<dyn switchyard_core::state::ResponseCache>, String> {
    keyed_store(catalog, "aff", switchyard_core::cache::AFFINITY_BOUNDS)
}

/// Where generated images are kept for their links: shared as the affinity
/// pins are, so any instance serves a link another made.
pub fn image_store(
    catalog: &Catalog,
) -> Result<Arc<dyn switchyard_core::state::ResponseCache>, String> {
    keyed_store(catalog, "img", switchyard_core::cache::IMAGE_BOUNDS)
}

/// Where the model-based intent classifier's answers are kept: shared as the
/// affinity pins are.
pub fn intent_store(
    catalog: &Catalog,
) -> Result<Arc<dyn switchyard_core::state::ResponseCache>, String> {
    keyed_store(catalog, "intent", switchyard_core::cache::AFFINITY_BOUNDS)
}

/// Where what clients cannot carry between turns is kept (signed thinking for
/// Chat clients, Gemini's thought signatures): on Redis for `state.backend:
/// redis`, so a conversation's next turn may reach any instance; else in this
/// process.
pub fn continuity_store(
    catalog: &Catalog,
) -> Result<Arc<dyn switchyard_core::continuity::ContinuityStore>, String> {
    Ok(match on_redis(catalog, "cont")? {
        Some(redis) => Arc::new(redis),
        None => Arc::new(switchyard_core::continuity::LocalContinuity::default()),
    })
}

/// A small keyed store under `namespace`: Redis for `state.backend: redis`,
/// else in this process within the affinity bounds.
fn keyed_store(
    catalog: &Catalog,
    namespace: &str,
    local: switchyard_core::config::raw::CacheBounds,
) -> Result<Arc<dyn switchyard_core::state::ResponseCache>, String> {
    Ok(match on_redis(catalog, namespace)? {
        Some(redis) => Arc::new(redis),
        None => Arc::new(switchyard_core::cache::LocalCache::new(local)),
    })
}

/// The Redis store under `namespace` for `state.backend: redis`; `None` for
/// `local`, where each caller keeps its own in this process.
fn on_redis(
    catalog: &Catalog,
    namespace: &str,
) -> Result<Option<switchyard_store::redis_cache::RedisCache>, String> {
    let st = &catalog.state;
    match (st.backend, &st.redis) {
        (StateBackend::Redis, Some(r)) => switchyard_store::redis_cache::RedisCache::namespaced(
            &r.url,
            &r.prefix,
            namespace,
            Duration::from_millis(r.timeout_ms),
            catalog.settings.metrics,
        )
        .map(Some)
        .map_err(|e| format!("state.redis.url: {e}")),
        (StateBackend::Redis, None) => Err("state.redis.url is required".into()),
        (StateBackend::Local, _) => Ok(None),
    }
}

/// Health and latency shared on Redis for `state.backend: redis`, its sync
/// task started; `None` for `local` (each instance keeps its own).
pub fn shared_health(catalog: &Catalog) -> Result<Option<Shared>, String> {
    let st = &catalog.state;
    let r = match (st.backend, &st.redis) {
        (StateBackend::Redis, Some(r)) => r,
        (StateBackend::Redis, None) => return Err("state.redis.url is required".into()),
        (StateBackend::Local, _) => return Ok(None),
    };
    let backend = RedisHealth::new(&r.url, &r.prefix, Duration::from_millis(r.timeout_ms))
        .map_err(|e| format!("state.redis.url: {e}"))?;
    let shared = Shared::new(Arc::new(backend), catalog.settings.breaker, catalog.settings.metrics);
    shared.spawn();
    tracing::info!("breakers and latency are shared on Redis (with every instance)");
    Ok(Some(shared))
}

pub fn admin_key(security: &SecurityConfig) -> Option<Secret> {
    std::env::var(&security.admin_key_env).ok().filter(|k| !k.is_empty()).map(Secret::new)
}

/// Load the stored access rules into the gateway's runtime.
pub async fn load_rules(store: &Store, gateway: &Engine) -> Result<usize, String> {
    let rules = store.list_rules().await.map_err(|e| e.to_string())?;
    let n = rules.len();
    gateway.runtime.rules.store(Arc::new(rules.into_iter().map(|r| r.rule).collect()));
    Ok(n)
}

/// The spill file's folder made (as the audit writer would on its first
/// spill) and the file checked writable, so a spill path that cannot be
/// written stops the start, naming it.
pub fn check_spill(storage: &StorageConfig, config: Option<&Path>) -> Result<(), String> {
    let spill = beside_config(config, &storage.spill_path);
    AuditWriter::prepare_spill(&spill).map_err(|why| format!("storage.spill_path: {why}"))
}

/// Start the audit writer after replaying any spill file.
pub async fn start_audit(
    store: &Store,
    catalog: &Catalog,
    config: Option<&Path>,
) -> Result<(AuditWriter, AuditTask), String> {
    let s = &catalog.storage;
    let spill = beside_config(config, &s.spill_path);
    let record_store: Arc<dyn RecordStore> = Arc::new(store.clone());
    // What a replay while running left first (its rows are older), then the
    // spill file itself.
    for file in [AuditWriter::replay_path(&spill), spill.clone()] {
        match AuditWriter::replay_spill(record_store.as_ref(), &file).await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(rows = n, file = %file.display(), "replayed spilled request records")
            }
            Err(e) => tracing::warn!(file = %file.display(), "spill replay failed: {e}"),
        }
    }
    let cfg = AuditConfig {
        queue: s.audit_queue,
        batch: s.audit_batch,
        flush_every: Duration::from_millis(s.audit_flush_ms),
        ..AuditConfig::new(spill)
    };
    AuditWriter::start(record_store, cfg).map_err(|e| e.to_string())
}

/// Reload the stored access rules periodically, so rules changed through another
/// instance (or the CLI) reach this one.
pub fn spawn_rule_refresh(store: Store, gateway: Arc<Engine>, every: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = load_rules(&store, &gateway).await {
                tracing::warn!("access-rule refresh: {e}");
            }
        }
    });
}

/// Hourly, from the first moment: on PostgreSQL, the request tables' day
/// partitions made ahead (every instance runs it; the store makes each day
/// once); then records older than the retention period deleted, and rollups
/// older than theirs (0: kept).
pub fn spawn_retention(store: Store, retention_days: u32, rollup_retention_days: u32) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(3600));
        loop {
            tick.tick().await;
            if let Err(e) = store.ensure_partitions().await {
                tracing::warn!("partition upkeep: {e}");
            }
            // Console sessions that ended (expired or revoked) a day ago are
            // forgotten; a revoked one stays listed that long.
            if let Err(e) = store.purge_sessions(now_ms() - 86_400_000).await {
                tracing::warn!("console sessions: {e}");
            }
            match store.purge_responses(now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "retention: forgot expired stored responses"),
                Err(e) => tracing::warn!("stored responses: {e}"),
            }
            match store.purge_jobs(now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "retention: forgot expired media jobs"),
                Err(e) => tracing::warn!("media jobs: {e}"),
            }
            match store.purge_batches(now_ms()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "retention: forgot expired files and batches"),
                Err(e) => tracing::warn!("batches: {e}"),
            }
            if retention_days > 0 {
                let cutoff = now_ms() - i64::from(retention_days) * 86_400_000;
                match store.delete_records_before(cutoff).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(rows = n, "retention: deleted old request records"),
                    Err(e) => tracing::warn!("retention: {e}"),
                }
            }
            if rollup_retention_days > 0 {
                let cutoff = now_ms() - i64::from(rollup_retention_days) * 86_400_000;
                match store.delete_rollups_before(cutoff).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(rows = n, "retention: deleted old hourly rollups"),
                    Err(e) => tracing::warn!("rollup retention: {e}"),
                }
            }
        }
    });
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_paths_sit_next_to_the_config() {
        let s = StorageConfig::default().url("sqlite://data/sy.db?mode=rwc");
        assert_eq!(
            database_url(&s, Some(Path::new("/etc/sy/config.yaml"))).as_deref(),
            Some("sqlite:///etc/sy/data/sy.db?mode=rwc")
        );
        assert_eq!(database_url(&s, None).as_deref(), Some("sqlite://data/sy.db?mode=rwc"));
        let none = StorageConfig::default().url("none");
        assert_eq!(database_url(&none, None), None);
        let pg = StorageConfig::default().url("postgres://u@h/db");
        assert_eq!(database_url(&pg, None).as_deref(), Some("postgres://u@h/db"));
    }
}
