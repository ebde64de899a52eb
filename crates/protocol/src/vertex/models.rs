//! Vertex AI's publisher models (`ListPublisherModels`, `GET
//! /v1beta1/publishers/{publisher}/models` on the regional host, under no
//! project): `{"publisherModels": [{"name":
//! "publishers/google/models/gemini-2.5-pro", "versionId", "launchStage"}],
//! "nextPageToken"}`, the next page asked for with `pageToken`. It is Model
//! Garden's catalogue for the publisher, not what a project has enabled, and
//! says nothing of retirement. A deployment names a Claude model with its
//! version (`claude-sonnet-4-5@20250929`): the list names it without
//! ([`listed_id`]).

use serde_json::Value;

use crate::ProtocolError;
use crate::listing::{ListedModel, ModelPage, object, text};

/// One page of a publisher's models.
pub fn parse_models(body: &[u8]) -> Result<ModelPage, ProtocolError> {
    let map = object(body)?;
    let models = match map.get("publisherModels") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| {
                let name = text(item, "name")?;
                let id = name.rsplit_once("/models/").map_or(name, |(_, id)| id);
                Some(ListedModel::new(id))
            })
            .collect(),
        None => Vec::new(),
        Some(_) => return Err(ProtocolError::upstream("`publisherModels` is not an array")),
    };
    let next = map.get("nextPageToken").and_then(Value::as_str).filter(|t| !t.is_empty());
    Ok(ModelPage { models, next: next.map(str::to_owned) })
}

/// The id the list gives a deployment's model: without its `@version`.
pub fn listed_id(upstream_model: &str) -> &str {
    upstream_model.split_once('@').map_or(upstream_model, |(id, _)| id)
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
