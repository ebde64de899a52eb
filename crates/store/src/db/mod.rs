//! [`Store`]: the database behind tenancy and the audit trail, on SQLite (the
//! default, zero setup) or PostgreSQL.
//!
//! **One code path, two pools.** The store holds either a `SqlitePool` or a
//! `PgPool` ([`DbPool`]). Every query is written once, with `$1, $2, …`
//! placeholders (SQLite accepts them as numbered parameters) and portable types
//! (`BIGINT`, `TEXT`, `DOUBLE PRECISION`, `BOOLEAN`); the `on_pool!` macro
//! expands the same body once per backend, so each copy is type-checked against
//! its own driver with no runtime translation layer (which is what `sqlx::Any`
//! would add, along with its narrower type mapping). Rows are read through
//! `RowExt`, one decoding function per row type for both drivers.
//! `INSERT … ON CONFLICT … DO NOTHING / DO UPDATE … excluded.` and `RETURNING`
//! read the same in both dialects. The only backend branches: SQLite write
//! transactions start with `BEGIN IMMEDIATE` (a deferred one that reads first
//! cannot wait for the write lock), and `usage` reads one PostgreSQL snapshot
//! (`REPEATABLE READ`).
//!
//! **Migrations** are embedded per backend (`migrations/sqlite`,
//! `migrations/postgres`) with `include_str!` and run by sqlx's `Migrator`. The
//! `migrate!` macro would pull sqlx's proc-macro crates (syn, `sqlx-macros-core`),
//! which link both drivers, bundled SQLite included, into the compiler plugin.
//!
//! **TLS** to PostgreSQL is rustls with ring and the system's root certificates;
//! `sslmode` in the URL applies (`prefer` by default).
//!
//! **By entity.** This file holds the pool, connecting and migrating, and what
//! every entity shares; each entity's queries and row decoding are in its own
//! file (`users`, `projects`, `groups`, `keys`, `rules`, `credentials`).

use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteRow, SqliteSynchronous,
};
use sqlx::{Decode, Postgres, Row, SqlSafeStr, Sqlite, Type};

use crate::error::StoreError;
use crate::model::CallerRole;

mod credentials;
mod groups;
mod keys;
mod oidc_logins;
mod projects;
pub use oidc_logins::{OidcLogin, PENDING_OIDC_LOGINS_MAX};
mod sessions;
pub use sessions::{ConsoleSession, NewSession, SignIn};
mod batches;
mod jobs;
mod packed;
mod responses;
mod rules;
mod users;

pub use keys::hash_secret;

/// Which database a [`Store`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

/// The connection pool under a [`Store`], for callers that need a query the
/// store does not offer (health checks, one-off admin tooling, tests).
#[derive(Clone)]
pub enum DbPool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$p` bound to the concrete pool of either backend (and
/// `$db`, when given, naming the driver's `Database` type). The body is expanded,
/// and type-checked, once per driver. It is written like a closure so rustfmt
/// formats it, but it is inlined: `?` and `return` leave the enclosing function.
macro_rules! on_pool {
    ($store:expr, |$p:ident| $body:expr) => {
        match &$store.pool {
            $crate::db::DbPool::Sqlite($p) => $body,
            $crate::db::DbPool::Postgres($p) => $body,
        }
    };
    ($store:expr, |$p:ident, $db:ident| $body:expr) => {
        match &$store.pool {
            $crate::db::DbPool::Sqlite($p) => {
                type $db = sqlx::Sqlite;
                $body
            }
            $crate::db::DbPool::Postgres($p) => {
                type $db = sqlx::Postgres;
                $body
            }
        }
    };
}
pub(crate) use on_pool;

/// Concatenates string literals and `const` strings into one `&'static str`
/// (what sqlx's `SqlSafeStr` accepts without a wrapper).
macro_rules! const_format {
    ($($part:expr),+ $(,)?) => {{
        const PARTS: &[&str] = &[$($part),+];
        const LEN: usize = {
            let mut n = 0;
            let mut i = 0;
            while i < PARTS.len() {
                n += PARTS[i].len();
                i += 1;
            }
            n
        };
        const BYTES: [u8; LEN] = {
            let mut out = [0u8; LEN];
            let mut n = 0;
            let mut i = 0;
            while i < PARTS.len() {
                let p = PARTS[i].as_bytes();
                let mut j = 0;
                while j < p.len() {
                    out[n] = p[j];
                    n += 1;
                    j += 1;
                }
                i += 1;
            }
            out
        };
        const S: &str = match std::str::from_utf8(&BYTES) {
            Ok(s) => s,
            Err(_) => "",
        };
        S
    }};
}
pub(crate) use const_format;

/// The persistence layer: identity (users, projects, groups), API keys, access
/// rules, sealed provider credentials and request records. Cheap to clone (it
/// wraps a pool).
#[derive(Clone)]
pub struct Store {
    pub(crate) pool: DbPool,
}

// The pool's options hold the connection password: never print them.
impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("backend", &self.backend()).finish_non_exhaustive()
    }
}

/// How long a SQLite writer waits for the lock before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
const SQLITE_MAX_CONNECTIONS: u32 = 8;
const POSTGRES_MAX_CONNECTIONS: u32 = 10;
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Starts a SQLite transaction holding the write lock (waiting `busy_timeout` for it).
pub(crate) const SQLITE_BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// A routing policy as stored: none when it pins nothing (so "none" has one form).
pub(crate) fn policy_json(
    routing: Option<&switchyard_core::app_policy::AppPolicy>,
) -> Result<Option<String>, StoreError> {
    routing
        .filter(|p| !p.is_empty())
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Invalid(format!("routing: {e}")))
}

/// A stored routing policy, read back; `column` names it in an error.
pub(crate) fn policy_from(
    json: Option<String>,
    column: &str,
) -> Result<Option<switchyard_core::app_policy::AppPolicy>, StoreError> {
    json.map(|j| serde_json::from_str(&j))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("{column}: {e}")))
}

/// The embedded migrations: (version, description, SQL) per backend. Files
/// follow sqlx's naming (`<version>_<description>.sql`) so the sqlx CLI can read
/// the folders too; a unit test checks that every file is listed here.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/sqlite/0001_init.sql")),
    (
        2,
        "record_session_and_field_edits",
        include_str!("../../migrations/sqlite/0002_record_session_and_field_edits.sql"),
    ),
    (3, "key_limits", include_str!("../../migrations/sqlite/0003_key_limits.sql")),
    (4, "record_cache", include_str!("../../migrations/sqlite/0004_record_cache.sql")),
    (5, "rollups", include_str!("../../migrations/sqlite/0005_rollups.sql")),
    (6, "rollups_backfill", include_str!("../../migrations/sqlite/0006_rollups_backfill.sql")),
    (7, "record_contents", include_str!("../../migrations/sqlite/0007_record_contents.sql")),
    (
        8,
        "partitioned_records",
        include_str!("../../migrations/sqlite/0008_partitioned_records.sql"),
    ),
    (9, "console_sessions", include_str!("../../migrations/sqlite/0009_console_sessions.sql")),
    (10, "console_oidc", include_str!("../../migrations/sqlite/0010_console_oidc.sql")),
    (11, "rollup_slices", include_str!("../../migrations/sqlite/0011_rollup_slices.sql")),
    (
        12,
        "fewer_record_indexes",
        include_str!("../../migrations/sqlite/0012_fewer_record_indexes.sql"),
    ),
    (13, "record_routing", include_str!("../../migrations/sqlite/0013_record_routing.sql")),
    (14, "app_policies", include_str!("../../migrations/sqlite/0014_app_policies.sql")),
    (15, "record_operation", include_str!("../../migrations/sqlite/0015_record_operation.sql")),
    (16, "stored_responses", include_str!("../../migrations/sqlite/0016_stored_responses.sql")),
    (17, "media_jobs", include_str!("../../migrations/sqlite/0017_media_jobs.sql")),
    (18, "batches", include_str!("../../migrations/sqlite/0018_batches.sql")),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../../migrations/postgres/0001_init.sql")),
    (
        2,
        "record_session_and_field_edits",
        include_str!("../../migrations/postgres/0002_record_session_and_field_edits.sql"),
    ),
    (3, "key_limits", include_str!("../../migrations/postgres/0003_key_limits.sql")),
    (4, "record_cache", include_str!("../../migrations/postgres/0004_record_cache.sql")),
    (5, "rollups", include_str!("../../migrations/postgres/0005_rollups.sql")),
    (6, "rollups_backfill", include_str!("../../migrations/postgres/0006_rollups_backfill.sql")),
    (7, "record_contents", include_str!("../../migrations/postgres/0007_record_contents.sql")),
    (
        8,
        "partitioned_records",
        include_str!("../../migrations/postgres/0008_partitioned_records.sql"),
    ),
    (9, "console_sessions", include_str!("../../migrations/postgres/0009_console_sessions.sql")),
    (10, "console_oidc", include_str!("../../migrations/postgres/0010_console_oidc.sql")),
    (11, "rollup_slices", include_str!("../../migrations/postgres/0011_rollup_slices.sql")),
    (
        12,
        "fewer_record_indexes",
        include_str!("../../migrations/postgres/0012_fewer_record_indexes.sql"),
    ),
    (13, "record_routing", include_str!("../../migrations/postgres/0013_record_routing.sql")),
    (14, "app_policies", include_str!("../../migrations/postgres/0014_app_policies.sql")),
    (15, "record_operation", include_str!("../../migrations/postgres/0015_record_operation.sql")),
    (16, "stored_responses", include_str!("../../migrations/postgres/0016_stored_responses.sql")),
    (17, "media_jobs", include_str!("../../migrations/postgres/0017_media_jobs.sql")),
    (18, "batches", include_str!("../../migrations/postgres/0018_batches.sql")),
];

impl Store {
    /// Opens a pool. `sqlite://path/to/file.db` (the file and its folder are
    /// created when missing; WAL journal; a 5 s busy timeout; foreign keys on),
    /// `sqlite::memory:` (one private in-memory database, for tests), or
    /// `postgres://user:pass@host/db` (`postgresql://` too; sqlx's URL
    /// parameters such as `sslmode` and `options` apply). Does not migrate.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Self::connect_with(url, None).await
    }

    /// As [`connect`](Self::connect), with at most `max_connections` in the
    /// pool (`None`: 10 to PostgreSQL, 8 to a SQLite file; an in-memory
    /// SQLite database always has one).
    pub async fn connect_with(
        url: &str,
        max_connections: Option<u32>,
    ) -> Result<Store, StoreError> {
        if max_connections == Some(0) {
            return Err(StoreError::Invalid("max_connections must be at least 1".into()));
        }
        if url.starts_with("sqlite:") {
            let memory = is_sqlite_memory(url);
            let mut opts = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true)
                // Pages freed by retention can be handed back to the file
                // system (`Store::reclaim`); set when the file is created (an
                // older file is converted by `migrate`).
                .auto_vacuum(SqliteAutoVacuum::Incremental);
            let mut pool = SqlitePoolOptions::new().acquire_timeout(ACQUIRE_TIMEOUT);
            if memory {
                // Every connection would see its own database: keep exactly one,
                // forever.
                pool = pool
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None);
            } else {
                opts = opts
                    .journal_mode(SqliteJournalMode::Wal)
                    .synchronous(SqliteSynchronous::Normal)
                    // 256 KiB of page cache per connection (SQLite's default is
                    // 2 MiB): audit inserts touch only the right edge of the table
                    // and its indexes (a few dozen pages); reports scan, and the OS
                    // page cache holds the file for them anyway.
                    .pragma("cache_size", "-256");
                let file = opts.get_filename();
                if let Some(dir) = file.parent()
                    && !dir.as_os_str().is_empty()
                {
                    crate::files::prepare_dir(dir, "the database folder")
                        .map_err(StoreError::Invalid)?;
                }
                // SQLite would create the file with its default 0644; made
                // here first it is the owner's only, and its -wal and -shm
                // follow it.
                crate::files::create_file_if_missing(file).map_err(|e| {
                    StoreError::Invalid(format!(
                        "cannot create the database file {}: {e}",
                        file.display()
                    ))
                })?;
                // A folder there, or a file that cannot be written, would
                // otherwise fail inside SQLite as "unable to open database
                // file", without the path.
                if !url.contains("mode=ro") {
                    crate::files::check_writable(file, "the database file")
                        .map_err(StoreError::Invalid)?;
                }
                pool = pool.max_connections(max_connections.unwrap_or(SQLITE_MAX_CONNECTIONS));
            }
            Ok(Store { pool: DbPool::Sqlite(pool.connect_with(opts).await?) })
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let opts = PgConnectOptions::from_str(url)?;
            // One direct attempt first: the pool would retry until its acquire
            // timeout and then report only "pool timed out", not why.
            let probe = sqlx::ConnectOptions::connect(&opts).await?;
            sqlx::Connection::close(probe).await?;
            let pool = PgPoolOptions::new()
                .max_connections(max_connections.unwrap_or(POSTGRES_MAX_CONNECTIONS))
                .acquire_timeout(ACQUIRE_TIMEOUT)
                .connect_with(opts)
                .await?;
            Ok(Store { pool: DbPool::Postgres(pool) })
        } else {
            // Not echoing the URL: it may carry a password.
            Err(StoreError::Invalid(
                "database URL must start with sqlite: or postgres:// (postgresql://)".into(),
            ))
        }
    }

    pub fn backend(&self) -> Backend {
        match self.pool {
            DbPool::Sqlite(_) => Backend::Sqlite,
            DbPool::Postgres(_) => Backend::Postgres,
        }
    }

    /// The underlying pool.
    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    /// Applies the embedded migrations this database has not seen yet
    /// (idempotent; concurrent callers on PostgreSQL wait on an advisory lock),
    /// then, on PostgreSQL, makes the request tables' partitions for today and
    /// the days ahead ([`Store::ensure_partitions`]).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.migrate_through(i64::MAX).await?;
        // Not fatal: it may wait out its lock timeout behind a long report on
        // another instance. Records meanwhile go to DEFAULT (moved out when
        // their day is made), and the hourly upkeep tries again.
        if let Err(e) = self.ensure_partitions().await {
            tracing::warn!("partition upkeep at start-up: {e}");
        }
        Ok(())
    }

    /// The migrations up to `version` only: a test's database as an earlier
    /// version left it, for the migration after it to run on.
    #[cfg(feature = "testing")]
    #[doc(hidden)]
    pub async fn migrate_to(&self, version: i64) -> Result<(), StoreError> {
        self.migrate_through(version).await
    }

    async fn migrate_through(&self, version: i64) -> Result<(), StoreError> {
        let m = migrator(self.backend(), version);
        on_pool!(self, |p| m.run(p).await?);
        // A newer release migrated this database: this binary runs on it, as
        // the older half of a rolling deploy or a rollback does (migrations
        // only add: docs/operations.md, "Upgrades and rolling deploys").
        let known = m.iter().map(|m| m.version).max().unwrap_or(0);
        if let Some(newest) = self.schema_version().await?.filter(|v| *v > known) {
            tracing::warn!(
                schema = newest,
                binary = known,
                "the database was migrated by a newer release; running on its schema"
            );
        }
        if let DbPool::Sqlite(p) = &self.pool {
            // A file made before retention reclaimed space: converted once, by
            // a full VACUUM (the setting alone changes nothing on a file that
            // has tables).
            let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum").fetch_one(p).await?;
            if mode != 2 {
                tracing::info!("converting the SQLite file to incremental vacuum (once)");
                sqlx::query("PRAGMA auto_vacuum = INCREMENTAL").execute(p).await?;
                sqlx::query("VACUUM").execute(p).await?;
            }
        }
        Ok(())
    }

    /// The last migration applied to this database; `None` before the first.
    pub async fn schema_version(&self) -> Result<Option<i64>, StoreError> {
        let applied: bool = on_pool!(self, |p| {
            match self.backend() {
                Backend::Sqlite => sqlx::query_scalar(
                    "SELECT COUNT(*) > 0 FROM sqlite_master \
                     WHERE type = 'table' AND name = '_sqlx_migrations'",
                ),
                Backend::Postgres => {
                    sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
                }
            }
            .fetch_one(p)
            .await?
        });
        if !applied {
            return Ok(None);
        }
        Ok(on_pool!(self, |p| {
            sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations").fetch_one(p).await?
        }))
    }

    /// Hands the pages deleted rows freed back to the file system, so the file
    /// shrinks with retention (SQLite's incremental vacuum). PostgreSQL's
    /// autovacuum reuses them in place: nothing to do there.
    pub async fn reclaim(&self) -> Result<(), StoreError> {
        if let DbPool::Sqlite(p) = &self.pool {
            sqlx::query("PRAGMA incremental_vacuum").execute(p).await?;
        }
        Ok(())
    }

    /// One round trip, for health checks.
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(self, |p| sqlx::query("SELECT 1").execute(p).await?.rows_affected());
        Ok(())
    }

    /// Closes the pool, waiting for connections in use to come back.
    pub async fn close(&self) {
        on_pool!(self, |p| p.close().await)
    }
}

/// The migrations up to `through`. Versions the database has and this binary
/// does not know are a newer release's, and allowed: an older binary keeps
/// running on the schema a newer one migrated, during a rolling deploy and
/// after a rollback. That holds because migrations only add (the rule in
/// docs/operations.md).
fn migrator(backend: Backend, through: i64) -> Migrator {
    let files = match backend {
        Backend::Sqlite => SQLITE_MIGRATIONS,
        Backend::Postgres => POSTGRES_MIGRATIONS,
    };
    let mut m = Migrator::with_migrations(
        files
            .iter()
            .filter(|(version, _, _)| *version <= through)
            .map(|(version, description, sql)| {
                Migration::new(
                    *version,
                    (*description).into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    );
    m.set_ignore_missing(true);
    m
}

fn is_sqlite_memory(url: &str) -> bool {
    let rest = url.trim_start_matches("sqlite:").trim_start_matches("//");
    rest.starts_with(":memory:") || url.contains("mode=memory")
}

// ------------------------------------------------- helpers every entity uses

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn random_bytes<const N: usize>() -> Result<[u8; N], StoreError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|e| StoreError::Random(e.to_string()))?;
    Ok(buf)
}

/// `<prefix>_` and 24 hex characters (96 random bits).
pub(crate) fn new_id(prefix: &str) -> Result<String, StoreError> {
    Ok(format!("{prefix}_{}", hex(&random_bytes::<12>()?)))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

fn non_empty(what: &str, s: &str) -> Result<String, StoreError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(StoreError::Invalid(format!("{what} is empty")));
    }
    Ok(s.to_owned())
}

fn found(rows: u64, what: &'static str, id: &str) -> Result<(), StoreError> {
    if rows == 0 { Err(StoreError::not_found(what, id)) } else { Ok(()) }
}

// ------------------------------------------------------------- row decoding

/// A Rust type both drivers decode.
pub(crate) trait Col:
    for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}
impl<T> Col for T where
    T: for<'r> Decode<'r, Sqlite> + Type<Sqlite> + for<'r> Decode<'r, Postgres> + Type<Postgres>
{
}

/// Reads a column of either driver's row, so row mappers are written once.
pub(crate) trait RowExt {
    fn col<T: Col>(&self, name: &str) -> Result<T, StoreError>;
}

macro_rules! impl_row_ext {
    ($($row:ty),+) => {$(
        impl RowExt for $row {
            fn col<T: Col>(&self, name: &str) -> Result<T, StoreError> {
                self.try_get(name).map_err(|e| StoreError::Corrupt(format!("column {name}: {e}")))
            }
        }
    )+};
}
impl_row_ext!(SqliteRow, PgRow);

/// A stored role (users and rules hold one).
fn role(s: &str) -> Result<CallerRole, StoreError> {
    CallerRole::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown role {s:?}")))
}

#[cfg(test)]
mod tests;
