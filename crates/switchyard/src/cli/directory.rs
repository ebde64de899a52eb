//! `users`, `projects`, `groups`.

use clap::{Subcommand, ValueEnum};
use switchyard_store::{CallerRole, NewUser};

use super::fmt::{Table, fmt_time};
use super::{Ctx, Failure, Result, out, out_json, out_table};

/// A role as typed on the command line.
#[derive(Clone, Copy, ValueEnum)]
pub enum RoleArg {
    Admin,
    Member,
    Viewer,
}

impl From<RoleArg> for CallerRole {
    fn from(r: RoleArg) -> CallerRole {
        match r {
            RoleArg::Admin => CallerRole::Admin,
            RoleArg::Member => CallerRole::Member,
            RoleArg::Viewer => CallerRole::Viewer,
        }
    }
}

#[derive(Subcommand)]
pub enum UsersCmd {
    /// Create a user (and, without --project, their own primary project).
    Create {
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: Option<String>,
        #[arg(long, value_enum, default_value = "member")]
        role: RoleArg,
        /// Primary project (id or name); default: a new project named after the
        /// email's local part.
        #[arg(long, value_name = "PROJECT")]
        project: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List users.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Change a user's role.
    SetRole {
        /// User id or email.
        #[arg(value_name = "USER")]
        user: String,
        #[arg(value_enum)]
        role: RoleArg,
    },
    /// Disable a user: their keys stop working (nothing is deleted).
    Disable {
        /// User id or email.
        #[arg(value_name = "USER")]
        user: String,
    },
    /// Enable a disabled user again.
    Enable {
        /// User id or email.
        #[arg(value_name = "USER")]
        user: String,
    },
}

#[derive(Subcommand)]
pub enum ProjectsCmd {
    /// Create a project.
    Create {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// List projects.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a user to a project.
    AddMember {
        /// Project id or name.
        project: String,
        /// User id or email.
        user: String,
    },
    /// Show, set or clear a project's routing policy: a pinned strategy, an
    /// adaptive policy, a cost ceiling (over the routes'; a key's own wins).
    /// The options given replace those settings and keep the others.
    Routing {
        /// Project id or name.
        project: String,
        #[command(flatten)]
        policy: super::routing::PolicyArgs,
    },
}

#[derive(Subcommand)]
pub enum GroupsCmd {
    /// Create a group.
    Create {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// List groups.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a user to a group.
    AddMember {
        /// Group name or id.
        group: String,
        /// User id or email.
        user: String,
    },
}

pub async fn users(ctx: &Ctx, cmd: UsersCmd) -> Result<()> {
    match cmd {
        UsersCmd::Create { email, name, role, project, json } => {
            let project_id = match &project {
                Some(p) => Some(ctx.project(p).await?.id),
                None => None,
            };
            let user = ctx
                .store
                .create_user(NewUser { email, name, role: role.into(), project_id })
                .await?;
            if json {
                return out_json(&user);
            }
            let names = ctx.names().await?;
            out(&format!(
                "created user {} {} ({}), primary project {}\n",
                user.id,
                user.email,
                user.role.as_str(),
                names.project(user.primary_project_id.as_deref())
            ))
        }
        UsersCmd::List { json } => {
            let users = ctx.store.list_users().await?;
            if json {
                return out_json(&users);
            }
            let names = ctx.names().await?;
            let mut t =
                Table::new(&["ID", "EMAIL", "NAME", "ROLE", "PROJECT", "STATUS", "CREATED"]);
            for u in &users {
                t.row(vec![
                    u.id.clone(),
                    u.email.clone(),
                    u.name.clone().unwrap_or_else(|| "-".into()),
                    u.role.as_str().into(),
                    names.project(u.primary_project_id.as_deref()),
                    if u.disabled { "disabled" } else { "active" }.into(),
                    fmt_time(u.created_at),
                ]);
            }
            out_table(&t, "no users")
        }
        UsersCmd::SetRole { user, role } => {
            let u = ctx.user(&user).await?;
            let role = CallerRole::from(role);
            ctx.store.set_user_role(&u.id, role).await?;
            out(&format!(
                "{} is now {} (applies {})\n",
                u.email,
                role.as_str(),
                ctx.key_cache_note()
            ))
        }
        UsersCmd::Disable { user } => {
            let u = ctx.user(&user).await?;
            ctx.store.disable_user(&u.id).await?;
            out(&format!(
                "disabled {}: their keys stop working {}\n",
                u.email,
                ctx.key_cache_note()
            ))
        }
        UsersCmd::Enable { user } => {
            let u = ctx.user(&user).await?;
            ctx.store.enable_user(&u.id).await?;
            out(&format!("enabled {}\n", u.email))
        }
    }
}

pub async fn projects(ctx: &Ctx, cmd: ProjectsCmd) -> Result<()> {
    match cmd {
        ProjectsCmd::Create { name, json } => {
            let p = ctx.store.create_project(&name).await?;
            if json {
                return out_json(&p);
            }
            out(&format!("created project {} {}\n", p.id, p.name))
        }
        ProjectsCmd::List { json } => {
            let projects = ctx.store.list_projects().await?;
            if json {
                return out_json(&projects);
            }
            let mut t = Table::new(&["ID", "NAME", "CONTENT LOGGING", "CREATED"]);
            for p in &projects {
                let logging = if p.log_content {
                    format!("on (≤{} bytes)", p.content_cap_bytes)
                } else {
                    "off".into()
                };
                t.row(vec![p.id.clone(), p.name.clone(), logging, fmt_time(p.created_at)]);
            }
            out_table(&t, "no projects")
        }
        ProjectsCmd::AddMember { project, user } => {
            let p = ctx.project(&project).await?;
            let u = ctx.user(&user).await?;
            ctx.store.add_project_member(&p.id, &u.id).await?;
            out(&format!("{} is a member of project {}\n", u.email, p.name))
        }
        ProjectsCmd::Routing { project, policy } => {
            let p = ctx.project(&project).await?;
            if policy.is_empty() {
                if policy.json {
                    return out_json(&p.routing);
                }
                let now = super::routing::describe(p.routing.as_ref());
                return out(&format!("project {} ({}): {now}\n", p.name, p.id));
            }
            let routing = policy.over(ctx, p.routing.clone(), &format!("project:{}", p.id))?;
            ctx.store.set_project_routing(&p.id, routing.as_ref()).await?;
            let Some(changed) = ctx.store.project(&p.id).await? else {
                return Err(Failure(format!("project {} disappeared while it was changed", p.id)));
            };
            if policy.json {
                return out_json(&changed);
            }
            let now = super::routing::describe(changed.routing.as_ref());
            out(&format!(
                "routing of project {} ({}) is now {now}: a running gateway applies this {}\n",
                p.name,
                p.id,
                ctx.key_cache_note()
            ))
        }
    }
}

pub async fn groups(ctx: &Ctx, cmd: GroupsCmd) -> Result<()> {
    match cmd {
        GroupsCmd::Create { name, json } => {
            let g = ctx.store.create_group(&name).await?;
            if json {
                return out_json(&g);
            }
            out(&format!("created group {} {}\n", g.id, g.name))
        }
        GroupsCmd::List { json } => {
            let groups = ctx.store.list_groups().await?;
            if json {
                return out_json(&groups);
            }
            let mut t = Table::new(&["ID", "NAME", "CREATED"]);
            for g in &groups {
                t.row(vec![g.id.clone(), g.name.clone(), fmt_time(g.created_at)]);
            }
            out_table(&t, "no groups")
        }
        GroupsCmd::AddMember { group, user } => {
            let g = ctx.group(&group).await?;
            let u = ctx.user(&user).await?;
            ctx.store.add_group_member(&g.id, &u.id).await?;
            out(&format!(
                "{} is a member of group {} (applies {})\n",
                u.email,
                g.name,
                ctx.key_cache_note()
            ))
        }
    }
}
