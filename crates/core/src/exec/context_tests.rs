use super::*;

fn snapshot(gateway: &str) -> Arc<Snapshot> {
    let yaml = format!(
        "storage: {{ url: none }}\n{gateway}providers: {{ local: {{ wire: mock }} }}\nmodels: [{{ id: echo, deployments: [{{ provider: local }}] }}]\n"
    );
    let raw = crate::ConfigSource::from_text("t.yaml", &yaml).parse_with(&|_| None).unwrap();
    let catalog = crate::Catalog::compile(&raw, "t.yaml", &|_| None).unwrap();
    Arc::new(Snapshot::build(catalog, None).unwrap())
}

fn parse(snap: &Snapshot, format: ClientFormat, body: &str) -> Result<Parsed, GatewayError> {
    snap.parse_body(format, Bytes::from(body.to_owned()), None)
}

#[test]
fn hints_come_from_their_own_field_and_mark_the_bytes() {
    let snap = snapshot("");
    let body = r#"{"model":"echo","messages":[{"role":"user","content":"say \"switchyard\""}]}"#;
    let p = parse(&snap, ClientFormat::OpenAiChat, body).unwrap();
    assert_eq!(p.hints, Hints::default());
    assert!(!p.raw.unwrap().has_extension(), "a mention in the text is not the field");
    let body = r#"{"model":"echo","switchyard":{"only":["local"]},"messages":[{"role":"user","content":"hi"}]}"#;
    let p = parse(&snap, ClientFormat::OpenAiChat, body).unwrap();
    assert_ne!(p.hints, Hints::default());
    assert!(p.raw.unwrap().has_extension());
    let body =
        r#"{"model":"echo","switchyard":{"only":7},"messages":[{"role":"user","content":"hi"}]}"#;
    let err = parse(&snap, ClientFormat::OpenAiChat, body).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidRequest);
    assert!(err.body().message.starts_with("switchyard:"), "{}", err.body().message);
}

#[test]
fn the_default_model_is_applied_where_the_body_is_parsed() {
    let body = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let with = snapshot("gateway: { default_model: echo }\n");
    assert_eq!(parse(&with, ClientFormat::OpenAiChat, body).unwrap().request.model, "echo");
    let without = snapshot("");
    assert_eq!(parse(&without, ClientFormat::OpenAiChat, body).unwrap().request.model, "");
}

#[test]
fn depth_and_model_ids_are_bounded() {
    let snap = snapshot("gateway: { max_json_depth: 4 }\n");
    let deep = r#"{"model":"echo","messages":[{"role":"user","content":[[[[1]]]]}]}"#;
    assert_eq!(
        parse(&snap, ClientFormat::OpenAiChat, deep).unwrap_err().code(),
        ErrorCode::JsonTooDeep
    );
    let brackets = r#"{"model":"echo","messages":[{"role":"user","content":"[[[[[[[["}]}"#;
    assert!(parse(&snap, ClientFormat::OpenAiChat, brackets).is_ok());
    for bad in ["x".repeat(257), "a\nb".to_owned()] {
        let body =
            serde_json::json!({"model": bad, "messages": [{"role": "user", "content": "hi"}]});
        let err = parse(&snap, ClientFormat::OpenAiChat, &body.to_string()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidModel);
    }
    assert!(check_model_id("").is_err());
    assert!(check_model_id("gpt-5").is_ok());
}

#[test]
fn the_estimate_is_computed_once_and_the_fast_path_needs_the_bytes() {
    let snap = snapshot("");
    let body = r#"{"model":"echo","messages":[{"role":"user","content":"hello there"}]}"#;
    let parsed = parse(&snap, ClientFormat::OpenAiChat, body).unwrap();
    let inbound =
        Inbound::from_body("r".into(), ClientFormat::OpenAiChat, parsed, Principal::default());
    let first = inbound.input_estimate();
    assert!(first > 0);
    assert_eq!(inbound.estimate.0.get(), Some(&first));
    assert!(inbound.fast_path(Wire::OpenAiChat));
    assert!(!inbound.fast_path(Wire::Anthropic));
    let bare = Inbound::new(
        "r".into(),
        ClientFormat::OpenAiChat,
        Request::default(),
        Principal::default(),
    );
    assert!(!bare.fast_path(Wire::OpenAiChat), "no bytes kept, nothing to forward");
}

#[test]
fn client_model_ids_are_checked_as_the_catalog_reads_them() {
    // Loose spellings clients send are taken: the rule is for the normalised id.
    for good in ["gpt-5", "Claude Sonnet 4", "claude-sonnet-4[1m]", "sy/auto", "m_one", "x@1:2"] {
        assert!(check_model_id(good).is_ok(), "{good}");
    }
    for bad in [
        "gemini-x/../../../v1beta/files#",
        "gemini-x?key=injected&",
        "gemini-x%2F..%2Fcachedcontents",
        "/leading",
        "caf\u{e9}",
        "",
    ] {
        let err = check_model_id(bad).unwrap_err();
        assert_eq!((err.status(), err.code()), (400, ErrorCode::InvalidModel), "{bad:?}");
    }
    let err = check_model_id(&format!("{}?", "y".repeat(250))).unwrap_err();
    assert!(
        err.body().message.contains(&format!("\"{}…\"", "y".repeat(100))),
        "{}",
        err.body().message
    );
    assert!(!err.body().message.contains(&"y".repeat(101)), "quotes at most 100 characters");
}
