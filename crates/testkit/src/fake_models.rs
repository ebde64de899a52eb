//! A fake's model list, in its vendor's shape and as strict as the real one:
//! the vendor's credential required where it puts it (OpenAI's bearer token,
//! Anthropic's `x-api-key` and `anthropic-version`, Gemini's
//! `x-goog-api-key` or `?key=`, Bedrock's SigV4 or API key on
//! `/foundation-models`), `GET` only, and pages as the real API cuts them
//! (Anthropic: `limit`, 20 by default, `after_id`; Gemini: `pageSize`, 50 by
//! default, `pageToken`). A cloud's fake lists too: Azure's v1 API
//! (`/openai/v1/models`, its key or Entra token, each model with its
//! `lifecycle_status` and `deprecation`), Vertex AI's publisher models
//! (`/v1beta1/publishers/{anthropic|google}/models`, behind the fake's token
//! check, `pageToken` pages). Answered outside the script: a list takes no
//! reply from it, and is recorded like any request.

use std::time::SystemTime;

use axum::http::Method;
use axum::response::Response;
use serde_json::{Value, json};

use super::{Received, Shared, lock, plain, vendor_error};
use crate::{Vendor, azure, bedrock, sigv4};

/// A model a fake lists ([`super::FakeUpstream::set_models`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeModel {
    /// Its id.
    pub id: String,
    /// Marked as on its way out where the vendor's list can say so (Bedrock:
    /// `modelLifecycle.status: LEGACY`; Azure: `lifecycle_status:
    /// deprecating`); the others' lists cannot.
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
    let path = rx.path.as_str();
    let list = match (shared.vertex.is_some(), shared.azure.is_some(), vendor) {
        // Vertex's fake has checked its token before any route.
        (true, _, Vendor::Anthropic) => {
            (path == "/v1beta1/publishers/anthropic/models").then_some(List::Vertex("anthropic"))
        }
        (true, _, Vendor::Gemini) => {
            (path == "/v1beta1/publishers/google/models").then_some(List::Vertex("google"))
        }
        (true, _, Vendor::OpenAi | Vendor::Bedrock) => None,
        (false, true, _) => (path == "/openai/v1/models").then_some(List::Azure),
        (false, false, Vendor::OpenAi) => {
            matches!(path, "/v1/models" | "/models").then_some(List::Vendor)
        }
        (false, false, Vendor::Anthropic) => (path == "/v1/models").then_some(List::Vendor),
        (false, false, Vendor::Gemini) => {
            matches!(path, "/v1beta/models" | "/v1/models").then_some(List::Vendor)
        }
        (false, false, Vendor::Bedrock) => (path == "/foundation-models").then_some(List::Vendor),
    }?;
    shared.record(rx, false);
    if method != Method::GET {
        let message = format!("fake {vendor:?} upstream: method not allowed: {}", rx.method);
        return Some(vendor_error(vendor, 405, None, &message));
    }
    let models = shared.lock().models.clone();
    let page = match list {
        List::Vertex(publisher) => vertex(&models, publisher, rx),
        List::Azure => {
            let granted = shared.azure.as_ref().is_some_and(|tokens| {
                lock(tokens).authorized(rx.header("api-key"), rx.header("authorization"))
            });
            if !granted {
                let body = azure::error_body(
                    401,
                    "Access denied due to invalid subscription key or wrong API endpoint.",
                );
                return Some(plain(401, "application/json", body.to_string()));
            }
            Ok(azure_list(&models))
        }
        List::Vendor => {
            if let Err((status, kind, message)) = authorized(shared, rx) {
                return Some(vendor_error(vendor, status, kind, &message));
            }
            match vendor {
                Vendor::OpenAi => Ok(openai(&models)),
                Vendor::Anthropic => anthropic(&models, rx),
                Vendor::Gemini => gemini(&models, rx),
                Vendor::Bedrock => Ok(bedrock_list(&models)),
            }
        }
    };
    Some(match page {
        Ok(body) => plain(200, "application/json", body.to_string()),
        Err(message) => vendor_error(vendor, 400, Some("ValidationException"), &message),
    })
}

/// Whose list a request is for.
enum List {
    /// The vendor's own API.
    Vendor,
    /// Azure OpenAI's v1 API.
    Azure,
    /// A publisher's models on Vertex AI.
    Vertex(&'static str),
}

type Refused = (u16, Option<&'static str>, String);

/// The vendor's credential, where it puts it.
pub(super) fn authorized(shared: &Shared, rx: &Received) -> Result<(), Refused> {
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
    let (page, next) = offset_page(models, rx, page_size(rx, "pageSize", 50)?)?;
    let listed: Vec<Value> = page
        .iter()
        .map(|m| {
            json!({"name": format!("models/{}", m.id), "displayName": format!("Fake {}", m.id),
                   "supportedGenerationMethods": ["generateContent", "countTokens"]})
        })
        .collect();
    let mut body = json!({"models": listed});
    if let Some(next) = next {
        body["nextPageToken"] = json!(next);
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

/// Pages of `size` from an offset token (`offset-N`, opaque to a client);
/// the page and the next page's token.
fn offset_page<'a>(
    models: &'a [FakeModel],
    rx: &Received,
    size: usize,
) -> Result<(&'a [FakeModel], Option<String>), String> {
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
    let end = start + page.len();
    Ok((page, (end < models.len()).then(|| format!("offset-{end}"))))
}

fn vertex(models: &[FakeModel], publisher: &str, rx: &Received) -> Result<Value, String> {
    let (page, next) = offset_page(models, rx, page_size(rx, "pageSize", 100)?)?;
    let listed: Vec<Value> = page
        .iter()
        .map(|m| json!({"name": format!("publishers/{publisher}/models/{}", m.id), "versionId": "001", "launchStage": "GA"}))
        .collect();
    let mut body = json!({"publisherModels": listed});
    if let Some(next) = next {
        body["nextPageToken"] = json!(next);
    }
    Ok(body)
}

fn azure_list(models: &[FakeModel]) -> Value {
    let data: Vec<Value> = models
        .iter()
        .map(|m| {
            json!({
                "id": m.id,
                "object": "model",
                "created_at": 1_700_000_000,
                "status": "succeeded",
                "capabilities": {"chat_completion": true, "inference": true},
                "lifecycle_status": if m.retiring { "deprecating" } else { "generally-available" },
                "deprecation": {"inference": 1_790_000_000},
            })
        })
        .collect();
    json!({"object": "list", "data": data})
}
