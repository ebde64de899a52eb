//! Test support (cargo feature `testing`; not part of the production API): a
//! fresh, migrated database per test, on either backend, removed afterwards.
//!
//! * [`sqlite_temp`]: a new SQLite file in the temp folder (WAL and all).
//! * [`postgres`]: a new schema in the database at `SWITCHYARD_TEST_POSTGRES_URL`.
//!   The [`TestDb::url`] carries `options=-c search_path=<schema>`, so every
//!   connection made with it (the [`TestDb::store`], or a `switchyard` process
//!   given the URL in a config file) sees only that schema. With the variable
//!   unset, or the server unreachable, it prints `SKIPPED: postgres tests (…)`
//!   once per test binary and returns `None` (the test then passes without
//!   running), unless `SWITCHYARD_REQUIRE_POSTGRES=1` (CI sets both), which turns
//!   either into a panic.
//!
//! A backend-generic test is written once as `async fn case_x(db: TestDb)` and run
//! by two thin wrappers:
//!
//! ```text
//! #[tokio::test]
//! async fn x_sqlite() {
//!     case_x(testing::sqlite_temp().await).await
//! }
//! #[tokio::test]
//! async fn x_postgres() {
//!     if let Some(db) = testing::postgres().await {
//!         case_x(db).await
//!     }
//! }
//! ```
//!
//! The database is removed when the [`TestDb`] is dropped, also when the case
//! panics: the file(s) are deleted, the schema is dropped (after ending any
//! connection of the test still open, so a server or audit writer that outlived
//! the case cannot hold it up). [`TestDb::cleanup`] does the same after closing the
//! store's pool, without blocking the runtime. A database that cannot be removed
//! is reported on stderr and left behind; it never fails the test.
//!
//! **Panics.** Every function here panics when it cannot set up the database
//! (these are test fixtures: a failed setup is a failed test).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use sqlx::Connection as _;

use crate::{Backend, Store};

/// The PostgreSQL server to test against (a URL, e.g.
/// `postgres://postgres@127.0.0.1:5432/postgres`).
pub const POSTGRES_URL_VAR: &str = "SWITCHYARD_TEST_POSTGRES_URL";
/// `1`: a missing [`POSTGRES_URL_VAR`] or an unreachable server fails the test
/// instead of skipping it.
pub const REQUIRE_POSTGRES_VAR: &str = "SWITCHYARD_REQUIRE_POSTGRES";

/// How long a schema drop waits for locks before giving up (and reporting).
const DROP_LOCK_TIMEOUT: &str = "10s";
/// How long [`TestDb::cleanup`] waits for the pool's connections to come back.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

/// A fresh, migrated database for one test; removed on drop.
pub struct TestDb {
    store: Store,
    url: String,
    sqlite_path: Option<PathBuf>,
    // Declared last: dropped after `store`.
    guard: Guard,
}

impl std::fmt::Debug for TestDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password.
        f.debug_struct("TestDb").field("backend", &self.backend()).finish_non_exhaustive()
    }
}

impl TestDb {
    /// The store, connected and migrated (clone it freely; clones share the pool).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// A URL that reaches this database and nothing else: `sqlite:///tmp/….db`, or
    /// the server's URL with `options=-c search_path=<schema>` added.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn backend(&self) -> Backend {
        self.store.backend()
    }

    /// The SQLite file (`None` on PostgreSQL).
    pub fn sqlite_path(&self) -> Option<&Path> {
        self.sqlite_path.as_deref()
    }

    /// Closes the store's pool (waiting up to 10 s for connections in use), then
    /// removes the database. Dropping the `TestDb` removes it too, blocking the
    /// current thread while it does.
    pub async fn cleanup(mut self) {
        let _ = tokio::time::timeout(CLOSE_TIMEOUT, self.store.close()).await;
        if let Some(target) = self.guard.0.take() {
            target.remove().await;
        }
    }
}

/// A fresh SQLite database in a new file in the temp folder, migrated.
pub async fn sqlite_temp() -> TestDb {
    sqlite_temp_through(LATEST).await
}

/// [`sqlite_temp`] migrated up to `version` only: the database an earlier
/// version left, for a test of the migrations after it.
#[allow(clippy::panic, reason = "test fixture: a failed setup fails the test (documented)")]
pub async fn sqlite_temp_through(version: i64) -> TestDb {
    let path = std::env::temp_dir().join(format!("{}.db", unique("switchyard_test")));
    let guard = Guard(Some(Target::Sqlite(path.clone())));
    let url = format!("sqlite://{}", path.display());
    let store = match Store::connect(&url).await {
        Ok(s) => s,
        Err(e) => panic!("cannot open the test database {url}: {e}"),
    };
    if let Err(e) = migrate(&store, version).await {
        panic!("cannot migrate the test database {url}: {e}");
    }
    TestDb { store, url, sqlite_path: Some(path), guard }
}

/// A fresh PostgreSQL schema at `SWITCHYARD_TEST_POSTGRES_URL`, migrated; `None`
/// (after saying `SKIPPED: …` once) when the variable is unset or the server is
/// unreachable. Panics instead when `SWITCHYARD_REQUIRE_POSTGRES=1`.
pub async fn postgres() -> Option<TestDb> {
    postgres_through(LATEST).await
}

/// [`postgres`] migrated up to `version` only (see [`sqlite_temp_through`]).
#[allow(clippy::panic, reason = "test fixture: a failed setup fails the test (documented)")]
pub async fn postgres_through(version: i64) -> Option<TestDb> {
    let required = std::env::var(REQUIRE_POSTGRES_VAR).is_ok_and(|v| v == "1");
    let Some(base) = std::env::var(POSTGRES_URL_VAR).ok().filter(|u| !u.is_empty()) else {
        if required {
            panic!("{REQUIRE_POSTGRES_VAR}=1 but {POSTGRES_URL_VAR} is not set");
        }
        skipped(&format!("set {POSTGRES_URL_VAR}"));
        return None;
    };
    let mut admin = match sqlx::PgConnection::connect(&base).await {
        Ok(c) => c,
        Err(e) if !required => {
            skipped(&format!("server unreachable: {e}"));
            return None;
        }
        Err(e) => panic!("{REQUIRE_POSTGRES_VAR}=1 but the PostgreSQL server is unreachable: {e}"),
    };
    // Lower-case letters, digits and underscores: a plain identifier.
    let schema = unique("sy_test");
    let created = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&mut admin)
        .await;
    let _ = admin.close().await;
    if let Err(e) = created {
        panic!("cannot create the test schema {schema}: {e}");
    }
    // From here on a panic drops the guard, which drops the schema.
    let guard = Guard(Some(Target::Postgres { base: base.clone(), schema: schema.clone() }));
    // The schema doubles as the application name, by which a drop finds the
    // connections still open to it.
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}&application_name={schema}");
    let store = match Store::connect(&url).await {
        Ok(s) => s,
        Err(e) => panic!("cannot connect to the test schema {schema}: {e}"),
    };
    if let Err(e) = migrate(&store, version).await {
        panic!("cannot migrate the test schema {schema}: {e}");
    }
    Some(TestDb { store, url, sqlite_path: None, guard })
}

/// Every migration, as [`Store::migrate`] applies them.
const LATEST: i64 = i64::MAX;

/// [`Store::migrate`] (partitions made and all) for [`LATEST`], else the
/// migrations through `version` alone.
async fn migrate(store: &Store, version: i64) -> Result<(), crate::StoreError> {
    if version == LATEST { store.migrate().await } else { store.migrate_to(version).await }
}

/// Says once per test binary, past libtest's output capture, that PostgreSQL
/// tests did not run.
fn skipped(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = writeln!(std::io::stderr(), "SKIPPED: postgres tests ({why})");
    });
}

/// The Redis server for shared-state tests.
pub const REDIS_URL_VAR: &str = "SWITCHYARD_TEST_REDIS_URL";
/// `1`: a missing [`REDIS_URL_VAR`] or an unreachable server fails the test
/// instead of skipping it (CI sets both).
pub const REQUIRE_REDIS_VAR: &str = "SWITCHYARD_REQUIRE_REDIS";

/// The Redis URL at `SWITCHYARD_TEST_REDIS_URL` and a key prefix no other test
/// uses, once the server answers a `PING`; `None` (after saying `SKIPPED: redis
/// tests (…)` once) when unset or unreachable, unless `SWITCHYARD_REQUIRE_REDIS=1`,
/// which turns either into a panic.
#[allow(clippy::panic, reason = "test fixture: a failed setup fails the test (documented)")]
pub async fn redis() -> Option<(String, String)> {
    let required = std::env::var(REQUIRE_REDIS_VAR).is_ok_and(|v| v == "1");
    let Some(url) = std::env::var(REDIS_URL_VAR).ok().filter(|u| !u.is_empty()) else {
        if required {
            panic!("{REQUIRE_REDIS_VAR}=1 but {REDIS_URL_VAR} is not set");
        }
        skipped_redis(&format!("set {REDIS_URL_VAR}"));
        return None;
    };
    let prefix = unique("sytest");
    let probe = crate::redis::RedisCounters::new(&url, &prefix, std::time::Duration::from_secs(2));
    match probe.map(|c| async move { c.ping().await }) {
        Ok(ping) => match ping.await {
            Ok(()) => Some((url, prefix)),
            Err(e) if required => panic!("{REQUIRE_REDIS_VAR}=1 but Redis is unreachable: {e}"),
            Err(e) => {
                skipped_redis(&format!("{url} unreachable: {e}"));
                None
            }
        },
        Err(e) => panic!("{REDIS_URL_VAR}: {e}"),
    }
}

fn skipped_redis(why: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = writeln!(std::io::stderr(), "SKIPPED: redis tests ({why})");
    });
}

/// A name no other test (in this process or another) is using.
fn unique(prefix: &str) -> String {
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{prefix}_{}_{}_{nanos}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed))
}

/// What to remove.
enum Target {
    Sqlite(PathBuf),
    Postgres { base: String, schema: String },
}

impl Target {
    async fn remove(self) {
        match self {
            Target::Sqlite(path) => remove_sqlite(&path),
            Target::Postgres { base, schema } => {
                if let Err(e) = drop_schema(&base, &schema).await {
                    warn(&format!("cannot drop the test schema {schema}: {e}"));
                }
            }
        }
    }

    /// [`Target::remove`] from synchronous code (a `Drop`), inside a runtime or
    /// not: PostgreSQL work runs on a thread of its own with its own runtime.
    fn remove_blocking(self) {
        match self {
            Target::Sqlite(path) => remove_sqlite(&path),
            postgres @ Target::Postgres { .. } => {
                let worker = std::thread::Builder::new()
                    .name("switchyard-test-db-drop".into())
                    .spawn(move || {
                        match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                            Ok(rt) => rt.block_on(postgres.remove()),
                            Err(e) => warn(&format!("cannot drop a test schema: {e}")),
                        }
                    });
                match worker {
                    Ok(handle) => {
                        let _ = handle.join();
                    }
                    Err(e) => warn(&format!("cannot drop a test schema: {e}")),
                }
            }
        }
    }
}

/// Removes the target when dropped, unless it was already removed.
struct Guard(Option<Target>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(target) = self.0.take() {
            target.remove_blocking();
        }
    }
}

fn remove_sqlite(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

async fn drop_schema(base: &str, schema: &str) -> Result<(), sqlx::Error> {
    let mut admin = sqlx::PgConnection::connect(base).await?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("SET lock_timeout = '{DROP_LOCK_TIMEOUT}'")))
        .execute(&mut admin)
        .await?;
    // Connections the test left open (its pool, a server still shutting down)
    // could be inside a transaction holding a lock the drop needs. Ending them is
    // best effort: a role may only end its own connections.
    let _ = sqlx::query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid()",
    )
    .bind(schema)
    .execute(&mut admin)
    .await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")))
        .execute(&mut admin)
        .await?;
    admin.close().await
}

fn warn(msg: &str) {
    let _ = writeln!(std::io::stderr(), "switchyard-store testing: {msg}");
}

/// Two `#[tokio::test]`s per case, one per backend, each on a fresh database:
/// `on_both_backends! { case_fn => sqlite_test_name, postgres_test_name; … }`.
/// Each `case_fn` is an `async fn(TestDb)`; the PostgreSQL test passes as skipped
/// (see [`postgres`]) when no server is configured.
#[macro_export]
macro_rules! on_both_backends {
    ($($case:ident => $sqlite:ident, $postgres:ident;)+) => {
        $(
            #[tokio::test]
            async fn $sqlite() {
                $case($crate::testing::sqlite_temp().await).await
            }
            #[tokio::test]
            async fn $postgres() {
                if let Some(db) = $crate::testing::postgres().await {
                    $case(db).await
                }
            }
        )+
    };
}
