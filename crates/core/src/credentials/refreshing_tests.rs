use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Semaphore;

use super::super::testing::{ManualClock, T0};
use super::*;

const HOUR: Duration = Duration::from_secs(3600);
const MIN: Duration = Duration::from_secs(60);

/// A fetch whose values are its call numbers (1, 2, …), valid for `lifetime`
/// from the clock's now; it can be made to fail, or held at a gate.
#[derive(Clone)]
struct Source {
    clock: ManualClock,
    fetches: Arc<AtomicUsize>,
    fail: Arc<AtomicBool>,
    lifetime: Duration,
    gate: Arc<Semaphore>,
    /// A permit each time a fetch starts, and each time one ends.
    started: Arc<Semaphore>,
    finished: Arc<Semaphore>,
}

impl Source {
    fn new(lifetime: Duration) -> Self {
        Self {
            clock: ManualClock::at(T0),
            fetches: Arc::default(),
            fail: Arc::default(),
            lifetime,
            gate: Arc::new(Semaphore::new(Semaphore::MAX_PERMITS)),
            started: Arc::new(Semaphore::new(0)),
            finished: Arc::new(Semaphore::new(0)),
        }
    }

    /// Hold every fetch at the gate until [`Source::open`].
    fn closed(mut self) -> Self {
        self.gate = Arc::new(Semaphore::new(0));
        self
    }

    fn open(&self) {
        self.gate.add_permits(1_000);
    }

    /// Wait until one more fetch has started than was waited for.
    async fn started(&self) {
        self.started.acquire().await.unwrap().forget();
    }

    /// Wait until one more fetch has ended than was waited for.
    async fn finished(&self) {
        self.finished.acquire().await.unwrap().forget();
    }

    fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    fn cache(&self) -> Refreshing<usize> {
        let src = self.clone();
        Refreshing::new(self.clock.clock(), move || {
            let src = src.clone();
            async move {
                let n = src.fetches.fetch_add(1, Ordering::SeqCst) + 1;
                src.started.add_permits(1);
                let _pass = src.gate.acquire().await.unwrap();
                let result = if src.fail.load(Ordering::SeqCst) {
                    Err(CredentialError::Fetch(format!("fetch {n} failed")))
                } else {
                    Ok((n, src.clock.now() + src.lifetime))
                };
                src.finished.add_permits(1);
                result
            }
        })
    }
}

#[tokio::test]
async fn a_value_is_fetched_once_and_served_until_the_refresh_window() {
    let src = Source::new(HOUR);
    let cache = src.cache();
    for _ in 0..10 {
        assert_eq!(cache.get().await, Ok(1));
    }
    assert_eq!(cache.expires_at(), Some(T0 + HOUR));
    src.clock.advance(HOUR - 5 * MIN - Duration::from_millis(1));
    assert_eq!(cache.get().await, Ok(1));
    assert_eq!(src.fetches(), 1);
}

#[tokio::test]
async fn in_the_window_the_valid_value_is_served_and_refreshed_behind() {
    let src = Source::new(HOUR);
    let cache = src.cache();
    assert_eq!(cache.get().await, Ok(1));
    src.clock.advance(HOUR - 5 * MIN);
    // The window: served at once, a refresh started.
    assert_eq!(cache.get().await, Ok(1));
    src.finished().await;
    src.finished().await;
    assert_eq!(cache.get().await, Ok(2), "the refreshed value, cached");
    assert_eq!(src.fetches(), 2);
}

#[tokio::test]
async fn a_refresh_held_up_does_not_hold_callers_while_the_value_is_valid() {
    let src = Source::new(HOUR);
    let cache = src.cache();
    assert_eq!(cache.get().await, Ok(1));
    // Close the gate: the refresh in the window will hang there.
    src.gate.forget_permits(src.gate.available_permits());
    src.clock.advance(HOUR - MIN);
    for _ in 0..5 {
        assert_eq!(cache.get().await, Ok(1), "served while the refresh hangs");
    }
    src.started().await;
    src.started().await;
    assert_eq!(src.fetches(), 2, "one refresh in flight, not one per caller");
    // Past the old value's expiry callers wait for that same refresh.
    src.clock.advance(MIN);
    let waiting = tokio::spawn({
        let cache = cache.clone();
        async move { cache.get().await }
    });
    src.open();
    assert_eq!(waiting.await.unwrap(), Ok(2));
    assert_eq!(src.fetches(), 2);
}

#[tokio::test]
async fn fifty_concurrent_callers_share_one_fetch() {
    let src = Source::new(HOUR).closed();
    let cache = src.cache();
    let callers = futures_util::future::join_all((0..50).map(|_| cache.get()));
    let release = async {
        src.started().await;
        src.open();
    };
    let (results, ()) = tokio::join!(callers, release);
    assert!(results.iter().all(|r| *r == Ok(1)), "{results:?}");
    assert_eq!(src.fetches(), 1);
}

#[tokio::test]
async fn a_failure_reaches_every_waiting_caller_and_is_not_cached() {
    let src = Source::new(HOUR).closed();
    src.fail.store(true, Ordering::SeqCst);
    let cache = src.cache();
    let callers = futures_util::future::join_all((0..50).map(|_| cache.get()));
    let release = async {
        src.started().await;
        src.open();
    };
    let (results, ()) = tokio::join!(callers, release);
    let failed = Err(CredentialError::Fetch("fetch 1 failed".to_owned()));
    assert!(results.iter().all(|r| *r == failed), "{results:?}");
    assert_eq!(src.fetches(), 1);
    // The next call tries again.
    src.fail.store(false, Ordering::SeqCst);
    assert_eq!(cache.get().await, Ok(2));
    assert_eq!(src.fetches(), 2);
}

#[tokio::test]
async fn an_expired_value_is_never_served() {
    let src = Source::new(HOUR);
    let cache = src.cache();
    assert_eq!(cache.get().await, Ok(1));
    src.fail.store(true, Ordering::SeqCst);
    src.clock.advance(HOUR);
    assert_eq!(cache.get().await, Err(CredentialError::Fetch("fetch 2 failed".to_owned())));
    assert_eq!(cache.get().await, Err(CredentialError::Fetch("fetch 3 failed".to_owned())));
}

#[tokio::test]
async fn a_failed_refresh_in_the_window_keeps_the_valid_value_and_is_retried() {
    let src = Source::new(HOUR);
    let cache = src.cache();
    assert_eq!(cache.get().await, Ok(1));
    src.fail.store(true, Ordering::SeqCst);
    src.clock.advance(HOUR - MIN);
    assert_eq!(cache.get().await, Ok(1));
    // The background refresh ends (it fails); the next call retries.
    src.finished().await;
    src.finished().await;
    assert_eq!(cache.get().await, Ok(1), "the valid value, still");
    src.finished().await;
    assert_eq!(src.fetches(), 3);
    src.fail.store(false, Ordering::SeqCst);
    src.clock.advance(MIN);
    assert_eq!(cache.get().await, Ok(4));
}

#[tokio::test]
async fn a_short_lifetime_is_refreshed_at_its_half() {
    let src = Source::new(4 * MIN);
    let cache = src.cache();
    assert_eq!(cache.get().await, Ok(1));
    src.clock.advance(2 * MIN - Duration::from_millis(1));
    assert_eq!(cache.get().await, Ok(1));
    assert_eq!(src.fetches(), 1);
    src.clock.advance(Duration::from_millis(1));
    assert_eq!(cache.get().await, Ok(1), "still valid: served, refreshed behind");
    src.clock.advance(2 * MIN);
    assert_eq!(cache.get().await, Ok(2));
    assert_eq!(src.fetches(), 2);
}

#[tokio::test]
async fn the_refresh_window_can_be_set() {
    let src = Source::new(HOUR);
    let cache = src.cache().refresh_ahead(10 * MIN);
    assert_eq!(cache.get().await, Ok(1));
    src.clock.advance(HOUR - 10 * MIN - Duration::from_millis(1));
    assert_eq!(cache.get().await, Ok(1));
    assert_eq!(src.fetches(), 1);
    src.clock.advance(Duration::from_millis(1));
    assert_eq!(cache.get().await, Ok(1));
    src.clock.advance(10 * MIN);
    assert_eq!(cache.get().await, Ok(2));
}

#[tokio::test]
async fn a_value_fetched_already_expired_is_an_error() {
    let src = Source::new(Duration::ZERO);
    let cache = src.cache();
    let err = cache.get().await.unwrap_err();
    assert!(err.to_string().contains("already expired"), "{err}");
    assert_eq!(cache.expires_at(), None);
}
