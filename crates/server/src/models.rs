//! Model discovery, from the catalog, in each client's own shape.
//!
//! `GET /v1/models` lists visible models only (hidden and retired excluded) that the
//! caller can reach (some provider serving the model has a platform key, or the
//! caller's own key):
//! - with `client_version` in the query (Codex), as Codex's `ModelsResponse`:
//!   `{"models": [ModelInfo…]}`, so Codex gets each model's context window and
//!   reasoning levels instead of its fallback metadata;
//! - with `anthropic-version`, as Anthropic's list;
//! - otherwise as OpenAI's list.
//!
//! The OpenAI and Anthropic entries also carry the catalog facts (prices, context
//! window) the meter uses.

use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::GatewayError;
use switchyard_core::catalog::ModelEntry;
use switchyard_core::util::Date;
use switchyard_protocol::ClientFormat;

use crate::http::error_response;
use crate::{AppState, ids};

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
    let catalog = &snapshot.catalog;
    let today = Date::today();
    // A model only a keyless provider serves would answer every request with 503:
    // listing it would invite clients to pick it.
    let models: Vec<&Arc<ModelEntry>> = catalog
        .visible_models(today)
        .filter(|m| catalog.reachable(m, |p| p.reachable_with(&caller.byok)))
        .collect();
    let body = if query.client_version.is_some() {
        let models: Vec<Value> =
            models.iter().enumerate().map(|(i, m)| codex_model(m, i)).collect();
        json!({"models": models})
    } else if format == ClientFormat::Anthropic {
        let data: Vec<Value> = models.iter().map(|m| anthropic_model(m, &m.id)).collect();
        let first = data.first().map(|e| e["id"].clone()).unwrap_or(Value::Null);
        let last = data.last().map(|e| e["id"].clone()).unwrap_or(Value::Null);
        json!({"data": data, "has_more": false, "first_id": first, "last_id": last})
    } else {
        let data: Vec<Value> = models.iter().map(|m| openai_model(m, &m.id)).collect();
        json!({"object": "list", "data": data})
    };
    json_response(&body)
}

fn json_response(body: &Value) -> Response {
    ([("content-type", "application/json")], body.to_string()).into_response()
}

fn invalid(message: impl Into<String>, param: Option<&str>) -> GatewayError {
    let mut err = GatewayError::invalid("invalid_request", message);
    err.0.param = param.map(str::to_owned);
    err
}

/// The catalog facts the meter uses, on the OpenAI and Anthropic entries.
fn facts(m: &ModelEntry) -> Value {
    json!({
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

fn anthropic_model(m: &ModelEntry, name: &str) -> Value {
    json!({"type": "model", "id": name, "display_name": name,
           "created_at": "1970-01-01T00:00:00Z", "switchyard": facts(m)})
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
        // A JSON function with one string: what every upstream wire takes natively
        // (a free-form tool is translated into one anyway).
        "apply_patch_tool_type": "function",
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
