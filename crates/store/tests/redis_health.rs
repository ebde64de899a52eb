//! Health shared on a real Redis (`SWITCHYARD_TEST_REDIS_URL`): two instances'
//! breakers, one probe between them, latency blended, and the merge rule as
//! the script applies it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use switchyard_core::breaker::{
    BreakerConfig, BreakerState, Clearance, CredentialKey, Outcome, SharedRecord,
};
use switchyard_core::clock::UnixMs;
use switchyard_core::health_sync::{HealthSync, Shared};
use switchyard_core::state::{HealthState, LatencyState};
use switchyard_store::redis_health::RedisHealth;
use switchyard_store::testing;

const S: Duration = Duration::from_secs(1);

fn instance(url: &str, prefix: &str) -> Shared {
    let backend = Arc::new(RedisHealth::new(url, prefix, 2 * S).unwrap());
    let config = BreakerConfig { threshold: 1.0, cooldown: 10 * S, ..BreakerConfig::default() };
    Shared::new(backend, config, false)
}

fn key() -> CredentialKey {
    CredentialKey::new("openai", "key-1a2b3c4d")
}

#[tokio::test]
async fn an_open_is_shared_and_one_instance_probes() {
    let Some((url, prefix)) = testing::redis().await else { return };
    let (a, b, c) = (instance(&url, &prefix), instance(&url, &prefix), instance(&url, &prefix));
    let t0 = UnixMs::now();
    let Clearance::Allowed(p) = a.health.clear(&key(), t0) else { panic!() };
    a.health.report(p, Outcome::Failure { retry_after: None }, t0);
    for s in [&a, &b, &c] {
        s.tick(false).await;
    }
    let open = BreakerState::Open { until: t0 + 10 * S };
    assert_eq!(b.health.state(&key(), t0), open);
    assert_eq!(c.health.state(&key(), t0), open);

    // After the cooldown all three want the probe; one gets it.
    let t1 = t0 + 10 * S;
    for s in [&a, &b, &c] {
        assert!(!s.health.is_available(&key(), t1));
    }
    for s in [&a, &b, &c] {
        s.tick(false).await;
    }
    let mut probes = Vec::new();
    for s in [&a, &b, &c] {
        if let Clearance::Allowed(p) = s.health.clear(&key(), t1) {
            probes.push((s, p));
        }
    }
    assert_eq!(probes.len(), 1, "one probe across the three");
    let (winner, probe) = probes.pop().unwrap();
    winner.health.report(probe, Outcome::Success, t1);
    for s in [&a, &b, &c] {
        s.tick(false).await;
    }
    for s in [&a, &b, &c] {
        assert_eq!(s.health.state(&key(), t1), BreakerState::Closed);
    }
}

#[tokio::test]
async fn the_script_merges_by_the_rule() {
    let Some((url, prefix)) = testing::redis().await else { return };
    let r = RedisHealth::new(&url, &prefix, 2 * S).unwrap();
    let k = key();
    let open = SharedRecord {
        epoch: u64::MAX - 7,
        open: true,
        until: UnixMs(5_000),
        ..SharedRecord::default()
    };
    let stale_close = SharedRecord { epoch: 1, open: false, ..open };
    let stale_open = SharedRecord { epoch: 2, until: UnixMs(4_000), ..open };
    let throttle = SharedRecord { throttled_until: UnixMs(1_700_000_000_123), ..stale_close };
    let close = SharedRecord { open: false, ..open };
    let mut stored = None;
    for incoming in [open, stale_close, stale_open, throttle, close, stale_open] {
        let all = r.exchange(&[(k.clone(), incoming)]).await.unwrap();
        let expect = SharedRecord::merge(stored.as_ref(), &incoming);
        assert_eq!(all, vec![(k.clone(), expect)], "{incoming:?}");
        stored = Some(expect);
    }
    assert!(!stored.unwrap().open);
    assert_eq!(stored.unwrap().throttled_until, UnixMs(1_700_000_000_123));
}

#[tokio::test]
async fn latency_is_blended_between_instances() {
    let Some((url, prefix)) = testing::redis().await else { return };
    let (a, b) = (instance(&url, &prefix), instance(&url, &prefix));
    a.latency.observe_attempt("openai/gpt", 100.0);
    b.latency.observe_attempt("openai/gpt", 300.0);
    a.tick(true).await;
    b.tick(true).await;
    a.tick(true).await;
    assert_eq!(a.latency.estimate("openai/gpt"), Some(200.0));
    assert_eq!(b.latency.estimate("openai/gpt"), Some(200.0));
}

#[tokio::test]
async fn destination_windows_are_merged_between_instances() {
    use switchyard_core::destinations::{DestinationState, Ended, Observation};
    let Some((url, prefix)) = testing::redis().await else { return };
    let (a, b) = (instance(&url, &prefix), instance(&url, &prefix));
    let now = UnixMs::now();
    let seen =
        |ended, total_ms| Observation { ended, total_ms, ttft_ms: None, output_tokens: None };
    for _ in 0..3 {
        a.destinations.observe("m|openai|gpt", seen(Ended::Success, 100.0), now);
    }
    b.destinations.observe("m|openai|gpt", seen(Ended::Success, 300.0), now);
    b.destinations.observe("m|openai|gpt", seen(Ended::Error, 5.0), now);
    b.destinations.observe("m|openai|gpt", seen(Ended::Cancelled, 9.0), now);
    a.tick(true).await;
    b.tick(true).await;
    a.tick(true).await;
    for s in [&a, &b] {
        let w = s.destinations.summary("m|openai|gpt", UnixMs::now());
        assert_eq!((w.samples, w.successes, w.errors, w.cancellations), (6, 4, 1, 1), "{w:?}");
        assert_eq!(w.error_rate, Some(0.2));
        // Weighted by answered attempts: (3 × 100 + 1 × 300) / 4.
        assert_eq!(w.p95_ms, Some(150.0), "{w:?}");
    }
    // Listed on an instance that sent nothing there itself.
    let c = instance(&url, &prefix);
    c.tick(true).await;
    let listed = c.destinations.all(UnixMs::now());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.samples, 6);
}

#[tokio::test]
async fn an_unreachable_redis_leaves_each_instance_its_own_breakers() {
    // Nothing listens on port 1.
    let backend = Arc::new(RedisHealth::new("redis://127.0.0.1:1", "x", S).unwrap());
    let config = BreakerConfig { threshold: 1.0, cooldown: 10 * S, ..BreakerConfig::default() };
    let a = Shared::new(backend, config, false);
    let t0 = UnixMs::now();
    let Clearance::Allowed(p) = a.health.clear(&key(), t0) else { panic!() };
    a.health.report(p, Outcome::Failure { retry_after: None }, t0);
    a.tick(true).await;
    let t1 = t0 + 10 * S;
    let Clearance::Allowed(probe) = a.health.clear(&key(), t1) else { panic!("no probe") };
    assert!(probe.probe);
}
