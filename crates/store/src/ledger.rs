//! The request records as the budgets' ledger: what a scope spent since a
//! period started, read when a budget counter has to be rebuilt (new, or lost
//! with Redis's data) and for reports. Costs are summed as metered; records
//! still queued in the audit writer (seconds) and those past
//! `storage.retention_days` are not seen.

use sqlx::AssertSqlSafe;
use switchyard_core::clock::UnixMs;
use switchyard_core::continuity::BoxFuture;
use switchyard_core::limits::{BackendError, BudgetScope, BudgetSpec, Budgeted, Ledger};

use crate::db::{RowExt, Store, on_pool};
use crate::error::StoreError;

impl Ledger for Store {
    fn spent<'a>(&'a self, b: &'a Budgeted) -> BoxFuture<'a, Result<f64, BackendError>> {
        Box::pin(async move {
            let name = b.names.first().map(String::as_str);
            self.records_spent(&b.scope, name, b.window.start)
                .await
                .map_err(|e| BackendError(format!("ledger: {e}")))
        })
    }
}

impl Store {
    /// The cost of `scope`'s requests since `since`: every request for the
    /// gateway; else those whose records name it `name` (a key by its visible
    /// prefix, as the records keep no key id; users and projects by id). No
    /// name: nothing spent.
    async fn records_spent(
        &self,
        scope: &BudgetScope,
        name: Option<&str>,
        since: UnixMs,
    ) -> Result<f64, StoreError> {
        let since = i64::try_from(since.0).unwrap_or(i64::MAX);
        let column = match scope {
            BudgetScope::Gateway => None,
            BudgetScope::Key(_) => Some("key_prefix"),
            BudgetScope::User(_) => Some("user_id"),
            BudgetScope::Project(_) => Some("project_id"),
        };
        let sum: Option<f64> = match (column, name) {
            (None, _) => {
                let sql = "SELECT SUM(cost_usd) AS c FROM request_records WHERE time_ms >= $1";
                on_pool!(self, |p| sqlx::query(sql).bind(since).fetch_one(p).await?.col("c")?)
            }
            (Some(column), Some(name)) => {
                let sql = format!(
                    "SELECT SUM(cost_usd) AS c FROM request_records \
                     WHERE {column} = $1 AND time_ms >= $2"
                );
                on_pool!(self, |p| sqlx::query(AssertSqlSafe(sql))
                    .bind(name)
                    .bind(since)
                    .fetch_one(p)
                    .await?
                    .col("c")?)
            }
            (Some(_), None) => None,
        };
        Ok(sum.unwrap_or(0.0))
    }

    /// What `spec`'s scope spent in the period `now` falls in, by the records:
    /// its configured name resolved as requests are (a user by id or email, a
    /// project by id or name, a key by id to its prefix). A name that matches
    /// nobody has spent nothing.
    pub async fn budget_spent(&self, spec: &BudgetSpec, now: UnixMs) -> Result<f64, StoreError> {
        let name = match &spec.scope {
            BudgetScope::Gateway => None,
            BudgetScope::Key(id) => self.key(id).await?.map(|k| k.prefix),
            BudgetScope::User(name) => match self.user(name).await? {
                Some(u) => Some(u.id),
                None => self.user_by_email(name).await?.map(|u| u.id),
            },
            BudgetScope::Project(name) => match self.project(name).await? {
                Some(p) => Some(p.id),
                None => self.project_by_name(name).await?.map(|p| p.id),
            },
        };
        self.records_spent(&spec.scope, name.as_deref(), spec.period.window(now).start).await
    }
}
