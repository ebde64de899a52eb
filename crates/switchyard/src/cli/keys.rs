//! `keys create | list | revoke`.

use clap::Subcommand;
use switchyard_core::util::glob_match;
use switchyard_store::{ApiKey, NewKey};

use super::fmt::{Span, Table, fmt_opt_time, fmt_time, parse_span};
use super::{Ctx, Failure, Result, note, out, out_json, out_table};
use crate::storage::now_ms;

#[derive(Subcommand)]
pub enum KeysCmd {
    /// Create an API key. Its secret goes to stdout, once: it is not stored and
    /// cannot be shown again (details and the warning go to stderr).
    Create {
        /// The key's owner: user id or email.
        #[arg(long)]
        user: String,
        /// Bind the key to this project (id or name; the user must be a member).
        /// Default: requests are attributed to the user's primary project.
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        label: Option<String>,
        /// The key stops working after this long (30s, 15m, 1h, 7d).
        #[arg(long, value_name = "DURATION", value_parser = parse_span)]
        expires_in: Option<Span>,
        /// Limit the key to models matching this glob (repeatable).
        #[arg(long = "allow-model", value_name = "PATTERN", num_args = 1..)]
        allow_model: Vec<String>,
        /// Print the key and its secret as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List keys (never their secrets or hashes), newest first.
    List {
        /// Only this user's keys (id or email).
        #[arg(long)]
        user: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key.
    Revoke {
        /// Key id (key_…) or its visible prefix (sy-…).
        key: String,
    },
}

pub async fn run(ctx: &Ctx, cmd: KeysCmd) -> Result<()> {
    match cmd {
        KeysCmd::Create { user, project, label, expires_in, allow_model, json } => {
            create(ctx, &user, project.as_deref(), label, expires_in, allow_model, json).await
        }
        KeysCmd::List { user, json } => list(ctx, user.as_deref(), json).await,
        KeysCmd::Revoke { key } => revoke(ctx, &key).await,
    }
}

async fn create(
    ctx: &Ctx,
    user: &str,
    project: Option<&str>,
    label: Option<String>,
    expires_in: Option<Span>,
    allow_model: Vec<String>,
    json: bool,
) -> Result<()> {
    let owner = ctx.user(user).await?;
    if owner.disabled {
        return Err(Failure(format!(
            "user {} is disabled (switchyard users enable {})",
            owner.email, owner.email
        )));
    }
    let project = match project {
        Some(p) => {
            let p = ctx.project(p).await?;
            let member = ctx.store.projects_of(&owner.id).await?.iter().any(|m| m.id == p.id);
            if !member {
                return Err(Failure(format!(
                    "{} is not a member of project {} (switchyard projects add-member {} {})",
                    owner.email, p.name, p.name, owner.email
                )));
            }
            Some(p)
        }
        None => None,
    };
    let allowed_models = if allow_model.is_empty() {
        None
    } else {
        let patterns: Vec<String> = allow_model.iter().map(|p| p.trim().to_owned()).collect();
        if patterns.iter().any(String::is_empty) {
            return Err("--allow-model: empty pattern".into());
        }
        for p in &patterns {
            let known = ctx
                .catalog
                .models
                .iter()
                .any(|m| glob_match(p, &m.id) || m.aliases.iter().any(|a| glob_match(p, a)));
            if !known {
                note(&format!(
                    "warning: --allow-model {p:?} matches no model in {}",
                    ctx.source.name
                ));
            }
        }
        Some(patterns)
    };
    let expires_at = expires_in.map(|Span(ms)| now_ms().saturating_add(ms));
    let label = label.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty());
    let (key, secret) = ctx
        .store
        .create_key(NewKey {
            user_id: owner.id.clone(),
            project_id: project.as_ref().map(|p| p.id.clone()),
            label,
            allowed_models,
            limits: None,
            expires_at,
        })
        .await?;
    if json {
        #[derive(serde::Serialize)]
        struct Created<'a> {
            #[serde(flatten)]
            key: &'a ApiKey,
            secret: &'a str,
        }
        out_json(&Created { key: &key, secret: &secret })?;
    } else {
        let scope = project.as_ref().map_or_else(
            || "the user's primary project".to_owned(),
            |p| format!("project {}", p.name),
        );
        note(&format!(
            "created key {} ({}) for {}, {scope}, expires {}",
            key.id,
            key.prefix,
            owner.email,
            fmt_opt_time(key.expires_at)
        ));
        out(&format!("{secret}\n"))?;
    }
    note(
        "This secret is shown only once and will not be shown again: store it now (only its hash is kept).",
    );
    Ok(())
}

async fn list(ctx: &Ctx, user: Option<&str>, json: bool) -> Result<()> {
    let user_id = match user {
        Some(u) => Some(ctx.user(u).await?.id),
        None => None,
    };
    let keys = ctx.store.list_keys(user_id.as_deref()).await?;
    if json {
        return out_json(&keys);
    }
    let names = ctx.names().await?;
    let now = now_ms();
    let mut t = Table::new(&[
        "ID",
        "PREFIX",
        "USER",
        "PROJECT",
        "LABEL",
        "MODELS",
        "CREATED",
        "EXPIRES",
        "REVOKED",
        "LAST USED",
    ]);
    for k in &keys {
        t.row(vec![
            k.id.clone(),
            k.prefix.clone(),
            names.user(Some(&k.user_id)),
            k.project_id
                .as_deref()
                .map_or_else(|| "(primary)".to_owned(), |p| names.project(Some(p))),
            k.label.clone().unwrap_or_else(|| "-".into()),
            k.allowed_models.as_ref().map_or_else(|| "*".to_owned(), |m| m.join(",")),
            fmt_time(k.created_at),
            expires(k, now),
            fmt_opt_time(k.revoked_at),
            fmt_opt_time(k.last_used_at),
        ]);
    }
    out_table(&t, "no keys")
}

fn expires(k: &ApiKey, now: i64) -> String {
    match k.expires_at {
        None => "never".into(),
        Some(t) if t <= now => format!("{} (expired)", fmt_time(t)),
        Some(t) => fmt_time(t),
    }
}

async fn revoke(ctx: &Ctx, key: &str) -> Result<()> {
    let k = if key.starts_with("sy-") {
        let mut matches: Vec<ApiKey> =
            ctx.store.list_keys(None).await?.into_iter().filter(|k| k.prefix == key).collect();
        match matches.len() {
            0 => None,
            1 => matches.pop(),
            n => return Err(Failure(format!("{n} keys have the prefix {key}: revoke by id"))),
        }
    } else {
        ctx.store.key(key).await?
    };
    let Some(k) = k else {
        return Err(Failure(format!("no key with id or prefix {key:?}")));
    };
    if let Some(t) = k.revoked_at {
        return out(&format!(
            "key {} ({}) was already revoked at {}\n",
            k.id,
            k.prefix,
            fmt_time(t)
        ));
    }
    ctx.store.revoke_key(&k.id).await?;
    out(&format!(
        "revoked key {} ({}): it stops working {}\n",
        k.id,
        k.prefix,
        ctx.key_cache_note()
    ))
}
