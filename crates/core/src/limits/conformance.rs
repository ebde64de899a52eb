//! What every [`Counters`] backend must do, as functions a backend's tests call
//! (the local one here, the Redis one in the store crate), each on counters named
//! under `prefix` so that runs never share state.

use std::time::Duration;

use super::counters::{Acquired, Charge, Counters, GiveBack, Meter, Spent};

fn rate(key: String, limit: u64, amount: u64) -> Charge {
    Charge { key, meter: Meter::Rate { limit, window_ms: 60_000, amount } }
}

fn lease(key: String, limit: u64, ttl_ms: u64) -> Charge {
    Charge { key, meter: Meter::Lease { limit, ttl_ms } }
}

/// A simultaneous burst of 3 × L requests against L per minute is admitted
/// exactly L times; each refusal knows when the next unit frees (within a
/// minute / L).
pub async fn burst_is_exact(c: &dyn Counters, prefix: &str) {
    let limit = 7u64;
    let charges = [rate(format!("{prefix}:burst"), limit, 1)];
    let asks = (0..limit * 3).map(|i| {
        let charges = &charges;
        async move { c.acquire(&format!("l{i}"), charges).await }
    });
    let results = futures_util::future::join_all(asks).await;
    let mut granted = 0;
    for r in results {
        match r.expect("backend answers") {
            Acquired::Granted(levels) => {
                granted += 1;
                assert!(levels[0].remaining < limit);
            }
            Acquired::Unseeded { .. } => panic!("a rate counter needs no seed"),
            Acquired::Denied { index, retry_after_ms } => {
                assert_eq!(index, 0);
                let ms = retry_after_ms.expect("a rate refusal knows its retry");
                assert!(ms > 0 && ms <= 60_000 / limit + 1, "retry after {ms} ms");
            }
        }
    }
    assert_eq!(granted, limit, "exactly the limit is admitted");
}

/// A refusal takes nothing: charges before the one refused stay whole.
pub async fn all_or_nothing(c: &dyn Counters, prefix: &str) {
    let a = rate(format!("{prefix}:a"), 10, 1);
    let too_big = rate(format!("{prefix}:b"), 2, 3);
    let r = c.acquire("l", &[a.clone(), too_big]).await.expect("backend answers");
    assert_eq!(r, Acquired::Denied { index: 1, retry_after_ms: None }, "larger than the limit");
    let Acquired::Granted(levels) = c.acquire("l", &[a]).await.expect("answers") else {
        panic!("the first counter was not charged by the refused request")
    };
    assert_eq!((levels[0].limit, levels[0].remaining), (10, 9));
}

/// Tokens reserved and then reconciled: units given back are available again,
/// extra units are taken.
pub async fn adjust_reconciles(c: &dyn Counters, prefix: &str) {
    let key = format!("{prefix}:tpm");
    let take = |n| rate(key.clone(), 100, n);
    let Acquired::Granted(l) = c.acquire("l", &[take(60)]).await.expect("answers") else {
        panic!("60 of 100 fits")
    };
    assert_eq!(l[0].remaining, 40);
    assert!(matches!(c.acquire("l", &[take(50)]).await, Ok(Acquired::Denied { .. })));
    c.adjust(&take(60), -50).await.expect("answers");
    let Acquired::Granted(l) = c.acquire("l", &[take(50)]).await.expect("answers") else {
        panic!("50 given back, 50 fit again")
    };
    assert_eq!(l[0].remaining, 40);
    c.adjust(&take(50), 40).await.expect("answers");
    assert!(matches!(c.acquire("l", &[take(1)]).await, Ok(Acquired::Denied { .. })));
}

/// Leases: at most the limit at once; a released one frees its slot; a lapsed
/// one (its holder crashed) frees it after its TTL; renewing keeps it.
pub async fn leases_hold_and_lapse(c: &dyn Counters, prefix: &str) {
    let key = format!("{prefix}:conc");
    let long = [lease(key.clone(), 2, 60_000)];
    assert!(matches!(c.acquire("a", &long).await, Ok(Acquired::Granted(_))));
    let Ok(Acquired::Granted(l)) = c.acquire("b", &long).await else {
        panic!("the second of two fits")
    };
    assert_eq!(l[0].remaining, 0);
    assert_eq!(
        c.acquire("c", &long).await.expect("answers"),
        Acquired::Denied { index: 0, retry_after_ms: None }
    );
    c.release("a", std::slice::from_ref(&key)).await.expect("answers");
    assert!(matches!(c.acquire("c", &long).await, Ok(Acquired::Granted(_))));

    // A short-lived lease that nobody renews lapses.
    let key2 = format!("{prefix}:lapse");
    let short = [lease(key2.clone(), 1, 40)];
    assert!(matches!(c.acquire("x", &short).await, Ok(Acquired::Granted(_))));
    assert!(matches!(c.acquire("y", &short).await, Ok(Acquired::Denied { .. })));
    let lapsed = async {
        loop {
            if let Ok(Acquired::Granted(_)) = c.acquire("y", &short).await {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), lapsed).await.expect("the lease lapses");

    // Renewed, it stays: renew y for a minute, and z never gets in.
    c.renew(&[(key2.clone(), "y".into())], 60_000).await.expect("answers");
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert!(matches!(c.acquire("z", &short).await, Ok(Acquired::Denied { .. })));
}

/// Budgets: a counter must be seeded (from the ledger) before it counts; a
/// reservation fits while spent, reserved and uncertain leave room; settling
/// turns it into spent (the metered cost) or uncertain (cost unknown).
pub async fn spend_reserves_and_settles(c: &dyn Counters, prefix: &str) {
    let key = format!("{prefix}:budget");
    let ask = |amount| Charge {
        key: key.clone(),
        meter: Meter::Spend { limit: 100, amount, ttl_ms: 60_000 },
    };
    let rpm = rate(format!("{prefix}:budget-rpm"), 10, 1);
    assert_eq!(c.acquire("l", &[rpm.clone(), ask(10)]).await, Ok(Acquired::Unseeded { index: 1 }));
    assert_eq!(c.read_spend(&key).await, Ok(None));
    c.seed_spend(&key, 50, 60_000).await.expect("answers");
    c.seed_spend(&key, 0, 60_000).await.expect("answers");
    assert_eq!(
        c.read_spend(&key).await,
        Ok(Some(Spent { spent: 50, ..Spent::default() })),
        "seeded once"
    );
    let Ok(Acquired::Granted(l)) = c.acquire("l", &[rpm.clone(), ask(30)]).await else {
        panic!("30 of the 50 left fits")
    };
    assert_eq!((l[1].limit, l[1].remaining), (100, 20));
    assert_eq!(
        c.acquire("l", &[ask(30)]).await,
        Ok(Acquired::Denied { index: 0, retry_after_ms: None })
    );
    c.settle_spend(&ask(30), Some(5)).await.expect("answers");
    assert_eq!(c.read_spend(&key).await, Ok(Some(Spent { spent: 55, reserved: 0, uncertain: 0 })));
    assert!(matches!(c.acquire("l", &[ask(40)]).await, Ok(Acquired::Granted(_))));
    c.settle_spend(&ask(40), None).await.expect("answers");
    assert_eq!(c.read_spend(&key).await, Ok(Some(Spent { spent: 55, reserved: 0, uncertain: 40 })));
    assert!(matches!(c.acquire("l", &[ask(6)]).await, Ok(Acquired::Denied { .. })));
    assert!(matches!(c.acquire("l", &[ask(5)]).await, Ok(Acquired::Granted(_))));
    // The rate counter was charged once before (the unseeded ask took nothing):
    // this is its second unit of 10.
    let Ok(Acquired::Granted(l)) = c.acquire("l", &[rpm]).await else { panic!("fits") };
    assert_eq!(l[0].remaining, 8, "the unseeded ask took nothing");
}

/// What a request took, given back in one step: tokens reconciled, the lease
/// ended, the budget settled.
pub async fn give_back_in_one_step(c: &dyn Counters, prefix: &str) {
    let tpm = rate(format!("{prefix}:gb-tpm"), 100, 60);
    let conc = lease(format!("{prefix}:gb-conc"), 1, 60_000);
    let spend_key = format!("{prefix}:gb-budget");
    let spend = Charge {
        key: spend_key.clone(),
        meter: Meter::Spend { limit: 100, amount: 40, ttl_ms: 60_000 },
    };
    c.seed_spend(&spend_key, 0, 60_000).await.expect("answers");
    let taken = [tpm.clone(), conc.clone(), spend.clone()];
    assert!(matches!(c.acquire("gb", &taken).await, Ok(Acquired::Granted(_))));
    assert!(matches!(
        c.acquire("other", std::slice::from_ref(&conc)).await,
        Ok(Acquired::Denied { .. })
    ));
    let back = GiveBack {
        lease: "gb".into(),
        adjust: vec![(tpm.clone(), -50)],
        release: vec![conc.key.clone()],
        spend: vec![(spend, Some(7))],
    };
    c.give_back(&back).await.expect("answers");
    assert!(matches!(c.acquire("other", &[conc]).await, Ok(Acquired::Granted(_))), "released");
    let Ok(Acquired::Granted(l)) = c.acquire("x", &[rate(tpm.key, 100, 0)]).await else {
        panic!("a zero charge fits")
    };
    assert_eq!(l[0].remaining, 90, "60 taken, 50 given back");
    assert_eq!(
        c.read_spend(&spend_key).await,
        Ok(Some(Spent { spent: 7, reserved: 0, uncertain: 0 }))
    );
}

/// Every check above, in turn.
pub async fn all(c: &dyn Counters, prefix: &str) {
    burst_is_exact(c, &format!("{prefix}:1")).await;
    all_or_nothing(c, &format!("{prefix}:2")).await;
    adjust_reconciles(c, &format!("{prefix}:3")).await;
    leases_hold_and_lapse(c, &format!("{prefix}:4")).await;
    spend_reserves_and_settles(c, &format!("{prefix}:5")).await;
    give_back_in_one_step(c, &format!("{prefix}:6")).await;
}
