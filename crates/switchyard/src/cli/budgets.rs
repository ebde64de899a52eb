//! `switchyard budgets`: every configured budget in its period now: limit,
//! spent, reserved and uncertain. Live from Redis when the limits count there
//! (`state.backend: redis`); else spent by the request records (the ledger),
//! with what is reserved in a running gateway on its `GET /admin/budgets`.

use std::time::Duration;

use clap::Args;
use serde::Serialize;
use switchyard_core::clock::UnixMs;
use switchyard_core::config::raw::StateBackend;
use switchyard_core::limits::budget::MICROS_PER_USD;
use switchyard_core::limits::{BudgetMode, Budgeted, Counters};
use switchyard_store::redis::RedisCounters;

use super::fmt::Table;
use super::{Ctx, Result, out, out_json};

#[derive(Args)]
pub struct BudgetsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    scope: String,
    period: String,
    window: String,
    mode: &'static str,
    limit_usd: f64,
    spent_usd: f64,
    reserved_usd: Option<f64>,
    uncertain_usd: Option<f64>,
    /// `redis` (live counters) or `records` (spent only).
    source: &'static str,
}

pub async fn run(ctx: &Ctx, a: BudgetsArgs) -> Result<()> {
    let now = UnixMs::now();
    let st = &ctx.catalog.state;
    let redis = match (st.backend, &st.redis) {
        (StateBackend::Redis, Some(r)) => Some(
            RedisCounters::new(&r.url, &r.prefix, Duration::from_millis(r.timeout_ms))
                .map_err(|e| format!("state.redis.url: {e}"))?,
        ),
        _ => None,
    };
    let mut rows = Vec::new();
    for spec in &ctx.catalog.budgets {
        let b = Budgeted::now(spec, now);
        let live = match &redis {
            Some(c) => c.read_spend(&b.key()).await.map_err(|e| e.to_string())?,
            None => None,
        };
        let usd = |m: u64| m as f64 / MICROS_PER_USD;
        let (spent, reserved, uncertain, source) = match live {
            Some(s) => (usd(s.spent), Some(usd(s.reserved)), Some(usd(s.uncertain)), "redis"),
            None => {
                let spent = ctx.store.budget_spent(spec, now).await.map_err(|e| e.to_string())?;
                (spent, None, None, "records")
            }
        };
        rows.push(Row {
            scope: spec.scope.to_string(),
            period: spec.period.label(),
            window: b.window.id.clone(),
            mode: if spec.mode == BudgetMode::Warn { "warn" } else { "enforce" },
            limit_usd: spec.limit_usd,
            spent_usd: spent,
            reserved_usd: reserved,
            uncertain_usd: uncertain,
            source,
        });
    }
    if a.json {
        return out_json(&rows);
    }
    if rows.is_empty() {
        return out("no budgets configured (budgets: in the configuration file)\n");
    }
    let money = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("${v:.4}"));
    let mut t = Table::new(&[
        "SCOPE",
        "PERIOD",
        "MODE",
        ">LIMIT",
        ">SPENT",
        ">RESERVED",
        ">UNCERTAIN",
        ">LEFT",
        "SOURCE",
    ]);
    for r in &rows {
        let used = r.spent_usd + r.reserved_usd.unwrap_or(0.0) + r.uncertain_usd.unwrap_or(0.0);
        t.row(vec![
            r.scope.clone(),
            r.window.clone(),
            r.mode.to_owned(),
            money(Some(r.limit_usd)),
            money(Some(r.spent_usd)),
            money(r.reserved_usd),
            money(r.uncertain_usd),
            money(Some((r.limit_usd - used).max(0.0))),
            r.source.to_owned(),
        ]);
    }
    let mut text = t.render();
    if redis.is_none() {
        text.push_str(
            "spent by the request records; a running gateway's reservations: GET /admin/budgets\n",
        );
    }
    out(&text)
}
