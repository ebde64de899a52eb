//! Whole responses: a `ConverseResponse` → canonical ([`parse_response`],
//! [`parse_usage`]), error bodies ([`parse_error`]) and the class of a Bedrock
//! error type ([`error_kind`]). The pieces the stream decoder shares live here too.

use serde::Deserialize;
use serde_json::Value;

use crate::{Part, ProtocolError, Response, StopReason, TextBlock, ToolCall, Usage, util};

use super::wire::{Citations, Reasoning, ToolUse, WireResponse, WireUsage};

/// The response id: Converse names none (the `x-amzn-RequestId` header is the
/// caller's to use).
pub(super) const RESPONSE_ID: &str = "bedrock-response";

/// Converse's `stopReason` → canonical; unknown values read as `EndTurn`, as the
/// other wires' do.
pub(super) fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "tool_use" => StopReason::ToolUse,
        // Claude's context window filled up: the answer was cut, as Anthropic reads it.
        "max_tokens" | "model_context_window_exceeded" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        // A guardrail or the model's own filter cut the answer.
        "guardrail_intervened" | "content_filtered" => StopReason::ContentFilter,
        "malformed_model_output" | "malformed_tool_use" => StopReason::Error,
        _ => StopReason::EndTurn,
    }
}

/// The stop sequence Claude says it matched, asked for through
/// `additionalModelResponseFieldPaths`.
pub(super) fn stop_sequence(fields: Option<&Value>) -> Option<String> {
    fields?.get("stop_sequence")?.as_str().map(str::to_owned)
}

/// The class of a Bedrock error type, as an HTTP error's `x-amzn-ErrorType`
/// header (`ThrottlingException:http://…`) or a stream exception's
/// `:exception-type` (`throttlingException`) names it, in the words the gateway
/// reads an upstream's error kind by (Anthropic's: `overloaded_error`,
/// `rate_limit_error`, …). Unknown types are `api_error`.
///
/// ```
/// use switchyard_protocol::bedrock::error_kind;
///
/// assert_eq!(error_kind("serviceUnavailableException"), "overloaded_error");
/// assert_eq!(error_kind("ThrottlingException:http://internal.amazon.com/coral/"), "rate_limit_error");
/// ```
pub fn error_kind(error_type: &str) -> &'static str {
    let name = error_type.split(':').next().unwrap_or_default().trim();
    match name.to_ascii_lowercase().as_str() {
        "throttlingexception" => "rate_limit_error",
        // Capacity: try again later, or elsewhere.
        "serviceunavailableexception" | "modelnotreadyexception" => "overloaded_error",
        "validationexception" => "invalid_request_error",
        "accessdeniedexception" => "permission_error",
        "resourcenotfoundexception" => "not_found_error",
        "modeltimeoutexception" => "timeout_error",
        // `internalServerException`, `modelStreamErrorException`, `modelErrorException`, …
        _ => "api_error",
    }
}

/// One content block of an answer; `None` for a kind the canonical model has no
/// place for in an answer (images, guard content, …), skipped.
pub(super) fn block_to_part(block: Value) -> Result<Option<Part>, String> {
    let Value::Object(map) = block else {
        return Err("a content block is not an object".into());
    };
    let at = |e: serde_json::Error, kind: &str| format!("`{kind}` block: {e}");
    for (kind, value) in map {
        let part = match kind.as_str() {
            "text" => match value {
                Value::String(text) => Part::Text(TextBlock::new(text)),
                _ => return Err("`text` block: not a string".into()),
            },
            "toolUse" => {
                let call: ToolUse = serde_json::from_value(value).map_err(|e| at(e, &kind))?;
                Part::ToolCall(ToolCall {
                    id: call.tool_use_id,
                    name: call.name,
                    arguments: arguments(&call.input),
                    signature: None,
                })
            }
            "reasoningContent" => {
                let reasoning: Reasoning =
                    serde_json::from_value(value).map_err(|e| at(e, &kind))?;
                match (reasoning.reasoning_text, reasoning.redacted_content) {
                    (Some(r), _) => Part::Thinking {
                        text: r.text,
                        signature: r.signature.filter(|s| !s.is_empty()),
                    },
                    (None, Some(data)) => Part::RedactedThinking { data },
                    (None, None) => continue,
                }
            }
            // Text with its sources (a document with citations on): the text is kept.
            "citationsContent" => {
                let cited: Citations = serde_json::from_value(value).map_err(|e| at(e, &kind))?;
                let text: String = cited.content.into_iter().filter_map(|c| c.text).collect();
                Part::Text(TextBlock::new(text))
            }
            _ => continue,
        };
        return Ok(Some(part));
    }
    Ok(None)
}

/// A call's `input` as argument text; a call with no input takes none (`{}`).
pub(super) fn arguments(input: &Value) -> String {
    if input.is_null() { "{}".to_owned() } else { util::value_to_arguments(input) }
}

/// Parse a complete Converse answer. An error body (`{"message": …}`, which
/// Bedrock sends with a status that says it failed) is
/// [`ProtocolError::UpstreamError`].
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let wire: WireResponse = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    let Some(output) = wire.output else {
        return Err(match wire.message {
            Some(message) => ProtocolError::UpstreamError { kind: "api_error".into(), message },
            None => ProtocolError::upstream("a Converse answer without `output`"),
        });
    };
    let mut content = Vec::new();
    for (i, block) in output.message.map(|m| m.content).unwrap_or_default().into_iter().enumerate()
    {
        let part = block_to_part(block)
            .map_err(|e| ProtocolError::MalformedUpstream(format!("content[{i}]: {e}")))?;
        content.extend(part);
    }
    Ok(Response {
        id: RESPONSE_ID.to_owned(),
        model: String::new(),
        content,
        stop_reason: wire.stop_reason.as_deref().map(stop_reason),
        stop_sequence: stop_sequence(wire.additional_model_response_fields.as_ref()),
        usage: wire.usage.map(WireUsage::to_canonical).unwrap_or_default(),
    })
}

/// Only the usage of a Converse answer, scanned rather than parsed where the body
/// allows (an error body is still an error).
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    if let Some(usage) = util::top_level_value(body, "usage").and_then(|r| body.get(r)) {
        let usage: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(ProtocolError::upstream)?;
        return Ok(usage.map(WireUsage::to_canonical));
    }
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(default)]
        output: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    let w: UsageOnly = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    match (w.output, w.message) {
        (None, Some(message)) => {
            Err(ProtocolError::UpstreamError { kind: "api_error".into(), message })
        }
        _ => Ok(w.usage.map(WireUsage::to_canonical)),
    }
}

/// The message of a Bedrock error body (`{"message": …}`; some AWS services write
/// `Message`). Its type is in the `x-amzn-ErrorType` header, which the caller
/// reads ([`error_kind`]).
pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let message = value.get("message").or_else(|| value.get("Message"))?.as_str()?;
    Some(message.to_owned())
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
