//! The request records as the budgets' ledger: what a scope spent since a
//! period started, read when a budget counter has to be rebuilt (new, or lost
//! with Redis's data). Costs are summed as metered; records still queued in the
//! audit writer (seconds) and those past `storage.retention_days` are not seen.

use sqlx::AssertSqlSafe;
use switchyard_core::continuity::BoxFuture;
use switchyard_core::limits::{BackendError, BudgetScope, Budgeted, Ledger};

use crate::db::{RowExt, Store, on_pool};

impl Ledger for Store {
    fn spent<'a>(&'a self, b: &'a Budgeted) -> BoxFuture<'a, Result<f64, BackendError>> {
        Box::pin(async move {
            let since = i64::try_from(b.window.start.0).unwrap_or(i64::MAX);
            // Which records are the scope's: keys by their visible prefix (the
            // records keep no key id), users and projects by id.
            let column = match &b.scope {
                BudgetScope::Gateway => None,
                BudgetScope::Key(_) => Some("key_prefix"),
                BudgetScope::User(_) => Some("user_id"),
                BudgetScope::Project(_) => Some("project_id"),
            };
            let sum = match (column, b.names.first()) {
                (None, _) => {
                    let sql = "SELECT SUM(cost_usd) AS c FROM request_records WHERE time_ms >= $1";
                    on_pool!(self, |p| {
                        let row = sqlx::query(sql).bind(since).fetch_one(p).await;
                        row.map_err(|e| BackendError(format!("ledger: {e}")))?
                            .col::<Option<f64>>("c")
                            .map_err(|e| BackendError(format!("ledger: {e}")))?
                    })
                }
                (Some(column), Some(name)) => {
                    let sql = format!(
                        "SELECT SUM(cost_usd) AS c FROM request_records \
                         WHERE {column} = $1 AND time_ms >= $2"
                    );
                    on_pool!(self, |p| {
                        let q = sqlx::query(AssertSqlSafe(sql)).bind(name.as_str()).bind(since);
                        q.fetch_one(p)
                            .await
                            .map_err(|e| BackendError(format!("ledger: {e}")))?
                            .col::<Option<f64>>("c")
                            .map_err(|e| BackendError(format!("ledger: {e}")))?
                    })
                }
                (Some(_), None) => None,
            };
            Ok(sum.unwrap_or(0.0))
        })
    }
}
