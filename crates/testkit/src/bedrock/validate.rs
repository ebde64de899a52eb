//! What Converse refuses with a 400 `ValidationException`, checked on every
//! routed Bedrock request. The rules come from the API reference (the members
//! of `Message`, `ContentBlock`, `ToolUseBlock`, `ImageBlock`, `DocumentBlock`,
//! `InferenceConfiguration`) and from the conversation rules Bedrock states in
//! its errors (a user turn first, strict alternation, tool results answering
//! the previous turn's calls). Messages follow Bedrock's wording where it is
//! known; each names the field at fault.

use serde_json::Value;

/// The members of the `ContentBlock` union.
const BLOCK_KINDS: [&str; 12] = [
    "text",
    "image",
    "document",
    "video",
    "audio",
    "toolUse",
    "toolResult",
    "guardContent",
    "cachePoint",
    "reasoningContent",
    "citationsContent",
    "searchResult",
];

const IMAGE_FORMATS: [&str; 4] = ["png", "jpeg", "gif", "webp"];
const DOCUMENT_FORMATS: [&str; 9] =
    ["pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"];

/// `CountTokens`' checks: `{"input": {"converse": {...}}}` and nothing else,
/// the conversation as Converse checks it, on a foundation model (a
/// cross-region inference profile's id is refused, as Bedrock does).
pub fn check_count(model: &str, body: &Value) -> Result<(), String> {
    let geography = model.split_once('.').map(|(g, _)| g);
    if geography.is_some_and(|g| ["us", "eu", "apac", "jp", "au", "ca", "global"].contains(&g))
        || model.starts_with("arn:")
    {
        return Err("The provided model doesn't support counting tokens.".to_owned());
    }
    if let Some(invoked) = super::invoke::counted_body(body) {
        let claude = super::invoke::claude_body(&super::invoke::default_rules(), &invoked?)?;
        return crate::validate::check(crate::Vendor::Anthropic, model, &claude);
    }
    let input = body.as_object().filter(|m| m.len() == 1).and_then(|m| m.get("input"));
    let converse = input
        .and_then(Value::as_object)
        .filter(|m| m.len() == 1)
        .and_then(|m| m.get("converse"))
        .and_then(Value::as_object)
        .ok_or("input: exactly one of converse or invokeModel must be set")?;
    let known = ["messages", "system", "toolConfig", "additionalModelRequestFields"];
    if let Some(unknown) = converse.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!("Unknown field input.converse.{unknown}"));
    }
    check(model, &Value::Object(converse.clone()))
}

/// `Err(message)`: Converse would refuse `body`, sent for `model` (the model ID
/// from the path), with a 400 `ValidationException` saying `message`.
pub fn check(model: &str, body: &Value) -> Result<(), String> {
    if !body.is_object() {
        return Err("The request body must be a JSON object.".to_owned());
    }
    if let Some(system) = body.get("system") {
        system_blocks(system)?;
    }
    if let Some(max) = body.pointer("/inferenceConfig/maxTokens")
        && max.as_i64().is_none_or(|n| n < 1)
    {
        return Err(constraint(
            &max.to_string(),
            "inferenceConfig.maxTokens",
            "Member must have value greater than or equal to 1",
        ));
    }
    let messages = match body.get("messages").and_then(Value::as_array) {
        Some(m) if !m.is_empty() => m,
        _ => {
            return Err(constraint(
                "[]",
                "messages",
                "Member must have length greater than or equal to 1",
            ));
        }
    };
    let has_tools = body.get("toolConfig").is_some_and(|t| !t.is_null());
    let anthropic = model.contains("anthropic.");
    let mut previous: Option<&str> = None;
    for (i, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or_default();
        if !matches!(role, "user" | "assistant") {
            return Err(constraint(
                role,
                &format!("messages.{}.member.role", i + 1),
                "Member must satisfy enum value set: [user, assistant]",
            ));
        }
        if i == 0 && role != "user" {
            return Err("A conversation must start with a user message. Try again with a \
                        conversation that starts with a user message."
                .to_owned());
        }
        if previous == Some(role) {
            return Err("A conversation must alternate between user and assistant roles. Make \
                        sure the conversation alternates between user and assistant roles and \
                        try again."
                .to_owned());
        }
        previous = Some(role);
        let blocks = match message.get("content").and_then(Value::as_array) {
            Some(b) if !b.is_empty() => b,
            _ => {
                return Err(format!(
                    "The content field in the Message object at messages.{i} is empty. Add a \
                     ContentBlock object to the content field and try again."
                ));
            }
        };
        for (j, block) in blocks.iter().enumerate() {
            content_block(&format!("messages.{i}.content.{j}"), block, has_tools, anthropic)?;
        }
    }
    tool_pairs(messages)
}

/// `1 validation error detected: …`, AWS's wording for a member that breaks
/// its shape's constraint.
fn constraint(value: &str, at: &str, rule: &str) -> String {
    format!(
        "1 validation error detected: Value '{value}' at '{at}' failed to satisfy constraint: {rule}"
    )
}

/// The one member a union block sets; an error if it sets none or several, or
/// one Converse does not know.
fn union_member<'a>(
    at: &str,
    block: &'a Value,
    known: &[&str],
) -> Result<(&'a str, &'a Value), String> {
    let Some(map) = block.as_object() else {
        return Err(format!("The content block at {at} must be an object."));
    };
    let mut members = map.iter().filter(|(_, v)| !v.is_null());
    match (members.next(), members.next()) {
        (Some((k, v)), None) if known.contains(&k.as_str()) => Ok((k.as_str(), v)),
        (Some((k, _)), None) => {
            Err(format!("The content block at {at} has an unknown member {k:?}."))
        }
        (None, _) => Err(format!("The content block at {at} sets no member; set exactly one.")),
        (Some(_), Some(_)) => {
            Err(format!("The content block at {at} sets more than one member; set exactly one."))
        }
    }
}

fn text(at: &str, v: &Value) -> Result<(), String> {
    match v.as_str() {
        Some(t) if !t.trim().is_empty() => Ok(()),
        _ => Err(format!(
            "The text field in the ContentBlock object at {at} is blank. Add text to the text \
             field, and try again."
        )),
    }
}

fn system_blocks(system: &Value) -> Result<(), String> {
    let Some(blocks) = system.as_array() else {
        return Err(format!(
            "system must be a list of SystemContentBlock objects, not {}",
            kind_of(system)
        ));
    };
    for (i, block) in blocks.iter().enumerate() {
        let at = format!("system.{i}");
        // Only text has a rule here; guard content and cache points pass.
        if let ("text", v) = union_member(&at, block, &["text", "guardContent", "cachePoint"])? {
            text(&at, v)?;
        }
    }
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn content_block(at: &str, block: &Value, has_tools: bool, anthropic: bool) -> Result<(), String> {
    let (kind, v) = union_member(at, block, &BLOCK_KINDS)?;
    match kind {
        "text" => text(at, v),
        "toolUse" | "toolResult" if !has_tools => Err(
            "The toolConfig field must be defined when using toolUse and toolResult content blocks."
                .to_owned(),
        ),
        "toolUse" => {
            tool_use_id(&format!("{at}.toolUse"), v)?;
            if v.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
                return Err(format!("The toolUse block at {at} has no name."));
            }
            if v.get("input").is_none_or(Value::is_null) {
                return Err(format!("The toolUse block at {at} has no input."));
            }
            Ok(())
        }
        "toolResult" => {
            tool_use_id(&format!("{at}.toolResult"), v)?;
            match v.get("content").and_then(Value::as_array) {
                Some(_) => Ok(()),
                None => Err(format!("The toolResult block at {at} has no content list.")),
            }
        }
        "reasoningContent" if !anthropic => Err(format!(
            "The model doesn't support reasoning content (reasoningContent at {at}); only \
             Anthropic Claude models take it back."
        )),
        "reasoningContent" => {
            let signed = v
                .pointer("/reasoningText/signature")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty());
            let redacted = v.get("redactedContent").is_some_and(|r| !r.is_null());
            if signed || redacted {
                Ok(())
            } else {
                Err(format!(
                    "The reasoningContent block at {at} has no signature: send reasoningText \
                     with the signature the model returned, or redactedContent."
                ))
            }
        }
        "image" => image(at, v),
        "document" => document(at, v),
        _ => Ok(()),
    }
}

fn tool_use_id(at: &str, v: &Value) -> Result<(), String> {
    let id = v.get("toolUseId").and_then(Value::as_str).unwrap_or_default();
    let field = format!("{at}.toolUseId");
    if id.is_empty() || id.len() > 64 {
        return Err(constraint(id, &field, "Member must have length between 1 and 64"));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(constraint(
            id,
            &field,
            "Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+",
        ));
    }
    Ok(())
}

fn image(at: &str, v: &Value) -> Result<(), String> {
    let format = v.get("format").and_then(Value::as_str).unwrap_or_default();
    if !IMAGE_FORMATS.contains(&format) {
        return Err(constraint(
            format,
            &format!("{at}.image.format"),
            "Member must satisfy enum value set: [png, jpeg, gif, webp]",
        ));
    }
    source(&format!("{at}.image.source"), v.get("source"))
}

fn document(at: &str, v: &Value) -> Result<(), String> {
    let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
    if !document_name_ok(name) {
        return Err(format!(
            "The document name {name:?} at {at}.document.name is invalid: it can only contain \
             alphanumeric characters, whitespace characters (no more than one in a row), \
             hyphens, parentheses and square brackets, from 1 to 200 characters."
        ));
    }
    if let Some(format) = v.get("format").and_then(Value::as_str)
        && !DOCUMENT_FORMATS.contains(&format)
    {
        return Err(constraint(
            format,
            &format!("{at}.document.format"),
            "Member must satisfy enum value set: [pdf, csv, doc, docx, xls, xlsx, html, txt, md]",
        ));
    }
    match v.get("source").and_then(Value::as_object) {
        // Bytes must be base64; `text`, `content` and `s3Location` sources carry none.
        Some(s) if s.contains_key("bytes") => {
            source(&format!("{at}.document.source"), v.get("source"))
        }
        Some(s) if !s.is_empty() => Ok(()),
        _ => Err(format!("The document block at {at} has no source.")),
    }
}

/// DocumentBlock.name: alphanumerics, single whitespace characters, hyphens,
/// parentheses, square brackets; 1 to 200 characters.
pub fn document_name_ok(name: &str) -> bool {
    let allowed = |c: char| {
        c.is_alphanumeric() || c.is_whitespace() || matches!(c, '-' | '(' | ')' | '[' | ']')
    };
    let runs_ok = !name
        .chars()
        .zip(name.chars().skip(1))
        .any(|(a, b)| a.is_whitespace() && b.is_whitespace());
    (1..=200).contains(&name.chars().count()) && name.chars().all(allowed) && runs_ok
}

/// An image or document `source`: `bytes` as base64, or an `s3Location`.
fn source(at: &str, source: Option<&Value>) -> Result<(), String> {
    let Some(source) = source.filter(|s| s.is_object()) else {
        return Err(format!("The source at {at} is missing."));
    };
    if source.get("s3Location").is_some_and(Value::is_object) {
        return Ok(());
    }
    match source.get("bytes").and_then(Value::as_str) {
        Some(b) if is_base64(b) => Ok(()),
        _ => Err(format!(
            "The bytes at {at}.bytes are not valid base64 (the JSON wire carries a blob as \
             base64 text)."
        )),
    }
}

/// Standard base64 with padding, non-empty.
fn is_base64(s: &str) -> bool {
    let body = s.trim_end_matches('=');
    !s.is_empty()
        && s.len().is_multiple_of(4)
        && s.len() - body.len() <= 2
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// Every `toolResult` answers a `toolUse` of the previous (assistant) turn,
/// and every `toolUse` is answered in the next (user) turn when there is one.
fn tool_pairs(messages: &[Value]) -> Result<(), String> {
    let ids = |m: &Value, kind: &str| -> Vec<String> {
        m["content"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|b| b.get(kind)?.get("toolUseId")?.as_str().map(str::to_owned))
            .collect()
    };
    for (i, message) in messages.iter().enumerate() {
        let results = ids(message, "toolResult");
        let calls = i.checked_sub(1).map(|p| ids(&messages[p], "toolUse")).unwrap_or_default();
        if let Some(orphan) = results.iter().find(|r| !calls.contains(r)) {
            return Err(format!(
                "The toolResult block with toolUseId {orphan} at messages.{i}.content does not \
                 match any toolUse block in the previous turn."
            ));
        }
        let Some(next) = messages.get(i + 1) else { continue };
        let answered = ids(next, "toolResult");
        let missing: Vec<String> =
            ids(message, "toolUse").into_iter().filter(|c| !answered.contains(c)).collect();
        if !missing.is_empty() {
            return Err(format!(
                "Expected toolResult blocks at messages.{}.content for the following Ids: {}",
                i + 1,
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const CLAUDE: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";
    const NOVA: &str = "us.amazon.nova-pro-v1:0";

    fn user(content: Value) -> Value {
        json!({"role": "user", "content": content})
    }

    fn assistant(content: Value) -> Value {
        json!({"role": "assistant", "content": content})
    }

    fn tools() -> Value {
        json!({"tools": [{"toolSpec": {"name": "read", "inputSchema": {"json": {}}}}]})
    }

    fn call(id: &str) -> Value {
        json!({"toolUse": {"toolUseId": id, "name": "read", "input": {}}})
    }

    fn result(id: &str) -> Value {
        json!({"toolResult": {"toolUseId": id, "content": [{"text": "ok"}]}})
    }

    /// The refusal of `messages` (with tools declared), or "" when taken.
    fn refusal(model: &str, messages: Value) -> String {
        check(model, &json!({"messages": messages, "toolConfig": tools()}))
            .err()
            .unwrap_or_default()
    }

    #[test]
    fn a_well_formed_tool_loop_with_reasoning_is_taken() {
        let messages = json!([
            user(json!([{"text": "read it"}, {"cachePoint": {"type": "default"}}])),
            assistant(json!([
                {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "c2ln"}}},
                call("tooluse_a-1"),
                call("tooluse_b")
            ])),
            user(json!([result("tooluse_b"), result("tooluse_a-1"), {"text": "and?"}])),
        ]);
        let body = json!({
            "messages": messages,
            "system": [{"text": "be brief"}],
            "inferenceConfig": {"maxTokens": 1},
            "toolConfig": tools()
        });
        assert_eq!(check(CLAUDE, &body), Ok(()));
    }

    #[test]
    fn the_conversation_s_shape_is_checked() {
        let hi = || json!([{"text": "hi"}]);
        let empty = check(CLAUDE, &json!({"messages": []})).unwrap_err();
        assert!(empty.contains("at 'messages'"), "{empty}");
        assert!(check(CLAUDE, &json!({})).unwrap_err().contains("at 'messages'"));
        assert!(
            refusal(CLAUDE, json!([{"role": "system", "content": hi()}]))
                .contains("enum value set: [user, assistant]")
        );
        assert!(refusal(CLAUDE, json!([assistant(hi())])).contains("must start with a user"));
        assert!(refusal(CLAUDE, json!([user(hi()), user(hi())])).contains("must alternate"));
        assert!(
            refusal(CLAUDE, json!([user(hi()), assistant(hi()), assistant(hi())]))
                .contains("must alternate")
        );
        assert!(refusal(CLAUDE, json!([user(json!([]))])).contains("messages.0 is empty"));
    }

    #[test]
    fn content_blocks_are_checked_by_kind() {
        let says = |block: Value, want: &str| {
            let got = refusal(CLAUDE, json!([user(json!([block]))]));
            assert!(got.contains(want), "{got:?} should say {want:?}");
        };
        says(json!({"type": "text", "text": "hi"}), "more than one member");
        says(json!({"input_text": "hi"}), "unknown member \"input_text\"");
        says(json!({}), "sets no member");
        says(json!({"text": ""}), "messages.0.content.0 is blank");
        says(json!({"text": " \n"}), "is blank");
        let png = |format: &str, bytes: &str| json!({"image": {"format": format, "source": {"bytes": bytes}}});
        assert_eq!(refusal(CLAUDE, json!([user(json!([png("png", "iVBORw0KGgo=")]))])), "");
        says(png("bmp", "iVBORw0KGgo="), "enum value set: [png, jpeg, gif, webp]");
        says(png("png", "not base64!"), "not valid base64");
        says(png("png", "abc"), "not valid base64");
        says(
            json!({"image": {"format": "png"}}),
            "source at messages.0.content.0.image.source is missing",
        );
        let doc = |name: &str| json!({"document": {"name": name, "format": "pdf", "source": {"bytes": "JVBERi0="}}});
        assert_eq!(refusal(CLAUDE, json!([user(json!([doc("Report (v2) [final]-a")]))])), "");
        says(doc("report.pdf"), "document name");
        says(doc("two  spaces"), "document name");
        says(doc(""), "document name");
        says(doc(&"a".repeat(201)), "document name");
        says(
            json!({"document": {"name": "r", "format": "exe", "source": {"bytes": "JVBERi0="}}}),
            "enum value set: [pdf",
        );
        says(json!({"document": {"name": "r", "format": "txt"}}), "has no source");
    }

    #[test]
    fn tool_blocks_need_tool_config_valid_ids_and_pairs() {
        let no_tools = json!({"messages": [
            user(json!([{"text": "go"}])),
            assistant(json!([call("t1")])),
            user(json!([result("t1")]))
        ]});
        assert!(check(CLAUDE, &no_tools).unwrap_err().contains("toolConfig field must be defined"));
        let go = || user(json!([{"text": "go"}]));
        let bad_id = refusal(
            CLAUDE,
            json!([go(), assistant(json!([call("toolu.1")])), user(json!([result("toolu.1")]))]),
        );
        assert!(bad_id.contains("pattern: [a-zA-Z0-9_-]+"), "{bad_id}");
        let long = "a".repeat(65);
        let too_long = refusal(
            CLAUDE,
            json!([go(), assistant(json!([call(&long)])), user(json!([result(&long)]))]),
        );
        assert!(too_long.contains("length between 1 and 64"), "{too_long}");
        let unanswered = refusal(
            CLAUDE,
            json!([go(), assistant(json!([call("t1"), call("t2")])), user(json!([result("t1")]))]),
        );
        assert!(
            unanswered.contains(
                "Expected toolResult blocks at messages.2.content for the following Ids: t2"
            ),
            "{unanswered}"
        );
        let orphan = refusal(
            CLAUDE,
            json!([
                go(),
                assistant(json!([call("t1")])),
                user(json!([result("t1"), result("t9")]))
            ]),
        );
        assert!(orphan.contains("toolUseId t9"), "{orphan}");
        let skipped_turn = refusal(
            CLAUDE,
            json!([
                go(),
                assistant(json!([call("t1")])),
                user(json!([result("t1")])),
                assistant(json!([{"text": "k"}])),
                user(json!([result("t1")]))
            ]),
        );
        assert!(skipped_turn.contains("previous turn"), "{skipped_turn}");
        // A call in the last turn (a prefill) has no next turn to answer it.
        assert_eq!(refusal(CLAUDE, json!([go(), assistant(json!([call("t1")]))])), "");
    }

    #[test]
    fn reasoning_is_for_claude_and_must_be_signed() {
        let with = |block: Value| {
            json!([user(json!([{"text": "q"}])), assistant(json!([block, {"text": "a"}]))])
        };
        let signed =
            json!({"reasoningContent": {"reasoningText": {"text": "t", "signature": "s"}}});
        assert_eq!(refusal(CLAUDE, with(signed.clone())), "");
        assert!(refusal(NOVA, with(signed)).contains("doesn't support reasoning content"));
        let unsigned = json!({"reasoningContent": {"reasoningText": {"text": "t"}}});
        assert!(refusal(CLAUDE, with(unsigned)).contains("has no signature"));
        let redacted = json!({"reasoningContent": {"redactedContent": "AAEC"}});
        assert_eq!(refusal(CLAUDE, with(redacted)), "");
    }

    #[test]
    fn system_and_inference_config_are_checked() {
        let hi = json!([user(json!([{"text": "hi"}]))]);
        let system_string = check(CLAUDE, &json!({"messages": hi, "system": "be brief"}));
        assert!(system_string.unwrap_err().contains("system must be a list"));
        let blank = check(CLAUDE, &json!({"messages": hi, "system": [{"text": ""}]}));
        assert!(blank.unwrap_err().contains("system.0 is blank"));
        for max in [json!(0), json!(-3), json!("10")] {
            let body = json!({"messages": hi, "inferenceConfig": {"maxTokens": max}});
            assert!(
                check(CLAUDE, &body).unwrap_err().contains("inferenceConfig.maxTokens"),
                "{max}"
            );
        }
        let ok =
            json!({"messages": hi, "inferenceConfig": {"maxTokens": 1024, "temperature": 0.2}});
        assert_eq!(check(CLAUDE, &ok), Ok(()));
    }
}
