//! Sessions: who is signed in to the console, and revoking them (admins). A
//! revoked session is refused at its next page on every instance.

use askama::Template;
use axum::Form;
use axum::extract::Path;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Redirect, Response};

use super::page::{Chrome, CsrfForm, PageError, render};
use super::session::Signed;

struct Row {
    id: String,
    /// The first characters of the id, enough to tell sessions apart.
    short: String,
    who: String,
    role: &'static str,
    method: &'static str,
    address: String,
    user_agent: String,
    created: String,
    last_seen: String,
    expires: String,
    mine: bool,
}

#[derive(Template)]
#[template(path = "console/sessions.html")]
struct SessionsPage {
    chrome: Chrome,
    rows: Vec<Row>,
}

pub(crate) async fn page(signed: Signed) -> Result<Response, PageError> {
    let rows = signed
        .store
        .list_sessions()
        .await?
        .into_iter()
        .map(|s| Row {
            short: s.id.get(..12).unwrap_or_default().to_owned(),
            mine: s.id == signed.session.id,
            who: s.name.clone().unwrap_or_else(|| s.subject.clone()),
            role: s.role.as_str(),
            method: match s.method {
                switchyard_store::db::SignIn::Key => "key",
                switchyard_store::db::SignIn::Oidc => "OpenID Connect",
            },
            address: s.address.clone().unwrap_or_default(),
            user_agent: s.user_agent.clone().unwrap_or_default(),
            created: super::utc(s.created_ms),
            last_seen: super::utc(s.last_seen_ms),
            expires: super::utc(s.expires_ms),
            id: s.id,
        })
        .collect();
    Ok(render(&SessionsPage { chrome: Chrome::new(&signed, "sessions", "Sessions"), rows }))
}

pub(crate) async fn revoke(
    signed: Signed,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    if !signed.store.revoke_session(&id).await? {
        return Err(PageError::not_found("no live session with that id"));
    }
    tracing::info!(by = %signed.who, session = %id.get(..12).unwrap_or_default(), "console: a session was revoked");
    Ok(Redirect::to("/console/sessions").into_response())
}
