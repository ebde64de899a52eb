//! `switchyard-soak`: the endurance run (docs/benchmark.md, "Endurance").
//!
//! Two phases, each against a fresh release gateway with request records in
//! SQLite, its fakes in this process:
//!
//! 1. **Slow streams**: `--slow-concurrency` streams open at once (500 ms to
//!    the fake's headers, 16 words 50 ms apart), `--slow-total` in all, first
//!    against the fake directly, then through the gateway. Reports the time to
//!    first content of both, the gateway's resident memory per open stream, and
//!    the kernel's listen-queue overflows during each.
//! 2. **Faults**: `--concurrency` clients for `--minutes`, every other request
//!    a stream, on a two-deployment chain whose primary fails `--fault-rate` of
//!    its calls (see `faults.rs`). Then SIGTERM, and the records are checked
//!    against the request ids the clients saw. Pass: no failed request that had
//!    a healthy fallback, no lost or extra record, no stalled stream; the
//!    resident memory's slope after the first minute is reported.
//!
//! ```text
//! cargo build --release -p switchyard -p switchyard-bench
//! target/release/switchyard-soak [--minutes 10] [--json]
//! ```
//!
//! Not part of CI: it takes minutes and wants a quiet machine.

mod faults;
mod slow;

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use switchyard_bench::procs::{self, Server, TempDir};
use switchyard_testkit::{FakeUpstream, Vendor};

const API_KEY: &str = "sk-soak-0123456789abcdef";
/// The fault phase's memory slope leaves this much out at the start.
const WARM_UP: Duration = Duration::from_secs(60);

#[derive(Parser, Debug)]
#[command(
    name = "switchyard-soak",
    version,
    about = "The endurance run: slow streams by the thousand, then minutes of faults on a fallback chain"
)]
struct Cli {
    /// The gateway binary (default: target/release/switchyard, else next to this binary).
    #[arg(long)]
    gateway: Option<PathBuf>,
    /// Minutes of the fault phase.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Clients of the fault phase, each sending one request after another.
    #[arg(long, default_value_t = 256)]
    concurrency: usize,
    /// The share of the primary's calls that fail. The default makes about 30 %
    /// of all upstream calls fail: the fallback's calls never do, and a 429 or a
    /// 503 is retried on the primary first.
    #[arg(long, default_value_t = 0.36)]
    fault_rate: f64,
    /// Streams open at once in the slow-streams phase.
    #[arg(long, default_value_t = 1000)]
    slow_concurrency: usize,
    /// Slow streams in all, per target.
    #[arg(long, default_value_t = 6000)]
    slow_total: usize,
    /// Leave out the slow-streams phase.
    #[arg(long)]
    no_slow: bool,
    /// Leave out the fault phase.
    #[arg(long)]
    no_faults: bool,
    /// Print the results as JSON on stdout (the report then goes to stderr).
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // reqwest is built without a crypto provider and refuses to build a client
    // (even for plain http) until one is installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("switchyard-soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok((report, passed)) => {
            let text = markdown(&report);
            if cli.json {
                eprintln!("{text}");
                println!("{}", serde_json::to_string_pretty(&report).unwrap_or_default());
            } else {
                println!("{text}");
            }
            if passed { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => {
            eprintln!("switchyard-soak: {e}");
            ExitCode::FAILURE
        }
    }
}

fn progress(msg: impl AsRef<str>) {
    eprintln!("[soak] {}", msg.as_ref());
}

pub(crate) fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

async fn run(cli: &Cli) -> Result<(Value, bool), String> {
    let bin = procs::gateway_binary(cli.gateway.as_deref())?;
    let version = std::process::Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let mut report = json!({
        "gateway": version,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    });
    let mut passed = true;
    if !cli.no_slow {
        let (slow, ok) = slow_phase(cli, &bin).await?;
        report["slow_streams"] = slow;
        passed &= ok;
    }
    if !cli.no_faults {
        let (faults, ok) = fault_phase(cli, &bin).await?;
        report["faults"] = faults;
        passed &= ok;
    }
    report["passed"] = json!(passed);
    Ok((report, passed))
}

/// Starts the gateway on `yaml`, written into `dir`, on a free port.
fn start_gateway(bin: &Path, dir: &Path, name: &str, yaml: &str) -> Result<Server, String> {
    let config = dir.join(format!("{name}.yaml"));
    std::fs::write(&config, yaml).map_err(|e| format!("write {}: {e}", config.display()))?;
    let mut errors = Vec::new();
    for _ in 0..3 {
        let port = procs::free_port()?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let argv = vec![
            bin.display().to_string(),
            "serve".to_owned(),
            "--config".to_owned(),
            config.display().to_string(),
            "--listen".to_owned(),
            addr.to_string(),
        ];
        let log = dir.join(format!("{name}.stderr"));
        let env_remove = [
            "SWITCHYARD_LOG",
            "SWITCHYARD_LOG_FORMAT",
            "SWITCHYARD_CONFIG",
            "SWITCHYARD_API_KEY",
            "SWITCHYARD_LISTEN_ADDR",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
        ];
        match Server::spawn(
            "gateway",
            &argv,
            None,
            addr,
            log,
            &env_remove,
            &[("SWITCHYARD_LOG", "warn")],
        ) {
            Ok(s) => return Ok(s),
            Err(e) => errors.push(e),
        }
    }
    Err(errors.join("\n"))
}

/// Samples a process's resident memory until dropped.
struct Rss {
    samples: Arc<Mutex<Vec<(f64, u64)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Rss {
    fn watch(pid: u32, every: Duration) -> Rss {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (Arc::clone(&samples), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let start = Instant::now();
            while !st.load(Ordering::Relaxed) {
                if let Some(kib) = rss_kib(pid) {
                    s.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((start.elapsed().as_secs_f64(), kib));
                }
                std::thread::sleep(every);
            }
        });
        Rss { samples, stop, thread: Some(thread) }
    }

    fn take(mut self) -> Vec<(f64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn rss_kib(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Least-squares slope of `(seconds, KiB)` samples, in KiB per minute.
fn slope_per_minute(samples: &[(f64, u64)]) -> Option<f64> {
    let n = samples.len() as f64;
    if samples.len() < 2 {
        return None;
    }
    let mx = samples.iter().map(|s| s.0).sum::<f64>() / n;
    let my = samples.iter().map(|s| s.1 as f64).sum::<f64>() / n;
    let sxx: f64 = samples.iter().map(|s| (s.0 - mx).powi(2)).sum();
    let sxy: f64 = samples.iter().map(|s| (s.0 - mx) * (s.1 as f64 - my)).sum();
    (sxx > 0.0).then(|| sxy / sxx * 60.0)
}

/// The kernel's count of connections dropped because a listen queue was full
/// (`TcpExt: ListenOverflows` in /proc/net/netstat, this network namespace).
fn listen_overflows() -> u64 {
    let text = std::fs::read_to_string("/proc/net/netstat").unwrap_or_default();
    let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (Some(names), Some(values)) = (lines.next(), lines.next()) else { return 0 };
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == "ListenOverflows")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1e6
}

fn ttfc_json(s: &slow::Samples) -> Value {
    let mut t = s.ttfc.clone();
    t.sort_unstable();
    json!({
        "streams": t.len(),
        "failed": s.failed,
        "first_failure": s.first_failure,
        "ttfc_ms": {
            "p50": percentile(&t, 0.5), "p90": percentile(&t, 0.9),
            "p99": percentile(&t, 0.99), "max": percentile(&t, 1.0),
        },
        "elapsed_s": s.elapsed.as_secs_f64(),
    })
}

/// The slow-streams phase, once per upstream transport: plain HTTP/1.1 (a
/// connection per stream, the bench's usual fake) and TLS with HTTP/2 by ALPN
/// (one connection carries every stream, as with a real provider's API).
async fn slow_phase(cli: &Cli, bin: &Path) -> Result<(Value, bool), String> {
    let mut out = serde_json::Map::new();
    let mut ok = true;
    for (name, tls) in [("http1", false), ("tls_http2", true)] {
        let (v, passed) = slow_streams(cli, bin, tls).await?;
        out.insert(name.to_owned(), v);
        ok &= passed;
    }
    Ok((Value::Object(out), ok))
}

async fn slow_streams(cli: &Cli, bin: &Path, tls: bool) -> Result<(Value, bool), String> {
    let tmp = TempDir::new()?;
    let fake = if tls {
        FakeUpstream::start_tls(Vendor::OpenAi).await
    } else {
        FakeUpstream::start(Vendor::OpenAi).await
    }
    .map_err(|e| format!("fake: {e}"))?;
    slow::script(&fake);
    let transport = if tls { "TLS, HTTP/2" } else { "HTTP/1.1" };
    let n = cli.slow_concurrency.max(1);
    let total = cli.slow_total.max(n);
    progress(format!(
        "slow streams ({transport} upstream): {total} per target, {n} at a time, directly"
    ));
    let before = listen_overflows();
    let direct =
        slow::run(&format!("{}/v1/chat/completions", fake.base_url()), None, n, total).await?;
    let direct_overflows = listen_overflows() - before;

    let ca = tmp.0.join("ca.pem");
    std::fs::write(&ca, switchyard_testkit::tls::CA_PEM)
        .map_err(|e| format!("write ca.pem: {e}"))?;
    let yaml = format!(
        r#"# Generated by switchyard-soak: the slow fake behind one model.
gateway:
  api_keys: ["{API_KEY}"]
providers:
  slow:
    wire: openai-chat
    endpoint: "{}/v1"
    credentials: {{ none: true }}
    client: {{ ca_file: "{}" }}
models:
  - id: {}
    deployments: [{{ provider: slow }}]
storage:
  url: "sqlite://slow.db"
"#,
        fake.base_url(),
        ca.display(),
        slow::MODEL
    );
    let gateway = start_gateway(bin, &tmp.0, "slow", &yaml)?;
    let url = format!("http://{}/v1/chat/completions", gateway.addr);
    // Warm-up: the pools, the database, the allocator's first arenas.
    slow::run(&url, Some(API_KEY), 16, 32).await?;
    let idle = rss_kib(gateway.pid()).unwrap_or(0);
    progress(format!("slow streams through the gateway (idle RSS {idle} KiB)"));
    let rss = Rss::watch(gateway.pid(), Duration::from_millis(50));
    let before = listen_overflows();
    let through = slow::run(&url, Some(API_KEY), n, total).await?;
    let overflows = listen_overflows() - before;
    let samples = rss.take();
    let peak = samples.iter().map(|s| s.1).max().unwrap_or(idle);
    let (hwm, _) = gateway.memory_kib().unwrap_or((0, 0));
    let per_stream = (peak.saturating_sub(idle) as f64) / n as f64;
    let ok = direct.failed == 0 && through.failed == 0;
    drop(gateway);
    Ok((
        json!({
            "upstream": transport,
            "concurrency": n,
            "total": total,
            "direct": ttfc_json(&direct),
            "gateway": ttfc_json(&through),
            "listen_overflows": { "direct": direct_overflows, "gateway": overflows },
            "rss_kib": { "idle": idle, "peak": peak, "hwm": hwm },
            "kib_per_open_stream": (per_stream * 10.0).round() / 10.0,
            "passed": ok,
        }),
        ok,
    ))
}

async fn fault_phase(cli: &Cli, bin: &Path) -> Result<(Value, bool), String> {
    let tmp = TempDir::new()?;
    let primary = FakeUpstream::start(Vendor::OpenAi).await.map_err(|e| format!("fake: {e}"))?;
    let fallback = FakeUpstream::start(Vendor::OpenAi).await.map_err(|e| format!("fake: {e}"))?;
    let served = faults::script_primary(&primary, cli.fault_rate);
    faults::script_fallback(&fallback);
    let yaml = faults::gateway_yaml(&primary, &fallback, API_KEY);
    let gateway = start_gateway(bin, &tmp.0, "faults", &yaml)?;
    let duration = Duration::from_secs_f64((cli.minutes * 60.0).max(1.0));
    progress(format!(
        "faults: {} clients for {:.1} min, {:.0}% of the primary's calls failing",
        cli.concurrency,
        cli.minutes,
        cli.fault_rate * 100.0
    ));
    let rss = Rss::watch(gateway.pid(), Duration::from_secs(1));
    let url = format!("http://{}/v1/chat/completions", gateway.addr);
    let started = Instant::now();
    let outcome = faults::drive(url, API_KEY, cli.concurrency.max(1), duration).await?;
    let elapsed = started.elapsed();
    let samples = rss.take();
    progress("faults: SIGTERM, then the records");
    let status = gateway.terminate(Duration::from_secs(60))?;
    let records = record_ids(&tmp.0.join("soak.db")).await?;
    let spilled = std::fs::read_to_string(tmp.0.join("switchyard-audit-spill.jsonl"))
        .map(|t| t.lines().count())
        .unwrap_or(0);

    let seen: HashSet<&str> = outcome.ids.iter().map(String::as_str).collect();
    let stored: HashSet<&str> = records.iter().map(String::as_str).collect();
    let missing = seen.difference(&stored).count();
    let extra = stored.difference(&seen).count();
    let repeated_ids = outcome.ids.len() - seen.len();

    let midway = served.count(faults::Fault::BrokenMidway, true);
    let after_warm: Vec<(f64, u64)> =
        samples.iter().copied().filter(|s| s.0 >= WARM_UP.as_secs_f64()).collect();
    let slope = slope_per_minute(&after_warm);
    let at = |t: f64| samples.iter().find(|s| s.0 >= t).map(|s| s.1);
    let calls_primary = served.calls.load(Ordering::Relaxed);
    let calls_fallback = fallback.request_count() as u64;
    let upstream_faults = served.faults();
    let checks = [
        ("no failed request that had a healthy fallback", outcome.failed == 0),
        ("broken streams = the primary's mid-way breaks", outcome.broken_streams == midway),
        ("no stalled stream", outcome.stalls == 0),
        ("every answer has a request id", outcome.without_id == 0 && repeated_ids == 0),
        ("no lost record", missing == 0 && spilled == 0),
        ("no extra record", extra == 0),
        ("clean exit on SIGTERM", status.success()),
    ];
    let ok = checks.iter().all(|c| c.1);
    Ok((
        json!({
            "minutes": elapsed.as_secs_f64() / 60.0,
            "concurrency": cli.concurrency,
            "fault_rate": cli.fault_rate,
            "requests": outcome.requests,
            "streams": outcome.streams,
            "requests_per_s": outcome.requests as f64 / elapsed.as_secs_f64(),
            "ok": outcome.ok,
            "broken_streams": outcome.broken_streams,
            "failed": outcome.failed,
            "failures": outcome.failures,
            "stalls": outcome.stalls,
            "max_gap_ms": outcome.max_gap.as_secs_f64() * 1e3,
            "max_ttfc_ms": outcome.max_ttfc.as_secs_f64() * 1e3,
            "upstream": {
                "primary_calls": calls_primary,
                "fallback_calls": calls_fallback,
                "faults": upstream_faults,
                "faulty_share_of_all_calls": upstream_faults as f64 / (calls_primary + calls_fallback).max(1) as f64,
                "by_fault": served.by_fault().into_iter().map(|(k, v)| json!({"fault": k, "count": v})).collect::<Vec<_>>(),
                "midway_stream_breaks": midway,
            },
            "records": { "stored": records.len(), "missing": missing, "extra": extra, "spilled": spilled },
            "rss_kib": {
                "at_1_min": at(WARM_UP.as_secs_f64()),
                "end": samples.last().map(|s| s.1),
                "peak": samples.iter().map(|s| s.1).max(),
                "slope_kib_per_min_after_1_min": slope.map(|s| (s * 10.0).round() / 10.0),
                "by_minute": (1..).map(|m| at(60.0 * f64::from(m))).take_while(Option::is_some).flatten().collect::<Vec<_>>(),
            },
            "checks": checks.iter().map(|(k, v)| json!({"check": k, "passed": v})).collect::<Vec<_>>(),
            "passed": ok,
        }),
        ok,
    ))
}

/// Every request record's id in the SQLite file the gateway wrote.
async fn record_ids(db: &Path) -> Result<Vec<String>, String> {
    use sqlx::Row;
    let url = format!("sqlite://{}?mode=ro", db.display());
    let pool = sqlx::SqlitePool::connect(&url).await.map_err(|e| format!("{url}: {e}"))?;
    let rows = sqlx::query("SELECT id FROM request_records")
        .fetch_all(&pool)
        .await
        .map_err(|e| format!("read records: {e}"))?;
    pool.close().await;
    rows.iter().map(|r| r.try_get::<String, _>(0).map_err(|e| e.to_string())).collect()
}

fn markdown(r: &Value) -> String {
    let mut out = format!("# switchyard-soak\n\ngateway: {}, {} CPUs\n", r["gateway"], r["cpus"]);
    let phases = r.get("slow_streams").and_then(Value::as_object).into_iter().flatten();
    for (_, s) in phases {
        let row = |name: &str, t: &Value| {
            format!(
                "| {name} | {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |\n",
                t["streams"],
                t["failed"],
                t["ttfc_ms"]["p50"].as_f64().unwrap_or(0.0),
                t["ttfc_ms"]["p90"].as_f64().unwrap_or(0.0),
                t["ttfc_ms"]["p99"].as_f64().unwrap_or(0.0),
                t["ttfc_ms"]["max"].as_f64().unwrap_or(0.0)
            )
        };
        out.push_str(&format!(
            "\n## Slow streams, {} upstream: {} at once, {} in all\n\n| target | streams | failed | TTFC p50 ms | p90 | p99 | max |\n|---|---|---|---|---|---|---|\n",
            s["upstream"].as_str().unwrap_or(""),
            s["concurrency"],
            s["total"]
        ));
        out.push_str(&row("direct", &s["direct"]));
        out.push_str(&row("gateway", &s["gateway"]));
        out.push_str(&format!(
            "\nGateway RSS: idle {} KiB, peak {} KiB (VmHWM {}): {} KiB per open stream. Listen-queue overflows: {} direct, {} through the gateway.\n",
            s["rss_kib"]["idle"],
            s["rss_kib"]["peak"],
            s["rss_kib"]["hwm"],
            s["kib_per_open_stream"],
            s["listen_overflows"]["direct"],
            s["listen_overflows"]["gateway"]
        ));
    }
    if let Some(f) = r.get("faults") {
        out.push_str(&format!(
            "\n## Faults: {:.1} min, {} clients, {:.0}% of the primary's calls failing\n\n",
            f["minutes"].as_f64().unwrap_or(0.0),
            f["concurrency"],
            f["fault_rate"].as_f64().unwrap_or(0.0) * 100.0
        ));
        out.push_str(&format!(
            "requests {} ({} streams, {:.0}/s): ok {}, broken streams {}, failed {}, stalls {} (longest gap {:.0} ms, longest TTFC {:.0} ms)\n",
            f["requests"], f["streams"], f["requests_per_s"].as_f64().unwrap_or(0.0), f["ok"],
            f["broken_streams"], f["failed"], f["stalls"], f["max_gap_ms"].as_f64().unwrap_or(0.0),
            f["max_ttfc_ms"].as_f64().unwrap_or(0.0)
        ));
        let u = &f["upstream"];
        out.push_str(&format!(
            "upstream: primary {} calls, fallback {}, faults {} ({:.1}% of all calls); mid-way stream breaks {}\n",
            u["primary_calls"], u["fallback_calls"], u["faults"],
            u["faulty_share_of_all_calls"].as_f64().unwrap_or(0.0) * 100.0, u["midway_stream_breaks"]
        ));
        if let Some(by) = u["by_fault"].as_array() {
            for b in by {
                out.push_str(&format!(
                    "  - {}: {}\n",
                    b["fault"].as_str().unwrap_or(""),
                    b["count"]
                ));
            }
        }
        out.push_str(&format!(
            "records: {} stored, {} missing, {} extra, {} spilled\nRSS: {} KiB at 1 min, {} at the end, peak {}; slope after 1 min {} KiB/min\n\n",
            f["records"]["stored"], f["records"]["missing"], f["records"]["extra"], f["records"]["spilled"],
            f["rss_kib"]["at_1_min"], f["rss_kib"]["end"], f["rss_kib"]["peak"],
            f["rss_kib"]["slope_kib_per_min_after_1_min"]
        ));
        if let Some(by) = f["rss_kib"]["by_minute"].as_array() {
            let list: Vec<String> = by.iter().map(Value::to_string).collect();
            out.push_str(&format!("RSS at each minute (KiB): {}\n\n", list.join(", ")));
        }
        if let Some(checks) = f["checks"].as_array() {
            for c in checks {
                let mark = if c["passed"].as_bool() == Some(true) { "pass" } else { "FAIL" };
                out.push_str(&format!("- {mark}: {}\n", c["check"].as_str().unwrap_or("")));
            }
        }
        if let Some(fs) = f["failures"].as_array().filter(|a| !a.is_empty()) {
            out.push_str("\nfirst failures:\n");
            for x in fs {
                out.push_str(&format!("  - {}\n", x.as_str().unwrap_or("")));
            }
        }
    }
    out.push_str(&format!("\npassed: {}\n", r["passed"]));
    out
}
