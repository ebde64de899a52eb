use super::*;

const S: Duration = Duration::from_secs(1);

fn key() -> CredentialKey {
    CredentialKey::new("openai", "key-1")
}

fn config() -> BreakerConfig {
    BreakerConfig { threshold: 1.0, cooldown: 10 * S, ..BreakerConfig::default() }
}

fn pair() -> (Arc<MemorySync>, Shared, Shared) {
    let sync = Arc::new(MemorySync::default());
    let a = Shared::new(sync.clone(), config(), false);
    let b = Shared::new(sync.clone(), config(), false);
    (sync, a, b)
}

fn allowed(c: Clearance) -> Permit {
    match c {
        Clearance::Allowed(p) => p,
        Clearance::Rejected { state } => panic!("expected admission, got {state:?}"),
    }
}

/// Open `key` on `s` at `now` (threshold 1: one failure).
fn open(s: &Shared, now: UnixMs) {
    let p = allowed(s.health.clear(&key(), now));
    s.health.report(p, Outcome::Failure { retry_after: None }, now);
    assert!(matches!(s.health.state(&key(), now), BreakerState::Open { .. }));
}

#[tokio::test]
async fn an_open_on_one_instance_is_refused_by_the_other_after_one_tick() {
    let (_, a, b) = pair();
    let t0 = UnixMs::now();
    b.tick(false).await;
    open(&a, t0);
    assert_eq!(b.health.state(&key(), t0), BreakerState::Closed);
    a.tick(false).await;
    b.tick(false).await;
    assert_eq!(b.health.state(&key(), t0), BreakerState::Open { until: t0 + 10 * S });
    assert!(matches!(b.health.clear(&key(), t0), Clearance::Rejected { .. }));
}

#[tokio::test]
async fn one_probe_across_instances_and_its_success_closes_everywhere() {
    let (_, a, b) = pair();
    let t0 = UnixMs::now();
    open(&a, t0);
    a.tick(false).await;
    b.tick(false).await;
    let t1 = t0 + 10 * S;
    // Past the cooldown, neither probes before it holds the lease.
    let busy = BreakerState::HalfOpen { probe_in_flight: true };
    assert_eq!(a.health.state(&key(), t1), busy);
    assert_eq!(b.health.state(&key(), t1), busy);
    // Both want it; one wins.
    a.tick(false).await;
    b.tick(false).await;
    let pa = a.health.clear(&key(), t1);
    let pb = b.health.clear(&key(), t1);
    let (winner, loser, probe) = match (pa, pb) {
        (Clearance::Allowed(p), Clearance::Rejected { .. }) => (&a, &b, p),
        (Clearance::Rejected { .. }, Clearance::Allowed(p)) => (&b, &a, p),
        other => panic!("exactly one probe expected, got {other:?}"),
    };
    assert!(probe.probe);
    // The loser keeps refusing while the probe is out, across ticks (renewed).
    for _ in 0..3 {
        winner.tick(false).await;
        loser.tick(false).await;
        assert!(matches!(loser.health.clear(&key(), t1), Clearance::Rejected { .. }));
    }
    winner.health.report(probe, Outcome::Success, t1);
    assert_eq!(winner.health.state(&key(), t1), BreakerState::Closed);
    winner.tick(false).await;
    loser.tick(false).await;
    assert_eq!(loser.health.state(&key(), t1), BreakerState::Closed);
    assert!(!allowed(loser.health.clear(&key(), t1)).probe);
}

#[tokio::test]
async fn a_failed_probe_reopens_everywhere_in_a_new_epoch() {
    let (_, a, b) = pair();
    let t0 = UnixMs::now();
    open(&a, t0);
    a.tick(false).await;
    b.tick(false).await;
    let t1 = t0 + 10 * S;
    assert!(!b.health.is_available(&key(), t1));
    b.tick(false).await;
    let probe = allowed(b.health.clear(&key(), t1));
    b.health.report(probe, Outcome::Failure { retry_after: None }, t1);
    b.tick(false).await;
    a.tick(false).await;
    assert_eq!(a.health.state(&key(), t1), BreakerState::Open { until: t1 + 10 * S });
}

#[tokio::test]
async fn a_stale_close_loses_to_a_newer_open() {
    let stored =
        SharedRecord { epoch: 2, open: true, until: UnixMs(5_000), ..SharedRecord::default() };
    // A close of an older epoch: ignored.
    let stale = SharedRecord { epoch: 1, open: false, until: UnixMs(3_000), ..stored };
    assert_eq!(SharedRecord::merge(Some(&stored), &stale), stored);
    // A close of this epoch: closes.
    let close = SharedRecord { open: false, ..stored };
    assert_eq!(SharedRecord::merge(Some(&stored), &close), close);
    // A stale open (earlier cooldown end) loses, a newer one wins.
    let old_open = SharedRecord { epoch: 1, until: UnixMs(4_000), ..stored };
    assert_eq!(SharedRecord::merge(Some(&stored), &old_open), stored);
    assert_eq!(SharedRecord::merge(Some(&close), &old_open), close);
    let reopen = SharedRecord { epoch: 3, until: UnixMs(9_000), ..stored };
    assert_eq!(SharedRecord::merge(Some(&close), &reopen), reopen);
    // Deadlines take the later.
    let throttled = SharedRecord { throttled_until: UnixMs(7_000), ..close };
    let merged = SharedRecord::merge(Some(&throttled), &SharedRecord::default());
    assert_eq!(merged.throttled_until, UnixMs(7_000));
    assert_eq!(SharedRecord::decode(&merged.encode()), Some(merged));
}

#[tokio::test]
async fn a_stale_instance_cannot_close_a_breaker_opened_since() {
    let (_, a, b) = pair();
    let t0 = UnixMs::now();
    open(&a, t0);
    a.tick(false).await;
    b.tick(false).await;
    let t1 = t0 + 10 * S;
    a.tick(false).await;
    // a probes and fails: a newer epoch, shared.
    assert!(!a.health.is_available(&key(), t1));
    a.tick(false).await;
    let probe = allowed(a.health.clear(&key(), t1));
    a.health.report(probe, Outcome::Failure { retry_after: None }, t1);
    a.tick(false).await;
    // b, which saw only the first epoch, publishes a close of it (as if its
    // probe of that epoch succeeded late): the newer open stays.
    let old = SharedRecord { open: false, ..b.health.local.record(&key()).unwrap() };
    b.health.link.backend.exchange(&[(key(), old)]).await.unwrap();
    b.tick(false).await;
    assert_eq!(b.health.state(&key(), t1), BreakerState::Open { until: t1 + 10 * S });
}

#[tokio::test]
async fn throttles_and_quarantines_are_shared() {
    let (_, a, b) = pair();
    let t0 = UnixMs::now();
    let p = allowed(a.health.clear(&key(), t0));
    a.health.report(p, Outcome::Throttled { retry_after: Some(5 * S) }, t0);
    let other = CredentialKey::new("openai", "key-2");
    let p = allowed(a.health.clear(&other, t0));
    a.health.report(p, Outcome::AuthFailure, t0);
    a.tick(false).await;
    b.tick(false).await;
    assert_eq!(b.health.state(&key(), t0), BreakerState::Throttled { until: t0 + 5 * S });
    assert!(matches!(b.health.state(&other, t0), BreakerState::Quarantined { .. }));
}

#[tokio::test]
async fn while_the_backend_is_down_each_instance_keeps_its_own_breakers() {
    let (sync, a, b) = pair();
    let t0 = UnixMs::now();
    sync.set_down(true);
    open(&a, t0);
    a.tick(false).await;
    b.tick(false).await;
    assert_eq!(b.health.state(&key(), t0), BreakerState::Closed);
    // a probes on its own after the cooldown: no lease needed.
    let t1 = t0 + 10 * S;
    assert!(allowed(a.health.clear(&key(), t1)).probe);
    // Back: b takes in a's breaker.
    sync.set_down(false);
    a.tick(false).await;
    b.tick(false).await;
    assert!(!b.health.is_available(&key(), t1));
}

#[tokio::test]
async fn latency_blends_every_instances_average() {
    let (_, a, b) = pair();
    a.latency.observe_attempt("d", 100.0);
    b.latency.observe_attempt("d", 300.0);
    assert_eq!(a.latency.estimate("d"), Some(100.0));
    a.tick(true).await;
    b.tick(true).await;
    a.tick(true).await;
    assert_eq!(a.latency.estimate("d"), Some(200.0));
    assert_eq!(b.latency.estimate("d"), Some(200.0));
    // Time to first token, where anyone knows it, is preferred.
    b.latency.observe_ttft("d", 50.0);
    b.tick(true).await;
    a.tick(true).await;
    assert_eq!(a.latency.estimate("d"), Some(50.0));
}

#[tokio::test]
async fn destination_windows_travel_with_the_latency() {
    use crate::destinations::{DestinationState, Ended, Observation};
    let (_, a, b) = pair();
    let now = UnixMs::now();
    let seen =
        Observation { ended: Ended::Error, total_ms: 5.0, ttft_ms: None, output_tokens: None };
    a.destinations.observe("d", seen, now);
    b.destinations.observe("d", Observation { ended: Ended::Success, ..seen }, now);
    a.tick(true).await;
    b.tick(true).await;
    a.tick(true).await;
    for s in [&a, &b] {
        let w = s.destinations.summary("d", UnixMs::now());
        assert_eq!((w.successes, w.errors, w.error_rate), (1, 1, Some(0.5)), "{w:?}");
    }
}

#[tokio::test]
async fn the_task_propagates_an_open_without_ticks_by_hand() {
    let (_, a, b) = pair();
    let (ta, tb) = (a.spawn(), b.spawn());
    let t0 = UnixMs::now();
    open(&a, t0);
    let deadline = Instant::now() + 5 * S;
    while b.health.state(&key(), t0) == BreakerState::Closed {
        assert!(Instant::now() < deadline, "never propagated");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ta.abort();
    tb.abort();
}
