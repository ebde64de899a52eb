//! The fast path's edits of a Responses client's own body.

use serde_json::{Value, json};

use crate::continuity::{TestSeal, seal_part, tag_reasoning};
use crate::responses::{FAMILY, parse_request_sealed};
use crate::{ModelTraits, Part, Wire};

fn edits(body: &Value) -> (bool, Vec<crate::FieldEdit>) {
    let bytes = body.to_string();
    let req = parse_request_sealed(bytes.as_bytes(), Some(&TestSeal)).unwrap();
    let traits = ModelTraits::infer(Wire::Responses, "gpt-5");
    let map = body.as_object().unwrap();
    (
        Wire::Responses.may_adapt(&req, bytes.as_bytes(), traits),
        Wire::Responses.adapt_native(map, &req, traits),
    )
}

#[test]
fn codex_own_body_goes_as_it_came() {
    let body = json!({"model": "gpt-5", "store": false, "include": ["reasoning.encrypted_content"],
        "input": [{"role": "user", "content": "hi"},
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-openai-own"},
            {"role": "assistant", "content": [{"type": "output_text", "text": "yes"}]}]});
    assert_eq!(edits(&body), (false, Vec::new()));
}

#[test]
fn what_the_gateway_sealed_is_opened_for_the_upstream() {
    let ours =
        Part::Thinking { text: "plan".into(), signature: Some(tag_reasoning(FAMILY, "gAAAAB-up")) };
    let claude = Part::Thinking { text: "claude".into(), signature: Some("EqQBCkYI".into()) };
    let body = json!({"model": "gpt-5", "instructions": "Be brief.", "input": [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "plan"}],
         "encrypted_content": seal_part(&TestSeal, &ours).unwrap()},
        {"type": "reasoning", "summary": [], "encrypted_content": seal_part(&TestSeal, &claude).unwrap()},
        {"role": "assistant", "content": [{"type": "output_text", "text": "yes"}]}]});
    let (may, edits) = edits(&body);
    assert!(may);
    let input = edits.iter().find(|(f, _)| *f == "input").and_then(|(_, v)| v.clone()).unwrap();
    let reasoning: Vec<&Value> =
        input.as_array().unwrap().iter().filter(|i| i["type"] == "reasoning").collect();
    assert_eq!(reasoning.len(), 1, "Claude's thinking stays out: {input:#}");
    assert_eq!(reasoning[0]["encrypted_content"], "gAAAAB-up");
    assert!(edits.contains(&("instructions", Some(json!("Be brief.")))));
}

#[test]
fn a_compaction_the_gateway_sealed_becomes_its_summary() {
    let token = crate::continuity::seal_summary(&TestSeal, "the story so far").unwrap();
    let body = json!({"model": "gpt-5", "input": [
        {"type": "compaction", "id": "cmp_1", "encrypted_content": token},
        {"role": "user", "content": "go on"}]});
    let (may, edits) = edits(&body);
    assert!(may);
    let input = edits.iter().find(|(f, _)| *f == "input").and_then(|(_, v)| v.clone()).unwrap();
    assert!(input.to_string().contains("the story so far"), "{input:#}");
    assert!(!input.to_string().contains("test-seal:"), "{input:#}");
}
