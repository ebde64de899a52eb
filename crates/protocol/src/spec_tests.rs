use std::borrow::Cow;

use super::path_segment;
use crate::Wire;

#[test]
fn urls_are_the_ones_the_gateway_has_always_called() {
    let openai = Wire::OpenAiChat.spec();
    let anthropic = Wire::Anthropic.spec();
    let gemini = Wire::Gemini.spec();
    for stream in [false, true] {
        assert_eq!(
            openai.url("https://api.openai.com/v1", "gpt-5", stream),
            "https://api.openai.com/v1/chat/completions"
        );
        assert_eq!(
            anthropic.url("https://api.anthropic.com", "claude-x", stream),
            "https://api.anthropic.com/v1/messages"
        );
    }
    let base = "https://generativelanguage.googleapis.com";
    assert_eq!(
        gemini.url(base, "gemini-2.5-pro", false),
        format!("{base}/v1beta/models/gemini-2.5-pro:generateContent")
    );
    assert_eq!(
        gemini.url(base, "gemini-2.5-pro", true),
        format!("{base}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    );
    assert!(openai.fixed_url() && anthropic.fixed_url() && !gemini.fixed_url());
}

#[test]
fn count_urls_and_bodies_are_each_wires_own() {
    let base = "https://generativelanguage.googleapis.com";
    assert_eq!(
        Wire::Gemini.spec().count_url(base, "gemini-2.5-pro").as_deref(),
        Some("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:countTokens")
    );
    assert_eq!(
        Wire::Anthropic.spec().count_url("https://api.anthropic.com", "claude-x").as_deref(),
        Some("https://api.anthropic.com/v1/messages/count_tokens")
    );
    assert_eq!(Wire::OpenAiChat.spec().count_url("https://api.openai.com/v1", "gpt-5"), None);

    // Anthropic: the generation body without what the counting endpoint refuses.
    let generation = br#"{"model":"claude-x","max_tokens":64,"stream":true,"temperature":0.2,
        "system":"s","messages":[{"role":"user","content":"hi"}],"tools":[],"thinking":{"type":"disabled"}}"#;
    let count = Wire::Anthropic.spec().count.unwrap();
    let body: serde_json::Value =
        serde_json::from_slice(&count.body(generation, "claude-x").unwrap()).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"model": "claude-x", "system": "s", "tools": [],
            "messages": [{"role": "user", "content": "hi"}], "thinking": {"type": "disabled"}})
    );
    assert_eq!(count.parse_answer(br#"{"input_tokens": 12}"#).unwrap(), 12);
    assert!(count.parse_answer(br#"{"totalTokens": 12}"#).is_err());

    // Gemini: the whole generation body, with the model it needs inside.
    let generation = br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
        "systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{"maxOutputTokens":8}}"#;
    let count = Wire::Gemini.spec().count.unwrap();
    let body: serde_json::Value =
        serde_json::from_slice(&count.body(generation, "gemini-x").unwrap()).unwrap();
    assert_eq!(body["generateContentRequest"]["model"], "models/gemini-x");
    assert_eq!(body["generateContentRequest"]["systemInstruction"]["parts"][0]["text"], "s");
    assert_eq!(body["generateContentRequest"]["contents"][0]["parts"][0]["text"], "hi");
    assert_eq!(body.as_object().unwrap().len(), 1);
    assert_eq!(count.parse_answer(br#"{"totalTokens": 7}"#).unwrap(), 7);
    assert!(count.parse_answer(b"not json").is_err());
    assert!(count.body(b"[1]", "gemini-x").is_err());
}

#[test]
fn every_wire_states_its_facts() {
    for wire in [Wire::OpenAiChat, Wire::Anthropic, Wire::Gemini] {
        let spec = wire.spec();
        assert!(spec.path.starts_with('/'), "{}", wire.as_str());
        assert!(spec.default_endpoint.starts_with("https://"), "{}", wire.as_str());
        assert!(!spec.default_endpoint.ends_with('/'), "{}", wire.as_str());
        // The model goes in the path exactly where the path says so.
        let in_path = spec.path(false).contains("{model}") && spec.path(true).contains("{model}");
        assert_eq!(in_path, spec.model == crate::ModelPlacement::Path, "{}", wire.as_str());
        if let Some(count) = spec.count {
            assert!(count.path.starts_with('/'), "{}", wire.as_str());
            let model_in_path = count.path.contains("{model}");
            assert_eq!(model_in_path, spec.model == crate::ModelPlacement::Path);
        }
    }
}

#[test]
fn a_model_in_the_path_cannot_leave_its_segment() {
    let gemini = Wire::Gemini.spec();
    let base = "https://generativelanguage.googleapis.com";
    // The attacks of the report: a path climbing to another endpoint, a query
    // string added, an encoded slash for the upstream to decode.
    assert_eq!(
        gemini.url(base, "gemini-x/../../../v1beta/files#", false),
        format!("{base}/v1beta/models/gemini-x%2F..%2F..%2F..%2Fv1beta%2Ffiles%23:generateContent")
    );
    assert_eq!(
        gemini.url(base, "gemini-x?key=injected&", true),
        format!("{base}/v1beta/models/gemini-x%3Fkey%3Dinjected%26:streamGenerateContent?alt=sse")
    );
    assert_eq!(
        gemini.count_url(base, "gemini-x%2F..%2Fcachedcontents").as_deref(),
        Some(&*format!("{base}/v1beta/models/gemini-x%252F..%252Fcachedcontents:countTokens"))
    );
    // Whatever the bytes, the model's part of the URL holds only a segment's own.
    let hostile = "a b/c?d#e%f\\g\u{e9}h\u{0}[]";
    let url = gemini.url(base, hostile, false);
    let segment = &url[base.len() + "/v1beta/models/".len()..url.len() - ":generateContent".len()];
    assert!(
        segment.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~:@%".contains(&b)),
        "{segment}"
    );
    assert_eq!(segment, "a%20b%2Fc%3Fd%23e%25f%5Cg%C3%A9h%00%5B%5D");
    // Ids that need nothing encoded are left as they are, without a copy.
    assert!(matches!(path_segment("gemini-2.5-pro"), Cow::Borrowed(_)));
    assert_eq!(path_segment("anthropic.claude-v2:1@x~y_z"), "anthropic.claude-v2:1@x~y_z");
}

#[test]
fn a_sigv4_wire_encodes_its_model_as_the_aws_sdks_do() {
    let bedrock = crate::bedrock::SPEC;
    assert_eq!(bedrock.auth, crate::Auth::SigV4 { service: "bedrock" });
    assert_eq!(bedrock.framing, crate::Framing::AwsEventStream);
    let base = "https://bedrock-runtime.us-east-1.amazonaws.com";
    // An inference profile's `:` is encoded, as the SDKs (and so SigV4) have it.
    assert_eq!(
        bedrock.url(base, "us.anthropic.claude-sonnet-4-5-20250929-v1:0", false),
        format!("{base}/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse")
    );
    // An ARN stays one segment.
    assert_eq!(
        bedrock.url(
            base,
            "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2",
            true
        ),
        format!(
            "{base}/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fa1b2/converse-stream"
        )
    );
    // Counted on the foundation model: a profile's geography goes.
    assert_eq!(
        bedrock.count_url(base, "us.anthropic.claude-sonnet-4-5-20250929-v1:0").as_deref(),
        Some(
            format!("{base}/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/count-tokens")
                .as_str()
        )
    );
    assert_eq!(
        bedrock.count_url(base, "amazon.nova-pro-v1:0").as_deref(),
        Some(format!("{base}/model/amazon.nova-pro-v1%3A0/count-tokens").as_str())
    );
    assert!(bedrock.default_endpoint.contains("{region}"), "the region must be configured");
    // The other wires keep `:` and `@` as they are.
    assert_eq!(
        Wire::Gemini.spec().url("https://g", "tuned:1@x", false),
        "https://g/v1beta/models/tuned:1@x:generateContent"
    );
    assert!(matches!(crate::spec::aws_path_label("amazon.nova-pro-v1"), Cow::Borrowed(_)));
}

#[test]
fn bedrock_counts_the_conversation_under_input_converse() {
    let count = crate::bedrock::SPEC.count.unwrap();
    let generation = serde_json::json!({
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "system": [{"text": "terse"}],
        "inferenceConfig": {"maxTokens": 64},
        "toolConfig": {"tools": []},
    });
    let body = count.body(&serde_json::to_vec(&generation).unwrap(), "m").unwrap();
    let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"input": {"converse": {
            "messages": [{"role": "user", "content": [{"text": "hi"}]}],
            "system": [{"text": "terse"}],
            "toolConfig": {"tools": []},
        }}})
    );
    assert_eq!(count.parse_answer(br#"{"inputTokens": 12}"#).unwrap(), 12);
    let of = |m| crate::CountModel::Foundation.of(m);
    assert_eq!(of("global.anthropic.claude-x"), Some("anthropic.claude-x"));
    assert_eq!(of("us.x"), Some("us.x"), "not a profile: no model after it");
    // An application inference profile cannot be counted: the estimate stands in.
    let arn = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2";
    assert_eq!(of(arn), None);
    assert_eq!(crate::bedrock::SPEC.count_url("https://b", arn), None);
}
