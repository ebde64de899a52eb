//! Encoding for a Responses upstream: the body's shape, the stateless settings,
//! and encrypted reasoning given back only to the family that issued it.

use serde_json::{Value, json};

use crate::continuity::tag_reasoning;
use crate::responses::test_support::text;
use crate::responses::{FAMILY, encode_request_for, parse_request};
use crate::{
    Effort, Image, ImageSource, Message, ModelTraits, Part, Reasoning, Request, ResponseFormat,
    Role, Tool, ToolCall, ToolChoice, ToolResult, Wire,
};

fn upstream(req: &Request) -> Value {
    encode_request_for(req, ModelTraits::infer(Wire::Responses, &req.model), FAMILY).unwrap()
}

fn thinking(text: &str, signature: Option<String>) -> Part {
    Part::Thinking { text: text.into(), signature }
}

fn tool_loop(assistant: Vec<Part>) -> Request {
    let mut content = assistant;
    content.push(Part::ToolCall(ToolCall {
        id: "call_1".into(),
        name: "shell".into(),
        arguments: r#"{"cmd":"ls"}"#.into(),
        signature: None,
    }));
    Request {
        model: "gpt-5".into(),
        messages: vec![
            Message::user("list the files"),
            Message { role: Role::Assistant, content },
            Message::tool_result("call_1", "a.txt"),
        ],
        tools: vec![Tool::function("shell", json!({"type": "object"}))],
        ..Request::default()
    }
}

#[test]
fn encrypted_reasoning_goes_back_only_to_its_family() {
    let ours = tag_reasoning(FAMILY, "gAAAAB-ours");
    let req = tool_loop(vec![
        thinking("**Listing**", Some(ours)),
        // Claude's signed thinking, another wire's tagged token, a client's echo.
        thinking("claude", Some("EqQBCkYIBxgC".into())),
        thinking("azure", Some(tag_reasoning("azure-responses", "gAAAAB-theirs"))),
        thinking("echoed text", None),
    ]);
    let body = upstream(&req);
    let reasoning: Vec<&Value> =
        body["input"].as_array().unwrap().iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "{body:#}");
    assert_eq!(reasoning[0]["encrypted_content"], "gAAAAB-ours");
    assert_eq!(reasoning[0]["summary"], json!([{"type": "summary_text", "text": "**Listing**"}]));
    // The reasoning precedes the call it led to; the output pairs the call by id.
    let types: Vec<&str> =
        body["input"].as_array().unwrap().iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["message", "reasoning", "function_call", "function_call_output"]);
    assert_eq!(body["input"][2]["call_id"], "call_1");
    assert_eq!(body["input"][3]["call_id"], "call_1");
    assert_eq!(body["input"][3]["output"], "a.txt");
}

#[test]
fn reasoning_with_no_summary_still_goes_back() {
    let req = tool_loop(vec![thinking("", Some(tag_reasoning(FAMILY, "gAAAAB-x")))]);
    let body = upstream(&req);
    assert_eq!(
        body["input"][1],
        json!({"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-x"})
    );
}

#[test]
fn stateless_unless_the_client_stores() {
    let mut req = Request { model: "gpt-5".into(), ..Request::default() };
    req.messages.push(Message::user("hi"));
    let body = upstream(&req);
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    // A model that does not reason is not asked for encrypted reasoning (OpenAI
    // refuses the include there).
    req.model = "gpt-4.1".into();
    let body = upstream(&req);
    assert_eq!(body["store"], false);
    assert!(body.get("include").is_none(), "{body:#}");
    req.extras.store = Some(true);
    assert_eq!(upstream(&req)["store"], true);
    // The client-facing encoder carries `store` as the client gave it.
    assert_eq!(crate::responses::encode_request(&req).unwrap().get("include"), None);
}

#[test]
fn a_translated_request_takes_the_responses_shape() {
    let req = Request {
        model: "gpt-5".into(),
        system: vec![crate::TextBlock::new("Be brief.")],
        messages: vec![Message {
            role: Role::User,
            content: vec![
                text("what is this?"),
                Part::Image(Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: "iVBO".into(),
                    },
                    detail: None,
                    cache_control: None,
                }),
            ],
        }],
        tools: vec![
            Tool::function("weather", json!({"type": "object", "properties": {}})),
            Tool {
                freeform: Some(
                    json!({"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}),
                ),
                ..Tool::function("apply_patch", json!({"type": "object"}))
            },
        ],
        tool_choice: Some(ToolChoice::Tool { name: "weather".into() }),
        max_tokens: Some(300),
        temperature: Some(0.5),
        reasoning: Some(Reasoning {
            enabled: true,
            effort: Some(Effort::Max),
            budget_tokens: None,
        }),
        response_format: Some(ResponseFormat::JsonObject),
        stream: true,
        ..Request::default()
    };
    let body = upstream(&req);
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(
        body["input"][0]["content"][0],
        json!({"type": "input_text", "text": "what is this?"})
    );
    assert_eq!(body["input"][0]["content"][1]["type"], "input_image");
    assert_eq!(body["input"][0]["content"][1]["image_url"], "data:image/png;base64,iVBO");
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][1]["type"], "custom", "a custom tool as the client declared it");
    assert_eq!(body["tool_choice"], json!({"type": "function", "name": "weather"}));
    assert_eq!(body["max_output_tokens"], 300);
    assert_eq!(body["temperature"], 0.5);
    assert_eq!(body["reasoning"], json!({"effort": "xhigh", "summary": "auto"}));
    assert_eq!(body["text"], json!({"format": {"type": "json_object"}}));
    assert_eq!(body["stream"], true);
    // And a Responses client would read it back as it was meant.
    let back = parse_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(back.system, req.system);
    assert_eq!(back.messages, req.messages);
    assert_eq!(back.tools.len(), 2);
}

#[test]
fn tool_results_keep_their_pairing_and_parts() {
    let mut req = tool_loop(Vec::new());
    req.messages[2] = Message {
        role: Role::User,
        content: vec![Part::ToolResult(ToolResult {
            call_id: "call_1".into(),
            name: None,
            content: vec![text("one"), text("two")],
            is_error: false,
        })],
    };
    let body = upstream(&req);
    assert_eq!(body["input"][2]["type"], "function_call_output");
    assert_eq!(
        body["input"][2]["output"],
        json!([{"type": "input_text", "text": "one"}, {"type": "input_text", "text": "two"}])
    );
}
