//! Seeding: the directory (projects, users, groups, keys, rules) through the
//! store's own API, then the request rows in bulk (SQLite: large transactions
//! of prepared multi-row inserts; PostgreSQL: COPY into the day partitions),
//! then the hourly rollups rebuilt from the records in one pass by the
//! backfill SQL of migration 6, and checked against the records.

use std::fmt::Write as _;
use std::time::Instant;

use sqlx::{AssertSqlSafe, Connection};
use switchyard_store::{
    Backend, CallerRole, DbPool, Effect, NewKey, NewRule, NewUser, Store, Subject,
};

use crate::traffic::{Key, MODELS, PROVIDERS, Rng, Row, Traffic, Weighted};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The record columns the seed writes (all but the legacy `content`, which
/// this version leaves NULL: logged content goes to `request_contents`).
const COLS: &str = "id, time_ms, user_id, key_prefix, project_id, client_format, \
    requested_model, resolved_model, route_id, provider, served_provider, upstream_model, \
    descriptor, status, error_code, attempts, ttft_ms, total_ms, input_tokens, output_tokens, \
    cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, estimated, stream, \
    session_id, field_edits, cache";
const COL_COUNT: usize = 29;

/// Rows per SQLite INSERT statement (29 × 256 placeholders, below SQLite's
/// 32 766), and rows per transaction / COPY.
const SQLITE_STATEMENT_ROWS: usize = 256;
const BATCH_ROWS: usize = 100_000;

/// Sizes of the directory: projects, users (one key each), groups, rules.
pub(crate) struct Directory {
    pub(crate) projects: usize,
    pub(crate) users: usize,
    pub(crate) groups: usize,
}

/// Makes the directory through the store's API (as the admin API would);
/// returns the keys the traffic is attributed to.
pub(crate) async fn directory(store: &Store, d: &Directory, seed: u64) -> Result<Vec<Key>, Error> {
    let mut rng = Rng::new(seed ^ 0x5eed);
    let mut projects = Vec::with_capacity(d.projects);
    for i in 0..d.projects {
        projects.push(store.create_project(&format!("project-{i:03}")).await?.id);
    }
    let mut groups = Vec::with_capacity(d.groups);
    for i in 0..d.groups {
        groups.push(store.create_group(&format!("team-{i:02}")).await?.id);
    }
    let project_pick = Weighted::zipf(projects.len(), 1.0);
    let mut keys = Vec::with_capacity(d.users);
    for i in 0..d.users {
        let project = projects[project_pick.pick(&mut rng)].clone();
        let role = match i % 50 {
            0 => CallerRole::Admin,
            1..=3 => CallerRole::Viewer,
            _ => CallerRole::Member,
        };
        let user = store
            .create_user(NewUser {
                email: format!("user{i:04}@example.com"),
                name: Some(format!("User {i}")),
                role,
                project_id: Some(project.clone()),
            })
            .await?;
        if rng.chance(0.1) {
            let other = &projects[rng.below(projects.len() as u64) as usize];
            if *other != project {
                store.add_project_member(other, &user.id).await?;
            }
        }
        if !groups.is_empty() && rng.chance(0.6) {
            store
                .add_group_member(&groups[rng.below(groups.len() as u64) as usize], &user.id)
                .await?;
        }
        let (key, _secret) = store
            .create_key(NewKey {
                user_id: user.id.clone(),
                project_id: Some(project.clone()),
                label: Some(format!("laptop-{i}")),
                allowed_models: None,
                limits: None,
                expires_at: None,
            })
            .await?;
        keys.push(Key { prefix: key.prefix, user: user.id, project });
    }
    for (i, m) in MODELS.iter().enumerate().take(8) {
        store
            .create_rule(NewRule {
                name: format!("rule-{i}"),
                effect: if i % 3 == 0 { Effect::Deny } else { Effect::Allow },
                pattern: m.id.to_owned(),
                subject: match (i % 2, groups.get(i % groups.len().max(1))) {
                    (0, Some(g)) => Subject::Group(g.clone()),
                    _ => Subject::Project(projects[i % projects.len()].clone()),
                },
                reason: format!("bench rule {i}"),
                priority: i as i64,
            })
            .await?;
    }
    Ok(keys)
}

/// What the seed wrote.
pub(crate) struct Seeded {
    pub(crate) rows: u64,
    pub(crate) contents: u64,
    pub(crate) secs: f64,
    pub(crate) rollup_secs: f64,
    pub(crate) rollup_groups: i64,
    pub(crate) rollup_slices: i64,
}

/// Writes every row of `traffic`, then rebuilds and checks the rollups.
pub(crate) async fn records(store: &Store, mut traffic: Traffic) -> Result<Seeded, Error> {
    let started = Instant::now();
    let keys = traffic.keys().to_vec();
    let (mut rows, mut contents) = (0u64, 0u64);
    let mut batch: Vec<Row> = Vec::with_capacity(BATCH_ROWS);
    let mut reported = 0;
    match store.pool() {
        DbPool::Sqlite(pool) => {
            let mut conn = pool.acquire().await?;
            // This connection only: a page cache that holds the indexes' right
            // edges, and no fsync per batch (a seed that fails is rerun).
            sqlx::raw_sql("PRAGMA cache_size = -262144; PRAGMA synchronous = OFF")
                .execute(&mut *conn)
                .await?;
            loop {
                batch.clear();
                batch.extend(std::iter::from_fn(|| traffic.next_row()).take(BATCH_ROWS));
                if batch.is_empty() {
                    break;
                }
                let mut tx = conn.begin().await?;
                for chunk in batch.chunks(SQLITE_STATEMENT_ROWS) {
                    let sql =
                        values_sql("INSERT INTO request_records", COLS, COL_COUNT, chunk.len());
                    let mut q = sqlx::query(AssertSqlSafe(sql));
                    for r in chunk {
                        let k = &keys[r.key];
                        let m = MODELS[r.model].id;
                        q = q
                            .bind(r.id.clone())
                            .bind(r.time_ms)
                            .bind(k.user.clone())
                            .bind(k.prefix.clone())
                            .bind(k.project.clone())
                            .bind(r.client_format)
                            .bind(m)
                            .bind(m)
                            .bind(r.route_id)
                            .bind(PROVIDERS[r.provider])
                            .bind(PROVIDERS[r.served])
                            .bind(m)
                            .bind(r.descriptor.clone())
                            .bind(r.status)
                            .bind(r.error_code)
                            .bind(r.attempts.clone())
                            .bind(r.ttft_ms)
                            .bind(r.total_ms)
                            .bind(r.tokens[0])
                            .bind(r.tokens[1])
                            .bind(r.tokens[2])
                            .bind(r.tokens[3])
                            .bind(r.tokens[4])
                            .bind(r.cost_usd)
                            .bind(false)
                            .bind(r.stream)
                            .bind(r.session_id.clone())
                            .bind(r.field_edits)
                            .bind(r.cache);
                    }
                    q.execute(&mut *tx).await?;
                }
                for r in batch.iter().filter(|r| r.content.is_some()) {
                    let packed = deflate(r.content.as_deref().unwrap_or_default())?;
                    sqlx::query(
                        "INSERT INTO request_contents (id, time_ms, content) VALUES ($1, $2, $3)",
                    )
                    .bind(r.id.clone())
                    .bind(r.time_ms)
                    .bind(packed)
                    .execute(&mut *tx)
                    .await?;
                    contents += 1;
                }
                tx.commit().await?;
                rows += batch.len() as u64;
                progress(rows, &mut reported, &started);
            }
        }
        DbPool::Postgres(pool) => {
            let mut conn = pool.acquire().await?;
            sqlx::raw_sql("SET synchronous_commit = off").execute(&mut *conn).await?;
            let (mut text, mut packed) = (String::new(), String::new());
            loop {
                batch.clear();
                batch.extend(std::iter::from_fn(|| traffic.next_row()).take(BATCH_ROWS));
                if batch.is_empty() {
                    break;
                }
                text.clear();
                packed.clear();
                for r in &batch {
                    copy_line(&mut text, r, &keys[r.key]);
                    if let Some(c) = &r.content {
                        let _ = write!(packed, "{}\t{}\t\\\\x", r.id, r.time_ms);
                        for b in deflate(c)? {
                            let _ = write!(packed, "{b:02x}");
                        }
                        packed.push('\n');
                        contents += 1;
                    }
                }
                let mut copy =
                    conn.copy_in_raw(&format!("COPY request_records ({COLS}) FROM STDIN")).await?;
                copy.send(text.as_bytes()).await?;
                copy.finish().await?;
                if !packed.is_empty() {
                    let mut copy = conn
                        .copy_in_raw("COPY request_contents (id, time_ms, content) FROM STDIN")
                        .await?;
                    copy.send(packed.as_bytes()).await?;
                    copy.finish().await?;
                }
                rows += batch.len() as u64;
                progress(rows, &mut reported, &started);
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let at = Instant::now();
    let rebuilt = rebuild_rollups(store).await?;
    Ok(Seeded {
        rows,
        contents,
        secs,
        rollup_secs: at.elapsed().as_secs_f64(),
        rollup_groups: rebuilt.groups,
        rollup_slices: rebuilt.slices,
    })
}

fn progress(rows: u64, reported: &mut u64, started: &Instant) {
    if rows / 1_000_000 > *reported / 1_000_000 {
        eprintln!(
            "  {rows} rows in {:.0} s ({:.0} rows/s)",
            started.elapsed().as_secs_f64(),
            rows as f64 / started.elapsed().as_secs_f64()
        );
    }
    *reported = rows;
}

/// `head (cols) VALUES (?, …), …`: `rows` rows of `n` placeholders.
fn values_sql(head: &str, cols: &str, n: usize, rows: usize) -> String {
    let row = format!("({})", vec!["?"; n].join(", "));
    format!("{head} ({cols}) VALUES {}", vec![row; rows].join(", "))
}

/// As the store deflates logged content (`records/contents.rs`): raw deflate,
/// fast level.
fn deflate(text: &str) -> Result<Vec<u8>, Error> {
    use std::io::Write;
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(text.as_bytes())?;
    Ok(e.finish()?)
}

/// One row in COPY's text format: tab-separated, `\N` for NULL.
fn copy_line(out: &mut String, r: &Row, k: &Key) {
    let m = MODELS[r.model].id;
    let text = |out: &mut String, v: Option<&str>| {
        match v {
            None => out.push_str("\\N"),
            Some(s) => {
                for c in s.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\t' => out.push_str("\\t"),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        c => out.push(c),
                    }
                }
            }
        }
        out.push('\t');
    };
    let num = |out: &mut String, v: Option<i64>| {
        match v {
            None => out.push_str("\\N"),
            Some(n) => {
                let _ = write!(out, "{n}");
            }
        }
        out.push('\t');
    };
    text(out, Some(&r.id));
    num(out, Some(r.time_ms));
    text(out, Some(&k.user));
    text(out, Some(&k.prefix));
    text(out, Some(&k.project));
    text(out, Some(r.client_format));
    text(out, Some(m));
    text(out, Some(m));
    text(out, r.route_id);
    text(out, Some(PROVIDERS[r.provider]));
    text(out, Some(PROVIDERS[r.served]));
    text(out, Some(m));
    text(out, Some(&r.descriptor));
    num(out, Some(i64::from(r.status)));
    text(out, r.error_code);
    text(out, Some(&r.attempts));
    num(out, r.ttft_ms);
    num(out, Some(r.total_ms));
    for t in r.tokens {
        num(out, t);
    }
    match r.cost_usd {
        Some(c) => {
            let _ = write!(out, "{c}\t");
        }
        None => out.push_str("\\N\t"),
    }
    text(out, Some("f"));
    text(out, Some(if r.stream { "t" } else { "f" }));
    text(out, r.session_id.as_deref());
    text(out, r.field_edits);
    text(out, r.cache);
    // The last separator is the line's end.
    out.pop();
    out.push('\n');
}

/// Migration 6's backfill, on this backend, with one change: the histogram
/// bucket is found by an index seek (the greatest bound at most the latency)
/// instead of a scan of the bounds for every record, which on ten million
/// rows is the difference between seconds and many minutes. The same bounds,
/// the same groups, the same sums.
fn backfill_sql(backend: Backend) -> Result<String, Error> {
    let sql = match backend {
        Backend::Sqlite => {
            include_str!("../../../../store/migrations/sqlite/0006_rollups_backfill.sql")
        }
        Backend::Postgres => {
            include_str!("../../../../store/migrations/postgres/0006_rollups_backfill.sql")
        }
    };
    let mut sql = sql.to_owned();
    let mut edit = |from: &str, to: &str| -> Result<(), Error> {
        if sql.matches(from).count() != 1 {
            return Err(format!("migration 6 changed: {from:?} is not there once").into());
        }
        sql = sql.replace(from, to);
        Ok(())
    };
    edit(
        "INSERT INTO request_rollups (",
        "CREATE INDEX rollup_bucket_bounds_lo ON rollup_bucket_bounds (lo, bucket);\n\
         INSERT INTO request_rollups (",
    )?;
    for col in ["total_ms", "ttft_ms"] {
        edit(
            &format!("(SELECT MAX(bucket) FROM rollup_bucket_bounds WHERE lo <= {col})"),
            &format!(
                "(SELECT bucket FROM rollup_bucket_bounds WHERE lo <= {col} \
                 ORDER BY lo DESC, bucket DESC LIMIT 1)"
            ),
        )?;
    }
    Ok(sql)
}

/// Back to version 10's rollup tables, empty (migration 5 makes them again).
const RESET_ROLLUPS: &str = "DROP TABLE request_rollup_slices; DROP TABLE request_rollups;";

/// Records, those with a TTFT; the fine rollups' requests and rows; the daily
/// slices' requests and TTFTs (all the traffic); the slices' rows.
type Check = (i64, i64, Option<i64>, i64, Option<i64>, Option<i64>, i64);
const CHECK_SQL: &str = "SELECT (SELECT COUNT(*) FROM request_records), \
    (SELECT COUNT(ttft_ms) FROM request_records), \
    (SELECT CAST(SUM(requests) AS BIGINT) FROM request_rollups), \
    (SELECT COUNT(*) FROM request_rollups), \
    (SELECT CAST(SUM(requests) AS BIGINT) FROM request_rollup_slices \
     WHERE span_ms = 86400000 AND dimension = ''), \
    (SELECT CAST(SUM(ttft_count) AS BIGINT) FROM request_rollup_slices \
     WHERE span_ms = 86400000 AND dimension = ''), \
    (SELECT COUNT(*) FROM request_rollup_slices)";
/// Every histogram of the fine rollups, and of the daily slices of all traffic.
const HISTOGRAMS_SQL: &str = "SELECT latency, ttft FROM request_rollups";
const DAILY_SQL: &str = "SELECT latency, ttft FROM request_rollup_slices \
    WHERE span_ms = 86400000 AND dimension = ''";

/// Rows' histograms as stored: the whole request's time, the TTFT.
type Histograms = Vec<(String, String)>;

/// Requests counted by `bucket:count` histograms' texts.
fn counted(histograms: &[(String, String)]) -> Result<(i64, i64), Error> {
    let count = |text: &str| -> Result<i64, Error> {
        let mut n = 0;
        for pair in text.split_whitespace() {
            let (_, c) = pair.split_once(':').ok_or("a histogram pair without ':'")?;
            n += c.parse::<i64>()?;
        }
        Ok(n)
    };
    let (mut latency, mut ttft) = (0, 0);
    for (l, t) in histograms {
        latency += count(l)?;
        ttft += count(t)?;
    }
    Ok((latency, ttft))
}

/// The rollups as built: fine groups, slice rows.
pub(crate) struct Rebuilt {
    pub(crate) groups: i64,
    pub(crate) slices: i64,
}

/// Builds the rollups again from every record, in one transaction, as an
/// upgrade from version 10 does: the tables made again by migration 5, the
/// fine rollups filled by migration 6 (edited, above), then migration 11 (the
/// slices, and the fine histograms moved inline). Checks that they count
/// every record: requests, both histograms of the fine rows and of the daily
/// slices.
pub(crate) async fn rebuild_rollups(store: &Store) -> Result<Rebuilt, Error> {
    let (v5, v11) = match store.backend() {
        Backend::Sqlite => (
            include_str!("../../../../store/migrations/sqlite/0005_rollups.sql"),
            include_str!("../../../../store/migrations/sqlite/0011_rollup_slices.sql"),
        ),
        Backend::Postgres => (
            include_str!("../../../../store/migrations/postgres/0005_rollups.sql"),
            include_str!("../../../../store/migrations/postgres/0011_rollup_slices.sql"),
        ),
    };
    let sql = format!("{RESET_ROLLUPS}\n{v5}\n{}\n{v11}", backfill_sql(store.backend())?);
    let (check, fine, daily): (Check, Histograms, Histograms) = match store.pool() {
        DbPool::Sqlite(p) => {
            let mut conn = p.acquire().await?;
            // The GROUP BY sorts every record: in memory, not in /var/tmp.
            sqlx::raw_sql("PRAGMA temp_store = MEMORY").execute(&mut *conn).await?;
            let mut tx = conn.begin().await?;
            sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut *tx).await?;
            tx.commit().await?;
            sqlx::raw_sql("PRAGMA temp_store = DEFAULT").execute(&mut *conn).await?;
            (
                sqlx::query_as(CHECK_SQL).fetch_one(&mut *conn).await?,
                sqlx::query_as(HISTOGRAMS_SQL).fetch_all(&mut *conn).await?,
                sqlx::query_as(DAILY_SQL).fetch_all(&mut *conn).await?,
            )
        }
        DbPool::Postgres(p) => {
            let mut conn = p.acquire().await?;
            // The aggregate hashes its groups in memory rather than spilling.
            sqlx::raw_sql("SET work_mem = '1GB'").execute(&mut *conn).await?;
            let mut tx = conn.begin().await?;
            sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut *tx).await?;
            tx.commit().await?;
            sqlx::raw_sql("RESET work_mem").execute(&mut *conn).await?;
            (
                sqlx::query_as(CHECK_SQL).fetch_one(&mut *conn).await?,
                sqlx::query_as(HISTOGRAMS_SQL).fetch_all(&mut *conn).await?,
                sqlx::query_as(DAILY_SQL).fetch_all(&mut *conn).await?,
            )
        }
    };
    let (records, ttfts, rolled, groups, sliced, sliced_ttfts, slices) = check;
    let ((latencies, firsts), (daily_latencies, daily_firsts)) =
        (counted(&fine)?, counted(&daily)?);
    let (rolled, sliced, sliced_ttfts) =
        (rolled.unwrap_or(0), sliced.unwrap_or(0), sliced_ttfts.unwrap_or(0));
    let counts = [rolled, latencies, sliced, daily_latencies];
    let ttft_counts = [firsts, sliced_ttfts, daily_firsts];
    if counts.iter().any(|n| *n != records) || ttft_counts.iter().any(|n| *n != ttfts) {
        return Err(format!(
            "rollups do not add up: {records} records ({ttfts} with a TTFT); fine rollups \
             count {rolled} requests, their histograms {latencies} latencies and {firsts} \
             TTFTs; daily slices {sliced} requests ({sliced_ttfts} TTFTs), their histograms \
             {daily_latencies} and {daily_firsts}"
        )
        .into());
    }
    Ok(Rebuilt { groups, slices })
}
