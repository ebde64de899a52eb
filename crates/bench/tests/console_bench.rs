//! The console bench end to end on a small SQLite database: it seeds, the
//! rollups it rebuilds add up (it fails otherwise), every page it times
//! answers 200 (it fails otherwise), the keyset walk reaches its depth, and
//! retention runs. The 10-million-row run is the documented command, never a
//! test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

#[test]
fn seeds_times_every_page_and_runs_retention_on_a_small_sqlite_database() {
    let dir = std::env::temp_dir().join(format!("console-bench-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = format!("sqlite://{}", dir.join("bench.db").display());
    let run = |db: &str| {
        Command::new(env!("CARGO_BIN_EXE_switchyard-console-bench"))
            .args(["--db", db, "--rows", "12000", "--days", "3", "--runs", "1", "--warmup", "0"])
            .args([
                "--users",
                "40",
                "--projects",
                "6",
                "--keep-days",
                "1",
                "--rollup-keep-days",
                "1",
            ])
            .output()
            .unwrap()
    };
    let out = run(&db);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("## Console on 12000 request records (SQLite, 3 days)"), "{stdout}");
    for page in [
        "| overview |",
        "| requests ?status=503 |",
        "| analytics 30d by user |",
        "| analytics 24h by key ?model |",
        "| people |",
        "| /admin/usage?since=30d |",
        "| request detail |",
        "| requests, 100 pages deep |",
    ] {
        assert!(stdout.contains(page), "{page} missing:\n{stdout}");
    }
    assert!(stdout.contains("- seeded: 12000 records"), "{stdout}");
    // Keeping one day of three: most rows go, and the report says how many.
    let removed: u64 = stdout
        .split("keeping the last 1 days: ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no retention line:\n{stdout}"));
    assert!((6_000..12_000).contains(&removed), "{removed}");
    // And the hourly rollups of those days.
    let trimmed: u64 = stdout
        .split("the daily slices stay): ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no rollup retention line:\n{stdout}"));
    assert!(trimmed > 0, "{stdout}");

    // A database that already holds records is refused, untouched.
    let again = run(&db);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("fresh scratch database"));
    let _ = std::fs::remove_dir_all(&dir);
}
