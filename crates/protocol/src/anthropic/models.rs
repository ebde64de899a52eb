//! Anthropic's model list (`GET /v1/models`): `{"data": [{"type": "model",
//! "id", "display_name", "created_at"}], "has_more", "first_id", "last_id"}`,
//! newest first, 20 a page unless `limit` says; the next page is asked for
//! with `after_id` set to the page's `last_id`.

use serde_json::Value;

use crate::ProtocolError;
use crate::listing::{ListedModel, ModelPage, object, text};

/// One page of Anthropic's model list.
pub fn parse_models(body: &[u8]) -> Result<ModelPage, ProtocolError> {
    let map = object(body)?;
    let Some(Value::Array(items)) = map.get("data") else {
        return Err(ProtocolError::upstream("the model list has no `data` array"));
    };
    let models = items
        .iter()
        .filter_map(|item| {
            Some(ListedModel {
                id: text(item, "id")?.to_owned(),
                display_name: text(item, "display_name").map(str::to_owned),
                retiring: None,
                retires_at: None,
            })
        })
        .collect();
    let more = map.get("has_more").and_then(Value::as_bool) == Some(true);
    let next = match (more, map.get("last_id").and_then(Value::as_str)) {
        (true, Some(last)) if !last.is_empty() => Some(last.to_owned()),
        // More promised and no cursor to ask for it: following would ask for
        // the first page again, forever.
        (true, _) => return Err(ProtocolError::upstream("`has_more` without a `last_id`")),
        (false, _) => None,
    };
    Ok(ModelPage { models, next })
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
