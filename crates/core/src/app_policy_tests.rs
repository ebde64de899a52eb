use super::*;

#[test]
fn a_policy_round_trips_and_compiles() {
    let json = r#"{"strategy":"adaptive","adaptive":{"preset":"economy","weights":{"cost":0.7}},
        "max_cost_per_1k_tokens":0.004,"unknown_cost":"allow"}"#;
    let p: AppPolicy = serde_json::from_str(json).unwrap();
    let back: AppPolicy = serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    let pinned = p.compile("key:key_1", &|_| true).unwrap();
    assert_eq!(pinned.strategy, Some(Strategy::Adaptive));
    assert_eq!(pinned.adaptive.as_ref().unwrap().version, "economy-1");
    assert_eq!(
        (pinned.max_cost_per_1k_tokens, pinned.unknown_cost),
        (Some(0.004), Some(UnknownCost::Allow))
    );
    assert!(AppPolicy::default().is_empty() && !p.is_empty());
}

#[test]
fn bad_policies_are_refused_by_name() {
    let bad: AppPolicy = serde_json::from_str(
        r#"{"strategy":"cost","adaptive":{"weights":{"latency":1}},"max_cost_per_1k_tokens":-1}"#,
    )
    .unwrap();
    let e = bad.compile("project:p", &|_| true).unwrap_err().join("; ");
    for want in ["max_cost_per_1k_tokens: -1 is not a price", "adaptive.version: required"] {
        assert!(e.contains(want), "{want}: {e}");
    }
    let idle: AppPolicy =
        serde_json::from_str(r#"{"strategy":"cost","adaptive":{"preset":"quality"}}"#).unwrap();
    let e = idle.compile("key:k", &|_| true).unwrap_err().join("; ");
    assert!(e.contains("pins strategy cost, which does not read it"), "{e}");
    assert!(serde_json::from_str::<AppPolicy>(r#"{"stratgy":"cost"}"#).is_err());
}

#[test]
fn the_default_adaptive_policy_is_the_interactive_preset() {
    assert_eq!(default_adaptive().version, "interactive-1");
}
