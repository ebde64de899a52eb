//! Parsing and encoding requests.

use serde_json::{Value, json};

use crate::anthropic::sampling_edits;
use crate::anthropic::test_support::{SIGNATURE, parse_value};
use crate::{
    Document, DocumentSource, Effort, Image, ImageSource, Message, ModelTraits, Part,
    ProtocolError, Reasoning, ReasoningControl, Request, ResponseFormat, Role, ServerTool,
    TextBlock, Tool, ToolCall, ToolChoice, ToolResult,
};

use super::*;

/// A request as Claude Code sends it: billing/system blocks with cache_control,
/// tools (one a server tool), a thinking + tool_use / tool_result round trip, an
/// image, a mid-conversation system message and a server-side block to skip.
fn claude_code_request() -> Value {
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "temperature": 1,
        "stream": true,
        "metadata": {"user_id": "user_abc123_account__session_7f3e"},
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.",
             "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Here is useful information about the environment...",
             "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "tools": [
            {"name": "Bash", "description": "Executes a bash command",
             "input_schema": {"type": "object", "properties": {"command": {"type": "string"}},
                              "required": ["command"], "additionalProperties": false,
                              "$schema": "http://json-schema.org/draft-07/schema#"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
            {"name": "Read", "description": "Reads a file",
             "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}},
             "cache_control": {"type": "ephemeral"}}
        ],
        "thinking": {"type": "enabled", "budget_tokens": 31999},
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nAs you answer...\n</system-reminder>"},
                {"type": "text", "text": "what's in src/main.rs? also look at this",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                              "data": "iVBORw0KGgo="}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should read the file.", "signature": SIGNATURE},
                {"type": "text", "text": "I'll read it."},
                {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9",
                 "name": "Read", "input": {"file_path": "/repo/src/main.rs"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9",
                 "content": "fn main() {}", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "system", "content": "The user changed the file."},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                 "input": {"query": "rust main"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                {"type": "tool_use", "id": "toolu_02", "name": "Bash",
                 "input": {"command": "cat src/main.rs"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": true,
                 "content": [{"type": "text", "text": "permission denied"},
                             {"type": "image", "source": {"type": "url",
                                                           "url": "https://example.com/x.png"}}]},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                                "data": "ignored"}}
            ]}
        ]
    })
}

#[test]
fn parses_a_claude_code_request() {
    let req = parse_value(&claude_code_request()).unwrap();
    assert_eq!(req.model, "claude-sonnet-4-5-20250929");
    assert_eq!(req.max_tokens, Some(32000));
    assert_eq!(req.temperature, Some(1.0));
    assert!(req.stream);
    assert_eq!(req.user.as_deref(), Some("user_abc123_account__session_7f3e"));
    assert_eq!(
        req.system,
        vec![
            TextBlock {
                text: "You are Claude Code, Anthropic's official CLI for Claude.".into(),
                cache_control: Some(json!({"type": "ephemeral"})),
            },
            TextBlock {
                text: "Here is useful information about the environment...".into(),
                cache_control: Some(json!({"type": "ephemeral", "ttl": "1h"})),
            },
        ]
    );
    // The server tool is skipped; the others keep schema and cache marker.
    assert_eq!(req.tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["Bash", "Read"]);
    assert_eq!(req.tools[0].parameters["required"], json!(["command"]));
    assert_eq!(req.tools[1].cache_control, Some(json!({"type": "ephemeral"})));
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(31999) })
    );

    let roles: Vec<Role> = req.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::System, Role::Assistant, Role::User]
    );
    let m0 = &req.messages[0].content;
    assert_eq!(m0.len(), 3);
    assert_eq!(
        m0[1],
        Part::Text(TextBlock {
            text: "what's in src/main.rs? also look at this".into(),
            cache_control: Some(json!({"type": "ephemeral"})),
        })
    );
    assert_eq!(
        m0[2],
        Part::Image(Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            },
            detail: None,
            cache_control: None,
        })
    );
    assert_eq!(
        req.messages[1].content,
        vec![
            Part::Thinking {
                text: "I should read the file.".into(),
                signature: Some(SIGNATURE.into())
            },
            Part::Text(TextBlock::new("I'll read it.")),
            Part::ToolCall(ToolCall {
                id: "toolu_01A09q90qw90lq917835lq9".into(),
                name: "Read".into(),
                arguments: r#"{"file_path":"/repo/src/main.rs"}"#.into(),
                signature: None,
            }),
        ]
    );
    // The tool_result's cache marker moves onto its (only) content block.
    assert_eq!(
        req.messages[2].content,
        vec![Part::ToolResult(ToolResult {
            call_id: "toolu_01A09q90qw90lq917835lq9".into(),
            name: None,
            content: vec![Part::Text(TextBlock {
                text: "fn main() {}".into(),
                cache_control: Some(json!({"type": "ephemeral"})),
            })],
            is_error: false,
        })]
    );
    assert_eq!(req.messages[3], Message::text(Role::System, "The user changed the file."));
    // Server-side blocks are kept by name, for a translation to refuse.
    assert_eq!(
        req.messages[4].content,
        vec![
            Part::Untranslatable {
                what: "messages[4].content[0]: a `server_tool_use` block".into()
            },
            Part::Untranslatable {
                what: "messages[4].content[1]: a `web_search_tool_result` block".into()
            },
            Part::RedactedThinking { data: "EmwKAhgBEgy3va3pzix/LafPsn4a".into() },
            Part::ToolCall(ToolCall {
                id: "toolu_02".into(),
                name: "Bash".into(),
                arguments: r#"{"command":"cat src/main.rs"}"#.into(),
                signature: None,
            }),
        ]
    );
    // Tool result with blocks and is_error; a plain-text document has no
    // canonical form (only base64 and URL sources do).
    assert_eq!(
        req.messages[5].content,
        vec![
            Part::ToolResult(ToolResult {
                call_id: "toolu_02".into(),
                name: None,
                content: vec![
                    Part::Text(TextBlock::new("permission denied")),
                    Part::Image(Image {
                        source: ImageSource::Url { url: "https://example.com/x.png".into() },
                        detail: None,
                        cache_control: None,
                    }),
                ],
                is_error: true,
            }),
            Part::Untranslatable {
                what: "messages[5].content[1]: a document with a `text` source".into()
            },
        ]
    );
}

#[test]
fn re_encodes_a_claude_code_request_for_the_upstream() {
    let mut req = parse_value(&claude_code_request()).unwrap();
    // What the canonical model cannot carry is refused by name; an Anthropic
    // client's own body takes the fast path, where it goes as it came.
    let err = crate::Wire::Anthropic.encode_request(&req).unwrap_err();
    assert!(err.to_string().contains("messages[4].content[0]: a `server_tool_use` block"));
    for m in &mut req.messages {
        m.content.retain(|p| !matches!(p, Part::Untranslatable { .. }));
    }
    let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(body["max_tokens"], 32000);
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 31999}));
    assert!(body.get("temperature").is_none(), "temperature must go with thinking on");
    assert_eq!(body["stream"], true);
    assert_eq!(body["metadata"], json!({"user_id": "user_abc123_account__session_7f3e"}));
    assert_eq!(body["system"][1]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
    // The server tool is carried, not skipped: it goes back as it came.
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 3);
    assert_eq!(
        tools[2],
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    );
    assert!(body.get("tool_choice").is_none());

    let messages = body["messages"].as_array().unwrap();
    // user, assistant, user (tool_result + system reminder merged), assistant, user
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(messages[1]["content"][0]["signature"], SIGNATURE);
    assert_eq!(messages[1]["content"][2]["input"], json!({"file_path": "/repo/src/main.rs"}));
    let merged = messages[2]["content"].as_array().unwrap();
    assert_eq!(merged[0]["type"], "tool_result");
    assert_eq!(
        merged[0]["content"],
        json!([{"type": "text", "text": "fn main() {}", "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(
        merged[1],
        json!({"type": "text",
               "text": "<system-reminder>\nThe user changed the file.\n</system-reminder>"})
    );
    assert_eq!(
        messages[3]["content"][0],
        json!({"type": "redacted_thinking",
                                                 "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"})
    );
    assert_eq!(messages[4]["content"][0]["is_error"], true);
    assert_eq!(
        messages[4]["content"][0]["content"][1],
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}})
    );
}

#[test]
fn documents_parse_and_encode_with_what_they_carry() {
    let block = json!({"type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
        "title": "Q3", "context": "figures", "citations": {"enabled": true},
        "cache_control": {"type": "ephemeral"}});
    let by_url =
        json!({"type": "document", "source": {"type": "url", "url": "https://x.test/a.pdf"}});
    let body = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "read"}, block.clone(), by_url.clone(),
        {"type": "document", "source": {"type": "file", "file_id": "file_9"}},
    ]}]});
    let req = parse_value(&body).unwrap();
    let content = &req.messages[0].content;
    assert_eq!(
        content[1],
        Part::Document(Document {
            source: DocumentSource::Base64 {
                media_type: "application/pdf".into(),
                data: "JVBERi0=".into()
            },
            filename: None,
            title: Some("Q3".into()),
            context: Some("figures".into()),
            citations: Some(json!({"enabled": true})),
            cache_control: Some(json!({"type": "ephemeral"})),
        })
    );
    assert_eq!(
        content[3],
        Part::Untranslatable {
            what: "messages[0].content[3]: a document with a `file` source (file_9)".into()
        }
    );
    let mut req = req;
    req.messages[0].content.truncate(3);
    let out = encode_request(&req, ModelTraits::infer(crate::Wire::Anthropic, "m")).unwrap();
    assert_eq!(out["messages"][0]["content"][1], block);
    assert_eq!(out["messages"][0]["content"][2], by_url);
}

fn texts(turn: &Value) -> Vec<&str> {
    turn["content"].as_array().unwrap().iter().filter_map(|b| b["text"].as_str()).collect()
}

#[test]
fn blank_text_and_the_turns_it_leaves_empty_are_dropped() {
    let traits = ModelTraits::infer(crate::Wire::Anthropic, "m");
    let req = Request {
        model: "m".into(),
        system: vec![TextBlock::new(" "), TextBlock::new("rules")],
        messages: vec![
            Message::text(Role::User, "q1"),
            Message::text(Role::Assistant, "\n\n"),
            Message {
                role: Role::User,
                content: vec![Part::Text(TextBlock::new("q2")), Part::Text(TextBlock::new(""))],
            },
            Message::text(Role::System, " \t"),
        ],
        ..Request::default()
    };
    let out = encode_request(&req, traits).unwrap();
    assert_eq!(out["system"], json!([{"type": "text", "text": "rules"}]));
    let turns = out["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{out}");
    assert_eq!(texts(&turns[0]), ["q1", "q2"]);

    // A final turn of nothing else is the question: it goes as it is.
    let mut req = req;
    req.messages = vec![
        Message::text(Role::User, "q1"),
        Message::text(Role::Assistant, " "),
        Message::text(Role::User, "  "),
    ];
    let out = encode_request(&req, traits).unwrap();
    let turns = out["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 1, "{out}");
    assert_eq!(texts(&turns[0]), ["q1", "  "]);
}

#[test]
fn thinking_signature_survives_byte_exact() {
    // A signature with characters that JSON may escape (`/`, `+`, `=`) and an
    // escaped form in the input.
    let raw = br#"{"model":"m","max_tokens":2048,"messages":[
        {"role":"user","content":"hi"},
        {"role":"assistant","content":[{"type":"thinking","thinking":"hmm",
          "signature":"Ab+/\u002Bcd==\/x"},{"type":"text","text":"hello"}]},
        {"role":"user","content":"again"}]}"#;
    let req = parse_request(raw).unwrap();
    let Part::Thinking { signature, .. } = &req.messages[1].content[0] else {
        panic!("expected thinking")
    };
    assert_eq!(signature.as_deref(), Some("Ab+/+cd==/x"));
    let bytes = serde_json::to_vec(&crate::Wire::Anthropic.encode_request(&req).unwrap()).unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""signature":"Ab+/+cd==/x""#), "{text}");
    let again = parse_request(&bytes).unwrap();
    assert_eq!(again.messages[1].content[0], req.messages[1].content[0]);
}

#[test]
fn encode_request_merges_orders_and_drops_unsigned_thinking() {
    let req = Request {
        model: "claude-haiku-4-5".into(),
        messages: vec![
            Message::text(Role::User, "a"),
            // Empty text is refused by the API and carries nothing: dropped.
            Message::text(Role::User, ""),
            Message::text(Role::User, "b"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking { text: "from another provider".into(), signature: None },
                    // A Responses upstream's encrypted reasoning: not Claude's to check.
                    Part::Thinking {
                        text: "openai".into(),
                        signature: Some(crate::continuity::tag_reasoning(
                            crate::responses::FAMILY,
                            "gAAAAB-enc",
                        )),
                    },
                    Part::Text(TextBlock::new("calling")),
                    Part::ToolCall(ToolCall {
                        id: "c1".into(),
                        name: "f".into(),
                        arguments: String::new(),
                        signature: None,
                    }),
                ],
            },
            Message::text(Role::User, "text before result"),
            Message {
                role: Role::User,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: Some("f".into()),
                    content: vec![Part::Text(TextBlock::new("42"))],
                    is_error: false,
                })],
            },
            // Only unsigned thinking: the message vanishes, turns still alternate.
            Message {
                role: Role::Assistant,
                content: vec![Part::Thinking { text: "x".into(), signature: None }],
            },
            Message::text(Role::System, "be brief"),
        ],
        ..Request::default()
    };
    let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
    assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    assert!(body.get("stream").is_none());
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "a"},
                                         {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "calling"},
                {"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "c1",
                 "content": [{"type": "text", "text": "42"}]},
                {"type": "text", "text": "text before result"},
                {"type": "text", "text": "<system-reminder>\nbe brief\n</system-reminder>"}]}
        ])
    );
}

#[test]
fn encode_request_options() {
    let base = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        tools: vec![Tool {
            name: "noargs".into(),
            description: None,
            parameters: Value::Null,
            strict: Some(true),
            cache_control: None,
            freeform: None,
            namespace: None,
        }],
        ..Request::default()
    };

    // Thinking: budget raised to the minimum, max_tokens raised above it, sampling
    // parameters the API refuses with thinking dropped.
    let req = Request {
        max_tokens: Some(500),
        temperature: Some(0.2),
        top_k: Some(5),
        top_p: Some(0.5),
        reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(10) }),
        parallel_tool_calls: Some(false),
        response_format: Some(ResponseFormat::JsonObject),
        ..base.clone()
    };
    let body = crate::Wire::Anthropic.encode_request(&req).unwrap();
    assert_eq!(body["thinking"], json!({"type": "enabled", "budget_tokens": 1024}));
    assert_eq!(body["max_tokens"], 2048);
    for field in ["temperature", "top_k", "top_p"] {
        assert!(body.get(field).is_none(), "{field}");
    }
    assert_eq!(body["tool_choice"], json!({"type": "auto", "disable_parallel_tool_use": true}));
    assert_eq!(
        body["tools"][0],
        json!({"name": "noargs", "strict": true,
               "input_schema": {"type": "object", "properties": {}}})
    );
    assert_eq!(body["system"], json!([{"type": "text", "text": JSON_OBJECT_INSTRUCTION}]));

    // The budget must be strictly below max_tokens: equal is raised too, above is kept.
    let at = |max_tokens: u64| {
        let req = Request {
            max_tokens: Some(max_tokens),
            reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(4000) }),
            ..base.clone()
        };
        crate::Wire::Anthropic.encode_request(&req).unwrap()["max_tokens"].as_u64().unwrap()
    };
    assert_eq!(at(4000), 5024);
    assert_eq!(at(4001), 4001);

    // Effort only: its budget; explicit disable: no thinking, sampling kept.
    let effort = Request {
        max_tokens: Some(64000),
        reasoning: Some(Reasoning {
            enabled: true,
            effort: Some(Effort::Low),
            budget_tokens: None,
        }),
        ..base.clone()
    };
    assert_eq!(
        crate::Wire::Anthropic.encode_request(&effort).unwrap()["thinking"]["budget_tokens"],
        2048
    );
    let off = Request {
        temperature: Some(0.2),
        top_k: Some(5),
        reasoning: Some(Reasoning { enabled: false, effort: None, budget_tokens: None }),
        tool_choice: Some(ToolChoice::Required),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "person".into(),
            schema: json!({"type": "object"}),
            strict: Some(true),
            description: None,
        }),
        ..base.clone()
    };
    let body = crate::Wire::Anthropic.encode_request(&off).unwrap();
    assert!(body.get("thinking").is_none());
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["top_k"], 5);
    assert_eq!(body["tool_choice"], json!({"type": "any"}));
    assert_eq!(
        body["output_config"],
        json!({"format": {"type": "json_schema", "schema": {"type": "object"}}})
    );

    // Invalid tool arguments are an error, not a silent `{}`.
    let bad = Request {
        messages: vec![Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall(ToolCall {
                id: "c".into(),
                name: "f".into(),
                arguments: "{not json".into(),
                signature: None,
            })],
        }],
        ..base
    };
    assert!(matches!(
        crate::Wire::Anthropic.encode_request(&bad),
        Err(ProtocolError::InvalidBody(_))
    ));
}

#[test]
fn parses_options_and_structured_output() {
    let req = parse_value(&json!({
        "model": "claude-opus-4-6", "max_tokens": 100, "top_p": 0.9, "top_k": 40,
        "stop_sequences": ["\n\nHuman:"],
        "system": "be terse",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "t", "input_schema": {"type": "object"}}],
        "tool_choice": {"type": "tool", "name": "t", "disable_parallel_tool_use": true},
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "max",
                          "format": {"type": "json_schema", "schema": {"type": "object"}}}
    }))
    .unwrap();
    assert_eq!(req.system, vec![TextBlock::new("be terse")]);
    assert_eq!(req.top_p, Some(0.9));
    assert_eq!(req.top_k, Some(40));
    assert_eq!(req.stop, vec!["\n\nHuman:".to_owned()]);
    assert!(!req.stream);
    assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "t".into() }));
    assert_eq!(req.parallel_tool_calls, Some(false));
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: true, effort: Some(Effort::Max), budget_tokens: None })
    );
    assert_eq!(
        req.response_format,
        Some(ResponseFormat::JsonSchema {
            name: "response".into(),
            schema: json!({"type": "object"}),
            strict: None,
            description: None,
        })
    );

    // Beta `output_format`, `any`, disabled thinking.
    let req = parse_value(&json!({
        "model": "m", "max_tokens": 1, "messages": [],
        "tool_choice": {"type": "any"},
        "thinking": {"type": "disabled"},
        "output_format": {"type": "json_schema", "schema": {"type": "array"}}
    }))
    .unwrap();
    assert_eq!(req.tool_choice, Some(ToolChoice::Required));
    assert_eq!(req.parallel_tool_calls, None);
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: false, effort: None, budget_tokens: None })
    );
    assert!(matches!(
        req.response_format,
        Some(ResponseFormat::JsonSchema { ref schema, .. }) if *schema == json!({"type": "array"})
    ));

    // `none`; effort without thinking.
    let req = parse_value(&json!({
        "model": "m", "messages": [], "tool_choice": {"type": "none"},
        "output_config": {"effort": "low"}
    }))
    .unwrap();
    assert_eq!(req.tool_choice, Some(ToolChoice::None));
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: true, effort: Some(Effort::Low), budget_tokens: None })
    );
    assert_eq!(req.max_tokens, None);
}

#[test]
fn malformed_requests_name_the_field() {
    let err = |v: Value| match parse_value(&v) {
        Err(ProtocolError::InvalidBody(msg)) => msg,
        other => panic!("expected InvalidBody, got {other:?}"),
    };
    assert!(matches!(parse_request(b"{not json"), Err(ProtocolError::InvalidBody(_))));
    assert!(matches!(parse_request(b"[1,2]"), Err(ProtocolError::InvalidBody(_))));
    assert!(err(json!({"messages": []})).starts_with("model"));
    assert!(err(json!({"model": "m"})).starts_with("messages"));
    assert!(
        err(json!({"model": "m", "messages": [], "max_tokens": "many"})).starts_with("max_tokens:")
    );
    let msg = err(json!({"model": "m", "messages": [
        {"role": "user", "content": "ok"},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]}]}));
    assert!(msg.starts_with("messages[1].content[0]:") && msg.contains("`id`"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [{"role": "bot", "content": "x"}]}));
    assert!(msg.starts_with("messages[0].role"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [{"role": "user", "content": 5}]}));
    assert!(msg.starts_with("messages[0].content"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "x", "content": [{"type": "text"}]}]}]}));
    assert!(msg.starts_with("messages[0].content[0].content[0]:"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [], "system": [{"type": "text"}]}));
    assert!(msg.starts_with("system[0]:"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [], "tools": [{"input_schema": {}}]}));
    assert!(msg.starts_with("tools[0]:"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [], "tool_choice": {"type": "tool"}}));
    assert!(msg.starts_with("tool_choice.name"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [], "tool_choice": {"type": "sometimes"}}));
    assert!(msg.starts_with("tool_choice.type"), "{msg}");
    let msg = err(json!({"model": "m", "messages": [],
                        "output_config": {"format": {"type": "json_schema"}}}));
    assert!(msg.starts_with("output_config.format.schema"), "{msg}");
}

#[test]
fn effort_controlled_models_get_adaptive_thinking_and_no_refused_sampling() {
    let adaptive = ModelTraits {
        family: crate::Family::Claude,
        reasoning: ReasoningControl::Effort,
        sampling: true,
        one_sampler: false,
        takes_max_tokens: true,
    };
    let strict = ModelTraits {
        family: crate::Family::Claude,
        reasoning: ReasoningControl::Effort,
        sampling: false,
        one_sampler: true,
        takes_max_tokens: true,
    };
    let base = Request {
        model: "claude-opus-4-7".into(),
        messages: vec![Message::text(Role::User, "hi")],
        max_tokens: Some(500),
        temperature: Some(0.2),
        top_p: Some(0.97),
        top_k: Some(5),
        ..Request::default()
    };
    let with = |reasoning, format| Request {
        reasoning: Some(reasoning),
        response_format: format,
        ..base.clone()
    };
    let high = Reasoning { enabled: true, effort: Some(Effort::High), budget_tokens: None };

    // Effort: adaptive + effort beside the structured-output format; max_tokens as
    // asked (no budget to fit); sampling as with any thinking (top_p ≥ 0.95 kept).
    let schema = ResponseFormat::JsonSchema {
        name: "r".into(),
        schema: json!({"type": "object"}),
        strict: None,
        description: None,
    };
    let body = encode_request(&with(high.clone(), Some(schema)), adaptive).unwrap();
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert_eq!(
        body["output_config"],
        json!({"effort": "high",
               "format": {"type": "json_schema", "schema": {"type": "object"}}})
    );
    assert_eq!(body["max_tokens"], 500);
    assert_eq!(body["top_p"], 0.97);
    assert!(body.get("temperature").is_none() && body.get("top_k").is_none());

    // A budget maps to the nearest effort; minimal becomes low (Anthropic has none);
    // adaptive without an effort leaves the model's default.
    let budget = Reasoning { enabled: true, effort: None, budget_tokens: Some(8000) };
    let body = encode_request(&with(budget, None), adaptive).unwrap();
    assert_eq!(body["output_config"], json!({"effort": "medium"}));
    let minimal = Reasoning { enabled: true, effort: Some(Effort::Minimal), budget_tokens: None };
    let body = encode_request(&with(minimal, None), adaptive).unwrap();
    assert_eq!(body["output_config"]["effort"], "low");
    let default = Reasoning { enabled: true, effort: None, budget_tokens: None };
    let body = encode_request(&with(default, None), adaptive).unwrap();
    assert_eq!(body["thinking"], json!({"type": "adaptive"}));
    assert!(body.get("output_config").is_none());

    // Models that refuse sampling parameters never get them, thinking or not.
    let off = Reasoning { enabled: false, effort: None, budget_tokens: None };
    for body in [
        encode_request(&with(off, None), strict).unwrap(),
        encode_request(&base, strict).unwrap(),
        encode_request(&with(high, None), strict).unwrap(),
    ] {
        for field in ["temperature", "top_p", "top_k"] {
            assert!(body.get(field).is_none(), "{field} in {body}");
        }
    }
    let body = encode_request(&base, adaptive).unwrap();
    assert_eq!((body["temperature"].clone(), body["top_k"].clone()), (json!(0.2), json!(5)));

    // The wire's default path infers the traits from the model name.
    let body = crate::Wire::Anthropic.encode_request(&base).unwrap();
    assert!(body.get("temperature").is_none(), "claude-opus-4-7 refuses sampling");
}

#[test]
fn foreign_tool_ids_map_deterministically_into_the_apis_pattern() {
    assert_eq!(tool_id("toolu_01A09q90qw90lq917835lq9"), "toolu_01A09q90qw90lq917835lq9");
    let mapped = tool_id("functions.get_weather:0");
    assert!(mapped.starts_with("functions_get_weather_0_") && is_tool_id(&mapped), "{mapped}");
    assert_eq!(mapped, tool_id("functions.get_weather:0"), "a call and its result pair");
    assert_ne!(mapped, tool_id("functions.get_weather_0"));
    let long = "c".repeat(65);
    assert!(is_tool_id(&tool_id(&long)) && tool_id(&long) != long);
    assert!(is_tool_id(&tool_id("")));
}

#[test]
fn a_tool_loop_continues_without_thinking_when_its_turn_has_none_of_its_own() {
    let req = |assistant: Vec<Part>| Request {
        reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(2048) }),
        messages: vec![
            Message { role: Role::User, content: vec![Part::Text(TextBlock::new("go"))] },
            Message { role: Role::Assistant, content: assistant },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: None,
                    content: vec![],
                    is_error: false,
                })],
            },
        ],
        ..Request::default()
    };
    let call = Part::ToolCall(ToolCall {
        id: "c1".into(),
        name: "f".into(),
        arguments: "{}".into(),
        signature: None,
    });
    let foreign = Part::Thinking { text: "openai reasoning".into(), signature: None };
    let signed = Part::Thinking { text: "mine".into(), signature: Some("c2ln".into()) };
    assert!(continues_without_thinking(&req(vec![call.clone()])));
    assert!(continues_without_thinking(&req(vec![foreign, call.clone()])));
    assert!(!continues_without_thinking(&req(vec![signed, call.clone()])));
    let mut off = req(vec![call.clone()]);
    off.reasoning = None;
    assert!(!continues_without_thinking(&off));
    let traits = ModelTraits::infer(crate::Wire::Anthropic, "claude-sonnet-4-5");
    let body = encode_request(&req(vec![Part::Text(TextBlock::new("x")), call]), traits).unwrap();
    assert!(body.get("thinking").is_none(), "{body}");
}

/// Server tools, MCP servers and deferred tools are carried (never skipped), the
/// tier kept, and Claude Code's session read from its user id.
#[test]
fn server_tools_the_tier_and_the_session_are_carried() {
    let body = json!({
        "model": "claude-sonnet-4-6", "max_tokens": 1024,
        "messages": [{"role": "user", "content": "find it"}],
        "metadata": {"user_id": "user_ab12_account__session_5b0c8a3e-1b2c-4d5e-8f90-0a1b2c3d4e5f"},
        "service_tier": "standard_only",
        "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "docs"}],
        "tools": [
            {"type": "mcp_toolset", "mcp_server_name": "docs"},
            {"name": "lookup", "input_schema": {"type": "object"}, "defer_loading": true},
            {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
            {"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2}
        ]
    });
    let req = parse_value(&body).unwrap();
    assert_eq!(req.tools.len(), 1);
    assert_eq!(req.extras.deferred_tools, ["lookup"]);
    let kinds: Vec<(Option<ServerTool>, &str, &str)> = req
        .extras
        .hosted_tools
        .iter()
        .map(|t| (t.kind, t.tool_type.as_str(), t.path.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Some(ServerTool::Mcp), "mcp_toolset", "tools[0]"),
            (Some(ServerTool::ToolSearch), "tool_search_tool_regex_20251119", "tools[2]"),
            (Some(ServerTool::WebFetch), "web_fetch_20250910", "tools[3]"),
            (Some(ServerTool::Mcp), crate::MCP_SERVER, "mcp_servers[0]"),
        ]
    );
    assert_eq!(req.extras.service_tier.as_deref(), Some("standard_only"));
    assert_eq!(req.extras.session_id.as_deref(), Some("5b0c8a3e-1b2c-4d5e-8f90-0a1b2c3d4e5f"));
    // The user id still reaches the provider as the end user's (never a tenant).
    assert_eq!(req.user.as_deref(), body["metadata"]["user_id"].as_str());
    // Re-encoded for Anthropic (library callers): everything goes back.
    let out = crate::Wire::Anthropic.encode_request(&req).unwrap();
    assert_eq!(out["mcp_servers"], body["mcp_servers"]);
    assert_eq!(out["service_tier"], "standard_only");
    assert_eq!(out["tools"][0]["defer_loading"], true);
    assert_eq!(out["tools"].as_array().unwrap().len(), 4);
    // Elsewhere MCP cannot run: refused naming the tool.
    let err = crate::Wire::Gemini.encode_request(&req).unwrap_err().to_string();
    assert!(err.contains("the `mcp_toolset` tool (tools[0])"), "{err}");
}

/// Claude from Opus 4.1 on takes `temperature` or `top_p`, not both: a translation
/// keeps `temperature`, and the record hears of `top_p`. With thinking on only
/// `top_p` goes (thinking needs the default temperature), so it stays.
#[test]
fn one_sampler_models_get_temperature_without_top_p() {
    let traits = ModelTraits::infer(Wire::Anthropic, "claude-sonnet-4-5-20250929");
    assert!(traits.one_sampler && traits.sampling);
    let req = Request {
        model: "claude-sonnet-4-5".into(),
        messages: vec![Message::text(Role::User, "hi")],
        temperature: Some(0.0),
        top_p: Some(0.95),
        top_k: Some(40),
        ..Request::default()
    };
    let body = encode_request(&req, traits).unwrap();
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["top_k"], 40);
    assert!(body.get("top_p").is_none(), "{body}");
    assert_eq!(
        sampling_edits(&req, traits, false),
        ["top_p: dropped (the model takes temperature or top_p, not both)"]
    );

    let top_p_only = Request { temperature: None, ..req.clone() };
    let body = encode_request(&top_p_only, traits).unwrap();
    assert_eq!(body["top_p"], 0.95);
    assert!(sampling_edits(&top_p_only, traits, false).is_empty());

    let thinking = Request {
        reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(2048) }),
        max_tokens: Some(4096),
        ..req.clone()
    };
    let body = encode_request(&thinking, traits).unwrap();
    assert_eq!(body["top_p"], 0.95);
    assert!(body.get("temperature").is_none(), "{body}");
    assert!(
        sampling_edits(&thinking, traits, false).is_empty(),
        "thinking's drop, not the model's"
    );

    // Opus 4.0 takes both; Opus 4.7 takes none, and the record says so.
    let body =
        encode_request(&req, ModelTraits::infer(Wire::Anthropic, "claude-opus-4-0")).unwrap();
    assert_eq!((&body["temperature"], &body["top_p"]), (&json!(0.0), &json!(0.95)));
    let opus_47 = ModelTraits::infer(Wire::Anthropic, "claude-opus-4-7");
    assert_eq!(
        sampling_edits(&req, opus_47, false),
        [
            "temperature: dropped (the model takes no sampling parameters)",
            "top_p: dropped (the model takes no sampling parameters)",
            "top_k: dropped (the model takes no sampling parameters)",
        ]
    );
}

/// `{"type": "tool"}` naming a server tool (and no client tool) forces that
/// server tool; the server tool's own blocks in the history say which tool the
/// conversation used.
#[test]
fn a_tool_choice_naming_a_server_tool_forces_it() {
    let body = |tools: Value| {
        json!({"model": "claude-sonnet-4-6", "max_tokens": 256,
               "messages": [
                   {"role": "user", "content": "search"},
                   {"role": "assistant", "content": [
                       {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust"}},
                       {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
                       {"type": "text", "text": "Rust is a language."}]},
                   {"role": "user", "content": "again"}],
               "tools": tools,
               "tool_choice": {"type": "tool", "name": "web_search"}})
    };
    let server = json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 3});
    let req = parse_value(&body(json!([server]))).unwrap();
    assert_eq!(req.tool_choice, Some(ToolChoice::Hosted { path: "tools[0]".into() }));
    assert_eq!(req.extras.history_tools, crate::ServerTools::of([ServerTool::WebSearch]));
    // A client tool of that name is the one meant.
    let client = json!({"name": "web_search", "input_schema": {"type": "object"}});
    let req = parse_value(&body(json!([client]))).unwrap();
    assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "web_search".into() }));
}
