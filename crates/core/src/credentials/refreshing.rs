//! [`Refreshing`]: an expiring credential, cached and refreshed ahead of its
//! expiry with one refresh in flight at a time.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};

use super::{Clock, CredentialError};
use crate::clock::UnixMs;

/// How long before its expiry a cached value is refreshed unless set (or half
/// its lifetime, when that is shorter).
pub const DEFAULT_REFRESH_AHEAD: Duration = Duration::from_secs(5 * 60);

type FetchFn<T> =
    dyn Fn() -> BoxFuture<'static, Result<(T, UnixMs), CredentialError>> + Send + Sync;
type Flight<T> = Shared<BoxFuture<'static, Result<T, CredentialError>>>;

/// An expiring credential (an access token, temporary AWS keys) and how to get
/// a new one. [`Refreshing::get`]:
///
/// - serves the cached value until `refresh_ahead` before its expiry (5 min, or
///   half the value's lifetime when that is shorter);
/// - from then until its expiry, still serves it, while one refresh runs in
///   the background (on the current tokio runtime; inline without one);
/// - once it has expired (or there is none), waits for a refresh;
/// - never runs two refreshes at once: every caller that needs one awaits the
///   one in flight, and all get its outcome;
/// - never serves an expired value, and never caches a failure: the callers
///   waiting on a refresh that failed get its error, and the next call tries
///   again.
///
/// Cheap to clone: clones share the cache.
pub struct Refreshing<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Refreshing<T> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

struct Inner<T> {
    fetch: Box<FetchFn<T>>,
    clock: Clock,
    state: Mutex<State<T>>,
}

struct State<T> {
    cached: Option<Cached<T>>,
    /// The refresh in flight and its number (so that only it clears the slot).
    flight: Option<(u64, Flight<T>)>,
    flights: u64,
    refresh_ahead: Duration,
}

enum Next<T> {
    Serve(T),
    /// Serve this, after starting this refresh behind it.
    Behind(T, Flight<T>),
    Wait(Flight<T>),
}

struct Cached<T> {
    value: T,
    refresh_at: UnixMs,
    expires_at: UnixMs,
}

impl<T> fmt::Debug for Refreshing<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("Refreshing")
            .field("expires_at", &state.cached.as_ref().map(|c| c.expires_at))
            .field("refreshing", &state.flight.is_some())
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Send + Sync + 'static> Refreshing<T> {
    /// A cache over `fetch`, which returns a new value and when it expires.
    pub fn new<F, Fut>(clock: Clock, fetch: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(T, UnixMs), CredentialError>> + Send + 'static,
    {
        let fetch: Box<FetchFn<T>> = Box::new(move || fetch().boxed());
        let state =
            State { cached: None, flight: None, flights: 0, refresh_ahead: DEFAULT_REFRESH_AHEAD };
        Self { inner: Arc::new(Inner { fetch, clock, state: Mutex::new(state) }) }
    }

    /// Refresh this long before expiry (or at half the lifetime, when
    /// shorter), from the next value fetched on.
    #[must_use]
    pub fn refresh_ahead(self, ahead: Duration) -> Self {
        self.inner.lock().refresh_ahead = ahead;
        self
    }

    /// A current value: see the type's documentation.
    pub async fn get(&self) -> Result<T, CredentialError> {
        // Decided under the lock, awaited after it (the future stays `Send`).
        let next = {
            let mut state = self.inner.lock();
            let now = self.inner.clock.now();
            match &state.cached {
                Some(c) if now < c.refresh_at => Next::Serve(c.value.clone()),
                Some(c) if now < c.expires_at => {
                    // Still valid: served while a refresh runs behind it.
                    let value = c.value.clone();
                    match self.inner.flight(&mut state) {
                        (flight, true) => Next::Behind(value, flight),
                        (_, false) => Next::Serve(value),
                    }
                }
                _ => Next::Wait(self.inner.flight(&mut state).0),
            }
        };
        match next {
            Next::Serve(value) => Ok(value),
            Next::Behind(value, flight) => {
                refresh_behind(flight).await;
                Ok(value)
            }
            Next::Wait(flight) => flight.await,
        }
    }

    /// The cached value's expiry, if a value is cached.
    pub fn expires_at(&self) -> Option<UnixMs> {
        self.inner.lock().cached.as_ref().map(|c| c.expires_at)
    }
}

/// Drive a refresh started while the value is still valid: on the runtime, in
/// the background; without one, here. A failure is logged, not returned: the
/// value in hand is still good, and the next call tries again.
async fn refresh_behind<T: Clone + Send + Sync + 'static>(flight: Flight<T>) {
    let report = |r: Result<T, CredentialError>| {
        if let Err(e) = r {
            tracing::warn!(error = %e, "refreshing a credential ahead of its expiry failed");
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(flight.map(report));
        }
        Err(_) => report(flight.await),
    }
}

impl<T> Inner<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<T: Clone + Send + Sync + 'static> Inner<T> {
    /// The refresh in flight, or a new one (then `true`).
    fn flight(self: &Arc<Self>, state: &mut State<T>) -> (Flight<T>, bool) {
        if let Some((_, f)) = &state.flight {
            return (f.clone(), false);
        }
        state.flights += 1;
        let id = state.flights;
        let fetch = (self.fetch)();
        // Weak: a flight nobody polls any more must not keep the cache alive.
        let weak: Weak<Self> = Arc::downgrade(self);
        let flight = async move {
            let result = fetch.await;
            match weak.upgrade() {
                Some(inner) => inner.land(id, result),
                None => result.map(|(value, _)| value),
            }
        }
        .boxed()
        .shared();
        state.flight = Some((id, flight.clone()));
        (flight, true)
    }

    /// A refresh's outcome: a value still valid is cached; nothing else is.
    fn land(
        &self,
        id: u64,
        result: Result<(T, UnixMs), CredentialError>,
    ) -> Result<T, CredentialError> {
        let now = self.clock.now();
        let mut state = self.lock();
        if state.flight.as_ref().is_some_and(|(f, _)| *f == id) {
            state.flight = None;
        }
        let (value, expires_at) = result?;
        if expires_at <= now {
            return Err(CredentialError::Fetch(
                "the credential fetched had already expired (is the clock right?)".to_owned(),
            ));
        }
        let lifetime = expires_at.since(now);
        let ahead = state.refresh_ahead.min(lifetime / 2);
        state.cached =
            Some(Cached { value: value.clone(), refresh_at: expires_at - ahead, expires_at });
        Ok(value)
    }
}

#[cfg(test)]
#[path = "refreshing_tests.rs"]
mod tests;
