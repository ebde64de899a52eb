//! Batches (`/v1/files`, `/v1/batches`): a file of requests, run by the
//! gateway in the background, each line through the whole pipeline (routes,
//! access rules, limits, failover, a record per line at the catalog's batch
//! price), its answers gathered into an output file and an error file.
//!
//! What lives here is the state: uploaded files, batches and each line's
//! answer as it comes ([`BatchStore`]: in process, or the database's, where
//! any instance picks up a batch another left, a restarted one included;
//! lines already answered are not sent again). The runner is the server's,
//! which knows each endpoint's bodies.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::stored_responses::StoreFailure;

/// An uploaded file, without its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileMeta {
    /// `file-…`.
    pub id: String,
    /// Whose it is ([`crate::stored_responses::owner_of`]).
    pub owner: String,
    /// `batch` (uploaded), `batch_output` (a batch's answers).
    pub purpose: String,
    /// The name it was uploaded as.
    pub filename: String,
    /// Its size.
    pub bytes: u64,
    /// Unix milliseconds.
    pub created_ms: u64,
    /// When it is forgotten (Unix milliseconds).
    pub expires_ms: u64,
}

/// A file and its content.
pub type StoredFile = (FileMeta, Vec<u8>);

/// Where a batch is, in OpenAI's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// Its file is being checked.
    Validating,
    /// Its lines are being run.
    InProgress,
    /// Its answers are being gathered into files.
    Finalizing,
    /// Every line answered.
    Completed,
    /// Refused as a whole (its file, its key).
    Failed,
    /// Its window closed before every line ran.
    Expired,
    /// Asked to stop: the lines running finish, no more start.
    Cancelling,
    /// Stopped.
    Cancelled,
}

impl BatchStatus {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            BatchStatus::Validating => "validating",
            BatchStatus::InProgress => "in_progress",
            BatchStatus::Finalizing => "finalizing",
            BatchStatus::Completed => "completed",
            BatchStatus::Failed => "failed",
            BatchStatus::Expired => "expired",
            BatchStatus::Cancelling => "cancelling",
            BatchStatus::Cancelled => "cancelled",
        }
    }

    /// Nothing more happens to it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            BatchStatus::Completed
                | BatchStatus::Failed
                | BatchStatus::Expired
                | BatchStatus::Cancelled
        )
    }
}

/// Who a batch runs as: the key that created it, by its SHA-256 (as the key
/// table keeps it; never the key), resolved again when the batch runs, so a
/// revoked key's batch stops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchCaller {
    /// The key's SHA-256, hex; `None`: an open gateway's anonymous caller.
    pub key_hash: Option<String>,
    /// The key's visible prefix, for the records.
    pub key_prefix: Option<String>,
    /// The project the batch was created for (`x-switchyard-project`).
    pub project: Option<String>,
}

/// One batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// `batch_…`.
    pub id: String,
    /// Whose it is.
    pub owner: String,
    /// Who its lines run as.
    pub caller: BatchCaller,
    /// The endpoint every line is for (`/v1/chat/completions`).
    pub endpoint: String,
    /// Its input file.
    pub input_file_id: String,
    /// `24h`.
    pub completion_window: String,
    /// Where it is.
    pub status: BatchStatus,
    /// The answered lines' file, once finalized.
    pub output_file_id: Option<String>,
    /// The failed and unrun lines' file, once finalized (where there are any).
    pub error_file_id: Option<String>,
    /// Why it failed as a whole.
    pub errors: Vec<Value>,
    /// The caller's `metadata`.
    pub metadata: Option<Value>,
    /// Unix milliseconds of each step, where reached: `created`,
    /// `in_progress`, `finalizing`, `completed`, `failed`, `expired`,
    /// `cancelling`, `cancelled`.
    pub times: BTreeMap<String, u64>,
    /// When its window closes (Unix milliseconds).
    pub expires_ms: u64,
    /// Lines in its file, answered (2xx), failed.
    pub total: u64,
    /// See `total`.
    pub completed: u64,
    /// See `total`.
    pub failed: u64,
    /// Until when an instance's runner holds it (Unix milliseconds).
    pub lease_until_ms: u64,
    /// When it and its files are forgotten, once ended (Unix milliseconds).
    pub forget_ms: u64,
    /// Its lines handed to providers' own batch APIs (`batch_api: true`), a
    /// part per provider batch; `None`: not decided yet (the runner decides
    /// once, before any line runs). The other lines the gateway runs.
    #[serde(default)]
    pub native: Option<Vec<NativePart>>,
}

/// A batch's lines handed to one provider batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativePart {
    /// The provider.
    pub provider: String,
    /// The model every line runs there.
    pub upstream_model: String,
    /// The fingerprint of the platform key it was submitted with.
    pub credential: Option<String>,
    /// The provider's id for its batch.
    pub upstream_id: String,
    /// The input file's lines it holds.
    pub lines: Vec<u32>,
    /// Where it is.
    pub state: PartState,
}

/// Where a provider batch is, as the gateway follows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum PartState {
    /// Running at the provider.
    Running,
    /// Running, and asked to stop (its owner cancelled, or its window closed).
    Stopping,
    /// Ended, and every answer read back and run through (`end`: how it
    /// ended, `completed`, `expired` or `cancelled`).
    Collected {
        /// How it ended.
        end: String,
    },
    /// Refused as a whole by the provider: its lines are run by the gateway.
    Refused {
        /// The provider's reason.
        reason: String,
    },
}

impl NativePart {
    /// Its lines' answers are still to come from the provider.
    pub fn pending(&self) -> bool {
        matches!(self.state, PartState::Running | PartState::Stopping)
    }

    /// Its lines are the provider's to answer (not refused back to the gateway).
    pub fn holds_lines(&self) -> bool {
        !matches!(self.state, PartState::Refused { .. })
    }
}

impl Batch {
    /// Move to `status` at `now_ms`, noting the time.
    pub fn enter(&mut self, status: BatchStatus, now_ms: u64) {
        self.status = status;
        self.times.insert(status.as_str().to_owned(), now_ms);
    }
}

/// One line's answer, as its output or error file will hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineResult {
    /// Its place in the input file (from 0).
    pub index: u32,
    /// Answered with a 2xx (the output file); else the error file.
    pub ok: bool,
    /// The file's line (JSON).
    pub line: String,
}

/// Where files, batches and their lines' answers live. Implemented in
/// process ([`LocalBatches`]) and on the database (`switchyard-store`).
pub trait BatchStore: Send + Sync + std::fmt::Debug {
    /// Keep a file and its content.
    fn put_file<'a>(
        &'a self,
        meta: &'a FileMeta,
        content: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreFailure>>;
    /// `owner`'s file `id`, with its content where `content`.
    fn file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        content: bool,
    ) -> BoxFuture<'a, Result<Option<StoredFile>, StoreFailure>>;
    /// `owner`'s files, newest first.
    fn files<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<FileMeta>, StoreFailure>>;
    /// Forget `owner`'s file `id`: whether there was one.
    fn delete_file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>>;
    /// Keep a batch, unless the one kept has ended (an end is never
    /// overwritten) or is being cancelled and this is not its end (a
    /// runner's progress does not undo a cancel). Whether it was written.
    fn put_batch<'a>(&'a self, b: &'a Batch) -> BoxFuture<'a, Result<bool, StoreFailure>>;
    /// `owner`'s batch `id`.
    fn batch<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Batch>, StoreFailure>>;
    /// `owner`'s batches, newest first.
    fn batches<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<Batch>, StoreFailure>>;
    /// At most `limit` unended batches no runner holds at `now_ms`, each now
    /// held until `now_ms + lease_ms`.
    fn claim_batches(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Batch>, StoreFailure>>;
    /// Keep one line's answer (again: replaced).
    fn put_result<'a>(
        &'a self,
        batch: &'a str,
        r: &'a LineResult,
    ) -> BoxFuture<'a, Result<(), StoreFailure>>;
    /// Every answer kept for `batch`, in line order.
    fn results<'a>(
        &'a self,
        batch: &'a str,
    ) -> BoxFuture<'a, Result<Vec<LineResult>, StoreFailure>>;
}

/// The in-process store: a gateway without a database, and the library.
#[derive(Debug, Default)]
pub struct LocalBatches {
    inner: Mutex<Local>,
}

#[derive(Debug, Default)]
struct Local {
    files: HashMap<String, StoredFile>,
    batches: HashMap<String, Batch>,
    results: HashMap<String, BTreeMap<u32, LineResult>>,
}

impl LocalBatches {
    fn lock(&self) -> std::sync::MutexGuard<'_, Local> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, Result<T, StoreFailure>> {
    Box::pin(std::future::ready(Ok(v)))
}

fn now() -> u64 {
    crate::clock::UnixMs::now().0
}

impl BatchStore for LocalBatches {
    fn put_file<'a>(
        &'a self,
        meta: &'a FileMeta,
        content: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreFailure>> {
        let mut local = self.lock();
        let now = now();
        local.files.retain(|_, (m, _)| m.expires_ms > now);
        local.files.insert(meta.id.clone(), (meta.clone(), content.to_vec()));
        ready(())
    }

    fn file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        content: bool,
    ) -> BoxFuture<'a, Result<Option<StoredFile>, StoreFailure>> {
        let now = now();
        let found = self
            .lock()
            .files
            .get(id)
            .filter(|(m, _)| m.owner == owner && m.expires_ms > now)
            .map(|(m, c)| (m.clone(), if content { c.clone() } else { Vec::new() }));
        ready(found)
    }

    fn files<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<FileMeta>, StoreFailure>> {
        let now = now();
        let mut list: Vec<FileMeta> = self
            .lock()
            .files
            .values()
            .filter(|(m, _)| m.owner == owner && m.expires_ms > now)
            .map(|(m, _)| m.clone())
            .collect();
        list.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| b.id.cmp(&a.id)));
        ready(list)
    }

    fn delete_file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        let mut local = self.lock();
        let mine = local.files.get(id).is_some_and(|(m, _)| m.owner == owner);
        if mine {
            local.files.remove(id);
        }
        ready(mine)
    }

    fn put_batch<'a>(&'a self, b: &'a Batch) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        let mut local = self.lock();
        let written = match local.batches.get(&b.id) {
            Some(kept) if kept.status.is_final() => false,
            // A runner's progress does not undo a cancel: it may only end now.
            Some(kept)
                if kept.status == BatchStatus::Cancelling
                    && !b.status.is_final()
                    && b.status != BatchStatus::Cancelling =>
            {
                false
            }
            _ => {
                local.batches.insert(b.id.clone(), b.clone());
                true
            }
        };
        ready(written)
    }

    fn batch<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Batch>, StoreFailure>> {
        let found = self.lock().batches.get(id).filter(|b| b.owner == owner).cloned();
        ready(found)
    }

    fn batches<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<Batch>, StoreFailure>> {
        let mut list: Vec<Batch> =
            self.lock().batches.values().filter(|b| b.owner == owner).cloned().collect();
        list.sort_by(|a, b| b.id.cmp(&a.id));
        ready(list)
    }

    fn claim_batches(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Batch>, StoreFailure>> {
        let mut local = self.lock();
        let mut claimed: Vec<Batch> = local
            .batches
            .values_mut()
            .filter(|b| !b.status.is_final() && b.lease_until_ms <= now_ms)
            .take(limit)
            .map(|b| {
                b.lease_until_ms = now_ms + lease_ms;
                b.clone()
            })
            .collect();
        claimed.sort_by(|a, b| a.id.cmp(&b.id));
        ready(claimed)
    }

    fn put_result<'a>(
        &'a self,
        batch: &'a str,
        r: &'a LineResult,
    ) -> BoxFuture<'a, Result<(), StoreFailure>> {
        self.lock().results.entry(batch.to_owned()).or_default().insert(r.index, r.clone());
        ready(())
    }

    fn results<'a>(
        &'a self,
        batch: &'a str,
    ) -> BoxFuture<'a, Result<Vec<LineResult>, StoreFailure>> {
        let list = self
            .lock()
            .results
            .get(batch)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        ready(list)
    }
}
