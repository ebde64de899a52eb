//! Model discovery, from the catalog, in each client's own shape.
//!
//! `GET /v1/models` lists visible models only (hidden and retired excluded) that the
//! caller can reach (some provider serving the model has a platform key, or the
//! caller's own key) and may call (their key's `allowed_models` and the access
//! rules, checked as a request for the model is: [`Snapshot::may_call`]):
//! - with `client_version` in the query (Codex), as Codex's `ModelsResponse`:
//!   `{"models": [ModelInfo…]}`, so Codex gets each model's context window and
//!   reasoning levels instead of its fallback metadata;
//! - with `anthropic-version` (Anthropic SDKs, Claude Code's gateway discovery), as
//!   Anthropic's page: `data`, `has_more`, `first_id`, `last_id`, paged by `limit`,
//!   `after_id`, `before_id`;
//! - otherwise as OpenAI's list.
//!
//! The OpenAI and Anthropic entries also carry the catalog facts (prices, context
//! window) the meter uses. `GET /v1/models/{id}` answers one model, by id or alias,
//! in the OpenAI or Anthropic shape, when a request for it would be served (hidden
//! models too: they are served, only not listed); otherwise 404 in that shape (a
//! model the caller may not call, exactly as one the catalog does not have).
//!
//! Gemini clients list the same models at `GET /v1beta/models`, as Gemini's
//! `ListModelsResponse` (`models`, `nextPageToken`; paged by `pageSize` and
//! `pageToken`), and get one at `GET /v1beta/models/{id}` ([`crate::gemini`]
//! routes them here).

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::catalog::{ModelEntry, normalize_model};
use switchyard_core::config::raw::ModelKind;
use switchyard_core::util::{Date, excerpt};
use switchyard_core::{Engine, GatewayError, Snapshot};
use switchyard_protocol::{ClientFormat, ErrorCode};

use crate::http::error_response;
use crate::identity::Caller;
use crate::{AppState, ids};

/// Anthropic's page size when `limit` is not given, and the largest it accepts.
const DEFAULT_LIMIT: usize = 20;
const MAX_LIMIT: usize = 1000;
/// Gemini's page size when `pageSize` is not given (the largest is [`MAX_LIMIT`]).
const GEMINI_DEFAULT_PAGE: usize = 50;
/// What Switchyard serves of Gemini's methods.
const GEMINI_METHODS: [&str; 3] = ["generateContent", "streamGenerateContent", "countTokens"];
/// What an embedding model serves, as Google lists it.
const GEMINI_EMBED_METHODS: [&str; 2] = ["embedContent", "batchEmbedContents"];
/// What an image model serves, as Google lists Imagen.
const GEMINI_IMAGE_METHODS: [&str; 1] = ["predict"];

/// The instructions Codex sends as its system prompt for a model listed here.
/// Codex's `ModelInfo` requires `base_instructions` and uses it in place of its
/// built-in prompt, so an empty one would leave the model without any; this is a
/// short, model-neutral prompt for Codex's tools. A user who prefers another sets
/// `model_instructions_file` in Codex's configuration, which takes precedence.
const CODEX_INSTRUCTIONS: &str = "\
You are a coding agent working in the user's workspace through Codex. Use the tools \
you are given to read files, run commands and change code; inspect before you edit, \
keep changes small and in the project's style, and make file edits with apply_patch. \
Check your work by building or running the tests when that is practical. For a task \
of several steps, keep a plan with update_plan and follow it. Ask the user only when \
you cannot go on safely without an answer. When you finish, say briefly what you \
changed, how you checked it, and anything left undone.";

#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    /// Sent by Codex (its version): answer in Codex's shape.
    client_version: Option<String>,
    limit: Option<String>,
    after_id: Option<String>,
    before_id: Option<String>,
}

/// The error format of a model endpoint's caller.
fn caller_format(headers: &HeaderMap) -> ClientFormat {
    if headers.contains_key("anthropic-version") {
        ClientFormat::Anthropic
    } else {
        ClientFormat::OpenAiChat
    }
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Response {
    let format = caller_format(&headers);
    let caller = match state.identity.authenticate(&headers).await {
        Ok(caller) => caller,
        Err(e) => return error_response(format, &e, &ids::request_id()),
    };
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return error_response(format, &invalid(e.body_text(), None), &ids::request_id()),
    };
    let snapshot = state.gateway.snapshot();
    let models = listed(&state.gateway, &snapshot, &caller);
    // Codex's and Anthropic's lists are of models to chat with: their
    // pickers would offer an embedding model that cannot answer.
    let chat_only = || {
        let chat: Vec<&Arc<ModelEntry>> =
            models.iter().copied().filter(|m| m.kind == ModelKind::Chat).collect();
        chat
    };
    let body = if query.client_version.is_some() {
        let models: Vec<Value> =
            chat_only().iter().enumerate().map(|(i, m)| codex_model(m, i)).collect();
        json!({"models": models})
    } else if format == ClientFormat::Anthropic {
        match anthropic_page(&chat_only(), &query) {
            Ok(page) => page,
            Err(e) => return error_response(format, &e, &ids::request_id()),
        }
    } else {
        let data: Vec<Value> = models.iter().map(|m| openai_model(m, &m.id)).collect();
        json!({"object": "list", "data": data})
    };
    json_response(&body)
}

/// The models a list shows this caller: visible ones that some provider can serve
/// for them and that they may call (their key's `allowed_models`, the access
/// rules). (A model only a keyless provider serves would answer every request
/// with 503, a forbidden one with 403: listing either would invite clients to
/// pick it.)
fn listed<'a>(
    gateway: &Engine,
    snapshot: &'a Snapshot,
    caller: &Caller,
) -> Vec<&'a Arc<ModelEntry>> {
    let catalog = &snapshot.catalog;
    let today = Date::today();
    let usable = |m: &ModelEntry| {
        !m.is_retired(today)
            && catalog.reachable(m, |p| p.reachable_with(&caller.byok))
            && snapshot.may_call(&gateway.runtime, &caller.principal, m)
    };
    let mut listed: Vec<&Arc<ModelEntry>> =
        catalog.visible_models(today).filter(|m| usable(m)).collect();
    // The `auto` models too, where every model they route to is one the
    // caller could call by name.
    listed.extend(
        catalog
            .auto_models
            .iter()
            .filter(|(_, targets)| targets.iter().all(|t| usable(t)))
            .map(|(auto, _)| auto),
    );
    listed
}

/// The `auto` model (`auto`, `auto-<class>`, prefixed or not) named
/// `requested`, where every model it routes to is one the caller could call.
fn auto_model<'a>(
    state: &AppState,
    snapshot: &'a Snapshot,
    caller: &Caller,
    requested: &str,
) -> Option<&'a Arc<ModelEntry>> {
    let catalog = &snapshot.catalog;
    let name = catalog.canonical_name(requested);
    let (auto, targets) = catalog.auto_models.iter().find(|(m, _)| m.id == name)?;
    let today = Date::today();
    targets
        .iter()
        .all(|t| {
            !t.is_retired(today)
                && catalog.reachable(t, |p| p.reachable_with(&caller.byok))
                && snapshot.may_call(&state.gateway.runtime, &caller.principal, t)
        })
        .then_some(auto)
}

/// `GET /v1/models/{id}`: one model, named by id or alias, as a request would
/// resolve it (catalog models only).
pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    Path(requested): Path<String>,
) -> Response {
    let format = caller_format(&headers);
    retrieve_as(&state, &headers, &requested, format).await
}

/// One model in `format`'s shape (its errors too).
pub(crate) async fn retrieve_as(
    state: &AppState,
    headers: &HeaderMap,
    requested: &str,
    format: ClientFormat,
) -> Response {
    let id = ids::request_id();
    let caller = match state.identity.authenticate(headers).await {
        Ok(caller) => caller,
        Err(e) => return error_response(format, &e, &id),
    };
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let not_found = |code: ErrorCode, why: &str| {
        let err = GatewayError::new(code, format!("model {:?} {why}", excerpt(requested)));
        error_response(format, &err, &id)
    };
    // A model the caller may not call is answered as one that does not exist:
    // its name is not theirs to learn.
    let Some(m) = catalog
        .model(&normalize_model(requested))
        .filter(|m| snapshot.may_call(&state.gateway.runtime, &caller.principal, m))
    else {
        if let Some(auto) = auto_model(state, &snapshot, &caller, requested) {
            let name = requested.trim();
            let body = match format {
                ClientFormat::Anthropic => anthropic_model(auto, name),
                ClientFormat::Gemini => gemini_model(auto, name),
                ClientFormat::OpenAiChat | ClientFormat::OpenAiResponses => {
                    openai_model(auto, name)
                }
            };
            return json_response(&body);
        }
        return not_found(ErrorCode::ModelNotFound, "is not in the catalog");
    };
    if m.is_retired(Date::today()) {
        return not_found(ErrorCode::ModelRetired, "is retired");
    }
    if !catalog.reachable(m, |p| p.reachable_with(&caller.byok)) {
        return not_found(ErrorCode::ModelNotFound, "has no provider with a key");
    }
    // Named as asked, as every answer names the model (an alias stays an alias).
    let name = requested.trim();
    let body = match format {
        ClientFormat::Anthropic => anthropic_model(m, name),
        ClientFormat::Gemini => gemini_model(m, name),
        ClientFormat::OpenAiChat | ClientFormat::OpenAiResponses => openai_model(m, name),
    };
    json_response(&body)
}

/// `GET /v1beta/models`: Gemini's `ListModelsResponse`, `page_size` models from
/// `page_token` on (the id of the page's first model, as `nextPageToken` gave it).
pub(crate) async fn gemini_list(
    state: &AppState,
    headers: &HeaderMap,
    page_size: Option<&str>,
    page_token: Option<&str>,
) -> Response {
    let format = ClientFormat::Gemini;
    let id = ids::request_id();
    let caller = match state.identity.authenticate(headers).await {
        Ok(caller) => caller,
        Err(e) => return error_response(format, &e, &id),
    };
    let size = match page_size {
        None => GEMINI_DEFAULT_PAGE,
        Some(s) => match s.parse::<usize>() {
            // Google reads a size of 0 as the default, and a larger one as its largest.
            Ok(0) => GEMINI_DEFAULT_PAGE,
            Ok(n) => n.min(MAX_LIMIT),
            Err(_) => {
                let why =
                    format!("pageSize: expected a non-negative integer, got {:?}", excerpt(s));
                return error_response(format, &invalid(why, Some("pageSize")), &id);
            }
        },
    };
    let snapshot = state.gateway.snapshot();
    let models = listed(&state.gateway, &snapshot, &caller);
    let start = match page_token.filter(|t| !t.is_empty()) {
        None => 0,
        Some(token) => match models.iter().position(|m| m.id == token) {
            Some(i) => i,
            None => {
                let why = format!("pageToken: no model {:?} in this list", excerpt(token));
                return error_response(format, &invalid(why, Some("pageToken")), &id);
            }
        },
    };
    let end = start.saturating_add(size).min(models.len());
    let page: Vec<Value> =
        models.get(start..end).unwrap_or_default().iter().map(|m| gemini_model(m, &m.id)).collect();
    let mut body = json!({ "models": page });
    if let Some(next) = models.get(end) {
        body["nextPageToken"] = json!(next.id);
    }
    json_response(&body)
}

fn json_response(body: &Value) -> Response {
    ([("content-type", "application/json")], body.to_string()).into_response()
}

fn invalid(message: impl Into<String>, param: Option<&str>) -> GatewayError {
    GatewayError::new(ErrorCode::InvalidRequest, message).with_param(param.map(str::to_owned))
}

/// The catalog facts the meter uses, on the OpenAI and Anthropic entries.
fn facts(m: &ModelEntry) -> Value {
    json!({
        "id": m.id,
        "kind": m.kind.as_str(),
        "pricing": m.pricing.as_ref().map(|p| json!({
            "input": p.input, "output": p.output,
            "cache_read": p.cache_read, "cache_write": p.cache_write,
            "unit": "USD per million tokens",
        })),
        "context_window": m.context_window,
        "max_output_tokens": m.max_output_tokens,
        "retires": m.retires.map(|d| d.to_string()),
    })
}

fn openai_model(m: &ModelEntry, name: &str) -> Value {
    json!({"id": name, "object": "model", "created": 0, "owned_by": m.owned_by, "switchyard": facts(m)})
}

/// A model as Gemini's `Model`: `name` is `models/<id>`; the limits are the
/// catalog's, where it has them.
fn gemini_model(m: &ModelEntry, name: &str) -> Value {
    let mut model = json!({
        "name": format!("models/{name}"),
        "baseModelId": name,
        "version": "switchyard",
        "displayName": name,
        "description": format!("{} (owned by {}), through Switchyard", m.id, m.owned_by),
        "supportedGenerationMethods": match m.kind {
            ModelKind::Chat => &GEMINI_METHODS[..],
            ModelKind::Embedding => &GEMINI_EMBED_METHODS[..],
            ModelKind::Image => &GEMINI_IMAGE_METHODS[..],
            // Reached through `/v1/jobs` only: no Gemini method serves it.
            ModelKind::Media => &[][..],
        },
        "switchyard": facts(m),
    });
    if let Some(window) = m.context_window {
        model["inputTokenLimit"] = json!(window);
    }
    if let Some(max) = m.max_output_tokens {
        model["outputTokenLimit"] = json!(max);
    }
    if m.capabilities.is_some_and(|c| c.reasoning) {
        model["thinking"] = json!(true);
    }
    model
}

fn anthropic_model(m: &ModelEntry, name: &str) -> Value {
    json!({"type": "model", "id": name, "display_name": name,
           "created_at": "1970-01-01T00:00:00Z", "switchyard": facts(m)})
}

/// One page of Anthropic's list: `limit` entries after `after_id`, or the
/// `limit` entries just before `before_id`, or the first `limit`.
fn anthropic_page(models: &[&Arc<ModelEntry>], q: &ListQuery) -> Result<Value, GatewayError> {
    let limit = match q.limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(invalid(
                    format!(
                        "limit: expected an integer from 1 to {MAX_LIMIT}, got {:?}",
                        excerpt(s)
                    ),
                    Some("limit"),
                ));
            }
        },
    };
    let position = |param: &str, cursor: &str| {
        models.iter().position(|m| m.id == cursor).ok_or_else(|| {
            invalid(format!("{param}: no model {:?} in this list", excerpt(cursor)), Some(param))
        })
    };
    let (start, end, has_more) = match (q.after_id.as_deref(), q.before_id.as_deref()) {
        (Some(_), Some(_)) => {
            return Err(invalid("give after_id or before_id, not both", Some("before_id")));
        }
        (Some(after), None) => {
            let start = position("after_id", after)? + 1;
            let end = start.saturating_add(limit).min(models.len());
            (start, end, end < models.len())
        }
        (None, Some(before)) => {
            let end = position("before_id", before)?;
            let start = end.saturating_sub(limit);
            (start, end, start > 0)
        }
        (None, None) => {
            let end = limit.min(models.len());
            (0, end, end < models.len())
        }
    };
    let data: Vec<Value> = models
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|m| anthropic_model(m, &m.id))
        .collect();
    let first = data.first().map(|e| e["id"].clone()).unwrap_or(Value::Null);
    let last = data.last().map(|e| e["id"].clone()).unwrap_or(Value::Null);
    Ok(json!({"data": data, "has_more": has_more, "first_id": first, "last_id": last}))
}

/// A model as Codex's `ModelInfo` (codex-rs `openai_models`): every field that has
/// no default in any release Codex decodes with is present; the rest are Codex's
/// own defaults, written out. Facts the catalog has (context window, reasoning,
/// vision, tools) come from it; where it says nothing, Codex's fallback choices.
fn codex_model(m: &ModelEntry, priority: usize) -> Value {
    let caps = m.capabilities;
    // Undeclared capabilities filter nothing in routing; here only declared
    // reasoning is offered, since Codex sends a reasoning setting for every level.
    let reasoning = caps.is_some_and(|c| c.reasoning);
    let vision = caps.is_none_or(|c| c.vision);
    let tools = caps.is_none_or(|c| c.tools);
    let levels: Vec<Value> = if reasoning {
        [
            ("low", "Quick answers, light reasoning"),
            ("medium", "Balanced speed and depth of reasoning"),
            ("high", "Deepest reasoning for hard problems"),
        ]
        .iter()
        .map(|(effort, description)| json!({"effort": effort, "description": description}))
        .collect()
    } else {
        Vec::new()
    };
    let modalities: &[&str] = if vision { &["text", "image"] } else { &["text"] };
    json!({
        "slug": m.id,
        "display_name": m.id,
        "description": format!("{} (owned by {}), through Switchyard", m.id, m.owned_by),
        "default_reasoning_level": reasoning.then_some("medium"),
        "supported_reasoning_levels": levels,
        // A command as one string: every release takes it (the newest read it as
        // unified exec), and it suits models not trained on Codex's array form.
        "shell_type": "shell_command",
        "visibility": "list",
        "minimal_client_version": [0, 0, 0],
        "supported_in_api": true,
        // Codex sorts by priority (lowest first) and defaults to the first: the
        // catalog's order.
        "priority": priority,
        "additional_speed_tiers": [],
        "service_tiers": [],
        "availability_nux": null,
        "upgrade": null,
        "base_instructions": CODEX_INSTRUCTIONS,
        "supports_reasoning_summaries": reasoning,
        "supports_reasoning_summary_parameter": reasoning,
        "default_reasoning_summary": "auto",
        "support_verbosity": false,
        "default_verbosity": null,
        // The free-form tool: the only kind Codex 0.171 still decodes (`function`
        // fails the whole answer, and Codex falls back to guessed metadata). Other
        // wires get it as a function of one string, the grammar in its description.
        "apply_patch_tool_type": "freeform",
        "web_search_tool_type": "text",
        "truncation_policy": {"mode": "bytes", "limit": 10_000},
        "supports_parallel_tool_calls": tools,
        "supports_image_detail_original": false,
        "context_window": m.context_window,
        "max_context_window": m.context_window,
        // Codex's own rule (90 % of the window), written out.
        "auto_compact_token_limit": m.context_window.map(|w| w / 10 * 9),
        "effective_context_window_percent": 95,
        "experimental_supported_tools": [],
        "input_modalities": modalities,
        "supports_search_tool": false,
        "use_responses_lite": false,
    })
}
