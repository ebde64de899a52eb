//! Groups and their membership (what access rules match on).

use super::{RowExt, Store, new_id, non_empty, now_ms, on_pool};
use crate::error::StoreError;
use crate::model::Group;

impl Store {
    pub async fn create_group(&self, name: &str) -> Result<Group, StoreError> {
        let name = non_empty("group name", name)?;
        let id = new_id("grp")?;
        let now = now_ms();
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO groups (id, name, created_at) VALUES ($1, $2, $3)"
        )
        .bind(&id)
        .bind(&name)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("a group with this name", "group", &id))?
        .rows_affected());
        Ok(Group { id, name, created_at: now })
    }

    pub async fn group_by_name(&self, name: &str) -> Result<Option<Group>, StoreError> {
        on_pool!(self, |p| {
            let row = sqlx::query("SELECT id, name, created_at FROM groups WHERE name = $1")
                .bind(name)
                .fetch_optional(p)
                .await?;
            row.as_ref().map(group_from).transpose()
        })
    }

    /// Adds `user` to `group` (both ids; already a member is fine).
    pub async fn add_group_member(&self, group: &str, user: &str) -> Result<(), StoreError> {
        let now = now_ms();
        let both = format!("{group}/{user}");
        on_pool!(self, |p| sqlx::query(
            "INSERT INTO group_members (group_id, user_id, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (group_id, user_id) DO NOTHING",
        )
        .bind(group)
        .bind(user)
        .bind(now)
        .execute(p)
        .await
        .map_err(StoreError::on_write("membership", "group or user", &both))?
        .rows_affected());
        Ok(())
    }

    /// The names of the groups `user` belongs to, sorted (what access rules match).
    pub async fn groups_of(&self, user: &str) -> Result<Vec<String>, StoreError> {
        on_pool!(self, |p| {
            let names: Vec<String> = sqlx::query_scalar(
                "SELECT g.name FROM groups g JOIN group_members m ON m.group_id = g.id \
                 WHERE m.user_id = $1 ORDER BY g.name",
            )
            .bind(user)
            .fetch_all(p)
            .await?;
            Ok(names)
        })
    }

    /// Every user's groups at once (user id → group names, by name): what
    /// [`Store::groups_of`] gives each user, in one query.
    pub async fn group_names_by_user(
        &self,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, StoreError> {
        self.names_by_user(
            "SELECT m.user_id, g.name FROM groups g JOIN group_members m \
             ON m.group_id = g.id ORDER BY m.user_id, g.name",
        )
        .await
    }

    /// Every group, by name.
    pub async fn list_groups(&self) -> Result<Vec<Group>, StoreError> {
        on_pool!(self, |p| {
            let rows = sqlx::query("SELECT id, name, created_at FROM groups ORDER BY name")
                .fetch_all(p)
                .await?;
            rows.iter().map(group_from).collect()
        })
    }
}

fn group_from(r: &impl RowExt) -> Result<Group, StoreError> {
    Ok(Group { id: r.col("id")?, name: r.col("name")?, created_at: r.col("created_at")? })
}
