//! Stored responses: the Responses API's server-side state (`store`,
//! `previous_response_id`, `GET /v1/responses/{id}`), kept by the gateway so it
//! works on every upstream wire, stateless ones included.
//!
//! Each stored response holds the whole input it answered (the inputs and
//! outputs of the responses it continued, expanded) and the response object as
//! its client got it: a later request that names it is sent the conversation
//! rebuilt (that input, its output items, then the new input), to whatever
//! deployment serves it. Self-contained entries cost space (a conversation's
//! turns repeat what came before; the database's copy is compressed) and buy a
//! lookup of one row per turn, and a deleted response that others continued
//! breaks nothing.
//!
//! Entries are the caller's: keyed by its owner ([`owner_of`]: the gateway key
//! it authenticated with), so another key's id reads as unknown (404), never
//! as another tenant's data. They expire after the configured retention.
//!
//! The in-process store ([`LocalResponses`]) serves a gateway without a
//! database and the library; with one, the database's (`switchyard-store`)
//! keeps them across restarts and instances.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::access::Principal;

/// One stored response.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResponse {
    /// Its id, as the client got it (`resp_…`).
    pub id: String,
    /// Whose it is ([`owner_of`]).
    pub owner: String,
    /// Unix milliseconds at which it was stored.
    pub created_ms: u64,
    /// Unix milliseconds after which it is gone.
    pub expires_ms: u64,
    /// The whole input it answered, as Responses input items.
    pub input: Vec<Value>,
    /// The response object as the client got it: `id`, `status`, `model`,
    /// `output`, `usage`, …
    pub response: Value,
}

impl StoredResponse {
    /// Its output items (`response.output`).
    pub fn output(&self) -> &[Value] {
        self.response.get("output").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
}

/// Why the store could not do what it was asked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("response store: {0}")]
pub struct StoreFailure(pub String);

/// Where stored responses live. Implemented in process ([`LocalResponses`])
/// and on the database (`switchyard-store`).
pub trait ResponseStore: Send + Sync + std::fmt::Debug {
    /// Keep `r` (replacing one of the same owner and id).
    fn put<'a>(&'a self, r: &'a StoredResponse) -> BoxFuture<'a, Result<(), StoreFailure>>;
    /// The unexpired response `id` of `owner` at `now_ms`; `None` when there is
    /// none (or it is another owner's).
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<StoredResponse>, StoreFailure>>;
    /// Forget the response `id` of `owner`: whether there was one.
    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>>;
}

/// Whose stored responses a caller reads and writes: the gateway key it
/// authenticated with (its fingerprint, or its stored id), else its user,
/// else `anonymous` (an open gateway, a library caller who names no one).
pub fn owner_of(p: &Principal) -> String {
    if let Some(digest) = &p.key_digest {
        format!("key:{digest}")
    } else if let Some(id) = &p.key_id {
        format!("key_id:{id}")
    } else if let Some(user) = &p.user_id {
        format!("user:{user}")
    } else {
        "anonymous".to_owned()
    }
}

/// A gateway key's digest, as [`Principal::key_digest`] holds it: the first
/// 128 bits of its SHA-256, in hex. Not the key, and two keys never share one
/// in practice (a fingerprint of 32 bits would, among enough keys).
pub fn key_digest(key: &str) -> String {
    use sha2::{Digest, Sha256};
    let sum = Sha256::digest(key.as_bytes());
    sum.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The in-process store: bounded in entries (the oldest go first), each
/// living until its expiry.
#[derive(Debug)]
pub struct LocalResponses {
    inner: Mutex<Local>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Local {
    map: HashMap<(String, String), StoredResponse>,
    order: VecDeque<(String, String)>,
}

/// Responses kept in process by default.
pub const LOCAL_CAPACITY: usize = 10_000;

impl Default for LocalResponses {
    fn default() -> Self {
        Self::new(LOCAL_CAPACITY)
    }
}

impl LocalResponses {
    /// A store keeping at most `capacity` responses.
    pub fn new(capacity: usize) -> Self {
        Self { inner: Mutex::default(), capacity: capacity.max(1) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Local> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ResponseStore for LocalResponses {
    fn put<'a>(&'a self, r: &'a StoredResponse) -> BoxFuture<'a, Result<(), StoreFailure>> {
        let key = (r.owner.clone(), r.id.clone());
        let mut local = self.lock();
        if local.map.insert(key.clone(), r.clone()).is_none() {
            local.order.push_back(key);
        }
        while local.map.len() > self.capacity {
            let Some(oldest) = local.order.pop_front() else { break };
            local.map.remove(&oldest);
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<StoredResponse>, StoreFailure>> {
        let key = (owner.to_owned(), id.to_owned());
        let found = self.lock().map.get(&key).filter(|r| r.expires_ms > now_ms).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        let key = (owner.to_owned(), id.to_owned());
        let mut local = self.lock();
        let had = local.map.remove(&key).is_some();
        if had {
            local.order.retain(|k| *k != key);
        }
        Box::pin(std::future::ready(Ok(had)))
    }
}

#[cfg(test)]
#[path = "stored_responses_tests.rs"]
mod tests;
