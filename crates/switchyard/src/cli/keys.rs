//! `keys create | list | show | limits | revoke`.

use clap::{Args, Subcommand};
use switchyard_core::limits::Limits;
use switchyard_core::util::glob_match;
use switchyard_store::{ApiKey, NewKey};

use super::fmt::{Span, Table, fmt_limits, fmt_opt_time, fmt_time, parse_limit, parse_span};
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
        #[command(flatten)]
        limits: LimitArgs,
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
    /// Show one key (never its secret or hash).
    Show {
        /// Key id (key_…) or its visible prefix (sy-…).
        key: String,
        #[arg(long)]
        json: bool,
    },
    /// Set or clear a key's own rate limits. The limits given replace those
    /// values and keep the others; --clear removes them all. A running gateway
    /// applies the change when its cached lookup of the key expires
    /// (security.key_cache_ms).
    Limits {
        /// Key id (key_…) or its visible prefix (sy-…).
        key: String,
        #[command(flatten)]
        limits: LimitArgs,
        /// Remove every limit of the key's own.
        #[arg(long, conflicts_with_all = ["rpm", "tpm", "concurrent"])]
        clear: bool,
        /// Print the changed key as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show, set or clear a key's own routing policy: a pinned strategy, an
    /// adaptive policy, a cost ceiling (over its project's and the routes').
    /// The options given replace those settings and keep the others.
    Routing {
        /// Key id (key_…) or its visible prefix (sy-…).
        key: String,
        #[command(flatten)]
        policy: super::routing::PolicyArgs,
    },
    /// Revoke a key.
    Revoke {
        /// Key id (key_…) or its visible prefix (sy-…).
        key: String,
    },
}

/// A key's own rate limits, counted exactly across instances (with the user's
/// and project's limits from the configuration, each apart).
#[derive(Args)]
pub struct LimitArgs {
    /// At most N requests per minute.
    #[arg(long, value_name = "N", value_parser = parse_limit)]
    rpm: Option<u64>,
    /// At most N tokens per minute (the input estimate plus the output asked
    /// for, reconciled with the usage reported).
    #[arg(long, value_name = "N", value_parser = parse_limit)]
    tpm: Option<u64>,
    /// At most N requests at once (a stream counts until it ends).
    #[arg(long, value_name = "N", value_parser = parse_limit)]
    concurrent: Option<u64>,
}

impl LimitArgs {
    fn is_empty(&self) -> bool {
        self.rpm.is_none() && self.tpm.is_none() && self.concurrent.is_none()
    }

    /// `base` with the values given replaced; None when nothing is set.
    fn over(&self, base: Option<Limits>) -> Option<Limits> {
        let mut l = base.unwrap_or_default();
        if let Some(n) = self.rpm {
            l = l.rpm(n);
        }
        if let Some(n) = self.tpm {
            l = l.tpm(n);
        }
        if let Some(n) = self.concurrent {
            l = l.concurrent(n);
        }
        (!l.is_empty()).then_some(l)
    }
}

pub async fn run(ctx: &Ctx, cmd: KeysCmd) -> Result<()> {
    match cmd {
        KeysCmd::Create { user, project, label, expires_in, allow_model, limits, json } => {
            let limits = limits.over(None);
            let key = NewKey { label, limits, ..NewKey::default() };
            create(ctx, &user, project.as_deref(), key, expires_in, allow_model, json).await
        }
        KeysCmd::List { user, json } => list(ctx, user.as_deref(), json).await,
        KeysCmd::Show { key, json } => show(ctx, &key, json).await,
        KeysCmd::Limits { key, limits, clear, json } => {
            set_limits(ctx, &key, &limits, clear, json).await
        }
        KeysCmd::Routing { key, policy } => set_routing(ctx, &key, &policy).await,
        KeysCmd::Revoke { key } => revoke(ctx, &key).await,
    }
}

async fn set_routing(ctx: &Ctx, key: &str, given: &super::routing::PolicyArgs) -> Result<()> {
    let k = find(ctx, key).await?;
    if given.is_empty() {
        if given.json {
            return out_json(&k.routing);
        }
        let policy = super::routing::describe(k.routing.as_ref());
        return out(&format!("key {} ({}): {policy}\n", k.id, k.prefix));
    }
    let routing = given.over(ctx, k.routing.clone(), &format!("key:{}", k.id))?;
    ctx.store.set_key_routing(&k.id, routing.as_ref()).await?;
    let Some(changed) = ctx.store.key(&k.id).await? else {
        return Err(Failure(format!("key {} disappeared while it was changed", k.id)));
    };
    if given.json {
        return out_json(&changed);
    }
    let policy = super::routing::describe(changed.routing.as_ref());
    out(&format!(
        "routing of key {} ({}) is now {policy}: a running gateway applies this {}\n",
        k.id,
        k.prefix,
        ctx.key_cache_note()
    ))
}

/// `key`: the label and limits as given; the rest is filled in here.
async fn create(
    ctx: &Ctx,
    user: &str,
    project: Option<&str>,
    key: NewKey,
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
    let label = key.label.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty());
    let (key, secret) = ctx
        .store
        .create_key(NewKey {
            user_id: owner.id.clone(),
            project_id: project.as_ref().map(|p| p.id.clone()),
            label,
            allowed_models,
            limits: key.limits,
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
        let limits = match &key.limits {
            Some(l) => format!(", limits {}", fmt_limits(Some(l))),
            None => String::new(),
        };
        note(&format!(
            "created key {} ({}) for {}, {scope}, expires {}{limits}",
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
        "LIMITS",
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
            fmt_limits(k.limits.as_ref()),
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

/// A key by id or by its visible prefix (which must name one key).
async fn find(ctx: &Ctx, key: &str) -> Result<ApiKey> {
    let k = if key.starts_with("sy-") {
        let mut matches: Vec<ApiKey> =
            ctx.store.list_keys(None).await?.into_iter().filter(|k| k.prefix == key).collect();
        match matches.len() {
            0 => None,
            1 => matches.pop(),
            n => return Err(Failure(format!("{n} keys have the prefix {key}: name it by id"))),
        }
    } else {
        ctx.store.key(key).await?
    };
    k.ok_or_else(|| Failure(format!("no key with id or prefix {key:?}")))
}

async fn show(ctx: &Ctx, key: &str, json: bool) -> Result<()> {
    let k = find(ctx, key).await?;
    if json {
        return out_json(&k);
    }
    let names = ctx.names().await?;
    let fields: Vec<(&str, String)> = vec![
        ("id", k.id.clone()),
        ("prefix", k.prefix.clone()),
        ("user", names.user(Some(&k.user_id))),
        (
            "project",
            k.project_id
                .as_deref()
                .map_or_else(|| "(primary)".to_owned(), |p| names.project(Some(p))),
        ),
        ("label", k.label.clone().unwrap_or_else(|| "-".into())),
        ("models", k.allowed_models.as_ref().map_or_else(|| "*".to_owned(), |m| m.join(","))),
        ("limits", fmt_limits(k.limits.as_ref())),
        ("created", fmt_time(k.created_at)),
        ("expires", expires(&k, now_ms())),
        ("revoked", fmt_opt_time(k.revoked_at)),
        ("last used", fmt_opt_time(k.last_used_at)),
    ];
    let width = fields.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let text: String =
        fields.iter().map(|(name, value)| format!("{name:<width$}  {value}\n")).collect();
    out(&text)
}

async fn set_limits(
    ctx: &Ctx,
    key: &str,
    given: &LimitArgs,
    clear: bool,
    json: bool,
) -> Result<()> {
    if !clear && given.is_empty() {
        return Err("nothing to change: give --rpm, --tpm, --concurrent or --clear".into());
    }
    let k = find(ctx, key).await?;
    let limits = if clear { None } else { given.over(k.limits) };
    ctx.store.set_key_limits(&k.id, limits).await?;
    let Some(changed) = ctx.store.key(&k.id).await? else {
        return Err(Failure(format!("key {} disappeared while it was changed", k.id)));
    };
    if json {
        return out_json(&changed);
    }
    let what = match &changed.limits {
        Some(l) => format!("limits of key {} ({}) are now {}", k.id, k.prefix, fmt_limits(Some(l))),
        None => format!("key {} ({}) has no limits of its own now", k.id, k.prefix),
    };
    out(&format!("{what}: a running gateway applies this {}\n", ctx.key_cache_note()))
}

async fn revoke(ctx: &Ctx, key: &str) -> Result<()> {
    let k = find(ctx, key).await?;
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
