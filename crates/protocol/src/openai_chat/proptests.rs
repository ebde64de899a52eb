//! Property tests: requests, responses and streams round-trip through the wire.

use proptest::prelude::*;

use crate::model::response_to_events;
use crate::openai_chat::test_support::decode_stream;
use crate::{
    Message, Part, Request, Response, Role, StopReason, StreamEncoder, TextBlock, ToolCall,
    ToolResult, Usage,
};

use super::{Encoder, encode_request, encode_response, parse_request, parse_response, parse_usage};

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 .,!?\u{e9}\u{4e2d}]{1,24}"
}

fn arguments() -> impl Strategy<Value = String> {
    proptest::collection::btree_map("[a-z]{1,6}", 0i64..1000, 0..3)
        .prop_map(|m| serde_json::to_string(&m).unwrap())
}

fn response() -> impl Strategy<Value = Response> {
    let part = prop_oneof![
        text().prop_map(|t| Part::Text(TextBlock::new(t))),
        ("call_[a-z0-9]{4}", "[a-z_]{1,8}", arguments()).prop_map(|(id, name, arguments)| {
            Part::ToolCall(ToolCall { id, name, arguments, signature: None })
        }),
    ];
    (
        proptest::option::of(text()),
        proptest::collection::vec(part, 0..4),
        // The wire always carries both counts, so generate both or neither.
        proptest::option::of((0u64..10_000, 0u64..10_000)),
    )
        .prop_map(|(thinking, parts, counts)| {
            // OpenAI carries one text, then tool calls: normalise to that shape.
            let mut text = String::new();
            let mut calls = Vec::new();
            for p in parts {
                match p {
                    Part::Text(t) => text.push_str(&t.text),
                    other => calls.push(other),
                }
            }
            let mut content = Vec::new();
            if let Some(t) = thinking {
                content.push(Part::Thinking { text: t, signature: None });
            }
            if !text.is_empty() {
                content.push(Part::Text(TextBlock::new(text)));
            }
            let stop = if calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
            content.extend(calls);
            Response {
                id: "chatcmpl-x".into(),
                model: "m".into(),
                content,
                stop_reason: Some(stop),
                stop_sequence: None,
                usage: Usage {
                    input_tokens: counts.map(|c| c.0),
                    output_tokens: counts.map(|c| c.1),
                    ..Usage::default()
                },
            }
        })
}

fn request() -> impl Strategy<Value = Request> {
    let user = proptest::collection::vec(text(), 1..3).prop_map(|ts| Message {
        role: Role::User,
        content: ts.into_iter().map(|t| Part::Text(TextBlock::new(t))).collect(),
    });
    let assistant = (text(), "call_[a-z0-9]{4}", arguments()).prop_map(|(t, id, args)| Message {
        role: Role::Assistant,
        content: vec![
            Part::Text(TextBlock::new(t)),
            Part::ToolCall(ToolCall { id, name: "f".into(), arguments: args, signature: None }),
        ],
    });
    (
        proptest::option::of(text()),
        user,
        proptest::option::of(assistant),
        proptest::option::of(1u64..100_000),
        proptest::option::of((0u32..200).prop_map(|t| f64::from(t) / 100.0)),
        any::<bool>(),
    )
        .prop_map(|(system, user, assistant, max_tokens, temperature, stream)| {
            let mut messages = vec![user];
            if let Some(a) = assistant {
                let call_id = a
                    .content
                    .iter()
                    .find_map(|p| if let Part::ToolCall(c) = p { Some(c.id.clone()) } else { None })
                    .unwrap_or_default();
                messages.push(a);
                messages.push(Message {
                    role: Role::User,
                    content: vec![Part::ToolResult(ToolResult {
                        call_id,
                        name: None,
                        content: vec![Part::Text(TextBlock::new("ok"))],
                        is_error: false,
                    })],
                });
            }
            Request {
                model: "m".into(),
                system: system.map(|s| vec![TextBlock::new(s)]).unwrap_or_default(),
                messages,
                max_tokens,
                temperature,
                stream,
                // The wire always asks for a stream's usage (to meter it).
                stream_usage: stream,
                ..Request::default()
            }
        })
}

// A single user text goes out as a plain string and several as a parts array;
// both parse back to the same canonical message.
proptest! {
    #[test]
    fn request_round_trips(req in request()) {
        let wire = encode_request(&req).unwrap();
        let back = parse_request(wire.to_string().as_bytes()).unwrap();
        prop_assert_eq!(back, req);
    }

    #[test]
    fn the_written_body_is_the_encoded_one_with_the_model(req in request(), reasoning in any::<bool>()) {
        // A reasoning model takes no sampling parameters: both paths leave them out.
        let upstream = if reasoning { "o3" } else { "gpt-4o" };
        let traits = crate::ModelTraits::infer(crate::Wire::OpenAiChat, upstream);
        let mut written = Vec::new();
        crate::Wire::OpenAiChat.write_request_for(&req, traits, Some(upstream), &mut written).unwrap();
        let mut encoded = crate::Wire::OpenAiChat.encode_request_for(&req, traits).unwrap();
        encoded["model"] = serde_json::json!(upstream);
        let written: serde_json::Value = serde_json::from_slice(&written).unwrap();
        prop_assert_eq!(&written, &encoded);
        prop_assert_eq!(written.get("temperature").is_some(), req.temperature.is_some() && !reasoning);
    }

    #[test]
    fn response_round_trips(resp in response()) {
        let wire = serde_json::to_vec(&encode_response(&resp)).unwrap();
        let back = parse_response(&wire).unwrap();
        prop_assert_eq!(back, resp);
    }

    #[test]
    fn usage_only_parse_agrees_with_the_whole_parse(resp in response()) {
        let body = serde_json::to_string(&encode_response(&resp)).unwrap();
        let whole = parse_response(body.as_bytes()).unwrap();
        prop_assert_eq!(parse_usage(body.as_bytes()).unwrap().unwrap_or_default(), whole.usage);
    }

    #[test]
    fn stream_matches_non_stream_under_any_split(resp in response(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..6)) {
        let mut enc = Encoder::new(true);
        let mut bytes = Vec::new();
        for e in response_to_events(&resp) {
            enc.push(&e, &mut bytes);
        }
        enc.finish(&mut bytes);
        let mut offsets: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        offsets.sort_unstable();
        let mut chunks = Vec::new();
        let mut prev = 0;
        for o in offsets { chunks.push(&bytes[prev..o]); prev = o; }
        chunks.push(&bytes[prev..]);
        let streamed = decode_stream(&chunks).unwrap();
        prop_assert_eq!(streamed, resp);
    }
}

/// A usage member's value: plain counts mostly, then every form serde reads
/// differently (floats, signs, leading zeros, overflow, strings, nesting).
fn usage_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..100_000).prop_map(|n| n.to_string()),
        1 => Just("null".to_owned()),
        1 => prop_oneof![
            Just("1.5".to_owned()),
            Just("-3".to_owned()),
            Just("012".to_owned()),
            Just("2e3".to_owned()),
            Just("18446744073709551616".to_owned()),
            Just("\"7\"".to_owned()),
            Just("true".to_owned()),
            Just("[1]".to_owned()),
            Just("12abc".to_owned()),
            Just("nul".to_owned()),
            Just("-0.5e-3".to_owned()),
            Just("1.".to_owned()),
            Just("-".to_owned()),
            Just("1e".to_owned()),
            Just("00".to_owned()),
        ],
        1 => proptest::collection::vec(
            (prop_oneof![Just("cached_tokens"), Just("reasoning_tokens"), Just("audio_tokens")],
             prop_oneof![(0u64..50).prop_map(|n| n.to_string()), Just("null".to_owned()), Just("1.0".to_owned())]),
            0..3,
        )
        .prop_map(|members| {
            let inner: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
            format!("{{{}}}", inner.join(","))
        }),
    ]
}

fn usage_object() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("prompt_tokens"),
        Just("completion_tokens"),
        Just("total_tokens"),
        Just("prompt_tokens_details"),
        Just("completion_tokens_details"),
        Just("prompt_cache_hit_tokens"),
        Just("cost"),
    ];
    (proptest::collection::vec((key, usage_value()), 0..7), " {0,2}").prop_map(|(members, ws)| {
        let inner: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{ws}{v}")).collect();
        format!("{{{ws}{}{ws}}}", inner.join(","))
    })
}

proptest! {
    #[test]
    fn usage_read_off_the_bytes_is_what_serde_reads(object in usage_object()) {
        let serde = serde_json::from_slice::<Option<super::wire::WireUsage>>(object.as_bytes())
            .map(|u| u.map(|u| u.canonical()));
        if let Some(read) = super::response::read_usage(object.as_bytes()) {
            prop_assert_eq!(Ok(read.map(|u| u.canonical())), serde.map_err(|e| e.to_string()), "{}", object);
        }
    }
}

#[test]
fn plain_usage_is_read_off_the_bytes() {
    for object in [
        r#"{"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29,
            "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 2, "accepted_prediction_tokens": 0}}"#,
        r#"{"prompt_tokens":1,"completion_tokens":0,"prompt_cache_hit_tokens":1}"#,
        "{}",
        "null",
    ] {
        let read = super::response::read_usage(object.as_bytes()).map(|u| u.map(|u| u.canonical()));
        let serde = serde_json::from_slice::<Option<super::wire::WireUsage>>(object.as_bytes())
            .unwrap()
            .map(|u| u.canonical());
        assert_eq!(read, Some(serde), "{object}");
    }
    let first = super::response::read_usage(br#"{"prompt_tokens": 20, "completion_tokens": 9}"#);
    assert_eq!(
        first.flatten().map(|u| u.canonical()),
        Some(Usage { input_tokens: Some(20), output_tokens: Some(9), ..Usage::default() })
    );
    // Forms serde reads otherwise, or refuses, are left to serde.
    for object in [
        r#"{"prompt_tokens": 1.0}"#,
        r#"{"prompt_tokens": 1, "prompt_tokens": 2}"#,
        r#"{"total_tokens": 1x}"#,
    ] {
        assert!(super::response::read_usage(object.as_bytes()).is_none(), "{object}");
    }
}
