//! The Responses route's strictness and answers.

use serde_json::{Value, json};

use super::*;

fn body(input: Value) -> Value {
    json!({"model": "gpt-5", "input": input, "store": false, "include": [ENCRYPTED_REASONING]})
}

#[test]
fn tokens_verify_only_when_the_fake_made_them() {
    let token = encrypted_reasoning("Plan.");
    assert!(token.starts_with("gAAAAB"));
    assert_eq!(open_reasoning(&token).as_deref(), Some("Plan."));
    let forged = token.replace("506c616e2e", "506c616e21");
    assert_eq!(open_reasoning(&forged), None);
    assert_eq!(open_reasoning("gAAAAB-from-openai"), None);
}

#[test]
fn refuses_what_openai_refuses() {
    let call =
        json!({"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "ok"});
    let ours =
        json!({"type": "reasoning", "summary": [], "encrypted_content": encrypted_reasoning("x")});
    assert_eq!(check(&body(json!([ours, call, output]))), Ok(()));
    let unknown = json!({"model": "gpt-5", "input": "hi", "messages": []});
    assert_eq!(check(&unknown), Err("Unknown parameter: 'messages'.".into()));
    let orphan = check(&body(json!([output]))).unwrap_err();
    assert!(orphan.contains("call_id call_1"), "{orphan}");
    let foreign = json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-other"});
    assert!(check(&body(json!([foreign]))).unwrap_err().contains("could not be verified"));
    let bare = json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": "t"}]});
    assert!(check(&body(json!([bare]))).unwrap_err().contains("not persisted"));
    let wrong_part = json!({"role": "assistant", "content": [{"type": "input_text", "text": "x"}]});
    assert!(check(&body(json!([wrong_part]))).unwrap_err().contains("content[0].type"));
    let bad_include = json!({"model": "gpt-5", "input": "hi", "include": ["reasoning.summary"]});
    assert!(check(&bad_include).is_err());
}

#[test]
fn answers_in_the_responses_shapes() {
    let request =
        body(json!([{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]));
    let turn = auto(&request, "gpt-5");
    let whole = complete(&turn);
    assert_eq!(whole["id"], RESPONSE_ID);
    assert_eq!(whole["output"][0]["id"], REASONING_ID);
    assert_eq!(whole["output"][0]["summary"][0]["text"], "Thinking about: hi");
    assert_eq!(whole["output"][1]["content"][0]["text"], "echo: hi");
    assert_eq!(whole["usage"]["input_tokens_details"]["cached_tokens"], CACHED_TOKENS);
    assert_eq!(whole["usage"]["output_tokens_details"]["reasoning_tokens"], REASONING_TOKENS);
    let token = whole["output"][0]["encrypted_content"].as_str().unwrap();
    assert_eq!(open_reasoning(token).as_deref(), Some("Thinking about: hi"));
    let frames =
        sse_frames(&Turn { call: Some(("shell".into(), r#"{"cmd":"ls"}"#.into())), ..turn });
    assert!(frames[0].starts_with("event: response.created\n"));
    assert!(frames.last().unwrap().starts_with("event: response.completed\n"));
    assert!(frames.iter().any(|f| f.contains("response.function_call_arguments.delta")));
    // Without the include, no reasoning.
    let plain = auto(&json!({"model": "gpt-4.1", "input": "hi"}), "gpt-4.1");
    assert_eq!(plain.reasoning, None);
}

#[test]
fn a_tool_loop_prompt_calls_the_shell_and_then_quotes_its_output() {
    use crate::tool_loop::{COMMAND, MARKER, TRIGGER};
    // Codex's shape: a function tool taking the command as a list of words.
    let tools = json!([{"type": "function", "name": "shell", "parameters": {"type": "object",
        "properties": {"command": {"type": "array", "items": {"type": "string"}}},
        "required": ["command"]}}]);
    let prompt = format!("run the command ({TRIGGER})");
    let first = json!({"model": "gpt-5", "tools": tools, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": prompt}]}]});
    let turn = auto(&first, "gpt-5");
    let (name, arguments) = turn.call.clone().unwrap();
    assert_eq!(name, "shell");
    let arguments: Value = serde_json::from_str(&arguments).unwrap();
    assert!(arguments["command"].to_string().contains(MARKER), "{arguments} ({COMMAND})");
    assert!(turn.text.is_none());
    let second = json!({"model": "gpt-5", "tools": first["tools"], "input": [
        first["input"][0],
        {"type": "function_call", "call_id": CALL_ID, "name": "shell", "arguments": arguments.to_string()},
        {"type": "function_call_output", "call_id": CALL_ID, "output": MARKER}]});
    let turn = auto(&second, "gpt-5");
    assert!(turn.call.is_none());
    assert!(turn.text.unwrap().contains(MARKER));
    // Without the trigger, the echo.
    let plain = json!({"model": "gpt-5", "tools": first["tools"], "input": "hello"});
    assert_eq!(auto(&plain, "gpt-5").text.as_deref(), Some(&*format!("{ECHO_PREFIX}hello")));
}
