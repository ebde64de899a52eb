#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::parse_models;
use crate::listing::ListedModel;

#[test]
fn reads_openai_s_list() {
    let body = br#"{"object":"list","data":[
        {"id":"gpt-4.1","object":"model","created":1744316542,"owned_by":"system"},
        {"id":"gpt-4o-mini","object":"model","created":1721172741,"owned_by":"system"},
        {"object":"model"}
    ]}"#;
    let page = parse_models(body).unwrap();
    assert_eq!(page.models, [ListedModel::new("gpt-4.1"), ListedModel::new("gpt-4o-mini")]);
    assert_eq!(page.next, None);
}

#[test]
fn reads_the_compatible_servers_additions() {
    // Mistral's deprecation date, OpenRouter's name.
    let body = br#"{"data":[
        {"id":"open-mistral-7b","deprecation":"2025-03-30T12:00:00Z","deprecation_replacement_model":"ministral-8b-latest"},
        {"id":"anthropic/claude-sonnet-4","name":"Anthropic: Claude Sonnet 4","deprecation":null}
    ]}"#;
    let page = parse_models(body).unwrap();
    assert_eq!(
        page.models[0].retiring.as_deref(),
        Some("deprecated 2025-03-30T12:00:00Z, replaced by ministral-8b-latest")
    );
    assert_eq!(page.models[1].display_name.as_deref(), Some("Anthropic: Claude Sonnet 4"));
    assert_eq!(page.models[1].retiring, None);
    // Together's bare array.
    let page = parse_models(
        br#"[{"id":"meta-llama/Llama-3.3-70B-Instruct-Turbo","display_name":"Llama 3.3 70B"}]"#,
    )
    .unwrap();
    assert_eq!(page.models[0].display_name.as_deref(), Some("Llama 3.3 70B"));
}

#[test]
fn azure_s_lifecycle_marks_retiring_not_its_dates() {
    let body = br#"{"object":"list","data":[
        {"id":"gpt-4o-2024-05-13","lifecycle_status":"deprecating","deprecation":{"fine_tune":1748736000,"inference":1751328000},"status":"succeeded"},
        {"id":"gpt-4.1-2025-04-14","lifecycle_status":"generally-available","deprecation":{"inference":1775001600}}
    ]}"#;
    let page = parse_models(body).unwrap();
    assert_eq!(page.models[0].retiring.as_deref(), Some("deprecating"));
    assert_eq!(page.models[0].retires_at, Some(1_751_328_000));
    assert_eq!(page.models[1].retiring, None);
    assert_eq!(page.models[1].retires_at, Some(1_775_001_600));
}

#[test]
fn refuses_what_is_not_a_list() {
    assert!(parse_models(b"not json").is_err());
    assert!(parse_models(br#"{"error":{"message":"bad key"}}"#).is_err());
}
