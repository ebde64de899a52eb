//! OpenAI's model list (`GET /models` under the endpoint's `/v1`): `{"data":
//! [{"id", "object": "model", "created", "owned_by"}]}`, one page. The
//! OpenAI-compatible servers answer in the same shape, some with more: a
//! `name` (OpenRouter), a `deprecation` date (Mistral), Azure's
//! `lifecycle_status` and `deprecation.inference`; Together answers with the
//! bare array. Each is read where present; none is required but the id.

use serde_json::Value;

use crate::ProtocolError;
use crate::listing::{ListedModel, ModelPage, object, text};

/// One page of an OpenAI-shaped model list (the whole list: it has no pages).
pub fn parse_models(body: &[u8]) -> Result<ModelPage, ProtocolError> {
    // Together's is the array alone.
    if let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(body) {
        return Ok(ModelPage { models: items.iter().filter_map(listed).collect(), next: None });
    }
    let map = object(body)?;
    let Some(Value::Array(items)) = map.get("data") else {
        return Err(ProtocolError::upstream("the model list has no `data` array"));
    };
    Ok(ModelPage { models: items.iter().filter_map(listed).collect(), next: None })
}

/// An entry of the list; `None` without an id (nothing could deploy it).
fn listed(item: &Value) -> Option<ListedModel> {
    let id = text(item, "id")?;
    let display_name = text(item, "name").or_else(|| text(item, "display_name"));
    // Azure states an inference end date for every model, retiring or not;
    // only its lifecycle says the model is on its way out.
    let retires_at =
        item.get("deprecation").and_then(|d| d.get("inference")).and_then(Value::as_u64);
    let lifecycle = text(item, "lifecycle_status").filter(|s| s.starts_with("deprecat"));
    let retiring = match (lifecycle, text(item, "deprecation")) {
        (Some(status), _) => Some(status.to_owned()),
        // Mistral: the date it goes, and what replaces it.
        (None, Some(date)) => Some(match text(item, "deprecation_replacement_model") {
            Some(next) => format!("deprecated {date}, replaced by {next}"),
            None => format!("deprecated {date}"),
        }),
        (None, None) => None,
    };
    Some(ListedModel {
        id: id.to_owned(),
        display_name: display_name.map(str::to_owned),
        retiring,
        retires_at,
    })
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
