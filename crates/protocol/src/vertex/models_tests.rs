#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{listed_id, parse_models};

#[test]
fn reads_a_publisher_s_page() {
    let body = br#"{"publisherModels":[
        {"name":"publishers/anthropic/models/claude-sonnet-4-5","versionId":"20250929","launchStage":"GA","openSourceCategory":"PROPRIETARY"},
        {"name":"publishers/anthropic/models/claude-3-haiku","launchStage":"GA"}
    ],"nextPageToken":"abc"}"#;
    let page = parse_models(body).unwrap();
    let ids: Vec<&str> = page.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["claude-sonnet-4-5", "claude-3-haiku"]);
    assert_eq!(page.next.as_deref(), Some("abc"));
    assert!(parse_models(b"{}").unwrap().models.is_empty());
    assert!(parse_models(br#"{"publisherModels":"x"}"#).is_err());
}

#[test]
fn a_versioned_model_is_listed_without_its_version() {
    assert_eq!(listed_id("claude-sonnet-4-5@20250929"), "claude-sonnet-4-5");
    assert_eq!(listed_id("gemini-2.5-pro"), "gemini-2.5-pro");
}
