//! Azure's facts, and Azure-shaped answers (as Azure OpenAI writes them, filter
//! results and all) read by the Chat Completions behaviour the wires take.

use serde_json::json;

use crate::{
    ClientFormat, ModelTraits, Part, ProtocolError, Response, ResponseAccumulator, SseDecoder,
    StopReason, StreamEvent, Wire,
};

const RESOURCE: &str = "https://contoso.openai.azure.com";

/// A stream of `wire` decoded, its events and the answer they make.
fn decode(wire: Wire, transcript: &str) -> Result<(Vec<StreamEvent>, Response), ProtocolError> {
    let mut sse = SseDecoder::new();
    let mut frames = Vec::new();
    sse.push(transcript.as_bytes(), &mut frames).unwrap();
    sse.finish(&mut frames);
    let mut dec = wire.stream_decoder();
    let mut events = Vec::new();
    for f in &frames {
        dec.push(f, &mut events)?;
    }
    dec.finish(&mut events)?;
    let mut acc = ResponseAccumulator::default();
    for e in &events {
        acc.push(e);
    }
    Ok((events, acc.finish()))
}

const FILTERS: &str = r#"{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}"#;

/// A streamed answer as Azure writes it: the prompt's filter results first
/// (empty `choices`, `id` and `model`), the role chunk with filter results of
/// its own, text, the finish, a trailing chunk of the completion's filter
/// results (asynchronous filtering), the usage, `[DONE]`.
fn azure_stream(finish: &str) -> String {
    let chunk = |choices: serde_json::Value, usage: serde_json::Value| {
        json!({"choices": choices, "created": 1_735_689_600, "id": "chatcmpl-AZ1",
            "model": "gpt-4o-2024-11-20", "object": "chat.completion.chunk",
            "system_fingerprint": "fp_ee1d74bde0", "usage": usage})
    };
    let filters: serde_json::Value = serde_json::from_str(FILTERS).unwrap();
    let frames = [
        json!({"choices": [], "created": 0, "id": "", "model": "", "object": "",
            "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": filters}]}),
        chunk(
            json!([{"content_filter_results": {}, "delta": {"content": "", "refusal": null, "role": "assistant"},
                "finish_reason": null, "index": 0, "logprobs": null}]),
            json!(null),
        ),
        chunk(
            json!([{"content_filter_results": filters, "delta": {"content": "Hello from Azure"},
                "finish_reason": null, "index": 0, "logprobs": null}]),
            json!(null),
        ),
        chunk(
            json!([{"content_filter_results": {}, "delta": {}, "finish_reason": finish, "index": 0,
                "logprobs": null}]),
            json!(null),
        ),
        json!({"choices": [{"content_filter_offsets": {"check_offset": 0, "start_offset": 0, "end_offset": 16},
            "content_filter_results": filters, "finish_reason": null, "index": 0}],
            "created": 0, "id": "", "model": "", "object": ""}),
        chunk(
            json!([]),
            json!({"completion_tokens": 4, "prompt_tokens": 12, "total_tokens": 16,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0}}),
        ),
    ];
    let mut out: String = frames.iter().map(|f| format!("data: {f}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

#[test]
fn the_deployment_is_in_the_path_with_the_api_version_and_not_in_the_body() {
    let spec = Wire::AzureOpenAi.spec();
    assert_eq!(
        spec.url(RESOURCE, "gpt-4o-prod", true),
        format!(
            "{RESOURCE}/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
        )
    );
    assert!(spec.path.ends_with(&format!("?api-version={}", super::API_VERSION)));
    // A deployment name cannot leave its segment.
    assert_eq!(
        spec.url(RESOURCE, "x/../y?z", false),
        format!(
            "{RESOURCE}/openai/deployments/x%2F..%2Fy%3Fz/chat/completions?api-version=2024-10-21"
        )
    );
    let chat = br#"{"model": "alias", "max_tokens": 50, "stream": true,
        "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::OpenAiChat.parse_request(chat, None).unwrap();
    let traits = ModelTraits::infer(Wire::AzureOpenAi, "gpt-4o-prod");
    let body = Wire::AzureOpenAi.encode_request_for(&req, traits).unwrap();
    assert!(body.get("model").is_none(), "{body}");
    let mut openai = Wire::OpenAiChat.encode_request_for(&req, traits).unwrap();
    openai.as_object_mut().unwrap().remove("model");
    assert_eq!(body, openai, "OpenAI's body otherwise");
}

#[test]
fn the_v1_api_is_openais_path_and_body_with_azures_key_header() {
    let spec = Wire::AzureOpenAiV1.spec();
    assert_eq!(
        spec.url(RESOURCE, "ignored", false),
        format!("{RESOURCE}/openai/v1/chat/completions")
    );
    assert!(spec.fixed_url());
    let chat = br#"{"model": "alias", "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::OpenAiChat.parse_request(chat, None).unwrap();
    let traits = ModelTraits::infer(Wire::AzureOpenAiV1, "gpt-4.1");
    assert_eq!(
        Wire::AzureOpenAiV1.encode_request_for(&req, traits).unwrap(),
        Wire::OpenAiChat.encode_request_for(&req, traits).unwrap()
    );
    for wire in [Wire::AzureOpenAi, Wire::AzureOpenAiV1] {
        assert_eq!(wire.spec().auth, crate::Auth::Entra { key_header: "api-key" });
        assert_eq!(wire.spec().default_endpoint, "https://{resource}.openai.azure.com");
        assert_eq!(
            wire.behaviour().stream_usage_option(),
            Some(("stream_options", "include_usage"))
        );
        assert_eq!(wire.behaviour().service_tier("priority"), None);
        assert_eq!(wire.behaviour().runnable(), crate::ServerTools::NONE);
    }
    let names: Vec<&str> = [Wire::AzureOpenAi, Wire::AzureOpenAiV1].map(Wire::as_str).into();
    assert_eq!(names, ["azure-openai", "azure-openai-v1"]);
}

#[test]
fn a_stream_with_filter_results_and_an_empty_first_chunk_decodes_whole() {
    for wire in [Wire::AzureOpenAi, Wire::AzureOpenAiV1] {
        let (events, resp) = decode(wire, &azure_stream("stop")).unwrap();
        // Started by the first chunk with the answer's id, not the filter prelude.
        assert!(
            matches!(&events[0], StreamEvent::Start { id, model } if id == "chatcmpl-AZ1" && model == "gpt-4o-2024-11-20"),
            "{:?}",
            events[0]
        );
        let starts = events.iter().filter(|e| matches!(e, StreamEvent::Start { .. })).count();
        assert_eq!(starts, 1);
        assert_eq!(resp.id, "chatcmpl-AZ1");
        assert!(matches!(&resp.content[..], [Part::Text(t)] if t.text == "Hello from Azure"));
        assert_eq!(resp.stop_reason, Some(StopReason::EndTurn));
        assert_eq!(resp.usage.input_tokens, Some(12));
        assert_eq!(resp.usage.output_tokens, Some(4));
    }
}

#[test]
fn a_stream_stopped_by_the_content_filter_says_so() {
    let (_, resp) = decode(Wire::AzureOpenAi, &azure_stream("content_filter")).unwrap();
    assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
    // A client of each format is told in its own words.
    assert_eq!(StopReason::ContentFilter.to_anthropic(), "refusal");
}

#[test]
fn a_stream_of_only_the_filter_prelude_is_cut_short() {
    let prelude = azure_stream("stop").split("\n\n").next().unwrap().to_owned() + "\n\n";
    assert!(matches!(
        decode(Wire::AzureOpenAi, &prelude),
        Err(ProtocolError::MalformedUpstream(_))
    ));
}

#[test]
fn a_whole_answer_with_filter_results_parses() {
    let body = json!({
        "choices": [{
            "content_filter_results": serde_json::from_str::<serde_json::Value>(FILTERS).unwrap(),
            "finish_reason": "content_filter",
            "index": 0,
            "logprobs": null,
            "message": {"content": "Partial", "refusal": null, "role": "assistant"}
        }],
        "created": 1_735_689_600,
        "id": "chatcmpl-AZ2",
        "model": "gpt-4o-2024-11-20",
        "object": "chat.completion",
        "prompt_filter_results": [{"prompt_index": 0,
            "content_filter_results": serde_json::from_str::<serde_json::Value>(FILTERS).unwrap()}],
        "system_fingerprint": "fp_ee1d74bde0",
        "usage": {"completion_tokens": 1, "prompt_tokens": 9, "total_tokens": 10,
            "completion_tokens_details": {"reasoning_tokens": 0}, "prompt_tokens_details": {"cached_tokens": 0}}
    })
    .to_string();
    for wire in [Wire::AzureOpenAi, Wire::AzureOpenAiV1] {
        let resp = wire.parse_response(body.as_bytes()).unwrap();
        assert_eq!(resp.id, "chatcmpl-AZ2");
        assert_eq!(resp.stop_reason, Some(StopReason::ContentFilter));
        assert!(matches!(&resp.content[..], [Part::Text(t)] if t.text == "Partial"));
        let usage = wire.parse_usage(body.as_bytes()).unwrap().unwrap();
        assert_eq!((usage.input_tokens, usage.output_tokens), (Some(9), Some(1)));
    }
}

#[test]
fn azures_refusals_are_read() {
    // The content filter refusing the prompt.
    let filtered = br#"{"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", "type": null, "param": "prompt", "code": "content_filter", "status": 400, "innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": {"hate": {"filtered": true, "severity": "high"}}}}}"#;
    // A wrong key, and a missing or expired token, as the resource answers them.
    let key = br#"{"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}}"#;
    let token = br#"{"statusCode": 401, "message": "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired."}"#;
    let version = br#"{"error": {"code": "404", "message": "Resource not found"}}"#;
    for wire in [Wire::AzureOpenAi, Wire::AzureOpenAiV1] {
        assert!(wire.parse_error(filtered).unwrap().contains("content management policy"));
        assert!(wire.parse_error(key).unwrap().contains("invalid subscription key"));
        assert!(wire.parse_error(token).unwrap().starts_with("Unauthorized. Access token"));
        assert_eq!(wire.parse_error(version).unwrap(), "Resource not found");
    }
}

#[test]
fn azures_responses_api_keeps_its_reasoning_to_itself() {
    // Reasoning Azure encrypted goes back to an Azure resource's Responses API
    // only: OpenAI's keys cannot read it.
    let answer = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "gpt-5", "output": [
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAB-azure-own",
             "summary": [{"type": "summary_text", "text": "plan"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
             "arguments": "{}"}],
        "usage": {"input_tokens": 3, "output_tokens": 2}});
    let wire = Wire::AzureOpenAiResponses;
    assert_eq!(wire.as_str(), "azure-openai-responses");
    assert_eq!(wire.dialect(), Wire::Responses, "Codex's own body goes as it came");
    let resp = wire.parse_response(answer.to_string().as_bytes()).unwrap();
    // A Chat client's tool loop continued: the assistant turn is the answer.
    let chat = json!({"model": "m", "messages": [
        {"role": "user", "content": "ls"},
        {"role": "assistant", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}]});
    let mut req =
        ClientFormat::OpenAiChat.parse_request(chat.to_string().as_bytes(), None).unwrap();
    req.messages[1].content = resp.content;
    let traits = ModelTraits::infer(wire, "gpt-5");
    let to_azure = wire.encode_request_for(&req, traits).unwrap().to_string();
    let to_openai = Wire::Responses.encode_request_for(&req, traits).unwrap().to_string();
    assert!(to_azure.contains("gAAAAB-azure-own"), "{to_azure}");
    assert!(!to_openai.contains("gAAAAB-azure-own"), "{to_openai}");
    assert_eq!(
        wire.spec().url(RESOURCE, "gpt-5-prod", true),
        format!("{RESOURCE}/openai/v1/responses")
    );
}
