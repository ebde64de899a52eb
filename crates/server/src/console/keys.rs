//! Gateway keys: every key with its owner, binding, limits and state; and, for
//! admins, creating one (its secret shown once, on the page that answers the
//! form), revoking one, and setting a key's own rate limits. The checks are the
//! admin API's (`admin/directory.rs`).

use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use switchyard_core::limits::Limits;
use switchyard_store::ApiKey;

use super::page::{Chrome, CsrfForm, PageError, render};
use super::session::Signed;
use crate::AppState;
use crate::admin::directory::CreateKey;
use crate::identity::now_ms;

struct Row {
    id: String,
    prefix: String,
    user: String,
    project: String,
    label: String,
    models: String,
    rpm: String,
    tpm: String,
    concurrent: String,
    created: String,
    expires: String,
    last_used: String,
    active: bool,
}

impl Row {
    fn of(k: &ApiKey, emails: &[(String, String)], now: i64) -> Row {
        let limit = |f: fn(&Limits) -> Option<u64>| {
            k.limits.as_ref().and_then(f).map(|v| v.to_string()).unwrap_or_default()
        };
        Row {
            id: k.id.clone(),
            prefix: k.prefix.clone(),
            user: emails
                .iter()
                .find(|(id, _)| *id == k.user_id)
                .map_or_else(|| k.user_id.clone(), |(_, e)| e.clone()),
            project: k.project_id.clone().unwrap_or_default(),
            label: k.label.clone().unwrap_or_default(),
            models: k.allowed_models.as_ref().map(|m| m.join(", ")).unwrap_or_default(),
            rpm: limit(|l| l.rpm),
            tpm: limit(|l| l.tpm),
            concurrent: limit(|l| l.concurrent),
            created: super::utc(k.created_at),
            expires: k.expires_at.map(super::utc).unwrap_or_default(),
            last_used: k.last_used_at.map(super::utc).unwrap_or_default(),
            active: k.is_active(now),
        }
    }
}

#[derive(Template)]
#[template(path = "console/keys.html")]
struct KeysPage {
    chrome: Chrome,
    rows: Vec<Row>,
    /// (user id, email), for the new key's owner.
    users: Vec<(String, String)>,
    /// A key just created: (prefix, secret), shown this once.
    created: Option<(String, String)>,
    error: Option<String>,
}

async fn keys_page(
    signed: &Signed,
    created: Option<(String, String)>,
    error: Option<String>,
) -> Result<Response, PageError> {
    let users: Vec<(String, String)> =
        signed.store.list_users().await?.into_iter().map(|u| (u.id, u.email)).collect();
    let now = now_ms();
    let rows =
        signed.store.list_keys(None).await?.iter().map(|k| Row::of(k, &users, now)).collect();
    let mut page = render(&KeysPage {
        chrome: Chrome::new(signed, "keys", "Keys"),
        rows,
        users,
        created,
        error: error.clone(),
    });
    if error.is_some() {
        *page.status_mut() = axum::http::StatusCode::BAD_REQUEST;
    }
    Ok(page)
}

pub(crate) async fn page(signed: Signed) -> Result<Response, PageError> {
    keys_page(&signed, None, None).await
}

/// A number field of a form: empty is none.
fn number<T: std::str::FromStr>(name: &str, v: &str) -> Result<Option<T>, String> {
    match v.trim() {
        "" => Ok(None),
        s => s.parse().map(Some).map_err(|_| format!("{name}: {s:?} is not a whole number")),
    }
}

fn limits_of(rpm: &str, tpm: &str, concurrent: &str) -> Result<Option<Limits>, String> {
    let mut limits = Limits::default();
    limits.rpm = number("rpm", rpm)?;
    limits.tpm = number("tpm", tpm)?;
    limits.concurrent = number("concurrent", concurrent)?;
    Ok((limits != Limits::default()).then_some(limits))
}

#[derive(Deserialize)]
pub(crate) struct CreateForm {
    csrf: String,
    user_id: String,
    #[serde(default)]
    project_id: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    allowed_models: String,
    #[serde(default)]
    expires_in_days: String,
    #[serde(default)]
    rpm: String,
    #[serde(default)]
    tpm: String,
    #[serde(default)]
    concurrent: String,
}

pub(crate) async fn create(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(f): Form<CreateForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let parsed = (|| -> Result<CreateKey, String> {
        let models: Vec<String> = f
            .allowed_models
            .split([',', '\n'])
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_owned)
            .collect();
        Ok(CreateKey {
            user_id: f.user_id.trim().to_owned(),
            project_id: Some(f.project_id.clone()),
            label: Some(f.label.clone()),
            expires_at: None,
            expires_in_days: number("expires_in_days", &f.expires_in_days)?,
            allowed_models: (!models.is_empty()).then_some(models),
            limits: limits_of(&f.rpm, &f.tpm, &f.concurrent)?,
        })
    })();
    let body = match parsed {
        Ok(b) => b,
        Err(e) => return keys_page(&signed, None, Some(e)).await,
    };
    let directory = signed.directory(&state);
    match directory.create_key(body).await {
        Ok((key, secret)) => keys_page(&signed, Some((key.prefix, secret)), None).await,
        Err(e) => keys_page(&signed, None, Some(e.error().body().message.clone())).await,
    }
}

pub(crate) async fn revoke(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let directory = signed.directory(&state);
    directory.revoke_key(&id).await.map_err(PageError::from)?;
    Ok(Redirect::to("/console/keys").into_response())
}

#[derive(Deserialize)]
pub(crate) struct LimitsForm {
    csrf: String,
    #[serde(default)]
    rpm: String,
    #[serde(default)]
    tpm: String,
    #[serde(default)]
    concurrent: String,
}

pub(crate) async fn limits(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<LimitsForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let limits = match limits_of(&f.rpm, &f.tpm, &f.concurrent) {
        Ok(l) => l,
        Err(e) => return keys_page(&signed, None, Some(e)).await,
    };
    let directory = signed.directory(&state);
    match directory.set_key_limits(&id, limits).await {
        Ok(_) => Ok(Redirect::to("/console/keys").into_response()),
        Err(e) => keys_page(&signed, None, Some(e.error().body().message.clone())).await,
    }
}
