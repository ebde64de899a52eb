use serde_json::json;

use crate::{ClientFormat, ModelTraits, ReasoningControl, Wire};

#[test]
fn claude_on_vertex_names_its_version_in_the_body_and_its_model_in_the_url() {
    let chat =
        br#"{"model": "c", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::OpenAiChat.parse_request(chat, None).unwrap();
    let model = "claude-opus-4-6@20260201";
    let traits = ModelTraits::infer(Wire::VertexAnthropic, model);
    assert_eq!(traits.reasoning, ReasoningControl::Effort, "Claude's rules, from Vertex's id");
    let body = Wire::VertexAnthropic.encode_request_for(&req, traits).unwrap();
    assert_eq!(body["anthropic_version"], "vertex-2023-10-16");
    assert!(body.get("model").is_none(), "{body}");
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["max_tokens"], json!(100));
    let spec = Wire::VertexAnthropic.spec();
    let endpoint = "https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5";
    assert_eq!(
        spec.url(endpoint, model, true),
        format!("{endpoint}/publishers/anthropic/models/claude-opus-4-6@20260201:streamRawPredict")
    );
}

#[test]
fn gemini_and_open_models_on_vertex_keep_their_publishers_bodies() {
    let chat = br#"{"model": "g", "messages": [{"role": "user", "content": "hi"}]}"#;
    let req = ClientFormat::OpenAiChat.parse_request(chat, None).unwrap();
    for (vertex, publisher) in
        [(Wire::VertexGemini, Wire::Gemini), (Wire::VertexOpenAi, Wire::OpenAiChat)]
    {
        let traits = ModelTraits::infer(vertex, "gemini-3-pro-preview");
        assert_eq!(traits, ModelTraits::infer(publisher, "gemini-3-pro-preview"));
        assert_eq!(
            vertex.encode_request_for(&req, traits).unwrap(),
            publisher.encode_request_for(&req, traits).unwrap()
        );
    }
    let endpoint = "https://aiplatform.googleapis.com/v1/projects/p/locations/global";
    assert_eq!(
        Wire::VertexGemini.spec().url(endpoint, "gemini-2.5-pro", true),
        format!("{endpoint}/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    );
    assert_eq!(
        Wire::VertexOpenAi.spec().url(endpoint, "meta/llama-4", false),
        format!("{endpoint}/endpoints/openapi/chat/completions")
    );
}

#[test]
fn a_google_shaped_refusal_is_read_on_every_vertex_wire() {
    let body = br#"{"error": {"code": 403, "message": "Permission denied on resource project p.", "status": "PERMISSION_DENIED"}}"#;
    for wire in [Wire::VertexAnthropic, Wire::VertexGemini, Wire::VertexOpenAi] {
        let message = wire.parse_error(body).unwrap_or_default();
        assert!(message.contains("Permission denied"), "{wire:?}: {message}");
    }
}

#[test]
fn claudes_count_on_vertex_takes_anthropics_fields_less_the_gated_ones() {
    // Anthropic's list, the version field, and nothing a beta flag gates: the
    // count goes without flags (Vertex refuses every one there).
    let mut want: Vec<&str> = crate::anthropic::COUNTED_FIELDS
        .iter()
        .copied()
        .filter(|f| {
            !["context-management-2025-06-27", "mcp-client-2025-04-04"]
                .iter()
                .any(|flag| crate::anthropic::gated_fields(flag).contains(f))
        })
        .collect();
    want.insert(0, "anthropic_version");
    assert_eq!(super::COUNTED_FIELDS, want.as_slice());
    assert!(!super::ANTHROPIC_SPEC.count.unwrap().passthrough);
}

#[test]
fn only_claude_on_vertex_learns_what_it_refuses() {
    use crate::WireBehaviour;
    let m = "Unexpected value(s) `effort-2025-11-24` for the `anthropic-beta` header.";
    assert!(super::VERTEX_ANTHROPIC.refused(m).is_some());
    assert!(super::VERTEX_GEMINI.refused(m).is_none());
    assert!(crate::anthropic::AnthropicWire.refused(m).is_none());
}
