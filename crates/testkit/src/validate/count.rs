//! What the counting endpoints refuse, on top of what the same content would be
//! refused for in a generation ([`super::check`]).
//!
//! | vendor | rule |
//! |---|---|
//! | Anthropic | `model` and `messages` are required; no field the endpoint does not take (`max_tokens`, `stream`, sampling, `stop_sequences`, `metadata`, …: "Extra inputs are not permitted") |
//! | Gemini | only `contents` or `generateContentRequest`, not both, one of them given; `generateContentRequest.model` is `models/<model>` and its `contents` are not empty |

use serde_json::Value;

use crate::Vendor;

/// The top-level fields Anthropic's `count_tokens` takes.
const ANTHROPIC_FIELDS: [&str; 12] = [
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
    "mcp_servers",
    "cache_control",
    "output_config",
    "output_format",
    "context_management",
    "speed",
];

/// `Err(message)`: the vendor's counting endpoint would refuse `body` with a 400
/// saying `message`.
pub fn check(vendor: Vendor, model: &str, body: &Value) -> Result<(), String> {
    match vendor {
        Vendor::Anthropic => anthropic(body),
        Vendor::Gemini => gemini(model, body),
        // Chat Completions has no counting endpoint (the fake routes none).
        Vendor::OpenAi => Ok(()),
        Vendor::Bedrock => crate::bedrock::validate::check_count(model, body),
    }
}

fn anthropic(body: &Value) -> Result<(), String> {
    let Some(map) = body.as_object() else {
        return Err("Input should be a valid dictionary or object".into());
    };
    if let Some(extra) = map.keys().find(|k| !ANTHROPIC_FIELDS.contains(&k.as_str())) {
        return Err(format!("{extra}: Extra inputs are not permitted"));
    }
    for required in ["model", "messages"] {
        if !map.contains_key(required) {
            return Err(format!("{required}: Field required"));
        }
    }
    let model = map.get("model").and_then(Value::as_str).unwrap_or_default();
    super::check(Vendor::Anthropic, model, body)
}

/// `model`: the one the URL names.
fn gemini(model: &str, body: &Value) -> Result<(), String> {
    let Some(map) = body.as_object() else {
        return Err("Invalid JSON payload received. Expected an object.".into());
    };
    if let Some(unknown) =
        map.keys().find(|k| !matches!(k.as_str(), "contents" | "generateContentRequest"))
    {
        return Err(format!(
            "Invalid JSON payload received. Unknown name \"{unknown}\": Cannot find field."
        ));
    }
    match (map.get("contents"), map.get("generateContentRequest")) {
        (Some(_), Some(_)) => Err("* CountTokensRequest: contents and generate_content_request \
             are mutually exclusive"
            .into()),
        (None, None) => Err("* CountTokensRequest.contents: contents is not specified".into()),
        (Some(_), None) => super::check(Vendor::Gemini, model, body),
        (None, Some(request)) => {
            let named = request.get("model").and_then(Value::as_str).unwrap_or_default();
            let name = named.strip_prefix("models/").unwrap_or_default();
            if name.is_empty() || name.contains('/') {
                return Err("* GenerateContentRequest.model: unexpected model name format".into());
            }
            if request.get("contents").and_then(Value::as_array).is_none_or(Vec::is_empty) {
                return Err("* GenerateContentRequest.contents: contents is not specified".into());
            }
            super::check(Vendor::Gemini, name, request)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_takes_a_messages_body_without_generation_settings() {
        let ok = json!({"model": "m", "system": "s", "tools": [],
            "messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(check(Vendor::Anthropic, "m", &ok), Ok(()));
        for (field, value) in
            [("max_tokens", json!(16)), ("stream", json!(false)), ("temperature", json!(0.5))]
        {
            let mut bad = ok.clone();
            bad[field] = value;
            let err = check(Vendor::Anthropic, "m", &bad).unwrap_err();
            assert_eq!(err, format!("{field}: Extra inputs are not permitted"));
        }
        assert!(
            check(Vendor::Anthropic, "m", &json!({"model": "m"})).unwrap_err().contains("messages")
        );
        // What a generation would be refused for is refused here too.
        let blank = json!({"model": "m", "messages": [{"role": "user", "content": " "}]});
        assert!(check(Vendor::Anthropic, "m", &blank).is_err());
    }

    #[test]
    fn gemini_takes_contents_or_a_whole_request_naming_its_model() {
        let contents = json!([{"role": "user", "parts": [{"text": "hi"}]}]);
        assert_eq!(check(Vendor::Gemini, "m", &json!({"contents": contents})), Ok(()));
        let whole = json!({"generateContentRequest": {"model": "models/g", "contents": contents,
            "systemInstruction": {"parts": [{"text": "s"}]}}});
        assert_eq!(check(Vendor::Gemini, "m", &whole), Ok(()));
        for bad in [
            json!({}),
            json!({"contents": contents, "generateContentRequest": {"model": "models/g", "contents": contents}}),
            json!({"contents": contents, "systemInstruction": {"parts": [{"text": "s"}]}}),
            json!({"generateContentRequest": {"contents": contents}}),
            json!({"generateContentRequest": {"model": "g", "contents": contents}}),
            json!({"generateContentRequest": {"model": "models/g", "contents": []}}),
            json!({"generateContentRequest": {"model": "models/g",
                "contents": [{"role": "user", "parts": [{"inlineData": {"data": "aGk="}}]}]}}),
        ] {
            assert!(check(Vendor::Gemini, "m", &bad).is_err(), "{bad}");
        }
    }
}
