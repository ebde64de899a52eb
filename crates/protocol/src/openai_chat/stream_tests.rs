//! The stream decoder and encoder.

use serde_json::{Value, json};

use crate::openai_chat::test_support::decode_stream;
use crate::{
    Part, ProtocolError, Response, SseDecoder, StopReason, StreamEncoder, TextBlock, Usage,
    model::response_to_events,
};

use super::{Encoder, is_usage_only_chunk, parse_request};

#[test]
fn decodes_a_recorded_stream_with_parallel_tool_calls_and_usage() {
    let transcript = concat!(
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Let me\"}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"ci\"}}]}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ty\\\":\\\"Paris\\\"}\"}}]}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"time\",\"arguments\":\"{}\"}}]}}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"model\":\"gpt-5\",\"choices\":[],\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,\"prompt_tokens_details\":{\"cached_tokens\":4},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n",
        "data: [DONE]\n\n",
    );
    let resp = decode_stream(&[transcript.as_bytes()]).unwrap();
    assert_eq!(resp.id, "chatcmpl-1");
    assert_eq!(resp.content.len(), 3);
    assert!(
        matches!(&resp.content[1], Part::ToolCall(c) if c.id == "call_a" && c.arguments == r#"{"city":"Paris"}"#)
    );
    assert!(matches!(&resp.content[2], Part::ToolCall(c) if c.name == "time"));
    assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(resp.usage.input_tokens, Some(20));
    assert_eq!(resp.usage.cache_read_tokens, Some(4));
    assert_eq!(resp.usage.reasoning_tokens, Some(0), "reported zeros stay zeros");
}

#[test]
fn truncated_stream_is_an_error_and_error_chunks_surface() {
    let cut = "data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n";
    assert!(matches!(decode_stream(&[cut.as_bytes()]), Err(ProtocolError::MalformedUpstream(_))));
    let err = "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n";
    assert!(matches!(
        decode_stream(&[err.as_bytes()]),
        Err(ProtocolError::UpstreamError { ref message, .. }) if message == "overloaded"
    ));
    assert!(decode_stream(&[b"data: {not json\n\n"]).is_err());
}

#[test]
fn encoder_sends_usage_in_a_final_chunk_with_empty_choices() {
    let resp = Response {
        id: "r".into(),
        model: "m".into(),
        content: vec![Part::Text(TextBlock::new("hi"))],
        stop_reason: Some(StopReason::EndTurn),
        stop_sequence: None,
        usage: Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() },
    };
    let mut enc = Encoder::new(true);
    let mut out = Vec::new();
    for e in response_to_events(&resp) {
        enc.push(&e, &mut out);
    }
    enc.finish(&mut out);
    let mut events = Vec::new();
    let mut sse = SseDecoder::new();
    sse.push(&out, &mut events).unwrap();
    let n = events.len();
    assert_eq!(events[n - 1].data, "[DONE]");
    let usage: Value = serde_json::from_str(&events[n - 2].data).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
}

#[test]
fn usage_chunk_only_when_the_client_asked_for_it() {
    let resp = Response {
        id: "r".into(),
        model: "m".into(),
        content: vec![Part::Text(TextBlock::new("hi"))],
        stop_reason: Some(StopReason::EndTurn),
        stop_sequence: None,
        usage: Usage { input_tokens: Some(3), output_tokens: Some(1), ..Usage::default() },
    };
    let mut enc = Encoder::new(false);
    let mut out = Vec::new();
    for e in response_to_events(&resp) {
        enc.push(&e, &mut out);
    }
    enc.finish(&mut out);
    let mut events = Vec::new();
    SseDecoder::new().push(&out, &mut events).unwrap();
    assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    for e in &events[..events.len() - 1] {
        let chunk: Value = serde_json::from_str(&e.data).unwrap();
        assert!(chunk["choices"][0].is_object(), "a chunk without choices[0]: {chunk}");
    }
    let asked = |body: &[u8]| parse_request(body).unwrap().stream_usage;
    assert!(asked(
        br#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}"#
    ));
    assert!(!asked(br#"{"model":"m","messages":[],"stream":true}"#));
    assert!(!asked(
        br#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":false}}"#
    ));
    assert!(!asked(br#"{"model":"m","messages":[],"stream_options":{"include_usage":true}}"#));
}

#[test]
fn finds_the_usage_only_chunk_by_its_bytes() {
    assert!(is_usage_only_chunk(br#"{"id":"c","choices":[],"usage":{"prompt_tokens":1}}"#));
    assert!(is_usage_only_chunk(br#"{"choices": [ ], "usage" : {}}"#));
    assert!(!is_usage_only_chunk(
        br#"{"choices":[{"index":0,"delta":{}}],"usage":{"prompt_tokens":1}}"#
    ));
    assert!(!is_usage_only_chunk(br#"{"choices":[{"index":0,"delta":{}}],"usage":null}"#));
    // Azure's prompt-filter chunk has no choices and no usage: not ours to drop.
    assert!(!is_usage_only_chunk(br#"{"choices":[],"prompt_filter_results":[]}"#));
    assert!(!is_usage_only_chunk(br#"{"choices":[],"usage":null}"#));
    assert!(!is_usage_only_chunk(b"[DONE]"));
}

#[test]
fn a_chunk_with_nothing_of_the_answer_does_not_start_the_stream() {
    // Azure's first chunk: its prompt's filter results, no choices, no id.
    let transcript = concat!(
        "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n",
        "data: {\"id\":\"chatcmpl-9\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let resp = decode_stream(&[transcript.as_bytes()]).unwrap();
    assert_eq!(resp.id, "chatcmpl-9");
    assert_eq!(resp.model, "gpt-4o");
}
