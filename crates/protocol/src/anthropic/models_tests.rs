#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::parse_models;

#[test]
fn reads_a_page_and_its_cursor() {
    let body = br#"{"data":[
        {"type":"model","id":"claude-sonnet-4-5-20250929","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"},
        {"type":"model","id":"claude-opus-4-1-20250805","display_name":"Claude Opus 4.1","created_at":"2025-08-05T00:00:00Z"}
    ],"has_more":true,"first_id":"claude-sonnet-4-5-20250929","last_id":"claude-opus-4-1-20250805"}"#;
    let page = parse_models(body).unwrap();
    let ids: Vec<&str> = page.models.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805"]);
    assert_eq!(page.models[0].display_name.as_deref(), Some("Claude Sonnet 4.5"));
    assert_eq!(page.next.as_deref(), Some("claude-opus-4-1-20250805"));
}

#[test]
fn the_last_page_has_no_cursor() {
    let body = br#"{"data":[{"type":"model","id":"claude-3-haiku-20240307"}],"has_more":false,"first_id":"claude-3-haiku-20240307","last_id":"claude-3-haiku-20240307"}"#;
    assert_eq!(parse_models(body).unwrap().next, None);
    // An empty list is a list.
    let page =
        parse_models(br#"{"data":[],"has_more":false,"first_id":null,"last_id":null}"#).unwrap();
    assert!(page.models.is_empty());
}

#[test]
fn more_without_a_cursor_is_refused_not_looped() {
    assert!(parse_models(br#"{"data":[],"has_more":true,"last_id":null}"#).is_err());
    assert!(parse_models(br#"{"type":"error","error":{"type":"authentication_error"}}"#).is_err());
}
