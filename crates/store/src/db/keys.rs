//! API keys: created with a random secret of which only the SHA-256 is stored.

use sha2::{Digest, Sha256};
use switchyard_core::app_policy::AppPolicy;
use switchyard_core::limits::Limits;

use super::{
    RowExt, Store, const_format, found, hex, new_id, now_ms, on_pool, policy_from, policy_json,
    random_bytes,
};
use crate::error::StoreError;
use crate::model::{ApiKey, NewKey};

impl Store {
    /// Creates a key and returns it with its secret, which is not stored (only its
    /// SHA-256 is) and cannot be shown again. The secret is `sy-` followed by 40
    /// URL-safe random characters (240 bits); `sy-` and the next 6 characters
    /// are the visible prefix ([`switchyard_core::util::key_prefix`]). Keys
    /// created before that rule keep the 11 characters stored with them.
    pub async fn create_key(&self, k: NewKey) -> Result<(ApiKey, String), StoreError> {
        if let Some(models) = &k.allowed_models
            && models.iter().any(|m| m.trim().is_empty())
        {
            return Err(StoreError::Invalid("allowed_models holds an empty pattern".into()));
        }
        let limits = checked_limits(k.limits)?;
        let secret = new_secret()?;
        let key = ApiKey {
            id: new_id("key")?,
            prefix: switchyard_core::util::key_prefix(&secret).unwrap_or_default(),
            user_id: k.user_id,
            project_id: k.project_id,
            label: k.label,
            allowed_models: k.allowed_models,
            limits,
            routing: None,
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
        let limits_json = limits_json(key.limits)?;
        let hash = hash_secret(&secret);
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO api_keys (id, prefix, hash, user_id, project_id, label, allowed_models, \
             limits, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&key.id)
        .bind(&key.prefix)
        .bind(&hash)
        .bind(&key.user_id)
        .bind(&key.project_id)
        .bind(&key.label)
        .bind(&models)
        .bind(&limits_json)
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
        self.key_by_hash(&hash_secret(secret)).await
    }

    /// The key whose secret has this SHA-256 ([`hash_secret`]), revoked and
    /// expired ones included: what a console session signed in with a key keeps.
    pub async fn key_by_hash(&self, hash: &str) -> Result<Option<ApiKey>, StoreError> {
        let sql = const_format!("SELECT ", KEY_COLS, " FROM api_keys WHERE hash = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(hash).fetch_optional(p).await?;
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

    /// Replaces the key's own rate limits (`None`, or limits with nothing set,
    /// clears them), revoked keys' included. A zero limit is refused: it would
    /// refuse every request rather than lift the limit. A running gateway applies
    /// the change when its cached lookup of the key expires
    /// (`security.key_cache_ms`).
    pub async fn set_key_limits(&self, id: &str, limits: Option<Limits>) -> Result<(), StoreError> {
        let stored = limits_json(checked_limits(limits)?)?;
        let n = on_pool!(self, |p| sqlx::query("UPDATE api_keys SET limits = $2 WHERE id = $1")
            .bind(id)
            .bind(&stored)
            .execute(p)
            .await?
            .rows_affected());
        found(n, "key", id)
    }

    /// Replaces the key's own routing policy (`None`, or one pinning nothing,
    /// clears it). The caller checks it against the catalog first; a running
    /// gateway applies it when its cached lookup of the key expires, or at once
    /// on the instance whose admin API set it.
    pub async fn set_key_routing(
        &self,
        id: &str,
        routing: Option<&AppPolicy>,
    ) -> Result<(), StoreError> {
        let stored = policy_json(routing)?;
        let n = on_pool!(self, |p| sqlx::query("UPDATE api_keys SET routing = $2 WHERE id = $1")
            .bind(id)
            .bind(&stored)
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
}

pub(super) const SECRET_BODY_LEN: usize = 40;
pub(super) const URL_SAFE: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

pub(super) fn new_secret() -> Result<String, StoreError> {
    let bytes = random_bytes::<SECRET_BODY_LEN>()?;
    // 64 symbols: taking 6 bits of each byte is uniform.
    let body: String = bytes.iter().map(|b| char::from(URL_SAFE[usize::from(b & 63)])).collect();
    Ok(format!("sy-{body}"))
}

/// Hex SHA-256 of the whole secret: what `api_keys.hash` holds.
pub fn hash_secret(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

const KEY_COLS: &str = "id, prefix, user_id, project_id, label, allowed_models, limits, \
                        routing, created_at, expires_at, revoked_at, last_used_at";

/// Limits as stored: none when nothing is set (so "no limits" has one form);
/// zero limits refused, each named (`limits.rpm: must be greater than 0`).
fn checked_limits(limits: Option<Limits>) -> Result<Option<Limits>, StoreError> {
    let Some(l) = limits.filter(|l| !l.is_empty()) else { return Ok(None) };
    let problems = l.problems("limits");
    if !problems.is_empty() {
        return Err(StoreError::Invalid(problems.join("; ")));
    }
    Ok(Some(l))
}

fn limits_json(limits: Option<Limits>) -> Result<Option<String>, StoreError> {
    limits
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Invalid(format!("limits: {e}")))
}

fn key_from(r: &impl RowExt) -> Result<ApiKey, StoreError> {
    let models: Option<String> = r.col("allowed_models")?;
    let allowed_models = models
        .map(|m| serde_json::from_str::<Vec<String>>(&m))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("api_keys.allowed_models: {e}")))?;
    let limits: Option<String> = r.col("limits")?;
    let limits = limits
        .map(|l| serde_json::from_str::<Limits>(&l))
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("api_keys.limits: {e}")))?;
    let routing = policy_from(r.col("routing")?, "api_keys.routing")?;
    Ok(ApiKey {
        id: r.col("id")?,
        prefix: r.col("prefix")?,
        user_id: r.col("user_id")?,
        project_id: r.col("project_id")?,
        label: r.col("label")?,
        allowed_models,
        limits,
        routing,
        created_at: r.col("created_at")?,
        expires_at: r.col("expires_at")?,
        revoked_at: r.col("revoked_at")?,
        last_used_at: r.col("last_used_at")?,
    })
}
