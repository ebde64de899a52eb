//! The vendors' own rules.

use serde_json::json;

use super::*;

fn history(id: &str, reasoning: Option<&str>) -> Value {
    let mut call = json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
    if let Some(r) = reasoning {
        call["reasoning_content"] = json!(r);
    }
    json!({"model": "m", "messages": [
        {"role": "user", "content": "q"}, call,
        {"role": "tool", "tool_call_id": id, "content": "a"}]})
}

#[test]
fn mistral_takes_only_its_own_fields_and_nine_character_ids() {
    assert!(check(Flavour::Mistral, &history("aB3xK9mP2", None)).is_ok());
    let (status, message) = check(Flavour::Mistral, &history("call_abc123", None)).unwrap_err();
    assert_eq!(status, 400);
    assert!(message.contains("call_abc123"), "{message}");
    let mut body = history("aB3xK9mP2", None);
    body["stream_options"] = json!({"include_usage": true});
    assert_eq!(check(Flavour::Mistral, &body).unwrap_err().0, 422);
}

#[test]
fn deepseek_wants_each_tool_turns_reasoning_back() {
    assert!(check(Flavour::DeepSeek, &history("call_1", Some(""))).is_ok());
    let message = check(Flavour::DeepSeek, &history("call_1", None)).unwrap_err().1;
    assert!(message.contains("message index 1"), "{message}");
    let mut off = history("call_1", None);
    off["thinking"] = json!({"type": "disabled"});
    assert!(check(Flavour::DeepSeek, &off).is_ok());
}
