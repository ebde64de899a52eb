//! Media jobs (`POST /v1/jobs`): generations a provider's queue runs (fal's),
//! submitted at once and followed by the gateway until they end.
//!
//! A job is submitted through the pipeline like any request (planned among
//! the catalog's `kind: media` models, admitted, tried with the route's
//! retries and failover: `exec/jobs.rs`). Once a queue has taken it, it is a
//! [`Job`] here, kept where every instance sees it (the database's store, or
//! [`LocalJobs`] in process) and followed by polling its queue: by whichever
//! instance's poller claims it first ([`JobStore::claim`] leases it), so a
//! restarted or another instance picks up what one left. It ends completed
//! (its result kept), failed (the queue's word, or too many polls without an
//! answer) or cancelled (`DELETE /v1/jobs/{id}`), and only then is it metered
//! (per second of media or per job) and its request's record written: the
//! record rides in the job until then.
//!
//! A job is its submitter's: keyed by its owner
//! ([`crate::stored_responses::owner_of`]), so another key's id reads as
//! unknown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::record::RequestRecord;
use crate::state::{Admission, Reservation};
pub use crate::stored_responses::StoreFailure;
use crate::util::Secret;

/// Where a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Waiting in the provider's queue.
    Queued,
    /// A runner has it.
    InProgress,
    /// Done: its result is kept.
    Completed,
    /// Ended without a result.
    Failed,
    /// Cancelled by its owner.
    Cancelled,
}

impl JobStatus {
    /// The API's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::InProgress => "in_progress",
            JobStatus::Completed => "completed",
            JobStatus::Failed => "failed",
            JobStatus::Cancelled => "cancelled",
        }
    }

    /// It has ended: nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(self, JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled)
    }
}

/// Why a job failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobError {
    /// A stable code: `job_failed` (the provider's word), `job_lost` (no
    /// answer from it for too many polls), `job_timeout` (still running after
    /// the most polls).
    pub code: String,
    /// What happened, secrets scrubbed.
    pub message: String,
}

/// One job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// Its id, as its owner knows it (`job_…`).
    pub id: String,
    /// Whose it is ([`crate::stored_responses::owner_of`]).
    pub owner: String,
    /// The model as the client named it.
    pub model: String,
    /// The provider whose queue runs it.
    pub provider: String,
    /// The deployment that took it (`provider/model`).
    pub deployment: String,
    /// The provider's model.
    pub upstream_model: String,
    /// The queue's id for it.
    pub upstream_id: String,
    /// The fingerprint of the provider key it was submitted with (a queue's
    /// ids are its account's: it is asked about with the same key).
    pub credential: Option<String>,
    /// Where it is.
    pub status: JobStatus,
    /// Its place in the queue, while queued and where the queue says.
    pub queue_position: Option<u64>,
    /// The model's input, as submitted (its `duration` prices a video).
    pub input: Map<String, Value>,
    /// The model's output, once completed.
    pub result: Option<Value>,
    /// Why it failed.
    pub error: Option<JobError>,
    /// Unix milliseconds: submitted, last changed, ended.
    pub created_ms: u64,
    /// See `created_ms`.
    pub updated_ms: u64,
    /// See `created_ms`.
    pub completed_ms: Option<u64>,
    /// Times its queue was asked about it.
    pub polls: u32,
    /// Polls in a row that got no answer.
    pub failed_polls: u32,
    /// When it is next asked about (Unix milliseconds).
    pub next_poll_ms: u64,
    /// Until when an instance's poller holds it (Unix milliseconds).
    pub lease_until_ms: u64,
    /// Its model's prices when it was submitted, as billed (markup in): what
    /// it is metered at when it ends, whatever the catalog says by then.
    pub prices: JobPrices,
    /// Seconds of media it made, once metered, and where that was read
    /// (`output`, `request`, `compute`).
    pub seconds: Option<(f64, String)>,
    /// What it cost, once metered (USD, markup included).
    pub cost_usd: Option<f64>,
    /// Its request's record, written when it ends (`None` after).
    pub record: Option<Box<RequestRecord>>,
    /// When it is forgotten (Unix milliseconds).
    pub expires_ms: u64,
}

/// A media model's prices, as a job is billed (USD, markup included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct JobPrices {
    /// Per second of media.
    pub per_second: Option<f64>,
    /// Per finished job.
    pub per_job: Option<f64>,
}

impl JobPrices {
    /// `pricing`'s job prices with `markup`.
    pub fn of(pricing: Option<&crate::config::raw::Pricing>, markup: f64) -> Self {
        let times = |v: Option<f64>| v.map(|v| v * markup);
        Self {
            per_second: times(pricing.and_then(|p| p.per_second)),
            per_job: times(pricing.and_then(|p| p.per_job)),
        }
    }

    /// As a [`crate::config::raw::Pricing`] with these prices alone.
    pub fn pricing(&self) -> crate::config::raw::Pricing {
        crate::config::raw::Pricing {
            per_second: self.per_second,
            per_job: self.per_job,
            ..crate::config::raw::Pricing::default()
        }
    }
}

/// Where jobs live. Implemented in process ([`LocalJobs`]) and on the
/// database (`switchyard-store`).
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// Keep `job`: a new one, or a newer state of one, unless the one kept has
    /// ended already (an end is never overwritten: a cancel and the poller's
    /// last answer may race). Whether it was written.
    fn put<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<bool, StoreFailure>>;
    /// The job `id` of `owner`; `None` when there is none (or it is another
    /// owner's).
    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreFailure>>;
    /// At most `limit` unended jobs due a poll at `now_ms` that no poller
    /// holds, each now held until `now_ms + lease_ms` (its `lease_until_ms`
    /// set) so no other instance polls it meanwhile.
    fn claim(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Job>, StoreFailure>>;
}

/// Jobs kept in process by default (the oldest ended ones go first past it).
pub const LOCAL_CAPACITY: usize = 10_000;

/// The in-process store: a gateway without a database, and the library.
#[derive(Debug, Default)]
pub struct LocalJobs {
    jobs: Mutex<HashMap<String, Job>>,
}

impl LocalJobs {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Job>> {
        self.jobs.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl JobStore for LocalJobs {
    fn put<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        let mut jobs = self.lock();
        let written = match jobs.get(&job.id) {
            Some(kept) if kept.status.is_final() => false,
            _ => {
                jobs.insert(job.id.clone(), job.clone());
                true
            }
        };
        if jobs.len() > LOCAL_CAPACITY {
            let now = crate::clock::UnixMs::now().0;
            jobs.retain(|_, j| !j.status.is_final() || j.expires_ms > now);
        }
        Box::pin(std::future::ready(Ok(written)))
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreFailure>> {
        let now = crate::clock::UnixMs::now().0;
        let found = self.lock().get(id).filter(|j| j.owner == owner && j.expires_ms > now).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn claim(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Job>, StoreFailure>> {
        let mut jobs = self.lock();
        let mut due: Vec<&mut Job> = jobs
            .values_mut()
            .filter(|j| {
                !j.status.is_final() && j.next_poll_ms <= now_ms && j.lease_until_ms <= now_ms
            })
            .collect();
        due.sort_by_key(|j| j.next_poll_ms);
        let claimed = due
            .into_iter()
            .take(limit)
            .map(|j| {
                j.lease_until_ms = now_ms + lease_ms;
                j.clone()
            })
            .collect();
        Box::pin(std::future::ready(Ok(claimed)))
    }
}

/// What a job's submission holds in the instance that took it, until the job
/// ends: its budget and rate reservation (settled with the job's cost), and a
/// caller's own provider key where it brought one (never stored: a job
/// submitted with one is followed by this instance only).
#[derive(Debug, Default)]
pub struct Holds {
    held: Mutex<HashMap<String, Held>>,
}

/// An admission's reservation, with the admission that settles it.
pub(crate) type Reserved = (Arc<dyn Admission>, Reservation);

/// One job's hold.
#[derive(Debug)]
pub(crate) struct Held {
    pub reservation: Option<Reserved>,
    pub byok: Option<Secret>,
}

impl Holds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn hold(&self, id: &str, held: Held) {
        self.lock().insert(id.to_owned(), held);
    }

    pub(crate) fn byok(&self, id: &str) -> Option<Secret> {
        self.lock().get(id).and_then(|h| h.byok.clone())
    }

    pub(crate) fn take(&self, id: &str) -> Option<Held> {
        self.lock().remove(id)
    }
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
