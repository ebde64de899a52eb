//! Gemini's model list (`GET /v1beta/models`): `{"models": [{"name":
//! "models/gemini-2.5-pro", "displayName", "supportedGenerationMethods"}],
//! "nextPageToken"}`, 50 a page unless `pageSize` says; the next page is
//! asked for with `pageToken`. Only models that take `generateContent` are a
//! deployment's to name (the list has embedding and other models too).

use serde_json::Value;

use crate::ProtocolError;
use crate::listing::{ListedModel, ModelPage, object, text};

/// One page of Gemini's model list: the models that generate.
pub fn parse_models(body: &[u8]) -> Result<ModelPage, ProtocolError> {
    let map = object(body)?;
    let models = match map.get("models") {
        Some(Value::Array(items)) => items.iter().filter_map(listed).collect(),
        // An empty page leaves the field out.
        None => Vec::new(),
        Some(_) => return Err(ProtocolError::upstream("`models` is not an array")),
    };
    let next = map.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty());
    Ok(ModelPage { models, next: next.map(str::to_owned) })
}

fn listed(item: &Value) -> Option<ListedModel> {
    let generates = item
        .get("supportedGenerationMethods")
        .and_then(Value::as_array)
        .is_some_and(|methods| methods.iter().any(|m| m.as_str() == Some("generateContent")));
    if !generates {
        return None;
    }
    let name = text(item, "name")?;
    Some(ListedModel {
        id: name.strip_prefix("models/").unwrap_or(name).to_owned(),
        display_name: text(item, "displayName").map(str::to_owned),
        retiring: None,
        retires_at: None,
    })
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
