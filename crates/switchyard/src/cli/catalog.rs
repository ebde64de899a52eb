//! `switchyard catalog discover`: what each provider serves, from its own
//! model list, against what the catalog deploys on it (new, missing,
//! retiring). Reads the configuration only: no database.
//!
//! Exits 1 only when the configuration cannot be loaded or `--provider` names
//! no provider; a provider whose list cannot be had is reported with its
//! reason, and the others are still listed.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use switchyard_core::LoadError;
use switchyard_core::discover::{Outcome, ProviderDiscovery};

use super::fmt::Table;
use super::{Failure, Result, out, out_json};

#[derive(Subcommand)]
pub enum CatalogCmd {
    /// List what each provider serves, from its model-list API, against the
    /// catalog: models new to it, missing from the provider, retiring.
    Discover {
        /// Only this provider (its name under `providers:`).
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// Configuration file (default: $SWITCHYARD_CONFIG, else the embedded default).
        #[arg(long, short, value_name = "FILE")]
        config: Option<PathBuf>,
        /// JSON for scripts, instead of tables.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a `catalog` subcommand to completion.
pub fn run(cmd: CatalogCmd) -> ExitCode {
    super::block_on(dispatch(cmd))
}

async fn dispatch(cmd: CatalogCmd) -> Result<()> {
    let CatalogCmd::Discover { provider, config, json } = cmd;
    let (_, catalog) = switchyard_core::load(config.as_deref()).map_err(|e| match e {
        LoadError::Invalid(inv) => Failure(format!("invalid configuration: {inv}")),
        other => Failure(other.to_string()),
    })?;
    let found = switchyard_core::discover::discover(&catalog, provider.as_deref())
        .await
        .map_err(|e| Failure(e.to_string()))?;
    if json {
        return out_json(&serde_json::json!({ "providers": found }));
    }
    out(&render(&found))
}

/// The tables: one line per provider, then what was found, one line each.
fn render(found: &[ProviderDiscovery]) -> String {
    let mut providers = Table::new(&[
        "PROVIDER",
        "WIRE",
        "STATUS",
        ">LISTED",
        ">MATCHED",
        ">NEW",
        ">MISSING",
        ">RETIRING",
        "NOTE",
    ]);
    let mut findings = Table::new(&["PROVIDER", "FINDING", "MODEL", "UPSTREAM MODEL", "NOTE"]);
    for p in found {
        let (status, counts, note) = match &p.outcome {
            Outcome::Listed(c) => {
                for m in &c.new {
                    let name = m.display_name.clone().unwrap_or_default();
                    findings.row(vec![
                        p.provider.clone(),
                        "new".into(),
                        "-".into(),
                        m.id.clone(),
                        name,
                    ]);
                }
                for d in &c.missing {
                    findings.row(vec![
                        p.provider.clone(),
                        "missing".into(),
                        d.model.clone(),
                        d.upstream_model.clone(),
                        "not listed by the provider".into(),
                    ]);
                }
                for r in &c.retiring {
                    let note = match &r.retires {
                        Some(day) => format!("{} (until {day})", r.note),
                        None => r.note.clone(),
                    };
                    findings.row(vec![
                        p.provider.clone(),
                        "retiring".into(),
                        r.deployment.model.clone(),
                        r.deployment.upstream_model.clone(),
                        note,
                    ]);
                }
                let counts = [c.listed, c.matched, c.new.len(), c.missing.len(), c.retiring.len()];
                ("listed", counts.map(|n| n.to_string()), String::new())
            }
            Outcome::Unsupported { reason } => {
                ("unsupported", ["-"; 5].map(str::to_owned), reason.clone())
            }
            Outcome::Failed { reason } => ("failed", ["-"; 5].map(str::to_owned), reason.clone()),
        };
        let mut row = vec![p.provider.clone(), p.wire.to_owned(), status.to_owned()];
        row.extend(counts);
        row.push(note);
        providers.row(row);
    }
    let mut text = providers.render();
    if !findings.is_empty() {
        text.push('\n');
        text.push_str(&findings.render());
    }
    text
}
