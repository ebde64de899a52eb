use super::*;
use crate::config::raw::QualityProfile;

fn warm(p95_ms: f64, error_rate: f64) -> Summary {
    let errors = (error_rate * 20.0).round() as u32;
    Summary {
        samples: 20,
        successes: 20 - errors,
        errors,
        error_rate: Some(error_rate),
        p50_ms: Some(p95_ms / 2.0),
        p95_ms: Some(p95_ms),
        ttft_p95_ms: Some(p95_ms / 4.0),
        ..Summary::default()
    }
}

fn seen(deployment: &str, summary: Summary, cost: Option<f64>) -> Seen<'static> {
    Seen { deployment: deployment.into(), model: None, summary, in_flight: 0, cost_usd: cost }
}

fn policy(edit: impl FnOnce(&mut AdaptiveConfig)) -> Arc<AdaptivePolicy> {
    let mut raw = AdaptiveConfig { version: Some("test-1".into()), ..AdaptiveConfig::default() };
    edit(&mut raw);
    AdaptivePolicy::compile(&raw, &|t| !t.contains("nope")).unwrap()
}

fn names(d: &Decision, seen: &[Seen<'_>]) -> Vec<String> {
    d.order.iter().map(|&i| seen[i].deployment.clone()).collect()
}

#[test]
fn latency_orders_by_p95_and_ties_keep_chain_order() {
    let p = policy(|r| {
        r.weights.latency = Some(1.0);
        r.latency_metric = Some(LatencyMetric::Total);
        r.explore_every = Some(0);
    });
    let s = [
        seen("a/slow", warm(1_500.0, 0.0), Some(0.001)),
        seen("b/fast", warm(300.0, 0.0), Some(0.001)),
        seen("c/fast", warm(300.0, 0.0), Some(0.001)),
    ];
    let d = p.order(&s, None, 1);
    assert_eq!(names(&d, &s), ["b/fast", "c/fast", "a/slow"]);
    assert_eq!(d.record.policy, "test-1");
    let first = &d.record.candidates[0];
    assert_eq!((first.deployment.as_str(), first.latency_ms), ("b/fast", Some(300.0)));
    assert!((first.score.unwrap() - -0.15).abs() < 1e-9, "{first:?}");
}

#[test]
fn errors_and_load_weigh_against_a_fast_deployment() {
    let p = policy(|r| {
        r.weights.latency = Some(0.2);
        r.weights.errors = Some(0.8);
        r.weights.load = Some(0.5);
        r.explore_every = Some(0);
    });
    // a: fast but failing half its attempts; b: slower and sound.
    let s = [seen("a/x", warm(200.0, 0.5), None), seen("b/y", warm(1_000.0, 0.0), None)];
    assert_eq!(names(&p.order(&s, None, 1), &s), ["b/y", "a/x"]);
    // The same, but b is busy: 8 in flight is a full load penalty.
    let busy = [s[0].clone(), Seen { in_flight: 8, ..s[1].clone() }];
    let d = p.order(&busy, None, 1);
    assert_eq!(names(&d, &busy), ["a/x", "b/y"]);
    assert_eq!(d.record.candidates[1].in_flight, 8);
}

#[test]
fn a_cold_deployment_takes_the_missing_penalty_and_is_said_to_lack_its_signals() {
    let p = policy(|r| {
        r.weights.latency = Some(1.0);
        r.weights.errors = Some(1.0);
        r.explore_every = Some(0);
    });
    let cold = Summary { samples: 2, successes: 2, p95_ms: Some(10.0), ..Summary::default() };
    // Even a slow warm one (penalty < 1) beats a cold one that looked fast twice.
    let s = [seen("cold/x", cold, None), seen("warm/y", warm(1_900.0, 0.1), None)];
    let d = p.order(&s, None, 1);
    assert_eq!(names(&d, &s), ["warm/y", "cold/x"]);
    let row = d.record.candidates.iter().find(|c| c.deployment == "cold/x").unwrap();
    assert_eq!(row.missing, ["latency", "errors"]);
    assert_eq!(row.latency_ms, None, "cold: not read");
}

#[test]
fn reject_excludes_and_says_why() {
    let p = policy(|r| {
        r.weights.cost = Some(1.0);
        r.weights.quality = Some(1.0);
        r.unknown_cost = Some(MissingPolicy::Reject);
        r.missing_quality = Some(MissingPolicy::Reject);
        r.min_quality = Some(0.5);
        r.explore_every = Some(0);
        r.quality.version = Some("evals-11".into());
        r.quality.profiles = vec![
            QualityProfile { target: "a/x".into(), intent: None, score: 0.9 },
            QualityProfile { target: "b/y".into(), intent: None, score: 0.9 },
            QualityProfile { target: "d/w".into(), intent: None, score: 0.3 },
        ];
    });
    let s = [
        seen("a/x", warm(100.0, 0.0), Some(0.002)),
        seen("b/y", warm(100.0, 0.0), None),
        seen("c/z", warm(100.0, 0.0), Some(0.001)),
        seen("d/w", warm(100.0, 0.0), Some(0.001)),
    ];
    let d = p.order(&s, None, 1);
    assert_eq!(names(&d, &s), ["a/x"]);
    assert_eq!(d.record.quality_version.as_deref(), Some("evals-11"));
    let why: Vec<(&str, Option<&str>)> = d
        .record
        .candidates
        .iter()
        .map(|c| (c.deployment.as_str(), c.excluded.as_deref()))
        .collect();
    assert_eq!(
        why,
        [
            ("a/x", None),
            ("b/y", Some("unknown_cost")),
            ("c/z", Some("missing_quality")),
            ("d/w", Some("quality_floor"))
        ]
    );
}

#[test]
fn quality_profiles_are_read_for_the_requests_intent_most_specific_first() {
    let p = policy(|r| {
        r.weights.quality = Some(1.0);
        r.explore_every = Some(0);
        r.quality.profiles = vec![
            QualityProfile { target: "m-big".into(), intent: None, score: 0.6 },
            QualityProfile { target: "m-big".into(), intent: Some("code".into()), score: 0.95 },
            QualityProfile { target: "openai/small".into(), intent: None, score: 0.8 },
        ];
    });
    let s = [
        Seen { model: Some("m-big"), ..seen("anthropic/big", warm(100.0, 0.0), None) },
        Seen { model: Some("m-small"), ..seen("openai/small", warm(100.0, 0.0), None) },
    ];
    assert!(p.reads_intent());
    assert_eq!(names(&p.order(&s, Some(Intent::Code), 1), &s), ["anthropic/big", "openai/small"]);
    assert_eq!(names(&p.order(&s, Some(Intent::Cheap), 1), &s), ["openai/small", "anthropic/big"]);
    assert_eq!(names(&p.order(&s, None, 1), &s), ["openai/small", "anthropic/big"]);
}

#[test]
fn exploration_puts_one_cold_deployment_first_every_nth_request_in_turn() {
    let p = policy(|r| {
        r.weights.latency = Some(1.0);
        r.explore_every = Some(4);
        r.cold_start = Some(MissingPolicy::Reject);
    });
    let cold = Summary::default();
    let s = [
        seen("warm/a", warm(100.0, 0.0), None),
        seen("cold/b", cold, None),
        seen("cold/c", cold, None),
    ];
    let firsts: Vec<String> =
        (0..12).map(|t| names(&p.order(&s, None, t), &s)[0].clone()).collect();
    assert_eq!(
        firsts,
        [
            "cold/b", "warm/a", "warm/a", "warm/a", "cold/c", "warm/a", "warm/a", "warm/a",
            "cold/b", "warm/a", "warm/a", "warm/a"
        ]
    );
    // Rejected for cold start, the others are not ordered; the explored one is.
    let d = p.order(&s, None, 4);
    assert_eq!(names(&d, &s), ["cold/c", "warm/a"]);
    assert_eq!(d.record.explored.as_deref(), Some("cold/c"));
    let d = p.order(&s, None, 5);
    assert_eq!(names(&d, &s), ["warm/a"]);
    assert_eq!(d.record.explored, None);
    // The counter runs per policy.
    assert_eq!((p.tick(), p.tick()), (0, 1));
}

#[test]
fn exploration_never_bypasses_a_cost_or_quality_exclusion() {
    let p = policy(|r| {
        r.weights.latency = Some(1.0);
        r.explore_every = Some(1);
        r.unknown_cost = Some(MissingPolicy::Reject);
    });
    let s = [seen("warm/a", warm(100.0, 0.0), Some(0.1)), seen("cold/b", Summary::default(), None)];
    let d = p.order(&s, None, 0);
    assert_eq!(names(&d, &s), ["warm/a"]);
    assert_eq!(d.record.explored, None);
}

#[test]
fn presets_and_their_overrides() {
    let p = AdaptivePolicy::compile(
        &AdaptiveConfig { preset: Some(AdaptivePreset::Economy), ..AdaptiveConfig::default() },
        &|_| true,
    )
    .unwrap();
    assert_eq!(p.version, "economy-1");
    assert_eq!((p.unknown_cost, p.missing_quality), (MissingPolicy::Reject, MissingPolicy::Reject));
    let p = AdaptivePolicy::compile(
        &AdaptiveConfig {
            preset: Some(AdaptivePreset::Interactive),
            version: Some("ours-3".into()),
            weights: AdaptiveWeights { cost: Some(0.9), ..AdaptiveWeights::default() },
            ..AdaptiveConfig::default()
        },
        &|_| true,
    )
    .unwrap();
    assert_eq!((p.version.as_str(), p.weights.cost, p.weights.latency), ("ours-3", 0.9, 0.4));
    assert_eq!(p.latency_metric, LatencyMetric::Ttft);
}

#[test]
fn bad_policies_are_refused_by_name() {
    let refused = |edit: fn(&mut AdaptiveConfig)| {
        let mut raw = AdaptiveConfig::default();
        edit(&mut raw);
        AdaptivePolicy::compile(&raw, &|t| !t.contains("nope")).unwrap_err().join("; ")
    };
    assert!(refused(|r| r.weights.latency = Some(1.0)).contains("adaptive.version: required"));
    assert!(refused(|r| r.version = Some("v".into())).contains("at least one must be above 0"));
    let e = refused(|r| {
        r.version = Some("v".into());
        r.weights.cost = Some(-1.0);
        r.latency_scale_ms = Some(0.0);
        r.missing_signal_penalty = Some(0.5);
        r.min_quality = Some(2.0);
        r.quality.profiles = vec![QualityProfile {
            target: "nope".into(),
            intent: Some("poetry".into()),
            score: 1.5,
        }];
    });
    for want in [
        "adaptive.weights: each must be a finite number",
        "adaptive.latency_scale_ms: 0 is not above 0",
        "adaptive.missing_signal_penalty: 0.5 is below 1",
        "adaptive.min_quality: 2 is not in [0, 1]",
        "profiles[0].target: `nope` is no catalog model",
        "profiles[0].intent: `poetry` is not a class",
        "profiles[0].score: 1.5 is not in [0, 1]",
    ] {
        assert!(e.contains(want), "{want}: {e}");
    }
}
