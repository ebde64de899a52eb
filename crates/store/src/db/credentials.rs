//! Users' and projects' own provider keys (BYOK), stored sealed: this module
//! keeps the ciphertext; sealing and opening are `crate::seal`'s.

use super::{RowExt, Store, const_format, found, new_id, now_ms, on_pool};
use crate::error::StoreError;
use crate::model::{CredentialInfo, CredentialRow, NewCredential, OwnerKind};

impl Store {
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

const CRED_COLS: &str = "id, owner_kind, owner_id, provider, key_id, nonce, ciphertext, fingerprint, \
                         created_at, updated_at";
const CRED_INFO_COLS: &str =
    "id, owner_kind, owner_id, provider, key_id, fingerprint, created_at, updated_at";

fn owner_kind(s: &str) -> Result<OwnerKind, StoreError> {
    OwnerKind::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown owner kind {s:?}")))
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
