use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::limits::conformance;

fn manual() -> (LocalCounters, Arc<AtomicU64>) {
    let t = Arc::new(AtomicU64::new(1_000_000));
    let clock = Arc::clone(&t);
    (LocalCounters::with_clock(Arc::new(move || clock.load(Ordering::SeqCst) as f64)), t)
}

fn rpm(key: &str, limit: u64) -> Charge {
    Charge { key: key.into(), meter: Meter::Rate { limit, window_ms: 60_000, amount: 1 } }
}

#[tokio::test]
async fn conforms() {
    conformance::all(&LocalCounters::default(), "local").await;
}

#[test]
fn a_rate_refills_one_unit_per_interval() {
    let (c, t) = manual();
    let ch = [rpm("k", 6)]; // one unit every 10 s
    for left in (0..6).rev() {
        let Acquired::Granted(l) = c.acquire_now("l", &ch) else { panic!("fits") };
        assert_eq!(l[0].remaining, left);
    }
    assert_eq!(
        c.acquire_now("l", &ch),
        Acquired::Denied { index: 0, retry_after_ms: Some(10_000) }
    );
    t.fetch_add(9_999_000, Ordering::SeqCst);
    assert_eq!(c.acquire_now("l", &ch), Acquired::Denied { index: 0, retry_after_ms: Some(1) });
    t.fetch_add(1_000, Ordering::SeqCst);
    let Acquired::Granted(l) = c.acquire_now("l", &ch) else { panic!("one unit came back") };
    assert_eq!((l[0].remaining, l[0].reset_ms), (0, 60_000));
    // A minute of silence fills it whole, and no more than whole.
    t.fetch_add(600_000_000, Ordering::SeqCst);
    let Acquired::Granted(l) = c.acquire_now("l", &ch) else { panic!("full again") };
    assert_eq!(l[0].remaining, 5);
}

#[test]
fn a_lease_lapses_after_its_ttl_on_the_counters_clock() {
    let (c, t) = manual();
    let ch = [Charge { key: "c".into(), meter: Meter::Lease { limit: 1, ttl_ms: 1_000 } }];
    assert!(matches!(c.acquire_now("a", &ch), Acquired::Granted(_)));
    assert!(matches!(c.acquire_now("b", &ch), Acquired::Denied { .. }));
    t.fetch_add(900_000, Ordering::SeqCst);
    c.renew_now(&[("c".into(), "a".into())], 1_000);
    t.fetch_add(900_000, Ordering::SeqCst);
    assert!(matches!(c.acquire_now("b", &ch), Acquired::Denied { .. }), "renewed");
    t.fetch_add(200_000, Ordering::SeqCst);
    assert!(matches!(c.acquire_now("b", &ch), Acquired::Granted(_)), "lapsed");
}

#[test]
fn gcra_refuses_what_can_never_fit() {
    assert_eq!(gcra(0.0, 0.0, 10, 60_000, 11).map(|(t, _)| t), Err(None));
    assert_eq!(gcra(0.0, 0.0, 0, 60_000, 1).map(|(t, _)| t), Err(None));
}
