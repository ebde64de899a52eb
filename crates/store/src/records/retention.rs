//! Retention: records deleted by age (whole day partitions dropped on
//! PostgreSQL, batches elsewhere), and the rollups trimmed by their own age.

use super::RETENTION_BATCH;
use crate::db::{Backend, Store, on_pool};
use crate::error::StoreError;
use crate::rollups;

impl Store {
    /// Deletes records that arrived before `time_ms`; returns how many. On
    /// PostgreSQL the day partitions wholly before it are dropped first
    /// (`partitions.rs`: no dead tuples); what is left before it (the day it
    /// falls in, and the DEFAULT partition) and every old row on SQLite go in
    /// batches of [`RETENTION_BATCH`], each its own transaction, so a large
    /// purge never holds the write lock (SQLite) or one long transaction
    /// (PostgreSQL) against the audit writer; on SQLite the freed pages then go
    /// back to the file system ([`Store::reclaim`]). The hourly rollups stay.
    pub async fn delete_records_before(&self, time_ms: i64) -> Result<u64, StoreError> {
        let dropped = self.drop_partitions_before(time_ms).await?;
        let deleted = self.delete_records_in_batches(time_ms, RETENTION_BATCH).await?;
        if deleted > 0 {
            self.reclaim().await?;
        }
        Ok(dropped + deleted)
    }

    /// [`Store::delete_records_before`], `batch` records per statement, without
    /// the reclaim.
    pub async fn delete_records_in_batches(
        &self,
        time_ms: i64,
        batch: i64,
    ) -> Result<u64, StoreError> {
        // Oldest first, by the time index: each batch is a bounded slice.
        let (sql, contents) = match self.backend() {
            Backend::Sqlite => (
                "DELETE FROM request_records WHERE id IN \
                 (SELECT id FROM request_records WHERE time_ms < $1 ORDER BY time_ms LIMIT $2)",
                "DELETE FROM request_contents WHERE id IN \
                 (SELECT id FROM request_contents WHERE time_ms < $1 ORDER BY time_ms LIMIT $2)",
            ),
            // By the whole key, and bounded by time outside too: the delete
            // then visits only the partitions before the cutoff, not every
            // day's index for each id.
            Backend::Postgres => (
                "DELETE FROM request_records WHERE time_ms < $1 AND (id, time_ms) IN \
                 (SELECT id, time_ms FROM request_records WHERE time_ms < $1 \
                 ORDER BY time_ms LIMIT $2)",
                "DELETE FROM request_contents WHERE time_ms < $1 AND (id, time_ms) IN \
                 (SELECT id, time_ms FROM request_contents WHERE time_ms < $1 \
                 ORDER BY time_ms LIMIT $2)",
            ),
        };
        let mut total = 0;
        for (sql, counted) in [(sql, true), (contents, false)] {
            loop {
                let n = on_pool!(self, |p| sqlx::query(sql)
                    .bind(time_ms)
                    .bind(batch)
                    .execute(p)
                    .await?
                    .rows_affected());
                if counted {
                    total += n;
                }
                if n < u64::try_from(batch).unwrap_or(0) {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Deletes the rollups of hours that ended before `time_ms`: the fine
    /// rollups and the hourly slices. The daily slices
    /// stay (a row per dimension's value per day), so usage unfiltered, or
    /// filtered on its grouping, still reaches back past the cutoff by whole
    /// days. A day at a time, each its own statement, oldest first, so a first
    /// trim of a long history never holds one long transaction; on SQLite the
    /// freed pages then go back to the file system ([`Store::reclaim`]).
    /// Returns the rows deleted.
    pub async fn delete_rollups_before(&self, time_ms: i64) -> Result<u64, StoreError> {
        let cutoff = time_ms - time_ms.rem_euclid(rollups::HOUR_MS);
        let oldest: Option<i64> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT MIN(hour_ms) FROM request_rollups").fetch_one(p).await?
        });
        let oldest_slice: Option<i64> = on_pool!(self, |p| {
            sqlx::query_scalar("SELECT MIN(start_ms) FROM request_rollup_slices WHERE span_ms = $1")
                .bind(rollups::HOUR_MS)
                .fetch_one(p)
                .await?
        });
        let Some(mut from) = oldest.into_iter().chain(oldest_slice).min() else {
            return Ok(0);
        };
        let statements = [
            "DELETE FROM request_rollups WHERE hour_ms >= $1 AND hour_ms < $2",
            "DELETE FROM request_rollup_slices WHERE span_ms = 3600000 \
             AND start_ms >= $1 AND start_ms < $2",
        ];
        let mut total = 0;
        while from < cutoff {
            let to = (from + rollups::DAY_MS).min(cutoff);
            for sql in statements {
                total += on_pool!(self, |p| sqlx::query(sql)
                    .bind(from)
                    .bind(to)
                    .execute(p)
                    .await?
                    .rows_affected());
            }
            from = to;
        }
        if total > 0 {
            self.reclaim().await?;
        }
        Ok(total)
    }
}
