//! Media jobs on the database ([`JobStore`]): one row per job, the whole job
//! as deflated JSON, with what pollers select on in columns of its own. Any
//! instance reads a job its owner submitted elsewhere, and a restarted one
//! goes on polling what was in flight.
//!
//! A claim is one statement, so two instances never hold one job: on
//! PostgreSQL the due rows are locked and skipped by a concurrent claim
//! (`FOR UPDATE SKIP LOCKED`); SQLite has one writer at a time. A job's end
//! is never overwritten (`final = 0` guards every update).

use futures_util::future::BoxFuture;
use switchyard_core::jobs::{Job, JobStore, StoreFailure};

use super::packed::{pack, unpack};
use super::responses::{failure, to_i64};
use super::{Backend, RowExt, Store, const_format, on_pool};
use crate::error::StoreError;

/// Claims the due jobs (a lock clause may follow, then [`RETURNING`]).
const CLAIM: &str = "UPDATE media_jobs SET lease_until_ms = $1 WHERE id IN (SELECT id \
    FROM media_jobs WHERE final = 0 AND next_poll_ms <= $2 AND lease_until_ms <= $2 \
    ORDER BY next_poll_ms LIMIT $3";
const RETURNING: &str = ") RETURNING body";

impl Store {
    async fn put_job(&self, job: &Job) -> Result<bool, StoreError> {
        let body = pack(job, &format!("media job {}", job.id))?;
        let n = on_pool!(self, |p| {
            sqlx::query(
            "INSERT INTO media_jobs (id, owner, final, next_poll_ms, lease_until_ms, expires_ms, body) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET \
             final = excluded.final, next_poll_ms = excluded.next_poll_ms, \
             lease_until_ms = excluded.lease_until_ms, expires_ms = excluded.expires_ms, \
             body = excluded.body WHERE media_jobs.final = 0"
        )
        .bind(&job.id)
        .bind(&job.owner)
        .bind(i32::from(job.status.is_final()))
        .bind(to_i64(job.next_poll_ms))
        .bind(to_i64(job.lease_until_ms))
        .bind(to_i64(job.expires_ms))
        .bind(&body)
        .execute(p)
        .await?
        .rows_affected()
        });
        Ok(n > 0)
    }

    async fn get_job(&self, owner: &str, id: &str, now_ms: u64) -> Result<Option<Job>, StoreError> {
        let body = on_pool!(self, |p| {
            let row = sqlx::query(
                "SELECT body FROM media_jobs WHERE id = $1 AND owner = $2 AND expires_ms > $3",
            )
            .bind(id)
            .bind(owner)
            .bind(to_i64(now_ms))
            .fetch_optional(p)
            .await?;
            row.as_ref().map(|r| r.col::<Vec<u8>>("body")).transpose()?
        });
        body.map(|b| unpack(&b, "media_jobs.body")).transpose()
    }

    async fn claim_jobs(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> Result<Vec<Job>, StoreError> {
        let sql = match self.backend() {
            Backend::Postgres => const_format!(CLAIM, " FOR UPDATE SKIP LOCKED", RETURNING),
            Backend::Sqlite => const_format!(CLAIM, RETURNING),
        };
        let until = now_ms.saturating_add(lease_ms);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let bodies = on_pool!(self, |p| {
            let rows = sqlx::query(sql)
                .bind(to_i64(until))
                .bind(to_i64(now_ms))
                .bind(limit)
                .fetch_all(p)
                .await?;
            rows.iter().map(|r| r.col::<Vec<u8>>("body")).collect::<Result<Vec<_>, _>>()?
        });
        let mut jobs = Vec::with_capacity(bodies.len());
        for body in bodies {
            let mut job: Job = unpack(&body, "media_jobs.body")?;
            job.lease_until_ms = until;
            jobs.push(job);
        }
        jobs.sort_by_key(|j| j.next_poll_ms);
        Ok(jobs)
    }

    /// Forgets ended media jobs that expired before `now_ms`: how many.
    pub async fn purge_jobs(&self, now_ms: i64) -> Result<u64, StoreError> {
        Ok(on_pool!(self, |p| sqlx::query(
            "DELETE FROM media_jobs WHERE final = 1 AND expires_ms <= $1"
        )
        .bind(now_ms)
        .execute(p)
        .await?
        .rows_affected()))
    }
}

impl JobStore for Store {
    fn put<'a>(&'a self, job: &'a Job) -> BoxFuture<'a, Result<bool, StoreFailure>> {
        Box::pin(async move { self.put_job(job).await.map_err(failure) })
    }

    fn get<'a>(
        &'a self,
        owner: &'a str,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<Job>, StoreFailure>> {
        let now = switchyard_core::clock::UnixMs::now().0;
        Box::pin(async move { self.get_job(owner, id, now).await.map_err(failure) })
    }

    fn claim(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Result<Vec<Job>, StoreFailure>> {
        Box::pin(async move { self.claim_jobs(now_ms, lease_ms, limit).await.map_err(failure) })
    }
}
