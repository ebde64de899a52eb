//! Request records: batch insert (idempotent on id, the hourly rollups and the
//! logged content kept with it), lookup, filtered listing and retention; usage
//! reports in `records/usage.rs`, content at rest in `records/contents.rs`.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;

use sqlx::AssertSqlSafe;
use switchyard_core::record::{AttemptRecord, RequestRecord};
use switchyard_protocol::Usage;

use crate::db::{Backend, RowExt, SQLITE_BEGIN_WRITE, Store, const_format, on_pool};
use crate::error::StoreError;
use crate::model::RecordFilter;
use crate::rollups::{self, Rollup};

mod contents;
mod retention;
mod series;
mod usage;

pub(crate) use usage::nearest_rank;
pub use usage::{DEFAULT_SLO_MS, SLO_RANGE_MS};

/// The most records one retention statement deletes.
pub const RETENTION_BATCH: i64 = 5_000;

/// Rows per INSERT statement, largest first: a batch is split into statements of
/// these sizes only, so each connection caches at most three prepared inserts.
/// A prepared multi-row insert costs about 3 KB of SQLite memory per row; with any
/// batch length its own statement (as before) a busy gateway cached dozens of
/// them, 14 MB of its heap. 64 rows keep the per-statement overhead amortized.
const INSERT_CHUNKS: [usize; 3] = [64, 8, 1];

/// `rows` cut into slices whose lengths are all in [`INSERT_CHUNKS`].
fn insert_chunks<T>(mut rows: &[T]) -> impl Iterator<Item = &[T]> {
    std::iter::from_fn(move || {
        let size = INSERT_CHUNKS.into_iter().find(|&n| n <= rows.len())?;
        let (chunk, rest) = rows.split_at(size);
        rows = rest;
        Some(chunk)
    })
}

/// Columns per record row in [`RECORD_COLS`].
const RECORD_COL_COUNT: usize = 33;

/// Statements built once per backend and row count (one of [`INSERT_CHUNKS`]):
/// building one per batch cost more than binding its values.
pub(crate) struct Statements([std::sync::OnceLock<String>; 2 * INSERT_CHUNKS.len()]);

impl Statements {
    pub(crate) const fn new() -> Self {
        Statements([const { std::sync::OnceLock::new() }; 2 * INSERT_CHUNKS.len()])
    }

    /// The statement for `rows` rows, `build` making it the first time.
    pub(crate) fn get(
        &'static self,
        sqlite: bool,
        rows: usize,
        build: impl FnOnce(usize) -> String,
    ) -> &'static str {
        let size = INSERT_CHUNKS.iter().position(|&n| n == rows).unwrap_or(INSERT_CHUNKS.len() - 1);
        let slot = usize::from(sqlite) * INSERT_CHUNKS.len() + size;
        let Some(cell) = self.0.get(slot) else { return "" };
        cell.get_or_init(|| build(INSERT_CHUNKS.get(size).copied().unwrap_or(1)))
    }
}

/// `head VALUES (…), (…) tail`: `rows` rows of `cols` placeholders each.
pub(crate) fn values_sql(head: &str, cols: usize, rows: usize, sqlite: bool, tail: &str) -> String {
    use std::fmt::Write;
    let mut sql = format!("{head} VALUES ");
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for col in 0..cols {
            if col > 0 {
                sql.push_str(", ");
            }
            // Plain `?` for SQLite: sqlx looks up the name of every
            // numbered one (`?NNN`) at each bind, which costs more than the insert.
            if sqlite {
                sql.push('?');
            } else {
                let _ = write!(sql, "${}", row * cols + col + 1);
            }
        }
        sql.push(')');
    }
    sql.push_str(tail);
    sql
}

/// The INSERT for `rows` records (one of [`INSERT_CHUNKS`]); with `returning`,
/// it says which ids it took, for the rollups.
fn insert_sql(sqlite: bool, rows: usize, returning: bool) -> &'static str {
    static SQL: Statements = Statements::new();
    static RETURNING: Statements = Statements::new();
    let statements = if returning { &RETURNING } else { &SQL };
    statements.get(sqlite, rows, |rows| {
        let conflict = if sqlite { SQLITE_RECORD_CONFLICT } else { POSTGRES_RECORD_CONFLICT };
        values_sql(
            &format!("INSERT INTO request_records ({RECORD_COLS})"),
            RECORD_COL_COUNT,
            rows,
            sqlite,
            &if returning { format!("{conflict} RETURNING id") } else { conflict.to_owned() },
        )
    })
}

/// A record already stored is skipped (and, asked, not returned: not counted
/// again in the rollups). PostgreSQL's key holds the partition key too
/// (migration 8): a replayed record carries its time, so it still meets its
/// stored self.
const SQLITE_RECORD_CONFLICT: &str = " ON CONFLICT (id) DO NOTHING";
const POSTGRES_RECORD_CONFLICT: &str = " ON CONFLICT (id, time_ms) DO NOTHING";

const RECORD_COLS: &str = "id, time_ms, user_id, key_prefix, project_id, client_format, \
    requested_model, resolved_model, route_id, provider, served_provider, upstream_model, \
    descriptor, status, error_code, attempts, ttft_ms, total_ms, input_tokens, output_tokens, \
    cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, estimated, stream, content, \
    session_id, field_edits, cache, routing, intent, operation";

/// How a text column is bound. SQLite's arguments own their values, and sqlx
/// turns a `&str` into a `String` and then an `Arc` (two copies per column, about
/// twenty per record); one `Arc<str>` is one. PostgreSQL encodes into its buffer
/// directly, so a borrow is cheapest there.
trait BindText: sqlx::Database {
    type Text<'a>: sqlx::Encode<'a, Self> + sqlx::Type<Self> + Send + 'a;
    fn text(s: &str) -> Self::Text<'_>;
}

impl BindText for sqlx::Sqlite {
    type Text<'a> = std::sync::Arc<str>;
    fn text(s: &str) -> Self::Text<'_> {
        std::sync::Arc::from(s)
    }
}

impl BindText for sqlx::Postgres {
    type Text<'a> = &'a str;
    fn text(s: &str) -> Self::Text<'_> {
        s
    }
}

fn text<D: BindText>(s: &str) -> D::Text<'_> {
    D::text(s)
}

fn opt<D: BindText>(s: Option<&str>) -> Option<D::Text<'_>> {
    s.map(D::text)
}

/// A record converted to column values (validated before the transaction opens).
pub(crate) struct Encoded<'a> {
    r: &'a RequestRecord,
    time_ms: i64,
    status: i32,
    attempts: String,
    ttft_ms: Option<i64>,
    total_ms: i64,
    tokens: [Option<i64>; 5],
    /// NaN or infinite is stored as unknown.
    cost_usd: Option<f64>,
    /// JSON array; `None` when there are none.
    field_edits: Option<String>,
    /// JSON; `None` when nothing was decided beyond the route's order.
    routing: Option<String>,
    /// The logged content, deflated (`request_contents`).
    packed: Option<Vec<u8>>,
}

impl<'a> Encoded<'a> {
    /// What the record adds to its hour's rollup.
    fn entry(&self) -> rollups::Entry<'a> {
        let r = self.r;
        let known = |v: Option<i64>| v.unwrap_or(0);
        let cost = self.cost_usd;
        rollups::Entry {
            group: rollups::Group {
                hour_ms: self.time_ms - self.time_ms.rem_euclid(rollups::HOUR_MS),
                model: r.resolved_model.as_deref().unwrap_or(&r.requested_model),
                provider: r.served_provider.as_deref().unwrap_or(""),
                project: r.project.as_deref().unwrap_or(""),
                user: r.user.as_deref().unwrap_or(""),
                key_prefix: r.key_prefix.as_deref().unwrap_or(""),
            },
            sums: rollups::Sums {
                requests: 1,
                errors: i64::from(self.status >= 400 || r.error_code.is_some()),
                failovers: i64::from(r.descriptor.contains("failover:")),
                cache_hits: i64::from(r.cache.as_deref() == Some("hit")),
                input_tokens: known(self.tokens[0]),
                output_tokens: known(self.tokens[1]),
                cache_read_tokens: known(self.tokens[2]),
                cache_write_tokens: known(self.tokens[3]),
                costed: i64::from(cost.is_some()),
                cost_usd: cost.unwrap_or(0.0),
                total_ms_sum: self.total_ms,
                ttft_count: i64::from(self.ttft_ms.is_some()),
                ttft_ms_sum: known(self.ttft_ms),
            },
            total_ms: self.total_ms,
            ttft_ms: self.ttft_ms,
        }
    }
}

/// Binds a chunk of records, in [`RECORD_COLS`]' order.
macro_rules! bind_records {
    ($q:expr, $chunk:expr) => {{
        let mut q = $q;
        for e in $chunk {
            q = q
                .bind(text::<Db>(&e.r.id))
                .bind(e.time_ms)
                .bind(opt::<Db>(e.r.user.as_deref()))
                .bind(opt::<Db>(e.r.key_prefix.as_deref()))
                .bind(opt::<Db>(e.r.project.as_deref()))
                .bind(text::<Db>(&e.r.client_format))
                .bind(text::<Db>(&e.r.requested_model))
                .bind(opt::<Db>(e.r.resolved_model.as_deref()))
                .bind(opt::<Db>(e.r.route_id.as_deref()))
                .bind(opt::<Db>(e.r.provider.as_deref()))
                .bind(opt::<Db>(e.r.served_provider.as_deref()))
                .bind(opt::<Db>(e.r.upstream_model.as_deref()))
                .bind(text::<Db>(&e.r.descriptor))
                .bind(e.status)
                .bind(opt::<Db>(e.r.error_code.as_deref()))
                .bind(text::<Db>(&e.attempts))
                .bind(e.ttft_ms)
                .bind(e.total_ms)
                .bind(e.tokens[0])
                .bind(e.tokens[1])
                .bind(e.tokens[2])
                .bind(e.tokens[3])
                .bind(e.tokens[4])
                .bind(e.cost_usd)
                .bind(e.r.estimated)
                .bind(e.r.stream)
                // Apart, compressed (`request_contents`).
                .bind(opt::<Db>(None))
                .bind(opt::<Db>(e.r.session_id.as_deref()))
                .bind(opt::<Db>(e.field_edits.as_deref()))
                .bind(opt::<Db>(e.r.cache.as_deref()))
                .bind(opt::<Db>(e.routing.as_deref()))
                .bind(opt::<Db>(e.r.routing.intent.as_deref()))
                .bind(opt::<Db>(e.r.operation.as_deref()));
        }
        q
    }};
}

/// Binds a rollup row's sums, in the order of the rollups' `SUMS`.
macro_rules! bind_sums {
    ($q:expr, $s:expr) => {
        $q.bind($s.requests)
            .bind($s.errors)
            .bind($s.failovers)
            .bind($s.cache_hits)
            .bind($s.input_tokens)
            .bind($s.output_tokens)
            .bind($s.cache_read_tokens)
            .bind($s.cache_write_tokens)
            .bind($s.costed)
            .bind($s.cost_usd)
            .bind($s.total_ms_sum)
            .bind($s.ttft_count)
            .bind($s.ttft_ms_sum)
    };
}

impl Store {
    /// Writes a batch in one transaction. A record whose id is already stored is
    /// skipped (a replayed spill file must not fail), including a repeat inside the
    /// batch.
    pub async fn insert_records(&self, batch: &[RequestRecord]) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let rows = batch.iter().map(encode).collect::<Result<Vec<_>, _>>()?;
        let sqlite = self.backend() == Backend::Sqlite;
        on_pool!(self, |p, Db| {
            // First without asking which ids the inserts took: in the common case
            // every one is new, which the row counts show. Where one is not (a
            // replayed spill file, a batch retried after a lost commit, an id
            // repeated in the batch), the batch is written again, learning
            // which: only those count in the rollups.
            let mut learn = false;
            let (mut tx, mut taken) = loop {
                let mut tx = if sqlite {
                    p.begin_with(SQLITE_BEGIN_WRITE).await?
                } else {
                    p.begin().await?
                };
                let mut taken: Option<HashSet<String>> = learn.then(HashSet::new);
                let mut inserted = 0u64;
                for chunk in insert_chunks(&rows) {
                    let q = sqlx::query::<Db>(insert_sql(sqlite, chunk.len(), learn));
                    let q = bind_records!(q, chunk);
                    match &mut taken {
                        Some(taken) => {
                            for row in q.fetch_all(&mut *tx).await? {
                                taken.insert(row.col::<String>("id")?);
                            }
                        }
                        None => inserted += q.execute(&mut *tx).await?.rows_affected(),
                    }
                }
                if learn || inserted == rows.len() as u64 {
                    break (tx, taken);
                }
                tx.rollback().await?;
                learn = true;
            };
            // Every record, or those whose id the inserts took (a record
            // repeated in the batch counts once: its id is taken once).
            let mut took =
                |e: &Encoded<'_>| taken.as_mut().is_none_or(|t| t.remove(e.r.id.as_str()));
            let rows: Vec<&Encoded<'_>> = rows.iter().filter(|e| took(e)).collect();
            let logged: Vec<&Encoded<'_>> =
                rows.iter().copied().filter(|e| e.packed.is_some()).collect();
            for chunk in insert_chunks(&logged) {
                let mut q = sqlx::query::<Db>(contents::insert_sql(sqlite, chunk.len()));
                for e in chunk {
                    q = q.bind(text::<Db>(&e.r.id)).bind(e.time_ms).bind(e.packed.as_deref());
                }
                q.execute(&mut *tx).await?;
            }
            let rollup = Rollup::of(rows.iter().map(|e| e.entry()));
            for (table, rows) in
                [(&rollups::FINE, &rollup.fine), (&rollups::SLICES, &rollup.slices)]
            {
                for chunk in insert_chunks(rows) {
                    // Sums added, histograms as stored returned (`rollups`).
                    let mut q = sqlx::query::<Db>(table.add_sql(sqlite, chunk.len()));
                    for (key, v) in chunk {
                        for i in &key.ints {
                            q = q.bind(*i);
                        }
                        for t in &key.texts {
                            q = q.bind(text::<Db>(t));
                        }
                        q = bind_sums!(q, v.sums).bind(text::<Db>("")).bind(text::<Db>(""));
                    }
                    let mut stored: HashMap<String, (String, String)> =
                        HashMap::with_capacity(chunk.len());
                    for row in q.fetch_all(&mut *tx).await? {
                        stored.insert(
                            table.stored_key(&row)?,
                            (row.col("latency")?, row.col("ttft")?),
                        );
                    }
                    // Merged, written back.
                    let mut merged = Vec::with_capacity(chunk.len());
                    for (key, v) in chunk {
                        // Every row the upsert touched comes back (a new one with
                        // empty histograms); one missing would be overwritten.
                        let Some((l, t)) = stored.get(&key.joined()) else {
                            return Err(StoreError::Corrupt(format!(
                                "{}: the upsert returned no row for {:?}",
                                table.name, key
                            )));
                        };
                        let (mut latency, mut ttft) =
                            (rollups::Histogram::decode(l)?, rollups::Histogram::decode(t)?);
                        latency.merge(&v.latency);
                        ttft.merge(&v.ttft);
                        merged.push((latency.encode(), ttft.encode()));
                    }
                    let mut q = sqlx::query::<Db>(table.set_sql(sqlite, chunk.len()));
                    for ((key, v), (latency, ttft)) in chunk.iter().zip(&merged) {
                        for i in &key.ints {
                            q = q.bind(*i);
                        }
                        for t in &key.texts {
                            q = q.bind(text::<Db>(t));
                        }
                        q = bind_sums!(q, v.sums).bind(text::<Db>(latency)).bind(text::<Db>(ttft));
                    }
                    q.execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
        });
        Ok(())
    }

    pub async fn record(&self, id: &str) -> Result<Option<RequestRecord>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            RECORD_COLS,
            ", ",
            contents::PACKED,
            " FROM request_records WHERE id = $1"
        );
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(record_from).transpose()
        })
    }

    /// Records matching `f`, newest first, at most `f.effective_limit()`.
    pub async fn list_records(&self, f: &RecordFilter) -> Result<Vec<RequestRecord>, StoreError> {
        let mut w = Where::listing(f);
        let limit = w.arg(Arg::Int(i64::from(f.effective_limit())));
        let sql = format!(
            "SELECT {RECORD_COLS}, {} FROM request_records{} ORDER BY time_ms DESC, id DESC \
             LIMIT {limit}",
            contents::PACKED,
            w.sql
        );
        on_pool!(self, |p| {
            let rows = w.bind(sqlx::query(AssertSqlSafe(sql))).fetch_all(p).await?;
            rows.iter().map(record_from).collect()
        })
    }
}

/// The audit writer's sink: batches go to [`Store::insert_records`].
impl crate::audit::RecordStore for Store {
    fn insert_batch<'a>(
        &'a self,
        batch: &'a [RequestRecord],
    ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move { self.insert_records(batch).await.map_err(|e| e.to_string()) })
    }
}

/// A bound value of a dynamic query.
enum Arg {
    Int(i64),
    Text(String),
}

/// A `WHERE` clause built from a [`RecordFilter`]: only our own SQL fragments,
/// every value bound (`$1`, `$2`, … in order).
struct Where {
    sql: String,
    args: Vec<Arg>,
}

impl Where {
    fn new(f: &RecordFilter) -> Where {
        let mut w = Where { sql: String::new(), args: Vec::new() };
        let mut conds = Vec::new();
        if let Some(t) = f.since_ms {
            conds.push(format!("time_ms >= {}", w.arg(Arg::Int(t))));
        }
        if let Some(t) = f.until_ms {
            conds.push(format!("time_ms < {}", w.arg(Arg::Int(t))));
        }
        if let Some(u) = &f.user {
            conds.push(format!("user_id = {}", w.arg(Arg::Text(u.clone()))));
        }
        if let Some(p) = &f.project {
            conds.push(format!("project_id = {}", w.arg(Arg::Text(p.clone()))));
        }
        if let Some(m) = &f.model {
            let a = w.arg(Arg::Text(m.clone()));
            conds.push(format!("(resolved_model = {a} OR requested_model = {a})"));
        }
        if let Some(p) = &f.provider {
            conds.push(format!("served_provider = {}", w.arg(Arg::Text(p.clone()))));
        }
        if let Some(k) = &f.key_prefix {
            conds.push(format!("key_prefix = {}", w.arg(Arg::Text(k.clone()))));
        }
        if let Some(s) = f.status {
            conds.push(format!("status = {}", w.arg(Arg::Int(i64::from(s)))));
        }
        w.and(conds);
        w
    }

    /// [`Where::new`] and the listing's keyset cursor (`f.before`).
    fn listing(f: &RecordFilter) -> Where {
        let mut w = Where::new(f);
        if let Some(i) = &f.intent {
            let i = w.arg(Arg::Text(i.clone()));
            w.and(vec![format!("intent = {i}")]);
        }
        // `generation` is the records without one.
        match f.operation.as_deref() {
            None => {}
            Some("generation") => w.and(vec!["operation IS NULL".to_owned()]),
            Some(op) => {
                let op = w.arg(Arg::Text(op.to_owned()));
                w.and(vec![format!("operation = {op}")]);
            }
        }
        if let Some((t, id)) = &f.before {
            // The row-value comparison spelled out: both databases walk the
            // (time_ms, id) order from the cursor this way.
            let t = w.arg(Arg::Int(*t));
            let id = w.arg(Arg::Text(id.clone()));
            w.and(vec![format!("(time_ms < {t} OR (time_ms = {t} AND id < {id}))")]);
        }
        w
    }

    /// Adds conditions to the clause.
    fn and(&mut self, conds: Vec<String>) {
        if conds.is_empty() {
            return;
        }
        let joined = conds.join(" AND ");
        self.sql = if self.sql.is_empty() {
            format!(" WHERE {joined}")
        } else {
            format!("{} AND {joined}", self.sql)
        };
    }

    /// Adds a value; returns its placeholder.
    fn arg(&mut self, a: Arg) -> String {
        self.args.push(a);
        format!("${}", self.args.len())
    }

    fn bind<'q, DB, A>(&self, mut q: sqlx::query::Query<'q, DB, A>) -> sqlx::query::Query<'q, DB, A>
    where
        DB: sqlx::Database<Arguments = A>,
        A: sqlx::IntoArguments<DB>,
        i64: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
        String: for<'t> sqlx::Encode<'t, DB> + sqlx::Type<DB>,
    {
        for a in &self.args {
            q = match a {
                Arg::Int(v) => q.bind(*v),
                Arg::Text(s) => q.bind(s.clone()),
            };
        }
        q
    }
}

fn encode(r: &RequestRecord) -> Result<Encoded<'_>, StoreError> {
    let int = |v: u64, what: &str| {
        i64::try_from(v)
            .map_err(|_| StoreError::Invalid(format!("record {}: {what} out of range", r.id)))
    };
    let opt = |v: Option<u64>, what: &str| v.map(|v| int(v, what)).transpose();
    if r.id.is_empty() {
        return Err(StoreError::Invalid("record without an id".into()));
    }
    let u = &r.usage;
    Ok(Encoded {
        r,
        time_ms: int(r.time_ms, "time_ms")?,
        status: i32::from(r.status),
        attempts: serde_json::to_string(&r.attempts)
            .map_err(|e| StoreError::Invalid(format!("record {}: attempts: {e}", r.id)))?,
        ttft_ms: opt(r.ttft_ms, "ttft_ms")?,
        total_ms: int(r.total_ms, "total_ms")?,
        tokens: [
            opt(u.input_tokens, "input_tokens")?,
            opt(u.output_tokens, "output_tokens")?,
            opt(u.cache_read_tokens, "cache_read_tokens")?,
            opt(u.cache_write_tokens, "cache_write_tokens")?,
            opt(u.reasoning_tokens, "reasoning_tokens")?,
        ],
        cost_usd: r.cost_usd.filter(|c| c.is_finite()),
        field_edits: if r.field_edits.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&r.field_edits).map_err(|e| {
                    StoreError::Invalid(format!("record {}: field_edits: {e}", r.id))
                })?,
            )
        },
        routing: if r.routing.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&r.routing)
                    .map_err(|e| StoreError::Invalid(format!("record {}: routing: {e}", r.id)))?,
            )
        },
        packed: r.content.as_deref().map(contents::deflate).transpose()?,
    })
}

fn to_u64(v: i64, what: &str) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt(format!("{what} is negative")))
}

fn opt_u64(r: &impl RowExt, col: &str) -> Result<Option<u64>, StoreError> {
    r.col::<Option<i64>>(col)?.map(|v| to_u64(v, col)).transpose()
}

// Built from the stored columns onto an empty record, so fields core adds to the
// record later (and this table does not store yet) keep their defaults.
fn record_from(r: &impl RowExt) -> Result<RequestRecord, StoreError> {
    let attempts: String = r.col("attempts")?;
    let attempts: Vec<AttemptRecord> = serde_json::from_str(&attempts)
        .map_err(|e| StoreError::Corrupt(format!("request_records.attempts: {e}")))?;
    let status = u16::try_from(r.col::<i32>("status")?)
        .map_err(|_| StoreError::Corrupt("status out of range".into()))?;
    let mut rec = RequestRecord::new(r.col::<String>("id")?, to_u64(r.col("time_ms")?, "time_ms")?);
    rec.user = r.col("user_id")?;
    rec.key_prefix = r.col("key_prefix")?;
    rec.project = r.col("project_id")?;
    rec.client_format = r.col::<String>("client_format")?.into();
    rec.requested_model = r.col("requested_model")?;
    rec.resolved_model = r.col("resolved_model")?;
    rec.route_id = r.col("route_id")?;
    rec.provider = r.col("provider")?;
    rec.served_provider = r.col("served_provider")?;
    rec.upstream_model = r.col("upstream_model")?;
    rec.descriptor = r.col("descriptor")?;
    rec.status = status;
    rec.error_code = r.col("error_code")?;
    rec.attempts = attempts;
    rec.ttft_ms = opt_u64(r, "ttft_ms")?;
    rec.total_ms = to_u64(r.col("total_ms")?, "total_ms")?;
    rec.usage = Usage {
        input_tokens: opt_u64(r, "input_tokens")?,
        output_tokens: opt_u64(r, "output_tokens")?,
        cache_read_tokens: opt_u64(r, "cache_read_tokens")?,
        cache_write_tokens: opt_u64(r, "cache_write_tokens")?,
        reasoning_tokens: opt_u64(r, "reasoning_tokens")?,
    };
    rec.cost_usd = r.col("cost_usd")?;
    rec.estimated = r.col("estimated")?;
    rec.stream = r.col("stream")?;
    // Earlier versions wrote it in the row; this one apart, compressed.
    rec.content = match r.col::<Option<String>>("content")? {
        Some(text) => Some(text),
        None => r.col::<Option<Vec<u8>>>("packed")?.map(|p| contents::inflate(&p)).transpose()?,
    };
    rec.session_id = r.col("session_id")?;
    rec.field_edits = match r.col::<Option<String>>("field_edits")? {
        None => Vec::new(),
        Some(json) => serde_json::from_str(&json)
            .map_err(|e| StoreError::Corrupt(format!("request_records.field_edits: {e}")))?,
    };
    rec.cache = r.col::<Option<String>>("cache")?.map(std::borrow::Cow::Owned);
    if let Some(json) = r.col::<Option<String>>("routing")? {
        rec.routing = serde_json::from_str(&json)
            .map_err(|e| StoreError::Corrupt(format!("request_records.routing: {e}")))?;
    }
    rec.operation = r.col::<Option<String>>("operation")?.map(std::borrow::Cow::Owned);
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_statements_have_a_placeholder_per_column_and_row() {
        assert_eq!(RECORD_COLS.split(',').count(), RECORD_COL_COUNT);
        for sqlite in [true, false] {
            for (rows, returning) in INSERT_CHUNKS.into_iter().flat_map(|n| [(n, false), (n, true)])
            {
                let sql = insert_sql(sqlite, rows, returning);
                let mark = if sqlite { '?' } else { '$' };
                assert_eq!(sql.matches(mark).count(), rows * RECORD_COL_COUNT, "{sql}");
                let last =
                    if sqlite { "?)".to_owned() } else { format!("${})", rows * RECORD_COL_COUNT) };
                let tail = if sqlite { SQLITE_RECORD_CONFLICT } else { POSTGRES_RECORD_CONFLICT };
                let tail = if returning { format!("{tail} RETURNING id") } else { tail.to_owned() };
                assert!(sql.ends_with(&format!("{last}{tail}")), "{sql}");
                assert!(std::ptr::eq(sql, insert_sql(sqlite, rows, returning)), "built once");
            }
        }
    }

    #[test]
    fn batches_split_into_the_fixed_statement_sizes() {
        for n in [0usize, 1, 7, 8, 9, 63, 64, 65, 500, 1000] {
            let rows: Vec<usize> = (0..n).collect();
            let chunks: Vec<&[usize]> = insert_chunks(&rows).collect();
            assert!(chunks.iter().all(|c| INSERT_CHUNKS.contains(&c.len())), "{n}");
            assert_eq!(chunks.concat(), rows, "{n}: every row once, in order");
        }
        assert_eq!(
            insert_chunks(&[0u8; 75]).map(<[u8]>::len).collect::<Vec<_>>(),
            [64, 8, 1, 1, 1]
        );
    }

    #[test]
    fn filters_bind_every_value() {
        let f = RecordFilter {
            since_ms: Some(1),
            until_ms: Some(2),
            user: Some("u".into()),
            project: Some("p".into()),
            model: Some("m".into()),
            provider: Some("pr".into()),
            key_prefix: Some("sy-abcdef".into()),
            status: Some(200),
            intent: Some("code".into()),
            operation: None,
            before: Some((9, "req_9".into())),
            limit: None,
        };
        let w = Where::new(&f);
        assert_eq!(
            w.sql,
            " WHERE time_ms >= $1 AND time_ms < $2 AND user_id = $3 AND project_id = $4 \
             AND (resolved_model = $5 OR requested_model = $5) AND served_provider = $6 \
             AND key_prefix = $7 AND status = $8"
        );
        assert_eq!(w.args.len(), 8);
        // The intent and the cursor are the listing's alone.
        let w = Where::listing(&f);
        assert!(w.sql.ends_with(
            " AND status = $8 AND intent = $9 AND (time_ms < $10 OR (time_ms = $10 AND id < $11))"
        ));
        assert_eq!(w.args.len(), 11);
        assert_eq!(Where::new(&RecordFilter::default()).sql, "");
        let w =
            Where::listing(&RecordFilter { before: Some((9, "x".into())), ..Default::default() });
        assert_eq!(w.sql, " WHERE (time_ms < $1 OR (time_ms = $1 AND id < $2))");
    }
}
