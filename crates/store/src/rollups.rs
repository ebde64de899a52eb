//! Rollups of the request records, kept as records are written, in the
//! insert's own transaction, so that usage and analytics read a few rows per
//! hour and group instead of every record. Two tables, one row shape: a key,
//! the sums ([`Sums`]) and two latency histograms inline ([`Histogram`], as
//! text: the whole request's time and the time to first token).
//!
//! - **The fine rollups** (`request_rollups`, migrations 5 and 11): a row per
//!   hour and (model, provider, project, user, key prefix); a dimension a
//!   record has none of is `''`. What a report filtered on one dimension and
//!   grouped by another reads.
//! - **Slices** (`request_rollup_slices`, migration 11): the same records by
//!   one dimension at a time (model, provider, project, user, key, or none:
//!   all the traffic), by the hour and by the UTC day. The fine rows barely
//!   compress when there are hundreds of keys (about seven records a row); a
//!   slice holds a row per value per hour or day, so unfiltered reports over a
//!   month read thousands of rows, not millions.
//! - **Only what the insert took counts**: the record insert says which ids it
//!   stored (`RETURNING id`), so a replayed spill file, or a record repeated in
//!   its batch, adds nothing twice.
//! - **Latencies are histograms**, a count per bucket, 8 buckets per doubling
//!   of milliseconds ([`bucket`]). A percentile read from them is the upper
//!   bound of its bucket: never below the exact one, and less than 9.1% above
//!   it. An SLO is judged by bucket: a request counts as over it when its
//!   bucket is above the SLO's.
//! - **Writers on several instances add up exactly.** Sums are added by the
//!   upsert (`… DO UPDATE SET x = x + excluded.x`); a histogram is not a sum
//!   SQL can add, so the first upsert also returns the histograms as stored
//!   (the row now locked on PostgreSQL until the commit, so no other writer
//!   reads it in between; SQLite's write lock is already held), and a second
//!   writes them back merged ([`Table::add_sql`], [`Table::set_sql`]).
//!
//! A batch's records are summed in memory first ([`Rollup`]), so each row is
//! one row of one upsert statement (PostgreSQL refuses a statement that
//! updates a row twice), rows in key order (writers lock rows in one order, so
//! two PostgreSQL transactions never wait on each other in a cycle).

use std::collections::{BTreeMap, HashMap};

use crate::error::StoreError;
use crate::model::{UsageBy, UsageRow};

/// An hour, in milliseconds.
pub(crate) const HOUR_MS: i64 = 3_600_000;
/// A day, in milliseconds (slices' days are UTC days).
pub(crate) const DAY_MS: i64 = 86_400_000;

/// Buckets per doubling of milliseconds.
const PER_DOUBLING: f64 = 8.0;

/// The last bucket: everything from about 2^25 ms (9 hours) on.
const MAX_BUCKET: i64 = 200;

/// The histogram bucket of `ms`: 0 for 0 ms, then `1 + floor(8 log2 ms)`.
pub(crate) fn bucket(ms: i64) -> i64 {
    if ms <= 0 {
        return 0;
    }
    // Exact for the integers a duration takes (f64 holds them to 2^53).
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let b = 1 + (PER_DOUBLING * (ms as f64).log2()).floor() as i64;
    b.min(MAX_BUCKET)
}

/// The most milliseconds `bucket` holds (for the last bucket, the least).
pub(crate) fn upper(bucket: i64) -> u64 {
    if bucket <= 0 {
        return 0;
    }
    if bucket >= MAX_BUCKET {
        return upper(MAX_BUCKET - 1) + 1;
    }
    // The bucket holds `2^((b-1)/8) <= ms < 2^(b/8)`.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let next = 2f64.powf(bucket as f64 / PER_DOUBLING).ceil() as u64;
    next.saturating_sub(1).max(1)
}

/// One group of a rollup: its hour and dimensions, ordered as the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Group<'a> {
    pub hour_ms: i64,
    pub model: &'a str,
    pub provider: &'a str,
    pub project: &'a str,
    pub user: &'a str,
    pub key_prefix: &'a str,
}

impl<'a> Group<'a> {
    /// The slices' dimensions and this group's value of each; `""` (no
    /// dimension) is all the traffic.
    fn values(&self) -> [(&'static str, &'a str); 6] {
        [
            ("", ""),
            (dimension(UsageBy::Model), self.model),
            (dimension(UsageBy::Provider), self.provider),
            (dimension(UsageBy::Project), self.project),
            (dimension(UsageBy::User), self.user),
            (dimension(UsageBy::Key), self.key_prefix),
        ]
    }
}

/// A group's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sums {
    pub requests: i64,
    pub errors: i64,
    pub failovers: i64,
    pub cache_hits: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub costed: i64,
    pub cost_usd: f64,
    pub total_ms_sum: i64,
    pub ttft_count: i64,
    pub ttft_ms_sum: i64,
}

impl std::ops::AddAssign for Sums {
    fn add_assign(&mut self, add: Sums) {
        self.requests += add.requests;
        self.errors += add.errors;
        self.failovers += add.failovers;
        self.cache_hits += add.cache_hits;
        self.input_tokens += add.input_tokens;
        self.output_tokens += add.output_tokens;
        self.cache_read_tokens += add.cache_read_tokens;
        self.cache_write_tokens += add.cache_write_tokens;
        self.costed += add.costed;
        self.cost_usd += add.cost_usd;
        self.total_ms_sum += add.total_ms_sum;
        self.ttft_count += add.ttft_count;
        self.ttft_ms_sum += add.ttft_ms_sum;
    }
}

/// What one record adds: its group, its sums, and its latencies
/// (`ttft_ms` when it has one).
pub(crate) struct Entry<'a> {
    pub group: Group<'a>,
    pub sums: Sums,
    pub total_ms: i64,
    pub ttft_ms: Option<i64>,
}

/// One slice: the hour or day starting at `start_ms`, and one dimension's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Slice<'a> {
    pub span_ms: i64,
    pub dimension: &'static str,
    pub start_ms: i64,
    pub value: &'a str,
}

/// A row's sums and histograms.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Sliced {
    pub sums: Sums,
    pub latency: Histogram,
    pub ttft: Histogram,
}

impl Sliced {
    fn merge(&mut self, other: &Sliced) {
        self.sums += other.sums;
        self.latency.merge(&other.latency);
        self.ttft.merge(&other.ttft);
    }

    fn add(&mut self, e: &Entry<'_>) {
        self.sums += e.sums;
        self.latency.add(bucket(e.total_ms), 1);
        if let Some(ttft) = e.ttft_ms {
            self.ttft.add(bucket(ttft), 1);
        }
    }
}

/// A row's key, as a table binds it: its integer columns, then its text ones
/// (the order of [`Table::ints`] and [`Table::texts`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct RowKey<'a> {
    pub ints: Vec<i64>,
    pub texts: Vec<&'a str>,
}

impl RowKey<'_> {
    /// The key as one string (a map key matching [`Table::stored_key`]).
    pub fn joined(&self) -> String {
        joined(&self.ints, self.texts.iter().copied())
    }
}

fn joined<'s>(ints: &[i64], texts: impl Iterator<Item = &'s str>) -> String {
    let mut out: Vec<String> = ints.iter().map(i64::to_string).collect();
    out.extend(texts.map(str::to_owned));
    out.join("\u{1f}")
}

/// A batch's records, summed by fine row and by slice, each in key order.
#[derive(Debug, Default)]
pub(crate) struct Rollup<'a> {
    pub fine: Vec<(RowKey<'a>, Sliced)>,
    pub slices: Vec<(RowKey<'a>, Sliced)>,
}

impl<'a> Rollup<'a> {
    /// Sums `entries`.
    pub fn of(entries: impl IntoIterator<Item = Entry<'a>>) -> Self {
        let mut fine: HashMap<Group<'a>, Sliced> = HashMap::new();
        for e in entries {
            fine.entry(e.group).or_default().add(&e);
        }
        // A slice is a sum of fine rows: each adds to the slices it falls in
        // (a batch has far fewer fine rows than records).
        let mut slices: HashMap<Slice<'a>, Sliced> = HashMap::new();
        for (group, row) in &fine {
            for span_ms in [HOUR_MS, DAY_MS] {
                let start_ms = group.hour_ms - group.hour_ms.rem_euclid(span_ms);
                for (dimension, value) in group.values() {
                    slices
                        .entry(Slice { span_ms, dimension, start_ms, value })
                        .or_default()
                        .merge(row);
                }
            }
        }
        let mut fine: Vec<(RowKey<'a>, Sliced)> = fine
            .into_iter()
            .map(|(g, v)| {
                let texts = vec![g.model, g.provider, g.project, g.user, g.key_prefix];
                (RowKey { ints: vec![g.hour_ms], texts }, v)
            })
            .collect();
        fine.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut slices: Vec<(RowKey<'a>, Sliced)> = slices
            .into_iter()
            .map(|(s, v)| {
                (RowKey { ints: vec![s.span_ms, s.start_ms], texts: vec![s.dimension, s.value] }, v)
            })
            .collect();
        slices.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Rollup { fine, slices }
    }
}

/// The sums' columns, after a row's key.
const SUMS: [&str; 13] = [
    "requests",
    "errors",
    "failovers",
    "cache_hits",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "costed",
    "cost_usd",
    "total_ms_sum",
    "ttft_count",
    "ttft_ms_sum",
];

/// A rollup table: its key's columns, integers first, as [`RowKey`] holds them.
pub(crate) struct Table {
    pub name: &'static str,
    pub ints: &'static [&'static str],
    pub texts: &'static [&'static str],
    add: &'static crate::records::Statements,
    set: &'static crate::records::Statements,
}

static FINE_ADD: crate::records::Statements = crate::records::Statements::new();
static FINE_SET: crate::records::Statements = crate::records::Statements::new();
static SLICES_ADD: crate::records::Statements = crate::records::Statements::new();
static SLICES_SET: crate::records::Statements = crate::records::Statements::new();

/// `request_rollups`.
pub(crate) const FINE: Table = Table {
    name: "request_rollups",
    ints: &["hour_ms"],
    texts: &["model", "provider", "project_id", "user_id", "key_prefix"],
    add: &FINE_ADD,
    set: &FINE_SET,
};

/// `request_rollup_slices`.
pub(crate) const SLICES: Table = Table {
    name: "request_rollup_slices",
    ints: &["span_ms", "start_ms"],
    texts: &["dimension", "value"],
    add: &SLICES_ADD,
    set: &SLICES_SET,
};

impl Table {
    /// Columns per row: the key's, the sums, the two histograms.
    pub fn columns(&self) -> usize {
        self.ints.len() + self.texts.len() + SUMS.len() + 2
    }

    fn key(&self) -> String {
        let mut cols: Vec<&str> = self.ints.to_vec();
        cols.extend(self.texts);
        cols.join(", ")
    }

    fn insert(&self, sqlite: bool, rows: usize, tail: &str) -> String {
        crate::records::values_sql(
            &format!(
                "INSERT INTO {} ({}, {}, latency, ttft)",
                self.name,
                self.key(),
                SUMS.join(", ")
            ),
            self.columns(),
            rows,
            sqlite,
            &format!(" ON CONFLICT ({}) DO UPDATE SET {tail}", self.key()),
        )
    }

    /// The first upsert of `rows` rows: adds their sums (their histograms are
    /// bound empty and left alone) and returns each row's key and histograms
    /// as stored, empty for a row it made.
    pub fn add_sql(&self, sqlite: bool, rows: usize) -> &'static str {
        self.add.get(sqlite, rows, |rows| {
            let adds: Vec<String> =
                SUMS.iter().map(|c| format!("{c} = {}.{c} + excluded.{c}", self.name)).collect();
            let tail = format!("{} RETURNING {}, latency, ttft", adds.join(", "), self.key());
            self.insert(sqlite, rows, &tail)
        })
    }

    /// The second: writes `rows` rows' merged histograms (every row exists by
    /// now; the sums bound are the batch's, as the first upsert added them).
    pub fn set_sql(&self, sqlite: bool, rows: usize) -> &'static str {
        self.set.get(sqlite, rows, |rows| {
            self.insert(sqlite, rows, "latency = excluded.latency, ttft = excluded.ttft")
        })
    }

    /// The key of a row the first upsert returned, as [`RowKey::joined`].
    pub fn stored_key(&self, row: &impl crate::db::RowExt) -> Result<String, StoreError> {
        let ints = self.ints.iter().map(|c| row.col::<i64>(c)).collect::<Result<Vec<_>, _>>()?;
        let texts =
            self.texts.iter().map(|c| row.col::<String>(c)).collect::<Result<Vec<_>, _>>()?;
        Ok(joined(&ints, texts.iter().map(String::as_str)))
    }
}

/// The slices' dimension of a usage grouping (`""`: all the traffic).
pub(crate) fn dimension(by: UsageBy) -> &'static str {
    match by {
        UsageBy::User => "user",
        UsageBy::Project => "project",
        UsageBy::Model => "model",
        UsageBy::Provider => "provider",
        UsageBy::Key => "key",
    }
}

/// The rollup column a usage grouping reads.
pub(crate) fn column(by: UsageBy) -> &'static str {
    match by {
        UsageBy::User => "user_id",
        UsageBy::Project => "project_id",
        UsageBy::Model => "model",
        UsageBy::Provider => "provider",
        UsageBy::Key => "key_prefix",
    }
}

/// A latency histogram: requests per bucket.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Histogram(BTreeMap<i64, i64>);

impl Histogram {
    /// Adds `n` requests to `bucket`.
    pub fn add(&mut self, bucket: i64, n: i64) {
        if n != 0 {
            *self.0.entry(bucket).or_default() += n;
        }
    }

    /// Adds `other`'s requests.
    pub fn merge(&mut self, other: &Histogram) {
        for (b, n) in &other.0 {
            self.add(*b, *n);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Requests counted.
    pub fn count(&self) -> i64 {
        self.0.values().sum()
    }

    /// Requests in buckets above `bucket`.
    pub fn above(&self, bucket: i64) -> i64 {
        self.0.range(bucket + 1..).map(|(_, n)| n).sum()
    }

    /// The nearest-rank percentile `pct`, as its bucket's upper bound; `None`
    /// when it is empty.
    pub fn percentile(&self, pct: u64) -> Option<u64> {
        let rank = crate::records::nearest_rank(pct, u64::try_from(self.count()).ok()?);
        let rank = i64::try_from(rank).unwrap_or(i64::MAX);
        let mut seen = 0;
        for (b, c) in &self.0 {
            seen += c;
            if seen >= rank {
                return Some(upper(*b));
            }
        }
        None
    }

    /// The stored form: `bucket:count` pairs by bucket, separated by spaces.
    pub fn encode(&self) -> String {
        use std::fmt::Write;
        let mut out = String::with_capacity(self.0.len() * 7);
        for (b, n) in &self.0 {
            if !out.is_empty() {
                out.push(' ');
            }
            let _ = write!(out, "{b}:{n}");
        }
        out
    }

    /// Reads the stored form, in any order, a bucket repeated adding up (as
    /// SQLite's `group_concat` in migration 11 may leave it).
    pub fn decode(text: &str) -> Result<Histogram, StoreError> {
        let mut h = Histogram::default();
        for pair in text.split_ascii_whitespace() {
            let cell = pair
                .split_once(':')
                .and_then(|(b, n)| Some((b.parse::<i64>().ok()?, n.parse::<i64>().ok()?)));
            let Some((b, n)) = cell else {
                return Err(StoreError::Corrupt(format!("latency histogram: {pair:?}")));
            };
            h.add(b, n);
        }
        Ok(h)
    }
}

/// One group of a usage, being summed from the rollups and from records.
#[derive(Debug, Default)]
pub(crate) struct Reading {
    pub sums: Sums,
    /// Requests per bucket of the whole request's time (from the rollups).
    pub buckets: Histogram,
    /// The whole request's time of each record read (the window's partial hours).
    pub values: Vec<i64>,
}

impl Reading {
    /// The usage row of group `key`: its percentiles and SLO share exact when
    /// only records were read, else read from its histogram, the records'
    /// times added in.
    pub fn row(mut self, key: Option<String>, slo_ms: u64) -> UsageRow {
        if self.buckets.is_empty() {
            return self.exact_row(key, slo_ms);
        }
        for ms in std::mem::take(&mut self.values) {
            self.buckets.add(bucket(ms), 1);
        }
        let n = self.buckets.count();
        let at_rank = |pct: u64| self.buckets.percentile(pct).unwrap_or(0);
        let over = self.buckets.above(bucket(i64::try_from(slo_ms).unwrap_or(i64::MAX)));
        #[allow(clippy::cast_precision_loss)]
        let share = if n > 0 { over as f64 / n as f64 } else { 0.0 };
        self.usage_row(key, at_rank(50), at_rank(95), share)
    }

    /// Nearest-rank percentiles and the SLO share of the records' times.
    fn exact_row(mut self, key: Option<String>, slo_ms: u64) -> UsageRow {
        self.values.sort_unstable();
        let n = u64::try_from(self.values.len()).unwrap_or(0);
        let at_rank = |pct: u64| {
            let rank = crate::records::nearest_rank(pct, n);
            let at = usize::try_from(rank).unwrap_or(usize::MAX).saturating_sub(1);
            self.values.get(at).map_or(0, |v| u64::try_from(*v).unwrap_or(0))
        };
        let slo = i64::try_from(slo_ms).unwrap_or(i64::MAX);
        let over = self.values.iter().filter(|v| **v > slo).count();
        #[allow(clippy::cast_precision_loss)]
        let share = if n > 0 { over as f64 / n as f64 } else { 0.0 };
        let (p50, p95) = (at_rank(50), at_rank(95));
        self.usage_row(key, p50, p95, share)
    }

    fn usage_row(&self, key: Option<String>, p50_ms: u64, p95_ms: u64, share: f64) -> UsageRow {
        let s = self.sums;
        let count = |v: i64| u64::try_from(v).unwrap_or(0);
        UsageRow {
            key,
            requests: count(s.requests),
            errors: count(s.errors),
            input_tokens: count(s.input_tokens),
            output_tokens: count(s.output_tokens),
            cache_read_tokens: count(s.cache_read_tokens),
            cache_write_tokens: count(s.cache_write_tokens),
            cost_usd: (s.costed > 0).then_some(s.cost_usd),
            cost_complete: s.costed == s.requests,
            p50_ms,
            p95_ms,
            slo_breach_share: share,
        }
    }
}

#[cfg(test)]
#[path = "rollups_tests.rs"]
mod tests;
