//! A route's `adaptive:` block, compiled: where it is needed, where it does
//! nothing, and its problems placed at the block.

use crate::catalog::{Catalog, InvalidRegistry, Scope, Strategy};
use crate::config::ConfigSource;
use crate::util::Date;

fn compile(routes: &str) -> Result<Catalog, InvalidRegistry> {
    let yaml = format!(
        r#"
providers:
  a: {{ wire: openai-chat, endpoint: "http://127.0.0.1:1/v1", credentials: {{ env: [KEY] }} }}
  b: {{ wire: anthropic, endpoint: "http://127.0.0.1:2", credentials: {{ env: [KEY] }} }}
models:
  - id: chat
    deployments: [{{ provider: a }}, {{ provider: b, model: up-b }}]
    pricing: {{ input: 1, output: 2 }}
routes:
{routes}"#
    );
    let env = |k: &str| (k == "KEY").then(|| "sk-test-123456".to_owned());
    let raw = ConfigSource::from_text("t.yaml", &yaml).parse_with(&env).unwrap();
    Catalog::compile(&raw, "t.yaml", &env)
}

#[test]
fn an_adaptive_route_carries_its_policy() {
    let c = compile(
        r#"  - name: chat
    match: chat
    provider: a
    fallbacks: [{ provider: b, model: up-b }]
    strategy: adaptive
    adaptive:
      preset: interactive
      version: ours-2
      quality: { version: evals-1, profiles: [{ target: b/up-b, intent: code, score: 0.9 }, { target: chat, score: 0.7 }] }
"#,
    )
    .unwrap();
    let plan = c.plan("chat", Date::today(), &Scope::default()).unwrap();
    assert_eq!(plan.strategy, Strategy::Adaptive);
    let policy = plan.policy.adaptive.as_ref().unwrap();
    assert_eq!(policy.version, "ours-2");
    assert!(policy.reads_intent());
}

#[test]
fn the_block_and_the_strategy_go_together() {
    let missing =
        compile("  - name: chat\n    match: chat\n    provider: a\n    strategy: adaptive\n")
            .unwrap_err()
            .to_string();
    assert!(missing.contains("strategy adaptive needs an `adaptive:` block"), "{missing}");
    let idle = compile(
        "  - name: chat\n    match: chat\n    provider: a\n    adaptive: { preset: quality }\n",
    )
    .unwrap_err()
    .to_string();
    assert!(idle.contains("the route's strategy is not adaptive"), "{idle}");
}

#[test]
fn a_bad_policy_is_refused_at_its_line() {
    let e = compile(
        r#"  - name: chat
    match: chat
    provider: a
    strategy: adaptive
    adaptive:
      weights: { latency: 1 }
      quality: { profiles: [{ target: c/x, score: 0.5 }] }
"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("t.yaml:15:"), "{e}");
    assert!(e.contains("routes[chat].adaptive.version: required"), "{e}");
    assert!(e.contains("`c/x` is no catalog model"), "{e}");
}
