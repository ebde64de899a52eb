//! Request-record throughput into a real database through the audit writer. Not a
//! timed assertion: run with
//! `cargo test --release -p switchyard-store --test audit_throughput -- --ignored --nocapture`
//! (PostgreSQL too when SWITCHYARD_TEST_POSTGRES_URL is set).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchyard_core::RecordSink;
use switchyard_core::record::{AttemptRecord, RequestRecord};
use switchyard_protocol::Usage;
use switchyard_store::Store;
use switchyard_store::audit::{AuditConfig, AuditWriter, RecordStore};

fn record(i: usize) -> RequestRecord {
    let mut r = RequestRecord::new(format!("req_bench_{i:08}"), 1_790_000_000_000 + i as u64);
    r.user = Some(format!("usr_{}", i % 50));
    r.key_prefix = Some("sy-abcdefgh".into());
    r.project = Some(format!("prj_{}", i % 10));
    r.client_format = "openai-chat".into();
    r.requested_model = "gpt-5".into();
    r.resolved_model = Some("gpt-5".into());
    r.route_id = Some("gpt-route-1a2b3c".into());
    r.provider = Some("openai".into());
    r.served_provider = Some("openai".into());
    r.upstream_model = Some("gpt-5".into());
    r.descriptor = "route:gpt-route-1a2b3c".into();
    r.status = 200;
    r.attempts = vec![
        AttemptRecord::new("openai/gpt-5", "ok", 420, "primary").with_credential("key-1a2b3c4d"),
    ];
    r.ttft_ms = Some(180);
    r.total_ms = 420;
    r.usage = Usage {
        input_tokens: Some(1200),
        output_tokens: Some(300),
        cache_read_tokens: Some(0),
        ..Usage::default()
    };
    r.cost_usd = Some(0.0045);
    r.stream = i.is_multiple_of(2);
    r
}

async fn measure(name: &str, store: Store, rate: Option<usize>) {
    const N: usize = 50_000;
    let dir = std::env::temp_dir().join(format!("sy-audit-bench-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let spill = dir.join("spill.jsonl");
    let mut config = AuditConfig::new(&spill);
    if rate.is_none() {
        // The burst measures the writer's cost per row: every row is queued
        // (none spilled), whatever the store's pace.
        config.queue = N;
    }
    let (writer, task) =
        AuditWriter::start(Arc::new(store.clone()) as Arc<dyn RecordStore>, config).unwrap();
    let started = Instant::now();
    let cpu_before = cpu_seconds();
    match rate {
        None => {
            for i in 0..N {
                writer.record(record(i));
                if i % 256 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
        Some(rate) => {
            let per_tick = rate / 100;
            let mut tick = tokio::time::interval(Duration::from_millis(10));
            for chunk in (0..N).collect::<Vec<_>>().chunks(per_tick) {
                tick.tick().await;
                for &i in chunk {
                    writer.record(record(i));
                }
            }
        }
    }
    let offered = started.elapsed();
    task.shutdown().await.unwrap();
    let total = started.elapsed();
    let cpu = cpu_seconds() - cpu_before;
    let stats = writer.stats();
    println!(
        "{name}: offered {N} in {:.2}s ({:.0}/s); all written after {:.2}s => {:.0} rows/s, \
         {:.1} µs of CPU per row (the process's, records built included); \
         written {} spilled {} lost {}",
        offered.as_secs_f64(),
        N as f64 / offered.as_secs_f64(),
        total.as_secs_f64(),
        N as f64 / total.as_secs_f64(),
        cpu * 1e6 / N as f64,
        stats.written,
        stats.spilled,
        stats.lost
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The process's CPU time so far (user and system, all threads), from
/// `/proc/self/stat`; 0 where there is none (not Linux).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // After the command name's closing parenthesis: fields 3 on; utime and
    // stime are the 14th and 15th, in clock ticks (100 per second on Linux).
    let Some((_, rest)) = stat.rsplit_once(')') else { return 0.0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "throughput measurement"]
async fn audit_throughput_sqlite_and_postgres() {
    for (label, rate) in [("paced 5,000/s", Some(5_000)), ("burst", None)] {
        let path = std::env::temp_dir().join(format!(
            "sy-audit-bench-{}-{}.db",
            std::process::id(),
            label.len()
        ));
        let store = Store::connect(&format!("sqlite://{}", path.display())).await.unwrap();
        store.migrate().await.unwrap();
        measure(&format!("sqlite {label}"), store, rate).await;
        let _ = std::fs::remove_file(&path);
        if let Ok(url) = std::env::var("SWITCHYARD_TEST_POSTGRES_URL") {
            let store = Store::connect(&url).await.unwrap();
            store.migrate().await.unwrap();
            store.delete_records_before(i64::MAX).await.unwrap();
            // Into the records' own day partition, as a day's traffic goes (not
            // DEFAULT, which the delete above leaves as the only one).
            store.ensure_partitions_for(1_790_000_000_000, 1_790_000_100_000).await.unwrap();
            measure(&format!("postgres {label}"), store.clone(), rate).await;
            store.delete_records_before(i64::MAX).await.unwrap();
        }
    }
}
