//! OpenAI's reasoning models (o-series, GPT-5 and later) refuse the sampling
//! parameters ("Unsupported value: 'temperature' does not support 0.2 with
//! this model. Only the default (1) value is supported."), on Chat Completions
//! and the Responses API alike, and clients send them (GitHub Copilot CLI:
//! `temperature: 0`, `top_p: 0.95` on every request). For such a model
//! ([`ModelTraits::sampling`] false) they are left out, and the record says so.

use serde_json::{Map, Value};

use crate::{FieldEdit, ModelTraits, Request};

/// The sampling parameters OpenAI's APIs take.
const SAMPLERS: [&str; 2] = ["temperature", "top_p"];

/// Whether a client's own `body` sets one the model refuses.
pub fn may_drop(body: &[u8], traits: ModelTraits) -> bool {
    !traits.sampling
        && SAMPLERS.iter().any(|field| crate::util::top_level_value(body, field).is_some())
}

/// The fast-path edits that leave them out of a client's own `body`.
pub fn edits(body: &Map<String, Value>, traits: ModelTraits) -> impl Iterator<Item = FieldEdit> {
    SAMPLERS
        .into_iter()
        .filter(move |field| !traits.sampling && body.contains_key(*field))
        .map(|field| (field, None))
}

/// Leave them out of a translated `body`.
pub fn strip(body: &mut Value, traits: ModelTraits) {
    if let (false, Value::Object(map)) = (traits.sampling, body) {
        for field in SAMPLERS {
            map.remove(field);
        }
    }
}

/// Leave them out of a typed body (the same fields as [`strip`]).
pub(super) fn strip_typed(body: &mut super::request_out::Body<'_>, traits: ModelTraits) {
    if !traits.sampling {
        body.temperature = None;
        body.top_p = None;
    }
}

/// For the record: those `req` asked for that the model refuses.
pub fn dropped(req: &Request, traits: ModelTraits) -> Vec<String> {
    if traits.sampling {
        return Vec::new();
    }
    let asked = [("temperature", req.temperature.is_some()), ("top_p", req.top_p.is_some())];
    asked
        .into_iter()
        .filter(|(_, set)| *set)
        .map(|(field, _)| format!("{field}: dropped (the model takes no sampling parameters)"))
        .collect()
}
