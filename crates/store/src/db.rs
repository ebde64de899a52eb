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

use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{Decode, Postgres, Row, SqlSafeStr, Sqlite, Type};

use crate::error::StoreError;
use crate::model::*;

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

/// The embedded migrations: (version, description, SQL) per backend. Files
/// follow sqlx's naming (`<version>_<description>.sql`) so the sqlx CLI can read
/// the folders too; a unit test checks that every file is listed here.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] =
    &[(1, "init", include_str!("../migrations/sqlite/0001_init.sql"))];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] =
    &[(1, "init", include_str!("../migrations/postgres/0001_init.sql"))];

impl Store {
    /// Opens a pool. `sqlite://path/to/file.db` (the file and its folder are
    /// created when missing; WAL journal; a 5 s busy timeout; foreign keys on),
    /// `sqlite::memory:` (one private in-memory database, for tests), or
    /// `postgres://user:pass@host/db` (`postgresql://` too; sqlx's URL
    /// parameters such as `sslmode` and `options` apply). Does not migrate.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        if url.starts_with("sqlite:") {
            let memory = is_sqlite_memory(url);
            let mut opts = SqliteConnectOptions::from_str(url)?
                .create_if_missing(true)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
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
                if let Some(dir) = opts.get_filename().parent()
                    && !dir.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(dir).map_err(|e| {
                        StoreError::Invalid(format!(
                            "cannot create the database folder {}: {e}",
                            dir.display()
                        ))
                    })?;
                }
                pool = pool.max_connections(SQLITE_MAX_CONNECTIONS);
            }
            Ok(Store { pool: DbPool::Sqlite(pool.connect_with(opts).await?) })
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let opts = PgConnectOptions::from_str(url)?;
            // One direct attempt first: the pool would retry until its acquire
            // timeout and then report only "pool timed out", not why.
            let probe = sqlx::ConnectOptions::connect(&opts).await?;
            sqlx::Connection::close(probe).await?;
            let pool = PgPoolOptions::new()
                .max_connections(POSTGRES_MAX_CONNECTIONS)
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
    /// (idempotent; concurrent callers on PostgreSQL wait on an advisory lock).
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let m = migrator(self.backend());
        on_pool!(self, |p| m.run(p).await?);
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

    // ---------------------------------------------------------------- users

    /// Creates a user and, unless `u.project_id` names an existing project, their
    /// primary project (named after the email's local part, `-2`, `-3`… when
    /// taken). The user becomes a member of the primary project.
    pub async fn create_user(&self, u: NewUser) -> Result<User, StoreError> {
        let email = normalize_email(&u.email)?;
        let name = u.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
        let id = new_id("usr")?;
        let now = now_ms();
        let fresh_project = match &u.project_id {
            Some(_) => None,
            None => Some(new_id("prj")?),
        };
        let local = email.split('@').next().unwrap_or_default().to_owned();
        let sqlite = self.backend() == Backend::Sqlite;
        on_pool!(self, |p| {
            // Reads, then writes: on SQLite take the write lock up front (a deferred
            // transaction could not upgrade past a concurrent writer and would fail
            // with SQLITE_BUSY instead of waiting).
            let mut tx =
                if sqlite { p.begin_with(SQLITE_BEGIN_WRITE).await? } else { p.begin().await? };
            let taken: Option<String> = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
                .bind(&email)
                .fetch_optional(&mut *tx)
                .await?;
            if taken.is_some() {
                return Err(StoreError::Conflict("a user with this email".into()));
            }
            let project_id = match (&u.project_id, &fresh_project) {
                (Some(given), _) => {
                    let found: Option<String> =
                        sqlx::query_scalar("SELECT id FROM projects WHERE id = $1")
                            .bind(given)
                            .fetch_optional(&mut *tx)
                            .await?;
                    found.ok_or_else(|| StoreError::not_found("project", given))?
                }
                (None, Some(pid)) => {
                    // The first free name of `alice`, `alice-2`, `alice-3`, …; the
                    // insert skips taken names itself, so concurrent sign-ups on
                    // PostgreSQL cannot both claim one.
                    let mut n = 1u32;
                    loop {
                        let name = match n {
                            1 => local.clone(),
                            2..=1000 => format!("{local}-{n}"),
                            _ => format!("{local}-{}", pid.trim_start_matches("prj_")),
                        };
                        let inserted = sqlx::query(
                            "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) \
                             ON CONFLICT (name) DO NOTHING",
                        )
                        .bind(pid)
                        .bind(&name)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                        if inserted == 1 {
                            break;
                        }
                        if n > 1000 {
                            return Err(StoreError::Conflict(format!("a project named {name}")));
                        }
                        n += 1;
                    }
                    pid.clone()
                }
                (None, None) => return Err(StoreError::Invalid("no project".into())),
            };
            sqlx::query(
                "INSERT INTO users (id, email, name, role, primary_project_id, disabled, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&id)
            .bind(&email)
            .bind(&name)
            .bind(u.role.as_str())
            .bind(&project_id)
            .bind(false)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::on_write("a user with this email", "project", &project_id))?;
            sqlx::query(
                "INSERT INTO project_members (project_id, user_id, created_at) VALUES ($1, $2, $3)",
            )
            .bind(&project_id)
            .bind(&id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(User {
                id,
                email,
                name,
                role: u.role,
                primary_project_id: Some(project_id),
                disabled: false,
                created_at: now,
            })
        })
    }

    pub async fn user(&self, id: &str) -> Result<Option<User>, StoreError> {
        let sql = const_format!("SELECT ", USER_COLS, " FROM users WHERE id = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(user_from).transpose()
        })
    }

    /// By email, case-insensitively.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError> {
        let email = email.trim().to_lowercase();
        let sql = const_format!("SELECT ", USER_COLS, " FROM users WHERE email = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(&email).fetch_optional(p).await?;
            row.as_ref().map(user_from).transpose()
        })
    }

    /// Every user, by email.
    pub async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let sql = const_format!("SELECT ", USER_COLS, " FROM users ORDER BY email");
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).fetch_all(p).await?;
            rows.iter().map(user_from).collect()
        })
    }

    pub async fn set_user_role(&self, id: &str, role: Role) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
            .bind(id)
            .bind(role.as_str())
            .execute(p)
            .await?
            .rows_affected());
        found(n, "user", id)
    }

    /// Marks the user disabled (their keys stop working; nothing is deleted).
    pub async fn disable_user(&self, id: &str) -> Result<(), StoreError> {
        self.set_disabled(id, true).await
    }

    pub async fn enable_user(&self, id: &str) -> Result<(), StoreError> {
        self.set_disabled(id, false).await
    }

    async fn set_disabled(&self, id: &str, disabled: bool) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query("UPDATE users SET disabled = $2 WHERE id = $1")
            .bind(id)
            .bind(disabled)
            .execute(p)
            .await?
            .rows_affected());
        found(n, "user", id)
    }

    // ------------------------------------------------------------- projects

    pub async fn create_project(&self, name: &str) -> Result<Project, StoreError> {
        let name = non_empty("project name", name)?;
        let id = new_id("prj")?;
        let now = now_ms();
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)"
        )
        .bind(&id)
        .bind(&name)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a project with this name", "project", &id))?
        .rows_affected());
        Ok(Project {
            id,
            name,
            log_content: false,
            content_cap_bytes: DEFAULT_CONTENT_CAP,
            created_at: now,
        })
    }

    pub async fn project(&self, id: &str) -> Result<Option<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects WHERE id = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(project_from).transpose()
        })
    }

    pub async fn project_by_name(&self, name: &str) -> Result<Option<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects WHERE name = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(name).fetch_optional(p).await?;
            row.as_ref().map(project_from).transpose()
        })
    }

    /// Every project, by name.
    pub async fn list_projects(&self) -> Result<Vec<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects ORDER BY name");
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).fetch_all(p).await?;
            rows.iter().map(project_from).collect()
        })
    }

    /// Whether request content is logged for the project, and up to how many bytes.
    pub async fn set_project_content(
        &self,
        id: &str,
        log_content: bool,
        cap_bytes: u32,
    ) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query(
            "UPDATE projects SET log_content = $2, content_cap_bytes = $3 WHERE id = $1",
        )
        .bind(id)
        .bind(log_content)
        .bind(i64::from(cap_bytes))
        .execute(p)
        .await?
        .rows_affected());
        found(n, "project", id)
    }

    /// Adds `user` to `project` (both ids; already a member is fine).
    pub async fn add_project_member(&self, project: &str, user: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let both = format!("{project}/{user}");
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO project_members (project_id, user_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (project_id, user_id) DO NOTHING",
        )
        .bind(project)
        .bind(user)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("membership", "project or user", &both))?
        .rows_affected());
        Ok(())
    }

    /// The projects `user` is a member of, by name.
    pub async fn projects_of(&self, user: &str) -> Result<Vec<Project>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            PROJECT_COLS_P,
            " FROM projects p JOIN project_members m ON m.project_id = p.id \
              WHERE m.user_id = $1 ORDER BY p.name"
        );
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(user).fetch_all(p).await?;
            rows.iter().map(project_from).collect()
        })
    }

    // --------------------------------------------------------------- groups

    pub async fn create_group(&self, name: &str) -> Result<Group, StoreError> {
        let name = non_empty("group name", name)?;
        let id = new_id("grp")?;
        let now = now_ms();
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO groups (id, name, created_at) VALUES ($1, $2, $3)"
        )
        .bind(&id)
        .bind(&name)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a group with this name", "group", &id))?
        .rows_affected());
        Ok(Group { id, name, created_at: now })
    }

    pub async fn group_by_name(&self, name: &str) -> Result<Option<Group>, StoreError> {
        on_pool!(self, |p| {
            let row = sqlx::query("SELECT id, name, created_at FROM groups WHERE name = $1")
                .bind(name)
                .fetch_optional(p)
                .await?;
            row.as_ref().map(group_from).transpose()
        })
    }

    /// Adds `user` to `group` (both ids; already a member is fine).
    pub async fn add_group_member(&self, group: &str, user: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let both = format!("{group}/{user}");
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO group_members (group_id, user_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (group_id, user_id) DO NOTHING",
        )
        .bind(group)
        .bind(user)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("membership", "group or user", &both))?
        .rows_affected());
        Ok(())
    }

    /// The names of the groups `user` belongs to, sorted (what access rules match).
    pub async fn groups_of(&self, user: &str) -> Result<Vec<String>, StoreError> {
        on_pool!(self, |p| {
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.id \
                 WHERE m.user_id = $1 ORDER BY g.name",
            )
            .bind(user)
            .fetch_all(p)
            .await?;
            Ok(names)
        })
    }

    /// Every group, by name.
    pub async fn list_groups(&self) -> Result<Vec<Group>, StoreError> {
        on_pool!(self, |p| {
            let rows = sqlx::query("SELECT id, name, created_at FROM groups ORDER BY name")
                .fetch_all(p)
                .await?;
            rows.iter().map(group_from).collect()
        })
    }

    // ------------------------------------------------------------- API keys

    /// Creates a key and returns it with its secret, which is not stored (only its
    /// SHA-256 is) and cannot be shown again. The secret is `sy-` followed by 40
    /// URL-safe random characters (240 bits); its first 11 characters are the
    /// visible prefix.
    pub async fn create_key(&self, k: NewKey) -> Result<(ApiKey, String), StoreError> {
        if let Some(models) = &k.allowed_models
            && models.iter().any(|m| m.trim().is_empty())
        {
            return Err(StoreError::Invalid("allowed_models holds an empty pattern".into()));
        }
        let secret = new_secret()?;
        let key = ApiKey {
            id: new_id("key")?,
            prefix: secret[..KEY_PREFIX_LEN].to_owned(),
            user_id: k.user_id,
            project_id: k.project_id,
            label: k.label,
            allowed_models: k.allowed_models,
            created_at: now_ms(),
            expires_at: k.expires_at,
            revoked_at: None,
            last_used_at: None,
        };
        let models = key
            .allowed_models
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| StoreError::Invalid(format!("allowed_models: {e}")))?;
        let hash = hash_secret(&secret);
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO api_keys (id, prefix, hash, user_id, project_id, label, allowed_models, \
             created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&key.id)
        .bind(&key.prefix)
        .bind(&hash)
        .bind(&key.user_id)
        .bind(&key.project_id)
        .bind(&key.label)
        .bind(&models)
        .bind(key.created_at)
        .bind(key.expires_at)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a key with this hash", "user or project", &key.user_id))?
        .rows_affected());
        Ok((key, secret))
    }

    /// The key whose secret this is, revoked and expired ones included (the caller
    /// decides; see [`ApiKey::is_active`]).
    pub async fn key_by_secret(&self, secret: &str) -> Result<Option<ApiKey>, StoreError> {
        let hash = hash_secret(secret);
        let sql = const_format!("SELECT ", KEY_COLS, " FROM api_keys WHERE hash = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(&hash).fetch_optional(p).await?;
            row.as_ref().map(key_from).transpose()
        })
    }

    pub async fn key(&self, id: &str) -> Result<Option<ApiKey>, StoreError> {
        let sql = const_format!("SELECT ", KEY_COLS, " FROM api_keys WHERE id = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(key_from).transpose()
        })
    }

    /// Keys of one user (or all), newest first.
    pub async fn list_keys(&self, user: Option<&str>) -> Result<Vec<ApiKey>, StoreError> {
        on_pool!(self, |p| {
            let rows = match user {
                Some(u) => {
                    let sql = const_format!(
                        "SELECT ",
                        KEY_COLS,
                        " FROM api_keys WHERE user_id = $1 ORDER BY created_at DESC, id"
                    );
                    sqlx::query(sql).bind(u).fetch_all(p).await?
                }
                None => {
                    let sql = const_format!(
                        "SELECT ",
                        KEY_COLS,
                        " FROM api_keys ORDER BY created_at DESC, id"
                    );
                    sqlx::query(sql).fetch_all(p).await?
                }
            };
            rows.iter().map(key_from).collect()
        })
    }

    /// Revokes the key now (a second revocation keeps the first time).
    pub async fn revoke_key(&self, id: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let n = on_pool!(self, |p| sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1",
        )
        .bind(id)
        .bind(now)
        .execute(p)
        .await?
        .rows_affected());
        found(n, "key", id)
    }

    /// Records a use of the key at `now_ms` (never moves the time backwards; an
    /// unknown id is ignored).
    pub async fn touch_key(&self, id: &str, now_ms: i64) -> Result<(), StoreError> {
        on_pool!(self, |p| sqlx::query(
            "UPDATE api_keys SET last_used_at = $2 \
             WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
        )
        .bind(id)
        .bind(now_ms)
        .execute(p)
        .await?
        .rows_affected());
        Ok(())
    }

    // --------------------------------------------------------- access rules

    pub async fn create_rule(&self, r: NewRule) -> Result<Rule, StoreError> {
        let name = non_empty("rule name", &r.name)?;
        if r.pattern.trim().is_empty() {
            return Err(StoreError::Invalid("rule pattern is empty".into()));
        }
        let (kind, subject) = subject_parts(&r.subject)?;
        let subject = subject.map(str::to_owned);
        let rule = Rule { id: new_id("rul")?, rule: NewRule { name, ..r }, created_at: now_ms() };
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO access_rules (id, name, effect, pattern, subject_kind, subject, reason, \
             priority, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(&rule.id)
        .bind(&rule.rule.name)
        .bind(effect_str(rule.rule.effect))
        .bind(&rule.rule.pattern)
        .bind(kind)
        .bind(subject)
        .bind(&rule.rule.reason)
        .bind(rule.rule.priority)
        .bind(rule.created_at)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a rule with this name", "rule", &rule.id))?
        .rows_affected());
        Ok(rule)
    }

    /// Every rule, highest priority first, then by name.
    pub async fn list_rules(&self) -> Result<Vec<Rule>, StoreError> {
        on_pool!(self, |p| {
            let rows = sqlx::query(
                "SELECT id, name, effect, pattern, subject_kind, subject, reason, priority, created_at \
                 FROM access_rules ORDER BY priority DESC, name",
            )
            .fetch_all(p)
            .await?;
            rows.iter().map(rule_from).collect()
        })
    }

    /// Deletes the rule with this id or name; false when there was none.
    pub async fn delete_rule(&self, name_or_id: &str) -> Result<bool, StoreError> {
        let n =
            on_pool!(self, |p| sqlx::query("DELETE FROM access_rules WHERE id = $1 OR name = $1")
                .bind(name_or_id)
                .execute(p)
                .await?
                .rows_affected());
        Ok(n > 0)
    }

    // ------------------------------------------------------ BYOK (sealed)

    /// A fresh credential row id. The sealing module binds the row id into the
    /// ciphertext, so a caller takes an id here, seals with it, then calls
    /// [`Store::put_credential`] with the same id.
    pub fn new_credential_id(&self) -> Result<String, StoreError> {
        new_id("crd")
    }

    /// Stores a sealed credential under `c.id`. The owner's earlier credential for
    /// the same provider, if any, is replaced, id included (its ciphertext was
    /// bound to the old id; the new one to `c.id`); its creation time is kept.
    pub async fn put_credential(&self, c: NewCredential) -> Result<CredentialRow, StoreError> {
        for (what, v) in [
            ("id", &c.id),
            ("owner id", &c.owner_id),
            ("provider", &c.provider),
            ("key id", &c.key_id),
            ("nonce", &c.nonce),
            ("ciphertext", &c.ciphertext),
        ] {
            if v.is_empty() {
                return Err(StoreError::Invalid(format!("credential {what} is empty")));
            }
        }
        let now = now_ms();
        let sql = const_format!(
            "INSERT INTO provider_credentials (id, owner_kind, owner_id, provider, key_id, nonce, \
             ciphertext, fingerprint, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) \
             ON CONFLICT (owner_kind, owner_id, provider) DO UPDATE SET id = excluded.id, \
             key_id = excluded.key_id, nonce = excluded.nonce, ciphertext = excluded.ciphertext, \
             fingerprint = excluded.fingerprint, updated_at = excluded.updated_at \
             RETURNING ",
            CRED_COLS
        );
        on_pool!(self, |p| {
            let row = sqlx::query(sql)
                .bind(&c.id)
                .bind(c.owner_kind.as_str())
                .bind(&c.owner_id)
                .bind(&c.provider)
                .bind(&c.key_id)
                .bind(&c.nonce)
                .bind(&c.ciphertext)
                .bind(&c.fingerprint)
                .bind(now)
                .fetch_one(p)
                .await
                .map_err(StoreError::on_write("a credential with this id", "credential", &c.id))?;
            cred_from(&row)
        })
    }

    pub async fn credential(
        &self,
        owner_kind: OwnerKind,
        owner_id: &str,
        provider: &str,
    ) -> Result<Option<CredentialRow>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            CRED_COLS,
            " FROM provider_credentials WHERE owner_kind = $1 AND owner_id = $2 AND provider = $3"
        );
        on_pool!(self, |p| {
            let row = sqlx::query(sql)
                .bind(owner_kind.as_str())
                .bind(owner_id)
                .bind(provider)
                .fetch_optional(p)
                .await?;
            row.as_ref().map(cred_from).transpose()
        })
    }

    /// Credentials of one owner (or all), without the sealed fields.
    pub async fn list_credentials(
        &self,
        owner: Option<(OwnerKind, &str)>,
    ) -> Result<Vec<CredentialInfo>, StoreError> {
        on_pool!(self, |p| {
            let rows = match owner {
                Some((kind, id)) => {
                    let sql = const_format!(
                        "SELECT ",
                        CRED_INFO_COLS,
                        " FROM provider_credentials WHERE owner_kind = $1 AND owner_id = $2 ORDER BY provider"
                    );
                    sqlx::query(sql).bind(kind.as_str()).bind(id).fetch_all(p).await?
                }
                None => {
                    let sql = const_format!(
                        "SELECT ",
                        CRED_INFO_COLS,
                        " FROM provider_credentials ORDER BY owner_kind, owner_id, provider"
                    );
                    sqlx::query(sql).fetch_all(p).await?
                }
            };
            rows.iter().map(cred_info_from).collect()
        })
    }

    /// Every credential with its sealed fields (for re-sealing under a new key).
    pub async fn all_credentials(&self) -> Result<Vec<CredentialRow>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            CRED_COLS,
            " FROM provider_credentials ORDER BY owner_kind, owner_id, provider"
        );
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).fetch_all(p).await?;
            rows.iter().map(cred_from).collect()
        })
    }

    /// Replaces the sealed fields of credential `id` (re-sealing under a new key:
    /// same row id, new key id, nonce, ciphertext and fingerprint). A credential
    /// replaced meanwhile has a new id, so a stale re-seal finds nothing
    /// ([`StoreError::NotFound`]) instead of overwriting it.
    pub async fn update_sealed(
        &self,
        id: &str,
        key_id: &str,
        nonce: &str,
        ciphertext: &str,
        fingerprint: &str,
    ) -> Result<(), StoreError> {
        if key_id.is_empty() || nonce.is_empty() || ciphertext.is_empty() {
            return Err(StoreError::Invalid("sealed fields must not be empty".into()));
        }
        let now = now_ms();
        let n = on_pool!(self, |p| sqlx::query(
            "UPDATE provider_credentials SET key_id = $2, nonce = $3, ciphertext = $4, \
             fingerprint = $5, updated_at = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(key_id)
        .bind(nonce)
        .bind(ciphertext)
        .bind(fingerprint)
        .bind(now)
        .execute(p)
        .await?
        .rows_affected());
        found(n, "credential", id)
    }

    /// Deletes the owner's credential for `provider`; false when there was none.
    pub async fn delete_credential(
        &self,
        owner_kind: OwnerKind,
        owner_id: &str,
        provider: &str,
    ) -> Result<bool, StoreError> {
        let n = on_pool!(self, |p| {
            sqlx::query(
            "DELETE FROM provider_credentials WHERE owner_kind = $1 AND owner_id = $2 AND provider = $3",
        )
        .bind(owner_kind.as_str())
        .bind(owner_id)
        .bind(provider)
        .execute(p)
        .await?
        .rows_affected()
        });
        Ok(n > 0)
    }
}

fn migrator(backend: Backend) -> Migrator {
    let files = match backend {
        Backend::Sqlite => SQLITE_MIGRATIONS,
        Backend::Postgres => POSTGRES_MIGRATIONS,
    };
    Migrator::with_migrations(
        files
            .iter()
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
    )
}

fn is_sqlite_memory(url: &str) -> bool {
    let rest = url.trim_start_matches("sqlite:").trim_start_matches("//");
    rest.starts_with(":memory:") || url.contains("mode=memory")
}

// ------------------------------------------------------------------ helpers

/// Length of a key's visible prefix: `sy-` and 8 characters.
pub(crate) const KEY_PREFIX_LEN: usize = 11;
const SECRET_BODY_LEN: usize = 40;
const DEFAULT_CONTENT_CAP: i64 = 65_536;
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

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

fn new_secret() -> Result<String, StoreError> {
    let bytes = random_bytes::<SECRET_BODY_LEN>()?;
    // 64 symbols: taking 6 bits of each byte is uniform.
    let body: String = bytes.iter().map(|b| char::from(URL_SAFE[usize::from(b & 63)])).collect();
    Ok(format!("sy-{body}"))
}

/// Hex SHA-256 of the whole secret: what `api_keys.hash` holds.
pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
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

fn normalize_email(email: &str) -> Result<String, StoreError> {
    let email = email.trim().to_lowercase();
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            Ok(email)
        }
        _ => Err(StoreError::Invalid("email must look like name@domain".into())),
    }
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

fn effect_str(e: Effect) -> &'static str {
    match e {
        Effect::Allow => "allow",
        Effect::Deny => "deny",
    }
}

fn subject_parts(s: &Subject) -> Result<(&'static str, Option<&str>), StoreError> {
    let (kind, value) = match s {
        Subject::Any => return Ok(("any", None)),
        Subject::Role(r) => ("role", r.as_str()),
        Subject::Group(g) => ("group", g.as_str()),
        Subject::Project(p) => ("project", p.as_str()),
        Subject::User(u) => ("user", u.as_str()),
    };
    if value.trim().is_empty() {
        return Err(StoreError::Invalid(format!("rule subject {kind} needs a value")));
    }
    Ok((kind, Some(value)))
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

const USER_COLS: &str = "id, email, name, role, primary_project_id, disabled, created_at";
const PROJECT_COLS: &str = "id, name, log_content, content_cap_bytes, created_at";
const PROJECT_COLS_P: &str = "p.id, p.name, p.log_content, p.content_cap_bytes, p.created_at";
const KEY_COLS: &str = "id, prefix, user_id, project_id, label, allowed_models, created_at, \
                        expires_at, revoked_at, last_used_at";
const CRED_COLS: &str = "id, owner_kind, owner_id, provider, key_id, nonce, ciphertext, fingerprint, \
                         created_at, updated_at";
const CRED_INFO_COLS: &str =
    "id, owner_kind, owner_id, provider, key_id, fingerprint, created_at, updated_at";

fn role(s: &str) -> Result<Role, StoreError> {
    Role::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown role {s:?}")))
}

fn owner_kind(s: &str) -> Result<OwnerKind, StoreError> {
    OwnerKind::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown owner kind {s:?}")))
}

fn user_from(r: &impl RowExt) -> Result<User, StoreError> {
    Ok(User {
        id: r.col("id")?,
        email: r.col("email")?,
        name: r.col("name")?,
        role: role(&r.col::<String>("role")?)?,
        primary_project_id: r.col("primary_project_id")?,
        disabled: r.col("disabled")?,
        created_at: r.col("created_at")?,
    })
}

fn project_from(r: &impl RowExt) -> Result<Project, StoreError> {
    Ok(Project {
        id: r.col("id")?,
        name: r.col("name")?,
        log_content: r.col("log_content")?,
        content_cap_bytes: r.col("content_cap_bytes")?,
        created_at: r.col("created_at")?,
    })
}

fn group_from(r: &impl RowExt) -> Result<Group, StoreError> {
    Ok(Group { id: r.col("id")?, name: r.col("name")?, created_at: r.col("created_at")? })
}

fn key_from(r: &impl RowExt) -> Result<ApiKey, StoreError> {
    let models: Option<String> = r.col("allowed_models")?;
    let allowed_models = models
        .map(|m| serde_json::from_str::<Vec<String>>(&m))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("api_keys.allowed_models: {e}")))?;
    Ok(ApiKey {
        id: r.col("id")?,
        prefix: r.col("prefix")?,
        user_id: r.col("user_id")?,
        project_id: r.col("project_id")?,
        label: r.col("label")?,
        allowed_models,
        created_at: r.col("created_at")?,
        expires_at: r.col("expires_at")?,
        revoked_at: r.col("revoked_at")?,
        last_used_at: r.col("last_used_at")?,
    })
}

fn rule_from(r: &impl RowExt) -> Result<Rule, StoreError> {
    let effect = match r.col::<String>("effect")?.as_str() {
        "allow" => Effect::Allow,
        "deny" => Effect::Deny,
        other => return Err(StoreError::Corrupt(format!("unknown rule effect {other:?}"))),
    };
    let kind: String = r.col("subject_kind")?;
    let value: Option<String> = r.col("subject")?;
    let subject = match (kind.as_str(), value) {
        ("any", _) => Subject::Any,
        ("role", Some(v)) => Subject::Role(role(&v)?),
        ("group", Some(v)) => Subject::Group(v),
        ("project", Some(v)) => Subject::Project(v),
        ("user", Some(v)) => Subject::User(v),
        (other, _) => return Err(StoreError::Corrupt(format!("bad rule subject {other:?}"))),
    };
    Ok(Rule {
        id: r.col("id")?,
        rule: NewRule {
            name: r.col("name")?,
            effect,
            pattern: r.col("pattern")?,
            subject,
            reason: r.col("reason")?,
            priority: r.col("priority")?,
        },
        created_at: r.col("created_at")?,
    })
}

fn cred_from(r: &impl RowExt) -> Result<CredentialRow, StoreError> {
    Ok(CredentialRow {
        id: r.col("id")?,
        owner_kind: owner_kind(&r.col::<String>("owner_kind")?)?,
        owner_id: r.col("owner_id")?,
        provider: r.col("provider")?,
        key_id: r.col("key_id")?,
        nonce: r.col("nonce")?,
        ciphertext: r.col("ciphertext")?,
        fingerprint: r.col("fingerprint")?,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
    })
}

fn cred_info_from(r: &impl RowExt) -> Result<CredentialInfo, StoreError> {
    Ok(CredentialInfo {
        id: r.col("id")?,
        owner_kind: owner_kind(&r.col::<String>("owner_kind")?)?,
        owner_id: r.col("owner_id")?,
        provider: r.col("provider")?,
        key_id: r.col("key_id")?,
        fingerprint: r.col("fingerprint")?,
        created_at: r.col("created_at")?,
        updated_at: r.col("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_documented_shape() {
        let s = new_secret().unwrap();
        assert_eq!(s.len(), 3 + SECRET_BODY_LEN);
        assert!(s.starts_with("sy-"));
        assert!(s[3..].bytes().all(|b| URL_SAFE.contains(&b)), "{s}");
        assert_ne!(s, new_secret().unwrap());
        // Known vector: SHA-256("abc").
        assert_eq!(
            hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let id = new_id("usr").unwrap();
        assert_eq!(id.len(), 4 + 24);
    }

    #[test]
    fn every_migration_file_is_embedded() {
        for (dir, listed) in [("sqlite", SQLITE_MIGRATIONS), ("postgres", POSTGRES_MIGRATIONS)] {
            let path =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(dir);
            let mut files: Vec<String> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".sql"))
                .collect();
            files.sort();
            let expected: Vec<String> =
                listed.iter().map(|(v, d, _)| format!("{v:04}_{d}.sql")).collect();
            assert_eq!(files, expected, "{dir}");
        }
        assert_eq!(SQLITE_MIGRATIONS.len(), POSTGRES_MIGRATIONS.len());
    }

    #[test]
    fn emails_are_normalized_and_checked() {
        assert_eq!(normalize_email(" Alice@Example.COM ").unwrap(), "alice@example.com");
        for bad in ["", "alice", "@x", "a@", "a@b@c"] {
            assert!(normalize_email(bad).is_err(), "{bad}");
        }
        assert!(is_sqlite_memory("sqlite::memory:"));
        assert!(!is_sqlite_memory("sqlite://data/x.db"));
    }
}
