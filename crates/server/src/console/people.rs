//! Users, projects and groups: who is in the directory, their roles and
//! memberships; for admins, adding users, changing a role, disabling, creating
//! projects and groups, and adding members. The checks are the admin API's
//! (`admin/directory.rs`); limits and budgets set in the configuration are
//! shown beside the projects and users they apply to.

use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use switchyard_core::access::CallerRole;
use switchyard_core::limits::Limits;

use super::page::{Chrome, PageError, render};
use super::session::Signed;
use crate::AppState;
use crate::admin::directory::{CreateProject, CreateUser, PatchUser};

struct UserRow {
    id: String,
    email: String,
    name: String,
    role: &'static str,
    disabled: bool,
    projects: Vec<String>,
    groups: Vec<String>,
    /// Rate limits the configuration gives this user (by id or email).
    limits: String,
}

struct ProjectRow {
    id: String,
    name: String,
    log_content: bool,
    limits: String,
}

struct GroupRow {
    id: String,
    name: String,
}

struct BudgetRow {
    scope: String,
    period: String,
    limit: String,
    mode: String,
}

#[derive(Template)]
#[template(path = "console/people.html")]
struct PeoplePage {
    chrome: Chrome,
    users: Vec<UserRow>,
    projects: Vec<ProjectRow>,
    groups: Vec<GroupRow>,
    budgets: Vec<BudgetRow>,
    error: Option<String>,
}

/// Limits as a cell shows them.
fn shown(l: Option<&Limits>) -> String {
    let Some(l) = l else { return String::new() };
    [("rpm", l.rpm), ("tpm", l.tpm), ("concurrent", l.concurrent)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
        .collect::<Vec<_>>()
        .join(", ")
}

async fn people_page(
    signed: &Signed,
    state: &AppState,
    error: Option<String>,
) -> Result<Response, PageError> {
    let snapshot = state.gateway.snapshot();
    let configured = &snapshot.catalog.limits;
    let store = &signed.store;
    let mut users = Vec::new();
    // Memberships in two queries, not two per user.
    let mut projects_of = store.project_names_by_user().await?;
    let mut groups_of = store.group_names_by_user().await?;
    for u in store.list_users().await? {
        let projects = projects_of.remove(&u.id).unwrap_or_default();
        let groups = groups_of.remove(&u.id).unwrap_or_default();
        let limits = shown(configured.users.get(&u.id).or_else(|| configured.users.get(&u.email)));
        users.push(UserRow {
            role: u.role.as_str(),
            disabled: u.disabled,
            name: u.name.unwrap_or_default(),
            id: u.id,
            email: u.email,
            projects,
            groups,
            limits,
        });
    }
    let projects = store
        .list_projects()
        .await?
        .into_iter()
        .map(|p| ProjectRow {
            limits: shown(
                configured.projects.get(&p.id).or_else(|| configured.projects.get(&p.name)),
            ),
            id: p.id,
            name: p.name,
            log_content: p.log_content,
        })
        .collect();
    let groups = store
        .list_groups()
        .await?
        .into_iter()
        .map(|g| GroupRow { id: g.id, name: g.name })
        .collect();
    let budgets = snapshot
        .catalog
        .budgets
        .iter()
        .map(|b| BudgetRow {
            scope: b.scope.to_string(),
            period: b.period.label(),
            limit: format!("${:.2}", b.limit_usd),
            mode: format!("{:?}", b.mode).to_lowercase(),
        })
        .collect();
    let failed = error.is_some();
    let mut page = render(&PeoplePage {
        chrome: Chrome::new(signed, "people", "Users, projects and groups"),
        users,
        projects,
        groups,
        budgets,
        error,
    });
    if failed {
        *page.status_mut() = StatusCode::BAD_REQUEST;
    }
    Ok(page)
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
) -> Result<Response, PageError> {
    people_page(&signed, &state, None).await
}

/// What each form of the page posts: which change, and its fields.
#[derive(Deserialize)]
pub(crate) struct Change {
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    user_id: String,
    #[serde(default)]
    log_content: Option<String>,
}

fn role(s: &str) -> Result<Option<CallerRole>, String> {
    match s.trim() {
        "" => Ok(None),
        r => CallerRole::parse(r)
            .map(Some)
            .ok_or_else(|| format!("role: {r:?} is not admin, member or viewer")),
    }
}

/// `POST /console/people/{what}` and `/console/people/{what}/{id}`: one change,
/// then back to the page (or the page with the refusal).
async fn change(
    signed: Signed,
    state: Arc<AppState>,
    headers: HeaderMap,
    what: &str,
    id: Option<&str>,
    f: Change,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let directory = signed.directory(&state);
    let text = |v: &str| Some(v.trim().to_owned()).filter(|s| !s.is_empty());
    let done: Result<(), String> = async {
        let api = |e: crate::admin::ApiError| e.error().body().message.clone();
        match (what, id) {
            ("users", None) => {
                let role = role(&f.role)?;
                let body = CreateUser {
                    email: f.email.clone(),
                    name: text(&f.name),
                    role,
                    project_id: None,
                };
                directory.create_user(body).await.map(drop).map_err(api)
            }
            ("role", Some(id)) => {
                let body = PatchUser { role: role(&f.role)?, disabled: None };
                directory.patch_user(id, body).await.map(drop).map_err(api)
            }
            ("disable" | "enable", Some(id)) => {
                let body = PatchUser { role: None, disabled: Some(what == "disable") };
                directory.patch_user(id, body).await.map(drop).map_err(api)
            }
            ("projects", None) => {
                let body = CreateProject {
                    name: f.name.clone(),
                    log_content: Some(f.log_content.is_some()),
                    content_cap_bytes: None,
                };
                directory.create_project(body).await.map(drop).map_err(api)
            }
            ("project-members", Some(id)) => {
                directory.add_project_member(id, f.user_id.trim()).await.map_err(api)
            }
            ("groups", None) => directory.create_group(&f.name).await.map(drop).map_err(api),
            ("group-members", Some(id)) => {
                directory.add_group_member(id, f.user_id.trim()).await.map_err(api)
            }
            _ => Err(format!("no such change: {what}")),
        }
    }
    .await;
    match done {
        Ok(()) => Ok(Redirect::to("/console/people").into_response()),
        Err(e) => people_page(&signed, &state, Some(e)).await,
    }
}

pub(crate) async fn create(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Path(what): Path<String>,
    headers: HeaderMap,
    Form(f): Form<Change>,
) -> Result<Response, PageError> {
    change(signed, state, headers, &what, None, f).await
}

pub(crate) async fn update(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Path((what, id)): Path<(String, String)>,
    headers: HeaderMap,
    Form(f): Form<Change>,
) -> Result<Response, PageError> {
    change(signed, state, headers, &what, Some(&id), f).await
}
