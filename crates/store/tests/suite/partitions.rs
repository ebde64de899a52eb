//! PostgreSQL's request tables partitioned by UTC day (migration 8): each record
//! in its day's partition, days made ahead and on demand (rows waiting in
//! DEFAULT moved into them), retention dropping whole days and cutting the day
//! at the cutoff by time, a replay counted once. Every case runs on SQLite too,
//! where the same calls keep their meaning without partitions.

use switchyard_store::partitions::{DAY_MS, PARTITION_DAYS_AHEAD, day_name};

use super::*;

const RECORDS: &str = "request_records";
const CONTENTS: &str = "request_contents";

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap()
}

fn pg(store: &Store) -> Option<&sqlx::PgPool> {
    match store.pool() {
        DbPool::Postgres(p) => Some(p),
        DbPool::Sqlite(_) => None,
    }
}

/// The partition holding row `id` of `table`.
async fn home(p: &sqlx::PgPool, table: &str, id: &str) -> String {
    let sql = format!("SELECT tableoid::regclass::text FROM {table} WHERE id = $1");
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(id).fetch_one(p).await.unwrap()
}

/// Whether a table of that name exists in the test's schema.
async fn exists(p: &sqlx::PgPool, name: &str) -> bool {
    sqlx::query_scalar::<_, bool>("SELECT to_regclass($1) IS NOT NULL")
        .bind(name)
        .fetch_one(p)
        .await
        .unwrap()
}

/// Every record's id, oldest first.
async fn ids(store: &Store) -> Vec<String> {
    let all = RecordFilter { limit: Some(10_000), ..RecordFilter::default() };
    let mut out: Vec<String> =
        store.list_records(&all).await.unwrap().into_iter().map(|r| r.id).collect();
    out.reverse();
    out
}

/// Requests counted in the rollups, all time.
async fn counted(store: &Store) -> u64 {
    let usage = store.usage(&RecordFilter::default(), UsageBy::Model, 0).await.unwrap();
    usage.iter().map(|u| u.requests).sum()
}

/// How many rows of `table` lie before `cutoff`.
async fn rows_before(store: &Store, table: &str, cutoff: i64) -> i64 {
    let sql = sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table} WHERE time_ms < $1"));
    match store.pool() {
        DbPool::Sqlite(p) => sqlx::query_scalar(sql).bind(cutoff).fetch_one(p).await.unwrap(),
        DbPool::Postgres(p) => sqlx::query_scalar(sql).bind(cutoff).fetch_one(p).await.unwrap(),
    }
}

pub(crate) async fn case_each_record_lands_in_its_day_and_a_replay_counts_once(store: Store) {
    let now = now_ms();
    let today = now.div_euclid(DAY_MS);
    // Migrating made today and the days ahead, for both tables.
    for table in [RECORDS, CONTENTS] {
        let parts = store.partitions_of(table).await.unwrap();
        if pg(&store).is_none() {
            assert!(parts.is_empty());
            continue;
        }
        for day in today..=today + PARTITION_DAYS_AHEAD {
            let want = (day_name(table, day), Some((day * DAY_MS, (day + 1) * DAY_MS)));
            assert!(parts.contains(&want), "{table} {want:?} in {parts:?}");
        }
        assert!(parts.contains(&(format!("{table}_default"), None)), "{parts:?}");
        assert_eq!(parts.len(), 1 + 1 + PARTITION_DAYS_AHEAD as usize, "{parts:?}");
    }
    assert_eq!(store.ensure_partitions().await.unwrap(), 0, "all there already");
    let made = store.ensure_partitions_for((today - 1) * DAY_MS, (today - 1) * DAY_MS).await;
    assert_eq!(made.unwrap(), if pg(&store).is_some() { 2 } else { 0 });

    let logged = with(rec("now", now as u64), |r| r.content = Some("hello".into()));
    let first_ms = rec("first-ms-of-today", (today * DAY_MS) as u64);
    let last_ms = rec("last-ms-of-yesterday", (today * DAY_MS - 1) as u64);
    let yesterday = rec("yesterday", ((today - 1) * DAY_MS + 5) as u64);
    let batch = [logged.clone(), first_ms, last_ms, yesterday];
    store.insert_records(&batch).await.unwrap();
    if let Some(p) = pg(&store) {
        let (t, y) = (day_name(RECORDS, today), day_name(RECORDS, today - 1));
        assert_eq!(home(p, RECORDS, "now").await, t);
        assert_eq!(home(p, RECORDS, "first-ms-of-today").await, t);
        assert_eq!(home(p, RECORDS, "last-ms-of-yesterday").await, y);
        assert_eq!(home(p, RECORDS, "yesterday").await, y);
        assert_eq!(home(p, CONTENTS, "now").await, day_name(CONTENTS, today));
    }
    // Replayed: alone, twice in one batch, and beside a new record.
    store.insert_records(&batch).await.unwrap();
    store.insert_records(&[logged.clone(), logged.clone(), rec("new", now as u64)]).await.unwrap();
    assert_eq!(counted(&store).await, 5);
    assert_eq!(ids(&store).await.len(), 5);
    assert_eq!(store.record("now").await.unwrap(), Some(logged));
}

pub(crate) async fn case_retention_drops_whole_days_and_cuts_the_last_by_time(store: Store) {
    let today = now_ms().div_euclid(DAY_MS);
    let first = today - 6;
    store.ensure_partitions_for(first * DAY_MS, today * DAY_MS).await.unwrap();
    // Noon three days ago: the days before it go whole, that day is cut.
    let cutoff = (today - 3) * DAY_MS + DAY_MS / 2;
    let mut batch = Vec::new();
    for day in first..today {
        for k in 0..3 {
            let time = day * DAY_MS + k * (DAY_MS / 3) + 1;
            batch.push(with(rec(&format!("d{day}-{k}"), time as u64), |r| {
                r.content = (k == 0).then(|| "logged".to_owned());
            }));
        }
    }
    for (id, time) in [("before", cutoff - 1), ("at", cutoff), ("after", cutoff + 1)] {
        batch.push(with(rec(id, time as u64), |r| r.content = Some(id.to_owned())));
    }
    // No day partition takes these (DEFAULT on PostgreSQL): one is old, one is
    // ahead of the clock.
    batch.push(with(rec("ancient", 1_000), |r| r.content = Some("old".into())));
    batch.push(rec("ahead", ((today + 30) * DAY_MS) as u64));
    store.insert_records(&batch).await.unwrap();
    if let Some(p) = pg(&store) {
        assert_eq!(home(p, RECORDS, "ancient").await, "request_records_default");
        assert_eq!(home(p, RECORDS, "ahead").await, "request_records_default");
    }

    let old = batch.iter().filter(|r| (r.time_ms as i64) < cutoff).count();
    assert_eq!(store.delete_records_before(cutoff).await.unwrap(), old as u64);
    let mut kept: Vec<&RequestRecord> =
        batch.iter().filter(|r| (r.time_ms as i64) >= cutoff).collect();
    kept.sort_by_key(|r| (r.time_ms, r.id.clone()));
    assert_eq!(ids(&store).await, kept.iter().map(|r| r.id.clone()).collect::<Vec<_>>());
    assert!(kept.iter().any(|r| r.id == "at") && !kept.iter().any(|r| r.id == "before"));
    for table in [RECORDS, CONTENTS] {
        assert_eq!(rows_before(&store, table, cutoff).await, 0, "{table}");
    }
    assert_eq!(store.record("at").await.unwrap().unwrap().content.as_deref(), Some("at"));
    if let Some(p) = pg(&store) {
        for table in [RECORDS, CONTENTS] {
            let parts: Vec<String> =
                store.partitions_of(table).await.unwrap().into_iter().map(|(n, _)| n).collect();
            for day in first..=today - 4 {
                let name = day_name(table, day);
                assert!(!parts.contains(&name), "{name} dropped: {parts:?}");
                assert!(!exists(p, &name).await, "{name} dropped, not detached");
            }
            for day in today - 3..=today {
                assert!(parts.contains(&day_name(table, day)), "{table} {day}: {parts:?}");
            }
            assert!(parts.contains(&format!("{table}_default")), "{parts:?}");
        }
    }
    // The rollups outlive the records; a second run finds nothing.
    assert_eq!(counted(&store).await, batch.len() as u64);
    assert_eq!(store.delete_records_before(cutoff).await.unwrap(), 0);
}

pub(crate) async fn case_rows_in_default_move_into_their_day(store: Store) {
    let day = now_ms().div_euclid(DAY_MS) - 20;
    let early = with(rec("early", (day * DAY_MS + 10) as u64), |r| {
        r.content = Some("moved with its record".into());
    });
    let late = rec("late", ((day + 1) * DAY_MS - 1) as u64);
    let next = rec("next-day", ((day + 1) * DAY_MS) as u64);
    store.insert_records(&[early.clone(), late.clone(), next.clone()]).await.unwrap();
    if let Some(p) = pg(&store) {
        for id in ["early", "late", "next-day"] {
            assert_eq!(home(p, RECORDS, id).await, "request_records_default", "{id}");
        }
        assert_eq!(home(p, CONTENTS, "early").await, "request_contents_default");
    }
    // PostgreSQL refuses a partition whose range has rows in DEFAULT: they
    // move into it as it is made.
    let made = store.ensure_partitions_for(day * DAY_MS, day * DAY_MS).await.unwrap();
    assert_eq!(made, if pg(&store).is_some() { 2 } else { 0 });
    if let Some(p) = pg(&store) {
        assert_eq!(home(p, RECORDS, "early").await, day_name(RECORDS, day));
        assert_eq!(home(p, RECORDS, "late").await, day_name(RECORDS, day));
        assert_eq!(home(p, RECORDS, "next-day").await, "request_records_default");
        assert_eq!(home(p, CONTENTS, "early").await, day_name(CONTENTS, day));
        let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM request_records_default")
            .fetch_one(p)
            .await
            .unwrap();
        assert_eq!(left, 1);
    }
    assert_eq!(store.ensure_partitions_for(day * DAY_MS, day * DAY_MS).await.unwrap(), 0);
    assert_eq!(store.record("early").await.unwrap(), Some(early.clone()));
    assert_eq!(store.record("late").await.unwrap(), Some(late));
    // A moved record replayed still counts once.
    store.insert_records(&[early]).await.unwrap();
    assert_eq!(counted(&store).await, 3);
    assert_eq!(ids(&store).await, ["early", "late", "next-day"]);
}

pub(crate) async fn case_upkeep_at_once_from_two_callers_makes_each_day_once(store: Store) {
    let today = now_ms().div_euclid(DAY_MS);
    let (from, through) = ((today - 40) * DAY_MS, (today - 31) * DAY_MS);
    let both = |store: &Store| {
        let (a, b) = (store.clone(), store.clone());
        async move {
            let a = tokio::spawn(async move { a.ensure_partitions_for(from, through).await });
            let b = tokio::spawn(async move { b.ensure_partitions_for(from, through).await });
            a.await.unwrap().unwrap() + b.await.unwrap().unwrap()
        }
    };
    let postgres = pg(&store).is_some();
    assert_eq!(both(&store).await, if postgres { 20 } else { 0 }, "ten days, two tables");
    assert_eq!(both(&store).await, 0);
    // Spans past reason or past time_ms are refused, not made or overflowed.
    if postgres {
        for (from, through) in [(0, 4_000 * DAY_MS), (i64::MAX - 5, i64::MAX), (i64::MIN, 0)] {
            let refused = store.ensure_partitions_for(from, through).await;
            assert!(matches!(refused, Err(StoreError::Invalid(_))), "{from}..{through}");
        }
    }
    let (a, b) = tokio::join!(store.ensure_partitions(), store.ensure_partitions());
    assert_eq!((a.unwrap(), b.unwrap()), (0, 0));
    for table in [RECORDS, CONTENTS] {
        let parts = store.partitions_of(table).await.unwrap();
        let want = if postgres { 10 + 1 + PARTITION_DAYS_AHEAD as usize + 1 } else { 0 };
        assert_eq!(parts.len(), want, "{parts:?}");
    }
}

// ------------------------------------------------- migrating to version 8

/// Records written the way version 7 wrote them, across four months (older ones
/// grouped by month, recent ones by day), one at the epoch, two ahead of the
/// clock; some with content in the row (as before version 7), some in
/// `request_contents`.
const V7_RECORDS: &str = "WITH RECURSIVE g(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM g WHERE i < 899) \
    INSERT INTO request_records (id, time_ms, user_id, project_id, client_format, \
    requested_model, resolved_model, served_provider, descriptor, status, attempts, total_ms, \
    ttft_ms, input_tokens, output_tokens, cost_usd, estimated, stream, content) \
    SELECT 'old-' || i, $1 - CAST(i AS BIGINT) * 10800000, 'usr_' || (i % 3), 'prj_1', \
    'openai-chat', 'm', 'm', 'openai', 'route:r1', CASE WHEN i % 7 = 0 THEN 500 ELSE 200 END, \
    '[]', 100 + i, 20, 10 + i, i, 0.25, false, true, \
    CASE WHEN i % 5 = 0 THEN 'in the row' ELSE NULL END FROM g";
const V7_EDGES: &str = "INSERT INTO request_records (id, time_ms, client_format, \
    requested_model, descriptor, status, attempts, total_ms, estimated, stream) VALUES \
    ('epoch', 5, 'openai-chat', 'm', 'route:r1', 200, '[]', 1, false, false), \
    ('soon', $1, 'openai-chat', 'm', 'route:r1', 200, '[]', 1, false, false), \
    ('far-ahead', $2, 'openai-chat', 'm', 'route:r1', 200, '[]', 1, false, false)";
/// "hello", deflated.
const HELLO: &[u8] = &[0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];
const V7_CONTENTS: &str = "INSERT INTO request_contents (id, time_ms, content) \
    SELECT id, time_ms, $1 FROM request_records WHERE status = 500";

/// Every record row by the columns version 7 had, each as text, in id order;
/// each row's content from `request_contents` (deflated bytes, as hex) last.
async fn v7_rows(store: &Store) -> Vec<Vec<Option<String>>> {
    const COLS: [&str; 30] = [
        "id",
        "time_ms",
        "user_id",
        "key_prefix",
        "project_id",
        "client_format",
        "requested_model",
        "resolved_model",
        "route_id",
        "provider",
        "served_provider",
        "upstream_model",
        "descriptor",
        "status",
        "error_code",
        "attempts",
        "ttft_ms",
        "total_ms",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "reasoning_tokens",
        "cost_usd",
        "estimated",
        "stream",
        "content",
        "session_id",
        "field_edits",
        "cache",
    ];
    let texts: Vec<String> = COLS.iter().map(|c| format!("CAST(r.{c} AS TEXT)")).collect();
    let hex = match store.backend() {
        Backend::Sqlite => "hex(c.content)",
        Backend::Postgres => "encode(c.content, 'hex')",
    };
    let sql = format!(
        "SELECT {}, {hex} FROM request_records r LEFT JOIN request_contents c \
         ON c.id = r.id AND c.time_ms = r.time_ms ORDER BY r.id",
        texts.join(", ")
    );
    let sql = sqlx::AssertSqlSafe(sql);
    let n = COLS.len() + 1;
    match store.pool() {
        DbPool::Sqlite(p) => {
            let rows = sqlx::query(sql).fetch_all(p).await.unwrap();
            rows.iter()
                .map(|r| (0..n).map(|i| sqlx::Row::get::<Option<String>, _>(r, i)).collect())
                .collect()
        }
        DbPool::Postgres(p) => {
            let rows = sqlx::query(sql).fetch_all(p).await.unwrap();
            rows.iter()
                .map(|r| (0..n).map(|i| sqlx::Row::get::<Option<String>, _>(r, i)).collect())
                .collect()
        }
    }
}

/// Runs `sql` binding `args` in order.
async fn exec(store: &Store, sql: &'static str, args: &[i64]) {
    match store.pool() {
        DbPool::Sqlite(p) => {
            let mut q = sqlx::query(sql);
            for a in args {
                q = q.bind(*a);
            }
            q.execute(p).await.unwrap();
        }
        DbPool::Postgres(p) => {
            let mut q = sqlx::query(sql);
            for a in args {
                q = q.bind(*a);
            }
            q.execute(p).await.unwrap();
        }
    }
}

async fn case_migration_8_keeps_every_row_and_the_rollups(store: Store) {
    let now = now_ms();
    let today = now.div_euclid(DAY_MS);
    exec(&store, V7_RECORDS, &[now]).await;
    exec(&store, V7_EDGES, &[now + 2 * DAY_MS, now + 30 * DAY_MS]).await;
    match store.pool() {
        DbPool::Sqlite(p) => {
            sqlx::query(V7_CONTENTS).bind(HELLO).execute(p).await.unwrap().rows_affected()
        }
        DbPool::Postgres(p) => {
            sqlx::query(V7_CONTENTS).bind(HELLO).execute(p).await.unwrap().rows_affected()
        }
    };
    // The rollups of those records, as migration 6 makes them.
    let backfill = match store.backend() {
        Backend::Sqlite => include_str!("../../migrations/sqlite/0006_rollups_backfill.sql"),
        Backend::Postgres => include_str!("../../migrations/postgres/0006_rollups_backfill.sql"),
    };
    match store.pool() {
        DbPool::Sqlite(p) => sqlx::raw_sql(backfill).execute(p).await.unwrap().rows_affected(),
        DbPool::Postgres(p) => sqlx::raw_sql(backfill).execute(p).await.unwrap().rows_affected(),
    };
    // As version 7 has them: read by its own columns (today's reader names
    // columns later versions added).
    let before = v7_rows(&store).await;
    assert_eq!(before.len(), 903);
    let rollups = super::rollups::rollup_rows(&store).await;
    let requests: i64 = match store.pool() {
        DbPool::Sqlite(p) => sqlx::query_scalar("SELECT SUM(requests) FROM request_rollups")
            .fetch_one(p)
            .await
            .unwrap(),
        DbPool::Postgres(p) => {
            sqlx::query_scalar("SELECT CAST(SUM(requests) AS BIGINT) FROM request_rollups")
                .fetch_one(p)
                .await
                .unwrap()
        }
    };
    assert_eq!(requests, 903);

    store.migrate().await.unwrap();
    assert_eq!(v7_rows(&store).await, before, "every row, every column");
    let all = RecordFilter { limit: Some(10_000), ..RecordFilter::default() };
    let records = store.list_records(&all).await.unwrap();
    assert_eq!(records.len(), 903);
    assert_eq!(records.iter().filter(|r| r.content.as_deref() == Some("hello")).count(), 103);
    assert_eq!(super::rollups::rollup_rows(&store).await, rollups);
    // Migration 11 sliced them.
    assert_eq!(counted(&store).await, 903);
    if let Some(p) = pg(&store) {
        let parts = store.partitions_of(RECORDS).await.unwrap();
        assert_eq!(
            parts,
            store
                .partitions_of(CONTENTS)
                .await
                .unwrap()
                .into_iter()
                .map(|(n, r)| (n.replacen(CONTENTS, RECORDS, 1), r))
                .collect::<Vec<_>>()
        );
        // Recent days one partition each, older ones a month's, the epoch's
        // month too; the rows ahead of the days made went to DEFAULT.
        let daily = parts.iter().filter(|(_, r)| r.is_some_and(|(lo, hi)| hi - lo == DAY_MS));
        assert!(daily.count() >= 40, "{parts:?}");
        assert!(parts.iter().any(|(_, r)| r.is_some_and(|(lo, hi)| hi - lo > 27 * DAY_MS)));
        assert!(
            parts
                .iter()
                .any(|(n, r)| n == "request_records_p19700101_19700201"
                    && *r == Some((0, 31 * DAY_MS))),
            "{parts:?}"
        );
        assert_eq!(home(p, RECORDS, "epoch").await, "request_records_p19700101_19700201");
        assert_eq!(home(p, RECORDS, "old-0").await, day_name(RECORDS, today));
        assert_eq!(home(p, RECORDS, "soon").await, day_name(RECORDS, (now + 2 * DAY_MS) / DAY_MS));
        assert_eq!(home(p, RECORDS, "far-ahead").await, "request_records_default");
        let keys: Vec<String> = sqlx::query_scalar(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint \
             WHERE conrelid IN ('request_records'::regclass, 'request_contents'::regclass) \
             AND contype = 'p'",
        )
        .fetch_all(p)
        .await
        .unwrap();
        assert_eq!(keys, ["PRIMARY KEY (id, time_ms)", "PRIMARY KEY (id, time_ms)"]);
    }
    // Records replayed after the upgrade (a spill file written before it)
    // are skipped, and counted once.
    let replay: Vec<RequestRecord> = records.iter().take(50).cloned().collect();
    store.insert_records(&replay).await.unwrap();
    assert_eq!(super::rollups::rollup_rows(&store).await, rollups);
    assert_eq!(store.list_records(&all).await.unwrap(), records);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_migration_8_keeps_every_row_and_the_rollups() {
    let db = testing::sqlite_temp_through(7).await;
    crate::run_case(db, Backend::Sqlite, case_migration_8_keeps_every_row_and_the_rollups).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migration_8_keeps_every_row_and_the_rollups() {
    if let Some(db) = testing::postgres_through(7).await {
        crate::run_case(db, Backend::Postgres, case_migration_8_keeps_every_row_and_the_rollups)
            .await;
    }
}
