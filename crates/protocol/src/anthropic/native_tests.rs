//! The fast path's edits of a client's own body.

use serde_json::{Value, json};

use crate::anthropic::sampling_edits;
use crate::anthropic::test_support::parse_value;
use crate::{ModelTraits, ReasoningControl, Request};

use super::*;

#[test]
fn a_clients_own_blank_text_leaves_its_body_on_the_fast_path() {
    let traits = ModelTraits::infer(crate::Wire::Anthropic, "claude-sonnet-4-5");
    let body = json!({"model": "m", "max_tokens": 10, "messages": [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": [{"type": "text", "text": "\n"}]},
        {"role": "assistant", "content": " "},
        {"role": "user", "content": [{"type": "text", "text": "q2"}, {"type": "text", "text": " "},
                                     {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}}]},
    ]});
    let req = parse_value(&body).unwrap();
    assert!(may_adapt(&req, traits));
    let edits = adapt_native(body.as_object().unwrap(), &req, traits);
    let messages =
        edits.iter().find(|(k, _)| *k == "messages").and_then(|(_, v)| v.clone()).unwrap();
    assert_eq!(
        messages,
        json!([
            {"role": "user", "content": "q1"},
            {"role": "user", "content": [{"type": "text", "text": "q2"},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/i.png"}}]},
        ])
    );
    // Only a blank final message: nothing to drop, the upstream answers it.
    let last_only = json!([{"role": "user", "content": "q1"}, {"role": "assistant", "content": "a"},
                           {"role": "user", "content": "  "}]);
    assert_eq!(drop_blank_text(last_only.as_array().unwrap()), None);
    let clean = json!([{"role": "user", "content": "q1"}]);
    assert_eq!(drop_blank_text(clean.as_array().unwrap()), None);
    assert!(!may_adapt(&parse_value(&json!({"model": "m", "messages": clean})).unwrap(), traits));
}

#[test]
fn native_bodies_get_the_thinking_form_of_the_target_model() {
    let effort = ModelTraits {
        family: crate::Family::Claude,
        reasoning: ReasoningControl::Effort,
        sampling: false,
        one_sampler: true,
        takes_max_tokens: true,
    };
    let budget = ModelTraits {
        family: crate::Family::Claude,
        reasoning: ReasoningControl::Budget,
        sampling: true,
        one_sampler: false,
        takes_max_tokens: true,
    };
    let obj = |v: Value| v.as_object().cloned().unwrap();

    // enabled + budget to an effort model: adaptive + the nearest effort, beside an
    // existing output format; sampling parameters removed.
    let body = obj(json!({"max_tokens": 4000, "temperature": 1, "top_k": 3,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "output_config": {"format": {"type": "json_schema", "schema": {}}}}));
    let edits = adapt_native(&body, &Request::default(), effort);
    assert_eq!(
        edits,
        vec![
            ("thinking", Some(json!({"type": "adaptive"}))),
            (
                "output_config",
                Some(json!({"format": {"type": "json_schema", "schema": {}}, "effort": "low"}))
            ),
            ("temperature", None),
            ("top_k", None),
        ]
    );
    // An effort the client already gave is kept.
    let body = obj(json!({"thinking": {"type": "enabled", "budget_tokens": 30000},
        "output_config": {"effort": "max"}}));
    assert_eq!(
        adapt_native(&body, &Request::default(), effort)[1].1,
        Some(json!({"effort": "max"}))
    );

    // adaptive to a budget model: enabled with the effort's budget, the effort
    // removed (and an output_config left empty removed), max_tokens above it.
    let body = obj(json!({"max_tokens": 1000, "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"}}));
    assert_eq!(
        adapt_native(&body, &Request::default(), budget),
        vec![
            ("thinking", Some(json!({"type": "enabled", "budget_tokens": 24576}))),
            ("output_config", None),
            ("max_tokens", Some(json!(24576 + 1024))),
        ]
    );

    // Forms that match (and disabled thinking) need nothing.
    for (body, traits) in [
        (json!({"thinking": {"type": "adaptive"}, "temperature": 1}), budget_free(effort)),
        (json!({"thinking": {"type": "enabled", "budget_tokens": 2000}}), budget),
        (json!({"thinking": {"type": "disabled"}, "temperature": 0.5}), budget),
    ] {
        assert!(adapt_native(&obj(body.clone()), &Request::default(), traits).is_empty(), "{body}");
    }
}

/// `traits` with sampling parameters allowed.
fn budget_free(traits: ModelTraits) -> ModelTraits {
    ModelTraits { sampling: true, ..traits }
}

/// Claude from Opus 4.1 on refuses `temperature` beside `top_p`: a client's own body
/// with both loses `top_p` (and only then: one alone goes as it is, byte for byte).
#[test]
fn one_sampler_models_keep_temperature_and_lose_top_p() {
    let traits = ModelTraits::infer(crate::Wire::Anthropic, "claude-haiku-4-5");
    let both = json!({"model": "m", "max_tokens": 10, "temperature": 0, "top_p": 0.95,
        "top_k": 40, "messages": [{"role": "user", "content": "hi"}]});
    let req = parse_value(&both).unwrap();
    assert!(may_adapt(&req, traits));
    assert_eq!(adapt_native(both.as_object().unwrap(), &req, traits), vec![("top_p", None)]);
    assert!(sampling_edits(&req, traits, true)[0].starts_with("top_p: dropped"));

    for one in [
        json!({"model": "m", "max_tokens": 10, "top_p": 0.95, "messages": [{"role": "user", "content": "hi"}]}),
        json!({"model": "m", "max_tokens": 10, "temperature": 0.5, "messages": [{"role": "user", "content": "hi"}]}),
    ] {
        let req = parse_value(&one).unwrap();
        assert!(!may_adapt(&req, traits), "{one}");
        assert!(adapt_native(one.as_object().unwrap(), &req, traits).is_empty(), "{one}");
        assert!(sampling_edits(&req, traits, true).is_empty(), "{one}");
    }

    // Claude Opus 4.0 takes both.
    let opus_4 = ModelTraits::infer(crate::Wire::Anthropic, "claude-opus-4-20250514");
    assert!(!may_adapt(&req, opus_4));
    assert!(adapt_native(both.as_object().unwrap(), &req, opus_4).is_empty());
}

#[test]
fn another_familys_thinking_leaves_the_history() {
    let tagged = crate::continuity::tag_reasoning(crate::responses::FAMILY, "gAAAAB-x");
    let messages = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": tagged},
            {"type": "thinking", "thinking": "c", "signature": "EqQBCkYIBxgC"},
            {"type": "text", "text": "done"}]},
        {"role": "user", "content": "next"},
    ]);
    let out = drop_blank_text(messages.as_array().unwrap()).unwrap();
    assert_eq!(
        out[1]["content"],
        json!([{"type": "thinking", "thinking": "c", "signature": "EqQBCkYIBxgC"},
               {"type": "text", "text": "done"}])
    );
}
