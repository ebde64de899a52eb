//! Stored Responses on the database ([`ResponseStore`]): one row per owner and
//! id, its input and response object as one deflated JSON document, so a
//! conversation continued on any instance, or after a restart, finds them.

use futures_util::future::BoxFuture;
use serde_json::Value;
use switchyard_core::stored_responses::{ResponseStore, StoreFailure, StoredResponse};

use super::packed::{pack, unpack};
use super::{RowExt, Store, on_pool};
use crate::error::StoreError;

#[derive(serde::Serialize, serde::Deserialize)]
struct Document {
    input: Vec<Value>,
    response: Value,
}

#[derive(serde::Serialize)]
struct Borrowed<'a> {
    input: &'a [Value],
    response: &'a Value,
}

pub(super) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

pub(super) fn failure(e: StoreError) -> StoreFailure {
    StoreFailure(e.to_string())
}

impl Store {
    async fn put_response(&self, r: &StoredResponse) -> Result<(), StoreError> {
        let doc = Borrowed { input: &r.input, response: &r.response };
        let body = pack(&doc, &format!("stored response {}", r.id))?;
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO stored_responses (owner, id, created_ms, expires_ms, body) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner, id) DO UPDATE SET \
             created_ms = excluded.created_ms, expires_ms = excluded.expires_ms, \
             body = excluded.body"
        )
        .bind(&r.owner)
        .bind(&r.id)
        .bind(to_i64(r.created_ms))
        .bind(to_i64(r.expires_ms))
        .bind(&body)
        .execute(p)
        .await?
        .rows_affected());
        Ok(())
    }

    async fn get_response(
        &self,
        owner: &str,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<StoredResponse>, StoreError> {
        let row = on_pool!(self, |p| {
            let row = sqlx::query(
                "SELECT created_ms, expires_ms, body FROM stored_responses \
                 WHERE owner = $1 AND id = $2 AND expires_ms > $3",
            )
            .bind(owner)
            .bind(id)
            .bind(to_i64(now_ms))
            .fetch_optional(p)
            .await?;
            row.as_ref()
                .map(|r| {
                    Ok::<_, StoreError>((
                        r.col::<i64>("created_ms")?,
                        r.col::<i64>("expires_ms")?,
                        r.col::<Vec<u8>>("body")?,
                    ))
                })
                .transpose()?
        });
        let Some((created_ms, expires_ms, body)) = row else { return Ok(None) };
        let doc: Document = unpack(&body, "stored_responses.body")?;
        Ok(Some(StoredResponse {
            id: id.to_owned(),
            owner: owner.to_owned(),
            created_ms: u64::try_from(created_ms).unwrap_or(0),
            expires_ms: u64::try_from(expires_ms).unwrap_or(0),
            input: doc.input,
            response: doc.response,
        }))
    }

    async fn delete_response(&self, owner: &str, id: &str) -> Result<bool, StoreError> {
        let n = on_pool!(self, |p| sqlx::query(
            "DELETE FROM stored_responses WHERE owner = $1 AND id = $2"
        )
        .bind(owner)
        .bind(id)
        .execute(p)
        .await?
        .rows_affected());
        Ok(n > 0)
    }

    /// Forgets stored responses that expired before `now_ms`: how many.
    pub async fn purge_responses(&self, now_ms: i64) -> Result<u64, StoreError> {
        Ok(on_pool!(self, |p| sqlx::query("DELETE FROM stored_responses WHERE expires_ms <= $1")
            .bind(now_ms)
            .execute(p)
            .await?
            .rows_affected()))
    }
}

impl ResponseStore for Store {
    fn put<'a>(&'a self, r: &'a StoredResponse) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { self.put_response(r).await.map_err(failure) })
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        now_ms: u64,
    ) -> BoxFuture<'a, Result<Option<StoredResponse>, StoreFailure>> {
        Box::pin(async move { self.get_response(owner, id, now_ms).await.map_err(failure) })
    }

    fn delete<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(async move { self.delete_response(owner, id).await.map_err(failure) })
    }
}
