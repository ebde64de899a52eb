use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use switchyard_core::record::AttemptRecord;

use super::*;

/// Stores everything (optionally slowly, or failing the first `fail_first` calls).
#[derive(Default)]
struct MemStore {
    rows: Mutex<Vec<RequestRecord>>,
    calls: AtomicUsize,
    fail_first: usize,
    always_fail: bool,
    /// Fails while set (an outage a test starts and ends).
    down: std::sync::atomic::AtomicBool,
    delay: Duration,
    gate: Option<tokio::sync::Semaphore>,
}

impl RecordStore for MemStore {
    fn insert_batch<'a>(
        &'a self,
        batch: &'a [RequestRecord],
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if let Some(g) = &self.gate {
                let _permit = g.acquire().await.map_err(|e| e.to_string())?;
            }
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            if self.always_fail || call < self.fail_first || self.down.load(Ordering::SeqCst) {
                return Err(format!("database is down (call {call})"));
            }
            self.rows.lock().unwrap().extend_from_slice(batch);
            Ok(())
        })
    }
}

impl MemStore {
    fn ids(&self) -> Vec<String> {
        self.rows.lock().unwrap().iter().map(|r| r.id.clone()).collect()
    }
}

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "switchyard-audit-{}-{name}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn spill(&self) -> PathBuf {
        self.0.join("spill").join("audit.jsonl")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn rec(i: usize) -> RequestRecord {
    let mut r = RequestRecord::new(format!("req-{i}"), 1_700_000_000_000 + i as u64);
    r.user = Some("u1".into());
    r.client_format = "openai_chat".into();
    r.requested_model = "gpt-x".into();
    r.status = 200;
    r.attempts =
        vec![AttemptRecord::new("p/m", "ok", 12, "primary").with_credential("fp-00112233")];
    r.cost_usd = Some(0.000_123);
    r.total_ms = 40;
    r
}

fn spilled_ids(path: &Path) -> Vec<String> {
    match std::fs::read_to_string(path) {
        Ok(s) => s
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<RequestRecord>(l).unwrap().id)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Every id in 0..n exactly once across the store and the spill file.
fn assert_exactly_once(n: usize, stored: Vec<String>, spilled: Vec<String>) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for id in stored.iter().chain(&spilled) {
        *seen.entry(id.clone()).or_default() += 1;
    }
    let dups: Vec<_> = seen.iter().filter(|(_, c)| **c > 1).collect();
    assert!(dups.is_empty(), "duplicates: {:?}", &dups[..dups.len().min(5)]);
    assert_eq!(seen.len(), n, "stored {} + spilled {} != {n}", stored.len(), spilled.len());
    for i in 0..n {
        assert!(seen.contains_key(&format!("req-{i}")), "req-{i} missing");
    }
}

fn cfg(dir: &TempDir, queue: usize, batch: usize) -> AuditConfig {
    AuditConfig {
        queue,
        batch,
        flush_every: Duration::from_millis(20),
        retry_backoff: Duration::from_millis(5),
        // What is spilled stays there, for the tests to read: the replay while
        // running has its own test.
        replay_every: None,
        ..AuditConfig::new(dir.spill())
    }
}

/// Waits (bounded) until `done`.
async fn until(what: &str, done: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{what}: not within 10 s");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A database outage while running: its rows spill; once the store takes a
/// batch again, the spill file is handed over and replayed, with no restart.
/// Every row reaches the store once, and no file is left. A second outage
/// goes the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spilled_rows_are_replayed_once_the_store_takes_rows_again() {
    let dir = TempDir::new("live-replay");
    let store = Arc::new(MemStore::default());
    let cfg = AuditConfig { replay_every: Some(Duration::ZERO), ..cfg(&dir, 1_000, 10) };
    let (w, task) = AuditWriter::start(store.clone(), cfg).unwrap();
    let mut n = 0;
    for outage in 1..=2u64 {
        store.down.store(true, Ordering::SeqCst);
        for _ in 0..30 {
            w.record(rec(n));
            n += 1;
        }
        until("the outage's rows spilled", || w.stats().spilled == 30 * outage).await;
        assert!(!spilled_ids(&dir.spill()).is_empty());
        store.down.store(false, Ordering::SeqCst);
        w.record(rec(n));
        n += 1;
        until("the spilled rows replayed", || store.ids().len() == n).await;
    }
    task.shutdown().await.unwrap();
    assert_exactly_once(n, store.ids(), spilled_ids(&dir.spill()));
    assert!(spilled_ids(&dir.spill()).is_empty());
    assert!(!AuditWriter::replay_path(&dir.spill()).exists(), "the replayed file is removed");
}

#[tokio::test]
async fn writes_in_batches_and_shutdown_drains() {
    let dir = TempDir::new("drain");
    let store = Arc::new(MemStore::default());
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 10_000, 100)).unwrap();
    for i in 0..1_050 {
        w.record(rec(i));
    }
    task.shutdown().await.unwrap();
    assert_eq!(store.ids().len(), 1_050);
    assert_eq!(store.rows.lock().unwrap()[7], rec(7));
    // 10 full batches and the rest (the task may also have caught a partial
    // batch early, so allow a little slack).
    let calls = store.calls.load(Ordering::SeqCst);
    assert!((11..=13).contains(&calls), "{calls} insert calls");
    assert_eq!(w.stats(), AuditStats { written: 1_050, spilled: 0, lost: 0 });
    assert!(!dir.spill().exists());
    // After shutdown, records go to the spill file.
    w.record(rec(1_050));
    drop(w);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_exactly_once(1_051, store.ids(), spilled_ids(&dir.spill()));
}

#[tokio::test]
async fn partial_batch_is_flushed_after_flush_every() {
    let dir = TempDir::new("flush");
    let store = Arc::new(MemStore::default());
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 100, 50)).unwrap();
    w.record(rec(0));
    w.record(rec(1));
    let t0 = std::time::Instant::now();
    while store.ids().len() < 2 {
        assert!(t0.elapsed() < Duration::from_secs(5), "not flushed");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(store.calls.load(Ordering::SeqCst), 1);
    task.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_store_overflows_to_spill_exactly_once() {
    let dir = TempDir::new("slow");
    let store = Arc::new(MemStore { delay: Duration::from_millis(20), ..MemStore::default() });
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 100, 25)).unwrap();
    let w = Arc::new(w);
    let mut producers = Vec::new();
    for p in 0..4 {
        let w = w.clone();
        producers.push(tokio::spawn(async move {
            for i in (p * 1_000)..((p + 1) * 1_000) {
                w.record(rec(i));
                if i % 100 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        }));
    }
    for p in producers {
        p.await.unwrap();
    }
    task.shutdown().await.unwrap();
    let stats = w.stats();
    assert!(stats.spilled > 0, "expected overflow: {stats:?}");
    assert!(stats.written > 0, "{stats:?}");
    assert_eq!(stats.lost, 0);
    let (stored, spilled) = (store.ids(), spilled_ids(&dir.spill()));
    assert_eq!(stats.written as usize, stored.len());
    assert_eq!(stats.spilled as usize, spilled.len());
    assert_exactly_once(4_000, stored, spilled);
}

#[tokio::test]
async fn failing_store_spills_every_batch() {
    let dir = TempDir::new("fail");
    let store = Arc::new(MemStore { always_fail: true, ..MemStore::default() });
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 1_000, 100)).unwrap();
    for i in 0..350 {
        w.record(rec(i));
    }
    task.shutdown().await.unwrap();
    // 4 batches, 3 attempts each.
    assert_eq!(store.calls.load(Ordering::SeqCst), 12);
    assert_eq!(w.stats(), AuditStats { written: 0, spilled: 350, lost: 0 });
    assert_exactly_once(350, store.ids(), spilled_ids(&dir.spill()));

    // Next start: the database is back; replay inserts the rows and empties the file.
    let healthy = MemStore::default();
    assert_eq!(AuditWriter::replay_spill(&healthy, &dir.spill()).await, Ok(350));
    assert_eq!(std::fs::metadata(dir.spill()).unwrap().len(), 0);
    assert_exactly_once(350, healthy.ids(), Vec::new());
    assert_eq!(healthy.rows.lock().unwrap()[0], rec(0));
    // Replaying an empty or missing file does nothing.
    assert_eq!(AuditWriter::replay_spill(&healthy, &dir.spill()).await, Ok(0));
    assert_eq!(AuditWriter::replay_spill(&healthy, &dir.0.join("none.jsonl")).await, Ok(0));
    assert_eq!(healthy.ids().len(), 350);
}

#[tokio::test]
async fn transient_failure_is_retried() {
    let dir = TempDir::new("retry");
    let store = Arc::new(MemStore { fail_first: 2, ..MemStore::default() });
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 1_000, 100)).unwrap();
    for i in 0..100 {
        w.record(rec(i));
    }
    task.shutdown().await.unwrap();
    assert_eq!(w.stats(), AuditStats { written: 100, spilled: 0, lost: 0 });
    assert_eq!(store.calls.load(Ordering::SeqCst), 3);
    assert!(!dir.spill().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn record_never_waits_on_a_blocked_store() {
    let dir = TempDir::new("blocked");
    let store =
        Arc::new(MemStore { gate: Some(tokio::sync::Semaphore::new(0)), ..MemStore::default() });
    let (w, task) = AuditWriter::start(store.clone(), cfg(&dir, 50, 10)).unwrap();
    let w = Arc::new(w);
    let w2 = w.clone();
    // The store is blocked for good: every record() must still return at once.
    let pushed = tokio::time::timeout(
        Duration::from_secs(10),
        tokio::task::spawn_blocking(move || {
            let t0 = std::time::Instant::now();
            for i in 0..5_000 {
                w2.record(rec(i));
            }
            t0.elapsed()
        }),
    )
    .await
    .expect("record() blocked")
    .unwrap();
    assert!(pushed < Duration::from_secs(2), "5,000 record() calls took {pushed:?}");
    // The store is stuck in its first batch (if the task got to it yet).
    assert!(store.calls.load(Ordering::SeqCst) <= 1);
    store.gate.as_ref().unwrap().add_permits(1_000);
    task.shutdown().await.unwrap();
    let stats = w.stats();
    assert_eq!(stats.lost, 0);
    assert!(stats.spilled >= 5_000 - 60, "{stats:?}");
    assert_exactly_once(5_000, store.ids(), spilled_ids(&dir.spill()));
}

#[tokio::test]
async fn replay_skips_corrupt_lines_and_keeps_them() {
    let dir = TempDir::new("corrupt");
    let path = dir.0.join("audit.jsonl");
    let mut text = String::new();
    for i in 0..3 {
        text.push_str(&serde_json::to_string(&rec(i)).unwrap());
        text.push('\n');
    }
    text.push_str("{\"id\": \"half a li\n");
    text.push_str("\n   \n");
    text.push_str("not json at all\n");
    text.push_str(&serde_json::to_string(&rec(3)).unwrap());
    text.push('\n');
    let torn = serde_json::to_string(&rec(4)).unwrap();
    text.push_str(&torn[..torn.len() / 2]);
    std::fs::write(&path, text).unwrap();
    let store = MemStore::default();
    assert_eq!(AuditWriter::replay_spill(&store, &path).await, Ok(4));
    assert_eq!(store.ids(), ["req-0", "req-1", "req-2", "req-3"]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    let kept = std::fs::read_to_string(with_suffix(&path, ".corrupt")).unwrap();
    assert_eq!(kept.lines().count(), 3, "{kept}");
    assert!(kept.contains("not json at all"));
}

#[tokio::test]
async fn failed_replay_keeps_the_rows_not_inserted() {
    let dir = TempDir::new("replayfail");
    let path = dir.0.join("audit.jsonl");
    let mut text = String::new();
    for i in 0..1_200 {
        text.push_str(&serde_json::to_string(&rec(i)).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    // First chunk (500 rows) goes in, then the database fails.
    let flaky = FailAfter { inner: MemStore::default(), ok_calls: 1 };
    let err = AuditWriter::replay_spill(&flaky, &path).await.unwrap_err();
    assert!(err.contains("after 500 rows"), "{err}");
    assert_eq!(flaky.inner.ids().len(), 500);
    assert_eq!(spilled_ids(&path).len(), 700);
    assert_eq!(spilled_ids(&path)[0], "req-500");
    // Retried later, the rest goes in; nothing twice.
    assert_eq!(AuditWriter::replay_spill(&flaky.inner, &path).await, Ok(700));
    assert_exactly_once(1_200, flaky.inner.ids(), spilled_ids(&path));
}

struct FailAfter {
    inner: MemStore,
    ok_calls: usize,
}

impl RecordStore for FailAfter {
    fn insert_batch<'a>(
        &'a self,
        batch: &'a [RequestRecord],
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            if self.inner.calls.load(Ordering::SeqCst) >= self.ok_calls {
                return Err("down".into());
            }
            self.inner.insert_batch(batch).await
        })
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The spill file holds request records: only the gateway's user may read
/// it, the folder created for it likewise, and a replay that keeps part of
/// the file (renaming a copy over it) keeps the file's own mode, whatever
/// the operator made it.
#[cfg(unix)]
#[tokio::test]
async fn spill_files_are_the_owners_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = TempDir::new("modes");
    let store = Arc::new(MemStore { always_fail: true, ..MemStore::default() });
    let cfg = AuditConfig { retries: 0, ..cfg(&dir, 10, 10) };
    let (w, task) = AuditWriter::start(store, cfg).unwrap();
    for i in 0..600 {
        w.record(rec(i));
    }
    task.shutdown().await.unwrap();
    let spill = dir.spill();
    assert_eq!(mode(&spill), 0o600);
    assert_eq!(mode(spill.parent().unwrap()), 0o700);

    // A corrupt line goes to `.corrupt`, created the owner's only too.
    let rows = std::fs::read_to_string(&spill).unwrap();
    std::fs::write(&spill, format!("not json\n{rows}")).unwrap();
    std::fs::set_permissions(&spill, std::fs::Permissions::from_mode(0o640)).unwrap();
    let flaky = FailAfter { inner: MemStore::default(), ok_calls: 1 };
    assert!(AuditWriter::replay_spill(&flaky, &spill).await.is_err());
    assert_eq!(spilled_ids(&spill).len(), 100, "the rows after the first chunk stay");
    assert_eq!(mode(&spill), 0o640, "the kept tail has the file's mode");
    assert_eq!(mode(&with_suffix(&spill, ".corrupt")), 0o600);
}

#[tokio::test]
async fn spill_survives_a_torn_last_line() {
    let dir = TempDir::new("torn");
    std::fs::create_dir_all(dir.spill().parent().unwrap()).unwrap();
    std::fs::write(dir.spill(), "{\"id\":\"torn").unwrap();
    let store = Arc::new(MemStore { always_fail: true, ..MemStore::default() });
    let cfg = AuditConfig { retries: 0, ..cfg(&dir, 10, 10) };
    let (w, task) = AuditWriter::start(store, cfg).unwrap();
    w.record(rec(0));
    task.shutdown().await.unwrap();
    let healthy = MemStore::default();
    assert_eq!(AuditWriter::replay_spill(&healthy, &dir.spill()).await, Ok(1));
    assert_eq!(healthy.ids(), ["req-0"]);
}

#[tokio::test]
async fn unwritable_spill_is_counted_as_lost_and_reported() {
    let dir = TempDir::new("unwritable");
    // The spill path is a directory: it cannot be opened for appending.
    std::fs::create_dir_all(dir.spill()).unwrap();
    let store = Arc::new(MemStore { always_fail: true, ..MemStore::default() });
    let cfg = AuditConfig { retries: 0, ..cfg(&dir, 10, 10) };
    let (w, task) = AuditWriter::start(store, cfg).unwrap();
    for i in 0..5 {
        w.record(rec(i));
    }
    let err = task.shutdown().await.unwrap_err();
    assert!(err.contains("5 request records were lost"), "{err}");
    assert_eq!(w.stats(), AuditStats { written: 0, spilled: 0, lost: 5 });
}

/// `cargo test -p switchyard-store --release -- --ignored audit_throughput --nocapture`
///
/// Four producer tasks push 50,000 records through the writer, either as fast
/// as they can (a burst: more than the queue holds, so a slow store spills) or
/// paced at 10,000 records/s (twice the target).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "throughput measurement"]
async fn audit_throughput() {
    const N: usize = 50_000;
    const PRODUCERS: usize = 4;
    for (name, delay, rate) in [
        ("burst, in-memory fake", Duration::ZERO, None),
        ("paced 10,000/s, fake taking 5 ms per batch", Duration::from_millis(5), Some(10_000)),
        ("burst, fake taking 5 ms per batch", Duration::from_millis(5), None),
    ] {
        let dir = TempDir::new("throughput");
        let store = Arc::new(MemStore { delay, ..MemStore::default() });
        let (w, task) = AuditWriter::start(store.clone(), AuditConfig::new(dir.spill())).unwrap();
        let w = Arc::new(w);
        let t0 = std::time::Instant::now();
        let mut producers = Vec::new();
        for p in 0..PRODUCERS {
            let w = w.clone();
            producers.push(tokio::spawn(async move {
                let ids = (p * N / PRODUCERS)..((p + 1) * N / PRODUCERS);
                match rate {
                    None => {
                        for i in ids {
                            w.record(rec(i));
                            if i % 256 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                    }
                    Some(rate) => {
                        // Every 10 ms, this producer's share of the rate.
                        let per_tick = rate / PRODUCERS / 100;
                        let mut tick = tokio::time::interval(Duration::from_millis(10));
                        let ids: Vec<usize> = ids.collect();
                        for chunk in ids.chunks(per_tick) {
                            tick.tick().await;
                            for &i in chunk {
                                w.record(rec(i));
                            }
                        }
                    }
                }
            }));
        }
        for p in producers {
            p.await.unwrap();
        }
        let pushed = t0.elapsed();
        task.shutdown().await.unwrap();
        let total = t0.elapsed();
        let s = w.stats();
        println!(
            "{name}: {N} records offered in {pushed:.2?} ({:.0}/s), all stored or spilled \
             after {total:.2?} ({:.0}/s); {} inserted in {} batches, {} spilled, {} lost",
            N as f64 / pushed.as_secs_f64(),
            N as f64 / total.as_secs_f64(),
            s.written,
            store.calls.load(Ordering::SeqCst),
            s.spilled,
            s.lost,
        );
        assert_exactly_once(N, store.ids(), spilled_ids(&dir.spill()));
        if rate.is_some() {
            assert_eq!(s.spilled, 0, "the writer did not keep up with {name}");
        }
    }
}

/// A `.replay` file a crash left (rows 100..110) and an outage's spill: the
/// first replay takes the left file whole, the next one the spill file, each
/// after a batch went in. Every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_left_by_a_crash_goes_first_then_the_spill_file() {
    let dir = TempDir::new("left-replay");
    std::fs::create_dir_all(dir.spill().parent().unwrap()).unwrap();
    let left: String =
        (100..110).map(|i| format!("{}\n", serde_json::to_string(&rec(i)).unwrap())).collect();
    std::fs::write(AuditWriter::replay_path(&dir.spill()), left).unwrap();
    let store = Arc::new(MemStore::default());
    let cfg = AuditConfig { replay_every: Some(Duration::ZERO), ..cfg(&dir, 1_000, 10) };
    let (w, task) = AuditWriter::start(store.clone(), cfg).unwrap();
    store.down.store(true, Ordering::SeqCst);
    for i in 0..5 {
        w.record(rec(i));
    }
    until("the outage's rows spilled", || w.stats().spilled == 5).await;
    store.down.store(false, Ordering::SeqCst);
    w.record(rec(5));
    until("the left file replayed", || store.ids().len() == 1 + 10).await;
    w.record(rec(6));
    until("the spill file replayed", || store.ids().len() == 2 + 10 + 5).await;
    task.shutdown().await.unwrap();
    let mut want: Vec<String> = (0..7).chain(100..110).map(|i| format!("req-{i}")).collect();
    let mut got = store.ids();
    want.sort();
    got.sort();
    assert_eq!(got, want);
    assert!(spilled_ids(&dir.spill()).is_empty());
    assert!(!AuditWriter::replay_path(&dir.spill()).exists());
}
