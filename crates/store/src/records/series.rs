//! Usage hour by hour ([`Store::usage_series`], [`Store::usage_series_of`]),
//! from the rollups alone: the hourly slices when the filter allows (see
//! `usage.rs`, `slice_of`), else the fine rollups.

use std::collections::HashMap;

use sqlx::AssertSqlSafe;

use super::usage::{ROW_SUMS, ceil, effective_slo, floor, row_sums, slice_of};
use super::{Arg, Where};
use crate::db::{Backend, RowExt, Store, on_pool};
use crate::error::StoreError;
use crate::model::{RecordFilter, SeriesOf, SeriesPoint, UsageBy};
use crate::rollups::{self, Histogram, Reading};

/// One hour of one group being read: its usage, and its TTFT histogram.
type Hour = (Reading, Histogram);

/// Which series a read's rows belong to.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    Groups,
    Total,
}

impl Store {
    /// Usage hour by hour, from the rollups alone: for each hour that overlaps
    /// the window (`since` and `until` widened to whole hours) and each group
    /// `by`, what [`Store::usage`] reports, with failovers, cache hits and the
    /// time to first token. Oldest hour first, the busiest group first within
    /// it. The percentiles are read to the histograms' bucket. A status filter
    /// is refused: the rollups do not keep it.
    pub async fn usage_series(
        &self,
        f: &RecordFilter,
        by: UsageBy,
        slo_ms: u64,
    ) -> Result<Vec<SeriesPoint>, StoreError> {
        let mut out = self.series(f, by, slo_ms, None).await?;
        Ok(out.remove(&Target::Groups).unwrap_or_default())
    }

    /// [`Store::usage_series`] of the groups `groups` only (`None`: records
    /// without a value of `by`), and of all the traffic `f` matches (points
    /// whose `key` is `None`), read in one snapshot: what a chart of the
    /// busiest groups and "the rest" needs, without reading every group's
    /// hours.
    pub async fn usage_series_of(
        &self,
        f: &RecordFilter,
        by: UsageBy,
        slo_ms: u64,
        groups: &[Option<String>],
    ) -> Result<SeriesOf, StoreError> {
        let mut out = self.series(f, by, slo_ms, Some(groups)).await?;
        Ok(SeriesOf {
            groups: out.remove(&Target::Groups).unwrap_or_default(),
            total: out.remove(&Target::Total).unwrap_or_default(),
        })
    }

    /// Both: every group's hours (`only: None`), or the groups `only` and the
    /// total.
    async fn series(
        &self,
        f: &RecordFilter,
        by: UsageBy,
        slo_ms: u64,
        only: Option<&[Option<String>]>,
    ) -> Result<HashMap<Target, Vec<SeriesPoint>>, StoreError> {
        if f.status.is_some() {
            return Err(StoreError::Invalid("the hourly series keeps no status".into()));
        }
        let slo = effective_slo(slo_ms);
        let from = f.since_ms.map(|t| floor(t, rollups::HOUR_MS));
        let to = f.until_ms.map(|t| ceil(t, rollups::HOUR_MS));
        let mut reads = Vec::new();
        match only {
            None => reads.push(read_of(f, Some(by), None, from, to, Target::Groups)),
            Some(groups) => {
                if !groups.is_empty() {
                    reads.push(read_of(f, Some(by), Some(groups), from, to, Target::Groups));
                }
                reads.push(read_of(f, None, None, from, to, Target::Total));
            }
        }
        let backend = self.backend();
        let mut hours: HashMap<(Target, i64, String), Hour> = HashMap::new();
        on_pool!(self, |p| {
            let mut tx = p.begin().await?;
            if backend == Backend::Postgres {
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await?;
            }
            for (w, sql, target) in reads {
                for row in w.bind(sqlx::query(AssertSqlSafe(sql))).fetch_all(&mut *tx).await? {
                    let at = (target, row.col::<i64>("hour_ms")?, row.col::<String>("k")?);
                    let h = hours.entry(at).or_default();
                    h.0.sums += row_sums(&row)?;
                    h.0.buckets.merge(&Histogram::decode(&row.col::<String>("latency")?)?);
                    h.1.merge(&Histogram::decode(&row.col::<String>("ttft")?)?);
                }
            }
            tx.commit().await?;
        });
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        let mut out: HashMap<Target, Vec<SeriesPoint>> = HashMap::new();
        for ((target, hour_ms, k), (reading, ttft)) in hours {
            if reading.sums.requests == 0 {
                continue;
            }
            let (failovers, cache_hits) = (reading.sums.failovers, reading.sums.cache_hits);
            let key = (target == Target::Groups && !k.is_empty()).then_some(k);
            out.entry(target).or_default().push(SeriesPoint {
                hour_ms,
                usage: reading.row(key, slo),
                failovers: count(failovers),
                cache_hits: count(cache_hits),
                ttft_p50_ms: ttft.percentile(50),
                ttft_p95_ms: ttft.percentile(95),
            });
        }
        for points in out.values_mut() {
            points.sort_by(|a, b| {
                (a.hour_ms, std::cmp::Reverse(a.usage.requests), &a.usage.key).cmp(&(
                    b.hour_ms,
                    std::cmp::Reverse(b.usage.requests),
                    &b.usage.key,
                ))
            });
        }
        Ok(out)
    }
}

/// The read of the hours from `from` to `to` grouped `by` (`None`: all of the
/// traffic as one group), `only` those groups when given.
fn read_of(
    f: &RecordFilter,
    by: Option<UsageBy>,
    only: Option<&[Option<String>]>,
    from: Option<i64>,
    to: Option<i64>,
    target: Target,
) -> (Where, String, Target) {
    // A group without a value is stored as ''.
    let only: Option<Vec<String>> =
        only.map(|gs| gs.iter().map(|g| g.clone().unwrap_or_default()).collect());
    let (mut w, table, hour, key) = match slice_of(f, by) {
        Some((dimension, value)) => (
            Where::slices(rollups::HOUR_MS, dimension, value, from, to),
            "request_rollup_slices",
            "start_ms",
            "value",
        ),
        None => (
            Where::rollups(f, from, to),
            "request_rollups",
            "hour_ms",
            by.map_or("''", rollups::column),
        ),
    };
    if let Some(values) = &only {
        let cond = in_list(&mut w, key, values);
        w.and(vec![cond]);
    }
    let sql = format!(
        "SELECT {hour} AS hour_ms, {key} AS k, {ROW_SUMS}, latency, ttft FROM {table}{}",
        w.sql
    );
    (w, sql, target)
}

/// `column IN (…)` of `values`, bound; never-true for none.
fn in_list(w: &mut Where, column: &str, values: &[String]) -> String {
    if values.is_empty() {
        return "1 = 0".to_owned();
    }
    let marks: Vec<String> = values.iter().map(|v| w.arg(Arg::Text(v.clone()))).collect();
    format!("{column} IN ({})", marks.join(", "))
}
