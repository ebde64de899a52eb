//! The operator subcommands: `migrate`, `users`, `projects`, `groups`, `keys`,
//! `rules`, `credentials`, `secrets`, `logs`, `usage`, `limits`, `budgets`. Each loads the same
//! configuration as `serve` (`--config FILE`, else `$SWITCHYARD_CONFIG`, else the
//! embedded default) and opens (and migrates) the database it names.
//!
//! `catalog discover` (`catalog.rs`) reads the configuration alone, and opens
//! no database.
//!
//! Output: tables for people, `--json` for scripts on every listing and show
//! command. A failure prints one line (`switchyard: …`) on stderr and exits 1.
//! Secrets are never printed, except a new API key's, once, by `keys create`.

mod budgets;
mod byok;
pub mod catalog;
mod directory;
pub mod explain;
mod fmt;
mod keys;
mod limits;
mod logs;
mod routing;
mod rules;
pub mod status;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use switchyard_core::{Catalog, ConfigSource, LoadError};
use switchyard_store::{Group, Project, Store, StoreError, User};

use crate::storage;

/// The operator subcommands, flattened into the binary's command list.
#[derive(Subcommand)]
pub enum Admin {
    /// Apply database migrations (every subcommand also does this on start).
    Migrate {
        #[command(flatten)]
        common: Common,
    },
    /// People and services that hold API keys.
    Users {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: directory::UsersCmd,
    },
    /// Projects: what requests are attributed to; users belong to them.
    Projects {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: directory::ProjectsCmd,
    },
    /// Groups of users, as named by access rules.
    Groups {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: directory::GroupsCmd,
    },
    /// Gateway API keys.
    Keys {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: keys::KeysCmd,
    },
    /// Stored access rules (a running gateway loads them when it starts).
    Rules {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: rules::RulesCmd,
    },
    /// Users' and projects' own provider keys (BYOK), sealed under the gateway secret.
    Credentials {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: byok::CredentialsCmd,
    },
    /// The gateway secret that BYOK keys are sealed under.
    Secrets {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: byok::SecretsCmd,
    },
    /// Request records: who asked for what, who served it, what it cost.
    Logs {
        #[command(flatten)]
        common: Common,
        #[command(subcommand)]
        cmd: logs::LogsCmd,
    },
    /// Requests, errors, tokens, cost and latency, grouped.
    Usage {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: logs::UsageArgs,
    },
    /// Rate limits in force: keys', users', projects' and deployments'.
    Limits {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: limits::LimitsArgs,
    },
    /// Budgets this period: limit, spent, reserved and uncertain per scope.
    Budgets {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        args: budgets::BudgetsArgs,
    },
}

/// Options every operator subcommand takes.
#[derive(Args)]
pub struct Common {
    /// Configuration file (default: $SWITCHYARD_CONFIG, else the embedded default,
    /// whose database is ./switchyard-data/switchyard.db).
    #[arg(long, short, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Runs one operator subcommand to completion.
pub fn run(cmd: Admin) -> ExitCode {
    block_on(dispatch(cmd))
}

/// Runs a subcommand's future to completion on a runtime of its own; its
/// error, on one line, and the exit code.
pub(crate) fn block_on(work: impl std::future::Future<Output = Result<()>>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("switchyard: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line, whatever the underlying error looked like.
            let msg: Vec<&str> = e.0.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            eprintln!("switchyard: {}", msg.join("; "));
            ExitCode::FAILURE
        }
    }
}

async fn dispatch(cmd: Admin) -> Result<()> {
    let config = match &cmd {
        Admin::Migrate { common }
        | Admin::Users { common, .. }
        | Admin::Projects { common, .. }
        | Admin::Groups { common, .. }
        | Admin::Keys { common, .. }
        | Admin::Rules { common, .. }
        | Admin::Credentials { common, .. }
        | Admin::Secrets { common, .. }
        | Admin::Logs { common, .. }
        | Admin::Usage { common, .. }
        | Admin::Limits { common, .. }
        | Admin::Budgets { common, .. } => common.config.clone(),
    };
    let ctx = Ctx::open(config.as_deref()).await?;
    let result = match cmd {
        Admin::Migrate { .. } => out(&format!(
            "{}: migrations applied, schema up to date\n",
            ctx.store.backend().as_str()
        )),
        Admin::Users { cmd, .. } => directory::users(&ctx, cmd).await,
        Admin::Projects { cmd, .. } => directory::projects(&ctx, cmd).await,
        Admin::Groups { cmd, .. } => directory::groups(&ctx, cmd).await,
        Admin::Keys { cmd, .. } => keys::run(&ctx, cmd).await,
        Admin::Rules { cmd, .. } => rules::run(&ctx, cmd).await,
        Admin::Credentials { cmd, .. } => byok::credentials(&ctx, cmd).await,
        Admin::Secrets { cmd, .. } => byok::secrets(&ctx, cmd).await,
        Admin::Logs { cmd, .. } => logs::logs(&ctx, cmd).await,
        Admin::Usage { args, .. } => logs::usage(&ctx, args).await,
        Admin::Limits { args, .. } => limits::run(&ctx, args).await,
        Admin::Budgets { args, .. } => budgets::run(&ctx, args).await,
    };
    ctx.store.close().await;
    result
}

/// A failure, as the one line the operator reads.
#[derive(Debug)]
pub struct Failure(pub String);

pub type Result<T> = std::result::Result<T, Failure>;

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure(s)
    }
}

impl From<&str> for Failure {
    fn from(s: &str) -> Self {
        Failure(s.to_owned())
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure(e.to_string())
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Self {
        Failure(format!("cannot write JSON: {e}"))
    }
}

/// What every subcommand works with: the loaded configuration and its database.
pub struct Ctx {
    pub source: ConfigSource,
    pub catalog: Catalog,
    pub store: Store,
}

impl Ctx {
    async fn open(config: Option<&Path>) -> Result<Ctx> {
        let (source, catalog) = switchyard_core::load(config).map_err(|e| match e {
            LoadError::Invalid(inv) => Failure(format!("invalid configuration: {inv}")),
            other => Failure(other.to_string()),
        })?;
        let Some(url) = storage::database_url(&catalog.storage, source.path.as_deref()) else {
            return Err(Failure(format!(
                "{}: storage.url is \"none\": this command needs a database",
                source.name
            )));
        };
        let store = storage::open(&url, &catalog.storage).await?;
        Ok(Ctx { source, catalog, store })
    }

    /// A user by id or (case-insensitive) email.
    pub async fn user(&self, id_or_email: &str) -> Result<User> {
        let found = if id_or_email.contains('@') {
            self.store.user_by_email(id_or_email).await?
        } else {
            self.store.user(id_or_email).await?
        };
        found.ok_or_else(|| Failure(format!("no user with id or email {id_or_email:?}")))
    }

    /// A project by id or name.
    pub async fn project(&self, id_or_name: &str) -> Result<Project> {
        if let Some(p) = self.store.project(id_or_name).await? {
            return Ok(p);
        }
        self.store
            .project_by_name(id_or_name)
            .await?
            .ok_or_else(|| Failure(format!("no project with id or name {id_or_name:?}")))
    }

    /// A group by name or id.
    pub async fn group(&self, name_or_id: &str) -> Result<Group> {
        if let Some(g) = self.store.group_by_name(name_or_id).await? {
            return Ok(g);
        }
        self.store
            .list_groups()
            .await?
            .into_iter()
            .find(|g| g.id == name_or_id)
            .ok_or_else(|| Failure(format!("no group with name or id {name_or_id:?}")))
    }

    /// Ids → emails and project names, for tables.
    pub async fn names(&self) -> Result<Names> {
        Ok(Names {
            users: self.store.list_users().await?.into_iter().map(|u| (u.id, u.email)).collect(),
            projects: self
                .store
                .list_projects()
                .await?
                .into_iter()
                .map(|p| (p.id, p.name))
                .collect(),
        })
    }

    /// How long a running gateway may keep using a changed key or user.
    pub fn key_cache_note(&self) -> String {
        let ms = self.catalog.security.key_cache_ms;
        if ms == 0 {
            "immediately".to_owned()
        } else {
            format!("within {} on a running gateway", fmt::fmt_ms(ms))
        }
    }
}

/// Readable names for ids in tables (ids stay in `--json`).
pub struct Names {
    users: std::collections::HashMap<String, String>,
    projects: std::collections::HashMap<String, String>,
}

impl Names {
    pub fn user(&self, id: Option<&str>) -> String {
        id.map_or_else(
            || "-".to_owned(),
            |id| self.users.get(id).cloned().unwrap_or_else(|| id.to_owned()),
        )
    }

    pub fn project(&self, id: Option<&str>) -> String {
        id.map_or_else(
            || "-".to_owned(),
            |id| self.projects.get(id).cloned().unwrap_or_else(|| id.to_owned()),
        )
    }
}

/// Writes to stdout; a closed pipe (`| head`) ends output quietly.
pub fn out(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure(format!("cannot write to stdout: {e}"))),
    }
}

/// Pretty JSON on stdout.
pub fn out_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    out(&text)
}

/// A table on stdout, or `empty` when it has no rows.
pub fn out_table(table: &fmt::Table, empty: &str) -> Result<()> {
    if table.is_empty() {
        return out(&format!("{empty}\n"));
    }
    out(&table.render())
}

/// A note for the operator on stderr (stdout stays parseable).
pub fn note(text: &str) {
    eprintln!("{text}");
}
