//! The request-record writer: takes records off the request path and writes them
//! to a [`RecordStore`] in batches.
//!
//! ```text
//!  request path ── record() ──try_send──► bounded queue ──► batching task ──► RecordStore
//!                     │ queue full / closed                     │ insert failed (after retries)
//!                     └────────────► spill thread ◄─────────────┘
//!                                    (JSON lines, appended to spill_path)
//! ```
//!
//! * [`AuditWriter::record`] never waits: it is a `try_send` on a bounded queue.
//!   When the queue is full (the store is slower than the traffic) or closed (after
//!   shutdown), the row is handed to a dedicated spill thread over an unbounded
//!   channel, which appends it to the spill file. The caller does no disk IO.
//! * The batching task collects up to `batch` rows, or what arrived within
//!   `flush_every` of the first, and inserts them in one call. A failed insert is
//!   retried `retries` times with doubling backoff, then the batch is spilled.
//! * [`AuditTask::shutdown`] closes the queue, writes what is in it, and syncs the
//!   spill file. Rows recorded afterwards still go to the spill file.
//! * At startup, before [`AuditWriter::start`], [`AuditWriter::replay_spill`]
//!   inserts the spilled rows and truncates the file (and the `.replay` file a
//!   replay left, first).
//! * While running, once the store takes a batch again after rows were spilled,
//!   the spill thread hands its file over (renamed to `<spill_path>.replay`,
//!   new rows going to a fresh file) and a task replays it, at most every
//!   `replay_every`: a database outage's records reach it without a restart.
//!
//! Every row ends up inserted or in the spill file; the only exceptions are counted
//! in `gateway_audit_lost_total` and logged (the spill file cannot be written, or a
//! hard crash while rows are still queued in memory).
//!
//! Metrics: `gateway_audit_written_total`, `gateway_audit_dropped_to_spill_total`
//! (label `reason`: `queue_full`, `closed`, `insert_failed`),
//! `gateway_audit_insert_failures_total` (failed insert calls, retries included),
//! `gateway_audit_lost_total`, `gateway_audit_replayed_total`,
//! `gateway_audit_spill_corrupt_total`.

use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::FutureExt as _;
use switchyard_core::record::{RecordSink, RequestRecord};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// Where batches of records are written (the database store implements this).
///
/// An implementation should make `insert_batch` idempotent on the record id
/// (e.g. `ON CONFLICT (id) DO NOTHING`): a batch whose commit succeeded but whose
/// reply was lost is retried, and a crash during replay replays rows again.
pub trait RecordStore: Send + Sync + 'static {
    fn insert_batch<'a>(
        &'a self,
        batch: &'a [RequestRecord],
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;
}

/// Tuning for the [`AuditWriter`]. [`AuditConfig::new`] gives the defaults.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// Capacity of the queue between the request path and the batching task.
    pub queue: usize,
    /// Most rows per insert.
    pub batch: usize,
    /// Longest a row waits in a partial batch.
    pub flush_every: Duration,
    /// JSON-lines file for rows that could not be queued or inserted.
    pub spill_path: PathBuf,
    /// Retries of a failed insert before its batch is spilled.
    pub retries: u32,
    /// Wait before the first retry; doubled for each further one.
    pub retry_backoff: Duration,
    /// While running, how often at most the spilled rows are replayed once
    /// the store takes batches again; `None`: only at start.
    pub replay_every: Option<Duration>,
}

impl AuditConfig {
    /// Queue 10,000, batches of 500, flushed every 200 ms, 2 retries from 100 ms.
    pub fn new(spill_path: impl Into<PathBuf>) -> Self {
        Self {
            queue: 10_000,
            batch: 500,
            flush_every: Duration::from_millis(200),
            spill_path: spill_path.into(),
            retries: 2,
            retry_backoff: Duration::from_millis(100),
            replay_every: Some(Duration::from_secs(10)),
        }
    }
}

/// Counts since [`AuditWriter::start`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditStats {
    /// Rows inserted into the store.
    pub written: u64,
    /// Rows appended to the spill file.
    pub spilled: u64,
    /// Rows that could be neither inserted nor spilled.
    pub lost: u64,
}

#[derive(Debug, Default)]
struct Counters {
    written: AtomicU64,
    spilled: AtomicU64,
    lost: AtomicU64,
}

impl Counters {
    fn lose(&self, rows: u64, why: &str) {
        self.lost.fetch_add(rows, Ordering::Relaxed);
        metrics::counter!("gateway_audit_lost_total").increment(rows);
        tracing::error!(target: "switchyard::audit", rows, why, "request records lost");
    }
}

enum SpillMsg {
    Row(Box<RequestRecord>),
    Batch(Vec<RequestRecord>),
    /// Write everything received so far, fsync, and answer.
    Sync(oneshot::Sender<Result<(), String>>),
    /// Write everything received so far and hand the file over for a replay:
    /// the `.replay` file to replay, if there are rows to, and whether it holds
    /// all of them (false: a replay left it, and the spill file waits its turn).
    HandOver(oneshot::Sender<Option<(PathBuf, bool)>>),
}

/// Hands rows to the spill thread; never blocks.
#[derive(Clone)]
struct Spill {
    tx: std::sync::mpsc::Sender<SpillMsg>,
    counters: Arc<Counters>,
}

impl Spill {
    fn rows(&self, msg: SpillMsg, rows: u64, reason: &'static str) {
        metrics::counter!("gateway_audit_dropped_to_spill_total", "reason" => reason)
            .increment(rows);
        if self.tx.send(msg).is_err() {
            self.counters.lose(rows, "spill thread is gone");
        }
    }
}

/// The request path's end: a [`RecordSink`] that queues records for the
/// batching task. Share it as `Arc<AuditWriter>` (or `SharedSink`).
pub struct AuditWriter {
    tx: mpsc::Sender<RequestRecord>,
    spill: Spill,
}

impl std::fmt::Debug for AuditWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditWriter")
            .field("queued", &(self.tx.max_capacity() - self.tx.capacity()))
            .field("stats", &self.stats())
            .finish()
    }
}

/// The batching task; keep it to shut the writer down. Dropping it without
/// [`AuditTask::shutdown`] detaches the task: it then runs until the
/// [`AuditWriter`] is dropped.
#[derive(Debug)]
pub struct AuditTask {
    close: oneshot::Sender<()>,
    done: oneshot::Receiver<Result<(), String>>,
}

impl AuditWriter {
    /// Starts the spill thread and the batching task, on a thread of its own
    /// with its own single-threaded runtime. A batch's encoding, binding and
    /// rollup sums are a few milliseconds of CPU: on the runtime that serves
    /// requests (one thread, on one CPU), they held every request behind them
    /// for as long; on a thread of their own, the scheduler shares the CPU
    /// between them and the requests. Fails when a thread or the runtime
    /// cannot be made.
    pub fn start(
        store: Arc<dyn RecordStore>,
        cfg: AuditConfig,
    ) -> std::io::Result<(AuditWriter, AuditTask)> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let counters = Arc::new(Counters::default());
        // Every series alerts read exists from the start, at zero: an alert on
        // the rate of one that never moved reads 0, not "no data".
        metrics::counter!("gateway_audit_written_total").increment(0);
        metrics::counter!("gateway_audit_lost_total").increment(0);
        metrics::counter!("gateway_audit_insert_failures_total").increment(0);
        for reason in ["queue_full", "closed", "insert_failed"] {
            metrics::counter!("gateway_audit_dropped_to_spill_total", "reason" => reason)
                .increment(0);
        }
        let (spill_tx, spill_rx) = std::sync::mpsc::channel();
        let path = cfg.spill_path.clone();
        let c = counters.clone();
        std::thread::Builder::new()
            .name("audit-spill".into())
            .spawn(move || SpillFile::new(path, c).run(spill_rx))?;
        let spill = Spill { tx: spill_tx, counters };
        let (tx, rx) = mpsc::channel(cfg.queue.max(1));
        let (close, close_rx) = oneshot::channel();
        let (done_tx, done) = oneshot::channel();
        let batching = spill.clone();
        std::thread::Builder::new().name("audit-writer".into()).spawn(move || {
            let result = runtime.block_on(batch_loop(rx, close_rx, store, cfg, batching));
            let _ = done_tx.send(result);
        })?;
        Ok((AuditWriter { tx, spill }, AuditTask { close, done }))
    }

    /// Makes the spill file's folder (as the spill thread would for its first
    /// row) and checks the file can be written there: call at start-up, so a
    /// spill path that cannot be written is said then, naming the path, and
    /// not found out when the database first fails and rows are lost.
    pub fn prepare_spill(path: &Path) -> Result<(), String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            crate::files::prepare_dir(dir, "the spill file's folder")?;
        }
        crate::files::check_writable(path, "the spill file")
    }

    /// Where the rows of `spill` are moved while the writer replays them: what
    /// a replay cut short (a crash, the database failing again) left there is
    /// replayed at the next start, or by the next replay.
    pub fn replay_path(spill: &Path) -> PathBuf {
        with_suffix(spill, ".replay")
    }

    /// Counts since start.
    pub fn stats(&self) -> AuditStats {
        let c = &self.spill.counters;
        AuditStats {
            written: c.written.load(Ordering::Relaxed),
            spilled: c.spilled.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
        }
    }

    /// Inserts the rows of a spill file (JSON lines) and truncates it. Call at
    /// startup, before [`AuditWriter::start`] uses the same path (rows appended
    /// while a replay runs could be truncated with it), for the path and its
    /// [`replay_path`](Self::replay_path) (first: its rows are older). While
    /// running, the writer replays what it spilled itself.
    ///
    /// Blank lines are ignored; lines that do not parse (a torn last line, a
    /// corrupt file) are skipped, counted in `gateway_audit_spill_corrupt_total`
    /// and appended to `<path>.corrupt` for inspection. When an insert fails
    /// (after retries), the rows not yet inserted stay in the file and the error
    /// is returned. Returns the number of rows inserted.
    pub async fn replay_spill(store: &dyn RecordStore, path: &Path) -> Result<usize, String> {
        const CHUNK: usize = 500;
        let shown = path.display().to_string();
        let mut reader = match blocking({
            let path = path.to_owned();
            move || match File::open(&path) {
                Ok(f) => Ok(Some(BufReader::new(f))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await
        {
            Ok(Some(r)) => r,
            Ok(None) => return Ok(0),
            Err(e) => return Err(format!("open {shown}: {e}")),
        };
        let corrupt_path = with_suffix(path, ".corrupt");
        let mut offset = 0u64;
        let mut inserted = 0usize;
        let mut corrupt = 0u64;
        loop {
            let chunk_start = offset;
            let cp = corrupt_path.clone();
            let read = blocking(move || read_chunk(reader, CHUNK, &cp)).await;
            let chunk = read.map_err(|e| format!("read {shown}: {e}"))?;
            reader = chunk.reader;
            offset += chunk.bytes;
            corrupt += chunk.corrupt;
            if !chunk.rows.is_empty() {
                if let Err(e) =
                    insert_with_retry(store, &chunk.rows, 2, Duration::from_millis(200)).await
                {
                    let keep = path.to_owned();
                    let kept = blocking(move || keep_tail(&keep, chunk_start)).await;
                    metrics::counter!("gateway_audit_replayed_total").increment(inserted as u64);
                    return Err(match kept {
                        Ok(()) => format!(
                            "replaying {shown}: insert failed after {inserted} rows, the rest stay in the file: {e}"
                        ),
                        Err(io) => format!(
                            "replaying {shown}: insert failed after {inserted} rows ({e}), and the file could not be trimmed ({io}): its first {inserted} rows will be replayed again"
                        ),
                    });
                }
                inserted += chunk.rows.len();
            }
            if chunk.eof {
                break;
            }
        }
        drop(reader);
        let p = path.to_owned();
        blocking(move || {
            let f = OpenOptions::new().write(true).open(&p)?;
            f.set_len(0)?;
            f.sync_all()
        })
        .await
        .map_err(|e| format!("truncate {shown}: {e}"))?;
        metrics::counter!("gateway_audit_replayed_total").increment(inserted as u64);
        if corrupt > 0 {
            metrics::counter!("gateway_audit_spill_corrupt_total").increment(corrupt);
            tracing::warn!(
                target: "switchyard::audit",
                file = %shown,
                corrupt,
                kept_in = %corrupt_path.display(),
                "skipped unreadable lines in the audit spill file"
            );
        }
        tracing::info!(target: "switchyard::audit", file = %shown, inserted, "replayed audit spill file");
        Ok(inserted)
    }
}

impl RecordSink for AuditWriter {
    fn record(&self, record: RequestRecord) {
        match self.tx.try_send(record) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(r)) => {
                self.spill.rows(SpillMsg::Row(Box::new(r)), 1, "queue_full");
            }
            Err(mpsc::error::TrySendError::Closed(r)) => {
                self.spill.rows(SpillMsg::Row(Box::new(r)), 1, "closed");
            }
        }
    }
}

impl AuditTask {
    /// Closes the queue (later records go to the spill file), inserts what was
    /// queued, and syncs the spill file. An error means rows were lost or the
    /// spill file could not be synced; it is also logged.
    pub async fn shutdown(self) -> Result<(), String> {
        // An error here means the task has already ended; its result says why.
        let _ = self.close.send(());
        self.done
            .await
            .map_err(|_| "the audit writer's thread ended without an answer".to_owned())?
    }
}

/// How often an open batch takes what has arrived.
const TICK: Duration = Duration::from_millis(10);

async fn batch_loop(
    mut rx: mpsc::Receiver<RequestRecord>,
    mut close: oneshot::Receiver<()>,
    store: Arc<dyn RecordStore>,
    cfg: AuditConfig,
    spill: Spill,
) -> Result<(), String> {
    let batch = cfg.batch.max(1);
    let lost_before = spill.counters.lost.load(Ordering::Relaxed);
    let mut replays = Replays::new(cfg.replay_every);
    let mut buf = Vec::with_capacity(batch);
    let mut close_seen = false;
    let mut drained = false;
    let mut deadline: Option<Instant> = None;
    loop {
        let due = deadline.is_some_and(|d| Instant::now() >= d);
        if !buf.is_empty() && (buf.len() >= batch || due || drained) {
            if write_batch(&*store, &mut buf, batch, &cfg, &spill).await && !close_seen {
                replays.after_a_write(&store, &spill);
            }
            deadline = None;
            continue;
        }
        if drained {
            break;
        }
        let room = batch - buf.len();
        // Idle, the first record wakes the task. With a batch open, what
        // arrives is collected every TICK instead: a wake per record would be
        // a thread switch per record.
        let open = deadline.is_some();
        let tick = deadline.map(|d| d.min(Instant::now() + TICK));
        tokio::select! {
            biased;
            r = &mut close, if !close_seen => {
                close_seen = true;
                // Err: the AuditTask was dropped; run until the writer is dropped.
                if r.is_ok() {
                    rx.close();
                }
            }
            n = rx.recv_many(&mut buf, room), if !open => {
                if n == 0 {
                    drained = true;
                } else {
                    deadline = Some(Instant::now() + cfg.flush_every);
                }
            }
            () = tokio::time::sleep_until(tick.unwrap_or_else(Instant::now)), if open => {
                while buf.len() < batch {
                    match rx.try_recv() {
                        Ok(row) => buf.push(row),
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            drained = true;
                            break;
                        }
                    }
                }
            }
        }
    }
    // A replay under way finishes (the rows it inserted and its file agree);
    // cut short, its file would be replayed again at the next start.
    replays.finish().await;
    let (tx, synced) = oneshot::channel();
    if spill.tx.send(SpillMsg::Sync(tx)).is_err() {
        return Err("audit spill thread is gone".into());
    }
    let synced = synced.await.map_err(|_| "audit spill thread is gone".to_string())?;
    let lost = spill.counters.lost.load(Ordering::Relaxed) - lost_before;
    match synced {
        Err(e) => Err(format!("audit spill file: {e}")),
        Ok(()) if lost > 0 => Err(format!("{lost} request records were lost (see earlier errors)")),
        Ok(()) => Ok(()),
    }
}

/// Spilled rows replayed while the writer runs: one replay at a time, at most
/// every `every`, started after a batch went in (the store takes rows again)
/// when rows were spilled since the last, or a replay left rows behind.
struct Replays {
    every: Option<Duration>,
    last: Option<Instant>,
    /// The spilled count the last replay started from; `None` before the
    /// first (rows a failed replay at start left are owed too).
    seen: Option<u64>,
    running: Option<tokio::task::JoinHandle<bool>>,
    /// The last replay left rows in the `.replay` file.
    owed: bool,
}

impl Replays {
    fn new(every: Option<Duration>) -> Self {
        Self { every, last: None, seen: None, running: None, owed: false }
    }

    async fn finish(&mut self) {
        if let Some(task) = self.running.take() {
            let _ = task.await;
        }
    }

    fn after_a_write(&mut self, store: &Arc<dyn RecordStore>, spill: &Spill) {
        let Some(every) = self.every else { return };
        if let Some(done) = self.running.take_if(|t| t.is_finished()) {
            // Finished, so its answer is there: did it replay every row?
            self.owed = !matches!(done.now_or_never(), Some(Ok(true)));
        } else if self.running.is_some() {
            return;
        }
        let spilled = spill.counters.spilled.load(Ordering::Relaxed);
        let new_rows = self.seen.is_none_or(|seen| spilled != seen);
        if !(new_rows || self.owed) || self.last.is_some_and(|t| t.elapsed() < every) {
            return;
        }
        self.seen = Some(spilled);
        self.last = Some(Instant::now());
        let (store, tx) = (store.clone(), spill.tx.clone());
        self.running = Some(tokio::spawn(async move {
            let (reply, answer) = oneshot::channel();
            if tx.send(SpillMsg::HandOver(reply)).is_err() {
                return true;
            }
            let Ok(Some((path, all))) = answer.await else { return true };
            match AuditWriter::replay_spill(&*store, &path).await {
                Ok(_) => {
                    // Emptied: gone, so the next hand-over moves the spill file.
                    let _ = blocking(move || std::fs::remove_file(&path)).await;
                    all
                }
                Err(e) => {
                    tracing::warn!(target: "switchyard::audit", error = %e, "replaying spilled records while running; the rest is replayed later");
                    false
                }
            }
        }));
    }
}

/// Inserts `buf` (retrying), or spills it; leaves `buf` empty. Whether the
/// store took it.
async fn write_batch(
    store: &dyn RecordStore,
    buf: &mut Vec<RequestRecord>,
    batch: usize,
    cfg: &AuditConfig,
    spill: &Spill,
) -> bool {
    let rows = buf.len() as u64;
    match insert_with_retry(store, buf, cfg.retries, cfg.retry_backoff).await {
        Ok(()) => {
            spill.counters.written.fetch_add(rows, Ordering::Relaxed);
            metrics::counter!("gateway_audit_written_total").increment(rows);
            buf.clear();
            true
        }
        Err(e) => {
            tracing::error!(
                target: "switchyard::audit",
                rows,
                error = %e,
                "audit insert failed; spilling the batch to disk"
            );
            let failed = std::mem::replace(buf, Vec::with_capacity(batch));
            spill.rows(SpillMsg::Batch(failed), rows, "insert_failed");
            false
        }
    }
}

async fn insert_with_retry(
    store: &dyn RecordStore,
    rows: &[RequestRecord],
    retries: u32,
    backoff: Duration,
) -> Result<(), String> {
    let mut wait = backoff;
    let mut attempt = 0;
    loop {
        match store.insert_batch(rows).await {
            Ok(()) => return Ok(()),
            Err(e) => {
                metrics::counter!("gateway_audit_insert_failures_total").increment(1);
                if attempt >= retries {
                    return Err(e);
                }
                tracing::warn!(
                    target: "switchyard::audit",
                    rows = rows.len(),
                    attempt,
                    error = %e,
                    "audit insert failed; retrying"
                );
                attempt += 1;
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2);
            }
        }
    }
}

/// The spill thread's state: rows are serialized into `pending` and appended
/// when the channel is momentarily empty.
struct SpillFile {
    path: PathBuf,
    file: Option<File>,
    pending: Vec<u8>,
    pending_rows: u64,
    counters: Arc<Counters>,
}

impl SpillFile {
    fn new(path: PathBuf, counters: Arc<Counters>) -> Self {
        Self { path, file: None, pending: Vec::new(), pending_rows: 0, counters }
    }

    fn run(mut self, rx: std::sync::mpsc::Receiver<SpillMsg>) {
        while let Ok(msg) = rx.recv() {
            self.handle(msg);
            while let Ok(msg) = rx.try_recv() {
                self.handle(msg);
                if self.pending.len() >= 1 << 20 {
                    self.write();
                }
            }
            self.write();
        }
        self.write();
    }

    fn handle(&mut self, msg: SpillMsg) {
        match msg {
            SpillMsg::Row(r) => self.push(&r),
            SpillMsg::Batch(rows) => rows.iter().for_each(|r| self.push(r)),
            SpillMsg::Sync(reply) => {
                self.write();
                let res = match &self.file {
                    Some(f) => f.sync_data().map_err(|e| e.to_string()),
                    None => Ok(()),
                };
                // The waiter may have given up; nothing to do then.
                let _ = reply.send(res);
            }
            SpillMsg::HandOver(reply) => {
                self.write();
                let _ = reply.send(self.hand_over());
            }
        }
    }

    /// The `.replay` file to replay: the one a replay left, whole (and
    /// `false`: this file's rows wait for the next replay), else this file's
    /// rows moved there (closed and renamed; the next row opens a new file).
    /// `None` when there is nothing to replay.
    fn hand_over(&mut self) -> Option<(PathBuf, bool)> {
        let replay = AuditWriter::replay_path(&self.path);
        match std::fs::metadata(&replay) {
            // Rows a replay left: those first, and this file stays.
            Ok(m) if m.len() > 0 => return Some((replay, false)),
            Ok(_) => {
                let _ = std::fs::remove_file(&replay);
            }
            Err(_) => {}
        }
        if let Some(f) = self.file.take() {
            // On disk before they move: a crash then finds them in either file.
            let _ = f.sync_data();
        }
        match std::fs::metadata(&self.path) {
            Ok(m) if m.len() > 0 => match std::fs::rename(&self.path, &replay) {
                Ok(()) => Some((replay, true)),
                Err(e) => {
                    tracing::warn!(target: "switchyard::audit", file = %self.path.display(), error = %e, "cannot move the spill file aside to replay it");
                    None
                }
            },
            _ => None,
        }
    }

    fn push(&mut self, r: &RequestRecord) {
        match serde_json::to_writer(&mut self.pending, r) {
            Ok(()) => {
                self.pending.push(b'\n');
                self.pending_rows += 1;
            }
            Err(e) => self.counters.lose(1, &format!("cannot serialize record {}: {e}", r.id)),
        }
    }

    fn write(&mut self) {
        if self.pending_rows == 0 {
            return;
        }
        let res = match self.file.as_mut() {
            Some(f) => f.write_all(&self.pending),
            None => open_spill(&self.path).and_then(|mut f| {
                f.write_all(&self.pending)?;
                self.file = Some(f);
                Ok(())
            }),
        };
        match res {
            Ok(()) => {
                self.counters.spilled.fetch_add(self.pending_rows, Ordering::Relaxed);
            }
            Err(e) => {
                // Reopen next time (a torn line is fenced off by open_spill).
                self.file = None;
                self.counters.lose(
                    self.pending_rows,
                    &format!("cannot write spill file {}: {e}", self.path.display()),
                );
            }
        }
        self.pending.clear();
        self.pending_rows = 0;
    }
}

/// Opens the spill file for appending, creating it (and its directory). If it
/// ends in a torn line, a newline is written first so the next row stays whole.
fn open_spill(path: &Path) -> std::io::Result<File> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::files::create_dir_all(dir)?;
    }
    let mut f = crate::files::options().read(true).append(true).create(true).open(path)?;
    if f.metadata()?.len() > 0 {
        let mut last = [0u8; 1];
        f.seek(SeekFrom::End(-1))?;
        f.read_exact(&mut last)?;
        if last[0] != b'\n' {
            f.write_all(b"\n")?;
        }
    }
    Ok(f)
}

struct Chunk {
    reader: BufReader<File>,
    rows: Vec<RequestRecord>,
    /// Bytes consumed from the file.
    bytes: u64,
    corrupt: u64,
    eof: bool,
}

/// Reads up to `max` rows; unparsable lines go to `corrupt_path`.
fn read_chunk(
    mut reader: BufReader<File>,
    max: usize,
    corrupt_path: &Path,
) -> std::io::Result<Chunk> {
    let mut rows = Vec::new();
    let mut bad: Vec<u8> = Vec::new();
    let mut bytes = 0u64;
    let mut corrupt = 0u64;
    let mut eof = false;
    let mut line = Vec::new();
    while rows.len() < max {
        line.clear();
        let n = reader.read_until(b'\n', &mut line)?;
        if n == 0 {
            eof = true;
            break;
        }
        bytes += n as u64;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match serde_json::from_slice::<RequestRecord>(text) {
            Ok(r) => rows.push(r),
            Err(_) => {
                corrupt += 1;
                bad.extend_from_slice(text);
                bad.push(b'\n');
            }
        }
    }
    if !bad.is_empty() {
        let mut f = crate::files::options().append(true).create(true).open(corrupt_path)?;
        f.write_all(&bad)?;
    }
    Ok(Chunk { reader, rows, bytes, corrupt, eof })
}

/// Drops the first `from` bytes of the file (they were inserted).
fn keep_tail(path: &Path, from: u64) -> std::io::Result<()> {
    if from == 0 {
        return Ok(());
    }
    let tmp = with_suffix(path, ".tmp");
    {
        let mut src = File::open(path)?;
        src.seek(SeekFrom::Start(from))?;
        let mut dst = crate::files::create_replacement(&tmp)?;
        std::io::copy(&mut src, &mut dst)?;
        dst.set_permissions(src.metadata()?.permissions())?;
        dst.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> std::io::Result<T> {
    tokio::task::spawn_blocking(f).await.map_err(std::io::Error::other)?
}

#[cfg(test)]
#[path = "audit_tests.rs"]
mod tests;
