//! The request records as the budgets' ledger: what a scope spent since a
//! period started, read when a budget counter has to be rebuilt (new, or lost
//! with Redis's data) and for reports. Costs are summed as metered; records
//! still queued in the audit writer (seconds) and those past
//! `storage.retention_days` are not seen.

use switchyard_core::clock::UnixMs;
use switchyard_core::continuity::BoxFuture;
use switchyard_core::limits::{BackendError, BudgetScope, BudgetSpec, Budgeted, Ledger};

use crate::db::Store;
use crate::error::StoreError;
use crate::model::{RecordFilter, UsageBy};

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
    ///
    /// Read from the rollups (`Store::usage`: the scope's own slices, whole
    /// hours and days), not by summing a period's records: a month of them is
    /// millions of rows, and the request table keeps no index per project or
    /// key for it.
    async fn records_spent(
        &self,
        scope: &BudgetScope,
        name: Option<&str>,
        since: UnixMs,
    ) -> Result<f64, StoreError> {
        let mut f = RecordFilter {
            since_ms: Some(i64::try_from(since.0).unwrap_or(i64::MAX)),
            ..RecordFilter::default()
        };
        let slot = match scope {
            BudgetScope::Gateway => None,
            BudgetScope::Key(_) => Some((UsageBy::Key, &mut f.key_prefix)),
            BudgetScope::User(_) => Some((UsageBy::User, &mut f.user)),
            BudgetScope::Project(_) => Some((UsageBy::Project, &mut f.project)),
        };
        let by = match (slot, name) {
            (None, _) => UsageBy::Provider,
            (Some((by, slot)), Some(name)) => {
                *slot = Some(name.to_owned());
                by
            }
            (Some(_), None) => return Ok(0.0),
        };
        let rows = self.usage(&f, by, 0).await?;
        Ok(rows.iter().filter_map(|r| r.cost_usd).sum())
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
