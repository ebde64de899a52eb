//! Bedrock's foundation models (`ListFoundationModels`, `GET
//! /foundation-models` on the control plane, `bedrock.{region}.amazonaws.com`,
//! signed as `bedrock`): `{"modelSummaries": [{"modelId", "modelName",
//! "providerName", "outputModalities", "inferenceTypesSupported",
//! "modelLifecycle": {"status": "ACTIVE" | "LEGACY"}}]}`, one page. Only
//! models that answer in text and can be called without provisioning
//! (`ON_DEMAND`, or through an `INFERENCE_PROFILE`) are a deployment's to name;
//! `LEGACY` is Bedrock's word for a model on its way to end of life.
//!
//! A deployment may name a cross-region inference profile
//! (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`): the list names its model
//! without the geography ([`listed_id`]).

use serde_json::Value;

use crate::ProtocolError;
use crate::listing::{ListedModel, ModelPage, object, text};

/// The geographies an inference profile's id starts with.
const GEOGRAPHIES: &[&str] = &["us", "us-gov", "eu", "apac", "jp", "au", "ca", "global"];

/// Bedrock's foundation model list.
pub fn parse_models(body: &[u8]) -> Result<ModelPage, ProtocolError> {
    let map = object(body)?;
    let Some(Value::Array(items)) = map.get("modelSummaries") else {
        return Err(ProtocolError::upstream("the model list has no `modelSummaries` array"));
    };
    Ok(ModelPage { models: items.iter().filter_map(listed).collect(), next: None })
}

fn listed(item: &Value) -> Option<ListedModel> {
    let has = |field: &str, wanted: &[&str]| {
        item.get(field)
            .and_then(Value::as_array)
            // Not stated: not held against it.
            .is_none_or(|v| v.iter().any(|x| x.as_str().is_some_and(|x| wanted.contains(&x))))
    };
    if !has("outputModalities", &["TEXT"])
        || !has("inferenceTypesSupported", &["ON_DEMAND", "INFERENCE_PROFILE"])
    {
        return None;
    }
    let status = item.get("modelLifecycle").and_then(|l| text(l, "status"));
    Some(ListedModel {
        id: text(item, "modelId")?.to_owned(),
        display_name: text(item, "modelName").map(str::to_owned),
        retiring: status.filter(|s| *s == "LEGACY").map(str::to_owned),
        retires_at: None,
    })
}

/// The id the list gives a deployment's model: an inference profile's without
/// its geography; an ARN or a model id as it is.
pub fn listed_id(upstream_model: &str) -> &str {
    match upstream_model.split_once('.') {
        Some((geo, rest)) if GEOGRAPHIES.contains(&geo) && rest.contains('.') => rest,
        _ => upstream_model,
    }
}

#[cfg(test)]
#[path = "models_tests.rs"]
mod tests;
