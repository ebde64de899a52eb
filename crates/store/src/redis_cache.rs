//! The response cache on Redis: answers shared by every instance using the
//! same URL and prefix.
//!
//! Keys are `<prefix>:v1:cache:<digest>` (the digest is the pipeline's key of
//! the request under one deployment; `v1` the data version, as for the
//! counters). Each answer is a plain string with its TTL (`SET … PX`); a lookup
//! of all the candidates' keys is one `MGET`. Size is bounded by the entry
//! bound the pipeline applies and by Redis's own `maxmemory` policy
//! (`allkeys-lru` suits a cache).
//!
//! Identical requests on several instances share one upstream call: the first
//! claims it (`<prefix>:v1:cache:flight:<key>`, `SET NX PX`, renewed while
//! its call runs and released after its answer is kept), and the others poll the
//! answers' keys and the claim in one `MGET` until the answer is there or the
//! claim is gone.
//!
//! Redis that fails or is slow is a miss (and a put that fails is dropped):
//! the request goes upstream. Each failure counts in
//! `gateway_state_backend_errors_total{backend="redis"}`, and the log says so
//! once when failures start and once when Redis answers again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use switchyard_core::continuity::BoxFuture;
use switchyard_core::limits::BackendError;
use switchyard_core::state::{Claim, Polled, ResponseCache};

use crate::redis::{Link, VERSION};

/// Answers on one Redis server.
pub struct RedisCache {
    link: Link,
    prefix: String,
    /// Failing now (the log says so once per episode).
    failing: AtomicBool,
    metrics: bool,
}

impl std::fmt::Debug for RedisCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: never printed.
        f.debug_struct("RedisCache").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl RedisCache {
    /// Answers at `url` under `prefix`; each step may take `timeout`. Nothing is
    /// connected yet. `metrics`: count failures (`gateway.metrics`).
    pub fn new(
        url: &str,
        prefix: &str,
        timeout: Duration,
        metrics: bool,
    ) -> Result<Self, BackendError> {
        Self::namespaced(url, prefix, "cache", timeout, metrics)
    }

    /// The same store for other small values with a TTL, under
    /// `<prefix>:v1:<namespace>:` (`aff`: prompt-cache affinity pins).
    pub fn namespaced(
        url: &str,
        prefix: &str,
        namespace: &str,
        timeout: Duration,
        metrics: bool,
    ) -> Result<Self, BackendError> {
        Ok(Self {
            link: Link::new(url, timeout)?,
            prefix: format!("{prefix}:{VERSION}:{namespace}:"),
            failing: AtomicBool::new(false),
            metrics,
        })
    }

    fn outcome<T>(&self, result: Result<T, BackendError>) -> Option<T> {
        match result {
            Ok(v) => {
                if self.failing.swap(false, Ordering::Relaxed) {
                    tracing::info!("response cache: Redis answers again");
                }
                Some(v)
            }
            Err(e) => {
                if self.metrics {
                    metrics::counter!("gateway_state_backend_errors_total", "backend" => "redis")
                        .increment(1);
                }
                if !self.failing.swap(true, Ordering::Relaxed) {
                    tracing::warn!(error = %e, "response cache: Redis unavailable, requests go upstream");
                }
                None
            }
        }
    }

    async fn mget(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>, BackendError> {
        let mut conn = self.link.connection().await?;
        let mut cmd = redis::cmd("MGET");
        for k in keys {
            cmd.arg(format!("{}{k}", self.prefix));
        }
        self.link
            .bounded(cmd.query_async::<Vec<Option<Vec<u8>>>>(&mut conn))
            .await?
            .map_err(|e| BackendError(e.to_string()))
    }

    async fn set(&self, key: &str, value: &[u8], ttl_ms: u64) -> Result<(), BackendError> {
        let mut conn = self.link.connection().await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{}{key}", self.prefix)).arg(value).arg("PX").arg(ttl_ms.max(1));
        self.link
            .bounded(cmd.query_async::<()>(&mut conn))
            .await?
            .map_err(|e| BackendError(e.to_string()))
    }
}

/// Give back a claim only if it is still the releaser's (it may have lapsed
/// and been taken by another request since).
const RELEASE: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    return redis.call('DEL', KEYS[1]) end return 0";

/// Extend a claim only if it is still the renewer's.
const RENEW: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
    return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";

impl RedisCache {
    /// The claim on a request's upstream call: beside the answers, never equal
    /// to one's key (those are digests).
    fn claim_key(&self, key: &str) -> String {
        format!("{}flight:{key}", self.prefix)
    }

    async fn set_nx(&self, key: &str, token: &str, ttl_ms: u64) -> Result<bool, BackendError> {
        let mut conn = self.link.connection().await?;
        let mut cmd = redis::cmd("SET");
        cmd.arg(self.claim_key(key)).arg(token).arg("NX").arg("PX").arg(ttl_ms.max(1));
        let set = self.link.bounded(cmd.query_async::<Option<String>>(&mut conn)).await?;
        set.map(|ok| ok.is_some()).map_err(|e| BackendError(e.to_string()))
    }

    /// The answers under `keys`, then the claim on `key`: one `MGET`.
    async fn mget_claimed(
        &self,
        keys: &[String],
        key: &str,
    ) -> Result<Vec<Option<Vec<u8>>>, BackendError> {
        let mut conn = self.link.connection().await?;
        let mut cmd = redis::cmd("MGET");
        for k in keys {
            cmd.arg(format!("{}{k}", self.prefix));
        }
        cmd.arg(self.claim_key(key));
        self.link
            .bounded(cmd.query_async::<Vec<Option<Vec<u8>>>>(&mut conn))
            .await?
            .map_err(|e| BackendError(e.to_string()))
    }

    async fn release_claim(&self, key: &str, token: &str) -> Result<(), BackendError> {
        self.if_claimed(RELEASE, key, token, None).await
    }

    /// Run `script` (RELEASE or RENEW) on the claim on `key` as `token`.
    async fn if_claimed(
        &self,
        script: &str,
        key: &str,
        token: &str,
        ttl_ms: Option<u64>,
    ) -> Result<(), BackendError> {
        let mut conn = self.link.connection().await?;
        let script = redis::Script::new(script);
        let mut call = script.key(self.claim_key(key));
        call.arg(token);
        if let Some(ttl) = ttl_ms {
            call.arg(ttl.max(1));
        }
        self.link
            .bounded(call.invoke_async::<i64>(&mut conn))
            .await?
            .map(drop)
            .map_err(|e| BackendError(e.to_string()))
    }
}

impl ResponseCache for RedisCache {
    fn get<'a>(&'a self, keys: &'a [String]) -> BoxFuture<'a, Option<(usize, Arc<[u8]>)>> {
        Box::pin(async move {
            if keys.is_empty() {
                return None;
            }
            let found = self.outcome(self.mget(keys).await)?;
            found
                .into_iter()
                .enumerate()
                .find_map(|(i, v)| v.map(|bytes| (i, Arc::<[u8]>::from(bytes))))
        })
    }

    fn put(&self, key: String, value: Arc<[u8]>, ttl_ms: u64) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.outcome(self.set(&key, &value, ttl_ms).await);
        })
    }

    fn claim<'a>(&'a self, key: &'a str, token: &'a str, ttl_ms: u64) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            match self.outcome(self.set_nx(key, token, ttl_ms).await) {
                Some(true) => Claim::Led,
                Some(false) => Claim::Busy,
                // Redis failing: every instance calls for itself.
                None => Claim::Alone,
            }
        })
    }

    fn poll<'a>(&'a self, keys: &'a [String], key: &'a str) -> BoxFuture<'a, Polled> {
        Box::pin(async move {
            let Some(mut found) = self.outcome(self.mget_claimed(keys, key).await) else {
                return Polled::Free;
            };
            let claimed = found.pop().flatten().is_some();
            let answer = found.into_iter().enumerate().find_map(|(i, v)| v.map(|b| (i, b)));
            match answer {
                Some((i, bytes)) => Polled::Answer(i, Arc::from(bytes)),
                None if claimed => Polled::Busy,
                None => Polled::Free,
            }
        })
    }

    fn renew<'a>(&'a self, key: &'a str, token: &'a str, ttl_ms: u64) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.outcome(self.if_claimed(RENEW, key, token, Some(ttl_ms)).await);
        })
    }

    fn release<'a>(&'a self, key: &'a str, token: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = self.outcome(self.release_claim(key, token).await);
        })
    }
}

/// What a client cannot carry between turns (Claude's signed thinking for Chat
/// clients, Gemini's thought signatures; `core::continuity`), kept on Redis so
/// that the next turn continues on whichever instance it reaches. A Redis that
/// fails is a miss: the turn goes on as if the thinking were lost.
impl switchyard_core::continuity::ContinuityStore for RedisCache {
    fn put(&self, key: String, value: Vec<u8>, ttl: Duration) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
            let _ = self.outcome(self.set(&key, &value, ttl_ms).await);
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            let found = self.outcome(self.mget(std::slice::from_ref(&key.to_owned())).await)?;
            found.into_iter().next().flatten()
        })
    }
}

#[cfg(test)]
#[path = "redis_cache_tests.rs"]
mod tests;
