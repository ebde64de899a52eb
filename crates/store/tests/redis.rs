//! The Redis counters against a real server (`SWITCHYARD_TEST_REDIS_URL`; CI
//! sets it and `SWITCHYARD_REQUIRE_REDIS=1`): the same conformance suite as the
//! in-process counters, and counting shared by several clients as by several
//! instances.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use switchyard_core::limits::{Acquired, Charge, Counters, Meter, conformance};
use switchyard_store::redis::RedisCounters;
use switchyard_store::testing;

fn counters(url: &str, prefix: &str) -> RedisCounters {
    RedisCounters::new(url, prefix, Duration::from_secs(2)).unwrap()
}

#[tokio::test]
async fn conforms() {
    let Some((url, prefix)) = testing::redis().await else { return };
    conformance::all(&counters(&url, &prefix), "conf").await;
}

#[tokio::test]
async fn three_instances_share_one_limit_exactly() {
    let Some((url, prefix)) = testing::redis().await else { return };
    // Three "instances": three clients with their own connections.
    let instances: Vec<Arc<RedisCounters>> =
        (0..3).map(|_| Arc::new(counters(&url, &prefix))).collect();
    let charge = [Charge {
        key: "shared:rpm".into(),
        meter: Meter::Rate { limit: 20, window_ms: 60_000, amount: 1 },
    }];
    let mut tasks = Vec::new();
    for i in 0..60 {
        let c = Arc::clone(&instances[i % 3]);
        let charge = charge.clone();
        tasks.push(tokio::spawn(async move { c.acquire(&format!("l{i}"), &charge).await }));
    }
    let mut granted = 0;
    for t in tasks {
        if let Acquired::Granted(_) = t.await.unwrap().unwrap() {
            granted += 1;
        }
    }
    assert_eq!(granted, 20);
}

/// Budgets on Redis start from the ledger (the request records), and when
/// Redis loses the counter, it is rebuilt from the ledger again, never from 0.
#[tokio::test]
async fn a_lost_budget_counter_is_rebuilt_from_the_records() {
    use switchyard_core::clock::UnixMs;
    use switchyard_core::limits::{
        BudgetMode, BudgetScope, BudgetSpec, Budgeted, Limiter, LimiterConfig, Period,
    };
    use switchyard_core::record::RequestRecord;

    let Some((url, prefix)) = testing::redis().await else { return };
    let db = testing::sqlite_temp().await;
    let now = UnixMs::now();
    let mut spent = RequestRecord::new("r1", now.0);
    spent.project = Some("p_1".into());
    spent.cost_usd = Some(0.9);
    let mut last_month = RequestRecord::new("r0", Period::Month.window(now).start.0 - 1);
    last_month.project = Some("p_1".into());
    last_month.cost_usd = Some(5.0);
    db.store().insert_records(&[spent, last_month]).await.unwrap();
    let counters = Arc::new(counters(&url, &prefix));
    let limiter = Limiter::new(counters.clone(), LimiterConfig::default())
        .with_ledger(Arc::new(db.store().clone()));
    let spec = BudgetSpec {
        scope: BudgetScope::Project("p_1".into()),
        limit_usd: 1.0,
        period: Period::Month,
        mode: BudgetMode::Enforce,
        max_reservation_usd: 1.0,
        lower_max_tokens: false,
    };
    let ask = |usd: f64| {
        let mut b = Budgeted::now(&spec, now);
        b.names = vec!["p_1".into()];
        b.reserve_usd = usd;
        vec![b]
    };
    assert!(limiter.take(&[], 0, &ask(0.2)).await.is_err(), "0.9 spent this month + 0.2 > 1");
    let held = limiter.take(&[], 0, &ask(0.05)).await.expect("0.9 + 0.05 fits");
    drop(held);
    // Redis loses the counter (a restart without persistence, an eviction).
    let key = format!("{prefix}:v1:{}", ask(0.0)[0].key());
    let mut conn = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let removed: i64 = redis::cmd("DEL").arg(&key).query_async(&mut conn).await.unwrap();
    assert_eq!(removed, 1, "the counter was at {key}");
    assert!(limiter.take(&[], 0, &ask(0.2)).await.is_err(), "rebuilt from the records: 0.9");
    limiter.take(&[], 0, &ask(0.1)).await.expect("0.9 + 0.1 fits");
    db.cleanup().await;
}
