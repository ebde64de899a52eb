#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::parse_models;

#[test]
fn reads_the_models_that_generate() {
    let body = br#"{"models":[
        {"name":"models/gemini-2.5-pro","version":"2.5","displayName":"Gemini 2.5 Pro","supportedGenerationMethods":["generateContent","countTokens","createCachedContent"]},
        {"name":"models/text-embedding-004","displayName":"Text Embedding 004","supportedGenerationMethods":["embedContent"]},
        {"name":"models/aqa","displayName":"Model that performs Attributed Question Answering."}
    ],"nextPageToken":"Ch1tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA=="}"#;
    let page = parse_models(body).unwrap();
    assert_eq!(page.models.len(), 1);
    assert_eq!(page.models[0].id, "gemini-2.5-pro");
    assert_eq!(page.models[0].display_name.as_deref(), Some("Gemini 2.5 Pro"));
    assert_eq!(page.next.as_deref(), Some("Ch1tb2RlbHMvZ2VtaW5pLTIuNS1mbGFzaA=="));
}

#[test]
fn the_last_page_has_no_token() {
    let page = parse_models(br#"{"models":[{"name":"models/gemini-2.5-flash","supportedGenerationMethods":["generateContent"]}]}"#).unwrap();
    assert_eq!(page.next, None);
    assert_eq!(page.models[0].id, "gemini-2.5-flash");
    assert!(parse_models(b"{}").unwrap().models.is_empty());
    assert!(parse_models(br#"{"models":{}}"#).is_err());
}
