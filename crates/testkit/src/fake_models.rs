//! A fake's model list, in its vendor's shape and as strict as the real one:
//! the vendor's credential required where it puts it (OpenAI's bearer token,
//! Anthropic's `x-api-key` and `anthropic-version`, Gemini's
//! `x-goog-api-key` or `?key=`, Bedrock's SigV4 or API key on
//! `/foundation-models`), `GET` only, and pages as the real API cuts them
//! (Anthropic: `limit`, 20 by default, `after_id`; Gemini: `pageSize`, 50 by
//! default, `pageToken`). Answered outside the script: a list takes no reply
//! from it, and is recorded like any request.

use std::time::SystemTime;

use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::{Received, Shared, plain, vendor_error};
use crate::{Vendor, bedrock, sigv4};

/// A model a fake lists ([`super::FakeUpstream::set_models`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeModel {
    /// Its id.
    pub id: String,
    /// Marked as on its way out where the vendor's list can say so (Bedrock:
    /// `modelLifecycle.status: LEGACY`); the others' lists cannot.
    pub retiring: bool,
}

impl FakeModel {
    /// A current model.
    pub fn new(id: impl Into<String>) -> FakeModel {
        FakeModel { id: id.into(), retiring: false }
    }

    /// The same model, retiring.
    #[must_use]
    pub fn retiring(self) -> FakeModel {
        FakeModel { retiring: true, ..self }
    }
}

/// The answer to a request on the vendor's model-list path; `None` for any
/// other path (routed as before).
pub(super) fn answer(shared: &Shared, method: &Method, rx: &Received) -> Option<Response> {
    let vendor = shared.vendor;
    let listed = match vendor {
        Vendor::OpenAi => matches!(rx.path.as_str(), "/v1/models" | "/models"),
        Vendor::Anthropic => rx.path == "/v1/models",
        Vendor::Gemini => matches!(rx.path.as_str(), "/v1beta/models" | "/v1/models"),
        Vendor::Bedrock => rx.path == "/foundation-models",
    };
    if !listed {
        return None;
    }
    shared.record(rx, false);
    if method != Method::GET {
        let message = format!("fake {vendor:?} upstream: method not allowed: {}", rx.method);
        return Some(vendor_error(vendor, 405, None, &message));
    }
    if let Err((status, kind, message)) = authorized(shared, rx) {
        return Some(vendor_error(vendor, status, kind, &message));
    }
    let models = shared.lock().models.clone();
    let page = match vendor {
        Vendor::OpenAi => Ok(openai(&models)),
        Vendor::Anthropic => anthropic(&models, rx),
        Vendor::Gemini => gemini(&models, rx),
        Vendor::Bedrock => Ok(bedrock_list(&models)),
    };
    Some(match page {
        Ok(body) => plain(200, "application/json", body.to_string()),
        Err(message) => vendor_error(vendor, 400, Some("ValidationException"), &message),
    })
}

type Refused = (u16, Option<&'static str>, String);

/// The vendor's credential, where it puts it.
fn authorized(shared: &Shared, rx: &Received) -> Result<(), Refused> {
    let present = |v: Option<&str>| v.is_some_and(|v| !v.trim().is_empty());
    let missing = |what: &str| Err((401, None, format!("missing credential: {what}")));
    match shared.vendor {
        Vendor::OpenAi => {
            let bearer = rx.header("authorization").and_then(|a| a.strip_prefix("Bearer "));
            if present(bearer) { Ok(()) } else { missing("Authorization: Bearer") }
        }
        Vendor::Anthropic => {
            if !present(rx.header("x-api-key")) {
                return missing("x-api-key");
            }
            if !present(rx.header("anthropic-version")) {
                return Err((400, None, "anthropic-version: header is required".into()));
            }
            Ok(())
        }
        Vendor::Gemini => {
            if present(rx.header("x-goog-api-key")) || present(query(rx, "key").as_deref()) {
                Ok(())
            } else {
                missing("x-goog-api-key")
            }
        }
        Vendor::Bedrock => {
            let target = match &rx.query {
                Some(q) => format!("{}?{q}", rx.path),
                None => rx.path.clone(),
            };
            bedrock::authenticate(
                &shared.bedrock,
                &rx.method,
                &target,
                &rx.headers,
                &rx.raw,
                SystemTime::now(),
            )
            .map_err(|r| (r.status, Some(r.error_type), r.message))
        }
    }
}

/// A query parameter, decoded.
fn query(rx: &Received, name: &str) -> Option<String> {
    rx.query.as_deref()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        (k == name).then(|| sigv4::percent_decode(v))
    })
}

/// A page size from `name`: `default` when absent, 1 to 1000.
fn page_size(rx: &Received, name: &str, default: usize) -> Result<usize, String> {
    match query(rx, name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| format!("{name}: must be from 1 to 1000")),
    }
}

fn openai(models: &[FakeModel]) -> Value {
    let data: Vec<Value> = models
        .iter()
        .map(|m| json!({"id": m.id, "object": "model", "created": 1_700_000_000, "owned_by": "fake"}))
        .collect();
    json!({"object": "list", "data": data})
}

fn anthropic(models: &[FakeModel], rx: &Received) -> Result<Value, String> {
    let limit = page_size(rx, "limit", 20)?;
    let start = match query(rx, "after_id") {
        None => 0,
        Some(after) => {
            models.iter().position(|m| m.id == after).ok_or("after_id: no such model")? + 1
        }
    };
    let page = models.get(start..).unwrap_or_default();
    let page = &page[..page.len().min(limit)];
    let data: Vec<Value> = page
        .iter()
        .map(|m| {
            json!({"type": "model", "id": m.id, "display_name": format!("Fake {}", m.id),
                   "created_at": "2025-01-01T00:00:00Z"})
        })
        .collect();
    Ok(json!({
        "data": data,
        "has_more": start + page.len() < models.len(),
        "first_id": page.first().map(|m| m.id.clone()),
        "last_id": page.last().map(|m| m.id.clone()),
    }))
}

fn gemini(models: &[FakeModel], rx: &Received) -> Result<Value, String> {
    let size = page_size(rx, "pageSize", 50)?;
    // An opaque token to the client; an offset here.
    let start = match query(rx, "pageToken") {
        None => 0,
        Some(t) => t
            .strip_prefix("offset-")
            .and_then(|n| n.parse().ok())
            .filter(|n| *n <= models.len())
            .ok_or("pageToken: not a token this server gave")?,
    };
    let page = models.get(start..).unwrap_or_default();
    let page = &page[..page.len().min(size)];
    let listed: Vec<Value> = page
        .iter()
        .map(|m| {
            json!({"name": format!("models/{}", m.id), "displayName": format!("Fake {}", m.id),
                   "supportedGenerationMethods": ["generateContent", "countTokens"]})
        })
        .collect();
    let mut body = json!({"models": listed});
    let end = start + page.len();
    if end < models.len() {
        body["nextPageToken"] = json!(format!("offset-{end}"));
    }
    Ok(body)
}

fn bedrock_list(models: &[FakeModel]) -> Value {
    let summaries: Vec<Value> = models
        .iter()
        .map(|m| {
            json!({
                "modelId": m.id,
                "modelName": format!("Fake {}", m.id),
                "providerName": "Fake",
                "inputModalities": ["TEXT"],
                "outputModalities": ["TEXT"],
                "responseStreamingSupported": true,
                "inferenceTypesSupported": ["ON_DEMAND"],
                "modelLifecycle": {"status": if m.retiring { "LEGACY" } else { "ACTIVE" }},
            })
        })
        .collect();
    json!({"modelSummaries": summaries})
}
