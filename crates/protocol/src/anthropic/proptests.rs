//! Property tests: requests, responses and streams round-trip through the wire.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::anthropic::request::{
    DEFAULT_MAX_TOKENS, SCHEMA_NAME, continues_without_thinking, parse_request,
};
use crate::{
    Image, ImageSource, Message, Part, Reasoning, Request, Response, ResponseAccumulator,
    ResponseFormat, Role, SseDecoder, StopReason, StreamDecoder, StreamEncoder, TextBlock, Tool,
    ToolCall, ToolChoice, ToolResult, Usage, response_to_events,
};

use super::{Decoder, Encoder, encode_response, parse_response, parse_usage};

/// Text with something in it: blank text is dropped on the way to Anthropic,
/// which refuses it (tested on its own), so it does not round-trip.
fn text_strategy() -> impl Strategy<Value = String> {
    "\\PC{0,8}[a-zA-Z0-9\u{e9}\u{4e2d}]\\PC{0,8}"
}

fn cache_control() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![Just(None), Just(Some(json!({"type": "ephemeral"})))]
}

fn text_part() -> impl Strategy<Value = Part> {
    (text_strategy(), cache_control())
        .prop_map(|(text, cache_control)| Part::Text(TextBlock { text, cache_control }))
}

fn image_part_strategy() -> impl Strategy<Value = Part> {
    let source = prop_oneof![
        (
            prop::sample::select(vec!["image/png", "image/jpeg", "image/webp"]),
            "[A-Za-z0-9+/]{4,24}"
        )
            .prop_map(|(m, data)| ImageSource::Base64 { media_type: m.into(), data }),
        "[a-z]{1,8}".prop_map(|p| ImageSource::Url { url: format!("https://example.com/{p}.png") }),
    ];
    (source, cache_control()).prop_map(|(source, cache_control)| {
        Part::Image(Image { source, detail: None, cache_control })
    })
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "\\PC{0,8}".prop_map(Value::String),
    ]
}

fn arguments() -> impl Strategy<Value = String> {
    let value = json_leaf().prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    prop::collection::btree_map("[a-z_]{1,6}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

fn tool_call() -> impl Strategy<Value = Part> {
    ("toolu_[A-Za-z0-9]{1,10}", "[a-z_]{1,10}", arguments()).prop_map(|(id, name, arguments)| {
        Part::ToolCall(ToolCall { id, name, arguments, signature: None })
    })
}

fn signed_thinking() -> impl Strategy<Value = Part> {
    ("\\PC{0,16}", "[A-Za-z0-9+/]{8,40}={0,2}")
        .prop_map(|(text, sig)| Part::Thinking { text, signature: Some(sig) })
}

fn tool_result() -> impl Strategy<Value = Part> {
    (
        "toolu_[A-Za-z0-9]{1,10}",
        prop::collection::vec(prop_oneof![text_part(), image_part_strategy()], 0..3),
        any::<bool>(),
    )
        .prop_map(|(call_id, content, is_error)| {
            Part::ToolResult(ToolResult { call_id, name: None, content, is_error })
        })
}

fn user_content() -> impl Strategy<Value = Vec<Part>> {
    (
        prop::collection::vec(tool_result(), 0..3),
        prop::collection::vec(prop_oneof![3 => text_part(), 1 => image_part_strategy()], 0..3),
    )
        .prop_filter("non-empty", |(a, b)| !a.is_empty() || !b.is_empty())
        .prop_map(|(mut results, rest)| {
            results.extend(rest);
            results
        })
}

fn assistant_content() -> impl Strategy<Value = Vec<Part>> {
    (
        prop::option::of(signed_thinking()),
        prop::option::of("[A-Za-z0-9+/]{4,20}".prop_map(|data| Part::RedactedThinking { data })),
        prop::collection::vec(prop_oneof![text_part(), tool_call()], 1..4),
    )
        .prop_map(|(thinking, redacted, rest)| {
            thinking.into_iter().chain(redacted).chain(rest).collect()
        })
}

fn messages() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec((user_content(), assistant_content()), 1..4)
        .prop_flat_map(|pairs| {
            let n = pairs.len() * 2;
            (Just(pairs), (n - 1)..=n)
        })
        .prop_map(|(pairs, len)| {
            pairs
                .into_iter()
                .flat_map(|(u, a)| {
                    [
                        Message { role: Role::User, content: u },
                        Message { role: Role::Assistant, content: a },
                    ]
                })
                .take(len)
                .collect()
        })
}

fn tools() -> impl Strategy<Value = Vec<Tool>> {
    prop::collection::vec(
        (
            "[a-z_]{1,10}",
            prop::option::of("\\PC{1,20}"),
            prop::collection::btree_set("[a-z]{1,6}", 0..3),
            prop::option::of(any::<bool>()),
            cache_control(),
        )
            .prop_map(|(name, description, props, strict, cache_control)| {
                let properties: Map<String, Value> =
                    props.into_iter().map(|p| (p, json!({"type": "string"}))).collect();
                Tool {
                    name,
                    description,
                    parameters: json!({"type": "object", "properties": properties}),
                    strict,
                    cache_control,
                    freeform: None,
                    namespace: None,
                }
            }),
        0..3,
    )
}

prop_compose! {
    fn request()(
        model in "[a-z0-9.-]{1,20}",
        system in prop::collection::vec(
            (text_strategy(), cache_control())
                .prop_map(|(text, cache_control)| TextBlock { text, cache_control }),
            0..3),
        messages in messages(),
        tools in tools(),
        choice in 0usize..5,
        disable_parallel in any::<bool>(),
        thinking in prop::option::of(1024u64..40000),
        extra_tokens in 1u64..20000,
        max_tokens in prop::option::of(1u64..100000),
        temperature in prop::option::of((0u32..=100).prop_map(|n| f64::from(n) / 100.0)),
        top_p in prop::option::of((95u32..=100).prop_map(|n| f64::from(n) / 100.0)),
        top_k in prop::option::of(1u64..500),
        stop in prop::collection::vec("\\PC{1,8}", 0..3),
        stream in any::<bool>(),
        schema in prop::option::of(Just(json!({"type": "object", "properties": {"a": {"type": "integer"}}}))),
        user in prop::option::of("[a-z0-9_]{1,20}"),
    ) -> Request {
        let tool_choice = match (tools.first(), choice) {
            (None, _) | (_, 0) => None,
            (Some(_), 1) => Some(ToolChoice::Auto),
            (Some(_), 2) => Some(ToolChoice::None),
            (Some(_), 3) => Some(ToolChoice::Required),
            (Some(t), _) => Some(ToolChoice::Tool { name: t.name.clone() }),
        };
        // `disable_parallel_tool_use` lives on a tool_choice other than `none`.
        let parallel_tool_calls = match &tool_choice {
            Some(ToolChoice::None) | None => None,
            Some(_) => disable_parallel.then_some(false),
        };
        // Representable thinking: a budget strictly below max_tokens, and no
        // sampling parameters the API refuses with it.
        let (reasoning, max_tokens, temperature, top_k) = match thinking {
            Some(budget) => (
                Some(Reasoning { enabled: true, effort: None, budget_tokens: Some(budget) }),
                Some(budget + extra_tokens),
                None,
                None,
            ),
            None => (None, Some(max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)), temperature, top_k),
        };
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
            top_k,
            stop,
            stream,
            reasoning,
            response_format: schema.map(|schema| ResponseFormat::JsonSchema {
                name: SCHEMA_NAME.into(),
                schema,
                strict: None,
                description: None,
            }),
            user,
            metadata: None,
        }
    }
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    // The reasons Anthropic can express one-to-one.
    prop::sample::select(vec![
        StopReason::EndTurn,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::ToolUse,
        StopReason::Refusal,
        StopReason::PauseTurn,
    ])
}

prop_compose! {
    fn response()(
        id in "msg_[A-Za-z0-9]{1,24}",
        model in "[a-z0-9.-]{1,20}",
        content in prop::collection::vec(prop_oneof![
            "\\PC{0,24}".prop_map(|t| Part::Text(TextBlock::new(t))),
            ("\\PC{0,24}", prop::option::of("[A-Za-z0-9+/]{8,40}={0,2}"))
                .prop_map(|(text, signature)| Part::Thinking { text, signature }),
            "[A-Za-z0-9+/]{4,20}".prop_map(|data| Part::RedactedThinking { data }),
            ("toolu_[A-Za-z0-9]{1,10}", "[a-z_]{1,10}", arguments())
                .prop_map(|(id, name, arguments)| Part::ToolCall(ToolCall { id, name, arguments, signature: None })),
        ], 0..5),
        stop_reason in stop_reason(),
        stop_sequence in prop::option::of("\\PC{1,8}"),
        // Input and output are always reported for a finished answer; the cache
        // counts are optional.
        uncached in 0u64..100_000,
        output in 0u64..100_000,
        read in prop::option::of(0u64..100_000),
        write in prop::option::of(0u64..100_000),
    ) -> Response {
        Response {
            id,
            model,
            content,
            stop_reason: Some(stop_reason),
            stop_sequence,
            usage: Usage {
                input_tokens: Some(uncached + read.unwrap_or(0) + write.unwrap_or(0)),
                output_tokens: Some(output),
                cache_read_tokens: read,
                cache_write_tokens: write,
                reasoning_tokens: None,
            },
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn request_round_trips(mut req in request()) {
        let body = serde_json::to_vec(&crate::Wire::Anthropic.encode_request(&req).unwrap()).unwrap();
        let mut back = parse_request(&body).unwrap();
        // A tool loop without thinking of its own goes without thinking.
        if continues_without_thinking(&req) {
            req.reasoning = None;
        }
        // A tool history without tools gets its tools declared, not to be called.
        if req.tools.is_empty() && super::request::history_tools(&req).is_some() {
            prop_assert_eq!(back.tool_choice.take(), Some(crate::ToolChoice::None));
            prop_assert!(!back.tools.is_empty());
            back.tools.clear();
        }
        prop_assert_eq!(back, req);
    }

    #[test]
    fn response_round_trips(resp in response()) {
        let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
        let back = parse_response(&body).unwrap();
        prop_assert_eq!(back, resp);
    }

    #[test]
    fn usage_only_parse_agrees_with_the_whole_parse(resp in response()) {
        let body = serde_json::to_vec(&encode_response(&resp)).unwrap();
        let whole = parse_response(&body).unwrap();
        prop_assert_eq!(parse_usage(&body).unwrap().unwrap_or_default(), whole.usage);
    }

    #[test]
    fn stream_round_trips_through_any_chunking(
        resp in response(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let mut enc = Encoder::new();
        let mut bytes = Vec::new();
        for event in response_to_events(&resp) {
            enc.push(&event, &mut bytes);
        }
        enc.finish(&mut bytes);

        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut sse = SseDecoder::new();
        let mut decoder = Decoder::new();
        let mut raw = Vec::new();
        let mut events = Vec::new();
        let mut prev = 0;
        for cut in cuts.into_iter().chain([bytes.len()]) {
            sse.push(&bytes[prev..cut], &mut raw).unwrap();
            prev = cut;
            for ev in raw.drain(..) {
                decoder.push(&ev, &mut events).unwrap();
            }
        }
        sse.finish(&mut raw);
        for ev in raw.drain(..) {
            decoder.push(&ev, &mut events).unwrap();
        }
        decoder.finish(&mut events).unwrap();

        let mut acc = ResponseAccumulator::default();
        events.iter().for_each(|e| acc.push(e));
        prop_assert_eq!(acc.finish(), resp);
    }
}
