//! Console sessions: a browser's sign-in, shared by every instance on the
//! database. The cookie carries a random token; only its SHA-256 is stored, so
//! a copy of the table signs no one in.

use super::hash_secret;
use super::{RowExt, Store, const_format, hex, now_ms, on_pool, random_bytes, role};
use crate::error::StoreError;
use crate::model::CallerRole;

/// How a session was signed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// With a gateway key, whose hash the session keeps: each use resolves the
    /// key again, so revoking the key (or demoting its user) ends the session.
    Key,
    /// Through an OpenID Connect provider; the role is the one its group claim
    /// gave at sign-in.
    Oidc,
}

impl SignIn {
    fn as_str(self) -> &'static str {
        match self {
            SignIn::Key => "key",
            SignIn::Oidc => "oidc",
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        match s {
            "key" => Ok(SignIn::Key),
            "oidc" => Ok(SignIn::Oidc),
            other => Err(StoreError::Corrupt(format!("unknown sign-in method {other:?}"))),
        }
    }
}

/// What a new session is given.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub method: SignIn,
    /// For [`SignIn::Key`]: the SHA-256 of the key ([`hash_secret`]).
    pub key_hash: Option<String>,
    pub subject: String,
    pub name: Option<String>,
    pub role: CallerRole,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    /// How long it lasts from now, in milliseconds.
    pub ttl_ms: i64,
}

/// A stored session (never its token).
#[derive(Debug, Clone, PartialEq)]
pub struct ConsoleSession {
    /// The token's SHA-256: what revocation names.
    pub id: String,
    pub csrf: String,
    pub method: SignIn,
    pub key_hash: Option<String>,
    pub subject: String,
    pub name: Option<String>,
    pub role: CallerRole,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub created_ms: i64,
    pub expires_ms: i64,
    pub last_seen_ms: i64,
}

const COLS: &str = "id, csrf, method, key_hash, subject, name, role, address, user_agent, \
                    created_ms, expires_ms, last_seen_ms";

/// Marks a session seen at most this often: a page view is a read, not a write.
const SEEN_EVERY_MS: i64 = 60_000;

impl Store {
    /// Opens a session and returns it with its token (the cookie's value), which
    /// is not stored and cannot be read back.
    pub async fn create_session(
        &self,
        s: NewSession,
    ) -> Result<(ConsoleSession, String), StoreError> {
        let token = format!("sys_{}", hex(&random_bytes::<32>()?));
        let now = now_ms();
        let session = ConsoleSession {
            id: hash_secret(&token),
            csrf: hex(&random_bytes::<32>()?),
            method: s.method,
            key_hash: s.key_hash,
            subject: s.subject,
            name: s.name,
            role: s.role,
            address: s.address,
            user_agent: s.user_agent,
            created_ms: now,
            expires_ms: now.saturating_add(s.ttl_ms),
            last_seen_ms: now,
        };
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO console_sessions (id, csrf, method, key_hash, subject, name, role, \
             address, user_agent, created_ms, expires_ms, last_seen_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&session.id)
        .bind(&session.csrf)
        .bind(session.method.as_str())
        .bind(&session.key_hash)
        .bind(&session.subject)
        .bind(&session.name)
        .bind(session.role.as_str())
        .bind(&session.address)
        .bind(&session.user_agent)
        .bind(session.created_ms)
        .bind(session.expires_ms)
        .bind(session.last_seen_ms)
        .execute(p)
        .await?
        .rows_affected());
        Ok((session, token))
    }

    /// The live session this token opened: `None` when unknown, revoked or
    /// expired. Marks it seen (at most once a minute).
    pub async fn session(&self, token: &str) -> Result<Option<ConsoleSession>, StoreError> {
        let id = hash_secret(token);
        let now = now_ms();
        let sql = const_format!(
            "SELECT ",
            COLS,
            " FROM console_sessions WHERE id = $1 AND revoked_ms IS NULL AND expires_ms > $2"
        );
        let found = on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(&id).bind(now).fetch_optional(p).await?;
            row.as_ref().map(session_from).transpose()?
        });
        let Some(session) = found else { return Ok(None) };
        if now - session.last_seen_ms >= SEEN_EVERY_MS {
            on_pool!(self, |p| sqlx::query(
                "UPDATE console_sessions SET last_seen_ms = $1 WHERE id = $2"
            )
            .bind(now)
            .bind(&session.id)
            .execute(p)
            .await?
            .rows_affected());
        }
        Ok(Some(session))
    }

    /// Live sessions, most recently seen first.
    pub async fn list_sessions(&self) -> Result<Vec<ConsoleSession>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            COLS,
            " FROM console_sessions WHERE revoked_ms IS NULL AND expires_ms > $1 \
             ORDER BY last_seen_ms DESC, id LIMIT 500"
        );
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(now_ms()).fetch_all(p).await?;
            rows.iter().map(session_from).collect()
        })
    }

    /// Revokes one session by its id (the token's hash). False when there was no
    /// live session with that id.
    pub async fn revoke_session(&self, id: &str) -> Result<bool, StoreError> {
        let rows = on_pool!(self, |p| sqlx::query(
            "UPDATE console_sessions SET revoked_ms = $1 WHERE id = $2 AND revoked_ms IS NULL"
        )
        .bind(now_ms())
        .bind(id)
        .execute(p)
        .await?
        .rows_affected());
        Ok(rows > 0)
    }

    /// Forgets sessions that ended (expired or revoked) before `time_ms`.
    pub async fn purge_sessions(&self, time_ms: i64) -> Result<u64, StoreError> {
        Ok(on_pool!(self, |p| sqlx::query(
            "DELETE FROM console_sessions WHERE expires_ms < $1 OR revoked_ms < $1"
        )
        .bind(time_ms)
        .execute(p)
        .await?
        .rows_affected()))
    }
}

fn session_from(r: &impl RowExt) -> Result<ConsoleSession, StoreError> {
    Ok(ConsoleSession {
        id: r.col("id")?,
        csrf: r.col("csrf")?,
        method: SignIn::parse(&r.col::<String>("method")?)?,
        key_hash: r.col("key_hash")?,
        subject: r.col("subject")?,
        name: r.col("name")?,
        role: role(&r.col::<String>("role")?)?,
        address: r.col("address")?,
        user_agent: r.col("user_agent")?,
        created_ms: r.col("created_ms")?,
        expires_ms: r.col("expires_ms")?,
        last_seen_ms: r.col("last_seen_ms")?,
    })
}
