//! Parsing and encoding requests: recorded requests, tools, and what is refused.

use serde_json::{Value, json};

use crate::responses::test_support::{accumulate, decode, parse, streamed_for, text};
use crate::responses::{encode_response_for, parse_response};
use crate::{
    Document, DocumentSource, Effort, HostedTool, Image, ImageSource, Message, Part, ProtocolError,
    Reasoning, Request, Response, ResponseFormat, Role, ServerTool, StopReason, TextBlock, Tool,
    ToolCall, ToolChoice, ToolResult, Usage,
};

use super::*;
use crate::Dialect;
use crate::responses::encode_request;

// ---------------------------------------------------------------------------------
// Recorded requests
// ---------------------------------------------------------------------------------

/// A Codex turn: instructions, developer and environment messages, a shell call
/// with its output, hosted tools (carried by kind), a custom (free-form) tool
/// that becomes a function of one string, reasoning effort.
#[test]
fn parses_a_codex_request() {
    let body = json!({
        "model": "gpt-5-codex",
        "instructions": "You are Codex, based on GPT-5. You are running as a coding agent.",
        "input": [
            {"type": "message", "role": "developer", "content": [
                {"type": "input_text", "text": "<permissions instructions>sandbox: workspace-write</permissions instructions>"}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "list the files"}
            ]},
            {"type": "reasoning", "summary": [
                {"type": "summary_text", "text": "**Listing files**"},
                {"type": "summary_text", "text": "Running ls."}
            ], "content": null, "encrypted_content": "gAAAAABo-opaque"},
            {"type": "function_call", "name": "shell",
             "arguments": "{\"command\":[\"ls\",\"-a\"],\"workdir\":\"/repo\"}",
             "call_id": "call_Xa1"},
            {"type": "function_call_output", "call_id": "call_Xa1",
             "output": "Cargo.toml\nsrc\n"},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "The repo has `Cargo.toml` and `src`."}
            ]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "thanks"}
            ]}
        ],
        "tools": [
            {"type": "function", "name": "shell", "description": "Runs a shell command and returns its output.",
             "strict": false,
             "parameters": {"type": "object", "properties": {
                 "command": {"type": "array", "items": {"type": "string"}},
                 "workdir": {"type": "string"}
             }, "required": ["command"], "additionalProperties": false}},
            {"type": "web_search"},
            {"type": "custom", "name": "apply_patch", "description": "Apply a patch",
             "format": {"type": "grammar", "syntax": "lark", "definition": "start: x"}},
            {"type": "local_shell"}
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "0199a7f2-5c1e-7a40-b3c1-6f2f0e7f8a9b",
        "text": {"verbosity": "low"}
    });
    let expected = Request {
        model: "gpt-5-codex".into(),
        system: vec![
            TextBlock::new("You are Codex, based on GPT-5. You are running as a coding agent."),
            TextBlock::new(
                "<permissions instructions>sandbox: workspace-write</permissions instructions>",
            ),
        ],
        messages: vec![
            Message {
                role: Role::User,
                content: vec![
                    text("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
                    text("list the files"),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    Part::Thinking {
                        text: "**Listing files**\n\nRunning ls.".into(),
                        signature: None,
                    },
                    Part::ToolCall(ToolCall {
                        id: "call_Xa1".into(),
                        name: "shell".into(),
                        arguments: "{\"command\":[\"ls\",\"-a\"],\"workdir\":\"/repo\"}".into(),
                        signature: None,
                    }),
                ],
            },
            Message {
                role: Role::User,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "call_Xa1".into(),
                    name: None,
                    content: vec![text("Cargo.toml\nsrc\n")],
                    is_error: false,
                })],
            },
            Message::text(Role::Assistant, "The repo has `Cargo.toml` and `src`."),
            Message::text(Role::User, "thanks"),
        ],
        tools: vec![
            Tool {
                name: "shell".into(),
                description: Some("Runs a shell command and returns its output.".into()),
                parameters: json!({"type": "object", "properties": {
                "command": {"type": "array", "items": {"type": "string"}},
                "workdir": {"type": "string"}
            }, "required": ["command"], "additionalProperties": false}),
                strict: Some(false),
                cache_control: None,
                freeform: None,
                namespace: None,
            },
            Tool {
                name: "apply_patch".into(),
                description: Some("Apply a patch".into()),
                parameters: json!({"type": "object", "properties": {"input": {
                "type": "string",
                "description": "The tool's input, as plain text (not JSON). It must match this lark grammar:\nstart: x",
            }}, "required": ["input"], "additionalProperties": false}),
                strict: None,
                cache_control: None,
                freeform: Some(
                    json!({"type": "grammar", "syntax": "lark", "definition": "start: x"}),
                ),
                namespace: None,
            },
        ],
        tool_choice: Some(ToolChoice::Auto),
        parallel_tool_calls: Some(false),
        stream: true,
        reasoning: Some(Reasoning {
            enabled: true,
            effort: Some(Effort::Medium),
            budget_tokens: None,
        }),
        // Hosted tools are carried by kind, where they were declared; the cache key
        // and `store` as Codex set them.
        extras: Extras {
            hosted_tools: vec![
                HostedTool {
                    kind: Some(ServerTool::WebSearch),
                    dialect: Dialect::OpenAiResponses,
                    tool_type: "web_search".into(),
                    path: "tools[1]".into(),
                    config: json!({"type": "web_search"}),
                },
                HostedTool {
                    kind: Some(ServerTool::Shell),
                    dialect: Dialect::OpenAiResponses,
                    tool_type: "local_shell".into(),
                    path: "tools[3]".into(),
                    config: json!({"type": "local_shell"}),
                },
            ],
            prompt_cache_key: Some("0199a7f2-5c1e-7a40-b3c1-6f2f0e7f8a9b".into()),
            store: Some(false),
            ..Extras::default()
        },
        ..Request::default()
    };
    assert_eq!(parse(body).unwrap(), expected);
}

/// Codex's `apply_patch` as a free-form tool: its calls and outputs in the
/// history, its choice, and the way back (whole and streamed).
#[test]
fn custom_tools_travel_as_one_string_argument() {
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+hi \"there\"\n*** End Patch\n";
    let body = json!({
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": "add a file"},
            {"type": "custom_tool_call", "call_id": "call_p1", "name": "apply_patch", "input": patch},
            {"type": "custom_tool_call_output", "call_id": "call_p1", "output": "Done!"}
        ],
        "tools": [{"type": "custom", "name": "apply_patch", "description": "Apply a patch"}],
        "tool_choice": {"type": "custom", "name": "apply_patch"}
    });
    let req = parse(body).unwrap();
    let args = json!({"input": patch}).to_string();
    assert_eq!(
        req.messages[1].content,
        vec![Part::ToolCall(ToolCall {
            id: "call_p1".into(),
            name: "apply_patch".into(),
            arguments: args.clone(),
            signature: None,
        })]
    );
    assert!(matches!(&req.messages[2].content[0], Part::ToolResult(r) if r.call_id == "call_p1"));
    assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "apply_patch".into() }));
    let tool = &req.tools[0];
    assert_eq!(tool.freeform, Some(Value::Null));
    assert_eq!(tool.parameters["required"], json!(["input"]));

    // Back to the client: the call is a custom_tool_call carrying the text; a
    // function tool's call stays a function_call.
    let resp = Response {
        id: "r1".into(),
        model: "m".into(),
        content: vec![
            Part::ToolCall(ToolCall {
                id: "call_p2".into(),
                name: "apply_patch".into(),
                arguments: args.clone(),
                signature: None,
            }),
            Part::ToolCall(ToolCall {
                id: "call_s".into(),
                name: "shell".into(),
                arguments: "{}".into(),
                signature: None,
            }),
        ],
        stop_reason: Some(StopReason::ToolUse),
        stop_sequence: None,
        usage: Usage::default(),
    };
    let whole = encode_response_for(&resp, &req.tools);
    assert_eq!(whole["output"][0]["type"], "custom_tool_call");
    assert_eq!(whole["output"][0]["input"], patch);
    assert_eq!(whole["output"][0]["call_id"], "call_p2");
    assert_eq!(whole["output"][1]["type"], "function_call");
    let back = parse_response(whole.to_string().as_bytes()).unwrap();
    assert_eq!(back.content, resp.content);

    let events = streamed_for(&resp, &req.tools);
    let types: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
    assert!(types.contains(&"response.custom_tool_call_input.done"), "{types:?}");
    let done: Value = events
        .iter()
        .find(|e| e.event.as_deref() == Some("response.custom_tool_call_input.done"))
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .unwrap();
    assert_eq!(done["input"], patch);
    assert_eq!(accumulate(&decode(&events).unwrap()).content, resp.content);
}

/// Codex declares its sub-agent tools in a `namespace`. Other wires see them
/// as qualified functions; calls go back with the namespace and inner name.
#[test]
fn namespaced_tools_are_qualified_and_come_back() {
    let body = json!({
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": "spawn one"},
            {"type": "function_call", "call_id": "c1", "namespace": "multi_agent_v1",
             "name": "spawn_agent", "arguments": "{\"task\":\"a\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "agent-1"}
        ],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {"type": "object"}, "strict": false},
            {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.", "tools": [
                {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}, "strict": false},
                {"type": "custom", "name": "notes"}
            ]},
            {"type": "web_search"}
        ]
    });
    let req = parse(body).unwrap();
    let names: Vec<(&str, Option<&str>)> =
        req.tools.iter().map(|t| (t.name.as_str(), t.namespace.as_deref())).collect();
    assert_eq!(
        names,
        [
            ("exec_command", None),
            ("multi_agent_v1__spawn_agent", Some("multi_agent_v1")),
            ("multi_agent_v1__notes", Some("multi_agent_v1")),
        ]
    );
    assert!(req.tools[2].freeform.is_some());
    assert!(matches!(&req.messages[1].content[0],
        Part::ToolCall(c) if c.name == "multi_agent_v1__spawn_agent"));

    // The request round-trips through the wire form (namespaces regrouped).
    let wire = encode_request(&req).unwrap();
    assert_eq!(wire["tools"][1]["type"], "namespace");
    assert_eq!(wire["tools"][1]["tools"][0]["name"], "spawn_agent");
    let back = parse_request(wire.to_string().as_bytes()).unwrap();
    assert_eq!(back.tools, req.tools);

    let resp = Response {
        id: "r1".into(),
        model: "m".into(),
        content: vec![
            Part::ToolCall(ToolCall {
                id: "c2".into(),
                name: "multi_agent_v1__spawn_agent".into(),
                arguments: "{}".into(),
                signature: None,
            }),
            Part::ToolCall(ToolCall {
                id: "c3".into(),
                name: "multi_agent_v1__notes".into(),
                arguments: json!({"input": "x"}).to_string(),
                signature: None,
            }),
        ],
        stop_reason: Some(StopReason::ToolUse),
        stop_sequence: None,
        usage: Usage::default(),
    };
    let whole = encode_response_for(&resp, &req.tools);
    assert_eq!(whole["output"][0]["namespace"], "multi_agent_v1");
    assert_eq!(whole["output"][0]["name"], "spawn_agent");
    assert_eq!(whole["output"][1]["type"], "custom_tool_call");
    assert_eq!(whole["output"][1]["name"], "notes");
    assert_eq!(whole["output"][1]["namespace"], "multi_agent_v1");
    assert_eq!(parse_response(whole.to_string().as_bytes()).unwrap().content, resp.content);

    let events = streamed_for(&resp, &req.tools);
    let added: Value = events
        .iter()
        .find(|e| e.event.as_deref() == Some("response.output_item.added"))
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .unwrap();
    assert_eq!(added["item"]["namespace"], "multi_agent_v1");
    assert_eq!(accumulate(&decode(&events).unwrap()).content, resp.content);
}

/// The Python SDK's `client.responses.create(model=…, input="…")`.
#[test]
fn parses_the_sdk_string_input_form() {
    let body = json!({
        "model": "gpt-4.1",
        "input": "Tell me a three sentence bedtime story about a unicorn."
    });
    let expected = Request {
        model: "gpt-4.1".into(),
        messages: vec![Message::text(
            Role::User,
            "Tell me a three sentence bedtime story about a unicorn.",
        )],
        ..Request::default()
    };
    assert_eq!(parse(body).unwrap(), expected);
}

/// Structured outputs (`text.format` json_schema) with role-only messages, plus the
/// sampling fields, `safety_identifier` and metadata.
#[test]
fn parses_a_json_schema_text_format() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "date": {"type": "string"},
            "participants": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["name", "date", "participants"],
        "additionalProperties": false
    });
    let body = json!({
        "model": "gpt-4o-2024-08-06",
        "input": [
            {"role": "system", "content": "Extract the event information."},
            {"role": "user", "content": "Alice and Bob are going to a science fair on Friday."}
        ],
        "text": {"format": {"type": "json_schema", "name": "calendar_event",
                            "schema": schema, "strict": true}},
        "max_output_tokens": 512,
        "temperature": 0.2,
        "top_p": 0.9,
        "safety_identifier": "user-1234",
        "metadata": {"team": "events"},
        "previous_response_id": null,
        "store": true,
        "service_tier": "auto",
        "truncation": "disabled"
    });
    let expected = Request {
        model: "gpt-4o-2024-08-06".into(),
        system: vec![TextBlock::new("Extract the event information.")],
        messages: vec![Message::text(
            Role::User,
            "Alice and Bob are going to a science fair on Friday.",
        )],
        max_tokens: Some(512),
        temperature: Some(0.2),
        top_p: Some(0.9),
        response_format: Some(ResponseFormat::JsonSchema {
            name: "calendar_event".into(),
            schema,
            strict: Some(true),
            description: None,
        }),
        metadata: json!({"team": "events"}).as_object().cloned(),
        extras: Extras {
            safety_identifier: Some("user-1234".into()),
            service_tier: Some("auto".into()),
            store: Some(true),
            ..Extras::default()
        },
        ..Request::default()
    };
    assert_eq!(parse(body).unwrap(), expected);
}

#[test]
fn parses_images_rich_tool_output_and_mid_conversation_system() {
    let body = json!({
        "model": "m",
        "input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "what is this?"},
                {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "high"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
            ]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "refusal", "refusal": "I can't help with that."}
            ]},
            {"type": "message", "role": "developer", "content": "Be nicer."},
            {"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "screenshot:"},
                {"type": "input_image", "image_url": "https://example.com/s.png"}
            ]}
        ],
        "tool_choice": {"type": "function", "name": "shell"},
        "reasoning": {"effort": "none"}
    });
    let req = parse(body).unwrap();
    assert!(req.system.is_empty());
    assert_eq!(
        req.messages,
        vec![
            Message {
                role: Role::User,
                content: vec![
                    text("what is this?"),
                    Part::Image(Image {
                        source: ImageSource::Url { url: "https://example.com/a.png".into() },
                        detail: Some("high".into()),
                        cache_control: None,
                    }),
                    Part::Image(Image {
                        source: ImageSource::Base64 {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                        detail: None,
                        cache_control: None,
                    }),
                ],
            },
            Message::text(Role::Assistant, "I can't help with that."),
            Message::text(Role::System, "Be nicer."),
            Message {
                role: Role::User,
                content: vec![Part::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: None,
                    content: vec![
                        text("screenshot:"),
                        Part::Image(Image {
                            source: ImageSource::Url { url: "https://example.com/s.png".into() },
                            detail: None,
                            cache_control: None,
                        }),
                    ],
                    is_error: false,
                })],
            },
        ]
    );
    assert_eq!(req.tool_choice, Some(ToolChoice::Tool { name: "shell".into() }));
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: false, effort: None, budget_tokens: None })
    );
}

// ---------------------------------------------------------------------------------
// Request errors
// ---------------------------------------------------------------------------------

#[test]
fn input_files_are_documents_inline_or_by_url() {
    let body = json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_text", "text": "read"},
        {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
        {"type": "input_file", "filename": "b.pdf", "file_data": "JVBERi0="},
        {"type": "input_file", "file_url": "https://x.test/c.pdf"},
    ]}]});
    let req = parse(body).unwrap();
    let pdf =
        DocumentSource::Base64 { media_type: "application/pdf".into(), data: "JVBERi0=".into() };
    let content = &req.messages[0].content;
    assert_eq!(
        content[1],
        Part::Document(Document { filename: Some("a.pdf".into()), ..Document::new(pdf.clone()) })
    );
    assert_eq!(
        content[2],
        Part::Document(Document { filename: Some("b.pdf".into()), ..Document::new(pdf) })
    );
    assert_eq!(
        content[3],
        Part::Document(Document::new(DocumentSource::Url {
            url: "https://x.test/c.pdf".into(),
            media_type: None
        }))
    );
    // And out again, as the same parts.
    let out = encode_request(&req).unwrap();
    let parts = &out["input"][0]["content"];
    assert_eq!(
        parts[1],
        json!({"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="})
    );
    assert_eq!(parts[3], json!({"type": "input_file", "file_url": "https://x.test/c.pdf"}));

    // A file by id is kept by name: the fast path takes the client's own body to
    // the Responses API; any translation refuses it, naming it.
    let by_id = json!({"model": "m", "input": [{"role": "user", "content": [
        {"type": "input_file", "file_id": "file-77"}]}]});
    let req = parse(by_id).unwrap();
    let what = "input[0].content[0]: a file by file_id (file-77)".to_owned();
    assert_eq!(req.messages[0].content, vec![Part::Untranslatable { what: what.clone() }]);
    for err in [
        crate::Wire::Anthropic.encode_request(&req).unwrap_err(),
        encode_request(&req).unwrap_err(),
    ] {
        assert!(matches!(err, ProtocolError::Unsupported(_)), "{err:?}");
        assert!(err.to_string().contains(&what), "{err}");
    }
    let empty =
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_file"}]}]});
    assert!(matches!(parse(empty), Err(ProtocolError::InvalidBody(_))));
}

#[test]
fn refuses_previous_response_id_and_item_reference() {
    let stateless = ProtocolError::Unsupported(STATELESS.into());
    let body = json!({"model": "m", "previous_response_id": "resp_123", "input": "hi"});
    assert_eq!(parse(body).unwrap_err(), stateless);
    let body = json!({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]});
    assert_eq!(parse(body).unwrap_err(), stateless);
}

#[test]
fn unknown_input_item_type_is_named() {
    let body = json!({"model": "m", "input": [
        {"role": "user", "content": "hi"},
        {"type": "telepathy_call", "call_id": "c"}
    ]});
    match parse(body).unwrap_err() {
        ProtocolError::InvalidBody(msg) => {
            assert!(msg.contains("telepathy_call") && msg.contains("input[1]"), "{msg}")
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// Every item type the SDK and Codex send is taken: hosted tools' items by name
/// (a translation refuses them naming the item), the local shell's as a tool call
/// and its result, `additional_tools` as more tools.
#[test]
fn every_item_type_codex_and_the_sdk_send_is_taken() {
    let hosted_items = [
        ("web_search_call", Role::Assistant),
        ("file_search_call", Role::Assistant),
        ("code_interpreter_call", Role::Assistant),
        ("image_generation_call", Role::Assistant),
        ("computer_call", Role::Assistant),
        ("computer_call_output", Role::User),
        ("mcp_call", Role::Assistant),
        ("mcp_list_tools", Role::Assistant),
        ("mcp_approval_request", Role::Assistant),
        ("mcp_approval_response", Role::User),
    ];
    for (ty, role) in hosted_items {
        let body = json!({"model": "m", "input": [
            {"role": "user", "content": "hi"},
            {"type": ty, "id": "x_1", "status": "completed"}
        ]});
        let req = parse(body).unwrap();
        let what = format!("input[1]: a `{ty}` item (what a tool OpenAI runs did)");
        let want = Part::Untranslatable { what: what.clone() };
        let got: Vec<&Part> = req.messages.iter().flat_map(|m| &m.content).collect();
        assert!(got.contains(&&want), "{ty}: {got:?}");
        let side = req.messages.iter().find(|m| m.content.contains(&want)).unwrap().role;
        assert_eq!(side, role, "{ty}");
        let err = crate::Wire::Anthropic.encode_request(&req).unwrap_err();
        assert!(err.to_string().contains(&what), "{ty}: {err}");
    }

    let body = json!({"model": "m", "input": [
        {"type": "additional_tools", "role": "developer", "tools": [
            {"type": "namespace", "name": "collab", "tools": [
                {"type": "function", "name": "send", "parameters": {"type": "object"}, "strict": false}
            ]},
            {"type": "custom", "name": "exec", "format": {"type": "text"}},
            {"type": "function", "name": "lookup", "defer_loading": true, "parameters": {"type": "object"}},
            {"type": "tool_search"}
        ]},
        {"role": "user", "content": "ls"},
        {"type": "local_shell_call", "id": "ls_1", "call_id": "call_9", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "timeout_ms": 1000}},
        {"type": "local_shell_call_output", "id": "call_9", "output": "a.txt\n"}
    ]});
    let req = parse(body).unwrap();
    let names: Vec<&str> = req.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["collab__send", "exec", "lookup"]);
    assert_eq!(req.tools[0].namespace.as_deref(), Some("collab"));
    assert!(req.tools[1].freeform.is_some());
    assert_eq!(req.extras.deferred_tools, ["lookup"]);
    assert_eq!(req.extras.hosted_tools.len(), 1);
    assert_eq!(req.extras.hosted_tools[0].path, "input[0].tools[3]");
    assert_eq!(req.extras.hosted_tools[0].kind, Some(ServerTool::ToolSearch));
    assert_eq!(
        req.messages[1].content,
        vec![Part::ToolCall(ToolCall {
            id: "call_9".into(),
            name: "local_shell".into(),
            arguments: r#"{"command":["ls"],"timeout_ms":1000,"type":"exec"}"#.into(),
            signature: None,
        })]
    );
    assert_eq!(
        req.messages[2].content,
        vec![Part::ToolResult(ToolResult {
            call_id: "call_9".into(),
            name: Some("local_shell".into()),
            content: vec![text("a.txt\n")],
            is_error: false,
        })]
    );
    // Unknown tool types are carried too: no target takes them, and the request
    // is refused naming them rather than sent without.
    let body = json!({"model": "m", "input": "hi", "tools": [{"type": "hologram"}]});
    let req = parse(body).unwrap();
    assert_eq!(req.extras.hosted_tools[0].kind, None);
    assert!(
        crate::Wire::OpenAiChat
            .encode_request(&req)
            .unwrap_err()
            .to_string()
            .contains("`hologram`")
    );
}

#[test]
fn settings_go_back_to_a_responses_body_as_they_came() {
    let body = json!({"model": "m", "input": "hi", "store": true, "prompt_cache_key": "k",
                      "safety_identifier": "s", "service_tier": "flex",
                      "tools": [{"type": "web_search_preview"}]});
    let out = encode_request(&parse(body).unwrap()).unwrap();
    assert_eq!(out["store"], true, "the client's store is never rewritten");
    assert_eq!(out["prompt_cache_key"], "k");
    assert_eq!(out["safety_identifier"], "s");
    assert_eq!(out["service_tier"], "flex");
    assert_eq!(out["tools"], json!([{"type": "web_search_preview"}]));
    let out = encode_request(&parse(json!({"model": "m", "input": "hi"})).unwrap()).unwrap();
    assert!(out.get("store").is_none());
}

#[test]
fn malformed_bodies_are_invalid() {
    assert!(matches!(parse_request(b"{\"model\": \"m\", "), Err(ProtocolError::InvalidBody(_))));
    assert!(matches!(parse_request(b"[1,2]"), Err(ProtocolError::InvalidBody(_))));
    for bad in [
        json!({"input": "hi"}),
        json!({"model": "m", "input": 3}),
        json!({"model": "m", "input": [{"type": "message", "role": "robot", "content": "x"}]}),
        json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_video"}]}]}),
        json!({"model": "m", "input": [{"type": "function_call", "name": "f"}]}),
        json!({"model": "m", "input": "x", "max_output_tokens": "lots"}),
        json!({"model": "m", "input": "x", "reasoning": {"effort": "extreme"}}),
        json!({"model": "m", "input": "x", "tool_choice": "sometimes"}),
    ] {
        let err = parse(bad.clone()).unwrap_err();
        assert!(matches!(err, ProtocolError::InvalidBody(_)), "{bad} gave {err:?}");
    }
}

#[test]
fn encode_request_refuses_what_responses_cannot_express() {
    let req = Request { model: "m".into(), top_k: Some(5), ..Request::default() };
    assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
    let req = Request { model: "m".into(), stop: vec!["END".into()], ..Request::default() };
    assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
    let req = Request {
        model: "m".into(),
        messages: vec![Message {
            role: Role::User,
            content: vec![Part::ToolCall(ToolCall {
                id: "c".into(),
                name: "f".into(),
                arguments: "{}".into(),
                signature: None,
            })],
        }],
        ..Request::default()
    };
    assert!(matches!(encode_request(&req), Err(ProtocolError::Unsupported(_))));
}

/// Codex's `tool_choice` naming a hosted tool forces the tool declared of that
/// type (or kind); one naming a tool not declared is refused. The items a hosted
/// tool left in the input say which tool the conversation used.
#[test]
fn a_hosted_tool_choice_forces_the_declared_tool() {
    let body = |choice: Value| {
        json!({"model": "m", "input": [
                   {"type": "message", "role": "user", "content": "search"},
                   {"type": "web_search_call", "id": "ws_1", "status": "completed",
                    "action": {"type": "search", "query": "rust"}},
                   {"type": "message", "role": "user", "content": "again"}
               ],
               "tools": [{"type": "function", "name": "f", "parameters": {}}, {"type": "web_search"}],
               "tool_choice": choice})
    };
    let req = parse(body(json!({"type": "web_search"}))).unwrap();
    assert_eq!(req.tool_choice, Some(ToolChoice::Hosted { path: "tools[1]".into() }));
    assert_eq!(req.forced_hosted().map(|t| t.tool_type.as_str()), Some("web_search"));
    assert!(req.extras.history_tools.contains(ServerTool::WebSearch));
    let preview = parse(body(json!({"type": "web_search_preview"}))).unwrap();
    assert_eq!(preview.tool_choice, req.tool_choice, "the same kind");
    let err = parse(body(json!({"type": "code_interpreter"}))).unwrap_err();
    assert!(err.to_string().contains("`code_interpreter`"), "{err}");
    // And back, as Responses writes it.
    let mut plain = req.clone();
    plain.messages.retain(|m| !m.content.iter().any(|p| matches!(p, Part::Untranslatable { .. })));
    let out = encode_request(&plain).unwrap();
    assert_eq!(out["tool_choice"], json!({"type": "web_search"}));
    // A function choice is still a function's.
    let f = parse(body(json!({"type": "function", "name": "f"}))).unwrap();
    assert_eq!(f.tool_choice, Some(ToolChoice::Tool { name: "f".into() }));
}
