//! Users, projects, groups and gateway keys.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};
use switchyard_core::GatewayError;
use switchyard_core::access::CallerRole;
use switchyard_core::limits::Limits;
use switchyard_protocol::ErrorCode;
use switchyard_store::{ApiKey, NewKey, NewUser, Project, User};

use super::{ApiError, ApiResult, Body, Db, Params, Segments, given, list, ok, reply};
use crate::AppState;
use crate::identity::now_ms;

const DAY_MS: i64 = 86_400_000;
/// The longest `expires_in_days` accepted (100 years).
const MAX_DAYS: u32 = 36_500;

// ------------------------------------------------------------------ users

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateUser {
    email: String,
    #[serde(default)]
    name: Option<String>,
    /// Default `member`.
    #[serde(default)]
    role: Option<CallerRole>,
    /// The primary project (an id); default: a new project named after the email.
    #[serde(default)]
    project_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchUser {
    #[serde(default)]
    role: Option<CallerRole>,
    #[serde(default)]
    disabled: Option<bool>,
}

/// A user with their memberships.
#[derive(Serialize)]
struct UserDetail {
    #[serde(flatten)]
    user: User,
    projects: Vec<Project>,
    groups: Vec<String>,
}

pub(crate) async fn list_users(Db { store, .. }: Db) -> ApiResult {
    list(store.list_users().await?)
}

pub(crate) async fn create_user(
    Db { store, actor }: Db,
    Body(body): Body<CreateUser>,
) -> ApiResult {
    let user = store
        .create_user(NewUser {
            email: body.email,
            name: body.name,
            role: body.role.unwrap_or(CallerRole::Member),
            project_id: given(body.project_id),
        })
        .await?;
    tracing::info!(target: "switchyard::admin", actor = %actor, user = %user.id, role = user.role.as_str(), "created user");
    reply(StatusCode::CREATED, user)
}

pub(crate) async fn get_user(Db { store, .. }: Db, Segments(id): Segments<String>) -> ApiResult {
    let Some(user) = store.user(&id).await? else {
        return Err(ApiError::not_found(format!("user not found: {id}")));
    };
    let projects = store.projects_of(&user.id).await?;
    let groups = store.groups_of(&user.id).await?;
    ok(UserDetail { user, projects, groups })
}

pub(crate) async fn patch_user(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<PatchUser>,
) -> ApiResult {
    if body.role.is_none() && body.disabled.is_none() {
        return Err(ApiError::invalid("nothing to change: give role and/or disabled"));
    }
    if store.user(&id).await?.is_none() {
        return Err(ApiError::not_found(format!("user not found: {id}")));
    }
    if let Some(role) = body.role {
        store.set_user_role(&id, role).await?;
    }
    match body.disabled {
        Some(true) => store.disable_user(&id).await?,
        Some(false) => store.enable_user(&id).await?,
        None => {}
    }
    // A disabled user's keys, or a changed role, take effect now.
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, user = %id, role = ?body.role, disabled = ?body.disabled, "updated user");
    match store.user(&id).await? {
        Some(user) => ok(user),
        None => Err(ApiError::not_found(format!("user not found: {id}"))),
    }
}

// --------------------------------------------------------------- projects

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateProject {
    name: String,
    /// Whether request content may be logged for the project (default false).
    #[serde(default)]
    log_content: Option<bool>,
    /// Most bytes of content logged per request (default 65536).
    #[serde(default)]
    content_cap_bytes: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Member {
    user_id: String,
}

#[derive(Serialize)]
struct Membership<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    project_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group_id: Option<&'a str>,
    user_id: &'a str,
}

const DEFAULT_CONTENT_CAP: u32 = 65_536;

pub(crate) async fn list_projects(Db { store, .. }: Db) -> ApiResult {
    list(store.list_projects().await?)
}

pub(crate) async fn create_project(
    Db { store, actor }: Db,
    Body(body): Body<CreateProject>,
) -> ApiResult {
    let mut project = store.create_project(&body.name).await?;
    if body.log_content.is_some() || body.content_cap_bytes.is_some() {
        let log = body.log_content.unwrap_or(false);
        let cap = body.content_cap_bytes.unwrap_or(DEFAULT_CONTENT_CAP);
        store.set_project_content(&project.id, log, cap).await?;
        project.log_content = log;
        project.content_cap_bytes = i64::from(cap);
    }
    tracing::info!(target: "switchyard::admin", actor = %actor, project = %project.id, "created project");
    reply(StatusCode::CREATED, project)
}

pub(crate) async fn add_project_member(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<Member>,
) -> ApiResult {
    if store.project(&id).await?.is_none() {
        return Err(ApiError::not_found(format!("project not found: {id}")));
    }
    if store.user(&body.user_id).await?.is_none() {
        return Err(ApiError::not_found(format!("user not found: {}", body.user_id)));
    }
    store.add_project_member(&id, &body.user_id).await?;
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, project = %id, user = %body.user_id, "added project member");
    ok(Membership { project_id: Some(&id), group_id: None, user_id: &body.user_id })
}

// ----------------------------------------------------------------- groups

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateGroup {
    name: String,
}

pub(crate) async fn list_groups(Db { store, .. }: Db) -> ApiResult {
    list(store.list_groups().await?)
}

pub(crate) async fn create_group(
    Db { store, actor }: Db,
    Body(body): Body<CreateGroup>,
) -> ApiResult {
    let group = store.create_group(&body.name).await?;
    tracing::info!(target: "switchyard::admin", actor = %actor, group = %group.id, "created group");
    reply(StatusCode::CREATED, group)
}

pub(crate) async fn add_group_member(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<Member>,
) -> ApiResult {
    if !store.list_groups().await?.iter().any(|g| g.id == id) {
        return Err(ApiError::not_found(format!("group not found: {id}")));
    }
    if store.user(&body.user_id).await?.is_none() {
        return Err(ApiError::not_found(format!("user not found: {}", body.user_id)));
    }
    store.add_group_member(&id, &body.user_id).await?;
    // Group membership decides which access rules apply.
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, group = %id, user = %body.user_id, "added group member");
    ok(Membership { project_id: None, group_id: Some(&id), user_id: &body.user_id })
}

// ------------------------------------------------------------------- keys

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateKey {
    user_id: String,
    /// Bind the key to a project the user belongs to (default: their primary).
    #[serde(default)]
    project_id: Option<String>,
    #[serde(default)]
    label: Option<String>,
    /// Unix milliseconds.
    #[serde(default)]
    expires_at: Option<i64>,
    #[serde(default)]
    expires_in_days: Option<u32>,
    #[serde(default)]
    allowed_models: Option<Vec<String>>,
    /// The key's own rate limits (unknown fields refused by `Limits`).
    #[serde(default)]
    limits: Option<Limits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchKey {
    /// Absent: unchanged; null (or `{}`): cleared; an object: replaces the
    /// key's whole set of limits.
    #[serde(default, deserialize_with = "present")]
    limits: Option<Option<Limits>>,
}

/// A field that is present, null included (`Some(None)`), as against absent
/// (`None`, from `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Limits as the API takes them: a zero limit is refused (it would refuse every
/// request), naming its field in the message and as `param`.
fn checked_limits(limits: Option<Limits>) -> Result<Option<Limits>, ApiError> {
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct KeyQuery {
    #[serde(default)]
    user: Option<String>,
}

/// A key as listed: metadata and prefix only.
#[derive(Serialize)]
struct KeyView {
    #[serde(flatten)]
    key: ApiKey,
    /// Neither revoked nor expired now.
    active: bool,
}

impl KeyView {
    fn new(key: ApiKey) -> KeyView {
        let active = key.is_active(now_ms());
        KeyView { key, active }
    }
}

/// A new key with its secret: the only answer that ever carries one.
#[derive(Serialize)]
struct CreatedKey {
    #[serde(flatten)]
    key: KeyView,
    secret: String,
}

pub(crate) async fn list_keys(Db { store, .. }: Db, Params(q): Params<KeyQuery>) -> ApiResult {
    let user = given(q.user);
    let keys = store.list_keys(user.as_deref()).await?;
    list(keys.into_iter().map(KeyView::new).collect())
}

pub(crate) async fn create_key(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Body(body): Body<CreateKey>,
) -> ApiResult {
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
    if store.user(&body.user_id).await?.is_none() {
        return Err(ApiError::not_found(format!("user not found: {}", body.user_id)));
    }
    let project_id = given(body.project_id);
    if let Some(p) = &project_id {
        if store.project(p).await?.is_none() {
            return Err(ApiError::not_found(format!("project not found: {p}")));
        }
        if !store.projects_of(&body.user_id).await?.iter().any(|x| x.id == *p) {
            return Err(ApiError::invalid(format!(
                "user {} is not a member of project {p}: add them first \
                 (POST /admin/projects/{p}/members)",
                body.user_id
            )));
        }
    }
    let (key, secret) = store
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
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, key = %key.id, prefix = %key.prefix, user = %key.user_id, "created key");
    reply(StatusCode::CREATED, CreatedKey { key: KeyView::new(key), secret })
}

pub(crate) async fn revoke_key(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
) -> ApiResult {
    if store.key(&id).await?.is_none() {
        return Err(ApiError::not_found(format!("key not found: {id}")));
    }
    store.revoke_key(&id).await?;
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, key = %id, "revoked key");
    match store.key(&id).await? {
        Some(key) => ok(KeyView::new(key)),
        None => Err(ApiError::not_found(format!("key not found: {id}"))),
    }
}

/// `PATCH /admin/keys/{id}`: change a key's own rate limits.
pub(crate) async fn patch_key(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<PatchKey>,
) -> ApiResult {
    let Some(limits) = body.limits else {
        return Err(ApiError::invalid("nothing to change: give limits (null clears them)"));
    };
    let limits = checked_limits(limits)?;
    if store.key(&id).await?.is_none() {
        return Err(ApiError::not_found(format!("key not found: {id}")));
    }
    store.set_key_limits(&id, limits).await?;
    // This instance applies the change to the key's next request; others when
    // their cached lookup of the key expires (`security.key_cache_ms`).
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, key = %id, limits = ?limits, "changed key limits");
    match store.key(&id).await? {
        Some(key) => ok(KeyView::new(key)),
        None => Err(ApiError::not_found(format!("key not found: {id}"))),
    }
}
