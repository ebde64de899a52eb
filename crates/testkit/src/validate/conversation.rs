//! The conversation rules the real APIs enforce and agents trip over in tool
//! loops: a lenient fake would pass what the real upstream refuses. Each rule
//! answers 400 with (a shortened form of) the real API's message.
//!
//! | vendor | rule |
//! |---|---|
//! | Anthropic | a history with `tool_use` / `tool_result` defines `tools` |
//! | Anthropic | thinking blocks carry a `signature` |
//! | Anthropic | with thinking on, the assistant turn before the last tool results starts with `thinking` / `redacted_thinking` |
//! | Anthropic | `tool_use.id` matches `^[a-zA-Z0-9_-]+$`; every `tool_result` answers a `tool_use` of the turn before |
//! | OpenAI | `tool_choice` only with `tools` |
//! | OpenAI | `tool_calls[].id` is at most 40 characters; every `tool` message answers a call of the assistant turn before |
//! | Gemini | a turn of `functionResponse` parts follows a `model` turn of as many `functionCall` parts |
//! | Gemini 3 | in the current turn (since the last user text), each model step's first `functionCall` carries a `thoughtSignature` |

use serde_json::Value;

use crate::Vendor;

/// Why the real API would refuse `body`, sent for `model`, or `None` when it would
/// take it.
pub fn refusal(vendor: Vendor, model: &str, body: &Value) -> Option<String> {
    match vendor {
        Vendor::Anthropic => anthropic(body),
        Vendor::OpenAi => openai(body),
        Vendor::Gemini => gemini(model, body),
        // Checked with the rest of Converse's rules (`crate::bedrock::validate`).
        Vendor::Bedrock => None,
    }
}

fn blocks(message: &Value) -> &[Value] {
    message["content"].as_array().map_or(&[], Vec::as_slice)
}

fn anthropic(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let uses_tools = messages
        .iter()
        .flat_map(blocks)
        .any(|b| matches!(b["type"].as_str(), Some("tool_use" | "tool_result")));
    if uses_tools && body["tools"].as_array().is_none_or(Vec::is_empty) {
        return Some(
            "Requests which include `tool_use` or `tool_result` blocks must define tools.".into(),
        );
    }
    let thinking_on = matches!(body["thinking"]["type"].as_str(), Some("enabled" | "adaptive"));
    let valid_id = |id: &str| {
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    for (i, m) in messages.iter().enumerate() {
        let mut previous_calls: Vec<&str> = Vec::new();
        if let Some(prev) = i.checked_sub(1).and_then(|p| messages.get(p))
            && prev["role"] == "assistant"
        {
            previous_calls = blocks(prev)
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str())
                .collect();
        }
        for (j, b) in blocks(m).iter().enumerate() {
            let at = format!("messages.{i}.content.{j}");
            match b["type"].as_str() {
                Some("thinking") if b["signature"].as_str().is_none_or(str::is_empty) => {
                    return Some(format!("{at}.thinking.signature: Field required"));
                }
                Some("tool_use") => {
                    let id = b["id"].as_str().unwrap_or("");
                    if !valid_id(id) {
                        return Some(format!(
                            "{at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                        ));
                    }
                }
                Some("tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or("");
                    if !previous_calls.contains(&id) {
                        return Some(format!(
                            "{at}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    if thinking_on {
        // The turn being continued: the last assistant turn, when tool results follow it.
        let last = messages.len().checked_sub(1)?;
        let continues_tools =
            blocks(messages.get(last)?).iter().any(|b| b["type"] == "tool_result");
        if continues_tools
            && let Some(prev) = last.checked_sub(1).and_then(|p| messages.get(p))
            && prev["role"] == "assistant"
        {
            let first = blocks(prev).first().and_then(|b| b["type"].as_str()).unwrap_or("");
            if first != "thinking" && first != "redacted_thinking" {
                return Some(format!(
                    "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{first}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
                    last - 1
                ));
            }
        }
    }
    None
}

fn openai(body: &Value) -> Option<String> {
    if !body["tool_choice"].is_null() && body["tools"].as_array().is_none_or(Vec::is_empty) {
        return Some(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified."
                .into(),
        );
    }
    let messages = body["messages"].as_array()?;
    let mut open_calls: Vec<&str> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m["role"].as_str() {
            Some("assistant") => {
                open_calls.clear();
                for (j, call) in
                    m["tool_calls"].as_array().map_or(&[][..], Vec::as_slice).iter().enumerate()
                {
                    let id = call["id"].as_str().unwrap_or("");
                    if id.chars().count() > 40 {
                        return Some(format!(
                            "Invalid 'messages[{i}].tool_calls[{j}].id': string too long. Expected a string with maximum length 40, but got a string with length {} instead.",
                            id.chars().count()
                        ));
                    }
                    open_calls.push(id);
                }
            }
            Some("tool") => {
                let id = m["tool_call_id"].as_str().unwrap_or("");
                if !open_calls.contains(&id) {
                    return Some(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{i}], tool_call_id {id})"
                    ));
                }
            }
            _ => open_calls.clear(),
        }
    }
    None
}

fn parts(content: &Value) -> &[Value] {
    content["parts"].as_array().map_or(&[], Vec::as_slice)
}

fn gemini(model: &str, body: &Value) -> Option<String> {
    let contents = body["contents"].as_array()?;
    let calls = |c: &Value| parts(c).iter().filter(|p| p.get("functionCall").is_some()).count();
    let responses =
        |c: &Value| parts(c).iter().filter(|p| p.get("functionResponse").is_some()).count();
    for (i, c) in contents.iter().enumerate() {
        let answered = responses(c);
        if answered == 0 {
            continue;
        }
        let prev = i.checked_sub(1).and_then(|p| contents.get(p));
        let asked = prev.filter(|p| p["role"] == "model").map_or(0, calls);
        if asked == 0 {
            return Some(format!(
                "Please ensure that function response turn comes immediately after a function call turn. (contents[{i}])"
            ));
        }
        if asked != answered {
            return Some(format!(
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[{i}]: {answered} responses, {asked} calls)"
            ));
        }
    }
    if gemini_major(model).is_some_and(|v| v >= 3) {
        // The current turn starts after the last user content with text of its own.
        let start = contents
            .iter()
            .rposition(|c| {
                c["role"] != "model"
                    && responses(c) == 0
                    && parts(c).iter().any(|p| p.get("text").is_some())
            })
            .map_or(0, |i| i + 1);
        for (i, c) in contents.iter().enumerate().skip(start) {
            if c["role"] != "model" {
                continue;
            }
            let first = parts(c).iter().enumerate().find(|(_, p)| p.get("functionCall").is_some());
            if let Some((j, p)) = first
                && p["thoughtSignature"].as_str().is_none_or(str::is_empty)
            {
                let name = p["functionCall"]["name"].as_str().unwrap_or("");
                return Some(format!(
                    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `{name}` , position contents[{i}].parts[{j}]. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
                ));
            }
        }
    }
    None
}

/// The major version of a Gemini model id (`gemini-3-pro-preview` → 3).
fn gemini_major(model: &str) -> Option<u32> {
    let rest = &model[model.find("gemini-")? + "gemini-".len()..];
    rest.split(['.', '-']).next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn anthropic_refuses_a_tool_loop_whose_thinking_was_lost() {
        let call = json!({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}});
        let result = json!({"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"});
        let body = |assistant: Vec<Value>| {
            json!({"thinking": {"type": "enabled", "budget_tokens": 1024},
                "tools": [{"name": "f", "input_schema": {"type": "object"}}], "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": assistant},
                {"role": "user", "content": [result.clone()]},
            ]})
        };
        let lost = refusal(Vendor::Anthropic, "m", &body(vec![call.clone()])).unwrap();
        assert!(lost.contains("Expected `thinking` or `redacted_thinking`, but found `tool_use`"));
        let kept = json!({"type": "thinking", "thinking": "hm", "signature": "c2ln"});
        assert_eq!(refusal(Vendor::Anthropic, "m", &body(vec![kept, call.clone()])), None);
        let unsigned = json!({"type": "thinking", "thinking": "hm"});
        assert!(
            refusal(Vendor::Anthropic, "m", &body(vec![unsigned, call]))
                .unwrap()
                .contains("signature")
        );
        let foreign =
            json!({"type": "tool_use", "id": "functions.get_weather:0", "name": "f", "input": {}});
        let mut b = body(vec![foreign]);
        b["thinking"] = Value::Null;
        assert!(refusal(Vendor::Anthropic, "m", &b).unwrap().contains("should match pattern"));
    }

    #[test]
    fn anthropic_refuses_a_tool_history_without_tools() {
        let body = json!({"messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
        ]});
        assert!(refusal(Vendor::Anthropic, "m", &body).unwrap().contains("must define tools"));
    }

    #[test]
    fn openai_refuses_long_call_ids_and_orphan_results() {
        let long = "x".repeat(41);
        let body = json!({"messages": [
            {"role": "assistant", "tool_calls": [{"id": long, "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": long, "content": "ok"},
        ]});
        assert!(refusal(Vendor::OpenAi, "m", &body).unwrap().contains("maximum length 40"));
        let orphan = json!({"messages": [{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c", "content": "ok"}]});
        assert!(refusal(Vendor::OpenAi, "m", &orphan).unwrap().contains("role 'tool'"));
    }

    #[test]
    fn gemini_pairs_responses_with_calls_and_gemini_3_wants_signed_calls() {
        let call = |sig: Option<&str>| {
            let mut p = json!({"functionCall": {"name": "shell", "args": {}}});
            if let Some(sig) = sig {
                p["thoughtSignature"] = sig.into();
            }
            p
        };
        let answer = json!({"functionResponse": {"name": "shell", "response": {"output": "ok"}}});
        let body = |model_parts: Vec<Value>, responses: Vec<Value>| {
            json!({"contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {"role": "model", "parts": model_parts},
                {"role": "user", "parts": responses},
            ]})
        };
        let signed = body(vec![call(Some("c2ln"))], vec![answer.clone()]);
        assert_eq!(refusal(Vendor::Gemini, "gemini-3-pro-preview", &signed), None);
        let unsigned = body(vec![call(None)], vec![answer.clone()]);
        assert_eq!(refusal(Vendor::Gemini, "gemini-2.5-flash", &unsigned), None);
        let says = refusal(Vendor::Gemini, "gemini-3-pro-preview", &unsigned).unwrap();
        assert!(says.contains("missing a thought_signature") && says.contains("`shell`"), "{says}");
        // Only the first call of a step is signed; a past turn is not checked.
        let parallel =
            body(vec![call(Some("c2ln")), call(None)], vec![answer.clone(), answer.clone()]);
        assert_eq!(refusal(Vendor::Gemini, "gemini-3-pro-preview", &parallel), None);
        let mut past = unsigned.clone();
        past["contents"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "parts": [{"text": "next"}]}));
        assert_eq!(refusal(Vendor::Gemini, "gemini-3-pro-preview", &past), None);

        let short = body(vec![call(Some("c2ln")), call(None)], vec![answer.clone()]);
        assert!(
            refusal(Vendor::Gemini, "g", &short)
                .unwrap()
                .contains("number of function response parts")
        );
        let orphan = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}, {"role": "user", "parts": [answer]}]});
        assert!(
            refusal(Vendor::Gemini, "g", &orphan)
                .unwrap()
                .contains("immediately after a function call turn")
        );
    }
}
