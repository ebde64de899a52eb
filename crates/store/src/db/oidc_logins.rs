//! Console sign-ins through an OpenID Connect provider that are under way,
//! between the redirect to the provider and its callback. They live in the
//! database, not in one process, because the callback may reach another
//! instance; the browser holds only a random value (in a cookie) whose SHA-256
//! names the row. A row is used once: the callback takes it (deletes it) before
//! looking at anything else, so a replayed callback finds nothing.

use super::{RowExt, Store, hash_secret, hex, now_ms, on_pool, random_bytes};
use crate::error::StoreError;

/// At most this many sign-ins may be under way at once (unexpired rows);
/// [`Store::begin_oidc_login`] refuses more, so that a flood of sign-in starts
/// cannot grow the table without bound.
pub const PENDING_OIDC_LOGINS_MAX: i64 = 10_000;

/// One sign-in under way: what the callback checks and sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OidcLogin {
    /// The `state` sent to the provider, which it must send back.
    pub state: String,
    /// The `nonce` the ID token must carry.
    pub nonce: String,
    /// The PKCE verifier (RFC 7636: 64 unreserved characters); its S256
    /// challenge goes to the authorization endpoint, itself to the token endpoint.
    pub code_verifier: String,
    /// The redirect URI sent, sent again at the token endpoint.
    pub redirect_uri: String,
    /// The console path to go to once signed in.
    pub next: String,
    pub expires_ms: i64,
}

impl Store {
    /// Starts a sign-in: fresh random `state`, `nonce` and PKCE verifier, kept
    /// for `ttl_ms`. Returns the browser's cookie value (not stored) with them;
    /// `None` when [`PENDING_OIDC_LOGINS_MAX`] are already under way. Expired
    /// rows are purged first.
    pub async fn begin_oidc_login(
        &self,
        redirect_uri: &str,
        next: &str,
        ttl_ms: i64,
    ) -> Result<Option<(String, OidcLogin)>, StoreError> {
        let now = now_ms();
        let live: i64 = on_pool!(self, |p| {
            sqlx::query("DELETE FROM console_oidc_logins WHERE expires_ms <= $1")
                .bind(now)
                .execute(p)
                .await?;
            let row =
                sqlx::query("SELECT COUNT(*) AS n FROM console_oidc_logins").fetch_one(p).await?;
            row.col("n")?
        });
        if live >= PENDING_OIDC_LOGINS_MAX {
            return Ok(None);
        }
        let token = format!("syo_{}", hex(&random_bytes::<32>()?));
        let login = OidcLogin {
            state: hex(&random_bytes::<32>()?),
            nonce: hex(&random_bytes::<32>()?),
            code_verifier: hex(&random_bytes::<32>()?),
            redirect_uri: redirect_uri.to_owned(),
            next: next.to_owned(),
            expires_ms: now.saturating_add(ttl_ms),
        };
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO console_oidc_logins (id, state, nonce, code_verifier, redirect_uri, \
             next, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(hash_secret(&token))
        .bind(&login.state)
        .bind(&login.nonce)
        .bind(&login.code_verifier)
        .bind(&login.redirect_uri)
        .bind(&login.next)
        .bind(now)
        .bind(login.expires_ms)
        .execute(p)
        .await?
        .rows_affected());
        Ok(Some((token, login)))
    }

    /// Takes the sign-in this cookie value started: deleted whether or not it
    /// is still live, so it serves one callback at most; `None` when unknown,
    /// already taken or expired.
    pub async fn take_oidc_login(&self, token: &str) -> Result<Option<OidcLogin>, StoreError> {
        let id = hash_secret(token);
        let row = on_pool!(self, |p| {
            let row = sqlx::query(
                "DELETE FROM console_oidc_logins WHERE id = $1 \
                 RETURNING state, nonce, code_verifier, redirect_uri, next, expires_ms",
            )
            .bind(&id)
            .fetch_optional(p)
            .await?;
            match row {
                Some(r) => Some(OidcLogin {
                    state: r.col("state")?,
                    nonce: r.col("nonce")?,
                    code_verifier: r.col("code_verifier")?,
                    redirect_uri: r.col("redirect_uri")?,
                    next: r.col("next")?,
                    expires_ms: r.col("expires_ms")?,
                }),
                None => None,
            }
        });
        Ok(row.filter(|l| l.expires_ms > now_ms()))
    }
}
