//! `switchyard-console-bench`: the console on a large request log.
//!
//! Seeds a fresh database (SQLite or PostgreSQL) with `--rows` request records
//! spread over `--days`, shaped like the gateway's own (ids, attempts,
//! failovers, statuses, tokens, costs, logged content for a few per cent),
//! with a directory of projects, users, keys, groups and rules; rebuilds the
//! hourly rollups in one pass; then starts the real server in process, signs
//! in as the bootstrap admin and times every console page and the admin API's
//! record reports; then reports the storage, runs retention and reports it
//! again. See docs/benchmark.md, "Console on 10 million requests".
//!
//! ```text
//! cargo build --release -p switchyard-bench --bin switchyard-console-bench
//! target/release/switchyard-console-bench --db sqlite:///tmp/console-bench.db --rows 10000000
//! createdb -h 127.0.0.1 -U postgres sy_console_bench
//! target/release/switchyard-console-bench --db postgres://postgres@127.0.0.1/sy_console_bench
//! ```
//!
//! It refuses a database that already holds records or users: it is a
//! benchmark's scratch database, never a gateway's.

mod pages;
mod seed;
mod storage;
mod traffic;

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::Parser;
use switchyard_store::{Backend, DbPool, Store};

type Error = Box<dyn std::error::Error + Send + Sync>;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 86_400_000;
/// The budget every page is held to.
const BUDGET_MS: f64 = 300.0;

#[derive(Parser, Debug)]
#[command(
    name = "switchyard-console-bench",
    version,
    about = "Seeds a scratch database with request records and times every console page on it"
)]
struct Cli {
    /// The scratch database: sqlite:///path/file.db or postgres://user@host/db
    /// (made empty; refused when it holds records or users).
    #[arg(long)]
    db: String,
    /// Request records to seed.
    #[arg(long, default_value_t = 10_000_000)]
    rows: u64,
    /// Days they are spread over, ending at the current hour.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=365))]
    days: u32,
    /// Timed runs per page (after the warm-up).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Untimed runs per page first.
    #[arg(long, default_value_t = 3)]
    warmup: u64,
    /// Seconds one page may take in all: a slower page gets fewer runs (3 at least).
    #[arg(long, default_value_t = 30)]
    page_budget: u64,
    /// Users (one key each) and projects of the directory.
    #[arg(long, default_value_t = 500)]
    users: usize,
    #[arg(long, default_value_t = 50)]
    projects: usize,
    /// Days retention keeps at the end.
    #[arg(long, default_value_t = 7)]
    keep_days: u32,
    /// Days the rollup retention keeps at the end (after the records').
    #[arg(long, default_value_t = 7)]
    rollup_keep_days: u32,
    /// Skip retention (keep the seeded database as it is, e.g. to look at
    /// query plans afterwards).
    #[arg(long)]
    no_retention: bool,
    /// The generator's seed (the same seed seeds the same rows).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchyard-console-bench: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&cli)) {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("switchyard-console-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1_048_576.0)
}

async fn run(cli: &Cli) -> Result<String, Error> {
    let store = Store::connect(&cli.db).await?;
    store.migrate().await?;
    let (records, users) = match store.pool() {
        DbPool::Sqlite(p) => (
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM request_records")
                .fetch_one(p)
                .await?,
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM users").fetch_one(p).await?,
        ),
        DbPool::Postgres(p) => (
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM request_records")
                .fetch_one(p)
                .await?,
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM users").fetch_one(p).await?,
        ),
    };
    if records > 0 || users > 0 {
        return Err(format!(
            "the database holds {records} records and {users} users: give a fresh scratch database"
        )
        .into());
    }
    let backend = store.backend();
    let now = now_ms();
    let end_ms = now - now.rem_euclid(HOUR_MS);
    let start_ms = end_ms - i64::from(cli.days) * DAY_MS;
    // Every seeded day gets its partition before a row arrives (as upkeep
    // makes them ahead of live traffic): nothing lands in DEFAULT.
    store.ensure_partitions_for(start_ms, now).await?;

    eprintln!(
        "seeding the directory: {} projects, {} users with a key each",
        cli.projects, cli.users
    );
    let dir = seed::Directory { projects: cli.projects.max(1), users: cli.users.max(1), groups: 8 };
    let keys = seed::directory(&store, &dir, cli.seed).await?;
    eprintln!("seeding {} records over {} days", cli.rows, cli.days);
    let traffic = traffic::Traffic::new(keys.clone(), cli.rows, cli.days, end_ms, cli.seed);
    let seeded = seed::records(&store, traffic).await?;
    eprintln!(
        "seeded {} records ({} with content) in {:.0} s; rollups rebuilt in {:.0} s \
         ({} groups, {} slices)",
        seeded.rows,
        seeded.contents,
        seeded.secs,
        seeded.rollup_secs,
        seeded.rollup_groups,
        seeded.rollup_slices
    );
    if let DbPool::Postgres(p) = store.pool() {
        // What autovacuum does on its own after a load (statistics, the
        // visibility map), done now so the timings do not depend on when it
        // gets round to it.
        let t = std::time::Instant::now();
        // The rebuild's UPDATE of every fine rollup (migration 11: the
        // histograms moved inline) left a dead version of each; FULL gives the
        // table's own size, as it is once autovacuum has let new rows reuse it.
        // (Two statements: PostgreSQL runs a multi-statement string as one
        // transaction, and VACUUM refuses to run in one.)
        sqlx::raw_sql("VACUUM (FULL) request_rollups").execute(p).await?;
        sqlx::raw_sql(
            "VACUUM (ANALYZE) request_records, request_contents, request_rollups, \
             request_rollup_slices",
        )
        .execute(p)
        .await?;
        eprintln!("vacuum analyze: {:.0} s", t.elapsed().as_secs_f64());
    }
    // The rebuild dropped request_rollup_latency (migration 11): on SQLite its
    // pages are free but still in the file until handed back, as the binary's
    // first retention pass would.
    store.reclaim().await?;
    close(&store).await;

    // The server gets a store opened as the binary opens it (the seed's
    // connection settings stay with the seed).
    let store = Store::connect(&cli.db).await?;
    let before = storage::sizes(&store, &cli.db).await?;
    let console = pages::Console::start(store.clone()).await?;
    let (warmup, runs) = (usize::try_from(cli.warmup)?, usize::try_from(cli.runs)?);
    let budget = std::time::Duration::from_secs(cli.page_budget);
    let mut timings = Vec::new();
    for (label, path) in pages::plan(&keys) {
        eprintln!("timing {label}");
        timings.push(pages::time(&console, &label, &path, warmup, runs, budget).await?);
    }
    let (_, list) = console.get("/console/requests").await?;
    let detail = pages::first_detail(&list).ok_or("the requests page lists no request")?;
    timings.push(pages::time(&console, "request detail", &detail, warmup, runs, budget).await?);
    eprintln!("walking {} pages deep", pages::DEEP_PAGES);
    let (deep, steps) = pages::walk(&console).await?;
    let walk = pages::Timing {
        label: format!("requests, pages 1–{} (each step of the walk)", pages::DEEP_PAGES),
        path: "Older → followed".into(),
        runs: steps,
    };
    let label = format!("requests, {} pages deep", pages::DEEP_PAGES);
    timings.push(pages::time(&console, &label, &deep, warmup, runs, budget).await?);
    timings.push(walk);
    drop(console);

    let mut out = String::new();
    let db = match backend {
        Backend::Sqlite => "SQLite",
        Backend::Postgres => "PostgreSQL",
    };
    out.push_str(&format!(
        "## Console on {} request records ({db}, {} days)\n\n\
         Seeded in {:.0} s ({:.0} rows/s), {} with logged content; rollups rebuilt in {:.0} s \
         ({} groups, {} slices, checked against the records). {runs} timed runs per page after {warmup} \
         untimed, one at a time (fewer for a page past {}s); time from request sent to body \
         read.\n\n| page | path | runs | p50 ms | p95 ms | max ms |\n|---|---|---:|---:|---:|---:|\n",
        seeded.rows,
        cli.days,
        seeded.secs,
        seeded.rows as f64 / seeded.secs.max(1e-9),
        seeded.contents,
        seeded.rollup_secs,
        seeded.rollup_groups,
        seeded.rollup_slices,
        cli.page_budget,
    ));
    let mut over = Vec::new();
    for t in &timings {
        let (p50, p95, max) = t.summary();
        if p95 > BUDGET_MS {
            over.push(t.label.clone());
        }
        let path = if t.path.len() > 60 { format!("{}…", &t.path[..60]) } else { t.path.clone() };
        out.push_str(&format!(
            "| {} | `{path}` | {} | {p50:.1} | {p95:.1} | {max:.1} |\n",
            t.label,
            t.runs.len()
        ));
    }
    out.push_str(&format!(
        "\n{}\n\n### Storage\n\n",
        if over.is_empty() {
            format!("Every page's p95 is under {BUDGET_MS} ms.")
        } else {
            format!("Over {BUDGET_MS} ms at p95: {}.", over.join(", "))
        }
    ));
    storage_lines(&mut out, "seeded", &before);
    // Out now: retention on ten million SQLite rows takes a long while, and
    // the page figures should not wait on it (or be lost with it).
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(out.as_bytes())?;
        stdout.flush()?;
        out.clear();
    }
    if !cli.no_retention {
        let cutoff = now - i64::from(cli.keep_days) * DAY_MS;
        eprintln!("retention: keeping {} days", cli.keep_days);
        let (removed, secs) = storage::retention(&store, cutoff).await?;
        let after = storage::sizes(&store, &cli.db).await?;
        out.push_str(&format!(
            "\nRetention keeping the last {} days: {removed} records removed in {secs:.1} s{}.\n\n",
            cli.keep_days,
            match backend {
                Backend::Sqlite => " (batched deletes, then the freed pages reclaimed)",
                Backend::Postgres => " (whole day partitions dropped, the cut day trimmed)",
            }
        ));
        storage_lines(&mut out, "after retention", &after);
        let cutoff = now - i64::from(cli.rollup_keep_days) * DAY_MS;
        eprintln!("rollup retention: keeping {} days", cli.rollup_keep_days);
        let (removed, secs) = storage::rollup_retention(&store, cutoff).await?;
        let after = storage::sizes(&store, &cli.db).await?;
        out.push_str(&format!(
            "\nRollup retention keeping the last {} days (`Store::delete_rollups_before`: the \
             fine rollups and the hourly slices; the daily slices stay): {removed} rows removed \
             in {secs:.1} s.\n\n",
            cli.rollup_keep_days,
        ));
        storage_lines(&mut out, "after rollup retention", &after);
    }
    close(&store).await;
    Ok(out)
}

fn storage_lines(out: &mut String, when: &str, s: &storage::Sizes) {
    let per = |b: u64| if s.rows == 0 { 0.0 } else { b as f64 / s.rows as f64 };
    out.push_str(&format!(
        "- {when}: {} records, {} in all, {:.0} bytes per record\n",
        s.rows,
        mib(s.total),
        per(s.total)
    ));
    if let Some(parts) = &s.parts {
        for (name, bytes) in parts {
            out.push_str(&format!(
                "  - {name}: {} ({:.0} bytes per record)\n",
                mib(*bytes),
                per(*bytes)
            ));
        }
    }
}

/// Closes the store's pool (its connections end now, not when dropped).
async fn close(store: &Store) {
    match store.pool() {
        DbPool::Sqlite(p) => p.close().await,
        DbPool::Postgres(p) => p.close().await,
    }
}
