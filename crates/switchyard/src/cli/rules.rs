//! `rules add | list | delete`: access rules stored in the database. A running
//! gateway loads them when it starts.

use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use switchyard_core::catalog::normalize_model;
use switchyard_store::{Effect, NewRule, Subject};

use super::directory::RoleArg;
use super::fmt::Table;
use super::{Ctx, Failure, Names, Result, note, out, out_json, out_table};

#[derive(Clone, Copy, ValueEnum)]
pub enum EffectArg {
    Allow,
    Deny,
}

#[derive(Subcommand)]
pub enum RulesCmd {
    /// Add a rule. Among the rules matching a caller and a model (or route), the
    /// highest priority wins; on a tie a deny beats an allow.
    Add(AddArgs),
    /// List stored rules, highest priority first (rules from the configuration
    /// file are not listed).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Delete a rule.
    Delete {
        /// Rule name or id.
        name: String,
    },
}

#[derive(Args)]
#[command(group(ArgGroup::new("subject").args(["role", "group", "project", "user"]).multiple(false)))]
pub struct AddArgs {
    #[arg(long)]
    name: String,
    #[arg(long, value_enum)]
    effect: EffectArg,
    /// Glob over model ids and route ids, e.g. `claude-opus-*`.
    #[arg(long)]
    pattern: String,
    /// Applies to users with this role (default subject: everyone).
    #[arg(long, value_enum)]
    role: Option<RoleArg>,
    /// Applies to members of this group (name or id).
    #[arg(long)]
    group: Option<String>,
    /// Applies to requests attributed to this project and its members (id or name).
    #[arg(long)]
    project: Option<String>,
    /// Applies to this user (id or email).
    #[arg(long)]
    user: Option<String>,
    /// Shown to refused callers.
    #[arg(long)]
    reason: String,
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i64,
    #[arg(long)]
    json: bool,
}

pub async fn run(ctx: &Ctx, cmd: RulesCmd) -> Result<()> {
    match cmd {
        RulesCmd::Add(a) => add(ctx, a).await,
        RulesCmd::List { json } => {
            let rules = ctx.store.list_rules().await?;
            if json {
                return out_json(&rules);
            }
            let names = ctx.names().await?;
            let mut t =
                Table::new(&["NAME", "EFFECT", "PATTERN", "SUBJECT", ">PRIORITY", "REASON"]);
            for r in &rules {
                t.row(vec![
                    r.rule.name.clone(),
                    effect_str(r.rule.effect).into(),
                    r.rule.pattern.clone(),
                    subject_text(&r.rule.subject, &names),
                    r.rule.priority.to_string(),
                    r.rule.reason.clone(),
                ]);
            }
            out_table(&t, "no stored rules")
        }
        RulesCmd::Delete { name } => {
            if !ctx.store.delete_rule(&name).await? {
                return Err(Failure(format!("no stored rule with name or id {name:?}")));
            }
            out(&format!("deleted rule {name}\n"))?;
            restart_note();
            Ok(())
        }
    }
}

async fn add(ctx: &Ctx, a: AddArgs) -> Result<()> {
    let subject = if let Some(r) = a.role {
        Subject::Role(r.into())
    } else if let Some(g) = &a.group {
        Subject::Group(ctx.group(g).await?.name)
    } else if let Some(p) = &a.project {
        Subject::Project(ctx.project(p).await?.id)
    } else if let Some(u) = &a.user {
        Subject::User(ctx.user(u).await?.id)
    } else {
        Subject::Any
    };
    let reason = a.reason.trim().to_owned();
    if reason.is_empty() {
        return Err("--reason is empty: say why (refused callers read it)".into());
    }
    let pattern = normalize_model(&a.pattern);
    if ctx.catalog.rules.iter().any(|r| r.name == a.name.trim()) {
        note(&format!(
            "warning: {} also defines a rule named {:?}",
            ctx.source.name,
            a.name.trim()
        ));
    }
    let effect = match a.effect {
        EffectArg::Allow => Effect::Allow,
        EffectArg::Deny => Effect::Deny,
    };
    let rule = ctx
        .store
        .create_rule(NewRule {
            name: a.name,
            effect,
            pattern,
            subject,
            reason,
            priority: a.priority,
        })
        .await?;
    if a.json {
        out_json(&rule)?;
    } else {
        let names = ctx.names().await?;
        out(&format!(
            "added rule {}: {} {} for {} (priority {})\n",
            rule.rule.name,
            effect_str(rule.rule.effect),
            rule.rule.pattern,
            subject_text(&rule.rule.subject, &names),
            rule.rule.priority
        ))?;
    }
    restart_note();
    Ok(())
}

fn restart_note() {
    note(
        "note: a running gateway loads stored rules when it starts: restart it to apply this change \
         (changes made through the admin API apply at once)",
    );
}

fn effect_str(e: Effect) -> &'static str {
    match e {
        Effect::Allow => "allow",
        Effect::Deny => "deny",
    }
}

fn subject_text(s: &Subject, names: &Names) -> String {
    match s {
        Subject::Any => "everyone".into(),
        Subject::Role(r) => format!("role:{}", r.as_str()),
        Subject::Group(g) => format!("group:{g}"),
        Subject::Project(p) => format!("project:{}", names.project(Some(p))),
        Subject::User(u) => format!("user:{}", names.user(Some(u))),
    }
}
