//! Shared counters on Redis: the limits' [`Counters`] for several instances.
//!
//! Every step is one Lua script, run atomically on the Redis server and timed by
//! its clock (`TIME`), so instances with skewed clocks count alike. The scripts
//! compute what [`LocalCounters`](switchyard_core::limits::LocalCounters) does
//! (GCRA for rates, a sorted set of leases by expiry for concurrency); the
//! conformance suite holds both to it.
//!
//! Keys are `<prefix>:v1:<counter>`. The `v1` is the scripts' data version: a
//! release that changes what a key holds bumps it, so that during a rolling
//! deploy old and new instances never read each other's counters in the wrong
//! shape (each counts on its own keys until the old ones are gone). One request's
//! counters may hash to different slots, so a Redis Cluster is not supported: use
//! one primary (with replicas for failover).
//!
//! A step that does not answer within the timeout is a [`BackendError`]: the
//! limiter applies its failure mode. While the server is unreachable, connecting
//! is retried at most once a second, so requests do not each wait on it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use redis::{Client, Script};
use switchyard_core::continuity::BoxFuture;
use switchyard_core::limits::{
    Acquired, BackendError, Charge, Counters, GiveBack, Level, Meter, Spent,
};
use tokio::sync::OnceCell;

/// The scripts' data version, in every key.
pub(crate) const VERSION: &str = "v1";
/// While unreachable, connect at most this often.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// Microseconds now, on the server's clock; and (Redis < 5) effects replication,
/// which the writes after a `TIME` need.
const NOW: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
";

/// KEYS: the counters. ARGV: the lease, then per counter its kind (`r` rate, `l`
/// lease, `s` spend), limit, window or TTL (ms), amount. Returns `{1, limit,
/// remaining, reset_ms, …}` per counter, or `{0, index, wait}`: wait in ms, -1
/// never, -2 a lease (unknown), -3 a budget counter not seeded.
const ACQUIRE: &str = r"
local lease = ARGV[1]
local levels = {}
local news = {}
for i = 1, #KEYS do
  local b = 1 + (i - 1) * 4
  local kind, limit, span, amount = ARGV[b + 1], tonumber(ARGV[b + 2]), tonumber(ARGV[b + 3]), tonumber(ARGV[b + 4])
  if kind == 'r' then
    if limit <= 0 or amount > limit then return {0, i, -1} end
    local window = span * 1000
    local interval = window / limit
    local tat = tonumber(redis.call('GET', KEYS[i]) or now) or now
    if tat < now then tat = now end
    local new = tat + amount * interval
    local ahead = new - now
    if ahead > window + 0.5 then return {0, i, math.ceil((ahead - window) / 1000)} end
    news[i] = new
    levels[i] = {limit, math.floor((window - ahead + 0.5) / interval), math.ceil(ahead / 1000)}
  elseif kind == 'l' then
    redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
    local held = redis.call('ZCARD', KEYS[i])
    if redis.call('ZSCORE', KEYS[i], lease) then held = held - 1 end
    if held >= limit then return {0, i, -2} end
    levels[i] = {limit, limit - held - 1, 0}
  else
    local h = redis.call('HMGET', KEYS[i], 'seeded', 's', 'r', 'u')
    if not h[1] then return {0, i, -3} end
    local total = (tonumber(h[2]) or 0) + (tonumber(h[3]) or 0) + (tonumber(h[4]) or 0) + amount
    if total > limit then return {0, i, -1} end
    levels[i] = {limit, limit - total, 0}
  end
end
local out = {1}
for i = 1, #KEYS do
  local b = 1 + (i - 1) * 4
  local span = tonumber(ARGV[b + 3])
  if ARGV[b + 1] == 'r' then
    redis.call('SET', KEYS[i], string.format('%.3f', news[i]), 'PX', math.ceil((news[i] - now) / 1000) + 1)
  elseif ARGV[b + 1] == 'l' then
    redis.call('ZADD', KEYS[i], now + span * 1000, lease)
    redis.call('PEXPIRE', KEYS[i], span + 1000)
  else
    redis.call('HINCRBY', KEYS[i], 'r', ARGV[b + 4])
  end
  out[#out + 1] = levels[i][1]
  out[#out + 1] = levels[i][2]
  out[#out + 1] = levels[i][3]
end
return out
";

/// Everything a request gives back, in one call: KEYS are its token counters,
/// then its lease counters, then its budget counters. ARGV: the lease; how many
/// of each; per token counter its limit, window (ms) and delta; per budget
/// counter the amount reserved and the cost (-1: unknown). The same steps as
/// ADJUST, RELEASE and SETTLE.
const GIVE_BACK: &str = r"
local lease = ARGV[1]
local na, nr, ns = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local a = 5
for i = 1, na do
  local limit, window, delta = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  a = a + 3
  if limit > 0 then
    local interval = window * 1000 / limit
    local cur = tonumber(redis.call('GET', KEYS[i]) or now) or now
    if cur < now then cur = now end
    local nxt = cur + delta * interval
    if nxt <= now then
      redis.call('DEL', KEYS[i])
    else
      redis.call('SET', KEYS[i], string.format('%.3f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
    end
  end
end
for i = na + 1, na + nr do redis.call('ZREM', KEYS[i], lease) end
for i = na + nr + 1, na + nr + ns do
  local amount, cost = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  if redis.call('HEXISTS', KEYS[i], 'seeded') == 1 then
    local r = tonumber(redis.call('HINCRBY', KEYS[i], 'r', -amount))
    if r < 0 then redis.call('HSET', KEYS[i], 'r', 0) end
    if cost >= 0 then
      redis.call('HINCRBY', KEYS[i], 's', cost)
    else
      redis.call('HINCRBY', KEYS[i], 'u', amount)
    end
  end
end
return 1
";

/// KEYS[1]: a rate counter. ARGV: limit, window (ms), delta (units; negative
/// gives back, never beyond a full counter).
const ADJUST: &str = r"
local interval = tonumber(ARGV[2]) * 1000 / tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or now) or now
if cur < now then cur = now end
local nxt = cur + tonumber(ARGV[3]) * interval
if nxt <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('%.3f', nxt), 'PX', math.ceil((nxt - now) / 1000) + 1)
end
return 1
";

/// KEYS: lease counters. ARGV: the TTL (ms), then each key's lease. A lapsed
/// lease is not brought back.
const RENEW: &str = r"
local ttl = tonumber(ARGV[1])
for i = 1, #KEYS do
  local score = redis.call('ZSCORE', KEYS[i], ARGV[i + 1])
  if score and tonumber(score) > now then
    redis.call('ZADD', KEYS[i], 'XX', now + ttl * 1000, ARGV[i + 1])
    redis.call('PEXPIRE', KEYS[i], ttl + 1000)
  end
end
return 1
";

/// KEYS[1]: a budget counter. ARGV: spent (micro-dollars), TTL (ms). Only a
/// counter not seeded yet takes it.
const SEED: &str = r"
if redis.call('HSETNX', KEYS[1], 'seeded', 1) == 1 then
  redis.call('HSET', KEYS[1], 's', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
";

/// KEYS[1]: a budget counter. ARGV: the amount reserved, the cost (-1:
/// unknown, the reservation becomes uncertain spend). A counter lost since is
/// left alone (the ledger has the cost).
const SETTLE: &str = r"
if redis.call('HEXISTS', KEYS[1], 'seeded') == 1 then
  local amount = tonumber(ARGV[1])
  local r = tonumber(redis.call('HINCRBY', KEYS[1], 'r', -amount))
  if r < 0 then redis.call('HSET', KEYS[1], 'r', 0) end
  if tonumber(ARGV[2]) >= 0 then
    redis.call('HINCRBY', KEYS[1], 's', ARGV[2])
  else
    redis.call('HINCRBY', KEYS[1], 'u', amount)
  end
end
return 1
";

/// KEYS: lease counters. ARGV[1]: the lease.
const RELEASE: &str = r"
for i = 1, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
return 1
";

/// Counters on one Redis server, shared by every instance using the same URL and
/// prefix.
pub struct RedisCounters {
    link: Link,
    prefix: String,
    scripts: Scripts,
}

/// One Redis server, connected on first use and bounded in time: shared by the
/// counters and the response cache (`redis_cache.rs`).
pub(crate) struct Link {
    client: Client,
    conn: OnceCell<ConnectionManager>,
    /// When connecting last failed (connecting again waits [`RECONNECT_EVERY`]).
    failed_at: Mutex<Option<Instant>>,
    timeout: Duration,
}

struct Scripts {
    give_back: Script,
    seed: Script,
    settle: Script,
    acquire: Script,
    adjust: Script,
    renew: Script,
    release: Script,
}

impl std::fmt::Debug for RedisCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: never printed.
        f.debug_struct("RedisCounters").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

impl RedisCounters {
    /// Counters at `url` under `prefix`; each step may take `timeout`. Nothing
    /// is connected yet: the first step connects (a server down at start-up is a
    /// failure mode, not a failed start).
    pub fn new(url: &str, prefix: &str, timeout: Duration) -> Result<Self, BackendError> {
        let script = |body: &str| Script::new(&format!("{NOW}{body}"));
        Ok(Self {
            link: Link::new(url, timeout)?,
            prefix: format!("{prefix}:{VERSION}:"),
            scripts: Scripts {
                give_back: script(GIVE_BACK),
                seed: script(SEED),
                settle: script(SETTLE),
                acquire: script(ACQUIRE),
                adjust: script(ADJUST),
                renew: script(RENEW),
                release: script(RELEASE),
            },
        })
    }

    /// Connect now, to fail early (start-up says whether Redis answers).
    pub async fn ping(&self) -> Result<(), BackendError> {
        let mut conn = self.connection().await?;
        let pong: Result<String, _> =
            self.bounded(redis::cmd("PING").query_async(&mut conn)).await?;
        pong.map(|_| ()).map_err(|e| BackendError(e.to_string()))
    }

    async fn connection(&self) -> Result<ConnectionManager, BackendError> {
        self.link.connection().await
    }

    async fn bounded<T>(&self, f: impl Future<Output = T>) -> Result<T, BackendError> {
        self.link.bounded(f).await
    }

    fn key(&self, counter: &str) -> String {
        format!("{}{counter}", self.prefix)
    }

    async fn run<T: redis::FromRedisValue>(
        &self,
        inv: redis::ScriptInvocation<'_>,
    ) -> Result<T, BackendError> {
        let mut conn = self.connection().await?;
        self.bounded(inv.invoke_async::<T>(&mut conn))
            .await?
            .map_err(|e| BackendError(e.to_string()))
    }

    async fn acquire_inner(
        &self,
        lease: &str,
        charges: &[Charge],
    ) -> Result<Acquired, BackendError> {
        let mut inv = self.scripts.acquire.prepare_invoke();
        inv.arg(lease);
        for c in charges {
            inv.key(self.key(&c.key));
            let (kind, limit, span, amount) = match c.meter {
                Meter::Rate { limit, window_ms, amount } => ("r", limit, window_ms, amount),
                Meter::Lease { limit, ttl_ms } => ("l", limit, ttl_ms, 1),
                Meter::Spend { limit, amount, ttl_ms } => ("s", limit, ttl_ms, amount),
            };
            inv.arg(kind).arg(limit).arg(span).arg(amount);
        }
        let out: Vec<i64> = self.run(inv).await?;
        decode(&out, charges.len())
    }
}

impl Link {
    /// The server at `url`; each step may take `timeout`. Nothing is connected
    /// yet.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<Self, BackendError> {
        let client = Client::open(url).map_err(|e| BackendError(format!("redis URL: {e}")))?;
        Ok(Self { client, conn: OnceCell::new(), failed_at: Mutex::new(None), timeout })
    }

    pub(crate) async fn connection(&self) -> Result<ConnectionManager, BackendError> {
        if let Some(c) = self.conn.get() {
            return Ok(c.clone());
        }
        {
            let failed = self.failed_at.lock().unwrap_or_else(|e| e.into_inner());
            if failed.is_some_and(|at| at.elapsed() < RECONNECT_EVERY) {
                return Err(BackendError("redis unreachable (retrying in a moment)".into()));
            }
        }
        let connect = || async {
            let manager = ConnectionManager::new(self.client.clone());
            match tokio::time::timeout(self.timeout.max(Duration::from_secs(1)), manager).await {
                Ok(Ok(c)) => Ok(c),
                Ok(Err(e)) => Err(BackendError(e.to_string())),
                Err(_) => Err(BackendError("redis: connecting timed out".into())),
            }
        };
        match self.conn.get_or_try_init(connect).await {
            Ok(c) => Ok(c.clone()),
            Err(e) => {
                *self.failed_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                Err(e)
            }
        }
    }

    pub(crate) async fn bounded<T>(&self, f: impl Future<Output = T>) -> Result<T, BackendError> {
        tokio::time::timeout(self.timeout, f)
            .await
            .map_err(|_| BackendError(format!("redis: no answer within {:?}", self.timeout)))
    }
}

/// The acquire script's answer.
fn decode(out: &[i64], n: usize) -> Result<Acquired, BackendError> {
    let bad = || BackendError(format!("redis: unexpected answer {out:?}"));
    let as_u64 = |v: i64| u64::try_from(v).unwrap_or(0);
    match out {
        [1, rest @ ..] if rest.len() == n * 3 => Ok(Acquired::Granted(
            rest.chunks_exact(3)
                .map(|l| Level {
                    limit: as_u64(l[0]),
                    remaining: as_u64(l[1]),
                    reset_ms: as_u64(l[2]),
                })
                .collect(),
        )),
        [0, index, -3] if *index >= 1 && (*index as usize) <= n => {
            Ok(Acquired::Unseeded { index: (*index as usize) - 1 })
        }
        [0, index, wait] if *index >= 1 && (*index as usize) <= n => Ok(Acquired::Denied {
            index: (*index as usize) - 1,
            retry_after_ms: (*wait >= 0).then_some(as_u64(*wait)),
        }),
        _ => Err(bad()),
    }
}

impl Counters for RedisCounters {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn acquire<'a>(
        &'a self,
        lease: &'a str,
        charges: &'a [Charge],
    ) -> BoxFuture<'a, Result<Acquired, BackendError>> {
        Box::pin(self.acquire_inner(lease, charges))
    }

    fn adjust<'a>(
        &'a self,
        charge: &'a Charge,
        delta: i64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let Meter::Rate { limit, window_ms, .. } = charge.meter else { return Ok(()) };
            if limit == 0 || delta == 0 {
                return Ok(());
            }
            let mut inv = self.scripts.adjust.prepare_invoke();
            inv.key(self.key(&charge.key)).arg(limit).arg(window_ms).arg(delta);
            self.run::<i64>(inv).await.map(|_| ())
        })
    }

    fn release<'a>(
        &'a self,
        lease: &'a str,
        keys: &'a [String],
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            if keys.is_empty() {
                return Ok(());
            }
            let mut inv = self.scripts.release.prepare_invoke();
            for k in keys {
                inv.key(self.key(k));
            }
            inv.arg(lease);
            self.run::<i64>(inv).await.map(|_| ())
        })
    }

    fn seed_spend<'a>(
        &'a self,
        key: &'a str,
        spent: u64,
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let mut inv = self.scripts.seed.prepare_invoke();
            inv.key(self.key(key)).arg(spent).arg(ttl_ms.max(1));
            self.run::<i64>(inv).await.map(|_| ())
        })
    }

    fn give_back<'a>(&'a self, back: &'a GiveBack) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let mut inv = self.scripts.give_back.prepare_invoke();
            inv.arg(&back.lease)
                .arg(back.adjust.len())
                .arg(back.release.len())
                .arg(back.spend.len());
            for (c, delta) in &back.adjust {
                let Meter::Rate { limit, window_ms, .. } = c.meter else {
                    return Err(BackendError("give back: a token charge is not a rate".into()));
                };
                inv.key(self.key(&c.key)).arg(limit).arg(window_ms).arg(*delta);
            }
            for k in &back.release {
                inv.key(self.key(k));
            }
            for (c, cost) in &back.spend {
                let Meter::Spend { amount, .. } = c.meter else {
                    return Err(BackendError("give back: a budget charge is not a spend".into()));
                };
                let cost = cost.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
                inv.key(self.key(&c.key)).arg(amount).arg(cost);
            }
            self.run::<i64>(inv).await.map(|_| ())
        })
    }

    fn settle_spend<'a>(
        &'a self,
        charge: &'a Charge,
        cost: Option<u64>,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            let Meter::Spend { amount, .. } = charge.meter else { return Ok(()) };
            let cost = cost.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
            let mut inv = self.scripts.settle.prepare_invoke();
            inv.key(self.key(&charge.key)).arg(amount).arg(cost);
            self.run::<i64>(inv).await.map(|_| ())
        })
    }

    fn read_spend<'a>(
        &'a self,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Spent>, BackendError>> {
        Box::pin(async move {
            let mut conn = self.connection().await?;
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(self.key(key)).arg("seeded").arg("s").arg("r").arg("u");
            let v: Vec<Option<u64>> = self
                .bounded(cmd.query_async(&mut conn))
                .await?
                .map_err(|e| BackendError(e.to_string()))?;
            Ok(match v.as_slice() {
                [Some(_), s, r, u] => Some(Spent {
                    spent: s.unwrap_or(0),
                    reserved: r.unwrap_or(0),
                    uncertain: u.unwrap_or(0),
                }),
                _ => None,
            })
        })
    }

    fn renew<'a>(
        &'a self,
        leases: &'a [(String, String)],
        ttl_ms: u64,
    ) -> BoxFuture<'a, Result<(), BackendError>> {
        Box::pin(async move {
            if leases.is_empty() {
                return Ok(());
            }
            let mut inv = self.scripts.renew.prepare_invoke();
            inv.arg(ttl_ms);
            for (k, lease) in leases {
                inv.key(self.key(k)).arg(lease);
            }
            self.run::<i64>(inv).await.map(|_| ())
        })
    }
}

#[cfg(test)]
#[path = "redis_tests.rs"]
mod tests;
