//! The hourly rollups against the records they sum: usage read from them
//! (`Store::usage`) matches usage read from every record (`usage_scan`),
//! percentiles to a bucket, and a record counts once however often it is
//! written.

use super::*;

const HOUR: u64 = 3_600_000;
/// An hour's start, well after the epoch.
const T: u64 = 480_000 * HOUR;

/// A record of `model` at `time_ms`, with latencies and a served provider.
fn served(id: &str, time_ms: u64, model: &str, total_ms: u64) -> RequestRecord {
    with(rec(id, time_ms), |r| {
        r.resolved_model = Some(model.into());
        r.requested_model = model.into();
        r.served_provider = Some("openai".into());
        r.project = Some("prj_1".into());
        r.user = Some("usr_1".into());
        r.key_prefix = Some("sy-key1".into());
        r.total_ms = total_ms;
        r.ttft_ms = Some(total_ms / 4);
    })
}

/// A varied batch over two hours: latencies from 3 ms to 40 s, errors,
/// unknown costs, cache hits, failovers, a record without a provider.
fn batch() -> Vec<RequestRecord> {
    let mut out = Vec::new();
    for i in 0..120u64 {
        let model = if i % 3 == 0 { "beta" } else { "alpha" };
        let time = T + (i % 2) * HOUR + i * 1_000;
        let total = 3 + (i * i * 37) % 40_000;
        out.push(with(served(&format!("r{i}"), time, model, total), |r| {
            r.usage = Usage {
                input_tokens: Some(10 + i),
                output_tokens: Some(i),
                cache_read_tokens: (i % 4 == 0).then_some(7),
                cache_write_tokens: (i % 5 == 0).then_some(3),
                reasoning_tokens: None,
            };
            r.cost_usd = (i % 7 != 0).then_some(0.001 * i as f64);
            if i % 11 == 0 {
                r.status = 502;
                r.error_code = Some("upstream_error".into());
            }
            if i % 13 == 0 {
                r.descriptor = "route:r1 failover:openai->anthropic".into();
            }
            if i % 17 == 0 {
                r.cache = Some("hit".into());
            }
            if i == 5 {
                r.served_provider = None;
            }
        }));
    }
    out
}

pub(crate) async fn case_rollups_match_the_records(store: Store) {
    store.insert_records(&batch()).await.unwrap();
    // Whole hours: both read the same records.
    let f = RecordFilter {
        since_ms: Some(T as i64),
        until_ms: Some((T + 2 * HOUR) as i64),
        ..RecordFilter::default()
    };
    for by in [UsageBy::Model, UsageBy::Provider, UsageBy::Project, UsageBy::User] {
        for slo in [0, 500, 20_000] {
            let exact = store.usage_scan(&f, by, slo).await.unwrap();
            let rolled = store.usage(&f, by, slo).await.unwrap();
            assert_eq!(exact.len(), rolled.len(), "{by:?}");
            for (e, r) in exact.iter().zip(&rolled) {
                let what = format!("{by:?} {:?} slo {slo}", e.key);
                assert_eq!(e.key, r.key, "{what}");
                assert_eq!(
                    (e.requests, e.errors, e.input_tokens, e.output_tokens),
                    (r.requests, r.errors, r.input_tokens, r.output_tokens),
                    "{what}"
                );
                assert_eq!(
                    (e.cache_read_tokens, e.cache_write_tokens, e.cost_complete),
                    (r.cache_read_tokens, r.cache_write_tokens, r.cost_complete),
                    "{what}"
                );
                let (ec, rc) = (e.cost_usd.unwrap(), r.cost_usd.unwrap());
                assert!((ec - rc).abs() < 1e-9, "{what}: {ec} {rc}");
                // To the bucket: never below, less than 9.1% above.
                for (exact_ms, rolled_ms) in [(e.p50_ms, r.p50_ms), (e.p95_ms, r.p95_ms)] {
                    assert!(rolled_ms >= exact_ms, "{what}: {rolled_ms} < {exact_ms}");
                    assert!(
                        rolled_ms as f64 <= exact_ms as f64 * 1.091 + 1.0,
                        "{what}: {rolled_ms} vs {exact_ms}"
                    );
                }
                // Judged by bucket: at most the requests of the SLO's bucket apart.
                assert!(
                    (e.slo_breach_share - r.slo_breach_share).abs() <= 0.1,
                    "{what}: {} vs {}",
                    e.slo_breach_share,
                    r.slo_breach_share
                );
            }
        }
    }
    // A window that cuts hours: the whole ones from the rollups, the cut ones
    // from their records, counted exactly.
    for (since, until) in [(T + HOUR / 2, T + 2 * HOUR), (T + 1, T + HOUR + 30_000)] {
        let cut = RecordFilter {
            since_ms: Some(since as i64),
            until_ms: Some(until as i64),
            ..RecordFilter::default()
        };
        let exact = store.usage_scan(&cut, UsageBy::Model, 0).await.unwrap();
        let mixed = store.usage(&cut, UsageBy::Model, 0).await.unwrap();
        let counts = |rows: &[UsageRow]| {
            rows.iter().map(|r| (r.key.clone(), r.requests, r.input_tokens)).collect::<Vec<_>>()
        };
        assert_eq!(counts(&exact), counts(&mixed), "{since}..{until}");
    }
    // Within one hour: every record read, the percentiles exact.
    let inside = RecordFilter {
        since_ms: Some((T + 1) as i64),
        until_ms: Some((T + HOUR - 1) as i64),
        ..RecordFilter::default()
    };
    assert_eq!(
        store.usage(&inside, UsageBy::Model, 0).await.unwrap(),
        store.usage_scan(&inside, UsageBy::Model, 0).await.unwrap()
    );
    // The model as the rollups key it; a status filter reads the records.
    let beta = RecordFilter { model: Some("beta".into()), ..RecordFilter::default() };
    let rows = store.usage(&beta, UsageBy::Model, 0).await.unwrap();
    assert_eq!((rows.len(), rows[0].requests), (1, 40));
    let failed = RecordFilter { status: Some(502), ..RecordFilter::default() };
    let rows = store.usage(&failed, UsageBy::Model, 0).await.unwrap();
    assert_eq!(rows.iter().map(|r| r.requests).sum::<u64>(), 11);
    // What only the rollups keep: failovers, cache hits, time to first token.
    let (failovers, hits, ttfts) = rollup_counts(&store).await;
    assert_eq!((failovers, hits, ttfts), (10, 8, 120));
}

pub(crate) async fn case_rollups_count_a_record_once(store: Store) {
    let first = batch();
    // A record repeated in its batch, then the whole batch replayed (a spill
    // file read again), then again with a new record among the old.
    let mut doubled = first.clone();
    doubled.push(first[0].clone());
    store.insert_records(&doubled).await.unwrap();
    store.insert_records(&first).await.unwrap();
    let mut more = first.clone();
    more.push(served("new", T + 10, "alpha", 5));
    store.insert_records(&more).await.unwrap();
    let rows = store.usage(&RecordFilter::default(), UsageBy::Model, 0).await.unwrap();
    let total: u64 = rows.iter().map(|r| r.requests).sum();
    assert_eq!(total, 121);
    let (_, _, ttfts) = rollup_counts(&store).await;
    assert_eq!(ttfts, 121);
}

/// Failovers, cache hits and requests with a time to first token, summed over
/// every rollup row.
async fn rollup_counts(store: &Store) -> (i64, i64, i64) {
    let sql = "SELECT CAST(SUM(failovers) AS BIGINT), CAST(SUM(cache_hits) AS BIGINT), \
               CAST(SUM(ttft_count) AS BIGINT) FROM request_rollups";
    match store.pool() {
        DbPool::Sqlite(p) => {
            let row = sqlx::query(sql).fetch_one(p).await.unwrap();
            (row.get(0), row.get(1), row.get(2))
        }
        DbPool::Postgres(p) => {
            let row = sqlx::query(sql).fetch_one(p).await.unwrap();
            (row.get(0), row.get(1), row.get(2))
        }
    }
}

/// A histogram's text with its pairs sorted (SQLite's `group_concat` keeps no
/// order).
fn sorted_pairs(text: &str) -> String {
    let mut pairs: Vec<&str> = text.split_whitespace().collect();
    pairs.sort_unstable();
    pairs.join(" ")
}

/// Every fine rollup row as text, in key order, its histograms as pairs: from
/// the row (version 11 on) or from `request_rollup_latency` (before).
pub(crate) async fn rollup_rows(store: &Store) -> Vec<String> {
    const KEY: &str = "hour_ms, model, provider, project_id, user_id, key_prefix";
    let sums = format!(
        "SELECT {KEY}, requests, errors, failovers, cache_hits, input_tokens, output_tokens, \
         cache_read_tokens, cache_write_tokens, costed, total_ms_sum, ttft_count, ttft_ms_sum, \
         CAST(ROUND(cost_usd * 1000000) AS BIGINT) AS micro FROM request_rollups ORDER BY {KEY}"
    );
    let cells = format!(
        "SELECT {KEY}, metric, bucket, count FROM request_rollup_latency \
         ORDER BY {KEY}, metric, bucket"
    );
    let inline = format!("SELECT {KEY}, latency, ttft FROM request_rollups ORDER BY {KEY}");
    let mut rows = Vec::new();
    // The row's key → its two histograms.
    let mut histograms: std::collections::HashMap<String, [Vec<String>; 2]> = Default::default();
    macro_rules! read {
        ($p:expr, $row:ty) => {{
            let text = |row: &$row, i: usize| -> String {
                row.try_get::<i64, _>(i)
                    .map(|v| v.to_string())
                    .or_else(|_| row.try_get::<String, _>(i))
                    .unwrap()
            };
            let key = |row: &$row| (0..6).map(|i| text(row, i)).collect::<Vec<_>>().join("|");
            for row in sqlx::query(sqlx::AssertSqlSafe(sums)).fetch_all($p).await.unwrap() {
                let row: $row = row;
                rows.push((0..row.len()).map(|i| text(&row, i)).collect::<Vec<_>>().join("|"));
            }
            let before_11 = sqlx::query(sqlx::AssertSqlSafe(cells.clone())).fetch_all($p).await;
            match before_11 {
                Ok(found) => {
                    for row in found {
                        let row: $row = row;
                        let metric: i64 = row.get(6);
                        let (b, n): (i64, i64) = (row.get(7), row.get(8));
                        let slot = histograms.entry(key(&row)).or_default();
                        slot[metric as usize].push(format!("{b}:{n}"));
                    }
                }
                Err(_) => {
                    for row in sqlx::query(sqlx::AssertSqlSafe(inline)).fetch_all($p).await.unwrap()
                    {
                        let row: $row = row;
                        let (latency, ttft): (String, String) = (row.get(6), row.get(7));
                        let split = |t: &str| t.split_whitespace().map(str::to_owned).collect();
                        histograms.insert(key(&row), [split(&latency), split(&ttft)]);
                    }
                }
            }
        }};
    }
    match store.pool() {
        DbPool::Sqlite(p) => read!(p, sqlx::sqlite::SqliteRow),
        DbPool::Postgres(p) => read!(p, sqlx::postgres::PgRow),
    }
    rows.into_iter()
        .map(|row| {
            let key = row.split('|').take(6).collect::<Vec<_>>().join("|");
            let [latency, ttft] = histograms.remove(&key).unwrap_or_default();
            format!("{row}|{}|{}", sorted_pairs(&latency.join(" ")), sorted_pairs(&ttft.join(" ")))
        })
        .collect()
}

pub(crate) async fn case_rollups_backfill_matches_what_writes_keep(store: Store) {
    // Records written by this version keep the rollups as they go; the
    // migrations that roll up an older version's records (6: the fine rollups,
    // with their histograms a row per bucket; 11: the slices, and the fine
    // histograms moved inline) must make the same.
    for chunk in days().chunks(50) {
        store.insert_records(chunk).await.unwrap();
    }
    store.insert_records(&batch()).await.unwrap();
    let (fine, slices) = (rollup_rows(&store).await, slice_rows(&store).await);
    assert!(fine.len() > 10 && slices.len() > 50, "{fine:?} {slices:?}");
    // Back to version 10's tables, empty; then the migrations again.
    let (v5, v6, v11) = match store.backend() {
        Backend::Sqlite => (
            include_str!("../../migrations/sqlite/0005_rollups.sql"),
            include_str!("../../migrations/sqlite/0006_rollups_backfill.sql"),
            include_str!("../../migrations/sqlite/0011_rollup_slices.sql"),
        ),
        Backend::Postgres => (
            include_str!("../../migrations/postgres/0005_rollups.sql"),
            include_str!("../../migrations/postgres/0006_rollups_backfill.sql"),
            include_str!("../../migrations/postgres/0011_rollup_slices.sql"),
        ),
    };
    let reset = "DROP TABLE request_rollup_slices; DROP TABLE request_rollups;";
    for sql in [reset, v5, v6, v11] {
        match store.pool() {
            DbPool::Sqlite(p) => drop(sqlx::raw_sql(sql).execute(p).await.unwrap()),
            DbPool::Postgres(p) => drop(sqlx::raw_sql(sql).execute(p).await.unwrap()),
        }
    }
    assert_eq!(rollup_rows(&store).await, fine);
    assert_eq!(slice_rows(&store).await, slices);
}

pub(crate) async fn case_usage_series_is_hour_by_hour(store: Store) {
    store.insert_records(&batch()).await.unwrap();
    // Widened to the whole hours it touches.
    let f = RecordFilter {
        since_ms: Some((T + 1) as i64),
        until_ms: Some((T + 2 * HOUR - 1) as i64),
        ..RecordFilter::default()
    };
    let series = store.usage_series(&f, UsageBy::Model, 0).await.unwrap();
    let points: Vec<(u64, Option<&str>, u64)> = series
        .iter()
        .map(|p| (p.hour_ms as u64, p.usage.key.as_deref(), p.usage.requests))
        .collect();
    // Even records in the first hour, odd ones in the second; every third is beta.
    assert_eq!(
        points,
        [
            (T, Some("alpha"), 40),
            (T, Some("beta"), 20),
            (T + HOUR, Some("alpha"), 40),
            (T + HOUR, Some("beta"), 20)
        ]
    );
    assert_eq!(series.iter().map(|p| p.failovers).sum::<u64>(), 10);
    assert_eq!(series.iter().map(|p| p.cache_hits).sum::<u64>(), 8);
    for p in &series {
        let (p50, p95) = (p.ttft_p50_ms.unwrap(), p.ttft_p95_ms.unwrap());
        assert!(p50 <= p95 && p95 <= p.usage.p95_ms, "{p:?}");
    }
    // The hours' sums are the window's.
    let whole = RecordFilter {
        since_ms: Some(T as i64),
        until_ms: Some((T + 2 * HOUR) as i64),
        ..RecordFilter::default()
    };
    let total = store.usage_scan(&whole, UsageBy::Model, 0).await.unwrap();
    let summed: u64 = series.iter().map(|p| p.usage.input_tokens).sum();
    assert_eq!(summed, total.iter().map(|r| r.input_tokens).sum::<u64>());
    let by_status = RecordFilter { status: Some(200), ..RecordFilter::default() };
    assert!(matches!(
        store.usage_series(&by_status, UsageBy::Model, 0).await,
        Err(StoreError::Invalid(_))
    ));
}

const DAY: u64 = 24 * HOUR;

/// Records over three days and a bit, every one by user `usr_1`: three keys,
/// two projects, two models, latencies spread over the buckets.
fn days() -> Vec<RequestRecord> {
    (0..400u64)
        .map(|i| {
            let time = T - T % DAY + i * 700_000 + i % 7;
            let model = if i % 3 == 0 { "beta" } else { "alpha" };
            with(served(&format!("d{i}"), time, model, 2 + (i * i * 53) % 30_000), |r| {
                r.key_prefix = Some(format!("sy-key{}", i % 3));
                r.project = Some(if i % 4 == 0 { "prj_2" } else { "prj_1" }.into());
                if i % 9 == 0 {
                    r.ttft_ms = None;
                }
                if i % 10 == 0 {
                    r.status = 429;
                }
            })
        })
        .collect()
}

pub(crate) async fn case_slices_agree_with_the_fine_rollups(store: Store) {
    let records = days();
    for chunk in records.chunks(37) {
        store.insert_records(chunk).await.unwrap();
    }
    let day0 = (T - T % DAY) as i64;
    let (h, d) = (HOUR as i64, DAY as i64);
    let windows = [
        (None, None),
        (Some(day0), None),
        (Some(day0 + 5 * h + 1_234), Some(day0 + 2 * d + 7 * h + 99)),
        (Some(day0 + d - 3 * h), Some(day0 + d + 2 * h)),
        (Some(day0 + 30 * 60_000), Some(day0 + 3 * d)),
        (None, Some(day0 + 2 * d + 13 * h + 5)),
    ];
    for (since_ms, until_ms) in windows {
        let f = RecordFilter { since_ms, until_ms, ..RecordFilter::default() };
        // The same filter through the fine rollups: every record is usr_1's,
        // and a filter on another dimension than the grouping cannot be sliced.
        let fine = RecordFilter { user: Some("usr_1".into()), ..f.clone() };
        for by in [UsageBy::Model, UsageBy::Provider, UsageBy::Project, UsageBy::Key] {
            let what = format!("{since_ms:?}..{until_ms:?} by {by:?}");
            let sliced = store.usage(&f, by, 0).await.unwrap();
            assert_eq!(sliced, store.usage(&fine, by, 0).await.unwrap(), "{what}");
            let exact = store.usage_scan(&f, by, 0).await.unwrap();
            let counts = |rows: &[UsageRow]| {
                rows.iter()
                    .map(|r| (r.key.clone(), r.requests, r.errors, r.input_tokens))
                    .collect::<Vec<_>>()
            };
            assert_eq!(counts(&sliced), counts(&exact), "{what}");
            assert!(!sliced.is_empty(), "{what}");
            let series = store.usage_series(&f, by, 0).await.unwrap();
            assert_eq!(series, store.usage_series(&fine, by, 0).await.unwrap(), "{what}");
        }
        // One value of the grouping's own dimension: still a slice.
        let alpha = RecordFilter { model: Some("alpha".into()), ..f.clone() };
        let alpha_fine = RecordFilter { user: Some("usr_1".into()), ..alpha.clone() };
        assert_eq!(
            store.usage(&alpha, UsageBy::Model, 0).await.unwrap(),
            store.usage(&alpha_fine, UsageBy::Model, 0).await.unwrap()
        );
    }
    // The busiest groups' hours and all the traffic's, in one read.
    let f = RecordFilter { since_ms: Some(day0 + 2 * h), ..RecordFilter::default() };
    let keys = [Some("sy-key1".to_owned()), Some("sy-key2".to_owned())];
    let of = store.usage_series_of(&f, UsageBy::Key, 0, &keys).await.unwrap();
    let every = store.usage_series(&f, UsageBy::Key, 0).await.unwrap();
    let asked: Vec<_> =
        every.iter().filter(|p| p.usage.key.as_deref() != Some("sy-key0")).collect();
    assert_eq!(of.groups.iter().collect::<Vec<_>>(), asked);
    assert!(of.total.iter().all(|p| p.usage.key.is_none()));
    for t in &of.total {
        let hour: u64 =
            every.iter().filter(|p| p.hour_ms == t.hour_ms).map(|p| p.usage.requests).sum();
        assert_eq!(t.usage.requests, hour, "{}", t.hour_ms);
    }
    let totals: u64 = of.total.iter().map(|p| p.usage.requests).sum();
    assert_eq!(totals, every.iter().map(|p| p.usage.requests).sum::<u64>());
    // Through the fine rollups, the same.
    let fine = RecordFilter { user: Some("usr_1".into()), ..f };
    assert_eq!(store.usage_series_of(&fine, UsageBy::Key, 0, &keys).await.unwrap(), of);
}

/// Every slice row as text, its histograms' pairs sorted, in key order.
async fn slice_rows(store: &Store) -> Vec<String> {
    let sql = "SELECT span_ms, dimension, start_ms, value, requests, errors, failovers, \
               cache_hits, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, \
               costed, total_ms_sum, ttft_count, ttft_ms_sum, \
               CAST(ROUND(cost_usd * 1000000) AS BIGINT) AS micro, latency, ttft \
               FROM request_rollup_slices ORDER BY span_ms, dimension, start_ms, value";
    let mut out = Vec::new();
    macro_rules! rows {
        ($p:expr, $row:ty) => {
            for row in sqlx::query(sql).fetch_all($p).await.unwrap() {
                let row: $row = row;
                let cells: Vec<String> = (0..row.len())
                    .map(|i| {
                        row.try_get::<i64, _>(i)
                            .map(|v| v.to_string())
                            .unwrap_or_else(|_| sorted_pairs(&row.try_get::<String, _>(i).unwrap()))
                    })
                    .collect();
                out.push(cells.join("|"));
            }
        };
    }
    match store.pool() {
        DbPool::Sqlite(p) => rows!(p, sqlx::sqlite::SqliteRow),
        DbPool::Postgres(p) => rows!(p, sqlx::postgres::PgRow),
    }
    out
}

/// A budget's spend, rebuilt from the ledger, is read from the rollups: for
/// the gateway, a key, a user and a project, since a whole hour and since one
/// cut mid-hour, it is what the records in the period cost.
pub(crate) async fn case_the_ledger_reads_what_the_records_cost(store: Store) {
    use switchyard_core::clock::UnixMs;
    use switchyard_core::limits::{BudgetMode, BudgetScope, BudgetSpec, Budgeted, Ledger, Period};
    let records: Vec<RequestRecord> = days()
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            with(r, |r| {
                r.cost_usd = (i % 6 != 0).then_some(0.0125 * (i % 5) as f64);
                r.user = Some(format!("usr_{}", i % 2));
            })
        })
        .collect();
    for chunk in records.chunks(41) {
        store.insert_records(chunk).await.unwrap();
    }
    let day = T - T % DAY;
    type Named = fn(&RequestRecord) -> Option<&str>;
    let scopes: [(BudgetScope, Option<&str>, Named); 4] = [
        (BudgetScope::Gateway, None, |_| None),
        (BudgetScope::Key("sy-key1".into()), Some("sy-key1"), |r| r.key_prefix.as_deref()),
        (BudgetScope::User("usr_1".into()), Some("usr_1"), |r| r.user.as_deref()),
        (BudgetScope::Project("prj_2".into()), Some("prj_2"), |r| r.project.as_deref()),
    ];
    for since in [day + 5 * HOUR, day + 29 * HOUR + 123_456] {
        for (scope, name, named) in &scopes {
            let spec = BudgetSpec {
                scope: scope.clone(),
                limit_usd: 100.0,
                period: Period::Month,
                mode: BudgetMode::Enforce,
                max_reservation_usd: 1.0,
                lower_max_tokens: false,
            };
            let mut b = Budgeted::now(&spec, UnixMs(since));
            b.names = name.iter().map(|n| (*n).to_owned()).collect();
            b.window.start = UnixMs(since);
            let expected: f64 = records
                .iter()
                .filter(|r| r.time_ms >= since && (name.is_none() || named(r) == *name))
                .filter_map(|r| r.cost_usd)
                .sum();
            let spent = store.spent(&b).await.unwrap();
            assert!(expected > 0.0, "{scope}: the case spends nothing");
            assert!(
                (spent - expected).abs() < 1e-9,
                "{scope} since {since}: {spent} != {expected}"
            );
        }
    }
}
