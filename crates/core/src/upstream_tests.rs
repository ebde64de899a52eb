use super::*;
use serde_json::json;
use std::time::Duration;

#[test]
fn write_object_overrides_and_drops_without_losing_unknown_fields() {
    let Value::Object(map) =
        json!({"model": "a", "x_unknown": {"k": [1, 2]}, "bad": 1, "stream": true})
    else {
        unreachable!()
    };
    let out = write_object(&map, &[("model", json!("b"))], &["bad"]);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v, json!({"model": "b", "x_unknown": {"k": [1, 2]}, "stream": true}));
}

#[test]
fn retry_after_parses_seconds() {
    let mut h = http::HeaderMap::new();
    h.insert("retry-after", "2".parse().unwrap());
    assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
    h.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
    assert_eq!(retry_after(&h), None);
}

#[test]
fn a_transport_outcome_is_transport_and_its_class() {
    use TransportClass as T;
    for class in [T::Connect, T::Timeout, T::Body, T::Reset] {
        // The outcome strings records and dashboards already hold.
        assert_eq!(class.outcome(), format!("transport_{class}"));
        let failure = Failure::Transport { class, message: "x".into() };
        assert_eq!(failure.outcome(), class.outcome());
    }
    assert_eq!(T::Timeout.as_str(), "timeout");
}

// The body a preset's server gets (its provider compiled from YAML).
#[cfg(feature = "yaml")]
mod presets {
    use super::*;

    /// The spec of an openai-chat provider with `preset` (`none`: no preset).
    fn preset_spec(preset: &str) -> std::sync::Arc<ProviderSpec> {
        let preset = if preset == "none" { String::new() } else { format!("preset: {preset}, ") };
        let yaml = format!(
            "providers:\n  p: {{ wire: openai-chat, {preset}credentials: {{ none: true }} }}\n"
        );
        let env = |_: &str| None;
        let raw = crate::config::ConfigSource::from_text("t.yaml", &yaml).parse_with(&env).unwrap();
        let catalog = crate::catalog::Catalog::compile(&raw, "t.yaml", &env).unwrap();
        std::sync::Arc::clone(catalog.provider("p").unwrap())
    }

    /// What `build_body` sends `spec`'s server for a Chat client's `body`: on the
    /// fast path (the client's own body, edited) or translated; `cap`: the
    /// deployment's output ceiling.
    fn sent(spec: &ProviderSpec, body: &Value, fast: bool, cap: Option<u64>) -> Value {
        let bytes = serde_json::to_vec(body).unwrap();
        let request = switchyard_protocol::openai_chat::parse_request(&bytes).unwrap();
        let raw = RawBody::new(Bytes::from(bytes), false);
        let out = Outgoing {
            format: ClientFormat::OpenAiChat,
            request: &request,
            raw: fast.then_some(&raw),
            forward_headers: &[],
            dropped: Vec::new(),
            refused: None,
            traceparent: None,
            tracestate: None,
        };
        let traits = ModelTraits::infer(Wire::OpenAiChat, "up");
        let body = build_body(&out, Wire::OpenAiChat, spec, "up", cap, traits).unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    fn tool_history() -> Value {
        json!({"model": "m", "stream": true, "max_completion_tokens": 300, "messages": [
            {"role": "user", "content": "Paris?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_abc123", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_abc123", "content": "18C"}
        ]})
    }

    #[test]
    fn mistral_gets_its_own_form_on_the_fast_path_and_translated() {
        let spec = preset_spec("mistral");
        for fast in [true, false] {
            let v = sent(&spec, &tool_history(), fast, None);
            assert_eq!(v["model"], "up");
            assert_eq!(v["max_tokens"], 300, "{v}");
            assert!(v.get("max_completion_tokens").is_none() && v.get("stream_options").is_none());
            let id = v["messages"][1]["tool_calls"][0]["id"].as_str().unwrap();
            assert!(switchyard_protocol::openai_chat::is_tool_id(id, 9), "{v}");
            assert_eq!(v["messages"][2]["tool_call_id"], id, "the result still names its call");
        }
        // A plain stream edited on the bytes asks for no usage either; the output
        // ceiling lands in the field the server takes.
        let plain =
            json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
        assert!(sent(&spec, &plain, true, None).get("stream_options").is_none());
        let v = sent(&spec, &tool_history(), true, Some(100));
        assert_eq!((v["max_tokens"].as_u64(), v.get("max_completion_tokens")), (Some(100), None));
    }

    #[test]
    fn deepseek_gets_the_tool_turns_reasoning_field_and_openai_nothing_new() {
        let v = sent(&preset_spec("deepseek"), &tool_history(), true, None);
        assert_eq!(v["messages"][1]["reasoning_content"], "", "{v}");
        assert_eq!(v["messages"][1]["tool_calls"][0]["id"], "call_abc123");
        assert_eq!(v["stream_options"]["include_usage"], true);
        let v = sent(&preset_spec("none"), &tool_history(), true, None);
        assert!(v["messages"][1].get("reasoning_content").is_none());
        assert_eq!(v["max_completion_tokens"], 300);
        assert_eq!(v["messages"][2]["tool_call_id"], "call_abc123");
    }

    #[test]
    fn a_providers_query_replaces_the_wires_own_parameter_and_keeps_the_rest() {
        let base = "https://r.openai.azure.com/openai/deployments/d/chat/completions";
        let mut url = reqwest::Url::parse(&format!("{base}?api-version=2024-10-21")).unwrap();
        with_query(&mut url, &[("api-version".into(), "2025-04-01-preview".into())]);
        assert_eq!(url.as_str(), format!("{base}?api-version=2025-04-01-preview"));
        let mut url = reqwest::Url::parse("https://g/v1/m:streamGenerateContent?alt=sse").unwrap();
        with_query(&mut url, &[("x".into(), "a b&c".into())]);
        assert_eq!(url.query(), Some("alt=sse&x=a+b%26c"));
        let mut url = reqwest::Url::parse("https://h/p").unwrap();
        with_query(&mut url, &[]);
        assert_eq!(url.as_str(), "https://h/p");
    }
}

#[test]
fn what_a_cloud_credential_minted_is_scrubbed_with_the_attempts_key() {
    let signed = [
        ("authorization".to_owned(), "Bearer ya29.minted-token".to_owned()),
        ("x-amz-security-token".to_owned(), "session-token-value".to_owned()),
        ("x-amz-date".to_owned(), "20261203T000000Z".to_owned()),
    ];
    let found = minted(&signed);
    assert_eq!(found, [Secret::new("ya29.minted-token"), Secret::new("session-token-value")]);
    let sigv4 = [(
        "authorization".to_owned(),
        "AWS4-HMAC-SHA256 Credential=AKID/20261203/us-east-1/bedrock/aws4_request, \
         SignedHeaders=host;x-amz-date, Signature=abcdef0123456789"
            .to_owned(),
    )];
    assert_eq!(minted(&sigv4), [Secret::new("abcdef0123456789")]);
}
