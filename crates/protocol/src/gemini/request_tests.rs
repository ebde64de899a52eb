//! Encoding and parsing requests.

use serde_json::{Value, json};

use crate::ProtocolError;
use crate::gemini::SKIP_SIGNATURE;
use crate::gemini::test_support::{call, msg, result, signed, text, weather_schema};
use crate::model::{
    Document, DocumentSource, Effort, Image, ImageSource, Message, ModelTraits, Part, Reasoning,
    ReasoningControl, Request, ResponseFormat, Role, TextBlock, Tool, ToolChoice, ToolResult,
};

use super::*;

#[test]
fn documents_go_inline_or_by_file_uri_and_untranslatable_parts_are_refused() {
    let traits = ModelTraits::infer(crate::Wire::Gemini, "gemini-2.5-pro");
    let doc = |source| Part::Document(Document::new(source));
    let req = |part: Part| Request {
        messages: vec![Message { role: Role::User, content: vec![text("read"), part] }],
        ..Request::default()
    };
    let inline = doc(DocumentSource::Base64 {
        media_type: "application/pdf".into(),
        data: "JVBERi0=".into(),
    });
    let out = encode_request(&req(inline.clone()), traits).unwrap();
    assert_eq!(
        out["contents"][0]["parts"][1],
        json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0="}})
    );
    // And back: data of a type not an image's is a document.
    let back = parse_request(out.to_string().as_bytes()).unwrap();
    assert_eq!(back.messages[0].content[1], inline);
    let url = doc(DocumentSource::Url { url: "https://x.test/a.pdf".into(), media_type: None });
    let out = encode_request(&req(url), traits).unwrap();
    assert_eq!(
        out["contents"][0]["parts"][1],
        json!({"fileData": {"mimeType": "application/pdf", "fileUri": "https://x.test/a.pdf"}})
    );
    let odd =
        Part::Untranslatable { what: "messages[0].content[1]: a `search_result` block".into() };
    let err = encode_request(&req(odd), traits).unwrap_err();
    assert!(
        err.to_string().contains("`search_result` block cannot be sent to a Gemini upstream"),
        "{err}"
    );
    // A request part the canonical model has no place for is kept by name.
    let body = br#"{"contents":[{"role":"user","parts":[{"text":"run"},{"executableCode":{"code":"1"}}]}]}"#;
    let req = parse_request(body).unwrap();
    assert!(
        matches!(&req.messages[0].content[1], Part::Untranslatable { what } if what.starts_with("contents[0].parts[1]"))
    );
}

#[test]
fn encodes_a_multi_turn_tool_conversation() {
    let req = Request {
        model: "gemini-2.5-pro".into(),
        stream_usage: false,
        compaction: None,
        extras: Default::default(),
        system: vec![TextBlock::new("You are a travel assistant.")],
        messages: vec![
            Message::text(Role::System, "Answer in English."),
            msg(
                Role::User,
                vec![
                    text("What's the weather where this photo was taken?"),
                    Part::Image(Image {
                        source: ImageSource::Base64 {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                        detail: Some("high".into()),
                        cache_control: None,
                    }),
                    Part::Image(Image {
                        source: ImageSource::Url {
                            url: "https://example.com/photos/eiffel.PNG?size=large".into(),
                        },
                        detail: None,
                        cache_control: None,
                    }),
                ],
            ),
            msg(
                Role::Assistant,
                vec![
                    Part::Thinking {
                        text: "The photo shows Paris.".into(),
                        signature: Some("EqQBCkgIARABGAIiQL".into()),
                    },
                    text("Let me check the weather in Paris."),
                    call(
                        "toolu_01A09q90qw",
                        "get_weather",
                        r#"{"city": "Paris", "unit": "celsius"}"#,
                    ),
                ],
            ),
            msg(Role::User, vec![result("toolu_01A09q90qw", None, "18°C, cloudy", false)]),
            Message::text(Role::System, "Keep answers short."),
            Message::text(Role::Assistant, "It is 18°C and cloudy in Paris."),
            msg(
                Role::User,
                vec![
                    text("And this one?"),
                    Part::Image(Image {
                        source: ImageSource::Url { url: "https://cdn.example.com/img/42".into() },
                        detail: None,
                        cache_control: None,
                    }),
                ],
            ),
        ],
        tools: vec![Tool {
            name: "get_weather".into(),
            description: Some("Current weather for a city".into()),
            parameters: weather_schema(),
            strict: Some(true),
            cache_control: None,
            freeform: None,
            namespace: None,
        }],
        tool_choice: Some(ToolChoice::Tool { name: "get_weather".into() }),
        parallel_tool_calls: Some(false),
        max_tokens: Some(2048),
        temperature: Some(0.7),
        top_p: Some(0.95),
        top_k: Some(40),
        stop: vec!["END".into()],
        stream: true,
        reasoning: Some(Reasoning {
            enabled: true,
            effort: Some(Effort::High),
            budget_tokens: None,
        }),
        response_format: None,
        user: Some("user-42".into()),
        metadata: Some(serde_json::Map::from_iter([("team".to_owned(), json!("x"))])),
    };
    let body = crate::Wire::Gemini.encode_request(&req).unwrap();
    let expected = json!({
        "systemInstruction": {"parts": [
            {"text": "You are a travel assistant."},
            {"text": "Answer in English."}
        ]},
        "contents": [
            {"role": "user", "parts": [
                {"text": "What's the weather where this photo was taken?"},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/photos/eiffel.PNG?size=large"}}
            ]},
            {"role": "model", "parts": [
                {"text": "Let me check the weather in Paris."},
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}},
                 "thoughtSignature": "skip_thought_signature_validator"}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"content": "18°C, cloudy"}}},
                {"text": "Keep answers short."}
            ]},
            {"role": "model", "parts": [{"text": "It is 18°C and cloudy in Paris."}]},
            {"role": "user", "parts": [
                {"text": "And this one?"},
                {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://cdn.example.com/img/42"}}
            ]}
        ],
        "tools": [{"functionDeclarations": [{
            "name": "get_weather",
            "description": "Current weather for a city",
            "parametersJsonSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"],
                "additionalProperties": false
            }
        }]}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}},
        "generationConfig": {
            "maxOutputTokens": 2048,
            "temperature": 0.7,
            "topP": 0.95,
            "topK": 40,
            "stopSequences": ["END"],
            "thinkingConfig": {"thinkingBudget": 24576, "includeThoughts": true}
        }
    });
    assert_eq!(body, expected);
}

#[test]
fn gemini_3_and_later_get_a_thinking_level_never_a_budget() {
    let level = ModelTraits {
        family: crate::Family::Gemini,
        reasoning: ReasoningControl::Effort,
        sampling: true,
        one_sampler: false,
        takes_max_tokens: true,
    };
    let config = |reasoning| {
        let req = Request {
            messages: vec![Message::text(Role::User, "hi")],
            reasoning: Some(reasoning),
            ..Request::default()
        };
        encode_request(&req, level).unwrap()["generationConfig"]["thinkingConfig"].clone()
    };
    let on = |effort, budget_tokens| Reasoning { enabled: true, effort, budget_tokens };
    assert_eq!(
        config(on(Some(Effort::Medium), None)),
        json!({"thinkingLevel": "medium", "includeThoughts": true})
    );
    assert_eq!(config(on(None, Some(30000)))["thinkingLevel"], "high");
    assert_eq!(config(on(Some(Effort::Minimal), None))["thinkingLevel"], "low");
    // Thinking cannot be turned off there: the lowest level, thoughts not asked for.
    assert_eq!(
        config(Reasoning { enabled: false, effort: None, budget_tokens: None }),
        json!({"thinkingLevel": "low"})
    );
    // And the level reads back as the same effort.
    let req = Request {
        messages: vec![Message::text(Role::User, "hi")],
        reasoning: Some(on(Some(Effort::High), None)),
        ..Request::default()
    };
    let body = serde_json::to_vec(&encode_request(&req, level).unwrap()).unwrap();
    let back = parse_request(&body).unwrap();
    assert_eq!(back.reasoning.map(|r| r.effort()), Some(Effort::High));
    assert!(!back.extras.reasoning_auto);
}

#[test]
fn thinking_level_auto_is_left_to_the_intent() {
    let body = json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"thinkingConfig": {"thinkingLevel": "AUTO", "includeThoughts": true}}});
    let req = parse_request(body.to_string().as_bytes()).unwrap();
    assert!(req.extras.reasoning_auto);
    assert_eq!(req.reasoning, None);
}

#[test]
fn encodes_structured_output_and_disabled_thinking() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name"]
    });
    let req = Request {
        messages: vec![Message::text(Role::User, "Extract the recipe.")],
        response_format: Some(ResponseFormat::JsonSchema {
            name: "recipe".into(),
            schema: schema.clone(),
            strict: Some(true),
            description: None,
        }),
        reasoning: Some(Reasoning { enabled: false, effort: None, budget_tokens: None }),
        tool_choice: Some(ToolChoice::Required),
        ..Request::default()
    };
    let body = crate::Wire::Gemini.encode_request(&req).unwrap();
    assert_eq!(
        body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Extract the recipe."}]}],
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {
                "responseMimeType": "application/json",
                "responseJsonSchema": schema,
                "thinkingConfig": {"thinkingBudget": 0}
            }
        })
    );

    let json_object = Request {
        messages: vec![Message::text(Role::User, "JSON please")],
        response_format: Some(ResponseFormat::JsonObject),
        tool_choice: Some(ToolChoice::None),
        reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(3000) }),
        ..Request::default()
    };
    let body = crate::Wire::Gemini.encode_request(&json_object).unwrap();
    assert_eq!(body["generationConfig"]["responseMimeType"], "application/json");
    assert!(body["generationConfig"].get("responseJsonSchema").is_none());
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 3000, "includeThoughts": true})
    );
    assert_eq!(body["toolConfig"]["functionCallingConfig"], json!({"mode": "NONE"}));
    assert!(body.get("systemInstruction").is_none());
    assert!(body.get("tools").is_none());
}

#[test]
fn tool_result_shapes() {
    let req = Request {
        messages: vec![
            Message::text(Role::User, "go"),
            msg(
                Role::Assistant,
                vec![
                    call("a", "lookup", "{}"),
                    call("b", "fetch", ""),
                    call("c", "search", r#"{"q":"x"}"#),
                ],
            ),
            msg(
                Role::User,
                vec![
                    result("a", None, r#"{"rows": 3}"#, false),
                    result("b", Some("fetch"), "timeout", true),
                    Part::ToolResult(ToolResult {
                        call_id: "c".into(),
                        name: None,
                        content: vec![
                            text("line one"),
                            Part::Image(Image {
                                source: ImageSource::Base64 {
                                    media_type: "image/webp".into(),
                                    data: "UklGRg==".into(),
                                },
                                detail: None,
                                cache_control: None,
                            }),
                            text("line two"),
                        ],
                        is_error: false,
                    }),
                ],
            ),
        ],
        ..Request::default()
    };
    let body = crate::Wire::Gemini.encode_request(&req).unwrap();
    assert_eq!(
        body["contents"][1]["parts"],
        json!([
            {"functionCall": {"name": "lookup", "args": {}}, "thoughtSignature": SKIP_SIGNATURE},
            {"functionCall": {"name": "fetch", "args": {}}},
            {"functionCall": {"name": "search", "args": {"q": "x"}}}
        ])
    );
    assert_eq!(
        body["contents"][2]["parts"],
        json!([
            {"functionResponse": {"name": "lookup", "response": {"rows": 3}}},
            {"functionResponse": {"name": "fetch", "response": {"error": "timeout"}}},
            {"functionResponse": {"name": "search", "response": {"content": "line one\nline two"}}},
            {"inlineData": {"mimeType": "image/webp", "data": "UklGRg=="}}
        ])
    );
}

#[test]
fn refuses_what_gemini_cannot_express() {
    let orphan = Request {
        messages: vec![msg(Role::User, vec![result("nowhere", None, "x", false)])],
        ..Request::default()
    };
    assert!(
        matches!(crate::Wire::Gemini.encode_request(&orphan), Err(ProtocolError::InvalidBody(m)) if m.contains("nowhere"))
    );

    let bad_args = Request {
        messages: vec![msg(Role::Assistant, vec![call("a", "f", "{not json")])],
        ..Request::default()
    };
    assert!(matches!(
        crate::Wire::Gemini.encode_request(&bad_args),
        Err(ProtocolError::InvalidBody(_))
    ));

    let array_args = Request {
        messages: vec![msg(Role::Assistant, vec![call("a", "f", "[1,2]")])],
        ..Request::default()
    };
    assert!(matches!(
        crate::Wire::Gemini.encode_request(&array_args),
        Err(ProtocolError::InvalidBody(_))
    ));

    let user_call = Request {
        messages: vec![msg(Role::User, vec![call("a", "f", "{}")])],
        ..Request::default()
    };
    assert!(matches!(
        crate::Wire::Gemini.encode_request(&user_call),
        Err(ProtocolError::Unsupported(_))
    ));

    let system_image = Request {
        messages: vec![msg(
            Role::System,
            vec![Part::Image(Image {
                source: ImageSource::Url { url: "https://x/y.png".into() },
                detail: None,
                cache_control: None,
            })],
        )],
        ..Request::default()
    };
    assert!(matches!(
        crate::Wire::Gemini.encode_request(&system_image),
        Err(ProtocolError::Unsupported(_))
    ));
}

#[test]
fn guesses_image_mime_types() {
    assert_eq!(guess_image_mime("https://a.b/c/d.png"), "image/png");
    assert_eq!(guess_image_mime("https://a.b/c/d.GIF#frag"), "image/gif");
    assert_eq!(guess_image_mime("https://a.b/c/d.webp?x=1.png"), "image/webp");
    assert_eq!(guess_image_mime("https://a.b/c.dir/photo"), "image/jpeg");
    assert_eq!(guess_image_mime("https://a.b/c/d.jpg"), "image/jpeg");
    assert_eq!(guess_image_mime("gs://bucket/x.heic"), "image/heic");
}

#[test]
fn parses_a_gemini_request() {
    let body = json!({
        "systemInstruction": {"parts": [{"text": "Be brief."}]},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather in Paris and Lyon?"}]},
            {"role": "model", "parts": [
                {"text": "thinking...", "thought": true},
                {"functionCall": {"id": "ab12", "name": "get_weather", "args": {"city": "Paris"}},
                 "thoughtSignature": "CiQB+/x="},
                {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
                {"functionCall": {"name": "get_time"}, "thoughtSignature": SKIP_SIGNATURE}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"content": "rain"}}},
                {"functionResponse": {"id": "ab12", "name": "get_weather", "response": {"error": "down"}}},
                {"functionResponse": {"name": "get_time", "response": {"utc": "12:00"}}},
                {"functionResponse": {"name": "ghost", "response": {"content": "?"}}}
            ]}
        ],
        "tools": [{"functionDeclarations": [
            {"name": "get_weather", "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}}},
            {"name": "get_time", "description": "Clock"}
        ]}, {"googleSearch": {}}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["a", "b"]}},
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseSchema": {"type": "OBJECT"},
            "thinkingConfig": {"thinkingLevel": "LOW"}
        }
    });
    let req = parse_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(req.system, vec![TextBlock::new("Be brief.")]);
    assert_eq!(
        req.messages,
        vec![
            Message::text(Role::User, "Weather in Paris and Lyon?"),
            msg(
                Role::Assistant,
                vec![
                    Part::Thinking { text: "thinking...".into(), signature: None },
                    signed("gcall_ab12", "get_weather", r#"{"city":"Paris"}"#, "CiQB+/x="),
                    call("call_1", "get_weather", r#"{"city":"Lyon"}"#),
                    call("call_2", "get_time", "{}"),
                ]
            ),
            msg(
                Role::User,
                vec![
                    result("call_1", Some("get_weather"), "rain", false),
                    result("gcall_ab12", Some("get_weather"), "down", true),
                    result("call_2", Some("get_time"), r#"{"utc":"12:00"}"#, false),
                    result("call_unmatched_1", Some("ghost"), "?", false),
                ]
            ),
        ]
    );
    assert_eq!(req.tools.len(), 2);
    assert_eq!(req.tools[0].parameters["properties"]["city"]["type"], "STRING");
    assert_eq!(req.tools[1].parameters, Value::Null);
    assert_eq!(req.tool_choice, Some(ToolChoice::Required));
    assert_eq!(
        req.response_format,
        Some(ResponseFormat::JsonSchema {
            name: "response".into(),
            schema: json!({"type": "OBJECT"}),
            strict: None,
            description: None
        })
    );
    assert_eq!(
        req.reasoning,
        Some(Reasoning { enabled: true, effort: Some(Effort::Low), budget_tokens: None })
    );
    assert!(matches!(
        parse_request(br#"{"contents":[{"role":"tool","parts":[]}]}"#),
        Err(ProtocolError::InvalidBody(_))
    ));
    assert!(matches!(parse_request(b"[1]"), Err(ProtocolError::InvalidBody(_))));
}

/// What a Gemini client sends back: the ids the gateway gave its calls, as they are
/// (or, for a call that came without one, a response id of its own making).
#[test]
fn parses_a_gemini_clients_ids_as_they_are() {
    let body = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [
            {"functionCall": {"id": "toolu_01", "name": "f", "args": {}}},
            {"functionCall": {"id": "gcall_ab", "name": "f", "args": {}}, "thoughtSignature": "CiQB"},
            {"functionCall": {"name": "g", "args": {}}},
            {"functionCall": {"id": "x".repeat(41), "name": "h", "args": {}}}
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "gcall_ab", "name": "f", "response": {"content": "b"}}},
            {"functionResponse": {"id": "toolu_01", "name": "f", "response": {"content": "a"}}},
            {"functionResponse": {"id": "g-1700000000-abc", "name": "g", "response": {"content": "c"}}},
            {"functionResponse": {"id": "x".repeat(41), "name": "h", "response": {"content": "d"}}}
        ]}
    ]});
    let req = parse_client_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(
        req.messages[1..],
        [
            msg(
                Role::Assistant,
                vec![
                    call("toolu_01", "f", "{}"),
                    signed("gcall_ab", "f", "{}", "CiQB"),
                    call("call_2", "g", "{}"),
                    call("call_3", "h", "{}"),
                ]
            ),
            msg(
                Role::User,
                vec![
                    result("gcall_ab", Some("f"), "b", false),
                    result("toolu_01", Some("f"), "a", false),
                    result("call_2", Some("g"), "c", false),
                    result("call_3", Some("h"), "d", false),
                ]
            ),
        ]
    );
    // Read as Gemini's own ids, a response id that matches no call still finds
    // the call of its name.
    let req = parse_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(req.messages[2].content[2], result("call_2", Some("g"), "c", false));
}

#[test]
fn a_clients_own_gemini_tools_are_hosted_tools_another_wire_can_run() {
    let body = json!({
        "contents": [{"role": "user", "parts": [{"text": "news?"}]}],
        "tools": [
            {"functionDeclarations": [{"name": "f", "parameters": {"type": "object"}}]},
            {"googleSearch": {}},
            {"url_context": {}},
            {"codeExecution": {}},
            {"googleMaps": {}}
        ]
    });
    let req = super::parse_client_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(req.tools.len(), 1, "the function stays a function");
    let hosted: Vec<(Option<crate::ServerTool>, &str, &str)> = req
        .extras
        .hosted_tools
        .iter()
        .map(|t| (t.kind, t.tool_type.as_str(), t.path.as_str()))
        .collect();
    use crate::ServerTool::{CodeExecution, WebFetch, WebSearch};
    assert_eq!(
        hosted,
        [
            (Some(WebSearch), "googleSearch", "tools[1]"),
            (Some(WebFetch), "url_context", "tools[2]"),
            (Some(CodeExecution), "codeExecution", "tools[3]"),
        ],
        "a member the gateway does not carry stays Gemini's own (googleMaps)"
    );
    assert!(req.extras.hosted_tools.iter().all(|t| t.dialect == crate::Dialect::Gemini));
    // Declared to Anthropic as its own web search.
    let search = &req.extras.hosted_tools[0];
    let placed = crate::carry::place(crate::Wire::Anthropic, search).unwrap();
    assert!(format!("{placed:?}").contains("web_search"), "{placed:?}");
    // Back to Gemini as the client wrote it.
    let placed = crate::carry::place(crate::Wire::Gemini, search).unwrap();
    assert!(format!("{placed:?}").contains("googleSearch"), "{placed:?}");
}
