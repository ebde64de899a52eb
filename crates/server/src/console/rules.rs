//! Access rules: those of the configuration file (read-only here) and those
//! stored in the database (admins add and remove them), and a tester that
//! answers "would this key be allowed this model, and by which rule", decided
//! by the same function a request passes (`Snapshot::access_decider`).

use std::sync::Arc;

use askama::Template;
use axum::Form;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;
use switchyard_core::access::{CallerRole, Decider, Effect, Rule, Subject};

use super::page::{Chrome, CsrfForm, PageError, render};
use super::session::Signed;
use crate::AppState;
use crate::admin::access::{add_rule, remove_rule};
use crate::identity::now_ms;

struct RuleRow {
    /// Stored rules: their id (what removing names); `None` for configured ones.
    id: Option<String>,
    name: String,
    effect: &'static str,
    pattern: String,
    subject: String,
    reason: String,
    priority: i64,
}

impl RuleRow {
    fn of(r: &Rule, id: Option<String>) -> RuleRow {
        RuleRow {
            id,
            name: r.name.clone(),
            effect: match r.effect {
                Effect::Allow => "allow",
                Effect::Deny => "deny",
            },
            pattern: r.pattern.clone(),
            subject: subject(&r.subject),
            reason: r.reason.clone(),
            priority: r.priority,
        }
    }
}

fn subject(s: &Subject) -> String {
    match s {
        Subject::Any => "anyone".to_owned(),
        Subject::Role(r) => format!("role {}", r.as_str()),
        Subject::Group(g) => format!("group {g}"),
        Subject::Project(p) => format!("project {p}"),
        Subject::User(u) => format!("user {u}"),
    }
}

/// The tester's answer.
struct Verdict {
    allowed: bool,
    /// Which rule decided, and why, in words.
    because: String,
}

#[derive(Template)]
#[template(path = "console/rules.html")]
struct RulesPage {
    chrome: Chrome,
    configured: Vec<RuleRow>,
    stored: Vec<RuleRow>,
    /// The catalog's models, for the tester.
    models: Vec<String>,
    key: String,
    model: String,
    verdict: Option<Verdict>,
    error: Option<String>,
}

#[derive(Deserialize, Default)]
pub(crate) struct TestQuery {
    #[serde(default)]
    key: String,
    #[serde(default)]
    model: String,
}

pub(crate) async fn page(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Query(q): Query<TestQuery>,
) -> Result<Response, PageError> {
    let verdict = if q.key.trim().is_empty() && q.model.trim().is_empty() {
        None
    } else {
        match test(&signed, &state, q.key.trim(), q.model.trim()).await {
            Ok(v) => Some(v),
            Err(e) => return rules_page(&signed, &state, q, None, Some(e)).await,
        }
    };
    rules_page(&signed, &state, q, verdict, None).await
}

async fn rules_page(
    signed: &Signed,
    state: &AppState,
    q: TestQuery,
    verdict: Option<Verdict>,
    error: Option<String>,
) -> Result<Response, PageError> {
    let snapshot = state.gateway.snapshot();
    let configured = snapshot.catalog.rules.iter().map(|r| RuleRow::of(r, None)).collect();
    let stored = signed
        .store
        .list_rules()
        .await?
        .into_iter()
        .map(|r| RuleRow::of(&r.rule, Some(r.id)))
        .collect();
    let models = snapshot.catalog.models.iter().map(|m| m.id.clone()).collect();
    let failed = error.is_some();
    let mut page = render(&RulesPage {
        chrome: Chrome::new(signed, "rules", "Access rules"),
        configured,
        stored,
        models,
        key: q.key,
        model: q.model,
        verdict,
        error,
    });
    if failed {
        *page.status_mut() = StatusCode::BAD_REQUEST;
    }
    Ok(page)
}

/// Would the stored key with this visible prefix be allowed `model`?
async fn test(
    signed: &Signed,
    state: &AppState,
    prefix: &str,
    model: &str,
) -> Result<Verdict, String> {
    let prefix = prefix.trim_end_matches('…');
    if prefix.is_empty() || model.is_empty() {
        return Err("give a key's prefix (as the Keys page shows it) and a model".to_owned());
    }
    let keys = signed.store.list_keys(None).await.map_err(|e| e.to_string())?;
    let Some(key) = keys.iter().find(|k| k.prefix == prefix) else {
        return Err(format!("no stored key has the prefix {prefix:?}"));
    };
    let refused = |because: &str| Ok(Verdict { allowed: false, because: because.to_owned() });
    if !key.is_active(now_ms()) {
        return refused("the key is revoked or expired: refused (401) before any rule");
    }
    let principal = state
        .identity
        .principal_of(&signed.store, key)
        .await
        .map_err(|e| e.body().message.clone())?;
    let Some(principal) = principal else {
        return refused("its user is disabled: refused (401) before any rule");
    };
    let snapshot = state.gateway.snapshot();
    let Some(m) = snapshot.catalog.model(&snapshot.catalog.canonical_name(model)) else {
        return Err(format!("{model:?} is not a model of the catalog"));
    };
    let stored = state.gateway.runtime.rules.load();
    let decider = snapshot.access_decider(&stored, &principal, m);
    let because = match decider {
        Decider::KeyLimit => format!(
            "the key may only use {}",
            principal.allowed_models.as_deref().unwrap_or_default().join(", ")
        ),
        Decider::Rule(r) => format!(
            "rule {:?} ({}, priority {}): {}",
            r.name,
            RuleRow::of(r, None).effect,
            r.priority,
            r.reason
        ),
        Decider::Default => "no rule matches: allowed by default".to_owned(),
    };
    Ok(Verdict { allowed: decider.allows(), because })
}

#[derive(Deserialize)]
pub(crate) struct RuleForm {
    csrf: String,
    name: String,
    effect: String,
    pattern: String,
    subject_kind: String,
    #[serde(default)]
    subject_value: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    priority: String,
}

fn parse_rule(f: &RuleForm) -> Result<Rule, String> {
    let effect = match f.effect.as_str() {
        "allow" => Effect::Allow,
        "deny" => Effect::Deny,
        other => return Err(format!("effect: {other:?} is not allow or deny")),
    };
    let value = f.subject_value.trim().to_owned();
    let needs = |what: &str| {
        if value.is_empty() { Err(format!("subject: give the {what}")) } else { Ok(value.clone()) }
    };
    let subject = match f.subject_kind.as_str() {
        "any" => Subject::Any,
        "role" => Subject::Role(
            CallerRole::parse(&value)
                .ok_or_else(|| format!("subject: {value:?} is not admin, member or viewer"))?,
        ),
        "group" => Subject::Group(needs("group")?),
        "project" => Subject::Project(needs("project")?),
        "user" => Subject::User(needs("user")?),
        other => return Err(format!("subject: {other:?} is not a kind of subject")),
    };
    let priority = match f.priority.trim() {
        "" => 0,
        p => p.parse().map_err(|_| format!("priority: {p:?} is not a whole number"))?,
    };
    Ok(Rule {
        name: f.name.trim().to_owned(),
        effect,
        pattern: f.pattern.trim().to_owned(),
        subject,
        reason: f.reason.trim().to_owned(),
        priority,
    })
}

pub(crate) async fn create(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Form(f): Form<RuleForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    let failed = match parse_rule(&f) {
        Err(e) => e,
        Ok(rule) => match add_rule(&state, &signed.store, &signed.who, rule).await {
            Ok(_) => return Ok(Redirect::to("/console/rules").into_response()),
            Err(e) => e.error().body().message.clone(),
        },
    };
    rules_page(&signed, &state, TestQuery::default(), None, Some(failed)).await
}

pub(crate) async fn delete(
    signed: Signed,
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(f): Form<CsrfForm>,
) -> Result<Response, PageError> {
    signed.admin_write(&headers, &f.csrf)?;
    remove_rule(&state, &signed.store, &signed.who, &id).await?;
    Ok(Redirect::to("/console/rules").into_response())
}
