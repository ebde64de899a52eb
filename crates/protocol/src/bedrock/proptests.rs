//! Property tests: any valid request encodes, into turns that alternate and tool
//! calls that pair with their results; answers, whole or streamed and however the
//! bytes are cut, come back as they went.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::bedrock::test_support::{
    CLAUDE, CLAUDE_ADAPTIVE, LLAMA, NOVA, accumulate, assert_invariants, converse_events,
    converse_response, decode_at, encode, framed,
};
use crate::{
    Document, DocumentSource, Effort, Image, ImageSource, Message, Part, Reasoning, Request,
    Response, Role, StopReason, TextBlock, Tool, ToolCall, ToolChoice, ToolResult, Usage,
};

use super::{parse_response, parse_usage};

fn marker() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![3 => Just(None), 1 => Just(Some(json!({"type": "ephemeral"})))]
}

/// Text, blank now and then (which the encoder drops).
fn text_part() -> impl Strategy<Value = Part> {
    (prop_oneof![4 => "\\PC{1,12}", 1 => "[ \n]{0,2}"], marker())
        .prop_map(|(text, cache_control)| Part::Text(TextBlock { text, cache_control }))
}

fn image_part() -> impl Strategy<Value = Part> {
    (
        prop::sample::select(vec!["image/png", "image/jpeg", "image/gif", "image/webp"]),
        "[A-Za-z0-9+/]{4,16}",
    )
        .prop_map(|(media_type, data)| {
            Part::Image(Image {
                source: ImageSource::Base64 { media_type: media_type.into(), data },
                detail: None,
                cache_control: None,
            })
        })
}

fn document_part() -> impl Strategy<Value = Part> {
    (
        prop::sample::select(vec!["application/pdf", "text/plain", "text/csv", "text/markdown"]),
        prop::option::of("\\PC{0,30}"),
        marker(),
    )
        .prop_map(|(media_type, filename, cache_control)| {
            Part::Document(Document {
                filename,
                cache_control,
                ..Document::new(DocumentSource::Base64 {
                    media_type: media_type.into(),
                    data: "JVBERi0=".into(),
                })
            })
        })
}

fn user_parts() -> impl Strategy<Value = Vec<Part>> {
    prop::collection::vec(
        prop_oneof![4 => text_part(), 1 => image_part(), 1 => document_part()],
        0..3,
    )
}

/// A call id: one Converse takes as it is, another agent's, or one too long.
fn call_id() -> impl Strategy<Value = String> {
    prop_oneof!["toolu_[A-Za-z0-9]{1,10}", "functions\\.[a-z]{1,6}:[0-9]", "call [a-z]{70}"]
}

fn arguments() -> impl Strategy<Value = String> {
    prop::collection::btree_map(
        "[a-z_]{1,6}",
        prop_oneof![any::<i64>().prop_map(Value::from), "\\PC{0,8}".prop_map(Value::from)],
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()).to_string())
}

#[derive(Debug, Clone)]
struct Round {
    user: Vec<Part>,
    split_user: bool,
    system: Option<String>,
    thinking: Option<Part>,
    text: Option<String>,
    calls: Vec<(String, String)>,
    split_assistant: bool,
    reverse_results: bool,
    error_results: bool,
    /// The results after the user's own parts (the encoder puts them first).
    results_last: bool,
}

fn round() -> impl Strategy<Value = Round> {
    (
        user_parts(),
        any::<bool>(),
        prop::option::of("\\PC{1,10}"),
        prop::option::of(prop_oneof![
            ("\\PC{0,10}", prop::option::of("[A-Za-z0-9+/]{8,20}"))
                .prop_map(|(text, signature)| Part::Thinking { text, signature }),
            "[A-Za-z0-9+/]{4,12}".prop_map(|data| Part::RedactedThinking { data }),
        ]),
        prop::option::of("\\PC{0,12}"),
        prop::collection::vec((call_id(), arguments()), 0..3),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(
                user,
                split_user,
                system,
                thinking,
                text,
                calls,
                (split_assistant, reverse_results, error_results, results_last),
            )| {
                Round {
                    user,
                    split_user,
                    system,
                    thinking,
                    text,
                    calls,
                    split_assistant,
                    reverse_results,
                    error_results,
                    results_last,
                }
            },
        )
}

/// A conversation from rounds: each round's calls are answered (in order or
/// not, before or after the user's own parts) in the next user message, the
/// last ones by a message of their own; it may open with the assistant.
fn conversation(rounds: Vec<Round>, opens_with_assistant: bool) -> Vec<Message> {
    let mut messages = Vec::new();
    if opens_with_assistant {
        messages.push(Message::assistant("Hello! How can I help?"));
    }
    let mut pending: Vec<Part> = Vec::new();
    for (r, round) in rounds.into_iter().enumerate() {
        let mut user = std::mem::take(&mut pending);
        if round.results_last {
            user.splice(0..0, round.user);
        } else {
            user.extend(round.user);
        }
        if round.split_user && user.len() > 1 {
            let rest = user.split_off(1);
            messages.push(Message { role: Role::User, content: user });
            messages.push(Message { role: Role::User, content: rest });
        } else if !user.is_empty() {
            messages.push(Message { role: Role::User, content: user });
        }
        if let Some(system) = round.system {
            messages.push(Message::text(Role::System, system));
        }
        let mut assistant: Vec<Part> = round.thinking.into_iter().collect();
        assistant.extend(round.text.map(|t| Part::Text(TextBlock::new(t))));
        for (i, (id, arguments)) in round.calls.iter().enumerate() {
            // Unique within the conversation, of the same kind as generated.
            let id = format!("{id}{r}x{i}");
            assistant.push(Part::ToolCall(ToolCall {
                id: id.clone(),
                name: "get_weather".into(),
                arguments: arguments.clone(),
                signature: None,
            }));
            pending.push(Part::ToolResult(ToolResult {
                call_id: id,
                name: None,
                content: vec![Part::Text(TextBlock::new(format!("result {i}")))],
                is_error: round.error_results,
            }));
        }
        if round.reverse_results {
            pending.reverse();
        }
        if round.split_assistant && assistant.len() > 1 {
            let rest = assistant.split_off(1);
            messages.push(Message { role: Role::Assistant, content: assistant });
            messages.push(Message { role: Role::Assistant, content: rest });
        } else if !assistant.is_empty() {
            messages.push(Message { role: Role::Assistant, content: assistant });
        }
    }
    if !pending.is_empty() {
        messages.push(Message { role: Role::User, content: pending });
    }
    messages
}

prop_compose! {
    fn request()(
        model in prop::sample::select(vec![CLAUDE, CLAUDE_ADAPTIVE, NOVA, LLAMA]),
        rounds in prop::collection::vec(round(), 1..5),
        opens_with_assistant in any::<bool>(),
        system in prop::collection::vec(("\\PC{0,10}", marker()).prop_map(|(text, cache_control)| TextBlock { text, cache_control }), 0..2),
        with_tools in any::<bool>(),
        choice in 0usize..5,
        reasoning in prop::option::of((any::<bool>(), prop::option::of(1024u64..30000))),
        max_tokens in prop::option::of(1u64..64000),
        temperature in prop::option::of(0.0f64..1.0),
        top_p in prop::option::of(0.0f64..1.0),
        top_k in prop::option::of(1u64..100),
    ) -> Request {
        let tools = if with_tools {
            vec![Tool::function("get_weather", json!({"type": "object", "properties": {"city": {"type": "string"}}}))]
        } else {
            Vec::new()
        };
        let tool_choice = match choice {
            0 => None,
            1 => Some(ToolChoice::Auto),
            2 => Some(ToolChoice::Required),
            3 => Some(ToolChoice::None),
            _ => Some(ToolChoice::Tool { name: "get_weather".into() }),
        };
        Request {
            model: model.into(),
            system,
            messages: conversation(rounds, opens_with_assistant),
            tools,
            tool_choice,
            max_tokens,
            temperature,
            top_p,
            top_k,
            reasoning: reasoning.map(|(enabled, budget_tokens)| Reasoning { enabled, effort: budget_tokens.is_none().then_some(Effort::Medium), budget_tokens }),
            ..Request::default()
        }
    }
}

fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn valid_name(name: &str) -> bool {
    (1..=200).contains(&name.len())
        && !name.contains("  ")
        && name.chars().all(|c| c.is_ascii_alphanumeric() || " -()[]".contains(c))
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    // The reasons Converse can say.
    prop::sample::select(vec![
        StopReason::EndTurn,
        StopReason::MaxTokens,
        StopReason::StopSequence,
        StopReason::ToolUse,
        StopReason::ContentFilter,
        StopReason::Error,
    ])
}

prop_compose! {
    fn response()(
        content in prop::collection::vec(prop_oneof![
            "\\PC{1,24}".prop_map(|t| Part::Text(TextBlock::new(t))),
            ("\\PC{1,24}", prop::option::of("[A-Za-z0-9+/]{8,40}={0,2}"))
                .prop_map(|(text, signature)| Part::Thinking { text, signature }),
            "[A-Za-z0-9+/]{4,20}".prop_map(|data| Part::RedactedThinking { data }),
            ("tooluse_[A-Za-z0-9]{1,22}", "[a-z_]{1,10}", arguments())
                .prop_map(|(id, name, arguments)| Part::ToolCall(ToolCall { id, name, arguments, signature: None })),
        ], 0..5),
        stop_reason in stop_reason(),
        sequence in "\\PC{1,6}",
        uncached in 0u64..100_000,
        output in 0u64..100_000,
        read in prop::option::of(0u64..100_000),
        write in prop::option::of(0u64..100_000),
    ) -> Response {
        Response {
            id: "bedrock-response".into(),
            model: String::new(),
            content,
            stop_reason: Some(stop_reason),
            stop_sequence: (stop_reason == StopReason::StopSequence).then_some(sequence),
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
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn valid_requests_encode_into_alternating_turns_with_paired_tools(req in request()) {
        let body = encode(&req).unwrap();
        let tools_sent = !req.tools.is_empty() && req.tool_choice != Some(ToolChoice::None);
        prop_assert_eq!(body.get("toolConfig").is_some(), tools_sent);
        let messages = body["messages"].as_array().unwrap();
        let mut expected_role = "user";
        let mut calls: Vec<String> = Vec::new();
        for message in messages {
            let role = message["role"].as_str().unwrap();
            prop_assert_eq!(role, expected_role, "{}", body);
            expected_role = if role == "user" { "assistant" } else { "user" };
            let content = message["content"].as_array().unwrap();
            prop_assert!(!content.is_empty(), "{}", body);
            let ids = |key: &str, field: &str| -> Vec<String> {
                content.iter().filter_map(|b| b.get(key)).map(|b| b[field].as_str().unwrap().to_owned()).collect()
            };
            let uses = ids("toolUse", "toolUseId");
            let results = ids("toolResult", "toolUseId");
            for id in uses.iter().chain(&results) {
                prop_assert!(valid_id(id), "{}", id);
            }
            if role == "assistant" {
                prop_assert!(results.is_empty());
                calls = uses;
            } else {
                prop_assert!(uses.is_empty());
                // Every call of the turn before is answered here, and nothing else.
                let (mut want, mut got) = (std::mem::take(&mut calls), results.clone());
                want.sort();
                got.sort();
                prop_assert_eq!(got, want, "{}", body);
                // Results first (each maybe followed by its cache point).
                let blocks: Vec<&Value> = content.iter().filter(|b| b.get("cachePoint").is_none()).collect();
                let first_other = blocks.iter().position(|b| b.get("toolResult").is_none()).unwrap_or(blocks.len());
                prop_assert!(blocks[first_other..].iter().all(|b| b.get("toolResult").is_none()), "{}", body);
            }
            for block in content {
                if let Some(name) = block.pointer("/document/name").and_then(Value::as_str) {
                    prop_assert!(valid_name(name), "{}", name);
                }
            }
        }
        prop_assert!(calls.is_empty(), "unanswered calls in {}", body);
        if !tools_sent {
            let text = body.to_string();
            prop_assert!(!text.contains("\"toolUse\"") && !text.contains("\"toolResult\""));
        }
        let text = body.to_string();
        let claude = req.model.contains("claude");
        if !claude {
            prop_assert!(!text.contains("reasoningContent") && body.get("additionalModelRequestFields").is_none());
        }
        if req.model == LLAMA {
            prop_assert!(!text.contains("cachePoint"));
        }
        if let Some(max) = body.pointer("/inferenceConfig/maxTokens").and_then(Value::as_u64)
            && let Some(budget) = body.pointer("/additionalModelRequestFields/thinking/budget_tokens").and_then(Value::as_u64)
        {
            prop_assert!(budget < max);
        }
    }

    #[test]
    fn whole_answers_round_trip(resp in response()) {
        let body = converse_response(&resp).to_string();
        prop_assert_eq!(parse_response(body.as_bytes()).unwrap(), resp.clone());
        prop_assert_eq!(parse_usage(body.as_bytes()).unwrap(), Some(resp.usage));
    }

    #[test]
    fn streamed_answers_round_trip_through_any_cuts(
        resp in response(),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let bytes = framed(&converse_events(&resp));
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let events = decode_at(&bytes, &cuts).unwrap();
        assert_invariants(&events);
        prop_assert_eq!(accumulate(&events), resp);
    }
}
