//! Compaction items and answers: the trigger, sealed summaries coming back, the
//! compact endpoint, and a compacting stream.

use serde_json::{Value, json};

use crate::continuity::{TestSeal, seal_summary};
use crate::responses::test_support::{parse, payloads, text};
use crate::responses::{Encoder, encode_request, parse_request_sealed};
use crate::{
    BlockKind, Compaction, Message, Part, Request, Response, Role, StopReason, StreamEncoder,
    StreamEvent, Usage,
};

use super::*;

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

/// What Codex sends to compact: its usual turn (instructions, developer context,
/// history, tools), streamed, with the trigger last.
fn codex_trigger_body() -> Value {
    json!({
        "model": "gpt-5-codex",
        "instructions": "You are Codex.",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]},
            user("fix the failing test"),
            {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cargo\",\"test\"]}", "call_id": "call_1"},
            {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It fails in parse."}]},
            {"type": "compaction_trigger"}
        ],
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
        "tool_choice": "auto",
        "parallel_tool_calls": true,
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"]
    })
}

fn opened(body: &Value) -> Result<crate::Request, ProtocolError> {
    parse_request_sealed(body.to_string().as_bytes(), Some(&TestSeal))
}

#[test]
fn a_final_trigger_asks_for_compaction_and_is_no_turn_of_its_own() {
    let req = parse(codex_trigger_body()).unwrap();
    assert_eq!(req.compaction, Some(Compaction::Trigger));
    assert!(req.stream);
    assert_eq!(req.messages.len(), 4, "user, assistant call, tool result, assistant text");
    assert_eq!(req.messages.last().unwrap().content, vec![text("It fails in parse.")]);
    assert_eq!(parse(json!({"model": "m", "input": [user("hi")]})).unwrap().compaction, None);

    // As OpenAI requires: nothing may follow it.
    let mut body = codex_trigger_body();
    body["input"].as_array_mut().unwrap().push(user("and then?"));
    let err = parse(body).unwrap_err().to_string();
    assert!(err.contains("input[5]: `compaction_trigger` must be the final input item"), "{err}");

    // Written back for an upstream that speaks Responses, last as it came.
    let back = encode_request(&parse(codex_trigger_body()).unwrap()).unwrap();
    assert_eq!(
        back["input"].as_array().unwrap().last(),
        Some(&json!({"type": "compaction_trigger"}))
    );
    assert_eq!(parse(back).unwrap().compaction, Some(Compaction::Trigger));
}

#[test]
fn a_sealed_summary_comes_back_as_user_text_in_place_of_the_item() {
    let token = seal_summary(&TestSeal, "## Task\nfix parse").unwrap();
    let response = Response {
        id: "resp_1".into(),
        model: "gpt-5-codex".into(),
        content: vec![Part::Compaction { sealed: token.clone() }],
        stop_reason: Some(StopReason::EndTurn),
        stop_sequence: None,
        usage: Usage::default(),
    };
    let answer = crate::responses::encode_response(&response);
    assert_eq!(answer["status"], "completed");
    let output = answer["output"].as_array().unwrap();
    assert_eq!(output.len(), 1, "exactly one item");
    let item = &output[0];
    assert_eq!(item["type"], "compaction");
    assert_eq!(item["encrypted_content"], token.as_str());
    assert!(item["id"].as_str().unwrap().starts_with("cmp_"));

    // Codex's next turn: the retained user message, the item, its context, the new ask.
    let body = json!({"model": "gpt-5-codex", "input": [
        user("fix the failing test"),
        item,
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]},
        user("go on"),
    ]});
    let req = opened(&body).unwrap();
    assert_eq!(req.compaction, None);
    assert_eq!(req.messages.len(), 3);
    assert_eq!(req.messages[0].role, Role::User);
    let summary = crate::compaction::summary_text("## Task\nfix parse");
    assert_eq!(req.messages[0].content, vec![text("fix the failing test"), text(&summary)]);
    assert_eq!(req.messages[1].role, Role::System);
    assert_eq!(req.messages[2].content, vec![text("go on")]);

    // Codex also reads the item under its older name.
    let mut old = body.clone();
    old["input"][1]["type"] = json!("compaction_summary");
    assert_eq!(opened(&old).unwrap().messages, req.messages);
}

#[test]
fn an_item_this_gateway_cannot_open_is_kept_by_name_and_refused_by_any_translation() {
    let theirs =
        json!({"type": "compaction", "id": "cmp_openai", "encrypted_content": "gAAAAB-openai-own"});
    let body = |item: Value| json!({"model": "m", "input": [user("a"), user("b"), user("c"), item, user("d")]});
    // Kept by name: the client's own body takes it back to the Responses API
    // that issued it; a translation refuses it, naming it.
    let refused = |req: crate::Request| {
        let kept = req.messages.iter().flat_map(|m| &m.content).any(|p| {
            matches!(p, crate::Part::Untranslatable { what } if what.starts_with("input[3]: compaction item"))
        });
        assert!(kept, "{req:?}");
        let err = crate::Wire::Anthropic.encode_request(&req).unwrap_err();
        assert!(matches!(err, ProtocolError::Unsupported(_)), "{err:?}");
        err.to_string()
    };
    let want = "input[3]: compaction item cmp_openai (this gateway cannot open it";
    for err in [
        refused(opened(&body(theirs.clone())).unwrap()),
        // No seal at all: nothing opens.
        refused(parse(body(theirs.clone())).unwrap()),
    ] {
        assert!(err.contains(want), "{err}");
    }
    // Altered: sealed here, one character changed.
    let token = seal_summary(&TestSeal, "summary").unwrap().replace("summary", "summarx");
    let tampered = json!({"type": "compaction", "id": "cmp_openai", "encrypted_content": token});
    assert!(refused(opened(&body(tampered)).unwrap()).contains(want));
    // Sealed reasoning is not a summary.
    let thinking = crate::Part::Thinking { text: "t".into(), signature: Some("s".into()) };
    let reasoning = crate::continuity::seal_part(&TestSeal, &thinking).unwrap();
    let wrong_kind = json!({"type": "compaction", "encrypted_content": reasoning});
    let err = refused(opened(&body(wrong_kind)).unwrap());
    assert!(err.contains("input[3]: compaction item (this gateway cannot open it"), "{err}");
    let bare = json!({"type": "compaction", "id": "cmp_1"});
    let err = opened(&body(bare)).unwrap_err().to_string();
    assert!(err.contains("input[3].encrypted_content"), "{err}");
}

#[test]
fn the_compact_endpoint_keeps_what_the_user_said_and_adds_the_item() {
    let body = json!({
        "model": "gpt-5-codex",
        "instructions": "You are Codex.",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions/>"}]},
            user("fix the failing test"),
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_1"},
            {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"},
            {"role": "assistant", "content": "It fails in parse."},
            {"role": "user", "content": "thanks"}
        ],
        "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
        "parallel_tool_calls": true
    });
    let req = parse_compact_request(body.to_string().as_bytes(), Some(&TestSeal)).unwrap();
    assert!(!req.stream);
    let inputs = body["input"].as_array().unwrap();
    let retained = vec![inputs[0].clone(), inputs[1].clone(), inputs[5].clone()];
    assert_eq!(req.compaction, Some(Compaction::Endpoint { retained: retained.clone() }));
    assert_eq!(req.messages.len(), 5, "the whole conversation is there to summarise");

    let usage = Usage { input_tokens: Some(900), output_tokens: Some(120), ..Usage::default() };
    let answer = encode_compacted("resp_2", "sealed", &retained, &usage);
    assert_eq!(answer["object"], "response.compaction");
    assert!(answer["created_at"].is_u64());
    let output = answer["output"].as_array().unwrap();
    assert_eq!(&output[..3], &retained[..]);
    assert_eq!(output[3]["type"], "compaction");
    assert_eq!(output[3]["encrypted_content"], "sealed");
    assert_eq!(answer["usage"]["input_tokens"], 900);
    assert_eq!(answer["usage"]["total_tokens"], 1020);
    let unknown = encode_compacted("resp_3", "sealed", &[], &Usage::default());
    assert_eq!(unknown["usage"]["input_tokens"], 0, "usage is always there");
}

#[test]
fn a_compacting_stream_shows_the_item_whole_then_completes() {
    let mut enc = Encoder::new();
    let mut out = Vec::new();
    enc.push(&StreamEvent::Start { id: "abc".into(), model: "gpt-5-codex".into() }, &mut out);
    let usage = Usage { input_tokens: Some(40), output_tokens: Some(7), ..Usage::default() };
    enc.push(&StreamEvent::Usage { usage }, &mut out);
    let kind = BlockKind::Compaction { sealed: "sy1.sealed".into() };
    enc.push(&StreamEvent::BlockStart { index: 0, kind }, &mut out);
    enc.push(&StreamEvent::BlockStop { index: 0 }, &mut out);
    enc.push(&StreamEvent::Stop { reason: StopReason::EndTurn, stop_sequence: None }, &mut out);
    enc.finish(&mut out);
    let events = payloads(&out);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let item = json!({"type": "compaction", "id": "cmp_abc_0", "encrypted_content": "sy1.sealed"});
    assert_eq!(events[3]["item"], item);
    assert_eq!(events[3]["output_index"], 0);
    let done = &events[4]["response"];
    assert_eq!(done["id"], "resp_abc");
    assert_eq!(done["output"], json!([item]));
    assert_eq!(done["usage"]["input_tokens"], 40);
    let seqs: Vec<u64> = events.iter().map(|e| e["sequence_number"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
}

#[test]
fn no_wire_is_sent_a_compaction_part() {
    // Items a client sends back are opened as they are parsed; a library caller
    // that builds the part itself is refused by every translator, naming it.
    let compacted = Message {
        role: Role::Assistant,
        content: vec![Part::Compaction { sealed: "sy1.sealed".into() }],
    };
    let req = Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "a"), compacted, Message::text(Role::User, "b")],
        ..Request::default()
    };
    for wire in [crate::Wire::OpenAiChat, crate::Wire::Anthropic, crate::Wire::Gemini] {
        let err = wire.encode_request(&req).unwrap_err().to_string();
        assert!(err.contains("a compaction item cannot be sent to"), "{wire:?}: {err}");
    }
    let err = encode_request(&req).unwrap_err().to_string();
    assert!(err.contains("a compaction item cannot be sent to the Responses API"), "{err}");
}
