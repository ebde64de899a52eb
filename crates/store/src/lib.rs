//! Persistence for Switchyard:
//!
//! * request-record sinks that never block the request path (a structured log
//!   line, an in-memory ring for tests and the admin surface, [`Tee`]);
//! * [`Store`] ([`db`], [`records`]): users, projects, groups, API keys, access
//!   rules, sealed BYOK credentials and request records on SQLite (default, zero
//!   setup) or PostgreSQL, with embedded migrations per backend
//!   (`migrations/sqlite`, `migrations/postgres`);
//! * [`audit`]: the batching writer that moves records from the request path into
//!   the store ([`Store`] implements its `RecordStore`);
//! * [`seal`]: encryption of BYOK provider keys (the store only sees sealed fields).
//!
//! The Redis-backed shared state arrives later.

pub mod audit;
pub mod db;
pub mod directory;
pub mod error;
mod files;
mod ledger;
pub mod model;
pub mod partitions;
pub mod records;
pub mod redis;
pub mod redis_cache;
pub mod redis_health;
mod rollups;
pub mod seal;
#[cfg(feature = "testing")]
pub mod testing;

pub use db::{Backend, DbPool, Store};
pub use error::StoreError;
pub use model::*;
pub use records::{DEFAULT_SLO_MS, SLO_RANGE_MS};

use std::collections::VecDeque;
use std::sync::Mutex;

use switchyard_core::record::{RecordSink, RequestRecord};

/// Writes each record as one structured log event (target `switchyard::audit`).
#[derive(Debug, Default)]
pub struct LogSink;

impl RecordSink for LogSink {
    fn record(&self, r: RequestRecord) {
        // Nothing to format when the audit target is filtered out.
        if !tracing::enabled!(target: "switchyard::audit", tracing::Level::INFO) {
            return;
        }
        let attempts = serde_json::to_string(&r.attempts).unwrap_or_default();
        tracing::info!(
            target: "switchyard::audit",
            id = %r.id,
            format = %r.client_format,
            requested = %r.requested_model,
            resolved = r.resolved_model.as_deref().unwrap_or(""),
            provider = r.provider.as_deref().unwrap_or(""),
            served_provider = r.served_provider.as_deref().unwrap_or(""),
            upstream_model = r.upstream_model.as_deref().unwrap_or(""),
            descriptor = %r.descriptor,
            status = r.status,
            error = r.error_code.as_deref().unwrap_or(""),
            input_tokens = r.usage.input_tokens.unwrap_or(0),
            output_tokens = r.usage.output_tokens.unwrap_or(0),
            cost_usd = r.cost_usd.unwrap_or(f64::NAN),
            estimated = r.estimated,
            stream = r.stream,
            ttft_ms = r.ttft_ms.unwrap_or(0),
            total_ms = r.total_ms,
            attempts = %attempts,
            "request"
        );
    }
}

/// Keeps the most recent `capacity` records in memory.
#[derive(Debug)]
pub struct MemorySink {
    capacity: usize,
    records: Mutex<VecDeque<RequestRecord>>,
    notify: tokio::sync::Notify,
}

impl MemorySink {
    pub fn new(capacity: usize) -> Self {
        Self { capacity, records: Mutex::new(VecDeque::new()), notify: tokio::sync::Notify::new() }
    }

    pub fn records(&self) -> Vec<RequestRecord> {
        self.lock().iter().cloned().collect()
    }

    /// The record with this request id, waiting for it to be written (streams are
    /// recorded when they end). Callers bound the wait with a timeout.
    pub async fn wait_for(&self, id: &str) -> RequestRecord {
        loop {
            let notified = self.notify.notified();
            if let Some(r) = self.lock().iter().find(|r| r.id == id) {
                return r.clone();
            }
            notified.await;
        }
    }

    /// All records once at least `n` have been written.
    pub async fn wait_len(&self, n: usize) -> Vec<RequestRecord> {
        loop {
            let notified = self.notify.notified();
            {
                let q = self.lock();
                if q.len() >= n {
                    return q.iter().cloned().collect();
                }
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<RequestRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl RecordSink for MemorySink {
    fn record(&self, record: RequestRecord) {
        {
            let mut q = self.lock();
            if q.len() == self.capacity {
                q.pop_front();
            }
            q.push_back(record);
        }
        self.notify.notify_waiters();
    }
}

/// Sends every record to several sinks.
pub struct Tee(pub Vec<switchyard_core::SharedSink>);

impl RecordSink for Tee {
    fn record(&self, record: RequestRecord) {
        if let Some((last, rest)) = self.0.split_last() {
            for s in rest {
                s.record(record.clone());
            }
            last.record(record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn memory_sink_is_bounded_and_waitable() {
        let sink = std::sync::Arc::new(MemorySink::new(2));
        for id in ["a", "b", "c"] {
            sink.record(RequestRecord::new(id, 0));
        }
        let ids: Vec<_> = sink.records().into_iter().map(|r| r.id).collect();
        assert_eq!(ids, ["b", "c"]);
        let s2 = sink.clone();
        let waiter = tokio::spawn(async move { s2.wait_for("d").await });
        tokio::task::yield_now().await;
        sink.record(RequestRecord::new("d", 0));
        assert_eq!(waiter.await.unwrap().id, "d");
    }
}
