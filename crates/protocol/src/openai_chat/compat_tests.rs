//! Fitting bodies to an OpenAI-compatible server's quirks.

use serde_json::{Map, Value, json};

use crate::{Message, Part, Request, Role, TextBlock, ToolCall, ToolResult};

use super::*;
use crate::openai_chat::{parse_request, parse_response};

const MISTRAL: Compat = Compat {
    output_field: Some(OutputField::MaxTokens),
    stream_options: false,
    tool_id_len: Some(9),
    reasoning_echo: None,
};

const DEEPSEEK: Compat = Compat {
    output_field: Some(OutputField::MaxTokens),
    stream_options: true,
    tool_id_len: None,
    reasoning_echo: Some("reasoning_content"),
};

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

/// `edits` applied to `body`, as the core applies them.
fn apply(mut body: Map<String, Value>, edits: Vec<crate::FieldEdit>) -> Map<String, Value> {
    for (field, edit) in edits {
        match edit {
            Some(v) => body.insert(field.into(), v),
            None => body.remove(field),
        };
    }
    body
}

/// A tool loop: the user asks, the assistant (having thought) calls `id`, the
/// tool answers it.
fn tool_loop(id: &str, thinking: Option<&str>) -> Request {
    let mut call = Vec::new();
    if let Some(t) = thinking {
        call.push(Part::Thinking { text: t.into(), signature: None });
    }
    call.push(Part::ToolCall(ToolCall {
        id: id.into(),
        name: "weather".into(),
        arguments: "{}".into(),
        signature: None,
    }));
    Request {
        model: "m".into(),
        messages: vec![
            Message { role: Role::User, content: vec![Part::Text(TextBlock::new("Paris?"))] },
            Message { role: Role::Assistant, content: call },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: id.into(),
                    name: None,
                    content: vec![Part::Text(TextBlock::new("18C"))],
                    is_error: false,
                })],
            },
        ],
        ..Request::default()
    }
}

#[test]
fn tool_ids_map_into_nine_letters_and_digits_deterministically() {
    // The server's own ids go back as they are.
    assert_eq!(tool_id("aB3xK9mP2", 9), "aB3xK9mP2");
    for foreign in
        ["call_abc123", "toolu_01A09q90qw90lq917835lq9", "", "functions.get:0", "abcdefgh"]
    {
        let mapped = tool_id(foreign, 9);
        assert!(is_tool_id(&mapped, 9), "{foreign:?} -> {mapped:?}");
        assert_eq!(mapped, tool_id(foreign, 9), "a call and its result pair");
    }
    assert_ne!(tool_id("call_1", 9), tool_id("call_2", 9));
    // Longer forms take a fresh hash past ten digits.
    let long = tool_id("call_1", 24);
    assert!(is_tool_id(&long, 24) && long[..10] != long[10..20], "{long}");
}

#[test]
fn openai_behaviour_edits_nothing() {
    let body = json!({"max_completion_tokens": 5, "stream": true, "stream_options": {"include_usage": true}});
    assert!(compat_edits(&obj(body.clone()), &Compat::OPENAI).is_empty());
    let raw = body.to_string();
    assert!(!may_edit(&Compat::OPENAI, raw.as_bytes(), &tool_loop("call_1", None)));
}

#[test]
fn the_output_limit_goes_in_the_field_the_server_takes() {
    let body = obj(json!({"max_completion_tokens": 50}));
    assert_eq!(apply(body.clone(), compat_edits(&body, &MISTRAL)), obj(json!({"max_tokens": 50})));
    // Both written: the server's own field is kept as the client set it.
    let both = obj(json!({"max_completion_tokens": 50, "max_tokens": 40}));
    assert_eq!(apply(both.clone(), compat_edits(&both, &MISTRAL)), obj(json!({"max_tokens": 40})));
    let groq = Compat { output_field: Some(OutputField::MaxCompletionTokens), ..Compat::OPENAI };
    let legacy = obj(json!({"max_tokens": 50}));
    assert_eq!(
        apply(legacy.clone(), compat_edits(&legacy, &groq)),
        obj(json!({"max_completion_tokens": 50}))
    );
    let req = Request::default();
    assert!(may_edit(&MISTRAL, br#"{"max_completion_tokens":5}"#, &req));
    assert!(!may_edit(&MISTRAL, br#"{"max_tokens":5}"#, &req));
}

#[test]
fn stream_options_leave_for_a_server_that_refuses_them() {
    let body = obj(json!({"stream": true, "stream_options": {"include_usage": true}}));
    assert_eq!(apply(body.clone(), compat_edits(&body, &MISTRAL)), obj(json!({"stream": true})));
    assert!(compat_edits(&body, &DEEPSEEK).is_empty());
    let req = Request::default();
    assert!(may_edit(&MISTRAL, br#"{"stream":true,"stream_options":{}}"#, &req));
    assert!(!may_edit(&MISTRAL, br#"{"stream":true}"#, &req));
    // A translation asks for none either.
    let mut req = Request { model: "m".into(), stream: true, ..Request::default() };
    req.messages
        .push(Message { role: Role::User, content: vec![Part::Text(TextBlock::new("hi"))] });
    let sent = encode_request_as(&req, &MISTRAL).unwrap();
    assert_eq!(sent["stream"], true);
    assert!(sent.get("stream_options").is_none(), "{sent}");
    assert!(encode_request_as(&req, &DEEPSEEK).unwrap().get("stream_options").is_some());
}

#[test]
fn a_clients_own_history_gets_mistral_ids_that_still_pair() {
    let body = obj(json!({"messages": [
        {"role": "user", "content": "Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_abc123", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
            {"id": "Xy7Zq2Lm9", "type": "function", "function": {"name": "time", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_abc123", "content": "18C"},
        {"role": "tool", "tool_call_id": "Xy7Zq2Lm9", "content": "noon"}
    ]}));
    let sent = apply(body.clone(), compat_edits(&body, &MISTRAL));
    let m = &sent["messages"];
    let mapped = m[1]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(is_tool_id(mapped, 9));
    assert_eq!(m[2]["tool_call_id"], mapped, "the result names its call");
    // Already in the server's form: unchanged.
    assert_eq!(m[1]["tool_calls"][1]["id"], "Xy7Zq2Lm9");
    assert_eq!(m[3]["tool_call_id"], "Xy7Zq2Lm9");
    assert_eq!(m[0], body["messages"][0]);
    let raw = Value::Object(body).to_string();
    assert!(may_edit(&MISTRAL, raw.as_bytes(), &tool_loop("call_abc123", None)));
    assert!(!may_edit(&MISTRAL, b"{}", &tool_loop("Xy7Zq2Lm9", None)));
}

#[test]
fn a_translated_history_gets_mistral_ids_that_still_pair() {
    let sent =
        encode_request_as(&tool_loop("toolu_01A09q90qw90lq917835lq9", None), &MISTRAL).unwrap();
    let id = sent["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
    assert!(is_tool_id(id, 9), "{sent}");
    assert_eq!(sent["messages"][2]["tool_call_id"], id);
}

#[test]
fn deepseek_gets_each_tool_turns_reasoning_back() {
    // Translated: the canonical turn's thinking goes back as reasoning_content.
    let sent = encode_request_as(&tool_loop("call_1", Some("need weather")), &DEEPSEEK).unwrap();
    assert_eq!(sent["messages"][1]["reasoning_content"], "need weather", "{sent}");
    assert_eq!(sent["messages"][1]["tool_calls"][0]["id"], "call_1");
    // A turn with none (another model's) still carries the field.
    let sent = encode_request_as(&tool_loop("call_1", None), &DEEPSEEK).unwrap();
    assert_eq!(sent["messages"][1]["reasoning_content"], "");
    // Without the option, reasoning is never sent back.
    let plain = encode_request_as(&tool_loop("call_1", Some("x")), &Compat::OPENAI).unwrap();
    assert!(plain["messages"][1].get("reasoning_content").is_none());
    // A client's own body: kept where it has it, added where it lacks it; a turn
    // without tool calls is left alone.
    let body = obj(json!({"messages": [
        {"role": "assistant", "content": "hi", "reasoning_content": "r0"},
        {"role": "assistant", "content": null, "reasoning_content": "r1", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "x"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "b", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "y"}
    ]}));
    let sent = apply(body.clone(), compat_edits(&body, &DEEPSEEK));
    assert_eq!(sent["messages"][0], body["messages"][0]);
    assert_eq!(sent["messages"][1], body["messages"][1]);
    assert_eq!(sent["messages"][3]["reasoning_content"], "");
    assert!(may_edit(&DEEPSEEK, b"{}", &tool_loop("a", None)));
    let no_tools = Request {
        messages: vec![Message {
            role: Role::User,
            content: vec![Part::Text(TextBlock::new("q"))],
        }],
        ..Request::default()
    };
    assert!(!may_edit(&DEEPSEEK, b"{}", &no_tools));
}

#[test]
fn vllm_reads_reasoning_under_its_own_name() {
    let vllm = Compat { reasoning_echo: Some("reasoning"), ..Compat::OPENAI };
    let sent = encode_request_as(&tool_loop("call_1", Some("think")), &vllm).unwrap();
    assert_eq!(sent["messages"][1]["reasoning"], "think");
    assert!(sent["messages"][1].get("reasoning_content").is_none());
    // A client that kept a gateway answer's `reasoning_content`: renamed.
    let body = obj(json!({"messages": [
        {"role": "assistant", "content": null, "reasoning_content": "r", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}
    ]}));
    let sent = apply(body.clone(), compat_edits(&body, &vllm));
    assert_eq!(sent["messages"][0]["reasoning"], "r");
    assert!(sent["messages"][0].get("reasoning_content").is_none());
}

#[test]
fn reasoning_is_read_under_either_name() {
    let answer = br#"{"id":"x","model":"m","choices":[{"message":{"role":"assistant","reasoning":"vllm thinks","content":"ok"},"finish_reason":"stop"}]}"#;
    let resp = parse_response(answer).unwrap();
    assert!(matches!(&resp.content[0], Part::Thinking { text, .. } if text == "vllm thinks"));
    // A `reasoning` that is not text (some servers' settings object) is ignored,
    // never a refusal.
    let body = br#"{"model":"m","messages":[{"role":"assistant","content":"a","reasoning":{"effort":"low"}},{"role":"user","content":"b"}]}"#;
    let req = parse_request(body).unwrap();
    assert_eq!(req.messages[0].content.len(), 1);
}
