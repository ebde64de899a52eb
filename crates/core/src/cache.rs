//! The response cache kept in this process: a [`ResponseCache`] bounded by
//! entries and bytes, dropping the least recently used answer first, each
//! answer lapsing after its TTL.
//!
//! A small LRU of its own rather than a cache crate: it needs a map, an order
//! and two bounds, which is less code than adapting a general cache's weigher
//! and expiry policies, and adds no dependency to the library.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::raw::CacheBounds;
use crate::continuity::BoxFuture;
use crate::state::ResponseCache;

/// Generated images kept in this process for their links: up to 256 MiB,
/// 32 MiB an image.
pub const IMAGE_BOUNDS: CacheBounds =
    CacheBounds { max_entries: 10_000, max_bytes: 256 << 20, max_entry_bytes: 32 << 20 };

/// The bounds of the prompt-cache affinity pins kept in this process: 100 000
/// conversations (a pin is its key and a deployment's name, ~150 bytes).
pub const AFFINITY_BOUNDS: CacheBounds =
    CacheBounds { max_entries: 100_000, max_bytes: 32 << 20, max_entry_bytes: 1 << 10 };

/// Answers in this process, within [`CacheBounds`] (`max_entries`, `max_bytes`).
#[derive(Debug)]
pub struct LocalCache {
    bounds: CacheBounds,
    inner: Mutex<Lru>,
}

#[derive(Debug, Default)]
struct Lru {
    entries: HashMap<String, Entry>,
    /// Use order: the oldest tick first.
    order: BTreeMap<u64, String>,
    tick: u64,
    bytes: u64,
}

#[derive(Debug)]
struct Entry {
    value: Arc<[u8]>,
    expires: Instant,
    tick: u64,
}

/// What an entry counts against `max_bytes`.
fn weight(key: &str, value: &[u8]) -> u64 {
    (key.len() + value.len()) as u64
}

impl Default for LocalCache {
    fn default() -> Self {
        Self::new(CacheBounds::default())
    }
}

impl LocalCache {
    /// An empty cache within `bounds`.
    pub fn new(bounds: CacheBounds) -> Self {
        Self { bounds, inner: Mutex::new(Lru::default()) }
    }

    /// Answers held now (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        // A panic while holding the lock leaves a consistent map (every
        // mutation below completes or does nothing): keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn get_at(&self, keys: &[String], now: Instant) -> Option<(usize, Arc<[u8]>)> {
        let mut lru = self.lock();
        for (i, key) in keys.iter().enumerate() {
            let fresh = match lru.entries.get(key) {
                None => continue,
                Some(e) => e.expires > now,
            };
            if !fresh {
                lru.remove(key);
                continue;
            }
            let tick = lru.next_tick();
            let Lru { entries, order, .. } = &mut *lru;
            let Some(e) = entries.get_mut(key) else { continue };
            order.remove(&e.tick);
            order.insert(tick, key.clone());
            e.tick = tick;
            return Some((i, Arc::clone(&e.value)));
        }
        None
    }

    pub(crate) fn put_at(&self, key: String, value: Arc<[u8]>, ttl: Duration, now: Instant) {
        let w = weight(&key, &value);
        if w > self.bounds.max_bytes || value.len() as u64 > self.bounds.max_entry_bytes {
            return;
        }
        let mut lru = self.lock();
        lru.remove(&key);
        while lru.entries.len() as u64 >= self.bounds.max_entries
            || lru.bytes + w > self.bounds.max_bytes
        {
            let Some((_, oldest)) = lru.order.pop_first() else { break };
            lru.remove(&oldest);
        }
        let tick = lru.next_tick();
        lru.order.insert(tick, key.clone());
        lru.bytes += w;
        lru.entries.insert(key, Entry { value, expires: now + ttl, tick });
    }
}

impl Lru {
    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.order.remove(&e.tick);
            self.bytes = self.bytes.saturating_sub(weight(key, &e.value));
        }
    }
}

impl ResponseCache for LocalCache {
    fn get<'a>(&'a self, keys: &'a [String]) -> BoxFuture<'a, Option<(usize, Arc<[u8]>)>> {
        Box::pin(std::future::ready(self.get_at(keys, Instant::now())))
    }

    fn put(&self, key: String, value: Arc<[u8]>, ttl_ms: u64) -> BoxFuture<'_, ()> {
        self.put_at(key, value, Duration::from_millis(ttl_ms), Instant::now());
        Box::pin(std::future::ready(()))
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
