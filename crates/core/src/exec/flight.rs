//! Coalescing: identical cacheable requests in flight in this instance share
//! one upstream call.
//!
//! The first request with a key leads: its pipeline (admission, the attempt
//! loop) runs as a task of its own, and every request with the same key that
//! arrives meanwhile follows it, waiting for its answer. Every one of them
//! holds the [`Flight`]; the task is aborted when the last lets go, so one
//! caller leaving (the leader's included) cancels nothing while another waits,
//! and all leaving cancels the upstream call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use switchyard_protocol::Response;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::Served;

/// What a flight lands with: its answer, or `None` when it has none to share
/// (it failed, or answered in a way that is not kept).
pub(super) type Landing = Option<Arc<Shared>>;

/// An answer shared with the followers.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) response: Response,
    pub(super) served: Served,
}

type Map = Mutex<HashMap<String, (u64, Weak<Flight>)>>;

/// The flights in progress in this instance, by key (the runtime's).
#[derive(Debug, Default)]
pub struct Flights {
    map: Arc<Map>,
    next: AtomicU64,
}

/// One upstream call, shared by the requests holding it.
#[derive(Debug)]
pub(super) struct Flight {
    id: u64,
    key: String,
    map: Weak<Map>,
    rx: watch::Receiver<Option<Landing>>,
    abort: OnceLock<AbortHandle>,
}

/// The leader's side: lands the flight.
#[derive(Debug)]
pub(super) struct Publisher {
    id: u64,
    key: String,
    map: Weak<Map>,
    tx: watch::Sender<Option<Landing>>,
}

/// A request's part in a flight.
pub(super) enum Joined {
    /// It leads: it starts the call ([`Flight::started`]) and lands it.
    Lead { flight: Arc<Flight>, publisher: Publisher },
    /// Another request leads: wait for its answer.
    Follow(Arc<Flight>),
}

fn lock(map: &Map) -> std::sync::MutexGuard<'_, HashMap<String, (u64, Weak<Flight>)>> {
    // Every change below completes under the lock: a poisoned map is whole.
    map.lock().unwrap_or_else(|e| e.into_inner())
}

impl Flights {
    /// Follow the flight in progress for `key`, or lead a new one.
    pub(super) fn join(&self, key: &str) -> Joined {
        let mut map = lock(&self.map);
        if let Some(flight) = map.get(key).and_then(|(_, w)| w.upgrade()) {
            return Joined::Follow(flight);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = watch::channel(None);
        let weak_map = Arc::downgrade(&self.map);
        let flight = Arc::new(Flight {
            id,
            key: key.to_owned(),
            map: weak_map.clone(),
            rx,
            abort: OnceLock::new(),
        });
        map.insert(key.to_owned(), (id, Arc::downgrade(&flight)));
        let publisher = Publisher { id, key: key.to_owned(), map: weak_map, tx };
        Joined::Lead { flight, publisher }
    }

    /// Flights in progress (for tests).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        lock(&self.map).len()
    }
}

fn forget(map: &Weak<Map>, key: &str, id: u64) {
    if let Some(map) = map.upgrade() {
        let mut map = lock(&map);
        if map.get(key).is_some_and(|(held, _)| *held == id) {
            map.remove(key);
        }
    }
}

impl Flight {
    /// The task making the call: aborted when the last holder lets go.
    pub(super) fn started(&self, task: AbortHandle) {
        let _ = self.abort.set(task);
    }

    /// The leader's answer, once it lands; `None` when it has none to share or
    /// its task ended without landing.
    pub(super) async fn wait(&self) -> Landing {
        let mut rx = self.rx.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(landed) => landed.clone().flatten(),
            Err(_) => None,
        }
    }
}

impl Drop for Flight {
    fn drop(&mut self) {
        if let Some(task) = self.abort.get() {
            task.abort();
        }
        forget(&self.map, &self.key, self.id);
    }
}

impl Publisher {
    /// Land the flight: its followers get `landing`, and a request arriving
    /// later starts a flight of its own (or finds the answer in the cache).
    pub(super) fn land(self, landing: Landing) {
        forget(&self.map, &self.key, self.id);
        self.tx.send_replace(Some(landing));
    }
}

#[cfg(test)]
#[path = "flight_tests.rs"]
mod tests;
