//! Usage reports over the records: from the rollups for a window's whole
//! hours and from the records for its partial ones ([`Store::usage`]), or from
//! every record ([`Store::usage_scan`]).

use std::collections::HashMap;

use futures_util::TryStreamExt;
use sqlx::AssertSqlSafe;

use super::{Arg, Where, to_u64};
use crate::db::{Backend, RowExt, Store, on_pool};
use crate::error::StoreError;
use crate::model::{RecordFilter, UsageBy, UsageRow};
use crate::rollups;

/// The SLO `usage` measures against when given 0.
pub const DEFAULT_SLO_MS: u64 = 5_000;
/// `usage` clamps its SLO into this range.
pub const SLO_RANGE_MS: std::ops::RangeInclusive<u64> = 500..=60_000;

/// The sums of a rollup row (fine or slice), as [`row_sums`] reads them.
pub(super) const ROW_SUMS: &str = "requests, errors, failovers, cache_hits, input_tokens, \
    output_tokens, cache_read_tokens, cache_write_tokens, costed, cost_usd AS cost";

/// A row of [`ROW_SUMS`].
pub(super) fn row_sums(row: &impl RowExt) -> Result<rollups::Sums, StoreError> {
    Ok(rollups::Sums {
        requests: row.col("requests")?,
        errors: row.col("errors")?,
        failovers: row.col("failovers")?,
        cache_hits: row.col("cache_hits")?,
        input_tokens: row.col("input_tokens")?,
        output_tokens: row.col("output_tokens")?,
        cache_read_tokens: row.col("cache_read_tokens")?,
        cache_write_tokens: row.col("cache_write_tokens")?,
        costed: row.col("costed")?,
        cost_usd: row.col("cost")?,
        ..rollups::Sums::default()
    })
}

impl Store {
    /// [`Store::usage`] from every matching record, the rollups unread:
    /// percentiles exact (nearest rank over `total_ms`, from one ordered pass;
    /// memory per group, not per record), at the cost of a scan of the window.
    pub async fn usage_scan(
        &self,
        f: &RecordFilter,
        by: UsageBy,
        slo_ms: u64,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let slo = effective_slo(slo_ms);
        let key = record_column(by);
        let mut w = Where::new(f);
        let slo_arg = w.arg(Arg::Int(i64::try_from(slo).unwrap_or(i64::MAX)));
        let sums = format!(
            "SELECT {key} AS k, COUNT(*) AS requests, \
             SUM(CASE WHEN status >= 400 OR error_code IS NOT NULL THEN 1 ELSE 0 END) AS errors, \
             CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
             CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
             CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens, \
             CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens, \
             COUNT(cost_usd) AS costed, SUM(cost_usd) AS cost, \
             SUM(CASE WHEN total_ms > {slo_arg} THEN 1 ELSE 0 END) AS breaches \
             FROM request_records{} GROUP BY {key}",
            w.sql
        );
        let w2 = Where::new(f);
        let times =
            format!("SELECT {key} AS k, total_ms FROM request_records{} ORDER BY total_ms", w2.sql);
        let backend = self.backend();
        on_pool!(self, |p| {
            let mut tx = p.begin().await?;
            if backend == Backend::Postgres {
                // Both passes see one snapshot.
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await?;
            }
            let rows = w.bind(sqlx::query(AssertSqlSafe(sums))).fetch_all(&mut *tx).await?;
            let mut groups = Vec::with_capacity(rows.len());
            let mut index = HashMap::with_capacity(rows.len());
            for row in &rows {
                let g = group_from(row)?;
                index.insert(g.row.key.clone(), groups.len());
                groups.push(g);
            }
            let mut stream = w2.bind(sqlx::query(AssertSqlSafe(times))).fetch(&mut *tx);
            while let Some(row) = stream.try_next().await? {
                let k: Option<String> = row.col("k")?;
                let ms = to_u64(row.col::<i64>("total_ms")?, "total_ms")?;
                if let Some(g) = index.get(&k).and_then(|&i| groups.get_mut(i)) {
                    g.see(ms);
                }
            }
            drop(stream);
            tx.commit().await?;
            let mut out: Vec<UsageRow> = groups.into_iter().map(|g| g.row).collect();
            out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.key.cmp(&b.key)));
            Ok(out)
        })
    }

    /// Usage of the records matching `f` (its limit ignored), grouped `by`, the
    /// busiest group first. `slo_ms` is clamped into [`SLO_RANGE_MS`]; 0 means
    /// [`DEFAULT_SLO_MS`].
    ///
    /// The window's whole hours are read from the rollups, the partial hours at
    /// its ends from their records (at most two hours of them). Unfiltered, or
    /// filtered only on the grouping's own dimension, the rollups read are the
    /// slices: the window's whole UTC days from the daily ones, its other whole
    /// hours from the hourly ones (a row per group per day or hour, however many
    /// keys); otherwise the fine rollups (a row per hour and combination of
    /// model, provider, project, user and key). Counts, tokens and costs are
    /// exact. Percentiles and the SLO share are exact when the window holds no
    /// whole hour, else read to the latency histograms' bucket (never below the
    /// exact value, less than 9.1% above; see `rollups`). The model is the
    /// resolved one, else the requested one. A filter on the status, which the
    /// rollups do not keep, scans every record of the window
    /// ([`Store::usage_scan`]).
    pub async fn usage(
        &self,
        f: &RecordFilter,
        by: UsageBy,
        slo_ms: u64,
    ) -> Result<Vec<UsageRow>, StoreError> {
        let slo = effective_slo(slo_ms);
        // The whole hours: from the first that starts in the window, to the
        // end of the last that ends in it.
        let from = f.since_ms.map(|t| ceil(t, rollups::HOUR_MS));
        let to = f.until_ms.map(|t| floor(t, rollups::HOUR_MS));
        if f.status.is_some() || matches!((from, to), (Some(a), Some(b)) if a >= b) {
            return self.usage_scan(f, by, slo_ms).await;
        }
        // Rows with their sums and histograms: slices where they answer,
        // else the fine rollups.
        let mut reads: Vec<(Where, String)> = Vec::new();
        if let Some((dimension, value)) = slice_of(f, Some(by)) {
            for (span, lo, hi) in slice_ranges(from, to) {
                let w = Where::slices(span, dimension, value, lo, hi);
                let sql = format!(
                    "SELECT value AS k, {ROW_SUMS}, latency FROM request_rollup_slices{}",
                    w.sql
                );
                reads.push((w, sql));
            }
        } else {
            let w = Where::rollups(f, from, to);
            let sql = format!(
                "SELECT {} AS k, {ROW_SUMS}, latency FROM request_rollups{}",
                rollups::column(by),
                w.sql
            );
            reads.push((w, sql));
        }
        // The partial hours at the ends, from their records.
        let ends: Vec<(i64, i64)> = [(f.since_ms, from), (to, f.until_ms)]
            .into_iter()
            .filter_map(|(a, b)| Some((a?, b?)).filter(|(a, b)| a < b))
            .collect();
        let edges = Where::edges(f, &ends).map(|e| {
            let raw = record_column(by);
            let sql = format!(
                "SELECT {raw} AS k, status, error_code, input_tokens, output_tokens, \
                 cache_read_tokens, cache_write_tokens, cost_usd, total_ms \
                 FROM request_records{}",
                e.sql
            );
            (e, sql)
        });
        let backend = self.backend();
        let mut groups: HashMap<Option<String>, rollups::Reading> = HashMap::new();
        let named = |k: String| (!k.is_empty()).then_some(k);
        on_pool!(self, |p| {
            let mut tx = p.begin().await?;
            if backend == Backend::Postgres {
                // Every read sees one snapshot.
                sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .execute(&mut *tx)
                    .await?;
            }
            for (w, sql) in reads {
                for row in w.bind(sqlx::query(AssertSqlSafe(sql))).fetch_all(&mut *tx).await? {
                    let g = groups.entry(named(row.col::<String>("k")?)).or_default();
                    g.sums += row_sums(&row)?;
                    g.buckets.merge(&rollups::Histogram::decode(&row.col::<String>("latency")?)?);
                }
            }
            if let Some((e, sql)) = edges {
                let mut stream = e.bind(sqlx::query(AssertSqlSafe(sql))).fetch(&mut *tx);
                while let Some(row) = stream.try_next().await? {
                    let g = groups.entry(row.col::<Option<String>>("k")?).or_default();
                    let error = row.col::<i32>("status")? >= 400
                        || row.col::<Option<String>>("error_code")?.is_some();
                    let known = |v: Option<i64>| v.unwrap_or(0);
                    let cost = row.col::<Option<f64>>("cost_usd")?;
                    g.sums += rollups::Sums {
                        requests: 1,
                        errors: i64::from(error),
                        input_tokens: known(row.col("input_tokens")?),
                        output_tokens: known(row.col("output_tokens")?),
                        cache_read_tokens: known(row.col("cache_read_tokens")?),
                        cache_write_tokens: known(row.col("cache_write_tokens")?),
                        costed: i64::from(cost.is_some()),
                        cost_usd: cost.unwrap_or(0.0),
                        ..rollups::Sums::default()
                    };
                    g.values.push(row.col("total_ms")?);
                }
            }
            tx.commit().await?;
        });
        let mut out: Vec<UsageRow> = groups
            .into_iter()
            .filter(|(_, g)| g.sums.requests > 0)
            .map(|(k, g)| g.row(k, slo))
            .collect();
        out.sort_by(|a, b| b.requests.cmp(&a.requests).then_with(|| a.key.cmp(&b.key)));
        Ok(out)
    }
}

/// `slo_ms` as reports apply it: 0 is [`DEFAULT_SLO_MS`], clamped into
/// [`SLO_RANGE_MS`].
pub(super) fn effective_slo(slo_ms: u64) -> u64 {
    if slo_ms == 0 { DEFAULT_SLO_MS } else { slo_ms }
        .clamp(*SLO_RANGE_MS.start(), *SLO_RANGE_MS.end())
}

/// `t` down to a multiple of `span`.
pub(super) fn floor(t: i64, span: i64) -> i64 {
    t - t.rem_euclid(span)
}

/// `t` up to a multiple of `span`.
pub(super) fn ceil(t: i64, span: i64) -> i64 {
    if floor(t, span) == t { t } else { floor(t, span) + span }
}

/// The slice that answers a read filtered by `f` and grouped `by` (`None`:
/// all of it): its dimension, and the value `f` holds it to. `None` when
/// `f` constrains a dimension other than the grouping's (only the fine
/// rollups hold combinations), or constrains two.
pub(super) fn slice_of(
    f: &RecordFilter,
    by: Option<UsageBy>,
) -> Option<(&'static str, Option<&str>)> {
    let filters = [
        (UsageBy::User, &f.user),
        (UsageBy::Project, &f.project),
        (UsageBy::Model, &f.model),
        (UsageBy::Provider, &f.provider),
        (UsageBy::Key, &f.key_prefix),
    ];
    let mut set = filters.iter().filter_map(|(d, v)| Some((*d, v.as_deref()?)));
    let first = set.next();
    if set.next().is_some() {
        return None;
    }
    match (by, first) {
        (None, None) => Some(("", None)),
        (Some(by), None) => Some((rollups::dimension(by), None)),
        (None, Some((d, v))) => Some((rollups::dimension(d), Some(v))),
        (Some(by), Some((d, v))) if by == d => Some((rollups::dimension(d), Some(v))),
        (Some(_), Some(_)) => None,
    }
}

/// The slices that cover the whole hours from `from` to `to` (each an hour's
/// start; `None`: unbounded): (span, first start, end), the whole UTC days
/// by the day, the hours around them by the hour. A daily slice holds its day
/// so far, so an open end is read by the day.
pub(super) fn slice_ranges(
    from: Option<i64>,
    to: Option<i64>,
) -> Vec<(i64, Option<i64>, Option<i64>)> {
    let (hour, day) = (rollups::HOUR_MS, rollups::DAY_MS);
    let first_day = from.map(|t| ceil(t, day));
    let last_day = to.map(|t| floor(t, day));
    if let (Some(a), Some(b)) = (first_day, last_day)
        && a >= b
    {
        return vec![(hour, from, to)];
    }
    let mut out = vec![(day, first_day, last_day)];
    if let (Some(a), Some(b)) = (from, first_day)
        && a < b
    {
        out.push((hour, Some(a), Some(b)));
    }
    if let (Some(a), Some(b)) = (last_day, to)
        && a < b
    {
        out.push((hour, Some(a), Some(b)));
    }
    out
}

/// A group being aggregated: its sums from SQL, its percentiles from the ordered
/// pass over `total_ms`.
struct Group {
    row: UsageRow,
    seen: u64,
    rank50: u64,
    rank95: u64,
}

impl Group {
    fn see(&mut self, ms: u64) {
        self.seen += 1;
        if self.seen <= self.rank50 {
            self.row.p50_ms = ms;
        }
        if self.seen <= self.rank95 {
            self.row.p95_ms = ms;
        }
    }
}

/// Nearest rank (1-based) of percentile `pct` among `n` sorted values.
pub(crate) fn nearest_rank(pct: u64, n: u64) -> u64 {
    (pct * n).div_ceil(100).max(1)
}

fn group_from(r: &impl RowExt) -> Result<Group, StoreError> {
    let requests = to_u64(r.col::<i64>("requests")?, "requests")?;
    let sum =
        |c: &str| -> Result<u64, StoreError> { to_u64(r.col::<Option<i64>>(c)?.unwrap_or(0), c) };
    let costed = to_u64(r.col::<i64>("costed")?, "costed")?;
    let breaches = sum("breaches")?;
    let row = UsageRow {
        key: r.col("k")?,
        requests,
        errors: sum("errors")?,
        input_tokens: sum("input_tokens")?,
        output_tokens: sum("output_tokens")?,
        cache_read_tokens: sum("cache_read_tokens")?,
        cache_write_tokens: sum("cache_write_tokens")?,
        cost_usd: if costed == 0 { None } else { r.col::<Option<f64>>("cost")? },
        cost_complete: costed == requests,
        p50_ms: 0,
        p95_ms: 0,
        slo_breach_share: if requests == 0 { 0.0 } else { breaches as f64 / requests as f64 },
    };
    Ok(Group {
        row,
        seen: 0,
        rank50: nearest_rank(50, requests),
        rank95: nearest_rank(95, requests),
    })
}

impl Where {
    /// `f`'s user, project and model on the rollups, over the hours from
    /// `from` to `to` (each an hour's start; `None`: unbounded).
    pub(super) fn rollups(f: &RecordFilter, from: Option<i64>, to: Option<i64>) -> Where {
        let mut w = Where { sql: String::new(), args: Vec::new() };
        let mut conds = Vec::new();
        if let Some(t) = from {
            conds.push(format!("hour_ms >= {}", w.arg(Arg::Int(t))));
        }
        if let Some(t) = to {
            conds.push(format!("hour_ms < {}", w.arg(Arg::Int(t))));
        }
        for (column, value) in [
            ("user_id", &f.user),
            ("project_id", &f.project),
            ("model", &f.model),
            ("provider", &f.provider),
            ("key_prefix", &f.key_prefix),
        ] {
            if let Some(v) = value {
                conds.push(format!("{column} = {}", w.arg(Arg::Text(v.clone()))));
            }
        }
        if !conds.is_empty() {
            w.sql = format!(" WHERE {}", conds.join(" AND "));
        }
        w
    }

    /// The slices of `dimension` (`value`, when given) spanning `span_ms` that
    /// start from `lo` up to `hi` (`None`: unbounded).
    pub(super) fn slices(
        span_ms: i64,
        dimension: &str,
        value: Option<&str>,
        lo: Option<i64>,
        hi: Option<i64>,
    ) -> Where {
        let mut w = Where { sql: String::new(), args: Vec::new() };
        let mut conds = vec![
            format!("span_ms = {}", w.arg(Arg::Int(span_ms))),
            format!("dimension = {}", w.arg(Arg::Text(dimension.to_owned()))),
        ];
        if let Some(t) = lo {
            conds.push(format!("start_ms >= {}", w.arg(Arg::Int(t))));
        }
        if let Some(t) = hi {
            conds.push(format!("start_ms < {}", w.arg(Arg::Int(t))));
        }
        if let Some(v) = value {
            conds.push(format!("value = {}", w.arg(Arg::Text(v.to_owned()))));
        }
        w.sql = format!(" WHERE {}", conds.join(" AND "));
        w
    }

    /// `f`'s user, project and model (as the rollups key it) on the records
    /// of the time ranges `ends`; `None` when there are none.
    fn edges(f: &RecordFilter, ends: &[(i64, i64)]) -> Option<Where> {
        if ends.is_empty() {
            return None;
        }
        let mut w = Where { sql: String::new(), args: Vec::new() };
        let ranges: Vec<String> = ends
            .iter()
            .map(|&(a, b)| {
                let a = w.arg(Arg::Int(a));
                format!("(time_ms >= {a} AND time_ms < {})", w.arg(Arg::Int(b)))
            })
            .collect();
        let mut conds = vec![format!("({})", ranges.join(" OR "))];
        for (column, value) in [
            ("user_id", &f.user),
            ("project_id", &f.project),
            ("COALESCE(resolved_model, requested_model)", &f.model),
            ("served_provider", &f.provider),
            ("key_prefix", &f.key_prefix),
        ] {
            if let Some(v) = value {
                conds.push(format!("{column} = {}", w.arg(Arg::Text(v.clone()))));
            }
        }
        w.sql = format!(" WHERE {}", conds.join(" AND "));
        Some(w)
    }
}

/// The record column a usage grouping reads (the rollups' own is
/// [`rollups::column`]): the same value the rollups key the record by.
pub(super) fn record_column(by: UsageBy) -> &'static str {
    match by {
        UsageBy::User => "user_id",
        UsageBy::Project => "project_id",
        UsageBy::Model => "COALESCE(resolved_model, requested_model)",
        UsageBy::Provider => "served_provider",
        UsageBy::Key => "key_prefix",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = rollups::HOUR_MS;
    const D: i64 = rollups::DAY_MS;

    #[test]
    fn whole_days_are_read_by_the_day_and_the_hours_around_them_by_the_hour() {
        let day = 20_000 * D;
        // Within a day: hours only.
        assert_eq!(
            slice_ranges(Some(day + H), Some(day + 5 * H)),
            [(H, Some(day + H), Some(day + 5 * H))]
        );
        // Across midnight without a whole day: hours only.
        assert_eq!(
            slice_ranges(Some(day + 20 * H), Some(day + D + 3 * H)),
            [(H, Some(day + 20 * H), Some(day + D + 3 * H))]
        );
        // Whole days in the middle, hours at both ends.
        assert_eq!(
            slice_ranges(Some(day + 20 * H), Some(day + 3 * D + 2 * H)),
            [
                (D, Some(day + D), Some(day + 3 * D)),
                (H, Some(day + 20 * H), Some(day + D)),
                (H, Some(day + 3 * D), Some(day + 3 * D + 2 * H)),
            ]
        );
        // Aligned on days: days only.
        assert_eq!(slice_ranges(Some(day), Some(day + 2 * D)), [(D, Some(day), Some(day + 2 * D))]);
        // Open ends: a daily slice holds its day so far.
        assert_eq!(
            slice_ranges(Some(day + 20 * H), None),
            [(D, Some(day + D), None), (H, Some(day + 20 * H), Some(day + D))]
        );
        assert_eq!(slice_ranges(None, None), [(D, None, None)]);
        assert_eq!(
            slice_ranges(None, Some(day + 2 * H)),
            [(D, None, Some(day)), (H, Some(day), Some(day + 2 * H))]
        );
    }

    #[test]
    fn a_slice_answers_a_filter_on_the_grouping_or_on_one_dimension_of_the_total() {
        let none = RecordFilter::default();
        assert_eq!(slice_of(&none, Some(UsageBy::Model)), Some(("model", None)));
        assert_eq!(slice_of(&none, None), Some(("", None)));
        let model = RecordFilter { model: Some("m".into()), ..RecordFilter::default() };
        assert_eq!(slice_of(&model, Some(UsageBy::Model)), Some(("model", Some("m"))));
        assert_eq!(slice_of(&model, None), Some(("model", Some("m"))));
        // Another dimension, or two: the fine rollups.
        assert_eq!(slice_of(&model, Some(UsageBy::Key)), None);
        let two = RecordFilter { project: Some("p".into()), ..model };
        assert_eq!(slice_of(&two, None), None);
        assert_eq!(slice_of(&two, Some(UsageBy::Model)), None);
    }

    #[test]
    fn nearest_rank_matches_the_definition() {
        assert_eq!(nearest_rank(50, 1), 1);
        assert_eq!(nearest_rank(95, 1), 1);
        assert_eq!(nearest_rank(50, 4), 2);
        assert_eq!(nearest_rank(95, 20), 19);
        assert_eq!(nearest_rank(95, 21), 20);
        assert_eq!(nearest_rank(50, 0), 1);
    }
}
