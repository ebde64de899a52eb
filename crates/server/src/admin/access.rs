//! Stored access rules and BYOK provider credentials.

use std::sync::{Arc, LazyLock};

use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::json;
use switchyard_protocol::ErrorCode;
use switchyard_store::seal::Sealer;
use switchyard_store::{Effect, NewCredential, NewRule, OwnerKind, Store, Subject};

use super::{ApiError, ApiResult, Body, Db, Params, Segments, given, list, ok, reply};
use crate::AppState;

/// Longest provider key accepted, in bytes.
const MAX_PROVIDER_KEY: usize = 4096;

// ------------------------------------------------------------------ rules

/// `POST /admin/rules`: core's rule, with unknown fields refused (a misspelt
/// `priority` must not silently become 0).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RuleBody {
    name: String,
    effect: Effect,
    pattern: String,
    subject: Subject,
    reason: String,
    #[serde(default)]
    priority: i64,
}

/// Serialises reloads, so two concurrent changes cannot leave the older list
/// installed.
static RELOAD: LazyLock<tokio::sync::Mutex<()>> = LazyLock::new(|| tokio::sync::Mutex::new(()));

/// Installs the stored rules into the running gateway.
async fn reload_rules(state: &AppState, store: &Store) -> Result<usize, ApiError> {
    let _one_at_a_time = RELOAD.lock().await;
    let rules = store.list_rules().await?;
    let n = rules.len();
    state.gateway.runtime.rules.store(Arc::new(rules.into_iter().map(|r| r.rule).collect()));
    Ok(n)
}

pub(crate) async fn list_rules(
    Db { store, .. }: Db,
    State(state): State<Arc<AppState>>,
) -> ApiResult {
    let stored = store.list_rules().await?;
    let configured = state.gateway.snapshot().catalog.rules.clone();
    ok(json!({ "data": stored, "config_rules": configured }))
}

pub(crate) async fn create_rule(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Body(body): Body<RuleBody>,
) -> ApiResult {
    let RuleBody { name, effect, pattern, subject, reason, priority } = body;
    let rule = NewRule { name, effect, pattern, subject, reason, priority };
    reply(StatusCode::CREATED, add_rule(&state, &store, &actor, rule).await?)
}

pub(crate) async fn delete_rule(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments(name_or_id): Segments<String>,
) -> ApiResult {
    remove_rule(&state, &store, &actor, &name_or_id).await?;
    ok(json!({ "deleted": name_or_id }))
}

/// Stores a rule and installs the stored rules into the running gateway; a
/// name the configuration file already uses is a conflict. (The admin API's
/// and the console's way in.)
pub(crate) async fn add_rule(
    state: &AppState,
    store: &Store,
    actor: &str,
    rule: NewRule,
) -> Result<switchyard_store::Rule, ApiError> {
    if state.gateway.snapshot().catalog.rules.iter().any(|r| r.name == rule.name.trim()) {
        return Err(ApiError::conflict(format!(
            "a rule named {:?} is in the configuration file",
            rule.name.trim()
        )));
    }
    let created = store.create_rule(rule).await?;
    let n = reload_rules(state, store).await?;
    tracing::info!(target: "switchyard::admin", actor = %actor, rule = %created.id, name = %created.rule.name, stored_rules = n, "created rule");
    Ok(created)
}

/// Deletes a stored rule (by name or id) and installs the rest.
pub(crate) async fn remove_rule(
    state: &AppState,
    store: &Store,
    actor: &str,
    name_or_id: &str,
) -> Result<(), ApiError> {
    if !store.delete_rule(name_or_id).await? {
        return Err(ApiError::not_found(format!("rule not found: {name_or_id}")));
    }
    let n = reload_rules(state, store).await?;
    tracing::info!(target: "switchyard::admin", actor = %actor, rule = %name_or_id, stored_rules = n, "deleted rule");
    Ok(())
}

// ------------------------------------------------------------ credentials

/// `PUT /admin/credentials`. No `Debug`: it holds the provider key.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PutCredential {
    owner_kind: OwnerKind,
    owner_id: String,
    provider: String,
    api_key: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CredentialQuery {
    #[serde(default)]
    owner_kind: Option<String>,
    #[serde(default)]
    owner_id: Option<String>,
}

fn sealer(state: &AppState) -> Result<&Arc<Sealer>, ApiError> {
    state.identity.sealer().ok_or_else(|| {
        ApiError::unavailable(
            ErrorCode::ByokDisabled,
            "no gateway secret is configured, so provider keys cannot be stored",
        )
    })
}

fn owner_kind(s: &str) -> Result<OwnerKind, ApiError> {
    OwnerKind::parse(s)
        .ok_or_else(|| ApiError::invalid(format!("owner_kind must be user or project, not {s:?}")))
}

/// 404 unless the owner exists.
async fn check_owner(store: &Store, kind: OwnerKind, id: &str) -> Result<(), ApiError> {
    let exists = match kind {
        OwnerKind::User => store.user(id).await?.is_some(),
        OwnerKind::Project => store.project(id).await?.is_some(),
    };
    if exists {
        Ok(())
    } else {
        Err(ApiError::not_found(format!("{} not found: {id}", kind.as_str())))
    }
}

pub(crate) async fn put_credential(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    body: Result<Body<PutCredential>, ApiError>,
) -> ApiResult {
    let sealer = sealer(&state)?;
    // The parser's message could quote part of the body: keep it generic.
    let Ok(Body(body)) = body else {
        return Err(ApiError::invalid(
            "expected a JSON object {owner_kind: user|project, owner_id, provider, api_key}",
        ));
    };
    let provider = body.provider.trim();
    let owner_id = body.owner_id.trim();
    let api_key = body.api_key.trim();
    if api_key.is_empty()
        || api_key.len() > MAX_PROVIDER_KEY
        || api_key.chars().any(char::is_control)
    {
        return Err(ApiError::invalid(format!(
            "api_key must be 1-{MAX_PROVIDER_KEY} printable characters"
        )));
    }
    if !state.gateway.snapshot().catalog.providers.iter().any(|p| p.name == provider) {
        return Err(ApiError::invalid(format!("unknown provider {provider:?}")));
    }
    check_owner(&store, body.owner_kind, owner_id).await?;
    let id = store.new_credential_id()?;
    let sealed = sealer.seal(&id, api_key).map_err(|e| {
        tracing::error!(target: "switchyard::admin", credential = %id, "sealing failed: {e}");
        ApiError::internal("the provider key could not be sealed")
    })?;
    let row = store
        .put_credential(NewCredential {
            id,
            owner_kind: body.owner_kind,
            owner_id: owner_id.to_owned(),
            provider: provider.to_owned(),
            key_id: sealed.key_id,
            nonce: sealed.nonce,
            ciphertext: sealed.ciphertext,
            fingerprint: sealed.fingerprint,
        })
        .await?;
    state.identity.invalidate();
    let info = row.info();
    tracing::info!(target: "switchyard::admin", actor = %actor, credential = %info.id, owner_kind = info.owner_kind.as_str(), owner = %info.owner_id, provider = %info.provider, fingerprint = %info.fingerprint, "stored provider key");
    ok(info)
}

pub(crate) async fn list_credentials(
    Db { store, .. }: Db,
    Params(q): Params<CredentialQuery>,
) -> ApiResult {
    let (kind, id) = (given(q.owner_kind), given(q.owner_id));
    let owner = match (&kind, &id) {
        (Some(k), Some(id)) => Some((owner_kind(k)?, id.as_str())),
        (None, None) => None,
        _ => return Err(ApiError::invalid("give owner_kind and owner_id together")),
    };
    list(store.list_credentials(owner).await?)
}

pub(crate) async fn delete_credential(
    Db { store, actor }: Db,
    State(state): State<Arc<AppState>>,
    Segments((kind, owner_id, provider)): Segments<(String, String, String)>,
) -> ApiResult {
    let kind = owner_kind(&kind)?;
    if !store.delete_credential(kind, &owner_id, &provider).await? {
        return Err(ApiError::not_found(format!(
            "no {provider} key stored for {} {owner_id}",
            kind.as_str()
        )));
    }
    state.identity.invalidate();
    tracing::info!(target: "switchyard::admin", actor = %actor, owner_kind = kind.as_str(), owner = %owner_id, provider = %provider, "deleted provider key");
    ok(json!({ "deleted": true, "owner_kind": kind, "owner_id": owner_id, "provider": provider }))
}
