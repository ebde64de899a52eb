use super::*;

#[test]
fn answers_are_decoded_or_refused() {
    let granted = decode(&[1, 10, 9, 6000, 2, 1, 0], 2).unwrap();
    assert_eq!(
        granted,
        Acquired::Granted(vec![
            Level { limit: 10, remaining: 9, reset_ms: 6000 },
            Level { limit: 2, remaining: 1, reset_ms: 0 },
        ])
    );
    assert_eq!(
        decode(&[0, 2, 1500], 2).unwrap(),
        Acquired::Denied { index: 1, retry_after_ms: Some(1500) }
    );
    assert_eq!(
        decode(&[0, 1, -1], 1).unwrap(),
        Acquired::Denied { index: 0, retry_after_ms: None }
    );
    assert!(decode(&[0, 3, 5], 2).is_err(), "no third counter");
    assert!(decode(&[1, 10, 9], 2).is_err(), "a level is missing");
    assert!(decode(&[], 0).is_err());
}

#[test]
fn the_url_is_never_printed() {
    let c = RedisCounters::new("redis://:hunter2@127.0.0.1:1/0", "p", Duration::from_millis(50))
        .unwrap();
    assert!(!format!("{c:?}").contains("hunter2"));
}

#[tokio::test]
async fn an_unreachable_server_is_an_error_soon_and_not_retried_at_once() {
    let c = RedisCounters::new("redis://127.0.0.1:1/0", "p", Duration::from_millis(200)).unwrap();
    let charge =
        [Charge { key: "k".into(), meter: Meter::Rate { limit: 1, window_ms: 60_000, amount: 1 } }];
    assert!(c.acquire("l", &charge).await.is_err());
    let started = Instant::now();
    let again = c.acquire("l", &charge).await.unwrap_err();
    assert!(again.0.contains("retrying"), "{again}");
    assert!(started.elapsed() < Duration::from_millis(100), "no second connect within a second");
}
