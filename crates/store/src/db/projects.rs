//! Projects and their membership.

use super::{
    RowExt, Store, const_format, found, new_id, non_empty, now_ms, on_pool, policy_from,
    policy_json,
};
use crate::error::StoreError;
use crate::model::Project;
use switchyard_core::app_policy::AppPolicy;

impl Store {
    pub async fn create_project(&self, name: &str) -> Result<Project, StoreError> {
        let name = non_empty("project name", name)?;
        let id = new_id("prj")?;
        let now = now_ms();
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)"
        )
        .bind(&id)
        .bind(&name)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a project with this name", "project", &id))?
        .rows_affected());
        Ok(Project {
            id,
            name,
            log_content: false,
            content_cap_bytes: DEFAULT_CONTENT_CAP,
            created_at: now,
            routing: None,
        })
    }

    pub async fn project(&self, id: &str) -> Result<Option<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects WHERE id = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(id).fetch_optional(p).await?;
            row.as_ref().map(project_from).transpose()
        })
    }

    pub async fn project_by_name(&self, name: &str) -> Result<Option<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects WHERE name = $1");
        on_pool!(self, |p| {
            let row = sqlx::query(sql).bind(name).fetch_optional(p).await?;
            row.as_ref().map(project_from).transpose()
        })
    }

    /// Every project, by name.
    pub async fn list_projects(&self) -> Result<Vec<Project>, StoreError> {
        let sql = const_format!("SELECT ", PROJECT_COLS, " FROM projects ORDER BY name");
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).fetch_all(p).await?;
            rows.iter().map(project_from).collect()
        })
    }

    /// Whether request content is logged for the project, and up to how many bytes.
    pub async fn set_project_content(
        &self,
        id: &str,
        log_content: bool,
        cap_bytes: u32,
    ) -> Result<(), StoreError> {
        let n = on_pool!(self, |p| sqlx::query(
            "UPDATE projects SET log_content = $2, content_cap_bytes = $3 WHERE id = $1",
        )
        .bind(id)
        .bind(log_content)
        .bind(i64::from(cap_bytes))
        .execute(p)
        .await?
        .rows_affected());
        found(n, "project", id)
    }

    /// Replaces the project's own routing policy (`None`, or one pinning
    /// nothing, clears it). The caller checks it against the catalog first.
    pub async fn set_project_routing(
        &self,
        id: &str,
        routing: Option<&AppPolicy>,
    ) -> Result<(), StoreError> {
        let stored = policy_json(routing)?;
        let n = on_pool!(self, |p| sqlx::query("UPDATE projects SET routing = $2 WHERE id = $1")
            .bind(id)
            .bind(&stored)
            .execute(p)
            .await?
            .rows_affected());
        found(n, "project", id)
    }

    /// Adds `user` to `project` (both ids; already a member is fine).
    pub async fn add_project_member(&self, project: &str, user: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let both = format!("{project}/{user}");
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO project_members (project_id, user_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (project_id, user_id) DO NOTHING",
        )
        .bind(project)
        .bind(user)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("membership", "project or user", &both))?
        .rows_affected());
        Ok(())
    }

    /// The projects `user` is a member of, by name.
    pub async fn projects_of(&self, user: &str) -> Result<Vec<Project>, StoreError> {
        let sql = const_format!(
            "SELECT ",
            PROJECT_COLS_P,
            " FROM projects p JOIN project_members m ON m.project_id = p.id \
              WHERE m.user_id = $1 ORDER BY p.name"
        );
        on_pool!(self, |p| {
            let rows = sqlx::query(sql).bind(user).fetch_all(p).await?;
            rows.iter().map(project_from).collect()
        })
    }

    /// Every user's projects' names at once (user id → names, by name): what
    /// [`Store::projects_of`] gives each user, in one query.
    pub async fn project_names_by_user(
        &self,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StoreError> {
        self.names_by_user(
            "SELECT m.user_id, p.name FROM projects p JOIN project_members m \
             ON m.project_id = p.id ORDER BY m.user_id, p.name",
        )
        .await
    }

    /// `(user id, name)` rows of `sql`, in order, gathered by user.
    pub(crate) async fn names_by_user(
        &self,
        sql: &'static str,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StoreError> {
        let rows: Vec<(String, String)> =
            on_pool!(self, |p| sqlx::query_as(sql).fetch_all(p).await?);
        let mut out: std::collections::HashMap<String, Vec<String>> = Default::default();
        for (user, name) in rows {
            out.entry(user).or_default().push(name);
        }
        Ok(out)
    }
}

const DEFAULT_CONTENT_CAP: i64 = 65_536;

const PROJECT_COLS: &str = "id, name, log_content, content_cap_bytes, created_at, routing";
const PROJECT_COLS_P: &str =
    "p.id, p.name, p.log_content, p.content_cap_bytes, p.created_at, p.routing";

fn project_from(r: &impl RowExt) -> Result<Project, StoreError> {
    Ok(Project {
        id: r.col("id")?,
        name: r.col("name")?,
        log_content: r.col("log_content")?,
        content_cap_bytes: r.col("content_cap_bytes")?,
        created_at: r.col("created_at")?,
        routing: policy_from(r.col("routing")?, "projects.routing")?,
    })
}
