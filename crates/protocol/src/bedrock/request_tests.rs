//! Encoding requests.

use serde_json::{Value, json};

use crate::bedrock::test_support::{
    CLAUDE, CLAUDE_ADAPTIVE, LLAMA, NOVA, call, encode, msg, result, text,
};
use crate::model::{
    Dialect, Document, DocumentSource, Effort, HostedTool, Image, ImageSource, Part, Reasoning,
    Request, ResponseFormat, Role, ServerTool, TextBlock, Tool, ToolChoice, ToolResult,
};
use crate::{ProtocolError, Wire};

use super::*;

fn req(model: &str, messages: Vec<Message>) -> Request {
    Request { model: model.into(), messages, ..Request::default() }
}

fn weather() -> Tool {
    Tool::function(
        "get_weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    )
    .with_description("Current weather")
}

fn cached(t: &str) -> Part {
    Part::Text(TextBlock { text: t.into(), cache_control: Some(json!({"type": "ephemeral"})) })
}

fn image(source: ImageSource) -> Part {
    Part::Image(Image { source, detail: None, cache_control: None })
}

fn unsupported(out: Result<Value, ProtocolError>) -> String {
    match out {
        Err(ProtocolError::Unsupported(m)) => m,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_plain_request_names_no_model_and_maps_its_settings() {
    let r = Request {
        system: vec![TextBlock::new("Be brief."), TextBlock::new("  ")],
        max_tokens: Some(512),
        temperature: Some(0.2),
        top_p: Some(0.9),
        top_k: Some(40),
        stop: vec!["END".into()],
        ..req(LLAMA, vec![Message::user("Hi")])
    };
    let body = encode(&r).unwrap();
    assert_eq!(
        body,
        json!({
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
            // Blank system text says nothing and is refused: left out.
            "system": [{"text": "Be brief."}],
            // top_k has no Converse field, and Llama takes none of its own.
            "inferenceConfig": {"maxTokens": 512, "temperature": 0.2, "topP": 0.9, "stopSequences": ["END"]},
        })
    );
}

#[test]
fn claude_gets_its_own_fields_and_the_matched_stop_sequence_asked_back() {
    let r = Request {
        top_k: Some(40),
        temperature: Some(0.5),
        top_p: Some(0.9),
        stop: vec!["END".into()],
        ..req(CLAUDE, vec![Message::user("Hi")])
    };
    let body = encode(&r).unwrap();
    assert_eq!(body["additionalModelRequestFields"], json!({"top_k": 40}));
    assert_eq!(body["additionalModelResponseFieldPaths"], json!(["/stop_sequence"]));
    // Claude 4.5 takes temperature or top_p, not both: temperature is kept.
    assert_eq!(body["inferenceConfig"], json!({"temperature": 0.5, "stopSequences": ["END"]}));
}

#[test]
fn turns_alternate_and_open_with_the_user() {
    let r = req(
        CLAUDE,
        vec![
            msg(Role::System, vec![text("Leading rule.")]),
            Message::assistant("Hello, how can I help?"),
            Message::assistant("(still here)"),
            Message::user("First"),
            msg(Role::System, vec![text("Be terse now.")]),
            Message::user("   "),
            Message::user("Second"),
            Message::assistant(""),
            Message::assistant("Answer"),
        ],
    );
    let body = encode(&r).unwrap();
    assert_eq!(body["system"], json!([{"text": "Leading rule."}]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"text": OPENING_TURN}]},
            {"role": "assistant", "content": [{"text": "Hello, how can I help?"}, {"text": "(still here)"}]},
            {"role": "user", "content": [
                {"text": "First"},
                {"text": "<system-reminder>\nBe terse now.\n</system-reminder>"},
                {"text": "Second"},
            ]},
            {"role": "assistant", "content": [{"text": "Answer"}]},
        ])
    );
}

#[test]
fn a_turn_left_empty_by_blank_text_joins_its_neighbours() {
    let r = req(
        LLAMA,
        vec![Message::user("a"), Message::assistant(" "), Message::user("b"), Message::user("")],
    );
    let body = encode(&r).unwrap();
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "a"}, {"text": "b"}]}])
    );
    // A last turn of nothing but blank text goes as it is.
    let r = req(LLAMA, vec![Message::user("a"), Message::assistant("  ")]);
    let body = encode(&r).unwrap();
    assert_eq!(body["messages"][1], json!({"role": "assistant", "content": [{"text": "  "}]}));
}

#[test]
fn tool_ids_are_mapped_and_calls_still_pair_with_their_results() {
    let foreign = "functions.get_weather:0";
    let long = "x".repeat(80);
    let r = Request {
        tools: vec![weather()],
        ..req(
            CLAUDE,
            vec![
                Message::user("Weather?"),
                msg(
                    Role::Assistant,
                    vec![
                        call("toolu_01A", "get_weather", r#"{"city":"Paris"}"#),
                        call(foreign, "get_weather", r#"{"city":"Lyon"}"#),
                        call(&long, "get_weather", ""),
                    ],
                ),
                // Results in another order, after text: results go first.
                msg(
                    Role::User,
                    vec![
                        text("here you go"),
                        result(&long, "rain", false),
                        result(foreign, "sun", false),
                        result("toolu_01A", "boom", true),
                    ],
                ),
            ],
        )
    };
    let body = encode(&r).unwrap();
    let uses: Vec<&str> = body["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["toolUse"]["toolUseId"].as_str().unwrap())
        .collect();
    assert_eq!(uses[0], "toolu_01A", "a valid id is kept as it is");
    for id in &uses {
        assert!(
            id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        );
    }
    assert_eq!(uses[1], crate::anthropic::tool_id(foreign));
    assert_ne!(uses[1], uses[2]);
    // No arguments at all are an empty object.
    assert_eq!(body["messages"][1]["content"][2]["toolUse"]["input"], json!({}));
    let user = body["messages"][2]["content"].as_array().unwrap();
    let results: Vec<&str> =
        user[..3].iter().map(|b| b["toolResult"]["toolUseId"].as_str().unwrap()).collect();
    assert_eq!(results, [uses[2], uses[1], uses[0]]);
    assert_eq!(user[3], json!({"text": "here you go"}));
    assert_eq!(
        user[2]["toolResult"],
        json!({"toolUseId": "toolu_01A", "content": [{"text": "boom"}], "status": "error"})
    );
    assert_eq!(user[1]["toolResult"]["status"], "success");
    assert_eq!(
        body["toolConfig"]["tools"][0],
        json!({"toolSpec": {
            "name": "get_weather",
            "description": "Current weather",
            "inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string"}}}},
        }})
    );
    assert!(body["toolConfig"].get("toolChoice").is_none());
}

#[test]
fn only_claude_takes_a_results_status_and_strict_tools() {
    let strict = Tool { strict: Some(true), ..weather() };
    let history = vec![
        Message::user("Weather?"),
        msg(Role::Assistant, vec![call("c1", "get_weather", "{}")]),
        msg(Role::User, vec![result("c1", "sun", true)]),
    ];
    let r = Request { tools: vec![strict], ..req(NOVA, history) };
    let body = encode(&r).unwrap();
    assert!(body["messages"][2]["content"][0]["toolResult"].get("status").is_none());
    assert!(body["toolConfig"]["tools"][0]["toolSpec"].get("strict").is_none());
    let body = encode(&Request { model: CLAUDE.into(), ..r }).unwrap();
    assert_eq!(body["toolConfig"]["tools"][0]["toolSpec"]["strict"], true);
}

#[test]
fn tool_choices_map_and_none_sends_no_tools_with_the_history_as_text() {
    let base = Request { tools: vec![weather()], ..req(CLAUDE, vec![Message::user("Hi")]) };
    for (choice, want) in [
        (ToolChoice::Auto, json!({"auto": {}})),
        (ToolChoice::Required, json!({"any": {}})),
        (ToolChoice::Tool { name: "get_weather".into() }, json!({"tool": {"name": "get_weather"}})),
    ] {
        let body = encode(&Request { tool_choice: Some(choice), ..base.clone() }).unwrap();
        assert_eq!(body["toolConfig"]["toolChoice"], want);
    }
    let history = vec![
        Message::user("Weather?"),
        msg(
            Role::Assistant,
            vec![text("Checking."), call("c1", "get_weather", r#"{"city":"Paris"}"#)],
        ),
        msg(Role::User, vec![result("c1", "sun", false), text("Thanks, now a title please.")]),
    ];
    let none = Request { tool_choice: Some(ToolChoice::None), ..req(CLAUDE, history.clone()) };
    let none = Request { tools: vec![weather()], ..none };
    // Without tools at all (a title request with a tool history), the same.
    for r in [none, req(CLAUDE, history)] {
        let body = encode(&r).unwrap();
        assert!(body.get("toolConfig").is_none(), "{body}");
        assert_eq!(
            body["messages"][1]["content"][1],
            json!({"text": "[called tool `get_weather` (call c1) with {\"city\":\"Paris\"}]"})
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"text": "[result of tool call c1]\nsun"})
        );
        assert!(!body.to_string().contains("toolUse"));
    }
}

#[test]
fn tools_without_parameters_or_description_still_take_a_schema() {
    let bare = Tool::function("ping", Value::Null).with_description("");
    let r = Request { tools: vec![bare], ..req(LLAMA, vec![Message::user("Hi")]) };
    let body = encode(&r).unwrap();
    assert_eq!(
        body["toolConfig"]["tools"][0],
        json!({"toolSpec": {"name": "ping", "inputSchema": {"json": {"type": "object", "properties": {}}}}})
    );
}

#[test]
fn tool_calls_and_results_on_the_wrong_side_are_refused() {
    let r = Request {
        tools: vec![weather()],
        ..req(LLAMA, vec![msg(Role::User, vec![call("c1", "get_weather", "{}")])])
    };
    assert!(unsupported(encode(&r)).contains("c1"));
    let r = Request {
        tools: vec![weather()],
        ..req(LLAMA, vec![Message::user("x"), msg(Role::Assistant, vec![result("c1", "x", false)])])
    };
    assert!(unsupported(encode(&r)).contains("c1"));
}

#[test]
fn results_carry_images_and_say_something_when_empty() {
    let png =
        image(ImageSource::Base64 { media_type: "image/png".into(), data: "iVBORw==".into() });
    let results = vec![
        Part::ToolResult(ToolResult {
            call_id: "c1".into(),
            name: None,
            content: vec![text("a chart"), png],
            is_error: false,
        }),
        Part::ToolResult(ToolResult {
            call_id: "c2".into(),
            name: None,
            content: vec![],
            is_error: false,
        }),
        result("c3", " \n", false),
    ];
    let r = Request {
        tools: vec![weather()],
        ..req(
            LLAMA,
            vec![
                Message::user("x"),
                msg(
                    Role::Assistant,
                    vec![call("c1", "a", "{}"), call("c2", "b", "{}"), call("c3", "c", "{}")],
                ),
                msg(Role::User, results),
            ],
        )
    };
    let body = encode(&r).unwrap();
    let user = &body["messages"][2]["content"];
    assert_eq!(
        user[0]["toolResult"]["content"],
        json!([{"text": "a chart"}, {"image": {"format": "png", "source": {"bytes": "iVBORw=="}}}])
    );
    assert_eq!(user[1]["toolResult"]["content"], json!([{"text": EMPTY_RESULT}]));
    assert_eq!(user[2]["toolResult"]["content"], json!([{"text": EMPTY_RESULT}]));
}

#[test]
fn images_go_as_bytes_or_from_s3_and_urls_are_refused() {
    let one = |source| encode(&req(NOVA, vec![msg(Role::User, vec![text("look"), image(source)])]));
    let body =
        one(ImageSource::Base64 { media_type: "image/jpg".into(), data: "/9j/".into() }).unwrap();
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "jpeg", "source": {"bytes": "/9j/"}}})
    );
    let body = one(ImageSource::Url { url: "s3://bucket/cat.WEBP".into() }).unwrap();
    assert_eq!(
        body["messages"][0]["content"][1],
        json!({"image": {"format": "webp", "source": {"s3Location": {"uri": "s3://bucket/cat.WEBP"}}}})
    );
    let refusal = unsupported(one(ImageSource::Url { url: "https://x.test/cat.png".into() }));
    assert!(refusal.contains("https://x.test/cat.png") && refusal.contains("base64"), "{refusal}");
    let refusal = unsupported(one(ImageSource::Base64 {
        media_type: "image/bmp".into(),
        data: "Qk0=".into(),
    }));
    assert!(refusal.contains("image/bmp"), "{refusal}");
    assert!(
        unsupported(one(ImageSource::Url { url: "s3://bucket/cat".into() }))
            .contains("s3://bucket/cat")
    );
}

#[test]
fn documents_get_a_format_and_a_name_converse_takes() {
    let doc = |filename: Option<&str>, media_type: &str| {
        Part::Document(Document {
            filename: filename.map(Into::into),
            ..Document::new(DocumentSource::Base64 {
                media_type: media_type.into(),
                data: "JVBERi0=".into(),
            })
        })
    };
    let r = req(
        CLAUDE,
        vec![msg(
            Role::User,
            vec![
                doc(Some("Q3 report_final.v2.pdf"), "application/pdf"),
                doc(Some("Q3 report_final.v2.pdf"), "application/pdf"),
                doc(None, "text/csv"),
                doc(Some("notes.md"), "text/markdown"),
                text("Summarize."),
            ],
        )],
    );
    let body = encode(&r).unwrap();
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        json!({"document": {"format": "pdf", "name": "Q3 report-final-v2", "source": {"bytes": "JVBERi0="}}})
    );
    assert_eq!(content[1]["document"]["name"], "Q3 report-final-v2 (2)", "names are unique");
    assert_eq!(content[2]["document"]["name"], "document");
    assert_eq!(content[2]["document"]["format"], "csv");
    assert_eq!(content[3]["document"]["format"], "md");
    assert_eq!(content[3]["document"]["name"], "notes");

    let s3 = Part::Document(Document::new(DocumentSource::Url {
        url: "s3://b/k/spec.docx".into(),
        media_type: None,
    }));
    let body = encode(&req(CLAUDE, vec![msg(Role::User, vec![s3])])).unwrap();
    assert_eq!(
        body["messages"][0]["content"][0]["document"],
        json!({"format": "docx", "name": "document", "source": {"s3Location": {"uri": "s3://b/k/spec.docx"}}})
    );
    let web = Part::Document(Document::new(DocumentSource::Url {
        url: "https://x.test/a.pdf".into(),
        media_type: None,
    }));
    assert!(
        unsupported(encode(&req(CLAUDE, vec![msg(Role::User, vec![web])])))
            .contains("https://x.test/a.pdf")
    );
    let zip = doc(Some("a.zip"), "application/zip");
    assert!(
        unsupported(encode(&req(CLAUDE, vec![msg(Role::User, vec![zip])])))
            .contains("application/zip")
    );
}

#[test]
fn document_names_follow_converses_rule() {
    let valid = |name: &str| {
        !name.is_empty()
            && name.len() <= 200
            && !name.contains("  ")
            && name.chars().all(|c| c.is_ascii_alphanumeric() || " -()[]".contains(c))
    };
    for (raw, want) in [
        (Some("report.pdf"), "report"),
        (Some("  two   spaces\there .txt"), "two spaces here"),
        (Some("a/b\\c:d*e?.pdf"), "a-b-c-d-e"),
        (Some("Résumé (final) [v2].docx"), "R-sum- (final) [v2]"),
        (Some("--x--.pdf"), "--x--"),
        (Some("日本語.pdf"), "document"),
        (Some(".hidden"), "hidden"),
        (Some("archive.tar.gz"), "archive-tar"),
        (Some("no extension here"), "no extension here"),
        (Some(""), "document"),
        (None, "document"),
    ] {
        let got = document_name(raw);
        assert_eq!(got, want, "{raw:?}");
        assert!(valid(&got), "{got:?}");
    }
    let long = document_name(Some(&"ab ".repeat(150)));
    assert!(valid(&long) && long.len() <= 200, "{long}");
    let mut taken = HashSet::new();
    let name = "x".repeat(200);
    assert_eq!(unique_name(&mut taken, name.clone()), name);
    let second = unique_name(&mut taken, name.clone());
    assert!(valid(&second) && second.ends_with(" (2)"), "{second}");
    assert!(unique_name(&mut taken, name).ends_with(" (3)"));
}

#[test]
fn claudes_signed_reasoning_goes_back_and_the_rest_is_dropped() {
    let history = |model: &str| {
        req(
            model,
            vec![
                msg(
                    Role::User,
                    vec![
                        text("Hi"),
                        Part::Thinking { text: "user side".into(), signature: Some("s".into()) },
                    ],
                ),
                msg(
                    Role::Assistant,
                    vec![
                        Part::Thinking {
                            text: "Let me think.".into(),
                            signature: Some("EqQBCkYIARgC".into()),
                        },
                        Part::Thinking { text: "another provider's".into(), signature: None },
                        Part::RedactedThinking { data: "EmwKAhgB".into() },
                        text("Hello."),
                    ],
                ),
                Message::user("Again"),
            ],
        )
    };
    let body = encode(&history(CLAUDE)).unwrap();
    assert_eq!(body["messages"][0]["content"], json!([{"text": "Hi"}]));
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"reasoningContent": {"reasoningText": {"text": "Let me think.", "signature": "EqQBCkYIARgC"}}},
            {"reasoningContent": {"redactedContent": "EmwKAhgB"}},
            {"text": "Hello."},
        ])
    );
    for model in [NOVA, LLAMA] {
        let body = encode(&history(model)).unwrap();
        assert_eq!(body["messages"][1]["content"], json!([{"text": "Hello."}]), "{model}");
    }
}

#[test]
fn claude_thinking_takes_a_budget_or_adapts_as_the_model_does() {
    let thinking =
        Some(Reasoning { enabled: true, effort: Some(Effort::High), budget_tokens: None });
    let r = Request {
        reasoning: thinking.clone(),
        max_tokens: Some(2000),
        temperature: Some(0.3),
        top_k: Some(5),
        ..req(CLAUDE, vec![Message::user("Think.")])
    };
    let body = encode(&r).unwrap();
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": Effort::High.budget_tokens()}})
    );
    // max_tokens raised above the budget; no temperature or top_k with thinking.
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": Effort::High.budget_tokens() + 1024}));

    let body = encode(&Request { model: CLAUDE_ADAPTIVE.into(), ..r.clone() }).unwrap();
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "high"}})
    );
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 2000}));

    // Other families: nothing of Claude's, sampling as asked.
    let body = encode(&Request { model: LLAMA.into(), ..r }).unwrap();
    assert!(body.get("additionalModelRequestFields").is_none());
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 2000, "temperature": 0.3}));
}

#[test]
fn a_claude_tool_loop_without_its_own_thinking_goes_on_without_thinking() {
    let r = Request {
        reasoning: Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(4096) }),
        tools: vec![weather()],
        ..req(
            CLAUDE,
            vec![
                Message::user("Weather?"),
                msg(Role::Assistant, vec![call("c1", "get_weather", "{}")]),
                msg(Role::User, vec![result("c1", "sun", false)]),
            ],
        )
    };
    assert!(encode(&r).unwrap().get("additionalModelRequestFields").is_none());
}

#[test]
fn cache_markers_become_cache_points_where_the_family_caches() {
    let cached_tool =
        Tool { cache_control: Some(json!({"type": "ephemeral", "ttl": "1h"})), ..weather() };
    let r = |model: &str| Request {
        system: vec![TextBlock {
            text: "Long rules.".into(),
            cache_control: Some(json!({"type": "ephemeral"})),
        }],
        tools: vec![cached_tool.clone()],
        ..req(
            model,
            vec![
                msg(Role::User, vec![cached("Big context."), text("Question?")]),
                msg(Role::Assistant, vec![call("c1", "get_weather", "{}")]),
                msg(
                    Role::User,
                    vec![Part::ToolResult(ToolResult {
                        call_id: "c1".into(),
                        name: None,
                        content: vec![cached("sun")],
                        is_error: false,
                    })],
                ),
            ],
        )
    };
    let point = json!({"cachePoint": {"type": "default"}});
    for model in [CLAUDE, NOVA] {
        let body = encode(&r(model)).unwrap();
        assert_eq!(body["system"], json!([{"text": "Long rules."}, point]));
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"text": "Big context."}, point, {"text": "Question?"}])
        );
        assert_eq!(body["messages"][2]["content"][1], point, "after the result");
        assert_eq!(
            body["toolConfig"]["tools"][1],
            json!({"cachePoint": {"type": "default", "ttl": "1h"}})
        );
    }
    let body = encode(&r(LLAMA)).unwrap();
    assert!(!body.to_string().contains("cachePoint"), "{body}");
}

#[test]
fn structured_output_goes_as_a_schema_string_and_a_json_object_as_an_instruction() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "integer"}}});
    let r = Request {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "answer".into(),
            schema: schema.clone(),
            strict: Some(true),
            description: Some("The answer".into()),
        }),
        ..req(NOVA, vec![Message::user("Give me a.")])
    };
    let body = encode(&r).unwrap();
    let format = &body["outputConfig"]["textFormat"];
    assert_eq!(format["type"], "json_schema");
    let definition = &format["structure"]["jsonSchema"];
    assert_eq!(
        serde_json::from_str::<Value>(definition["schema"].as_str().unwrap()).unwrap(),
        schema
    );
    assert_eq!(
        (definition["name"].as_str(), definition["description"].as_str()),
        (Some("answer"), Some("The answer"))
    );

    let r = Request { response_format: Some(ResponseFormat::JsonObject), ..r };
    let body = encode(&r).unwrap();
    assert!(body.get("outputConfig").is_none());
    assert_eq!(body["system"][0]["text"], JSON_OBJECT_INSTRUCTION);
}

#[test]
fn what_converse_cannot_take_is_refused_by_name() {
    let mut r = req(CLAUDE, vec![Message::user("Search.")]);
    r.extras.hosted_tools.push(HostedTool {
        kind: Some(ServerTool::WebSearch),
        dialect: Dialect::Anthropic,
        tool_type: "web_search_20250305".into(),
        path: "tools[1]".into(),
        config: json!({"type": "web_search_20250305", "name": "web_search"}),
    });
    assert!(unsupported(encode(&r)).contains("web_search_20250305"));
    let odd = Part::Untranslatable {
        what: "messages[0].content[1]: a `input_audio` content part".into(),
    };
    assert!(
        unsupported(encode(&req(CLAUDE, vec![msg(Role::User, vec![odd])]))).contains("input_audio")
    );
    let sealed = Part::Compaction { sealed: "x".into() };
    assert!(
        unsupported(encode(&req(CLAUDE, vec![msg(Role::User, vec![sealed])])))
            .contains("compaction")
    );
    let leading = msg(Role::System, vec![image(ImageSource::Url { url: "s3://b/a.png".into() })]);
    assert!(
        unsupported(encode(&req(CLAUDE, vec![leading, Message::user("x")]))).contains("system")
    );
}

#[test]
fn families_are_read_from_the_upstream_id() {
    for (model, family) in [
        (CLAUDE, Family::Claude),
        ("anthropic.claude-3-haiku-20240307-v1:0", Family::Claude),
        (
            "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-1-20250805-v1:0",
            Family::Claude,
        ),
        (NOVA, Family::Nova),
        ("amazon.nova-2-lite-v1:0", Family::Nova),
        (LLAMA, Family::Llama),
        (
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3",
            Family::Other,
        ),
    ] {
        assert_eq!(Family::of(model), family, "{model}");
    }
    // The catalog's traits for a Bedrock Claude id are Anthropic's.
    assert_eq!(
        crate::ModelTraits::infer(Wire::Anthropic, CLAUDE_ADAPTIVE).reasoning,
        crate::ReasoningControl::Effort
    );
}

#[test]
fn the_traits_family_decides_what_only_claude_takes() {
    // An application inference profile's ARN names no family: what the catalog
    // says it serves decides, not the id.
    let arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3";
    let mut request = req(arn, vec![Message::user("think")]);
    request.reasoning =
        Some(crate::Reasoning { enabled: true, effort: None, budget_tokens: Some(2048) });
    request.max_tokens = Some(4096);
    let unnamed = encode(&request).unwrap();
    assert!(unnamed.get("additionalModelRequestFields").is_none(), "{unnamed}");
    let claude = crate::ModelTraits::infer_as(Wire::Anthropic, Family::Claude, arn);
    let body = encode_request(&request, claude).unwrap();
    assert_eq!(body["additionalModelRequestFields"]["thinking"]["budget_tokens"], 2048, "{body}");
}
