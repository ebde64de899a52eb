use super::super::{Catalog, InvalidRegistry};
use crate::config::ConfigSource;
use crate::intent::Intent;
use switchyard_protocol::{ClientFormat, Request};

fn compile(yaml: &str) -> Result<Catalog, InvalidRegistry> {
    let env = |_: &str| None;
    let raw = ConfigSource::from_text("t.yaml", yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env)
}

const BASE: &str = r#"
gateway: { model_prefixes: ["sy/"] }
providers:
  mock: { wire: mock }
models:
  - id: deep
    deployments: [{ provider: mock }]
  - id: coder
    aliases: [coder-latest]
    deployments: [{ provider: mock }]
  - id: everyday
    deployments: [{ provider: mock }]
routes:
  - name: Small
    match: "small-*"
    provider: mock
"#;

fn user(text: &str) -> Request {
    let body =
        serde_json::json!({"model": "auto", "messages": [{"role": "user", "content": text}]});
    ClientFormat::OpenAiChat.parse_request(body.to_string().as_bytes(), None).unwrap()
}

#[test]
fn each_class_goes_to_its_target_and_the_rest_where_ordinary_goes() {
    let c = compile(&format!(
        "{BASE}intent:\n  targets: {{ reasoning: deep, code: Coder-Latest, ordinary: everyday, cheap: small-one }}\n"
    ))
    .unwrap();
    let t = c.intent.as_ref().unwrap();
    assert_eq!(t.of(Intent::Code), "coder-latest", "normalised, an alias kept as written");
    assert_eq!(t.of(Intent::Cheap), "small-one", "a name a route matches");
    assert_eq!(t.of(Intent::Vision), "everyday", "left out: ordinary's");

    let proof = user("Prove that the square root of 2 is irrational.");
    let r = c.auto_model("auto", &proof, None).unwrap();
    assert_eq!(
        (r.intent, r.rule, r.target.as_str()),
        (Intent::Reasoning, "reasoning_text", "deep")
    );
    let r = c.auto_model("sy/Auto-Code", &proof, None).unwrap();
    assert_eq!((r.intent, r.rule, r.target.as_str()), (Intent::Code, "named", "coder-latest"));
    assert!(c.auto_model("auto-nonsense", &proof, None).is_none());
    assert!(c.auto_model("deep", &proof, None).is_none());
}

#[test]
fn without_intent_there_are_no_auto_models() {
    let c = compile(BASE).unwrap();
    assert!(c.intent.is_none());
    assert!(c.auto_model("auto", &user("hi"), None).is_none());
}

#[test]
fn problems_name_the_class_and_the_target() {
    let p = compile(&format!(
        "{BASE}intent:\n  targets: {{ reasonin: deep, code: nowhere, cheap: everyday }}\n"
    ))
    .unwrap_err()
    .to_string();
    assert!(p.contains("intent.targets.reasonin: not a class"), "{p}");
    assert!(p.contains("intent.targets.code: `nowhere` is no catalog model"), "{p}");
    assert!(p.contains("intent.targets.ordinary: required"), "{p}");

    let taken = BASE.replace("aliases: [coder-latest]", "aliases: [auto-code]");
    let p = compile(&format!("{taken}intent:\n  targets: {{ ordinary: everyday }}\n"))
        .unwrap_err()
        .to_string();
    assert!(p.contains("the catalog has a model or alias `auto-code`"), "{p}");
}

#[test]
fn a_classifier_model_is_checked_and_compiled() {
    let c = compile(&format!(
        "{BASE}intent:\n  targets: {{ reasoning: deep, ordinary: everyday }}\n  classifier: {{ model: small-judge, timeout_ms: 300, shadow: true }}\n"
    ))
    .unwrap();
    let spec = c.intent_classifier.as_ref().unwrap();
    assert_eq!(
        (spec.model.as_str(), spec.timeout.as_millis(), spec.shadow),
        ("small-judge", 300, true)
    );
    assert_eq!(spec.cache_ttl_ms, crate::intent::model::DEFAULT_CACHE_TTL_MS);
    assert!(c.classifies("sy/auto") && !c.classifies("auto-code") && !c.classifies("deep"));

    let e = compile(&format!("{BASE}intent:\n  classifier: {{ model: nowhere, timeout_ms: 0 }}\n"))
        .unwrap_err()
        .to_string();
    for want in [
        "intent.classifier: needs intent.targets",
        "intent.classifier.model: `nowhere` is no catalog model",
        "intent.classifier.timeout_ms: 0 is not in 1..=30000",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
}
