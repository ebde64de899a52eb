//! What the real APIs refuse, checked on every request a fake is routed, so a
//! gateway that sends such a body fails its tests the way it would fail in
//! production: a 400 in the vendor's error shape, worded as the provider words it.
//!
//! Only rules the providers are known to enforce are checked, and only where a
//! translation could break them: the request fields each API defines, content
//! blocks and the sampling parameters a Claude model takes together here,
//! Gemini's image settings (`responseModalities`, `imageConfig`) in
//! [`generation`], the conversation's shape
//! (tool-call pairing and ids, thinking in tool loops) in [`conversation`]; a fake
//! stricter than its API would make tests fail for nothing.

pub mod conversation;
pub mod count;
pub mod flavour;
pub mod generation;

use serde_json::Value;

use crate::Vendor;

/// `Err(message)`: the provider would refuse `body`, sent for `model`, with a 400
/// saying `message`. A body that is not JSON (`Null`) passes: the route decides
/// what it answers.
pub fn check(vendor: Vendor, model: &str, body: &Value) -> Result<(), String> {
    top_level(vendor, body)?;
    match vendor {
        // Converse's rules, conversation included, live with the rest of its wire.
        Vendor::Bedrock => return crate::bedrock::validate::check(model, body),
        Vendor::OpenAi => openai(body),
        Vendor::Anthropic => anthropic(body).and_then(|()| anthropic_samplers(model, body)),
        Vendor::Gemini => gemini(body).and_then(|()| generation::check(model, body)),
    }?;
    conversation::refusal(vendor, model, body).map_or(Ok(()), Err)
}

/// The request fields each API defines (its reference's request body); every
/// one of them refuses another. Gemini's JSON mapping takes each field in
/// lowerCamelCase and in its proto name.
const OPENAI_FIELDS: [&str; 35] = [
    "model",
    "messages",
    "audio",
    "frequency_penalty",
    "function_call",
    "functions",
    "logit_bias",
    "logprobs",
    "max_completion_tokens",
    "max_tokens",
    "metadata",
    "modalities",
    "n",
    "parallel_tool_calls",
    "prediction",
    "presence_penalty",
    "prompt_cache_key",
    "prompt_cache_retention",
    "reasoning_effort",
    "response_format",
    "safety_identifier",
    "seed",
    "service_tier",
    "stop",
    "store",
    "stream",
    "stream_options",
    "temperature",
    "tool_choice",
    "tools",
    "top_logprobs",
    "top_p",
    "user",
    "verbosity",
    "web_search_options",
];

const ANTHROPIC_FIELDS: [&str; 22] = [
    "model",
    "messages",
    "max_tokens",
    "cache_control",
    "container",
    "context_management",
    "inference_geo",
    "mcp_servers",
    "metadata",
    "output_config",
    "output_format",
    "service_tier",
    "speed",
    "stop_sequences",
    "stream",
    "system",
    "temperature",
    "thinking",
    "tool_choice",
    "tools",
    "top_k",
    "top_p",
];

const GEMINI_FIELDS: [&str; 13] = [
    "model",
    "contents",
    "tools",
    "toolConfig",
    "tool_config",
    "safetySettings",
    "safety_settings",
    "systemInstruction",
    "system_instruction",
    "generationConfig",
    "generation_config",
    "cachedContent",
    "cached_content",
];

/// A field the API does not define is refused, worded as the provider words it.
fn top_level(vendor: Vendor, body: &Value) -> Result<(), String> {
    let Some(map) = body.as_object() else { return Ok(()) };
    let known: &[&str] = match vendor {
        Vendor::OpenAi => &OPENAI_FIELDS,
        Vendor::Anthropic => &ANTHROPIC_FIELDS,
        Vendor::Gemini => &GEMINI_FIELDS,
        // Not known to be refused by Converse: a fake stricter than its API would
        // fail tests for nothing.
        Vendor::Bedrock => return Ok(()),
    };
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(field) => Err(match vendor {
            Vendor::OpenAi => format!("Unrecognized request argument supplied: {field}"),
            Vendor::Anthropic => format!("{field}: Extra inputs are not permitted"),
            Vendor::Gemini | Vendor::Bedrock => format!(
                "Invalid JSON payload received. Unknown name \"{field}\": Cannot find field."
            ),
        }),
    }
}

fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    v.get(key).and_then(Value::as_array).into_iter().flatten().enumerate()
}

fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

// ---------------------------------------------------------------------------
// OpenAI Chat Completions

/// The content part types Chat Completions defines.
const OPENAI_PART_TYPES: [&str; 5] = ["text", "image_url", "input_audio", "file", "refusal"];

fn openai(body: &Value) -> Result<(), String> {
    for (i, message) in items(body, "messages") {
        let Some(parts) = message.get("content").and_then(Value::as_array) else { continue };
        for (j, part) in parts.iter().enumerate() {
            let at = format!("messages[{i}].content[{j}]");
            let kind = str_at(part, "type").unwrap_or_default();
            if !OPENAI_PART_TYPES.contains(&kind) {
                return Err(format!(
                    "Invalid value: '{kind}'. Supported values are: 'text', 'image_url', \
                     'input_audio', 'refusal', 'audio', and 'file'. ({at}.type)"
                ));
            }
            if kind == "file" {
                let file = part.get("file");
                let has = |key| file.and_then(|f| str_at(f, key)).is_some_and(|s| !s.is_empty());
                if !has("file_data") && !has("file_id") {
                    return Err(format!(
                        "Missing required parameter: '{at}.file.file_data' or '{at}.file.file_id'."
                    ));
                }
            }
        }
    }
    Ok(())
}

/// What OpenAI's reasoning models (`o1`, `o3-mini`, `gpt-5`, `gpt-5.1-codex`…;
/// a routing prefix such as `openai/` skipped) refuse, on Chat Completions and
/// the Responses API: a sampling parameter other than its default, and (Chat,
/// `chat`) the older `max_tokens`. OpenAI's own rule: a fake with a
/// [`Flavour`](crate::Flavour) is another vendor's server, and skips it.
pub fn openai_reasoning(model: &str, body: &Value, chat: bool) -> Result<(), String> {
    let name = model.rsplit('/').next().unwrap_or(model);
    let o_series =
        name.strip_prefix('o').is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    let gpt = name
        .strip_prefix("gpt-")
        .and_then(|r| r.split(['.', '-']).next())
        .and_then(|major| major.parse::<u32>().ok())
        .is_some_and(|major| major >= 5);
    if !o_series && !gpt {
        return Ok(());
    }
    if chat && body.get("max_tokens").is_some() {
        return Err("Unsupported parameter: 'max_tokens' is not supported with this model. \
                    Use 'max_completion_tokens' instead."
            .into());
    }
    for field in ["temperature", "top_p"] {
        match body.get(field) {
            None | Some(Value::Null) => {}
            Some(v) if v.as_f64() == Some(1.0) => {}
            Some(v) => {
                return Err(format!(
                    "Unsupported value: '{field}' does not support {v} with this model. Only \
                     the default (1) value is supported."
                ));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Anthropic Messages

fn anthropic(body: &Value) -> Result<(), String> {
    if let Some(system) = body.get("system").and_then(Value::as_array) {
        for block in system {
            anthropic_text(block, "system")?;
        }
    }
    let messages: Vec<(usize, &Value)> = items(body, "messages").collect();
    let last = messages.len().saturating_sub(1);
    for (i, message) in messages {
        let final_assistant = i == last && str_at(message, "role") == Some("assistant");
        let empty = |content: &Value| match content {
            Value::String(s) => s.is_empty(),
            Value::Array(blocks) => blocks.is_empty(),
            _ => false,
        };
        let content = message.get("content").unwrap_or(&Value::Null);
        if empty(content) && !final_assistant {
            return Err(format!(
                "messages.{i}: all messages must have non-empty content except for the \
                 optional final assistant message"
            ));
        }
        match content {
            Value::String(s) if !s.is_empty() && s.trim().is_empty() => {
                return Err(BLANK_TEXT.to_owned());
            }
            Value::Array(blocks) => {
                for (j, block) in blocks.iter().enumerate() {
                    anthropic_block(block, &format!("messages.{i}.content.{j}"))?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Claude from Opus 4.1 on refuses `temperature` and `top_p` together.
fn anthropic_samplers(model: &str, body: &Value) -> Result<(), String> {
    let set = |field| body.get(field).is_some_and(|v| !v.is_null());
    if takes_one_sampler(model) && set("temperature") && set("top_p") {
        return Err("`temperature` and `top_p` cannot both be specified for this model. \
                    Please use only one."
            .to_owned());
    }
    Ok(())
}

/// Whether a Claude id names Opus 4.1 or a later model (`claude-opus-4-1-20250805`,
/// `claude-sonnet-4-5@20250929`, `anthropic.claude-haiku-4-5-20251001-v1:0`,
/// `claude-opus-4-7`), read here on its own rather than with the gateway's parser,
/// so a mistake there does not hide here. Claude 3.x ids put the version first
/// (`claude-3-7-sonnet`); Opus and Sonnet 4.0 end at the date
/// (`claude-opus-4-20250514`) or in `-4-0`.
fn takes_one_sampler(model: &str) -> bool {
    let Some(at) = model.find("claude-") else { return false };
    let mut numbers = model[at + "claude-".len()..]
        .split(['-', '@', ':', '.'])
        .skip_while(|part| part.parse::<u32>().is_err())
        .map_while(|part| part.parse::<u32>().ok().filter(|n| *n < 100));
    let major = numbers.next().unwrap_or(0);
    let minor = numbers.next().unwrap_or(0);
    (major, minor) >= (4, 1)
}

const BLANK_TEXT: &str = "messages: text content blocks must contain non-whitespace text";

/// A text block: not empty, and not only whitespace.
fn anthropic_text(block: &Value, field: &str) -> Result<(), String> {
    if str_at(block, "type") != Some("text") {
        return Ok(());
    }
    match str_at(block, "text") {
        Some("") => Err(format!("{field}: text content blocks must be non-empty")),
        Some(t) if t.trim().is_empty() => {
            Err(format!("{field}: text content blocks must contain non-whitespace text"))
        }
        _ => Ok(()),
    }
}

fn anthropic_block(block: &Value, at: &str) -> Result<(), String> {
    anthropic_text(block, "messages")?;
    match str_at(block, "type") {
        Some("document") => anthropic_document(block, at),
        Some("tool_result") => {
            for (k, inner) in items(block, "content") {
                anthropic_block(inner, &format!("{at}.content.{k}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// A `document` block's source, as the API reads it: a base64 PDF, a URL, plain
/// text, content blocks or a Files API file.
fn anthropic_document(block: &Value, at: &str) -> Result<(), String> {
    let source = block.get("source").unwrap_or(&Value::Null);
    let filled = |key| str_at(source, key).is_some_and(|s| !s.is_empty());
    match str_at(source, "type") {
        Some("base64") => {
            if str_at(source, "media_type") != Some("application/pdf") {
                return Err(format!(
                    "{at}.source.base64.media_type: Input should be 'application/pdf'"
                ));
            }
            if !filled("data") {
                return Err(format!("{at}.source.base64.data: Field required"));
            }
        }
        Some("url") if !filled("url") => {
            return Err(format!("{at}.source.url.url: Field required"));
        }
        Some("text") if !filled("data") => {
            return Err(format!("{at}.source.text.data: Field required"));
        }
        Some("file") if !filled("file_id") => {
            return Err(format!("{at}.source.file.file_id: Field required"));
        }
        Some("url" | "text" | "file" | "content") => {}
        _ => {
            return Err(format!(
                "{at}.source: Input tag does not match any of the expected tags: 'base64', \
                 'content', 'file', 'text', 'url'"
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Gemini generateContent

fn gemini(body: &Value) -> Result<(), String> {
    for (i, content) in items(body, "contents") {
        for (j, part) in items(content, "parts") {
            let at = format!("contents[{i}].parts[{j}]");
            if let Some(blob) = part.get("inlineData") {
                if str_at(blob, "mimeType").is_none_or(str::is_empty) {
                    return Err(format!(
                        "* GenerateContentRequest.{at}.inline_data.mime_type: required field is not set"
                    ));
                }
                if str_at(blob, "data").is_none_or(str::is_empty) {
                    return Err(format!(
                        "* GenerateContentRequest.{at}.inline_data.data: required field is not set"
                    ));
                }
            }
            if let Some(file) = part.get("fileData")
                && str_at(file, "fileUri").is_none_or(str::is_empty)
            {
                return Err(format!(
                    "* GenerateContentRequest.{at}.file_data.file_uri: required field is not set"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_an_api_does_not_define_are_refused() {
        let chat = json!({"model": "m", "messages": [], "prompt_cache_key": "k", "store": true,
                          "safety_identifier": "s", "service_tier": "auto"});
        assert_eq!(check(Vendor::OpenAi, "m", &chat), Ok(()));
        let err = check(Vendor::OpenAi, "m", &json!({"model": "m", "messages": [], "x_extra": 1}));
        assert_eq!(err, Err("Unrecognized request argument supplied: x_extra".into()));
        let anthropic =
            json!({"model": "m", "messages": [], "max_tokens": 1, "service_tier": "auto"});
        assert_eq!(check(Vendor::Anthropic, "m", &anthropic), Ok(()));
        for field in ["prompt_cache_key", "store", "safety_identifier", "user"] {
            let mut body = anthropic.clone();
            body[field] = json!("x");
            let err = check(Vendor::Anthropic, "m", &body).unwrap_err();
            assert_eq!(err, format!("{field}: Extra inputs are not permitted"));
        }
        let gemini = json!({"contents": [], "generation_config": {}, "systemInstruction": {}});
        assert_eq!(check(Vendor::Gemini, "m", &gemini), Ok(()));
        let err = check(Vendor::Gemini, "m", &json!({"contents": [], "service_tier": "auto"}))
            .unwrap_err();
        assert!(err.contains("Unknown name \"service_tier\""), "{err}");
    }

    #[test]
    fn claude_from_opus_4_1_on_refuses_temperature_beside_top_p() {
        let body = |model: &str| {
            json!({"model": model, "max_tokens": 1, "temperature": 0, "top_p": 0.95,
                   "messages": [{"role": "user", "content": "hi"}]})
        };
        let refused = "`temperature` and `top_p` cannot both be specified for this model. \
                       Please use only one.";
        for model in [
            "claude-opus-4-1-20250805",
            "claude-sonnet-4-5",
            "claude-haiku-4-5-20251001",
            "claude-opus-4-5@20251101",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "claude-sonnet-4-6",
            "claude-opus-4-7",
        ] {
            assert_eq!(
                check(Vendor::Anthropic, model, &body(model)),
                Err(refused.into()),
                "{model}"
            );
            for one in ["temperature", "top_p"] {
                let mut alone = body(model);
                alone.as_object_mut().unwrap().remove(one);
                assert_eq!(
                    check(Vendor::Anthropic, model, &alone),
                    Ok(()),
                    "{model} without {one}"
                );
            }
        }
        for model in [
            "claude-opus-4-20250514",
            "claude-sonnet-4-0",
            "claude-3-7-sonnet-latest",
            "claude-3-5-haiku@20241022",
            "up-anthropic",
        ] {
            assert_eq!(check(Vendor::Anthropic, model, &body(model)), Ok(()), "{model}");
        }
    }

    #[test]
    fn anthropic_refuses_blank_text_and_empty_messages() {
        let ok = json!({"tools": [{"name": "f", "input_schema": {"type": "object"}}], "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": "hello"},
                {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": ""}]},
            {"role": "assistant", "content": []},
        ]});
        assert_eq!(check(Vendor::Anthropic, "m", &ok), Ok(()));
        for (bad, says) in [
            (json!({"messages": [{"role": "user", "content": " \n"}]}), "non-whitespace"),
            (
                json!({"messages": [{"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
                                    {"role": "user", "content": "x"}]}),
                "non-whitespace",
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]}),
                "non-empty",
            ),
            (json!({"messages": [{"role": "user", "content": []}]}), "messages.0"),
            (json!({"system": [{"type": "text", "text": " "}], "messages": []}), "system"),
        ] {
            let err = check(Vendor::Anthropic, "m", &bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn documents_are_checked_as_each_api_reads_them() {
        let pdf = json!({"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="});
        let doc = |source: Value| json!({"messages": [{"role": "user", "content": [{"type": "document", "source": source}]}]});
        assert_eq!(check(Vendor::Anthropic, "m", &doc(pdf)), Ok(()));
        assert_eq!(
            check(Vendor::Anthropic, "m", &doc(json!({"type": "url", "url": "https://x/a.pdf"}))),
            Ok(())
        );
        assert!(
            check(
                Vendor::Anthropic,
                "m",
                &doc(json!({"type": "base64", "media_type": "text/plain", "data": "aGk="}))
            )
            .is_err()
        );
        assert!(check(Vendor::Anthropic, "m", &doc(json!({"type": "pdf"}))).is_err());

        let file = |file: Value| json!({"messages": [{"role": "user", "content": [{"type": "file", "file": file}]}]});
        assert_eq!(
            check(
                Vendor::OpenAi,
                "m",
                &file(
                    json!({"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"})
                )
            ),
            Ok(())
        );
        assert_eq!(check(Vendor::OpenAi, "m", &file(json!({"file_id": "file-1"}))), Ok(()));
        assert!(check(Vendor::OpenAi, "m", &file(json!({"filename": "a.pdf"}))).is_err());
        let unknown = json!({"messages": [{"role": "user", "content": [{"type": "document"}]}]});
        assert!(check(Vendor::OpenAi, "m", &unknown).is_err());

        let part = |part: Value| json!({"contents": [{"role": "user", "parts": [part]}]});
        assert_eq!(
            check(
                Vendor::Gemini,
                "m",
                &part(json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}}))
            ),
            Ok(())
        );
        assert!(
            check(Vendor::Gemini, "m", &part(json!({"inlineData": {"data": "JVBERi0="}}))).is_err()
        );
        assert!(
            check(Vendor::Gemini, "m", &part(json!({"fileData": {"mimeType": "application/pdf"}})))
                .is_err()
        );
    }
}
