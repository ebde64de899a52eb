use std::borrow::Cow;

use serde_json::json;
use switchyard_protocol::{Message, Role, ToolCall, Usage};

use super::*;

fn schema_request() -> Request {
    Request {
        model: "m".into(),
        system: vec![TextBlock::new("You are terse.")],
        messages: vec![Message::text(Role::User, "a person")],
        response_format: Some(ResponseFormat::JsonSchema {
            name: "person".into(),
            schema: json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}),
            strict: Some(true),
            description: Some("Someone famous".into()),
        }),
        ..Request::default()
    }
}

fn answer(parts: Vec<Part>) -> Response {
    Response {
        id: "r".into(),
        model: "m".into(),
        content: parts,
        stop_reason: None,
        stop_sequence: None,
        usage: Usage::default(),
    }
}

fn text(t: &str) -> Part {
    Part::Text(TextBlock::new(t))
}

#[test]
fn modes_parse_as_the_configuration_writes_them_and_the_hint_wins() {
    let parsed: Vec<StructuredMode> =
        serde_json::from_value(json!(["native", "prompted", "auto"])).unwrap();
    assert_eq!(parsed, [StructuredMode::Native, StructuredMode::Prompted, StructuredMode::Auto]);
    assert!(serde_json::from_value::<StructuredMode>(json!("json")).is_err());
    assert_eq!(StructuredMode::default(), StructuredMode::Auto);
    for m in parsed {
        assert_eq!(serde_json::from_value::<StructuredMode>(json!(m.as_str())).unwrap(), m);
    }
    assert_eq!(mode(None, StructuredMode::Native), StructuredMode::Native);
    assert_eq!(
        mode(Some(StructuredMode::Prompted), StructuredMode::Native),
        StructuredMode::Prompted
    );
}

#[test]
fn auto_asks_natively_where_the_model_can_and_prompts_elsewhere() {
    let req = schema_request();
    let capable = Capabilities { structured_output: true, ..Capabilities::default() };
    let plain = Capabilities { tools: true, ..Capabilities::default() };
    let auto = StructuredMode::Auto;
    assert_eq!(asked(&req, auto, Some(&capable)), Some(Asked::Native));
    assert_eq!(asked(&req, auto, Some(&plain)), Some(Asked::Prompted));
    assert_eq!(asked(&req, auto, None), Some(Asked::Native), "no declared capabilities: as before");
    assert_eq!(asked(&req, StructuredMode::Native, Some(&plain)), Some(Asked::Native));
    assert_eq!(asked(&req, StructuredMode::Prompted, Some(&capable)), Some(Asked::Prompted));
    // No schema, nothing to ask (a plain JSON object mode is not a schema).
    let mut free = req.clone();
    free.response_format = Some(ResponseFormat::JsonObject);
    assert_eq!(asked(&free, StructuredMode::Prompted, Some(&plain)), None);
    free.response_format = None;
    assert_eq!(asked(&free, auto, Some(&plain)), None);
}

#[test]
fn a_prompted_request_carries_the_schema_in_its_system_prompt_and_no_response_format() {
    let req = schema_request();
    let out = prompted(Cow::Borrowed(&req));
    assert!(out.response_format.is_none());
    assert_eq!(out.system.len(), 2, "the client's own system prompt stays first");
    assert_eq!(out.system[0].text, "You are terse.");
    let added = &out.system[1].text;
    assert!(added.starts_with("Answer only with one JSON value"), "{added}");
    assert!(added.contains("Schema \"person\": Someone famous"), "{added}");
    let pretty = serde_json::to_string_pretty(schema_of(&req).unwrap()).unwrap();
    assert!(pretty.contains('\n') && added.ends_with(&pretty), "pretty-printed: {added}");
    assert_eq!(out.messages, req.messages);

    // Without a schema the request is left alone (and not copied).
    let mut plain = req.clone();
    plain.response_format = Some(ResponseFormat::JsonObject);
    assert!(matches!(prompted(Cow::Borrowed(&plain)), Cow::Borrowed(_)));
}

#[test]
fn the_instruction_names_the_schema_only_when_it_has_a_name() {
    let s = json!({"type": "integer"});
    let bare = instruction("", None, &s);
    assert!(!bare.contains("Schema \""), "{bare}");
    assert!(bare.ends_with("{\n  \"type\": \"integer\"\n}"), "{bare}");
    assert!(instruction("n", Some("  "), &s).contains("Schema \"n\":\n"));
}

#[test]
fn one_surrounding_fence_and_whitespace_come_off() {
    let cases = [
        ("{\"a\":1}", "{\"a\":1}"),
        ("  \n{\"a\":1}\n\n", "{\"a\":1}"),
        ("```json\n{\"a\":1}\n```", "{\"a\":1}"),
        ("```JSON\n{\"a\":1}```", "{\"a\":1}"),
        ("\n```\n[1, 2]\n```\n", "[1, 2]"),
        ("```json\n```json\n1\n```\n```", "```json\n1\n```"),
        // Not a fence around the whole: left as it is.
        ("Here: ```json\n1\n```", "Here: ```json\n1\n```"),
        ("```json\n1", "```json\n1"),
        ("```json {\"a\":1}```", "```json {\"a\":1}```"),
        ("```a b\n1\n```", "```a b\n1\n```"),
    ];
    for (input, want) in cases {
        assert_eq!(strip_fence(input), want, "{input:?}");
    }
}

#[test]
fn an_answer_is_checked_as_json_against_the_schema() {
    let s = json!({"type": "object", "required": ["name"]});
    assert_eq!(check_text("```json\n{\"name\": 1}\n```", &s), Ok("{\"name\": 1}"));
    let err = check_text("Sure! {\"name\": 1}", &s).unwrap_err();
    assert!(err.starts_with("the answer is not JSON"), "{err}");
    let err = check_text("{}", &s).unwrap_err();
    assert!(err.contains("required property \"name\""), "{err}");
    assert!(check_text("  ", &s).unwrap_err().contains("no text"));
}

#[test]
fn a_valid_whole_answer_is_left_as_its_bare_json_text() {
    let s = json!({"type": "object", "required": ["name"]});
    let thinking = Part::Thinking { text: "hmm".into(), signature: None };
    let mut r = answer(vec![thinking.clone(), text("```json\n{\"name\":"), text(" \"Ada\"}\n```")]);
    settle(&mut r, &s).unwrap();
    assert_eq!(r.content, [thinking, text("{\"name\": \"Ada\"}")]);

    let mut bad = answer(vec![text("{\"nom\": \"Ada\"}")]);
    let err = settle(&mut bad, &s).unwrap_err();
    assert!(err.contains("at the root"), "{err}");
    assert_eq!(bad.content, [text("{\"nom\": \"Ada\"}")], "an invalid answer is left as it came");

    // A tool call is a tool loop's step, not the answer: it passes as it is.
    let call = Part::ToolCall(ToolCall {
        id: "c1".into(),
        name: "lookup".into(),
        arguments: "{}".into(),
        signature: None,
    });
    let mut step = answer(vec![text("let me look"), call]);
    let before = step.content.clone();
    settle(&mut step, &s).unwrap();
    assert_eq!(step.content, before);
}

#[test]
fn a_stream_is_checked_on_its_text_when_it_ends() {
    let s = json!({"type": "array", "items": {"type": "integer"}});
    let delta = |t: &str| StreamEvent::Delta { index: 0, delta: Delta::Text { text: t.into() } };
    let mut c = Collected::default();
    for t in ["```json\n[1,", " 2]", "\n```"] {
        c.observe(&delta(t));
    }
    c.observe(&StreamEvent::Delta { index: 1, delta: Delta::Thinking { text: "x".into() } });
    assert_eq!(c.finish(&s), Verdict::Valid);

    let mut c = Collected::default();
    c.observe(&delta("[1, \"two\"]"));
    let Verdict::Invalid(why) = c.finish(&s) else { panic!("not invalid") };
    assert!(why.contains("/1"), "{why}");

    let mut c = Collected::default();
    c.observe(&StreamEvent::BlockStart {
        index: 0,
        kind: BlockKind::ToolCall { id: "c".into(), name: "t".into() },
    });
    assert_eq!(c.finish(&s), Verdict::Valid, "a tool call is not the answer");

    // Past the cap, the text is let go and the stream is not checked.
    let mut c = Collected::default();
    let chunk = "1".repeat(1 << 20);
    for _ in 0..5 {
        c.observe(&delta(&chunk));
    }
    assert!(c.text.is_empty());
    assert_eq!(c.finish(&s), Verdict::Unchecked);
}

#[test]
fn the_capability_filter_asks_for_structured_output_only_in_native_mode() {
    use crate::catalog::{Catalog, Scope};
    use crate::embed::{Capability, GatewayBuilder, Model, Provider, Route, Target};
    use crate::util::Date;
    use switchyard_protocol::ErrorCode;

    let catalog: Catalog = GatewayBuilder::new()
        .provider("p", Provider::mock())
        .model(Model::new("plain").deployment("p", "up-plain").capabilities([Capability::Tools]))
        .model(Model::new("routed").deployment("p", "up-routed").capabilities([Capability::Tools]))
        .route(
            Route::new("Prompted", "routed", Target::new("p"))
                .structured_output(StructuredMode::Prompted),
        )
        .compile()
        .unwrap();
    let plan = |model: &str| catalog.plan(model, Date::today(), &Scope::default()).unwrap();
    assert_eq!(plan("plain").policy.structured_output, StructuredMode::Auto, "the default");
    assert_eq!(plan("routed").policy.structured_output, StructuredMode::Prompted, "the route's");

    let req = schema_request();
    for m in [StructuredMode::Auto, StructuredMode::Prompted] {
        let mut p = plan("plain");
        crate::filter::by_capability(&mut p, &req, m).unwrap();
        assert_eq!(p.candidates.len(), 1, "{m:?} keeps a model without the capability");
    }
    let err =
        crate::filter::by_capability(&mut plan("plain"), &req, StructuredMode::Native).unwrap_err();
    assert_eq!(err.code(), ErrorCode::CapabilityMissing);
    assert!(err.body().message.contains("structured_output"), "{err}");
    // Without a schema nothing is asked, whatever the mode.
    let mut free = req.clone();
    free.response_format = None;
    crate::filter::by_capability(&mut plan("plain"), &free, StructuredMode::Native).unwrap();
}
