//! Property tests: requests, responses and streams keep their meaning through the
//! wire (as far as Gemini can express it).

use std::collections::HashMap;

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::Response;
use crate::gemini::test_support::{
    accumulate, assert_invariants, call, decode_chunks, encode_events, msg, result, signed, text,
};
use crate::model::{
    Document, Effort, Image, ImageSource, Message, Part, Reasoning, Request, ResponseFormat, Role,
    StopReason, TextBlock, Tool, ToolCall, ToolChoice, Usage, response_to_events,
};

use super::{encode_response, parse_request, parse_response};

#[derive(Debug, Clone)]
struct CallSpec {
    gemini: bool,
    sig: Option<String>,
    args: String,
    result: String,
    is_error: bool,
    named: bool,
}

#[derive(Debug, Clone)]
enum Turn {
    User(Vec<Part>),
    System(String),
    Assistant { thinking: bool, text: Option<String>, calls: Vec<CallSpec> },
}

fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9][a-zA-Z0-9 .,!?'\"\\\\\n{}éß漢😀-]{0,15}"
}

fn any_text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,\"\\\\\n{}é漢]{0,12}"
}

fn url_signature() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_-]{4,24}"
}

fn args_json() -> impl Strategy<Value = String> {
    let value = prop_oneof![
        any::<i64>().prop_map(Value::from),
        word().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        prop::collection::vec(any::<i32>(), 0..3).prop_map(Value::from),
    ];
    prop::collection::btree_map("[a-z_]{1,6}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

fn image_part_strategy() -> impl Strategy<Value = Part> {
    prop_oneof![
        ("image/(png|jpeg|webp)", "[A-Za-z0-9+/]{4,16}").prop_map(|(media_type, data)| {
            Part::Image(Image {
                source: ImageSource::Base64 { media_type, data },
                detail: Some("low".into()),
                cache_control: None,
            })
        }),
        "https://example\\.com/[a-z]{1,8}(\\.png|\\.jpg)?".prop_map(|url| {
            Part::Image(Image {
                source: ImageSource::Url { url },
                detail: None,
                cache_control: None,
            })
        }),
    ]
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        any::<bool>(),
        prop::option::of(url_signature()),
        args_json(),
        word(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(gemini, sig, args, result, is_error, named)| CallSpec {
            gemini,
            sig,
            args,
            result,
            is_error,
            named,
        })
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        3 => prop::collection::vec(
            prop_oneof![3 => word().prop_map(|w| text(&w)), 1 => image_part_strategy()],
            1..4
        )
        .prop_map(Turn::User),
        1 => word().prop_map(Turn::System),
        3 => (any::<bool>(), prop::option::of(word()), prop::collection::vec(call_spec(), 0..3))
            .prop_map(|(thinking, text, calls)| Turn::Assistant { thinking, text, calls }),
    ]
}

fn build_messages(turns: Vec<Turn>) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut counter = 0;
    for t in turns {
        match t {
            Turn::User(parts) => messages.push(msg(Role::User, parts)),
            Turn::System(s) => messages.push(Message::text(Role::System, s)),
            Turn::Assistant { thinking, text: t, calls } => {
                let mut content = Vec::new();
                if thinking {
                    content
                        .push(Part::Thinking { text: "hmm".into(), signature: Some("x".into()) });
                }
                if let Some(t) = t {
                    content.push(text(&t));
                }
                let mut results = Vec::new();
                for (i, c) in calls.iter().enumerate() {
                    counter += 1;
                    let base = if c.gemini {
                        format!("gcall_g{counter}")
                    } else {
                        format!("toolu_{counter}")
                    };
                    let id = base;
                    let name = format!("tool_{i}");
                    content.push(match &c.sig {
                        Some(s) => signed(&id, &name, &c.args, s),
                        None => call(&id, &name, &c.args),
                    });
                    results.push(result(
                        &id,
                        c.named.then_some(name.as_str()),
                        &c.result,
                        c.is_error,
                    ));
                }
                messages.push(msg(Role::Assistant, content));
                if !results.is_empty() {
                    messages.push(msg(Role::User, results));
                }
            }
        }
    }
    messages
}

fn tool_strategy() -> impl Strategy<Value = Tool> {
    ("[a-z_]{1,10}", prop::option::of(word()), args_json(), prop::option::of(any::<bool>())).prop_map(
        |(name, description, props, strict)| Tool {
            name,
            description,
            parameters: json!({"type": "object", "properties": serde_json::from_str::<Value>(&props).unwrap()}),
            strict,
            cache_control: None,
            freeform: None,
            namespace: None,
        },
    )
}

fn reasoning_strategy() -> impl Strategy<Value = Reasoning> {
    let effort = prop_oneof![
        Just(Effort::Minimal),
        Just(Effort::Low),
        Just(Effort::Medium),
        Just(Effort::High)
    ];
    prop_oneof![
        Just(Reasoning { enabled: false, effort: None, budget_tokens: None }),
        (prop::option::of(effort), prop::option::of(1u64..40000)).prop_map(
            |(effort, budget_tokens)| { Reasoning { enabled: true, effort, budget_tokens } }
        ),
    ]
}

fn response_format_strategy() -> impl Strategy<Value = ResponseFormat> {
    prop_oneof![
        Just(ResponseFormat::Text),
        Just(ResponseFormat::JsonObject),
        ("[a-z]{1,8}", args_json(), prop::option::of(word())).prop_map(|(name, props, description)| {
            ResponseFormat::JsonSchema {
                name,
                schema: json!({"type": "object", "properties": serde_json::from_str::<Value>(&props).unwrap()}),
                strict: Some(true),
                description,
            }
        }),
    ]
}

fn tool_choice_strategy() -> impl Strategy<Value = ToolChoice> {
    prop_oneof![
        Just(ToolChoice::Auto),
        Just(ToolChoice::None),
        Just(ToolChoice::Required),
        "[a-z_]{1,8}".prop_map(|name| ToolChoice::Tool { name }),
    ]
}

fn request_strategy() -> impl Strategy<Value = Request> {
    let conversation = (
        prop::collection::vec(word(), 0..3),
        prop::collection::vec(turn(), 0..7),
        prop::collection::vec(tool_strategy(), 0..3),
        prop::option::of(tool_choice_strategy()),
    );
    let params = (
        prop::option::of(1u64..100_000),
        // Two-decimal values, as clients send them: serde_json (without its
        // `float_roundtrip` feature) may re-read arbitrary floats 1 ULP off.
        prop::option::of((0u32..=200).prop_map(|n| f64::from(n) / 100.0)),
        prop::option::of((0u32..=100).prop_map(|n| f64::from(n) / 100.0)),
        prop::option::of(1u64..100),
        prop::collection::vec(word(), 0..3),
        prop::option::of(reasoning_strategy()),
        prop::option::of(response_format_strategy()),
        any::<bool>(),
        prop::option::of(any::<bool>()),
    );
    (conversation, params).prop_map(
        |(
            (system, turns, tools, tool_choice),
            (
                max_tokens,
                temperature,
                top_p,
                top_k,
                stop,
                reasoning,
                response_format,
                stream,
                parallel,
            ),
        )| Request {
            model: "gemini-2.5-pro".into(),
            stream_usage: false,
            compaction: None,
            extras: Default::default(),
            system: system.into_iter().map(TextBlock::new).collect(),
            messages: build_messages(turns),
            tools,
            tool_choice,
            parallel_tool_calls: parallel,
            max_tokens,
            temperature,
            top_p,
            top_k,
            stop,
            stream,
            reasoning,
            response_format,
            user: Some("u".into()),
            metadata: None,
        },
    )
}

/// What a request means once it has been through Gemini and back. Written from the
/// documented mapping, independently of the implementation.
fn gemini_meaning(req: &Request) -> Request {
    let mut out = Request {
        system: req.system.iter().map(|b| TextBlock::new(b.text.clone())).collect(),
        ..Request::default()
    };
    let leading = req.messages.iter().take_while(|m| m.role == Role::System).count();
    for m in &req.messages[..leading] {
        for p in &m.content {
            if let Part::Text(t) = p {
                out.system.push(TextBlock::new(t.text.clone()));
            }
        }
    }
    let mut ids: HashMap<String, (String, String)> = HashMap::new();
    let mut ordinal = 0;
    for m in &req.messages[leading..] {
        let role = if m.role == Role::Assistant { Role::Assistant } else { Role::User };
        let mut parts = Vec::new();
        for p in &m.content {
            match p {
                Part::Text(t) => parts.push(text(&t.text)),
                Part::Image(i) => parts.push(Part::Image(Image {
                    source: i.source.clone(),
                    detail: None,
                    cache_control: None,
                })),
                Part::ToolCall(c) => {
                    let id = if c.id.starts_with("gcall_") {
                        c.id.clone()
                    } else {
                        format!("call_{ordinal}")
                    };
                    ordinal += 1;
                    ids.insert(c.id.clone(), (id.clone(), c.name.clone()));
                    parts.push(Part::ToolCall(ToolCall {
                        id,
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                        signature: c.signature.clone(),
                    }));
                }
                Part::ToolResult(r) => {
                    let (id, name) = ids[&r.call_id].clone();
                    parts.push(result(&id, Some(&name), &r.text(), r.is_error));
                }
                // Only the data travels: names, titles and markers have no field.
                Part::Document(d) => parts.push(Part::Document(Document::new(d.source.clone()))),
                Part::Thinking { .. }
                | Part::RedactedThinking { .. }
                | Part::Untranslatable { .. }
                | Part::Compaction { .. } => {}
            }
        }
        if parts.is_empty() {
            continue;
        }
        match out.messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(parts),
            _ => out.messages.push(msg(role, parts)),
        }
    }
    out.tools =
        req.tools.iter().map(|t| Tool { strict: None, cache_control: None, ..t.clone() }).collect();
    out.tool_choice = req.tool_choice.clone();
    out.max_tokens = req.max_tokens;
    out.temperature = req.temperature;
    out.top_p = req.top_p;
    out.top_k = req.top_k;
    out.stop = req.stop.clone();
    out.reasoning = req.reasoning.as_ref().map(|r| {
        if r.enabled {
            Reasoning { enabled: true, effort: None, budget_tokens: Some(r.budget()) }
        } else {
            r.clone()
        }
    });
    out.response_format = req.response_format.as_ref().map(|f| match f {
        ResponseFormat::JsonSchema { schema, .. } => ResponseFormat::JsonSchema {
            name: "response".into(),
            schema: schema.clone(),
            strict: None,
            description: None,
        },
        other => other.clone(),
    });
    out
}

#[derive(Debug, Clone)]
enum CallKind {
    Gemini,
    Minted,
    Foreign,
}

fn response_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        3 => any_text().prop_map(|t| text(&t)),
        2 => (any_text(), prop::option::of("[a-z]{3}")).prop_map(|(t, s)| Part::Thinking { text: t, signature: s }),
        1 => "[a-z]{4}".prop_map(|data| Part::RedactedThinking { data }),
        1 => image_part_strategy(),
        3 => (
            prop_oneof![Just(CallKind::Gemini), Just(CallKind::Minted), Just(CallKind::Foreign)],
            prop::option::of(url_signature()),
            "[a-z_]{1,8}",
            args_json()
        )
            .prop_map(|(kind, sig, name, args)| {
                // Ids are completed in `response_strategy` (they depend on the
                // response id and the call's position).
                let marker = match kind {
                    CallKind::Gemini => "G",
                    CallKind::Minted => "M",
                    CallKind::Foreign => "F",
                };
                match sig {
                    Some(s) => signed(marker, &name, &args, &s),
                    None => call(marker, &name, &args),
                }
            }),
    ]
}

fn usage_strategy() -> impl Strategy<Value = Usage> {
    (
        prop::option::of(0u64..1_000_000),
        prop::option::of(0u64..1_000),
        prop::option::of(0u64..1_000_000),
        prop::option::of(0u64..1_000_000),
    )
        .prop_map(|(input, cache, reasoning, extra)| Usage {
            input_tokens: input,
            output_tokens: match reasoning {
                Some(r) => Some(r + extra.unwrap_or(0)),
                None => extra,
            },
            cache_read_tokens: cache,
            cache_write_tokens: None,
            reasoning_tokens: reasoning,
        })
}

fn stop_reason_strategy() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        Just(StopReason::EndTurn),
        Just(StopReason::MaxTokens),
        Just(StopReason::StopSequence),
        Just(StopReason::ToolUse),
        Just(StopReason::ContentFilter),
        Just(StopReason::Refusal),
        Just(StopReason::PauseTurn),
        Just(StopReason::Error),
    ]
}

fn response_strategy() -> impl Strategy<Value = Response> {
    (
        "[A-Za-z0-9]{1,12}",
        prop_oneof![Just(String::new()), "gemini-[a-z0-9.]{1,8}"],
        prop::collection::vec(response_part(), 0..7),
        prop::option::of(stop_reason_strategy()),
        prop::option::of(word()),
        usage_strategy(),
    )
        .prop_map(|(id, model, mut content, stop_reason, stop_sequence, usage)| {
            let mut n = 0;
            for part in &mut content {
                if let Part::ToolCall(c) = part {
                    c.id = match c.id.as_str() {
                        "G" => format!("gcall_k{n}x"),
                        "M" => format!("call_{id}_{n}"),
                        _ => format!("toolu_{n}"),
                    };
                    n += 1;
                }
            }
            Response { id, model, content, stop_reason, stop_sequence, usage }
        })
}

/// What a response means once it has been through Gemini and back.
fn gemini_response_meaning(resp: &Response) -> Response {
    let mut content: Vec<Part> = Vec::new();
    let mut calls = 0;
    for part in &resp.content {
        match part {
            Part::Text(t) if !t.text.is_empty() => match content.last_mut() {
                Some(Part::Text(last)) => last.text.push_str(&t.text),
                _ => content.push(text(&t.text)),
            },
            Part::Thinking { text: t, .. } if !t.is_empty() => match content.last_mut() {
                Some(Part::Thinking { text: last, .. }) => last.push_str(t),
                _ => content.push(Part::Thinking { text: t.clone(), signature: None }),
            },
            Part::ToolCall(c) => {
                let id = if c.id.starts_with("gcall_") {
                    c.id.clone()
                } else {
                    format!("call_{}_{calls}", resp.id)
                };
                calls += 1;
                content.push(Part::ToolCall(ToolCall { id, ..c.clone() }));
            }
            _ => {}
        }
    }
    let stop = match resp.stop_reason.unwrap_or(StopReason::EndTurn) {
        StopReason::MaxTokens => StopReason::MaxTokens,
        StopReason::ContentFilter | StopReason::Refusal => StopReason::ContentFilter,
        StopReason::Error => StopReason::Error,
        _ if calls > 0 => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    Response {
        id: resp.id.clone(),
        model: resp.model.clone(),
        content,
        stop_reason: Some(stop),
        stop_sequence: None,
        usage: resp.usage,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn request_round_trip_preserves_meaning(req in request_strategy()) {
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        prop_assert!(body.get("model").is_none());
        let back = parse_request(body.to_string().as_bytes()).unwrap();
        prop_assert_eq!(back, gemini_meaning(&req));
    }

    #[test]
    fn request_model_turns_always_start_signed(req in request_strategy()) {
        let body = crate::Wire::Gemini.encode_request(&req).unwrap();
        for content in body["contents"].as_array().unwrap() {
            if content["role"] == "model" {
                let first = content["parts"].as_array().unwrap().iter().find(|p| p.get("functionCall").is_some());
                if let Some(first) = first {
                    prop_assert!(first["thoughtSignature"].is_string(), "{}", content);
                }
            }
        }
    }

    #[test]
    fn response_round_trip(resp in response_strategy()) {
        let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
        prop_assert_eq!(parse_response(&body).unwrap(), gemini_response_meaning(&resp));
    }

    #[test]
    fn stream_and_whole_response_agree(
        resp in response_strategy(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let bytes = encode_events(&response_to_events(&resp));
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for c in cuts {
            chunks.push(&bytes[prev..c]);
            prev = c;
        }
        chunks.push(&bytes[prev..]);
        let events = decode_chunks(&chunks).unwrap();
        assert_invariants(&events);
        let whole = parse_response(&serde_json::to_vec(&encode_response(&resp)).unwrap()).unwrap();
        prop_assert_eq!(accumulate(&events), whole);
    }
}
