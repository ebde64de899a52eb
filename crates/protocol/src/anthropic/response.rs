//! Whole (non-streamed) responses: the upstream's Messages response → canonical
//! ([`parse_response`], [`parse_usage`]), canonical → a Messages response for an
//! Anthropic client ([`encode_response`]), and error bodies ([`parse_error`]).

use serde::Deserialize;
use serde_json::Value;

use crate::{ProtocolError, Response, StopReason, Usage};

use super::wire::{InBlock, InResponse, WireError, WireUsage, at, block_to_part};
use super::write::Message;

/// Parse a complete (non-streamed) Messages API response from the upstream.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let value: Value = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        let error: WireError = value
            .get("error")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(ProtocolError::upstream)?
            .unwrap_or(WireError { kind: "error".into(), message: String::new() });
        return Err(ProtocolError::UpstreamError { kind: error.kind, message: error.message });
    }
    let resp: InResponse = serde_json::from_value(value).map_err(ProtocolError::upstream)?;
    let mut content = Vec::with_capacity(resp.content.len());
    for (i, raw) in resp.content.into_iter().enumerate() {
        let path = format!("content[{i}]");
        let block = at::<InBlock>(raw, &path).map_err(ProtocolError::MalformedUpstream)?;
        match block {
            // Only model output belongs in a response (server-tool blocks are the
            // provider's own business).
            InBlock::Image { .. }
            | InBlock::Document { .. }
            | InBlock::ToolResult { .. }
            | InBlock::Other => {}
            block => content
                .push(block_to_part(block, None, &path).map_err(ProtocolError::MalformedUpstream)?),
        }
    }
    Ok(Response {
        id: resp.id,
        model: resp.model,
        content,
        stop_reason: resp.stop_reason.as_deref().map(StopReason::from_anthropic),
        stop_sequence: resp.stop_sequence,
        usage: resp.usage.unwrap_or_default().to_canonical(),
    })
}

/// Only the usage of a Messages response, for a body forwarded unchanged (an
/// `error` body is still an error). Scanned, not parsed, but for the usage.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(rename = "type", default)]
        kind: Option<String>,
        #[serde(default)]
        error: Option<WireError>,
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    let kind = crate::util::top_level_value(body, "type").and_then(|r| body.get(r));
    if kind != Some(b"\"error\"")
        && let Some(usage) = crate::util::top_level_value(body, "usage").and_then(|r| body.get(r))
    {
        let u: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(ProtocolError::upstream)?;
        return Ok(u.map(WireUsage::to_canonical));
    }
    let w: UsageOnly = serde_json::from_slice(body).map_err(ProtocolError::upstream)?;
    if w.kind.as_deref() == Some("error") {
        let error = w.error.unwrap_or(WireError { kind: "error".into(), message: String::new() });
        return Err(ProtocolError::UpstreamError { kind: error.kind, message: error.message });
    }
    Ok(w.usage.map(WireUsage::to_canonical))
}

/// Render a canonical response as a Messages API response for an Anthropic
/// client: a struct that borrows `resp`, to serialize.
pub fn encode_response(resp: &Response) -> Message<'_> {
    Message::of(resp)
}

/// The message of an Anthropic error body (`{"type":"error","error":{"type","message"}}`).
pub fn parse_error(body: &[u8]) -> Option<String> {
    let value: Value = serde_json::from_slice(body).ok()?;
    if value.get("type")?.as_str()? != "error" {
        return None;
    }
    Some(value.get("error")?.get("message")?.as_str()?.to_owned())
}

#[cfg(test)]
#[path = "response_tests.rs"]
mod tests;
