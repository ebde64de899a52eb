//! `credentials set | list | delete` (users' and projects' own provider keys,
//! sealed under the gateway secret) and `secrets rotate`.
//!
//! A provider key is read from stdin or from a named environment variable, never
//! from the command line (where `ps` and shell history would keep it), and is
//! never printed: listings show fingerprints.

use std::io::{IsTerminal as _, Read as _};

use clap::{Args, Subcommand};
use switchyard_store::seal::{SealedRef, Sealer};
use switchyard_store::{CredentialRow, NewCredential, OwnerKind};
use zeroize::Zeroizing;

use super::fmt::{Table, fmt_time};
use super::{Ctx, Failure, Names, Result, out, out_json, out_table};
use crate::storage;

/// Longest provider key accepted, in bytes (as the admin API).
const MAX_PROVIDER_KEY: usize = 4096;

#[derive(Subcommand)]
pub enum CredentialsCmd {
    /// Store (or replace) a provider key for a user or a project. The key is read
    /// from stdin, or from the variable named by --key-env; the gateway secret
    /// must be set (the same one the gateway runs with).
    Set {
        #[command(flatten)]
        owner: Owner,
        /// Provider name, as in the configuration.
        #[arg(long)]
        provider: String,
        /// Read the provider key from this environment variable instead of stdin.
        #[arg(long, value_name = "VAR")]
        key_env: Option<String>,
    },
    /// List stored provider keys: owners, providers and fingerprints only.
    List {
        #[command(flatten)]
        owner: OptOwner,
        #[arg(long)]
        json: bool,
    },
    /// Delete a stored provider key.
    Delete {
        #[command(flatten)]
        owner: Owner,
        #[arg(long)]
        provider: String,
    },
}

/// Exactly one owner.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct Owner {
    /// The owning user (id or email).
    #[arg(long)]
    user: Option<String>,
    /// The owning project (id or name).
    #[arg(long)]
    project: Option<String>,
}

/// At most one owner.
#[derive(Args)]
#[group(multiple = false)]
pub struct OptOwner {
    /// Only this user's keys (id or email).
    #[arg(long)]
    user: Option<String>,
    /// Only this project's keys (id or name).
    #[arg(long)]
    project: Option<String>,
}

#[derive(Subcommand)]
pub enum SecretsCmd {
    /// Re-encrypt every stored provider key under the current gateway secret
    /// (SWITCHYARD_SECRET / SWITCHYARD_SECRET_ID), opening old rows with the
    /// previous secrets (SWITCHYARD_PREVIOUS_SECRETS=id:secret,…). Changes nothing
    /// if any row cannot be opened.
    Rotate,
}

/// A resolved owner: kind, id, and how to show it.
struct OwnerRef {
    kind: OwnerKind,
    id: String,
    label: String,
}

async fn resolve(ctx: &Ctx, user: Option<&str>, project: Option<&str>) -> Result<Option<OwnerRef>> {
    Ok(match (user, project) {
        (Some(u), _) => {
            let u = ctx.user(u).await?;
            Some(OwnerRef { kind: OwnerKind::User, id: u.id, label: format!("user {}", u.email) })
        }
        (None, Some(p)) => {
            let p = ctx.project(p).await?;
            Some(OwnerRef {
                kind: OwnerKind::Project,
                id: p.id,
                label: format!("project {}", p.name),
            })
        }
        (None, None) => None,
    })
}

fn require_sealer(ctx: &Ctx) -> Result<Sealer> {
    let env = &ctx.catalog.security.secret_env;
    storage::sealer(&ctx.catalog.security)?.ok_or_else(|| {
        Failure(format!(
            "{env} is not set: provider keys are sealed under the gateway secret; set it to the value the gateway runs with"
        ))
    })
}

pub async fn credentials(ctx: &Ctx, cmd: CredentialsCmd) -> Result<()> {
    match cmd {
        CredentialsCmd::Set { owner, provider, key_env } => {
            let sealer = require_sealer(ctx)?;
            let provider = provider.trim().to_owned();
            if !ctx.catalog.providers.iter().any(|p| p.name == provider) {
                let known: Vec<&str> =
                    ctx.catalog.providers.iter().map(|p| p.name.as_str()).collect();
                return Err(Failure(format!(
                    "unknown provider {provider:?} (configured: {})",
                    known.join(", ")
                )));
            }
            let Some(owner) = resolve(ctx, owner.user.as_deref(), owner.project.as_deref()).await?
            else {
                return Err("give --user or --project".into());
            };
            let key = read_provider_key(key_env.as_deref())?;
            let replacing = ctx.store.credential(owner.kind, &owner.id, &provider).await?.is_some();
            let id = ctx.store.new_credential_id()?;
            let sealed = sealer
                .seal(&id, &key)
                .map_err(|e| Failure(format!("cannot seal the provider key: {e}")))?;
            drop(key);
            let row = ctx
                .store
                .put_credential(NewCredential {
                    id,
                    owner_kind: owner.kind,
                    owner_id: owner.id,
                    provider,
                    key_id: sealed.key_id,
                    nonce: sealed.nonce,
                    ciphertext: sealed.ciphertext,
                    fingerprint: sealed.fingerprint,
                })
                .await?;
            out(&format!(
                "{} {} key for {} (fingerprint {}, sealed under secret {})\n",
                if replacing { "replaced the" } else { "stored a" },
                row.provider,
                owner.label,
                row.fingerprint,
                row.key_id
            ))
        }
        CredentialsCmd::List { owner, json } => {
            let owner = resolve(ctx, owner.user.as_deref(), owner.project.as_deref()).await?;
            let creds =
                ctx.store.list_credentials(owner.as_ref().map(|o| (o.kind, o.id.as_str()))).await?;
            if json {
                return out_json(&creds);
            }
            let names = ctx.names().await?;
            let mut t =
                Table::new(&["ID", "OWNER", "PROVIDER", "FINGERPRINT", "SEALED UNDER", "UPDATED"]);
            for c in &creds {
                t.row(vec![
                    c.id.clone(),
                    owner_text(c.owner_kind, &c.owner_id, &names),
                    c.provider.clone(),
                    c.fingerprint.clone(),
                    c.key_id.clone(),
                    fmt_time(c.updated_at),
                ]);
            }
            out_table(&t, "no provider keys stored")
        }
        CredentialsCmd::Delete { owner, provider } => {
            let Some(owner) = resolve(ctx, owner.user.as_deref(), owner.project.as_deref()).await?
            else {
                return Err("give --user or --project".into());
            };
            let provider = provider.trim();
            if !ctx.store.delete_credential(owner.kind, &owner.id, provider).await? {
                return Err(Failure(format!("no {provider} key stored for {}", owner.label)));
            }
            out(&format!(
                "deleted the {provider} key of {} (applies {})\n",
                owner.label,
                ctx.key_cache_note()
            ))
        }
    }
}

fn owner_text(kind: OwnerKind, id: &str, names: &Names) -> String {
    match kind {
        OwnerKind::User => format!("user:{}", names.user(Some(id))),
        OwnerKind::Project => format!("project:{}", names.project(Some(id))),
    }
}

/// The provider key from `var`, else from stdin (piped, not typed: a terminal
/// would echo it).
fn read_provider_key(var: Option<&str>) -> Result<Zeroizing<String>> {
    let raw = match var {
        Some(var) => Zeroizing::new(
            std::env::var(var)
                .map_err(|_| Failure(format!("--key-env {var}: the variable is not set")))?,
        ),
        None => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                return Err(
                    "stdin is a terminal: pipe the provider key in (… < keyfile) or name a variable with --key-env VAR".into(),
                );
            }
            let mut buf = Zeroizing::new(String::new());
            stdin
                .lock()
                .read_to_string(&mut buf)
                .map_err(|e| Failure(format!("cannot read the provider key from stdin: {e}")))?;
            buf
        }
    };
    let key = raw.trim();
    if key.is_empty() || key.len() > MAX_PROVIDER_KEY || key.chars().any(char::is_control) {
        return Err(Failure(format!(
            "the provider key must be 1-{MAX_PROVIDER_KEY} printable characters"
        )));
    }
    Ok(Zeroizing::new(key.to_owned()))
}

pub async fn secrets(ctx: &Ctx, cmd: SecretsCmd) -> Result<()> {
    match cmd {
        SecretsCmd::Rotate => rotate(ctx).await,
    }
}

async fn rotate(ctx: &Ctx) -> Result<()> {
    let sealer = require_sealer(ctx)?;
    let rows = ctx.store.all_credentials().await?;
    // Open everything first: if any row does not open, change nothing.
    let mut resealed = Vec::new();
    let mut current = 0usize;
    let mut failures: Vec<(&CredentialRow, String)> = Vec::new();
    for row in &rows {
        let sealed =
            SealedRef { key_id: &row.key_id, nonce: &row.nonce, ciphertext: &row.ciphertext };
        if sealer.needs_rotation(&row.key_id) {
            match sealer.reseal(&row.id, &sealed) {
                Ok(s) => resealed.push((row, s)),
                Err(e) => failures.push((row, e.to_string())),
            }
        } else {
            match sealer.open(&row.id, &sealed) {
                Ok(_) => current += 1,
                Err(e) => failures.push((row, e.to_string())),
            }
        }
    }
    if let Some((row, why)) = failures.first() {
        let names = ctx.names().await?;
        let more = match failures.len() {
            1 => String::new(),
            n => format!(" and {} more", n - 1),
        };
        let sec = &ctx.catalog.security;
        return Err(Failure(format!(
            "cannot open {} of {} stored provider key(s) with the configured secrets: the {} key of {} \
             (sealed under secret {}): {why}{more}. Nothing was changed. Put the secret each was sealed under \
             in {} as id:secret (a changed {} needs a new {}), or delete those credentials",
            failures.len(),
            rows.len(),
            row.provider,
            owner_text(row.owner_kind, &row.owner_id, &names),
            row.key_id,
            sec.previous_secrets_env,
            sec.secret_env,
            sec.secret_id_env,
        )));
    }
    let mut done = 0usize;
    let mut replaced = 0usize;
    for (row, s) in resealed {
        match ctx
            .store
            .update_sealed(&row.id, &s.key_id, &s.nonce, &s.ciphertext, &s.fingerprint)
            .await
        {
            Ok(()) => done += 1,
            // Replaced meanwhile (a new id): the new row is sealed under the current key.
            Err(e) if e.is_not_found() => replaced += 1,
            Err(e) => {
                return Err(Failure(format!(
                    "resealing stopped after {done} of the keys to reseal: {e} (run it again: resealed rows stay current)"
                )));
            }
        }
    }
    let id = sealer.current_key_id();
    let mut msg =
        format!("resealed {done} provider key(s) under secret {id}; {current} already current");
    if replaced > 0 {
        msg.push_str(&format!("; {replaced} replaced meanwhile"));
    }
    msg.push('\n');
    out(&msg)?;
    if !rows.is_empty() {
        super::note(&format!(
            "every stored provider key is now sealed under secret {id}: once every gateway instance runs \
             with it, the previous secrets can be retired"
        ));
    }
    Ok(())
}
