//! Health and latency shared on Redis: the [`HealthSync`] behind
//! [`switchyard_core::health_sync::Shared`] for `state.backend: redis`.
//!
//! Keys, under `<prefix>:v1:` like the counters':
//!
//! - `health`: a hash, one field per credential (`provider\ncredential`), its
//!   [`SharedRecord`] encoded. Publishing merges each record over the stored one
//!   in one script, by the same rule as [`SharedRecord::merge`] (an open wins
//!   with a later cooldown end, a close only over an open of its own epoch,
//!   deadlines take the later), and answers the whole hash.
//! - `probe:<provider>:<credential>:<epoch>`: the half-open probe lease of one
//!   epoch, its holder's id, with a TTL (`SET NX PX`, renewed by its holder).
//! - `latency`: a hash, one field per instance and identity, the instance's
//!   averages and when (Redis's clock) it published them; entries not
//!   republished for [`LATENCY_STALE`] are dropped.
//!
//! Deadlines in the records are the instances' unix milliseconds, as the
//! breakers keep them: instances' clocks are assumed synchronised (NTP) to well
//! under a cooldown.

use std::time::Duration;

use redis::Script;
use switchyard_core::breaker::{CredentialKey, SharedRecord};
use switchyard_core::continuity::BoxFuture;
use switchyard_core::health_sync::{HealthSync, Latency};
use switchyard_core::limits::BackendError;

use crate::redis::{Link, VERSION};

/// Another instance's latency averages count until they are this old.
pub const LATENCY_STALE: Duration = Duration::from_secs(60);
/// The shared hashes outlive their last write by this long.
const KEEP_MS: u64 = 86_400_000;

/// KEYS[1]: the health hash. ARGV: the keep time (ms), then field, record pairs.
/// Returns the whole hash.
const EXCHANGE: &str = r"
local function parse(v) return string.match(v, '^(%d+) ([01]) (%d+) (%d+) (%d+)$') end
local function later(a, b) if tonumber(a) > tonumber(b) then return a end return b end
for i = 2, #ARGV, 2 do
  local f, inc = ARGV[i], ARGV[i + 1]
  local ie, io, iu, it, iq = parse(inc)
  if ie then
    local cur = redis.call('HGET', KEYS[1], f)
    local se, so, su, st, sq
    if cur then se, so, su, st, sq = parse(cur) end
    if se then
      local e, o, u = se, so, su
      if io == '1' then
        if tonumber(iu) > tonumber(su) then e, o, u = ie, '1', iu end
      elseif so == '1' and se == ie then
        o = '0'
      end
      inc = e .. ' ' .. o .. ' ' .. u .. ' ' .. later(st, it) .. ' ' .. later(sq, iq)
    end
    redis.call('HSET', KEYS[1], f, inc)
  end
end
if #ARGV > 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return redis.call('HGETALL', KEYS[1])
";

/// KEYS[1]: a probe lease. ARGV: the owner, the TTL (ms). 1: the owner holds it.
const CLAIM: &str = r"
local v = redis.call('GET', KEYS[1])
if not v then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
";

/// KEYS[1]: the latency hash. ARGV: the owner, staleness (ms), keep time (ms),
/// then identity, averages pairs. Returns the other owners' fresh entries.
const LATENCY: &str = r"
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local stamp = string.format('%.0f', ms)
local mine = ARGV[1] .. '\n'
for i = 4, #ARGV, 2 do
  redis.call('HSET', KEYS[1], mine .. ARGV[i], ARGV[i + 1] .. ' ' .. stamp)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local out = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], ' (%d+)$'))
  if not at or at < ms - tonumber(ARGV[2]) then
    redis.call('HDEL', KEYS[1], all[i])
  elseif string.sub(all[i], 1, #mine) ~= mine then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
";

/// Health and latency on one Redis server, shared by every instance using the
/// same URL and prefix.
pub struct RedisHealth {
    link: Link,
    prefix: String,
    exchange: Script,
    claim: Script,
    latency: Script,
}

impl std::fmt::Debug for RedisHealth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password: never printed.
        f.debug_struct("RedisHealth").field("prefix", &self.prefix).finish_non_exhaustive()
    }
}

fn field(key: &CredentialKey) -> String {
    format!("{}\n{}", key.provider, key.credential)
}

fn average(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"))
}

impl RedisHealth {
    /// Health at `url` under `prefix`; each step may take `timeout`. Nothing is
    /// connected until the first exchange.
    pub fn new(url: &str, prefix: &str, timeout: Duration) -> Result<Self, BackendError> {
        Ok(Self {
            link: Link::new(url, timeout)?,
            prefix: format!("{prefix}:{VERSION}:"),
            exchange: Script::new(EXCHANGE),
            claim: Script::new(CLAIM),
            latency: Script::new(LATENCY),
        })
    }

    /// Run a script, within the timeout.
    async fn run<T: redis::FromRedisValue>(
        &self,
        inv: redis::ScriptInvocation<'_>,
    ) -> Result<T, BackendError> {
        let mut conn = self.link.connection().await?;
        self.link
            .bounded(inv.invoke_async::<T>(&mut conn))
            .await?
            .map_err(|e| BackendError(e.to_string()))
    }

    async fn exchange_inner(
        &self,
        push: &[(CredentialKey, SharedRecord)],
    ) -> Result<Vec<(CredentialKey, SharedRecord)>, BackendError> {
        let mut inv = self.exchange.prepare_invoke();
        inv.key(format!("{}health", self.prefix)).arg(KEEP_MS);
        for (key, record) in push {
            inv.arg(field(key)).arg(record.encode());
        }
        let all: Vec<String> = self.run(inv).await?;
        Ok(all
            .chunks_exact(2)
            .filter_map(|pair| {
                let (provider, credential) = pair[0].split_once('\n')?;
                let record = SharedRecord::decode(&pair[1])?;
                Some((CredentialKey::new(provider, credential), record))
            })
            .collect())
    }

    async fn latency_inner(
        &self,
        owner: u64,
        push: &[(String, Latency)],
    ) -> Result<Vec<(String, Latency)>, BackendError> {
        let mut inv = self.latency.prepare_invoke();
        inv.key(format!("{}latency", self.prefix))
            .arg(owner.to_string())
            .arg(u64::try_from(LATENCY_STALE.as_millis()).unwrap_or(u64::MAX))
            .arg(KEEP_MS);
        for (id, l) in push {
            inv.arg(id).arg(format!("{} {}", average(l.attempt_ms), average(l.ttft_ms)));
        }
        let theirs: Vec<String> = self.run(inv).await?;
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
        Ok(theirs
            .chunks_exact(2)
            .filter_map(|pair| {
                let (_, identity) = pair[0].split_once('\n')?;
                let mut values = pair[1].split(' ');
                let attempt_ms = num(values.next()?);
                let ttft_ms = num(values.next()?);
                Some((identity.to_owned(), Latency { attempt_ms, ttft_ms }))
            })
            .collect())
    }
}

impl HealthSync for RedisHealth {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn exchange<'a>(
        &'a self,
        push: &'a [(CredentialKey, SharedRecord)],
    ) -> BoxFuture<'a, Result<Vec<(CredentialKey, SharedRecord)>, BackendError>> {
        Box::pin(self.exchange_inner(push))
    }

    fn claim_probe<'a>(
        &'a self,
        key: &'a CredentialKey,
        epoch: u64,
        owner: u64,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, BackendError>> {
        Box::pin(async move {
            let mut inv = self.claim.prepare_invoke();
            inv.key(format!("{}probe:{}:{}:{epoch}", self.prefix, key.provider, key.credential))
                .arg(owner.to_string())
                .arg(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1));
            let held: i64 = self.run(inv).await?;
            Ok(held == 1)
        })
    }

    fn exchange_latency<'a>(
        &'a self,
        owner: u64,
        push: &'a [(String, Latency)],
    ) -> BoxFuture<'a, Result<Vec<(String, Latency)>, BackendError>> {
        Box::pin(self.latency_inner(owner, push))
    }
}
