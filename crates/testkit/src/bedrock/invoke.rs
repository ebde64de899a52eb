//! Claude through Bedrock's `InvokeModel` (`/model/{modelId}/invoke`,
//! `/invoke-with-response-stream`), as the fake checks and answers it: Claude's
//! own body with Bedrock's version field, no `model` and no `stream`, beta
//! flags in the body (`anthropic_beta`) from the set Bedrock takes; a stream
//! of event-stream `chunk` messages, each one of Claude's events in base64,
//! the last with Bedrock's invocation metrics.

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use super::eventstream;
use crate::vertex::{self, ClaudeRules};

/// The `anthropic_version` InvokeModel takes for Claude.
pub const ANTHROPIC_VERSION: &str = "bedrock-2023-05-31";

/// How Bedrock prefixes Claude's own refusals.
pub const MODEL_ERRORS: &str = "The model returned the following errors:";

/// The model ID and whether it streams, for InvokeModel's two routes (`path`
/// as sent); `None` for any other path.
pub fn route(path: &str) -> Option<(String, bool)> {
    let (model, action) = super::model_action(path)?;
    let stream = match action {
        "invoke" => false,
        "invoke-with-response-stream" => true,
        _ => return None,
    };
    Some((model, stream))
}

/// The flags Bedrock documents for Claude's Messages body.
pub fn default_rules() -> ClaudeRules {
    let betas = [
        "computer-use-2025-01-24",
        "token-efficient-tools-2025-02-19",
        "interleaved-thinking-2025-05-14",
        "output-128k-2025-02-19",
        "dev-full-thinking-2025-05-14",
        "context-1m-2025-08-07",
        "context-management-2025-06-27",
        "effort-2025-11-24",
        "tool-search-tool-2025-10-19",
        "tool-examples-2025-10-29",
    ];
    ClaudeRules { betas: betas.map(str::to_owned).to_vec(), refused_fields: Vec::new() }
}

/// What InvokeModel refuses in a Claude body before Claude's own rules: the
/// version, `model` and `stream` (its schema's words), beta flags it does not
/// take, fields the `rules` refuse or whose flag is missing (Claude's words,
/// after Bedrock's prefix). `Ok`: the body as Anthropic's API would take it,
/// for its rules to be checked on.
pub fn claude_body(rules: &ClaudeRules, body: &Value) -> Result<Value, String> {
    let extraneous = |key: &str| {
        format!(
            "Malformed input request: #: extraneous key [{key}] is not permitted, please \
             reformat your input and try again."
        )
    };
    let Some(map) = body.as_object() else {
        return Err("Malformed input request: expected type: JSONObject".into());
    };
    match map.get("anthropic_version").and_then(Value::as_str) {
        Some(ANTHROPIC_VERSION) => {}
        Some(other) => {
            return Err(format!("{MODEL_ERRORS} anthropic_version: {other:?} is invalid"));
        }
        None => {
            return Err("Malformed input request: #: required key [anthropic_version] not \
                        found, please reformat your input and try again."
                .into());
        }
    }
    for key in ["model", "stream"] {
        if map.contains_key(key) {
            return Err(extraneous(key));
        }
    }
    let flags = match map.get("anthropic_beta") {
        None => Vec::new(),
        Some(Value::Array(flags)) => flags
            .iter()
            .map(|f| f.as_str().map(str::to_owned).ok_or("anthropic_beta: a flag is not a string"))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{MODEL_ERRORS} {e}"))?,
        Some(_) => {
            return Err(format!("{MODEL_ERRORS} anthropic_beta: Input should be a valid list"));
        }
    };
    if let Some(flag) = flags.iter().find(|f| !rules.betas.contains(f)) {
        return Err(format!("{MODEL_ERRORS} invalid beta flag {flag}"));
    }
    let mut anthropic = map.clone();
    anthropic.remove("anthropic_version");
    anthropic.remove("anthropic_beta");
    let anthropic = Value::Object(anthropic);
    vertex::check_claude(rules, Some(&flags.join(",")), &anthropic, false)
        .map_err(|m| format!("{MODEL_ERRORS} {m}"))?;
    Ok(anthropic)
}

/// `CountTokens` of an InvokeModel body (`{"input": {"invokeModel": {"body":
/// base64}}}`): the body it carries, decoded; `None` when the count is not of
/// that form.
pub fn counted_body(count: &Value) -> Option<Result<Value, String>> {
    let blob = count.pointer("/input/invokeModel/body")?;
    let decoded = blob
        .as_str()
        .ok_or_else(|| "input.invokeModel.body: not a blob".to_owned())
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD.decode(b).map_err(|e| e.to_string())
        })
        .and_then(|bytes| serde_json::from_slice(&bytes).map_err(|e| e.to_string()));
    Some(decoded.map_err(|e| format!("Malformed input request: {e}")))
}

/// Claude's stream, `frames` as its SSE events, framed as
/// InvokeModelWithResponseStream frames it: one `chunk` per event, the last
/// (`message_stop`) carrying Bedrock's invocation metrics.
pub fn chunks(frames: &[String]) -> Vec<Bytes> {
    frames
        .iter()
        .filter_map(|frame| {
            let data = frame.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
            let mut event: Value = serde_json::from_str(data).ok()?;
            if event["type"] == "message_stop" {
                event["amazon-bedrock-invocationMetrics"] = json!({
                    "inputTokenCount": 12, "outputTokenCount": 5,
                    "invocationLatency": 412, "firstByteLatency": 187
                });
            }
            let bytes = base64::engine::general_purpose::STANDARD.encode(event.to_string());
            Some(eventstream::event("chunk", &json!({ "bytes": bytes })))
        })
        .collect()
}
