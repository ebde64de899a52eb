//! Property tests: requests, responses and streams keep their meaning through the
//! Responses format.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::responses::response::{encode_response, parse_response, response_id};
use crate::responses::test_support::{accumulate, decode, encode_events, sse_split};
use crate::{
    Effort, Image, ImageSource, Message, Part, Reasoning, Request, Response, ResponseFormat, Role,
    StopReason, TextBlock, Tool, ToolCall, ToolChoice, ToolResult, Usage, response_to_events,
};

use super::{FAMILY, encode_request, encode_request_for, parse_request};

fn any_text() -> impl Strategy<Value = String> {
    "\\PC{0,12}"
}

fn nonempty_text() -> impl Strategy<Value = String> {
    "\\PC{1,12}"
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z_][a-z0-9_]{0,8}"
}

fn text_part_s() -> impl Strategy<Value = Part> {
    any_text().prop_map(|t| Part::Text(TextBlock::new(t)))
}

fn image_part() -> impl Strategy<Value = Part> {
    let source = prop_oneof![
        "[a-z]{1,8}".prop_map(|p| ImageSource::Url { url: format!("https://example.com/{p}.png") }),
        (prop::sample::select(vec!["image/png", "image/jpeg"]), "[A-Za-z0-9+/]{0,12}")
            .prop_map(|(m, d)| ImageSource::Base64 { media_type: m.into(), data: d }),
    ];
    let detail = prop::option::of(prop::sample::select(vec!["low", "high", "auto"]));
    (source, detail).prop_map(|(source, detail)| {
        Part::Image(Image { source, detail: detail.map(str::to_owned), cache_control: None })
    })
}

fn tool_call_part() -> impl Strategy<Value = Part> {
    (ident(), ident(), any_text()).prop_map(|(id, name, arguments)| {
        Part::ToolCall(ToolCall { id, name, arguments, signature: None })
    })
}

fn user_part() -> impl Strategy<Value = Part> {
    let result = (ident(), prop::collection::vec(prop_oneof![text_part_s(), image_part()], 0..3))
        .prop_map(|(call_id, content)| {
            Part::ToolResult(ToolResult { call_id, name: None, content, is_error: false })
        });
    prop_oneof![text_part_s(), image_part(), result]
}

fn assistant_part() -> impl Strategy<Value = Part> {
    prop_oneof![
        text_part_s(),
        nonempty_text().prop_map(|text| Part::Thinking { text, signature: None }),
        tool_call_part(),
    ]
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        prop::collection::vec(user_part(), 1..4)
            .prop_map(|content| Message { role: Role::User, content }),
        prop::collection::vec(assistant_part(), 1..4)
            .prop_map(|content| Message { role: Role::Assistant, content }),
        prop::collection::vec(text_part_s(), 1..3)
            .prop_map(|content| Message { role: Role::System, content }),
    ]
}

fn effort() -> impl Strategy<Value = Effort> {
    prop::sample::select(vec![Effort::Minimal, Effort::Low, Effort::Medium, Effort::High])
}

fn request() -> impl Strategy<Value = Request> {
    let tool = (ident(), prop::option::of(any_text()), prop::option::of(any::<bool>()), ident())
        .prop_map(|(name, description, strict, field)| Tool {
            name,
            description,
            parameters: json!({"type": "object", "properties": {field: {"type": "string"}}}),
            strict,
            cache_control: None,
            freeform: None,
            namespace: None,
        });
    let tool_choice = prop::option::of(prop_oneof![
        Just(ToolChoice::Auto),
        Just(ToolChoice::None),
        Just(ToolChoice::Required),
        ident().prop_map(|name| ToolChoice::Tool { name }),
    ]);
    let reasoning = prop::option::of(
        (any::<bool>(), prop::option::of(effort()), prop::option::of(0u64..40_000)).prop_map(
            |(enabled, effort, budget_tokens)| Reasoning { enabled, effort, budget_tokens },
        ),
    );
    let format = prop::option::of(prop_oneof![
        Just(ResponseFormat::Text),
        Just(ResponseFormat::JsonObject),
        (ident(), prop::option::of(any::<bool>()), prop::option::of(any_text())).prop_map(
            |(name, strict, description)| ResponseFormat::JsonSchema {
                name,
                schema: json!({"type": "object"}),
                strict,
                description,
            }
        ),
    ]);
    let sampling = (
        prop::option::of(any::<bool>()),
        prop::option::of(0u64..1_000_000),
        prop::option::of((0u32..=16).prop_map(|k| f64::from(k) / 8.0)),
        prop::option::of((0u32..=16).prop_map(|k| f64::from(k) / 16.0)),
        any::<bool>(),
    );
    let ids = (
        prop::option::of(ident()),
        prop::option::of(prop::collection::btree_map(ident(), any_text(), 0..3)),
    );
    (
        ident(),
        prop::collection::vec(nonempty_text().prop_map(TextBlock::new), 0..3),
        prop::collection::vec(message(), 0..6),
        prop::collection::vec(tool, 0..3),
        tool_choice,
        reasoning,
        format,
        sampling,
        ids,
    )
        .prop_map(
            |(model, system, messages, tools, tool_choice, reasoning, format, sampling, ids)| {
                let (parallel_tool_calls, max_tokens, temperature, top_p, stream) = sampling;
                let (user, metadata) = ids;
                Request {
                    model,
                    stream_usage: false,
                    compaction: None,
                    extras: Default::default(),
                    system,
                    messages,
                    tools,
                    tool_choice,
                    parallel_tool_calls,
                    max_tokens,
                    temperature,
                    top_p,
                    top_k: None,
                    stop: Vec::new(),
                    stream,
                    reasoning,
                    response_format: format,
                    user,
                    metadata: metadata
                        .map(|m| m.into_iter().map(|(k, v)| (k, Value::String(v))).collect()),
                }
            },
        )
}

/// What a request means once expressed in the Responses API.
fn request_meaning(mut req: Request) -> Request {
    for tool in &mut req.tools {
        tool.strict = Some(tool.strict.unwrap_or(false));
    }
    if let Some(r) = &mut req.reasoning {
        r.effort =
            if r.enabled { r.effort.or(r.budget_tokens.map(Effort::from_budget)) } else { None };
        r.budget_tokens = None;
    }
    // Consecutive messages of one role are one turn.
    let mut merged: Vec<Message> = Vec::new();
    for msg in req.messages {
        match merged.last_mut() {
            Some(last) if last.role == msg.role => last.content.extend(msg.content),
            _ => merged.push(msg),
        }
    }
    // System messages before the conversation starts are system instructions.
    let mut messages = merged.into_iter().peekable();
    while let Some(msg) = messages.next_if(|m| m.role == Role::System) {
        for part in msg.content {
            if let Part::Text(block) = part {
                req.system.push(block);
            }
        }
    }
    req.messages = messages.collect();
    req
}

fn response() -> impl Strategy<Value = Response> {
    let part = prop_oneof![
        4 => text_part_s(),
        2 => (any_text(), prop::option::of(ident()))
            .prop_map(|(text, signature)| Part::Thinking { text, signature }),
        2 => tool_call_part(),
        1 => ident().prop_map(|data| Part::RedactedThinking { data }),
        1 => image_part(),
    ];
    let stop = prop::option::of(prop::sample::select(vec![
        StopReason::EndTurn,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::ToolUse,
        StopReason::ContentFilter,
        StopReason::Refusal,
        StopReason::PauseTurn,
        StopReason::Error,
    ]));
    let count = || prop::option::of(0u64..1_000_000);
    let usage = (count(), count(), count(), count(), count()).prop_map(|(i, o, r, w, t)| Usage {
        input_tokens: i,
        output_tokens: o,
        cache_read_tokens: r,
        cache_write_tokens: w,
        reasoning_tokens: t,
    });
    (
        prop_oneof!["resp_[a-z0-9]{1,8}", "[a-zA-Z0-9-]{0,10}"],
        ident(),
        prop::collection::vec(part, 0..6),
        stop,
        prop::option::of(any_text()),
        usage,
    )
        .prop_map(|(id, model, content, stop_reason, stop_sequence, usage)| Response {
            id,
            model,
            content,
            stop_reason,
            stop_sequence,
            usage,
        })
}

/// What a response means once expressed in the Responses API.
fn response_meaning(resp: &Response) -> Response {
    let content: Vec<Part> = resp
        .content
        .iter()
        .filter_map(|p| match p {
            Part::Text(_) | Part::ToolCall(_) => Some(p.clone()),
            Part::Thinking { text, .. } if !text.is_empty() => {
                Some(Part::Thinking { text: text.clone(), signature: None })
            }
            _ => None,
        })
        .collect();
    let has_tool_call = content.iter().any(|p| matches!(p, Part::ToolCall(_)));
    let stop_reason = Some(match resp.stop_reason {
        Some(StopReason::MaxTokens) => StopReason::MaxTokens,
        Some(StopReason::ContentFilter | StopReason::Refusal) => StopReason::ContentFilter,
        _ if has_tool_call => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    });
    let u = resp.usage;
    let known = u.input_tokens.is_some()
        || u.output_tokens.is_some()
        || u.cache_read_tokens.is_some()
        || u.reasoning_tokens.is_some();
    let usage = if known {
        Usage {
            input_tokens: Some(u.input_tokens.unwrap_or(0)),
            output_tokens: Some(u.output_tokens.unwrap_or(0)),
            cache_read_tokens: Some(u.cache_read_tokens.unwrap_or(0)),
            cache_write_tokens: None,
            reasoning_tokens: Some(u.reasoning_tokens.unwrap_or(0)),
        }
    } else {
        Usage::default()
    };
    Response {
        id: response_id(&resp.id),
        model: resp.model.clone(),
        content,
        stop_reason,
        stop_sequence: None,
        usage,
    }
}

/// Thinking as it might come in a history: ours (a Responses upstream's encrypted
/// reasoning, tagged), Claude's signature, or none.
fn signed(req: Request, picks: &[u8]) -> Request {
    let mut picks = picks.iter().cycle();
    let mut req = req;
    for msg in &mut req.messages {
        for part in &mut msg.content {
            if let Part::Thinking { signature, .. } = part {
                *signature = match picks.next().copied().unwrap_or(0) % 3 {
                    0 => Some(crate::continuity::tag_reasoning(FAMILY, "gAAAAB-tok")),
                    1 => Some("EqQBCkYIBxgC".into()),
                    _ => None,
                };
            }
        }
    }
    req
}

/// What a request sent to a Responses upstream means to a Responses reader:
/// only this family's reasoning is given back (its summary, the token being the
/// provider's), and nothing is stored.
fn upstream_meaning(mut req: Request) -> Request {
    for msg in &mut req.messages {
        msg.content.retain_mut(|part| match part {
            Part::Thinking { text, signature } => {
                let ours = signature
                    .as_deref()
                    .is_some_and(|s| crate::continuity::tagged_reasoning(s, FAMILY).is_some());
                *signature = None;
                ours && !text.is_empty()
            }
            _ => true,
        });
    }
    req.messages.retain(|m| !m.content.is_empty());
    req.extras.store = Some(false);
    request_meaning(req)
}

proptest! {
    /// Canonical → a Responses upstream's body → read back as a Responses client
    /// request: the conversation, tools and settings survive; reasoning only
    /// where the upstream issued it.
    #[test]
    fn upstream_request_round_trips(
        req in request(),
        picks in prop::collection::vec(any::<u8>(), 1..8),
    ) {
        let req = signed(req, &picks);
        let traits = crate::ModelTraits::infer(crate::Wire::Responses, &req.model);
        let wire = encode_request_for(&req, traits, FAMILY).unwrap();
        for item in wire["input"].as_array().into_iter().flatten() {
            if item["type"] == "reasoning" {
                prop_assert_eq!(&item["encrypted_content"], "gAAAAB-tok");
            }
        }
        let back = parse_request(wire.to_string().as_bytes()).unwrap();
        prop_assert_eq!(back, upstream_meaning(req));
    }

    #[test]
    fn request_round_trips(req in request()) {
        let wire = encode_request(&req).unwrap();
        let back = parse_request(wire.to_string().as_bytes()).unwrap();
        prop_assert_eq!(back, request_meaning(req));
    }

    #[test]
    fn response_round_trips(resp in response()) {
        let wire = encode_response(&resp);
        let back = parse_response(wire.to_string().as_bytes()).unwrap();
        prop_assert_eq!(back, response_meaning(&resp));
    }

    #[test]
    fn stream_agrees_with_non_stream(
        resp in response(),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let bytes = encode_events(&response_to_events(&resp));
        let streamed = accumulate(&decode(&sse_split(&bytes, &cuts)).unwrap());
        let whole = parse_response(encode_response(&resp).to_string().as_bytes()).unwrap();
        prop_assert_eq!(&streamed, &whole);
        prop_assert_eq!(streamed, response_meaning(&resp));
    }
}
