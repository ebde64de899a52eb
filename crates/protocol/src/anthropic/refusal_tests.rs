#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

#[test]
fn reads_the_flags_vertex_refuses() {
    // As Vertex AI words it (anthropics/claude-code#34802).
    let m = "Unexpected value(s) `adaptive-thinking-2026-01-28`, `effort-2025-11-24` for the \
             `anthropic-beta` header. Please consult our documentation at docs.anthropic.com or \
             try again without the header.";
    let r = refused(m).unwrap();
    assert_eq!(r.betas, ["adaptive-thinking-2026-01-28", "effort-2025-11-24"]);
    assert!(r.fields.is_empty());
}

#[test]
fn reads_a_top_level_field_it_does_not_take() {
    let r = refused("context_management: Extra inputs are not permitted").unwrap();
    assert_eq!(r.fields, ["context_management"]);
    assert!(r.betas.is_empty());
}

#[test]
fn leaves_nested_and_required_fields_and_other_errors_alone() {
    // A tool's own field is the client's content: nothing to learn.
    assert_eq!(refused("tools.3.custom.input_examples: Extra inputs are not permitted"), None);
    // A field no request goes without is never learned away.
    assert_eq!(refused("messages: Extra inputs are not permitted"), None);
    assert_eq!(refused("max_tokens: Field required"), None);
    assert_eq!(refused("prompt is too long: 210000 tokens > 200000 maximum"), None);
    // Backticks elsewhere are not flags.
    assert_eq!(refused("Unexpected value `Not A Flag!` somewhere"), None);
}

#[test]
fn bounds_what_one_message_names() {
    let flags: Vec<String> = (0..20).map(|i| format!("`f{i}-2025-01-01`")).collect();
    let m = format!("Unexpected value(s) {} for the `anthropic-beta` header.", flags.join(", "));
    assert_eq!(refused(&m).unwrap().betas.len(), MOST);
}
