//! Batches on the database ([`BatchStore`]): uploaded files (their content
//! deflated), batches (their whole state as deflated JSON, with what runners
//! select on in columns), and each line's answer as it comes. Any instance
//! reads what another took, and a batch picked up again, after a restart
//! included, sends only the lines that have no answer yet.
//!
//! A claim is one statement, as for media jobs (`jobs.rs`): rows locked and
//! skipped on PostgreSQL, one writer on SQLite. A batch's end is never
//! overwritten, nor a cancel undone (the `final` column guards every update).

use futures_util::future::BoxFuture;
use switchyard_core::batches::{
    Batch, BatchStatus, BatchStore, FileMeta, LineResult, StoreFailure, StoredFile,
};

use super::packed::{pack, unpack};
use super::responses::{failure, to_i64};
use super::{Backend, RowExt, Store, const_format, on_pool};
use crate::error::StoreError;

/// Claims the batches no runner holds (a lock clause may follow, then
/// [`RETURNING`]).
const CLAIM: &str = "UPDATE batches SET lease_until_ms = $1 WHERE id IN (SELECT id FROM batches \
    WHERE final <> 1 AND lease_until_ms <= $2 ORDER BY id LIMIT $3";
const RETURNING: &str = ") RETURNING body";

/// The `final` column: 1 ended, 2 cancelling (it may only end now: a
/// runner's write of its progress does not undo a cancel), 0 otherwise.
fn stage(status: BatchStatus) -> i32 {
    match status {
        s if s.is_final() => 1,
        BatchStatus::Cancelling => 2,
        _ => 0,
    }
}

fn meta_of(json: &str) -> Result<FileMeta, StoreError> {
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(format!("batch_files.meta: {e}")))
}

impl Store {
    /// A file's content is packed as text: a batch's files are JSONL,
    /// checked as UTF-8 on upload.
    async fn put_file_row(&self, meta: &FileMeta, content: &[u8]) -> Result<(), StoreError> {
        let packed = pack(&String::from_utf8_lossy(content), &format!("file {}", meta.id))?;
        let json = serde_json::to_string(meta)
            .map_err(|e| StoreError::Invalid(format!("file {}: {e}", meta.id)))?;
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO batch_files (id, owner, created_ms, expires_ms, meta, content) \
             VALUES ($1, $2, $3, $4, $5, $6)"
        )
        .bind(&meta.id)
        .bind(&meta.owner)
        .bind(to_i64(meta.created_ms))
        .bind(to_i64(meta.expires_ms))
        .bind(&json)
        .bind(&packed)
        .execute(p)
        .await?
        .rows_affected());
        Ok(())
    }

    async fn file_row(
        &self,
        owner: &str,
        id: &str,
        content: bool,
        now_ms: u64,
    ) -> Result<Option<StoredFile>, StoreError> {
        let sql = if content {
            "SELECT meta, content FROM batch_files WHERE id = $1 AND owner = $2 AND expires_ms > $3"
        } else {
            "SELECT meta FROM batch_files WHERE id = $1 AND owner = $2 AND expires_ms > $3"
        };
        let row = on_pool!(self, |p| {
            let row = sqlx::query(sql)
                .bind(id)
                .bind(owner)
                .bind(to_i64(now_ms))
                .fetch_optional(p)
                .await?;
            row.as_ref()
                .map(|r| {
                    let meta = r.col::<String>("meta")?;
                    let body = if content { Some(r.col::<Vec<u8>>("content")?) } else { None };
                    Ok::<_, StoreError>((meta, body))
                })
                .transpose()?
        });
        let Some((meta, body)) = row else { return Ok(None) };
        let content = match body {
            Some(b) => unpack::<String>(&b, "batch_files.content")?.into_bytes(),
            None => Vec::new(),
        };
        Ok(Some((meta_of(&meta)?, content)))
    }

    async fn file_rows(&self, owner: &str, now_ms: u64) -> Result<Vec<FileMeta>, StoreError> {
        let metas = on_pool!(self, |p| {
            let rows = sqlx::query(
                "SELECT meta FROM batch_files WHERE owner = $1 AND expires_ms > $2 \
                 ORDER BY created_ms DESC, id DESC",
            )
            .bind(owner)
            .bind(to_i64(now_ms))
            .fetch_all(p)
            .await?;
            rows.iter().map(|r| r.col::<String>("meta")).collect::<Result<Vec<_>, _>>()?
        });
        metas.iter().map(|m| meta_of(m)).collect()
    }

    async fn delete_file_row(&self, owner: &str, id: &str) -> Result<bool, StoreError> {
        let n =
            on_pool!(self, |p| sqlx::query("DELETE FROM batch_files WHERE id = $1 AND owner = $2")
                .bind(id)
                .bind(owner)
                .execute(p)
                .await?
                .rows_affected());
        Ok(n > 0)
    }

    async fn put_batch_row(&self, b: &Batch) -> Result<bool, StoreError> {
        let body = pack(b, &format!("batch {}", b.id))?;
        let n = on_pool!(self, |p| sqlx::query(
            "INSERT INTO batches (id, owner, final, lease_until_ms, forget_ms, body) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET \
             final = excluded.final, lease_until_ms = excluded.lease_until_ms, \
             forget_ms = excluded.forget_ms, body = excluded.body \
             WHERE batches.final = 0 OR (batches.final = 2 AND excluded.final <> 0)"
        )
        .bind(&b.id)
        .bind(&b.owner)
        .bind(stage(b.status))
        .bind(to_i64(b.lease_until_ms))
        .bind(to_i64(b.forget_ms))
        .bind(&body)
        .execute(p)
        .await?
        .rows_affected());
        Ok(n > 0)
    }

    async fn batch_rows(&self, owner: &str, id: Option<&str>) -> Result<Vec<Batch>, StoreError> {
        let bodies = on_pool!(self, |p| {
            let rows = match id {
                Some(id) => {
                    sqlx::query("SELECT body FROM batches WHERE owner = $1 AND id = $2")
                        .bind(owner)
                        .bind(id)
                        .fetch_all(p)
                        .await?
                }
                None => {
                    sqlx::query("SELECT body FROM batches WHERE owner = $1 ORDER BY id DESC")
                        .bind(owner)
                        .fetch_all(p)
                        .await?
                }
            };
            rows.iter().map(|r| r.col::<Vec<u8>>("body")).collect::<Result<Vec<_>, _>>()?
        });
        bodies.iter().map(|b| unpack(b, "batches.body")).collect()
    }

    async fn claim_batch_rows(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<Batch>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => const_format!(CLAIM, " FOR UPDATE SKIP LOCKED", RETURNING),
            Backend::Sqlite => const_format!(CLAIM, RETURNING),
        };
        let until = now_ms.saturating_add(lease_ms);
        let bodies = on_pool!(self, |p| {
            let rows = sqlx::query(sql)
                .bind(to_i64(until))
                .bind(to_i64(now_ms))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(p)
                .await?;
            rows.iter().map(|r| r.col::<Vec<u8>>("body")).collect::<Result<Vec<_>, _>>()?
        });
        let mut batches = Vec::with_capacity(bodies.len());
        for body in bodies {
            let mut b: Batch = unpack(&body, "batches.body")?;
            b.lease_until_ms = until;
            batches.push(b);
        }
        batches.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(batches)
    }

    async fn put_result_row(&self, batch: &str, r: &LineResult) -> Result<(), StoreError> {
        let body = pack(&r.line, &format!("batch {batch} line {}", r.index))?;
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO batch_results (batch_id, line, ok, body) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (batch_id, line) DO UPDATE SET ok = excluded.ok, body = excluded.body"
        )
        .bind(batch)
        .bind(i64::from(r.index))
        .bind(i32::from(r.ok))
        .bind(&body)
        .execute(p)
        .await?
        .rows_affected());
        Ok(())
    }

    async fn result_rows(&self, batch: &str) -> Result<Vec<LineResult>, StoreError> {
        let rows = on_pool!(self, |p| {
            let rows = sqlx::query(
                "SELECT line, ok, body FROM batch_results WHERE batch_id = $1 ORDER BY line",
            )
            .bind(batch)
            .fetch_all(p)
            .await?;
            rows.iter()
                .map(|r| {
                    Ok::<_, StoreError>((
                        r.col::<i64>("line")?,
                        r.col::<i32>("ok")?,
                        r.col::<Vec<u8>>("body")?,
                    ))
                })
                .collect::<Result<Vec<_>, _>>()?
        });
        rows.into_iter()
            .map(|(line, ok, body)| {
                Ok(LineResult {
                    index: u32::try_from(line).unwrap_or(u32::MAX),
                    ok: ok != 0,
                    line: unpack(&body, "batch_results.body")?,
                })
            })
            .collect()
    }

    /// Forgets expired files, and ended batches (with their lines' answers)
    /// past their retention: how many rows.
    pub async fn purge_batches(&self, now_ms: i64) -> Result<u64, StoreError> {
        let files =
            on_pool!(self, |p| sqlx::query("DELETE FROM batch_files WHERE expires_ms <= $1")
                .bind(now_ms)
                .execute(p)
                .await?
                .rows_affected());
        let results = on_pool!(self, |p| sqlx::query(
            "DELETE FROM batch_results WHERE batch_id IN \
             (SELECT id FROM batches WHERE final = 1 AND forget_ms <= $1)"
        )
        .bind(now_ms)
        .execute(p)
        .await?
        .rows_affected());
        let batches = on_pool!(self, |p| sqlx::query(
            "DELETE FROM batches WHERE final = 1 AND forget_ms <= $1"
        )
        .bind(now_ms)
        .execute(p)
        .await?
        .rows_affected());
        Ok(files + results + batches)
    }
}

fn now() -> u64 {
    switchyard_core::clock::UnixMs::now().0
}

impl BatchStore for Store {
    fn put_file<'a>(
        &'a self,
        meta: &'a FileMeta,
        content: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { self.put_file_row(meta, content).await.map_err(failure) })
    }

    fn file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
        content: bool,
    ) -> BoxFuture<'a, Result<Option<StoredFile>, StoreFailure>> {
        Box::pin(async move { self.file_row(owner, id, content, now()).await.map_err(failure) })
    }

    fn files<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<FileMeta>, StoreFailure>> {
        Box::pin(async move { self.file_rows(owner, now()).await.map_err(failure) })
    }

    fn delete_file<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(async move { self.delete_file_row(owner, id).await.map_err(failure) })
    }

    fn put_batch<'a>(&'a self, b: &'a Batch) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(async move { self.put_batch_row(b).await.map_err(failure) })
    }

    fn batch<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Batch>, StoreFailure>> {
        Box::pin(async move {
            Ok(self.batch_rows(owner, Some(id)).await.map_err(failure)?.into_iter().next())
        })
    }

    fn batches<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, Result<Vec<Batch>, StoreFailure>> {
        Box::pin(async move { self.batch_rows(owner, None).await.map_err(failure) })
    }

    fn claim_batches(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Batch>, StoreFailure>> {
        Box::pin(
            async move { self.claim_batch_rows(now_ms, lease_ms, limit).await.map_err(failure) },
        )
    }

    fn put_result<'a>(
        &'a self,
        batch: &'a str,
        r: &'a LineResult,
    ) -> BoxFuture<'a, Result<(), StoreFailure>> {
        Box::pin(async move { self.put_result_row(batch, r).await.map_err(failure) })
    }

    fn results<'a>(
        &'a self,
        batch: &'a str,
    ) -> BoxFuture<'a, Result<Vec<LineResult>, StoreFailure>> {
        Box::pin(async move { self.result_rows(batch).await.map_err(failure) })
    }
}
