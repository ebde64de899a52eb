use super::*;

fn keys(k: &[&str]) -> Vec<String> {
    k.iter().map(|s| (*s).to_owned()).collect()
}

#[tokio::test]
async fn answers_are_shared_found_by_the_first_key_and_lapse() {
    let Some((url, prefix)) = crate::testing::redis().await else { return };
    let timeout = Duration::from_secs(2);
    let a = RedisCache::new(&url, &prefix, timeout, false).expect("cache");
    let b = RedisCache::new(&url, &prefix, timeout, false).expect("cache");
    assert!(a.get(&keys(&["x", "y"])).await.is_none());
    a.put("y".into(), Arc::from(&b"answer"[..]), 300).await;
    // Another instance on the same prefix sees it, at its index.
    let got = b.get(&keys(&["x", "y"])).await.map(|(i, v)| (i, v.to_vec()));
    assert_eq!(got, Some((1, b"answer".to_vec())));
    // Another prefix (another gateway) does not.
    let other = RedisCache::new(&url, &format!("{prefix}-other"), timeout, false).expect("cache");
    assert!(other.get(&keys(&["y"])).await.is_none());
    // The TTL is Redis's: bounded wait until it lapses.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while b.get(&keys(&["y"])).await.is_some() {
        assert!(tokio::time::Instant::now() < deadline, "the answer never lapsed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn an_unreachable_redis_is_a_miss() {
    // Nothing listens on port 1: every step fails, quickly.
    let c = RedisCache::new("redis://127.0.0.1:1", "sytest", Duration::from_millis(200), false)
        .expect("cache");
    c.put("k".into(), Arc::from(&b"v"[..]), 1000).await;
    assert!(c.get(&keys(&["k"])).await.is_none());
}

#[tokio::test]
async fn one_instance_claims_a_call_the_others_wait_then_find_its_answer() {
    let Some((url, prefix)) = crate::testing::redis().await else { return };
    let timeout = Duration::from_secs(2);
    let a = RedisCache::new(&url, &prefix, timeout, false).expect("cache");
    let b = RedisCache::new(&url, &prefix, timeout, false).expect("cache");
    let answers = keys(&["d1", "d2"]);
    assert_eq!(a.claim("base", "req-a", 60_000).await, Claim::Led);
    assert_eq!(b.claim("base", "req-b", 60_000).await, Claim::Busy);
    assert_eq!(b.poll(&answers, "base").await, Polled::Busy);
    // Another's token releases nothing.
    b.release("base", "req-b").await;
    assert_eq!(b.poll(&answers, "base").await, Polled::Busy);
    // The leader keeps its answer, then lets go: the waiter finds the answer.
    a.put("d2".into(), Arc::from(&b"answer"[..]), 60_000).await;
    a.release("base", "req-a").await;
    assert_eq!(b.poll(&answers, "base").await, Polled::Answer(1, Arc::from(&b"answer"[..])));
    // With nothing kept and no claim, the waiter is free to call itself.
    assert_eq!(b.poll(&keys(&["d3"]), "base").await, Polled::Free);
    assert_eq!(b.claim("base", "req-b", 60_000).await, Claim::Led);
}

#[tokio::test]
async fn an_unreachable_redis_leaves_each_request_alone() {
    let c = RedisCache::new("redis://127.0.0.1:1", "sytest", Duration::from_millis(200), false)
        .expect("cache");
    assert_eq!(c.claim("base", "req", 1000).await, Claim::Alone);
    assert_eq!(c.poll(&keys(&["k"]), "base").await, Polled::Free);
}

#[tokio::test]
async fn only_the_claims_holder_renews_it() {
    let Some((url, prefix)) = crate::testing::redis().await else { return };
    let c = RedisCache::new(&url, &prefix, Duration::from_secs(2), false).expect("cache");
    let pttl = |c: &RedisCache| {
        let key = c.claim_key("base");
        let url = url.clone();
        async move {
            let client = redis::Client::open(url).expect("url");
            let mut conn = client.get_multiplexed_async_connection().await.expect("redis");
            redis::cmd("PTTL").arg(key).query_async::<i64>(&mut conn).await.expect("pttl")
        }
    };
    assert_eq!(c.claim("base", "req-a", 1_000).await, Claim::Led);
    c.renew("base", "req-b", 60_000).await;
    assert!(pttl(&c).await <= 1_000, "another's token renews nothing");
    c.renew("base", "req-a", 60_000).await;
    assert!(pttl(&c).await > 1_000, "the holder's renewal extends it");
}

/// Continuity entries: one instance keeps, another finds; a namespace apart
/// from the answers; an unreachable Redis is a miss.
#[tokio::test]
async fn continuity_is_found_by_another_instance_in_its_own_namespace() {
    use switchyard_core::continuity::ContinuityStore;
    let Some((url, prefix)) = crate::testing::redis().await else { return };
    let timeout = Duration::from_secs(2);
    let a = RedisCache::namespaced(&url, &prefix, "cont", timeout, false).expect("store");
    let b = RedisCache::namespaced(&url, &prefix, "cont", timeout, false).expect("store");
    let answers = RedisCache::new(&url, &prefix, timeout, false).expect("cache");
    ContinuityStore::put(&a, "call_1".into(), b"signed thinking".to_vec(), Duration::from_secs(60))
        .await;
    assert_eq!(ContinuityStore::get(&b, "call_1").await, Some(b"signed thinking".to_vec()));
    assert_eq!(ContinuityStore::get(&b, "call_2").await, None);
    assert!(ResponseCache::get(&answers, &keys(&["call_1"])).await.is_none());

    let down = RedisCache::namespaced("redis://127.0.0.1:1", "sytest", "cont", timeout, false)
        .expect("store");
    ContinuityStore::put(&down, "k".into(), b"v".to_vec(), Duration::from_secs(1)).await;
    assert_eq!(ContinuityStore::get(&down, "k").await, None);
}
