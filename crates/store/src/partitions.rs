//! PostgreSQL's request tables, partitioned by UTC day (migration 8): the days
//! made ahead of the traffic (upkeep), and the days retention is done with
//! dropped whole, so old records leave no dead tuples behind. SQLite has no
//! partitions: there both are no-ops and retention deletes in batches.
//!
//! **Every instance runs this.** Upkeep runs at migrate time and hourly beside
//! retention, on every instance sharing the database. Creating or dropping a
//! partition happens in a transaction holding an advisory lock (one per schema)
//! and re-reads the partitions under it, so two instances never race to create
//! the same day: the second finds it made and does nothing.
//!
//! **Rows in DEFAULT.** A row no day partition takes (a skewed clock, a backfill
//! of old records, a gateway that was down past the days made ahead) lands in
//! the DEFAULT partition. PostgreSQL refuses a new partition whose range has rows
//! in DEFAULT, so a day is made as a table of its own, the day's rows are moved
//! into it from DEFAULT, and it is then attached, all in one transaction (DEFAULT
//! locked against writes meanwhile: none can slip in between the move and the
//! attach). Retention trims whatever is left in DEFAULT in batches.
//!
//! **Locks.** Attaching takes a lock on the parent that does not stop inserts or
//! reads; dropping a partition takes one that does, for as long as the drop
//! lasts. Both wait at most `LOCK_TIMEOUT` for it (a long report holding the
//! table): a step that cannot have it fails, is logged, and is tried again at
//! the next run, instead of queueing the audit writer behind it.

use sqlx::postgres::PgPool;
use sqlx::{AssertSqlSafe, PgConnection, Row};

use crate::db::{DbPool, Store, now_ms};
use crate::error::StoreError;

/// A day in unix milliseconds (UTC days: no leap seconds in unix time).
pub const DAY_MS: i64 = 86_400_000;

/// Days made ahead of today, so a day's partition exists well before its first
/// record even when upkeep has not run for a while.
pub const PARTITION_DAYS_AHEAD: i64 = 7;

/// The most days one [`Store::ensure_partitions_for`] makes (ten years).
const MAX_SPAN_DAYS: i64 = 3_660;

/// The partitioned tables, records first (theirs are the rows retention counts).
const TABLES: [&str; 2] = ["request_records", "request_contents"];

/// How long a partition change waits for a table lock before giving up.
const LOCK_TIMEOUT: &str = "3s";

/// One partition of a table: its name and its range of `time_ms`, `[lo, hi)`
/// (`None`: the DEFAULT partition, or bounds this code did not write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Partition {
    pub(crate) name: String,
    pub(crate) range: Option<(i64, i64)>,
    pub(crate) default: bool,
}

impl Partition {
    fn overlaps(&self, lo: i64, hi: i64) -> bool {
        self.range.is_some_and(|(a, b)| a < hi && lo < b)
    }
}

impl Store {
    /// Makes sure the request tables have a partition for today and each of the
    /// next [`PARTITION_DAYS_AHEAD`] days (UTC); returns how many partitions it
    /// made (a day makes one per table). Idempotent, and safe to run from every
    /// instance at once. Nothing to do on SQLite.
    pub async fn ensure_partitions(&self) -> Result<usize, StoreError> {
        let today = now_ms().div_euclid(DAY_MS);
        self.ensure_partitions_for(today * DAY_MS, (today + PARTITION_DAYS_AHEAD) * DAY_MS).await
    }

    /// [`Store::ensure_partitions`] for the days from the one holding `from_ms`
    /// through the one holding `through_ms` (a backfill's days made before it
    /// runs; tests' days in the past). A day that already has rows in DEFAULT
    /// takes them into its partition.
    pub async fn ensure_partitions_for(
        &self,
        from_ms: i64,
        through_ms: i64,
    ) -> Result<usize, StoreError> {
        let DbPool::Postgres(p) = &self.pool else { return Ok(0) };
        let (first, last) = (from_ms.div_euclid(DAY_MS), through_ms.div_euclid(DAY_MS));
        // Each day's end must be a time_ms, and a span a table per day is made
        // for stays within reason.
        if last.checked_add(1).and_then(|d| d.checked_mul(DAY_MS)).is_none()
            || first.checked_mul(DAY_MS).is_none()
            || last.saturating_sub(first) > MAX_SPAN_DAYS
        {
            return Err(StoreError::Invalid(format!(
                "partitions for days {first} to {last}: at most {MAX_SPAN_DAYS} days, \
                 within the range of time_ms"
            )));
        }
        let mut made = 0;
        for table in TABLES {
            let mut conn = p.acquire().await?;
            let existing = partitions(&mut conn, table).await?;
            drop(conn);
            for day in first..=last {
                let (lo, hi) = (day * DAY_MS, (day + 1) * DAY_MS);
                if existing.iter().any(|part| part.overlaps(lo, hi)) {
                    continue;
                }
                if create_day(p, table, day).await? {
                    made += 1;
                }
            }
        }
        if made > 0 {
            tracing::info!(partitions = made, "request tables: day partitions created");
        }
        Ok(made)
    }

    /// The request tables' partitions whose whole range lies before `cutoff_ms`,
    /// dropped; returns how many records they held (counted before the drop).
    /// DEFAULT is never dropped. Nothing to do on SQLite.
    pub(crate) async fn drop_partitions_before(&self, cutoff_ms: i64) -> Result<u64, StoreError> {
        let DbPool::Postgres(p) = &self.pool else { return Ok(0) };
        let mut removed = 0;
        for table in TABLES {
            let mut conn = p.acquire().await?;
            let old: Vec<Partition> = partitions(&mut conn, table)
                .await?
                .into_iter()
                .filter(|part| part.range.is_some_and(|(_, hi)| hi <= cutoff_ms))
                .collect();
            drop(conn);
            for part in old {
                removed += drop_partition(p, table, &part, table == TABLES[0]).await?;
            }
        }
        Ok(removed)
    }

    /// The partitions of a request table (`request_records` or
    /// `request_contents`), for tests and tooling; empty on SQLite.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub async fn partitions_of(
        &self,
        table: &str,
    ) -> Result<Vec<(String, Option<(i64, i64)>)>, StoreError> {
        let DbPool::Postgres(p) = &self.pool else { return Ok(Vec::new()) };
        let mut conn = p.acquire().await?;
        let mut parts = partitions(&mut conn, table).await?;
        parts.sort_by_key(|part| (part.range, part.name.clone()));
        Ok(parts.into_iter().map(|part| (part.name, part.range)).collect())
    }
}

/// The partitions of `table` in the current schema (the one the store's
/// search_path names: a test's own schema, or the operator's).
async fn partitions(conn: &mut PgConnection, table: &str) -> Result<Vec<Partition>, StoreError> {
    let rows = sqlx::query(
        "SELECT c.relname::text AS name, pg_get_expr(c.relpartbound, c.oid) AS bound \
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = to_regclass($1)",
    )
    .bind(table)
    .fetch_all(&mut *conn)
    .await?;
    rows.iter()
        .map(|r| {
            let name: String = r.try_get("name")?;
            let bound: String = r.try_get("bound")?;
            Ok(Partition { name, range: parse_bound(&bound), default: bound == "DEFAULT" })
        })
        .collect::<Result<_, sqlx::Error>>()
        .map_err(StoreError::from)
}

/// `FOR VALUES FROM ('1790812800000') TO ('1790899200000')` (how PostgreSQL
/// prints a range partition's bounds) as `(lo, hi)`; `None` for anything else
/// (DEFAULT, MINVALUE, a list partition).
pub(crate) fn parse_bound(bound: &str) -> Option<(i64, i64)> {
    let rest = bound.strip_prefix("FOR VALUES FROM (")?;
    let (lo, hi) = rest.split_once(") TO (")?;
    let hi = hi.strip_suffix(')')?;
    let num = |s: &str| s.trim_matches('\'').parse::<i64>().ok();
    Some((num(lo)?, num(hi)?))
}

/// The name of `table`'s partition for `day` (days since 1970-01-01, UTC):
/// `request_records_p20261204`.
pub fn day_name(table: &str, day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{table}_p{y:04}{m:02}{d:02}")
}

/// The UTC calendar date of a day counted from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
pub(crate) fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `name` quoted as an SQL identifier (names here come from this code and the
/// catalog, but a name is never pasted into SQL unquoted).
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Opens a partition change: a transaction with a bounded lock wait, holding
/// this schema's partition lock (the same for upkeep and retention, so two
/// instances never change one table's partitions at once, and never take the
/// parent's and DEFAULT's locks in opposite orders).
async fn begin_change(
    p: &PgPool,
) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, StoreError> {
    let mut tx = p.begin().await?;
    sqlx::query(AssertSqlSafe(format!("SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")))
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "SELECT pg_advisory_xact_lock(hashtext('switchyard partitions'), \
         hashtext(current_schema()))",
    )
    .execute(&mut *tx)
    .await?;
    Ok(tx)
}

/// Makes `table`'s partition for `day`; `false` when another instance made it
/// (or a partition covering it) first.
async fn create_day(p: &PgPool, table: &str, day: i64) -> Result<bool, StoreError> {
    let (lo, hi) = (day * DAY_MS, (day + 1) * DAY_MS);
    let name = day_name(table, day);
    let (t, n) = (ident(table), ident(&name));
    let mut tx = begin_change(p).await?;
    // Read again under the lock: what was missing may have been made since.
    let existing = partitions(&mut tx, table).await?;
    if existing.iter().any(|part| part.overlaps(lo, hi)) {
        return Ok(false);
    }
    sqlx::query(AssertSqlSafe(format!("CREATE TABLE {n} (LIKE {t} INCLUDING DEFAULTS)")))
        .execute(&mut *tx)
        .await?;
    if let Some(default) = existing.iter().find(|part| part.default) {
        // No writer may add a row for this day to DEFAULT between the move and
        // the attach (which would then fail); readers carry on.
        let d = ident(&default.name);
        sqlx::query(AssertSqlSafe(format!("LOCK TABLE {d} IN EXCLUSIVE MODE")))
            .execute(&mut *tx)
            .await?;
        let moved = sqlx::query(AssertSqlSafe(format!(
            "WITH moved AS (DELETE FROM {d} WHERE time_ms >= $1 AND time_ms < $2 RETURNING *) \
             INSERT INTO {n} SELECT * FROM moved"
        )))
        .bind(lo)
        .bind(hi)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if moved > 0 {
            tracing::info!(table, partition = %name, rows = moved, "moved rows out of DEFAULT");
        }
    }
    // Attaching makes the parent's indexes on the new table.
    sqlx::query(AssertSqlSafe(format!(
        "ALTER TABLE {t} ATTACH PARTITION {n} FOR VALUES FROM ({lo}) TO ({hi})"
    )))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Drops one partition of `table` (if still there); returns the rows it held
/// when `count` (the records table's; contents are not counted).
///
/// The count is exact, read before the drop, without a lock that would stop
/// the writer: a scan of one day that retention reaches once, off the request
/// path. A row that lands in the partition between the count and the drop (an
/// old record replayed just then) goes uncounted, and it was past retention
/// anyway.
async fn drop_partition(
    p: &PgPool,
    table: &str,
    part: &Partition,
    count: bool,
) -> Result<u64, StoreError> {
    let mut tx = begin_change(p).await?;
    let still = partitions(&mut tx, table).await?.iter().any(|x| x.name == part.name);
    if !still {
        return Ok(0);
    }
    let (name, n) = (&part.name, ident(&part.name));
    let rows: i64 = if count {
        sqlx::query_scalar(AssertSqlSafe(format!("SELECT count(*) FROM {n}")))
            .fetch_one(&mut *tx)
            .await?
    } else {
        0
    };
    sqlx::query(AssertSqlSafe(format!("DROP TABLE {n}"))).execute(&mut *tx).await?;
    tx.commit().await?;
    tracing::info!(table, partition = %name, rows, "retention: dropped a partition");
    Ok(u64::try_from(rows).unwrap_or(0))
}

#[cfg(test)]
#[path = "partitions_tests.rs"]
mod tests;
