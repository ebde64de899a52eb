//! `switchyard limits`: every rate limit in force, by scope: gateway keys' own
//! (stored with them), users' and projects' (`limits:`), and deployments'
//! capacity (`limits:` on a deployment, per credential). Where they are
//! counted and how they fail: `state:` (docs/controls.md).

use clap::Args;
use serde::Serialize;
use switchyard_core::limits::Limits;

use super::fmt::Table;
use super::{Ctx, Result, out, out_json};

#[derive(Args)]
pub struct LimitsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row {
    /// `key:<id>`, `user:<id or email>`, `project:<id or name>`,
    /// `deployment:<model>/<provider>/<upstream model>`.
    scope: String,
    rpm: Option<u64>,
    tpm: Option<u64>,
    concurrent: Option<u64>,
    /// Where it is set: `key` (stored), `config`.
    source: &'static str,
}

fn row(scope: String, l: &Limits, source: &'static str) -> Row {
    Row { scope, rpm: l.rpm, tpm: l.tpm, concurrent: l.concurrent, source }
}

pub async fn run(ctx: &Ctx, a: LimitsArgs) -> Result<()> {
    let mut rows = Vec::new();
    for k in ctx.store.list_keys(None).await.map_err(|e| e.to_string())? {
        if let Some(l) = k.limits.filter(|l| !l.is_empty()) {
            rows.push(row(format!("key:{} ({})", k.id, k.prefix), &l, "key"));
        }
    }
    let cfg = &ctx.catalog.limits;
    for (name, l) in &cfg.users {
        rows.push(row(format!("user:{name}"), l, "config"));
    }
    for (name, l) in &cfg.projects {
        rows.push(row(format!("project:{name}"), l, "config"));
    }
    for m in &ctx.catalog.models {
        for d in m.deployments.iter().filter(|d| !d.limits.is_empty()) {
            let provider = ctx.catalog.providers.get(d.provider).map_or("?", |p| p.name.as_str());
            let scope = format!("deployment:{}/{provider}/{}", m.id, d.upstream_model);
            rows.push(row(scope, &d.limits, "config"));
        }
    }
    if a.json {
        return out_json(&rows);
    }
    if rows.is_empty() {
        return out(
            "no rate limits (keys create --rpm …, limits: and deployments' limits: in the configuration)\n",
        );
    }
    let n = |v: Option<u64>| v.map_or_else(|| "-".to_owned(), |v| v.to_string());
    let mut t = Table::new(&["SCOPE", ">RPM", ">TPM", ">CONCURRENT", "SET IN"]);
    for r in &rows {
        t.row(vec![r.scope.clone(), n(r.rpm), n(r.tpm), n(r.concurrent), r.source.to_owned()]);
    }
    let backend = match ctx.catalog.state.backend {
        switchyard_core::config::raw::StateBackend::Local => {
            "in each gateway process (state.backend: local)"
        }
        switchyard_core::config::raw::StateBackend::Redis => "on Redis, shared by every instance",
    };
    out(&format!("{}counted {backend}; deployments' limits apply per credential\n", t.render()))
}
