//! Users, projects, groups and gateway keys: the admin API's side. The checks
//! and the changes themselves are `directory.rs`'s, shared with the console.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use switchyard_store::{ApiKey, Project, User};

use super::directory::{
    CreateKey, CreateProject, CreateUser, Directory, PatchKey, PatchProject, PatchUser,
};
use super::{ApiError, ApiResult, Body, Db, Params, Segments, given, list, ok, reply};
use crate::AppState;
use crate::identity::now_ms;

fn directory<'a>(
    store: &'a switchyard_store::Store,
    state: &'a AppState,
    actor: &'a str,
) -> Directory<'a> {
    Directory { store, identity: &state.identity, actor }
}

// ------------------------------------------------------------------ users

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
    State(state): State<Arc<AppState>>,
    Body(body): Body<CreateUser>,
) -> ApiResult {
    let user = directory(&store, &state, &actor).create_user(body).await?;
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
    ok(directory(&store, &state, &actor).patch_user(&id, body).await?)
}

// --------------------------------------------------------------- projects

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

pub(crate) async fn list_projects(Db { store, .. }: Db) -> ApiResult {
    list(store.list_projects().await?)
}

pub(crate) async fn create_project(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Body(body): Body<CreateProject>,
) -> ApiResult {
    let project = directory(&store, &state, &actor).create_project(body).await?;
    reply(StatusCode::CREATED, project)
}

pub(crate) async fn add_project_member(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<Member>,
) -> ApiResult {
    directory(&store, &state, &actor).add_project_member(&id, &body.user_id).await?;
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
    State(state): State<Arc<AppState>>,
    Body(body): Body<CreateGroup>,
) -> ApiResult {
    let group = directory(&store, &state, &actor).create_group(&body.name).await?;
    reply(StatusCode::CREATED, group)
}

pub(crate) async fn add_group_member(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<Member>,
) -> ApiResult {
    directory(&store, &state, &actor).add_group_member(&id, &body.user_id).await?;
    ok(Membership { project_id: None, group_id: Some(&id), user_id: &body.user_id })
}

// ------------------------------------------------------------------- keys

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
    let (key, secret) = directory(&store, &state, &actor).create_key(body).await?;
    reply(StatusCode::CREATED, CreatedKey { key: KeyView::new(key), secret })
}

pub(crate) async fn revoke_key(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
) -> ApiResult {
    ok(KeyView::new(directory(&store, &state, &actor).revoke_key(&id).await?))
}

/// `PATCH /admin/keys/{id}`: change a key's own rate limits or routing policy.
pub(crate) async fn patch_key(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<PatchKey>,
) -> ApiResult {
    if body.limits.is_none() && body.routing.is_none() {
        return Err(ApiError::invalid(
            "nothing to change: give limits or routing (null clears either)",
        ));
    }
    let dir = directory(&store, &state, &actor);
    let mut key = None;
    if let Some(limits) = body.limits {
        key = Some(dir.set_key_limits(&id, limits).await?);
    }
    if let Some(routing) = body.routing {
        let snapshot = state.gateway.snapshot();
        let target_ok = |t: &str| policy_target(&snapshot.catalog, t);
        key = Some(dir.set_key_routing(&id, routing, &target_ok).await?);
    }
    match key {
        Some(key) => ok(KeyView::new(key)),
        None => Err(ApiError::internal("the key was not changed")),
    }
}

/// `PATCH /admin/projects/{id}`: change a project's routing policy.
pub(crate) async fn patch_project(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(id): Segments<String>,
    Body(body): Body<PatchProject>,
) -> ApiResult {
    let Some(routing) = body.routing else {
        return Err(ApiError::invalid("nothing to change: give routing (null clears it)"));
    };
    let snapshot = state.gateway.snapshot();
    let target_ok = |t: &str| policy_target(&snapshot.catalog, t);
    ok(directory(&store, &state, &actor).set_project_routing(&id, routing, &target_ok).await?)
}

/// Whether a quality profile's target is a catalog model (id or alias) or a
/// deployment of a configured provider (`provider/model`).
pub(crate) fn policy_target(catalog: &switchyard_core::Catalog, target: &str) -> bool {
    catalog.model(target).is_some()
        || target.split_once('/').is_some_and(|(p, _)| catalog.provider(p).is_some())
}
