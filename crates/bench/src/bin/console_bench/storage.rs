//! Storage figures: what the request tables take on disk, and retention run
//! on them (rows deleted, time taken, the size after).

use std::path::PathBuf;
use std::time::Instant;

use switchyard_store::{DbPool, Store};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Bytes on disk: the whole database, and the request tables by part.
pub(crate) struct Sizes {
    /// SQLite: the file (and its -wal); PostgreSQL: the request tables below together.
    pub(crate) total: u64,
    /// Records with their indexes (PostgreSQL: every partition's), logged
    /// content, the fine rollups, and the slices; `None` on SQLite,
    /// whose build has no per-table figures (no dbstat).
    pub(crate) parts: Option<[(&'static str, u64); 4]>,
    pub(crate) rows: u64,
}

/// The file behind a `sqlite://` URL.
fn sqlite_file(url: &str) -> PathBuf {
    let path = url.trim_start_matches("sqlite://").trim_start_matches("sqlite:");
    PathBuf::from(path.split('?').next().unwrap_or(path))
}

pub(crate) async fn sizes(store: &Store, url: &str) -> Result<Sizes, Error> {
    match store.pool() {
        DbPool::Sqlite(p) => {
            // Fold the WAL into the file first, so the file is the figure.
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(p).await?;
            let rows: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM request_records").fetch_one(p).await?;
            let file = sqlite_file(url);
            let mut total = std::fs::metadata(&file)?.len();
            let mut wal = file.clone().into_os_string();
            wal.push("-wal");
            total += std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
            Ok(Sizes { total, parts: None, rows: u64::try_from(rows).unwrap_or(0) })
        }
        DbPool::Postgres(p) => {
            let partitioned = |t: &str| {
                format!(
                    "SELECT CAST(COALESCE(SUM(pg_total_relation_size(inhrelid)), 0) AS BIGINT) \
                     FROM pg_inherits WHERE inhparent = to_regclass('{t}')"
                )
            };
            let table = |t: &str| {
                format!("SELECT CAST(pg_total_relation_size(to_regclass('{t}')) AS BIGINT)")
            };
            let mut parts = [
                ("records (with indexes)", partitioned("request_records")),
                ("logged content", partitioned("request_contents")),
                ("fine rollups", table("request_rollups")),
                ("rollup slices", table("request_rollup_slices")),
            ]
            .map(|(name, sql)| (name, sql, 0u64));
            for (_, sql, bytes) in &mut parts {
                let n: i64 =
                    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.clone())).fetch_one(p).await?;
                *bytes = u64::try_from(n).unwrap_or(0);
            }
            let rows: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM request_records").fetch_one(p).await?;
            Ok(Sizes {
                total: parts.iter().map(|(_, _, b)| b).sum(),
                parts: Some(parts.map(|(name, _, b)| (name, b))),
                rows: u64::try_from(rows).unwrap_or(0),
            })
        }
    }
}

/// Retention as the binary runs it: everything before `cutoff_ms` goes
/// (`Store::delete_records_before`: PostgreSQL drops whole day partitions and
/// trims the rest in batches; SQLite deletes in batches, then reclaims the
/// freed pages). Returns the rows it reports and the seconds it took.
pub(crate) async fn retention(store: &Store, cutoff_ms: i64) -> Result<(u64, f64), Error> {
    let t = Instant::now();
    let removed = store.delete_records_before(cutoff_ms).await?;
    Ok((removed, t.elapsed().as_secs_f64()))
}

/// Rollup retention as the binary runs it (`Store::delete_rollups_before`).
pub(crate) async fn rollup_retention(store: &Store, cutoff_ms: i64) -> Result<(u64, f64), Error> {
    let t = Instant::now();
    let removed = store.delete_rollups_before(cutoff_ms).await?;
    Ok((removed, t.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_file_is_read_off_the_url() {
        use super::sqlite_file;
        assert_eq!(sqlite_file("sqlite:///tmp/a.db"), std::path::Path::new("/tmp/a.db"));
        assert_eq!(sqlite_file("sqlite://rel/a.db?mode=rwc"), std::path::Path::new("rel/a.db"));
        assert_eq!(sqlite_file("sqlite:a.db"), std::path::Path::new("a.db"));
    }
}
