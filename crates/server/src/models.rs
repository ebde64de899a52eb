//! `GET /v1/models`: visible models only (hidden and retired excluded) that the
//! caller can reach (some provider serving the model has a platform key, or the
//! caller's own key), in OpenAI's list shape, or Anthropic's when the client sends
//! `anthropic-version`. Each entry also carries the catalog facts (prices, context
//! window) the meter uses.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use switchyard_core::util::Date;
use switchyard_protocol::ClientFormat;

use crate::http::error_response;
use crate::{AppState, ids};

pub async fn list(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let anthropic = headers.contains_key("anthropic-version");
    let snapshot = state.gateway.snapshot();
    let catalog = &snapshot.catalog;
    let caller = match state.identity.authenticate(&headers).await {
        Ok(caller) => caller,
        Err(e) => {
            let format = if anthropic { ClientFormat::Anthropic } else { ClientFormat::OpenAiChat };
            return error_response(format, &e, &ids::request_id());
        }
    };
    let today = Date::today();
    // A model only a keyless provider serves would answer every request with 503:
    // listing it would invite clients to pick it.
    let entries: Vec<Value> = catalog
        .visible_models(today)
        .filter(|m| catalog.reachable(m, |p| p.reachable_with(&caller.byok)))
        .map(|m| {
            let facts = json!({
                "pricing": m.pricing.as_ref().map(|p| json!({
                    "input": p.input, "output": p.output,
                    "cache_read": p.cache_read, "cache_write": p.cache_write,
                    "unit": "USD per million tokens",
                })),
                "context_window": m.context_window,
                "max_output_tokens": m.max_output_tokens,
                "retires": m.retires.map(|d| d.to_string()),
            });
            if anthropic {
                json!({"type": "model", "id": m.id, "display_name": m.id, "created_at": "1970-01-01T00:00:00Z", "switchyard": facts})
            } else {
                json!({"id": m.id, "object": "model", "created": 0, "owned_by": m.owned_by, "switchyard": facts})
            }
        })
        .collect();
    let body = if anthropic {
        let first = entries.first().and_then(|e| e["id"].as_str()).map(str::to_owned);
        let last = entries.last().and_then(|e| e["id"].as_str()).map(str::to_owned);
        json!({"data": entries, "has_more": false, "first_id": first, "last_id": last})
    } else {
        json!({"object": "list", "data": entries})
    };
    ([("content-type", "application/json")], body.to_string()).into_response()
}
