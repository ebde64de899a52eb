//! Changes to the directory (users, projects, groups, gateway keys), checked
//! once for every way in: the admin API's handlers and the console's forms both
//! call these, so a rule (a key's expiry, a project it may be bound to, a limit
//! that would refuse everything) holds whichever one an operator uses. Each
//! change that affects authentication clears this instance's key cache, and
//! each is logged (target `switchyard::admin`) with ids only.

use serde::{Deserialize, Deserializer};
use switchyard_core::GatewayError;
use switchyard_core::access::CallerRole;
use switchyard_core::app_policy::AppPolicy;
use switchyard_core::limits::Limits;
use switchyard_protocol::ErrorCode;
use switchyard_store::{ApiKey, Group, NewKey, NewUser, Project, Store, User};

use super::{ApiError, given};
use crate::identity::{Identity, now_ms};

const DAY_MS: i64 = 86_400_000;
/// The longest `expires_in_days` accepted (100 years).
pub(crate) const MAX_DAYS: u32 = 36_500;
/// Content logged per request when a project opts in without saying how much.
const DEFAULT_CONTENT_CAP: u32 = 65_536;

/// A new user.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateUser {
    pub email: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Default `member`.
    #[serde(default)]
    pub role: Option<CallerRole>,
    /// The primary project (an id); default: a new project named after the email.
    #[serde(default)]
    pub project_id: Option<String>,
}

/// A change to a user.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchUser {
    #[serde(default)]
    pub role: Option<CallerRole>,
    #[serde(default)]
    pub disabled: Option<bool>,
}

/// A new project.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateProject {
    pub name: String,
    /// Whether request content may be logged for the project (default false).
    #[serde(default)]
    pub log_content: Option<bool>,
    /// Most bytes of content logged per request (default 65536).
    #[serde(default)]
    pub content_cap_bytes: Option<u32>,
}

/// A new key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateKey {
    pub user_id: String,
    /// Bind the key to a project the user belongs to (default: their primary).
    #[serde(default)]
    pub project_id: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    /// Unix milliseconds.
    #[serde(default)]
    pub expires_at: Option<i64>,
    #[serde(default)]
    pub expires_in_days: Option<u32>,
    #[serde(default)]
    pub allowed_models: Option<Vec<String>>,
    /// The key's own rate limits (unknown fields refused by `Limits`).
    #[serde(default)]
    pub limits: Option<Limits>,
}

/// A change to a key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchKey {
    /// Absent: unchanged; null (or `{}`): cleared; an object: replaces the
    /// key's whole set of limits.
    #[serde(default, deserialize_with = "present")]
    pub limits: Option<Option<Limits>>,
    /// Absent: unchanged; null (or `{}`): cleared; an object: the key's whole
    /// routing policy (`switchyard_core::app_policy`).
    #[serde(default, deserialize_with = "present")]
    pub routing: Option<Option<AppPolicy>>,
}

/// A change to a project.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchProject {
    /// As a key's: absent, null (cleared) or the whole policy.
    #[serde(default, deserialize_with = "present")]
    pub routing: Option<Option<AppPolicy>>,
}

/// A field that is present, null included (`Some(None)`), as against absent
/// (`None`, from `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Limits as the directory takes them: a zero limit is refused (it would
/// refuse every request), naming its field in the message and as `param`.
pub(crate) fn checked_limits(limits: Option<Limits>) -> Result<Option<Limits>, ApiError> {
    let Some(l) = limits else { return Ok(None) };
    match l.problems("limits").into_iter().next() {
        None => Ok(Some(l)),
        Some(problem) => {
            let field = problem.split(':').next().map(str::to_owned);
            Err(ApiError::from(
                GatewayError::new(ErrorCode::InvalidRequest, problem).with_param(field),
            ))
        }
    }
}

/// Who changes the directory, and where.
pub(crate) struct Directory<'a> {
    pub store: &'a Store,
    pub identity: &'a Identity,
    /// A user id, or `bootstrap-admin`: what the change log names.
    pub actor: &'a str,
}

impl Directory<'_> {
    pub(crate) async fn create_user(&self, body: CreateUser) -> Result<User, ApiError> {
        let user = self
            .store
            .create_user(NewUser {
                email: body.email,
                name: body.name,
                role: body.role.unwrap_or(CallerRole::Member),
                project_id: given(body.project_id),
            })
            .await?;
        tracing::info!(target: "switchyard::admin", actor = %self.actor, user = %user.id, role = user.role.as_str(), "created user");
        Ok(user)
    }

    pub(crate) async fn patch_user(&self, id: &str, body: PatchUser) -> Result<User, ApiError> {
        if body.role.is_none() && body.disabled.is_none() {
            return Err(ApiError::invalid("nothing to change: give role and/or disabled"));
        }
        if self.store.user(id).await?.is_none() {
            return Err(ApiError::not_found(format!("user not found: {id}")));
        }
        if let Some(role) = body.role {
            self.store.set_user_role(id, role).await?;
        }
        match body.disabled {
            Some(true) => self.store.disable_user(id).await?,
            Some(false) => self.store.enable_user(id).await?,
            None => {}
        }
        // A disabled user's keys, or a changed role, take effect now.
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, user = %id, role = ?body.role, disabled = ?body.disabled, "updated user");
        self.store
            .user(id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("user not found: {id}")))
    }

    pub(crate) async fn create_project(&self, body: CreateProject) -> Result<Project, ApiError> {
        let mut project = self.store.create_project(&body.name).await?;
        if body.log_content.is_some() || body.content_cap_bytes.is_some() {
            let log = body.log_content.unwrap_or(false);
            let cap = body.content_cap_bytes.unwrap_or(DEFAULT_CONTENT_CAP);
            self.store.set_project_content(&project.id, log, cap).await?;
            project.log_content = log;
            project.content_cap_bytes = i64::from(cap);
        }
        tracing::info!(target: "switchyard::admin", actor = %self.actor, project = %project.id, "created project");
        Ok(project)
    }

    pub(crate) async fn add_project_member(&self, id: &str, user_id: &str) -> Result<(), ApiError> {
        if self.store.project(id).await?.is_none() {
            return Err(ApiError::not_found(format!("project not found: {id}")));
        }
        if self.store.user(user_id).await?.is_none() {
            return Err(ApiError::not_found(format!("user not found: {user_id}")));
        }
        self.store.add_project_member(id, user_id).await?;
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, project = %id, user = %user_id, "added project member");
        Ok(())
    }

    pub(crate) async fn create_group(&self, name: &str) -> Result<Group, ApiError> {
        let group = self.store.create_group(name).await?;
        tracing::info!(target: "switchyard::admin", actor = %self.actor, group = %group.id, "created group");
        Ok(group)
    }

    pub(crate) async fn add_group_member(&self, id: &str, user_id: &str) -> Result<(), ApiError> {
        if !self.store.list_groups().await?.iter().any(|g| g.id == id) {
            return Err(ApiError::not_found(format!("group not found: {id}")));
        }
        if self.store.user(user_id).await?.is_none() {
            return Err(ApiError::not_found(format!("user not found: {user_id}")));
        }
        self.store.add_group_member(id, user_id).await?;
        // Group membership decides which access rules apply.
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, group = %id, user = %user_id, "added group member");
        Ok(())
    }

    /// A new key and its secret (shown once, never stored).
    pub(crate) async fn create_key(&self, body: CreateKey) -> Result<(ApiKey, String), ApiError> {
        let now = now_ms();
        let expires_at = match (body.expires_at, body.expires_in_days) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid("give expires_at or expires_in_days, not both"));
            }
            (Some(at), None) if at <= now => {
                return Err(ApiError::invalid("expires_at is in the past (unix milliseconds)"));
            }
            (Some(at), None) => Some(at),
            (None, Some(days)) if days == 0 || days > MAX_DAYS => {
                return Err(ApiError::invalid(format!("expires_in_days must be 1..={MAX_DAYS}")));
            }
            (None, Some(days)) => Some(now + i64::from(days) * DAY_MS),
            (None, None) => None,
        };
        let allowed_models = match body.allowed_models {
            Some(models) if models.is_empty() => {
                return Err(ApiError::invalid(
                    "allowed_models is empty: omit it for a key without a model limit",
                ));
            }
            Some(models) => Some(models.into_iter().map(|m| m.trim().to_owned()).collect()),
            None => None,
        };
        let limits = checked_limits(body.limits)?;
        if self.store.user(&body.user_id).await?.is_none() {
            return Err(ApiError::not_found(format!("user not found: {}", body.user_id)));
        }
        let project_id = given(body.project_id);
        if let Some(p) = &project_id {
            if self.store.project(p).await?.is_none() {
                return Err(ApiError::not_found(format!("project not found: {p}")));
            }
            if !self.store.projects_of(&body.user_id).await?.iter().any(|x| x.id == *p) {
                return Err(ApiError::invalid(format!(
                    "user {} is not a member of project {p}: add them first \
                     (POST /admin/projects/{p}/members)",
                    body.user_id
                )));
            }
        }
        let (key, secret) = self
            .store
            .create_key(NewKey {
                user_id: body.user_id,
                project_id,
                label: given(body.label),
                allowed_models,
                limits,
                expires_at,
            })
            .await?;
        // A key that now exists ends open mode (the "any key stored" flag is cached).
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, key = %key.id, prefix = %key.prefix, user = %key.user_id, "created key");
        Ok((key, secret))
    }

    pub(crate) async fn revoke_key(&self, id: &str) -> Result<ApiKey, ApiError> {
        if self.store.key(id).await?.is_none() {
            return Err(ApiError::not_found(format!("key not found: {id}")));
        }
        self.store.revoke_key(id).await?;
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, key = %id, "revoked key");
        self.store.key(id).await?.ok_or_else(|| ApiError::not_found(format!("key not found: {id}")))
    }

    /// Replaces a key's own rate limits (`None` clears them).
    pub(crate) async fn set_key_limits(
        &self,
        id: &str,
        limits: Option<Limits>,
    ) -> Result<ApiKey, ApiError> {
        let limits = checked_limits(limits)?;
        if self.store.key(id).await?.is_none() {
            return Err(ApiError::not_found(format!("key not found: {id}")));
        }
        self.store.set_key_limits(id, limits).await?;
        // This instance applies the change to the key's next request; others when
        // their cached lookup of the key expires (`security.key_cache_ms`).
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, key = %id, limits = ?limits, "changed key limits");
        self.store.key(id).await?.ok_or_else(|| ApiError::not_found(format!("key not found: {id}")))
    }

    /// Replace a key's routing policy, checked against the catalog (`target_ok`:
    /// a quality profile's target names a model or a configured provider's
    /// deployment).
    pub(crate) async fn set_key_routing(
        &self,
        id: &str,
        routing: Option<AppPolicy>,
        target_ok: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<ApiKey, ApiError> {
        let routing = checked_policy(routing, &format!("key:{id}"), target_ok)?;
        if self.store.key(id).await?.is_none() {
            return Err(ApiError::not_found(format!("key not found: {id}")));
        }
        self.store.set_key_routing(id, routing.as_ref()).await?;
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, key = %id, routing = ?routing, "changed key routing policy");
        self.store.key(id).await?.ok_or_else(|| ApiError::not_found(format!("key not found: {id}")))
    }

    /// Replace a project's routing policy, checked as a key's.
    pub(crate) async fn set_project_routing(
        &self,
        id: &str,
        routing: Option<AppPolicy>,
        target_ok: &(dyn Fn(&str) -> bool + Sync),
    ) -> Result<Project, ApiError> {
        let routing = checked_policy(routing, &format!("project:{id}"), target_ok)?;
        let missing = || ApiError::not_found(format!("project not found: {id}"));
        if self.store.project(id).await?.is_none() {
            return Err(missing());
        }
        self.store.set_project_routing(id, routing.as_ref()).await?;
        self.identity.invalidate();
        tracing::info!(target: "switchyard::admin", actor = %self.actor, project = %id, routing = ?routing, "changed project routing policy");
        self.store.project(id).await?.ok_or_else(missing)
    }
}

/// A routing policy as the directory takes it: compiled once to check it, its
/// problems in one 400 (`param: routing`); one that pins nothing is none.
fn checked_policy(
    routing: Option<AppPolicy>,
    source: &str,
    target_ok: &dyn Fn(&str) -> bool,
) -> Result<Option<AppPolicy>, ApiError> {
    let Some(policy) = routing.filter(|p| !p.is_empty()) else { return Ok(None) };
    match policy.compile(source, target_ok) {
        Ok(_) => Ok(Some(policy)),
        Err(problems) => Err(ApiError::from(
            GatewayError::new(
                ErrorCode::InvalidRequest,
                format!("routing: {}", problems.join("; ")),
            )
            .with_param(Some("routing".to_owned())),
        )),
    }
}
