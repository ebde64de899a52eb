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
