//! Whole responses: a chat completion → canonical ([`parse_response`],
//! [`parse_usage`]) and back ([`encode_response`]), usage, and error bodies
//! ([`parse_error`]).

use serde::Deserialize;
use serde_json::Value;

use crate::{Part, ProtocolError, Response, StopReason, TextBlock, ToolCall, Usage};

use super::request::content_parts;
use super::wire::{WireResponse, WireUsage};
use super::write::Completion;

/// Parse a complete (non-streamed) Chat Completions response from the upstream.
pub fn parse_response(body: &[u8]) -> Result<Response, ProtocolError> {
    let w: WireResponse =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    let mut content = Vec::new();
    let mut stop_reason = None;
    if let Some(choice) = w.choices.into_iter().next() {
        stop_reason = choice.finish_reason.as_deref().map(StopReason::from_openai);
        if let Some(mut m) = choice.message {
            let reasoning = m.reasoning_text();
            if let Some(r) = reasoning {
                content.push(Part::Thinking { text: r, signature: None });
            }
            let parts = content_parts(m.content, &|| "choices[0].message".to_owned())
                .map_err(|e| ProtocolError::upstream(e.to_string()))?;
            // Only model output belongs in a response.
            content.extend(parts.into_iter().filter(|p| matches!(p, Part::Text(_))));
            if let Some(refusal) = m.refusal.filter(|r| !r.is_empty()) {
                content.push(Part::Text(TextBlock::new(refusal)));
                stop_reason = Some(StopReason::Refusal);
            }
            for c in m.tool_calls {
                content.push(Part::ToolCall(ToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                    signature: None,
                }));
            }
        }
    }
    Ok(Response {
        id: w.id,
        model: w.model,
        content,
        stop_reason,
        stop_sequence: None,
        usage: w.usage.map(|u| u.canonical()).unwrap_or_default(),
    })
}

/// Only the usage of a chat completion, for a body forwarded unchanged. The body
/// was produced by the upstream and is passed on as it is; its structure is
/// scanned (strings closed, brackets balanced) but only the usage is parsed.
pub fn parse_usage(body: &[u8]) -> Result<Option<Usage>, ProtocolError> {
    #[derive(Deserialize)]
    struct UsageOnly {
        #[serde(default)]
        usage: Option<WireUsage>,
    }
    // Usually found by a scan, and only the usage object read: by its bytes where
    // it holds plain counts, else parsed.
    if let Some(usage) = crate::util::top_level_value(body, "usage").and_then(|r| body.get(r)) {
        if let Some(read) = read_usage(usage) {
            return Ok(read.map(|u| u.canonical()));
        }
        let u: Option<WireUsage> =
            serde_json::from_slice(usage).map_err(|e| ProtocolError::upstream(e.to_string()))?;
        return Ok(u.map(|u| u.canonical()));
    }
    let w: UsageOnly =
        serde_json::from_slice(body).map_err(|e| ProtocolError::upstream(e.to_string()))?;
    Ok(w.usage.map(|u| u.canonical()))
}

/// A usage object's counts read off its bytes: what serde would make of it, or
/// `None` (serde decides) where anything it reads is not a plain count or `null`
/// (another form of number, a key given twice, details that are not objects).
/// Members it does not read are scanned, as the rest of the body is. Parsing the
/// object cost about 5,000 instructions a request on the fast path; this, a tenth.
pub(super) fn read_usage(object: &[u8]) -> Option<Option<WireUsage>> {
    if object == b"null" {
        return Some(None);
    }
    let mut usage = WireUsage::default();
    let mut ok = true;
    let mut seen = [false; 5];
    let close = crate::util::members(object, |key, span| {
        let Some(value) = object.get(span) else {
            ok = false;
            return;
        };
        let slot = match key {
            b"prompt_tokens" => 0,
            b"completion_tokens" => 1,
            b"prompt_tokens_details" => 2,
            b"completion_tokens_details" => 3,
            b"prompt_cache_hit_tokens" => 4,
            _ => {
                ok &= plain_value(value);
                return;
            }
        };
        if let Some(seen) = seen.get_mut(slot) {
            ok &= !std::mem::replace(seen, true);
        }
        let read = match slot {
            0 => count(value).map(|c| usage.prompt_tokens = c),
            1 => count(value).map(|c| usage.completion_tokens = c),
            2 => detail(value, b"cached_tokens").map(|d| {
                usage.prompt_tokens_details =
                    d.map(|cached_tokens| super::wire::WirePromptDetails { cached_tokens });
            }),
            3 => detail(value, b"reasoning_tokens").map(|d| {
                usage.completion_tokens_details = d.map(|reasoning_tokens| {
                    super::wire::WireCompletionDetails { reasoning_tokens }
                });
            }),
            _ => count(value).map(|c| usage.prompt_cache_hit_tokens = c),
        };
        ok &= read.is_some();
    });
    (close.is_some() && ok).then_some(Some(usage))
}

/// A JSON count as serde reads an `Option<u64>`: `null`, or digits without a
/// leading zero that fit. `None` for anything else.
fn count(value: &[u8]) -> Option<Option<u64>> {
    match value {
        b"null" => Some(None),
        b"0" => Some(Some(0)),
        [b'1'..=b'9', rest @ ..] if rest.iter().all(u8::is_ascii_digit) => {
            std::str::from_utf8(value).ok()?.parse().ok().map(Some)
        }
        _ => None,
    }
}

/// A details object (or `null`) and the one count read from it: `Some(None)` for
/// `null`, `Some(Some(count))` for an object (its count `None` when absent).
fn detail(value: &[u8], key: &[u8]) -> Option<Option<Option<u64>>> {
    if value == b"null" {
        return Some(None);
    }
    let (mut found, mut ok, mut seen) = (None, true, false);
    crate::util::members(value, |k, span| {
        let v = value.get(span).unwrap_or_default();
        if k == key {
            ok &= !std::mem::replace(&mut seen, true);
            match count(v) {
                Some(c) => found = c,
                None => ok = false,
            }
        } else {
            ok &= plain_value(v);
        }
    })?;
    ok.then_some(Some(found))
}

/// Whether an unread value looks like the JSON value serde would skip: a number's
/// characters, a literal, or a string, object or array (which the scan closed).
fn plain_value(value: &[u8]) -> bool {
    match value.first() {
        Some(b'"' | b'{' | b'[') => true,
        Some(b'-' | b'0'..=b'9') => json_number(value),
        _ => matches!(value, b"null" | b"true" | b"false"),
    }
}

/// Whether `value` is a JSON number: `-? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?`.
fn json_number(value: &[u8]) -> bool {
    fn digits(s: &[u8]) -> usize {
        s.iter().take_while(|b| b.is_ascii_digit()).count()
    }
    let mut rest = value.strip_prefix(b"-").unwrap_or(value);
    rest = match rest {
        [b'0', tail @ ..] => tail,
        [b'1'..=b'9', ..] => rest.get(digits(rest)..).unwrap_or_default(),
        _ => return false,
    };
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = digits(fraction);
        if n == 0 {
            return false;
        }
        rest = fraction.get(n..).unwrap_or_default();
    }
    if let Some(exponent) = rest.strip_prefix(b"e").or_else(|| rest.strip_prefix(b"E")) {
        let exponent =
            exponent.strip_prefix(b"+").or_else(|| exponent.strip_prefix(b"-")).unwrap_or(exponent);
        let n = digits(exponent);
        if n == 0 {
            return false;
        }
        rest = exponent.get(n..).unwrap_or_default();
    }
    rest.is_empty()
}

pub(super) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Render a canonical response as a Chat Completions response for an OpenAI
/// client: a struct that borrows `resp`, to serialize.
pub fn encode_response(resp: &Response) -> Completion<'_> {
    Completion::of(resp, now_secs())
}

/// The message of an OpenAI-style error body (`{"error":{"message"}}`, `{"error":
/// "…"}` or `{"message"}`, as compatible servers vary); `None` when it has none.
pub fn parse_error(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let msg = match v.get("error") {
        Some(Value::String(s)) => Some(s.clone()),
        Some(e) => e.get("message").and_then(Value::as_str).map(str::to_owned),
        None => v.get("message").and_then(Value::as_str).map(str::to_owned),
    };
    msg.filter(|m| !m.is_empty())
}
