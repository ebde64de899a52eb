//! A model's `kind`: a fallback and an intent class stay within their kind.

use crate::catalog::{Catalog, InvalidRegistry};
use crate::config::ConfigSource;
use crate::config::raw::ModelKind;

fn compile(extra: &str) -> Result<Catalog, InvalidRegistry> {
    let yaml = format!(
        r#"
providers:
  a: {{ wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: {{ env: [KEY] }} }}
  q: {{ wire: fal, endpoint: "http://127.0.0.1:1", credentials: {{ env: [KEY] }} }}
models:
  - id: chat
    deployments: [{{ provider: a, model: gpt-x }}]
  - id: vectors
    kind: embedding
    deployments: [{{ provider: a, model: text-embedding-3-small }}]
    pricing: {{ input: 0.02 }}
{extra}"#
    );
    let env = |k: &str| (k == "KEY").then(|| "sk-test-123456".to_owned());
    let raw = ConfigSource::from_text("t.yaml", &yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env)
}

#[test]
fn a_model_is_chat_unless_it_says() {
    let c = compile("").unwrap();
    let kind = |id: &str| c.models.iter().find(|m| m.id == id).map(|m| m.kind);
    assert_eq!(kind("chat"), Some(ModelKind::Chat));
    assert_eq!(kind("vectors"), Some(ModelKind::Embedding));
}

#[test]
fn a_fallback_of_another_kind_is_refused() {
    let e = compile(
        r#"  - id: more-vectors
    kind: embedding
    deployments: [{ provider: a, model: text-embedding-3-large }]
    fallbacks: [chat]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("models[more-vectors].fallbacks: \"chat\" is of kind chat"), "{e}");
    compile(
        r#"  - id: more-vectors
    kind: embedding
    deployments: [{ provider: a, model: text-embedding-3-large }]
    fallbacks: [vectors]"#,
    )
    .unwrap();
}

#[test]
fn an_intent_class_goes_to_a_chat_model() {
    let e = compile("intent:\n  targets: { ordinary: vectors }").unwrap_err().to_string();
    assert!(e.contains("intent.targets.ordinary: `vectors` is not a chat model"), "{e}");
    let e = compile("intent:\n  targets: { ordinary: chat }\n  classifier: { model: vectors }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("intent.classifier.model: `vectors` is not a chat model"), "{e}");
}

#[test]
fn a_media_model_runs_on_a_queue_and_a_queue_runs_only_media() {
    let c = compile(
        r#"  - id: clips
    kind: media
    deployments: [{ provider: q, model: fal-ai/kling-video/v2.1/standard/text-to-video }]
    pricing: { per_second: 0.05 }"#,
    )
    .unwrap();
    assert!(c.models.iter().any(|m| m.id == "clips" && m.kind == ModelKind::Media));
    let e = compile(
        r#"  - id: clips
    kind: media
    deployments: [{ provider: a, model: sora }]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("models[clips].deployments[a]: the openai-chat wire runs no media jobs"),
        "{e}"
    );
    let e = compile(
        r#"  - id: talk
    deployments: [{ provider: q, model: fal-ai/any-llm }]"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("models[talk].deployments[q]: the fal wire runs media jobs only"), "{e}");
}
