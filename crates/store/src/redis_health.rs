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

/// A stored latency value: the two averages, the window when published (seven
/// values), and the script's time stamp last.
fn latency_from(stored: &str) -> Option<Latency> {
    let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite());
    let values: Vec<&str> = stored.split(' ').collect();
    let (attempt, ttft) = (values.first()?, values.get(1)?);
    // A window that does not read is left out; the averages still count.
    let window = || match values.get(2..9) {
        Some([s, e, c, p50, p95, ttft95, tps]) => {
            let count = |v: &str| v.parse::<u32>().ok();
            let (successes, errors, cancellations) = (count(s)?, count(e)?, count(c)?);
            let decided = successes + errors;
            Some(switchyard_core::destinations::Summary {
                samples: successes + errors + cancellations,
                successes,
                errors,
                cancellations,
                error_rate: (decided > 0).then(|| f64::from(errors) / f64::from(decided)),
                p50_ms: num(p50),
                p95_ms: num(p95),
                ttft_p95_ms: num(ttft95),
                tokens_per_s: num(tps),
            })
        }
        _ => None,
    };
    Some(Latency { attempt_ms: num(attempt), ttft_ms: num(ttft), window: window() })
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
            let mut value = format!("{} {}", average(l.attempt_ms), average(l.ttft_ms));
            // The window after the averages: an older instance reads the first
            // two values and no more.
            if let Some(w) = &l.window {
                value.push_str(&format!(
                    " {} {} {} {} {} {} {}",
                    w.successes,
                    w.errors,
                    w.cancellations,
                    average(w.p50_ms),
                    average(w.p95_ms),
                    average(w.ttft_p95_ms),
                    average(w.tokens_per_s)
                ));
            }
            inv.arg(id).arg(value);
        }
        let theirs: Vec<String> = self.run(inv).await?;
        Ok(theirs
            .chunks_exact(2)
            .filter_map(|pair| {
                let (_, identity) = pair[0].split_once('\n')?;
                Some((identity.to_owned(), latency_from(&pair[1])?))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_value_reads_with_or_without_its_window() {
        // As an older instance writes it: two averages and the stamp.
        let old = latency_from("120.000 - 1733450000000").unwrap();
        assert_eq!((old.attempt_ms, old.ttft_ms, old.window), (Some(120.0), None, None));
        let new =
            latency_from("120.000 40.000 8 2 1 90.000 150.000 - 33.500 1733450000000").unwrap();
        let w = new.window.unwrap();
        assert_eq!((w.samples, w.successes, w.errors, w.cancellations), (11, 8, 2, 1));
        assert_eq!((w.error_rate, w.p95_ms, w.ttft_p95_ms), (Some(0.2), Some(150.0), None));
        assert_eq!(w.tokens_per_s, Some(33.5));
        // A window that does not read is left out, the averages kept.
        let torn = latency_from("1.000 2.000 x 2 1 - - - - 1733450000000").unwrap();
        assert_eq!((torn.attempt_ms, torn.window), (Some(1.0), None));
    }
}
