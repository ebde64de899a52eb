//! Users: sign-up (with a primary project), lookup, role and disabling.

use super::{
    Backend, RowExt, SQLITE_BEGIN_WRITE, Store, const_format, found, new_id, now_ms, on_pool, role,
};
use crate::error::StoreError;
use crate::model::{CallerRole, NewUser, User};

impl Store {
    /// Creates a user and, unless `u.project_id` names an existing project, their
    /// primary project (named after the email's local part, `-2`, `-3`… when
    /// taken). The user becomes a member of the primary project.
    pub async fn create_user(&self, u: NewUser) -> Result<User, StoreError> {
        let email = normalize_email(&u.email)?;
        let name = u.name.map(|n| n.trim().to_owned()).filter(|n| !n.is_empty());
        let id = new_id("usr")?;
        let now = now_ms();
        let fresh_project = match &u.project_id {
            Some(_) => None,
            None => Some(new_id("prj")?),
        };
        let local = email.split('@').next().unwrap_or_default().to_owned();
        let sqlite = self.backend() == Backend::Sqlite;
        on_pool!(self, |p| {
            // Reads, then writes: on SQLite take the write lock up front (a deferred
            // transaction could not upgrade past a concurrent writer and would fail
            // with SQLITE_BUSY instead of waiting).
            let mut tx =
                if sqlite { p.begin_with(SQLITE_BEGIN_WRITE).await? } else { p.begin().await? };
            let taken: Option<String> = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
                .bind(&email)
                .fetch_optional(&mut *tx)
                .await?;
            if taken.is_some() {
                return Err(StoreError::Conflict("a user with this email".into()));
            }
            let project_id = match (&u.project_id, &fresh_project) {
                (Some(given), _) => {
                    let found: Option<String> =
                        sqlx::query_scalar("SELECT id FROM projects WHERE id = $1")
                            .bind(given)
                            .fetch_optional(&mut *tx)
                            .await?;
                    found.ok_or_else(|| StoreError::not_found("project", given))?
                }
                (None, Some(pid)) => {
                    // The first free name of `alice`, `alice-2`, `alice-3`, …; the
                    // insert skips taken names itself, so concurrent sign-ups on
                    // PostgreSQL cannot both claim one.
                    let mut n = 1u32;
                    loop {
                        let name = match n {
                            1 => local.clone(),
                            2..=1000 => format!("{local}-{n}"),
                            _ => format!("{local}-{}", pid.trim_start_matches("prj_")),
                        };
                        let inserted = sqlx::query(
                            "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3) \
                             ON CONFLICT (name) DO NOTHING",
                        )
                        .bind(pid)
                        .bind(&name)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                        if inserted == 1 {
                            break;
                        }
                        if n > 1000 {
                            return Err(StoreError::Conflict(format!("a project named {name}")));
                        }
                        n += 1;
                    }
                    pid.clone()
                }
                (None, None) => return Err(StoreError::Invalid("no project".into())),
            };
            sqlx::query(
                "INSERT INTO users (id, email, name, role, primary_project_id, disabled, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&id)
            .bind(&email)
            .bind(&name)
            .bind(u.role.as_str())
            .bind(&project_id)
            .bind(false)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(StoreError::on_write("a user with this email", "project", &project_id))?;
            sqlx::query(
                "INSERT INTO project_members (project_id, user_id, created_at) VALUES ($1, $2, $3)",
            )
            .bind(&project_id)
            .bind(&id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(User {
                id,
                email,
                name,
                role: u.role,
                primary_project_id: Some(project_id),
                disabled: false,
                created_at: now,
            })
        })
    }

    pub async fn user(&self, id: &str) -> Result<Option<User>, StoreError> {
        let sql = const_format!("SELECT ", USER_COLS, " FROM users WHERE id = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(user_from).transpose()
        })
    }

    /// By email, case-insensitively.
    pub async fn user_by_email(&self, email: &str) -> Result<Option<User>, StoreError> {
        let email = email.trim().to_lowercase();
        let sql = const_format!("SELECT ", USER_COLS, " FROM users WHERE email = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(&email).fetch_optional(p).await?;
            row.as_ref().map(user_from).transpose()
        })
    }

    /// Every user, by email.
    pub async fn list_users(&self) -> Result<Vec<User>, StoreError> {
        let sql = const_format!("SELECT ", USER_COLS, " FROM users ORDER BY email");
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).fetch_all(p).await?;
            rows.iter().map(user_from).collect()
        })
    }

    pub async fn set_user_role(&self, id: &str, role: CallerRole) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query("UPDATE users SET role = $2 WHERE id = $1")
            .bind(id)
            .bind(role.as_str())
            .execute(p)
            .await?
            .rows_affected());
        found(n, "user", id)
    }

    /// Marks the user disabled (their keys stop working; nothing is deleted).
    pub async fn disable_user(&self, id: &str) -> Result<(), StoreError> {
        self.set_disabled(id, true).await
    }

    pub async fn enable_user(&self, id: &str) -> Result<(), StoreError> {
        self.set_disabled(id, false).await
    }

    async fn set_disabled(&self, id: &str, disabled: bool) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query("UPDATE users SET disabled = $2 WHERE id = $1")
            .bind(id)
            .bind(disabled)
            .execute(p)
            .await?
            .rows_affected());
        found(n, "user", id)
    }
}

pub(super) fn normalize_email(email: &str) -> Result<String, StoreError> {
    let email = email.trim().to_lowercase();
    match email.split_once('@') {
        Some((local, domain))
            if !local.is_empty() && !domain.is_empty() && !domain.contains('@') =>
        {
            Ok(email)
        }
        _ => Err(StoreError::Invalid("email must look like name@domain".into())),
    }
}

const USER_COLS: &str = "id, email, name, role, primary_project_id, disabled, created_at";

fn user_from(r: &impl RowExt) -> Result<User, StoreError> {
    Ok(User {
        id: r.col("id")?,
        email: r.col("email")?,
        name: r.col("name")?,
        role: role(&r.col::<String>("role")?)?,
        primary_project_id: r.col("primary_project_id")?,
        disabled: r.col("disabled")?,
        created_at: r.col("created_at")?,
    })
}
