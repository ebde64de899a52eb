//! The fast path's edits of a client's own body.

use serde_json::{Value, json};

use super::*;

#[test]
fn max_tokens_becomes_max_completion_tokens_for_models_that_refuse_it() {
    let strict = crate::ModelTraits::infer(crate::Wire::OpenAiChat, "gpt-6.2-sol");
    let lenient = crate::ModelTraits::infer(crate::Wire::OpenAiChat, "gpt-4o");
    let obj = |v: Value| v.as_object().cloned().unwrap();
    assert_eq!(
        adapt_native(&obj(json!({"max_tokens": 50, "n": 1})), strict),
        vec![("max_tokens", None), ("max_completion_tokens", Some(json!(50)))]
    );
    // Both given: the newer field wins, the older one goes.
    assert_eq!(
        adapt_native(&obj(json!({"max_tokens": 50, "max_completion_tokens": 70})), strict),
        vec![("max_tokens", None)]
    );
    assert!(adapt_native(&obj(json!({"max_tokens": 50})), lenient).is_empty());
    assert!(adapt_native(&obj(json!({"max_completion_tokens": 50})), strict).is_empty());
}
